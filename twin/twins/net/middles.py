"""Classes of sprayed transfers that share a middle, lumped into one column: exact, when their own arcs are theirs alone.

Why: a pipeline's sends between the buildings of a million-GPU campus are 870,912 transfers in 24,192
classes of one (source leaf, destination leaf) each (:func:`twin.twins.net.sprayclasses.lumped`), and every class
crosses its whole DAG, ~5,700 arcs: a column per class is 137 M entries of the fluid model's matrix. The
pairs of classes of leaves (a zone and the same zone of the next building) are 168, and the classes of
one such pair share the middle of their DAG (:mod:`twin.twins.net.pairsplit`); what tells them apart are
their own arcs, the source leaf's first arcs and the destination leaf's last ones, and their transfers'
private arcs (NICs, NVLink hops).

The reduction, exact by symmetry: classes with the same middle, bytes, members and private capacities,
whose own arcs have the same (capacity, fraction) in sorted order, and whose own arcs no other class of the
phase crosses (not as its own arcs, not in any middle, not in a table of its own), are interchangeable:
swapping two of them, with their own and private arcs, maps the max-min problem onto itself, so its one
solution gives them the same rate. Then, as for the private arcs of one class, ``k`` such classes are one
column of weight ``k`` on the middle, and each position of their own arcs (capacity ``c``, fraction ``f``)
one virtual row of capacity ``k c`` crossed with weight ``k f`` per member flow: the same fair share, the
same loads. A class that fails a condition keeps a column of its own, its whole table expanded.

At 995,328 GPUs on two planes, PP 8 with a stage per building: 336 columns (168 per plane) of ~2,800
middle arcs and 72 + 2 virtual rows each, instead of 24,192 columns of ~2,900 arcs.
"""

from __future__ import annotations

import numpy as np

from twin.twins.net.pairsplit import Split, expand, ranges
from twin.twins.net.topology import Net


def columns(net: Net, sp: Split, pinv: np.ndarray, kind: np.ndarray, count: np.ndarray):
    """Each class's column (``pinv``: its pair in ``sp``; ``kind``: its bytes and private capacities as one
    id; ``count``: its members): columns shared by classes of one middle first, then one per class that
    keeps its own. Returns (column of each class, shared columns, own entries of the classes as (class,
    arc, fraction) sorted by class then (capacity, fraction), and each class's count of them)."""
    C = len(pinv)
    f, fc = ranges(sp.first_ptr, pinv)
    la, lc = ranges(sp.last_ptr, pinv)
    oc = np.r_[fc, lc]
    oa = np.r_[sp.first_arcs[f], sp.last_arcs[la]]
    of = np.r_[sp.first_frac[f], sp.last_frac[la]]
    mid = sp.mid[pinv]
    shared = np.zeros(net.n_arcs, bool)
    shared[sp.mid_arcs[ranges(sp.mid_ptr, np.unique(mid[mid >= 0]))[0]]] = True
    crossed = (np.bincount(oa, minlength=net.n_arcs)[oa] > 1) | shared[oa]  # an own arc another class crosses too
    ok = (mid >= 0) & (np.bincount(oc, weights=crossed, minlength=C) == 0)
    cap = net.arc_cap[oa]
    o = np.lexsort((of, cap, oc))
    oc, oa, of, cap = oc[o], oa[o], of[o], cap[o]
    n_own = np.bincount(oc, minlength=C)
    ptr = np.r_[0, np.cumsum(n_own)]
    col = np.full(C, -1, np.int64)
    n = 0
    for ell in np.unique(n_own[ok]).tolist():  # classes of one length of own arcs, compared as rows
        js = np.flatnonzero(ok & (n_own == ell))
        at = ptr[js][:, None] + np.arange(ell)[None, :]
        key = np.concatenate([np.stack([mid[js], kind[js], count[js]], axis=1), cap[at].view(np.int64), of[at].view(np.int64)], axis=1)
        inv = np.asarray(np.unique(key, axis=0, return_inverse=True)[1]).reshape(-1)
        col[js] = n + inv
        n += int(inv.max()) + 1
    alone = np.flatnonzero(col < 0)
    col[alone] = n + np.arange(len(alone))
    return col, n, (oc, oa, of), n_own


def lump(net: Net, sp: Split, priv: np.ndarray, cls: np.ndarray, first: np.ndarray, count: np.ndarray, kind: np.ndarray,
         pinv: np.ndarray, size: np.ndarray, lat_nic: np.ndarray):
    """:func:`twin.twins.net.sprayclasses.lumped`'s result with the classes of one middle in one column (module
    docstring). ``priv``: each transfer's private arcs; ``cls``: its class; ``first``, ``count``, ``kind``,
    ``pinv``: each class's first transfer, members, id of its bytes and private capacities, and pair in
    ``sp``; ``size``: each transfer's bytes; ``lat_nic``: its NIC arcs' latency."""
    from scipy.sparse import csc_matrix

    col, n_shared, (oc, oa, of), n_own = columns(net, sp, pinv, kind, count)
    N, W, L = int(col.max()) + 1, priv.shape[1], net.n_arcs
    k = np.bincount(col, minlength=N)  # classes per column
    rep = np.unique(col, return_index=True)[1]  # each column's first class
    members = count[rep] * k
    # rows of the fabric: a shared column's middle, a class's own whole table
    m, mk = ranges(sp.mid_ptr, sp.mid[pinv[rep[:n_shared]]])
    ea, ef, eptr = expand(sp, pinv[rep[n_shared:]])
    ek = n_shared + np.repeat(np.arange(N - n_shared), np.diff(eptr))
    # virtual rows: each column's private positions (L + c W + w), then a shared column's own positions
    own_rows = np.r_[0, np.cumsum(n_own[rep[:n_shared]])]
    on = np.flatnonzero(col[oc] < n_shared)
    pos = np.arange(len(oc)) - np.r_[0, np.cumsum(n_own)][oc]  # an own entry's place among its class's
    own_row = N * W + own_rows[col[oc[on]]] + pos[on]  # virtual row of each own entry of a shared column
    lead = on[rep[col[oc[on]]] == oc[on]]  # the first class's own entries stand for their column's positions
    lc, lrow = col[oc[lead]], own_rows[col[oc[lead]]] + pos[lead]
    rows = np.concatenate([sp.mid_arcs[m], ea, L + np.arange(N * W), L + N * W + lrow])
    cols = np.concatenate([mk, ek, np.repeat(np.arange(N), W), lc])
    vals = np.concatenate([sp.mid_frac[m] * members[mk], ef * members[ek], np.repeat(members.astype(float), W), of[lead] * members[lc]])
    own_cap = np.zeros(own_rows[-1])
    own_cap[lrow] = net.arc_cap[oa[lead]] * k[lc]
    extra = np.concatenate([(net.arc_cap[priv[first[rep]]] * members[:, None]).reshape(-1), own_cap])
    A = csc_matrix((vals, (rows, cols)), shape=(L + len(extra), N))
    lat_k = lat_nic + sp.latency(net.arc_latency)[pinv][cls]
    lat = np.full(N, -np.inf)
    np.maximum.at(lat, col[cls], lat_k)
    lump_arcs = np.concatenate([priv.reshape(-1), oa[on]])
    lump_row = np.concatenate([(col[cls][:, None] * W + np.arange(W)[None, :]).reshape(-1), own_row])
    return A, np.asarray(size, float)[first[rep]], members.astype(float), lat, extra, lump_arcs, lump_row
