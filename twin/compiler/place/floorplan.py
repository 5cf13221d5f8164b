"""Pictures of a placement as hand-written SVG: the floor plan and the power-cap trade-off.

Written by hand rather than with matplotlib so the bytes depend only on the design (no dates, no
random ids, no font metrics), which keeps ``twin build`` byte-identical and ``twin diff`` quiet.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from twin.compiler.place import capacity
from twin.lang.site.models import Site

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f",
           "#af7aa1", "#86bcb6", "#e15759", "#bab0ac"]
SLOT = 10  # px per rack slot
ROW = 18  # px per row
HEAT = 40  # px of the busway heat bar left of each row


def _heat(u: float) -> str:
    """Green (idle) to red (at or above the rating)."""
    u = max(0.0, min(1.0, u))
    r = int(60 + 195 * u)
    g = int(190 - 150 * u)
    return f"#{r:02x}{g:02x}3c"


def floor_svg(site: Site, racks, pue: float) -> bytes:
    halls = site.halls
    per_line = 4
    boxes = []
    for h in halls:
        boxes.append((HEAT + 20 + h.positions_per_row * SLOT + 20, 40 + h.rows * ROW + 20))
    col_w = max(b[0] for b in boxes)
    line_h = max(b[1] for b in boxes)
    W = col_w * min(per_line, len(halls)) + 20
    H = line_h * ((len(halls) + per_line - 1) // per_line) + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="9">',
           f'<rect width="{W}" height="{H}" fill="#ffffff"/>',
           f'<text x="10" y="{H - 30}">GPU racks coloured by AI zone; network racks black (C = CTSW/spine, A = ATSW/core, F = fabric).</text>',
           f'<text x="10" y="{H - 16}">Bar left of each row: worst busway/block utilisation over normal operation and every failure state (green 0%, red 100%).</text>']
    by_hall: dict[str, list] = {}
    for r in racks:
        by_hall.setdefault(r.position.hall, []).append(r)
    for i, h in enumerate(halls):
        ox = 10 + (i % per_line) * col_w
        oy = 10 + (i // per_line) * line_h
        out.append(f'<text x="{ox}" y="{oy + 12}" font-size="12" font-weight="bold">{escape(h.name)}</text>')
        load = {r: 0.0 for r in range(1, h.rows + 1)}
        for r in by_hall.get(h.name, []):
            load[r.position.row] += r.power
        worst = {r: 0.0 for r in range(1, h.rows + 1)}
        for u in capacity.usage(h, pue, load):
            if u.limit.kind in ("busway", "block"):
                for r in u.limit.rows:
                    worst[r] = max(worst[r], u.utilisation)
        for row in range(1, h.rows + 1):
            y = oy + 24 + (row - 1) * ROW
            out.append(f'<rect x="{ox}" y="{y}" width="{HEAT * min(1.0, worst[row]):.1f}" height="{ROW - 4}" fill="{_heat(worst[row])}"/>')
            out.append(f'<rect x="{ox}" y="{y}" width="{HEAT}" height="{ROW - 4}" fill="none" stroke="#999"/>')
            out.append(f'<text x="{ox + HEAT + 2}" y="{y + 10}">{row}</text>')
            for s in range(1, h.positions_per_row + 1):
                out.append(f'<rect x="{ox + HEAT + 18 + (s - 1) * SLOT}" y="{y}" width="{SLOT - 1}" height="{ROW - 4}" fill="#f2f2f2"/>')
        for r in sorted(by_hall.get(h.name, []), key=lambda r: (r.position.row, r.position.slot)):
            x = ox + HEAT + 18 + (r.position.slot - 1) * SLOT
            y = oy + 24 + (r.position.row - 1) * ROW
            if r.kind == "gpu":
                color = PALETTE[(r.zone or 0) % len(PALETTE)]
                out.append(f'<rect x="{x}" y="{y}" width="{SLOT - 1}" height="{ROW - 4}" fill="{color}"><title>{escape(r.id)}</title></rect>')
            else:
                out.append(f'<rect x="{x}" y="{y}" width="{SLOT - 1}" height="{ROW - 4}" fill="#222"><title>{escape(r.id)}</title></rect>')
                letter = {"ctsw": "C", "atsw": "A", "cssw": "S"}.get(r.role, "E" if r.role.startswith("ep-") else "F")
                out.append(f'<text x="{x + 2}" y="{y + 10}" fill="#fff" font-size="8">{letter}</text>')
    out.append("</svg>")
    return ("\n".join(out) + "\n").encode()


def tradeoff_svg(rows: list[dict], chosen: float | None) -> bytes:
    """Cluster throughput (PFLOP/s) and GPUs that fit vs the GPU power cap."""
    W, H, L, B, T, R = 560, 320, 60, 40, 30, 70
    xs = [r["cap_w"] for r in rows]
    ys = [r["pflops"] for r in rows]
    gs = [r["gpus"] for r in rows]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y1 = max(ys) * 1.1 if max(ys) > 0 else 1.0
    g1 = max(gs) * 1.1 if max(gs) > 0 else 1.0

    def px(x):
        return L + (x - x0) / (x1 - x0) * (W - L - R)

    def py(y, top):
        return H - B - y / top * (H - B - T)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="10">',
           f'<rect width="{W}" height="{H}" fill="#ffffff"/>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="#000"/>',
           f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="#000"/>',
           f'<line x1="{W - R}" y1="{T}" x2="{W - R}" y2="{H - B}" stroke="#000"/>',
           f'<text x="{(W - R + L) / 2:.0f}" y="{H - 8}" text-anchor="middle">GPU power cap (W)</text>',
           f'<text x="12" y="{T - 10}" fill="#4e79a7">PFLOP/s (peak x perf)</text>',
           f'<text x="{W - R - 40}" y="{T - 10}" fill="#e15759">GPUs that fit</text>']
    for r in rows:
        x = px(r["cap_w"])
        out.append(f'<text x="{x:.1f}" y="{H - B + 14}" text-anchor="middle" font-size="8">{r["cap_w"]:g}</text>')
    for k in range(0, 5):
        y = y1 * k / 4
        out.append(f'<text x="{L - 4}" y="{py(y, y1) + 3:.1f}" text-anchor="end" font-size="8">{y:,.0f}</text>')
        g = g1 * k / 4
        out.append(f'<text x="{W - R + 4}" y="{py(g, g1) + 3:.1f}" font-size="8">{g:,.0f}</text>')
    pts = " ".join(f"{px(x):.1f},{py(y, y1):.1f}" for x, y in zip(xs, ys))
    out.append(f'<polyline points="{pts}" fill="none" stroke="#4e79a7" stroke-width="2"/>')
    pts = " ".join(f"{px(x):.1f},{py(g, g1):.1f}" for x, g in zip(xs, gs))
    out.append(f'<polyline points="{pts}" fill="none" stroke="#e15759" stroke-width="1.5" stroke-dasharray="4 2"/>')
    if chosen is not None and x0 <= chosen <= x1:
        out.append(f'<line x1="{px(chosen):.1f}" y1="{T}" x2="{px(chosen):.1f}" y2="{H - B}" stroke="#59a14f" stroke-dasharray="2 2"/>')
        out.append(f'<text x="{px(chosen) - 4:.1f}" y="{T + 10}" text-anchor="end" fill="#59a14f">cap in use</text>')
    out.append("</svg>")
    return ("\n".join(out) + "\n").encode()
