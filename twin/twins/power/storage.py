"""Energy storage that makes the grid-side draw meet the utility's limits, and its smallest size.

Control policy (one family, one knob): the grid supplies a first-order low-pass of the load with time
constant tau, ``g[k] = g[k - 1] + a (x[k] - g[k - 1])``, ``a = dt / (tau + dt)``; the battery supplies
the rest, ``b = x - g`` (discharging when positive). A larger tau gives a smoother grid draw (ramp at
most swing / tau, an oscillation at f attenuated by ``1 / sqrt(1 + (2 pi f tau)^2)``) and needs a
larger battery. The battery the policy needs is ``max |b|`` (MW) and the range of its state of charge
(MWh); :func:`size_battery` bisects tau for the smallest that meets every limit.

A battery smaller than that (:func:`limited`) saturates: it delivers at most its power, its state of
charge stays within its capacity (the exact two-sided clipped integrator), and the grid takes the rest.

>>> import numpy as np
>>> x = np.r_[np.zeros(100), np.full(100, 10.0)]                       # a 10 W step at 1 s
>>> g, b = battery_policy(x, 0.01, 0.5)
>>> round(float(abs(b).max()), 2), round(float(np.diff(g).max() / 0.01), 1)   # battery takes the step
(9.8, 19.6)
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter


def low_pass(x: np.ndarray, dt: float, tau: float) -> np.ndarray:
    """First-order low-pass starting at the first sample."""
    a = dt / (tau + dt)
    y, _ = lfilter([a], [1.0, a - 1.0], x, zi=[x[0] * (1 - a)])
    return y


def battery_policy(x: np.ndarray, dt: float, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """(grid draw, battery power) of the policy with time constant ``tau``."""
    g = low_pass(x, dt, tau)
    return g, x - g


def size_of(b: np.ndarray, dt: float) -> dict:
    """Power (W), usable energy (J), initial charge (J) and energy charged (J) a battery needs to
    deliver ``b`` (positive = discharge)."""
    soc = -np.cumsum(b) * dt
    lo, hi = min(0.0, float(soc.min())), max(0.0, float(soc.max()))
    return {"power_W": float(np.abs(b).max()), "energy_J": hi - lo, "initial_J": -lo, "charged_J": float(np.clip(-b, 0, None).sum() * dt)}


def clipped_integral(inc: np.ndarray, lo: float, hi: float, e0: float, chunk: int = 1 << 16) -> np.ndarray:
    """``e[k] = clip(e[k - 1] + inc[k], lo, hi)`` from ``e0``, vectorised: between hits of one bound the
    path is the one-sided reflection ``P - (runmax(P) - hi)+`` (or its mirror at ``lo``)."""
    n = len(inc)
    out = np.empty(n)
    i, e = 0, min(max(e0, lo), hi)
    while i < n:
        j_end = min(n, i + chunk)
        P = e + np.cumsum(inc[i:j_end])
        over, under = P > hi, P < lo
        io = int(over.argmax()) if over.any() else len(P)
        iu = int(under.argmax()) if under.any() else len(P)
        if io == len(P) and iu == len(P):
            out[i:j_end] = P
            i, e = j_end, float(P[-1])
            continue
        if io < iu:
            Q = P - np.maximum(np.maximum.accumulate(P) - hi, 0.0)
            bad = Q < lo
        else:
            Q = P + np.maximum(lo - np.minimum.accumulate(P), 0.0)
            bad = Q > hi
        k = int(bad.argmax()) if bad.any() else len(P)
        out[i:i + k] = Q[:k]
        if k < len(P):
            out[i + k] = lo if io < iu else hi
            e, i = float(out[i + k]), i + k + 1
        else:
            e, i = float(Q[-1]), j_end
    return out


def limited(x: np.ndarray, b: np.ndarray, dt: float, power: float, energy: float, initial: float) -> np.ndarray:
    """The grid draw when a battery of ``power`` W and ``energy`` J (starting at ``initial`` J) tries
    to deliver ``b``: what it cannot deliver, the grid takes."""
    want = np.clip(b, -power, power)
    soc = clipped_integral(-want * dt, 0.0, energy, initial)
    prev = np.concatenate([[min(max(initial, 0.0), energy)], soc[:-1]])
    delivered = (prev - soc) / dt
    return x - delivered


def bisect_tau(passes_at, dt: float, tau_max: float = 4 * 3600.0, rel: float = 0.01) -> float | None:
    """Smallest time constant (within ``rel``) for which ``passes_at(tau)`` holds; 0 if no smoothing is
    needed; None if even ``tau_max`` fails. Bisection on log tau (the limits get easier as tau grows)."""
    if passes_at(0.0):
        return 0.0
    lo, hi = dt, tau_max
    if not passes_at(hi):
        return None
    while hi / lo > 1 + rel:
        mid = float(np.sqrt(lo * hi))
        if passes_at(mid):
            hi = mid
        else:
            lo = mid
    return hi


def size_battery(x: np.ndarray, dt: float, ok, tau_max: float = 4 * 3600.0, rel: float = 0.01) -> dict | None:
    """The smallest policy time constant whose grid draw passes ``ok(grid)``, and the battery it needs."""
    tau = bisect_tau(lambda t: ok(x if t == 0 else battery_policy(x, dt, t)[0]), dt, tau_max, rel)
    if tau is None:
        return None
    if tau == 0:
        return {"tau_s": 0.0, "power_W": 0.0, "energy_J": 0.0, "initial_J": 0.0, "charged_J": 0.0}
    _, b = battery_policy(x, dt, tau)
    return {"tau_s": tau, **size_of(b, dt)}
