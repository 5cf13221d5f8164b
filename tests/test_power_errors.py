"""The power section end to end through `twin simulate`: power-only scenarios, the job twin's step, and
bad input as located errors with exit 2 (a limit with the wrong unit, a temperature CSV with a gap or a
bad row, a negative floor, a job the scenario does not run)."""

from __future__ import annotations

import pytest
from conftest import unwrap
from typer.testing import CliRunner

from twin.cli.app import app
from twin.compiler.resolve.validate import validate_text


def run(root, scenario_path, *extra):
    return CliRunner().invoke(app, ["simulate", str(root / "sites" / "lab-2zone.yaml"), "--scenario", str(scenario_path), *extra])


POWER_ONLY = """name: p
power:
  duration: 10 min
  job: {step: {step: 8 s, compute: 6 s, exposed_comm: 0.5 s, bubble: 1.5 s}, stages: 2}
  events: {checkpoint: {every: 5 min, duration: 20 s}}
"""


def test_power_only_scenario_json_has_every_figure(root, tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(POWER_ONLY)
    res = run(root, p, "--json", "--plot-dir", str(tmp_path / "plots"))
    assert res.exit_code == 0, res.output
    d = unwrap(res.output)["power"]
    for key in ("it", "grid", "swings", "ramp", "spectrum", "limits", "distribution", "thermal", "throughput", "phases_W", "series"):
        assert key in d
    assert d["samples"] == 60000
    assert d["swings"]["checkpoint_swing_W"] == pytest.approx(128 * (700 - 150))
    assert sorted(f.name for f in (tmp_path / "plots").iterdir()) == ["power-draw.png", "power-spectrum.png", "power-throughput-vs-temperature.png"]
    from twin.emit.report_power import markdown_section

    md = markdown_section(d)
    assert md.startswith("## Power and thermal (twin)") and "drop at a checkpoint | 0.07 MW" in md
    assert f"{d['distribution']['limits_checked']} limits checked" in md


def test_power_step_comes_from_the_job_twin(root, tmp_path):
    p = tmp_path / "j.yaml"
    p.write_text("""name: j
routing: [{name: e16, scheme: e-ecmp, qps: 16}]
jobs: [{workload: lab-llama-8b, order: topology}]
power:
  duration: 5 min
  job: {workload: lab-llama-8b, scheme: e16}
""")
    res = run(root, p, "--json")
    assert res.exit_code == 0, res.output
    d = unwrap(res.output)
    job = d["cases"][0]["jobs"][0]
    pj = d["power"]["job"]
    assert pj["step_s"] == job["schemes"][0]["step_s"] and pj["compute_s"] == job["compute_s"]
    assert pj["stages"] == 2 and pj["stage_group"] == 8 and pj["gpus"] == 128  # the workload's PP2, TP8


@pytest.mark.parametrize("body, where, words", [
    ("power:\n  job: {workload: lab-llama-8b}\n", "x.yaml:3:", "not among this scenario's jobs"),
    ("power:\n  job: {step: {step: 8 s, compute: 6 s}}\n  mitigations: {floor: -50 W}\n", "x.yaml:4:", "greater than or equal to 0"),
    ("power:\n  job: {step: {step: 8 s, compute: 9 s}}\n", "x.yaml:3:", "exceed step"),
    ("power:\n  job: {step: {step: 8 s, compute: 6 s}}\n  weather: {diurnal: {min: 20 W, max: 30 degC}}\n", "x.yaml:4:", "expected a temperature"),
])
def test_bad_power_sections_are_located(root, tmp_path, body, where, words):
    p = tmp_path / "x.yaml"
    p.write_text("name: x\n" + body)
    res = run(root, p)
    assert res.exit_code == 2, res.output
    assert where in res.output and words in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("csv, where, words", [
    ("hour,temperature\n0,20 degC\n1,21 degC\n3,22 degC\n", "t.csv:4:1", "a gap"),
    ("hour,temperature\n0,20 degC\n1,hot\n2,22 degC\n", "t.csv:3:3", "not a number with a unit"),
    ("hour,temperature\n0,20 degC\n1,21 W\n", "t.csv:3:3", "expected a temperature"),
    ("hour;temp\n0;20\n", "t.csv:1:1", "header"),
])
def test_temperature_csv_errors_point_at_the_row(root, tmp_path, csv, where, words):
    (tmp_path / "t.csv").write_text(csv)
    p = tmp_path / "x.yaml"
    p.write_text("name: x\npower:\n  duration: 2 h\n  job: {step: {step: 8 s, compute: 6 s}}\n  weather: {csv: t.csv}\n")
    res = run(root, p)
    assert res.exit_code == 2, res.output
    assert where in res.output and words in res.output


def test_utility_limit_with_the_wrong_unit_is_located(root):
    text = (root / "sites" / "lab-2zone.yaml").read_text()
    bad = text.replace("  pue: ", "  limits: {max_ramp: 5 MW, oscillation: [{band: [0.1 Hz, 20 s], max_amplitude: 1 MW}]}\n  pue: ", 1)
    spec, diags = validate_text(bad, "lab.yaml")
    assert spec is None
    msgs = [d.format() for d in diags]
    assert any("power.limits.max_ramp" in m and "expected a power ramp rate such as '5 MW/s'" in m for m in msgs), msgs
    assert any("power.limits.oscillation[0].band[1]" in m and "expected a frequency" in m for m in msgs), msgs
    good = text.replace("  pue: ", "  limits: {max_ramp: 5 MW/s, max_swing: 2 MW}\n  pue: ", 1)
    spec, diags = validate_text(good, "lab.yaml")
    assert spec is not None and spec.site.power.limits.max_ramp == 5e6
