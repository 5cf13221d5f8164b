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
- **power-shelf storage** of ``energy`` J per GPU in every GPU rack: the rack draws a smoothed version
  of its load, ``G(s) = (1 + (tau + tau2) s) / ((1 + tau s)(1 + tau2 s))`` with ``tau2 = 4 tau``
  (assumed: a low-pass whose second pole brings the shelf's charge back to where it started after any
  change of level, so a job start does not leave it empty), steady before the trace at the mean of
  the first step and held within the range of the rack's load over the last step, and the shelf
  supplies the difference. tau
  is the largest (to 10 minutes) whose charge swing over the trace fits in the rack's storage, and at
  least what attenuates the step's fundamental (a smaller shelf saturates); the shelf is an exact
  saturating store (:func:`twin.twins.power.storage.limited`). Its price is the
  round-trip loss ``(1 - efficiency) x`` the energy it charges.

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
from scipy.signal import bilinear, lfilter, lfilter_zi

from twin.twins.power import verdicts
from twin.twins.power.model import Model, pue_series
from twin.twins.power.storage import limited, low_pass, size_of
from twin.twins.power.trace import bin_average, extremes

CRITICAL_BAND = (0.1, 20.0)  # Hz: the band utilities watch for oscillation ([choukse25])
TAU2_RATIO = 4.0  # the shelf filter's charge-restoring pole (assumed)
SHELF_TAU_MAX = 600.0  # s


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


def ramped_it(m: Model, segs, dt: float, n: int, rl) -> tuple[np.ndarray, float, float]:
    """(IT load with every GPU rate-limited, J burned above the unlimited load, J withheld below it)."""
    W = m.tree.site_W[0]
    gpu = gpu_channels(m)
    rest = W.copy()
    rest[gpu] = 0.0
    it = bin_average(segs, 0.0, dt, n, rest[None, :])[0]
    extra = deficit = 0.0
    for c in gpu:
        if W[c] == 0:
            continue
        e = np.zeros_like(W)
        e[c] = 1.0
        x = bin_average(segs, 0.0, dt, n, e[None, :])[0]
        y = slew(x, dt, rl.up, rl.down, rl.hysteresis)
        it += W[c] * y
        d = (y - x) * dt
        extra += W[c] * float(d[d > 0].sum())
        deficit -= W[c] * float(d[d < 0].sum())
    return it, extra, deficit


def shelf_filter(x: np.ndarray, dt: float, tau: float, start: float, window: int) -> np.ndarray:
    """The rack's draw from its busway under the shelf's policy, steady at ``start`` W before the trace,
    and never outside the range of the rack's own load over the last ``window`` samples (the filter's
    recharge would otherwise overshoot the load)."""
    t2 = TAU2_RATIO * tau
    b, a = bilinear([tau + t2, 1.0], [tau * t2, tau + t2, 1.0], fs=1.0 / dt)
    g, _ = lfilter(b, a, x, zi=lfilter_zi(b, a) * start)
    o = (window - 1) // 2  # a trailing window
    hi = maximum_filter1d(x, window, origin=o, mode="nearest")
    lo = minimum_filter1d(x, window, origin=o, mode="nearest")
    hi[:window], lo[:window] = x[:window].max(), x[:window].min()  # before the trace: like its first step
    return np.clip(g, lo, hi)


def shelf_tau(x: np.ndarray, dt: float, energy: float, start: float, window: int, rel: float = 0.02) -> float:
    """The largest time constant (to ``rel``) whose charge swing fits in ``energy`` J (at least ``dt``)."""
    def fits(tau: float) -> bool:
        return size_of(x - shelf_filter(x, dt, tau, start, window), dt)["energy_J"] <= energy

    if fits(SHELF_TAU_MAX):
        return SHELF_TAU_MAX
    lo, hi = dt, SHELF_TAU_MAX
    if not fits(lo):
        return lo
    while hi / lo > 1 + rel:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def shelved_it(m: Model, segs, dt: float, n: int, cfg) -> tuple[np.ndarray, dict]:
    """IT load with every GPU rack behind its power shelf's storage; racks with the same contents run
    alike and share one calculation."""
    tree = m.tree
    gpu = gpu_channels(m)
    rack_gpus = tree.rack_W[:, gpu].sum(axis=1)
    classes, counts = np.unique(tree.rack_W[rack_gpus > 0], axis=0, return_counts=True)
    it = bin_average(segs, 0.0, dt, n, tree.site_W)[0]
    charged = 0.0
    taus, stored = [], 0.0
    k = max(1, min(n, int(round(m.profile.step_s / dt))))
    for w, c in zip(classes, counts):
        x = bin_average(segs, 0.0, dt, n, w[None, :])[0]
        e = cfg.energy * float(w[gpu].sum())
        start = float(x[:k].mean())  # before the trace the rack drew its first step's mean (or its idle load)
        # below tau_min the filter would amplify the step's fundamental (|G| > 1 for tau w < sqrt(2 / ratio)):
        # a shelf too small for it runs at tau_min and saturates instead
        tau_min = math.sqrt(2 / TAU2_RATIO) * m.profile.step_s / (2 * math.pi)
        tau = max(tau_min, shelf_tau(x, dt, e, start, k))
        b = x - shelf_filter(x, dt, tau, start, k)
        sz = size_of(b, dt)
        start = min(e, sz["initial_J"] + max(0.0, e - sz["energy_J"]) / 2)
        y = limited(x, b, dt, math.inf, e, start)
        it += c * (y - x)
        charged += c * float(np.clip(y - x, 0, None).sum() * dt)
        taus.append(tau)
        stored += c * e
    return it, {"racks": int(counts.sum()), "stored_J": stored, "tau_s": min(taus) if taus else 0.0, "charged_J": charged,
                "lost_J": (1 - cfg.efficiency) * charged}


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
