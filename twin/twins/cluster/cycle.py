"""The cluster twin's vocabulary and a job's checkpoint cycle: the buckets, the event kinds, the policy, the outcome.

A running job works in cycles of ``interval`` compute then a checkpoint ``write``. :func:`split` says how
much of a stretch of running was compute, how much of it a checkpoint kept and how long the writes
stalled; :func:`wall` is the running time a job still needs for its remaining compute. The event clock
(:mod:`twin.twins.cluster.engine`), the scheduler's backfill (:mod:`twin.twins.cluster.schedule`) and
the failures striking it (:mod:`twin.twins.cluster.strike`) share these.

>>> split(100.0, 30.0, 5.0)   # 2 cycles of 30 + 5, then 30 of compute: 90 done, 60 kept, 10 s of writes
(90.0, 60.0, 10.0)
>>> wall(90.0, 30.0, 5.0)     # 3 intervals, a write after each but the last
100.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from twin.twins.cluster.answers import Tally

BUCKETS = ("productive", "rework", "detection", "restart", "checkpoint", "preempted", "neighbours", "powercap",
           "idle", "queued_idle", "fragmentation", "repair", "spare")
JOB_BUCKETS = BUCKETS[:8]
END, RELEASE, REPAIR, LIFETIME, GUARD, CAP = range(6)
FINISH, FAIL, PREEMPT, LIFE, HORIZON = range(5)
WAITING, RUNNING, HANGING, DONE = 1, 2, 3, 4


@dataclass(frozen=True)
class Policy:
    policy: str = "easy"  # fifo | easy
    depth: int = 64
    packing: str = "topology"
    preempt: bool = False
    guard: float = 7200.0
    lifetime: float = math.inf
    interval: float = 3600.0
    write: float = 0.0
    restart: float = 300.0
    spares: int = 0
    lemon_after: int | None = None
    lemon_window: float = 7 * 86400.0
    lemon_drain: float = 30 * 86400.0
    bin: float = 3600.0  # the GPU-state series' resolution
    seed: int = 1  # random packing's draws


@dataclass
class Outcome:
    horizon: float
    gpus: int
    buckets: dict[str, float]  # GPU-seconds
    tally: Tally  # per size class
    series: dict[str, np.ndarray]  # GPU-seconds per bin by state
    counts: dict[str, int] = field(default_factory=dict)
    by_source: dict[str, int] = field(default_factory=dict)  # failures that stopped a job, per source
    by_causes: dict[str, int] = field(default_factory=dict)
    jobs_first: np.ndarray | None = None  # first start per job (nan: never started)
    jobs_end: np.ndarray | None = None
    jobs_state: np.ndarray | None = None
    bin: float = 3600.0
    jobs_ran: np.ndarray | None = None  # running time per job over all its segments
    jobs_slowed: np.ndarray | None = None  # the part of it its neighbours' and the power cap's stretch added


def split(run: float, tau: float, w: float) -> tuple[float, float, float]:
    """(compute done, compute kept at the last checkpoint, checkpoint stall) of ``run`` s of running."""
    if not math.isfinite(tau):
        return run, 0.0, 0.0
    c = tau + w
    n = math.floor(run / c)
    rho = run - n * c
    return n * tau + min(rho, tau), n * tau, n * w + max(rho - tau, 0.0)


def wall(rem: float, tau: float, w: float) -> float:
    """Wall time to compute ``rem`` s with a checkpoint after every ``tau`` s (none after the last)."""
    if not math.isfinite(tau):
        return rem
    return rem + w * max(math.ceil(rem / tau - 1e-12) - 1, 0)
