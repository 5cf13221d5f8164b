"""Exact classes of sprayed transfers: a large sprayed phase as one column per class of transfers, their
private arcs as virtual arcs (:func:`lumped`), and, past :data:`SPLIT_ENTRIES`, one column per middle of a
pair of leaf classes (:mod:`twin.twins.net.middles`). The per-arc splits come from :mod:`twin.twins.net.spray`'s
walk, held per pair of leaf classes (:mod:`twin.twins.net.pairsplit`).
"""

from __future__ import annotations

import numpy as np

from twin.twins.net import middles, pairsplit
from twin.twins.net.rows import unique_rows
from twin.twins.net.topology import Net

# a sprayed phase whose classes would cross more (arc, class) entries than this lumps the classes of one
# middle into one column (twin/twins/net/middles.py; below it, every class is a column of its own)
SPLIT_ENTRIES = 16_000_000


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

    cols = [net.nic_up[s_nic], net.nic_down[d_nic]]
    if pre is not None and (pre >= 0).any():
        if not (pre >= 0).all():
            return None
        cols = [pre[:, 0], pre[:, 1]] + cols
    priv = np.stack(cols, axis=1)
    flat = np.sort(priv, axis=None)  # a private arc twice? (a sort, not np.unique: numpy 2.4 hashes, 7 s on 8 M arcs)
    if (flat[:1] < 0).any() or (flat[1:] == flat[:-1]).any():
        return None
    del flat
    if taken is not None and np.isin(priv, taken).any():
        return None
    leaf = net.nic_leaf[s_nic]
    t = net.dest_of_switch[net.nic_leaf[d_nic]]
    if (leaf < 0).any() or (t < 0).any():
        return None
    size_id = np.unique(b, return_inverse=True)[1].reshape(-1)
    cap_id = np.unique(net.arc_cap[priv], return_inverse=True)[1].reshape(priv.shape)
    key = np.concatenate([np.stack([leaf, t, size_id], axis=1), cap_id], axis=1)
    _, first, cls, count = unique_rows(key, return_index=True, return_inverse=True, return_counts=True)
    C, W = len(first), priv.shape[1]
    T = max(1, len(net.leaf_of_dest))
    pairs, pinv = np.unique(leaf[first] * T + t[first], return_inverse=True)
    pinv = pinv.reshape(-1)
    sp = pairsplit.split(net, pairs // T, pairs % T)
    if int(sp.entries()[pinv].sum()) > SPLIT_ENTRIES:  # a column per class past the limit: classes of one middle share one
        kind = unique_rows(key[first][:, 2:], return_inverse=True)[1]
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
