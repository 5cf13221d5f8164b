"""Held-out error of `twin calibrate` on the published series (issue 35, deliverable 3 and its known answer
"calibrating on one row of a series and predicting the others: within 5% on the open series"):
`twin validate-jobs --holdout`.

Each series (the rows of one table under one stack) is restated as measured step times (the published TFLOPs/GPU
in the series' own convention, over its GPUs), the stack's kernel_share is fitted on the run with the fewest GPUs
alone, and the other rows are predicted. The fit reproduces its row exactly; what is left is the twin's trend
along the series. The issue's 5% is not met on the open series, and this test holds the errors measured, so that
a change which widens them fails:

- [llama3] Table 4 (fitted on 8,192 GPUs): 16,384 GPUs +0.6%, 16,384 at 131K tokens +5.4% (the validation
  table, calibrated on the same row, has it at -5.2% in TFLOPs/GPU).
- [megatron-sc21] Table 1 (fitted on 1.7B, TP1), each row as the authors' examples/sc21/run_table_1.sh ran it
  (its micro-batch, model chunks and DDP): mean 3.2%, largest +6.0% at 39.1B and 1T, the two rows with the
  largest pipeline bubbles ((p - 1) / (v m): 8.3% and 12.3%), 145.6B (7.3%) next at +5.7%; the twin is too slow
  where the bubble is large. Calibrated on all ten rows, the table's residuals span -3.7% to +5.3% (under the old
  rule of one sequence per micro-batch and one layer per chunk, -8.8% to +6.9%, and 9.1% held out).
- Out of sample: [megatron-bridge-perf] (fitted on LLAMA3_8B) 70B +6.1%, 405B -7.1% (each row as the
  performance scripts ran it: BF16 gradient reduction; the 405B's CP as Megatron-Core's K/V ring; the GEMMs
  beside a ring exchange in TP chunks); [megatron-sc21] Table 2
  ZeRO-3 (on 384 GPUs, Megatron-LM's kernels and the stack's host time per gather) +0.8%, +4.2%; PTD-P (on 384
  GPUs) -1.0%, -3.2%.
"""

from __future__ import annotations

import doctest

import pytest
from conftest import ROOT, twin_in_process, unwrap

from twin.twins.workload import validation


@pytest.mark.slow
def test_calibrated_on_the_smallest_run_each_series_is_predicted_within_its_stated_errors():
    """Slow: compiles meta-24k-roce, selene-a100 and dgx-h100-pod and times every row once per step of each fit."""
    r = twin_in_process("validate-jobs", "--holdout", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    series = {(s["group"], s["stack"]): s for s in unwrap(r.stdout)["holdout"]}
    assert len(series) == 5
    for s in series.values():  # the fit is exact on its one row, the smallest of the series
        fitted = [x for x in s["runs"] if x["fitted"]]
        assert len(fitted) == 1 and abs(fitted[0]["error"]) < 0.002
        assert fitted[0]["gpus"] == min(x["gpus"] for x in s["runs"]) and s["held_out"]["runs"] == len(s["runs"]) - 1

    llama = series["llama3-table4", "meta-production-2024"]
    assert llama["open_set"] and [round(100 * x["error"]) for x in llama["runs"][1:]] == [1, 5]
    assert llama["held_out"]["max_abs_error"] < 0.06 and llama["held_out"]["mean_abs_error"] < 0.035

    t1 = series["megatron-sc21-table1", "megatron-lm-2021"]
    err = {x["workload"]: x["error"] for x in t1["runs"] if not x["fitted"]}
    assert t1["open_set"] and len(err) == 9
    assert t1["held_out"]["mean_abs_error"] < 0.035 and t1["held_out"]["max_abs_error"] < 0.065  # 3.2% and 6.0%: the 5% not met
    assert set(sorted(err, key=err.get)[-2:]) == {"gpt-39p1b", "gpt-1t"}  # the largest pipeline bubbles: too slow
    assert max(abs(err[w]) for w in ("gpt-3p6b", "gpt-7p5b", "gpt-18p4b")) < 0.02  # TP2-8 without a pipeline (9.1% before)

    # out of sample: the stacks set on their smallest row already, and PTD-P (Table 1's stack) refitted on its own
    for key, bound in ((("nemo-h100", "megatron-core-2025"), 0.08), (("megatron-sc21-table2", "megatron-deepspeed-2021"), 0.05),
                       (("megatron-sc21-table2", "megatron-lm-2021"), 0.05)):
        assert not series[key]["open_set"] and series[key]["held_out"]["max_abs_error"] < bound, key
    # refitted on its 384-GPU row, the Megatron-DeepSpeed stack's kernel_share comes back to Megatron-LM 2021's own (its
    # host time per gather is set on that row): the kernels are the same code base's ([megatron-sc21] s5.2)
    assert series["megatron-sc21-table2", "megatron-deepspeed-2021"]["kernel_share"] == pytest.approx(0.7985, abs=2e-3)
    # what docs/job-twin.md shows under `$ twin validate-jobs --holdout` is this run's text (`...` is any text)
    page = (ROOT / "docs" / "job-twin.md").read_text(encoding="utf-8").split("$ twin validate-jobs --holdout\n", 1)[1]
    shown, got = page.split("```", 1)[0], validation.holdout_table(unwrap(r.stdout)["holdout"]) + "\n"
    assert shown.count("\n") >= 3 and doctest.OutputChecker().check_output(shown, got, doctest.ELLIPSIS), f"shown\n{shown}\nbut\n{got}"


@pytest.mark.slow
def test_the_trend_not_the_fit_bounds_a_one_row_calibration_of_table_1():
    """The reason the 5% is not met, in the validation table's own terms: calibrated on all ten rows of Table 1 the
    residuals span about 9 points (16 under the old rule of one sequence per micro-batch), so a calibration on any
    one row leaves some other row about 5% or more off.
    Slow: compiles selene-a100 (it reads the rows only, no fit)."""
    from twin.twins.net import topology

    g = next(x for x in validation.GROUPS if x.name == "megatron-sc21-table1")
    d = validation._design(g.site)
    rows = validation._job_rows(g, d, topology.from_design(d))
    e = [r.error for r in rows]
    assert len(e) == 10 and abs(sum(e) / 10) < 0.002 and 0.08 < max(e) - min(e) < 0.10
