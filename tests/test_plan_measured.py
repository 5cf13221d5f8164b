"""twin plan --measured: the search held to measured runs, on grids written from Megatron-LM SC'21 Table 2
([megatron-sc21] s5.2: GPT-3 175B at a global batch of 1,536 on Selene, ZeRO-3 without model parallelism
against PTD-P at 384 and 1,536 A100s, in TFLOP/s per GPU), and its bad input.

A published TFLOP/s figure becomes a measured step through the paper's Eq. 3: the hardware FLOPs of one
iteration, 96 B s l h^2 (1 + s / 6h + V / 16lh), over the figure times the GPUs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ROOT, twin_in_process, unwrap
from twin.compiler.resolve import memory
from twin.twins.plan import fast, measured, tables
from twin.twins.plan.problem import Problem
from twin.twins.plan.space import Space
from twin.twins.workload.validation_rows import GPT3

SELENE = ROOT / "sites" / "selene-a100.yaml"
SETS = ("-w", "gpt-145p6b", "--set", "layers=96", "--set", "parameters=174.6e9", "--set", "global_batch=1536")
HEADER = "name,stack,tp,pp,dp,zero,micro_batch,virtual_stages,recompute,step_s"


def eq3_step(tflops: float, gpus: int) -> float:
    """[megatron-sc21] Eq. 3 for GPT-3 175B at batch 1,536: seconds per iteration at ``tflops`` per GPU."""
    b, s, layers, h, v = 1536, 2048, 96, 12288, 51200
    return 96 * b * s * layers * h ** 2 * (1 + s / (6 * h) + v / (16 * layers * h)) / (tflops * 1e12 * gpus)


def table2(gpus: int) -> str:
    """Table 2's two rows at ``gpus`` (ZeRO-3 at micro-batch 4, 2, 1 as published; PTD-P (8, 12) at two layers per chunk, as the
    authors' run_figure_12.sh ran it, [megatron-sc21-scripts])."""
    zero3, ptdp, mb = {384: (144, 153, 4), 768: (88, 149, 2), 1536: (44, 141, 1)}[gpus]
    return (f"{HEADER}\nzero3,megatron-deepspeed-2021,1,1,{gpus},3,{mb},1,full,{eq3_step(zero3, gpus):.3f}\n"
            f"ptd-p,megatron-lm-2021,8,12,{gpus // 96},0,1,4,full,{eq3_step(ptdp, gpus):.3f}\n")


@pytest.fixture(scope="module")
def selene():
    from twin.compiler.pipeline import compile_design

    return compile_design(SELENE, placement_method="naive")


@pytest.fixture(scope="module")
def p384(selene):
    base = next(x for x in selene.spec.site.workloads if x.name == "gpt-145p6b")
    return Problem.of(selene, base.model_copy(update=GPT3), 384)


def test_the_example_csv_is_table2(tmp_path):
    """scenarios/megatron-sc21-table2-384.csv holds Table 2 rows 1 and 7 through Eq. 3 (81.58 s and 76.78 s)."""
    ex = [ln for ln in (ROOT / "scenarios" / "megatron-sc21-table2-384.csv").read_text().splitlines() if not ln.startswith("#")]
    assert "\n".join(ex) + "\n" == table2(384)
    assert eq3_step(144, 384) == pytest.approx(81.579, abs=1e-3) and eq3_step(153, 384) == pytest.approx(76.780, abs=1e-3)


def test_table2_at_384_gpus(tmp_path, p384):
    """twin plan --measured --json on Table 2 at 384 GPUs: it picks PTD-P, the measured best (regret 0,
    rank correlation 1); both plans fit; the measured best's place in the whole space is 1 + the feasible
    plans the fast stage predicts faster, checked here by scoring every feasible plan."""
    f = tmp_path / "t2.csv"
    f.write_text(table2(384))
    r = twin_in_process("plan", SELENE, *SETS, "--gpus", "384", "--measured", f, "--json")
    assert r.returncode == 0, r.stderr
    res = unwrap(r.stdout)
    assert res["status"] == "ok" and res["gpus"] == 384 and res["stack"] == "megatron-lm-2021"
    runs = {x["name"]: x for x in res["runs"]}
    assert runs["zero3"]["measured_step_s"] == pytest.approx(81.579) and runs["ptd-p"]["measured_step_s"] == pytest.approx(76.780)
    assert runs["zero3"]["stack"] == "megatron-deepspeed-2021" and runs["zero3"]["plan"]["zero"] == 3
    assert res["pick"] == res["measured_best"] == runs["ptd-p"]["label"]
    assert res["regret"] == 0.0 and res["rank_correlation"] == pytest.approx(1.0) and res["not_fitting"] == []
    assert [x["twin_rank"] for x in res["runs"]] == [1, 2] and runs["ptd-p"]["measured_rank"] == 1
    for x in res["runs"]:
        assert x["error"] == pytest.approx(x["predicted_step_s"] / x["measured_step_s"] - 1)
    assert res["mean_abs_error"] == pytest.approx(np.mean([abs(x["error"]) for x in res["runs"]]))
    place = res["measured_best_place"]
    assert place["among_measured"] == 1 and place["of"] == 2
    # every feasible plan of the space scored: the place is 1 + those faster than the measured best's prediction
    p = p384
    sp = Space.of(p.axes())
    mem = tables.memory_table(p, sp.cols)
    cols = {k: v[mem["total"] <= p.hbm - memory.RESERVE_BYTES] for k, v in sp.cols.items()}
    every = fast.evaluate(p, cols, tables.Collectives(p))["step_s"]
    target = runs["ptd-p"]["predicted_step_s"]
    assert place["in_space"]["feasible"] == len(every)
    assert place["in_space"]["place"] == int((every < target * (1 - 1e-9)).sum()) + 1 > 1
    assert place["in_space"]["best"]["predicted_step_s"] == pytest.approx(every.min())


def test_a_plan_predicted_not_to_fit_is_named_and_never_picked(tmp_path, p384):
    """Table 2 at 384 GPUs with the zero column left out: the ZeRO-3 run reads as ZeRO 0, GPT-3 175B at TP 1,
    PP 1, which does not fit in 80 GB (81,920 MiB as CUDA reports it, [gpu-capacity]; 16 bytes per parameter for weights, gradients and Adam alone, 2,794 GB:
    [zero-sc20] s3, [megatron-sc21] s1). twin names it and ranks it last whatever its step: timed as if it could
    run, with no pipeline bubble and no TP exchange, it comes out 2.3% faster than PTD-P (measured: ZeRO-3 81.579 s,
    PTD-P 76.780 s), so the predicted steps alone would order the two runs against the measurement (rank
    correlation -1); the memory rule alone keeps the pick right."""
    f = tmp_path / "nozero.csv"
    f.write_text("\n".join(",".join(c for i, c in enumerate(ln.split(",")) if i != 5) for ln in table2(384).splitlines()) + "\n")
    res = measured.hold(p384, f, measured.read(f))
    bad = res["not_fitting"]
    assert [x["line"] for x in bad] == [2] and "TP1 CP1 PP1 DP384" in bad[0]["label"] and "zero0" in bad[0]["label"]
    assert bad[0]["memory_GB"] > 16 * 174.6
    assert bad[0]["shortfall_GB"] == pytest.approx(bad[0]["memory_GB"] - (81920 * 2**20 - memory.RESERVE_BYTES) / 1e9)
    runs = {x["name"]: x for x in res["runs"]}
    assert runs["zero3"]["predicted_step_s"] < runs["ptd-p"]["predicted_step_s"]  # faster as timed, against the measurement
    assert runs["zero3"]["twin_rank"] == 2 and res["regret"] == 0.0  # but it does not fit, so never picked
    assert res["rank_correlation"] == pytest.approx(-1.0)  # the predicted steps alone are against the measured order
    assert "predicted not to fit: line 2: TP1 CP1 PP1 DP384" in measured.text(res)


def test_regret_and_rank_correlation_by_hand():
    """Table 2's runs at 384 and 1,536 GPUs (steps by Eq. 3) under predictors that order them wrongly: the regret
    (measured step of the predictor's first over the measured best, minus one), Spearman's rank correlation and the
    measured best's place, by hand."""
    meas = np.array([eq3_step(t, n) for n, t in ((384, 144), (384, 153), (1536, 44), (1536, 141))])
    # 1,536 GPUs alone, the ZeRO-3 run predicted first: regret 141 / 44 - 1, rank correlation -1
    r = measured.compare(np.array([1.0, 2.0]), meas[2:], np.array([True, True]))
    assert r["regret"] == pytest.approx(141 / 44 - 1) and r["rank_correlation"] == pytest.approx(-1.0) and r["best_place"] == 2
    # the four runs (steps 81.6, 76.8, 66.7, 20.8 s: measured ranks 4, 3, 2, 1) with a predictor ranking them 2, 1, 4, 3:
    # twin's first is the 384-GPU PTD-P run: regret 76.780 / 20.829 - 1; Spearman 1 - 6 * (4 + 4 + 4 + 4) / (4 * 15) = -0.6;
    # the measured best (1,536-GPU PTD-P) is third in twin's order
    r = measured.compare(np.array([2.0, 1.0, 4.0, 3.0]), meas, np.ones(4, bool))
    assert r["regret"] == pytest.approx((153 * 384) ** -1 / (141 * 1536) ** -1 - 1) and r["regret"] == pytest.approx(76.780 / 20.829 - 1, rel=1e-4)
    assert r["rank_correlation"] == pytest.approx(-0.6) and r["best_place"] == 3
    # a plan predicted not to fit goes last whatever its step
    r = measured.compare(np.array([1.0, 2.0]), np.array([3.0, 2.0]), np.array([False, True]))
    assert list(r["twin_order"]) == [1, 0] and r["regret"] == 0.0


ROW = "x,megatron-lm-2021,{tp},{pp},{dp},{zero},{mb},{v},full,{step}"


@pytest.mark.parametrize("body,line,col,needle", [
    ("name,colour,step_s\na,red,1\n", 1, "colour", "unknown column (expected one of step_s, tp"),
    ("tp,pp\n8,12\n", 1, "step_s", "missing (expected a column step_s"),
    ("", 1, "header", "the file is empty"),
    (HEADER + "\n", 1, "file", "no runs under the header"),
    (HEADER + "\n" + ROW.format(tp=8, pp=12, dp=4, zero=0, mb=1, v=8, step="fast"), 2, "step_s", "'fast' is not a number"),
    (HEADER + "\n# a comment\n" + ROW.format(tp=8, pp=12, dp=4, zero=0, mb=1, v=8, step="-3"), 3, "step_s", "-3 (expected a measured step"),
    (HEADER + "\n" + ROW.format(tp=8, pp=12, dp=4, zero=0, mb=1, v=8, step=0), 2, "step_s", "(expected a measured step time in seconds, > 0)"),
    (HEADER + "\n" + "\n".join([ROW.format(tp=8, pp=12, dp=4, zero=0, mb=1, v=8, step=76.78)] * 300), 258, "file", "more than 256 runs"),
    (HEADER + "\na,b\n", 2, "row", "2 cells (expected 10"),
], ids=["unknown-column", "no-step", "empty", "no-runs", "step-not-a-number", "step-negative", "step-zero", "too-many-rows", "short-row"])
def test_bad_csv_is_located_before_any_work(tmp_path, body, line, col, needle):
    """Errors in the file itself come before the site is read: the site here does not exist."""
    f = tmp_path / "runs.csv"
    f.write_text(body)
    r = twin_in_process("plan", tmp_path / "no-such-site.yaml", "--measured", f)
    assert r.returncode == 2 and r.stderr.startswith(f"{f}:{line}: {col}: ") and needle in r.stderr, r.stderr


@pytest.mark.parametrize("row,col,needle", [
    (ROW.format(tp=64, pp=1, dp=6, zero=0, mb=1, v=1, step=9), "tp", "heads, KV heads or FFN width do not split evenly over TP "
                                                                      "(expected TP dividing 96 heads"),
    (ROW.format(tp=8, pp=12, dp=4, zero=3, mb=1, v=8, step=9), "zero", "does not run this ZeRO stage with pipeline parallelism"),
    (ROW.format(tp=8, pp=12, dp=4, zero=0, mb=1, v=3, step=9), "virtual_stages", "3 chunks per GPU (expected 1, or with PP >= 2 a divisor of the 8 layers per stage)"),
    (ROW.format(tp=8, pp=12, dp=4, zero=0, mb=5, v=8, step=9), "micro_batch", "micro-batch 5 (expected at most 32, DP x micro-batch dividing the global batch 1,536)"),
    (ROW.format(tp=8, pp=12, dp=8, zero=0, mb=1, v=8, step=9), "dp", "TP x CP x PP x DP = 768 (expected the job's 384 GPUs)"),
    (ROW.format(tp=5, pp=1, dp="", zero=0, mb=1, v=1, step=9), "tp", "does not divide the 384 GPUs"),
    (ROW.format(tp=8, pp=12, dp=4, zero=0, mb=1, v=8, step=9).replace("megatron-lm-2021", "nemo-9"), "stack", "'nemo-9' (expected a stack"),
    (ROW.format(tp=8, pp=12, dp=4, zero=7, mb=1, v=8, step=9), "zero", "7 (expected 0, 1, 2 or 3)"),
], ids=["tp-heads", "zero-pp", "interleave", "micro-batch", "gpus", "tp-gpus", "stack", "zero-stage"])
def test_a_plan_the_model_cannot_run_says_which_rule(tmp_path, p384, row, col, needle):
    f = tmp_path / "runs.csv"
    f.write_text(f"{HEADER}\n{table2(384).splitlines()[1]}\n{row}\n")
    with pytest.raises(measured.MeasuredError) as e:
        measured.plans(p384, f, measured.read(f))
    assert str(e.value).startswith(f"{f}:3: {col}: ") and needle in str(e.value), str(e.value)


def test_cli_exit_2_on_a_rule_and_on_another_gpu_count(tmp_path):
    f = tmp_path / "runs.csv"
    f.write_text("tp,gpus,step_s\n8,768,40\n")
    r = twin_in_process("plan", SELENE, *SETS, "--gpus", "384", "--measured", f, "--json")
    assert r.returncode == 2
    assert unwrap(r.stdout)["error"] == f"{f}:2: gpus: '768', the job's is 384 (expected 384 (runs at another count: twin plan --gpus N))"


def test_a_blank_cell_takes_the_workloads_value_and_says_so(tmp_path, p384):
    """gpt-145p6b's own plan has 2 chunks per GPU (5 layers each, as [megatron-sc21]'s run_table_1.sh ran it); a blank
    virtual_stages cell at PP 32 (GPT-3's 96 layers, 3 per stage) takes it, and the error says the value came from the
    workload."""
    f = tmp_path / "runs.csv"
    f.write_text("tp,pp,virtual_stages,step_s\n4,32,,76.78\n")
    with pytest.raises(measured.MeasuredError) as e:
        measured.plans(p384, f, measured.read(f))
    assert str(e.value) == (f"{f}:2: virtual_stages: 2 chunks per GPU (the workload's value: the cell is blank) "
                            "(expected 1, or with PP >= 2 a divisor of the 3 layers per stage)")


def test_table2_at_1536_gpus(tmp_path, selene):
    """Table 2 rows 3 and 9 (1,536 GPUs: ZeRO-3 44, PTD-P 141 TFLOP/s per GPU): twin picks PTD-P, the measured
    best (regret 0, rank correlation 1), and places it in the whole space."""
    gpus = 1536
    base = next(x for x in selene.spec.site.workloads if x.name == "gpt-145p6b")
    p = Problem.of(selene, base.model_copy(update=GPT3), gpus)
    f = tmp_path / "t2.csv"
    f.write_text(table2(gpus))
    res = measured.hold(p, f, measured.read(f))
    runs = {x["name"]: x for x in res["runs"]}
    assert res["pick"] == res["measured_best"] == runs["ptd-p"]["label"] and runs["ptd-p"]["plan"]["dp"] == gpus // 96
    assert res["regret"] == 0.0 and res["rank_correlation"] == pytest.approx(1.0) and res["not_fitting"] == []
    sp = res["measured_best_place"]["in_space"]
    assert 1 <= sp["place"] <= sp["feasible"] and sp["scored"] <= sp["feasible"]
