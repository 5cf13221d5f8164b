"""Held-out error of `twin calibrate` on the open series (issue 35, deliverable 3 and its known answer "calibrating on
one row of a series and predicting the others: within 5% on the open series").

Each open series with more than one row is restated as measured step times (the published TFLOPs/GPU in the
series' own convention, over its GPUs: [llama3] Table 4, [megatron-sc21] Table 1), the stack's kernel_share is
fitted on the run with the fewest GPUs alone, and the other rows are predicted. The fit reproduces its row
exactly; what is left is the twin's trend along the series. The issue's 5% is not met, and this test holds the
errors measured, so that a change which widens them fails:

- Llama 3 (fitted on 8,192 GPUs): 16,384 GPUs -1.0%, 16,384 at 131K tokens +6.3% (its CP16 all-gathers; the
  mean-calibrated table has the row at -5.9% too).
- Megatron-LM Table 1 (fitted on 1.7B, TP1): mean 4.7%, largest +9.1% at 7.5B and 18.4B, the TP4 and TP8 rows
  without a pipeline, whose twin steps carry 12-18% of exposed TP all-reduces on NVLink while the measured
  share of peak stays at 43-46%: the table's own residuals, calibrated on all ten rows, span -5.0% to +5.1%,
  so no single row predicts the other nine within 5%.
"""

from __future__ import annotations

import pytest

from twin.twins.net import routing, topology
from twin.twins.workload import calibrate, validation


def held_out(group: str):
    g = next(x for x in validation.GROUPS if x.name == group)
    d = validation._design(g.site)
    net = topology.from_design(d)
    rows = [r for r in validation._job_rows(g, d, net) if r.open_set]
    # the published rate as a step time: the twin's step scaled by predicted / measured TFLOPs per GPU
    gpus = {w.name: w.gpus for w in d.spec.site.workloads}
    runs = [calibrate.Run(k + 2, r.extra["workload"], gpus[r.extra["workload"]], r.extra["step_s"] * r.predicted / r.measured, {})
            for k, r in enumerate(rows)]
    res = calibrate.fit(d, net, runs, g.stack, "mine", ("kernel_share",), routing.site_scheme(d.spec.fabric), holdout="smallest")
    return res, rows


@pytest.mark.slow
def test_calibrated_on_the_smallest_run_the_series_is_predicted_within_its_stated_errors():
    """Slow: compiles meta-24k-roce and selene-a100 and times the thirteen rows once per step of the fit."""
    res, _ = held_out("llama3-table4")
    fitted, *rest = res["runs"]
    assert fitted["fitted"] and fitted["gpus"] == 8192 and abs(fitted["error"]) < 0.002
    assert [round(100 * r["error"]) for r in rest] == [-1, 6]
    assert res["held_out"]["max_abs_error"] < 0.07 and res["held_out"]["mean_abs_error"] < 0.04

    res, rows = held_out("megatron-sc21-table1")
    err = {r["workload"]: r["error"] for r in res["runs"]}
    assert abs(err.pop("gpt-1p7b")) < 0.002 and res["held_out"]["runs"] == 9
    assert res["held_out"]["mean_abs_error"] < 0.05 and res["held_out"]["max_abs_error"] < 0.10
    assert set(sorted(err, key=err.get)[-2:]) == {"gpt-7p5b", "gpt-18p4b"}  # TP4 and TP8 without a pipeline: too slow
    # the cause is the trend, not the fit: the mean-calibrated table's residuals already span about 10 points
    spread = max(r.error for r in rows) - min(r.error for r in rows)
    assert 0.09 < spread < 0.11
