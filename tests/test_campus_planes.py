"""Network planes on a campus: every plane has, in every building, its own ATSW layer and its own campus tier.

The site: sites/lab-campus.yaml cut to its first two buildings (b1, b2, 300 m apart, one AI zone of 2 racks
each), on 2 planes: the 400G NICs of sites/lab-2zone-2plane.yaml's chassis run as 2 x 200G, one port per
plane, and a rack's RTSW of each plane takes 8 x 400G uplinks for its 16 x 200G NIC ports (1:1).

Known answers, per plane (each plane is the single-plane campus of the same racks at the 200G port speed):
a CTSW has 2 racks x 8 uplinks / 2 CTSWs = 8 down and ceil(8 / 2) = 4 up (atsw 2:1); an ATSW takes
D = 2 CTSWs x 4 / 2 ATSWs = 4 links from its zone, and the 1:1 mesh gives ATSW k of b1 and ATSW k of b2
ceil(4 / (1 x (2 - 1))) = 4 links: 2 ATSW pairs x 4 = 8 campus links per plane, 16 in all, and
2 buildings x 2 planes x 2 = 8 ATSWs.

The network twin: a ring AllReduce of one GPU per server across both buildings is bound by the NIC, busbw =
0.94 (protocol efficiency) x 50 GB/s (400G) = 47.0 GB/s, whether the NIC is one 400G port on one plane or
2 x 200G on two; with plane 1 down, 0.94 x 25 GB/s = 23.5 GB/s.
"""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import SITES, twin_in_process

from twin.compiler.fabric.synthesis import mismatches
from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.campus_shape import mesh_links
from twin.compiler.resolve.validate import validate_file
from twin.twins.net import collectives, routing, topology
from twin.twins.net.failures import degrade

EFFICIENCY = 0.94  # the twin's Simple protocol efficiency (tests/test_zone_planes.py)
TWO_PORT = yaml.safe_load((SITES / "lab-2zone-2plane.yaml").read_text())["catalog"]["chassis"]["gt-h100-2port"]


def campus(tmp_path: Path, name: str, planes: int = 1, port_speed: str | None = None, spine: bool = False) -> Path:
    """lab-campus's first two buildings; ``planes`` 2 on 2-port NICs, or one plane of single-port NICs at
    ``port_speed`` (the chassis of one plane's port), both with 8 RTSW uplinks (1:1 at 200G); ``spine``: 2
    campus spines (per plane) in b2 instead of the mesh."""
    site = yaml.safe_load((SITES / "lab-campus.yaml").read_text())
    if spine:
        site["campus"]["fabric"].update(topology="spine", spine={"model": "minipack2", "count": 2, "building": "b2"})
    site["name"] = name
    site["buildings"] = site["buildings"][:2]
    site["campus"]["routes"] = [r for r in site["campus"]["routes"] if set(r["between"]) == {"b1", "b2"}]
    site["fabric"]["zones"] = 2
    if planes > 1 or port_speed:
        chassis = copy.deepcopy(TWO_PORT)
        if port_speed:
            chassis.update(nic_speed=port_speed, nic_ports=1)
        site["catalog"] = {"chassis": {"gt-h100-x": chassis}}
        site["rack_types"]["gt-rack"]["chassis"] = "gt-h100-x"
        site["fabric"]["rtsw"]["uplinks"] = 8
    if planes > 1:
        site["fabric"]["planes"] = planes
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(site, sort_keys=False))
    return p


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("campus-planes")
    return {"two": campus(d, "campus-2plane", planes=2), "port": campus(d, "campus-200g", port_speed="200 Gbit/s"),
            "one": campus(d, "campus-1plane"), "spine": campus(d, "campus-2plane-spine", planes=2, spine=True)}


@pytest.fixture(scope="module")
def design(sites):
    return compile_design(sites["two"], placement_method="naive")


def test_the_shape_counts_every_plane(sites):
    two, _ = validate_file(sites["two"])
    port, _ = validate_file(sites["port"])
    info = two.shape.campus
    assert two.shape.planes == 2 and port.shape.planes == 1 and info.atsw_per_building == 2
    # every tier and boundary is twice the single-plane campus of the same racks at the port speed
    assert [(t.role, t.count, t.down, t.up) for t in two.shape.tiers] == [(t.role, 2 * t.count, t.down, t.up) for t in port.shape.tiers]
    assert [(b.name, b.links, b.speed) for b in two.shape.boundaries] == [(b.name, 2 * b.links, b.speed) for b in port.shape.boundaries]
    assert two.shape.tier("atsw").count == 2 * 2 * two.fabric.atsw.count == 8  # buildings x planes x atsw.count
    assert info.atsw_down == ((4, 4), (4, 4)) and info.atsw_up == (4, 4)
    assert info.pair_links == mesh_links([max(d) for d in info.atsw_down], two.campus.ratio) == port.shape.campus.pair_links == {(0, 1): 4}
    per_plane = two.fabric.atsw.count * sum(info.pair_links.values())
    assert per_plane == 8 and two.shape.links("atsw-atsw") == 2 * per_plane
    assert two.shape.boundary("atsw-atsw").built == port.shape.boundary("atsw-atsw").built == 1.0


def test_the_budget_counts_every_plane(sites):
    """The feasibility budget (before any graph) counts both planes' network switches: 2 zones x 2 CTSWs x 2
    planes, 2 buildings x 2 ATSWs x 2 planes."""
    from twin.compiler.resolve import feasibility

    two, _ = validate_file(sites["two"])
    budget = feasibility.check(two)
    assert budget.network_switches == {"ctsw": 8, "atsw": 8}
    assert budget.network_power == pytest.approx(16 * two.switch("minipack2").power)


def test_a_spine_campus_has_its_spines_per_plane(sites):
    """Per plane: every ATSW has ceil(4 / 1) = 4 uplinks over the plane's 2 spines (2 each), 2 x 2 x 4 = 16
    links; the site 4 spines in b2 and 32 links."""
    d = compile_design(sites["spine"], placement_method="naive")
    g = d.fabric.graph
    assert mismatches(d.spec.shape, d.fabric) == []
    spines = d.fabric.nodes("cssw")
    assert sorted(spines) == ["plane1-cssw-01", "plane1-cssw-02", "plane2-cssw-01", "plane2-cssw-02"]
    assert {(g.nodes[s]["building"], g.nodes[s]["hall"]) for s in spines} == {(1, "b2-lab")}
    assert len({(g.nodes[s]["rack"], g.nodes[s]["u"]) for s in spines}) == 4
    up = Counter()
    for lk in d.fabric.cables():
        if lk.tier == "atsw-cssw":
            assert g.nodes[lk.a]["plane"] == g.nodes[lk.b]["plane"], lk
            up[g.nodes[lk.b]["plane"], lk.b] += 1
    assert up == {(p, f"plane{p + 1}-cssw-0{k}"): 8 for p in (0, 1) for k in (1, 2)}


def test_the_graph_is_the_shape_and_no_link_joins_two_planes(design):
    g = design.fabric.graph
    assert mismatches(design.spec.shape, design.fabric) == []
    sw = {n: d for n, d in g.nodes(data=True) if d.get("level", -1) >= 1}
    assert Counter((d["role"], d["plane"], d["building"]) for d in sw.values() if d["role"] == "atsw") == {
        ("atsw", p, b): 2 for p in (0, 1) for b in (0, 1)}
    assert all(n.startswith(f"plane{d['plane'] + 1}-") for n, d in sw.items())
    assert {"plane1-b1-atsw-01", "plane2-b2-atsw-02"} <= set(sw)
    per_plane = Counter()
    for lk in design.fabric.cables():
        if lk.a in sw and lk.b in sw:
            a, b = sw[lk.a], sw[lk.b]
            assert a["plane"] == b["plane"], lk  # no link joins two planes
            if lk.tier == "ctsw-atsw":  # an ATSW is fed by its own plane's CTSWs of its own building
                assert a["building"] == b["building"], lk
            if lk.tier == "atsw-atsw":  # ATSW k of b1 to ATSW k of b2, of the same plane
                assert lk.a[-2:] == lk.b[-2:] and {a["building"], b["building"]} == {0, 1}, lk
                per_plane[a["plane"]] += 1
    assert per_plane == {0: 8, 1: 8}
    fed = Counter((sw[lk.b]["plane"], lk.b) for lk in design.fabric.cables() if lk.tier == "ctsw-atsw")
    assert len(fed) == 8 and set(fed.values()) == {4}  # every ATSW of both planes: D = 4 links from its zone


def test_each_plane_is_the_single_plane_campus_wire_for_wire(design, sites):
    """Strip plane p's prefix and its switches and switch-to-switch cables are the single-plane campus's of the
    same racks at the port speed (which has no prefix and no ``plane`` attribute: single-plane names unchanged)."""
    port = compile_design(sites["port"], placement_method="naive")
    g1 = port.fabric.graph
    assert not any("plane" in d for _n, d in g1.nodes(data=True)) and "b1-atsw-01" in g1

    def wires(d, keep):
        g = d.fabric.graph
        sw = {n for n, a in g.nodes(data=True) if a.get("level", -1) >= 1 and keep(a)}
        return Counter((lk.tier, *sorted((lk.a, lk.b))) for lk in d.fabric.cables() if lk.a in sw and lk.b in sw), sw

    want, want_sw = wires(port, lambda a: True)
    for p in (0, 1):
        got, got_sw = wires(design, lambda a, p=p: a["plane"] == p)
        strip = len(f"plane{p + 1}-")
        assert {n[strip:] for n in got_sw} == want_sw
        assert Counter({(t, a[strip:], b[strip:]): n for (t, a, b), n in got.items()}) == want


def test_atsws_share_their_building_racks_plane_after_plane(design):
    g = design.fabric.graph
    hall_building = design.spec.campus.hall_building
    atsws = [n for n, d in g.nodes(data=True) if d.get("role") == "atsw"]
    spots = {(g.nodes[n]["rack"], g.nodes[n]["u"]) for n in atsws}
    assert len(spots) == len(atsws) == 8  # no two switches in one place
    for n in atsws:
        assert hall_building[g.nodes[n]["hall"]] == g.nodes[n]["building"], n
    rack = {r.id: r for r in design.placement.network_racks(role="atsw")}
    assert sum(r.switches for r in rack.values()) == 8


def test_addresses_and_bgp_stay_in_the_plane(design):
    g, a = design.fabric.graph, design.addressing
    pools = design.spec.fabric.routing.asn_pools
    for n in design.fabric.nodes("atsw"):  # a building's ATSW layer is one ASN, on every plane
        assert a.asn[n] == pools["level3"].first + g.nodes[n]["building"]
    assert len(set(a.loopback.values())) == len(a.loopback) == len(design.fabric.switches())
    campus_peers = Counter()
    for name, it in design.intent.switches.items():
        for nb in it.neighbors:
            assert g.nodes[nb.peer]["plane"] == g.nodes[name]["plane"], (name, nb.peer)
            if it.level == 3 and g.nodes[nb.peer]["level"] == 3:
                campus_peers[name] += 1
    assert len(campus_peers) == 8 and set(campus_peers.values()) == {4}


def test_bom_counts_both_planes(design, sites):
    bom = Counter()
    for ln in design.bom:
        bom[(ln.category, ln.item)] += ln.quantity
    assert bom[("switch", "minipack2")] == len(design.fabric.switches()) == 2 * (4 + 4 + 4)
    campus_optics = sum(q for (c, item), q in bom.items() if c == "transceiver" and item == "dr4-400g")
    assert campus_optics == 2 * 16  # two ends of each of the 16 links between b1 and b2 (300 m: DR4)


def test_a_ring_across_both_buildings_runs_on_both_planes(design, sites):
    """One GPU per server, both buildings: NIC-bound, the same busbw on 2 x 200G planes as on one 400G plane;
    half of it with plane 1 down; each plane's campus links carry the same share."""
    one = compile_design(sites["one"], placement_method="naive")
    scheme = routing.Scheme("e-ecmp, 16 QPs", "e-ecmp", 16)
    size = 2.0**34

    def ring(net, d):
        building = np.array([d.fabric.graph.nodes[s]["building"] for s in net.server_ids])
        first = np.array([np.flatnonzero(net.gpu_server == k)[0] for k in range(len(net.server_ids))])
        ranks = first[np.argsort(building, kind="stable")]
        assert set(building.tolist()) == {0, 1} and len(ranks) == 8
        return collectives.time_collective(net, "allreduce", "ring", ranks, scheme, keep_load=True)

    net2, net1 = topology.from_design(design), topology.from_design(one)
    assert (net2.planes, net1.planes) == (2, 1)
    t2, t1 = ring(net2, design), ring(net1, one)
    assert t2.busbw(size) == pytest.approx(t1.busbw(size), rel=1e-6)
    assert t2.busbw(size) == pytest.approx(EFFICIENCY * 50e9, rel=1e-3)
    g = design.fabric.graph
    load = sum(p.load for p in t2.phases)
    mesh = [i for i, tier in enumerate(net2.arc_tier) if tier == "atsw-atsw"]
    by_plane = Counter()
    for i in mesh:
        by_plane[g.nodes[net2.switch_ids[net2.arc_tail[i]]]["plane"]] += load[i]
    assert by_plane[0] > 0 and by_plane[0] == pytest.approx(by_plane[1], rel=1e-9)
    plane1 = {k for u, v, k, d in g.edges(keys=True, data=True)
              if d["kind"] == "link" and 0 in (g.nodes[u].get("plane"), g.nodes[v].get("plane"))}
    cut = ring(degrade(net2, plane1, {}), design)
    assert cut.busbw(size) == pytest.approx(EFFICIENCY * 25e9, rel=1e-3)


def test_twin_build_of_the_two_plane_campus_exits_0(sites, tmp_path):
    r = twin_in_process("build", sites["two"], "-o", tmp_path / "out", "-q")
    assert r.returncode == 0, r.stdout + r.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    # out of b1: 2 ATSWs x 4 campus links x 400G x 2 planes = 6.4 Tbit/s, of its 32 NICs x 400G = 12.8 Tbit/s
    assert "| b1 | 2 x minipack2 per plane, 2 planes | 4 | 4 | 6.4 Tbit/s | 1/2.00 |" in report
    assert (tmp_path / "out" / "configs" / "frr" / "plane2-b2-atsw-02.conf").is_file()
