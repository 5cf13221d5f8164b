"""The cluster twin's answers per job size class, and the closed forms it is held to.

Size classes follow Kokolis et al. (arXiv 2410.21680): fewer than 8 GPUs (a part of a server), 8 to
31, 32 to 255, 256 to 1,023, and 1,024 or more. Per class: jobs, completions, GPU-time by bucket,
failures and preemptions, the measured mean time to failure (the class's running time over the failures
that stopped it) and ETTR (productive time over the wall time from a job's first start to its end or the
horizon, summed over the class's jobs).

Closed forms (Kokolis et al. s5, first order in ``N r_f dt``): a job of ``N`` nodes at ``r_f`` failures per node and second, restart
overhead ``u0``, checkpoint interval ``dt`` and write time ``w`` has

    E[ETTR] = (1 - N r_f (u0 + dt / 2)) / (1 + w / dt),     best dt = sqrt(2 w / (N r_f)).

>>> r = 6.5 / 1000 / 86400                 # RSC-1: 6.5 failures per 1,000 node-days
>>> round(expected_ettr(2048, r, 300, 3600, 0), 3), round(expected_ettr(2048, r, 300, 300, 0), 3)
(0.676, 0.931)
>>> round(renewal_ettr(2048, r, 300, 3600, 0), 3)   # exact for Poisson failures: the first order is 6% low here
0.714
>>> round(optimal_interval(2048, r, 30))
624
>>> round(mttf(1, 1 / 47.7 / 86400) / 86400, 1)
47.7
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

EDGES = (1, 8, 32, 256, 1024)
LABELS = ("1-7", "8-31", "32-255", "256-1023", "1024+")
COUNTS = ("jobs", "completions", "failures", "preemptions")


def size_class(gpus: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(EDGES[1:]), np.asarray(gpus), side="right").astype(np.int64)


def expected_ettr(nodes: int, rate: float, restart: float, interval: float, write: float) -> float:
    """Kokolis et al.'s expected ETTR of one job of ``nodes`` nodes (rate per node and second)."""
    return (1.0 - nodes * rate * (restart + interval / 2.0)) / (1.0 + write / interval)


def renewal_ettr(nodes: int, rate: float, restart: float, interval: float, write: float) -> float:
    """The same job's ETTR exactly, for Poisson failures in wall time (failures during a restart included):
    each run of ``X ~ Exp(N r_f)`` keeps ``floor((X - u0)+ / (dt + w))`` whole intervals, so
    ``ETTR = lam dt e^(-lam u0) q / (1 - q)`` with ``lam = N r_f`` and ``q = e^(-lam (dt + w))``."""
    lam = nodes * rate
    q = math.exp(-lam * (interval + write))
    return lam * interval * math.exp(-lam * restart) * q / (1.0 - q)


def optimal_interval(nodes: int, rate: float, write: float) -> float:
    return math.sqrt(2.0 * write / (nodes * rate))


def mttf(nodes: int, rate: float) -> float:
    """A job's mean time to failure on ``nodes`` nodes that each fail at ``rate`` per second."""
    return 1.0 / (nodes * rate)


@dataclass
class Tally:
    """Per size class: GPU-seconds per bucket, running time, counts."""

    gpu_s: list[dict[str, float]]
    time: list[float]
    n: list[dict[str, int]]

    @classmethod
    def empty(cls) -> "Tally":
        return cls([{} for _ in LABELS], [0.0] * len(LABELS), [dict.fromkeys(COUNTS, 0) for _ in LABELS])

    def add(self, c: int, bucket: str, v: float) -> None:
        d = self.gpu_s[c]
        d[bucket] = d.get(bucket, 0.0) + v

    def add_time(self, c: int, dt: float) -> None:
        self.time[c] += dt

    def count(self, c: int, what: str) -> None:
        self.n[c][what] += 1

    def done(self, c: int) -> None:
        self.n[c]["completions"] += 1


def by_class(out, jobs) -> list[dict]:
    """The table per size class of an outcome (``jobs``: the run's JobSet)."""
    cls = size_class(jobs.gpus)
    first, end = out.jobs_first, out.jobs_end
    started = ~np.isnan(first)
    stop = np.where(np.isnan(end), out.horizon, end)
    wait = first - jobs.submit
    rows = []
    for c, label in enumerate(LABELS):
        m = cls == c
        if not m.any():
            continue
        n = out.tally.n[c]
        gs = out.tally.gpu_s[c]
        wall = float((stop - first)[m & started].sum())
        prod = gs.get("productive", 0.0)
        gpu_wall = float(((stop - first) * jobs.gpus)[m & started].sum())
        w = wait[m & started]
        rows.append({
            "size": label, "jobs": int(m.sum()), "started": int((m & started).sum()), "completions": n["completions"],
            "gpu_hours": sum(gs.values()) / 3600.0,
            "buckets_gpu_h": {k: v / 3600.0 for k, v in sorted(gs.items())},
            "ettr": prod / gpu_wall if gpu_wall > 0 else None,
            "failures": n["failures"], "preemptions": n["preemptions"],
            "mttf_h": out.tally.time[c] / n["failures"] / 3600.0 if n["failures"] else None,
            "running_h": out.tally.time[c] / 3600.0,
            "wait_mean_s": float(w.mean()) if len(w) else None,
            "wait_p50_s": float(np.median(w)) if len(w) else None,
            "wait_p90_s": float(np.quantile(w, 0.9)) if len(w) else None,
            "wall_h": wall / 3600.0,
        })
    return rows
