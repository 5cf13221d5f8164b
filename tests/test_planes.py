"""Multi-plane fabrics (issue 28, part 3): NICs whose ports belong to 2, 4 or 8 planes.

Known answers:
- Each plane is the single-plane fabric of the same NICs at the NIC port's speed (NVIDIA's two-plane
  designs give every plane one leaf per GPU position [gb300-nvl72-ra], [dgx-b300-ra]; DeepSeek's
  multi-plane fat tree is one two-layer fat tree per plane [deepseek-v3-isca]): switch and cable counts
  per plane equal that fabric's (the lab; GB300 NVL72's 2 x 400G against GB200 NVL72's 400G on one layout).
- With 2 planes, losing one halves a large AllReduce's inter-server busbw and every GPU stays reachable.
  Closed form: a ring AllReduce whose ranks are one GPU per server is bound by its NIC, busbw =
  protocol efficiency x NIC bandwidth ([nccl-tests] busbw); 2 ports x 200G = 50 GB/s x 0.94 = 47.0 GB/s,
  one port 25 GB/s x 0.94 = 23.5 GB/s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.validate import validate_file
from twin.emit.netbox_objects import import_set
from twin.lang.catalog import builtin
from twin.twins.net import planes, topology
from twin.twins.net.failures import degrade

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "sites" / "lab-2plane.yaml"
GB200 = ROOT / "sites" / "gb200-nvl72.yaml"
EFFICIENCY = 0.94  # the twin's Simple protocol efficiency, as the report prints it


@pytest.fixture(scope="module")
def design():
    return compile_design(SITE, until="fabric", placement_method="naive")


def _one_plane_at_port_speed(tmp_path: Path) -> Path:
    """The lab site as one plane of single-port 200G NICs (the single-plane fabric at 1/2 the NIC speed)."""
    text = SITE.read_text()
    for old, new in (("nic_speed: 400 Gbit/s ", "nic_speed: 200 Gbit/s "), ("nic_ports: 2 ", "nic_ports: 1 "),
                     ("planes: 2 ", "planes: 1 ")):
        assert old in text, old
        text = text.replace(old, new)
    p = tmp_path / "one-plane.yaml"
    p.write_text(text)
    return p


def test_each_plane_is_the_single_plane_fabric_at_the_port_speed(tmp_path):
    two, diags = validate_file(SITE)
    assert two is not None, diags
    one, diags = validate_file(_one_plane_at_port_speed(tmp_path))
    assert one is not None, diags
    assert two.shape.planes == 2 and one.shape.planes == 1
    assert [(t.role, t.count) for t in two.shape.tiers] == [(t.role, 2 * t.count) for t in one.shape.tiers]
    assert [(b.name, b.links, b.speed) for b in two.shape.boundaries] == [(b.name, 2 * b.links, b.speed) for b in one.shape.boundaries]
    assert two.shape.boundaries[0].speed == 200e9
    # the lab: 64 NIC ports per plane, 4 rails per leaf (32 down-ports), 2 leaves and 1 spine per plane
    assert [(t.role, t.count) for t in two.shape.tiers] == [("leaf", 4), ("spine", 2)]
    assert [(b.name, b.links) for b in two.shape.boundaries] == [("nic-leaf", 128), ("leaf-spine", 128)]


def _superpod(tmp_path: Path, name: str, chassis: dict | None, planes: int) -> Path:
    """The GB200 example's layout (rail-aligned, 2 SUs) on Spectrum-4 SN5600 at 128 x 400G (RoCE), with
    ``chassis`` as its rack-scale system (None: the GB200 NVL72 as it is)."""
    text = GB200.read_text().split("\nworkloads:")[0]
    for old, new in (("technology: infiniband ", "technology: roce "), ("switch: qm9700 ", "switch: sn5600-2x400g ")):
        assert old in text, old
        text = text.replace(old, new)
    if chassis is not None:
        text = text.replace("chassis: gb200-nvl72 ", "chassis: gb300-2port ").replace("nic_speed: 400 Gbit/s ", "nic_speed: 800 Gbit/s ")
        text = text.replace("\nfabric:\n", "\n" + yaml.safe_dump({"catalog": {"chassis": {"gb300-2port": chassis}}}) + "\nfabric:\n", 1)
    text = text.replace("\nfabric:\n", f"\nfabric:\n  planes: {planes}\n", 1)
    p = tmp_path / f"{name}.yaml"
    p.write_text(text + "\n")
    return p


def test_two_planes_of_gb300_are_two_gb200_fabrics(tmp_path):
    """GB300 NVL72's 800G ConnectX-8 split 2 x 400G, one port per plane [gb300-nvl72-ra]: each plane is the
    fabric the GB200 NVL72's single 400G NIC gets on the same layout; the whole is twice that."""
    ch = builtin().chassis["gb300-nvl72"].model_dump(mode="json", exclude_none=True)
    ch["nic_ports"] = 2
    two, diags = validate_file(_superpod(tmp_path, "gb300", ch, 2))
    assert two is not None, [str(d) for d in diags]
    one, diags = validate_file(_superpod(tmp_path, "gb200", None, 1))
    assert one is not None, [str(d) for d in diags]
    assert two.shape.boundaries[0].speed == one.shape.boundaries[0].speed == 400e9
    assert [(t.role, t.count) for t in two.shape.tiers] == [(t.role, 2 * t.count) for t in one.shape.tiers]
    assert [(b.name, b.links) for b in two.shape.boundaries] == [(b.name, 2 * b.links) for b in one.shape.boundaries]
    assert one.shape.boundaries[0].links == 1152  # one cable per GPU per plane


def test_synthesis_puts_port_j_of_every_nic_on_plane_j(design):
    g = design.fabric.graph
    switches = [(n, d) for n, d in g.nodes(data=True) if d.get("level", -1) >= 1]
    assert sorted(n for n, _ in switches) == ["plane1-leaf-0001", "plane1-leaf-0002", "plane1-spine-0001",
                                              "plane2-leaf-0001", "plane2-leaf-0002", "plane2-spine-0001"]
    assert all(d["plane"] == int(n[5]) - 1 for n, d in switches)
    nics = [n for n, d in g.nodes(data=True) if d.get("role") == "nic"]
    assert len(nics) == 64
    for nic in nics:
        ports = {lk_port: peer for lk_port, (_, peer, _) in design.fabric.ports(nic).items() if lk_port.startswith("port")}
        assert sorted(ports) == ["port1", "port2"]
        assert ports["port1"].startswith("plane1-leaf") and ports["port2"].startswith("plane2-leaf")
    for u, v in g.edges():  # no cable joins two planes
        pu, pv = g.nodes[u].get("plane"), g.nodes[v].get("plane")
        assert pu is None or pv is None or pu == pv


def test_losing_a_plane_halves_the_nic_bound_allreduce_and_reaches_every_gpu(design):
    net = topology.from_design(design)
    assert net.planes == 2
    plane2 = {k for u, v, k, d in design.fabric.graph.edges(keys=True, data=True)
              if d["kind"] == "link" and 1 in (design.fabric.graph.nodes[u].get("plane"), design.fabric.graph.nodes[v].get("plane"))}
    cut = degrade(net, plane2, {})
    assert (cut.nic_leaf[cut.gpu_nic] >= 0).all()  # every GPU still has a live port
    s, d = np.arange(net.n_gpus), np.roll(np.arange(net.n_gpus), -9)  # every GPU to a GPU on another server
    t, sn, dn, b = planes.split(cut, s, d, np.ones(net.n_gpus))
    assert len(t) == net.n_gpus and np.allclose(b, 1.0)  # one share each, on plane 1
    assert set(cut.switch_ids[i] for i in cut.nic_leaf[sn]) <= {"plane1-leaf-0001", "plane1-leaf-0002"}
    t, sn, dn, b = planes.split(net, s, d, np.ones(net.n_gpus))
    assert len(t) == 2 * net.n_gpus and np.allclose(b, 0.5)  # whole fabric: half on each plane


def _scenario_busbw(site: Path) -> dict[tuple[str, str], float]:
    """`twin simulate SITE --scenario scenarios/lab-2plane.yaml --json`: busbw at the largest size, GB/s,
    by (case, collective)."""
    r = subprocess.run([sys.executable, "-m", "twin", "simulate", str(site), "--scenario",
                        str(ROOT / "scenarios" / "lab-2plane.yaml"), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["result"]  # the JSON envelope (command, status, result)
    return {(c["case"], k["name"]): k["schemes"][0]["busbw_GBps_at_max_size"] for c in out["cases"] for k in c["collectives"]}


def test_example_scenario_halves_busbw_when_a_plane_fails():
    """`twin simulate` on the lab with the example scenario (one GPU per server, then all 64 GPUs): the
    closed form 47.0 GB/s with both planes, 23.5 GB/s with one (0.94 x 2 x 25 GB/s, 0.94 x 25 GB/s)."""
    bw = _scenario_busbw(SITE)
    assert bw[("both-planes", "one-gpu-per-server")] == pytest.approx(EFFICIENCY * 50, rel=1e-3)
    assert bw[("plane1-down", "one-gpu-per-server")] == pytest.approx(EFFICIENCY * 25, rel=1e-3)
    assert bw[("plane1-down", "all-gpus")] == pytest.approx(bw[("both-planes", "all-gpus")] / 2, rel=1e-3)


def _validate(tmp_path: Path, text: str, name: str = "s.yaml") -> subprocess.CompletedProcess:
    p = tmp_path / name
    p.write_text(text)
    return subprocess.run([sys.executable, "-m", "twin", "validate", str(p)], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("planes,message", [
    ("3", "fabric.planes: '3' is not allowed (expected 1, 2, 4 or 8)"),
    ("4", "fabric.planes: 4 planes do not divide the 2 port(s) of a 'gt-h100-2port' NIC"),
])
def test_a_plane_count_that_does_not_divide_the_nic_ports_is_a_located_error(tmp_path, planes, message):
    text = SITE.read_text()
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("  planes: 2 "))
    r = _validate(tmp_path, text.replace("  planes: 2 ", f"  planes: {planes} "))
    out = r.stderr + r.stdout
    assert r.returncode == 2 and f"s.yaml:{line}:11: {message}" in out and "Traceback" not in out


def test_planes_on_a_zoned_fabric_take_the_nics_ports(tmp_path):
    """An AI-zone fabric has planes too (tests/test_zone_planes.py); lab-2zone's single-port NICs have no second port."""
    text = (ROOT / "sites" / "lab-2zone.yaml").read_text().replace("  zones_per_hall: 2\n", "  zones_per_hall: 2\n  planes: 2\n")
    r = _validate(tmp_path, text)
    out = r.stderr + r.stdout
    assert r.returncode == 2 and "fabric.planes: 2 planes do not divide the 1 port(s) of a 'grand-teton-h100' NIC" in out
    assert "Traceback" not in out


def test_failing_a_plane_that_does_not_exist_is_a_located_error(tmp_path):
    scn = tmp_path / "bad.yaml"
    scn.write_text("name: bad\nrouting: [{name: s, scheme: spray}]\ncollectives:\n  - {name: a, op: allreduce, ranks: {gpus: all}, sweep: {min: 1 MiB, max: 1 MiB}}\n"
                   "cases:\n  - name: c\n    failures:\n      - {plane: 3}\n")
    r = subprocess.run([sys.executable, "-m", "twin", "simulate", str(SITE), "--scenario", str(scn)],
                       capture_output=True, text=True, cwd=ROOT)
    out = r.stderr + r.stdout
    assert r.returncode == 2 and "bad.yaml:8:17: cases[0].failures[0].plane: plane 3 does not exist (expected 1..2)" in out


def test_netbox_has_one_interface_per_nic_port():
    t = {x.stem: x for x in import_set(compile_design(SITE, placement_method="naive"))}
    ifaces = [r for r in t["09-interfaces"].rows if r[0].endswith("-r0001-s1") and r[1].startswith("nic1")]
    assert sorted(r[1] for r in ifaces) == ["nic1/port1", "nic1/port2"] and {r[3] for r in ifaces} == {"200000000"}
    ends = [(r[1], r[3]) for r in t["10-cables"].rows] + [(r[5], r[7]) for r in t["10-cables"].rows]
    assert len(ends) == len(set(ends)) == 2 * 256  # no interface takes two cables


def test_planes_on_infiniband_are_refused(tmp_path):
    """One OpenSM manages one connected subnet: InfiniBand planes would each need their own (not built)."""
    r = _validate(tmp_path, SITE.read_text().replace("technology: roce", "technology: infiniband").replace("switch: minipack2", "switch: qm9700"))
    out = r.stderr + r.stdout
    assert r.returncode == 2 and "fabric.planes: 2 planes on InfiniBand" in out and "Traceback" not in out


def _variant(tmp_path: Path, family: str, nic_ports: int, planes: int) -> Path:
    text = SITE.read_text().replace("family: rail-optimized", f"family: {family}")
    text = text.replace("nic_ports: 2 ", f"nic_ports: {nic_ports} ").replace("planes: 2 ", f"planes: {planes} ")
    if family == "fat-tree":
        text = "\n".join(t for t in text.splitlines() if "hb_domain" not in t) + "\n"
    p = tmp_path / f"{family}-{nic_ports}-{planes}.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("family", ["fat-tree", "rail-optimized", "rail-only"])
@pytest.mark.parametrize("nic_ports,planes", [(4, 4), (4, 2)])
def test_every_tree_family_puts_each_nics_share_of_ports_on_each_plane(tmp_path, family, nic_ports, planes):
    """Port j of a NIC of ``nic_ports`` goes to plane (j - 1) // (nic_ports / planes) + 1, at NIC speed / nic_ports;
    the graph equals the shape (the fabric pass proves it) and no cable joins two planes."""
    d = compile_design(_variant(tmp_path, family, nic_ports, planes), until="fabric", placement_method="naive")
    g, per = d.fabric.graph, nic_ports // planes
    assert d.spec.shape.planes == planes and d.spec.shape.boundaries[0].speed == 400e9 / nic_ports
    for nic in (n for n, r in g.nodes(data="role") if r == "nic"):
        ports = {p: peer for p, (_, peer, _) in d.fabric.ports(nic).items() if p.startswith("port")}
        assert sorted(ports) == [f"port{j}" for j in range(1, nic_ports + 1)]
        assert all(g.nodes[peer]["plane"] == (int(p[4:]) - 1) // per for p, peer in ports.items())
    assert all(g.nodes[u].get("plane", -1) == g.nodes[v].get("plane", -1) for u, v, k in g.edges(keys=True)
               if k.startswith("L") and g.nodes[u].get("level", 0) >= 1)


@pytest.mark.slow
def test_losing_one_of_four_planes_leaves_three_quarters(tmp_path):
    """Slow (~5-7 s: a build and two cases in a subprocess). 4 ports x 100G per NIC, one per plane: a NIC-bound ring AllReduce runs at 0.94 x 50 GB/s = 47.0 GB/s,
    with one plane down at 0.94 x 37.5 GB/s = 35.25 GB/s (closed form, as above)."""
    bw = _scenario_busbw(_variant(tmp_path, "rail-optimized", 4, 4))
    assert bw[("both-planes", "one-gpu-per-server")] == pytest.approx(EFFICIENCY * 50, rel=1e-3)
    assert bw[("plane1-down", "one-gpu-per-server")] == pytest.approx(EFFICIENCY * 37.5, rel=1e-3)


def test_verify_pings_racks_only_within_their_plane():
    """`twin verify` pings between racks its switches connect: two planes are two fabrics (lab-2plane
    verified in real FRR: 4 pings, none failed, where pairing across planes gave 8 of 12 failing)."""
    from twin.verify.roce import _ping_pairs
    from twin.verify.topology import Topology

    sw = {f"plane{p}-{r}": {"level": 1 if r.startswith("leaf") else 2, "zone": None} for p in (1, 2)
          for r in ("leaf-1", "leaf-2", "spine-1")}
    links = [{"a": f"plane{p}-leaf-{i}", "b": f"plane{p}-spine-1", "id": f"L{p}{i}"} for p in (1, 2) for i in (1, 2)]
    hosts = [{"switch": f"plane{p}-leaf-{i}"} for p in (1, 2) for i in (1, 2)]
    pairs = _ping_pairs(Topology(sw, links, hosts, False, False, "t", 1, None))
    assert pairs == [("plane1-leaf-1", "plane1-leaf-2"), ("plane1-leaf-2", "plane1-leaf-1"),
                     ("plane2-leaf-1", "plane2-leaf-2"), ("plane2-leaf-2", "plane2-leaf-1")]


def _ports_as_nodes(g):
    """The reference the twin's compile is held to: the graph rebuilt with every multi-port NIC as one node
    per port (``<nic>/port<j>``, in the NIC's place, ``nic`` = its id), each cable re-attached to the port it
    leaves the NIC from and the NIC's host edges dropped. The twin once compiled this copy; it now reads the
    ports off the graph as it is (``compile_graph(split_ports=True)``), which must give the same Net."""
    import networkx as nx

    split = {n: d for n, d in g.nodes(data=True) if d.get("role") == "nic" and (d.get("ports") or 1) > 1}
    out = nx.MultiGraph()
    for n, d in g.nodes(data=True):
        if n in split:
            out.add_nodes_from((f"{n}/port{j}", {**d, "nic": n, "ports": 1}) for j in range(1, d["ports"] + 1))
        else:
            out.add_node(n, **d)

    def end(x, d):
        return f"{x}/{d['a_port'] if d.get('a') == x else d.get('b_port')}" if x in split else x

    out.add_edges_from((end(u, d), end(v, d), k, d) for u, v, k, d in g.edges(keys=True, data=True)
                       if not ((u in split or v in split) and d.get("kind") == "host"))
    return out


def _same_net(a, b, where="Net"):
    import dataclasses

    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if dataclasses.is_dataclass(x):
            _same_net(x, y, f"{where}.{f.name}")
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert (x is None) == (y is None) and (x is None or np.array_equal(x, y)), f"{where}.{f.name}"
        else:
            assert x == y, f"{where}.{f.name}"


@pytest.mark.parametrize("site,nic_ports,planes", [("lab-2plane", 2, 2), ("lab-2zone-2plane", 2, 2), ("lab-2plane", 4, 2)])
def test_the_twin_reads_a_nics_ports_off_the_graph_as_the_rebuilt_graph_gives_them(tmp_path, site, nic_ports, planes):
    """Compiling a multi-plane fabric no longer copies the graph with a node per NIC port (on a two-plane copy
    of gigawatt-campus's 41,472 GPUs that copy was 3.7 of the default twin's 21 CPU seconds, and a second
    graph in memory): every array and list of the Net equals the rebuilt graph's, whole and for the first
    GPUs only (the report's subfabric), with 2 ports on 2 planes and 4 ports on 2."""
    import networkx as nx

    from twin.twins.net.subfabric import first_gpus

    text = (ROOT / "sites" / f"{site}.yaml").read_text()
    text = text.replace("nic_ports: 2 ", f"nic_ports: {nic_ports} ").replace("planes: 2 ", f"planes: {planes} ")
    p = tmp_path / f"{site}-{nic_ports}.yaml"
    p.write_text(text)
    d = compile_design(p, until="fabric", placement_method="naive")
    g, spec = d.fabric.graph, d.spec
    latency = {name: m.latency for name, m in spec.catalog.switches.items()}
    args = (latency, spec.chassis.nvlink_bandwidth, {})
    whole = topology.compile_graph(g, *args, split_ports=True)
    assert whole.gpu_ports.shape == (spec.gpus, nic_ports) and len(whole.nic_ids) == spec.gpus * nic_ports
    _same_net(whole, topology.compile_graph(_ports_as_nodes(g), *args))
    within = first_gpus(g, 24)
    part = topology.compile_graph(g, *args, within=within, split_ports=True)
    assert 0 < len(part.gpu_server) < spec.gpus
    sub = nx.MultiGraph()  # in the graph's own order (a small subgraph view iterates its node set's order)
    sub.add_nodes_from((n, a) for n, a in g.nodes(data=True) if n in within)
    sub.add_edges_from((u, v, k, a) for u, v, k, a in g.edges(keys=True, data=True) if u in within and v in within)
    _same_net(part, topology.compile_graph(_ports_as_nodes(sub), *args))
    assert topology.from_design(d).gpu_ports.shape == (spec.gpus, nic_ports)
