"""What a utility sees in a draw: peak, trough, swings, ramps, the spectrum, and pass/fail per limit.

Definitions (the limits in the site spec use the same ones):

- ramp: the change of the draw over ``ramp_window`` divided by that window, ``|x(t+w) - x(t)| / w``;
- swing: the largest peak-to-trough range inside any ``swing_window``;
- oscillation in a band: from the discrete Fourier transform of each ``window`` of the draw (its mean
  removed), the band's mean-square power ``(2 / n^2) sum |X_k|^2`` over the band's bins; reported as the
  amplitude of a sinusoid with that energy (``sqrt(2 x mean square)``) and as a share of the window's
  fluctuation energy (Parseval: the shares of all bands add up to 1).

>>> import numpy as np
>>> t = np.arange(0, 600, 0.01)
>>> x = 10e6 + 2e6 * np.sin(2 * np.pi * 0.5 * t)             # a 2 MW oscillation at 0.5 Hz
>>> round(float(band_amplitude(x, 0.01, 60.0, (0.1, 20.0))[0].max()) / 1e6, 3)
2.0
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import maximum_filter1d, minimum_filter1d

STANDARD_BANDS = ((0.0, 0.1), (0.1, 1.0), (1.0, 20.0), (20.0, float("inf")))


def summary(x: np.ndarray, dt: float, t0: float = 0.0) -> dict:
    i, j = int(x.argmax()), int(x.argmin())
    return {"peak_W": float(x[i]), "peak_at_s": t0 + i * dt, "trough_W": float(x[j]), "trough_at_s": t0 + j * dt,
            "mean_W": float(x.mean()), "range_W": float(x[i] - x[j]), "energy_J": float(x.sum() * dt)}


def ramp(x: np.ndarray, dt: float, window: float) -> tuple[float, float]:
    """(largest |change| / window in W/s, time at the start of that window)."""
    m = max(1, int(round(window / dt)))
    if len(x) <= m:
        return 0.0, 0.0
    d = np.abs(x[m:] - x[:-m])
    i = int(d.argmax())
    return float(d[i] / (m * dt)), i * dt


def swing(x: np.ndarray, dt: float, window: float) -> tuple[float, float]:
    """(largest max - min inside any window, start time of that window)."""
    m = max(2, int(round(window / dt)) + 1)
    if len(x) <= m:
        return float(x.max() - x.min()), 0.0
    org = -(m // 2)  # window [i, i + m) anchored at its start
    r = maximum_filter1d(x, m, origin=org, mode="nearest") - minimum_filter1d(x, m, origin=org, mode="nearest")
    r = r[: len(x) - m + 1]
    i = int(r.argmax())
    return float(r[i]), i * dt


def spectrum(x: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """(frequencies in Hz, one-sided mean-square power per bin in W^2) of the whole draw, mean removed.
    The sum over all bins is the variance of the draw."""
    n = len(x)
    X = np.fft.rfft(x - x.mean())
    ms = (np.abs(X) ** 2) * (2.0 / n**2)
    ms[0] = 0.0
    if n % 2 == 0:
        ms[-1] /= 2
    return np.fft.rfftfreq(n, dt), ms


def band_table(f: np.ndarray, ms: np.ndarray, bands) -> list[dict]:
    total = float(ms.sum()) or 1.0
    out = []
    for lo, hi in bands:
        sel = (f >= lo) & (f < hi) if np.isfinite(hi) else (f >= lo)
        e = float(ms[sel].sum())
        out.append({"band_Hz": [lo, hi if np.isfinite(hi) else None], "mean_square_W2": e,
                    "amplitude_W": float(np.sqrt(2 * e)), "share": e / total})
    return out


def dominant(f: np.ndarray, ms: np.ndarray, f_min: float = 0.0) -> float:
    sel = f > f_min
    return float(f[sel][ms[sel].argmax()]) if sel.any() else 0.0


def band_amplitude(x: np.ndarray, dt: float, window: float, band: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Per window of ``window`` seconds: (equivalent amplitude in the band in W, share of the window's
    fluctuation energy). Windows are consecutive; a shorter tail is dropped."""
    m = max(4, int(round(window / dt)))
    k = len(x) // m
    if k == 0:
        m, k = len(x), 1
    out_a, out_s = np.empty(k), np.empty(k)
    f = np.fft.rfftfreq(m, dt)
    sel = (f >= band[0]) & (f <= band[1]) & (f > 0)
    step = max(1, (1 << 22) // m)
    for a in range(0, k, step):
        b = min(k, a + step)
        blk = x[a * m: b * m].reshape(b - a, m)
        X = np.fft.rfft(blk - blk.mean(axis=1, keepdims=True), axis=1)
        p = np.abs(X) ** 2 * (2.0 / m**2)
        p[:, 0] = 0.0
        if m % 2 == 0:
            p[:, -1] /= 2
        e = p[:, sel].sum(axis=1)
        out_a[a:b] = np.sqrt(2 * e)
        out_s[a:b] = e / np.maximum(p.sum(axis=1), 1e-300)
    return out_a, out_s


def _checks(x: np.ndarray, dt: float, limits, t0: float = 0.0):
    """Each limit of a :class:`twin.lang.site.power.UtilityLimits` checked in turn, cheapest first (ramp, swing,
    the oscillation bands), as it is computed: :func:`passes` stops at the first that fails."""
    if limits is None:
        return
    if limits.max_ramp is not None:
        v, at = ramp(x, dt, limits.ramp_window)
        yield _verdict({"limit": f"ramp over {limits.ramp_window:g} s", "kind": "ramp", "value": v, "limit_value": limits.max_ramp,
                         "unit": "W/s", "worst_at_s": t0 + at, "pass": v <= limits.max_ramp})
    if limits.max_swing is not None:
        v, at = swing(x, dt, limits.swing_window)
        yield _verdict({"limit": f"swing within {limits.swing_window:g} s", "kind": "swing", "value": v, "limit_value": limits.max_swing,
                         "unit": "W", "worst_at_s": t0 + at, "pass": v <= limits.max_swing})
    for o in limits.oscillation:
        amp, share = band_amplitude(x, dt, o.window, o.band)
        name = o.name or f"oscillation {o.band[0]:g}-{o.band[1]:g} Hz"
        if o.max_amplitude is not None:
            i = int(amp.argmax())
            yield _verdict({"limit": name, "kind": "oscillation", "value": float(amp[i]), "limit_value": o.max_amplitude, "unit": "W",
                             "worst_at_s": t0 + i * o.window, "pass": bool(amp[i] <= o.max_amplitude)})
        if o.max_share is not None:
            i = int(share.argmax())
            yield _verdict({"limit": name + " (share)", "kind": "oscillation-share", "value": float(share[i]), "limit_value": o.max_share,
                        "unit": "", "worst_at_s": t0 + i * o.window, "pass": bool(share[i] <= o.max_share)})


def _verdict(v: dict) -> dict:
    v["pass"] = bool(v["pass"])
    return v


def check(x: np.ndarray, dt: float, limits, t0: float = 0.0) -> list[dict]:
    """Pass/fail for every limit of a :class:`twin.lang.site.power.UtilityLimits`, with the worst moment."""
    return list(_checks(x, dt, limits, t0))


def passes(x: np.ndarray, dt: float, limits) -> bool:
    """Whether ``x`` meets every limit: the checks in :func:`check`'s order, stopping at the first that fails
    (the same answer as ``all(v["pass"] for v in check(...))``, without the checks it does not need)."""
    return all(v["pass"] for v in _checks(x, dt, limits))
