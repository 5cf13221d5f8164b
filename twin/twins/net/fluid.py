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
        Acsc = A if len(active) == K else A[:, active]  # every class at first: the matrix itself, not a copy of it
        Acsr = Acsc.tocsr()
        col_ptr, col_arcs = Acsc.indptr, Acsc.indices
        row_ptr, row_cls = Acsr.indptr, Acsr.indices
        row_nz = np.diff(row_ptr) > 0
        weighted = Acsc.data > 0  # stored weights (members, or shares of them) are positive: all True
        n = len(active)
        frozen = np.zeros(n, bool)
        local = np.zeros(n)
        while not frozen.all() and frozen.sum() * 2 < n:
            denom = Acsr @ (~frozen).astype(float)
            live = row_nz & (denom > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                fs = np.where(live, np.maximum(resid, 0.0) / np.where(live, denom, 1.0), np.inf)
            # m(f): the lowest fair share along each class' path
            mf = gathered_reduceat(np.minimum, fs, col_arcs, col_ptr[:-1])
            mf[frozen] = np.inf
            # arc-wise: the lowest m over the unfrozen classes crossing it
            rm = np.full(len(resid), np.inf)
            rm[row_nz] = gathered_reduceat(np.minimum, mf, row_cls, row_ptr[:-1][row_nz])
            bott = live & (fs <= rm * (1 + 1e-12))
            if not bott.any():  # numerical guard: the global minimum is always a bottleneck
                bott = live & (fs <= fs[live].min() * (1 + 1e-12))
            hit = gathered_reduceat(np.logical_or, bott, col_arcs, col_ptr[:-1], weighted)  # crosses a bottleneck
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


GATHER = 1 << 24  # entries gathered at a time by gathered_reduceat


def gathered_reduceat(op: np.ufunc, values: np.ndarray, index: np.ndarray, starts: np.ndarray,
                      mask: np.ndarray | None = None) -> np.ndarray:
    """``op.reduceat(values[index] (& mask), starts)`` with ``starts`` increasing and the last segment running
    to the end, gathered a run of whole segments at a time: the same values (each segment is reduced whole),
    without a gathered copy of every entry at once (a sprayed phase at a million GPUs has ~10^8).

    >>> gathered_reduceat(np.minimum, np.array([5.0, 1.0, 7.0]), np.array([0, 2, 1, 2, 0]), np.array([0, 2, 3]))
    array([5., 1., 5.])
    """
    n = len(index)
    if n <= GATHER:
        g = values[index] if mask is None else values[index] & mask
        return op.reduceat(g, starts)
    out = np.empty(len(starts), np.result_type(values))
    ends = np.r_[starts[1:], n]
    i = 0
    while i < len(starts):
        j = max(i + 1, int(np.searchsorted(ends, starts[i] + GATHER, side="right")))  # whole segments, at least one
        lo, hi = int(starts[i]), int(ends[j - 1])
        g = values[index[lo:hi]] if mask is None else values[index[lo:hi]] & mask[lo:hi]
        out[i:j] = op.reduceat(g, starts[i:j] - lo)
        i = j
    return out


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
    A = csc_matrix(A)
    # Classes with the same remaining bytes and rate evolve identically (the same float operations on
    # the same values), so events run on *groups* of them: a 16K-GPU phase has ~300K classes but ~20K
    # groups. A group's members change only when rates are re-solved: then the re-solved classes
    # leave their groups and form new ones. ``cls``/``grp``: the active classes and their group;
    # ``live``, ``rem``, ``rt``: the groups still running, compact; ``fin``: each group's finish time.
    cls = np.flatnonzero(size > 0)
    grp = np.zeros(len(cls), np.int64)
    live, rem, rt, fin = np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    alive = len(cls)  # running groups (before the first solve: classes)
    t = 0.0
    events = 0
    level = None  # lowest rate among the classes that finished at the last event
    while alive:
        run = np.isfinite(rem)  # drop the finished groups
        live, rem, rt = live[run], rem[run], rt[run]
        cold = level is None or not warm
        if not cold:  # warm start (exact, see above): classes slower than every finished one keep their rate
            slow = rt < level * (1 - 1e-9)
        if cold or not slow.all():
            pos = np.full(len(fin), -1, np.int64)
            pos[live] = np.arange(len(live))
            on = np.flatnonzero(pos[grp] >= 0) if len(fin) else np.arange(len(cls))  # running classes
            c_rem = rem[pos[grp[on]]] if len(fin) else size[cls]
            if cold:
                free = on
                c_rt = max_min(_columns(A, cls[on]), cap)
                if level is None:
                    rate0[cls] = c_rt
            else:  # re-solve the others on the capacity the kept ones leave
                keep = slow[pos[grp[on]]]
                free = on[~keep]
                if keep.any():  # A x with x = the kept rates, 0 elsewhere: the sums of A[:, kept] @ rates
                    x = np.zeros(K)
                    x[cls[on[keep]]] = rt[pos[grp[on[keep]]]]
                    resid = cap - A @ x
                else:
                    resid = cap
                c_rem = c_rem[~keep]
                c_rt = max_min(_columns(A, cls[free]), np.maximum(resid, 0.0))
            # the re-solved classes leave their groups and form new ones
            gone = np.zeros(len(fin), bool)
            if len(fin):
                gone[grp[free]] = True
            new, n_rem, n_rt = _groups(c_rem, c_rt)
            grp[free] = len(fin) + new
            stay = ~gone[live]
            live = np.concatenate([live[stay], len(fin) + np.arange(len(n_rem))])
            rem, rt = np.concatenate([rem[stay], n_rem]), np.concatenate([rt[stay], n_rt])
            fin = np.concatenate([fin, np.full(len(n_rem), np.nan)])
            alive = len(live)
        events += 1
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = np.where(rt > 0, rem / rt, np.inf)
        tmin = dt.min()
        if not np.isfinite(tmin):
            fin[live[np.isfinite(rem)]] = np.inf
            break
        w = (LARGE_WINDOW if events > EXACT_EVENTS else 0.0) if auto else rel_window
        step = max(tmin * (1 + EVENT_BATCH), (t + tmin) * (1 + w) - t)
        done = np.flatnonzero(dt <= step)
        if w == 0.0:
            step = tmin
        fin[live[done]] = t + dt[done]
        rem -= rt * step
        rem[done] = np.inf  # finished: never the lowest finish time again; dropped at the next solve
        t += step
        level = float(rt[done].min())
        alive -= len(done)
    finish[cls] = fin[grp]
    return FluidResult(finish, rate0, float(finish.max()) if K else 0.0, events)


def _columns(A: csc_matrix, cols: np.ndarray) -> csc_matrix:
    """``A[:, cols]``, or ``A`` itself when ``cols`` is every column in order (the first solve of a phase whose
    classes all carry bytes: no copy of a matrix that can hold 10^8 entries)."""
    if len(cols) == A.shape[1] and (len(cols) == 0 or (cols[0] == 0 and bool((np.diff(cols) == 1).all()))):
        return A
    return A[:, cols]


def _groups(rem: np.ndarray, rt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Classes of equal (remaining bytes, rate): the group of each, and each group's values."""
    order = np.lexsort((rem, rt))
    r, m = rt[order], rem[order]
    first = np.r_[True, (r[1:] != r[:-1]) | (m[1:] != m[:-1])]
    out = np.empty(len(order), np.int64)
    out[order] = np.cumsum(first) - 1
    return out, m[first], r[first]
