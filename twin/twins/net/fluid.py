"""Max-min fair rates and the event-driven fluid model.

Why max-min: with PFC (lossless, no DCQCN, as in Meta's 24K cluster) and receiver-driven admission,
long-lived RDMA flows through a bottleneck converge to an equal share of it, and flows not limited
there take what is left elsewhere. Progressive filling computes exactly that allocation: raise every
unfrozen flow's rate together until some arc saturates, freeze the flows crossing it, repeat.

Each step is two sparse mat-vecs on the (arc x class) matrix, so a 250K-class, 1M-nonzero problem
takes milliseconds per bottleneck level.

Hand-computed example (the test): arcs of capacity 10, 10, 4; flow a crosses arcs 0 and 1, flow b
arc 0, flow c arcs 1 and 2. Arc 2 saturates first at c = 4; then arc 0 and 1 fill at a = b = 5
(arc 1: 5 + 4 = 9 < 10, arc 0: 5 + 5 = 10), so rates = (5, 5, 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csc_matrix

EVENT_BATCH = 1e-3  # flows finishing within 0.1% of the next finish time end together (stated bound)
EXACT_EVENTS = 64  # rate recomputations done exactly before events are batched in relative windows
LARGE_WINDOW = 0.02


def max_min(A: csc_matrix, cap: np.ndarray) -> np.ndarray:
    """Max-min fair rate per member flow of each class; ``A[arc, class]`` = members x fraction.

    Progressive filling raises one level at a time, which takes as many rounds as there are distinct
    rates (16,000 on a 16K-GPU job's DP rings behind the ATSW tier). We saturate every *locally*
    minimal arc per round instead: an arc whose fair share ``resid / (unfrozen weight)`` is the lowest
    along every unfrozen flow crossing it. Its flows are bottlenecked there at exactly that share,
    whatever happens elsewhere, because freezing flows at lower levels only ever raises other arcs'
    shares. The global minimum is always locally minimal, so each round makes progress; the result
    is the same allocation as level-by-level filling, in a few dozen rounds."""
    K = A.shape[1]
    rate = np.zeros(K)
    if K == 0:
        return rate
    A = csc_matrix(A)
    col_nz = np.diff(A.indptr) > 0
    rate[~col_nz] = np.inf
    resid = cap.astype(float).copy()
    active = np.flatnonzero(col_nz)
    # Rounds run on the classes still unfrozen; the matrix is re-sliced whenever half of them froze
    # (compaction: late rounds, which saturate the last few levels, then touch only their classes).
    while len(active):
        Acsc = A[:, active]
        Acsr = Acsc.tocsr()
        col_ptr, col_arcs = Acsc.indptr, Acsc.indices
        row_ptr, row_cls = Acsr.indptr, Acsr.indices
        row_nz = np.diff(row_ptr) > 0
        n = len(active)
        frozen = np.zeros(n, bool)
        local = np.zeros(n)
        while not frozen.all() and frozen.sum() * 2 < n:
            denom = Acsr @ (~frozen).astype(float)
            live = row_nz & (denom > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                fs = np.where(live, np.maximum(resid, 0.0) / np.where(live, denom, 1.0), np.inf)
            # m(f): the lowest fair share along each class' path
            mf = np.minimum.reduceat(fs[col_arcs], col_ptr[:-1])
            mf[frozen] = np.inf
            # arc-wise: the lowest m over the unfrozen classes crossing it
            rm = np.full(len(resid), np.inf)
            rm[row_nz] = np.minimum.reduceat(mf[row_cls], row_ptr[:-1][row_nz])
            bott = live & (fs <= rm * (1 + 1e-12))
            if not bott.any():  # numerical guard: the global minimum is always a bottleneck
                bott = live & (fs <= fs[live].min() * (1 + 1e-12))
            hit = (Acsc.T @ bott.astype(float)) > 0
            newly = hit & ~frozen
            if not newly.any():
                frozen[:] = True  # nothing left to saturate (numerically): keep what we have
                break
            local[newly] = mf[newly]
            frozen |= newly
            resid = resid - Acsr @ np.where(newly, local, 0.0)
        rate[active[frozen]] = local[frozen]
        active = active[~frozen]
    return rate


@dataclass
class FluidResult:
    finish: np.ndarray  # per class: time its member flows finish (s)
    rate0: np.ndarray  # per class: initial max-min rate per member (bytes/s)
    makespan: float  # time the last flow finishes
    events: int  # rate recomputations


def complete(A: csc_matrix, cap: np.ndarray, size: np.ndarray, rel_window: float | None = None, warm: bool = True) -> FluidResult:
    """Run the fluid model until every flow has sent ``size`` bytes; rates are recomputed (max-min)
    whenever flows finish.

    Event batching keeps large runs bounded: flows finishing within :data:`EVENT_BATCH` of the next
    finish end in the same event; with ``rel_window`` w > 0, every flow finishing before
    ``t_next x (1 + w)`` ends at its own time but the capacity it frees is only reused from the end of
    that window (conservative: the makespan can only be over-estimated, by less than w of it). The
    default is exact (w = 0) for the first :data:`EXACT_EVENTS` events and w = 2% after, which bounds a
    16K-GPU run with thousands of distinct rates to ~150 rate recomputations.

    Warm start (``warm``; exact, the test compares it with cold solves): when the classes R finish,
    every class whose rate is below the lowest rate L in R keeps its rate. Why: progressive filling
    on the new problem retraces the old one up to the first level at which an arc crossed by R
    saturated; a saturated arc's level is the highest rate through it, so that level is at least L.
    Below L the same arcs saturate at the same levels (arcs without R carry the same flows; arcs with
    R carry less and saturate no earlier), so only classes at or above L are re-solved, on the
    capacity the others leave. Flows finish fastest first, so most classes are kept: each event of
    the 16K-GPU naive-order Llama job re-solves a small share of its ~250K classes, not all."""
    K = A.shape[1]
    auto = rel_window is None
    finish = np.zeros(K)
    rate0 = np.zeros(K)
    size = np.asarray(size, float)
    # The active classes' index, remaining bytes and rate are kept in compact arrays. A class that
    # finishes gets ``rem = inf`` (it then never has the lowest finish time again) and the arrays are
    # compacted only when a quarter of them finished or rates are re-solved: most events finish a few
    # classes and change no rate, so an event costs a handful of passes over the arrays, no copies.
    act = np.flatnonzero(size > 0)
    rem = size[act]
    rt = np.zeros(len(act))
    alive = len(act)
    buf = np.empty(alive)  # scratch for the per-event quotients and products
    t = 0.0
    events = 0
    A = csc_matrix(A)
    level = None  # lowest rate among the classes that finished at the last event
    hi = lo = 0.0  # bounds on the live classes' rates (the highest, the lowest) since the last solve
    while alive:
        if level is None or not warm or hi >= level * (1 - 1e-9):
            if alive < len(act):
                live = np.isfinite(rem)
                act, rem, rt = act[live], rem[live], rt[live]
            if level is None or not warm:
                rt = max_min(A[:, act], cap)
            else:
                # warm start (exact, see above): classes slower than every finished one keep their
                # rate; only the others are re-solved on the capacity the kept ones leave
                keep = rt < level * (1 - 1e-9)
                if not keep.all():
                    free = ~keep
                    if keep.any():  # A x with x = the kept rates, 0 elsewhere: the sums of A[:, kept] @ rates
                        x = np.zeros(K)
                        x[act[keep]] = rt[keep]
                        resid = cap - A @ x
                    else:
                        resid = cap
                    rt[free] = max_min(A[:, act[free]], np.maximum(resid, 0.0))
            hi, lo = (float(rt.max()), float(rt.min())) if len(rt) else (0.0, 0.0)
        events += 1
        if events == 1:
            rate0[act] = rt
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = np.divide(rem, rt, out=buf[:len(rem)]) if lo > 0 else np.where(rt > 0, rem / rt, np.inf)
        tmin = dt.min()
        if not np.isfinite(tmin):
            finish[act[np.isfinite(rem)]] = np.inf
            break
        w = (LARGE_WINDOW if events > EXACT_EVENTS else 0.0) if auto else rel_window
        step = max(tmin * (1 + EVENT_BATCH), (t + tmin) * (1 + w) - t)
        done = np.flatnonzero(dt <= step)
        if w == 0.0:
            step = tmin
        finish[act[done]] = t + dt[done]
        rem -= np.multiply(rt, step, out=buf[:len(rem)])
        rem[done] = np.inf
        t += step
        level = float(rt[done].min())
        alive -= len(done)
        if alive and 4 * alive < 3 * len(act):
            live = np.isfinite(rem)
            act, rem, rt = act[live], rem[live], rt[live]
    return FluidResult(finish, rate0, float(finish.max()) if K else 0.0, events)
