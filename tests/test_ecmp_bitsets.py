"""The numpy ECMP compile (twin/twins/net/ecmp.py) against its definition on a small fabric: BFS hop
counts as networkx finds them, and every (switch, leaf) group as the arcs of the switch whose head is
one hop closer to the leaf, in (head, arc) order. With cables cut, a switch's arcs no longer split
the leaves into disjoint classes, which takes the per-switch path; both must meet the definition."""

from __future__ import annotations

import networkx as nx
import numpy as np

from twin.twins.net import ecmp, failures, synthetic, topology


def fabric() -> topology.Net:
    # 2 zones x 3 racks, 2 CTSWs per zone with 2 uplinks per RTSW (parallel cables), 2 ATSWs: 4 hops leaf to leaf
    g = synthetic.clos(zones=2, racks_per_zone=3, servers_per_rack=1, gpus_per_server=2, ctsw_per_zone=2,
                       rtsw_uplinks=4, atsw=2, ctsw_uplinks=2)
    return topology.compile_graph(g, {}, None)


def definition(net: topology.Net, dead: set[str]) -> tuple[np.ndarray, dict[tuple[int, int], list[int]]]:
    """Hop counts by networkx over the live switch arcs, and the next-hop arcs of every (switch, leaf)."""
    S, L = net.n_switches, net.n_link_arcs
    live = [a for a in range(L) if 0 <= net.arc_tail[a] < S and 0 <= net.arc_head[a] < S and net.arc_link[a] not in dead]
    dg = nx.DiGraph()
    dg.add_nodes_from(range(S))
    dg.add_edges_from((int(net.arc_tail[a]), int(net.arc_head[a])) for a in live)
    dist = np.full((len(net.leaf_of_dest), S), -1)
    for t, leaf in enumerate(net.leaf_of_dest):
        for u, d in nx.single_source_shortest_path_length(dg, int(leaf)).items():
            dist[t, u] = d
    groups = {}
    for u in range(S):
        out = sorted((int(net.arc_head[a]), a) for a in live if net.arc_tail[a] == u)
        for t in range(len(net.leaf_of_dest)):
            if dist[t, u] > 0:
                hop = [a for h, a in out if dist[t, h] == dist[t, u] - 1]
                if hop:
                    groups[u, t] = hop
    return dist, groups


def assert_meets_definition(net: topology.Net, dead: set[str] = frozenset()) -> None:
    dist, groups = definition(net, dead)
    assert np.array_equal(net.dist, dist)
    for u in range(net.n_switches):
        for t in range(len(net.leaf_of_dest)):
            if (u, t) in groups:
                assert net.group(u, t).tolist() == groups[u, t], (u, t)
            else:
                assert net.group_of[u, t] == (-1 if dist[t, u] == 0 else -2)


def test_bfs_and_groups_match_networkx_on_a_three_tier_clos():
    net = fabric()
    assert net.dist.max() == 4  # leaf, CTSW, ATSW, CTSW, leaf
    assert_meets_definition(net)
    # one bitset BFS level per hop: the leaves at k hops of each switch
    S = net.n_switches
    sw = np.flatnonzero((net.arc_tail[:net.n_link_arcs] < S) & (net.arc_head[:net.n_link_arcs] < S))
    levels = ecmp.bfs_levels(S, net.arc_tail[sw], net.arc_head[sw], net.leaf_of_dest)
    assert len(levels) == 5
    assert all(np.bitwise_count(lv).sum() == (net.dist == k).sum() for k, lv in enumerate(levels))


def test_groups_after_cut_cables_match_networkx():
    net = fabric()
    S = net.n_switches
    # a CTSW loses its ATSW uplinks: the leaves under it still reach their own zone through it, the
    # other zone only through its peer, so a leaf's arc classes overlap (the per-switch path); one
    # RTSW uplink more is cut elsewhere
    ctsw = next(i for i, s in enumerate(net.switch_ids) if "ctsw" in s)
    up = {net.arc_link[a] for a in range(net.n_link_arcs) if net.arc_tail[a] == ctsw and net.arc_tier[a] == "ctsw-atsw"}
    rtsw = {net.arc_link[a] for a in range(net.n_link_arcs) if net.arc_tier[a] == "rtsw-ctsw"}
    dead = up | {sorted(rtsw)[-1]}
    assert len(up) == 2
    cut = failures.degrade(net, dead, {})
    pairs = [(u, t) for u in range(S) for t in range(len(net.leaf_of_dest)) if net.group_of[u, t] >= 0]
    assert any(cut.group_of[u, t] < 0 or cut.group(u, t).tolist() != net.group(u, t).tolist() for u, t in pairs)
    assert_meets_definition(cut, dead)
