"""Mitigations and their price: a GPU power floor, a software fill workload, energy storage.

Each is drawn with the same trace code as the baseline and checked against the same limits. Price:
the energy it wastes per day (floor and fill burn power while the job waits; a battery loses
``1 - efficiency`` of what it charges), the throughput it costs (the fill's kernels slow the step),
and for storage its size. The battery is the smallest of its control policy (see
:mod:`twin.twins.power.storage`) at the site's point of interconnection or in every GPU rack; the figures
also show that 5% less power or 5% less energy would fail a limit.
"""

from __future__ import annotations

import numpy as np

from twin.twins.power import smoothing, verdicts
from twin.twins.power.model import phases_for, segments_for
from twin.twins.power.storage import battery_policy, bisect_tau, limited, low_pass, size_battery, size_of
from twin.twins.power.trace import bin_average

MWH = 3.6e9


def _status(g: np.ndarray, dt: float, limits) -> dict:
    checks = verdicts.check(g, dt, limits)
    return {"limits": [{"limit": c["limit"], "value": c["value"], "pass": c["pass"]} for c in checks],
            "passes_all": all(c["pass"] for c in checks), "swing_60s_W": verdicts.swing(g, dt, 60.0)[0],
            "ramp_W_per_s": verdicts.ramp(g, dt, limits.ramp_window if limits else 1.0)[0]}


def evaluate(design, m, it: np.ndarray, grid: np.ndarray, limits, draw, phases_for, base_tp: dict, say=None) -> dict:
    say = say or (lambda _m: None)  # progress: one label per mitigation drawn
    cfg = m.cfg
    mit = cfg.mitigations
    dt = cfg.resolution
    per_day = 86400.0 / cfg.duration
    e0 = float(grid.sum() * dt)
    out: dict = {}
    if mit.floor is not None:
        say("power: mitigation: GPU power floor")
        ph = phases_for(m, design, floor=mit.floor)
        i, g = draw(ph)
        out["floor"] = {"what": "GPU power floor", "floor_W": mit.floor, **_status(g, dt, limits),
                        "wasted_MWh_per_day": (float(g.sum() * dt) - e0) / MWH * per_day, "throughput_cost": 0.0,
                        "it_extra_J": float((i - it).sum() * dt), "it_step_swing_W": smoothing.step_swing_it(m, segments_for(m, ph)),
                        "effect": smoothing.effect(m, i, g, dt, limits)}
    if mit.ramp is not None:
        say("power: mitigation: GPU ramp-rate limit")
        out["ramp"] = _ramp(m, it, grid, dt, limits, mit.ramp, per_day)
    if mit.shelf is not None:
        say("power: mitigation: power-shelf storage")
        out["shelf"] = _shelf(m, grid, dt, limits, mit.shelf, per_day)
    if sum(x is not None for x in (mit.floor, mit.ramp, mit.shelf)) > 1:
        say("power: mitigation: floor, ramp limit and shelf together")
        out["smoothing"] = _together(design, m, grid, dt, limits, mit, per_day)
    if mit.floor is not None or mit.ramp is not None or mit.shelf is not None:
        out["baseline"] = {"what": "no smoothing", "it_step_swing_W": smoothing.step_swing_it(m, segments_for(m, m.base)),
                           "effect": smoothing.effect(m, it, grid, dt, limits)}
    if mit.fill is not None:
        say("power: mitigation: software fill workload")
        _, g = draw(phases_for(m, design, fill=mit.fill.power), mit.fill.slowdown)
        cost = mit.fill.slowdown / (1 + mit.fill.slowdown)  # fewer steps in the same time
        out["fill"] = {"what": "software fill workload", "fill_W": mit.fill.power, "slowdown": mit.fill.slowdown, **_status(g, dt, limits),
                       "wasted_MWh_per_day": (float(g.sum() * dt) - e0) / MWH * per_day, "throughput_cost": cost}
    if mit.battery is not None:
        say("power: mitigation: battery")
        if limits is None:
            out["battery"] = {"what": "energy storage", "note": "the site spec states no utility limits (power.limits): nothing to size for"}
        else:
            out["battery"] = _battery(m, grid, dt, limits, mit.battery, per_day, say)
    return out


def _ramp(m, it: np.ndarray, grid: np.ndarray, dt: float, limits, rl, per_day: float) -> dict:
    """Every GPU rate-limited: the energy burned on slow falls is its price; the energy withheld on slow
    rises is work done later (the step lengthens by it at compute power)."""
    i, extra, deficit = smoothing.ramped_it(m, segments_for(m, m.base), dt, len(it), rl)
    g = smoothing.grid_of(m, i, dt)
    late = deficit / max(1e-9, m.tree.job_gpus * m.base.compute)  # s of compute done later
    cost = late / (m.cfg.duration + late)
    return {"what": "GPU ramp-rate limits", "up_W_per_s": rl.up, "down_W_per_s": rl.down, "hysteresis_s": rl.hysteresis,
            **_status(g, dt, limits), "wasted_MWh_per_day": (float(g.sum() * dt) - float(grid.sum() * dt)) / MWH * per_day,
            "throughput_cost": cost, "it_extra_J": extra, "it_withheld_J": deficit, "effect": smoothing.effect(m, i, g, dt, limits)}


def _shelf(m, grid: np.ndarray, dt: float, limits, cfg, per_day: float) -> dict:
    """Energy in every GPU rack's power shelf: the rack draws a smoothed load within what the shelf stores."""
    i, info = smoothing.shelved_it(m, segments_for(m, m.base), dt, len(grid), cfg)
    g = smoothing.grid_of(m, i, dt)
    return {"what": "power-shelf energy storage", "energy_per_gpu_J": cfg.energy, "efficiency": cfg.efficiency, **info,
            **_status(g, dt, limits), "wasted_MWh_per_day": info["lost_J"] / MWH * per_day, "throughput_cost": 0.0,
            "effect": smoothing.effect(m, i, g, dt, limits)}


def _together(design, m, grid: np.ndarray, dt: float, limits, mit, per_day: float) -> dict:
    """Floor, ramp limits and shelf storage as a GB300 rack runs them: together (the ones given)."""
    segs = segments_for(m, phases_for(m, design, floor=mit.floor) if mit.floor is not None else m.base)
    if mit.shelf is not None:
        i, info = smoothing.shelved_it(m, segs, dt, len(grid), mit.shelf, mit.ramp)
        lost = info["lost_J"]
    else:
        i, extra, deficit = smoothing.ramped_it(m, segs, dt, len(grid), mit.ramp)
        info, lost = {"it_extra_J": extra, "it_withheld_J": deficit}, 0.0
    g = smoothing.grid_of(m, i, dt)
    late = info["it_withheld_J"] / max(1e-9, m.tree.job_gpus * m.base.compute)
    given = [k for k in ("floor", "ramp", "shelf") if getattr(mit, k) is not None]
    return {"what": "GPU power smoothing: " + " + ".join(given), **_status(g, dt, limits),
            "wasted_MWh_per_day": (float(g.sum() * dt) - float(grid.sum() * dt) + lost) / MWH * per_day,
            "throughput_cost": late / (m.cfg.duration + late), **info, "effect": smoothing.effect(m, i, g, dt, limits)}


def _battery(m, grid: np.ndarray, dt: float, limits, cfg, per_day: float, say=None) -> dict:
    say = say or (lambda _m: None)
    ok = lambda g: verdicts.passes(g, dt, limits)  # noqa: E731
    res: dict = {"what": "energy storage", "efficiency": cfg.efficiency}
    if cfg.level in ("site", "both"):
        say("power: mitigation: battery at the site: its time constant")
        sz = size_battery(grid, dt, ok)
        if sz is None:
            res["site"] = {"note": "no battery of this policy meets the limits within a 4 h time constant"}
        else:
            if sz["tau_s"] > 0:
                say("power: mitigation: battery at the site: the least power and energy (bisection)")
                sz = smallest(grid, dt, ok, sz)
            site = _priced(sz, cfg.efficiency, per_day)
            if sz["tau_s"] > 0:
                say("power: mitigation: battery at the site: 5% margins")
                _, b = battery_policy(grid, dt, sz["tau_s"])
                P, E, E0 = sz["power_W"], sz["energy_J"], sz["initial_J"]
                site["passes"] = ok(limited(grid, b, dt, P, E, E0))
                site["passes_with_5pct_less_power"] = ok(limited(grid, b, dt, 0.95 * P, E, E0))
                site["passes_with_5pct_less_energy"] = ok(limited(grid, b, dt, P, 0.95 * E, 0.95 * E0))
            res["site"] = site
    if cfg.level in ("rack", "both"):
        say("power: mitigation: battery in every rack")
        res["rack"] = _rack_battery(m, grid, dt, ok, cfg.efficiency, per_day)
    return res


def smallest(x: np.ndarray, dt: float, ok, sz: dict, rel: float = 0.01) -> dict:
    """Shrink the policy's battery: the least power, then the least energy (initial charge scaled with
    it) with which the saturating battery still passes; bisection to ``rel``. The policy's own size
    (never saturating) is the upper end, so the result passes by construction of the search."""
    _, b = battery_policy(x, dt, sz["tau_s"])
    P, E, E0 = sz["power_W"], sz["energy_J"], sz["initial_J"]

    def least(passes_at, hi: float) -> float:
        lo = 0.0
        while hi - lo > rel * hi:
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if passes_at(mid) else (mid, hi)
        return hi

    P = least(lambda p: ok(limited(x, b, dt, p, E, E0)), P)
    E_new = least(lambda e: ok(limited(x, b, dt, P, e, E0 * e / E)), E) if E > 0 else 0.0
    E0 = E0 * E_new / E if E > 0 else 0.0
    delivered = (x - limited(x, b, dt, P, E_new, E0))
    return {"tau_s": sz["tau_s"], "power_W": P, "energy_J": E_new, "initial_J": E0,
            "charged_J": float(np.clip(-delivered, 0, None).sum() * dt)}


def _priced(sz: dict, eff: float, per_day: float) -> dict:
    return {"tau_s": sz["tau_s"], "power_MW": sz["power_W"] / 1e6, "energy_MWh": sz["energy_J"] / MWH,
            "initial_charge_MWh": sz["initial_J"] / MWH, "wasted_MWh_per_day": (1 - eff) * sz["charged_J"] / MWH * per_day}


def _rack_battery(m, grid: np.ndarray, dt: float, ok, eff: float, per_day: float) -> dict:
    """A battery in every GPU rack with the same policy: racks with the same contents share a size."""
    tree = m.tree
    ch = tree.ch
    gpu = (tree.rack_W[:, : ch.stages].sum(axis=1) + tree.rack_W[:, ch.other_gpu]) > 0
    classes, counts = np.unique(tree.rack_W[gpu], axis=0, return_counts=True)
    segs = segments_for(m, m.base)
    n = len(grid)
    total = np.zeros(n)
    for w, c in zip(classes, counts):
        total += c * bin_average(segs, 0.0, dt, n, w[None, :])[0]
    rest = grid - total
    tau = bisect_tau(lambda t: ok(grid if t == 0 else low_pass(total, dt, t) + rest), dt)
    if tau is None:
        return {"note": "rack batteries of this policy cannot meet the limits within a 4 h time constant"}
    P = E = ch_ = 0.0
    if tau > 0:
        for w, c in zip(classes, counts):
            x = bin_average(segs, 0.0, dt, n, w[None, :])[0]
            s = size_of(x - low_pass(x, dt, tau), dt)
            P += c * s["power_W"]
            E += c * s["energy_J"]
            ch_ += c * s["charged_J"]
    racks = int(counts.sum())
    return {"tau_s": tau, "racks": racks, "power_MW": P / 1e6, "energy_MWh": E / MWH, "per_rack_kW": P / max(1, racks) / 1e3,
            "per_rack_kWh": E / max(1, racks) / 3.6e6, "wasted_MWh_per_day": (1 - eff) * ch_ / MWH * per_day}
