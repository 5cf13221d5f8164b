"""The scheduler: FIFO or EASY backfill over a queue in priority and submit order, with preemption.

The queue is ordered by (priority, first submission): a job requeued after a failure or a preemption
goes back to its old place. The head starts as soon as it fits by shape (:class:`Allocator`).

* ``fifo``: nothing passes a blocked head.
* ``easy`` (EASY backfill, Lifka 1995): the head gets a reservation at the earliest time enough GPUs
  free up (running jobs' expected ends, counted in GPUs); a job among the next ``depth`` waiting ones
  may start now if it fits and either ends before that time or uses only GPUs the head will not need.
  Expected ends are the jobs' true run times (no user estimate): backfill at its best.
* preemption (Meta RSC): a blocked head may stop running jobs behind it in queue order (a lower
  priority, or the same priority submitted later) that have run at least ``guard``; it stops the fewest
  GPUs' worth of jobs that frees its shape (one server, or whole servers in one AI zone), and they are
  requeued in their old place. A job passing its guard is an event, so a blocked head looks again then.
"""

from __future__ import annotations

import math

import numpy as np

from twin.twins.cluster.alloc import IN_SERVICE


def run(R, t: float) -> None:
    q = R.queue
    while q:
        h = q[0][2]
        a = R.A.allocate(R.g[h])
        if a is not None:
            q.pop(0)
            R.start(h, t, a)
            continue
        if R.p.preempt and _preempt(R, t, h):
            continue
        break
    if q and R.p.policy == "easy":
        _backfill(R, t, q[0][2])


def _shadow(R, need: int) -> tuple[float, int]:
    """(reservation time, GPUs free then beyond the head's) by the running jobs' expected ends."""
    free = R.A.free_in_service
    g = R.g
    for e, j in R.ends:
        free += g[j]
        if free >= need:
            return e, free - need
    return math.inf, 0


def _backfill(R, t: float, h: int) -> None:
    from twin.twins.cluster.cycle import wall

    q, A, g = R.queue, R.A, R.g
    shadow = None
    started = []
    for i in range(1, min(len(q), R.p.depth + 1)):
        if A.free_in_service == 0:
            break
        j = q[i][2]
        if not A.fits(g[j]):
            continue
        if shadow is None:
            shadow, extra = _shadow(R, g[h])
        end = t + R.p.restart * (R.cause[j] != 0) + wall(R.rem[j], R.tau[j], R.p.write)
        if end <= shadow or g[j] <= extra:
            R.start(j, t, A.allocate(g[j]))
            started.append(i)
            if end > shadow:
                extra -= g[j]
    for i in reversed(started):
        del q[i]


def _preempt(R, t: float, h: int) -> bool:
    """Stop jobs behind ``h`` that ran past the guard to free its shape; True when ``h`` then started."""
    A, g = R.A, R.g
    kh = R.key[h]
    need, G = g[h], A.G
    victims = [j for j in R.old if R.key[j] > kh]
    if A.free_in_service + sum(g[j] for j in victims) < need:
        return False
    S = R.site.servers
    elig = np.zeros(S, np.int64)
    for j in victims:
        for s, n in R.alloc[j]:
            elig[s] += n
    ins = A.state == IN_SERVICE
    if need <= G:
        cand = np.flatnonzero(ins & (A.free + elig >= need))
        pick = [int(cand[np.lexsort((elig[cand], -A.free[cand]))[0]])] if len(cand) else []
    else:
        k = -(-need // G)
        cand = np.flatnonzero(ins & (A.free + elig == G))  # every GPU free or held by a victim
        pick = []
        if len(cand) >= k:
            z = A.zone[cand]
            best, cost = None, math.inf
            for zz in np.unique(z):
                c = cand[z == zz]
                if len(c) >= k:
                    c = c[np.argsort(elig[c], kind="stable")][:k]
                    if elig[c].sum() < cost:
                        best, cost = c, elig[c].sum()
            if best is None:
                best = cand[np.argsort(elig[cand], kind="stable")][:k]
            pick = best.tolist()
    if not pick:
        return False
    stop = sorted({j for s in pick for j in R.on[s] if j in R.old and R.key[j] > kh}, key=lambda j: R.seg0[j], reverse=True)
    for j in stop:
        if need <= G and A.free[pick[0]] >= need:
            break
        R.preempt(j, t, h)
    a = A.allocate(need)
    if a is None:
        return False
    R.queue.pop(0)
    R.start(h, t, a)
    return True
