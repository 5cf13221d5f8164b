"""GPU power smoothing in the power twin (issue 28, deliver 5): floor, ramp-rate limits, power-shelf storage.

Closed forms on the lab site (128 GPUs in lockstep, grand-teton-h100 phases: compute 700 W, waiting
200 W, idle 90 W; step 8 s = 6 s compute + 2 s bubble; 10 min = 75 steps; bins of 10 ms fall on every
phase edge):

- a floor F (waiting < F < compute) leaves a step swing of N x (compute - F), i.e. lowers it by
  N x (F - waiting), and costs N x (F - waiting) x the low phase in every step (the issue's known answer);
- ramp-down at d W/s after a hold h: every low phase burns N x (h x dP + dP^2 / (2 d)) extra while the
  ramp finishes inside it, and the step swing becomes N x (dP - d x (low - h)) when it does not; ramp-up
  at u withholds N x dP'^2 / (2 u) at every rise (the sampled swing: the lowest 10 ms bin is the ramp's
  mean over it, half a bin above its end);
- a job start from idle under ramp-up u: the IT ramp over 1 s is N x u plus the servers' step (their
  CPUs are not limited);
- a shelf large enough holds its rack at its step average: it charges dP_rack x t_high x t_low / T
  per rack and step (750 J per GPU here), and loses (1 - efficiency) of that.
"""

from __future__ import annotations

import numpy as np
import pytest

from twin.lang.scenario.power import PowerScenario
from twin.twins.power.run import simulate_power
from twin.twins.power.smoothing import slew, step_swing

N, PC, PW, PI = 128, 700.0, 200.0, 90.0
REST, REST_IDLE, SERVERS = 4600.0, 2200.0, 16
STEPS, T_HIGH, T_LOW = 75, 6.0, 2.0


def run(lab, mitigations: dict, **kw) -> dict:
    base = {"duration": "10 min", "resolution": "10 ms", "cooling_lag": "1e5 s",
            "job": {"step": {"step": "8 s", "compute": "6 s", "bubble": "2 s"}}, "mitigations": mitigations}
    base.update(kw)
    return simulate_power(lab, PowerScenario.model_validate(base)).data["mitigations"]


@pytest.mark.parametrize("floor", [300.0, 400.0, 600.0])
def test_floor_lowers_the_step_swing_and_costs_each_low_phase(lab, floor):
    r = run(lab, {"floor": f"{floor} W"})
    base, fl = r["baseline"], r["floor"]
    assert base["it_step_swing_W"] == pytest.approx(N * (PC - PW), rel=1e-12)
    assert fl["it_step_swing_W"] == pytest.approx(N * (PC - floor), rel=1e-12)
    assert base["it_step_swing_W"] - fl["it_step_swing_W"] == pytest.approx(N * (floor - PW), rel=1e-12)
    assert fl["it_extra_J"] == pytest.approx(STEPS * N * (floor - PW) * T_LOW, rel=1e-9)
    # the grid sees the same (the cooling plant follows over 1e5 s and adds next to nothing inside a step)
    assert fl["effect"]["step_swing_W"] == pytest.approx(N * (PC - floor), rel=1e-3)
    assert base["effect"]["step_swing_W"] == pytest.approx(N * (PC - PW), rel=1e-3)
    assert fl["effect"]["oscillation_W"] < base["effect"]["oscillation_W"]


def test_ramp_down_limit_burns_its_triangle_and_ramp_up_withholds_its_own(lab):
    d, h, u = 400.0, 0.25, 2000.0  # W/s, s, W/s: the fall takes 1.25 s of the 2 s low phase
    r = run(lab, {"ramp": {"up": f"{u} W/s", "down": f"{d} W/s", "hysteresis": f"{h} s"}})["ramp"]
    dp = PC - PW
    assert r["it_extra_J"] == pytest.approx(STEPS * N * (h * dp + dp**2 / (2 * d)), rel=1e-9)
    assert r["it_withheld_J"] == pytest.approx((STEPS - 1) * N * dp**2 / (2 * u), rel=1e-9)  # no rise after the last step
    assert r["throughput_cost"] > 0
    # a slower fall that cannot finish: the GPUs only get down by d x (low - h), which sets the swing
    r = run(lab, {"ramp": {"down": "100 W/s", "hysteresis": "0.5 s"}})
    left = 100.0 * (T_LOW - 0.5 - 0.005)  # the lowest 10 ms bin is the ramp's mean over it
    assert r["ramp"]["effect"]["step_swing_W"] == pytest.approx(N * left, rel=1e-4)
    assert r["ramp"]["effect"]["step_swing_W"] < 0.35 * r["baseline"]["effect"]["step_swing_W"]


def test_ramp_up_limit_spreads_a_job_start(lab):
    r = run(lab, {"ramp": {"up": "100 W/s", "down": "100 W/s"}}, events={"start": "60 s"})
    servers = SERVERS * (REST - REST_IDLE)  # the rest of the servers steps at once
    assert r["baseline"]["effect"]["ramp_W_per_s"] == pytest.approx(N * (PC - PI) + servers, rel=1e-3)
    assert r["ramp"]["effect"]["ramp_W_per_s"] == pytest.approx(N * 100.0 * (1 - 0.005) + servers, rel=1e-4)  # bin means


def test_shelf_storage_holds_racks_near_their_step_average(lab):
    big = run(lab, {"shelf": {"energy": "20 kJ", "efficiency": 0.9}})
    sh, base = big["shelf"], big["baseline"]
    assert sh["racks"] == 8 and sh["stored_J"] == pytest.approx(8 * 16 * 20e3)
    per_rack_step = 16 * (PC - PW) * T_HIGH * T_LOW / 8.0  # J charged per rack and step by a perfect shelf
    assert sh["charged_J"] == pytest.approx(8 * STEPS * per_rack_step, rel=0.01)
    assert sh["lost_J"] == pytest.approx(0.1 * sh["charged_J"], rel=1e-12)
    assert sh["effect"]["step_swing_W"] < 0.05 * base["effect"]["step_swing_W"]
    assert sh["effect"]["oscillation_W"] < 0.05 * base["effect"]["oscillation_W"]
    # less storage smooths less, and none of it changes the energy the racks use (but for the losses)
    # a shelf needs dP x t_high x t_low / T per GPU (750 J here) for a whole step: 1 kJ holds it (what is left is
    # the charge coming back to half full), 200 J empties and fills every step (the extremes stay, the oscillation drops)
    mid = run(lab, {"shelf": {"energy": "1 kJ"}})["shelf"]
    small = run(lab, {"shelf": {"energy": "200 J"}})["shelf"]
    assert mid["effect"]["step_swing_W"] < 0.05 * base["effect"]["step_swing_W"]
    assert small["effect"]["step_swing_W"] <= base["effect"]["step_swing_W"] * (1 + 1e-9)
    assert sh["effect"]["oscillation_W"] <= mid["effect"]["oscillation_W"] < small["effect"]["oscillation_W"] < base["effect"]["oscillation_W"]
    assert sh["effect"]["it_energy_J"] == pytest.approx(base["effect"]["it_energy_J"], rel=1e-3)


def test_slew_is_exact_on_bin_means():
    x = np.r_[np.zeros(10), np.full(30, 100.0), np.zeros(40)]
    y = slew(x, 0.1, 250.0, 100.0, 0.5)  # rise 0.4 s, hold 0.5 s, fall 1 s
    assert y.sum() * 0.1 - x.sum() * 0.1 == pytest.approx(100 * 0.5 + 100**2 / (2 * 100) - 100**2 / (2 * 250), rel=1e-12)
    assert y.max() == 100.0 and y[-1] == 0.0
    assert step_swing(np.tile(np.r_[np.ones(6), np.zeros(2)], 20), 1.0, 8.0) == 1.0


@pytest.mark.parametrize("body, words", [
    ({"ramp": {"hysteresis": "1 s"}}, "give up or down"),
    ({"ramp": {"up": "5 kW"}}, "expected a power ramp rate"),
    ({"shelf": {"energy": "5 kW"}}, "energy such as '1 kWh'"),
    ({"shelf": {}}, "energy"),
])
def test_bad_smoothing_input_is_located(root, tmp_path, body, words):
    import yaml
    from typer.testing import CliRunner

    from twin.cli.app import app

    p = tmp_path / "x.yaml"
    p.write_text(yaml.safe_dump({"name": "x", "power": {"job": {"step": {"step": "8 s", "compute": "6 s"}}, "mitigations": body}}))
    res = CliRunner().invoke(app, ["simulate", str(root / "sites" / "lab-2zone.yaml"), "--scenario", str(p)])
    assert res.exit_code == 2, res.output
    assert "x.yaml:" in res.output and words in res.output and "Traceback" not in res.output


def test_floor_ramp_and_shelf_together(lab):
    r = run(lab, {"floor": "400 W", "ramp": {"down": "400 W/s", "hysteresis": "0.25 s"}, "shelf": {"energy": "2 kJ"}})
    together, floor, ramp = r["smoothing"], r["floor"], r["ramp"]
    assert together["what"] == "GPU power smoothing: floor + ramp + shelf"
    # the ramp acts on the floored GPUs: a fall of dP = compute - floor after a hold h, every low phase
    dp = PC - 400.0
    assert together["it_extra_J"] == pytest.approx(STEPS * N * (0.25 * dp + dp**2 / (2 * 400.0)), rel=1e-9)
    assert together["it_withheld_J"] == pytest.approx(0.0, abs=1e-3)  # no ramp-up limit (bin means agree to 1e-13)
    # the shelf moves energy in time, it does not add any: the IT energy is the floor's plus the ramp's extra
    e_floor = floor["effect"]["it_energy_J"]
    assert together["effect"]["it_energy_J"] == pytest.approx(e_floor + together["it_extra_J"], rel=2e-3)
    assert together["effect"]["step_swing_W"] < 0.05 * min(floor["effect"]["step_swing_W"], ramp["effect"]["step_swing_W"])
