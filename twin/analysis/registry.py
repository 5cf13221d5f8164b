"""The named figures: one registry that review.json, ``twin diff`` and ``twin sweep`` read.

Each :class:`Figure` has one name (review.json's ``key``, the diff's row, a sweep's ``figures:`` entry),
one label, one unit, what it needs and how it is computed, from the owner of the fact it reports
(ARCHITECTURE.md, "One owner per fact"): counts from the fabric graph, cost and energy from
:mod:`twin.compiler.cost`, ECMP widths from the intent, link load from the network twin. A *family*
(``switches.{}``) is one figure per part (per role, tier, hall, routing scheme). The review lists every
figure the design and its twin runs give, rounded to ``digits`` for reading; a sweep collects the plain
ones it asks for, unrounded; the diff labels what moved from here.

``needs``: ``design`` (compiled through its BOM), ``intent`` (routed), ``default`` (the build's default
twin run), ``jobs``, ``campaign``, ``power``, ``cluster`` (a scenario with those sections).

>>> FIGURES["switches"].label, FIGURES["switches"].how
('switches', 'switch nodes of the fabric graph (= the BOM switch quantity)')
>>> lookup("switches.atsw").name, lookup("power.b1.busway.failure").name
('switches.{}', 'power.{}.{}.{}')
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from twin.compiler.cost import Cost, cost
from twin.compiler.fabric.bom import network_power

MW = 1e6
DAY = 86400.0
SWEEPABLE_NEEDS = ("design", "jobs", "campaign", "power", "cluster")  # what a sweep variant runs (no configs, no default run)


@dataclass
class Inputs:
    """What figures are computed from: the design, the build's default twin run, a scenario run's data,
    and which of the scenario's jobs (1-based) and routing schemes give the job figures."""

    design: Any
    default: dict | None = None
    sim: dict | None = None
    job: int = 1
    scheme: str | None = None

    @cached_property
    def cost(self) -> Cost:
        return cost(self.design)

    @cached_property
    def fabric_figures(self):
        """Max-flow bisection and cross-zone capacity of the graph (twin/compiler/fabric/figures.py)."""
        from twin.compiler.fabric.figures import compute

        return compute(self.design.fabric, self.design.spec)


Part = tuple[tuple, tuple, Any]  # a family member: (name parts, label parts, value)


@dataclass(frozen=True)
class Figure:
    name: str  # "{}" marks a family's part
    label: str
    unit: str
    group: str  # review.json's group (a section of the review)
    needs: str
    how: str
    value: Callable[[Inputs], Any] = field(repr=False)  # a value or None; a family: a list of Part
    digits: int | None = None  # review.json rounds to this many decimals

    @property
    def family(self) -> bool:
        return "{}" in self.name

    def rows(self, x: Inputs) -> list[dict]:
        """review.json rows: one, or one per family member; none where the figure has no value."""
        got = self.value(x)
        parts = got if self.family else [((), (), got)]
        return [{"group": self.group, "key": self.name.format(*k), "label": self.label.format(*lab), "unit": self.unit,
                 "value": _round(v, self.digits)} for k, lab, v in parts if v is not None]


def _tbps(bps: float | None) -> float | None:
    return None if bps is None else bps / 1e12


def _round(v, digits):
    return round(v, digits) if digits is not None and isinstance(v, float) else v


def _each(items, fn) -> list[Part]:
    """A family over ``items`` whose name and label parts are the item itself."""
    return [((i,), (i,), fn(i)) for i in items]


def _design_figures() -> list[Figure]:
    def F(name, label, unit, group, how, value, digits=None, needs="design"):
        return Figure(name, label, unit, group, needs, how, value, digits)

    def roles(x):
        count = Counter(r for _, r in x.design.fabric.graph.nodes(data="role"))  # once, not once per role
        return _each(x.design.fabric.roles, lambda r: count.get(r, 0))

    def tier_links(x):
        count = Counter(lk.tier for lk in x.design.fabric.links if lk.kind == "link")
        return _each(x.design.fabric.tiers, lambda t: count.get(t, 0))

    def km(stock):
        return round(float(stock.sum()) / 1e3, 3)

    def ecmp(x):
        if x.design.intent is None:
            return []
        g, widths = x.design.fabric.graph, {}
        for n, sw in x.design.intent.switches.items():
            widths[g.nodes[n]["role"]] = max(widths.get(g.nodes[n]["role"], 0), sw.maximum_paths)
        return _each([r for r in x.design.fabric.roles if r in widths], widths.get)

    def tier_km(x):
        plan = x.design.cabling
        return [((t,), (t,), km(plan.stock[[u == t for u in plan.tiers]])) for t in x.design.fabric.tiers if t in plan.tiers]

    def media(x):
        plan = x.design.cabling
        count = Counter(plan.media[i] for i in plan.medium.tolist())
        return _each(sorted(count), count.get)

    def solver(fn):
        def get(x):
            p = x.design.placement
            sol = p.figures.get("solver") if p is not None else None
            return fn(p.figures, sol) if sol else None
        return get

    def stranded(x):
        p = x.design.placement
        if p is None or "rows" not in p.figures:
            return None
        return sum(r["stranded_w"] for r in p.figures["rows"] if r["load_w"] > 0) / 1e3

    def halls(fn):
        return lambda x: [((h.name,), (h.name,), fn(h)) for h in x.design.budget.halls]

    def usage(x):
        usage = x.design.placement.figures.get("usage", []) if x.design.placement is not None else []
        by = {}  # (hall, kind, normal) -> its utilisations, one pass over every hall's entries
        for u in usage:
            by.setdefault((u["hall"], u["kind"], u["state"] == "normal"), []).append(u["utilisation"])
        out = []
        for hb in x.design.budget.halls:
            for kind in ("busway", "block", "cooling-row", "utility", "cdu", "facility-water"):
                for state, shown in (("normal", "normal"), ("failure", "worst failure")):
                    us = by.get((hb.name, kind, state == "normal"))
                    if us:
                        out.append(((hb.name, kind, state), (hb.name, kind, shown), 100 * max(us)))
        return out

    def draw_w(x):
        """The draw energy is priced at: the power twin's mean grid draw where it ran, else the budget's."""
        pw = (x.sim or {}).get("power")
        return pw["grid"]["mean_W"] if pw else x.design.budget.facility_power

    return [
        F("gpus", "GPUs", "", "compute", "spec.gpus (twin/compiler/resolve/spec.py)", lambda x: x.design.spec.gpus),
        F("gpu_racks", "GPU racks", "", "compute", "spec.racks", lambda x: x.design.spec.racks),
        F("servers", "GPU servers", "", "compute", "server nodes of the fabric graph (Fabric.server_count)", lambda x: x.design.fabric.server_count()),
        F("switches.{}", "{} switches", "", "fabric", "switch nodes of the fabric graph per role", roles),
        F("switches", "switches", "", "fabric", "switch nodes of the fabric graph (= the BOM switch quantity)", lambda x: len(x.design.fabric.switches())),
        F("links.{}", "{} links", "", "fabric", "cables of the fabric graph per tier", tier_links),
        F("oversubscription.{}", "oversubscription below {} (down:up)", ":1", "fabric", "spec.shape's boundaries, as built",
          lambda x: [((bd.name,), (bd.name,), bd.built) for bd in x.design.spec.shape.boundaries if bd.built is not None], 3),
        F("bisection_tbps", "bisection: max-flow between two halves of the zones (of the leaves without zones)", "Tbit/s", "fabric",
          "twin/compiler/fabric/figures.py: max-flow on the switch graph", lambda x: _tbps((x.fabric_figures.cross_bisection or (None,))[0]), 3),
        F("cross_zone_tbps", "cross-zone bandwidth: one zone to the tier above (the least of any zone)", "Tbit/s", "fabric",
          "twin/compiler/fabric/figures.py: capacity of a zone's links to zone-less switches", lambda x: _tbps(x.fabric_figures.cross_zone_per_zone), 3),
        F("ecmp.{}", "ECMP width (maximum-paths) of {}", "", "fabric", "the intent's maximum_paths, largest per role", ecmp, needs="intent"),
        F("cables", "cables", "", "cabling", "rows of the cable plan", lambda x: len(x.design.cabling)),
        F("cable_km", "cable ordered", "km", "cabling", "stock lengths of the cable plan", lambda x: km(x.design.cabling.stock), 3),
        F("cable_km.{}", "{} cable ordered", "km", "cabling", "stock lengths of the cable plan per tier", tier_km, 3),
        F("media.{}", "{} links", "", "cabling", "cables per medium of the cable plan", media),
        F("transceivers", "transceivers (optics)", "", "cabling", "BOM transceiver quantity",
          lambda x: sum(ln.quantity for ln in x.design.bom if ln.category == "transceiver")),
        F("power.rack_kw", "rack power", "kW", "power", "the budget's rack power", lambda x: x.design.budget.rack_power / 1e3, 2),
        F("it_power_mw", "critical IT load (GPU racks at their cap + network)", "MW", "power", "the budget's IT power",
          lambda x: x.design.budget.it_power / MW, 4),
        F("facility_power_mw", "budgeted facility draw (IT x PUE)", "MW", "power", "the budget's facility power",
          lambda x: x.design.budget.facility_power / MW, 4),
        F("power.utility_headroom_kw", "site utility headroom", "kW", "power", "utility limit - facility power",
          lambda x: (x.design.budget.utility - x.design.budget.facility_power) / 1e3, 1),
        F("network_power_kw", "network power (switches, optics, active cables)", "kW", "power", "bom.network_power",
          lambda x: network_power(x.design.bom)["total"] / 1e3, 2),
        F("power.{}.it_kw", "{} IT load", "kW", "power", "the budget's IT load per hall", halls(lambda h: h.it_power / 1e3), 1),
        F("power.{}.distribution_headroom_kw", "{} distribution headroom after a failure", "kW", "power",
          "the budget's distribution - IT load per hall", halls(lambda h: (h.distribution - h.it_power) / 1e3), 1),
        F("power.{}.{}.{}", "{} worst {}, {}", "%", "power", "placement usage per hall, level and failure state", usage, 2),
        F("placement.fiber_m", "placement objective: fiber (tray metres)", "m", "placement", "the placement's fiber", solver(lambda f, s: f["fiber_m"]["total"]), 1),
        F("placement.bound_m", "fiber lower bound", "m", "placement", "the solver's bound", solver(lambda f, s: s["fiber_bound_m"]), 1),
        F("placement.gap", "optimality gap", "%", "placement", "the solver's gap", solver(lambda f, s: 100 * s["gap"]), 3),
        F("placement.status", "solver status", "", "placement", "the solver's status", solver(lambda f, s: s["status"])),
        F("placement.stranded_kw", "stranded power (rows in use)", "kW", "placement", "placement row figures", stranded, 1),
        F("capex", "total capital cost", "USD", "cost", "cost.py Cost.total", lambda x: x.cost.total, 2),
        F("capex_servers", "capex: GPU servers", "USD", "cost", "cost.py: server count x chassis price", lambda x: x.cost.servers, 2),
        F("capex_switches", "capex: switches", "USD", "cost", "cost.py from bom.network_price", lambda x: x.cost.switches, 2),
        F("capex_transceivers", "capex: transceivers", "USD", "cost", "cost.py from bom.network_price", lambda x: x.cost.transceivers, 2),
        F("capex_cables", "capex: cables", "USD", "cost", "cost.py from bom.network_price", lambda x: x.cost.cables, 2),
        F("capex_network", "capex: network (switches + transceivers + cables)", "USD", "cost", "cost.py Cost.network", lambda x: x.cost.network, 2),
        F("capex_facility", "capex: facility (power, cooling, building per MW of critical IT load)", "USD", "cost", "cost.py", lambda x: x.cost.facility, 2),
        F("capex_per_gpu", "capex per GPU", "USD", "cost", "cost.py Cost.per_gpu", lambda x: x.cost.per_gpu, 2),
        F("network_share", "network share of capex (0-1)", "", "cost", "cost.py Cost.network_share", lambda x: x.cost.network_share, 4),
        F("unpriced_items", "catalog items without a price (counted as zero)", "", "cost", "cost.py Cost.unpriced", lambda x: len(x.cost.unpriced)),
        F("draw_mw", "grid draw priced for energy (the power twin's mean where it ran, else budgeted)", "MW", "cost",
          "power twin grid mean_W, else the budget's facility power", lambda x: draw_w(x) / MW, 4),
        F("energy_cost_per_year", "energy per year at draw_mw and the site's energy price", "USD", "cost",
          "cost.py Cost.energy_per_year(draw)", lambda x: x.cost.energy_per_year(draw_w(x)), 2),
    ]


def _job(x: Inputs) -> tuple[dict, dict] | None:
    """The scenario's job ``x.job`` in its first case, and its row for ``x.scheme`` (default: the first)."""
    cases = (x.sim or {}).get("cases") or []
    jobs = cases[0]["jobs"] if cases else []
    if len(jobs) < x.job or "schemes" not in jobs[x.job - 1]:
        return None
    j = jobs[x.job - 1]
    rows = [s for s in j["schemes"] if x.scheme is None or s["scheme"] == x.scheme] or j["schemes"]
    return j, rows[0]


def _twin_figures() -> list[Figure]:
    def F(name, label, unit, group, needs, how, value, digits=None):
        return Figure(name, label, unit, group, needs, how, value, digits)

    def schemes(fn, label=lambda r, e: (e["name"],)):
        def get(x):
            r = x.default
            return [((e["name"],), label(r, e), fn(r, e)) for e in r["schemes"]]
        return get

    def gib(r, e):
        return (r["sizes"][-1] / 2**30, e["name"])

    def step(fn):
        def get(x):
            j = x.default.get("job")
            return [((s["scheme"],), (j["workload"], s["scheme"]), fn(s)) for s in j["schemes"]] if j and "schemes" in j else []
        return get

    def job(fn):
        return lambda x: fn(*_job(x)) if _job(x) else None

    def ettr(x):
        camp = (x.sim or {}).get("campaign")
        return camp["ettr"]["p50"] if camp else 1.0

    def delivered(x):
        got = _job(x)
        return got[1]["tokens_per_s"] * DAY * ettr(x) if got else None

    def per(x, by):
        d = delivered(x)
        return d / by if d is not None and by else None

    def camp(fn):
        return lambda x: fn(x.sim["campaign"]) if (x.sim or {}).get("campaign") else None

    def pw(fn):
        return lambda x: fn(x.sim["power"]) if (x.sim or {}).get("power") else None

    def cl(fn):
        return lambda x: fn(x.sim["cluster"]) if (x.sim or {}).get("cluster") else None

    def largest(k, key):
        rows = k["by_size"]
        return rows[-1][key] if rows else None

    d, jb, c, p, q = "default", "jobs", "campaign", "power", "cluster"
    return [
        F("twin.busbw.{}", "AllReduce busbw at {:g} GiB, {}", "GB/s", "twin", d, "the default run's ring at its largest size",
          schemes(lambda r, e: e["busbw_GBps"][-1], gib), 2),
        F("twin.load.{}", "max/mean fabric link load, {}", "", "twin", d, "twin/twins/net/load.py over the links a shortest path may take",
          schemes(lambda r, e: e["max_over_mean"]), 3),
        F("twin.hier_busbw.{}", "hierarchical AllReduce busbw at {:g} GiB, {}", "GB/s", "twin", d, "the default run's hierarchical AllReduce",
          schemes(lambda r, e: e.get("hierarchical_busbw_GBps"), gib), 2),
        F("twin.step.{}", "{} step time, {}", "s", "twin", d, "the default run's job step", step(lambda s: s["step_s"]), 4),
        F("twin.exposed.{}", "{} exposed communication, {}", "%", "twin", d, "the default run's job step",
          step(lambda s: 100 * s["exposed_fraction"]), 2),
        F("job_gpus", "GPUs of the job", "", "job", jb, "the scenario's job", job(lambda j, s: j["gpus"])),
        F("step_time_s", "job step time", "s", "job", jb, "the job twin's step", job(lambda j, s: s["step_s"]), 4),
        F("compute_s", "compute per step", "s", "job", jb, "the job twin's step", job(lambda j, s: j["compute_s"]), 4),
        F("exposed_comm_s", "exposed communication per step", "s", "job", jb, "the job twin's step", job(lambda j, s: s["exposed_comm_s"]), 4),
        F("predicted_tflops_per_gpu", "predicted model TFLOPs per GPU (job twin)", "TFLOP/s", "job", jb, "the job twin's step",
          job(lambda j, s: s["predicted_tflops_per_gpu"]), 1),
        F("tokens_per_day", "job tokens per day at the twin's step time", "token/d", "job", jb, "tokens per second x 86,400",
          job(lambda j, s: s["tokens_per_s"] * DAY), 0),
        F("delivered_tokens_per_day", "tokens per day x ETTR P50 (where the campaign ran)", "token/d", "job", jb,
          "tokens_per_day x ettr_p50 (1 without a campaign)", delivered, 0),
        F("tokens_per_day_per_dollar", "delivered tokens per day / capex", "token/d/USD", "job", jb, "delivered_tokens_per_day / capex",
          lambda x: per(x, x.cost.total), 6),
        F("tokens_per_day_per_mw", "delivered tokens per day / draw_mw", "token/d/MW", "job", jb, "delivered_tokens_per_day / draw_mw",
          lambda x: per(x, FIGURES["draw_mw"].value(x)), 0),
        F("ettr_p10", "ETTR P10", "", "campaign", c, "the reliability twin", camp(lambda k: k["ettr"]["p10"]), 4),
        F("ettr_p50", "ETTR P50", "", "campaign", c, "the reliability twin", camp(lambda k: k["ettr"]["p50"]), 4),
        F("ettr_p90", "ETTR P90", "", "campaign", c, "the reliability twin", camp(lambda k: k["ettr"]["p90"]), 4),
        F("mtti_h", "mean time to interruption", "h", "campaign", c, "the reliability twin", camp(lambda k: k["mtti_h"]), 3),
        F("power_limits_pass", "1 if every utility limit passes, else 0", "", "power twin", p, "the power twin's verdicts",
          pw(lambda q: float(bool(q.get("limits_pass"))))),
        F("power_limits_failed", "utility limits failed", "", "power twin", p, "the power twin's verdicts",
          pw(lambda q: sum(not v["pass"] for v in q.get("limits") or []))),
        F("distribution_limits_failing", "busway/UPS limits exceeded", "", "power twin", p, "the power twin's distribution levels",
          pw(lambda q: q["distribution"]["limits_failing"] if q.get("distribution") else None)),
        F("grid_peak_mw", "peak grid draw", "MW", "power twin", p, "the power twin's grid", pw(lambda q: q["grid"]["peak_W"] / MW), 4),
        F("grid_mean_mw", "mean grid draw", "MW", "power twin", p, "the power twin's grid", pw(lambda q: q["grid"]["mean_W"] / MW), 4),
        F("grid_swing_mw", "grid range (peak - trough)", "MW", "power twin", p, "the power twin's grid", pw(lambda q: q["grid"]["range_W"] / MW), 4),
        F("site_goodput", "site goodput: productive GPU-time over GPUs x span", "", "cluster", q, "the cluster twin's buckets",
          cl(lambda k: k["goodput"]), 4),
        F("site_utilization", "GPU-time held by jobs over GPUs x span", "", "cluster", q, "the cluster twin's buckets",
          cl(lambda k: k["utilization"]), 4),
        F("site_preemptions", "preemptions over the span", "", "cluster", q, "the cluster twin's counts", cl(lambda k: k["counts"]["preemptions"])),
        F("site_job_interruptions", "jobs stopped by a failure over the span", "", "cluster", q, "the cluster twin's counts",
          cl(lambda k: k["counts"]["job_interruptions"])),
        F("site_slowed_by_neighbours", "GPU-time jobs' steps were stretched by jobs sharing their links, over GPUs x span", "",
          "cluster", q, "the cluster twin's buckets (with a shared fabric)", cl(lambda k: k["shares"].get("neighbours")), 4),
        F("site_slowed_by_power_cap", "GPU-time jobs' steps were stretched by a site power cap, over GPUs x span", "",
          "cluster", q, "the cluster twin's buckets (with a site power cap)", cl(lambda k: k["shares"].get("powercap")), 4),
        F("site_power_peak_mw", "peak facility power of the site on the cluster clock", "MW", "cluster", q, "the cluster twin's power",
          cl(lambda k: k["power"]["facility_kw"]["peak"] / 1e3 if k.get("power") else None), 4),
        F("largest_jobs_ettr", "ETTR of the largest size class", "", "cluster", q, "the cluster twin's size classes",
          cl(lambda k: largest(k, "ettr")), 4),
        F("largest_jobs_wait_p90_h", "queue wait P90 of the largest size class", "h", "cluster", q, "the cluster twin's size classes",
          cl(lambda k: None if largest(k, "wait_p90_s") is None else largest(k, "wait_p90_s") / 3600), 3),
    ]


REGISTRY: tuple[Figure, ...] = tuple(_design_figures() + _twin_figures())
FIGURES: dict[str, Figure] = {f.name: f for f in REGISTRY}
_PATTERNS = [(re.compile("^" + re.escape(f.name).replace(r"\{\}", "([^.]+)") + "$"), f) for f in REGISTRY if f.family]


def lookup(key: str) -> Figure | None:
    """The figure a review.json key belongs to (a plain name, or a member of a family)."""
    if key in FIGURES:
        return FIGURES[key]
    return next((f for pat, f in _PATTERNS if pat.match(key)), None)


def rows(x: Inputs) -> list[dict]:
    """Every figure the inputs give, in registry order: review.json's rows."""
    have = {"design", "intent"} | ({"default"} if x.default else set()) | ({"jobs", "campaign", "power", "cluster"} if x.sim else set())
    return [r for f in REGISTRY if f.needs in have for r in f.rows(x)]


def sweepable() -> list[Figure]:
    """The plain figures a sweep may name."""
    return [f for f in REGISTRY if not f.family and f.needs in SWEEPABLE_NEEDS]


def values(x: Inputs, needs: tuple[str, ...]) -> dict[str, Any]:
    """Every sweepable figure of those ``needs``, unrounded (None where it has no value)."""
    return {f.name: f.value(x) for f in sweepable() if f.needs in needs}
