"""Report sections of the fabric and the cabling, with every figure computed from the graph."""

from __future__ import annotations

from collections import Counter

import numpy as np

from twin.compiler.design import Design
from twin.compiler.fabric import cabling as cabling_pass
from twin.compiler.fabric.figures import compute
from twin.emit.markdown import pct, table


def _tb(bps: float) -> str:
    return f"{bps / 1e12:,.1f} Tbit/s"


def fabric_section(d: Design) -> str | None:
    fabric = d.fabric
    if fabric is None:
        return None
    s = d.spec
    fig = compute(fabric, s)
    out = [f"## Fabric\n\n{fabric.technology}, {fabric.family}: {sum(t.count for t in fig.tiers):,} switches in {len(fig.tiers)} tier(s). "
           "Every figure below is counted on the fabric graph (bisection by max-flow), not taken from a formula.\n"]
    rows = []
    for t in fig.tiers:
        over = t.oversubscription
        rows.append([
            t.role, ", ".join(f"{c:,} x {m}" + (f" ({s.switch(m).asic})" if s.switch(m).asic else "") for m, c in t.models.items()), f"{t.count:,}",
            _tb(t.down_bps), _tb(t.up_bps) if t.up_bps else "-",
            f"{over:.2f}:1" if over else "-",
            f"{t.uplinks[0]}" + (f"-{t.uplinks[1]}" if t.uplinks[1] != t.uplinks[0] else "") + f" links / {t.next_hops[0]}" + (f"-{t.next_hops[1]}" if t.next_hops[1] != t.next_hops[0] else "") + " switches" if t.up_bps else "-",
            f"{t.ports_used:,} / {t.ports_total:,} ({pct(t.ports_used / t.ports_total)})",
        ])
    out.append(table(["tier", "models", "switches", "down", "up", "down:up", "ECMP up (links / next hops)", "ports used"], rows, "llrrrlll"))
    if s.shape.unit is not None:
        notes = unit_notes(s.shape.unit)
    else:
        notes = [] if s.family.zoned else parallel_link_notes(fig.tiers, s.shape.trees if s.family.rails_apart else 1)
    if notes:
        out.append("\n" + "\n".join(f"- {n}" for n in notes) + "\n")
    out.append("\n" + table(["link tier", "links", "capacity"], [[k, f"{n:,}", _tb(c)] for k, (n, c) in fig.links.items()], "lrr"))
    facts = [["GPU injection (all NICs)", _tb(fig.injection_bps)]]
    if fig.zone_bisection:
        flow, half = fig.zone_bisection
        facts.append([f"bisection inside a zone (max-flow, worst of {fig.zones_sampled} zones)", f"{_tb(flow)} = {pct(flow / half)} of the half-zone injection"])
    if fig.cross_zone_per_zone is not None:
        zone_inj = fig.injection_bps / max(1, s.zones)
        facts.append(["capacity from one zone to the tier above", f"{_tb(fig.cross_zone_per_zone)} = 1/{zone_inj / fig.cross_zone_per_zone:.2f} of zone injection" if fig.cross_zone_per_zone else "0"])
    if fig.cross_bisection:
        flow, half = fig.cross_bisection
        what = "bisection across zones (half of the zones to the other half)" if fig.cross_zone_per_zone is not None else ("bisection of one rail" if s.family.rails_apart else "bisection (first half of the leaves to the second)")
        facts.append([what, f"{_tb(flow)} = {pct(flow / half)} of the half's injection"])
    facts.append(["worst-case path between two NICs", f"{fig.worst_hops} links, {fig.worst_hops - 1} switches" + (" (same rail; other rails via NVLink)" if fig.unreachable_leaf_pairs else "")])
    out.append("\n" + table(["figure", "value"], facts, "ll"))
    return "\n".join(out)


def parallel_link_notes(tiers: list, trees: int = 1) -> list[str]:
    """Why a fat-tree tier sends several links to the same upper switch, where it does.

    The tree wiring (``twin.compiler.resolve.fat_tree``) gives every up-port its own next hop whenever the tree
    has enough upper switches to allow it; the two cases where it cannot are a tree whose upper tier
    is smaller than a switch's up-ports (a 2-tier tree of fewer than 2h leaves; ``trees`` counts the
    separate trees of a rail-only fabric) and the switches of a partial last pod. The report says
    which, because a failed upper switch takes all of its parallel links at once. (The AI-zone Clos
    uses parallel links by design and documents them in ``twin.compiler.fabric.ai_zone``.)
    """
    out = []
    for lower, upper in zip(tiers, tiers[1:]):
        links, hops = lower.uplinks, lower.next_hops
        if not links[0] or hops[0] >= links[0]:
            continue
        per_tree = upper.count // max(1, trees)
        if per_tree < links[0]:
            why = (f"each tree's {upper.role} tier has {per_tree:,} switches, fewer than the {links[0]} up-ports, "
                   "so no wiring reaches more")
        else:
            why = f"the {lower.role} switches of a partial last pod share fewer {upper.role}s than they have up-ports"
        span = f"{hops[0]}" + (f"-{hops[1]}" if hops[1] != hops[0] else "")
        out.append(f"{lower.role}: {links[0]} up-links reach {span} distinct {upper.role}s (parallel links): {why}.")
    return out


def unit_notes(u) -> list[str]:
    """How a scalable-unit fabric spreads its uplinks, by design (twin.compiler.fabric.units)."""
    if u.rails_meet == "core":
        out = [f"{u.units} scalable unit(s) x {u.rails} rails = {u.groups} SU leaf groups of {u.leaves} leaves ({u.leaf_hosts} hosts each) "
               f"and {u.spines} spines; no switch below the cores joins two rails."]
    elif u.rail_group == u.rails:
        out = [f"{u.units} scalable unit(s) = {u.groups} SU leaf groups of {u.rails} rails x {u.rail_leaves} leaves ({u.leaf_hosts} hosts "
               f"each) and {u.spines} spines; the rails meet at the spines, the units at the cores."]
    else:
        out = [f"{u.units} scalable unit(s) x {u.rails // u.rail_group} rail groups = {u.groups} SU leaf groups of {u.rail_group} rails x "
               f"{u.rail_leaves} leaves ({u.leaf_hosts} hosts each) and {u.spines} spines; the rails of a group meet at its spines, "
               f"the groups and the units at the cores."]
    if u.leaf_up % u.spines == 0:
        out.append(f"leaf: {u.leaf_up} up-links, {u.leaf_up // u.spines} to each of its leaf group's {u.spines} spines (parallel links by design).")
    where = (f"{u.spine_up // u.cores} to each of the {u.cores} cores of its core group" if u.spine_up % u.cores == 0
             else f"one to each of {u.spine_up} of the {u.cores} cores of its core group")
    out.append(f"spine: {u.spine_up} up-links, {where}; spine j of every leaf group goes to core group j ({u.core_groups} groups).")
    return out


def cabling_section(d: Design) -> str | None:
    plan = d.cabling
    if plan is None:
        return None
    rows = []
    counts = Counter(zip(plan.tiers, (plan.media[i] for i in plan.medium)))
    for (tier, medium), n in sorted(counts.items()):
        sel = np.array([t == tier for t in plan.tiers]) & (plan.medium == plan.media.index(medium))
        rows.append([tier, medium, f"{n:,}", f"{plan.length[sel].min():.1f}-{plan.length[sel].max():.1f} m", f"{plan.stock[sel].sum() / 1000:,.1f} km"])
    text = (
        "## Cabling\n\n"
        f"{len(plan):,} cables, {plan.stock.sum() / 1000:,.1f} km ordered. Route = rise to the overhead tray at both ends "
        "(tray height minus the device's height) + Manhattan run in the tray (along the row; between rows only at "
        "cross-aisles and row ends; between halls via the hall origins) + service loop "
        f"{cabling_pass.LOOP_FACTOR:.0%} + {cabling_pass.LOOP_FIXED:g} m; inside one rack the vertical distance + "
        f"{cabling_pass.RACK_SLACK:g} m. Medium: DAC, then AEC, AOC and optics by reach; length rounded up to the next "
        "stock length. Files: `cabling/cables.csv`, `cabling/pull-<hall>-row<NN>.csv`; the NetBox import set (with the cables) in `netbox/`.\n\n"
    )
    return text + table(["tier", "medium", "cables", "length with slack", "ordered"], rows, "llrrr")
