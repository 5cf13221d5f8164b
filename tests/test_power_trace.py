"""The power twin's trace against closed forms (issue 11's known answers) on the lab site.

- The step-level swing of N GPUs in lockstep is N x (compute power - waiting power) exactly (and with
  exposed communication as the low phase, N x (compute - communication)).
- The spectrum of a stepping job peaks at 1 / step time.
- The energy of the sampled series equals the sum of the phase energies, at any resolution.
- Checkpoint and restart swings: N x (compute - checkpoint), N x (compute - idle) + servers x (rest - rest idle).
- After a feed loss (2N) the surviving busway carries its whole row: twice its normal share.
Per-GPU phase watts are the catalog's (grand-teton-h100: 700/250/200/150/90 W; arXiv 2508.14318 for
compute near TDP and communication near idle, the rest assumed).
"""

from __future__ import annotations

import pytest

from twin.lang.scenario.power import PowerScenario
from twin.twins.power.model import prepare, segments_for
from twin.twins.power.run import simulate_power, site_draw

PC, PM, PW, PK, PI = 700.0, 250.0, 200.0, 150.0, 90.0
REST, REST_IDLE = 4600.0, 2200.0


def cfg(**kw) -> PowerScenario:
    base = {"duration": "1 h", "job": {"step": {"step": "8 s", "compute": "6 s", "bubble": "2 s"}}}
    base.update(kw)
    return PowerScenario.model_validate(base)


def test_step_swing_is_n_times_compute_minus_waiting(lab):
    r = simulate_power(lab, cfg(), mitigations=False).data
    n = r["job"]["gpus"]
    assert n == 128
    assert r["swings"]["step_swing_W"] == pytest.approx(n * (PC - PW), rel=1e-12)
    # the 10 ms series sees the same swing: phase edges fall on bin edges here
    assert r["it"]["range_W"] == pytest.approx(n * (PC - PW), rel=1e-9)
    # with exposed communication (all GPUs wait on the network together) the low phase is communication
    r2 = simulate_power(lab, cfg(job={"step": {"step": "8 s", "compute": "6 s", "exposed_comm": "1 s", "bubble": "1 s"}, "stages": 4}),
                        mitigations=False).data
    assert r2["swings"]["step_swing_W"] == pytest.approx(n * (PC - PM), rel=1e-12)


def test_spectrum_peaks_at_one_over_the_step_time(lab):
    step = 8.28
    r = simulate_power(lab, cfg(job={"step": {"step": f"{step} s", "compute": "6.22 s", "exposed_comm": "0.6 s", "bubble": "1.46 s"}, "stages": 4}),
                       mitigations=False).data
    df = 1 / 3600.0
    assert abs(r["spectrum"]["dominant_Hz"] - 1 / step) <= df
    bands = {tuple(b["band_Hz"]): b for b in r["spectrum"]["bands"]}
    assert bands[(0.1, 1.0)]["share"] > 0.5  # the fundamental (0.12 Hz) carries most of the fluctuation
    assert sum(b["share"] for b in r["spectrum"]["bands"][:4]) == pytest.approx(1.0, rel=1e-9)  # Parseval


@pytest.mark.parametrize("dt", ["10 ms", "7 ms", "1 s"])
def test_series_energy_equals_the_sum_of_phase_energies(lab, dt):
    # 784 s: 98 steps and a whole number of 7 ms bins
    c = cfg(resolution=dt, duration="784 s", job={"step": {"step": "8 s", "compute": "5.5 s", "exposed_comm": "0.7 s", "bubble": "1.5 s"}, "stages": 4})
    m = prepare(lab, c)
    it, _ = site_draw(m, segments_for(m, m.base))
    n_dt = len(it) * c.resolution
    assert n_dt == pytest.approx(784.0)
    steps = 98
    gpu = 128 * steps * (5.5 * PC + 1.5 * PW + 0.7 * PM + 0.3 * PW)  # 0.3 s of slack waits too
    servers = 16 * REST * n_dt
    const = m.tree.site_W[0, m.tree.ch.const] * n_dt  # rack switches, fans, network (constant watts)
    assert it.sum() * c.resolution == pytest.approx(gpu + servers + const, rel=1e-9)


def test_checkpoint_and_restart_swings(lab):
    c = cfg(events={"checkpoint": {"every": "10 min", "duration": "20 s"}, "failures": [{"at": "30 min", "recovery": "5 min"}]})
    sw = simulate_power(lab, c, mitigations=False).data["swings"]
    assert sw["checkpoint_swing_W"] == pytest.approx(128 * (PC - PK), rel=1e-12)
    assert sw["restart_swing_W"] == pytest.approx(128 * (PC - PI) + 16 * (REST - REST_IDLE), rel=1e-12)


def test_feed_loss_doubles_the_surviving_busway(lab):
    d = simulate_power(lab, cfg(), mitigations=False).data["distribution"]
    by_state = {r["state"]: r for r in d["worst_by_state"]}
    assert by_state["feed A lost"]["peak_W"] == pytest.approx(2 * by_state["normal"]["peak_W"], rel=1e-12)
    rows = lab.spec.site.halls[0].rows
    assert d["limits_checked"] == 4 * rows  # per row: busways A and B normally, the survivor after each feed loss


def test_n_plus_1_reserve_block_takes_a_failed_blocks_rows(root, tmp_path):
    import twin

    text = (root / "sites" / "lab-2zone.yaml").read_text().replace(
        "      redundancy: 2N\n", "      redundancy: N+1\n      blocks: 3\n      block_rating: 150 kW\n", 1)
    p = tmp_path / "lab-n1.yaml"
    p.write_text(text)
    d = simulate_power(twin.load(p), cfg(), mitigations=False).data["distribution"]
    by = {(r["limit"], r["state"]): r for r in d["limits"]}
    for k in (1, 2):  # rows 1 and 2 are fed round-robin by active blocks 1 and 2
        normal = by[(f"block {k}", "normal")]
        reserve = by[(f"reserve block (for block {k})", f"block {k} lost")]
        assert reserve["peak_W"] == pytest.approx(normal["peak_W"], rel=1e-12)
        assert normal["peak_W"] == pytest.approx(by[(f"row {k} busway A", "normal")]["peak_W"] * 2, rel=1e-12)
        assert normal["rating_W"] == pytest.approx(150e3)


def test_each_busways_continuous_load_is_its_own_series_drawn_once_per_distinct_load(lab):
    """The busway check draws a limit's per-second series as its weights times the channels' per-second
    means (the trace is linear in the weights): the same largest one-minute mean, and where it starts,
    as drawing each row's series on its own and summing; identical loads are drawn once."""
    import numpy as np

    from twin.twins.power.levels import continuous, rolling_max_mean
    from twin.twins.power.trace import bin_average

    m = prepare(lab, cfg(job={"step": {"step": "8 s", "compute": "6 s", "exposed_comm": "1 s", "bubble": "1 s"}, "stages": 4},
                         events={"checkpoint": {"every": "10 min", "duration": "20 s"}, "failures": [{"at": "30 min"}]}))
    segs = segments_for(m, m.base)
    rows = m.tree.row_W
    W = np.concatenate([rows, 0.5 * rows, rows[:1] + rows[-1:], rows])  # a row twice, halves, a pair of rows
    best, at = continuous(segs, 1.0, 3600, W, 60)
    own = bin_average(segs, 0.0, 1.0, 3600, rows)
    series = np.concatenate([own, 0.5 * own, own[:1] + own[-1:], own])
    want, want_at = rolling_max_mean(series, 60)
    assert best == pytest.approx(want, rel=1e-9) and (at == want_at).all()
    assert len(set(best.round(6))) < len(W) and best.max() > best.min() > 0  # repeated loads, and loads that differ
