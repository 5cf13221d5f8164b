"""A scenario's ``plan: best`` job (twin/twins/plan/best.py): twin simulate times the plan search's pick on the
design it runs on, the recipe's plan fields pin the search, and a job that no plan fits is a located error."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, twin_in_process, unwrap
from twin.analysis.figures import read_path
from twin.lang.scenario.models import parse_scenario
from twin.twins.plan import answer
from twin.twins.plan.problem import Problem
from twin.twins.run import simulate

LAB = ROOT / "sites" / "lab-2zone.yaml"
SCENARIO = """
name: lab-best
routing:
  - {name: site, scheme: site}
jobs:
  - {workload: lab-llama-8b}
  - {workload: lab-llama-8b, plan: best, recipe: {recompute: none, fp8: none}}
  - {workload: lab-llama-8b, plan: best, recipe: {tp: 8, recompute: none, fp8: none, global_batch: 128}, dims: tp-pp-cp-dp}
"""


def test_plan_best_times_the_search_pick(lab):
    scn, src = parse_scenario(SCENARIO, "best.yaml")
    data = simulate(lab, scn, src).data
    written, best, pinned = data["cases"][0]["jobs"]
    plans = data["plans"]
    assert [p["job"] for p in plans] == [1, 2]
    for job, pl in zip((best, pinned), plans):
        # the job twin times exactly the plan the search picked, at the step it predicted
        assert job["schemes"][0]["step_s"] == pytest.approx(pl["predicted_step_s"], rel=1e-9)
        assert job["parallelism"].startswith(f"TP{pl['plan']['tp']} CP{pl['plan']['cp']} PP{pl['plan']['pp']} DP{pl['plan']['dp']}")
        assert job["dims"] == pl["plan"]["dims"] and pl["plan"]["fp8"] == "none" and pl["plan"]["recompute"] == "none"
        sp = pl["space"]
        assert sp["enumerated"] == sp["feasible"] + sum(sp["pruned"].values())
    # the search's pick is never slower than the plan the workload wrote (same model, batch and settings)
    assert best["schemes"][0]["step_s"] <= written["schemes"][0]["step_s"] * (1 + 1e-9)
    # the pins hold: TP 8 and the stated rank order; the recipe's global batch reached the search
    assert plans[1]["plan"]["tp"] == 8 and plans[1]["plan"]["dims"] == "tp-pp-cp-dp" and pinned["tokens_per_step"] == 128 * 8192
    # the pick is the best the search can find: the plan twin plan gives for the same question
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b")
    p = Problem.of(lab, w)
    direct = answer.answer(p, {"recompute": "none", "fp8": 0}, top=5)
    assert direct["plans"][0]["label"] == plans[0]["pick"]
    # a sweep reads the pick by its path
    assert read_path(data, "plans[0].pick") == plans[0]["pick"]


@pytest.mark.parametrize("job,needle", [
    ("{workload: lab-llama-8b, plan: best, recipe: {tp: 3}}", "jobs[0].plan: plan: best for lab-llama-8b on 128 GPUs: no plan has the pinned values (tp=3)"),
    ("{workload: lab-llama-8b, plan: best, recipe: {recompute: [mlp]}}", "jobs[0].recipe.recompute: plan: best searches recompute"),
    ("{workload: lab-llama-8b, plan: fastest}", "jobs[0].plan"),
])
def test_plan_best_bad_input_is_located_exit_2(tmp_path, job, needle):
    f = tmp_path / "s.yaml"
    f.write_text(f"name: bad\nrouting:\n  - {{name: site, scheme: site}}\njobs:\n  - {job}\n", encoding="utf-8")
    r = twin_in_process("simulate", LAB, "--scenario", f)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_plan_best_in_json_envelope(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO, encoding="utf-8")
    r = twin_in_process("simulate", LAB, "--scenario", f, "--json")
    assert r.returncode == 0, r.stderr
    res = unwrap(r.stdout)
    assert res["status"] == "ok" and len(res["plans"]) == 2 and res["plans"][0]["pick"].startswith("TP")
