"""Figures of a placement (optimised or naive alike): fiber metres, row loads, stranded power, limits.

The fiber weights come from the fabric's shape (:mod:`twin.compiler.resolve.shape`): how many links join a GPU
rack to each spine switch of its zone, and each spine to each core switch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.compiler.place import capacity
from twin.compiler.place.model import Position, site_distance
from twin.compiler.place.naive import network_device
from twin.compiler.resolve.feasibility import hall_pue
from twin.compiler.resolve.liquid import liquid_share
from twin.compiler.resolve.spec import Spec
from twin.lang.site.families import AI_ZONE_LAYOUT, CLOS_LAYOUT


@dataclass(frozen=True)
class Links:
    """Links (fibers) between racks, per rack pair: the weights of the fiber objective."""

    gpu_to_spine: dict  # (zone, role, spine zone) -> links per GPU rack per spine rack switch
    spine_to_core: float  # links per (CTSW switch, ATSW switch) pair
    spine_role: str  # "ctsw" or "fabric"


def links_of(spec: Spec) -> Links:
    """Link weights from the fabric's shape, by its layout (``LINKS``)."""
    return LINKS[spec.family.layout](spec)


def _ai_zone_links(spec: Spec) -> Links:
    """A GPU rack's uplinks spread over its zone's CTSWs, and the CTSW-ATSW links over every (CTSW,
    ATSW) pair of the site."""
    shape = spec.shape
    ct, at = shape.tier("ctsw"), shape.tier("atsw")
    core = shape.links("ctsw-atsw") / (ct.count * at.count) if at is not None else 0.0
    if spec.campus is not None:  # a CTSW's uplinks spread over its own building's ATSWs only
        core = sum(shape.ctsw_up) / (spec.fabric.ctsw.count * spec.fabric.atsw.count)
    return Links({"per_rack": shape.rack_uplinks / spec.fabric.ctsw.count}, core, "ctsw")


def _clos_links(spec: Spec) -> Links:
    """Every NIC of a GPU rack goes to the shared fabric racks."""
    return Links({"per_rack": float(spec.rack.nics)}, 0.0, "fabric")


# The placement's link weights of each layout (twin/lang/site/families.py)
LINKS = {AI_ZONE_LAYOUT: _ai_zone_links, CLOS_LAYOUT: _clos_links}



def figures(spec: Spec, racks, grids) -> dict:
    """Fiber, row loads, stranded power and utilisation of every limit in every state."""
    links = links_of(spec)
    gpu = [r for r in racks if r.kind == "gpu"]
    nets = [r for r in racks if r.kind == "network"]
    switches = {r.id: r.switches or max(1, round(r.power / switch_power(spec, r.role))) for r in nets}
    spines = [r for r in nets if r.role == links.spine_role]
    rack_spine = 0.0
    longest = 0.0
    cache: dict = {}

    def dd(a: Position, b: Position) -> float:
        k = (a, b)
        if k not in cache:
            cache[k] = site_distance(grids, a, b)
        return cache[k]

    if links.spine_role == "ctsw":
        by_zone: dict = {}
        for s in spines:
            by_zone.setdefault(s.zone, []).append(s)
        for g in gpu:
            for s in by_zone.get(g.zone, []):
                dist = dd(g.position, s.position)
                rack_spine += links.gpu_to_spine["per_rack"] * switches[s.id] * dist
                longest = max(longest, dist)
    else:
        by_hall: dict = {}
        for s in spines:
            by_hall.setdefault(s.position.hall, []).append(s)
        for g in gpu:
            hs = by_hall.get(g.position.hall, [])
            tot = sum(switches[s.id] for s in hs)
            for s in hs:
                dist = dd(g.position, s.position)
                rack_spine += links.gpu_to_spine["per_rack"] * switches[s.id] / max(1, tot) * dist
                longest = max(longest, dist)
    spine_core = 0.0
    if links.spine_to_core:
        cores = [r for r in nets if r.role == "atsw"]
        same = (lambda a, b: True) if spec.campus is None else (
            lambda a, b: spec.campus.hall_building[a.position.hall] == spec.campus.hall_building[b.position.hall])
        for s in spines:
            for c in cores:
                if same(s, c):
                    spine_core += links.spine_to_core * switches[s.id] * switches[c.id] * dd(s.position, c.position)
    rows = []
    usage_rows = []
    for h in spec.site.halls:
        load = {r: 0.0 for r in range(1, h.rows + 1)}
        gpu_load = dict(load)
        for r in racks:
            if r.position.hall == h.name:
                load[r.position.row] += r.power
                if r.kind == "gpu":
                    gpu_load[r.position.row] += r.power
        share = liquid_share(spec.site)
        lim = capacity.row_power_limit(h, hall_pue(spec, h.name), share)
        for r in range(1, h.rows + 1):
            rows.append({"hall": h.name, "row": r, "load_w": load[r], "limit_w": lim[r],
                         "stranded_w": max(0.0, lim[r] - load[r]) if math.isfinite(lim[r]) else 0.0})
        for u in capacity.usage(h, hall_pue(spec, h.name), load, gpu_load, share):
            usage_rows.append({"hall": h.name, "kind": u.limit.kind, "name": u.limit.name, "state": u.limit.state,
                               "load_w": u.load, "capacity_w": u.limit.capacity, "utilisation": u.utilisation})
    over = [u for u in usage_rows if u["load_w"] > u["capacity_w"] * (1 + 1e-6) + 1e-6]
    return {
        "fiber_m": {"rack_spine": rack_spine, "spine_core": spine_core, "total": rack_spine + spine_core,
                    "longest_rack_spine_m": longest},
        "rows": rows,
        "usage": usage_rows,
        "violations": over,
        "gpus": len(gpu) * spec.rack.gpus,
    }


def switch_power(spec, role: str) -> float:
    """Power of one device of a network rack of ``role`` (a switch, or an attachment for ``ep-...``)."""
    return network_device(spec, role).power


def campus_links_per_atsw(spec) -> float:
    """Campus links of one ATSW (they leave its building), the most any building's ATSW has; 0 off a campus."""
    info = spec.shape.campus if spec.shape is not None else None
    return float(max(info.atsw_up)) if info is not None else 0.0
