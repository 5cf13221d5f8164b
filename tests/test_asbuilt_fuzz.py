"""Neighbour files of any shape never make twin as-built raise: JSON built from the formats' own keys
in random places and types (lldpd, EOS, eAPI, merged), and ibnetdiscover-like text with random lines,
are read into claims, findings or located diagnostics, and nothing else."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.asbuilt.collect import collect
from twin.asbuilt.match import analyse
from twin.asbuilt.plan import load

KEYS = ["lldp", "interface", "chassis", "port", "id", "type", "value", "descr", "mac", "ifname", "local", "local-chassis",
        "lldpNeighbors", "lldpNeighborInfo", "systemName", "neighborInterfaceInfo", "interfaceId", "interfaceId_v2",
        "interfaceIdType", "interfaceDescription", "macAddress", "jsonrpc", "result", "hostname", "port", "neighborDevice",
        "neighborPort", "Ethernet0", "Ethernet8", "etp1", "nic1", "port1", "lab1-z1-r001-rtsw", "lab1-z1-r001-s1", "z1-ctsw-01"]
leaf = st.none() | st.booleans() | st.integers(-2, 70) | st.sampled_from(KEYS) | st.text(max_size=4)
values = st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), c, max_size=4),
                      max_leaves=24)
documents = st.one_of(
    st.builds(lambda v: {"lldp": v}, values),
    st.builds(lambda v: {"lldp": {"interface": v}}, values),
    st.builds(lambda v: {"lldpNeighbors": v}, values),
    st.builds(lambda v: {"jsonrpc": "2.0", "result": v}, values),
    st.dictionaries(st.sampled_from(KEYS), st.builds(lambda v: {"lldp": {"interface": v}}, values), max_size=3),
    values,
)
NODE = st.sampled_from(['Switch\t64 "S-0002c90300000001"\t\t# "z1-ctsw-01" leaf', 'Ca\t1 "H-0002c90400000002"\t\t# "lab1-z1-r001-s1 mlx5_0"',
                        'Switch\t8 "S-ffff"\t\t# "MF0;lab1-z1-r001-rtsw:MQM9700/U1" enhanced port 0 lid 3 lmc 0'])
PORT = st.builds(lambda p, r, q, w: f'[{p}]\t"{r}"[{q}]\t\t# "x" lid 0 {w}', st.integers(0, 99), st.sampled_from(["S-0002c90300000001", "H-2", "junk"]),
                 st.integers(0, 99), st.sampled_from(["4xNDR", "2xSDR", "12xZZZ", "", "0x"]))
ibtext = st.lists(NODE | PORT | st.text(max_size=12) | st.just("switchguid=0x1(1)"), min_size=1, max_size=12).map("\n".join)


@pytest.fixture(scope="module")
def plan():
    p, _ = load(ROOT / "generated" / "lab-2zone")
    return p


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=documents, indent=st.sampled_from([None, 2]))
def test_any_json_is_read_or_located(plan, tmp_path_factory, doc, indent):
    f = tmp_path_factory.mktemp("n") / "lab1-z1-r001-rtsw.json"
    f.write_text(json.dumps(doc, indent=indent))
    col = collect(plan, [f])
    analyse(col)
    assert col.files or col.problems.errors  # read, or told where it breaks
    assert all(d.line >= 1 and d.col >= 1 for d in col.problems.items)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ibtext)
def test_any_ibnetdiscover_like_text_is_read_or_located(plan, tmp_path_factory, text):
    f = tmp_path_factory.mktemp("n") / "fabric.txt"
    f.write_text(text)
    col = collect(plan, [f])
    analyse(col)
    assert col.files or col.problems.errors
