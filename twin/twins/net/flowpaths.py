"""Hashed paths of QP flows, and the flows of a phase grouped into classes of the same path and size.

Why classes: a 16K-GPU DP phase under E-ECMP has a million QP flows but ~300K distinct (path, size)
pairs, and max-min rates are equal within a pair, so the fluid model solves one variable per class.

How the grouping stays cheap: a flow's path is fixed by its transfer's NIC pair (and NVLink prefix)
and by the member ``m`` of the ECMP group its hash picked at each hop, so (transfer kind, choices)
identifies the path exactly. The choices pack into one integer (``m`` < the largest group size
``B``, one base-``B`` digit per hop), the transfer kinds are numbered, and one 1-D sort of
``kind x B**hops + choices`` finds the classes: no row-wise comparison of (flows x hops) paths.
"""

from __future__ import annotations

import numpy as np

from twin.twins.net import ftree, hashing
from twin.twins.net.topology import Net

PINNED = ("static", "ftree")  # destination-routed schemes: one path per NIC pair, however many QPs
CHUNK_FLOWS = 1 << 18  # flows hashed at once: bounds the header-field temporaries (~10 arrays of this length)


def flows_per_transfer(scheme, conns: int = 1) -> int:
    """QP flows a transfer is split into: ``conns`` connections of ``qps`` QPs (static pinning: one)."""
    return 1 if scheme.kind in PINNED else max(1, conns) * scheme.qps


def choice_base(net: Net, scheme) -> int:
    """One more than the highest member index a switch can pick (the largest group, or the scheme's
    ECMP width): the base in which :func:`hashed_paths` packs a flow's choices."""
    n = int(np.diff(net.group_ptr).max()) if len(net.group_ptr) > 1 else 1
    return max(1, min(n, scheme.ecmp_width) if scheme.ecmp_width else n)


def hashed_paths(net: Net, s_nic: np.ndarray, d_nic: np.ndarray, scheme, conns: int = 1, spare: int = 0,
                 choices: np.ndarray | None = None) -> np.ndarray:
    """Arc path of every QP flow, shape (transfers * flows, hops), padded with -1 (int32: a million
    flows of a 16K-GPU job hold half the memory).

    Rows are ordered transfer-major (transfer i, QP q at row i * flows + q). Every flow's path depends
    on its own header and the switches' seeds only, so the transfers are hashed in chunks. ``spare``
    extra columns (-1) follow the path, for the caller's own use. ``choices`` (int64, one per flow,
    zeros): receives each flow's group members picked at hops 1, 2, .. as digits in base
    :func:`choice_base`, lowest first."""
    qps = flows_per_transfer(scheme, conns)
    hops = net.routes.max_dist
    out = np.full((len(s_nic) * qps, hops + 2 + spare), -1, np.int32)
    P = out[:, :hops + 2]
    seeds = None if scheme.kind in PINNED else hashing.switch_seeds(net.n_switches, scheme.seed, scheme.per_switch)
    size = np.diff(net.group_ptr)
    if scheme.ecmp_width:
        size = np.minimum(size, scheme.ecmp_width)
    base = choice_base(net, scheme)
    step = max(1, CHUNK_FLOWS // qps)
    for a in range(0, len(s_nic), step):
        rows = slice(a * qps, (a + step) * qps)
        _paths(net, np.asarray(s_nic[a:a + step]), np.asarray(d_nic[a:a + step]), scheme, qps, seeds, size, P[rows],
               None if choices is None else choices[rows], base)
    return out


def _paths(net: Net, s_nic: np.ndarray, d_nic: np.ndarray, scheme, qps: int, seeds, size: np.ndarray, P: np.ndarray,
           choices: np.ndarray | None, base: int) -> None:
    """:func:`hashed_paths` of some transfers, written into ``P`` (their rows, all -1) and ``choices``.
    Each hop works on the flows still travelling only (``i``), and the group of a (switch,
    destination) is read from the flattened table.

    Static pinning's key (the destination's host index) and every per-NIC lookup are per transfer; under
    ``ftree`` the member is the one OpenSM's table at the switch names for the destination NIC."""
    F = len(s_nic) * qps
    # what depends on the NIC pair only is looked up per transfer, then repeated for its QPs
    leaf = net.nic_leaf[s_nic]
    dest = net.dest_of_switch[net.nic_leaf[d_nic]]
    if (leaf < 0).any() or (dest < 0).any():
        raise ValueError("a GPU's NIC has no link to a leaf switch (a failed server or NIC link?)")
    cur = np.repeat(leaf, qps)
    tgt = np.repeat(dest, qps)
    hops = P.shape[1] - 2
    P[:, 0] = np.repeat(net.nic_up[s_nic], qps)
    if scheme.kind == "static":
        key = np.repeat(net.nic_host[d_nic], qps)
    elif scheme.kind == "ftree":
        lft = ftree.of(net).arc
        dn = np.repeat(d_nic, qps)
    else:
        h = hashing.transfer_hash(s_nic, d_nic, qps, scheme.fields(), scheme.hash_function, scheme.seed)
    goal = np.repeat(net.leaf_of_dest[dest], qps)
    moved = np.zeros(F, np.int64)  # switch hops taken
    i = np.flatnonzero(cur != goal)
    for k in range(1, hops + 1):
        if not len(i):
            break
        c = cur[i]
        g = net.routes.group_at(c, tgt[i])
        if (g < 0).any():
            raise ValueError("some destinations are unreachable (failures partition the fabric)")
        n = size[g]
        if scheme.kind == "ftree":
            m = ftree.member(net, g, n, lft[c, dn[i]])
        else:
            m = key[i] % n if scheme.kind == "static" else hashing.choose(h[i], seeds[c], n)
        arc = net.group_arcs[net.group_ptr[g] + m]
        P[i, k] = arc
        if choices is not None:
            choices[i] += m * base ** (k - 1)
        head = net.arc_head[arc]
        cur[i] = head
        moved[i] = k
        i = i[head != goal[i]]
    P[np.arange(F), moved + 1] = np.repeat(net.nic_down[d_nic], qps)


def first_classes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Equal values of the 1-D ``key`` as classes: (first index of each class, class of each index,
    members), classes in order of first appearance."""
    _, first, inv, count = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    inv = np.asarray(inv).reshape(-1)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[inv], count[order]


def row_classes(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`first_classes` of ``C.reshape(-1)`` (without the class of each index) when no value
    occurs in two rows (each row: one transfer's flows): every row is sorted on its own, which is
    much cheaper than one sort of all of them. A stable sort puts each run's first occurrence first."""
    T, q = C.shape
    o = np.argsort(C, axis=1, kind="stable")
    s = np.take_along_axis(C, o, axis=1)
    start = np.ones((T, q), bool)
    start[:, 1:] = s[:, 1:] != s[:, :-1]
    at = np.flatnonzero(start)  # runs never cross rows: each row starts one
    first = o.reshape(-1)[at] + at // q * q
    count = np.zeros(T * q, np.int64)
    count[first] = np.diff(np.r_[at, T * q])
    first = np.flatnonzero(count)
    return first, count[first]


def class_matrix(n_arcs: int, Pc: np.ndarray, count: np.ndarray):
    """The (arc x class) matrix of classes with paths ``Pc`` (rows, -1 padded) and ``count`` members,
    built as CSC directly: each column's arcs sorted, as scipy's COO conversion would leave them (a
    path never repeats an arc)."""
    from scipy.sparse import csc_matrix

    valid = Pc >= 0
    n = valid.sum(axis=1)
    arcs = np.sort(np.where(valid, Pc, np.iinfo(Pc.dtype).max), axis=1)
    indices = arcs[np.arange(Pc.shape[1]) < n[:, None]].astype(np.int32)
    indptr = np.r_[0, np.cumsum(n)].astype(np.int32)
    return csc_matrix((np.repeat(count.astype(float), n), indices, indptr), shape=(n_arcs, len(Pc)))
