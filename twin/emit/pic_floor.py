"""The floor plan of a hall at its real geometry, as the report draws it.

Racks are drawn where the placement put them, at the hall's slot width, rack depth and row pitch
(the cabling pass routes on the same :class:`~twin.compiler.place.model.HallGrid`), with the cross-aisles as
gaps, reserved positions dashed, GPU racks coloured by AI zone and network racks dark with their role's
letter. Every rack prints its name (the end of its id that fits its box, rotated along a narrow
rack), so a printed plan names the racks, not only its tooltips. Left of each row: the worst utilisation of its busways (or UPS block) over normal operation and
every failure state, and of its cooling. Every rack has a tooltip (``<title>``) with its id, zone,
position and power.
"""

from __future__ import annotations

from twin.compiler.place import capacity
from twin.compiler.place.model import HallGrid
from twin.compiler.resolve.liquid import liquid_share
from twin.emit.svg import INK, MUTED, PALETTE, Canvas, status_colour
from twin.lang.site.models import Hall
from twin.lang.units import kw

MARGIN = 150  # px left of the hall: row label, busway bar, cooling bar
BAR = 44  # px of a full (100%) utilisation bar
TOP = 44
LETTER = {"ctsw": "C", "atsw": "A", "fabric": "F"}
NETWORK = "#222222"
RESERVED = "#f4f4f4"


def zone_colour(zone: int | None) -> str:
    return PALETTE[(zone or 0) % len(PALETTE)]


def scale(h: Hall) -> float:
    """Pixels per metre: the hall fits 560 x 640 px, at most 40 px/m."""
    w, d = hall_size(h)
    return min(40.0, 560.0 / w, 640.0 / d)


def hall_size(h: Hall) -> tuple[float, float]:
    """Width along the rows and depth across them, in metres (racks and cross-aisles, no margins).

    >>> from types import SimpleNamespace as N
    >>> hall_size(N(positions_per_row=18, slot_width=0.6, cross_aisle_every=9, cross_aisle_width=1.8, rows=12, row_pitch=3.6, rack_depth=1.2))
    (12.6, 40.8)
    """
    aisles = (h.positions_per_row - 1) // h.cross_aisle_every if h.cross_aisle_every else 0
    width = h.positions_per_row * h.slot_width + aisles * h.cross_aisle_width
    return round(width, 6), round((h.rows - 1) * h.row_pitch + h.rack_depth, 6)


def row_utilisation(h: Hall, pue: float, racks, share: float = 0.0) -> tuple[dict[int, float], dict[int, float]]:
    """Worst busway/UPS-block and worst cooling (air, CDUs, facility water) utilisation of each row over
    every failure state."""
    load = {r: 0.0 for r in range(1, h.rows + 1)}
    gpu = dict(load)
    for r in racks:
        load[r.position.row] += r.power
        if r.kind == "gpu":
            gpu[r.position.row] += r.power
    power = dict.fromkeys(load, 0.0)
    cool = dict.fromkeys(load, 0.0)
    for u in capacity.usage(h, pue, load, gpu, share):
        cooling = u.limit.kind.startswith("cooling") or u.limit.kind in ("cdu", "facility-water")
        target = power if u.limit.kind in ("busway", "block") else cool if cooling else None
        if target is not None:
            for r in u.limit.rows:
                target[r] = max(target[r], u.utilisation)
    return power, cool


def rack_label(rid: str, hall: str, w: float, h: float) -> tuple[str, bool, float]:
    """What a rack ``w`` x ``h`` px prints of its id: (the longest dash-separated tail after the hall's
    name that fits, written rotated?, font size); ``("", False, 0)`` when not even the last part fits.

    >>> rack_label("dh1-z1-r001", "dh1", 8.4, 17.8), rack_label("dh1-z1-r001", "dh1", 60, 20)
    (('r001', True, 6.4), ('z1-r001', False, 9))
    >>> rack_label("dh1-z1-r001", "dh1", 4, 4)
    ('', False, 0.0)
    """
    name = rid[len(hall) + 1:] if rid.startswith(hall + "-") else rid
    parts = name.split("-")
    best = ("", False, 0.0)
    for rotated, room, across in ((False, w, h), (True, h, w)):
        size = min(9, across - 2 if rotated else across - 3)
        if size < 5:
            continue
        for k in range(len(parts), len(best[0].split("-")) if best[0] else 0, -1):
            tail = "-".join(parts[-k:])
            if len(tail) * 0.6 * size <= room - 2:
                best = (tail, rotated, round(size, 1))
                break
    return best


def ink_on(colour: str) -> str:
    """Black or white text, whichever reads on ``colour`` (relative luminance of sRGB, approximate)."""
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return INK if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "#ffffff"


def label_rack(c: Canvas, rid: str, hall: str, x: float, y: float, w: float, h: float, fill: str) -> bool:
    """Print the rack's name (the tail of its id that fits) inside its box; False when none fits."""
    text, rotated, size = rack_label(rid, hall, w, h)
    if not text:
        return False
    if rotated:
        c.text(x + w / 2 + size * 0.35, y + h / 2, text, anchor="middle", size=size, fill=ink_on(fill), rotate=True, cls="rack-label")
    else:
        c.text(x + w / 2, y + h / 2 + size * 0.35, text, anchor="middle", size=size, fill=ink_on(fill), cls="rack-label")
    return True


def reserved_positions(h: Hall) -> set[tuple[int, int]]:
    return {(r, p) for res in h.reserved for r in res.rows for p in res.positions}


def hall_svg(h: Hall, racks, pue: float, zones: int, share: float = 0.0) -> bytes:
    """One hall's floor plan (``racks``: the PlacedRacks of this hall)."""
    s = scale(h)
    wm, dm = hall_size(h)
    grid = HallGrid(h)
    ox, oy = h.origin
    gpu = [r for r in racks if r.kind == "gpu"]
    net = [r for r in racks if r.kind != "gpu"]
    head = (f"hall {h.name}: {h.rows} rows x {h.positions_per_row} positions, {wm:g} m x {dm:g} m;"
            f" {len(gpu)} GPU racks, {len(net)} network racks")
    kinds = [(NETWORK, "network (C CTSW, A ATSW, F fabric; Cn01: ctsw-n01)"), (RESERVED, "reserved"), ("#ffffff", "empty")]
    W = max(MARGIN + wm * s + 24, 7.0 * len(head) + 16, 8 + sum(34 + 6.2 * len(label) for _, label in kinds))
    H = TOP + dm * s + 70
    c = Canvas(W, H, f"Floor plan of hall {h.name}")
    c.text(8, 16, head, bold=True)
    c.text(8, TOP - 8, "row", size=9, fill=MUTED)
    c.text(40, TOP - 8, "busway", size=9, fill=MUTED)
    c.text(40 + BAR + 8, TOP - 8, "cooling", size=9, fill=MUTED)
    c.rect(MARGIN - 6, TOP - 6, wm * s + 12, dm * s + 12, "#fafafa", stroke="#bbbbbb")

    def px(slot: int) -> float:
        return MARGIN + (grid.x(slot) - ox - h.slot_width / 2) * s

    def py(row: int) -> float:
        return TOP + (grid.y(row) - oy) * s

    if h.cross_aisle_every:
        for k in range(1, (h.positions_per_row - 1) // h.cross_aisle_every + 1):
            x = px(k * h.cross_aisle_every) + h.slot_width * s
            c.rect(x, TOP - 6, h.cross_aisle_width * s, dm * s + 12, "#e8eef5", tip="cross-aisle")
    power, cool = row_utilisation(h, pue, racks, share)
    reserved = reserved_positions(h)
    taken = {(r.position.row, r.position.slot) for r in racks}
    rw, rd = h.slot_width * s, h.rack_depth * s
    for row in range(1, h.rows + 1):
        y = py(row)
        c.text(8, y + rd / 2 + 4, str(row), size=9)
        for x, u, what in ((40, power[row], "busway"), (40 + BAR + 8, cool[row], "cooling")):
            c.rect(x, y + rd / 2 - 6, BAR * min(1.0, u), 12, status_colour(u),
                   tip=f"row {row} {what}: {100 * u:.1f}% of its limit in the worst state")
            c.rect(x, y + rd / 2 - 6, BAR, 12, "none", stroke="#999999")
            c.text(x + BAR / 2, y + rd / 2 + 3.5, f"{100 * u:.0f}%", anchor="middle", size=8)
        for slot in range(1, h.positions_per_row + 1):
            if (row, slot) in taken:
                continue
            if (row, slot) in reserved:
                c.rect(px(slot) + 0.5, y + 0.5, rw - 1, rd - 1, RESERVED, stroke="#999999", dash=True,
                       tip=f"row {row} slot {slot}: reserved")
            else:
                c.rect(px(slot) + 0.5, y + 0.5, rw - 1, rd - 1, "#ffffff", stroke="#cccccc", tip=f"row {row} slot {slot}: empty")
    for r in sorted(racks, key=lambda r: (r.position.row, r.position.slot)):
        x, y = px(r.position.slot) + 0.5, py(r.position.row) + 0.5
        where = f"row {r.position.row} slot {r.position.slot}, {kw(r.power)}"
        if r.kind == "gpu":
            c.rect(x, y, rw - 1, rd - 1, zone_colour(r.zone), tip=f"{r.id}: GPU rack, zone {(r.zone or 0) + 1}, {where}")
            label_rack(c, r.id, h.name, x, y, rw - 1, rd - 1, zone_colour(r.zone))
        else:
            zone = "" if r.zone is None else f", zone {r.zone + 1}"
            c.rect(x, y, rw - 1, rd - 1, NETWORK, tip=f"{r.id}: {r.role} network rack ({r.switches} switches){zone}, {where}")
            letter = LETTER.get(r.role, "F")  # "dh1-atsw-n01" prints as "An01"
            short = r.id.replace(f"-{r.role}-", f"-{letter}") if r.role in LETTER else r.id
            if not label_rack(c, short, h.name, x, y, rw - 1, rd - 1, NETWORK) and rw >= 7:
                c.text(x + rw / 2 - 0.5, y + rd / 2 + 3, LETTER.get(r.role, "F"), anchor="middle", size=min(9, rw - 1), fill="#ffffff")
    five = 5 * s
    c.line(MARGIN, H - 40, MARGIN + five, H - 40, INK, 2)
    c.text(MARGIN + five + 4, H - 36, "5 m", size=9)
    in_hall = sorted({r.zone or 0 for r in gpu})
    shown = in_hall[:6]
    entries = [(zone_colour(z), f"zone {z + 1}") for z in shown]
    if len(in_hall) > len(shown):
        entries.append(("#ffffff", f"+{len(in_hall) - len(shown)} zones"))
    c.legend(8, H - 22, entries)
    c.legend(8, H - 6, kinds)
    return c.svg()


def floor_pictures(d, only: list[str] | None = None) -> list[tuple[str, str, bytes]]:
    """(file name, caption, svg) per hall, in the spec's hall order (``only``: these halls alone)."""
    p = d.placement
    if p is None:
        return []
    by_hall: dict[str, list] = {}
    for r in p.racks:
        by_hall.setdefault(r.position.hall, []).append(r)
    out = []
    for h in d.spec.site.halls:
        if only is not None and h.name not in only:
            continue
        caption = (f"Floor plan of {h.name} at its real geometry (racks coloured by AI zone, network racks dark, each named by"
                   f" the end of its id after `{h.name}-` that fits; bars: worst busway and cooling utilisation of each row over"
                   " normal operation and every failure state)")
        out.append((f"floor-{h.name}.svg", caption, hall_svg(h, by_hall.get(h.name, []), d.spec.site.power.pue, d.spec.zones,
                                                                              liquid_share(d.spec.site))))
    return out
