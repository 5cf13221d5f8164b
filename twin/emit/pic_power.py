"""The power twin's pictures in the report: the grid draw at three zooms with every utility limit drawn
and the worst moment marked, from the arrays the twin already computed (``power_views`` of
:func:`twin.twins.run.simulate`, the same ones ``twin simulate --plot-dir`` plots).

1. The whole run: the one-second means' range per pixel column (a band, never a solid block of
   points) and the one-minute means, every limit's worst moment a vertical line (red where it fails).
2. Two minutes round the worst moment at the twin's resolution: the ramp limit as a line of its
   allowed slope from the trace at the start of the worst ramp window, the swing limit as a box of its
   allowed height over the worst swing window.
3. A few training steps at millisecond bins (the IT load), where the step swing shows.

4. An oscillation limit is a band of frequencies, so it is drawn on the spectrum (``power-spectrum.svg``):
   amplitude per log-spaced frequency bin against each band's allowed amplitude.
"""

from __future__ import annotations

import math

import numpy as np

from twin.emit.svg import GRID, INK, MUTED, OK, OVER, Canvas, nice_ticks

W, H = 760, 270
L, R, T, B = 64, 16, 34, 58
BLUE, BAND = "#4e79a7", "#c6d4e6"


def _fmt_t(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def y_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """Round ticks spanning [lo, hi] (not from zero: a trace's swing is small against its level).

    >>> y_ticks(186.2, 244.6)
    [180, 200, 220, 240, 260]
    """
    span = nice_ticks(hi - lo, n)
    step = span[1] - span[0] if len(span) > 1 else 1
    start = math.floor(lo / step) * step
    out = [start]
    while out[-1] < hi - 1e-9:
        out.append(round(out[-1] + step, 10))
    return [int(v) if float(v).is_integer() else v for v in out]


class Chart:
    """A time chart in MW on a :class:`Canvas`: x from t0 to t1 (seconds), y from the data's range."""

    def __init__(self, title: str, t0: float, t1: float, lo: float, hi: float, x_unit: str = "s"):
        self.c = Canvas(W, H, title)
        self.c.text(L, 18, title, bold=True)
        self.t0, self.t1 = t0, t1 if t1 > t0 else t0 + 1
        self.ticks = y_ticks(lo / 1e6, hi / 1e6)
        self.lo, self.hi = self.ticks[0] * 1e6, self.ticks[-1] * 1e6
        if self.hi <= self.lo:
            self.hi = self.lo + 1e6
        self.pw, self.ph = W - L - R, H - T - B
        for v in self.ticks:
            y = self.y(v * 1e6)
            self.c.line(L, y, L + self.pw, y, GRID)
            self.c.text(L - 4, y + 4, f"{v:g}", anchor="end", size=9)
        self.c.text(14, T + self.ph / 2, "MW", anchor="middle", rotate=True)
        scale = {"s": 1.0, "min": 60.0, "h": 3600.0}[x_unit]
        for v in nice_ticks((self.t1 - self.t0) / scale, 6):
            x = self.x(self.t0 + v * scale)
            if x <= L + self.pw + 0.5:
                self.c.line(x, T + self.ph, x, T + self.ph + 4)
                self.c.text(x, T + self.ph + 15, f"{v:g}", anchor="middle", size=9)
        self.c.line(L, T + self.ph, L + self.pw, T + self.ph)
        self.c.line(L, T, L, T + self.ph)
        self.x_label_y = T + self.ph + 30
        self.x_unit = x_unit

    def x(self, t: float) -> float:
        return L + (t - self.t0) / (self.t1 - self.t0) * self.pw

    def y(self, w: float) -> float:
        return T + self.ph - (min(max(w, self.lo), self.hi) - self.lo) / (self.hi - self.lo) * self.ph

    def trace(self, t: np.ndarray, w: np.ndarray, colour: str = BLUE, tip: str = "") -> None:
        """One polyline when it has few points, else per pixel column the range (band) and the mean."""
        cols = int(self.pw)
        if len(t) <= 2 * cols:
            self.c.polyline([(self.x(a), self.y(b)) for a, b in zip(t, w)], colour, 1.2, tip=tip)
            return
        k = np.minimum(((t - self.t0) / (self.t1 - self.t0) * cols).astype(int), cols - 1)
        lo = np.full(cols, np.inf)
        hi = np.full(cols, -np.inf)
        np.minimum.at(lo, k, w)
        np.maximum.at(hi, k, w)
        s = np.bincount(k, weights=w, minlength=cols)
        n = np.bincount(k, minlength=cols)
        have = n > 0
        xs = L + (np.arange(cols) + 0.5)
        top = [(float(a), self.y(b)) for a, b in zip(xs[have], hi[have])]
        bot = [(float(a), self.y(b)) for a, b in zip(xs[have], lo[have])]
        self.c.items.append('<polygon points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in top + bot[::-1])
                            + f'" fill="{BAND}" stroke="none"/>')
        self.c.polyline([(float(a), self.y(b)) for a, b in zip(xs[have], s[have] / n[have])], colour, 1.0, tip=tip)

    def mark(self, t: float, label: str, failed: bool | None, row: int = 0) -> None:
        """A vertical line at ``t`` with its label above the plot (stacked by ``row``): red for a failed
        limit, green for a passed one, grey for a moment that is no limit's (``failed`` None)."""
        x = self.x(t)
        colour = MUTED if failed is None else OVER if failed else OK
        self.c.line(x, T, x, T + self.ph, colour, 1.5, dash="4 3", tip=label)
        self.c.text(min(max(x, L + 4), L + self.pw - 4), T + 10 + 11 * row, label, anchor="end" if x > L + self.pw / 2 else "start",
                    size=9, fill=colour, bold=failed)

    def done(self, x_label: str, legend: list[tuple[str, str]]) -> bytes:
        self.c.text(L + self.pw / 2, self.x_label_y, x_label, anchor="middle")
        self.c.legend(L, H - 8, legend)
        return self.c.svg()


def _verdict(v: dict) -> str:
    if v["unit"] == "W/s":
        a, b = f"{v['value'] / 1e6:,.2f} MW/s", f"{v['limit_value'] / 1e6:,.2f}"
    elif v["unit"] == "W":
        a, b = f"{v['value'] / 1e6:,.2f} MW", f"{v['limit_value'] / 1e6:,.2f}"
    else:
        a, b = f"{100 * v['value']:.1f}%", f"{100 * v['limit_value']:.1f}%"
    return f"{v['limit']}: {a} against {b} ({'pass' if v['pass'] else 'FAIL'})"


def worst(p: dict) -> tuple[float, str]:
    """The moment to zoom in on: the worst failing limit's (first failing in the spec's order), else the
    fastest ramp."""
    for v in p["limits"]:
        if not v["pass"] and v["kind"] in ("ramp", "swing"):
            return float(v["worst_at_s"]), v["limit"]
    for v in p["limits"]:
        if not v["pass"]:
            return float(v["worst_at_s"]), v["limit"]
    return float(p["ramp"]["at_s"]), "fastest ramp"


def whole_svg(p: dict, views: dict) -> bytes:
    t, sec = views["seconds"], views["sec"]
    tm, mn = views["minutes"], views["min"]
    ch = Chart(f"Grid draw over the whole run ({p['duration_s'] / 3600:g} h)", 0.0, float(p["duration_s"]), float(sec.min()), float(sec.max()), "h")
    ch.trace(t, sec, BAND, tip="one-second means")
    ch.c.polyline([(ch.x(a), ch.y(b)) for a, b in zip(tm, mn)], BLUE, 1.4, tip="one-minute means")
    for k, v in enumerate(p["limits"]):
        ch.mark(float(v["worst_at_s"]), f"worst {v['limit']}", not v["pass"], k % 3)
    if not p["limits"]:
        ch.mark(float(p["ramp"]["at_s"]), "fastest ramp (no utility limits stated)", None)
    marks = [(OVER, "worst moment of a failed limit"), (OK, "of a passed limit")] if p["limits"] else [(MUTED, "fastest ramp")]
    return ch.done("hours", [(BAND, "one-second means (range per pixel)"), (BLUE, "one-minute means"), *marks])


def around_svg(p: dict, views: dict, half: float = 60.0) -> bytes:
    """Two minutes at the twin's resolution round the worst moment, the ramp and swing limits drawn."""
    dt = float(p["resolution_s"])
    grid = views["grid"]
    at, what = worst(p)
    t0 = max(0.0, at - half)
    t1 = min(len(grid) * dt, at + half)
    i0, i1 = int(t0 / dt), max(int(t0 / dt) + 2, int(math.ceil(t1 / dt)))
    seg = grid[i0:i1]
    ts = (np.arange(i0, i0 + len(seg)) + 0.5) * dt
    ch = Chart(f"Grid draw round the worst moment ({what} at {_fmt_t(at)}), every {dt:g} s", t0, t1, float(seg.min()), float(seg.max()), "s")
    ch.trace(ts, seg, BLUE, tip=f"grid draw at {dt:g} s")
    row = 0
    for v in p["limits"]:
        colour = OVER if not v["pass"] else OK
        w0 = float(v["worst_at_s"])
        if v["kind"] == "ramp" and t0 <= w0 <= t1:
            win = float(v["limit"].split("over ")[1].split(" s")[0]) if "over " in v["limit"] else 1.0
            j = min(len(grid) - 1, int(w0 / dt))
            k = min(len(grid) - 1, j + max(1, int(round(win / dt))))
            sign = 1.0 if grid[k] >= grid[j] else -1.0
            base, span = float(grid[j]), max(win, 10.0)  # the allowed slope drawn over at least 10 s to be seen
            ch.c.line(ch.x(w0), ch.y(base), ch.x(w0 + span), ch.y(base + sign * v["limit_value"] * span), colour, 2, dash="6 3",
                      tip=f"allowed ramp {v['limit_value'] / 1e6:,.2f} MW/s")
            ch.c.line(ch.x(w0), ch.y(base), ch.x(w0 + win), ch.y(float(grid[k])), INK, 2.5, tip=f"worst ramp {v['value'] / 1e6:,.2f} MW/s")
        elif v["kind"] == "swing" and w0 <= t1 and t0 <= w0 + 60:
            win = float(v["limit"].split("within ")[1].split(" s")[0]) if "within " in v["limit"] else 60.0
            j, k = int(w0 / dt), int((w0 + win) / dt) + 1
            bottom = float(grid[j:k].min())
            ch.c.rect(ch.x(w0), ch.y(bottom + v["limit_value"]), ch.x(w0 + win) - ch.x(w0), ch.y(bottom) - ch.y(bottom + v["limit_value"]),
                      colour, stroke=colour, opacity=0.12, tip=f"allowed swing within {win:g} s: {v['limit_value'] / 1e6:,.2f} MW")
        else:
            continue
        ch.c.text(W - R - 4, T + 10 + 11 * row, _verdict(v), anchor="end", size=9, fill=colour, bold=not v["pass"])
        row += 1
    ch.mark(at, f"worst: {what}", any(not v["pass"] for v in p["limits"]) if p["limits"] else None, row)
    return ch.done(f"seconds from {_fmt_t(t0)}", [(BLUE, "grid draw"), (OVER, "allowed ramp / swing (failed)"), (OK, "(passed)"), (INK, "worst ramp")]
                   if row else [(BLUE, "grid draw"), (MUTED, "fastest ramp (the site states no ramp or swing limit)")])


def steps_svg(p: dict, views: dict) -> bytes:
    t, z = views["zoom"]
    ch = Chart(f"IT load over {len(t) and round((t[-1] - t[0]) / p['job']['step_s'])} training steps of {p['job']['step_s']:.2f} s"
               " (millisecond bins)", float(t[0]), float(t[-1]), float(z.min()), float(z.max()), "s")
    ch.trace(t, z, BLUE, tip="IT load")
    i = int(np.argmax(np.abs(np.diff(z))))
    ch.mark(float(t[i]), f"steepest step edge {abs(z[i + 1] - z[i]) / 1e6:,.2f} MW in {float(t[1] - t[0]) * 1e3:.1f} ms", None)
    return ch.done(f"seconds from {_fmt_t(float(t[0]))}", [(BLUE, "IT load (the utility limits are grid-side: above)")])


def pictures(p: dict | None, views: dict | None) -> list[tuple[str, str, bytes]]:
    """(file name, caption, svg) of the power section; none when the power twin did not run."""
    if not p or not views or "grid" not in views:
        return []
    n_fail = sum(1 for v in p["limits"] if not v["pass"])
    state = f"{n_fail} of {len(p['limits'])} utility limits fail" if p["limits"] else "the site states no utility limits"
    return [("power-whole.svg", f"Grid draw over the whole run, every limit's worst moment marked ({state})", whole_svg(p, views)),
            ("power-worst.svg", "Two minutes round the worst moment at the twin's resolution, the ramp and swing limits drawn",
             around_svg(p, views)),
            ("power-steps.svg", "A few training steps at millisecond bins: the swing every step puts on the IT load", steps_svg(p, views)),
            ("power-spectrum.svg", "Spectrum of the grid draw over the whole run against each oscillation limit's band and allowed amplitude"
             " (the limit is checked on every window; the curve is the whole run's)", spectrum_svg(p, views))]


def band_of(name: str) -> tuple[float | None, float | None]:
    """The frequency band an oscillation limit's name states ("... 0.1-20 Hz ..."), else (None, None)."""
    import re

    m = re.search(r"([\d.]+)-([\d.]+) Hz", name)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def log_binned(f: np.ndarray, ms: np.ndarray, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """The spectrum in ``n`` log-spaced frequency bins: (upper edge in Hz, amplitude in W of the bin's
    mean square), bins finer than the FFT's left out. Shared with ``twin simulate --plot-dir``.

    >>> f, a = log_binned(np.array([1.0, 2.0, 4.0]), np.array([2.0, 0.0, 8.0]), 3)
    >>> f.tolist(), a.tolist()
    ([2.0, 4.0], [1.414213562373095e-15, 4.0])
    """
    edges = np.geomspace(max(float(f[0]), 1e-4), float(f[-1]), n)
    idx = np.searchsorted(edges, f)
    binned = np.bincount(idx, weights=ms, minlength=n + 1)[1:n]
    filled = np.bincount(idx, minlength=n + 1)[1:n] > 0
    return edges[1:][filled], np.sqrt(2 * np.maximum(binned[filled], 1e-30))


def spectrum_svg(p: dict, views: dict) -> bytes:
    """Amplitude per log bin of the whole run's grid draw, log-log, with each oscillation limit's band
    shaded and its allowed amplitude drawn across it."""

    f, amp = log_binned(views["f"], views["ms"])
    c = Canvas(W, H, "Spectrum of the grid draw against the oscillation limits")
    c.text(L, 18, "Spectrum of the grid draw (amplitude per log-spaced bin) against the oscillation limits", bold=True)
    pw, ph = W - L - R, H - T - B
    lim = [v for v in p["limits"] if v["kind"] == "oscillation"]
    top = max([float(amp.max())] + [v["limit_value"] for v in lim])
    y_hi = 10 ** math.ceil(math.log10(top))
    y_lo = max(10 ** math.floor(math.log10(max(float(np.percentile(amp, 5)), 1e-3))), y_hi / 1e8)
    x_lo, x_hi = 10 ** math.floor(math.log10(f[0])), 10 ** math.ceil(math.log10(f[-1]))

    def px(v: float) -> float:
        return L + (math.log10(max(v, x_lo)) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo)) * pw

    def py(v: float) -> float:
        v = min(max(v, y_lo), y_hi)
        return T + ph - (math.log10(v) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)) * ph

    for e in range(round(math.log10(y_lo)), round(math.log10(y_hi)) + 1):
        c.line(L, py(10 ** e), L + pw, py(10 ** e), GRID)
        c.text(L - 4, py(10 ** e) + 4, ["1 W", "10 W", "100 W", "1 kW", "10 kW", "100 kW", "1 MW", "10 MW", "100 MW"][e] if 0 <= e <= 8
               else f"1e{e} W", anchor="end", size=9)
    for e in range(round(math.log10(x_lo)), round(math.log10(x_hi)) + 1):
        c.line(px(10 ** e), T + ph, px(10 ** e), T + ph + 4)
        c.text(px(10 ** e), T + ph + 15, f"{10 ** e:g}", anchor="middle", size=9)
    row = 0
    for v in lim:
        lo, hi = band_of(v["limit"])
        if lo is None:
            continue
        colour = OK if v["pass"] else OVER
        c.rect(px(lo), T, px(hi) - px(lo), ph, colour, opacity=0.1, tip=f"{v['limit']} band")
        c.line(px(lo), py(v["limit_value"]), px(hi), py(v["limit_value"]), colour, 2, tip=f"allowed amplitude {v['limit_value'] / 1e6:,.2f} MW")
        c.text(W - R - 4, T + 10 + 11 * row, _verdict(v) + " (worst 60-s window)", anchor="end", size=9, fill=colour, bold=not v["pass"])
        row += 1
    c.polyline([(px(a), py(b)) for a, b in zip(f, amp)], BLUE, 1.2, tip="amplitude per log bin, whole run")
    sf = p["spectrum"]["step_frequency_Hz"]
    c.line(px(sf), T, px(sf), T + ph, MUTED, 1, dash="4 3", tip=f"1 / step = {sf:.4f} Hz")
    c.line(L, T + ph, L + pw, T + ph)
    c.line(L, T, L, T + ph)
    c.text(L + pw / 2, T + ph + 30, "frequency (Hz, log scale)", anchor="middle")
    c.text(14, T + ph / 2, "amplitude", anchor="middle", rotate=True)
    legend = [(BLUE, "whole run"), (MUTED, "1 / step")]
    c.legend(L, H - 8, legend + ([(OVER, "limit band (failed)"), (OK, "(passed)")] if lim else []))
    return c.svg()
