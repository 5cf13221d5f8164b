"""Fabric attachments (issue 18, rule 3): subnet managers, storage and gateways on a named tier appear
in the graph, the port budgets, the placement, the cabling, the BOM, the configs and the hand-off.

Counts worked out by hand in the comments.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter

import pytest
from fabric_helpers import variant

import twin
from twin.compiler.fabric.synthesis import mismatches
from twin.compiler.pipeline import check
from twin.compiler.resolve.pools import needs
from twin.emit import bom as bom_emit
from twin.emit import configs_ib
from twin.lang.diagnostics import Severity
from twin.verify import ib

UFM = {"name": "ufm", "kind": "subnet-manager", "tier": "spine", "count": 2, "ports": 1, "speed": "400 Gbit/s",
       "power": "600 W", "description": "UFM appliance"}
STORE = {"name": "store", "kind": "storage", "tier": "spine", "count": 2, "ports": 2, "speed": "400 Gbit/s",
         "power": "1200 W", "height_u": 2}


@pytest.fixture(scope="module")
def ib_site(tmp_path_factory):
    # lab-ib at 96 GPUs: 3 full leaves (32 NICs, 32 uplinks), 2 spines of 3 x 32 / 2 = 48 downlinks, 16
    # free. 2 UFMs x 1 port + 2 storage nodes x 2 ports = 6 ports round the 2 spines: 3 each, 13 free.
    return variant(tmp_path_factory.mktemp("ib"), "lab-ib", "lab-ib-sm", gpus=96, attachments=[UFM, STORE])


@pytest.fixture(scope="module")
def ib_design(ib_site):
    return twin.load(ib_site)


def test_shape_graph_and_port_budget(ib_design):
    d = ib_design
    spine = d.spec.shape.tier("spine")
    assert (spine.count, spine.down, spine.attach, spine.free) == (2, 48, 3, 13)
    assert mismatches(d.spec.shape, d.fabric) == []
    g = d.fabric.graph
    endpoints = sorted(n for n, r in g.nodes(data="role") if r == "endpoint")
    assert endpoints == ["store-01", "store-02", "ufm-01", "ufm-02"]
    assert g.nodes["ufm-01"]["kind"] == "subnet-manager"
    # port q of endpoint e goes to spine (first + e x ports + q) mod 2: ufm-01 -> spine 1, ufm-02 ->
    # spine 2; store (first port 2): store-01 ports 1, 2 -> spines 1, 2; store-02 likewise
    peers = {(lk.a, lk.a_port): lk.b for lk in d.fabric.cables() if lk.a in endpoints}
    assert peers == {("ufm-01", "port1"): "spine-0001", ("ufm-02", "port1"): "spine-0002",
                     ("store-01", "port1"): "spine-0001", ("store-01", "port2"): "spine-0002",
                     ("store-02", "port1"): "spine-0001", ("store-02", "port2"): "spine-0002"}
    per_spine = Counter(lk.b for lk in d.fabric.cables() if lk.tier in ("ufm-spine", "store-spine"))
    assert per_spine == {"spine-0001": 3, "spine-0002": 3}


def test_placement_cabling_and_bom(ib_design):
    d = ib_design
    racks = {r.role: r for r in d.placement.network_racks() if r.role.startswith("ep-")}
    # 2 UFMs (1U, 600 W) fit one rack; 2 storage nodes (2U, 1.2 kW) one rack: 2 x 1.2 kW = 2.4 kW
    assert set(racks) == {"ep-ufm", "ep-store"} and racks["ep-store"].switches == 2
    assert racks["ep-store"].power == pytest.approx(2400.0)
    assert d.budget.network_switches["ep-store"] == 2
    g = d.fabric.graph
    assert g.nodes["store-01"]["rack"] == racks["ep-store"].id
    tiers = Counter(d.cabling.tiers)
    assert tiers["ufm-spine"] == 2 and tiers["store-spine"] == 4
    lines = {(ln.category, ln.item): ln for ln in d.bom}
    assert lines[("endpoint", "ufm")].quantity == 2 and lines[("endpoint", "store")].total_power_w == pytest.approx(2400.0)
    rows = {(r[0], r[1]): r for r in csv.reader(io.StringIO(bom_emit.emit(d)["bom.csv"].decode()))}
    assert rows[("endpoint", "store")][4] == "2" and rows[("endpoint", "ufm")][6] == "1200"  # 2 x 600 W
    from twin.emit import netbox as netbox_emit

    cables = list(csv.DictReader(io.StringIO(netbox_emit.emit(d)["netbox/10-cables.csv"].decode())))
    ends = [r["side_a_device"] for r in cables] + [r["side_b_device"] for r in cables]
    assert sum(1 for n in ends if re.search(r"-(ufm|store)-\d+$", n)) == 6  # 2 UFM + 4 storage cables


def test_opensm_runs_on_the_subnet_manager(ib_design):
    files = configs_ib.emit(ib_design)
    gid = configs_ib.guids(ib_design.fabric)
    conf = files["configs/opensm/opensm.conf"].decode()
    assert f"guid 0x{gid['ufm-01'] + 1:016x}" in conf and "runs on subnet manager ufm-01" in conf and "ufm-02" in conf
    assert f"guid 0x{gid['ufm-02'] + 1:016x}" in files["configs/opensm/ufm-02.conf"].decode()
    # I/O nodes: 2 + 2 x 2 = 6 attachment ports; compute nodes: the 96 GPU NICs
    assert len(files["configs/opensm/io_guids.conf"].decode().split()) == 6
    assert len(files["configs/opensm/cn_guids.conf"].decode().split()) == 96
    topo = files["model/topology.net"].decode()
    assert 'Hca\t2 "H-' in topo and '# "store-01" storage' in topo
    assert ib.sm_host(conf, topo) == f"H-{gid['ufm-01']:016x}"


def test_opensm_routes_every_pair_from_the_subnet_manager(ib_design, tmp_path):
    why = ib.missing_binaries()
    if why:
        pytest.skip(why)
    from twin.build import build

    out = build(ib_design.spec.source_path, tmp_path / "o").out_dir
    r = ib.route_fabric(out / "configs" / "opensm", out / "model" / "topology.net")
    # 96 GPU HCAs + 4 attachment HCAs, every ordered pair routed loop-free by ftree with I/O nodes
    assert r.ok, r.problems
    assert (r.hcas, r.pairs_checked, r.engine_in_use) == (100, 100 * 99, True)


def test_roce_attachments_join_the_leaf_subnet(tmp_path):
    # lab-2zone: 2 storage nodes x 2 ports + 1 gateway x 2 ports = 6 ports on RTSWs 1-6 (one each, round
    # the 8 RTSWs); each of those has 16 NICs + 1 host: a /27 still (16 + 1 + 3 = 20 <= 32)
    att = [dict(STORE, tier="rtsw"), {"name": "gw", "kind": "gateway", "tier": "rtsw", "count": 1, "ports": 2,
                                      "speed": "400 Gbit/s", "power": "800 W"}]
    d = twin.load(variant(tmp_path, "lab-2zone", "lab-att", attachments=att))
    assert needs(d.spec).leaf_nics == (17,) * 6 + (16,) * 2
    rtsw = d.fabric.nodes("rtsw")
    port = next(lk.b_port for lk in d.fabric.cables() if lk.a == "store-01" and lk.a_port == "port1")
    host = d.intent.switches[rtsw[0]].host
    assert port in host.ports and d.addressing.rack_subnet[rtsw[0]].endswith("/27")


@pytest.mark.parametrize("att, where, words", [
    # a 2-tier fat-tree has leaf and spine only
    (dict(UFM, tier="core"), "fabric.attachments[0].tier", "has no tier 'core'"),
    # an InfiniBand subnet manager on a RoCE fabric
    (dict(UFM, tier="rtsw"), "fabric.attachments[0].kind", "RoCE"),
])
def test_bad_attachments_are_located_errors(tmp_path, att, where, words):
    base = "lab-ib" if att["tier"] == "core" else "lab-2zone"
    errs = [e for e in check(variant(tmp_path, base, "bad-att", attachments=[att])).diagnostics if e.severity is Severity.ERROR]
    assert any(e.dotted == where and words in e.message and e.line > 0 for e in errs), [e.format() for e in errs]
