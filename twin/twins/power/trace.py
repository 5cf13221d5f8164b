"""Power over time as exact bin averages of a piecewise-constant load.

The site's load is a weighted sum of *channels*: one channel per pipeline stage (the power of one GPU
of that stage), one for GPUs outside the job, one for the rest of a job server, one for the rest of
another server, and a constant 1 W. A node of the power tree (rack, row, hall, site) is a weight
vector over the channels (how many GPUs of each stage it holds, ...), so every level is one matrix
product away from the same channel description.

Time is cut into *segments*: stepping at a fixed step profile (repeating with period S from an
origin), or a constant state (checkpoint, restore, idle). Each segment stores, per channel, the
cumulative energy at the breakpoints of one period. The energy up to any time t is then exact
(whole periods x energy per period + a linear interpolation inside the period), and a sample is the
energy difference across its bin divided by its width: the series conserves energy exactly at any
resolution, and phase edges between samples are averaged, not aliased.

>>> import numpy as np
>>> seg = stepping(0.0, 10.0, 0.0, 2.0, np.array([0.0, 1.0, 2.0]), np.array([[0.0, 100.0, 100.0]]))
>>> bin_average([seg], 0.0, 0.5, 8, np.array([[1.0]]))[0].tolist()   # 100 W for 1 s, 0 W for 1 s
[100.0, 100.0, 0.0, 0.0, 100.0, 100.0, 0.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Segment:
    """``[t0, t1)``: the load repeats with ``period`` from ``origin``; ``energy[c, k]`` is the energy of
    channel c from the start of a period to ``xs[k]`` (``xs[0] = 0``, ``xs[-1] = period``)."""

    t0: float
    t1: float
    origin: float
    period: float
    xs: np.ndarray  # (K,)
    energy: np.ndarray  # (C, K)
    state: str = "run"

    def levels(self) -> tuple[np.ndarray, np.ndarray]:
        """(interval starts, power per channel on each interval) for intervals of positive length."""
        dx = np.diff(self.xs)
        keep = dx > 1e-9 * self.period  # a sliver from rounding is not a level of its own
        return self.xs[:-1][keep], (np.diff(self.energy, axis=1)[:, keep] / dx[keep])


def stepping(t0: float, t1: float, origin: float, period: float, xs: np.ndarray, energy: np.ndarray, state: str = "run") -> Segment:
    return Segment(float(t0), float(t1), float(origin), float(period), np.asarray(xs, float), np.asarray(energy, float), state)


def constant(t0: float, t1: float, power: np.ndarray, state: str) -> Segment:
    """A constant load per channel (W)."""
    p = np.asarray(power, float)
    return Segment(float(t0), float(t1), float(t0), 1.0, np.array([0.0, 1.0]), np.stack([np.zeros_like(p), p], axis=1), state)


def _periodic(seg: Segment, Ew: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Energy of weighted channels (rows of ``Ew``, over ``seg.xs``) from the segment origin to ``t``."""
    x = t - seg.origin
    k = np.floor(x / seg.period)
    r = x - k * seg.period
    idx = np.clip(np.searchsorted(seg.xs, r, side="right") - 1, 0, len(seg.xs) - 2)
    dx = np.diff(seg.xs)
    slope = np.divide(np.diff(Ew, axis=1), dx, out=np.zeros((Ew.shape[0], len(dx))), where=dx > 0)
    return k * Ew[:, -1:] + Ew[:, idx] + slope[:, idx] * (r - seg.xs[idx])


def energy_at(segs: list[Segment], t: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Cumulative energy (J) of each weight row of ``W`` (n x channels) from ``segs[0].t0`` to sorted
    times ``t`` (clamped to the segments' span)."""
    W = np.atleast_2d(W)
    out = np.empty((W.shape[0], len(t)))
    base = np.zeros(W.shape[0])
    starts = np.array([s.t0 for s in segs])
    pos = np.searchsorted(t, starts, side="left")
    ends = np.append(pos[1:], len(t))
    for i, s in enumerate(segs):
        Ew = W @ s.energy
        e0 = _periodic(s, Ew, np.array([s.t0]))[:, 0]
        if ends[i] > pos[i]:
            tt = np.minimum(t[pos[i]:ends[i]], s.t1)
            out[:, pos[i]:ends[i]] = base[:, None] + _periodic(s, Ew, tt) - e0[:, None]
        base = base + _periodic(s, Ew, np.array([s.t1]))[:, 0] - e0
    if pos[0] > 0:
        out[:, : pos[0]] = 0.0
    return out


def bin_average(segs: list[Segment], t0: float, dt: float, n: int, W: np.ndarray, chunk: int = 1 << 21) -> np.ndarray:
    """Mean power (W) of each weight row over ``n`` bins of width ``dt`` from ``t0``: (rows x n)."""
    W = np.atleast_2d(W)
    out = np.empty((W.shape[0], n))
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        edges = t0 + dt * np.arange(a, b + 1, dtype=float)
        e = energy_at(segs, edges, W)
        out[:, a:b] = np.diff(e, axis=1) / dt
    return out


def extremes(segs: list[Segment], W: np.ndarray) -> dict[str, np.ndarray]:
    """Instantaneous maximum and minimum power of each weight row, and when each first occurs.

    Exact: inside a segment the load takes one of its interval levels, so the extremes are found among
    the levels the segment actually reaches (a short segment may cover only part of a period)."""
    W = np.atleast_2d(W)
    n = W.shape[0]
    hi, lo = np.full(n, -np.inf), np.full(n, np.inf)
    hi_t, lo_t = np.zeros(n), np.zeros(n)
    for s in segs:
        if s.t1 <= s.t0:
            continue
        starts, lv = s.levels()
        ends = np.append(starts[1:], s.period) if len(starts) else starts
        p = W @ lv  # (n x intervals)
        ph0 = (s.t0 - s.origin) % s.period
        dur = s.t1 - s.t0
        # first time each interval is entered (or already inside at t0)
        first = np.where((starts <= ph0) & (ph0 < ends), 0.0, (starts - ph0) % s.period)
        ok = first < dur
        if not ok.any():
            continue
        pk = np.where(ok, p, -np.inf)
        j = pk.argmax(axis=1)
        v = pk[np.arange(n), j]
        better = v > hi
        hi = np.where(better, v, hi)
        hi_t = np.where(better, s.t0 + first[j], hi_t)
        pm = np.where(ok, p, np.inf)
        j = pm.argmin(axis=1)
        v = pm[np.arange(n), j]
        better = v < lo
        lo = np.where(better, v, lo)
        lo_t = np.where(better, s.t0 + first[j], lo_t)
    return {"max": hi, "max_at": hi_t, "min": lo, "min_at": lo_t}
