"""Run the power and thermal twin for a scenario's ``power:`` section.

``simulate_power(design, cfg)`` draws the site at ``resolution`` over ``duration`` (IT load from the
trace, cooling overhead lagging it, the grid-side draw the utility sees), checks the utility's limits,
the busways and UPS blocks in every failure state, the racks against their power shelf, prices each
mitigation, and returns JSON-ready figures plus the arrays the plots need.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twin.heap import reuse_large_buffers
from twin.lang.scenario.power import PowerScenario
from twin.twins.power import levels, mitigate, verdicts
from twin.twins.power.model import Model, phases_for, prepare, segments_for
from twin.twins.power.smoothing import grid_of
from twin.twins.power.trace import bin_average, extremes
from twin.twins.workload.timeline import Event


@dataclass
class PowerResult:
    data: dict
    views: dict = field(default_factory=dict)


def site_draw(m: Model, segs, dt: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(IT load, grid-side draw) of the site at the scenario's resolution."""
    cfg = m.cfg
    dt = dt or cfg.resolution
    n = int(np.floor(cfg.duration / dt + 1e-9))  # whole bins inside the trace
    it = bin_average(segs, 0.0, dt, n, m.tree.site_W)[0]
    return it, grid_of(m, it, dt)


def swings(m: Model, segs) -> dict:
    """Instantaneous step-level swing, the drop at a checkpoint, and running vs stopped (IT, W): the
    drop a failure makes, and the rise a restart makes (in one step, or in two with a restore phase)."""
    W = m.tree.site_W
    run = [s for s in segs if s.state == "run"]
    out = {}
    if run:
        ex = extremes(run, W)
        hi, lo = float(ex["max"][0]), float(ex["min"][0])
        out.update(step_peak_W=hi, step_trough_W=lo, step_swing_W=hi - lo, step_peak_at_s=float(ex["max_at"][0]))
        for state, key in (("checkpoint", "checkpoint_swing_W"), ("idle", "restart_swing_W"), ("restore", "restore_swing_W")):
            c = [s for s in segs if s.state == state]
            if c:
                out[key] = hi - float(extremes(c, W)["min"][0])
    return out


def throughput(m: Model, segs) -> dict:
    """Steps and tokens over the trace; work lost to failures (steps since the last checkpoint)."""
    steps = sum((s.t1 - s.t0) / s.period for s in segs if s.state == "run")
    lost, since = 0.0, 0.0
    for s in segs:
        if s.state == "run":
            since += (s.t1 - s.t0) / s.period
        elif s.state == "checkpoint":
            since = 0.0
        elif s.state == "idle" and since > 0:
            lost, since = lost + since, 0.0
    p = m.profile
    nominal = m.cfg.duration / p.step_s
    tp = p.step_s / np.array([s.period for s in segs if s.state == "run"]) if steps else np.zeros(0)
    return {"steps": steps, "steps_lost_to_failures": lost, "useful_steps": steps - lost, "nominal_steps": nominal,
            "tokens": (steps - lost) * p.tokens_per_step, "availability": (steps - lost) / nominal if nominal else 0.0,
            "compute_rate_min": float(m.perf.min()), "throughput_factor_min": float(m.rate.min()),
            "rate_min": float(tp.min()) if len(tp) else 0.0}


def simulate_power(design, cfg: PowerScenario, src=None, jobs: list[dict] | None = None, events: list[Event] | None = None,
                   base_dir: Path | None = None, mitigations: bool = True, progress=None) -> PowerResult:
    """The power twin on ``design`` for a scenario's ``power:`` section; its day-long series kept on the heap
    while it runs (:func:`twin.heap.reuse_large_buffers`: the same results, without faulting each one in afresh)."""
    with reuse_large_buffers():
        return _simulate_power(design, cfg, src, jobs, events, base_dir, mitigations, progress)


def _simulate_power(design, cfg: PowerScenario, src, jobs, events, base_dir, mitigations: bool, progress) -> PowerResult:
    say = progress or (lambda _m: None)
    say("power: the site's draw at its racks, rows and halls")
    m = prepare(design, cfg, src, jobs, events, base_dir)
    dt = cfg.resolution
    limits = design.spec.site.power.limits
    segs = segments_for(m, m.base)
    say(f"power: the trace ({cfg.duration:g} s at {dt:g} s), spectrum and utility limits")
    it, grid = site_draw(m, segs)
    f, ms = verdicts.spectrum(grid, dt)
    bands = list(verdicts.STANDARD_BANDS) + [tuple(o.band) for o in (limits.oscillation if limits else [])]
    p = m.profile
    data = {
        "duration_s": cfg.duration, "resolution_s": dt, "samples": len(grid),
        "job": {"gpus": m.tree.job_gpus, "other_gpus": m.tree.other_gpus, "stages": m.stages, "stage_group": m.stage_group,
                "step_s": p.step_s, "compute_s": p.compute_s, "exposed_comm_s": p.exposed_comm_s, "bubble_s": p.bubble_s,
                "others": cfg.job.others},
        # what each figure is per: a GPU in each state (and its cap), the rest of a server (CPUs, memory, NICs, fans)
        "phases_W": {"per_gpu": {k: getattr(m.base, k) for k in ("compute", "communication", "waiting", "checkpoint", "idle", "cap")},
                     "per_server_rest": {"running": m.base.rest, "idle": m.base.rest_idle}},
        "network_W": m.tree.network_w,
        "events": [{"t": e.t, "kind": e.kind, "duration": e.duration} for e in m.events],
        "it": verdicts.summary(it, dt), "grid": verdicts.summary(grid, dt),
        "swings": swings(m, segs),
        "ramp": dict(zip(("max_W_per_s", "at_s"), verdicts.ramp(grid, dt, limits.ramp_window if limits else 1.0))),
        "spectrum": {"dominant_Hz": verdicts.dominant(f, ms), "dominant_above_0.05Hz": verdicts.dominant(f, ms, 0.05),
                     "step_frequency_Hz": 1.0 / p.step_s, "bands": verdicts.band_table(f, ms, bands)},
        "limits": verdicts.check(grid, dt, limits),
        "thermal": _thermal_figures(design, m),
        "throughput": throughput(m, segs),
    }
    data["limits_pass"] = all(v["pass"] for v in data["limits"])
    say("power: busways and UPS blocks in every failure state")
    dist = levels.distribution(design, m.tree, segs, cfg.duration, m.pue)
    halls_1s = dist.pop("halls_1s")
    data["distribution"] = dist
    views = _views(m, segs, grid, f, ms, halls_1s)
    views.update(it=it, grid=grid)
    if mitigations:
        data["mitigations"] = mitigate.evaluate(design, m, it, grid, limits, lambda ph, slow=0.0: site_draw(m, segments_for(m, ph, slow)),
                                                phases_for, throughput(m, segs), say)
    data["series"] = {"grid_per_minute_W": [round(float(v), 1) for v in _block_mean(grid, dt, 60.0)]}
    return PowerResult(data, views)


def _block_mean(x: np.ndarray, dt: float, width: float) -> np.ndarray:
    k = max(1, int(round(width / dt)))
    n = len(x) // k
    return x[: n * k].reshape(n, k).mean(axis=1) if n else x[:1]


def _thermal_figures(design, m: Model) -> dict:
    out = {"outdoor_min_degC": float(m.t_out.min()), "outdoor_max_degC": float(m.t_out.max()), "halls": []}
    for h in design.spec.site.halls:
        if h.name in m.inlet:
            t_in = m.inlet[h.name]
            row = {"hall": h.name, "medium": h.cooling.medium, "setpoint_degC": h.cooling.inlet_temperature,
                   "inlet_max_degC": float(t_in.max()), "inlet_min_degC": float(t_in.min())}
            if h.name in m.facility_water:  # CDUs: the inlet is their coolant supply, the setpoint theirs
                fw = m.facility_water[h.name]
                row.update(setpoint_degC=h.cooling.cdus.supply_temperature, facility_water_max_degC=float(fw.max()),
                           facility_water_min_degC=float(fw.min()))
            out["halls"].append(row)
    out["compute_rate_min"] = float(m.perf.min())
    out["throughput_factor_min"] = float(m.rate.min())
    out["throughput_loss_midday"] = float(1 - m.rate.min() / m.rate.max())
    return out


def _views(m: Model, segs, grid: np.ndarray, f: np.ndarray, ms: np.ndarray, halls_1s: np.ndarray) -> dict:
    """Arrays for the plots: milliseconds over a few steps, seconds over the trace, minutes."""
    cfg = m.cfg
    run = [s for s in segs if s.state == "run" and s.t1 - s.t0 >= cfg.zoom_steps * s.period]
    t0 = (run[0].t0 + min(3 * run[0].period, run[0].t1 - run[0].t0 - cfg.zoom_steps * run[0].period)) if run else 0.0
    span = cfg.zoom_steps * (run[0].period if run else m.profile.step_s)
    zdt = min(1e-3, cfg.resolution)
    nz = min(200_000, max(16, int(span / zdt)))
    zoom = bin_average(segs, t0, span / nz, nz, m.tree.site_W)[0]
    sec = _block_mean(grid, cfg.resolution, 1.0)
    minute = _block_mean(grid, cfg.resolution, 60.0)
    keep = f > 0
    return {"zoom": (t0 + (np.arange(nz) + 0.5) * span / nz, zoom), "seconds": (np.arange(len(sec)) + 0.5) * max(1.0, cfg.resolution), "sec": sec,
            "minutes": (np.arange(len(minute)) + 0.5) * 60.0, "min": minute, "f": f[keep], "ms": ms[keep],
            "t_grid": m.t_grid, "t_out": m.t_out, "throughput": m.rate, "halls_1s": halls_1s, "hall_names": m.tree.halls,
            "limits": None}
