"""InfiniBand: the lab fat tree routes in ibsim + OpenSM with the generated config; the route checker
itself catches holes and loops; a bad root-GUID file is caught (OpenSM would fall back silently)."""

from __future__ import annotations

import shutil

import pytest
from conftest import SITES

from twin.build import build
from twin.verify import ib, ib_tables

WHY = ib.missing_binaries()
needs_ib = pytest.mark.skipif(WHY is not None, reason=WHY or "")


@pytest.fixture(scope="module")
def lab_ib(built):
    """lab-ib as `twin build` wrote it, once per session (tests/conftest.py); read, never changed."""
    return built("lab-ib")


@needs_ib
def test_lab_ib_routes_with_ftree(lab_ib):
    r = ib.route_fabric(lab_ib / "configs" / "opensm", lab_ib / "model" / "topology.net")
    assert r.ok, r.problems
    assert r.engine == "ftree" and r.engine_in_use
    assert r.hcas == 128 and r.switches == 6 and r.pairs_checked == 128 * 127
    assert r.unrouted == 0 and r.loops == 0 and r.max_hops == 3  # leaf - spine - leaf


@needs_ib
def test_bad_root_guids_are_caught(lab_ib, tmp_path):
    osm = tmp_path / "opensm"
    shutil.copytree(lab_ib / "configs" / "opensm", osm)
    net = (lab_ib / "model" / "topology.net").read_text()
    leaves = [line.split("=")[1] for line in net.splitlines() if line.startswith("switchguid=")][:2]
    (osm / "root_guids.conf").write_text("\n".join(leaves) + "\n")  # leaves named as roots: a real slip
    r = ib.route_fabric(osm, lab_ib / "model" / "topology.net")
    # OpenSM still exits 0 and routes with min-hop; only its log tells
    assert not r.engine_in_use and not r.ok
    assert any("did not configure all switches with 'ftree'" in p for p in r.problems)


def _fabric():
    # h1 - s1 - s2 - h2
    nodes = {"S-1": {"kind": "switch"}, "S-2": {"kind": "switch"}, "H-1": {"kind": "hca", "lid": 1}, "H-2": {"kind": "hca", "lid": 2}}
    ports = {("S-1", 1): "H-1", ("S-1", 2): "S-2", ("S-2", 1): "H-2", ("S-2", 2): "S-1"}
    return nodes, ports


def test_route_checker_on_good_loop_and_hole():
    nodes, ports = _fabric()
    good = {"S-1": {1: 1, 2: 2}, "S-2": {1: 2, 2: 1}}
    assert ib_tables.check_routes(nodes, ports, good)["problems"] == []
    loop = {"S-1": {1: 1, 2: 2}, "S-2": {1: 2, 2: 2}}  # S-2 sends lid 2 back to S-1, which sends it back
    r = ib_tables.check_routes(nodes, ports, loop)
    assert r["loops"] == 1 and r["unrouted"] == 0
    hole = {"S-1": {1: 1}, "S-2": {1: 2, 2: 1}}
    assert ib_tables.check_routes(nodes, ports, hole)["unrouted"] == 1


def test_parsers_read_real_tool_output():
    disc = '''switchguid=0x2c90000000001(2c90000000001)
Switch\t8 "S-0002c90000000001"\t\t# "leaf1" base port 0 lid 2 lmc 0
[1]\t"H-0002c90100000001"[1](2c90100000002) \t\t# "h1" lid 1 4xSDR
[3]\t"S-0002c90000000003"[1]\t\t# "spine1" lid 4 4xSDR
'''
    nodes, ports = ib_tables.parse_ibnetdiscover(disc)
    assert nodes["S-0002c90000000001"]["lid"] == 2 and nodes["H-0002c90100000001"]["lid"] == 1
    assert ports[("S-0002c90000000001", 3)] == "S-0002c90000000003"
    fts = '''Unicast lids [0x0-0x8] of switch DR path slid 0; dlid 0; 0,1 guid 0x0002c90000000001 (leaf1):
  Lid  Out   Destination
       Port     Info
0x0001 001 : (Channel Adapter portguid 0x0002c90100000002: 'h1')
0x0004 003 : (Switch portguid 0x0002c90000000003: 'spine1')
'''
    assert ib_tables.parse_dump_fts(fts) == {"S-0002c90000000001": {1: 1, 4: 3}}


@needs_ib
def test_updn_lmc_and_member_partitions(tmp_path):
    import yaml

    data = yaml.safe_load((SITES / "lab-ib.yaml").read_text())
    data["fabric"]["infiniband"] = {"routing_engine": "updn", "lmc": 1, "partitions": [
        {"name": "default", "pkey": 0x7FFF}, {"name": "jobs", "pkey": 0x0102, "members": [1, 2, 3, 4]}]}
    spec = tmp_path / "lab-ib-updn.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    build(spec, out)
    parts = (out / "configs" / "opensm" / "partitions.conf").read_text()
    assert parts.count("=full") == 3 + 4 + 2  # Default: ALL, ALL_SWITCHES, SELF; jobs: 4 GPUs + switches + SELF
    r = ib.route_fabric(out / "configs" / "opensm", out / "model" / "topology.net")
    assert r.ok and r.engine == "updn" and r.engine_in_use, r.problems


@needs_ib
def test_broken_partition_file_is_caught(lab_ib, tmp_path):
    osm = tmp_path / "opensm"
    shutil.copytree(lab_ib / "configs" / "opensm", osm)
    (osm / "partitions.conf").write_text("Default=0x7fff, ipoib : ALL=full ;\njobs=0xzz12 : nonsense ;\n")
    r = ib.route_fabric(osm, lab_ib / "model" / "topology.net")
    assert not r.ok and any("partition" in p for p in r.problems), r.problems
