"""Planes on the AI-zone Clos (issue 28, part 3 on Meta's zoned fabric): ``fabric.planes`` on ai-zone-clos.

Known answers:
- Each plane is the single-plane zone fabric of the same racks at the NIC port's speed (as NVIDIA's two-plane
  designs count one fabric per plane [gb300-nvl72-ra], [dgx-b300-ra]): sites/lab-2zone-2plane.yaml is
  sites/lab-2zone.yaml's 2 zones x 4 racks with 400G NICs split 2 x 200G, so every plane has lab-2zone's
  switches (an RTSW per rack, 4 CTSWs per zone, 2 ATSWs) with 16 x 200G NIC ports per RTSW and 8 x 400G
  uplinks for the same 1:1, and the site has twice each.
- With 2 planes, losing one halves a large AllReduce's inter-rack busbw and every GPU stays reachable.
  Closed form: a ring AllReduce of one GPU per server is bound by its NIC, busbw = protocol efficiency x
  NIC bandwidth ([nccl-tests] busbw): 2 x 200G = 50 GB/s x 0.94 = 47.0 GB/s, one port 25 x 0.94 = 23.5 GB/s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.validate import validate_file
from twin.emit.netbox_objects import import_set
from twin.twins.net import planes, topology
from twin.twins.net.failures import degrade

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "sites" / "lab-2zone-2plane.yaml"
EFFICIENCY = 0.94  # the twin's Simple protocol efficiency, as the report prints it


@pytest.fixture(scope="module")
def design():
    return compile_design(SITE, placement_method="naive")


def test_each_plane_is_the_single_plane_zone_fabric():
    one, _ = validate_file(ROOT / "sites" / "lab-2zone.yaml")
    two, _ = validate_file(SITE)
    assert two.shape.planes == 2
    assert [(t.role, t.count) for t in two.shape.tiers] == [(t.role, 2 * t.count) for t in one.shape.tiers] == [
        ("rtsw", 16), ("ctsw", 16), ("atsw", 4)]
    rt = two.shape.tier("rtsw")
    assert (rt.down, rt.up) == (16, 8)  # 16 NICs' plane ports at 200G, 8 x 400G up: 1:1
    assert [(b.name, b.links, b.speed / 1e9, b.built) for b in two.shape.boundaries] == [
        ("nic-rtsw", 256, 200, None), ("rtsw-ctsw", 128, 400, 1.0), ("ctsw-atsw", 64, 400, 2.0)]
    # each rack holds both planes' RTSWs: 2 x 1.5 kW (minipack2) beside lab-2zone's one
    assert two.rack.rtsw_power == 2 * one.rack.rtsw_power == 3000.0


def test_port_j_of_every_nic_goes_to_plane_j_in_its_own_rack(design):
    g = design.fabric.graph
    switches = {n: d for n, d in g.nodes(data=True) if d.get("level", -1) >= 1}
    assert Counter((d["role"], d["plane"]) for d in switches.values()) == {
        ("rtsw", 0): 8, ("rtsw", 1): 8, ("ctsw", 0): 8, ("ctsw", 1): 8, ("atsw", 0): 2, ("atsw", 1): 2}
    assert all(n.startswith(f"plane{d['plane'] + 1}-") for n, d in switches.items())
    assert "plane2-lab1-z1-r001-rtsw" in switches and "plane1-z2-ctsw-04" in switches and "plane2-atsw-02" in switches
    nics = [n for n, d in g.nodes(data=True) if d.get("role") == "nic"]
    assert len(nics) == 128
    for nic in nics:
        ports = {p: peer for p, (_, peer, _) in design.fabric.ports(nic).items() if p.startswith("port")}
        assert sorted(ports) == ["port1", "port2"]
        for j, peer in ports.items():
            assert switches[peer]["plane"] == int(j[-1]) - 1 and switches[peer]["rack"] == g.nodes[nic]["rack"]
    routed = g.edge_subgraph([(u, v, k) for u, v, k, d in g.edges(keys=True, data=True)
                              if d["kind"] == "link" and u in switches and v in switches])
    parts = list(nx.connected_components(routed))
    assert len(parts) == 2 and sorted(sorted({switches[n]["plane"] for n in p}) for p in parts) == [[0], [1]]


def test_each_plane_has_its_own_addresses_sessions_and_configs(design):
    a = design.addressing
    switches = [n for n in design.fabric.graph if design.fabric.graph.nodes[n].get("level", -1) >= 1]
    assert len(a.loopback) == len(set(a.loopback.values())) == len(switches) == 36
    assert len(a.rack_subnet) == 16 and len(set(a.rack_subnet.values())) == 16  # a NIC subnet per RTSW of each plane
    plane = {n: design.fabric.graph.nodes[n]["plane"] for n in switches}
    sessions = 0
    for name, it in design.intent.switches.items():
        for nb in it.neighbors:
            assert plane[nb.peer] == plane[name]  # no BGP session joins the planes
            sessions += 1
    assert sessions == 2 * (128 + 64)  # both ends of every switch-to-switch cable


def test_netbox_has_one_interface_per_nic_port_and_every_plane_switch(design):
    t = {x.stem: x for x in import_set(design)}
    devices = {r[0] for r in t["08-devices"].rows}
    assert sum(1 for d in devices if "plane1-" in d) == sum(1 for d in devices if "plane2-" in d) == 18
    ifaces = [r for r in t["09-interfaces"].rows if r[0].endswith("-z1-r001-s1") and r[1].startswith("nic1")]
    assert sorted(r[1] for r in ifaces) == ["nic1/port1", "nic1/port2"] and {r[3] for r in ifaces} == {"200000000"}
    ends = [(r[1], r[3]) for r in t["10-cables"].rows] + [(r[5], r[7]) for r in t["10-cables"].rows]
    assert len(t["10-cables"].rows) == 256 + 128 + 64 and len(ends) == len(set(ends))


def test_losing_a_plane_leaves_every_gpu_reachable_on_the_other(design):
    net = topology.from_design(design)
    assert net.planes == 2
    g = design.fabric.graph
    plane1 = {k for u, v, k, d in g.edges(keys=True, data=True)
              if d["kind"] == "link" and 0 in (g.nodes[u].get("plane"), g.nodes[v].get("plane"))}
    cut = degrade(net, plane1, {})
    assert (cut.nic_leaf[cut.gpu_nic] >= 0).all()
    s, d = np.arange(net.n_gpus), np.roll(np.arange(net.n_gpus), -64)  # every GPU to one in the other zone
    t, sn, dn, b = planes.split(cut, s, d, np.ones(net.n_gpus))
    assert len(t) == net.n_gpus and np.allclose(b, 1.0)
    assert {cut.switch_ids[i][:7] for i in cut.nic_leaf[sn]} == {"plane2-"}
    t, sn, dn, b = planes.split(net, s, d, np.ones(net.n_gpus))
    assert len(t) == 2 * net.n_gpus and np.allclose(b, 0.5)


def test_example_scenario_halves_busbw_when_a_plane_fails():
    r = subprocess.run([sys.executable, "-m", "twin", "simulate", str(SITE), "--scenario",
                        str(ROOT / "scenarios" / "lab-2zone-2plane.yaml"), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["result"]
    bw = {(c["case"], k["name"]): k["schemes"][0]["busbw_GBps_at_max_size"] for c in out["cases"] for k in c["collectives"]}
    assert bw[("both-planes", "one-gpu-per-server")] == pytest.approx(EFFICIENCY * 50, rel=1e-3)
    assert bw[("plane1-down", "one-gpu-per-server")] == pytest.approx(EFFICIENCY * 25, rel=1e-3)
    assert bw[("plane1-down", "all-gpus")] == pytest.approx(bw[("both-planes", "all-gpus")] / 2, rel=1e-3)


def _validate(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return subprocess.run([sys.executable, "-m", "twin", "validate", str(p)], capture_output=True, text=True, cwd=ROOT)


def test_planes_that_do_not_divide_the_nic_ports_are_a_located_error(tmp_path):
    text = SITE.read_text()
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("  planes: 2 "))
    out = (r := _validate(tmp_path, text.replace("  planes: 2 ", "  planes: 4 "))).stderr + r.stdout
    assert r.returncode == 2 and f"s.yaml:{line}:11: fabric.planes: 4 planes do not divide the 2 port(s) of a 'gt-h100-2port' NIC" in out


def test_planes_on_a_campus_still_divide_the_nic_ports(tmp_path):
    """A campus takes planes (tests/test_campus_planes.py); the divisibility check still locates a count that
    does not divide the NIC's ports (lab-campus's grand-teton-h100 NICs have one)."""
    text = (ROOT / "sites" / "lab-campus.yaml").read_text()
    assert "  family: ai-zone-clos\n" in text
    text = text.replace("  family: ai-zone-clos\n", "  family: ai-zone-clos\n  planes: 2\n")
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t == "  planes: 2")
    out = (r := _validate(tmp_path, text)).stderr + r.stdout
    assert r.returncode == 2 and f"s.yaml:{line}:11: fabric.planes: 2 planes do not divide the 1 port(s)" in out, out
    assert "on a campus" not in out and "Traceback" not in out, out
