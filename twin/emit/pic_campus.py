"""The campus panel of the fabric diagram: the buildings and the links between them.

One box per building (a ``<g class="building">``: its halls, AI zones, GPUs and ATSW layer, the campus
spine where it stands), placed round an ellipse in building order, and one line per route between two
buildings (a ``<g class="route">``) coloured by the optic its links use, as wide as it has links, with
its length on the line. Below the map, each route in words: length, links and optics (from the
cabling pass's trunks) and whether the links fit lossless (PFC headroom against the switches'
buffers, :func:`twin.analysis.headroom.headroom`), the failing ones in red.
"""

from __future__ import annotations

import math
from collections import Counter

from twin.analysis import headroom as distance
from twin.emit.svg import INK, MUTED, OVER, PALETTE, Canvas

BOX_W, BOX_H = 230, 58
MAP_H = 250  # px of the map; the route list is below it
ROW_H = 30  # px per route in the list


def applies(d) -> bool:
    return d.spec.campus is not None and d.fabric is not None and d.cabling is not None and d.cabling.campus is not None


def height(d) -> float:
    """Height of the panel in px (0 when the site is not a campus)."""
    if not applies(d):
        return 0.0
    return 40 + MAP_H + 24 + len(d.cabling.campus.trunks) * ROW_H + 8


def centres(n: int, cx: float, cy: float, rx: float = 150, ry: float = 80) -> list[tuple[float, float]]:
    """Box centres of ``n`` buildings round an ellipse, the first at the top left, clockwise.

    >>> [(round(x), round(y)) for x, y in centres(4, 0, 0)]
    [(-106, -57), (106, -57), (106, 57), (-106, 57)]
    """
    out = []
    for k in range(n):
        a = -math.pi / 2 - math.pi / n + 2 * math.pi * k / n
        out.append((cx + rx * math.cos(a), cy + ry * math.sin(a)))
    return out


def box_width(pts: list[tuple[float, float]]) -> float:
    """As wide as BOX_W, narrower when two boxes side by side would touch."""
    w = float(BOX_W)
    for i, (x1, y1) in enumerate(pts):
        for x2, y2 in pts[i + 1:]:
            if abs(y1 - y2) < BOX_H + 6:
                w = min(w, abs(x1 - x2) - 10)
    return max(90.0, w)


def optic_colours(trunks) -> dict[str, str]:
    """One colour per optic used between buildings, in name order."""
    names = sorted({m for t in trunks for m in t.media})
    return {m: PALETTE[k % len(PALETTE)] for k, m in enumerate(names)}


def _km(m: float) -> str:
    return f"{m / 1000:,.2f} km"


def draw(c: Canvas, d, y0: float) -> None:
    """Draw the panel into ``c`` from ``y0`` down (:func:`height` px)."""
    if not applies(d):
        return
    cp, g = d.spec.campus, d.fabric.graph
    trunks = d.cabling.campus.trunks
    colours = optic_colours(trunks)
    pairs = {(p.a, p.b): p for p in distance.headroom(d)["pairs"]}
    b = d.spec.shape.boundary(cp.tier)
    how = "full mesh of the buildings' ATSW layers" if cp.topology == "full-mesh" else f"campus spine in {cp.buildings[cp.spine_building].name}"
    c.line(12, y0 - 8, c.width - 12, y0 - 8, "#cccccc")
    head = f"Campus: {len(cp.buildings)} buildings, {how}"
    if b is not None:
        asked = "none asked" if b.requested is None else f"{b.requested:g}:1 asked"
        built = "-" if b.built is None else f"{b.built:.2f}:1"
        head += f"; {cp.tier}: {b.links:,} links at {b.speed / 1e9:g}G, {asked}, {built} built"
    c.text(12, y0 + 12, head, bold=True)
    atsw: dict[int, Counter] = {}
    spine: Counter = Counter()
    for _n, a in g.nodes(data=True):
        if a.get("role") == "atsw":
            atsw.setdefault(a.get("building", 0), Counter())[a.get("model", "?")] += 1
        elif a.get("role") == "cssw":
            spine[a.get("model", "?")] += 1
    pts = centres(len(cp.buildings), c.width / 2, y0 + 24 + MAP_H / 2, rx=c.width / 2 - BOX_W / 2 - 120, ry=MAP_H / 2 - BOX_H / 2 - 6)
    w = box_width(pts)
    index = {bp.name: bp.index for bp in cp.buildings}
    for k, t in enumerate(trunks):
        (x1, y1), (x2, y2) = pts[index[t.a]], pts[index[t.b]]
        main = max(sorted(t.media), key=lambda m: t.media[m])
        fits = pairs.get((t.a, t.b))
        c.group("route", a=t.a, b=t.b, media=" ".join(sorted(t.media)), links=str(t.links))
        tip = f"{t.a} - {t.b}: {_km(t.route_m)}, {t.links:,} links, " + ", ".join(f"{n:,} x {m}" for m, n in sorted(t.media.items()))
        c.line(x1, y1, x2, y2, colours[main], min(7.0, 1.5 + math.log2(max(1, t.links)) / 2), tip=tip)
        if fits is not None and not fits.fits:
            c.line(x1, y1, x2, y2, OVER, 1.2, dash="6 4")
        adjacent = abs(index[t.a] - index[t.b]) in (1, len(pts) - 1)
        at = 0.5 if adjacent else 0.3
        c.text(x1 + at * (x2 - x1), y1 + at * (y2 - y1) - 4, _km(t.route_m), anchor="middle", size=10, bold=True)
        c.end()
        ly = y0 + 40 + MAP_H + 24 + k * ROW_H
        c.line(12, ly - 4, 30, ly - 4, colours[main], 4)
        c.text(36, ly, f"{t.a} - {t.b}: {_km(t.route_m)} ({t.how}), {t.links:,} links: "
                                + ", ".join(f"{n:,} x {m}" for m, n in sorted(t.media.items())), size=10)
        if fits is not None:
            verdict = "fits" if fits.fits else "does not fit"
            reach = f"lossless reach {_km(fits.reach_m)}" if fits.reach_m > 0 else f"no lossless reach ({fits.switch}'s headroom pool is full)"
            c.text(36, ly + 13, f"lossless (PFC): {verdict}; xoff {fits.xoff_bytes / 1e6:.2f} MB per port against"
                                f" {max(0.0, fits.room_bytes) / 1e6:.2f} MB of room on {fits.switch}; {reach}",
                   size=10, fill=INK if fits.fits else OVER, bold=not fits.fits)
    for bp in cp.buildings:
        x, y = pts[bp.index]
        gpus = len(bp.zones) * d.spec.racks_per_zone * d.spec.rack.gpus
        c.group("building", building=bp.name)
        c.rect(x - w / 2, y - BOX_H / 2, w, BOX_H, "#f3f5f8", stroke=INK, tip=f"building {bp.name}: halls {', '.join(bp.halls)}")
        hub = spine and bp.index == cp.spine_building
        c.text(x - w / 2 + 8, y - BOX_H / 2 + 15, bp.name + ("  campus spine: " + ", ".join(f"{n} x {m}" for m, n in sorted(spine.items()))
                                                          if hub else ""), bold=True)
        zones = len(bp.zones)
        c.text(x - w / 2 + 8, y - BOX_H / 2 + 30, f"{len(bp.halls)} hall{'s' * (len(bp.halls) != 1)}, {zones} AI zone{'s' * (zones != 1)},"
                                                  f" {gpus:,} GPUs", size=10)
        layer = ", ".join(f"{n} x {m}" for m, n in sorted(atsw.get(bp.index, Counter()).items())) or "none"
        c.text(x - w / 2 + 8, y - BOX_H / 2 + 45, f"ATSW: {layer}", size=10, fill=MUTED)
        c.end()
    x = c.legend(12, y0 + 40 + MAP_H, [(col, f"{m} ({sum(t.media.get(m, 0) for t in trunks):,} links)") for m, col in colours.items()])
    if any(not p.fits for p in pairs.values()):
        c.line(x, y0 + 36 + MAP_H, x + 22, y0 + 36 + MAP_H, OVER, 1.2, dash="6 4")
        c.text(x + 28, y0 + 40 + MAP_H, "does not fit lossless")
