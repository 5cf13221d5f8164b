"""The power twin on meta-24k-roce with the Llama 3 405B job (issue 11's known answers).

Sources: Llama 3 (arXiv 2407.21783) s3.3.4: synchronised power swings of the whole job "on the order of
tens of megawatts" and a 1-2% diurnal throughput variation from mid-day temperatures (GPU DVFS);
Choukse et al. (arXiv 2508.14318): ramp and oscillation limits, energy storage as a mitigation.
The step (8.28 s: compute 6.22 s, bubble 1.46 s, exposed communication 0.60 s; TP8 PP16 DP128 on 16,384
GPUs) is the job twin's E-ECMP result for this job (docs/twins/collectives.md).
"""

from __future__ import annotations

import pytest
from conftest import SITES

import twin
from twin.lang.scenario.power import PowerScenario
from twin.twins.power.run import simulate_power

LLAMA = {"step": {"step": "8.28 s", "compute": "6.22 s", "exposed_comm": "0.6 s", "bubble": "1.46 s"}, "stages": 16, "gpus": 16384}
HOT_DAY = {"diurnal": {"min": "25 degC", "max": "40 degC", "peak_at": "15 h"}}


@pytest.fixture(scope="module")
def liquid_meta(tmp_path_factory):
    """meta-24k-roce with liquid-cooled halls (everything else the same)."""
    p = tmp_path_factory.mktemp("liquid") / "meta-24k-liquid.yaml"
    p.write_text((SITES / "meta-24k-roce.yaml").read_text().replace("medium: air", "medium: liquid"))
    return twin.load(p)


def test_checkpoints_and_restarts_swing_tens_of_megawatts(meta24k):
    c = PowerScenario.model_validate({"duration": "2 h", "job": LLAMA,
                                      "events": {"checkpoint": {"every": "30 min", "duration": "20 s"}, "failures": [{"at": "1 h", "recovery": "10 min"}]}})
    r = simulate_power(meta24k, c, mitigations=False).data
    sw = r["swings"]
    # closed forms with the catalog's per-GPU watts (700 compute, 150 checkpoint, 90 idle; rest of the
    # server 4.6 kW running, 2.2 kW idle) for 16,384 GPUs in 2,048 servers
    assert sw["checkpoint_swing_W"] == pytest.approx(16384 * (700 - 150), rel=1e-9)
    assert sw["restart_swing_W"] == pytest.approx(16384 * (700 - 90) + 2048 * (4600 - 2200), rel=1e-9)
    assert 1e7 <= sw["restart_swing_W"] < 1e8  # tens of MW
    # the utility sees the cooling plant follow within minutes: the grid falls by tens of MW after the failure
    per_min = r["series"]["grid_per_minute_W"]
    assert per_min[58] - min(per_min[60:70]) > 1.5e7
    assert r["limits_pass"] is False  # meta-24k-roce's utility limits (power.limits) are exceeded
    ramp = next(v for v in r["limits"] if v["kind"] == "ramp")
    assert 3600 - 2 <= ramp["worst_at_s"] <= 3600 + 1  # the worst ramp is the failure at 1 h


def test_air_cooled_hall_loses_one_to_two_percent_at_midday_and_liquid_well_under(meta24k, liquid_meta):
    c = PowerScenario.model_validate({"duration": "24 h", "resolution": "1 s", "job": LLAMA, "weather": HOT_DAY})
    air = simulate_power(meta24k, c, mitigations=False)
    th = air.data["thermal"]
    assert 0.01 <= th["throughput_loss_midday"] <= 0.02
    perf, t = air.views["throughput"], air.views["t_grid"]
    night = perf[(t < 6 * 3600) | (t > 22 * 3600)]
    assert night.min() == 1.0  # recovers at night
    noon = perf[(t > 13 * 3600) & (t < 17 * 3600)]
    assert noon.min() < 0.99
    liquid = simulate_power(liquid_meta, c, mitigations=False).data["thermal"]
    assert liquid["throughput_loss_midday"] < 0.005


def test_smallest_battery_passes_and_five_percent_less_fails(meta24k):
    c = PowerScenario.model_validate({"duration": "2 h", "job": LLAMA, "events": {"failures": [{"at": "1 h", "recovery": "10 min"}]},
                                      "mitigations": {"battery": {"level": "site"}}})
    r = simulate_power(meta24k, c).data
    assert r["limits_pass"] is False
    b = r["mitigations"]["battery"]["site"]
    assert b["passes"] is True
    assert b["passes_with_5pct_less_power"] is False
    assert b["passes_with_5pct_less_energy"] is False
    assert 1 < b["power_MW"] < 20 and 0 < b["energy_MWh"] < 5


@pytest.mark.slow
def test_the_example_scenarios_job_loses_one_to_two_percent_at_midday(tmp_path):
    """Issue 35, deliverable 9: scenarios/llama3-405b-power.yaml as shipped, its job timed by the job twin (the site's
    llama3-405b-16k, 397.6 TFLOPs/GPU against Table 4's 400), on its hot day, at 1 s and without its events and
    mitigations (which do not throttle); slow: it compiles meta-24k-roce and times the 16,384-GPU job. The air-cooled halls lose 1-2% at midday ([llama3] s3.3.4). It fell to 0.63%
    while the scenario overrode the workload's interleaving (4 chunks against its 8): a step of 7.05 s, 69% compute,
    whose lower step-average power the throttle, which takes only the power above (83 degC - inlet) / theta, barely reached."""
    from conftest import ROOT, twin_in_process, unwrap

    text = (ROOT / "scenarios" / "llama3-405b-power.yaml").read_text()
    head, rest = text.split("  events:")
    weather = "  weather:" + rest.split("  weather:")[1].split("\n  mitigations:")[0]
    sc = tmp_path / "power.yaml"
    sc.write_text(head.replace("resolution: 10 ms", "resolution: 1 s") + weather + "\n")
    r = twin_in_process("simulate", SITES / "meta-24k-roce.yaml", "-s", sc, "--json")
    assert r.returncode in (0, 4), r.stderr[-2000:]
    doc = unwrap(r.stdout)
    job = doc["cases"][0]["jobs"][0]
    assert job["workload"] == "llama3-405b-16k" and job["virtual_stages"] == 8
    s = job["schemes"][0]
    assert s["predicted_tflops_per_gpu"] == pytest.approx(400, rel=0.02)  # [llama3] Table 4 row 2
    assert 0.7 < job["compute_s"] / s["step_s"] < 0.8
    assert 0.01 <= doc["power"]["thermal"]["throughput_loss_midday"] <= 0.02
