"""The figures a design review compares: what a site change means in reviewers' terms.

:func:`figures` reads a Design and answers with one row per figure (group, key, label, value, unit):
GPUs, switches per tier, links and oversubscription per tier boundary, ECMP widths, cables, optics
and cable km, power per level and its headroom, placement objective and gap, network cost (when the
catalog has prices) and the build's default twin run (busbw, link load, the job's step). Every build
writes them as ``review.json``, so ``twin diff`` compares a spec with a built folder, or two folders,
figure by figure without recompiling what was built.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable

from twin.compiler.design import Design
from twin.twins.results import SCHEMA_VERSION

Row = dict  # {"group", "key", "label", "value", "unit"}


def figures(d: Design, twin_results: dict | None = None, scenario: dict | None = None) -> list[Row]:
    """Every review figure of ``d`` in display order (``twin_results``: the build's default twin run,
    :func:`twin.twins.default.design_results`; ``scenario``: a scenario run with the build)."""
    rows: list[Row] = []

    def add(group: str, key: str, label: str, value, unit: str = "") -> None:
        if value is not None:
            rows.append({"group": group, "key": key, "label": label, "value": value, "unit": unit})

    s = d.spec
    add("compute", "gpus", "GPUs", s.gpus)
    add("compute", "gpu_racks", "GPU racks", s.racks)
    add("compute", "servers", "GPU servers", s.racks * s.rack_type.servers)
    fabric_figures(d, add)
    power_figures(d, add)
    p = d.placement
    if p is not None and p.figures.get("solver"):
        sol = p.figures["solver"]
        add("placement", "placement.fiber_m", "placement objective: fiber (tray metres)", round(p.figures["fiber_m"]["total"], 1), "m")
        add("placement", "placement.bound_m", "fiber lower bound", round(sol["fiber_bound_m"], 1), "m")
        add("placement", "placement.gap", "optimality gap", round(100 * sol["gap"], 3), "%")
        add("placement", "placement.status", "solver status", sol["status"])
    if p is not None and "rows" in p.figures:
        add("placement", "placement.stranded_kw", "stranded power (rows in use)",
            round(sum(r["stranded_w"] for r in p.figures["rows"] if r["load_w"] > 0) / 1e3, 1), "kW")
    cost_figures(d, add)
    twin_figures(twin_results, add)
    scenario_figures(scenario, add)
    return rows


def fabric_figures(d: Design, add: Callable) -> None:
    f = d.fabric
    if f is None:
        return
    g = f.graph
    roles = Counter(a["role"] for _n, a in g.nodes(data=True) if a.get("level", -1) >= 1)
    for role in f.roles:
        add("fabric", f"switches.{role}", f"{role} switches", roles.get(role, 0))
    add("fabric", "switches.total", "switches", sum(roles.values()))
    links = Counter(lk.tier for lk in f.links if lk.kind == "link")
    for tier in f.tiers:
        add("fabric", f"links.{tier}", f"{tier} links", links.get(tier, 0))
    for bd in d.spec.shape.boundaries:
        if bd.built is not None:
            add("fabric", f"oversubscription.{bd.name}", f"oversubscription below {bd.name} (down:up)", round(bd.built, 3), ":1")
    if d.addressing is not None:
        from twin.compiler.config.intent import ecmp_widths

        widths = ecmp_widths(f)
        cap = d.spec.fabric.routing.ecmp_width
        per_role: dict[str, set[int]] = {}
        for n, w in widths.items():
            per_role.setdefault(g.nodes[n]["role"], set()).add(w if cap is None else min(w, cap))
        for role in f.roles:
            if role in per_role:
                add("fabric", f"ecmp.{role}", f"ECMP width (maximum-paths) of {role}", max(per_role[role]))
    plan = d.cabling
    if plan is not None:
        add("cabling", "cables", "cables", len(plan))
        add("cabling", "cable_km", "cable ordered", round(float(plan.stock.sum()) / 1e3, 3), "km")
        for tier in f.tiers:
            sel = [t == tier for t in plan.tiers]
            if any(sel):
                add("cabling", f"cable_km.{tier}", f"{tier} cable ordered", round(float(plan.stock[sel].sum()) / 1e3, 3), "km")
        media = Counter(plan.media[i] for i in plan.medium.tolist())
        for name in sorted(media):
            add("cabling", f"media.{name}", f"{name} links", media[name])
        add("cabling", "transceivers", "transceivers (optics)", sum(ln.quantity for ln in d.bom if ln.category == "transceiver"))


def power_figures(d: Design, add: Callable) -> None:
    b = d.budget
    add("power", "power.rack_kw", "rack power", round(b.rack_power / 1e3, 2), "kW")
    add("power", "power.it_kw", "site IT power", round(b.it_power / 1e3, 1), "kW")
    add("power", "power.facility_kw", "site facility power", round(b.facility_power / 1e3, 1), "kW")
    add("power", "power.utility_headroom_kw", "site utility headroom", round((b.utility - b.facility_power) / 1e3, 1), "kW")
    if d.bom:
        from twin.compiler.fabric.bom import network_power

        add("power", "power.network_kw", "network power (switches, optics, active cables)", round(network_power(d.bom)["total"] / 1e3, 2), "kW")
    usage = d.placement.figures.get("usage", []) if d.placement is not None else []
    for hb in b.halls:
        add("power", f"power.{hb.name}.it_kw", f"{hb.name} IT load", round(hb.it_power / 1e3, 1), "kW")
        add("power", f"power.{hb.name}.distribution_headroom_kw", f"{hb.name} distribution headroom after a failure",
            round((hb.distribution - hb.it_power) / 1e3, 1), "kW")
        for kind in ("busway", "block", "cooling-row", "utility"):
            for state, name in (("normal", "normal"), ("failure", "worst failure")):
                us = [u["utilisation"] for u in usage if u["hall"] == hb.name and u["kind"] == kind
                      and (u["state"] == "normal") == (state == "normal")]
                if us:
                    add("power", f"power.{hb.name}.{kind}.{state}", f"{hb.name} worst {kind}, {name}", round(100 * max(us), 2), "%")


def cost_figures(d: Design, add: Callable) -> None:
    """Network cost from the BOM's prices, only where the catalog gives them (``BomLine.total_price``)."""
    priced = [ln for ln in d.bom if getattr(ln, "total_price", None) is not None]
    if not priced:
        return
    for cat in ("switch", "transceiver", "cable"):
        add("cost", f"cost.{cat}", f"{cat} cost", round(sum(ln.total_price for ln in priced if ln.category == cat), 2), "USD")
    add("cost", "cost.network", "network cost", round(sum(ln.total_price for ln in priced), 2), "USD")
    add("cost", "cost.unpriced_lines", "BOM lines without a price", len(d.bom) - len(priced))


def twin_figures(r: dict | None, add: Callable) -> None:
    if not r:
        return
    big = len(r["sizes"]) - 1
    for e in r["schemes"]:
        add("twin", f"twin.busbw.{e['name']}", f"AllReduce busbw at {r['sizes'][big] / 2**30:g} GiB, {e['name']}", round(e["busbw_GBps"][big], 2), "GB/s")
        if e["max_over_mean"] is not None:
            add("twin", f"twin.load.{e['name']}", f"max/mean fabric link load, {e['name']}", round(e["max_over_mean"], 3))
        if e.get("hierarchical_busbw_GBps") is not None:
            add("twin", f"twin.hier_busbw.{e['name']}", f"hierarchical AllReduce busbw at {r['sizes'][big] / 2**30:g} GiB, {e['name']}",
                round(e["hierarchical_busbw_GBps"], 2), "GB/s")
    j = r.get("job")
    if j and "schemes" in j:
        for s in j["schemes"]:
            add("twin", f"twin.step.{s['scheme']}", f"{j['workload']} step time, {s['scheme']}", round(s["step_s"], 4), "s")
            add("twin", f"twin.exposed.{s['scheme']}", f"{j['workload']} exposed communication, {s['scheme']}", round(100 * s["exposed_fraction"], 2), "%")


def scenario_figures(data: dict | None, add: Callable) -> None:
    """Figures of a scenario run with the build: campaign ETTR and MTTI, the power twin's grid peak and
    the busway/UPS limits it found exceeded."""
    if not data:
        return
    if "campaign" in data:
        c = data["campaign"]
        add("twin", "campaign.ettr_p50", "campaign ETTR (P50)", round(100 * c["ettr"]["p50"], 2), "%")
        add("twin", "campaign.mtti_h", "campaign mean time to interruption", round(c["mtti_h"], 3), "h")
    if "power" in data:
        p = data["power"]
        add("twin", "power.grid_peak_mw", "power twin: grid peak", round(p["grid"]["peak_W"] / 1e6, 4), "MW")
        add("twin", "power.limits_failing", "power twin: busway/UPS limits exceeded", p["distribution"]["limits_failing"])


def dumps(rows: list[Row]) -> bytes:
    """``review.json`` (written by the report emitter, which has the twin's results at hand)."""
    return (json.dumps({"schema_version": SCHEMA_VERSION, "figures": rows}, indent=1, sort_keys=True) + "\n").encode("utf-8")
