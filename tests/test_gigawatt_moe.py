"""The expert all-to-all of a whole-campus MoE job (issue 40), on a scaled copy of gigawatt-campus (2 buildings
of one zone: 144 NVL72 racks, 10,368 GPUs, on the site's P = 2 planes; tests/test_gigawatt.py's copy).

- Blocks (twin/twins/net/blocks.py): on each plane every zone's RTSWs hang off its own 9 CTSWs of that
  plane, so a zone's GPUs hang off one tuple of leaf classes (one per plane) and EP groups inside a zone
  load no arc of another zone; equal zones with equal groups are timed once, across planes. The reduced
  timing equals the timing of every group at once, phase by phase, to 1e-12 (the same max-min
  solution), for DeepSeek-V3's node-limited dispatch and for one copy per expert. Each GPU has a
  200G port on each plane and a transfer is split in equal halves over them: 2 x 25 GB/s per GPU, the
  50 GB/s of one 400G plane, so the known answers are those of one plane.
- Rings (the data-parallel ones): a hop between two GPUs of one rack crosses only their NVLink arcs, so
  the NVLink hops of one even and one odd rack stand for all; the same phase times as every hop, hashed
  or sprayed.
- The campus job itself (scenarios/gigawatt-moe.yaml's workload on the copy's 10,368 GPUs): the same step,
  term by term, with and without both reductions.
- A zone that differs (an RTSW's uplinks slowed) is its own class, and the result is still the unreduced one.
- A collective that cannot be timed is an error, never 0 s; one whose phase would plan more transfers
  than ``collective_transfers`` is refused before it is planned, with the estimate and the limit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_gigawatt import P, scaled

from twin.compiler import pipeline
from twin.lang import limits
from twin.twins.net import blocks, collectives, dispatch, routing, topology
from twin.twins.workload import comm

ADAPTIVE = routing.Scheme("adaptive", "adaptive", 1)
ZONE = 72 * 72
# EP 64 over consecutive ranks (Megatron-Core's order, PP outermost): 9 groups per 8 racks, half of them
# across two racks; the first 18 of each zone
GROUPS = [z * ZONE + np.arange(q * 64, q * 64 + 64) for z in (0, 1) for q in range(18)]
NODE_LIMITED = dispatch.algorithm(dispatch.distinct_domains(2, 8, 4) / 8)  # top-8, at most 4 domains, 2 spanned


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    return pipeline.compile_design(scaled(tmp_path_factory.mktemp("gwmoe")), until="fabric", placement_method="naive")


@pytest.fixture(scope="module")
def net(design):
    return topology.from_design(design)


def both(net, algorithm, monkeypatch, groups=GROUPS):
    folded = collectives.time_collective(net, "alltoall", algorithm, None, ADAPTIVE, groups=groups)
    monkeypatch.setattr(collectives, "REDUCE_BLOCKS", False)
    whole = collectives.time_collective(net, "alltoall", algorithm, None, ADAPTIVE, groups=groups)
    monkeypatch.setattr(collectives, "REDUCE_BLOCKS", True)
    return folded, whole


@pytest.mark.parametrize("algorithm", ["direct", NODE_LIMITED])
def test_one_zone_per_class_times_every_group(net, algorithm, monkeypatch):
    assert net.gpu_ports is not None and net.gpu_ports.shape == (2 * ZONE, P)  # a port per GPU and plane
    folded, whole = both(net, algorithm, monkeypatch)
    assert folded.blocks == {"blocks": 2, "classes": 1, "groups": 36, "groups_timed": 18}
    assert whole.blocks is None
    assert len(folded.phases) == len(whole.phases) == (2 if algorithm == NODE_LIMITED else 1)
    for a, b in zip(folded.phases, whole.phases):
        assert a.flows * 2 == b.flows  # one zone routed, not two
        assert a.t_per_byte == pytest.approx(b.t_per_byte, rel=1e-12) and a.latency == pytest.approx(b.latency, rel=1e-12)
        assert (a.steps, a.net_steps, a.posts) == (b.steps, b.net_steps, b.posts)
    for size in (2.0**20, 2.0**28):
        assert folded.time(size) == pytest.approx(whole.time(size), rel=1e-12)
    # the known answer of the network part: a NIC sends 1/64 of S to each peer outside its rack; the most
    # loaded NICs (a group's 8 GPUs in one rack, 56 in the other) send 56/64 of S over P ports of 25 GB/s
    if algorithm == "direct":
        assert folded.phases[0].t_per_byte == pytest.approx(56 / 64 / (P * 25e9), rel=1e-9)


def test_a_zone_that_differs_is_its_own_class(net, monkeypatch):
    """Plane 1's RTSW of zone 2's first rack with its 36 uplinks at a sixteenth of their 50 GB/s. Off the rack
    it carries only the plane-1 halves of the zone's second EP group's 8 GPUs in the rack (ranks 64-71; the
    first group's 64 are all in the rack, on NVLink): 8 x 56/64 of S / P over 36 x 50/16 GB/s, 1.78x the
    healthy phase's 56/64 of S over P x 25 GB/s. (On one 400G plane an eighth gave the same: there the
    RTSW carried whole transfers.)"""
    L = net.n_link_arcs
    leaf = net.nic_leaf[net.gpu_nic[ZONE]]
    assert net.switch_ids[leaf].startswith("plane1-") and {net.nic_leaf[net.gpu_nic[ZONE + k]] for k in range(72)} == {leaf}
    up = np.flatnonzero((net.arc_tail[:L] == leaf) & (net.arc_head[:L] < net.n_switches))
    assert len(up) == 36
    cap = net.arc_cap.copy()
    cap[up] /= 16
    slow = dataclasses.replace(net, arc_cap=cap)
    folded, whole = both(slow, "direct", monkeypatch)
    assert folded.blocks is None and blocks.representatives(slow, GROUPS, ADAPTIVE) is None  # 2 classes of 2 blocks: nothing folded
    assert folded.phases[0].t_per_byte == pytest.approx(whole.phases[0].t_per_byte, rel=1e-12)
    healthy, _ = both(net, "direct", monkeypatch)
    assert folded.phases[0].t_per_byte > 1.1 * healthy.phases[0].t_per_byte  # the slow zone sets the phase
    assert folded.phases[0].t_per_byte == pytest.approx(8 * 56 / 64 / P / (36 * 50e9 / 16), rel=1e-9)


def test_groups_across_zones_or_hashed_paths_are_not_folded(net):
    across = [np.arange(ZONE - 32, ZONE + 32), np.arange(2 * ZONE - 64, 2 * ZONE)]
    assert blocks.representatives(net, across, ADAPTIVE) is None
    assert blocks.representatives(net, GROUPS, routing.Scheme("e16", "e-ecmp", 16)) is None
    assert blocks.representatives(net, GROUPS, ADAPTIVE)[1]["classes"] == 1
    back = GROUPS[::-1]  # zone 2's groups first: the first group stays first (NCCL's cost model reads its servers)
    reps, info = blocks.representatives(net, back, ADAPTIVE)
    assert reps[0] is back[0] and len(reps) == 18 and info["groups_timed"] == 18


def test_a_collective_that_cannot_be_timed_is_an_error_not_zero(net):
    with pytest.raises(ValueError, match="power-of-two"):  # before: timed as 0 s
        comm.time_fastest(net, "allgather", ["halving"], [np.arange(3)], ADAPTIVE, None)
    t = comm.time_fastest(net, "allgather", ["ring", "halving"], [np.arange(3)], ADAPTIVE, None)
    assert t.at(2.0**20)[0] > 0


def test_a_phase_past_the_transfer_limit_is_refused_before_it_is_planned(net, monkeypatch):
    monkeypatch.setenv("TWIN_LIMITS", "collective_transfers=100000")
    monkeypatch.setattr(collectives, "plan_groups", lambda *a, **k: pytest.fail("planned before the cost check"))
    groups = [np.arange(q * 64, q * 64 + 64) for q in range(81)]  # one zone: 81 x 64 x 63 = 326,592 pairs
    with pytest.raises(limits.CostError) as e:
        collectives.time_collective(net, "alltoall", "direct", None, ADAPTIVE, groups=groups)
    assert str(e.value).startswith("326,592 transfers in a phase of alltoall/direct over 81 group(s) of 64 ranks; at most 100,000")
    import pickle  # the plan search raises it in a worker process and reads it in the parent

    assert str(pickle.loads(pickle.dumps(e.value))) == str(e.value)


@pytest.mark.parametrize("scheme", [ADAPTIVE, routing.Scheme("e16", "e-ecmp", 16)], ids=["sprayed", "hashed"])
def test_rings_keep_the_nvlink_hops_of_one_even_and_one_odd_rack(net, scheme, monkeypatch):
    g = 72
    for groups in ([np.arange(g * 15)], [np.arange(g * 16).reshape(-1, g)[k::2].reshape(-1) for k in (0, 1)]):
        G, m = len(groups), len(groups[0]) // g
        monkeypatch.setattr(blocks, "FOLD_RING", 1)
        ph = collectives.plan_groups(net, "allgather", "ring", groups)[0][0]
        assert len(ph.src) == G * g * m + 2 * g * (g - 1)  # a hop per ring and rack, and two racks' NVLink hops
        folded = collectives.time_collective(net, "allgather", "ring", None, scheme, groups=groups)
        monkeypatch.setattr(blocks, "FOLD_RING", 10**12)
        whole = collectives.time_collective(net, "allgather", "ring", None, scheme, groups=groups)
        assert len(collectives.plan_groups(net, "allgather", "ring", groups)[0][0].src) == G * g * g * m
        for a, b in zip(folded.phases, whole.phases):
            assert a.t_per_byte == pytest.approx(b.t_per_byte, rel=1e-12) and a.latency == pytest.approx(b.latency, rel=1e-12)
            assert (a.repeat, a.steps, a.net_steps) == (b.repeat, b.steps, b.net_steps) == (g * m - 1, g * m - 1, m - 1)
        assert folded.time(2.0**30) == pytest.approx(whole.time(2.0**30), rel=1e-12)


def test_the_campus_moe_step_is_the_same_folded_and_whole(design, net, monkeypatch):
    from twin.lang.scenario.job import Job
    from twin.lang.scenario.models import Case
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs

    w = design.spec.site.workloads[0]
    assert (w.name, w.dp, w.ep, w.moe.max_nodes) == ("deepseek-v3-campus", net.n_gpus, 64, 4)

    def step():
        return jobs.simulate_job(design, net, Job(workload=w.name), [ADAPTIVE], Library(), Case(name="c"), set(), None,
                                 ("jobs", 0))["schemes"][0]

    folded = step()
    monkeypatch.setattr(collectives, "REDUCE_BLOCKS", False)
    monkeypatch.setattr(blocks, "FOLD_RING", 10**12)
    whole = step()
    for k in ("step_s", "ep_s", "dp_s", "dp_exposed_s", "exposed_comm_s", "comm_latency_s"):
        assert folded[k] == pytest.approx(whole[k], rel=1e-12), k
    assert folded["comm_by_kind"]["ep_alltoall"]["total_s"] > 0 and folded["dp_s"] > 0


def test_a_job_past_the_limit_exits_2_with_a_located_refusal():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "TWIN_LIMITS": "collective_transfers=100"}
    p = subprocess.run([sys.executable, "-m", "twin", "simulate", "sites/lab-2zone.yaml", "--scenario", "scenarios/lab-job.yaml"],
                       cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert "scenarios/lab-job.yaml:9:16: jobs[0].workload: job lab-llama-8b (128 GPUs), scheme ecmp-1qp: 1,024 transfers in a phase of " \
           "allgather/ring over 16 group(s) of 8 ranks; at most 100 (limit collective_transfers" in " ".join(p.stderr.split())
