"""The GEMM rate by shape and the pipeline bubble on the stage that sets it (issue 35, item 1).

Known answers and their sources:
- [nvidia-gemm] s3: a GEMM's output is cut into tiles that run in waves of one per SM; a partial last wave
  leaves SMs idle. On 132 SMs ([hopper-wp]) an 2048 x 4096 output is 256 tiles of 256 x 128 (1.94 waves:
  97% busy), a 2048 x 3840 one 240 (1.82 waves: 91%).
- [megatron-sc21] s5.5, Fig. 16: a 91B GPT at (t, p) = (8, 8) on 64 A100s runs fastest at micro-batch 2 of
  the sizes measured (1, 2, 4, 8). The paper does not list the 91B model's shape; assumed: the width of its
  Table 1 76.1B row (hidden 10,240, 80 heads) with 72 layers, 91.1B by the paper's parameter count.
- 1F1B ([megatron-sc21] s2.2.1): the fill and drain pass one micro-batch through every other stage, so the
  bubble is their summed time; interleaved (s2.2.2), (p - 1) / v slots each as long as the slowest stage's.
"""

from __future__ import annotations

import dataclasses

import pytest

from twin.compiler.resolve.transformer import Shape
from twin.lang.catalog import builtin
from twin.twins.workload import compute
from twin.twins.workload.recipe import Recipe

GPT_91B = dict(layers=72, hidden_size=10240, heads=80, parameters=None)


def test_tiles_run_in_waves_of_the_sms():
    h = compute.Gpu(1e15, 3e12, 0.8, 64, 0.6, 256, 0.75, 0.9, sms=132)
    assert h.shape_factor(2048, 4096) == pytest.approx(256 / 264)  # 256 tiles on 2 waves of 132
    assert h.shape_factor(2048, 3840) == pytest.approx(240 / 264)
    assert h.shape_factor(8192, 8192) == pytest.approx(2048 / (16 * 132))  # 15.5 waves: the 16th partial
    # batched GEMMs share the waves: 12 heads of 512 x 512 (8 tiles each) fill 96 of 132 SMs in one
    # wave, below which the library splits K (the smooth factor)
    assert h.shape_factor(512, 512, batch=12) == pytest.approx(h.size_factor(512) ** 2)
    # without an SM count the smooth factor f(m) f(n) of the catalog's older entries
    g = dataclasses.replace(h, sms=0)
    assert g.shape_factor(2048, 3840) == pytest.approx(g.size_factor(2048) * g.size_factor(3840))
    # time follows: the same FLOPs in a partial wave take longer
    assert h.gemm(2048, 3840, 8192) / (3840 / 4096) > h.gemm(2048, 4096, 8192) * 1.05


def test_one_f_one_b_bubble_is_the_other_stages_and_interleaved_the_slowest():
    cat = builtin()
    gpu = compute.Gpu.of(cat.chassis["dgx-a100"], cat.stacks["megatron-lm-2021"].kernel_share)
    s = Shape(72, 10240, 40960, 80, 80, 51200, "gelu", "learned", True, True)
    r = Recipe(tp=8, pp=8, seq=2048, global_batch=512, recompute=("attention", "mlp", "norm"), sequence_parallel=False,
               fused_attention=False)
    c = compute.training(gpu, s, r)
    head = compute.head_work(gpu, s, 2048, 8, False).seconds + compute.head_work(gpu, s, 2048, 8, True).seconds
    assert c.layers == 9  # 72 layers on 8 stages; the last, with the output layer, is the slowest
    assert c.other_stages_s == pytest.approx(c.microbatch_s - head, rel=1e-9)
    assert c.bubble_s(8, 1) == pytest.approx(7 * (c.microbatch_s - head), rel=1e-9)
    assert c.bubble_s(8, 3) == pytest.approx(7 / 3 * c.microbatch_s, rel=1e-9)
    assert c.bubble_s(1, 1) == 0.0


@pytest.mark.slow
def test_megatron_91b_runs_fastest_at_micro_batch_two():
    """Slow (compiles selene-a100): the 91B GPT of [megatron-sc21] Fig. 16 on the Selene fabric, batch 512,
    the 1F1B schedule (v = 1), full recomputation, the megatron-lm-2021 stack."""
    from twin.lang.scenario.models import Case, Job
    from twin.twins.net import routing, topology
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs, validation

    d = validation._design("selene-a100")
    net = topology.from_design(d)
    base = next(w for w in d.spec.site.workloads if w.name == "gpt-145p6b")
    tflops = {}
    for mb in (1, 2, 4, 8):
        w = base.model_copy(update={**GPT_91B, "tp": 8, "pp": 8, "dp": 1, "global_batch": 512, "micro_batch": mb, "virtual_stages": 1})
        site = d.spec.site.model_copy(update={"workloads": [w]})
        dd = dataclasses.replace(d, spec=dataclasses.replace(d.spec, site=site))
        j = jobs.simulate_job(dd, net, Job(workload=w.name), [routing.Scheme("ftree", "static", 1)],
                              Library(nic_latency=d.spec.chassis.nic_latency), Case(name="mb"), set(), None, ("jobs", 0))
        tflops[mb] = j["schemes"][0]["predicted_convention_tflops_per_gpu"]
    assert max(tflops, key=tflops.get) == 2, tflops
    # each micro-batch size moves the step: per sequence, 2 runs its GEMMs faster than 1 (fewer partial waves)
    assert tflops[2] > 1.01 * tflops[1] and tflops[8] < 0.97 * tflops[2]
    assert all(140 < x < 185 for x in tflops.values())  # near Table 1 at this scale (145.6B at (8, 8): 148 TFLOPs/GPU)


def test_tp_overlap_hides_behind_the_gemms_and_the_breakdown_shows_it(lab):
    """Overlap is a recipe input by kind (stack default, workload override): with TP all-gathers and
    reduce-scatters overlapped, each hides all but its first of TP chunks while the layer's GEMMs last."""
    from test_job_recipe import run

    from twin.twins.net import topology

    net = topology.from_design(lab)
    off = run(lab, net, overlap_tp=[])["schemes"][0]
    on = run(lab, net, overlap_tp=["allgather", "reducescatter"])["schemes"][0]
    ag_off, ag_on = off["comm_by_kind"]["tp_allgather"], on["comm_by_kind"]["tp_allgather"]
    assert ag_off["hidden_s"] == 0 and ag_off["exposed_s"] == pytest.approx(ag_off["total_s"])
    assert ag_on["total_s"] == pytest.approx(ag_off["total_s"])  # the same traffic, less of it exposed
    assert ag_on["exposed_s"] == pytest.approx(ag_on["total_s"] / 8)  # TP8, GEMMs longer than the exchanges
    assert on["tp_s"] == pytest.approx(ag_on["exposed_s"] + on["comm_by_kind"]["tp_reducescatter"]["exposed_s"])
    assert on["step_s"] < off["step_s"]
    only_ag = run(lab, net, overlap_tp=["allgather"])["schemes"][0]["comm_by_kind"]
    assert only_ag["tp_reducescatter"]["hidden_s"] == 0 and only_ag["tp_allgather"]["hidden_s"] > 0


def test_a_scenario_job_overrides_any_recipe_field_checked_as_the_workload_is(lab):
    """Jobs as data (item 8): ``recipe:`` lays any recipe or stack field over the workload for one job."""
    from test_job_recipe import run

    from twin.lang.diagnostics import SpecError
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.net import topology
    from twin.twins.run import simulate

    scn, src = parse_scenario("""name: what-if
routing: [{name: e16, scheme: e-ecmp, qps: 16}]
jobs:
  - {workload: lab-llama-8b, recipe: {micro_batch: 2, recompute: full, stack: megatron-core-2025}}
""", "s.yaml")
    job = simulate(lab, scn, src).data["cases"][0]["jobs"][0]
    want = run(lab, topology.from_design(lab), micro_batch=2, recompute="full", stack="megatron-core-2025")
    assert (job["microbatches"], job["stack"], job["recipe"]["recompute"]) == (4, "megatron-core-2025", ["attention", "mlp", "experts", "norm"])
    assert job["schemes"][0]["step_s"] == pytest.approx(want["schemes"][0]["step_s"])
    scn, src = parse_scenario("""name: bad
routing: [{name: e16, scheme: e-ecmp, qps: 16}]
jobs:
  - workload: lab-llama-8b
    recipe: {micro_batch: 16}
""", "s.yaml")
    with pytest.raises(SpecError) as e:
        simulate(lab, scn, src)
    d = e.value.diagnostics[0]
    assert (d.file, d.line, d.dotted) == ("s.yaml", 5, "jobs[0].recipe.micro_batch") and "larger than the batch" in d.message


def test_dp_overlap_on_a_job_that_overlaps_nothing_is_a_located_error(lab):
    """Issue 35: a scenario's dp_overlap did nothing when the job's DP overlaps were off; it is now refused where it
    is written (exit 2), and accepted where an overlap is on."""
    from twin.lang.diagnostics import SpecError
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.run import simulate

    head = "name: x\nrouting: [{name: e16, scheme: e-ecmp, qps: 16}]\njobs:\n"
    scn, src = parse_scenario(head + "  - {workload: lab-llama-8b, dp_overlap: 0.5, overlap_grad_reduce: false, "
                              "overlap_param_gather: false}\n", "s.yaml")
    with pytest.raises(SpecError) as e:
        simulate(lab, scn, src)
    d = e.value.diagnostics[0]
    assert (d.file, d.line, d.col, d.dotted) == ("s.yaml", 4, 42, "jobs[0].dp_overlap") and "overlaps neither" in d.message
    scn, src = parse_scenario(head + "  - {workload: lab-llama-8b, dp_overlap: 0.5, overlap_param_gather: false}\n", "s.yaml")
    assert simulate(lab, scn, src).data["cases"][0]["jobs"][0]["schemes"][0]["step_s"] > 0
