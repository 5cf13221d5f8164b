"""Pictures of the power and cooling budget, the GPU power-cap curve and the cable lengths.

Budget bars: every level of the power and cooling chain (site utility, rack power shelf, and per hall
its busways or UPS blocks, row cooling, cooling zones and hall utility) as the share of its limit it
uses, in normal operation and in the worst failure state (the placement's ``usage`` figures: one entry
per limit and state). A bar past the 100% line is a limit exceeded. On a campus of more than
:data:`twin.emit.markdown.FOLD` halls the levels are per building (its worst hall, named), not per hall.
"""

from __future__ import annotations

import math

import numpy as np

from twin.compiler.place import floorplan
from twin.emit.markdown import FOLD
from twin.emit.svg import INK, MUTED, PALETTE, Canvas, nice_ticks, stacked_histogram, status_colour
from twin.lang.units import kw

KINDS = [("busway", "busways"), ("block", "UPS blocks"), ("cooling-row", "row cooling"), ("cooling-zone", "cooling zones"),
         ("utility", "hall utility"), ("cdu", "row CDUs"), ("facility-water", "facility water")]
FAILED = "#8c8c8c"


def worst(usages: list[dict]) -> dict | None:
    """The most used limit (ties broken by name and state, so the choice is stable)."""
    return max(usages, key=lambda x: (x["utilisation"], x["name"], x["state"])) if usages else None


def budget_rows(d) -> list[tuple[str, dict | None, dict | None]]:
    """(label, worst normal usage, worst failure-state usage) per level; a usage is
    ``{load_w, capacity_w, utilisation, name, state}``."""
    s, b = d.spec, d.budget
    rows: list[tuple[str, dict | None, dict | None]] = [
        ("site: facility vs utility", {"load_w": b.facility_power, "capacity_w": b.utility, "utilisation": b.facility_power / b.utility,
                                       "name": "site utility", "state": "normal"}, None),
        ("rack: power shelf", {"load_w": b.rack_power, "capacity_w": s.rack_type.power_shelf,
                               "utilisation": b.rack_power / s.rack_type.power_shelf, "name": s.rack_type_name, "state": "normal"}, None),
    ]
    usage = d.placement.figures.get("usage", []) if d.placement is not None else []
    by_hall: dict[str, list[dict]] = {}
    for u in usage:
        by_hall.setdefault(u["hall"], []).append(u)
    groups = [(h.name, by_hall.get(h.name, [])) for h in s.site.halls]
    if s.campus is not None and len(groups) > FOLD:  # a campus of many halls: each building's worst hall per level
        groups = [(f"{bp.name} ({len(bp.halls)} halls)", [u for h in bp.halls for u in by_hall.get(h, [])]) for bp in s.campus.buildings]
    for name, mine in groups:
        for kind, label in KINDS:
            us = [u for u in mine if u["kind"] == kind]
            if not us:
                continue
            normal = [u for u in us if u["state"] == "normal"]
            failed = [u for u in us if u["state"] != "normal"]
            rows.append((f"{name}: {label}", worst(normal), worst(failed)))
    return rows


def budget_svg(d) -> bytes:
    rows = budget_rows(d)
    L, R, T, bar = 190, 250, 40, 11
    per = 2 * bar + 10
    W, H = 900, T + len(rows) * per + 60
    top = max([1.2] + [u["utilisation"] for _, *us in rows for u in us if u]) * 1.02
    pw = W - L - R
    c = Canvas(W, H, f"Power and cooling budget of {d.name}")
    c.text(12, 18, "Power and cooling: share of each limit used, normal operation and worst failure state", bold=True)

    def px(u):
        return L + min(u, top) / top * pw

    for t in nice_ticks(top * 100, 6):
        if t / 100 <= top:
            c.line(px(t / 100), T - 6, px(t / 100), H - 50, "#eeeeee")
            c.text(px(t / 100), H - 38, f"{t:g}%", anchor="middle", size=9)
    y = T
    for label, normal, failed in rows:
        c.text(L - 8, y + bar + 3, label, anchor="end", size=10)
        for k, u in enumerate((normal, failed)):
            yy = y + k * (bar + 2)
            if u is None:
                continue
            colour = status_colour(u["utilisation"]) if k == 0 else FAILED if u["utilisation"] <= 1 else status_colour(u["utilisation"])
            what = "normal" if k == 0 else u["state"]
            c.rect(L, yy, px(u["utilisation"]) - L, bar, colour,
                   tip=f"{label}, {what}: {u['name']} carries {kw(u['load_w'])} of {kw(u['capacity_w'])} ({100 * u['utilisation']:.1f}%)")
            label_k = (f"{100 * u['utilisation']:.1f}% of {kw(u['capacity_w'])}" + ("" if k == 0 else f" ({u['state']})")
                       + (f", {u['hall']}" if "halls)" in label else ""))
            c.text(px(u["utilisation"]) + 4, yy + bar - 2, label_k, size=9, fill=INK if k == 0 else MUTED)
        y += per
    c.line(px(1.0), T - 8, px(1.0), H - 50, "#e15759", 1.5, dash="4 2")
    c.text(px(1.0) + 3, T - 10, "limit", size=9, fill="#e15759")
    c.legend(L, H - 12, [(status_colour(0.5), "normal (<80%)"), (status_colour(0.9), "normal (80-100%)"), (FAILED, "worst failure state"),
                         (status_colour(1.5), "over the limit")])
    return c.svg()


def stock_edges(top: float) -> list[float]:
    """Histogram bin edges in metres from 0 past ``top``, 8 to 20 bins of a round width.

    >>> stock_edges(12.8)[:4], stock_edges(12.8)[-1], len(stock_edges(430))
    ([0, 1, 2, 3], 13, 19)
    """
    top = max(top, 1.0)
    width = next(w for w in (0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000) if top / w <= 20)
    n = max(1, math.ceil(top / width - 1e-9))
    return [float(k * width) if width < 1 else int(k * width) for k in range(n + 1)]


def cable_pictures(d) -> list[tuple[str, str, bytes]]:
    plan = d.cabling
    if plan is None or not len(plan):
        return []
    tiers = np.array(plan.tiers)
    out = []
    order = [t for t in (d.fabric.tiers if d.fabric is not None else ()) if t in set(plan.tiers)]
    for tier in order + sorted(set(plan.tiers) - set(order)):
        sel = tiers == tier
        lengths, media = plan.length[sel], plan.medium[sel]
        edges = stock_edges(float(lengths.max()))
        series = []
        for k in sorted(set(media.tolist())):
            counts, _ = np.histogram(lengths[media == k], bins=np.array(edges, dtype=float))
            series.append((plan.media[k], PALETTE[k % len(PALETTE)], [int(x) for x in counts]))
        title = f"{tier}: {int(sel.sum()):,} cables, {plan.stock[sel].sum() / 1000:,.1f} km ordered"
        out.append((f"cables-{tier}.svg", f"Cable lengths of the {tier} tier (route with service loop) by medium",
                    stacked_histogram(title, "length with slack (m)", edges, series)))
    return out


def pictures(d) -> list[tuple[str, str, bytes]]:
    """The budget bars, the power-cap curve (when the placement swept caps) and cable histograms."""
    out = [("budget.svg", "Power and cooling budget per level and hall: share of each limit used in normal operation"
            " and after the worst failure", budget_svg(d))]
    pc = d.placement.figures.get("powercap") if d.placement is not None else None
    if pc:
        out.append(("powercap.svg", "GPU power cap: cluster throughput and GPUs that fit against the cap",
                    floorplan.tradeoff_svg(pc["rows"], pc.get("chosen_cap_w"))))
    return out
