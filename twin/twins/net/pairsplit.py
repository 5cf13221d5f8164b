"""Sprayed splits held per pair of leaf classes: the shared middle of a DAG once, each pair's own first and last arcs.

Why: :func:`twin.twins.net.spray.table` holds every arc of a (source leaf, destination) pair's DAG. A
pipeline's sends between the buildings of a million-GPU campus are 24,192 leaf pairs, each DAG ~5,700 arcs
(an RTSW's 36 uplinks, 1,728 CTSW-ATSW arcs, 2,160 campus links, 1,728 ATSW-CTSW arcs, 36 downlinks):
137 M entries. But the DAGs of pairs between the same two classes of leaves (:mod:`twin.twins.net.leafclass`,
a zone's RTSWs) differ only in their first and last arcs.

The closed form: let ``t`` be a leaf of class ``B`` (neighbour set ``P_B``) and ``a`` a source leaf not
in ``P_B``. Every arc of the DAG goes one hop closer to ``P_B``, so each level sits at one distance from
it. Level 0 is ``a``'s own group towards ``B`` (its arcs, ``1 / n`` each; *first arcs*). The levels from
``a``'s heads down to ``P_B`` use the (switch, class) groups only, the same for every leaf of ``B``, so
their fractions depend on ``B`` and the heads of ``a``'s arcs (with each head's arc count) alone: the
*middle*, one per such key. The last level is the down group ``p -> t`` of each ``p`` in ``P_B``, the
mass the middle brings to ``p`` over its arcs to ``t`` (*last arcs*).

Exact: the middle is walked by :func:`twin.twins.net.spray.step` from one pair of its key, in the order
the walk of that pair alone takes, and the masses entering it are ``k`` copies of ``1 / n`` for every pair
of the key; so :func:`expand` gives :func:`twin.twins.net.spray.table`'s arcs and fractions bit for bit
(``tests/test_gigawatt_pipeline.py``). A pair whose source is next to its destination's class, or whose
middle meets a leaf of that class (a DAG not the same for every destination), keeps its whole table as
first arcs, with no middle.

Worked example: leaves A, B under spines X, Y, and leaf C under Z, X and Y wired to Z. A towards C:
first arcs A->X, A->Y (1/2 each); middle X->Z, Y->Z (1/2 each; the same for any leaf under Z alone, from
any leaf whose arcs reach X and Y once each, so B's pairs to C share it); last arc Z->C (1).

At 995,328 GPUs on two planes, the pipeline's sends between buildings: 24,192 pairs of 36 first and 36
last arcs, and 336 middles (a zone and the same zone of the next building, on one plane) of 2,808 arcs:
~2.7 M entries, not 70 M.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.twins.net import spray
from twin.twins.net.topology import Net


@dataclass(frozen=True)
class Split:
    """Each pair's first arcs (``first_arcs[first_ptr[p]:first_ptr[p + 1]]``, fractions ``first_frac``), last
    arcs (``last_*``) and middle (``mid[p]``, -1 without one: the pair's whole table is its first arcs);
    each middle's arcs (ascending) and fractions, ``mid_arcs[mid_ptr[m]:mid_ptr[m + 1]]``."""

    first_ptr: np.ndarray
    first_arcs: np.ndarray
    first_frac: np.ndarray
    last_ptr: np.ndarray
    last_arcs: np.ndarray
    last_frac: np.ndarray
    mid: np.ndarray
    mid_ptr: np.ndarray
    mid_arcs: np.ndarray
    mid_frac: np.ndarray

    def entries(self) -> np.ndarray:
        """Arcs of each pair's whole DAG (what :func:`twin.twins.net.spray.table` holds for it)."""
        m = np.r_[np.diff(self.mid_ptr), 0]  # a pair without a middle (-1) reads the 0 at the end
        return np.diff(self.first_ptr) + np.diff(self.last_ptr) + m[self.mid]

    def latency(self, lat: np.ndarray) -> np.ndarray:
        """Each pair's mean latency over its split (arc latency ``lat`` times fraction, summed), by parts."""
        P = len(self.mid)

        def per(ptr, arcs, frac, n):
            return np.bincount(np.repeat(np.arange(n), np.diff(ptr)), weights=lat[arcs] * frac, minlength=n)

        m = per(self.mid_ptr, self.mid_arcs, self.mid_frac, len(self.mid_ptr) - 1)
        own = per(self.first_ptr, self.first_arcs, self.first_frac, P) + per(self.last_ptr, self.last_arcs, self.last_frac, P)
        return own + np.where(self.mid >= 0, m[np.maximum(self.mid, 0)] if len(m) else 0.0, 0.0)


def ranges(ptr: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices of the ranges ``ptr[w]:ptr[w + 1]`` for each ``w`` of ``which``, and the position in
    ``which`` each comes from.

    >>> [x.tolist() for x in ranges(np.array([0, 2, 3, 6]), np.array([2, 0]))]
    [[3, 4, 5, 0, 1], [0, 0, 0, 1, 1]]
    """
    start, n = ptr[which], ptr[np.asarray(which) + 1] - ptr[which]
    k = np.repeat(np.arange(len(n)), n)
    return start[k] + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n), k


def _csr(k: np.ndarray, arcs: np.ndarray, frac: np.ndarray, n: int, sort: bool = False):
    """Entries labelled ``k`` (0..n-1) as (ptr, arcs, fractions), stably grouped by label (``sort``: arcs
    ascending inside each)."""
    order = np.lexsort((arcs, k)) if sort else np.argsort(k, kind="stable")
    return np.r_[0, np.cumsum(np.bincount(k, minlength=n))].astype(np.int64), arcs[order], frac[order]


def split(net: Net, leaves: np.ndarray, ts: np.ndarray) -> Split:
    """The sprayed split of each pair (``leaves[p]`` -> destination ``ts[p]``) by parts (module docstring)."""
    leaves, ts = np.asarray(leaves, np.int64), np.asarray(ts, np.int64)
    P, r = len(leaves), net.routes
    B = r.leaf_class[ts].astype(np.int64)
    g0 = r.group_at(leaves, ts) if P else np.zeros(0, np.int64)
    normal = np.flatnonzero((leaves != net.leaf_of_dest[ts]) & (r.dP[B, leaves] >= 1) & (g0 >= 0))
    # level 0 of every ordinary pair: its first arcs, and the heads' masses
    (fp, fa, ff), (p1, n1, m1) = spray.step(net, ts[normal], np.arange(len(normal)), leaves[normal], np.ones(len(normal)))
    # the middle's key: the destination's class and the heads of the source's group (repeated per arc)
    ug, ginv = np.unique(g0[normal], return_inverse=True)
    ids: dict[bytes, int] = {}
    heads = np.array([ids.setdefault(net.arc_head[net.group_arcs[a:b]].tobytes(), len(ids))
                      for a, b in zip(net.group_ptr[ug].tolist(), net.group_ptr[ug + 1].tolist())], np.int64)
    _, rep, minv = np.unique(B[normal] * max(1, len(ids)) + heads[ginv.reshape(-1)], return_index=True, return_inverse=True)
    minv = minv.reshape(-1)
    M = len(rep)
    Bm, tm = B[normal][rep], ts[normal][rep]
    # the middles, walked from one pair each, to the class's neighbours
    of_rep = np.full(len(normal), -1, np.int64)
    of_rep[rep] = np.arange(M)
    row = of_rep[p1] >= 0
    pair, node, mass = of_rep[p1][row], n1[row], m1[row]
    o = np.lexsort((node, pair))  # each middle's heads in ascending order, as its pair's walk has them
    pair, node, mass = pair[o], node[o], mass[o]
    bad = np.zeros(M, bool)
    mids, arrive = [], []
    while len(pair):
        at = r.dP[Bm[pair], node] == 0
        arrive.append((pair[at], node[at], mass[at]))
        dest = net.dest_of_switch[node]
        bad[pair[~at & (dest >= 0) & (r.leaf_class[np.maximum(dest, 0)] == Bm[pair])]] = True  # a leaf of the class: not shared
        go = ~at & ~bad[pair]
        if not go.any():
            break
        e, (pair, node, mass) = spray.step(net, tm, pair[go], node[go], mass[go])
        mids.append(e)
    # per middle: its arcs ascending; the masses it brings to the class's neighbours, in switch order
    cat = [np.concatenate(x) for x in zip(*mids)] if mids else [np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)]
    keep_m = ~bad[cat[0]]
    mid_ptr, mid_arcs, mid_frac = _csr(cat[0][keep_m], cat[1][keep_m], cat[2][keep_m], M, sort=True)
    ap, an, am = (np.concatenate(x) for x in zip(*arrive)) if arrive else (np.zeros(0, np.int64),) * 2 + (np.zeros(0),)
    arr_ptr, arr_node, arr_mass = _csr(ap, an, am, M)
    # the last level of every ordinary pair whose middle is shared: its middle's masses over its down groups
    good = ~bad[minv]
    gi = np.flatnonzero(good)
    flat, k = ranges(arr_ptr, minv[gi])
    (lp, la, lf), _ = spray.step(net, ts[normal], gi[k], arr_node[flat], arr_mass[flat], follow=False)
    mid = np.full(P, -1, np.int64)
    mid[normal[gi]] = minv[gi]
    # the rest keep their whole table as first arcs
    rest = np.flatnonzero(mid < 0)
    ta, tf, tptr = spray.table(net, leaves[rest], ts[rest])
    fk = good[fp]
    first = _csr(np.r_[normal[fp[fk]], np.repeat(rest, np.diff(tptr))], np.r_[fa[fk], ta], np.r_[ff[fk], tf], P)
    last = _csr(normal[lp], la, lf, P)
    return Split(*first, *last, mid, mid_ptr, mid_arcs, mid_frac)


def expand(sp: Split, pairs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The whole table of ``pairs`` (default: every pair) as :func:`twin.twins.net.spray.table` gives it:
    (arcs ascending per pair, fractions, ptr)."""
    pairs = np.arange(len(sp.mid)) if pairs is None else np.asarray(pairs, np.int64)
    f, fk = ranges(sp.first_ptr, pairs)
    la, lk = ranges(sp.last_ptr, pairs)
    has = np.flatnonzero(sp.mid[pairs] >= 0)
    m, mk = ranges(sp.mid_ptr, sp.mid[pairs[has]])
    k = np.concatenate([fk, has[mk], lk])
    arcs = np.concatenate([sp.first_arcs[f], sp.mid_arcs[m], sp.last_arcs[la]])
    frac = np.concatenate([sp.first_frac[f], sp.mid_frac[m], sp.last_frac[la]])
    ptr, arcs, frac = _csr(k, arcs, frac, len(pairs), sort=True)
    return arcs, frac, ptr
