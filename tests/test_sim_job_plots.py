"""`twin simulate --plot-dir` on a jobs-only scenario: one step-breakdown PNG per case and job, each bar
the step the tables print; a scenario with nothing to plot says so; a second --scenario is refused.

Why check the parts' sum: the bar is drawn from the job twin's parts (compute, bubble, TP, CP, exposed
PP and DP); if a part were missing or double-counted the bar's end would not be the step time.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from twin.emit.pic_twin import PARTS
from twin.emit.plots import write_plots
from twin.emit.plots_job import part_value
from twin.lang.scenario.models import load_scenario
from twin.twins.run import simulate

Image = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def job_result(lab, root):
    scn, src = load_scenario(root / "scenarios" / "lab-job.yaml")
    return simulate(lab, scn, src)


def test_jobs_only_scenario_draws_the_step_per_case_and_job(job_result, tmp_path):
    files = write_plots(job_result, tmp_path)
    # lab-job.yaml: cases healthy and ctsw-down, the same workload in topology and naive rank order
    assert [f.name for f in files] == ["healthy-job-lab-llama-8b-topology-step.png", "healthy-job-lab-llama-8b-naive-step.png",
                                       "ctsw-down-job-lab-llama-8b-topology-step.png", "ctsw-down-job-lab-llama-8b-naive-step.png"]
    for f in files:
        with Image.open(f) as im:
            px = np.asarray(im.convert("RGB")).astype(int)
        # the compute part's colour (#4e79a7) fills one bar per routing scheme (three here)
        near = (np.abs(px - np.array((0x4E, 0x79, 0xA7))).sum(axis=2) < 20).sum()
        assert near > 3 * 2_000, f.name
    for case in job_result.data["cases"]:
        for j in case["jobs"]:
            assert len(j["schemes"]) == 3
            for s in j["schemes"]:
                assert sum(part_value(j, s, k) for k, _, _ in PARTS) == pytest.approx(s["step_s"], rel=1e-6)


def test_cli_says_when_a_scenario_has_nothing_to_plot(tmp_path, root):
    from typer.testing import CliRunner

    from twin.cli.app import app

    scn = tmp_path / "serve.yaml"
    scn.write_text("name: serve\nrouting:\n  - {name: e, scheme: e-ecmp, qps: 16}\nserving:\n"
                   "  - {name: s, model: {parameters: 8B, layers: 32, hidden_size: 4096, ffn_hidden_size: 14336, heads: 32,"
                   " kv_heads: 8, vocab_size: 128256}, tp: 8, batch: 1, prompt_tokens: 128, output_tokens: 16}\n")
    res = CliRunner().invoke(app, ["simulate", str(root / "sites" / "lab-2zone.yaml"), "-s", str(scn), "--plot-dir", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    assert "nothing to plot" in res.output and "wrote nothing to" in res.output
    assert list((tmp_path / "p").glob("*")) == []


@pytest.mark.parametrize("command", ["simulate", "build", "diff"])
def test_a_second_scenario_is_refused_not_silently_dropped(tmp_path, root, command):
    from typer.testing import CliRunner

    from twin.cli.app import app

    args = [command, str(root / "sites" / "lab-2zone.yaml"), "-s", str(root / "scenarios" / "lab-job.yaml"),
            "-s", str(root / "scenarios" / "serving.yaml")] + (["-o", str(tmp_path / "o")] if command == "build" else [])
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    assert "--scenario given 2 times" in res.output and "serving.yaml" in res.output
    assert not (tmp_path / "o").exists()
    res = CliRunner().invoke(app, args + ["--json"])
    assert res.exit_code == 2
    doc = json.loads(res.stdout)
    assert doc["status"] == "invalid" and "--scenario given 2 times" in doc["result"]["error"]
