"""Packet spraying's split of a transfer over the fabric, for many (source leaf, destination) pairs at once.

Ideal spraying (adaptive routing's upper bound) splits the traffic at every switch evenly over its
ECMP group towards the destination, so the share of a pair's traffic on each arc follows from
walking the shortest-path DAG level by level: a switch holding mass ``x`` puts ``x / n`` on each of
its ``n`` next-hop arcs, and a switch's mass is the sum over its incoming arcs. The walk runs for
all pairs together, one level per step, as flat (pair, switch, mass) entries kept in (pair, switch)
order, so each sum adds the same terms in the same order as walking one pair alone would.

Worked example (leaf A to leaf B under spines X, Y; one arc each way): A holds 1 and puts 0.5 on
A->X and A->Y; X and Y hold 0.5 each and put it on X->B and Y->B: four arcs at 0.5.
"""

from __future__ import annotations

import numpy as np

from twin.twins.net.topology import Net

# a sprayed phase whose classes would cross more (arc, class) entries than this lumps the classes of one
# middle into one column (twin/twins/net/middles.py; below it, every class is a column of its own)
SPLIT_ENTRIES = 16_000_000


def table(net: Net, leaves: np.ndarray, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spray fractions of each pair (``leaves[p]`` -> destination ``ts[p]``): the arcs of pair ``p``
    (ascending) and their fractions are ``arcs[ptr[p]:ptr[p + 1]]``, ``frac[...]``."""
    P = len(leaves)
    goal = net.leaf_of_dest[ts]
    pair = np.arange(P)
    node = np.asarray(leaves, np.int64)
    mass = np.ones(P)
    out_pair, out_arc, out_frac = [], [], []
    while len(pair):
        live = node != goal[pair]
        pair, node, mass = pair[live], node[live], mass[live]
        if not len(pair):
            break
        (p, a, f), (pair, node, mass) = step(net, ts, pair, node, mass)
        out_pair.append(p)
        out_arc.append(a)
        out_frac.append(f)
    if not out_arc:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(P + 1, np.int64)
    p, a, f = np.concatenate(out_pair), np.concatenate(out_arc), np.concatenate(out_frac)
    # an arc lies on one level of a pair's DAG and leaves one switch: each (pair, arc) occurs once
    order = np.lexsort((a, p))
    ptr = np.r_[0, np.cumsum(np.bincount(p, minlength=P))]
    return a[order], f[order], ptr


def step(net: Net, ts: np.ndarray, pair: np.ndarray, node: np.ndarray, mass: np.ndarray, follow: bool = True):
    """One level of the walk: each (pair, switch) row, holding ``mass`` of pair ``pair`` towards destination
    ``ts[pair]``, puts ``mass / n`` on each of its group's ``n`` arcs. Returns those entries (pair, arc,
    fraction) and, with ``follow``, the next level's rows: each (pair, head switch) once, in (pair, switch)
    order, its mass summed in the order of the entries (the rows' order, then the group's)."""
    g = net.routes.group_at(node, ts[pair])
    if (g < 0).any():
        raise ValueError("some destinations are unreachable (failures partition the fabric)")
    start, n = net.group_ptr[g], net.group_ptr[g + 1] - net.group_ptr[g]
    rep = np.repeat(np.arange(len(pair)), n)
    arcs = net.group_arcs[start[rep] + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)]
    f = (mass / n)[rep]
    if not follow:
        return (pair[rep], arcs, f), None
    S = net.n_switches
    key, inv = np.unique(pair[rep] * S + net.arc_head[arcs], return_inverse=True)
    return (pair[rep], arcs, f), (key // S, key % S, np.bincount(inv.reshape(-1), weights=f, minlength=len(key)))


def lumped(net: Net, s_nic: np.ndarray, d_nic: np.ndarray, b: np.ndarray, pre: np.ndarray | None,
           taken: np.ndarray | None = None):
    """Sprayed transfers as classes of the same (source leaf, destination leaf, bytes), exactly, or None.

    Why exact: a sprayed transfer's split past its leaf depends on (leaf, destination) only, so the
    transfers of a class cross the same fabric arcs at the same fractions; what tells them apart are
    their *private* arcs (their NIC's up-arc, the destination NIC's down-arc, their NVLink hops). When
    every private arc carries one transfer of the phase and nothing else, the k private arcs of one
    position in a class, each of capacity c, hold a flow apiece: max-min gives the same rates as one
    virtual arc of capacity k x c crossed by the class with weight k (its fair share is c per member
    either way). So the class is one column, its private arcs of each position one virtual row after
    the fabric's arcs. Where a private arc is shared (two transfers from one NIC), or capacities
    differ inside a class, or the phase's other transfers (``taken``: the arcs its NVLink transfers
    cross) use one, the transfers are not lumped (None: the caller sprays them one by one).

    Returns (A, bytes per member, members, latency per class, extra capacities, member arcs of the
    virtual rows, their virtual row), the rows of A being the net's arcs then the virtual ones."""
    from scipy.sparse import csc_matrix

    from twin.twins.net import middles, pairsplit  # they walk with this module's step: imported here, not above

    cols = [net.nic_up[s_nic], net.nic_down[d_nic]]
    if pre is not None and (pre >= 0).any():
        if not (pre >= 0).all():
            return None
        cols = [pre[:, 0], pre[:, 1]] + cols
    priv = np.stack(cols, axis=1)
    if (priv < 0).any() or len(np.unique(priv)) != priv.size:
        return None
    if taken is not None and np.isin(priv, taken).any():
        return None
    leaf = net.nic_leaf[s_nic]
    t = net.dest_of_switch[net.nic_leaf[d_nic]]
    if (leaf < 0).any() or (t < 0).any():
        return None
    size_id = np.unique(b, return_inverse=True)[1].reshape(-1)
    cap_id = np.unique(net.arc_cap[priv], return_inverse=True)[1].reshape(priv.shape)
    key = np.concatenate([np.stack([leaf, t, size_id], axis=1), cap_id], axis=1)
    _, first, cls, count = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
    cls = np.asarray(cls).reshape(-1)
    C, W = len(first), priv.shape[1]
    T = max(1, len(net.leaf_of_dest))
    pairs, pinv = np.unique(leaf[first] * T + t[first], return_inverse=True)
    pinv = pinv.reshape(-1)
    sp = pairsplit.split(net, pairs // T, pairs % T)
    if int(sp.entries()[pinv].sum()) > SPLIT_ENTRIES:  # a column per class past the limit: classes of one middle share one
        kind = np.unique(key[first][:, 2:], axis=0, return_inverse=True)[1].reshape(-1)
        lat_nic = net.arc_latency[net.nic_up[s_nic]] + net.arc_latency[net.nic_down[d_nic]]
        return middles.lump(net, sp, priv, cls, first, count, kind, pinv, b, lat_nic)
    p_arcs, p_frac, p_ptr = pairsplit.expand(sp)
    w = net.arc_latency[p_arcs] * p_frac
    p_lat = np.array([float(w[a:e].sum()) for a, e in zip(p_ptr[:-1].tolist(), p_ptr[1:].tolist())])
    n = p_ptr[pinv + 1] - p_ptr[pinv]
    rep = np.repeat(np.arange(C), n)
    mid = p_ptr[pinv][rep] + np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    L = net.n_arcs
    vrow = L + np.arange(C * W)  # class j's private position w: row L + j * W + w
    rows = np.concatenate([p_arcs[mid], vrow])
    colj = np.concatenate([rep, np.repeat(np.arange(C), W)])
    vals = np.concatenate([p_frac[mid] * count[rep], np.repeat(count.astype(float), W)])
    A = csc_matrix((vals, (rows, colj)), shape=(L + C * W, C))
    extra = (net.arc_cap[priv[first]] * count[:, None]).reshape(-1)
    lat_k = net.arc_latency[net.nic_up[s_nic]] + p_lat[pinv][cls] + net.arc_latency[net.nic_down[d_nic]]
    lat = np.full(C, -np.inf)
    np.maximum.at(lat, cls, lat_k)
    lump_arcs = priv.reshape(-1)
    lump_row = (cls[:, None] * W + np.arange(W)[None, :]).reshape(-1)
    return A, np.asarray(b, float)[first], count.astype(float), lat, extra, lump_arcs, lump_row
