"""The jobs of a cluster run as arrays (one row per job), from a stated mix or a loaded trace.

A stated mix draws, with one seed: Poisson arrivals at the mix's rate over the span; each job's size
class by its share; its run time (the compute it needs, without failures) log-normal by the class's
median and sigma; its kind by share (whether it checkpoints, its priority); and, for the share the user
cancels, the point of its run at which they do (its work is cut there and it ends ``cancelled``).

Jobs above one server take whole servers (gang allocation); their GPUs are rounded up to a multiple of
the server's GPUs.

>>> from twin.lang.scenario.cluster import Mix, SizeClass, LogNormal, Kind
>>> m = Mix(rate="100 / day", sizes=[SizeClass(gpus=1, share=0.9, duration=LogNormal(median="10 min")),
...                                  SizeClass(gpus=12, share=0.1, duration=LogNormal(median="1 h", sigma=0))])
>>> js = from_mix(m, horizon=10 * 86400, gpus_per_server=8, seed=1)
>>> len(js) > 900, sorted(set(js.gpus.tolist())), js.kind_names
(True, [1, 16], ('training',))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.lang import limits
from twin.lang.scenario.cluster import Mix


@dataclass(frozen=True)
class JobSet:
    submit: np.ndarray  # s from the start of the run, sorted
    gpus: np.ndarray  # int64, whole servers above one server
    work: np.ndarray  # compute seconds the job needs (without failures)
    kind: np.ndarray  # int64 index into kind_names
    cancelled: np.ndarray  # bool: the user stops it when its work is done
    kind_names: tuple[str, ...]
    checkpoints: tuple[bool, ...]  # per kind
    priorities: tuple[int, ...]  # per kind
    notes: tuple[str, ...] = ()
    workload: np.ndarray | None = None  # int64 index into workloads per job (-1: none), for a mix's classes that run one
    workloads: tuple[str, ...] = ()  # the scenario's workloads the jobs run (their step from the job twin)

    def __len__(self) -> int:
        return int(len(self.submit))

    @property
    def priority(self) -> np.ndarray:
        return np.asarray(self.priorities, np.int64)[self.kind]

    @property
    def checkpoint(self) -> np.ndarray:
        return np.asarray(self.checkpoints, bool)[self.kind]


def whole_servers(gpus: np.ndarray, gpus_per_server: int) -> np.ndarray:
    """Sizes above one server rounded up to whole servers (gang allocation)."""
    g = np.asarray(gpus, np.int64)
    big = g > gpus_per_server
    return np.where(big, -(-g // gpus_per_server) * gpus_per_server, g)


def expected_jobs(mix: Mix, horizon: float) -> float:
    return mix.rate * horizon


def from_mix(mix: Mix, horizon: float, gpus_per_server: int, seed: int) -> JobSet:
    """Draw the jobs of ``mix`` over ``horizon`` seconds (the count is checked before anything is drawn)."""
    mean = expected_jobs(mix, horizon)
    limits.check("cluster_jobs", mean, "jobs expected from the mix")
    rng = np.random.default_rng([seed, 37])
    n = int(rng.poisson(mean))
    submit = np.sort(rng.random(n) * horizon)
    share = np.array([c.share for c in mix.sizes], float)
    cls = rng.choice(len(share), size=n, p=share / share.sum())
    med = np.array([c.duration.median for c in mix.sizes])[cls]
    sig = np.array([c.duration.sigma for c in mix.sizes])[cls]
    cap = np.array([c.duration.max or np.inf for c in mix.sizes])[cls]
    work = np.minimum(med * np.exp(sig * rng.standard_normal(n)), cap)
    gpus = whole_servers(np.array([c.gpus for c in mix.sizes], np.int64)[cls], gpus_per_server)
    kshare = np.array([k.share for k in mix.kinds], float)
    kind = rng.choice(len(kshare), size=n, p=kshare / kshare.sum()).astype(np.int64)
    names = [k.name for k in mix.kinds]
    fixed = np.array([names.index(c.kind) if c.kind else -1 for c in mix.sizes], np.int64)[cls]
    kind = np.where(fixed >= 0, fixed, kind)
    cancelled = rng.random(n) < mix.cancel
    work = np.where(cancelled, work * rng.random(n), work)
    named = sorted({c.workload for c in mix.sizes if c.workload})
    workload = np.array([named.index(c.workload) if c.workload else -1 for c in mix.sizes], np.int64)[cls] if named else None
    notes = []
    odd = [c.gpus for c in mix.sizes if c.gpus > gpus_per_server and c.gpus % gpus_per_server]
    if odd:
        notes.append(f"sizes {', '.join(map(str, odd))} rounded up to whole servers of {gpus_per_server} GPUs")
    return JobSet(submit, gpus, np.maximum(work, 1.0), kind, cancelled, tuple(k.name for k in mix.kinds),
                  tuple(k.checkpoint for k in mix.kinds), tuple(k.priority for k in mix.kinds), tuple(notes), workload, tuple(named))
