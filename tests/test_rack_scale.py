"""Rack-scale NVLink systems (issue 28, part 1): GB200/GB300 NVL72 as rack types.

Known answers: an NVL72 rack is one NVLink domain of 72 GPUs ([dgx-gb200-ra]: 18 compute trays of 4 GPUs,
9 NVLink switch trays); a TP8 or EP8 group inside it sends nothing over the scale-out fabric, the same
group spread over two racks does (closed form below). The fabric is rail-aligned to the tray's 4 GPU
positions and sized as NVIDIA sizes its QM9700 SuperPODs ([dgx-b200-ra]: 32 GPUs per leaf, as many
leaf-spine as node-leaf cables, both equal to the GPUs).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.spec import rack_heat
from twin.compiler.resolve.validate import validate_file
from twin.lang.catalog import builtin
from twin.twins.net import routing, synthetic, topology
from twin.twins.reliability.components import failure_modes, footprint
from twin.twins.workload.jobs import rank_layout

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "sites" / "gb200-nvl72.yaml"


@pytest.fixture(scope="module")
def design():
    return compile_design(SITE, until="fabric", placement_method="naive")


@pytest.fixture(scope="module")
def net(design):
    return topology.from_design(design)


@pytest.mark.parametrize("name", ["gb200-nvl72", "gb300-nvl72"])
def test_catalog_nvl72_is_one_domain_of_trays(name):
    ch = builtin().chassis[name]
    rs = ch.rack_scale
    assert (rs.compute_trays, rs.gpus_per_tray, rs.switch_trays) == (18, 4, 9)  # [dgx-gb200-ra], [gb300-nvl72-ra]
    assert ch.gpus == ch.domain == 72 and ch.nics == 72
    assert 0 < rs.liquid_fraction <= 1


def test_fabric_is_rail_aligned_to_tray_positions(design):
    g = design.fabric.graph
    leaves = [n for n, d in g.nodes(data=True) if d.get("level") == 1]
    spines = [n for n, d in g.nodes(data=True) if d.get("level") == 2]
    # [dgx-b200-ra]: 32 GPUs per QM9700 leaf -> 576 / 32 = 18 leaves per scalable unit of 8 racks, 2 SUs here
    assert len(leaves) == 2 * 576 // 32 == 36
    for leaf in leaves:
        nics = [n for n in g.neighbors(leaf) if g.nodes[n].get("role") == "nic"]
        assert len(nics) == 32
        # one rail per leaf: the same GPU position (gpu mod 4) of 32 compute trays
        assert {g.nodes[n]["gpu"] % 4 for n in nics} == {g.nodes[leaf]["rail"]}
        assert len({(g.nodes[n]["server"], g.nodes[n]["gpu"] // 4) for n in nics}) == 32
    tiers = {}
    for _, _, d in g.edges(data=True):
        if d.get("kind") == "link":
            tiers[d["tier"]] = tiers.get(d["tier"], 0) + 1
    assert tiers == {"nic-leaf": 1152, "leaf-spine": 1152}  # [dgx-b200-ra]: cables per tier = GPUs
    # even split of each leaf's 32 uplinks: the fewest spines (1,152 / 64 = 18) rounded up to a divisor of 32
    assert len(spines) == 32


def _fabric_bytes(net, r: routing.Routed) -> tuple[float, float]:
    per_arc = np.asarray(r.A @ r.size).ravel()
    return float(per_arc[:net.n_link_arcs].sum()), float(per_arc[net.n_link_arcs:].sum())


def _ring(net, group: np.ndarray, nbytes: float):
    src, dst = group, np.roll(group, -1)
    return _fabric_bytes(net, routing.route(net, src, dst, np.full(len(src), nbytes), routing.Scheme("e", "ecmp", 1)))


def _alltoall(net, group: np.ndarray, nbytes: float):
    src, dst = np.meshgrid(group, group, indexing="ij")
    src, dst = src.ravel(), dst.ravel()
    return _fabric_bytes(net, routing.route(net, src, dst, np.full(len(src), nbytes), routing.Scheme("e", "ecmp", 1)))


def test_tp8_and_ep8_inside_the_rack_send_nothing_over_the_fabric(net):
    assert len(set(net.gpu_server[:72].tolist())) == 1 and net.gpu_server[72] != net.gpu_server[71]
    gpus = np.arange(72)
    tp = rank_layout(gpus, {"tp": 8, "cp": 1, "pp": 1, "dp": 9}, ["tp", "cp", "pp", "dp"])["tp"]
    assert len(tp) == 9
    b = 1 << 20
    for group in tp:
        fabric, nvlink = _ring(net, group, b)
        assert fabric == 0.0
        assert nvlink == pytest.approx(8 * 2 * b)  # 8 ring steps, each out of one GPU's NVLink and into another's
    fabric, nvlink = _alltoall(net, tp[0], b)
    assert fabric == 0.0 and nvlink == pytest.approx(8 * 7 * 2 * b)


def test_tp8_and_ep8_spread_over_two_racks_cross_the_fabric(net):
    b = 1 << 20
    group = np.arange(68, 76)  # the last tray of rack 1 and the first tray of rack 2
    fabric, nvlink = _ring(net, group, b)
    # two ring steps leave the rack (71 -> 72, 75 -> 68), each between different rails: NIC, leaf, spine,
    # leaf, NIC = 4 links; the other six stay on NVLink
    assert fabric == pytest.approx(2 * 4 * b)
    assert nvlink == pytest.approx(6 * 2 * b)
    fabric, _ = _alltoall(net, group, b)
    # 4 x 4 pairs each way cross racks: same rail (4 per direction) 2 links, other rails (12) 4 links
    assert fabric == pytest.approx(2 * (4 * 2 + 12 * 4) * b)


def _validate(tmp_path, text: str) -> subprocess.CompletedProcess:
    site = tmp_path / "s.yaml"
    site.write_text(text)
    return subprocess.run([sys.executable, "-m", "twin", "validate", str(site)], capture_output=True, text=True, cwd=ROOT)


def test_domain_larger_than_its_rack_is_a_located_error(tmp_path):
    text = SITE.read_text().replace("rack_types:", """catalog:
  chassis:
    nvl-big:
      gpus: 72
      gpu_tdp: 1200 W
      max_power: 132 kW
      nics: 72
      nic_speed: 400 Gbit/s
      nvlink_domain: 144
      height_u: 48
      weight: 1360 kg
      rack_scale: {compute_trays: 18, gpus_per_tray: 4, switch_trays: 9, liquid_fraction: 0.85, source: test}
      source: test
rack_types:""").replace("chassis: gb200-nvl72 ", "chassis: nvl-big ")
    r = _validate(tmp_path, text)
    assert r.returncode == 2, r.stderr
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "nvl-big:")
    assert f"s.yaml:{line + 1}:7: catalog.chassis.nvl-big:" in r.stderr + r.stdout  # the entry's mapping
    assert "nvlink_domain 144 is larger than its rack-scale system of 72 GPUs" in r.stderr + r.stdout
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("old,new,what", [
    ("servers: 1 ", "servers: 2 ", "2 rack-scale systems in one rack"),
    ("hb_domain: 4 ", "hb_domain: 8 ", "rail-aligned to the 4 GPU positions of a compute tray"),
])
def test_rack_scale_misuse_is_a_located_error(tmp_path, old, new, what):
    text = SITE.read_text()
    assert old in text
    text = text.replace(old, new)
    r = _validate(tmp_path, text)
    out = r.stderr + r.stdout
    assert r.returncode == 2 and what in out and "Traceback" not in out
    line = next(i for i, t in enumerate(text.splitlines(), 1) if new in t)
    assert f"s.yaml:{line}:" in out


def test_reliability_knows_tray_and_switch_tray_blast_radius(design):
    classes = design.spec.catalog.reliability
    fp = footprint(design.fabric.graph, 144)  # two NVL72 racks
    assert (fp.count("compute-tray"), fp.count("switch-tray")) == (2 * 18, 2 * 9)  # [dgx-gb200-ra]
    modes = {m.cls: m for m in failure_modes(classes, fp, None)}
    for cls, n in (("compute-tray", 36), ("switch-tray", 18)):
        m = modes[cls]
        assert (m.count, m.kind, m.servers) == (n, "swap", 1)  # the job swaps the tray's NVLink domain
        assert m.job_rate == pytest.approx(n * classes[cls].rate)


def test_no_tray_modes_without_rack_scale():
    g = synthetic.clos(zones=1, racks_per_zone=3, servers_per_rack=2, gpus_per_server=8, ctsw_per_zone=4, rtsw_uplinks=4)
    modes = failure_modes(builtin().reliability, footprint(g, 32), None)
    assert modes and not [m for m in modes if m.per in ("compute-tray", "switch-tray")]


def test_rack_heat_splits_liquid_and_air(design):
    s = design.spec
    liquid, air = rack_heat(s.rack_type, s.chassis, s.rack)
    assert liquid == pytest.approx(132_000 * 0.85)  # the system's max power x its liquid share (catalog)
    assert air == pytest.approx(132_000 * 0.15 + 300)  # the rest of the system plus the rack's other power


def test_a_scalable_unit_is_one_row_within_its_power(design):
    # [dgx-gb200-ra]: an SU is 8 racks in one row and needs a TDP of 1.2 MW
    rows: dict[tuple[str, int], list] = {}
    for r in design.placement.racks:
        if r.kind == "gpu":
            rows.setdefault((r.position.hall, r.position.row), []).append(r)
    assert sorted(len(v) for v in rows.values()) == [8, 8]
    assert 8 * design.spec.rack.power < 1.2e6


@pytest.mark.slow
def test_example_scenario_runs_every_twin():
    """Slow (~15 s): the whole scenario (collectives, job, a 100-run campaign, an hour of power) on 1,152 GPUs.
    Inside a rack the TP8 AllReduce and EP8 all-to-all run on NVLink; across two racks the NICs bound them."""
    import json

    from conftest import unwrap

    r = subprocess.run([sys.executable, "-m", "twin", "simulate", str(SITE), "--scenario",
                        str(ROOT / "scenarios" / "gb200-nvl72.yaml"), "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = unwrap(r.stdout)
    text = json.dumps(out)
    assert "compute-tray" in text and "switch-tray" in text
    busbw = {}
    for c in out["cases"][0]["collectives"]:
        busbw[c["name"]] = c["schemes"][0]["busbw_GBps_at_max_size"]
    # a 400G NIC moves 50 GB/s; NVLink 900 GB/s per direction: inside the rack several times faster
    assert busbw["tp8-in-rack"] > 3 * busbw["tp8-two-racks"]
    assert busbw["ep8-in-rack"] > 3 * busbw["ep8-two-racks"]


def _gb300_xdr_site(sus: int) -> str:
    """The example site as GB300 NVL72 (800G ConnectX-8) on Quantum-X800 Q3400, ``sus`` scalable units of 8
    racks, one row each and a network row."""
    text = SITE.read_text()
    for old, new in (("chassis: gb200-nvl72 ", "chassis: gb300-nvl72 "), ("switch: qm9700 ", "switch: q3400 "),
                     ("nic_speed: 400 Gbit/s ", "nic_speed: 800 Gbit/s "), ("gpus: 1152 ", f"gpus: {576 * sus} "),
                     ("rows: 3 ", f"rows: {sus + 1} "), ("{rows: 3, positions", f"{{rows: {sus + 1}, positions"),
                     ("power_shelf: 150 kW", "power_shelf: 160 kW"), ("capacity_per_row: 1.2 MW", "capacity_per_row: 1.3 MW"),
                     ("utility_capacity: 3 MW", f"utility_capacity: {1.5 * sus:g} MW"), ("utility: 3 MW", f"utility: {1.5 * sus:g} MW")):
        assert old in text, old
        text = text.replace(old, new)
    return text.split("\nworkloads:")[0] + "\n"


@pytest.mark.parametrize("sus,leaves,spines", [(1, 8, 4), (2, 16, 8), (4, 32, 18), (8, 64, 36)])
def test_xdr_fabric_counts_per_scalable_unit_match_the_reference_architecture(tmp_path, sus, leaves, spines):
    """[dgx-b300-xdr-ra] Table 3 (Quantum-X800 Q3400, 576 GPUs per SU, one 800G NIC per GPU): 1 SU 8 leaves
    4 spines, 2 SUs 16/8, 4 SUs 32/18, 8 SUs 64/36, node-leaf and leaf-spine cables = GPUs. twin's even-split
    rule gives the same spines (4 SUs: 2,304 uplinks need 16 spines, 72 uplinks per leaf split evenly over 18)."""
    site = tmp_path / f"xdr{sus}.yaml"
    site.write_text(_gb300_xdr_site(sus))
    spec, diags = validate_file(site)
    assert spec is not None, diags
    assert [(t.role, t.count) for t in spec.shape.tiers] == [("leaf", leaves), ("spine", spines)]
    assert [(b.name, b.links) for b in spec.shape.boundaries] == [("nic-leaf", 576 * sus), ("leaf-spine", 576 * sus)]


def test_trays_that_do_not_hold_the_gpus_are_a_located_error(tmp_path):
    text = SITE.read_text().replace("rack_types:", """catalog:
  chassis:
    nvl-odd:
      gpus: 72
      gpu_tdp: 1200 W
      max_power: 132 kW
      nics: 72
      nic_speed: 400 Gbit/s
      height_u: 48
      weight: 1360 kg
      rack_scale: {compute_trays: 17, gpus_per_tray: 4, switch_trays: 9, liquid_fraction: 0.85, source: test}
      source: test
rack_types:""").replace("chassis: gb200-nvl72 ", "chassis: nvl-odd ")
    r = _validate(tmp_path, text)
    out = r.stderr + r.stdout
    assert r.returncode == 2 and "17 compute trays x 4 GPUs = 68, the chassis has 72 GPUs" in out and "Traceback" not in out
