"""The AI-zone Clos graph of meta-24k-roce and smaller variants: counts, wiring, capacity, contract."""

from __future__ import annotations

import math
import re
from collections import Counter

import networkx as nx
import pytest
from fabric_helpers import link_subgraph, port_uses, role_nodes, variant

import twin
from twin.compiler.fabric.ports import port_names

GBPS = 1e9


@pytest.fixture(scope="module")
def g(meta24k):
    return meta24k.fabric.graph


def test_counts(g):
    roles = Counter(r for _, r in g.nodes(data="role"))
    assert roles["nic"] == 24_576
    assert roles["server"] == 3_072
    assert roles["rtsw"] == 1_536
    assert roles["ctsw"] == 8 * 16
    assert roles["atsw"] == 16
    racks = Counter(d["zone"] for _, d in g.nodes(data=True) if d["role"] == "rtsw")
    assert sorted(racks) == list(range(8)) and set(racks.values()) == {192}


def test_contract(g, meta24k):
    spec = meta24k.spec
    for n, d in g.nodes(data=True):
        assert {"role", "level"} <= d.keys()
        if d["role"] == "nic":
            assert re.fullmatch(r"dh\d+-z\d+-r\d{3}-s\d-nic\d", n)
            assert {"hall", "zone", "rack", "server", "gpu", "rail"} <= d.keys()
            assert g.nodes[d["server"]]["role"] == "server"
        if d["role"] == "rtsw":
            assert re.fullmatch(r"dh\d+-z\d+-r\d{3}-rtsw", n) and d["level"] == 1
            assert n.startswith(f"{d['hall']}-z{d['zone'] + 1}-")
        if d["role"] == "ctsw":
            assert re.fullmatch(r"z\d+-ctsw-\d{2}", n) and d["level"] == 2
            assert n.startswith(f"z{d['zone'] + 1}-")
        if d["role"] == "atsw":
            assert re.fullmatch(r"atsw-\d{2}", n) and d["zone"] is None and d["level"] == 3
    racks = {r.id: r for r in meta24k.placement.racks}
    for _, d in g.nodes(data=True):
        assert racks[d["rack"]].position.hall == d["hall"]
    keys = set()
    for u, v, k, d in g.edges(keys=True, data=True):
        assert {d["a"], d["b"]} == {u, v}
        assert g.nodes[d["a"]]["level"] < g.nodes[d["b"]]["level"]
        assert d["kind"] in ("link", "host")
        if d["kind"] == "link":
            assert re.fullmatch(r"L\d{6}", k)
            assert d["tier"] == f"{g.nodes[d['a']]['role']}-{g.nodes[d['b']]['role']}"
            assert d["speed"] == 400 * GBPS
        keys.add(k)
    assert len(keys) == g.number_of_edges()
    for n, d in g.nodes(data=True):
        if d["role"] in ("rtsw", "ctsw", "atsw"):
            names = set(port_names(spec.switch(d["model"])))
            for _, _, e in g.edges(n, data=True):
                assert (e["a_port"] if e["a"] == n else e["b_port"]) in names


def test_no_port_used_twice(g):
    uses = port_uses(g)
    assert max(uses.values()) == 1


def test_every_rtsw_meets_every_ctsw_of_its_zone_equally(g):
    for r in role_nodes(g, "rtsw"):
        z = g.nodes[r]["zone"]
        peers = Counter(p for _, p, d in g.edges(r, data=True) if d["tier"] == "rtsw-ctsw")
        assert all(g.nodes[p]["zone"] == z for p in peers)
        assert len(peers) == 16 and set(peers.values()) == {1}


def _cap(g, node, tier):
    return sum(d["speed"] for _, _, d in g.edges(node, data=True) if d["tier"] == tier)


def test_full_bisection_inside_zone(g):
    """Every RTSW has as much capacity up as down, and every CTSW as much down as the zone's RTSWs
    send it, so any half of a zone can talk to the other half at line rate."""
    for r in role_nodes(g, "rtsw"):
        assert _cap(g, r, "rtsw-ctsw") >= _cap(g, r, "nic-rtsw") == 16 * 400 * GBPS
    zone0 = [c for c in role_nodes(g, "ctsw") if g.nodes[c]["zone"] == 0]
    assert sum(_cap(g, c, "rtsw-ctsw") for c in zone0) == 3072 * 400 * GBPS


def test_cross_zone_is_one_seventh_of_injection(g):
    inj = 3072 * 400 * GBPS
    for z in range(8):
        ctsws = [c for c in role_nodes(g, "ctsw") if g.nodes[c]["zone"] == z]
        cross = sum(_cap(g, c, "ctsw-atsw") for c in ctsws)
        assert abs(cross - inj / 7) <= len(ctsws) * 400 * GBPS
        assert cross >= inj / 7


def test_atsw_load_is_even(g):
    down = [g.degree(a) for a in role_nodes(g, "atsw")]
    assert max(down) - min(down) <= 1


def test_every_gpu_reaches_every_gpu(g):
    links = link_subgraph(g)
    nics = role_nodes(g, "nic")
    assert all(n in links for n in nics)
    assert nx.number_connected_components(links) == 1


def test_over_provisioned_uplinks_16_down_18_up(tmp_path):
    """Meta's 1:1.125 provisioning: 18 uplinks spread over 6 CTSWs, 3 links each."""
    p = variant(tmp_path, "lab-2zone", "lab-18up", rtsw={"uplinks": 18}, ctsw={"model": "minipack2", "count": 6})
    g = twin.load(p).fabric.graph
    for r in role_nodes(g, "rtsw"):
        peers = Counter(p for _, p, d in g.edges(r, data=True) if d["tier"] == "rtsw-ctsw")
        assert len(peers) == 6 and set(peers.values()) == {3}
        assert _cap(g, r, "rtsw-ctsw") == 18 * 400 * GBPS
    for c in role_nodes(g, "ctsw"):
        down = _cap(g, c, "rtsw-ctsw") / (400 * GBPS)
        up = _cap(g, c, "ctsw-atsw") / (400 * GBPS)
        assert down == 4 * 18 / 6 and up == math.ceil(down / 2)
    assert max(port_uses(g).values()) == 1


@pytest.mark.slow
def test_meta_32k_18_up_over_18_ctsws():
    from conftest import compiled

    g = compiled("meta-32k-roce").fabric.graph
    assert len(role_nodes(g, "rtsw")) == 8 * 252
    for r in role_nodes(g, "rtsw")[:300]:
        peers = Counter(p for _, p, d in g.edges(r, data=True) if d["tier"] == "rtsw-ctsw")
        assert len(peers) == 18 and set(peers.values()) == {1}
        assert _cap(g, r, "nic-rtsw") == 16 * 400 * GBPS


def test_deterministic(meta24k):
    d2 = twin.load(meta24k.spec.source_path)
    a, b = meta24k.fabric, d2.fabric
    assert a.links == b.links
    assert list(a.graph.nodes(data=True)) == list(b.graph.nodes(data=True))


@pytest.mark.slow
def test_switches_hang_only_where_placement_powered_them():
    """Network racks hold exactly the switches the placement planned (and powered) for them."""
    from collections import Counter

    from tests.conftest import compiled

    d = compiled("meta-24k-ib")
    g = d.fabric.graph
    racks = {r.id: r for r in d.placement.racks}
    on_rack = Counter(a["rack"] for _, a in g.nodes(data=True) if a.get("level", -1) >= 1 and racks[a["rack"]].kind == "network")
    assert on_rack and all(n == racks[r].switches for r, n in on_rack.items())
    assert all(racks[r].power <= 33_000 for r in on_rack)


def _two_rtsw_lab(tmp_path, ctsws: int):
    from fabric_helpers import compile_naive

    p = variant(tmp_path, "lab-2zone", f"lab-2rtsw-{ctsws}", rack_fields={"rtsw_count": 2}, rtsw=None, ctsw={"model": "minipack2", "count": ctsws})
    return compile_naive(p).fabric.graph


def test_two_rtsws_per_rack(tmp_path):
    """2 RTSWs of 8 NICs and 8 uplinks per rack, 16 CTSWs per zone: each RTSW takes one server's
    NICs, the rack's two RTSWs together meet every CTSW of the zone once, and every CTSW gets the
    same number of downlinks (a wiring that starts both RTSWs at CTSW 1 leaves CTSWs 9-16 idle)."""
    g = _two_rtsw_lab(tmp_path, 16)
    rtsws = role_nodes(g, "rtsw")
    assert len(rtsws) == 2 * 8 and all(re.fullmatch(r"lab1-z\d-r\d{3}-rtsw[12]", r) for r in rtsws)
    by_rack: dict[str, list[str]] = {}
    for r in rtsws:
        by_rack.setdefault(g.nodes[r]["rack"], []).append(r)
    nic_links = Counter()
    for rack, pair in by_rack.items():
        assert len(pair) == 2 and g.nodes[pair[0]]["u"] != g.nodes[pair[1]]["u"]
        seen = Counter()
        for i, r in enumerate(sorted(pair)):
            nics = [p for _, p, t in g.edges(r, data="tier") if t == "nic-rtsw"]
            assert len(nics) == 8 and {g.nodes[n]["server"] for n in nics} == {f"{rack}-s{i + 1}"}
            nic_links.update(nics)
            ups = Counter(p for _, p, t in g.edges(r, data="tier") if t == "rtsw-ctsw")
            assert sum(ups.values()) == 8 and len(ups) == 8
            assert all(g.nodes[c]["zone"] == g.nodes[r]["zone"] for c in ups)
            seen.update(ups)
        assert len(seen) == 16 and set(seen.values()) == {1}
    assert set(nic_links.values()) == {1} and len(nic_links) == len(role_nodes(g, "nic"))
    down = Counter(len([1 for _, _, t in g.edges(c, data="tier") if t == "rtsw-ctsw"]) for c in role_nodes(g, "ctsw"))
    assert down == {4 * 2 * 8 // 16: 32}
    assert max(port_uses(g).values()) == 1
    assert nx.is_connected(link_subgraph(g))


def test_two_rtsws_uneven_spread_stays_balanced(tmp_path):
    """8 uplinks over 6 CTSWs: each RTSW meets every CTSW once or twice, and the zone's 64 uplinks
    land 10 or 11 per CTSW."""
    g = _two_rtsw_lab(tmp_path, 6)
    for r in role_nodes(g, "rtsw"):
        ups = Counter(p for _, p, t in g.edges(r, data="tier") if t == "rtsw-ctsw")
        assert len(ups) == 6 and set(ups.values()) == {1, 2}
    for z in (0, 1):
        down = [len([1 for _, _, t in g.edges(c, data="tier") if t == "rtsw-ctsw"]) for c in role_nodes(g, "ctsw") if g.nodes[c]["zone"] == z]
        assert sorted(down) == [10, 10, 11, 11, 11, 11]
    assert max(port_uses(g).values()) == 1


def test_rtsw_count_must_divide_the_nics(tmp_path):
    from fabric_helpers import compile_naive

    from twin.lang.diagnostics import InfeasibleError

    p = variant(tmp_path, "lab-2zone", "lab-3rtsw", rack_fields={"rtsw_count": 3}, rtsw=None)
    with pytest.raises(InfeasibleError, match="16 NICs and 3 RTSWs"):
        compile_naive(p)
