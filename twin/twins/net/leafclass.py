"""Routing tables per class of destination leaves: hop counts and ECMP groups without a (switch x leaf) table.

Why: a million-GPU campus has 27,648 leaves and ~32,000 switches; a table per (switch, leaf) is
885 M entries (7 GiB as int64, twice over for distances and groups) and the BFS from every leaf holds
a 432-word bitset per switch and level. But leaves with the same neighbours are interchangeable
everywhere except at themselves and their neighbours: every RTSW of a zone hangs off the same CTSWs.

The closed form: for a leaf ``t`` with neighbour set ``P`` (the heads of its live switch arcs) and any
switch ``u != t``, a shortest path to ``t`` ends with an arc ``p -> t``, ``p`` in ``P``, so
``dist(u, t) = 1 + dist(u, P)``, where ``dist(u, P)`` is a multi-source BFS from ``P``. Leaves are
grouped into *classes* of the same ``P``; one BFS per class (bitsets of classes, as
:mod:`twin.twins.net.ecmp` does for leaves) gives ``dP`` (classes, switches). The ECMP group of ``u``
towards ``t`` is the arcs of ``u`` to heads one hop closer: where ``dP(u) >= 1`` those are the heads
with ``dP(h) = dP(u) - 1`` (the same for every leaf of the class: one group per (switch, class));
where ``dP(u) = 0`` (``u`` is a neighbour of ``t``) only ``t`` itself is closer, so the group is the
arcs ``u -> t`` (one *down group* per (neighbour, leaf), looked up by key). Member order is the
ECMP module's (tail, head, arc), so hashed paths, and every result, are the same as with the table
per leaf (``tests/test_leafclass.py`` compares both on fabrics with and without cut cables).

Worked example (leaves A, B under spines X, Y): A and B share P = {X, Y}: one class, dP(X) = dP(Y) = 0,
dP(A) = dP(B) = 1. A towards B: dP(A) = 1, so the arcs to heads at 0: A->X, A->Y. X towards B: X is
in P, so the down group X->B.

At 995,328 GPUs on two planes: 384 classes (a zone's RTSWs of one plane), dP and the (switch, class)
groups are 49 MB each as int32, and the 248,832 down groups (an RTSW's 9 CTSWs) ~1 M arcs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.twins.net.ecmp import bfs_levels, groups_from_masks, next_hop_masks


@dataclass(frozen=True)
class Routes:
    """Hop counts and ECMP group ids of every (switch, destination leaf), kept per class of leaves."""

    leaves: np.ndarray  # destination -> its switch
    leaf_class: np.ndarray  # destination -> class (int32)
    dP: np.ndarray  # (classes, switches) hops to the class's neighbour set, -1 unreachable (int32)
    cgroup: np.ndarray  # (switches, classes) group where dP >= 1, -2 without (int32)
    down_key: np.ndarray  # sorted keys switch x destinations + destination of every (neighbour, leaf)
    down_group: np.ndarray  # their group ids (int32)
    max_dist: int  # the largest hop count between a switch and a leaf it reaches

    @property
    def n_dest(self) -> int:
        return len(self.leaves)

    def dist_at(self, t, u) -> np.ndarray:
        """Hops from switch ``u`` to destination ``t`` (arrays broadcast), -1 unreachable."""
        t, u = np.asarray(t), np.asarray(u)
        d = self.dP[self.leaf_class[t], u]
        return np.where(u == self.leaves[t], 0, np.where(d >= 0, d + 1, -1))

    def group_at(self, u, t) -> np.ndarray:
        """Group id at switch ``u`` towards destination ``t``: -1 at the leaf itself, -2 without a next hop."""
        u, t = np.asarray(u, np.int64), np.asarray(t, np.int64)
        c = self.leaf_class[t]
        d = self.dP[c, u]
        g = np.where(d >= 1, self.cgroup[u, c], -2).astype(np.int64)
        near = d == 0
        if near.any():
            key = u[near] * self.n_dest + t[near]
            at = np.minimum(np.searchsorted(self.down_key, key), max(0, len(self.down_key) - 1))
            hit = self.down_key[at] == key if len(self.down_key) else np.zeros(np.shape(key), bool)
            g[near] = np.where(hit, self.down_group[at] if len(self.down_key) else -2, -2)
        return np.where(u == self.leaves[t], -1, g)

    def dense_dist(self) -> np.ndarray:
        """The (destinations, switches) table of hop counts (small fabrics and tests only)."""
        d = self.dP[self.leaf_class]
        out = np.where(d >= 0, d + 1, -1).astype(np.int64)
        out[np.arange(self.n_dest), self.leaves] = 0
        return out

    def dense_group_of(self) -> np.ndarray:
        """The (switches, destinations) table of group ids (small fabrics and tests only)."""
        S = self.dP.shape[1]
        u = np.repeat(np.arange(S), self.n_dest)
        t = np.tile(np.arange(self.n_dest), S)
        return self.group_at(u, t).reshape(S, self.n_dest)


def class_routes(S: int, tails: np.ndarray, heads: np.ndarray, leaves: np.ndarray) -> tuple[Routes, np.ndarray, np.ndarray]:
    """:class:`Routes` of the switch arcs among ``tails``/``heads`` (NIC arcs and cut arcs, tail -1,
    skipped) towards ``leaves``, and the groups' arcs as ``group_ptr``/``group_arcs``."""
    leaves = np.asarray(leaves, np.int64)
    T = len(leaves)
    arcs = np.flatnonzero((tails < S) & (heads < S) & (tails >= 0) & (heads >= 0))
    arcs = arcs[np.lexsort((heads[arcs], tails[arcs]))]  # out-arcs of each switch in (tail, head, arc) order
    tl, hd = tails[arcs], heads[arcs]
    dest_of = np.full(S, -1, np.int64)
    dest_of[leaves] = np.arange(T)
    # each leaf's neighbour set, as (leaf, neighbour) pairs in order; classes by first leaf
    up = dest_of[tl] >= 0
    pairs = np.unique(dest_of[tl[up]] * S + hd[up])
    pt, pp = pairs // S, pairs % S
    bounds = np.searchsorted(pt, np.arange(T + 1))
    ids: dict[bytes, int] = {}
    flat = pp.astype(np.int64)
    leaf_class = np.array([ids.setdefault(flat[a:b].tobytes(), len(ids)) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())],
                          np.int32).reshape(-1)
    C = len(ids)
    dPT = np.full((S, C), -1, np.int32)
    cgroup = np.full((S, C), -2, np.int32)
    dP = np.ascontiguousarray(dPT.T)
    gptr, garcs = np.zeros(1, np.int64), np.zeros(0, np.int64)
    if C and len(pairs):
        src = np.unique(pp * C + leaf_class[pt])  # (neighbour, class) once each
        levels = bfs_levels(S, tl, hd, src // C, src % C, C)
        for k, lv in enumerate(levels):
            on = np.unpackbits(np.ascontiguousarray(lv).view(np.uint8), axis=1, bitorder="little")[:, :C].view(bool)
            np.putmask(dPT, on, k)
        dP = np.ascontiguousarray(dPT.T)
        gptr, garcs = groups_from_masks(S, tails, heads, arcs, next_hop_masks(levels, tl, hd), dP, cgroup)
    # a class of one leaf: its own group towards itself is never asked for
    single = np.flatnonzero(np.bincount(leaf_class, minlength=C) == 1)
    lone = leaves[np.isin(leaf_class, single)]
    cgroup[lone, leaf_class[dest_of[lone]]] = -2
    # down groups: the arcs u -> t of every neighbour u of a leaf t, in arc order
    down = dest_of[hd] >= 0
    key = tl[down] * T + dest_of[hd[down]]
    o = np.lexsort((arcs[down], key))
    key, darcs = key[o], arcs[down][o]
    down_key, start = np.unique(key, return_index=True)
    # keep the groups some (switch, destination) uses, renumbered in order, then the down groups
    used = np.unique(cgroup[cgroup >= 0])
    remap = np.full(len(gptr), -2, np.int64)
    remap[used] = np.arange(len(used))
    cgroup = np.where(cgroup >= 0, remap[np.maximum(cgroup, 0)], -2).astype(np.int32)
    n = np.diff(gptr)[used]
    take = np.repeat(gptr[used], n) + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    sizes = np.r_[n, np.diff(np.r_[start, len(key)])]
    group_ptr = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    group_arcs = np.concatenate([garcs[take], darcs]).astype(np.int64)
    down_group = (len(used) + np.arange(len(down_key))).astype(np.int32)
    d = dP.copy()
    lone_c = leaf_class[dest_of[lone]]
    d[lone_c, lone] = -1  # a lone leaf's own column is its 0, not 1 + dP
    max_dist = int(d.max()) + 1 if d.size and d.max() >= 0 else 0
    return Routes(leaves, leaf_class, dP, cgroup, down_key, down_group, max_dist), group_ptr, group_arcs
