"""recompute_layers: full recomputation of only the first N layers of each model chunk (Megatron-Core's
recompute_method: block with recompute_num_layers: N, "the number of transformer layers to recompute within each
pipeline stage"; NVIDIA's performance configurations state it, e.g. Megatron-Bridge's LLAMA3_8B H100 FP8 preset,
recompute_num_layers=5).

Closed forms held here, on the lab's Llama 3 8B (32 layers over PP 2: chunks of 16 layers): with N of a chunk's L
layers recomputed, the recomputation costs N / L of full recomputation's, the forward and backward are unchanged,
and the activations held are N / L of full recomputation's plus (1 - N / L) of none's (each layer keeps its input
only, or everything).
"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, compiled, twin_in_process
from twin.compiler.resolve import memory
from twin.compiler.resolve.transformer import Shape
from twin.lang.scenario.models import Case, Job
from twin.twins.net import routing, topology
from twin.twins.net.nccl import Library
from twin.twins.plan import measured
from twin.twins.plan.problem import Problem
from twin.twins.workload import jobs


@pytest.fixture(scope="module")
def lab_runs():
    lab = compiled("lab-2zone")
    net = topology.from_design(lab)
    scheme, lib = routing.site_scheme(lab.spec.fabric), Library(nic_latency=lab.spec.chassis.nic_latency)
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b")

    def run(**upd):
        wk = w.model_copy(update=upd)
        return jobs.simulate_job(lab, net, Job(workload=w.name), [scheme], lib, Case(name="r"), set(), None, ("jobs", 0), workload=wk)

    return lab, w, run


def test_the_recomputation_and_the_activations_are_the_share_of_full_recomputations(lab_runs):
    _, w, run = lab_runs
    none, full, part = run(recompute="none"), run(recompute="full"), run(recompute="full", recompute_layers=4)
    share = 4 / 16
    assert w.model_copy(update={"recompute": "full", "recompute_layers": 4}).recompute_share == share
    assert full["microbatch_recompute_s"] > 0 and part["microbatch_recompute_s"] == pytest.approx(share * full["microbatch_recompute_s"], rel=1e-9)
    assert (part["microbatch_forward_s"], part["microbatch_backward_s"]) == (full["microbatch_forward_s"], full["microbatch_backward_s"])
    a = {k: r["memory"]["activations_bytes"] for k, r in (("none", none), ("full", full), ("part", part))}
    assert a["full"] < a["part"] < a["none"]
    # the first stage holds 32 layer-micro-batches of 8,192 tokens (PP 2: two micro-batches of its 16 layers), each
    # layer keeping its input only (1,024 B a token at TP 8: the norm's input under sequence parallelism) or
    # everything (17,424 B), plus the working set of the one layer being recomputed
    s = Shape.of(w)
    keep_all, _ = memory.layer_bytes_per_token(s, memory.Plan.of(w.model_copy(update={"recompute": "none"})))
    keep_in, work = memory.layer_bytes_per_token(s, memory.Plan.of(w.model_copy(update={"recompute": "full"})))
    assert (keep_in, keep_all, work) == (1024.0, 17424.0, 17424.0)
    mix = share * keep_in + (1 - share) * keep_all
    assert a["part"] == pytest.approx(8192 * (mix * 32 + work - mix), rel=1e-12)
    # all of a chunk's layers is full recomputation
    assert run(recompute="full", recompute_layers=16)["schemes"][0]["step_s"] == pytest.approx(full["schemes"][0]["step_s"], rel=1e-12)


def test_the_search_leaves_it_to_the_workload_and_says_so(lab_runs):
    lab, w, _ = lab_runs
    p = Problem.of(lab, w.model_copy(update={"recompute": "full", "recompute_layers": 4}))
    why = measured.stated_plan(p)
    assert isinstance(why, str) and "recomputes 4 layer(s) of each model chunk" in why
    assert p.recipe({"tp": 8, "cp": 1, "pp": 2, "dp": 8, "ep": 1, "mb": 1, "v": 1, "rc": 2, "sp": 1, "zero": 0, "fp8": 0}).recompute_share == 1.0


def _spec(tmp_path, line: str):
    text = (ROOT / "sites" / "lab-2zone.yaml").read_text(encoding="utf-8")
    assert "    dp: 8\n" in text
    spec = tmp_path / "lab.yaml"
    spec.write_text(text.replace("    dp: 8\n", f"    dp: 8\n{line}", 1), encoding="utf-8")
    return spec


@pytest.mark.parametrize("line, said", [
    ("    recompute_layers: 4\n", "recompute is 'none'"),
    ("    recompute: full\n    recompute_layers: 17\n", "at most 16"),
])
def test_a_recompute_layers_the_workload_cannot_run_is_a_located_error(tmp_path, line, said):
    spec = _spec(tmp_path, line)
    r = twin_in_process("validate", str(spec))
    assert r.returncode == 2, r.stdout[-1000:] + r.stderr[-1000:]
    out = r.stdout + r.stderr
    assert said in out and "recompute_layers" in out and f"{spec}:" in out, out[-1500:]


def test_a_scenario_job_may_set_it_and_is_checked_as_a_workload(tmp_path):
    scn = tmp_path / "rl.yaml"
    scn.write_text("name: rl\nrouting:\n  - {name: site, scheme: site}\njobs:\n"
                   "  - {workload: lab-llama-8b, recipe: {recompute: full, recompute_layers: 4}}\n"
                   "  - {workload: lab-llama-8b, recipe: {recompute_layers: 4}}\n", encoding="utf-8")
    r = twin_in_process("simulate", str(ROOT / "sites" / "lab-2zone.yaml"), "--scenario", str(scn))
    assert r.returncode == 2, r.stdout[-1000:] + r.stderr[-1000:]
    out = r.stdout + r.stderr
    assert f"{scn}:6:" in out and "jobs[1].recipe.recompute_layers" in out and "recompute is 'none'" in out, out[-1500:]
