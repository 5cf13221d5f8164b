"""Reference designs as their vendors draw them (issue 36): NVIDIA's DGX SuperPOD GB200 compute fabric rebuilt
from a site that states the design (``family: scalable-unit``) and lets twin count.

Known answers, [dgx-gb200-ra] (RA-11338-001, Table 4.1, 2-16 SU) on 64-port QM9700: every SU has one leaf per
compute rack per rail (8 racks x 4 rails = 32 leaves, each one rack's 18 trays down and 18 up), 6 spines per
rail per SU (an SU leaf group: 24 down, 24 up) and the rails meet only at the core, in 6 core groups. At 2 SU:
64 leaves, 48 spines, 18 cores in 6 groups of 3, 1,152 cables per tier; at 16 SU: 512, 384 and 144 (6 groups of
24). The rows at 4 and 8 SU follow from the same closed form (cores = SU x 4 rails x 24 / 64): 128/96/36 (groups
of 6) and 256/192/72 (groups of 12), cables per tier = GPUs. Every count is read off the built graph.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from twin.compiler.fabric.synthesis import mismatches
from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.validate import validate_file

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "sites" / "gb200-nvl72-superpod.yaml"

# SU: (leaves, spines, cores, core groups, cores per group, cables per tier) [dgx-gb200-ra] Table 4.1
TABLE = {2: (64, 48, 18, 6, 3, 1152), 4: (128, 96, 36, 6, 6, 2304), 8: (256, 192, 72, 6, 12, 4608),
         16: (512, 384, 144, 6, 24, 9216)}


def superpod(tmp_path: Path, units: int, **unit) -> Path:
    """The example site at ``units`` scalable units: one row of 8 racks per SU and as many network rows,
    power scaled with it (1.2 MW per SU [dgx-gb200-ra]); ``unit`` replaces fields of fabric.unit."""
    doc = yaml.safe_load(SITE.read_text())
    doc["name"] = f"superpod-{units}su"
    doc.pop("workloads", None)
    hall = doc["halls"][0]
    hall["rows"] = 2 * units
    hall["reserved"] = [{"rows": f"{units + 1}-{2 * units}", "positions": "1-8", "purpose": "network"}]
    mw = f"{1.5 * units:g} MW"
    doc["power"]["utility_capacity"] = hall["power"]["utility"] = mw
    doc["fabric"]["gpus"] = 576 * units
    doc["fabric"]["unit"].update(unit)
    p = tmp_path / f"superpod-{units}su.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def counted(design) -> dict:
    """The table's columns read off the graph: switches by role, core groups, cables per tier."""
    g = design.fabric.graph
    roles = Counter(r for _, r in g.nodes(data="role"))
    groups = Counter(d["group"] for _, d in g.nodes(data=True) if d.get("role") == "core")
    cables = Counter(lk.tier for lk in design.fabric.cables())
    return {"leaf": roles["leaf"], "spine": roles["spine"], "core": roles["core"], "groups": len(groups),
            "per_group": set(groups.values()), "cables": dict(cables)}


@pytest.mark.parametrize("units", [2, 4, 8, 16])
def test_gb200_superpod_table_rebuilt_from_the_graph(tmp_path, units):
    leaves, spines, cores, groups, per_group, cables = TABLE[units]
    path = SITE if units == 2 else superpod(tmp_path, units)
    d = compile_design(path, until="fabric", placement_method="naive")
    assert mismatches(d.spec.shape, d.fabric) == []
    c = counted(d)
    assert (c["leaf"], c["spine"], c["core"], c["groups"], c["per_group"]) == (leaves, spines, cores, groups, {per_group})
    assert c["cables"] == {"nic-leaf": cables, "leaf-spine": cables, "spine-core": cables}
    assert _ports(d) == {"leaf": {(18, 18): leaves}, "spine": {(24, 24): spines}, "core": {(64, 0): cores}}  # every row's ports


def _ports(design) -> dict[str, Counter]:
    """(down, up) links of every switch, by role."""
    g = design.fabric.graph
    down, up = Counter(), Counter()
    for lk in design.fabric.cables():
        up[lk.a] += 1
        down[lk.b] += 1
    out: dict[str, Counter] = {}
    for n, r in g.nodes(data="role"):
        if g.nodes[n].get("level", -1) >= 1:
            out.setdefault(r, Counter())[(down[n], up[n])] += 1
    return out


@pytest.fixture(scope="module")
def two_su():
    return compile_design(SITE, until="fabric", placement_method="naive")


def test_every_leaf_is_one_rack_on_one_rail_and_rails_meet_only_at_the_core(two_su):
    g = two_su.fabric.graph
    assert _ports(two_su) == {"leaf": Counter({(18, 18): 64}), "spine": Counter({(24, 24): 48}), "core": Counter({(64, 0): 18})}
    by_leaf: dict[str, set] = {}
    for lk in two_su.fabric.cables():
        if lk.tier == "nic-leaf":
            nic = g.nodes[lk.a]
            by_leaf.setdefault(lk.b, set()).add((nic["rack"], nic["gpu"] % 4))  # the GPU's position on its tray
    assert all(len(v) == 1 for v in by_leaf.values())  # one rack, one rail per leaf
    assert len({next(iter(v)) for v in by_leaf.values()}) == 64  # 16 racks x 4 rails, each its own leaf
    for lk in two_su.fabric.cables():
        a, b = g.nodes[lk.a], g.nodes[lk.b]
        if lk.tier == "leaf-spine":  # a leaf's uplinks stay in its SU leaf group: same rail, same unit
            assert (a["rail"], a["unit"]) == (b["rail"], b["pod"])
    # spine j of every leaf group reaches only core group j, and each core group every rail of every unit
    spine_index = {n: int(n.rsplit("-", 1)[1]) - 1 for n, r in g.nodes(data="role") if r == "spine"}
    reach: dict[int, set] = {}
    for lk in two_su.fabric.cables():
        if lk.tier == "spine-core":
            assert g.nodes[lk.b]["group"] == spine_index[lk.a]
            reach.setdefault(g.nodes[lk.b]["group"], set()).add((g.nodes[lk.a]["rail"], g.nodes[lk.a]["pod"]))
    assert {j: len(v) for j, v in reach.items()} == {j: 8 for j in range(6)}
    # each leaf sends 3 links to each of its group's 6 spines; each spine 8 to each of its group's 3 cores
    pairs = Counter((lk.a, lk.b) for lk in two_su.fabric.cables() if lk.tier in ("leaf-spine", "spine-core"))
    assert set(pairs.values()) == {3, 8}


def test_the_shape_says_what_the_vendor_table_says(two_su):
    u = two_su.spec.shape.to_json()["unit"]
    assert u == {"units": 2, "rails": 4, "leaf_groups": 8, "leaves_per_group": 8, "spines_per_group": 6, "core_groups": 6,
                 "cores_per_group": 3}


@pytest.mark.parametrize("unit, path, words, expected", [
    ({"leaf": {"hosts": 7, "up": 18}}, ("fabric", "unit", "leaf", "hosts"), "7 hosts per leaf neither divide a rack's 18",
     "1, 2, 3, 6, 9, 18"),
    ({"leaf": {"hosts": "rack", "up": 50}}, ("fabric", "unit", "leaf", "up"), "18 down + 50 up = 68", "at most 46 up"),
    ({"spine": {"down": 48, "up": 24}}, ("fabric", "unit", "spine"), "48 down + 24 up = 72", "at most 64"),
    ({"spine": {"down": 20, "up": 24}}, ("fabric", "unit", "spine", "down"), "8 leaves x 18 uplinks = 144 links",
     "down 24 (6 spines)"),
    ({"racks": 3, "leaf": {"hosts": 36, "up": 18}}, ("fabric", "unit", "racks"), "3 racks of 18 hosts do not split into leaves of 36",
     "a multiple of 2 racks"),
    ({"rails_meet": "spine", "rail_group": 3}, ("fabric", "unit", "rail_group"), "a group of 3 rails does not divide the 4 rails",
     "one of 2, 4"),
    ({"rail_group": 2}, ("fabric", "unit", "rail_group"), "a group of 2 rails meets at its spines, but rails_meet is core",
     "rails_meet: spine"),
])
def test_what_cannot_be_built_is_refused_with_the_counts_that_can(tmp_path, unit, path, words, expected):
    d = refusal(tmp_path, SITE, path, lambda f: f["unit"].update(unit))
    assert words in d.message and expected in d.expected, (d.message, d.expected)


def refusal(tmp_path: Path, site: Path, path: tuple, edit):
    """The one error at ``path`` of ``site`` with ``edit`` applied to its fabric section (the spec refused)."""
    doc = yaml.safe_load(site.read_text())
    edit(doc["fabric"])
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    spec, diags = validate_file(p)
    assert spec is None
    (d,) = [d for d in diags if d.path == path]
    assert d.line > 0
    return d


def test_a_part_filled_unit_is_refused_naming_whole_units(tmp_path):
    doc = yaml.safe_load(SITE.read_text())
    doc["fabric"]["gpus"] = 1440
    p = tmp_path / "part.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    spec, diags = validate_file(p)
    assert spec is None
    (d,) = [d for d in diags if d.path == ("fabric", "gpus")]
    assert "2.50 scalable units of 8 racks" in d.message and "1,152, 1,728" in d.expected


def test_rails_meeting_at_the_spine_count_by_the_closed_form(tmp_path):
    """fabric.unit.rails_meet: spine makes a unit's 8 racks x 4 rails of leaves one SU leaf group (32 leaves), so
    at 2 SU with spines of 32 down and 32 up: 32 x 18 / 32 = 18 spines per unit (36), spine j of each unit to core
    group j (18 groups), ceil(2 x 32 / 64) = 1 core each (18): every tier still 1,152 cables, every spine reaches
    all 4 rails of its unit, every core both units."""
    p = superpod(tmp_path, 2, rails_meet="spine", spine={"down": 32, "up": 32})
    d = compile_design(p, until="fabric", placement_method="naive")
    assert mismatches(d.spec.shape, d.fabric) == []
    c = counted(d)
    assert (c["leaf"], c["spine"], c["core"], c["groups"], c["per_group"]) == (64, 36, 18, 18, {1})
    assert c["cables"] == {"nic-leaf": 1152, "leaf-spine": 1152, "spine-core": 1152}
    assert _ports(d) == {"leaf": Counter({(18, 18): 64}), "spine": Counter({(32, 32): 36}), "core": Counter({(64, 0): 18})}
    rails, units = _reach(d, lambda leaf, spine: "rail" not in spine, lambda spine: spine["pod"])
    assert {len(v) for v in rails.values()} == {4} and {len(v) for v in units.values()} == {2}
    assert d.spec.shape.to_json()["unit"]["rails_meet"] == "spine"


def _reach(d, leaf_ok, spine_key) -> tuple[dict[str, set], dict[str, set]]:
    """The rails of the leaves under each spine (every leaf-spine link in its unit and passing ``leaf_ok``), and
    ``spine_key`` of the spines under each core."""
    g = d.fabric.graph
    rails: dict[str, set] = {}
    cores: dict[str, set] = {}
    for lk in d.fabric.cables():
        a, b = g.nodes[lk.a], g.nodes[lk.b]
        if lk.tier == "leaf-spine":
            assert a["unit"] == b["pod"] and leaf_ok(a, b)
            rails.setdefault(lk.b, set()).add(a["rail"])
        elif lk.tier == "spine-core":
            cores.setdefault(lk.b, set()).add(spine_key(a))
    return rails, cores


def test_a_rail_group_meets_at_its_spines_and_the_groups_at_the_cores(tmp_path):
    """rail_group: 2 of the 4 rails: an SU leaf group is 8 racks x 2 rails = 16 leaves, 16 x 18 / 32 = 9 spines each
    (2 uplinks from every leaf), 2 units x 2 rail groups = 4 groups; spine j of each to core group j (9 groups), each
    taking 4 x 32 links on 64-port cores = 2 cores (18): every tier still 1,152 cables. Each spine reaches exactly
    its group's 2 rails of its unit, each core both rail groups of both units."""
    d = compile_design(superpod(tmp_path, 2, rails_meet="spine", rail_group=2, spine={"down": 32, "up": 32}), until="fabric",
                       placement_method="naive")
    assert mismatches(d.spec.shape, d.fabric) == []
    c = counted(d)
    assert (c["leaf"], c["spine"], c["core"], c["groups"], c["per_group"]) == (64, 36, 18, 9, {2})
    assert c["cables"] == {"nic-leaf": 1152, "leaf-spine": 1152, "spine-core": 1152}
    assert _ports(d) == {"leaf": Counter({(18, 18): 64}), "spine": Counter({(32, 32): 36}), "core": Counter({(64, 0): 18})}
    rails, groups = _reach(d, lambda leaf, spine: spine["rail"] <= leaf["rail"] < spine["rail"] + spine["rails"],
                           lambda spine: (spine["pod"], spine["rail"]))
    g = d.fabric.graph
    assert sorted({frozenset(v) for v in rails.values()}, key=min) == [{0, 1}, {2, 3}]
    assert {frozenset(v) for v in groups.values()} == {frozenset({(0, 0), (0, 2), (1, 0), (1, 2)})}
    assert "su2-rails3-4-spine-09" in g and d.spec.shape.to_json()["unit"]["rail_group"] == 2


def test_rails_meeting_at_the_spine_refuse_spines_a_leaf_cannot_split_over(tmp_path):
    """24 down ports would give 32 x 18 / 24 = 24 spines per unit, over which a leaf's 18 uplinks do not split."""
    spec, diags = validate_file(superpod(tmp_path, 2, rails_meet="spine", spine={"down": 24, "up": 24}))
    assert spec is None
    (d,) = [d for d in diags if d.path == ("fabric", "unit", "spine", "down")]
    assert "32 leaves x 18 uplinks = 576 links" in d.message and "down 32 (18 spines)" in d.expected, (d.message, d.expected)


# H100 SuperPOD [dgx-h100-superpod-ra] (RA-11333-001): SUs of 32 node slots on 64-port QM9700, one leaf per rail per SU; the UFM
# appliance stands in the last SU's free node slot. SU: (nodes, leaves, spines)
H100 = {1: (31, 8, 4), 2: (63, 16, 8), 3: (95, 24, 16), 4: (127, 32, 16)}
UFM = {"name": "ufm", "kind": "subnet-manager", "tier": "leaf", "count": 1, "ports": 1, "speed": "400 Gbit/s", "power": "1 kW",
       "node_slot": True}


def h100_superpod(tmp_path: Path, units: int, nodes: int, ufm: dict) -> Path:
    doc = yaml.safe_load((ROOT / "sites" / "dgx-h100-pod.yaml").read_text())
    doc["name"] = f"h100-{units}su"
    doc.pop("workloads", None)
    doc["fabric"]["gpus"] = 8 * nodes
    doc["fabric"]["attachments"] = [ufm]
    p = tmp_path / f"h100-{units}su.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.mark.parametrize("units", [1, 2, 3, 4])
def test_h100_superpod_with_the_ufm_in_a_free_node_slot(tmp_path, units):
    nodes, leaves, spines = H100[units]
    d = compile_design(h100_superpod(tmp_path, units, nodes, UFM), until="fabric", placement_method="naive")
    assert mismatches(d.spec.shape, d.fabric) == []
    g = d.fabric.graph
    roles = Counter(r for _, r in g.nodes(data="role"))
    assert (d.fabric.server_count(), roles["leaf"], roles["spine"], roles["endpoint"]) == (nodes, leaves, spines, 1)
    (ufm,) = [lk for lk in d.fabric.cables() if lk.tier == "ufm-leaf"]
    # the UFM takes the down-port the missing node would have used on its rail's leaf (32 down, 32 up, no spare
    # port); the other 7 rails' leaves of that SU keep the missing node's port free
    down = Counter(lk.b for lk in d.fabric.cables() if lk.tier in ("nic-leaf", "ufm-leaf"))
    assert down[ufm.b] == 32 and Counter(down.values()) == {32: leaves - 7, 31: 7}
    assert d.spec.shape.tier("leaf").free == 0


def test_without_a_node_slot_the_ufm_needs_a_spare_port_and_with_none_free_it_is_refused(tmp_path):
    spare = {k: v for k, v in UFM.items() if k != "node_slot"}
    spec, diags = validate_file(h100_superpod(tmp_path, 2, 63, spare))
    assert spec is None and any("32 down + 32 up + 1 attached = 65" in d.message for d in diags)
    spec, diags = validate_file(h100_superpod(tmp_path, 2, 64, UFM))  # every node slot filled
    assert spec is None
    (d,) = [d for d in diags if d.path == ("fabric", "attachments", 0, "count")]
    assert "1 port(s) in free node slots, 0 left" in d.message and "gpus: 504 (1 node(s) fewer)" in d.expected


B300 = ROOT / "sites" / "dgx-b300-twin-plane.yaml"


@pytest.fixture(scope="module")
def b300():
    return compile_design(B300, until="intent", placement_method="naive")


def test_b300_twin_plane_su_counts_cables_per_800g_port_as_the_vendor_does(b300):
    """[dgx-b300-ra] Table 3, 1 SU: 64 DGX B300 (512 GPUs), 16 leaves, 8 spines, 512 node-leaf and 512 leaf-spine
    cables. Each GPU's 800G ConnectX-8 runs 2 x 400G, one port per plane: 1,024 node-leaf links of 400G, which a
    twin-port module in each ConnectX-8 cage and each leaf down cage makes 512 cables of an 800G port (the vendor's
    count, beside twin's per link; at the NIC one module carries both planes). The leaf's up cages and the spines'
    run whole (fabric.cages leaf-spine: 1x800G): 512 links of 800G, one cable each."""
    from twin.compiler.fabric.bom import port_counts

    d = b300
    g = d.fabric.graph
    roles = Counter(r for _, r in g.nodes(data="role"))
    assert (roles["server"], roles["leaf"], roles["spine"]) == (64, 16, 8)
    assert mismatches(d.spec.shape, d.fabric) == []
    assert {(c.tier, c.links, c.per_port, c.port_speed) for c in port_counts(d.spec, d.fabric, d.cabling)} == {
        ("nic-leaf", 1024, 512, 800e9), ("leaf-spine", 512, 512, 800e9)}
    speeds = Counter((lk.tier, lk.speed) for lk in d.fabric.cables())
    assert speeds == {("nic-leaf", 400e9): 1024, ("leaf-spine", 800e9): 512}
    # every leaf: 64 ports of 400G down in 32 split cages, 32 of 800G up in 32 whole cages; every spine 64 whole cages
    assert _ports(d) == {"leaf": Counter({(64, 32): 16}), "spine": Counter({(64, 0): 8})}
    xcvr = {ln.item: ln.quantity for ln in d.bom if ln.category == "transceiver"}
    # twin-port modules in the 512 ConnectX-8 cages and the 16 x 32 leaf down cages; an 800G DR8 at both ends of
    # each leaf-spine link (16 x 32 leaf up cages, 8 x 64 spine cages); no single 400G DR4
    assert xcvr == {"2xdr4-800g": 512 + 16 * 32, "dr8-800g": 16 * 32 + 8 * 64}
    (where,) = [ln.description for ln in d.bom if ln.item == "2xdr4-800g"]  # by end: no 400G-DR4 at a ConnectX-8
    assert where.endswith(": 512 in NIC cages (one module per NIC, all its ports), 512 in sn5600-2x400g cages"), where
    assert sum(ln.quantity for ln in d.bom if ln.category == "cable" and "dr8-800g" in ln.description) == 512
    from twin.compiler.cost import cost

    # the catalog's (assumed) module prices: 1,024 x $1,300 + 1,024 x $1,100, where every cage split would be 2,048 x $1,300
    assert cost(d).transceivers == 1024 * 1300 + 1024 * 1100
    assert roles["nic"] == 512 and all(g.nodes[n].get("ports") == 2 for n, r in g.nodes(data="role") if r == "nic")


def test_the_report_names_the_vendors_unit_beside_twins(b300):
    """The sizing section and the BOM section of report.md lay cables per link beside cables per 800G port, the
    unit of [dgx-b300-ra] Table 3 (512 node-leaf cables for 1,024 links); a fabric without twin-port modules has
    no such table (its two counts agree)."""
    from twin.emit import bom, sizing_report

    rows = ["| leaf-spine | 512 | 512 |", "| nic-leaf | 1,024 | 512 (800G) |"]
    for text in (sizing_report.section(b300), bom.section(b300)):
        assert "cables per module port" in text and all(r in text for r in rows), text[-800:]
    assert bom.port_table(compile_design(SITE, until="cabling", placement_method="naive")) is None


def test_a_leaf_runs_its_cages_two_ways_in_breakouts_configs_and_netbox(b300):
    """One SN5600 leaf: down cages 1-32 split 2 x 400G (lanes 0-3 / 4-7 of each), up cages 33-64 whole at 800G
    (lanes 0-7, SONiC's 1x800G mode under the cage's first port, no row for its second)."""
    from twin.compiler.config import sonic
    from twin.emit.cabling import breakout_rows
    from twin.emit.netbox_objects import import_set

    leaf = "plane1-leaf-0001"
    rows = [r for r in breakout_rows(b300) if r[0] == leaf]
    modes = Counter((r[1] <= 32, r[2].split("[")[0], r[6]) for r in rows)
    assert modes == {(True, "2x400G", "400"): 64, (False, "1x800G", "800"): 32}
    up = next(r for r in rows if r[1] == 33)
    assert (up[3], up[4], up[5]) == ("Ethernet256", 1, "256-263")
    model = b300.spec.switch("sn5600-2x400g")
    sw = b300.intent.switches[leaf]
    links = sonic.used_ports(sw, model)
    assert sonic.taken(model, links) == {f"Ethernet{260 + 8 * c}" for c in range(32)}
    brk = sonic.breakout_table(model, links)
    assert Counter(v["brkout_mode"].split("[")[0] for v in brk.values()) == {"2x400G": 32, "1x800G": 32}
    assert sonic.lanes_at(model, "Ethernet256", 800e9) == "256,257,258,259,260,261,262,263"
    from twin.compiler.config.sonic_write import Writer

    site, writer = b300.intent.site, Writer(b300.intent.site)
    for name in (leaf, "plane1-spine-0001", "plane2-leaf-0008"):  # the fast writer as the tables it stands for
        sw = b300.intent.switches[name]
        assert writer.config_db_json(sw, model) == sonic.config_db_json(sonic.config_db(sw, site, model, sonic.shared_tables(site)))
    db = sonic.config_db(b300.intent.switches[leaf], site, model, sonic.shared_tables(site))
    assert len(db["PORT"]) == 96 and "Ethernet260" not in db["PORT"]
    assert {k: db["PORT"]["Ethernet256"][k] for k in ("speed", "alias", "index")} == {"speed": "800000", "alias": "etp33", "index": "33"}
    assert db["PORT"]["Ethernet252"]["alias"] == "etp32b"
    iface = next(t for t in import_set(b300) if t.stem == "09-interfaces")
    mine = [r for r in iface.rows if r[0].endswith(leaf)]
    assert len(mine) == 128 - 32 and Counter(r[2] for r in mine) == {"400gbase-x-qsfpdd": 64, "800gbase-x-osfp": 32}


@pytest.mark.parametrize("site, fabric, path, words, expected", [
    (B300, {"cages": {"leaf-spine": "4x200G"}}, ("fabric", "cages", "leaf-spine"), "cannot run 4x200G", "one of 2x400G, 1x800G"),
    (B300, {"cages": {"nic-leaf": "1x800G"}}, ("fabric", "cages", "nic-leaf"), "the NIC tier runs at the NIC's speed", "leaf-spine"),
    # the QM9700's twin-port OSFP cages carry two NDR ports and the catalog knows no other mode [qm9700]
    (SITE, {"cages": {"leaf-spine": "1x800G"}}, ("fabric", "cages", "leaf-spine"), "qm9700's cages run 2 x 400G and its catalog entry "
     "lists no other", "catalog.switches.qm9700.port_map"),
    (ROOT / "sites" / "lab-2zone.yaml", {"cages": {"rtsw-ctsw": "1x800G"}}, ("fabric", "cages"), "families of one switch model", "scalable-unit"),
    # the B300 SU as scalable units of 8 racks with a leaf per host: 1 port below, half a cage of the split model
    (B300, {"cages": {"leaf-spine": "1x800G"}, "family": "scalable-unit", "tiers": None, "rails_per_switch": None,
            "unit": {"racks": 8, "leaf": {"hosts": 1, "up": 2}, "spine": {"down": 64, "up": 64}}},
     ("fabric", "cages", "leaf-spine"), "a leaf's 1 ports below fill 0.5 cages", "down ports in whole cages of 2"),
])
def test_a_mode_the_cage_cannot_run_is_refused_at_the_field(tmp_path, site, fabric, path, words, expected):
    def edit(f: dict) -> None:
        f.update(fabric)
        for k in [k for k, v in f.items() if v is None]:  # None: the field left out
            del f[k]

    d = refusal(tmp_path, site, path, edit)
    assert words in d.message and expected in d.expected, (d.message, d.expected)


def test_a_tier_whose_switch_pairs_have_one_link_cannot_run_whole_cages(tmp_path):
    """16 B300 SUs on one plane's 3-tier tree: every spine's 64 up-ports reach 64 distinct cores, one 400G link
    each, so no two links between a pair can become one 800G port; the refusal says so."""
    d = refusal(tmp_path, B300, ("fabric", "cages", "spine-core"),
                lambda f: (f.update(cages={"spine-core": "1x800G"}, tiers=3, gpus=16 * 512), f.pop("media")))
    assert "pairs of switches joined by 1 link(s)" in d.message and "multiple of 2 links" in d.expected


def test_pinning_the_vendor_leaf_count_on_twins_tree_points_to_the_scalable_unit_family(tmp_path):
    """The issue's first attempt: NVIDIA's 64 leaves pinned on twin's rail-optimized tree (36 leaves of k/2 = 32 NICs)
    is refused, and the refusal names the family that states the vendor's layout."""
    doc = yaml.safe_load((ROOT / "sites" / "gb200-nvl72.yaml").read_text())
    doc["fabric"]["rtsw"] = {"count": 64}
    p = tmp_path / "pinned.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    spec, diags = validate_file(p)
    assert spec is None
    (d,) = [d for d in diags if d.path == ("fabric", "rtsw", "count")]
    assert "64 leaves pinned, the tree has 36" in d.message and "family scalable-unit and fabric.unit" in d.expected
