"""The reliability twin's pictures in the report's campaign section, from the campaign's JSON-ready dict
(the same figures ``twin simulate --plot-dir`` plots as PNG): ETTR against the checkpoint interval and
against the hot spare pool (median over runs with the P10-P90 band, the chosen and Young/Daly
intervals, the unlimited pool and its tolerance), and the first run's interruptions over the campaign.
"""

from __future__ import annotations

import math

from twin.emit.pic_power import y_ticks
from twin.emit.svg import GRID, INK, MUTED, OK, PALETTE, Canvas, nice_ticks

W, H = 640, 270
L, R, T, B = 60, 16, 34, 58
BLUE, BAND, YOUNG = "#4e79a7", "#c6d4e6", "#b07aa1"


def band_svg(title: str, x_label: str, rows: list[tuple[float, dict]], log_x: bool, vlines: list[tuple[float, str, str]],
             hlines: list[tuple[float, str, str]], note: str = "") -> bytes:
    """ETTR (%) against x: the P10-P90 band, the P50 line, labelled vertical and horizontal markers;
    ``note`` (the inputs the result rests on) under the title."""
    c = Canvas(W, H + 14, title)
    c.text(12, 18, title, bold=True)
    c.text(12, 32, note, size=9, fill=MUTED)
    c.items.append('<g transform="translate(0 14)">')
    pw, ph = W - L - R, H - T - B
    fx = (lambda v: math.log10(v)) if log_x else (lambda v: v)
    xs = [x for x, _ in rows] + [v for v, _, _ in vlines]
    x0, x1 = min(fx(x) for x in xs), max(fx(x) for x in xs)
    x1 = x1 if x1 > x0 else x0 + 1
    ys = [100 * q[k] for _, q in rows for k in ("p10", "p90")] + [100 * v for v, _, _ in hlines]
    ticks = y_ticks(min(ys), max(ys))
    lo, hi = ticks[0], ticks[-1] if ticks[-1] > ticks[0] else ticks[0] + 1

    def px(v: float) -> float:
        return L + (fx(v) - x0) / (x1 - x0) * pw

    def py(v: float) -> float:
        return T + ph - (100 * v - lo) / (hi - lo) * ph

    for t in ticks:
        c.line(L, py(t / 100), L + pw, py(t / 100), GRID)
        c.text(L - 4, py(t / 100) + 4, f"{t:g}", anchor="end", size=9)
    every = max(1, math.ceil(len(rows) / 8))
    for k, (x, _) in enumerate(rows):
        c.line(px(x), T + ph, px(x), T + ph + 4)
        if k % every == 0 or k == len(rows) - 1 and (k % every) * 2 > every:
            c.text(px(x), T + ph + 15, f"{x:.3g}", anchor="middle", size=9)
    top = [(px(x), py(q["p90"])) for x, q in rows]
    bot = [(px(x), py(q["p10"])) for x, q in rows]
    c.items.append('<polygon points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in top + bot[::-1]) + f'" fill="{BAND}" stroke="none"/>')
    c.polyline([(px(x), py(q["p50"])) for x, q in rows], BLUE, 2, tip="P50 over runs")
    for x, q in rows:
        c.circle(px(x), py(q["p50"]), 2.5, BLUE, tip=f"{x:.3g}: ETTR P50 {100 * q['p50']:.2f}%, P10-P90 {100 * q['p10']:.2f}-{100 * q['p90']:.2f}%")
    for k, (v, label, colour) in enumerate(vlines):
        c.line(px(v), T, px(v), T + ph, colour, 1.5, dash="4 3", tip=label)
        right = px(v) > L + pw * 0.6
        c.text(px(v) + (-3 if right else 3), T + 10 + 11 * k, label, anchor="end" if right else "start", size=9, fill=colour)
    for k, (v, label, colour) in enumerate(hlines):  # labels at the left, the first above its line, the rest below
        c.line(L, py(v), L + pw, py(v), colour, 1.2, dash="6 3", tip=label)
        c.text(L + 40, py(v) + (-3 if k == 0 else 10 * k), label, size=9, fill=colour)
    c.line(L, T + ph, L + pw, T + ph)
    c.line(L, T, L, T + ph)
    c.text(L + pw / 2, T + ph + 30, x_label, anchor="middle")
    c.text(14, T + ph / 2, "ETTR (%)", anchor="middle", rotate=True)
    c.legend(L, H - 8, [(BAND, "P10-P90 over runs"), (BLUE, "P50")])
    c.end()
    return c.svg()


def inputs(c: dict) -> str:
    """The inputs an ETTR rests on, as one line: step, restart, swap, checkpoint write and restore, spares."""
    ck = c["checkpoint"]
    return (f"inputs: step {c['job']['step_s']:.2f} s ({c['job'].get('step_source', '-')}), restart {c['restart_s']:g} s, swap"
            f" {c['swap_s']:g} s, checkpoint write {ck['write_s']:g} s / restore {ck['restore_s']:g} s ({ck.get('limit', '-')},"
            f" {ck.get('mode', '-')}), spares {c['spares']}")


def interval_svg(c: dict) -> bytes:
    s = c["sweeps"]["interval"]
    rows = [(r["interval_s"] / 60, r["ettr"]) for r in s["rows"]]
    v = [(c["checkpoint"]["interval_s"] / 60, f"used {c['checkpoint']['interval_s'] / 60:.1f} min", OK)]
    if s.get("young_daly_s"):
        v.append((s["young_daly_s"] / 60, f"Young/Daly {s['young_daly_s'] / 60:.1f} min", YOUNG))
    return band_svg(f"ETTR against checkpoint interval, {c['job']['gpus']:,} GPUs, {c['days']:g} days, {s['runs']} runs each",
                    "checkpoint interval (min, log scale)", rows, True, v, [], inputs(c))


def spares_svg(c: dict) -> bytes:
    s = c["sweeps"]["spares"]
    rows = [(float(r["spares"]), r["ettr"]) for r in s["rows"]]
    unl = s["unlimited"]["mean"]
    h = [(unl, f"unlimited pool {100 * unl:.2f}% (mean)", INK), (unl * (1 - s["tolerance"]), f"within {100 * s['tolerance']:g}%", MUTED)]
    v = [(float(s["smallest_within_tolerance"]), f"smallest pool within: {s['smallest_within_tolerance']}", OK)] \
        if s.get("smallest_within_tolerance") is not None else []
    return band_svg(f"ETTR against hot spare servers, {c['job']['gpus']:,} GPUs, {c['days']:g} days", "hot spare servers", rows, False, v, h,
                    inputs(c))


def timeline_svg(c: dict) -> bytes:
    """The first run's interruptions (each stop of the job) over the campaign, one row per cause."""
    ev = [e for e in c["events_run0"] if e["kind"] == "stop"]
    causes = sorted({e["detail"] for e in ev}) or ["-"]
    days = float(c["days"])
    rh = 18
    height = T + len(causes) * rh + 40
    n = c["interruptions"]["total"]
    cv = Canvas(W, height, "Interruptions of the first run over the campaign")
    cv.text(12, 18, f"Interruptions of the first run over {days:g} days: {len(ev)} (over all runs: mean {n['mean']:.1f},"
                    f" P10-P90 {n['p10']:g}-{n['p90']:g})", bold=True)
    left = 150
    pw = W - left - R
    for k, cause in enumerate(causes):
        y = T + k * rh
        cv.text(left - 6, y + 12, f"{cause} ({sum(e['detail'] == cause for e in ev)})", anchor="end", size=9)
        cv.line(left, y + rh / 2, left + pw, y + rh / 2, GRID)
        colour = PALETTE[k % len(PALETTE)]
        for e in ev:
            if e["detail"] == cause:
                x = left + e["t"] / (days * 86400) * pw
                cv.rect(x - 1.5, y + 3, 3, rh - 6, colour, tip=f"{cause} at day {e['t'] / 86400:.2f}")
    base = T + len(causes) * rh
    cv.line(left, base, left + pw, base)
    for d in nice_ticks(days, 7):
        if d <= days:
            x = left + d / days * pw
            cv.line(x, base, x, base + 4)
            cv.text(x, base + 15, f"{d:g}", anchor="middle", size=9)
    cv.text(left + pw / 2, base + 30, "day of the campaign", anchor="middle")
    return cv.svg()


def pictures(c: dict | None) -> list[tuple[str, str, bytes]]:
    """(file name, caption, svg) of the campaign section."""
    if not c:
        return []
    out = []
    s = c.get("sweeps") or {}
    if "interval" in s and s["interval"].get("rows"):
        out.append(("campaign-ettr-interval.svg", "ETTR against the checkpoint interval: median over runs, P10-P90 band, the interval"
                    " used and Young/Daly's", interval_svg(c)))
    if "spares" in s and s["spares"].get("rows"):
        out.append(("campaign-ettr-spares.svg", "ETTR against the hot spare pool, against the unlimited pool and its tolerance",
                    spares_svg(c)))
    if c.get("events_run0") is not None:
        out.append(("campaign-interruptions.svg", "The first run's interruptions over the campaign, by cause", timeline_svg(c)))
    return out
