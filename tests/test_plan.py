"""twin plan: the plan space against a brute force, the fast stage against the full job twin, branch and
bound against scoring everything, the answer's structure, a written plan run back through twin simulate,
bad input, and the published answers (Megatron-LM SC'21 [megatron-sc21])."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.conftest import ROOT, twin_in_process, unwrap
from twin.compiler.resolve import memory
from twin.twins.plan import answer, fast, search, tables
from twin.twins.plan.problem import Problem, row
from twin.twins.plan.space import ORDERS, Axes, Space, divisors, orders_of

LAB = ROOT / "sites" / "lab-2zone.yaml"


def brute(ax: Axes) -> tuple[set, int]:
    """Every plan of ``ax`` by nested loops and the rules as the frameworks state them: (survivors, enumerated)."""
    keep, n = set(), 0
    for tp, cp, pp in itertools.product(divisors(ax.gpus), repeat=3):
        if ax.gpus % (tp * cp * pp) or pp > ax.layers or cp & (cp - 1):
            continue
        dp = ax.gpus // (tp * cp * pp)
        longest = -(-ax.layers // pp) if ax.uneven else ax.layers // pp
        for v in [1] + ([x for x in divisors(longest) if x > 1] if pp > 1 else []):
            for mb in [m for m in divisors(max(1, ax.batch // dp))]:
                for o in orders_of({"tp": tp, "cp": cp, "pp": pp, "dp": dp}):
                    for rc, z, sp in itertools.product(range(3), range(4), range(2)):
                        if (sp and tp == 1) or (z and dp * cp == 1):
                            continue
                        n += 1
                        ok = (ax.heads % tp == 0 and ax.ffn % tp == 0 and (ax.kv_heads % tp == 0 or tp % ax.kv_heads == 0)
                              and (cp == 1 or ax.seq % (2 * cp) == 0) and ax.batch % (dp * mb) == 0
                              and (v == 1 or ((ax.uneven or ax.layers % (pp * v) == 0) and (ax.batch // (dp * mb)) % pp == 0))
                              and not (z >= 2 and pp > 1))
                        if ok:
                            keep.add((tp, cp, pp, dp, v, mb, o, rc, z, sp))
    return keep, n


@pytest.mark.parametrize("layers,uneven", [(8, False), (10, True)])
def test_the_space_is_every_plan_the_rules_allow(layers, uneven):
    """The numpy enumeration equals a brute force over the same axes: the same survivors, every other plan
    counted once under a rule (a stack with uneven stages: 10 layers on PP 4 hold 3, 3, 2, 2)."""
    ax = Axes(gpus=16, layers=layers, heads=8, kv_heads=2, ffn=48, seq=96, batch=16, uneven=uneven)
    sp = Space.of(ax)
    got = {tuple(int(sp.cols[k][i]) for k in ("tp", "cp", "pp", "dp", "v", "mb", "order", "rc", "zero", "sp")) for i in range(sp.size)}
    want, n = brute(ax)
    assert got == want and sp.size == len(want)
    assert sp.enumerated == n and sum(sp.pruned.values()) == n - len(want)
    assert sp.pruned["tp"] > 0 and sp.pruned["interleave"] > 0 and sp.pruned["zero-pp"] > 0
    assert ORDERS[0] == "tp-cp-pp-dp"
    # pins narrow the space to their values
    pinned = Space.of(Axes(**{**ax.__dict__, "fixed": {"tp": 2, "zero": [0, 1], "recompute": "none"}}))
    assert set(pinned.cols["tp"].tolist()) == {2} and set(pinned.cols["zero"].tolist()) <= {0, 1} and set(pinned.cols["rc"].tolist()) == {0}


@pytest.fixture(scope="module")
def lab_problem(lab):
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b")
    return Problem.of(lab, w)


@pytest.fixture(scope="module")
def lab_search(lab_problem):
    # a slice of the space the tests can also score whole: no FP8, ZeRO 0 or 1
    return search.search(lab_problem, {"fp8": 0, "zero": [0, 1]}, keep=10)


def test_memory_table_is_the_memory_model(lab_problem, lab_search):
    """The vectorised memory table equals twin/compiler/resolve/memory.training plan by plan."""
    p, s = lab_problem, lab_search
    rng = np.random.default_rng(1)
    for i in rng.choice(s.feasible, 30, replace=False):
        w = p.workload_of(row(s.cols, int(i)))
        m = memory.training(p.shape, memory.Plan.of(w, p.base.fused_attention, grad_bytes=p.base.grad_bytes), p.hbm)
        assert s.memory["total"][i] == pytest.approx(m.total, rel=1e-9), row(s.cols, int(i))


def test_fast_stage_is_the_job_twin(lab_problem, lab_search):
    """On the leaders the fast stage's step equals the full job twin's (the same compute, overlaps, bubble and
    collectives on the same fabric). On feasible plans drawn at random it does too, but for the few
    whose layout shares its fabric signature with one timed before it (tables.signature: the same spans of
    NVLink domains, rails, leaves and zones), which take that one's timing: under hashed routing their flows
    collide elsewhere, within 2% of the step on the lab (measured: 1.9% at worst, 3 of 65 plans)."""
    p, s = lab_problem, lab_search
    rng = np.random.default_rng(2)
    for i in s.best(None, 3):
        c = row(s.cols, int(i))
        assert s.step[i] == pytest.approx(answer.full_twin(p, c)["schemes"][0]["step_s"], rel=1e-6), answer.label(c)
    errs = []
    pick = rng.choice(s.feasible, 20, replace=False)  # any feasible plan, scored by the search or not, on its tables
    sub = {k: v[pick] for k, v in s.cols.items()}
    steps = fast.evaluate(p, sub, s.coll, tables.compute_table(p, sub))["step_s"]
    for j, i in enumerate(pick):
        c = row(s.cols, int(i))
        errs.append(abs(steps[j] / answer.full_twin(p, c)["schemes"][0]["step_s"] - 1))
    errs = np.array(errs)
    assert (errs < 1e-6).mean() >= 0.8, errs
    assert errs.max() < 0.02, errs


def test_branch_and_bound_finds_the_best_of_all(lab_problem, lab_search):
    """Scoring every feasible plan finds no plan faster than the search's leaders: the bound is a bound and
    the plans it skipped were slower."""
    p, s = lab_problem, lab_search
    assert 0 < s.scored.sum() < s.feasible  # it skipped some
    every = fast.evaluate(p, s.cols, tables.Collectives(p), tables.compute_table(p, s.cols))
    assert np.all(every["step_s"] >= s.bound * (1 - 1e-12))
    best = np.sort(every["step_s"])[:10]
    assert np.allclose(np.sort(s.step[s.best(None, 10)]), best, rtol=1e-9)
    # the second bound (the model-parallel collectives timed, the data-parallel ones free) is a bound too, on the
    # search's own tables, and it cut plans the first bound let through
    taken = ~np.isnan(s.tight)
    own = fast.evaluate(p, s.cols, s.coll, tables.compute_table(p, s.cols))
    assert np.all(own["step_s"][taken] >= s.tight[taken] * (1 - 1e-12))
    assert np.all(s.tight[taken] >= s.bound[taken] * (1 - 1e-12))
    assert (taken & ~s.scored).sum() > 0 and (taken & s.scored).sum() > 0
    # where the leaders were known, a collective not timed yet was first timed by one group on an idle fabric: a
    # bound that put most plans out without the whole fabric's flow simulation, never over the whole-fabric time
    assert (taken & ~s.exact).sum() > (taken & s.exact).sum() > 0 and s.scored[~s.exact].sum() == 0
    both = [k for k in s.coll.alone if k in s.coll.by_sig]
    assert both and any(s.coll.alone[k].at(64e6)[0] < s.coll.by_sig[k].at(64e6)[0] * 0.9 for k in both)  # groups crossing the zones' tier
    for k in both:
        for size in (1e3, 1e6, 64e6, 1e9):
            assert s.coll.alone[k].at(size)[0] <= s.coll.by_sig[k].at(size)[0] * (1 + 1e-12), (k, size)


def test_plan_answers_with_leaders_classes_and_a_scenario_that_reproduces_the_pick(tmp_path):
    """twin plan --json: the envelope, the leaders in the full twin's order with their parts and memory, a
    rank correlation of the two stages, the classes; the written scenario runs the pick in twin simulate at
    the predicted step."""
    plot, scen = tmp_path / "plan.png", tmp_path / "pick.yaml"
    r = twin_in_process("plan", LAB, "--top", "4", "--fix", "fp8=0", "--plot", plot, "--write", scen, "--json")
    assert r.returncode == 0, r.stderr
    res = unwrap(r.stdout)
    assert res["status"] == "ok" and len(res["plans"]) == 4
    steps = [e["step_s"] for e in res["plans"]]
    assert steps == sorted(steps) and res["rank_correlation"] >= 0.8
    sp = res["space"]
    assert sp["enumerated"] == sp["feasible"] + sum(sp["pruned"].values()) and sp["scored"] + sp["bounded"] == sp["feasible"]
    assert 0 < sp["bounded_by_exchanges"] < sp["bounded"]  # the second bound cut some; the first, most
    pick = res["plans"][0]
    assert pick["plan"]["fp8"] == "none" and pick["memory_GB"]["total"] <= res["hbm_GB"] - memory.RESERVE_BYTES / 1e9
    assert sum(v for k, v in pick["parts_s"].items() if k not in ("step_s", "recompute_s")) == pytest.approx(pick["parts_s"]["step_s"])
    assert pick["tokens_per_s"] == pytest.approx(res["global_batch"] * res["sequence_length"] / pick["step_s"])
    classes = res["classes"]
    assert all(e is None or e["step_s"] >= pick["step_s"] * (1 - 1e-9) for e in classes.values())
    assert classes["rule: TP = 8 (GPUs per server)"]["plan"]["tp"] == 8
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sim = twin_in_process("simulate", LAB, "--scenario", scen, "--json")
    assert sim.returncode == 0, sim.stderr
    job = unwrap(sim.stdout)["cases"][0]["jobs"][0]
    assert job["schemes"][0]["step_s"] == pytest.approx(pick["step_s"], rel=1e-9)
    assert job["recipe"]["micro_batch"] == pick["plan"]["micro_batch"] and job["dims"] == pick["plan"]["dims"]


@pytest.mark.parametrize("args,needle", [
    (("--fix", "tp=eight"), "tp takes whole numbers"),
    (("--fix", "colour=red"), "AXIS=VALUE"),
    (("--fix", "fp8=2"), "fp8 is on or off"),
    (("--set", "layers=-3"), "--set layers"),
    (("--workload", "nope"), "not a training workload"),
    (("--set", "hidden_size=400000", "--set", "layers=400"), "no plan fits"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
    r = twin_in_process("plan", LAB, *args)
    assert r.returncode == 2 and needle in r.stderr, r.stderr


@pytest.fixture(scope="module")
def selene():
    from twin.compiler.pipeline import compile_design

    return compile_design(ROOT / "sites" / "selene-a100.yaml", placement_method="naive")


GPT3_175B = {"parameters": 174.6e9, "layers": 96, "hidden_size": 12288, "heads": 96, "global_batch": 1536}


@pytest.mark.slow
def test_megatron_fig13_best_tp_is_one_server(selene):
    """[megatron-sc21] Fig. 13: a 162.2B GPT (32 layers, hidden 20,480, 128 heads: 12 l h^2 + V h = 162.1B)
    on 64 A100s, global batch 128: the best tensor-parallel size is the GPUs in one server (8). And GPT-3 175B
    at TP1 PP1 does not fit in 80 GB ([megatron-sc21] s1)."""
    d = selene
    base = next(x for x in d.spec.site.workloads if x.name == "gpt-145p6b")
    w = base.model_copy(update={"parameters": 162.2e9, "layers": 32, "hidden_size": 20480, "heads": 128, "global_batch": 128})
    res = answer.answer(Problem.of(d, w, 64), top=3)
    assert res["plans"][0]["plan"]["tp"] == 8
    g = base.model_copy(update={"parameters": 174.6e9, "layers": 96, "hidden_size": 12288, "heads": 96, "global_batch": 1536})
    p = Problem.of(d, g, 1536, fabric=False)
    sp = Space.of(p.axes({"tp": 1, "pp": 1}))
    assert sp.size and not (tables.memory_table(p, sp.cols)["total"] <= p.hbm - memory.RESERVE_BYTES).any()


@pytest.mark.slow
def test_megatron_91b_best_micro_batch_is_two(selene):
    """[megatron-sc21] s5.5, Fig. 16: the 91B GPT at (t, p) = (8, 8) on 64 A100s, batch 512, full recomputation
    (as every run of the paper): of the micro-batch sizes measured (1, 2, 4, 8) the search picks 2. The 91B
    shape as tests/test_job_shape.py assumes it (the 76.1B row's width, 72 layers)."""
    base = next(x for x in selene.spec.site.workloads if x.name == "gpt-76p1b")
    w = base.model_copy(update={"layers": 72, "parameters": 91.1e9, "global_batch": 512})
    res = answer.answer(Problem.of(selene, w, 64), {"tp": 8, "pp": 8, "v": 1, "micro_batch": [1, 2, 4, 8], "recompute": "full"}, top=4)
    assert res["plans"][0]["plan"]["micro_batch"] == 2
    assert sorted(e["plan"]["micro_batch"] for e in res["plans"]) == [1, 2, 4, 8]  # every size measured, none pruned


@pytest.mark.slow
def test_megatron_table2_ptdp_beats_zero3_by_more_with_scale(selene):
    """[megatron-sc21] Table 2: GPT-3 175B at a global batch of 1,536 on 384 and 1,536 A100s. The best PTD-P plan
    (Megatron-LM 2021) beats the best ZeRO-3 plan without model parallelism (DeepSpeed in Megatron-DeepSpeed),
    and by more at 1,536 GPUs (published 153 vs 144 TFLOP/s per GPU at 384, 141 vs 44 at 1,536)."""
    base = next(x for x in selene.spec.site.workloads if x.name == "gpt-145p6b")
    ratio = {}
    for n in (384, 1536):
        ptdp = answer.answer(Problem.of(selene, base.model_copy(update={**GPT3_175B, "stack": "megatron-lm-2021"}), n),
                             {"recompute": "full"}, top=2)["plans"][0]
        zero3 = answer.answer(Problem.of(selene, base.model_copy(update={**GPT3_175B, "stack": "megatron-deepspeed-2021"}), n),
                              {"zero": 3, "tp": 1, "pp": 1, "recompute": "full"}, top=2)["plans"][0]
        assert ptdp["plan"]["tp"] * ptdp["plan"]["pp"] > 1 and zero3["plan"]["dp"] == n
        ratio[n] = zero3["step_s"] / ptdp["step_s"]
    assert 1.0 < ratio[384] < ratio[1536]


def test_a_model_given_on_the_command_line_on_a_site_without_workloads():
    """lab-ib has no workloads: --set gives the model and --gpus the count; without them, one line, exit 2."""
    ib = ROOT / "sites" / "lab-ib.yaml"
    model = ("--set", "layers=32", "--set", "hidden_size=4096", "--set", "heads=32", "--set", "sequence_length=4096",
             "--set", "global_batch=64", "--set", "parameters=6.7B")
    r = twin_in_process("plan", ib, "--gpus", "64", *model, "--top", "2", "--json")
    assert r.returncode == 0, r.stderr
    res = unwrap(r.stdout)
    pick = res["plans"][0]["plan"]
    assert res["workload"] == "model" and res["gpus"] == 64 and pick["tp"] * pick["cp"] * pick["pp"] * pick["dp"] == 64
    assert res["global_batch"] == 64 and res["sequence_length"] == 4096
    for args, needle in (((), "no training workload to plan"), (model, "no training workload to plan"),
                         (("--gpus", "64", "--set", "layers=32"), "--set parameters")):
        r = twin_in_process("plan", ib, *args)
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr



def test_uneven_stages_are_timed_as_the_job_twin_times_them(lab):
    """Llama 3's stack runs unequal stages ([llama3] s3.3.2: 126 layers on 16 stages). A 30-layer model on
    lab-2zone: PP 4 holds 8 layers on its longest stage and interleaves in chunks of 2, 4 or 8; the fast
    stage's compute, bubble and memory equal the full job twin's and memory model's on such plans."""
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b").model_copy(update={"layers": 30})
    p = Problem.of(lab, w)
    s = search.search(p, {"fp8": 0, "pp": 4, "zero": [0, 1], "recompute": "none"}, keep=4)
    assert set(s.cols["v"].tolist()) == {1, 2, 4, 8}
    rng = np.random.default_rng(3)
    picks = list(s.best(None, 2)) + list(rng.choice(np.flatnonzero(s.scored & (s.cols["v"] > 1)), 6, replace=False))
    for i in picks:
        c = row(s.cols, int(i))
        full = answer.full_twin(p, c)
        # compute and bubble exactly; the step within the signature's approximation (a collective timed on one
        # layout of its fabric signature serves every layout with that signature: tables.signature)
        assert s.parts["compute_s"][i] == pytest.approx(full["compute_s"], rel=1e-9), answer.label(c)
        assert s.parts["bubble_s"][i] == pytest.approx(full["bubble_s"], rel=1e-9), answer.label(c)
        assert s.step[i] == pytest.approx(full["schemes"][0]["step_s"], rel=2e-3), answer.label(c)
        m = memory.training(p.shape, memory.Plan.of(p.workload_of(c), p.base.fused_attention, grad_bytes=p.base.grad_bytes), p.hbm)
        assert s.memory["total"][i] == pytest.approx(m.total, rel=1e-9)


def test_the_rule_on_a_72_gpu_nvlink_server_is_the_largest_tp_that_tiles_it():
    """On an NVL72 rack (one 72-GPU server to the fabric) a model with 64 heads cannot split 72 ways: the rule's
    class is the largest TP the model allows that divides the server (8), and says so."""
    from types import SimpleNamespace

    p = SimpleNamespace(net=SimpleNamespace(gpu_server=np.repeat(np.arange(2), 72)))
    sp = Space.of(Axes(gpus=144, layers=8, heads=64, kv_heads=8, ffn=256, seq=64, batch=144))
    masks = answer.classes(p)(sp.cols)
    (name,) = [k for k in masks if k.startswith("rule")]
    assert name == "rule: TP = 8 (the largest the model allows in a 72-GPU server)"
    assert set(sp.cols["tp"][masks[name]].tolist()) == {8}
    lab = SimpleNamespace(net=SimpleNamespace(gpu_server=np.repeat(np.arange(4), 8)))
    assert "rule: TP = 8 (GPUs per server)" in answer.classes(lab)(Space.of(Axes(gpus=32, layers=8, heads=64, kv_heads=8, ffn=256, seq=64, batch=32)).cols)


def test_collectives_timed_on_two_cores_give_the_one_core_answer(lab_problem):
    """The search forks workers to time a chunk's new collectives at once (twin/twins/plan/parallel.py): the
    same collectives, the same timings, the same leaders as timing them one by one in place."""
    import dataclasses

    one = search.search(dataclasses.replace(lab_problem), {"fp8": 0, "zero": [0, 1]}, keep=5, workers=1)
    two = search.search(dataclasses.replace(lab_problem), {"fp8": 0, "zero": [0, 1]}, keep=5, workers=2)
    assert one.coll.calls == two.coll.calls > 1
    assert one.coll.by_sig.keys() == two.coll.by_sig.keys()
    np.testing.assert_array_equal(one.scored, two.scored)
    np.testing.assert_array_equal(one.step[one.scored], two.step[two.scored])
    assert list(one.best(None, 5)) == list(two.best(None, 5))


def test_the_headroom_class_is_the_best_plan_that_leaves_the_reserve_free_once_more(lab_problem):
    """The reserve is assumed, so the answer names the best plan that leaves it free once more. On the lab's
    GPUs with the HBM cut to the median plan's need plus the reserve, about half the plans fit and fewer leave
    3 GB more: the class's plan is within HBM less twice the reserve, and it is the fastest scored plan that is
    (the mask is the memory test itself, not another axis)."""
    import dataclasses

    from twin.compiler.resolve import memory
    from twin.twins.plan import tables

    full = Space.of(lab_problem.axes({"fp8": 0, "zero": [0, 1]}))
    need = tables.memory_table(lab_problem, full.cols)["total"]
    p = dataclasses.replace(lab_problem, hbm=float(np.median(need)) + memory.RESERVE_BYTES)
    s = search.search(p, {"fp8": 0, "zero": [0, 1]}, keep=5, mask_fn=answer.classes(p), workers=1)
    # HBM cut again to the pick's need plus the reserve and 1 GB: the pick (or a faster plan that needs more) still
    # fits, and the class's budget, a reserve lower, is 2 GB under it
    p = dataclasses.replace(p, hbm=float(s.memory["total"][s.best(None, 1)[0]]) + memory.RESERVE_BYTES + 1e9)
    s = search.search(p, {"fp8": 0, "zero": [0, 1]}, keep=5, mask_fn=answer.classes(p), workers=1)
    mask = answer.classes(p)(s.cols, s.memory)[answer.headroom_class()]
    budget = p.hbm - 2 * memory.RESERVE_BYTES
    assert np.array_equal(mask, s.memory["total"] <= budget) and 0 < mask.sum() < len(mask)
    pick, safe = s.best(None, 1)[0], s.best(mask, 1)[0]
    assert s.memory["total"][safe] <= budget < s.memory["total"][pick]  # the pick here needs more than the class allows
    scored = np.flatnonzero(s.scored & mask & np.isfinite(s.step))
    assert s.step[safe] == s.step[scored].min() and s.step[safe] >= s.step[pick]
    assert answer.headroom_class() == "3 GB more HBM left free"
