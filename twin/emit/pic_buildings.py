"""The campus drawn by building, and which halls get a floor plan of their own on a large campus.

A floor plan draws every rack of a hall; a campus of 192 halls would draw 13,824 racks in 192 pictures
(16 MB of page). Above :data:`FLOOR_HALLS` halls the report draws instead one block per building
(a ``<g class="building">``: its halls, AI zones, GPUs, its load against its feed and the links that
leave it for other buildings), each hall inside it a tile (a ``<g class="hall">``) coloured by its
worst limit over normal operation and every failure state (the placement's ``usage``), and under the
blocks the links between buildings summed by optic. Floor plans are then drawn for the fullest hall of
each building only (:func:`floor_halls`); every rack of every hall stays in ``placement/floor.csv``.
"""

from __future__ import annotations

from collections import Counter

from twin.emit import buildings
from twin.emit.svg import INK, MUTED, OK, OVER, WARN, Canvas, status_colour
from twin.lang.units import kw

FLOOR_HALLS = 12  # a site with more halls than this (on a campus) draws one floor plan per building
WIDTH = 960
COLS = 4  # building blocks per row
TILE, GAP = 34, 4  # px of a hall's tile and between tiles
HEAD = 64  # px of a block's text above its tiles


def applies(d) -> bool:
    return (d.spec.campus is not None and d.placement is not None and d.fabric is not None
            and len(d.spec.site.halls) > FLOOR_HALLS)


def worst(d) -> dict[str, tuple[float, str]]:
    """Each hall's worst limit as (utilisation, what) over normal operation and every failure state."""
    out: dict[str, tuple[float, str]] = {}
    for u in (d.placement.figures.get("usage", []) if d.placement is not None else []):
        k = (u["utilisation"], f"{u['name']} ({u['state']})")
        if u["hall"] not in out or k[0] > out[u["hall"]][0]:
            out[u["hall"]] = k
    return out


def floor_halls(d) -> list[str] | None:
    """The halls whose floor plans the report draws: every hall (None) up to :data:`FLOOR_HALLS`; above it
    on a campus, the fullest of each building (the highest worst utilisation, the first on a tie)."""
    if not applies(d):
        return None
    w = worst(d)
    return [max(bp.halls, key=lambda h: (w.get(h, (0.0, ""))[0], -bp.halls.index(h))) for bp in d.spec.campus.buildings]


def picture(d) -> tuple[str, str, bytes] | None:
    """(file name, caption, SVG) of the campus by building, or None below :data:`FLOOR_HALLS` halls."""
    if not applies(d):
        return None
    cp = d.spec.campus
    rows, between = buildings.figures(d)
    w = worst(d)
    racks = Counter(r.position.hall for r in d.placement.racks if r.kind == "gpu")
    cols = min(COLS, len(rows))
    bw = (WIDTH - 24 - (cols - 1) * 12) / cols
    per_row = max(1, int((bw - 16 + GAP) // (TILE + GAP)))
    tiles_h = max((len(bp.halls) + per_row - 1) // per_row for bp in cp.buildings) * (TILE + GAP)
    bh = HEAD + tiles_h + 8
    grid_rows = (len(rows) + cols - 1) // cols
    trunks = d.cabling.campus.trunks if d.cabling is not None and d.cabling.campus is not None else ()
    optics: Counter = Counter()
    for t in trunks:
        optics.update(t.media)
    H = 40 + grid_rows * (bh + 12) + 56
    c = Canvas(WIDTH, H, f"The campus by building: {len(rows)} buildings, {len(d.spec.site.halls)} halls")
    c.text(12, 20, f"{len(rows)} buildings, {len(d.spec.site.halls)} halls, {d.spec.gpus:,} GPUs; {between:,} links between "
                   f"buildings on {len(trunks)} routes", bold=True)
    for k, (bp, b) in enumerate(zip(cp.buildings, rows)):
        x, y = 12 + (k % cols) * (bw + 12), 36 + (k // cols) * (bh + 12)
        lengths = [t.route_m for t in trunks if bp.name in (t.a, t.b)]
        c.group("building", building=bp.name, halls=str(len(bp.halls)), gpus=str(b.gpus), links_out=str(b.links_out))
        c.rect(x, y, bw, bh, "#f3f5f8", stroke=INK, tip=f"building {bp.name}: {len(bp.halls)} halls, {b.gpus:,} GPUs")
        c.text(x + 8, y + 15, f"{bp.name}: {len(bp.halls)} halls, {b.zones} zones, {b.gpus:,} GPUs", bold=True, size=9.5)
        c.text(x + 8, y + 30, f"IT {kw(b.it_w)}; facility {kw(b.facility_w)} of {kw(bp.utility)}", size=9)
        reach = f" ({min(lengths) / 1e3:,.1f}-{max(lengths) / 1e3:,.1f} km)" if lengths else ""
        c.text(x + 8, y + 44, f"{b.links_out:,} links to {len(lengths)} buildings{reach}", size=9, fill=MUTED)
        c.text(x + 8, y + 57, " / ".join(f"{b.switches[r]:,} {r}" for r in (*d.fabric.roles, "cssw") if b.switches.get(r)), size=9, fill=MUTED)
        for j, hall in enumerate(bp.halls):
            tx, ty = x + 8 + (j % per_row) * (TILE + GAP), y + HEAD + (j // per_row) * (TILE + GAP)
            u, what = w.get(hall, (0.0, "-"))
            c.group("hall", hall=hall, utilisation=f"{u:.4f}")
            c.rect(tx, ty, TILE, TILE, status_colour(u), tip=f"{hall}: {racks[hall]:,} GPU racks; worst limit {100 * u:.1f}%: {what}")
            short = hall[len(bp.name) + 1:] if hall.startswith(bp.name + "-") else hall
            c.text(tx + TILE / 2, ty + TILE / 2 + 3, short[:6], anchor="middle", size=8, fill=INK)
            c.end()
        c.end()
    y = H - 36
    c.legend(12, y, [(OK, "hall's worst limit < 80%"), (WARN, "80-100%"), (OVER, "over")])
    c.text(12, y + 22, "Links between buildings by optic: " + (", ".join(f"{n:,} x {m}" for m, n in sorted(optics.items())) or "none")
           + f"; routes {min((t.route_m for t in trunks), default=0) / 1e3:,.1f}-{max((t.route_m for t in trunks), default=0) / 1e3:,.1f} km"
           + " (each route: the Campus section and the fabric diagram)", size=10)
    caption = (f"The campus by building ({len(d.spec.site.halls)} halls: one tile per hall, coloured by its worst busway, UPS block, "
               "cooling or utility limit over normal operation and every failure state; floor plans follow for the fullest hall of each building)")
    return "campus-buildings.svg", caption, c.svg()
