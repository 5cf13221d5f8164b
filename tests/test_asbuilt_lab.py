"""twin as-built against real software: lab-2zone's 320 cables as veth pairs with real lldpd on all 34
devices (tests/asbuilt_lab.py), and lab-ib in ibsim read by the real ibnetdiscover. Each run first
reads the clean fabric (every cable correct, exit 0), then crosses, moves, downs and adds cables and
reads lldpd's (or ibnetdiscover's) own output again: the findings must be exactly the faults made."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from asbuilt_lab import LldpLab, binaries, running
from asbuilt_synth import free_ports, got, planned_wiring
from conftest import ROOT, SITES

from twin.asbuilt import check
from twin.asbuilt.plan import load
from twin.build import build
from twin.verify.netns import leftover, require_root

WHY = require_root(binaries())


@pytest.fixture(scope="module")
def lab_2zone(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "lab-2zone"
    build(SITES / "lab-2zone.yaml", out)
    return out


def _cable(plan, end):
    return plan.ids[plan.at[end]]


def _want(plan, wiring, lab) -> dict[str, int]:
    """Neighbours each lldpd should list: the cables up at its device."""
    want: dict[str, int] = {d: 0 for d in lab.procs}
    for x in wiring:
        want[lab.where(x)[0]] += 1
    return want


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.skipif(WHY is not None, reason=WHY or "")
def test_lldpd_lab_clean_then_faulty(lab_2zone, tmp_path):
    plan, problems = load(lab_2zone)
    assert plan is not None, problems.items
    w = planned_wiring(plan)
    with LldpLab(plan) as lab:
        prefix = lab.ns.prefix
        lab.wire(w)
        lab.start()
        assert len(lab.procs) == 34  # 16 servers, 8 RTSWs, 8 CTSWs, 2 ATSWs
        lab.settle(_want(plan, w, lab))
        lab.collect(tmp_path / "clean")

        # the faults, each on the real wires
        r1 = "lab1-z1-r001-rtsw"
        n1, n2 = ("lab1-z1-r001-s1-nic1", "port1"), ("lab1-z1-r001-s1-nic2", "port1")
        e0, e8 = w[n1], w[n2]
        up1, up2 = (r1, "Ethernet128"), ("lab1-z1-r002-rtsw", "Ethernet128")  # both to z1-ctsw-01
        c1, c2 = w[up1], w[up2]
        moved = ("lab1-z2-r001-rtsw", "Ethernet136")
        target = w[moved]
        spare = next(p for p in free_ports(plan, w) if p[0] == target[0])
        quiet = [(f"lab1-z2-r004-s2-nic{k}", "port1") for k in range(2, 9)]
        extra = next(p for p in free_ports(plan, w) if p[0] == "atsw-01"), next(p for p in free_ports(plan, w) if p[0] == "atsw-02")
        for x in (n1, n2, up1, up2, moved):
            lab.unwire(x)
        faulty = dict(w)
        for x, y in ((n1, e8), (n2, e0), (up1, c2), (up2, c1), (moved, spare), extra):
            faulty[x], faulty[y] = y, x
        del faulty[target]
        lab.wire({x: y for x, y in faulty.items() if frozenset((x, y)) not in lab.cables})
        for x in quiet:
            lab.down(x)
            del faulty[w[x]], faulty[x]
        for dev in lab.procs:
            lab.configure(dev)  # SONiC's per-port settings on the new ports
        lab.settle(_want(plan, faulty, lab))
        lab.collect(tmp_path / "faulty")
        server = json.loads((tmp_path / "faulty" / "lab1-z2-r004-s2.json").read_text())
        groups = lab.groups
    assert not leftover(prefix) and not running(groups)  # every namespace and every lldpd process gone

    # clean: every planned cable correct, seen from both ends; the CLI exits 0
    res, diags, errors = check(lab_2zone, [tmp_path / "clean"])
    assert errors == 0 and not res.findings, [f.action for f in res.findings[:3]]
    assert len(res.correct) == 320 and all(s.evidence == "both ends" for _, s in res.correct)
    assert res.col.reported == set(plan.devices) and res.uncovered == 0
    p = subprocess.run([sys.executable, "-m", "twin", "as-built", str(lab_2zone), str(tmp_path / "clean")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "correct 320 (320 seen from both ends" in p.stdout and "matches the plan" in p.stdout

    # a partial collection (zone 1 only) is checked for what it covers
    z1 = [f for f in (tmp_path / "clean").iterdir() if "z1-" in f.name]
    assert len(z1) == 16  # 8 servers, 4 RTSWs, 4 CTSWs
    part, _d, errors = check(lab_2zone, z1)
    assert errors == 0 and not part.findings
    assert part.uncovered == 160  # zone 2's 64 NIC and 64 RTSW-CTSW cables and its CTSWs' 32 uplinks
    assert len(part.correct) == 160 and sum(s.evidence != "both ends" for _, s in part.correct) == 32  # zone 1's uplinks: the ATSWs did not report

    # faulty: exactly the faults made, from lldpd's own JSON
    assert isinstance(server["lldp"]["interface"], dict)  # one neighbour left: lldpd prints an object, not a list
    res, diags, errors = check(lab_2zone, [tmp_path / "faulty"])
    assert errors == 0, [d.format() for d in diags]
    expected = {("swapped", (_cable(plan, n1), _cable(plan, n2))), ("swapped", tuple(sorted((_cable(plan, up1), _cable(plan, up2))))),
                ("miscabled", (_cable(plan, moved),)), ("unexpected", frozenset(plan.label(e) for e in extra))}
    expected |= {("missing", (_cable(plan, x),)) for x in quiet}
    assert got(res.findings) == expected
    assert len(res.findings) == len(expected) == 11 and len(res.correct) == 320 - 4 - 1 - 7
    mis = next(f for f in res.findings if f.kind == "miscabled")
    assert mis.now == plan.label(spare) and mis.belongs == plan.label(target)
    swap = next(f for f in res.findings if f.kind == "swapped" and _cable(plan, n1) in f.cables)
    assert {swap.now, swap.belongs} == {plan.label(e0), plan.label(e8)}  # crossed at the switch: both plugs in one panel
