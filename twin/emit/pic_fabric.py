"""The fabric diagram: the tiers as a stack, then one zone (or pod) drawn switch by switch.

Not a hairball: the top panel has one box per tier (switch count and models counted on the graph)
and, between tiers, the links, their speed and the oversubscription the spec asked for next to the
one the built links give (``spec.shape.boundaries``). The bottom panel draws the first zone of an
AI-zone Clos (the first pod of a tree): its first lowest-tier switches, the switches above they
connect to and the tier above those, with one line per connected pair (width by parallel links) and
the rest of a long tier folded into a "+N more" box.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from twin.emit import pic_campus
from twin.emit.svg import INK, MUTED, Canvas
from twin.lang.site.families import family_traits

TIER_COLOURS = {1: "#4e79a7", 2: "#f28e2b", 3: "#59a14f", 4: "#b07aa1"}
NIC_COLOUR = "#bab0ac"
WIDTH = 960
SHOWN = 8  # switches of a tier drawn one by one in the detail panel (then "+N more")


def gbit(bps: float) -> str:
    return f"{bps / 1e9:g}G"


def ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}:1"


def graph_facts(fabric) -> tuple[dict[int, tuple[str, Counter]], dict[str, tuple[int, Counter]]]:
    """Per switch level: (role, models counted); per link tier: (links, speeds counted)."""
    tiers: dict[int, tuple[str, Counter]] = {}
    for _n, a in fabric.graph.nodes(data=True):
        lvl = a.get("level", -1)
        if lvl >= 1:
            tiers.setdefault(lvl, (a["role"], Counter()))[1][a.get("model", "?")] += 1
    links: dict[str, tuple[int, Counter]] = {}
    # counted in one pass; first-seen order of tiers, and of speeds within a tier, as the links come
    for (tier, speed), k in Counter((lk.tier, lk.speed) for lk in fabric.links if lk.kind == "link").items():
        n, speeds = links.get(tier, (0, Counter()))
        speeds[speed] = k
        links[tier] = (n + k, speeds)
    return tiers, links


def short_label(name: str, width: float) -> str:
    """The longest tail of ``name`` (by dash-separated parts) that fits ``width`` px at 9 px type.

    >>> short_label("dh1-z1-r001-rtsw", 60), short_label("atsw-01", 60)
    ('r001-rtsw', 'atsw-01')
    """
    parts = name.split("-")
    for k in range(len(parts), 0, -1):
        tail = "-".join(parts[-k:])
        if len(tail) * 5.6 < width:
            return tail
    return ""


def detail_nodes(fabric) -> list[list[str]]:
    """Switches of the detail panel per level bottom-up: the first zone's (or pod's) lowest tier, then
    every switch of the tier above that the row below connects to (those linked to the row's first
    :data:`SHOWN` switches first, each part in name order), so the panel can say how many it leaves out."""
    g = fabric.graph
    by_level: dict[int, list[str]] = defaultdict(list)
    for n, a in g.nodes(data=True):
        if a.get("level", -1) >= 1:
            by_level[a["level"]].append(n)
    if not by_level:
        return []
    lowest = sorted(by_level[min(by_level)])
    if family_traits(fabric.family).zoned:
        seeds = [n for n in lowest if g.nodes[n].get("zone") == 0]
    else:
        first_up = {v for v in g.neighbors(lowest[0]) if g.nodes[v].get("level", -1) > 1}
        seeds = [n for n in lowest if {v for v in g.neighbors(n) if g.nodes[v].get("level", -1) > 1} == first_up]
    out = [seeds]
    level = min(by_level)
    while level + 1 in by_level:
        shown = out[-1][:SHOWN]
        near = {v for u in shown for v in g.neighbors(u) if g.nodes[v].get("level") == level + 1}
        every = {v for u in out[-1] for v in g.neighbors(u) if g.nodes[v].get("level") == level + 1}
        if not every:
            break
        out.append(sorted(near) + sorted(every - near))  # the shown switches' neighbours first, then the rest
        level += 1
    return out


def diagram_svg(d) -> bytes:
    fabric, shape = d.fabric, d.spec.shape
    tiers, links = graph_facts(fabric)
    bounds = {b.name: b for b in shape.boundaries}
    levels = sorted(tiers)
    box_h, gap = 40, 56
    top_h = 40 + len(levels) * (box_h + gap) + box_h
    rows = detail_nodes(fabric)
    det_h = 40 + max(1, len(rows)) * 110
    campus_h = pic_campus.height(d)
    c = Canvas(WIDTH, top_h + campus_h + det_h, f"Fabric diagram of {d.name}")
    c.text(12, 20, f"{fabric.technology}, {fabric.family}: {sum(sum(m.values()) for _, m in tiers.values()):,} switches in"
                   f" {len(levels)} tiers (counted on the fabric graph)", bold=True)
    y = 34
    ys = {}
    for lvl in reversed(levels):
        role, models = tiers[lvl]
        ys[lvl] = y
        c.rect(20, y, 430, box_h, TIER_COLOURS.get(lvl, MUTED), tip=f"{role}: {sum(models.values()):,} switches")
        c.text(32, y + 17, f"{role}  {sum(models.values()):,} switches", bold=True, fill="#ffffff")
        c.text(32, y + 32, ", ".join(f"{n:,} x {m}" for m, n in sorted(models.items())), fill="#ffffff", size=10)
        y += box_h + gap
    ys[0] = y
    nics = sum(1 for _n, r in fabric.graph.nodes(data="role") if r == "nic")
    c.rect(20, y, 430, box_h, NIC_COLOUR, tip=f"{nics:,} NICs")
    c.text(32, y + 17, f"NICs  {nics:,}", bold=True)
    c.text(32, y + 32, f"{d.spec.gpus:,} GPUs in {d.spec.racks:,} racks", size=10)
    names = {lvl: tiers[lvl][0] for lvl in levels}
    names[0] = "nic"
    for lvl in levels:
        tier = f"{names[lvl - 1]}-{names[lvl]}"
        n, speeds = links.get(tier, (0, Counter()))
        b = bounds.get(tier)
        y_top, y_bot = ys[lvl] + box_h, ys[lvl - 1]
        for k in range(5):
            x = 60 + k * 85
            c.line(x, y_top, x, y_bot, "#999999", 1.5)
        speed = ", ".join(f"{m:,} x {gbit(s)}" for s, m in sorted(speeds.items()))
        c.text(470, y_top + 18, f"{tier}: {n:,} links ({speed}), {sum(s * m for s, m in speeds.items()) / 1e12:,.1f} Tbit/s", bold=True)
        if b is not None and (b.requested is not None or b.built is not None):
            asked = "none asked" if b.requested is None else f"{b.requested:g}:1 asked"
            c.text(470, y_top + 34, f"{names[lvl - 1]} down:up (oversubscription): {asked}, {ratio(b.built)} built; shape {b.links:,} links"
                                    + ("" if b.links == n else " (graph differs!)"), size=10, fill=MUTED if b.requested is None else INK)
    campus = d.spec.campus and bounds.get(d.spec.campus.tier)
    if campus and campus.name not in {f"{names[lvl - 1]}-{names[lvl]}" for lvl in levels}:  # a full mesh: both ends ATSWs
        n, speeds = links.get(campus.name, (0, Counter()))
        c.text(470, ys[levels[-1]] + 18, f"{campus.name} (between buildings): {n:,} links"
                                         f" ({', '.join(f'{m:,} x {gbit(s)}' for s, m in sorted(speeds.items()))})", bold=True)
    pic_campus.draw(c, d, top_h)
    detail(c, fabric, rows, top_h + campus_h, names)
    return c.svg()


def detail(c: Canvas, fabric, rows: list[list[str]], y0: float, names: dict[int, str]) -> None:
    g = fabric.graph
    if not rows:
        return
    what = "zone 1" if family_traits(fabric.family).zoned else "the first pod"
    c.line(12, y0 - 8, WIDTH - 12, y0 - 8, "#cccccc")
    c.text(12, y0 + 12, f"Detail: {what}, switch by switch (line width: parallel links; +N more: switches of the tier the zone reaches, not drawn)", bold=True)
    pos: dict[str, tuple[float, float]] = {}
    n_rows = len(rows)
    for i, nodes in enumerate(rows):
        lvl = g.nodes[nodes[0]]["level"]
        y = y0 + 40 + (n_rows - 1 - i) * 110
        shown = nodes[:SHOWN]
        slots = len(shown) + (1 if len(nodes) > SHOWN else 0)
        w = min(100.0, (WIDTH - 40) / slots - 8)
        for k, n in enumerate(shown):
            x = 20 + k * (w + 8) + ((WIDTH - 40) - slots * (w + 8)) / 2
            pos[n] = (x + w / 2, y)
            a = g.nodes[n]
            c.rect(x, y, w, 30, TIER_COLOURS.get(lvl, MUTED), tip=f"{n}: {a.get('model', '')}, {a['role']}")
            label = short_label(n, w)
            c.text(x + w / 2, y + 19, label, anchor="middle", size=9, fill="#ffffff")
        if len(nodes) > SHOWN:
            x = 20 + len(shown) * (w + 8) + ((WIDTH - 40) - slots * (w + 8)) / 2
            c.rect(x, y, w, 30, "#ffffff", stroke=TIER_COLOURS.get(lvl, MUTED), dash=True,
                   tip=f"{len(nodes) - SHOWN:,} more {names.get(lvl, '')} switches wired the same way")
            c.text(x + w / 2, y + 19, f"+{len(nodes) - SHOWN:,} more", anchor="middle", size=9, cls="elided")
        if i == 0:
            for n in shown:
                k = sum(1 for v in g.neighbors(n) if g.nodes[v].get("role") == "nic")
                x, _ = pos[n]
                c.text(x, y + 44, f"{k} NICs", anchor="middle", size=9, fill=MUTED)
    pairs: Counter = Counter()
    speed: dict[tuple[str, str], float] = {}
    for i in range(len(rows) - 1):
        for u in rows[i][:SHOWN]:
            for _u, v, a in g.edges(u, data=True):
                if v in pos and a.get("kind") == "link" and g.nodes[v]["level"] > g.nodes[u]["level"]:
                    pairs[(u, v)] += 1
                    speed[(u, v)] = a["speed"]
    for (u, v), k in sorted(pairs.items()):
        (x1, y1), (x2, y2) = pos[u], pos[v]
        c.line(x1, y1, x2, y2 + 30, "#555555", min(4.0, 0.6 + 0.5 * k), tip=f"{u} - {v}: {k} x {gbit(speed[(u, v)])}")


def pictures(d) -> list[tuple[str, str, bytes]]:
    if d.fabric is None:
        return []
    return [("fabric.svg", "The fabric: tiers with switch counts and models, links, speed and oversubscription per tier"
             " boundary (asked vs built), and one zone drawn switch by switch", diagram_svg(d))]
