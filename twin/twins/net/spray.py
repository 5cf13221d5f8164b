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
