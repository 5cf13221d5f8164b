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
  - {workload: lab-llama-8b, plan: best, recipe: {tp: 8, pp: 2, recompute: none, fp8: none, global_batch: 128}, dims: tp-dp-cp-pp}
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
    # the pins hold: TP 8, PP 2 and the stated rank order (the pick's dimensions above 1 in its sequence, named with CP
    # of size 1 in its place of tp-cp-pp-dp); the recipe's global batch reached the search
    pick = plans[1]["plan"]
    assert (pick["tp"], pick["pp"], pick["cp"]) == (8, 2, 1) and pick["dims"] == "tp-cp-dp-pp" and pinned["tokens_per_step"] == 128 * 8192
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


def test_a_sweep_judges_each_variant_at_its_own_best_plan(lab, tmp_path):
    """twin sweep on a real Dask cluster (one worker process): each variant of the global batch searches its
    own plan; the base variant's row is the pick twin plan gives for the same question, at its step."""
    import pyarrow.parquet as pq

    from twin.sweep import engine
    from twin.sweep.load import load_sweep
    from twin.sweep.output import write

    (tmp_path / "lab-2zone.yaml").write_bytes(LAB.read_bytes())
    f = tmp_path / "s.yaml"
    f.write_text("name: best\nsite: lab-2zone.yaml\nplacement: naive\nscenario:\n  name: lab-best\n  routing:\n"
                 "    - {name: site, scheme: site}\n  jobs:\n    - {workload: lab-llama-8b, plan: best, recipe: {recompute: none, fp8: none}}\n"
                 "axes:\n  - path: workloads[0].global_batch\n    values: [64, 256]\n"
                 "figures: [step_time_s, tokens_per_day, 'sim:plans[0].pick', 'sim:plans[0].plan.dp', 'sim:plans[0].plan.micro_batch']\n",
                 encoding="utf-8")
    sw = load_sweep(f)
    write(sw, engine.run(sw, tmp_path / "out", workers=1), tmp_path / "out")
    rows = pq.read_table(tmp_path / "out" / "results.parquet").to_pylist()
    assert [r["status"] for r in rows] == ["ok", "ok"], [r.get("error") for r in rows]
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b")
    direct = answer.answer(Problem.of(lab, w), {"recompute": "none", "fp8": 0}, top=5)["plans"][0]
    assert rows[0]["sim:plans[0].pick"] == direct["label"] and rows[0]["step_time_s"] == pytest.approx(direct["step_s"], rel=1e-9)
    for r, batch in zip(rows, (64, 256)):  # each variant's pick splits its own batch
        assert batch % (r["sim:plans[0].plan.dp"] * r["sim:plans[0].plan.micro_batch"]) == 0
        assert r["tokens_per_day"] == pytest.approx(batch * 8192 * 86400 / r["step_time_s"], rel=1e-12)
