"""A campus built: the graph is the shape, ATSWs stand in their buildings, links between buildings get
optics by reach and trunks of counted fibers, each building's ATSW layer has its ASN, FRR accepts the
configs and maximum-paths is what the graph gives."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SITES, compiled

import twin
from twin.compiler.fabric.synthesis import mismatches
from twin.emit import configs
from twin.physics import FIBER_DELAY_S_PER_M
from twin.verify.roce import Topology, predict

VTYSH = shutil.which("vtysh")
LAB = (SITES / "lab-campus.yaml").read_text()
SPINE = LAB.replace("    topology: full-mesh\n", "    topology: spine\n    spine: {model: minipack2, count: 2, building: b2}\n")


def variant(tmp_path: Path, text: str, name: str = "v.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return twin.load(p)


@pytest.fixture(scope="module")
def spine(tmp_path_factory):
    return variant(tmp_path_factory.mktemp("spine"), SPINE)


def test_mesh_graph_is_the_shape():
    d = compiled("lab-campus")
    g = d.fabric.graph
    assert mismatches(d.spec.shape, d.fabric) == []
    mesh = [lk for lk in d.fabric.cables() if lk.tier == "atsw-atsw"]
    assert len(mesh) == 3 * 2 * 4  # 3 pairs x 2 ATSWs x ceil(8 / (1 x 2)) links
    for lk in mesh:  # ATSW k meets ATSW k, the lower-numbered building at the a end
        a, b = g.nodes[lk.a], g.nodes[lk.b]
        assert lk.a[-2:] == lk.b[-2:] and a["building"] < b["building"] and a["level"] == b["level"] == 3


def test_every_device_stays_in_its_building():
    d = compiled("lab-campus")
    g, cp = d.fabric.graph, d.spec.campus
    for n, attrs in g.nodes(data=True):
        assert cp.hall_building[attrs["hall"]] == attrs["building"], n
    for lk in d.fabric.cables():
        if lk.tier != "atsw-atsw":
            assert g.nodes[lk.a]["building"] == g.nodes[lk.b]["building"], lk


def test_spine_graph(spine):
    g = spine.fabric.graph
    assert mismatches(spine.spec.shape, spine.fabric) == []
    spines = spine.fabric.nodes("cssw")
    assert spines == ["cssw-01", "cssw-02"]
    assert all(g.nodes[s]["level"] == 4 and g.nodes[s]["building"] == 1 and g.nodes[s]["hall"] == "b2-lab" for s in spines)
    up = [lk for lk in spine.fabric.cables() if lk.tier == "atsw-cssw"]
    assert len(up) == 3 * 2 * 8 and {lk.b for lk in up if lk.a == "b1-atsw-01"} == {"cssw-01"}  # plane k: spine k


def test_optics_by_reach_and_lengths():
    """b1-b2 300 m: DR4; b1-b3 1.5 km: FR4; b2-b3 12 km: 400ZR. A link's length is patch + trunk + patch."""
    d = compiled("lab-campus")
    plan, cc = d.cabling, d.cabling.campus
    names = {d.spec.campus.buildings[x].name + "-" + d.spec.campus.buildings[y].name: (x, y) for x, y in d.spec.campus.routes}
    want = {"b1-b2": "dr4-400g", "b1-b3": "fr4-400g", "b2-b3": "zr-400g"}
    for k, i in enumerate(cc.index):
        pair = next(p for p, xy in names.items() if xy == cc.pair[k])
        assert plan.media[plan.medium[i]] == want[pair]
        assert plan.length[i] == pytest.approx(cc.patch[k].sum() + cc.trunk[k])
        assert plan.stock[i] == pytest.approx(cc.patch_stock[k].sum() + cc.trunk[k])
        assert plan.delay(plan.ids[i]) == pytest.approx(plan.stock[i] * FIBER_DELAY_S_PER_M)
    assert sorted(cc.trunk.tolist())[0] == 300.0 and sorted(cc.trunk.tolist())[-1] == 12000.0


def test_trunks_and_bom():
    """Per pair 8 links (2 ATSW pairs x 4). DR4 takes an MPO-12's 12 fibers, FR4 and ZR a duplex pair:
    96 and 16 fibers, x 1.25 spare = 120 and 20, one 144-fiber cable and one panel at each end each."""
    d = compiled("lab-campus")
    t = {(x.a, x.b): x for x in d.cabling.campus.trunks}
    assert (t["b1", "b2"].fibers, t["b1", "b2"].fibers_spare, t["b1", "b2"].cables, t["b1", "b2"].panels) == (96, 120, 1, 1)
    assert (t["b2", "b3"].fibers, t["b2", "b3"].fibers_spare, t["b2", "b3"].media) == (16, 20, {"zr-400g": 8})
    assert t["b2", "b3"].delay_s == pytest.approx(12_000 * 4.9e-9)
    bom = {(ln.category, ln.item, ln.length_m): ln.quantity for ln in d.bom}
    assert bom[("transceiver", "zr-400g", None)] == 16 and bom[("transceiver", "fr4-400g", None)] == 16
    assert {k[2] for k in bom if k[0] == "trunk"} == {300.0, 1500.0, 12000.0}
    assert bom[("panel", "patch-panel-144f", None)] == 6
    # every link between buildings has two patch cords in the cable lines, none of its own stock length
    patch = sum(q for (c, item, _l), q in bom.items() if c == "cable" and item in ("smf-lc-duplex", "smf-mpo-12"))
    assert patch == 2 * 24


def test_asns_one_per_building_and_the_spine(spine):
    d = compiled("lab-campus")
    pools = d.spec.fabric.routing.asn_pools
    for n in d.fabric.nodes("atsw"):
        assert d.addressing.asn[n] == pools["level3"].first + d.fabric.graph.nodes[n]["building"]
    assert {spine.addressing.asn[n] for n in spine.fabric.nodes("cssw")} == {4_201_002_000}


@pytest.mark.parametrize("which", ["mesh", "spine"])
def test_maximum_paths_is_the_predicted_ecmp(which, spine):
    """The intent's width and the verify model's BGP simulation agree; across the mesh an ATSW reaches
    another building over its 4 links to that building's ATSW, its own zone over 8."""
    d = compiled("lab-campus") if which == "mesh" else spine
    js = configs.topology(d.intent)
    topo = Topology({s["name"]: {**s, "maximum_paths": 1024} for s in js["switches"]}, js["links"], js["hosts"], False, True, "c")
    widths = predict(topo)
    for s in js["switches"]:
        assert s["maximum_paths"] == max(widths[s["name"]].values()), s["name"]
        assert len(widths[s["name"]]) == 6 - (s["level"] == 1)  # every rack subnet of the campus reaches every switch (a leaf: the others)
    if which == "mesh":
        assert sorted(set(widths["b1-atsw-01"].values())) == [4, 8]


@pytest.mark.skipif(VTYSH is None, reason="frr not installed")
def test_frr_accepts_every_campus_config(tmp_path, spine):
    for d in (compiled("lab-campus"), spine):
        files = configs.emit(d)
        frr = {p: b for p, b in files.items() if p.startswith("configs/frr/") and p.endswith(".conf")}
        assert len(frr) == 18 + (2 if d is spine else 0)
        for path, text in frr.items():
            f = tmp_path / Path(path).name
            f.write_bytes(text)
            p = subprocess.run([VTYSH, "-C", "-f", str(f)], capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, f"{path}: {p.stdout}{p.stderr}"


def test_campus_policies_in_the_configs(spine, tmp_path):
    """An ATSW sends its campus peers nothing that crossed an ATSW layer; a CTSW never sends up what came
    from any building's ATSWs; a spine passes every building's routes on."""
    files = configs.emit(compiled("lab-campus"))
    atsw = files["configs/frr/b1-atsw-01.conf"].decode()
    assert "  neighbor ATSW route-map TO-CAMPUS out\n" in atsw and "  neighbor CTSW route-map TO-DOWN out\n" in atsw
    for asn in (4201001000, 4201001001, 4201001002):
        assert f"permit _{asn}_\n" in atsw
    assert "description links across the campus to atsw (AS 4201001001,4201001002)" in atsw
    ctsw = files["configs/frr/z2-ctsw-01.conf"].decode()
    assert "bgp as-path access-list FROM-ATSW seq 30 permit _4201001002_" in ctsw
    sp = configs.emit(spine)
    assert "  neighbor CSSW route-map TO-CAMPUS out\n" in sp["configs/frr/b3-atsw-02.conf"].decode()
    assert "  neighbor ATSW route-map TO-DOWN out\n" in sp["configs/frr/cssw-01.conf"].decode()
    # Arista ATSWs get the same policy in EOS syntax
    eos = variant(tmp_path, LAB.replace("    model: minipack2\n    count: 2                     # per building",
                                        "    model: arista-7800r3\n    count: 2                     # per building"), "eos.yaml")
    cfg = configs.emit(eos)["configs/eos/b2-atsw-01.cfg"].decode()
    assert "ip as-path access-list FROM-CAMPUS permit _4201001000_ any" in cfg and "route-map TO-CAMPUS deny 10" in cfg


def test_topology_json_carries_buildings():
    js = configs.topology(compiled("lab-campus").intent)
    assert {s["name"]: s.get("building") for s in js["switches"]}["b3-atsw-02"] == 2
    sliced = Topology({s["name"]: s for s in js["switches"]}, js["links"], js["hosts"], False, True, "c").slice_buildings([1, 3])
    assert sorted(n for n, s in sliced.switches.items() if s["level"] == 3) == ["b1-atsw-01", "b1-atsw-02", "b3-atsw-01", "b3-atsw-02"]
    assert len(sliced.hosts) == 4 and all(lk["a"] in sliced.switches and lk["b"] in sliced.switches for lk in sliced.links)
    with pytest.raises(ValueError, match="two or more"):
        Topology({s["name"]: s for s in js["switches"]}, js["links"], js["hosts"], False, True, "c").slice_buildings([1, 7])


def test_atsw_racks_stand_in_their_buildings(spine):
    """Each building's ATSW racks are in its own halls, the spine's in the building the spec names."""
    d = compiled("lab-campus")
    cp = d.spec.campus
    for r in d.placement.network_racks("atsw"):
        atsws = [n for n, a in d.fabric.graph.nodes(data=True) if a.get("rack") == r.id]
        assert atsws and all(cp.hall_building[r.position.hall] == d.fabric.graph.nodes[n]["building"] for n in atsws)
    assert {r.position.hall for r in spine.placement.network_racks("cssw")} == {"b2-lab"}


def test_campus_build_is_deterministic(tmp_path):
    """Two builds of the campus give the same bytes in every artifact (trunks, report, configs)."""
    from twin.build import build

    a = build(SITES / "lab-campus.yaml", tmp_path / "a").files
    b = build(SITES / "lab-campus.yaml", tmp_path / "b").files
    assert a == b and "cabling/trunks.csv" in a


def test_sonic_lossless_profile_per_campus_link():
    """A SONiC ATSW sizes each port for its cable's whole metres: pfc_xoff of 12,060 m to b3 and 310 m to b1
    (b2-atsw-01: 4 ports each), of 10 m to its 8 CTSWs; the shared headroom is every port's xoff, capped
    at a quarter of the 64 MiB buffer."""
    import json

    from twin.physics import pfc_xoff

    db = json.loads(configs.emit(compiled("lab-campus"))["configs/sonic/b2-atsw-01/config_db.json"])
    prof = db["BUFFER_PROFILE"]
    assert prof["pg_lossless_400000_12060m_profile"]["xoff"] == str(pfc_xoff(400e9, 12_060, 9216)) == "6002832"
    assert prof["pg_lossless_400000_310m_profile"]["xoff"] == str(pfc_xoff(400e9, 310, 9216))
    assert prof["pg_lossless_400000_10m_profile"]["xoff"] == str(pfc_xoff(400e9, 10, 9216)) == "98332"
    pgs = [v["profile"] for k, v in db["BUFFER_PG"].items() if k.endswith("|3")]
    assert pgs.count("pg_lossless_400000_12060m_profile") == 4 and pgs.count("pg_lossless_400000_10m_profile") == 8
    need = 8 * 98_332 + 4 * pfc_xoff(400e9, 310, 9216) + 4 * 6_002_832
    assert need > 2**24 and db["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"] == str(2**24)  # the 12 km ports do not fit


def test_attachments_on_a_campus(tmp_path):
    """Storage on the RTSW tier of a campus: 2 nodes x 2 ports round lab-campus's 6 RTSWs (RTSWs 1-4 take
    one each, 31 of 36 ports left on the busiest); the graph is the shape, the campus tier stays what it
    was, every attachment lives in a building and the whole site builds."""
    from fabric_helpers import variant as fabric_variant

    from twin.build import build

    store = {"name": "store", "kind": "storage", "tier": "rtsw", "count": 2, "ports": 2, "speed": "400 Gbit/s",
             "power": "1200 W", "height_u": 2}
    path = fabric_variant(tmp_path, "lab-campus", "lab-campus-att", attachments=[store])
    d = twin.load(path)
    base = compiled("lab-campus")
    rtsw = d.spec.shape.tier("rtsw")
    assert (rtsw.count, rtsw.attach, rtsw.free) == (6, 1, base.spec.shape.tier("rtsw").free - 1)
    assert mismatches(d.spec.shape, d.fabric) == []
    assert d.spec.shape.boundary("atsw-atsw") == base.spec.shape.boundary("atsw-atsw")
    assert d.spec.shape.boundary_names[-1] == "store-rtsw"
    g = d.fabric.graph
    ends = [lk for lk in d.fabric.cables() if lk.a.startswith("store-")]
    assert len(ends) == 4 and all(g.nodes[lk.a]["building"] in (0, 1, 2) for lk in ends)
    build(path, tmp_path / "out")
    assert (tmp_path / "out" / "report.md").is_file()
