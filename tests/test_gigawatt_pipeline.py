"""A pipeline across the buildings of a whole-campus job (issue 40), on the 10,368-GPU copy of gigawatt-campus
(2 buildings of one zone, on the site's P = 2 planes; tests/test_gigawatt.py's copy). With a stage per
building, every GPU of a stage sends to the same GPU of the next building: 5,184 sends here (870,912 over 8
buildings), each split in equal halves over the GPU's two 200G ports, port j to port j on plane j: 10,368
transfers, and no path leaves its plane.

- Splits per pair of leaf classes (twin/twins/net/pairsplit.py): each (leaf, destination) pair's table,
  rebuilt from the middle of its pair of classes and its own first and last arcs, is spray.table's bit for
  bit: the pipeline's pairs (one middle per plane: zone 1 from zone 0's heads, across every CTSW-ATSW
  cable and mesh link of the plane), random pairs within a plane (a middle per plane and pair of zones),
  and random pairs on a fabric with 200 cables cut.
- Classes of one middle as one column (twin/twins/net/middles.py): the pipeline's 144 (RTSW, RTSW) classes,
  72 on each plane, are one column per plane; the phase's time, latency and link loads (offered, and at
  the max-min rates) equal those of a column per class with its (leaf, leaf) table to 1e-12, and those of
  a column per transfer on a part of the sends. The known answer: the campus links are the bottleneck,
  each plane's 5,184 halves over its 312 links between the buildings at 50 GB/s (5,184 sends over 624).
- A slow uplink or downlink of one RTSW makes its class a column of its own, and it sets the phase; sends
  whose leaves reach several leaves (their own arcs shared) keep a column each; still the same results.
- The site's MoE job with PP 2 in Megatron-Core's order (PP outermost): the step term by term, lumped by
  middle or not.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_gigawatt import COPY_A, UP_PER_RTSW, P, closed_form, scaled

from twin.compiler import pipeline
from twin.twins.net import collectives, failures, fluid, pairsplit, routing, spray, sprayclasses, topology

ADAPTIVE = routing.Scheme("adaptive", "adaptive", 1)
RACK = 72


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    return pipeline.compile_design(scaled(tmp_path_factory.mktemp("gwpp")), until="fabric", placement_method="naive")


@pytest.fixture(scope="module")
def net(design):
    return topology.from_design(design)


def sends(net, racks: int | None = None):
    """Stage 0's GPUs (building 0) and the same GPUs of stage 1 (building 1), the first ``racks`` racks only."""
    half = net.n_gpus // 2
    src = np.arange(half if racks is None else racks * RACK)
    return src, src + half


def leaf_pairs(net, src, dst):
    """The (leaf, destination) pairs of the sends, port j of each source to port j of its destination."""
    T = len(net.leaf_of_dest)
    a, b = net.nic_leaf[net.gpu_ports[src].ravel()], net.nic_leaf[net.gpu_ports[dst].ravel()]
    k = np.unique(a * T + net.dest_of_switch[b])
    return k // T, k % T


def plane_of(net) -> np.ndarray:
    """Each switch's plane (switches are named plane<k>-...)."""
    return np.array([int(s.split("-", 1)[0].removeprefix("plane")) for s in net.switch_ids])


def pairs_in_planes(net, rng, n: int):
    """``n`` random (leaf, destination) pairs, each leaf on its destination's plane (no path joins two)."""
    lp = plane_of(net)[net.leaf_of_dest]
    by = np.stack([np.flatnonzero(lp == k) for k in range(1, P + 1)])
    ts = rng.integers(0, len(lp), n)
    return net.leaf_of_dest[by[lp[ts] - 1, rng.integers(0, by.shape[1], n)]], ts


def same_as_table(net, leaves, ts) -> pairsplit.Split:
    sp = pairsplit.split(net, leaves, ts)
    want = spray.table(net, leaves, ts)
    for a, b in zip(pairsplit.expand(sp), want, strict=True):
        assert np.array_equal(a, b)  # bit for bit: arcs, fractions, pointers
    assert np.array_equal(sp.entries(), np.diff(want[2]))
    return sp


def test_splits_per_pair_of_leaf_classes_are_the_tables_pair_by_pair(net):
    sp = same_as_table(net, *leaf_pairs(net, *sends(net)))
    # 72 RTSW pairs per plane; one middle per plane (zone 1 from zone 0's heads), 72 pairs each
    assert len(sp.mid) == P * 72 and len(sp.mid_ptr) == P + 1 and np.bincount(sp.mid).tolist() == [72] * P
    assert set(np.diff(sp.first_ptr)) == set(np.diff(sp.last_ptr)) == {UP_PER_RTSW}  # an RTSW's 36 uplinks; 36 downlinks
    # a middle crosses every CTSW-ATSW cable of its plane (both buildings') and every mesh link of it
    cables = closed_form(2, 1, COPY_A)["plane_cables"]
    mid = cables["ctsw-atsw"] + cables["atsw-atsw"]
    assert np.diff(sp.mid_ptr).tolist() == [mid] * P and mid == 1_728 + 312
    assert set(sp.entries().tolist()) == {UP_PER_RTSW + mid + UP_PER_RTSW} == {2112}
    rng = np.random.default_rng(40)
    sp = same_as_table(net, *pairs_in_planes(net, rng, 400))
    assert len(sp.mid_ptr) - 1 == P * 2 * 2  # a middle per plane, source zone and destination zone
    links = sorted(set(net.arc_link[:net.n_link_arcs]))
    cut = failures.degrade(net, set(rng.choice(links, 200, replace=False).tolist()), {})
    sp = same_as_table(cut, *pairs_in_planes(cut, rng, 400))
    assert len(sp.mid_ptr) - 1 > P * 2 * 2  # the cut leaves reach the other classes through other heads: middles of their own


def timed(net, src, dst, monkeypatch, how: str):
    """The sends timed as one column per transfer ("transfers"), per class with its (leaf, leaf) table
    ("tables"), or with the classes of one middle in one column ("middles"); and their routed phase."""
    monkeypatch.setattr(collectives, "LUMP_TRANSFERS", 10**12 if how == "transfers" else 1)
    monkeypatch.setattr(sprayclasses, "SPLIT_ENTRIES", 0 if how == "middles" else 10**12)
    tm = collectives.time_collective(net, "sendrecv", "direct", None, ADAPTIVE, groups=[src], group_peers=[dst], keep_load=True)
    r = routing.route(net, src, dst, np.ones(len(src)), ADAPTIVE, lump=None if how == "transfers" else 1)
    return tm, r


def same(net, src, dst, monkeypatch, against=("tables",)):
    got, r = timed(net, src, dst, monkeypatch, "middles")
    for how in against:
        want, w = timed(net, src, dst, monkeypatch, how)
        a, b = got.phases[0], want.phases[0]
        assert a.flows == b.flows == P * len(src)  # a transfer per send and plane
        assert a.t_per_byte == pytest.approx(b.t_per_byte, rel=1e-12) and a.latency == pytest.approx(b.latency, rel=1e-12)
        assert got.time(2.0**28) == pytest.approx(want.time(2.0**28), rel=1e-12)
        np.testing.assert_allclose(a.load, b.load, rtol=1e-12, atol=1e-12 * b.load.max())
        rates = [routing.link_load(net, x, fluid.max_min(x.A, routing.capacity(x, net.arc_cap))) for x in (r, w)]
        np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12, atol=1e-12 * rates[1].max())
    return got.phases[0]


def test_the_pipeline_sends_between_buildings_are_one_column(net, monkeypatch):
    src, dst = sends(net)
    ph = same(net, src, dst, monkeypatch)
    assert ph.classes == P  # 144 classes of 72 transfers, one middle per plane
    # the known answer: every send crosses the campus mesh, ATSW k to ATSW k of the other building, its halves
    # on the two planes: each plane's 5,184 halves of S / 2 over its 312 links at 50 GB/s
    want = closed_form(2, 1, COPY_A)
    links = want["cables"]["atsw-atsw"]
    assert want["plane_cables"]["atsw-atsw"] == 312 and links == P * 312
    assert ph.t_per_byte == pytest.approx(len(src) / P / (links / P * 50e9), rel=1e-12)
    part = sends(net, 6)  # a column per transfer is slow on all 5,184 (21 M entries): the first 6 racks
    assert same(net, *part, monkeypatch, ("tables", "transfers")).classes == P


def test_a_class_whose_own_arcs_differ_is_a_column_of_its_own(net, monkeypatch):
    src, dst = sends(net)
    L, S = net.n_link_arcs, net.n_switches
    a, b = net.nic_leaf[net.gpu_nic[src[0]]], net.nic_leaf[net.gpu_nic[dst[-1]]]
    up = np.flatnonzero((net.arc_tail[:L] == a) & (net.arc_head[:L] < S))[0]
    down = np.flatnonzero((net.arc_head[:L] == b) & (net.arc_tail[:L] < S))[0]
    cap = net.arc_cap.copy()
    cap[[up, down]] /= 16  # an uplink of the first RTSW of building 0, a downlink of the last of building 1 (plane 1's)
    slow = dataclasses.replace(net, arc_cap=cap)
    ph = same(slow, src, dst, monkeypatch)
    assert ph.classes == P + 2  # a column per plane's middle, and the two slow classes of plane 1
    # the slow arc carries 1/36 of each of its class's 72 halves of S / 2: S at 50 / 16 GB/s
    assert ph.t_per_byte == pytest.approx(72 * 0.5 / 36 * 16 / 50e9, rel=1e-12)


def test_sends_whose_leaves_reach_several_leaves_keep_a_column_each(net, monkeypatch):
    src, dst = sends(net, 8)
    dst = dst.copy()
    rng = np.random.default_rng(7)
    dst[:RACK] = net.n_gpus // 2 + 8 * RACK + rng.permutation(net.n_gpus // 2 - 8 * RACK)[:RACK]  # rack 0's: anywhere else
    ph = same(net, src, dst, monkeypatch, ("tables", "transfers"))
    ports = net.gpu_ports[src[:RACK]].ravel(), net.gpu_ports[dst[:RACK]].ravel()  # rack 0's sends, both planes
    shuffled = len(np.unique(net.nic_leaf[ports[1]] * 10**6 + net.nic_leaf[ports[0]]))
    assert ph.classes == P + shuffled  # the other 7 racks' 7 classes of each plane in one column per plane


def test_the_campus_moe_step_with_a_pipeline_is_the_same_lumped_by_middle_or_not(design, net, monkeypatch):
    from twin.lang.scenario.job import Job
    from twin.lang.scenario.models import Case
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs

    w = design.spec.site.workloads[0]
    job = Job(workload=w.name, dims="tp-cp-dp-pp", recipe={"pp": 2, "dp": net.n_gpus // 2})  # a stage per building
    monkeypatch.setattr(collectives, "LUMP_TRANSFERS", 1)

    def step(split_entries):
        monkeypatch.setattr(sprayclasses, "SPLIT_ENTRIES", split_entries)
        return jobs.simulate_job(design, net, job, [ADAPTIVE], Library(), Case(name="c"), set(), None, ("jobs", 0))

    lumped, whole = step(0), step(10**12)
    assert lumped["parallelism"] == "TP1 CP1 PP2 DP5184 EP64" and lumped["buildings_used"] == 2
    a, b = lumped["schemes"][0], whole["schemes"][0]
    for k in ("step_s", "ep_s", "dp_s", "pp_exposed_s", "exposed_comm_s", "comm_latency_s"):
        assert a[k] == pytest.approx(b[k], rel=1e-12), k
    assert a["comm_by_kind"]["pp_sendrecv"]["total_s"] > 0 and a["pp_exposed_s"] > 0
