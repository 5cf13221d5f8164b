"""The verdicts: every check a design and its twins make, in one list, worst first.

A design review starts from what fails. Each check here reads a figure that a pass or a twin already
computed and holds it against the limit the spec, its catalog or a scenario states: the budget's space,
power and cooling per hall (:mod:`twin.compiler.resolve.feasibility`), the placement's limits per level
and failure state (``placement.figures["usage"]``), oversubscription asked against built
(``spec.shape``), PFC headroom per switch and the lossless reach of every route between buildings
(:mod:`twin.analysis.headroom`), InfiniBand LIDs and address pools, the site's facility power with the
bill of materials' optics and powered cables (which the budget's sums leave out), the spec's own
warnings, and, from a scenario run with the build or by ``twin simulate``, the power twin's utility
limits and mitigations, its busways and racks over time, thermal throttling, the campaign's ETTR and each
job's memory fit (:mod:`twin.analysis.verdicts_twins`). Nothing is recomputed here.

Every verdict is ``pass``, ``warn`` or ``fail`` with a severity (``high``: power, cooling, space, the
utility and lossless transport; ``medium``: capacity the fabric was asked for, throttling, a job that
does not fit; ``low``: address pools and the spec's warnings), the report section that shows it and the
spec or scenario line that states the limit. :func:`ranked` orders them: fails first, then warnings,
each by severity. A utilisation at or above :data:`WARN_SHARE` of its limit is a warning.

The report opens with this list (``report.html``'s first screen), it is ``risks`` in the ``--json`` of
``twin build``, ``simulate`` and ``diff``, and a design with a ``fail`` exits
``EXIT_RISKS`` unless ``--accept-risks`` is given.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from twin.compiler.resolve.fabric_checks import IB_UNICAST_LIDS
from twin.compiler.resolve.validate import locator
from twin.physics import HEADROOM_SHARE

WARN_SHARE = 0.9  # a limit used to this share or more is a warning: little room for growth or error
STATUS_ORDER = {"fail": 0, "warn": 1, "pass": 2}
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}

RACK, BUDGET, PLACEMENT, FABRIC, CAMPUS, ROUTING, SUBNET, WARNINGS, BOM = (
    "Rack", "Power and cooling budget", "Placement", "Fabric", "Campus", "Routing and switch configs",
    "Subnet manager (OpenSM)", "Warnings", "Bill of materials")


@dataclass(frozen=True)
class Verdict:
    """One check: what, its outcome, the measured figure against its limit, and where to look."""

    key: str  # stable: "lossless.route.b2-b3", "power.b1-lab.busway.failure"
    check: str  # what is checked, in words
    status: str  # pass | warn | fail
    severity: str  # high | medium | low
    value: str  # the measured figure, with its unit
    limit: str  # what it is held against, with its unit
    section: str  # the report section (heading) that shows it
    where: str = ""  # NAME:LINE:COL of the spec or scenario line that states the limit (file name only; "" when none)
    twin: bool = False  # from a twin run (a scenario), not the design alone
    group: str = ""  # the check without its instance, shared by every hall or route it is made of ("" : a check of its own)
    instance: str = ""  # what this one is of within its group ("b1-dh1: row 9 busway B", "b2-b3")
    share: float | None = None  # the figure as a share of its limit, where it is one (the worst of a group is shown)

    @property
    def family(self) -> str:
        """The words a grouped report shows for this check's group (the check itself when it has none)."""
        return self.group or self.check

    def to_json(self) -> dict:
        return {"key": self.key, "check": self.check, "status": self.status, "severity": self.severity, "value": self.value,
                "limit": self.limit, "section": self.section, "link": f"report.html#{section_id(self.section)}",
                "where": self.where, "source": "twin" if self.twin else "design",
                **({"group": self.group, "instance": self.instance} if self.group else {})}


def section_id(title: str) -> str:
    """The id a report heading gets on the page (:func:`twin.emit.html.slug` uses it).

    >>> section_id("Scenario `lab-twins` (twin)")
    'scenario-lab-twins-twin'
    """
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"<[^>]+>", "", title).lower()).strip("-") or "section"


def grade(used: float, limit: float) -> str:
    """``fail`` over the limit, ``warn`` from :data:`WARN_SHARE` of it, else ``pass``.

    >>> grade(95, 100), grade(100, 100), grade(100.5, 100), grade(10, 100)
    ('warn', 'warn', 'fail', 'pass')
    """
    if limit <= 0 or not math.isfinite(limit):
        return "pass" if used <= 0 else "fail"
    share = used / limit
    return "fail" if share > 1 + 1e-9 else "warn" if share >= WARN_SHARE else "pass"


def ranked(verdicts: list[Verdict]) -> list[Verdict]:
    """Fails first, then warnings, then passes; by severity within each; the checks' order after that."""
    order = {id(v): i for i, v in enumerate(verdicts)}
    return sorted(verdicts, key=lambda v: (STATUS_ORDER[v.status], SEVERITY_ORDER[v.severity], order[id(v)]))


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    return {s: sum(v.status == s for v in verdicts) for s in STATUS_ORDER}


def kw(w: float) -> str:
    return f"{w / 1e3:,.1f} kW"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def nowhere(*_paths) -> str:
    return ""


def design_verdicts(d, locate: bool = True) -> list[Verdict]:
    """The checks of the design alone (no twin): what ``twin validate`` counts and every build reports.
    ``locate``: read the spec file for the line of each limit (False: no file is read, no lines)."""
    s, b = d.spec, d.budget
    at = (locator(s.source_path, s.source_sha256) if locate else None) or nowhere
    halls = {h.name: i for i, h in enumerate(s.site.halls)}
    out = [Verdict("power.rack", f"rack power against the power shelf ({s.rack_type_name})", grade(b.rack_power, s.rack_type.power_shelf),
                   "high", kw(b.rack_power), kw(s.rack_type.power_shelf), RACK, at(("rack_types", s.rack_type_name, "power_shelf"), ("rack_types", s.rack_type_name)))]
    optics = f" (optics and powered cables {kw(b.optics_power)} included)" if b.network_from_bom else ""
    out.append(Verdict("power.site.utility", "site facility power against the utility", grade(b.facility_power, b.utility), "high",
                       kw(b.facility_power) + optics, kw(b.utility), BUDGET, at(("power", "utility_capacity"), ("power",))))
    for hb in b.halls:
        full = "fail" if hb.gpu_racks > hb.positions else "pass"  # a full hall is the plan, not a risk
        out.append(Verdict(f"space.{hb.name}", f"GPU racks against GPU positions in {hb.name}", full, "high",
                           f"{hb.gpu_racks:,} racks", f"{hb.positions:,} positions", BUDGET, at(("halls", halls.get(hb.name, 0))),
                           group="GPU racks against GPU positions, per hall", instance=hb.name,
                           share=hb.gpu_racks / hb.positions if hb.positions else math.inf))
    out += _placement(d, at, halls)
    out += _oversubscription(s, at)
    out += _lossless(d, at)
    out += _addressing(d, at)
    for i, w in enumerate(d.warnings):
        out.append(Verdict(f"spec.warning.{i + 1}", f"spec warning at {w.dotted or 'the file'}", "warn", "low", w.message,
                           w.expected or "-", WARNINGS, f"{Path(w.file).name}:{w.line}:{w.col}"))
    return out


_KIND = {"busway": ("busway", "power"), "block": ("UPS block", "power"), "cooling-row": ("row cooling", "cooling"),
         "cooling-zone": ("cooling zone", "cooling"), "utility": ("hall utility", "power"), "cdu": ("CDUs", "cooling"),
         "facility-water": ("facility water", "cooling")}


def _placement(d, at, halls) -> list[Verdict]:
    """The worst limit of each kind per hall, in normal operation and after the worst failure."""
    p = d.placement
    usage = p.figures.get("usage", []) if p is not None else []
    worst: dict[tuple, dict] = {}
    for u in usage:
        k = (u["hall"], u["kind"], "normal" if u["state"] == "normal" else "failure")
        if k not in worst or (u["utilisation"], u["name"]) > (worst[k]["utilisation"], worst[k]["name"]):
            worst[k] = u
    out = []
    for (hall, kind, state), u in worst.items():
        what, field = _KIND.get(kind, (kind, "power"))
        when = "in normal operation" if state == "normal" else f"after the worst failure ({u['state']})"
        out.append(Verdict(f"{field}.{hall}.{kind}.{state}", f"{what} in {hall} {when}: {u['name']}", grade(u["load_w"], u["capacity_w"]),
                           "high", f"{kw(u['load_w'])} ({_pct(u['utilisation'])})", kw(u["capacity_w"]), PLACEMENT,
                           at(("halls", halls.get(hall, 0), field), ("halls", halls.get(hall, 0))),
                           share=u["load_w"] / u["capacity_w"] if u["capacity_w"] > 0 else math.inf,
                           group=f"{what} per hall " + ("in normal operation" if state == "normal" else "after the worst failure"),
                           instance=f"{hall}: {u['name']}" + ("" if state == "normal" else f" ({u['state']})")))
    return out


def _oversubscription(s, at) -> list[Verdict]:
    """Asked against built, per tier boundary the spec asks for (built above asked is a fail)."""
    out = []
    for bd in s.shape.boundaries:
        if bd.requested is None or bd.built is None:
            continue
        lower, _, upper = bd.name.partition("-")
        st = "pass" if bd.built <= bd.requested * (1 + 1e-9) else "fail"
        paths = [("fabric", lower, "oversubscription"), ("fabric", upper, "oversubscription")]
        if s.campus is not None and lower == upper:
            paths.insert(0, ("campus", "fabric", "oversubscription"))
        out.append(Verdict(f"oversubscription.{bd.name}", f"oversubscription below {bd.name}: built against asked", st, "medium",
                           f"{bd.built:g}:1" + (f" ({bd.reason})" if bd.reason else ""), f"{bd.requested:g}:1", FABRIC,
                           at(*paths, ("fabric", "oversubscription"), ("fabric",))))
    return out


def _lossless(d, at) -> list[Verdict]:
    """PFC headroom per switch tier and the lossless reach of each route between buildings (RoCE)."""
    s = d.spec
    if s.fabric.technology.value != "roce" or d.fabric is None or d.cabling is None:
        return []
    from twin.analysis.headroom import headroom

    h = headroom(d)
    g = d.fabric.graph
    names, need, pool = h["names"], h["need"], h["pool"]
    section = CAMPUS if s.campus is not None else ROUTING
    out = []
    by_role: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        if np.isfinite(pool[i]):
            by_role.setdefault(g.nodes[n]["role"], []).append(i)
    for role, idx in sorted(by_role.items(), key=lambda kv: (g.nodes[names[kv[1][0]]]["level"], kv[0])):
        over = [names[i] for i in idx if need[i] > pool[i]]
        share = max(need[i] / pool[i] for i in idx)
        st = "fail" if over else "warn" if share >= WARN_SHARE else "pass"
        value = f"{len(over)} of {len(idx)} switches over their pool" + (f" ({', '.join(over[:4])}{', ...' if len(over) > 4 else ''})" if over else "")
        out.append(Verdict(f"lossless.pool.{role}", f"PFC headroom of every {role} port within its switch's shared pool", st, "high",
                           value + f"; fullest {_pct(share)}", f"the pool ({HEADROOM_SHARE:.0%} of the buffer)", section,
                           at(("fabric", role, "model"), ("rack_types", s.rack_type_name, role), ("fabric", role), ("fabric", "qos"))))
    routes = {tuple(sorted(r.between)): i for i, r in enumerate(s.site.campus.routes)} if s.site.campus is not None else {}
    for p in h["pairs"]:
        i = routes.get(tuple(sorted((p.a, p.b))))
        where = at(("campus", "routes", i)) if i is not None else at(("buildings",))
        reach = f"lossless reach {p.reach_m / 1e3:,.2f} km" if math.isfinite(p.reach_m) and p.room_bytes > 0 else f"no room left on {p.switch}"
        out.append(Verdict(f"lossless.route.{p.a}-{p.b}", f"lossless (PFC) on the {p.links} links between {p.a} and {p.b}",
                           "pass" if p.fits else "fail", "high", f"{p.length_m:,.0f} m, xoff {p.xoff_bytes / 1e6:.2f} MB per port",
                           reach, CAMPUS, where, group="lossless (PFC) on the links between two buildings, per route",
                           instance=f"{p.a}-{p.b}", share=p.xoff_bytes / p.room_bytes if p.room_bytes > 0 else math.inf))
    return out


def _addressing(d, at) -> list[Verdict]:
    s = d.spec
    out = []
    if d.addressing is not None:
        for name, (used, size) in d.addressing.pool_use().items():
            out.append(Verdict(f"addresses.{name}", f"addresses handed out of routing.{name}", grade(used, size), "low",
                               f"{used:,}", f"{size:,}", ROUTING, at(("fabric", "routing", name), ("fabric", "routing"), ("fabric",))))
    if s.fabric.technology.value == "infiniband":
        lmc = s.fabric.infiniband.lmc if s.fabric.infiniband is not None else 0
        need = s.shape.lids(lmc)
        out.append(Verdict("lids", f"InfiniBand unicast LIDs at LMC {lmc}", grade(need, IB_UNICAST_LIDS), "high", f"{need:,}",
                           f"{IB_UNICAST_LIDS:,}", SUBNET, at(("fabric", "infiniband", "lmc"), ("fabric", "infiniband"), ("fabric",))))
    return out
