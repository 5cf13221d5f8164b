"""GPU-side power smoothing (GB300 NVL72 generation): ramp-rate limits and the racks' power-shelf storage,
and what each does to the grid-side draw.

NVIDIA's power smoothing (NVML's power-smoothing profile: a power floor, a ramp-up and a ramp-down
rate in W/s, a ramp-down hysteresis; and energy storage in the rack power shelves, [gb300]) acts
between the GPUs and the grid. The floor is drawn by the phases (:mod:`twin.twins.power.phases`); here:

- **ramp-rate limits** on every GPU: its power rises at most ``up`` W/s and, after holding its power
  for ``hysteresis``, falls at most ``down`` W/s. Applied to each GPU channel of the trace (one GPU of
  each pipeline stage, the GPUs outside the job) at the scenario's resolution, so it acts at job
  starts, checkpoints and failures as at every step. A slow fall burns energy the GPU would not have
  used (its price); a slow rise withholds power the GPU wanted: the work is done later (assumed: the
  withheld energy at compute power, so the step lengthens by ``deficit / (GPUs x compute W)``).
- **power-shelf storage** of ``energy`` J per GPU in every GPU rack: the rack draws its load's mean
  over the last step (steady stepping then draws a constant) and the shelf supplies the difference,
  less ``(charge - half full) / (10 steps)`` (the charge read every second) so that its charge comes
  back after a job start, a checkpoint or a failure (an assumed policy). Steady stepping needs
  ``dP x t_high x t_low / T`` per GPU; a smaller shelf empties and fills every step: an exact
  saturating store (:func:`twin.twins.power.storage.clipped_integral`), the grid taking what it
  cannot. Its price is the round-trip loss ``(1 - efficiency) x`` the energy it charges (reported,
  not drawn).

The grid side adds the cooling plant (:func:`grid_of`). Each mitigation reports the grid-side peak,
the fastest ramp, the swing within one step and within a minute, the largest oscillation in the
critical band (0.1-20 Hz, [choukse25]) per minute, and the energy it costs.

>>> x = np.array([0.0, 0.0, 10.0, 10.0, 10.0, 0.0, 0.0, 0.0, 0.0])
>>> slew(x, 1.0, 4.0, 2.0, 1.0).tolist()     # up 4 W/s (the mean of each 1 s bin); hold 1 s, then down 2 W/s
[0.0, 0.0, 2.0, 6.0, 9.5, 10.0, 9.0, 7.0, 5.0]
"""

from __future__ import annotations

import math

import numpy as np
from scipy.ndimage import maximum_filter1d, minimum_filter1d

from twin.twins.power import verdicts
from twin.twins.power.model import Model, pue_series
from twin.twins.power.storage import clipped_integral, low_pass
from twin.twins.power.trace import bin_average, extremes

CRITICAL_BAND = (0.1, 20.0)  # Hz: the band utilities watch for oscillation ([choukse25])
RESTORE_STEPS = 10.0  # the shelf's charge comes back to half full within about this many steps (assumed)


def grid_of(m: Model, it: np.ndarray, dt: float) -> np.ndarray:
    """The grid-side draw of an IT load series: IT plus the cooling plant (PUE - 1) following it with a lag."""
    t_mid = (np.arange(len(it)) + 0.5) * dt
    return it + (pue_series(m, t_mid) - 1.0) * low_pass(it, dt, m.cfg.cooling_lag)


def _approach(c: float, v: float, rate: float, k: np.ndarray) -> np.ndarray:
    """Bin averages over bins ``k - 1 .. k`` (in samples) of a ramp from ``c`` towards ``v`` at ``rate``
    per sample that stops at ``v`` (exact, including the bin where it arrives)."""
    if rate == math.inf:
        return np.full(len(k), v)
    s = 1.0 if v >= c else -1.0
    g0 = s * (v - c) - rate * (k - 1)  # distance still to go at each bin's start and end
    g1 = g0 - rate
    left = np.where(g1 >= 0, (g0 + g1) / 2, np.where(g0 > 0, g0 * g0 / (2 * rate), 0.0))
    return v - s * left


def slew(x: np.ndarray, dt: float, up: float | None, down: float | None, hold: float = 0.0) -> np.ndarray:
    """Bin averages of ``x`` (bin averages of a target) through a rate limiter: the power rises at most
    ``up`` W/s and, after holding ``hold`` s, falls at most ``down`` W/s; ramps start at bin edges and
    each bin is the exact mean of the ramp over it; starts at ``x[0]``. Works on runs of equal samples
    (a trace is mostly flat)."""
    n = len(x)
    y = np.empty(n)
    if n == 0:
        return y
    du = up * dt if up else math.inf
    dd = down * dt if down else math.inf
    k_hold = int(round(hold / dt))
    tol = 1e-9 * (float(np.abs(x).max()) + 1.0)  # bin averages of one level differ in the last bits
    edges = np.flatnonzero(np.abs(np.diff(x)) > tol) + 1
    starts = np.concatenate([[0], edges])
    ends = np.concatenate([edges, [n]])
    cur = float(x[0])  # the instantaneous power at the start of the run
    fall_from = -1  # sample at which the present fall began (-1: not falling)
    for a, b in zip(starts.tolist(), ends.tolist()):
        v, m = float(x[a]), b - a
        k = np.arange(1, m + 1, dtype=float)
        if v >= cur:
            fall_from = -1
            y[a:b] = _approach(cur, v, du, k)
            cur = min(cur + du * m, v)
        else:
            if fall_from < 0:
                fall_from = a
            wait = min(m, max(0, fall_from + k_hold - a))
            y[a:a + wait] = cur
            if m > wait:
                y[a + wait:b] = _approach(cur, v, dd, k[: m - wait])
                cur = max(cur - dd * (m - wait), v)
        if cur == v:
            fall_from = -1
    return y


def gpu_channels(m: Model) -> list[int]:
    ch = m.tree.ch
    return [*range(ch.stages), ch.other_gpu]


def drawn(m: Model, segs, dt: float, n: int, w: np.ndarray, rl=None) -> tuple[np.ndarray, float, float]:
    """The load of weight row ``w`` (site, rack) with every GPU rate-limited by ``rl`` (none: as traced),
    J burned above the unlimited load and J withheld below it. Each GPU channel the row holds is
    limited on its own (a GPU's power, then weighted)."""
    gpu = gpu_channels(m)
    rest = w.copy()
    rest[gpu] = 0.0
    out = bin_average(segs, 0.0, dt, n, rest[None, :])[0]
    extra = deficit = 0.0
    for c in gpu:
        if w[c] == 0:
            continue
        e = np.zeros_like(w)
        e[c] = 1.0
        x = bin_average(segs, 0.0, dt, n, e[None, :])[0]
        y = slew(x, dt, rl.up, rl.down, rl.hysteresis) if rl is not None else x
        out += w[c] * y
        d = (y - x) * dt
        extra += w[c] * float(d[d > 0].sum())
        deficit -= w[c] * float(d[d < 0].sum())
    return out, extra, deficit


def ramped_it(m: Model, segs, dt: float, n: int, rl) -> tuple[np.ndarray, float, float]:
    """(IT load with every GPU rate-limited, J burned above the unlimited load, J withheld below it)."""
    return drawn(m, segs, dt, n, m.tree.site_W[0], rl)


def shelf(x: np.ndarray, dt: float, k: int, energy: float, restore: float, hold: float = 1.0) -> np.ndarray:
    """The rack's draw from its busway behind a shelf of ``energy`` J: its load's mean over the last
    ``k`` samples (one step), less ``(charge - energy / 2) / restore`` with the charge read every
    ``hold`` s (the controller's update), never outside the range of its load over those samples; what
    the shelf cannot give or take (empty, full) the busway carries. Before the trace the rack ran like
    its first step (``k <= len(x)``)."""
    n = len(x)
    before = x[:k]
    c = np.concatenate([[0.0], np.cumsum(np.concatenate([before, x]))])
    ma = (c[k + 1:] - c[1:n + 1]) / k  # mean of the k samples ending at each one
    o = (k - 1) // 2  # a trailing window
    hi = maximum_filter1d(x, k, origin=o, mode="nearest")
    lo = minimum_filter1d(x, k, origin=o, mode="nearest")
    hi[:k], lo[:k] = np.maximum(hi[:k], before.max()), np.minimum(lo[:k], before.min())
    y = np.empty(n)
    soc, blk = energy / 2, max(1, int(round(hold / dt)))
    for a in range(0, n, blk):
        b = min(n, a + blk)
        g = np.clip(ma[a:b] - (soc - energy / 2) / restore, lo[a:b], hi[a:b])
        e = clipped_integral((g - x[a:b]) * dt, 0.0, energy, soc)
        prev = np.concatenate([[soc], e[:-1]])
        y[a:b] = x[a:b] + (e - prev) / dt
        soc = float(e[-1])
    return y


def shelved_it(m: Model, segs, dt: float, n: int, cfg, rl=None) -> tuple[np.ndarray, dict]:
    """IT load with every GPU rack behind its power shelf's storage (its GPUs rate-limited by ``rl`` first,
    if given); racks with the same contents run alike and share one calculation."""
    tree = m.tree
    gpu = gpu_channels(m)
    rack_gpus = tree.rack_W[:, gpu].sum(axis=1)
    classes, counts = np.unique(tree.rack_W[rack_gpus > 0], axis=0, return_counts=True)
    it, extra, deficit = drawn(m, segs, dt, n, tree.site_W[0], rl)
    charged = stored = 0.0
    k = max(1, min(n, int(round(m.profile.step_s / dt))))
    restore = RESTORE_STEPS * m.profile.step_s
    for w, c in zip(classes, counts):
        x = drawn(m, segs, dt, n, w, rl)[0]
        e = cfg.energy * float(w[gpu].sum())
        y = shelf(x, dt, k, e, restore)
        it += c * (y - x)
        charged += c * float(np.clip(y - x, 0, None).sum() * dt)
        stored += c * e
    return it, {"racks": int(counts.sum()), "stored_J": stored, "window_s": k * dt, "restore_s": restore, "charged_J": charged,
                "lost_J": (1 - cfg.efficiency) * charged, "it_extra_J": extra, "it_withheld_J": deficit}


def step_swing_it(m: Model, segs) -> float:
    """Largest minus smallest instantaneous IT load while the job steps (exact, from the segments)."""
    run = [s for s in segs if s.state == "run"]
    if not run:
        return 0.0
    ex = extremes(run, m.tree.site_W)
    return float(ex["max"][0] - ex["min"][0])


def step_swing(x: np.ndarray, dt: float, step: float) -> float:
    """The typical swing of one step: the median of max - min over consecutive windows of one step
    (a job start or a checkpoint is a few windows among many)."""
    k = max(2, int(round(step / dt)))
    w = len(x) // k
    if w == 0:
        return float(x.max() - x.min())
    blk = x[: w * k].reshape(w, k)
    return float(np.median(blk.max(axis=1) - blk.min(axis=1)))


def effect(m: Model, it: np.ndarray, grid: np.ndarray, dt: float, limits) -> dict:
    """What the grid sees: peak, fastest ramp, swing within a step and a minute, critical-band oscillation
    (the utility's own limits are checked by the caller)."""
    amp, _ = verdicts.band_amplitude(grid, dt, 60.0, CRITICAL_BAND)
    return {"peak_W": float(grid.max()), "ramp_W_per_s": verdicts.ramp(grid, dt, limits.ramp_window if limits else 1.0)[0],
            "step_swing_W": step_swing(grid, dt, m.profile.step_s), "swing_60s_W": verdicts.swing(grid, dt, 60.0)[0],
            "oscillation_W": float(amp.max()), "it_energy_J": float(it.sum() * dt), "grid_energy_J": float(grid.sum() * dt)}
