"""twin as-built on InfiniBand: lab-ib brought up in ibsim with a pair of HCA cables crossed, a
spine cable moved into the port of one that was pulled, and a link trained at 2x instead of 4x;
the real ibnetdiscover's output must give exactly those findings, each with both ends' labels."""

from __future__ import annotations

import pytest
from asbuilt_synth import got, planned_wiring, topology

from twin.asbuilt import check
from twin.asbuilt.plan import load
from twin.verify import ib, ibsim

WHY = ib.missing_binaries()


@pytest.fixture(scope="module")
def lab_ib(built):
    """lab-ib as `twin build` wrote it, once per session (tests/conftest.py); read, never changed."""
    return built("lab-ib")


def faults(plan):
    """The wiring with the faults, the rates, and the findings they must give."""
    w = planned_wiring(plan)
    n1, n2 = ("lab1-r0001-s1-nic1", "port1"), ("lab1-r0001-s1-nic2", "port1")
    p1, p2 = w[n1], w[n2]
    w[n1], w[p2], w[n2], w[p1] = p2, n1, p1, n2  # crossed at leaf-0001
    up = ("leaf-0002", "17/1")  # a leaf's uplink ...
    pulled = ("leaf-0003", "17/1")  # ... moved into the spine port of this leaf's uplink, which is pulled
    spine_old, spine_new = w[up], w[pulled]
    del w[spine_old], w[pulled]
    w[up], w[spine_new] = spine_new, up
    slow = ("leaf-0004", "20/2")
    rates = {frozenset((slow, w[slow])): "2xNDR"}
    cid = lambda e: plan.ids[plan.at[e]]  # noqa: E731
    want = {("swapped", tuple(sorted((cid(n1), cid(n2))))), ("miscabled", (cid(up),)), ("missing", (cid(pulled),)), ("degraded", (cid(slow),))}
    return w, rates, want, (up, spine_old, spine_new, slow)


def test_ibnetdiscover_format_known_answer(lab_ib, tmp_path):
    """Without the simulator: the faulty topology in ibnetdiscover's own format gives the findings."""
    plan, _ = load(lab_ib)
    w, rates, want, _ = faults(plan)
    f = tmp_path / "fabric.txt"
    f.write_text(topology(plan, (lab_ib / "model" / "topology.net").read_text(), w, rates))
    res, diags, errors = check(lab_ib, [f])
    assert errors == 0 and got(res.findings) == want
    assert len(res.correct) == 256 - 2 - 1 - 1  # the degraded link is in place: counted correct and reported


@pytest.mark.slow
@pytest.mark.skipif(WHY is not None, reason=WHY or "")
def test_ibsim_fabric_read_by_ibnetdiscover(lab_ib, tmp_path):
    plan, _ = load(lab_ib)
    w, rates, want, (up, spine_old, spine_new, slow) = faults(plan)
    net = tmp_path / "faulty.net"
    net.write_text(topology(plan, (lab_ib / "model" / "topology.net").read_text(), w, rates))
    out = tmp_path / "ibnetdiscover.txt"
    out.write_text(ibsim.discover(net))
    assert '"S-' in out.read_text() and "2xSDR" in out.read_text()  # the real program's view: ibsim trains every link at SDR

    res, diags, errors = check(lab_ib, [out], check_speed=False)
    assert errors == 0, [d.format() for d in diags]
    assert got(res.findings) == want
    assert res.col.reported == set(plan.devices)  # every HCA and switch answered the sweep
    mis = next(f for f in res.findings if f.kind == "miscabled")
    assert mis.now == plan.label(spine_new) and mis.belongs == plan.label(spine_old)
    deg = next(f for f in res.findings if f.kind == "degraded")
    assert set(deg.ends[0]) == {plan.label(slow), plan.label(w[slow])}  # both ends' labels
    assert deg.detail == {"planned_rate": "4xNDR", "seen_rate": "2xSDR"}

    # with speed compared too, ibsim's SDR is slower than the plan's NDR on every link that is in place
    res2, _d, _e = check(lab_ib, [out])
    assert sum(f.kind == "degraded" for f in res2.findings) == len(res2.correct) == 256 - 4
