"""Figures of a placement (optimised or naive alike): fiber metres, row loads, stranded power, limits.

The fiber weights come from the fabric's shape (:mod:`twin.compiler.resolve.shape`): how many links join a GPU
rack to each spine switch of its zone, and each spine to each core switch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.compiler.place import capacity
from twin.compiler.place.model import site_distances
from twin.compiler.place.naive import network_device
from twin.compiler.resolve.feasibility import hall_pue
from twin.compiler.resolve.liquid import liquid_share
from twin.compiler.resolve.spec import Spec
from twin.lang.site.families import AI_ZONE_LAYOUT, CLOS_LAYOUT, UNIT_LAYOUT


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
    if spec.campus is not None:  # a CTSW's uplinks spread over its own building's ATSWs (of its plane) only
        core = sum(shape.ctsw_up) / (spec.fabric.ctsw.count * spec.fabric.atsw.count * shape.planes)
    return Links({"per_rack": shape.rack_uplinks / spec.fabric.ctsw.count}, core, "ctsw")


def _clos_links(spec: Spec) -> Links:
    """Every NIC of a GPU rack goes to the shared fabric racks."""
    return Links({"per_rack": float(spec.rack.nics)}, 0.0, "fabric")


# The placement's link weights of each layout (twin/lang/site/families.py)
LINKS = {AI_ZONE_LAYOUT: _ai_zone_links, CLOS_LAYOUT: _clos_links, UNIT_LAYOUT: _clos_links}  # units: as a Clos



def figures(spec: Spec, racks, grids) -> dict:
    """Fiber, row loads, stranded power and utilisation of every limit in every state.

    Fiber sums run over every (GPU rack, spine rack) and (spine, core) pair in rack order: the
    distances in one array (:func:`~twin.compiler.place.model.site_distances`), the sum as a running
    sum (``cumsum``, left to right like the loop it replaces, so the same float to the last bit)."""
    links = links_of(spec)
    gpu = [r for r in racks if r.kind == "gpu"]
    nets = [r for r in racks if r.kind == "network"]
    switches = {r.id: r.switches or max(1, round(r.power / switch_power(spec, r.role))) for r in nets}
    spines = [r for r in nets if r.role == links.spine_role]
    spine_sw = np.array([switches[s.id] for s in spines], float)
    per_rack = links.gpu_to_spine["per_rack"]
    # the spines each GPU rack links to: its zone's (ctsw), or its hall's shared fabric racks
    side = (lambda r: r.zone) if links.spine_role == "ctsw" else (lambda r: r.position.hall)
    by_side: dict = {}
    for j, s in enumerate(spines):
        by_side.setdefault(side(s), []).append(j)
    ia: list[int] = []
    ib: list[int] = []
    for i, g in enumerate(gpu):
        js = by_side.get(side(g), ())
        ia.extend([i] * len(js))
        ib.extend(js)
    ia_, ib_ = np.array(ia, np.int64), np.array(ib, np.int64)
    dist = site_distances(grids, [g.position for g in gpu], ia_, [s.position for s in spines], ib_)
    if links.spine_role == "ctsw":
        terms = per_rack * spine_sw[ib_] * dist
    else:  # a GPU rack's links spread over its hall's fabric switches
        tot = {k: sum(switches[spines[j].id] for j in js) for k, js in by_side.items()}
        hall_sw = np.array([max(1, tot[side(g)]) if side(g) in tot else 1 for g in gpu], float)
        terms = per_rack * spine_sw[ib_] / hall_sw[ia_] * dist
    rack_spine = _running_sum(terms)
    longest = max(0.0, float(dist.max())) if len(dist) else 0.0
    spine_core = 0.0
    if links.spine_to_core:
        cores = [r for r in nets if r.role == "atsw"]
        core_sw = np.array([switches[c.id] for c in cores], float)
        sa, ca = np.repeat(np.arange(len(spines)), len(cores)), np.tile(np.arange(len(cores)), len(spines))
        if spec.campus is not None:  # links stay in their building
            hb = spec.campus.hall_building
            number = {b: i for i, b in enumerate(sorted(set(hb.values())))}
            keep = (np.array([number[hb[s.position.hall]] for s in spines], np.int64)[sa]
                    == np.array([number[hb[c.position.hall]] for c in cores], np.int64)[ca])
            sa, ca = sa[keep], ca[keep]
        d = site_distances(grids, [s.position for s in spines], sa, [c.position for c in cores], ca)
        spine_core = _running_sum(links.spine_to_core * spine_sw[sa] * core_sw[ca] * d)
    rows = []
    usage_rows = []
    in_hall: dict = {}
    for r in racks:
        in_hall.setdefault(r.position.hall, []).append(r)
    for h in spec.site.halls:
        load = {r: 0.0 for r in range(1, h.rows + 1)}
        gpu_load = dict(load)
        for r in in_hall.get(h.name, ()):
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


def _running_sum(terms: np.ndarray) -> float:
    """``0.0 + terms[0] + terms[1] + ...`` in that order (``cumsum`` adds left to right; ``sum`` pairs)."""
    return float(np.cumsum(terms)[-1]) if len(terms) else 0.0


def switch_power(spec, role: str) -> float:
    """Power of one device of a network rack of ``role`` (a switch, or an attachment for ``ep-...``)."""
    return network_device(spec, role).power


def campus_links_per_atsw(spec) -> float:
    """Campus links of one ATSW (they leave its building), the most any building's ATSW has; 0 off a campus."""
    info = spec.shape.campus if spec.shape is not None else None
    return float(max(info.atsw_up)) if info is not None else 0.0
