"""Fat-tree, rail-optimized and rail-only: counts against textbook sizing, and real graphs."""

from __future__ import annotations

from collections import Counter

import networkx as nx
import pytest
from fabric_helpers import SITES, compile_naive, link_subgraph, port_uses, role_nodes, variant

from twin.compiler.fabric.ports import port_names
from twin.compiler.resolve.fat_tree import boundary, shape
from twin.compiler.resolve.sizing import fat_tree_switches, fat_tree_tiers


def canonical(n: int, k: int) -> int:
    """(2L-1) N / k for the fewest tiers L (derived from [al-fares08]), written out independently of sizing.py."""
    L = 1
    while (k if L == 1 else 2 * (k // 2) ** L) < n:
        L += 1
    return -(-n // k) if L == 1 else (2 * L - 1) * n // k


@pytest.mark.parametrize("n", [32_768, 65_536])
@pytest.mark.parametrize("k", [32, 64, 128, 256])
def test_fat_tree_counts_and_wiring(n, k):
    ts = shape(n, k)
    assert ts.total == canonical(n, k) == fat_tree_switches(n, k, fat_tree_tiers(n, k))
    h = k // 2
    for t in range(1, ts.tiers):
        edges = boundary(ts, t)
        assert len(edges) == n  # N links per tier boundary
        up = Counter(a for a, _ in edges)
        down = Counter(b for _, b in edges)
        assert set(up.values()) == {h} and len(up) == ts.switches[t - 1]
        cap = h if t + 1 < ts.tiers else k
        assert set(down.values()) == {cap} and len(down) == ts.switches[t]


@pytest.mark.parametrize("n", [32_768, 65_536])
@pytest.mark.parametrize("k", [32, 64, 256])
@pytest.mark.parametrize("rails", [8, 256])
def test_rail_only_counts(n, k, rails):
    per_rail = n // rails
    ts = shape(per_rail, k)
    assert rails * ts.total == rails * canonical(per_rail, k)
    for t in range(1, ts.tiers):
        assert len(boundary(ts, t)) == per_rail


def test_small_trees_are_connected_full_bisection():
    """A 2-tier tree of k leaves: every leaf meets every spine once (the canonical leaf-spine)."""
    ts = shape(64 * 32, 64)
    edges = boundary(ts, 1)
    assert Counter(edges) == Counter({(a, b): 1 for a in range(64) for b in range(32)})
    g = nx.MultiGraph()
    g.add_edges_from((f"l{a}", f"s{b}") for a, b in edges)
    assert nx.is_connected(g)


@pytest.fixture(scope="module")
def ib():
    return compile_naive(SITES / "meta-24k-ib.yaml")


@pytest.mark.slow
def test_meta_24k_ib_fat_tree(ib):
    f = ib.fabric
    g = f.graph
    roles = Counter(r for _, r in g.nodes(data="role"))
    assert roles["nic"] == 24_576 and roles["server"] == 3_072
    assert (roles["leaf"], roles["spine"], roles["core"]) == (768, 768, 384)
    assert roles["leaf"] + roles["spine"] + roles["core"] == canonical(24_576, 64)
    assert Counter(lk.tier for lk in f.cables()) == {"nic-leaf": 24_576, "leaf-spine": 24_576, "spine-core": 24_576}
    assert max(port_uses(g).values()) == 1
    names = set(port_names(ib.spec.switch("qm9700")))
    assert "32/2" in names and len(names) == 64
    for lk in f.cables()[:5000]:
        assert lk.b_port in names
    assert nx.is_connected(link_subgraph(g))
    assert all(g.nodes[n]["rack"].startswith(g.nodes[n]["hall"]) for n in role_nodes(g, "spine"))


def test_rail_only_graph(tmp_path):
    p = variant(tmp_path, "meta-24k-ib", "rail-only-2k", family="rail-only", gpus=2048, hb_domain=8)
    d = compile_naive(p)
    g = d.fabric.graph
    leaves = role_nodes(g, "leaf")
    assert len(leaves) + len(role_nodes(g, "spine")) == 8 * canonical(256, 64)
    assert leaves[0].startswith("rail1-leaf-") and g.nodes[leaves[0]]["rail"] == 0
    links = link_subgraph(g)
    comps = list(nx.connected_components(links))
    assert len(comps) == 8  # no switch joins two rails
    for comp in comps:
        assert len({g.nodes[n]["rail"] for n in comp}) == 1
    assert nx.is_connected(g)  # through the servers (NVLink domain)
    assert max(port_uses(g).values()) == 1


def test_rail_optimized_graph(tmp_path):
    p = variant(tmp_path, "meta-24k-ib", "rail-opt-2k", family="rail-optimized", gpus=2048)
    d = compile_naive(p)
    g = d.fabric.graph
    for leaf in role_nodes(g, "leaf"):
        rails = {g.nodes[peer]["gpu"] for _, peer, t in g.edges(leaf, data="tier") if t == "nic-leaf"}
        assert rails == {g.nodes[leaf]["rail"]}
    assert len(role_nodes(g, "leaf")) + len(role_nodes(g, "spine")) == canonical(2048, 64)
    assert nx.is_connected(link_subgraph(g))


def _top_boundary_figures(ts):
    """(distinct tops per lower switch, links per top, pods per top) at the boundary into the top."""
    h = ts.radix // 2
    step = h ** (ts.tiers - 2)
    edges = boundary(ts, ts.tiers - 1)
    tops: dict[int, set] = {}
    pods: dict[int, set] = {}
    for lo, hi in edges:
        tops.setdefault(lo, set()).add(hi)
        pods.setdefault(hi, set()).add(lo // step)
    return {len(s) for s in tops.values()}, Counter(hi for _, hi in edges), pods


@pytest.mark.parametrize("n, k", [(24_576, 64), (32_768, 32), (65_536, 32), (65_536, 64), (32_768, 128), (65_536, 256), (4_096, 64), (20_000, 48), (1_000, 16)])
def test_folded_top_tier_has_no_parallel_links(n, k):
    """Every switch below the top reaches as many distinct tops as it has up-ports (h), every top
    has all k ports used (an even leaf count) and reaches every full pod, at the canonical switch count."""
    ts = shape(n, k)
    assert ts.tiers >= 3 and ts.total == fat_tree_switches(n, k, ts.tiers)
    if n % k == 0:
        assert ts.total == canonical(n, k)
    hops, down, pods = _top_boundary_figures(ts)
    h = k // 2
    assert hops == {h}
    assert len(down) == ts.switches[-1]
    if ts.switches[0] % 2 == 0:
        assert set(down.values()) == {k}
    else:  # h links short of full, spread evenly
        assert sum(down.values()) == ts.switches[0] * h and max(down.values()) - min(down.values()) <= 1
    full_pods = set(range(ts.switches[0] // h ** (ts.tiers - 2)))
    assert all(full_pods <= p for p in pods.values())


def test_two_tier_with_few_spines_reaches_every_spine():
    """The one case that keeps parallel links: 40 leaves of 32 up-ports, 20 spines."""
    ts = shape(40 * 32, 64)
    assert ts.switches == (40, 20)
    hops, down, _ = _top_boundary_figures(ts)
    assert hops == {20} and set(down.values()) == {64}
    per_pair = Counter(boundary(ts, 1))
    assert set(per_pair.values()) == {1, 2}


@pytest.mark.slow
def test_meta_24k_ib_spines_reach_32_distinct_cores(ib):
    f = ib.fabric
    peers: dict[str, Counter] = {}
    for lk in f.cables():
        if lk.tier in ("leaf-spine", "spine-core"):
            peers.setdefault(lk.a, Counter())[lk.b] += 1
    spines = role_nodes(f.graph, "spine")
    assert len(spines) == 768
    assert all(len(peers[s]) == 32 and set(peers[s].values()) == {1} for s in spines)
    assert all(len(peers[lf]) == 32 for lf in role_nodes(f.graph, "leaf"))
    from twin.compiler.fabric.figures import compute

    tiers = {t.role: t for t in compute(f, ib.spec).tiers}
    assert tiers["spine"].next_hops == (32, 32) and tiers["leaf"].next_hops == (32, 32)
    core_down = Counter(lk.b for lk in f.cables() if lk.tier == "spine-core")
    assert set(core_down.values()) == {64}


def test_rail_optimized_partial_group_gets_its_network_racks(tmp_path):
    """128 GPUs = 16 servers on 64-port leaves (groups of 32 servers): one partial group still needs a
    full set of 8 rail leaves (one rail per leaf, pinned: auto packing would put 2 rails on a leaf),
    more than a plain fat-tree's ceil(N / 32) = 4; the placement must plan (and power) network racks
    for every switch the fabric pass builds."""
    from fabric_helpers import compile_naive, variant

    import twin

    p = variant(tmp_path, "lab-ib", "lab-railopt", family="rail-optimized", rails_per_switch=1)
    d = twin.load(p)
    switches = [n for n, a in d.fabric.graph.nodes(data=True) if a.get("level", -1) >= 1]
    assert len(switches) == d.spec.shape.switches == 8 + 4  # 8 rail leaves, ceil(8 / 2) spines
    leaves = [n for n in switches if d.fabric.graph.nodes[n]["level"] == 1]
    assert len(leaves) == 8
    assert compile_naive(p).fabric.graph.number_of_nodes() == d.fabric.graph.number_of_nodes()


@pytest.mark.parametrize("site", ["lab-2zone", "lab-campus", "lab-ib"])
def test_tier_figures_count_what_the_links_say(site):
    """The report's per-role figures (twin/compiler/fabric/figures.py, counted with numpy) against their
    definition, one link at a time: capacity down and up, uplinks and distinct upper switches per
    switch, ports in use (attachments use ports, not down:up)."""
    from twin.compiler.fabric.figures import _tier_figures
    from twin.compiler.pipeline import compile_design

    d = compile_design(f"sites/{site}.yaml", until="fabric")
    f, g = d.fabric, d.fabric.graph
    down, up, ups, peers, ends = Counter(), Counter(), Counter(), {}, Counter()
    for lk in f.links:
        ends[lk.a] += 1
        ends[lk.b] += 1
        if lk.kind != "link" or g.nodes[lk.a]["role"] == "endpoint":
            continue
        down[lk.b] += lk.speed
        up[lk.a] += lk.speed
        ups[lk.a] += 1
        peers.setdefault(lk.a, set()).add(lk.b)
    tiers = _tier_figures(f, d.spec)
    assert [t.role for t in tiers] == list(f.roles)
    for t in tiers:
        members = role_nodes(g, t.role)
        assert t.count == len(members) > 0
        assert (t.down_bps, t.up_bps) == (sum(down[n] for n in members), sum(up[n] for n in members))
        assert t.uplinks == (min(ups[n] for n in members), max(ups[n] for n in members))
        assert t.next_hops == (min(len(peers.get(n, ())) for n in members), max(len(peers.get(n, ())) for n in members))
        assert t.ports_used == sum(ends[n] for n in members)
