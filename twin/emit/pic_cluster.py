"""The cluster twin's pictures, from its JSON-ready dict: the site's GPUs by state over the span as stacked
areas (running, idle while jobs wait, fragmentation, idle, drained for repair, spares), and ETTR and the
median queue wait per job size class as bars.
"""

from __future__ import annotations

from twin.emit.svg import GRID, MUTED, PALETTE, Canvas, nice_ticks

W, H = 680, 300
L, R, T, B = 64, 16, 40, 56
STATES = (("running", "running jobs", PALETTE[0]), ("queued_idle", "idle while jobs wait", PALETTE[1]),
          ("fragmentation", "fragmentation", PALETTE[6]), ("idle", "idle, no job waiting", "#d9d9d9"),
          ("repair", "drained for repair", PALETTE[2]), ("spare", "spares", PALETTE[4]))


def states_svg(c: dict) -> bytes:
    s = c["series"]
    g = s["gpu_states"]
    n = len(g["running"])
    days = c["days"]
    title = f"GPUs by state over {days:g} days ({c['gpus']:,} GPUs, {s['bin_s'] / 3600:g} h bins)"
    cv = Canvas(W, H, title)
    cv.text(12, 18, title, bold=True)
    cv.legend(12, 34, [(col, label) for _, label, col in STATES])
    pw, ph = W - L - R, H - T - B
    top = float(c["gpus"])
    for t in nice_ticks(top):
        y = T + ph - t / top * ph
        cv.line(L, y, L + pw, y, GRID)
        cv.text(L - 4, y + 4, f"{t:,.0f}", anchor="end", size=9)
    for d in nice_ticks(days):
        x = L + d / days * pw
        cv.line(x, T + ph, x, T + ph + 4)
        cv.text(x, T + ph + 15, f"{d:g}", anchor="middle", size=9)
    cv.text(L + pw / 2, H - 14, "day", anchor="middle", fill=MUTED)
    dx = pw / max(n, 1)
    base = [0.0] * n
    for key, label, col in STATES:
        vals = g[key]
        if not any(vals):
            continue
        upper = [b + v for b, v in zip(base, vals)]
        pts = [(L + i * dx, T + ph - u / top * ph) for i, u in enumerate(upper)] + [(L + n * dx, T + ph - upper[-1] / top * ph)]
        low = [(L + n * dx, T + ph - base[-1] / top * ph)] + [(L + i * dx, T + ph - b / top * ph) for i, b in reversed(list(enumerate(base)))]
        cv.items.append('<polygon points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts + low) + f'" fill="{col}" stroke="none">'
                        f"<title>{label}</title></polygon>")
        base = upper
    return cv.svg()


def sizes_svg(c: dict) -> bytes:
    rows = c["by_size"]
    title = "ETTR and median queue wait by job size"
    cv = Canvas(W, H, title)
    cv.text(12, 18, title, bold=True)
    cv.legend(12, 34, [(PALETTE[0], "ETTR (left axis, %)"), (PALETTE[1], "wait P50 (right axis, h)")])
    pw, ph = W - L - R - 40, H - T - B
    waits = [(r["wait_p50_s"] or 0.0) / 3600 for r in rows]
    wtop = max(nice_ticks(max(waits) or 1.0))
    for t in (0, 25, 50, 75, 100):
        y = T + ph - t / 100 * ph
        cv.line(L, y, L + pw, y, GRID)
        cv.text(L - 4, y + 4, f"{t}", anchor="end", size=9)
        cv.text(L + pw + 4, y + 4, f"{wtop * t / 100:.3g}", size=9)
    slot = pw / max(len(rows), 1)
    for i, (r, w) in enumerate(zip(rows, waits)):
        x = L + i * slot + slot * 0.15
        e = r["ettr"] or 0.0
        cv.rect(x, T + ph - e * ph, slot * 0.33, e * ph, PALETTE[0], tip=f"{r['size']} GPUs: ETTR {100 * e:.1f}% over {r['jobs']:,} jobs")
        cv.rect(x + slot * 0.36, T + ph - w / wtop * ph, slot * 0.33, w / wtop * ph, PALETTE[1], tip=f"{r['size']} GPUs: median wait {w:.2f} h")
        cv.text(L + (i + 0.5) * slot, T + ph + 15, r["size"], anchor="middle", size=9)
    cv.text(L + pw / 2, H - 14, "GPUs per job", anchor="middle", fill=MUTED)
    return cv.svg()


def pictures(c: dict | None) -> list[tuple[str, str, bytes]]:
    """(file name, caption, svg) of the cluster section."""
    if not c:
        return []
    return [("cluster-gpu-states.svg", "The site's GPUs by state over the span (stacked)", states_svg(c)),
            ("cluster-by-size.svg", "ETTR and median queue wait per job size class", sizes_svg(c))]
