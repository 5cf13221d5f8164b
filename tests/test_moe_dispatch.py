"""Node-limited routing (DeepSeek-V3, arXiv 2412.19437 s3.2.2): a token is sent once to each NVLink domain
holding its experts, at most ``max_nodes`` of them, to the GPU with its own index there, which forwards it
over NVLink. Known answers: the bytes each phase moves (closed form from the routing) and the network
traffic's drop against one copy per expert."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twin.twins.net import collectives as coll
from twin.twins.net import dispatch, routing, topology
from twin.twins.net.nccl import Library

E16 = routing.Scheme("e16", "e-ecmp", 16)


@pytest.fixture(scope="module")
def lab_net(lab):
    return topology.from_design(lab)


def test_two_phases_move_what_the_routing_sends(lab_net):
    net = lab_net
    ranks = np.arange(32)  # four 8-GPU servers (NVLink domains) of the lab
    assert len(np.unique(net.domain[ranks])) == 4
    share = dispatch.distinct_domains(4, 8, 2) / 8  # top-8 over 4 domains, at most 2: 2 copies of 8 cross
    assert share == 0.25
    p1, p2 = coll.plan(net, "alltoall", dispatch.algorithm(share), ranks)[0]
    cross = net.domain[p1.src] != net.domain[p1.dst]
    # phase 1: to its counterpart (same index in the domain) in each of the 3 other domains, S x share / 4 each
    assert np.all(net.gpu_local[p1.src[cross]] == net.gpu_local[p1.dst[cross]])
    assert p1.frac[cross].sum() == pytest.approx(32 * 3 * share / 4)
    assert p1.frac[~cross].sum() == pytest.approx(32 * 7 / 32)  # inside its own domain: S / n to each peer
    # phase 2: over NVLink only, each remote sender's S / n to every peer of the domain but the counterpart
    assert np.all(net.domain[p2.src] == net.domain[p2.dst])
    assert p2.frac.sum() == pytest.approx(32 * 24 / 32 - 32 * 3 / 32)


def test_node_limited_routing_cuts_the_network_traffic(lab_net):
    lib = Library(nic_latency=1e-6)
    groups = [np.arange(32), np.arange(32, 64)]
    direct = coll.time_collective(lab_net, "alltoall", "direct", None, E16, groups=groups, lib=lib)
    limited = coll.time_collective(lab_net, "alltoall", dispatch.algorithm(0.25), None, E16, groups=groups, lib=lib)
    size = 256e6
    # one copy per expert puts 24/32 of S on the NICs; node-limited 0.25 x 3/4: 4x less, plus an NVLink phase
    ratio = direct.time(size) / limited.time(size)
    assert 2.5 < ratio < 4.2, ratio


def test_a_group_inside_one_domain_runs_direct(lab_net):
    phases, _ = coll.plan(lab_net, "alltoall", dispatch.algorithm(0.5), np.arange(8))
    assert len(phases) == 1
    with pytest.raises(ValueError):
        dispatch.share_of("node-limited:1.5")


def test_dualpipe_bubble_and_memory_are_deepseek_table_2():
    """DeepSeek-V3 Table 2: bubble (PP/2 - 1)(F&B + B - 3W) against 1F1B's (PP - 1)(F + B); two copies of the
    parameters; PP + 1 micro-batches' activations against PP."""
    from twin.compiler.resolve import memory
    from twin.compiler.resolve.transformer import Shape
    from twin.twins.workload.compute import dualpipe_bubble

    f, b = 1.0, 2.0  # a stage's forward and full backward; W = b / 2, F&B = f + b
    assert dualpipe_bubble(16, f, b) == pytest.approx((16 / 2 - 1) * ((f + b) + b - 3 * b / 2))
    assert dualpipe_bubble(16, f, b) < (16 - 1) * (f + b) / 3
    s = Shape(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256)
    one = memory.Plan(seq=4096, micro_batch=1, microbatches=32, pp=8, dp=16, zero=1)
    two = memory.Plan(seq=4096, micro_batch=1, microbatches=32, pp=8, dp=16, zero=1, dualpipe=True)
    m1, m2 = memory.training(s, one, 80e9), memory.training(s, two, 80e9)
    assert (m1.inflight, m2.inflight) == (8, 9)
    assert m2.weights == pytest.approx(2 * m1.weights) and m2.optimizer == pytest.approx(2 * m1.optimizer)
    assert m2.activations == pytest.approx(m1.activations * 9 / 8)


def test_dualpipe_reaches_the_step_and_the_search(lab, lab_net):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_job_recipe import run

    base = dict(tp=1, pp=4, dp=32, global_batch=256, virtual_stages=1)
    one = run(lab, lab_net, **base)
    two = run(lab, lab_net, **base, pipeline_schedule="dualpipe")
    # GPU i runs stage i one way and stage PP - 1 - i the other ([deepseek-v3] s3.2.1), so the end GPUs carry half
    # the output layer each and the slowest GPU is lighter than 1F1B's last stage: with 32 layers on 4 stages
    # (8 each), 1F1B's slowest is 8 layers + the head, DualPipe's 8 layers + half of it. The layer's and the
    # head's forward seconds from two 1F1B runs: PP 2 (16 + head) and PP 4 (8 + head).
    half = run(lab, lab_net, **{**base, "pp": 2, "dp": 64})
    layer = (half["microbatch_forward_s"] - one["microbatch_forward_s"]) / 8
    head = one["microbatch_forward_s"] - 8 * layer
    assert layer > 0 and head > 0
    assert two["microbatch_forward_s"] == pytest.approx(8 * layer + head / 2, rel=1e-9)
    assert two["compute_s"] < one["compute_s"]
    f, b = two["microbatch_forward_s"], two["microbatch_backward_s"] + two["microbatch_recompute_s"]
    assert two["bubble_s"] == pytest.approx((4 / 2 - 1) * (f + b / 2))
    assert two["bubble_s"] < one["bubble_s"]
    assert two["memory"]["weights_bytes"] == pytest.approx(2 * one["memory"]["weights_bytes"])


def test_the_forwarding_runs_beside_the_network_phase(lab_net):
    """DeepSeek-V3 s3.2.2: the network sends, the IB-to-NVLink forwarding and the NVLink receives run on warps of
    their own at once, so the dispatch takes the longer of its two phases, not their sum."""
    net, ranks = lab_net, np.arange(32)
    p1, p2 = coll.plan(net, "alltoall", dispatch.algorithm(0.25), ranks)[0]
    assert not p1.beside and p2.beside
    c = coll.time_collective(net, "alltoall", dispatch.algorithm(0.25), ranks, E16, lib=Library()).cost
    one = [dataclasses.replace(c, phases=[ph]) for ph in c.phases]  # each phase as a collective of its own
    for size in (1e6, 1e8, 1e9):
        alone = [x.time(size, "Simple") for x in one]
        assert c.time(size, "Simple") == pytest.approx(max(alone), rel=1e-12) and max(alone) < sum(alone)
    assert c.t_per_byte == pytest.approx(max(ph.repeat * ph.t_per_byte for ph in c.phases), rel=1e-12)
