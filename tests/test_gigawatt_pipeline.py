"""A pipeline across the buildings of a whole-campus job (issue 40), on the 10,368-GPU copy of gigawatt-campus
(2 buildings of one zone; tests/test_gigawatt.py's copy). With a stage per building, every GPU of a stage
sends to the same GPU of the next building: 5,184 transfers here (870,912 over 8 buildings).

- Splits per pair of leaf classes (twin/twins/net/pairsplit.py): each (leaf, destination) pair's table,
  rebuilt from the middle of its pair of classes and its own first and last arcs, is spray.table's bit for
  bit: the pipeline's pairs, random pairs, and random pairs on a fabric with 200 cables cut.
- Classes of one middle as one column (twin/twins/net/middles.py): the pipeline's 144 (RTSW, RTSW) classes
  are one column; the phase's time, latency and link loads (offered, and at the max-min rates) equal those
  of a column per class with its (leaf, leaf) table to 1e-12, and those of a column per transfer on a part
  of the sends. The known answer: the campus links are the bottleneck, 5,184 sends over the 621 links
  between the buildings at 50 GB/s.
- A slow uplink or downlink of one RTSW makes its class a column of its own, and it sets the phase; sends
  whose leaves reach several leaves (their own arcs shared) keep a column each; still the same results.
- The site's MoE job with PP 2 in Megatron-Core's order (PP outermost): the step term by term, lumped by
  middle or not.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_gigawatt import closed_form, scaled

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
    T = len(net.leaf_of_dest)
    k = np.unique(net.nic_leaf[net.gpu_nic[src]] * T + net.dest_of_switch[net.nic_leaf[net.gpu_nic[dst]]])
    return k // T, k % T


def same_as_table(net, leaves, ts) -> pairsplit.Split:
    sp = pairsplit.split(net, leaves, ts)
    want = spray.table(net, leaves, ts)
    for a, b in zip(pairsplit.expand(sp), want, strict=True):
        assert np.array_equal(a, b)  # bit for bit: arcs, fractions, pointers
    assert np.array_equal(sp.entries(), np.diff(want[2]))
    return sp


def test_splits_per_pair_of_leaf_classes_are_the_tables_pair_by_pair(net):
    sp = same_as_table(net, *leaf_pairs(net, *sends(net)))
    assert len(sp.mid) == 144 and len(sp.mid_ptr) == 2 and (sp.mid == 0).all()  # one middle: zone 1 from zone 0's heads
    assert set(np.diff(sp.first_ptr)) == set(np.diff(sp.last_ptr)) == {36}  # an RTSW's 36 uplinks; 36 downlinks
    assert sp.entries()[0] == 36 + np.diff(sp.mid_ptr)[0] + 36 == 4149
    rng = np.random.default_rng(40)
    T = len(net.leaf_of_dest)
    same_as_table(net, net.leaf_of_dest[rng.integers(0, T, 400)], rng.integers(0, T, 400))
    links = sorted(set(net.arc_link[:net.n_link_arcs]))
    cut = failures.degrade(net, set(rng.choice(links, 200, replace=False).tolist()), {})
    T = len(cut.leaf_of_dest)
    sp = same_as_table(cut, cut.leaf_of_dest[rng.integers(0, T, 400)], rng.integers(0, T, 400))
    assert len(sp.mid_ptr) - 1 > 2  # the cut leaves reach the other classes through other heads: middles of their own


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
        assert a.flows == b.flows == len(src)
        assert a.t_per_byte == pytest.approx(b.t_per_byte, rel=1e-12) and a.latency == pytest.approx(b.latency, rel=1e-12)
        assert got.time(2.0**28) == pytest.approx(want.time(2.0**28), rel=1e-12)
        np.testing.assert_allclose(a.load, b.load, rtol=1e-12, atol=1e-12 * b.load.max())
        rates = [routing.link_load(net, x, fluid.max_min(x.A, routing.capacity(x, net.arc_cap))) for x in (r, w)]
        np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12, atol=1e-12 * rates[1].max())
    return got.phases[0]


def test_the_pipeline_sends_between_buildings_are_one_column(net, monkeypatch):
    src, dst = sends(net)
    ph = same(net, src, dst, monkeypatch)
    assert ph.classes == 1  # 144 classes of 36 transfers, one middle
    # the known answer: every send crosses the campus mesh, ATSW k to ATSW k of the other building
    links = closed_form(2, 1, 9)["cables"]["atsw-atsw"]
    assert links == 621 and ph.t_per_byte == pytest.approx(len(src) / (links * 50e9), rel=1e-12)
    part = sends(net, 6)  # a column per transfer is slow on all 5,184 (21 M entries): the first 6 racks
    assert same(net, *part, monkeypatch, ("tables", "transfers")).classes == 1


def test_a_class_whose_own_arcs_differ_is_a_column_of_its_own(net, monkeypatch):
    src, dst = sends(net)
    L, S = net.n_link_arcs, net.n_switches
    a, b = net.nic_leaf[net.gpu_nic[src[0]]], net.nic_leaf[net.gpu_nic[dst[-1]]]
    up = np.flatnonzero((net.arc_tail[:L] == a) & (net.arc_head[:L] < S))[0]
    down = np.flatnonzero((net.arc_head[:L] == b) & (net.arc_tail[:L] < S))[0]
    cap = net.arc_cap.copy()
    cap[[up, down]] /= 16  # an uplink of the first RTSW of building 0, a downlink of the last of building 1
    slow = dataclasses.replace(net, arc_cap=cap)
    ph = same(slow, src, dst, monkeypatch)
    assert ph.classes == 3
    # the slow arc carries 1/36 of each of its class's 36 sends, so each gets its 50 / 16 GB/s
    assert ph.t_per_byte == pytest.approx(16 / 50e9, rel=1e-12)


def test_sends_whose_leaves_reach_several_leaves_keep_a_column_each(net, monkeypatch):
    src, dst = sends(net, 8)
    dst = dst.copy()
    rng = np.random.default_rng(7)
    dst[:RACK] = net.n_gpus // 2 + 8 * RACK + rng.permutation(net.n_gpus // 2 - 8 * RACK)[:RACK]  # rack 0's: anywhere else
    ph = same(net, src, dst, monkeypatch, ("tables", "transfers"))
    shuffled = len(np.unique(net.nic_leaf[net.gpu_nic[dst[:RACK]]] * 10**6 + net.nic_leaf[net.gpu_nic[src[:RACK]]]))
    assert ph.classes == 1 + shuffled  # the other 7 racks' 14 classes in one column


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
