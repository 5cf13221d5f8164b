"""GB200 NVL36x2 (issue 28, part 1): one NVLink domain of 72 GPUs over a pair of neighbouring racks.

Known answers: [mnnvl-guide] (NVIDIA's multi-node NVLink tuning guide) gives the 36x2 reference
configuration: per rack 9 compute trays of 4 GPUs (2RU) and 9 NVL36 NVLink switch trays (1RU), one
domain over both racks. So a pair holds 18 compute and 18 switch trays; a TP8 or EP8 group inside the
pair, even one that straddles its two racks, sends nothing over the scale-out fabric; the same group over
two pairs does (the closed forms of tests/test_rack_scale.py); the fabric is rail-aligned to the 4 GPU
positions of a tray and sized like the NVL72's ([dgx-b200-ra]: 32 GPUs per leaf, cables per tier = GPUs).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.pairs import adjacent
from twin.compiler.resolve.spec import rack_heat
from twin.lang.catalog import builtin
from twin.twins.net import routing, topology
from twin.twins.reliability.components import failure_modes, footprint

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "sites" / "gb200-nvl36x2.yaml"


@pytest.fixture(scope="module")
def design():
    return compile_design(SITE, until="fabric", placement_method="naive")


@pytest.fixture(scope="module")
def net(design):
    return topology.from_design(design)


def test_catalog_pair_is_one_domain_over_two_racks():
    ch = builtin().chassis["gb200-nvl36x2"]
    rs = ch.rack_scale
    assert rs.racks == ch.span == 2
    # [mnnvl-guide]: 9 compute trays of 4 GPUs and 9 NVLink switch trays per rack, one 72-GPU domain
    assert (rs.compute_trays // rs.racks, rs.gpus_per_tray, rs.switch_trays // rs.racks) == (9, 4, 9)
    assert ch.gpus == ch.domain == ch.nics == 72


def test_rack_figures_are_half_the_pair(design):
    s = design.spec
    assert (s.rack.gpus, s.rack.nics, s.racks) == (36, 36, 32)  # 1,152 GPUs / 36 per rack
    assert s.rack.power == pytest.approx(140_000 / 2 + 300)  # half the pair's 140 kW (catalog) + the rack's other power
    liquid, air = rack_heat(s.rack_type, s.chassis, s.rack)
    assert liquid == pytest.approx(70_000 * 0.85) and air == pytest.approx(70_000 * 0.15 + 300)


def _pairs_side_by_side(d):
    halls = {h.name: h for h in d.spec.site.halls}
    g = d.fabric.graph
    servers = [n for n, a in g.nodes(data=True) if a["role"] == "server"]
    assert len(servers) == 16
    where = {r.id: r.position for r in d.placement.racks}
    for s in servers:
        a, b = where[g.nodes[s]["rack"]], where[g.nodes[s]["pair"]]
        assert a.hall == b.hall and adjacent(halls[a.hall], (a.row, a.slot), (b.row, b.slot)), (s, a, b)
    return {g.nodes[s]["rack"] for s in servers} | {g.nodes[s]["pair"] for s in servers}


def test_naive_placement_keeps_each_pair_side_by_side(design):
    assert len(_pairs_side_by_side(design)) == 32  # every GPU rack in exactly one pair


def test_optimized_placement_keeps_each_pair_side_by_side():
    d = compile_design(SITE, until="fabric")
    assert d.placement.method == "optimized"
    assert len(_pairs_side_by_side(d)) == 32


def test_fabric_is_rail_aligned_and_each_domain_spans_its_pair(design):
    g = design.fabric.graph
    for s in (n for n, a in g.nodes(data=True) if a["role"] == "server"):
        nics = sorted((n for n in g.neighbors(s) if g.nodes[n]["role"] == "nic"), key=lambda n: g.nodes[n]["gpu"])
        assert len(nics) == 72
        # trays 1-9 (GPUs 0-35) in the first rack, trays 10-18 in its partner
        assert {g.nodes[n]["rack"] for n in nics[:36]} == {g.nodes[s]["rack"]}
        assert {g.nodes[n]["rack"] for n in nics[36:]} == {g.nodes[s]["pair"]}
    leaves = [n for n, d in g.nodes(data=True) if d.get("level") == 1]
    assert len(leaves) == 1152 // 32  # [dgx-b200-ra]: 32 GPUs per QM9700 leaf
    for leaf in leaves:
        nics = [n for n in g.neighbors(leaf) if g.nodes[n].get("role") == "nic"]
        assert len(nics) == 32 and {g.nodes[n]["gpu"] % 4 for n in nics} == {g.nodes[leaf]["rail"]}
    tiers: dict[str, int] = {}
    for _, _, d in g.edges(data=True):
        if d.get("kind") == "link":
            tiers[d["tier"]] = tiers.get(d["tier"], 0) + 1
    assert tiers == {"nic-leaf": 1152, "leaf-spine": 1152}


def _fabric_bytes(net, src, dst, nbytes):
    r = routing.route(net, src, dst, np.full(len(src), nbytes), routing.Scheme("e", "ecmp", 1))
    per_arc = np.asarray(r.A @ r.size).ravel()
    return float(per_arc[:net.n_link_arcs].sum()), float(per_arc[net.n_link_arcs:].sum())


def _ring(net, group, b):
    return _fabric_bytes(net, group, np.roll(group, -1), b)


def _alltoall(net, group, b):
    src, dst = np.meshgrid(group, group, indexing="ij")
    return _fabric_bytes(net, src.ravel(), dst.ravel(), b)


def test_tp8_and_ep8_across_the_pairs_two_racks_stay_on_nvlink(design, net):
    g = design.fabric.graph
    group = np.arange(32, 40)  # tray 9 of the first rack and tray 10 (the first of the partner rack)
    servers = {net.gpu_server[i] for i in group}
    assert len(servers) == 1
    srv = sorted(n for n, a in g.nodes(data=True) if a["role"] == "server")[0]
    racks = {g.nodes[f"{srv}-nic{i + 1}"]["rack"] for i in group}
    assert racks == {g.nodes[srv]["rack"], g.nodes[srv]["pair"]}  # the group straddles the two racks
    b = 1 << 20
    fabric, nvlink = _ring(net, group, b)
    assert fabric == 0.0 and nvlink == pytest.approx(8 * 2 * b)
    fabric, nvlink = _alltoall(net, group, b)
    assert fabric == 0.0 and nvlink == pytest.approx(8 * 7 * 2 * b)


def test_tp8_and_ep8_over_two_pairs_cross_the_fabric(net):
    b = 1 << 20
    group = np.arange(68, 76)  # the last tray of pair 1 and the first of pair 2
    assert net.gpu_server[71] != net.gpu_server[72]
    fabric, nvlink = _ring(net, group, b)
    assert fabric == pytest.approx(2 * 4 * b) and nvlink == pytest.approx(6 * 2 * b)  # as NVL72 over two racks
    fabric, _ = _alltoall(net, group, b)
    assert fabric == pytest.approx(2 * (4 * 2 + 12 * 4) * b)


def test_reliability_blast_radius_of_a_tray_is_the_pair(design):
    classes = design.spec.catalog.reliability
    fp = footprint(design.fabric.graph, 144)  # two pairs
    # [mnnvl-guide]: 18 compute and 18 NVLink switch trays per pair
    assert (fp.count("compute-tray"), fp.count("switch-tray")) == (36, 36)
    assert fp.domain == (72, 2)
    modes = {m.cls: m for m in failure_modes(classes, fp, None)}
    for cls in ("compute-tray", "switch-tray"):
        m = modes[cls]
        assert (m.count, m.kind, m.servers) == (36, "swap", 1)
        assert m.job_rate == pytest.approx(36 * classes[cls].rate)
        assert m.notes == ("blast radius: the NVLink domain of 72 GPUs over a pair of 2 racks",)


def _validate(tmp_path, text: str) -> subprocess.CompletedProcess:
    site = tmp_path / "s.yaml"
    site.write_text(text)
    return subprocess.run([sys.executable, "-m", "twin", "validate", str(site)], capture_output=True, text=True, cwd=ROOT)


CHASSIS = """catalog:
  chassis:
    nvl-pair:
      gpus: 72
      gpu_tdp: 1200 W
      max_power: 140 kW
      nics: 72
      nic_speed: 400 Gbit/s
      nvlink_domain: {domain}
      height_u: 48
      weight: 2200 kg
      rack_scale: {{racks: 2, compute_trays: 18, gpus_per_tray: 4, switch_trays: {switch}, liquid_fraction: 0.85, source: test}}
      source: test
rack_types:"""


@pytest.mark.parametrize("domain,switch,what", [
    (144, 18, "nvlink_domain 144 is larger than its rack pair of 72 GPUs"),
    (72, 9, "9 switch trays do not split evenly over its 2 racks"),
])
def test_a_domain_larger_than_its_rack_pair_is_a_located_error(tmp_path, domain, switch, what):
    text = SITE.read_text().replace("rack_types:", CHASSIS.format(domain=domain, switch=switch)).replace(
        "chassis: gb200-nvl36x2 ", "chassis: nvl-pair ")
    r = _validate(tmp_path, text)
    out = r.stderr + r.stdout
    assert r.returncode == 2 and what in out and "Traceback" not in out, out
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "nvl-pair:")
    assert f"s.yaml:{line + 1}:7: catalog.chassis.nvl-pair:" in out


def test_gpus_that_leave_a_pair_part_filled_are_a_located_error(tmp_path):
    text = SITE.read_text().replace("gpus: 1152 ", "gpus: 1116 ")  # 15.5 domains
    r = _validate(tmp_path, text)
    out = r.stderr + r.stdout
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "gpus: 1116 " in t)
    assert r.returncode == 2 and f"s.yaml:{line}:" in out and "leave a rack pair part-filled" in out and "a multiple of 72" in out, out


def test_a_hall_without_neighbouring_positions_cannot_hold_a_pair(tmp_path):
    # a cross-aisle after every position: no two GPU positions stand side by side
    text = SITE.read_text().replace("cross_aisle_every: 8", "cross_aisle_every: 1")
    r = _validate(tmp_path, text)
    out = r.stderr + r.stdout
    assert r.returncode == 1 and "16 rack pairs of 2 racks need 32 GPU positions" in out and "the halls fit 0" in out, out


def test_hall_milp_holds_a_pair_together_even_against_fiber():
    """One row of 5 positions, a cross-aisle (1.8 m) after every second (0.6 m slots): pairs {1, 2} and
    {3, 4}, 5 alone. Two GPU racks, 32 links each to one network rack. Free, the fiber optimum splits
    them round the network rack (1 and 3, network at 2: 0.6 + 2.4 m per link); as a pair they take 1
    and 2 with the network rack across the aisle at 3 (3.0 + 2.4 m)."""
    from twin.compiler.place.hall_milp import NetType, solve_hall
    from twin.compiler.resolve.validate import validate_file

    spec, _ = validate_file(SITE)
    h = spec.site.halls[0].model_copy(update={"rows": 1, "positions_per_row": 5, "reserved": [], "cross_aisle_every": 2})
    types = [NetType("fabric", None, 1, 1, 5e3, 300.0)]
    free = solve_hall(h, 1.2, [(0, 2)], types, 70e3, {(0, 0): 32.0}, {}, {}, 100.0, 10.0, 0.0, 1)
    pair = solve_hall(h, 1.2, [(0, 2)], types, 70e3, {(0, 0): 32.0}, {}, {}, 100.0, 10.0, 0.0, 2)
    assert free.gpu[0] == [(1, 1), (1, 3)] and free.objective == pytest.approx(32 * 3.0, abs=0.2)
    assert pair.gpu[0] == [(1, 1), (1, 2)] and pair.net[0] == [(1, 3)] and pair.objective == pytest.approx(32 * 5.4, abs=0.2)


def test_netbox_has_a_device_in_each_rack_of_a_pair(design):
    """Each rack of a pair holds the system's trays standing in it: a device per rack, half the NICs' interfaces
    and cables each, half the pair's mass on the device type (NetBox adds the two)."""
    from twin.compiler.pipeline import compile_design as full
    from twin.emit.netbox_objects import device_name, import_set

    d = full(SITE, placement_method="naive")
    t = {x.model: x for x in import_set(d)}
    devices = {r["name"]: r for r in t["dcim.device"].records() if r["role"] == "GPU server"}
    assert len(devices) == 32 and {r["rack"] for r in devices.values()} == {r.id for r in d.placement.gpu_racks()}
    first, second = device_name("gb200-nvl36x2", "gh1-r0001-s1"), device_name("gb200-nvl36x2", "gh1-r0002-s1")
    ifs = [r for r in t["dcim.interface"].records() if r["device"] in (first, second)]
    assert sorted(int(r["name"][3:]) for r in ifs if r["device"] == first) == list(range(1, 37))
    assert sorted(int(r["name"][3:]) for r in ifs if r["device"] == second) == list(range(37, 73))
    ends = [c["side_a_device"] for c in t["dcim.cable"].records() if c["side_a_device"] in (first, second)]
    assert ends.count(first) == ends.count(second) == 36
    ifaces = {(r["device"], r["name"]) for r in t["dcim.interface"].records()}
    assert all((c[f"side_{x}_device"], c[f"side_{x}_name"]) in ifaces for c in t["dcim.cable"].records() for x in "ab")
    (dt,) = [r for r in t["dcim.devicetype"].records() if r["model"] == "gb200-nvl36x2"]
    assert float(dt["weight"]) == 1100.0  # 2,200 kg (catalog) over 2 racks


@pytest.mark.slow
def test_example_scenario_runs_every_twin():
    """Slow (~6 s): the example scenario (collectives, job, a 100-run campaign, an hour of power) on 1,152 GPUs.
    An 8-GPU group across the pair's two racks runs on NVLink, over two pairs on the NICs; the power twin's
    hall peak is every rack at full load (32 x 70.3 kW: half the pair's 140 kW, so a pair's non-GPU power
    is not counted twice) plus the network racks."""
    import json

    from conftest import unwrap

    r = subprocess.run([sys.executable, "-m", "twin", "simulate", str(SITE), "--scenario",
                        str(ROOT / "scenarios" / "gb200-nvl36x2.yaml"), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = unwrap(r.stdout)
    busbw = {c["name"]: c["schemes"][0]["busbw_GBps_at_max_size"] for c in out["cases"][0]["collectives"]}
    assert busbw["tp8-in-pair"] > 3 * busbw["tp8-two-pairs"] and busbw["ep8-in-pair"] > 3 * busbw["ep8-two-pairs"]
    assert "over a pair of 2 racks" in json.dumps(out["campaign"])
    d = compile_design(SITE)
    (hall,) = out["power"]["distribution"]["halls"]
    assert hall["peak_W"] == pytest.approx(32 * 70_300 + d.budget.network_power)


def test_a_pair_on_an_ai_zone_fabric_or_split_by_zones_is_a_located_error(tmp_path):
    text = (ROOT / "sites" / "lab-2zone.yaml").read_text().replace("chassis: grand-teton-h100", "chassis: gb200-nvl36x2")
    out = (r := _validate(tmp_path, text)).stderr + r.stdout
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "family: ai-zone-clos" in t)
    assert r.returncode == 2 and f"s.yaml:{line}:11: fabric.family: 'gb200-nvl36x2' fills a pair of racks" in out, out
    assert "'gb200-nvl36x2' is a whole rack pair of 72 GPUs" in out  # and servers: 2 of it in one rack type
    text = SITE.read_text().replace("  rack_type: nvl36x2\n", "  rack_type: nvl36x2\n  racks_per_zone: 3\n")
    out = (r := _validate(tmp_path, text)).stderr + r.stdout
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "racks_per_zone: 3" in t)
    assert r.returncode == 2 and f"s.yaml:{line}:" in out and "3 racks per zone would split a rack pair" in out, out
