"""The plan search's collectives timed on every core the process may use.

Timing a collective on the fabric (a flow simulation) is most of a large search. Branch and bound scores
plans in chunks; before a chunk is scored, the fast stage runs once in recording mode
(:attr:`twin.twins.plan.tables.Collectives.pending`): every collective the chunk needs that is not
timed yet is noted, not timed. Those are then timed by worker processes forked from the search (they
inherit the compiled fabric; only the groups go out and the timings come back), and the chunk is scored
with every timing in place. The result is the one the search gets on one core: the same collectives
timed the same way, only at once.

One core, a process that may not have children (a sweep's Dask worker is a daemon), or a machine whose free
memory holds no second copy of the search (:func:`affordable`), times them in place.
"""

from __future__ import annotations

import multiprocessing as mp
import os

_COLL = None  # the search's Collectives, inherited by the forked workers


def cores() -> int:
    """The workers a search may fork: the cores this process may run on, 1 inside a daemon process."""
    if mp.current_process().daemon:
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def affordable(workers: int) -> int:
    """The workers the machine's free memory can hold: a forked worker may come to hold as much as the search
    (the pages it writes are copied, and a flow simulation over the job's GPUs is the size of the fabric), so
    no more than the memory available (``MemAvailable``) over the search's resident size; Linux only (else
    ``workers``)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            avail = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
        with open("/proc/self/statm", encoding="ascii") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, StopIteration, ValueError):
        return workers
    return max(1, min(workers, avail // max(rss, 1)))


def _one(job):
    sig, what, op, algs, groups, peers = job
    return (sig, what, *_COLL.timed_now(op, algs, groups, peers))


class Timer:
    """Times what a chunk needs on ``cores()`` workers (a context manager: the workers end with it)."""

    def __init__(self, coll, workers: int | None = None):
        self.coll, self.workers, self.pool = coll, workers or cores(), None

    def __enter__(self) -> Timer:
        return self

    def __exit__(self, *exc) -> None:
        global _COLL
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            _COLL = None  # the workers are gone: the search's tables (and its fabric) are the caller's to keep or drop

    def before(self, score) -> None:
        """Run ``score()`` recording the collectives it needs, and time the new ones on the workers."""
        if self.workers < 2:
            return
        self.coll.pending = {}
        try:
            score()
        finally:
            need, self.coll.pending = self.coll.pending, None
        if len(need) < 2:
            return  # one is timed in place when the chunk is scored
        if self.pool is None:
            self.workers = affordable(self.workers)  # no more copies of the search than the free memory holds
            if self.workers < 2:
                return  # every collective timed in place
            global _COLL
            _COLL = self.coll
            self.pool = mp.get_context("fork").Pool(self.workers)
        jobs = sorted(((sig, *rest) for sig, rest in need.items()), key=lambda j: -sum(len(g) for g in j[4]))  # largest first
        self.coll.fill(self.pool.imap_unordered(_one, jobs))
