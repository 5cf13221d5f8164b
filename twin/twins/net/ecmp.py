"""BFS distances from every leaf (or every class of leaves: :mod:`twin.twins.net.leafclass`) and the ECMP
next-hop groups, on bitsets of destinations (numpy only).

Why bitsets: a 16K-GPU fabric has ~1,100 switches, ~1,000 destination leaves and ~38,000 switch
arcs. A breadth-first search from all leaves at once keeps, for every switch, the set of leaves it
has been reached from as a row of bits (``T`` destinations in ``ceil(T / 64)`` words), so one BFS
level is one gather over the arcs and one OR per head switch, whatever the number of leaves. The
next-hop mask of an arc ``u -> h`` is then the set of destinations ``t`` with ``dist(t, h) =
dist(t, u) - 1``: the OR over levels ``k`` of ``L_k[u] & L_{k-1}[h]`` (``L_k``: the leaves at
exactly ``k`` hops), again a few word operations per arc.

Groups: the ECMP group of switch ``u`` towards ``t`` is the arcs of ``u`` whose mask holds ``t``, in
(tail, head, arc) order. Arcs of one switch with the same mask form a *class*; in a Clos fabric the
classes of a switch are disjoint (a destination is reached through one kind of next hop), so each
class is one group and a destination's group is its class. A switch whose classes overlap is
grouped per destination pattern (:func:`_overlapping`). Identical groups of a switch are stored
once.

Worked example (2 leaves A, B under 2 spines X, Y): levels from B are B (0), X and Y (1), A (2);
A's arcs to X and Y both hold B in their mask (X and Y are at 1, A at 2), one class, so A's group
towards B is both up-arcs; X's arc to B holds B, its arc to A holds A: two disjoint classes.
"""

from __future__ import annotations

import numpy as np

from twin.twins.net.hashing import fmix64


def _bits(mask: np.ndarray, words: int) -> np.ndarray:
    """(rows, T) bool -> (rows, words) uint64 bitsets (bit t of the row = column t)."""
    rows, T = mask.shape
    out = np.zeros((rows, words * 64), bool)
    out[:, :T] = mask
    return np.packbits(out, axis=1, bitorder="little").view(np.uint64)


def _unbits(b: np.ndarray, T: int) -> np.ndarray:
    """(rows, words) uint64 bitsets -> (rows, T) bool."""
    u8 = np.ascontiguousarray(b).view(np.uint8)
    return np.unpackbits(u8, axis=1, bitorder="little")[:, :T].view(bool)  # 0/1 bytes: a view, no copy


def bfs_levels(S: int, tails: np.ndarray, heads: np.ndarray, sources: np.ndarray, cols: np.ndarray | None = None,
               T: int | None = None) -> list[np.ndarray]:
    """Breadth-first search from every source at once along the arcs ``tails -> heads`` (switch
    indices 0..S-1): ``levels[k]`` is an (S, words) bitset of the sources at exactly ``k`` hops from
    each switch (bit i: source i). With ``cols``, source ``i`` is the set of switches ``sources[j]``
    with ``cols[j] == i`` (``T`` sets): a multi-source search per set."""
    if cols is None:
        T, cols = len(sources), np.arange(len(sources))
    words = max(1, -(-T // 64))
    seen = np.zeros((S, words), np.uint64)
    start = np.zeros((S, T), bool)
    start[sources, cols] = True
    front = _bits(start, words)
    seen |= front
    levels = [front]
    order = np.argsort(heads, kind="stable")
    t_sorted, h_sorted = tails[order], heads[order]
    has_in = np.zeros(S, bool)
    has_in[h_sorted] = True
    starts = np.searchsorted(h_sorted, np.flatnonzero(has_in))
    while len(t_sorted):
        reached = np.zeros((S, words), np.uint64)
        reached[has_in] = np.bitwise_or.reduceat(front[t_sorted], starts, axis=0)
        front = reached & ~seen
        if not front.any():
            break
        seen |= front
        levels.append(front)
    return levels


def groups_from_masks(S: int, tails: np.ndarray, heads: np.ndarray, arcs: np.ndarray, mask: np.ndarray, dist: np.ndarray,
                      group_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The deduplicated next-hop groups of every (switch, destination) from the arcs' next-hop masks.

    ``arcs`` are switch arcs in (tail, head, arc) order and ``mask`` their (arcs, words) bitsets of the
    destinations each is a next hop towards; ``dist`` (destinations, switches) the hop counts and
    ``group_of`` (switches, destinations) is filled in place with group ids. Returns the groups' arcs as
    ``group_ptr``/``group_arcs``."""
    T = dist.shape[0]
    tl = tails[arcs]
    live = mask.any(axis=1)
    arcs, tl, mask = arcs[live], tl[live], mask[live]
    if not len(arcs):
        return np.zeros(1, np.int64), np.zeros(0, np.int64)
    cls, first = _classes(tl, mask)  # class of each arc; classes numbered by (switch, first arc)
    members = np.argsort(cls, kind="stable")  # arcs class after class, each in out order
    size = np.bincount(cls)
    c_tail, c_mask = tl[first], mask[first]
    # a switch's classes are disjoint when the popcounts of its class masks add up to that of their OR
    pop = np.bitwise_count(c_mask).sum(axis=1, dtype=np.int64)
    sw_pop = np.bincount(c_tail, weights=pop, minlength=S)
    cut = np.flatnonzero(np.r_[True, c_tail[1:] != c_tail[:-1]])
    union = np.bitwise_or.reduceat(c_mask, cut, axis=0)
    over = np.zeros(S, bool)
    over[c_tail[cut]] = np.bitwise_count(union).sum(axis=1) != sw_pop[c_tail[cut]]
    plain = ~over[c_tail]
    sizes = [size[plain]]  # group sizes, in group id order
    garcs = [arcs[members[plain[cls[members]]]]]
    c, t = np.divmod(np.flatnonzero(_unbits(c_mask[plain], T)), T)  # in one class of a plain switch
    group_of[c_tail[plain][c], t] = c
    if over.any():
        _overlapping(np.flatnonzero(over), tails, heads, dist, group_of, sizes, garcs)
    gptr = np.r_[0, np.cumsum(np.concatenate(sizes))]
    return gptr.astype(np.int64), np.concatenate(garcs).astype(np.int64)


def next_hop_masks(levels: list[np.ndarray], tl: np.ndarray, hd: np.ndarray) -> np.ndarray:
    """Bitsets of the destinations each arc ``tl -> hd`` is a next hop towards: the OR over levels
    ``k`` of ``L_k[tail] & L_{k-1}[head]``."""
    mask = np.zeros((len(tl), levels[0].shape[1]), np.uint64)
    for k in range(1, len(levels)):
        mask |= levels[k][tl] & levels[k - 1][hd]
    return mask


_SALT = np.random.default_rng(20261127).integers(1, 2**63, size=64, dtype=np.uint64)


def _classes(tl: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arcs with the same tail and mask as one class: (class of each arc, first arc of each class),
    classes numbered in order of their first arc (arcs are sorted by tail, so switch by switch)."""
    rows = np.concatenate([tl[:, None].astype(np.uint64), mask], axis=1)
    # rows keyed by a 64-bit hash (each word avalanched, then summed: a 1-D sort), checked exactly;
    # the row sort is the fallback should two different rows ever share a key
    key = np.zeros(len(rows), np.uint64)
    with np.errstate(over="ignore"):
        for c in range(rows.shape[1]):
            key += fmix64(rows[:, c] ^ _SALT[c % len(_SALT)])
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    if not np.array_equal(rows[first][inv], rows):
        _, first, inv = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inv], first[order]


def _overlapping(switches, tails, heads, dist, group_of, sizes, garcs) -> None:
    """Groups of the switches whose classes overlap (cut cables break a Clos' symmetry), switch by
    switch: each destination's next-hop arcs as a row of bits, identical rows stored once. Groups are
    appended to ``sizes``/``garcs`` with ids after those already stored."""
    S = group_of.shape[0]
    sw = (tails >= 0) & (heads >= 0) & (heads < S) & np.isin(tails, switches)
    arcs = np.flatnonzero(sw)
    arcs = arcs[np.lexsort((heads[arcs], tails[arcs]))]
    out_ptr = np.searchsorted(tails[arcs], switches)
    out_end = np.searchsorted(tails[arcs], switches, side="right")
    base = sum(len(x) for x in sizes)
    for u, a, b in zip(switches.tolist(), out_ptr.tolist(), out_end.tolist()):
        out = arcs[a:b]
        du = dist[:, u]
        dh = dist[:, heads[out]].T  # (deg, T)
        mask = (dh == (du - 1)[None, :]) & (du > 0)[None, :] & (dh >= 0)
        has = mask.any(axis=0)
        if not has.any():
            continue
        uniq, inv = _unique_rows(np.packbits(mask[:, has], axis=0).T.copy())
        new = []
        for row in uniq:
            m = out[np.unpackbits(row)[: len(out)].astype(bool)]
            garcs.append(m)
            new.append(len(m))
        sizes.append(np.asarray(new, np.int64))
        group_of[u, np.flatnonzero(has)] = base + inv
        base += len(new)


_ROW_WEIGHTS = np.random.default_rng(12345).integers(1, 2**63, size=4096, dtype=np.uint64) | np.uint64(1)


def _unique_rows(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of a small uint8 matrix and the inverse index. Sorting void rows is slow, so rows are
    keyed by a 64-bit weighted sum first and the grouping is checked exactly afterwards (falling back
    to the exact sort if two different rows ever shared a key)."""
    nb = packed.shape[1]
    if nb > len(_ROW_WEIGHTS):
        uniq, inv = np.unique(packed, axis=0, return_inverse=True)
        return uniq, np.asarray(inv).reshape(-1)
    with np.errstate(over="ignore"):
        key = (packed.astype(np.uint64) * _ROW_WEIGHTS[:nb]).sum(axis=1, dtype=np.uint64)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    uniq = packed[first]
    if not np.array_equal(uniq[inv], packed):
        uniq, inv = np.unique(packed, axis=0, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
    return uniq, inv
