"""A mixture of experts under data parallelism: every routed expert's gradients and optimizer state, not only
the experts a token visits.

A token passes through ``top_k`` of the ``experts`` routed experts, but every expert is trained: its weights
are held by the EP ranks, its gradients reduced over the data-parallel ranks that hold the same experts
(Megatron-Core's expert-data-parallel group; DeepSpeed-MoE, Rajbhandari et al. 2022, s4: "expert parallelism
... combined with data parallelism over the rest"), and the optimizer updates all of them. So the
data-parallel traffic, the ZeRO-3 gathers and the optimizer step grow with ``experts`` at a fixed ``top_k``,
while the compute per token does not.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_job_recipe import run

from twin.compiler.resolve import memory
from twin.compiler.resolve.transformer import MoeShape, Shape
from twin.lang.site.workload_models import Moe
from twin.twins.net import topology
from twin.twins.workload.comm import expert_dp_groups
from twin.twins.workload.moe import ep_groups

# DeepSeek-V3's layer shape (arXiv 2412.19437 s4.2: hidden 7168, 256 routed experts of FFN 2048, top-8, one shared)
DSV3 = Shape(layers=61, hidden=7168, ffn=18432, heads=128, kv_heads=128, vocab=129280,
             moe=MoeShape(experts=256, top_k=8, ffn=2048, shared=1))


@pytest.fixture(scope="module")
def lab_net(lab):
    return topology.from_design(lab)


def test_the_ranks_holding_the_same_experts_take_one_of_each_ep_group():
    grad = [np.arange(64), np.arange(64, 128)]
    edp = expert_dp_groups(grad, 8)
    assert len(edp) == 16 and all(len(x) == 8 for x in edp)
    assert sorted(np.concatenate(edp).tolist()) == list(range(128))
    for group in ep_groups(grad, 8):  # each EP group holds every expert once: one rank of each expert-DP group
        assert sorted(next(i for i, x in enumerate(edp) if r in x) for r in group.tolist()) == sorted(
            i for i, x in enumerate(edp) if set(x.tolist()) & set(group.tolist()))
        assert len({next(i for i, x in enumerate(edp) if r in x) for r in group.tolist()}) == 8
    assert expert_dp_groups(grad, 64) == []  # each rank's experts are its own: nothing to reduce


def test_every_expert_counts_in_the_parameters_a_rank_reduces():
    s = DSV3
    expert = 3 * 7168 * 2048
    assert s.routed_params == pytest.approx(61 * 256 * expert)
    # DeepSeek-V3 is 671B parameters of which 37B active (s1); this shape has all 61 layers MoE (the paper's
    # first three are dense) and plain attention for MLA, so it lands near, not on, those figures
    assert 640e9 < s.replicated_params + s.routed_params < 720e9
    assert 30e9 < s.matmul_params < 45e9
    # ZeRO-3's largest gathered layer: attention, router, shared expert (TP share) and the routed experts (EP share)
    rep, routed = s.zero3_layer(tp=1, ep=64)
    assert routed == pytest.approx(256 * expert / 64) and rep == pytest.approx(s.attn_params + 7168 * 256 + expert)


def test_zero3_memory_holds_the_gathered_experts():
    plan = memory.Plan(seq=4096, micro_batch=1, microbatches=16, tp=1, pp=16, dp=128, ep=1, zero=3)
    one = memory.training(DSV3, plan, 80e9)
    wide = memory.training(DSV3, memory.Plan(seq=4096, micro_batch=1, microbatches=16, tp=1, pp=16, dp=128, ep=64, zero=3), 80e9)
    expert = 3 * 7168 * 2048
    # two layers in flight, each with all 256 experts at EP 1 and 4 at EP 64
    assert one.weights - wide.weights == pytest.approx(memory.BF16 * 2 * 256 * expert * (1 - 1 / 64), rel=0.05)


def test_data_parallel_traffic_and_the_optimizer_grow_with_the_experts(lab, lab_net):
    """TP1 PP1 DP128 ZeRO-1 on the lab fabric: doubling the routed experts at top-2 leaves the compute per token
    alone and doubles the routed part of every data-parallel collective and of the optimizer step."""
    out = {}
    for e in (32, 64):
        for ep in (1, 8):
            r = run(lab, lab_net, tp=1, pp=1, dp=128, global_batch=128, zero=1, ep=ep,
                    moe=Moe(experts=e, top_k=2, expert_ffn_hidden_size=4096))
            out[e, ep] = r
    for ep in (1, 8):
        small, big = out[32, ep], out[64, ep]
        tok = [r["compute_s"] - r["optimizer_s"] for r in (small, big)]
        # the same FLOPs per token; half the tokens per expert make the grouped GEMMs smaller (GEMM rate by shape)
        assert tok[0] <= tok[1] < 1.1 * tok[0]
        dp = [r["schemes"][0]["dp_s"] for r in (small, big)]
        assert 1.6 < dp[1] / dp[0] < 2.05, dp  # the routed experts are most of the bytes; the rest is fixed
        assert 1.6 < big["optimizer_s"] / small["optimizer_s"] < 2.05


def test_overlapped_all_to_alls_hide_behind_a_layer_of_another_micro_batch(lab, lab_net):
    """DeepSeek-V3's DualPipe (arXiv 2412.19437 s3.2.1) runs a layer's dispatch and combine beside the forward
    and backward of another micro-batch's layer: the all-to-alls cost only what outlasts that compute. Top-8
    routing to small experts makes them outlast it over the NICs (EP16) and not inside a server (EP8)."""
    moe = Moe(experts=32, top_k=8, expert_ffn_hidden_size=64)
    got = {(ep, ov): run(lab, lab_net, tp=1, pp=1, dp=128, global_batch=128, moe=moe, ep=ep, overlap_ep=ov)
           for ep in (8, 16) for ov in (False, True)}
    kind = {k: r["schemes"][0]["comm_by_kind"]["ep_alltoall"] for k, r in got.items()}
    for ep in (8, 16):
        assert kind[ep, True]["total_s"] == pytest.approx(kind[ep, False]["total_s"])  # the same traffic
        assert kind[ep, False]["exposed_s"] == pytest.approx(kind[ep, False]["total_s"])  # none hidden without overlap
    assert kind[8, True]["exposed_s"] == 0.0  # NVLink all-to-alls shorter than a layer's compute
    r = got[16, True]
    layers, rounds = r["layers_on_slowest_stage"], r["microbatches"]
    hidden = (kind[16, False]["exposed_s"] - kind[16, True]["exposed_s"]) / (rounds * layers)  # per layer: its compute
    per_layer = (r["microbatch_forward_s"] + r["microbatch_backward_s"] + r["microbatch_recompute_s"]) / layers
    assert 0.8 * per_layer < hidden <= per_layer  # a layer's forward and backward (the output layer's share aside)
    assert kind[16, True]["exposed_s"] > 0
