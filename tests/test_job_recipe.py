"""The training recipe as inputs of the job twin: recomputation, micro-batch, interleaving, ZeRO stages,
FP8, the software stack, mixture of experts; each reaching the step time and the memory.

Known answers and their sources:
- Narayanan et al. SC'21 ([megatron-sc21]) Eq. 3: hardware FLOPs of one iteration with full
  recomputation, ``96 B s l h^2 (1 + s / (6 h) + V / (16 l h))``: the FLOPs a GPT executes forward,
  again forward (recomputation) and backward, unfused attention over the full square.
- Korthikanti et al. 2022 ([korthikanti22]) s4, Table 2: activation bytes per layer ``s b h (34 + 5 a s / h)``
  without parallelism, ``s b h (10 + 24 / t + 5 a s / (h t))`` with tensor parallelism, ``s b h / t (34 + 5 a s / h)``
  with sequence parallelism too, ``34 s b h / t`` with selective recomputation.
- The interleaved 1F1B schedule ([megatron-sc21] s2.2.2) divides the pipeline bubble by the chunks per GPU.
"""

from __future__ import annotations

import dataclasses

import pytest

from twin.compiler.resolve import memory
from twin.compiler.resolve.transformer import Shape, megatron_eq3_flops
from twin.lang.scenario.models import Case, Job
from twin.lang.site.workload_models import Moe
from twin.twins.net import routing, topology
from twin.twins.net.nccl import Library
from twin.twins.workload import compute, jobs
from twin.twins.workload.recipe import Recipe

E16 = routing.Scheme("e16", "e-ecmp", 16)
GPT_1P7B = dict(layers=24, hidden=2304, ffn=9216, heads=24, kv_heads=24, vocab=51200, mlp="gelu", positions="learned",
                dropout=True, tied=True)


@pytest.fixture(scope="module")
def lab_net(lab):
    return topology.from_design(lab)


def run(design, net, stack: str | None = None, **fields) -> dict:
    """The lab workload with some recipe or model fields changed, timed on the lab fabric."""
    w = design.spec.site.workloads[0].model_copy(update=fields)
    site = design.spec.site.model_copy(update={"workloads": [w]})
    d = dataclasses.replace(design, spec=dataclasses.replace(design.spec, site=site))
    if stack is not None:
        w = w.model_copy(update={"stack": stack})
        d = dataclasses.replace(d, spec=dataclasses.replace(d.spec, site=site.model_copy(update={"workloads": [w]})))
    return jobs.simulate_job(d, net, Job(workload=w.name), [E16], Library(nic_latency=1e-6), Case(name="b"), set(), None, ("jobs", 0))


def test_full_recomputation_executes_megatron_eq3_flops(lab):
    s = Shape(**GPT_1P7B)
    gpu = jobs.gpu_of(lab, 1.0)
    full = Recipe(seq=2048, global_batch=1, recompute=("attention", "mlp", "experts", "norm"), fused_attention=False, sequence_parallel=False)
    c = compute.training(gpu, s, full)
    executed = c.forward.flops + c.recompute.flops + c.backward.flops
    assert executed == pytest.approx(megatron_eq3_flops(s, 2048, 1), rel=1e-9)  # Eq. 3 for one sequence
    none = compute.training(gpu, s, dataclasses.replace(full, recompute=()))
    assert none.recompute.flops == 0
    # the recomputed forward is every layer's forward (the output layer is not recomputed): 4/3 of the work
    assert c.recompute.flops == pytest.approx(none.forward.flops - compute.head_work(gpu, s, 2048, 1, False).flops)
    assert 1.3 < c.microbatch_s / none.microbatch_s < 1.4  # about 4/3: forward, forward again, backward (2x)
    # selective recomputation reruns the s^2 part only: cheap against full recomputation for a large model
    # ([korthikanti22] s5), not for a small one with many heads per hidden unit
    g3 = Shape(96, 12288, 49152, 96, 96, 51200, "gelu", "learned", True, True)
    tp8 = dataclasses.replace(full, tp=8, sequence_parallel=True)
    big_full = compute.training(gpu, g3, tp8).recompute.seconds
    big_sel = compute.training(gpu, g3, dataclasses.replace(tp8, recompute=("core-attention",))).recompute.seconds
    small_sel = compute.training(gpu, s, dataclasses.replace(full, recompute=("core-attention",))).recompute.seconds
    assert 0 < big_sel < 0.2 * big_full and small_sel > 0.3 * c.recompute.seconds


def test_activation_bytes_follow_korthikanti_table_2():
    s = Shape(**GPT_1P7B)
    h, a, seq = 2304, 24, 2048
    for tp, sp, recompute, want in (
        (1, False, (), 34 * h + 5 * a * seq),
        (8, False, (), h * (10 + 24 / 8) + 5 * a * seq / 8),
        (8, True, (), (34 * h + 5 * a * seq) / 8),
        (8, True, ("core-attention",), 34 * h / 8),
    ):
        kept, _ = memory.layer_bytes_per_token(s, memory.Plan(seq=seq, tp=tp, sequence_parallel=sp, recompute=recompute, fused_attention=False))
        assert kept == pytest.approx(want), (tp, sp, recompute)
    full, work = memory.layer_bytes_per_token(s, memory.Plan(seq=seq, tp=8, recompute=("attention", "mlp", "norm"), fused_attention=False))
    assert full == pytest.approx(2 * h / 8) and work == pytest.approx((34 * h + 5 * a * seq) / 8)  # the layer's input only


def test_micro_batch_and_interleaving_reach_the_step_and_memory(lab, lab_net):
    base = run(lab, lab_net)
    two = run(lab, lab_net, micro_batch=2)
    assert (base["microbatches"], two["microbatches"]) == (8, 4)
    assert two["compute_s"] == pytest.approx(base["compute_s"], rel=0.05)  # same work in fewer, larger micro-batches
    assert two["bubble_s"] == pytest.approx(2 * base["bubble_s"], rel=0.05)  # (PP - 1) x a micro-batch twice as long
    assert two["memory"]["activations_bytes"] == pytest.approx(2 * base["memory"]["activations_bytes"], rel=0.01)
    v4 = run(lab, lab_net, virtual_stages=4)
    pp = lab.spec.site.workloads[0].pp
    slowest = v4["microbatch_forward_s"] + v4["microbatch_backward_s"] + v4["microbatch_recompute_s"]
    assert v4["bubble_s"] == pytest.approx((pp - 1) / 4 * slowest)  # interleaved: the slowest stage sets every slot
    # 1F1B: one micro-batch through every other stage (no output layer on them): below PP - 1 of the slowest's
    assert 0.5 * (pp - 1) * slowest < base["bubble_s"] < (pp - 1) * slowest
    assert v4["memory"]["microbatches_in_flight"] > base["memory"]["microbatches_in_flight"]  # PP + (PP - 1) / v
    rc = run(lab, lab_net, recompute="full")
    assert rc["microbatch_recompute_s"] > 0.3 * rc["microbatch_forward_s"]
    assert rc["memory"]["activations_bytes"] < 0.2 * base["memory"]["activations_bytes"]


def test_zero3_loses_throughput_as_data_parallelism_grows(lab, lab_net):
    """TP1 PP1, four micro-batches of one 1K-token sequence per GPU (weak scaling): ZeRO 3 gathers every
    layer's weights forward and backward per micro-batch over all DP ranks; the compute per GPU stays,
    each ring all-gather takes DP - 1 steps, so the gathers hide less and less behind a layer's compute,
    and every micro-batch's first gather and last reduce-scatter grow. ZeRO 1 gathers and reduces once
    per step."""
    rate = {}
    for zero in (1, 3):
        for dp in (8, 16, 32, 64, 128):
            r = run(lab, lab_net, tp=1, pp=1, dp=dp, global_batch=4 * dp, zero=zero, sequence_length=1024)
            rate[zero, dp] = r["schemes"][0]["predicted_tflops_per_gpu"]
    z3 = [rate[3, dp] for dp in (8, 16, 32, 64, 128)]
    assert all(a > b for a, b in zip(z3, z3[1:])), z3
    assert z3[-1] < 0.8 * z3[0]
    assert all(rate[1, dp] > rate[3, dp] for dp in (8, 16, 32, 64, 128))
    z1 = [rate[1, dp] for dp in (8, 16, 32, 64, 128)]
    assert max(z1) / min(z1) < 1.05  # once per step, overlapped: nearly flat


def test_zero_stages_shard_model_state():
    s = Shape(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256)
    m = {z: memory.training(s, memory.Plan(seq=8192, tp=8, pp=2, dp=8, microbatches=8, zero=z), 80e9) for z in range(4)}
    n = m[0].weights / 2
    assert m[0].optimizer == pytest.approx(12 * n) and m[1].optimizer == pytest.approx(12 * n / 8)  # ZeRO-SC20 s5.1
    assert m[1].grads == m[0].grads > m[2].grads and m[2].weights == m[1].weights > m[3].weights
    assert m[0].state > m[1].state > m[2].state > m[3].state


def test_fp8_gemms_run_at_the_fp8_rate(lab, lab_net):
    base = run(lab, lab_net)
    fp8 = run(lab, lab_net, fp8="linear")
    g0, g8 = base["compute_breakdown_s"]["gemm_s"], fp8["compute_breakdown_s"]["gemm_s"]
    assert 0.5 < g8 / g0 < 0.8  # 1,979 x 0.76 against 989 x 0.83 TFLOPs, plus the memory roof of skinny GEMMs
    assert fp8["compute_breakdown_s"]["memory_s"] > base["compute_breakdown_s"]["memory_s"]  # the casts
    assert fp8["recipe"]["fp8"] == ["qkv", "proj", "fc1", "fc2", "experts"]


def test_the_stack_is_an_input_apart_from_the_gpu(lab, lab_net):
    meta = run(lab, lab_net)
    assert (meta["stack"], meta["stack_defaulted"], meta["recipe"]["attention"]) == ("meta-production-2024", True, "fused")
    old = run(lab, lab_net, stack="megatron-lm-2021")
    assert (old["stack"], old["stack_defaulted"], old["recipe"]["attention"]) == ("megatron-lm-2021", False, "unfused")
    assert old["recipe"]["overlap_grad_reduce"] is False and old["recipe"]["kernel_share"] > meta["recipe"]["kernel_share"]
    # at 8K tokens the unfused scores (heads x 8K x 8K per sequence) cost more than the stack's kernel share saves
    assert old["compute_breakdown_s"]["memory_s"] > 3 * meta["compute_breakdown_s"]["memory_s"]
    assert old["compute_s"] > meta["compute_s"]


def test_moe_all_to_all_grows_when_expert_parallelism_leaves_the_server(lab, lab_net):
    """TP1 PP1 DP128: expert-parallel groups are runs of EP consecutive GPUs. EP8 stays in one server
    (NVLink); EP16 and EP32 send 8/15 and 24/31 of every all-to-all over the 400G NICs."""
    moe = Moe(experts=32, top_k=2, expert_ffn_hidden_size=4096)
    ep = {e: run(lab, lab_net, tp=1, pp=1, dp=128, global_batch=128, moe=moe, ep=e) for e in (8, 16, 32)}
    t = {e: r["schemes"][0]["ep_s"] for e, r in ep.items()}
    assert 0 < t[8] < t[16] < t[32], t
    assert t[16] > 3 * t[8]  # leaving NVLink for the fabric
    tokens = {e: r["compute_s"] - r["optimizer_s"] for e, r in ep.items()}
    assert tokens[8] == pytest.approx(tokens[32], rel=0.05)  # the experts' work on the tokens does not depend on EP
    # but the optimizer updates every expert a GPU holds: 4 of the 32 at EP8, 1 at EP32 (the replicated rest alike)
    assert ep[8]["recipe"]["zero"] == 0
    shape = Shape.of(lab.spec.site.workloads[0].model_copy(update={"moe": moe}))
    own = {e: shape.replicated_params + shape.routed_params / e for e in (8, 32)}
    assert ep[8]["optimizer_s"] / ep[32]["optimizer_s"] == pytest.approx(own[8] / own[32], rel=1e-6)
    dense = run(lab, lab_net, tp=1, pp=1, dp=128, global_batch=128)
    assert dense["schemes"][0]["ep_s"] == 0.0
