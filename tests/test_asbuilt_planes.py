"""twin as-built on a multi-plane fabric (issue 28): every port of a NIC whose ports go to separate planes
is its own host interface (``nicKpJ``), read and matched on its own, on sites/lab-2plane.yaml's wiring
(64 NICs x 2 ports, one per plane, 256 cables)."""

from __future__ import annotations

import json

import pytest
from asbuilt_synth import collection, got, inject, planned_wiring
from conftest import ROOT

from twin.asbuilt import check
from twin.asbuilt.plan import load
from twin.build import build


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "lab-2plane"
    build(ROOT / "sites" / "lab-2plane.yaml", out)
    plan, problems = load(out)
    assert plan is not None, [d.format() for d in problems.items]
    return out, plan


def write(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def test_every_port_of_a_two_port_nic_is_a_host_interface(built):
    _out, plan = built
    nic = "lab1-r0001-s1-nic3"
    assert plan.host_port[("lab1-r0001-s1", "nic3p1")] == plan.host_port[("lab1-r0001-s1", "nic3/port1")] == (nic, "port1")
    assert plan.host_port[("lab1-r0001-s1", "nic3p2")] == (nic, "port2")
    assert ("lab1-r0001-s1", "nic3") not in plan.host_port  # one name for two ports would be ambiguous
    assert len(plan.host_name) == 64 * 2 == sum(1 for (d, _p) in plan.at if plan.roles[d] == "nic")
    # port 1 goes to plane 1, port 2 to plane 2
    far = planned_wiring(plan)
    assert far[(nic, "port1")][0].startswith("plane1-leaf") and far[(nic, "port2")][0].startswith("plane2-leaf")


def test_clean_two_plane_lab_every_cable_correct_from_both_ends(built, tmp_path):
    out, plan = built
    files = collection(plan, planned_wiring(plan))
    server = json.loads(files["lab1-r0001-s1.json"])["lldp"]["interface"]
    assert [next(iter(x)) for x in server][:4] == ["nic1p1", "nic1p2", "nic2p1", "nic2p2"]  # 16 interfaces: 8 NICs x 2 ports
    res, _d, errors = check(out, [write(tmp_path / "lldp", files)])
    assert errors == 0 and res.findings == []
    assert len(res.correct) == len(plan.ids) == 256
    assert {s.evidence for _i, s in res.correct} == {"both ends"}
    assert len(res.col.claims) == 2 * 256  # each NIC port and each switch port report their cable


def test_ports_crossed_between_planes_are_one_swap(built, tmp_path):
    """Port 1 and port 2 of one NIC plugged into each other's plane: read per port, a swap of the two cables
    (read per NIC, as before, port 2's cable was invisible and the NIC looked correct)."""
    out, plan = built
    w = planned_wiring(plan)
    nic = "lab1-r0002-s2-nic5"
    p1, p2 = (nic, "port1"), (nic, "port2")
    l1, l2 = w[p1], w[p2]
    w[p1], w[l2], w[p2], w[l1] = l2, p1, l1, p2
    res, _d, errors = check(out, [write(tmp_path / "lldp", collection(plan, w))])
    want = {("swapped", tuple(sorted((plan.ids[plan.at[p1]], plan.ids[plan.at[p2]]))))}
    assert errors == 0 and got(res.findings) == want
    assert len(res.correct) == 254


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_faults_on_both_planes_come_back_exactly(built, tmp_path, seed):
    """Swaps and missing cables at random over both planes (every switch port of the lab is cabled, so no
    plug can move to a free port): precision and recall 1.0."""
    out, plan = built
    j, m = 1 + seed, 4 - seed
    wiring, want = inject(plan, seed, 0, j, m, 0)
    res, _d, errors = check(out, [write(tmp_path / "lldp", collection(plan, wiring))])
    assert errors == 0 and got(res.findings) == want
    assert len(res.correct) == 256 - 2 * j - m
