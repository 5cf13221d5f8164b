"""Activations the first pipeline stage holds at its peak (:func:`twin.compiler.resolve.memory.held_layers`).

Known answers:
- Megatron-LM's interleaved 1F1B schedule ([megatron-sc21] s2.2.2; its code's warm-up on rank 0,
  ``2 (PP - 1) + (v - 1) PP`` forwards, PP micro-batches per model chunk in turn, then one forward and one
  backward at a time, backwards from the last chunk): a step-by-step simulation of rank 0 gives the peak the
  closed form gives, for every stage layout, micro-batch count and chunk count tried.
- [llama3] s3.3.2: 126 layers on 16 stages, the first and the last one layer fewer, and "the first model chunk
  on the first stage has only the embedding": with one layer per chunk (v 8) the stage holds 7 x 16 = 112
  layer-micro-batches at its peak, not 143 (eight full chunks) or 125 (seven layers spread over eight).
"""

from __future__ import annotations

import pytest

from twin.compiler.resolve import memory


def simulated_peak(pp: int, v: int, m: int, layers: int) -> int:
    """Rank 0 of the interleaved schedule, one forward or backward at a time: the most layer-micro-batches of
    activations held after any forward (a backward frees its chunk's)."""
    first, full, _ = memory.stage_layers(layers, pp)
    per_chunk = [full // v] * v
    per_chunk[0] -= full - first  # the short chunk is the first, with the embedding
    warm = min(m * v, 2 * (pp - 1) + (v - 1) * pp)
    held = peak = k = j = 0
    for step in range(m * v):
        held += per_chunk[(k // pp) % v]
        k += 1
        peak = max(peak, held)
        if step >= warm:
            held -= per_chunk[v - 1 - (j // pp) % v]
            j += 1
    return peak


@pytest.mark.parametrize("layers", [126, 128, 96, 105, 61])
def test_the_closed_form_is_the_schedules_peak(layers):
    tried = 0
    for pp in range(2, 33):
        first, full, _ = memory.stage_layers(layers, pp)
        for v in (x for x in range(2, full + 1) if full % x == 0):
            for m in sorted({1, 2, pp - 1, pp, pp + 1, 2 * pp, 3 * pp, 5 * pp + 3} - {0}):
                got = memory.held_layers(memory.Plan(2048, 1, m, pp=pp, virtual_stages=v), layers)
                assert got == simulated_peak(pp, v, m, layers), (layers, pp, v, m)
                tried += 1
    assert tried > 100


def test_llama3_first_stage_holds_seven_layers_of_sixteen_micro_batches():
    plan = lambda m: memory.Plan(8192, 1, m, pp=16, virtual_stages=8)  # noqa: E731
    assert memory.stage_layers(126, 16) == (7, 8, 7)
    assert memory.held_layers(plan(16), 126) == 112 == memory.held_layers(plan(32), 126)
    assert memory.held_layers(plan(32), 128) == 143  # eight full chunks: the warm-up's 143 forwards, one layer each
    assert memory.held_layers(plan(32), 126) / 7 == pytest.approx(16.0)  # micro-batches' worth of the stage's 7 layers
    # without a pipeline, 1F1B and DualPipe the layout does not matter
    assert memory.held_layers(memory.Plan(8192, 1, 32, pp=16), 126) == 16 * 7
    assert memory.held_layers(memory.Plan(8192, 1, 32, pp=16, dualpipe=True), 126) == 17 * 7
    assert memory.held_layers(memory.Plan(8192, 1, 32), 126) == 126


def test_llama3_table4_plans_fit_with_fp32_gradients_accumulated_whole(meta24k):
    """[llama3] s3.3.2: FP32 gradients, accumulated over the micro-batches and reduce-scattered once a step (ZeRO 1),
    on an H100's HBM as CUDA reports it less the reserve: the 8,192-GPU row (32 micro-batches) needs 78.6 GB."""
    from twin.compiler.resolve.transformer import Shape
    from twin.twins.workload.recipe import Recipe

    stacks = meta24k.spec.catalog.stacks
    hbm = 81559 * 2**20
    need = {}
    for w in meta24k.spec.site.workloads:
        r = Recipe.of(w, stacks)
        assert r.grad_bytes == 4.0 and w.zero == 1
        m = memory.training(Shape.of(w), memory.Plan.of(w, grad_bytes=r.grad_bytes), hbm)
        assert m.fits, (w.name, m.total)
        need[w.name] = m.total
    assert need["llama3-405b-8k"] == pytest.approx(78.6e9, abs=0.05e9)
    # the 125 layer-micro-batches of seven layers spread over eight chunks (16 + 15 forwards on the empty one)
    # would put it at 85.6 GB, over the 82.5 the reserve leaves
    w = next(x for x in meta24k.spec.site.workloads if x.name == "llama3-405b-8k")
    m = memory.training(Shape.of(w), memory.Plan.of(w, grad_bytes=4.0), hbm)
    assert m.activations * (143 * 7 / 8) / 112 + m.total - m.activations > hbm - memory.RESERVE_BYTES


def test_fp32_reduce_scatters_after_every_micro_batch_would_not_hide(meta24k):
    """Why the rows are ZeRO 1: at ZeRO 2 each micro-batch's FP32 reduce-scatter (12.7 GB per GPU over 64 servers)
    outlasts that micro-batch's backward, and the exposed part alone is over half the measured step; reduced once a
    step, the gradients cost under 3% of it."""
    from twin.lang.scenario.models import Case, Job
    from twin.twins.net import routing, topology
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs

    net = topology.from_design(meta24k)
    scheme = routing.site_scheme(meta24k.spec.fabric)
    lib = Library(nic_latency=meta24k.spec.chassis.nic_latency)
    measured = 2048 * 8192 * 6 * 405e9 / (8192 * 430e12)  # Table 4 row 1 in its model-FLOPs convention, about 12 s
    out = {}
    for zero in (1, 2):
        r = jobs.simulate_job(meta24k, net, Job(workload="llama3-405b-8k", recipe={"zero": zero}), [scheme], lib, Case(name="z"),
                              set(), None, ("jobs", 0))
        out[zero] = r["schemes"][0]["dp_exposed_s"]
    assert out[2] > 0.5 * measured > 0.03 * measured > out[1], out
