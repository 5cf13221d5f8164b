"""`twin calibrate` (issue 35, item 5): a stack's constants fitted on measured runs, with residuals and the held-out
error, written as a catalog entry a site can name.

Known answers: step times the job twin itself produces under a known kernel_share (0.6) and straggler mean (2%)
are a closed-loop answer: the fit from another starting stack must recover both constants and leave no residual.
"""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from twin.cli.app import app
from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import SpecError
from twin.twins.net import routing, topology
from twin.twins.workload import calibrate

E16 = routing.Scheme("e-ecmp, 16 QP", "e-ecmp", 16)
HEAD = "workload,gpus,tp,pp,dp,step_s\n"


@pytest.fixture(scope="module")
def lab_net(lab):
    return topology.from_design(lab)


def runs_of(lab, net, share: float, mean: float) -> list[calibrate.Run]:
    plans = [calibrate.Run(k + 2, "lab-llama-8b", 16 * dp, 1.0, {"tp": 8, "pp": 2, "dp": dp}) for k, dp in enumerate((2, 4, 8))]
    d = calibrate.with_stack(lab, "meta-production-2024", "truth", {"kernel_share": share, "straggler_mean": mean})
    steps = calibrate.predict(d, net, plans, "truth", E16)
    return [dataclasses.replace(r, step_s=float(s)) for r, s in zip(plans, steps)]


def test_the_fit_recovers_known_constants_with_no_residual(lab, lab_net):
    runs = runs_of(lab, lab_net, 0.6, 0.02)
    res = calibrate.fit(lab, lab_net, runs, "meta-production-2024", "mine", ("kernel_share", "straggler_mean"), E16)
    assert res["constants"]["kernel_share"] == pytest.approx(0.6, abs=2e-3)
    assert res["constants"]["straggler_mean"] == pytest.approx(0.02, abs=2e-3)
    assert res["fit_rms_error"] < 2e-3 and res["held_out"] is None and all(r["fitted"] for r in res["runs"])
    # held out: fit kernel_share on the smallest run only; the larger runs are then off by their stragglers' growth
    one = calibrate.fit(lab, lab_net, runs, "meta-production-2024", "mine", ("kernel_share",), E16, holdout="smallest")
    assert [r["fitted"] for r in one["runs"]] == [True, False, False] and abs(one["runs"][0]["error"]) < 2e-3
    assert one["held_out"]["runs"] == 2 and one["runs"][2]["error"] < one["runs"][1]["error"] < 0  # H_128 > H_64 > H_32


def test_the_catalog_entry_is_a_stack_a_site_can_name(root, lab, lab_net):
    runs = runs_of(lab, lab_net, 0.65, 0.0)
    res = calibrate.fit(lab, lab_net, runs[:1], "meta-production-2024", "my-cluster", ("kernel_share",), E16)
    text = (root / "sites/lab-2zone.yaml").read_text().rstrip("\n") + "\n    stack: my-cluster\n" + res["catalog"]
    spec, diags = validate_text(text, "w.yaml")
    assert spec is not None, [d.format() for d in diags if d.severity.value == "error"]
    st = spec.catalog.stacks["my-cluster"]
    assert st.kernel_share == pytest.approx(0.65, abs=2e-3) and "twin calibrate" in st.source
    assert spec.site.workloads[0].stack == "my-cluster"


@pytest.mark.parametrize("body, line, col, words", [
    ("lab-llama-8b,128,8,2,8,1.5\n", 2, 1, "1 run(s) to fit 2 constants"),
    ("lab-llama-8b,128,8,2,8,-1\n", 2, 6, "not a positive time"),
    ("lab-llama-8b,100,8,2,8,1.5\n", 2, 2, "100 GPUs, but TP8 x CP1 x PP2 x DP8 = 128"),
    ("gpt-9,128,8,2,8,1.5\n", 2, 1, "unknown workload 'gpt-9'"),
    ("lab-llama-8b,128,8,x,8,1.5\n", 2, 4, "pp 'x' is not a whole number"),
])
def test_bad_calibration_input_is_a_located_error(lab, lab_net, body, line, col, words):
    with pytest.raises(SpecError) as e:
        runs = calibrate.read_runs(HEAD + body, "runs.csv", {w.name: w for w in lab.spec.site.workloads})
        calibrate.fit(lab, lab_net, runs, "meta-production-2024", "x", ("kernel_share", "straggler_mean"), E16)
    d = e.value.diagnostics[0]
    assert (d.file, d.line, d.col) == ("runs.csv", line, col) and words in d.message, d.format()


def test_calibrate_command_exits_2_on_a_bad_csv_and_writes_the_entry_on_a_good_one(root, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("workload,gpus,colour,step_s\nlab-llama-8b,128,red,1\n")
    res = CliRunner().invoke(app, ["calibrate", str(root / "sites/lab-2zone.yaml"), "--runs", str(bad)])
    assert res.exit_code == 2 and f"{bad}:1:3:" in res.output and "unknown column 'colour'" in res.output
    good = tmp_path / "runs.csv"
    good.write_text(HEAD + "lab-llama-8b,128,8,2,8,2.0\n")
    out = tmp_path / "stack.yaml"
    res = CliRunner().invoke(app, ["calibrate", str(root / "sites/lab-2zone.yaml"), "--runs", str(good), "--stack", "meta-production-2024",
                                   "--name", "lab-cluster", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "lab-cluster" in out.read_text() and "kernel_share" in res.output and "+0.0%" in res.output
    res = CliRunner().invoke(app, ["calibrate", str(root / "sites/lab-2zone.yaml"), "--runs", str(good), "--name", "Bad Name"])
    assert res.exit_code == 2 and "slug" in res.output


def test_the_host_time_per_zero3_gather_is_recovered(lab, lab_net):
    """Closed loop on Megatron-DeepSpeed 2021 (Megatron-LM's kernels, one collective per tensor, no prefetch): runs
    the job twin times at ZeRO 3 with a host time of 3 ms per gather give back 3 ms from the catalog's value, with no
    residual; runs without ZeRO 3 cannot tell it and are refused where the CSV starts."""
    plans = [calibrate.Run(k + 2, "lab-llama-8b", 16 * dp, 1.0, {"tp": 8, "pp": 2, "dp": dp, "zero": 3}) for k, dp in enumerate((2, 4))]
    lab_ds = dataclasses.replace(lab, spec=dataclasses.replace(lab.spec, site=lab.spec.site.model_copy(update={"workloads": [
        lab.spec.site.workloads[0].model_copy(update={"stack": "megatron-deepspeed-2021"})]})))
    d = calibrate.with_stack(lab_ds, "megatron-deepspeed-2021", "truth", {"zero3_host": 3e-3})
    steps = calibrate.predict(d, lab_net, plans, "truth", E16)
    runs = [dataclasses.replace(r, step_s=float(s)) for r, s in zip(plans, steps)]
    res = calibrate.fit(lab_ds, lab_net, runs, "megatron-deepspeed-2021", "mine", ("zero3_host",), E16)
    assert res["constants"]["zero3_host"] == pytest.approx(3e-3, rel=1e-3) and res["fit_rms_error"] < 1e-4
    assert "zero3_host: 0.003 s" in res["catalog"]  # with its unit: a site can paste it
    flat = [dataclasses.replace(r, plan={**r.plan, "zero": 1}) for r in runs]
    with pytest.raises(SpecError) as e:
        calibrate.fit(lab_ds, lab_net, flat, "megatron-deepspeed-2021", "mine", ("zero3_host",), E16)
    assert "none of the runs fitted is at ZeRO 3" in e.value.diagnostics[0].message
