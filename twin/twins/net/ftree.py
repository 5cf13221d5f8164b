"""OpenSM's ``ftree`` routing engine: the forwarding table of every switch towards every NIC, as OpenSM builds it.

Why not a digit rule: ``ftree`` is not D-mod-k. It routes destinations one at a time (leaves in index order,
each leaf's NICs in order) and balances with counters kept across destinations, so a destination's route
depends on every destination routed before it. Timed as a rule (the destination's host index at every
hop, or one digit of its index per hop), pipeline and data-parallel neighbours collide where OpenSM's
tables spread them. This module replays the engine's main path, so that the network twin times a site's
``ftree`` fabric on the tables its subnet manager would program ([opensm-ftree]: ``osm_ucast_ftree.c``,
``fabric_route_to_cns``).

For each destination NIC ``d`` on leaf ``L`` (and for OpenSM's dummy NICs, which fill every leaf up to the
fullest leaf's count and move the counters without a table entry):

1. *Down, by going up* (``fabric_route_downgoing_by_going_up``): from ``L`` the main path climbs one switch
   per tier to a root. At each switch it takes the up group (the links to one parent) with the fewest
   main paths through it so far (``counter_down``), ties to the lower parent index, and in that group the
   port with the fewest; the parent's entry for ``d`` is the way down that link.
2. *Up, by going down* (``fabric_route_upgoing_by_going_down``): before climbing on, from each switch of
   the main path the engine walks down, depth first, to every switch below it that has no entry for ``d``
   at fewer or equal hops, and points it up the link it came down. A switch visits its children in
   order of their ``counter_up`` (routes already pointed up that link), ties to the lower child index,
   and takes the least used port of parallel links; a link's counters grow when its child ends up with
   a route (a leaf always does: its NICs hang off it).

Depth-first order is what decides which parent a switch points to when several reach it at the same
hops: the first parent in preorder. On a tiered fabric (every parent one tier up) preorder among the
switches of one tier is the lexicographic order of (the preorder rank of the switch that reached it,
its place in that switch's list), so each tier is one vectorised step.

3. *Secondary paths*: the main path's other up groups, climbed in the same way without moving the
   main-path counters. They matter only where the main path's root does not reach every leaf (a partial
   pod), so they are replayed only then: once every leaf has its entry, they set no leaf's entry and move
   no counter, and no flow from a NIC reaches the other entries they set. Routing towards switches is not
   replayed (no training traffic is addressed to a switch).

Checked against real OpenSM: ``tests/test_ftree_opensm.py`` routes twin's generated fabric with OpenSM's
``ftree`` in ibsim and compares every (switch, NIC) entry.
"""

from __future__ import annotations

import hashlib
from collections import deque

import numpy as np

from twin.twins.net.topology import Net

UNSET = np.iinfo(np.int64).max  # hops of a switch without an entry yet
FTREE_MAX_ENTRIES = 200_000_000  # switches x NICs the table may hold (int32: 800 MB)


class Tables:
    """``arc[s, n]``: the cable arc switch ``s`` forwards towards NIC ``n`` on (-1 at the NIC's own leaf,
    where the NIC's down arc is taken), and the leaves a NIC's flows could not be routed from."""

    def __init__(self, arc: np.ndarray, unrouted: int):
        self.arc = arc
        self.unrouted = unrouted


def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, np.int64)
    np.add.at(ptr, keys + 1, 1)
    return np.cumsum(ptr), order


def _gather(ptr: np.ndarray, items: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Items of each node in ``nodes`` (CSR), and the position in ``nodes`` each came from."""
    cnt = ptr[nodes + 1] - ptr[nodes]
    src = np.repeat(np.arange(len(nodes)), cnt)
    before = np.zeros(len(nodes), np.int64)
    np.cumsum(cnt[:-1], out=before[1:])
    start = np.repeat(ptr[nodes] - before, cnt)
    return items[start + np.arange(len(src))], src


def osm_index(net: Net, up: np.ndarray) -> np.ndarray:
    """Each switch's place in OpenSM's ftree index order (``fabric_make_indexing``): a breadth-first walk from
    the first leaf in GUID order gives every switch a tuple (its rank, then one digit per tier: the first
    free value under the switch it was reached from), walking each switch's neighbours in port order;
    switches compare by tuple. ``up``: the cable arcs from a switch to one a tier above."""
    S = net.n_switches
    top = int(net.switch_level.max())
    rank = top - net.switch_level
    leaf_rank = int(rank.max())
    port = net.arc_port if net.arc_port is not None else np.arange(net.n_link_arcs)
    guid = net.switch_guid_order if net.switch_guid_order is not None else np.arange(S)
    tail, head = net.arc_tail[up], net.arc_head[up]
    nbrs: list[list[tuple[int, int]]] = [[] for _ in range(S)]  # (port, remote) both ways, in port order
    for a, t, h in zip(up.tolist(), tail.tolist(), head.tolist()):
        nbrs[t].append((int(port[a]), h))
        nbrs[h].append((int(port[a ^ 1]), t))
    order: list[list[int]] = []
    for lst in nbrs:
        seen: dict[int, None] = {}
        for _, r in sorted(lst):
            seen.setdefault(r, None)
        order.append(list(seen))
    tup: dict[int, tuple] = {}
    is_leaf = np.zeros(S, bool)
    is_leaf[net.nic_leaf[net.nic_leaf >= 0]] = True
    starts = sorted((x for x in range(S) if rank[x] == leaf_rank and is_leaf[x]), key=lambda x: guid[x])
    part = 0
    for first in starts:
        if first in tup:
            continue  # reached from an earlier leaf: one connected part, indexed once
        part += 1
        # a part of the fabric no earlier walk reached (a plane of a multi-plane fabric: a subnet of its own) is
        # indexed from its own first leaf; parts never compare with each other
        used: set[tuple] = set()
        t0 = (leaf_rank,) + (0,) * leaf_rank
        tup[first] = (part, t0)
        used.add(t0)
        queue = deque([first])
        while queue:
            x = queue.popleft()
            for r in sorted(order[x], key=lambda r: rank[r] <= rank[x]):  # down groups first, then up; each in port order
                down = rank[r] > rank[x]
                if r in tup or (down and rank[x] >= leaf_rank) or (not down and rank[x] == 0):
                    continue
                base = list(tup[x][1])
                base[0] += 1 if down else -1
                var = tup[x][1][0] + 1 if down else tup[x][1][0]
                for i in range(255):
                    base[var] = i
                    if tuple(base) not in used:
                        break
                else:
                    raise ValueError(f"switch {net.switch_ids[r]}: more than 255 switches in one direction, past OpenSM's ftree indexing")
                tup[r] = (part, tuple(base))
                used.add(tup[r][1])
                queue.append(r)
    keys = sorted(range(S), key=lambda x: (0, *tup[x]) if x in tup else (1, 0, (int(guid[x]),)))
    idx = np.empty(S, np.int64)
    idx[keys] = np.arange(S)
    return idx


def tables(net: Net) -> Tables:
    """Replay OpenSM's ftree main path for every NIC of ``net`` (module docstring)."""
    S = net.n_switches
    N = len(net.nic_ids)
    if S * N > FTREE_MAX_ENTRIES:
        raise ValueError(f"an ftree table of {S:,} switches x {N:,} NICs ({S * N:,} entries) is past the "
                         f"limit of {FTREE_MAX_ENTRIES:,}: time this fabric with 'routing: static' or 'adaptive'")
    L = net.n_link_arcs
    tail, head = net.arc_tail[:L], net.arc_head[:L]
    lvl = net.switch_level
    sw = (tail >= 0) & (tail < S) & (head >= 0) & (head < S)
    up = np.flatnonzero(sw & (lvl[np.where(sw, head, 0)] > lvl[np.where(sw, tail, 0)]))  # cable arcs child -> parent
    # a group is the links between one (child, parent) pair; ports are its cables (arc ids in order)
    pair = tail[up] * S + head[up]
    upair, gid = np.unique(pair, return_inverse=True)
    G = len(upair)
    g_child, g_parent = upair // S, upair % S
    # per child: its up groups; per parent: its down groups (both in index order of the other end)
    up_ptr, up_ord = _csr(g_child, S)
    dn_ptr, dn_ord = _csr(g_parent, S)
    port_ptr, port_ord = _csr(gid, G)
    ports = up[port_ord]  # up arcs of each group, in arc order
    cdown_g = np.zeros(G, np.int64)  # main paths through a group (OpenSM counter_down, lower side)
    cdown_p = np.zeros(L, np.int64)  # ... through a port (indexed by up arc)
    cup_g = np.zeros(G, np.int64)  # routes pointed up a group (counter_up, upper side)
    cup_p = np.zeros(L, np.int64)
    idx = osm_index(net, up)
    port_no = net.arc_port if net.arc_port is not None else np.arange(len(net.arc_tail))
    has_nic = np.zeros(S, bool)
    has_nic[net.nic_leaf[net.nic_leaf >= 0]] = True
    out = np.full((S, N), -1, np.int32)
    hops = np.full(S, UNSET, np.int64)
    unrouted = 0

    n_ports = np.diff(port_ptr)

    def least(g: np.ndarray, counter: np.ndarray) -> np.ndarray:
        """The least used port of each group (ties: the lowest port number)."""
        out = ports[port_ptr[g]]
        multi = np.flatnonzero(n_ports[g] > 1)
        if len(multi):
            arcs, at = _gather(port_ptr, ports, g[multi])
            o = np.lexsort((port_no[arcs], counter[arcs], at))
            _, first = np.unique(at[o], return_index=True)
            out[multi] = arcs[o][first]
        return out

    def walk_down(top: int, prev: int, h: int, entry: np.ndarray | None) -> None:
        """Up, by going down from ``top`` (at ``h`` hops), skipping the group back to ``prev``."""
        front, rank = np.array([top]), np.zeros(1, np.int64)
        setter_all, child_all, port_all = [], [], []
        while len(front):
            g, at = _gather(dn_ptr, dn_ord, front)
            child = g_child[g]
            keep = (child != prev) & (hops[child] > h + 1)
            g, at, child = g[keep], at[keep], child[keep]
            if not len(g):
                break
            # preorder: the parent's rank, then the child's place in the parent's (counter_up, index) order
            o = np.lexsort((idx[child], cup_g[g], rank[at]))
            g, at, child = g[o], at[o], child[o]
            _, first = np.unique(child, return_index=True)
            first.sort()  # children in preorder
            g, child = g[first], child[first]
            port = least(g, cup_p)
            h += 1
            hops[child] = h
            if entry is not None:
                entry[child] = port  # the child forwards up the port it was reached on
            setter_all.append(g)
            child_all.append(child)
            port_all.append(port)
            front, rank = child, np.arange(len(child))
        # counters: a link's grow when its child has a route (a leaf, or a child below it that got one)
        routed = has_nic.copy()
        for g, child, port in zip(reversed(setter_all), reversed(child_all), reversed(port_all)):
            ok = routed[child]
            np.add.at(cup_g, g[ok], 1)
            np.add.at(cup_p, port[ok], 1)
            routed[g_parent[g[ok]]] = True

    leaves = np.unique(net.nic_leaf[net.nic_leaf >= 0])
    # each connected part of the fabric is a subnet of its own (a multi-plane fabric's planes: one subnet manager
    # each); a destination's entries are wanted on its own part's leaves only
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    _, part = connected_components(coo_matrix((np.ones(len(up)), (tail[up], head[up])), shape=(S, S)), directed=False)
    reach = leaves

    def climb(x: int, prev: int, h: int, main: bool, entry: np.ndarray | None) -> None:
        """Down, by going up from ``x``: the main path (``main``) takes the least used up group and climbs
        on; the other up groups are secondary paths, replayed only when a leaf is still without an entry."""
        walk_down(x, prev, h, entry)
        gs = up_ord[up_ptr[x]:up_ptr[x + 1]]
        if not len(gs):
            return
        gs = gs[np.lexsort((idx[g_parent[gs]], cdown_g[gs]))]
        if main:
            g = int(gs[0])
            port = int(least(np.array([g]), cdown_p)[0])
            cdown_g[g] += 1
            cdown_p[port] += 1
            parent = int(g_parent[g])
            if hops[parent] > h + 1:
                hops[parent] = h + 1
                if entry is not None:
                    entry[parent] = port ^ 1  # the same cable, downwards
            climb(parent, x, h + 1, True, entry)
            gs = gs[1:]
        for g in gs:
            if not (hops[reach] == UNSET).any():
                return  # every leaf has its entry: the secondary paths set no leaf and move no counter
            parent = int(g_parent[g])
            if hops[parent] <= h + 1:
                continue
            port = int(least(np.array([g]), cdown_p)[0])
            hops[parent] = h + 1
            if entry is not None:
                entry[parent] = port ^ 1
            climb(parent, x, h + 1, False, entry)

    per_leaf = np.bincount(net.nic_leaf[net.nic_leaf >= 0], minlength=S)
    fullest = int(per_leaf.max()) if len(leaves) else 0
    has = np.flatnonzero(net.nic_leaf >= 0)
    by_leaf = has[np.lexsort((port_no[net.nic_down[has]], net.nic_leaf[has]))]  # each leaf's NICs in port order
    start = np.searchsorted(net.nic_leaf[by_leaf], np.arange(S + 1))
    for leaf in leaves[np.argsort(idx[leaves], kind="stable")]:  # OpenSM routes the leaves in index order
        mine = by_leaf[start[leaf]:start[leaf + 1]]
        for k in range(fullest):
            nic = int(mine[k]) if k < len(mine) else -1
            entry = out[:, nic] if nic >= 0 else None
            hops[:] = UNSET
            hops[leaf] = 1
            reach = leaves[part[leaves] == part[leaf]]
            climb(int(leaf), -1, 1, True, entry)
            if entry is not None:
                unrouted += int(((entry[reach] < 0) & (reach != leaf)).sum())
    return Tables(out, unrouted)


_MEMO: dict[bytes, Tables] = {}  # the last few fabrics' tables, by a digest of everything the replay reads


def of(net: Net) -> Tables:
    """The tables of ``net``, replayed once per fabric: the same arrays compiled again (the same site in another
    job or test) reuse them; a failure scenario's fabric differs, so it is replayed on its own."""
    t = net.__dict__.get("_ftree")
    if t is not None:
        return t
    h = hashlib.sha256()
    for a in (net.arc_tail[:net.n_link_arcs], net.arc_head[:net.n_link_arcs], net.switch_level, net.nic_leaf, net.nic_down,
              net.arc_port if net.arc_port is not None else np.zeros(0), net.switch_guid_order if net.switch_guid_order is not None else np.zeros(0)):
        h.update(np.ascontiguousarray(a).tobytes())
        h.update(b"|")
    key = h.digest()
    t = _MEMO.get(key)
    if t is None:
        t = tables(net)
        while len(_MEMO) >= 3:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = t
    net.__dict__["_ftree"] = t
    return t


def member(net: Net, g: np.ndarray, n: np.ndarray, arc: np.ndarray) -> np.ndarray:
    """The place of each ``arc`` in its min-hop group ``g`` (of ``n`` members): the member a flow takes.
    An ftree entry outside the group (a route that is not min-hop) is an error, not a guess."""
    m = np.full(len(g), -1, np.int64)
    base = net.group_ptr[g]
    for j in range(int(n.max()) if len(n) else 0):
        hit = (j < n) & (net.group_arcs[base + np.minimum(j, n - 1)] == arc) & (m < 0)
        m[hit] = j
    if (m < 0).any():
        raise ValueError(f"{int((m < 0).sum())} ftree entries are not on a shortest path (the fabric is not a tree "
                         "OpenSM's ftree engine routes): time it with 'routing: static' or 'adaptive'")
    return m
