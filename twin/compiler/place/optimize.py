"""The placement pass: GPU and network racks onto hall positions, as MILPs solved by HiGHS.

A position-level model of a whole 24K-GPU site (tens of thousands of binaries, quadratic fiber terms)
does not close its gap in minutes, so the problem is decomposed along its natural seams:

1. **Zones to halls** (:mod:`.assign`; an AI zone never spans halls): each hall's capacity is a small
   row-level MILP under every busway, block, cooling and utility limit in every failure state.
2. **Each hall on its own** (:mod:`.hall_milp`): which position holds which GPU rack and which
   network rack, minimising fiber (weights from the fabric's shape, :mod:`.figures`).

This module runs the two stages, assembles the :class:`~.model.Placement` with its figures (solver
status, bound and gap, the naive fill for comparison, the GPU power-cap trade-off) and asks
:mod:`.diagnose` why when something does not fit.

Objective, in order: GPUs placed (stage 1: all or a diagnosis), fiber metres (stage 2), and as a tie
breaker the peak row load (spreading load evens the busways and blocks; with 2N dual-corded racks A
and B carry equal halves by construction). HiGHS runs single-threaded with a fixed seed, identical zones
of a hall are relabelled in position order (:func:`.hall_milp.canonical_zones`), and ids are assigned by
position order, so the same spec gives the same bytes. The same determinism lets a hall that poses the
same MILP as a hall before it (one floor plan, the same racks and weights: the eight halls of a Meta
building) take that hall's answer instead of a second solve (:func:`.hall_milp.solve_halls`).
"""

from __future__ import annotations

import math
import time

from twin.compiler.place import diagnose, naive, powercap
from twin.compiler.place.assign import Assignment, assign, hall_capacity
from twin.compiler.place.figures import campus_links_per_atsw, figures, links_of
from twin.compiler.place.hall_milp import NetType, solve_halls
from twin.compiler.place.model import HallGrid, PlacedRack, Placement, Position
from twin.compiler.resolve.feasibility import Budget, hall_pue
from twin.compiler.resolve.liquid import liquid_share
from twin.compiler.resolve.spec import Spec
from twin.lang.diagnostics import InfeasibleError


def uplink_reach(spec) -> tuple[str, float]:
    """(medium, longest tray run) for GPU-to-spine links: the optic's reach less the rise and drop in
    both racks (tray height each way)."""
    opts = spec.site.placement
    media = spec.catalog.media
    # the media the spec allows on the rack-to-spine tier bound the run: the longest-reaching of them
    stated = spec.fabric.media.get("rtsw-ctsw") or spec.fabric.media.get("leaf-spine")
    stated_best = max(stated, key=lambda n: (media[n].reach, n)) if stated else None
    name = opts.uplink_medium or stated_best or ("dr4-400g" if "dr4-400g" in media else None)
    if name is None:
        optics = sorted((m.reach, n) for n, m in media.items() if m.kind == "optic")
        name = optics[-1][1] if optics else ""
    reach = media[name].reach if name in media else math.inf
    return name, reach


def place(spec: Spec, budget: Budget | None = None) -> Placement:
    """The placement pass (``budget`` is not needed: stage 1 sizes the halls itself)."""
    t_start = time.perf_counter()
    site = spec.site
    halls = site.halls
    grids = {h.name: HallGrid(h) for h in halls}
    opts = site.placement
    diagnose.check_floor(spec)
    if opts.method == "naive":
        base = naive.place(spec, budget)
        return Placement(base.racks, base.method, {**figures(spec, base.racks, grids), "naive": None})
    asg = assign(spec)
    if asg.placed_racks < spec.racks:
        raise InfeasibleError(diagnose.explain(spec, asg))
    medium, reach = uplink_reach(spec)
    types_by_hall, problems = hall_problems(spec, asg, reach)
    results, hall_rows = solve_halls(problems, [h.name for h in halls])
    for i, res in results.items():
        if res.objective == math.inf:
            raise InfeasibleError(diagnose.explain(spec, asg, hall_index=i, reach=(medium, reach)))
    racks = placed_racks(spec, asg, types_by_hall, results, halls)
    naive.system_racks(spec, racks)  # a rack pair's racks side by side (the hall MILPs keep them so)
    fig = figures(spec, racks, grids)
    # the bound: per-hall bounds plus the door-to-door legs of links between halls (fixed by stage 1)
    # hall objectives differ from the fiber total by the door-to-door legs (a constant of stage 1),
    # so the hall gaps add up to the gap of the total
    obj = sum(r.objective for r in results.values())
    bnd = sum(r.bound for r in results.values())
    lower = fig["fiber_m"]["total"] - (obj - bnd)
    gap = (fig["fiber_m"]["total"] - lower) / fig["fiber_m"]["total"] if fig["fiber_m"]["total"] > 0 else 0.0
    fig["solver"] = {
        "method": "highs (zones to halls by row-level MILP, then one MILP per hall)",
        "status": "optimal" if all(r.status == "optimal" for r in results.values()) else
        ",".join(sorted({r.status for r in results.values()})),
        "objective_m": obj,
        "fiber_bound_m": max(0.0, lower),
        "gap": max(0.0, gap),
        "seconds": time.perf_counter() - t_start,
        "halls": hall_rows,
        "uplink_medium": medium,
        "uplink_reach_m": reach,
    }
    fig["capacity"] = {
        "gpu_racks_placed": len([r for r in racks if r.kind == "gpu"]),
        "gpu_racks_requested": spec.racks,
        "gpu_rack_upper_bound": upper_bound(spec),
        "hall_capacity_racks": {halls[i].name: c for i, c in sorted(asg.capacity.items())},
    }
    try:
        base = naive.place(spec, budget)
        fig["naive"] = figures(spec, base.racks, grids)
    except InfeasibleError as e:  # the baseline may not even find positions; say so
        fig["naive"] = {"error": list(e.diagnosis)}
    fig["powercap"] = powercap.tradeoff(spec, asg)
    return Placement(tuple(racks), "optimized", fig)


def hall_problems(spec: Spec, asg: Assignment, reach: float) -> tuple[dict[int, list[NetType]], dict[int, tuple]]:
    """Stage 2's input: the network rack types of every hall and, for each hall with something to place,
    :func:`.hall_milp.solve_hall`'s arguments (its GPU groups, those types, the fiber weights between them
    and through the door, the reach left after the rise and drop in both racks)."""
    halls = spec.site.halls
    links = links_of(spec)
    P = spec.rack.power
    empty = spec.rack_type.weight
    # network rack types per hall, and the core switches in each hall (for links through the door)
    types_by_hall: dict[int, list[NetType]] = {i: [] for i in range(len(halls))}
    acc: dict[tuple, list] = {}
    for nr in asg.plan:
        acc.setdefault((nr.hall, nr.role, nr.zone, nr.switches, nr.power), []).append(1)
    for (hi, role, zone, n, power), lst in sorted(acc.items(), key=lambda kv: (kv[0][0], kv[0][1], -1 if kv[0][2] is None else kv[0][2], kv[0][3])):
        device = naive.network_device(spec, role)
        types_by_hall[hi].append(NetType(role, zone, len(lst), n, power, empty + n * device.weight))
    core_sw_in = {i: sum(t.count * t.switches for t in ts if t.role == "atsw") for i, ts in types_by_hall.items()}
    spine_sw_in = {i: sum(t.count * t.switches for t in ts if t.role == "ctsw") for i, ts in types_by_hall.items()}
    # links between halls stay in their building (a campus: a zone's CTSWs reach its own building's ATSWs)
    building = [spec.campus.hall_building[h.name] if spec.campus is not None else 0 for h in halls]
    total_core = {b: sum(n for j, n in core_sw_in.items() if building[j] == b) for b in set(building)}
    total_spine = {b: sum(n for j, n in spine_sw_in.items() if building[j] == b) for b in set(building)}
    campus_up = campus_links_per_atsw(spec)
    problems: dict[int, tuple] = {}
    for i, h in enumerate(halls):
        groups = asg.hall_groups[i]
        types = types_by_hall[i]
        if not groups and not types:
            continue
        w_gpu: dict = {}
        for g, (zone, _n) in enumerate(groups):
            for t, ty in enumerate(types):
                if ty.role == links.spine_role and (ty.zone is None or ty.zone == zone):
                    if ty.role == "fabric":
                        hall_sw = sum(x.count * x.switches for x in types if x.role == "fabric")
                        w_gpu[g, t] = links.gpu_to_spine["per_rack"] * ty.switches / max(1, hall_sw)
                    else:
                        w_gpu[g, t] = links.gpu_to_spine["per_rack"] * ty.switches
        w_net: dict = {}
        ext: dict = {}
        if links.spine_to_core:
            for t, ty in enumerate(types):
                if ty.role == "ctsw":
                    ext[t] = ty.switches * links.spine_to_core * (total_core[building[i]] - core_sw_in[i])
                    for s, ty2 in enumerate(types):
                        if ty2.role == "atsw":
                            w_net[min(t, s), max(t, s)] = ty.switches * ty2.switches * links.spine_to_core
                elif ty.role == "atsw":
                    ext[t] = ty.switches * links.spine_to_core * (total_spine[building[i]] - spine_sw_in[i])
                    if campus_up:  # its campus links leave the building: out through the hall door
                        ext[t] += ty.switches * campus_up
        problems[i] = (h, hall_pue(spec, h.name), groups, types, P, w_gpu, w_net, ext, reach - 2 * h.tray_height,
                       spec.site.placement.time_limit, liquid_share(spec.site), spec.chassis.span)
    return types_by_hall, problems


def upper_bound(spec) -> int:
    """GPU racks the site could hold at most: LP relaxation of every hall's capacity (network racks
    of a full hall share), capped by the site utility."""
    pue = spec.site.power.pue
    total = 0.0
    for h in spec.site.halls:
        cap, _ = hall_capacity(h, hall_pue(spec, h.name), spec.rack.power, (), relax=True, share=liquid_share(spec.site))
        total += max(0.0, cap)
    site = spec.site.power.utility_capacity / pue / spec.rack.power
    return int(math.floor(min(total, site) + 1e-9))


def placed_racks(spec, asg: Assignment, types_by_hall, results, halls) -> list[PlacedRack]:
    """PlacedRacks with the ids of the naive fill: index by position order within zone / role."""
    zoned = spec.family.zoned
    out: list[PlacedRack] = []
    gpu_by_zone: dict[int, list[Position]] = {}
    for i, res in sorted(results.items()):
        for zone, poss in res.gpu.items():
            gpu_by_zone.setdefault(zone, []).extend(Position(halls[i].name, r, s) for r, s in poss)
    if zoned:
        for zone, poss in sorted(gpu_by_zone.items()):
            for k, pos in enumerate(sorted(poss, key=lambda p: (_hall_order(halls, p.hall), p.row, p.slot))):
                out.append(PlacedRack(f"{pos.hall}-z{zone + 1}-r{k + 1:03d}", "gpu", pos, zone, k, spec.rack.power))
    else:
        g = 0
        for zone in sorted(gpu_by_zone):
            for k, pos in enumerate(sorted(gpu_by_zone[zone], key=lambda p: (_hall_order(halls, p.hall), p.row, p.slot))):
                out.append(PlacedRack(f"{pos.hall}-r{g + 1:04d}", "gpu", pos, zone, k, spec.rack.power))
                g += 1
    counters: dict[tuple, int] = {}
    net: list[tuple] = []
    for i, res in sorted(results.items()):
        for t, poss in res.net.items():
            ty = types_by_hall[i][t]
            for r, s in poss:
                net.append((ty.role, -1 if ty.zone is None else ty.zone, i, r, s, ty))
    for role, _z, i, r, s, ty in sorted(net, key=lambda x: x[:5]):
        idx = counters.get((role, ty.zone), 0)
        counters[(role, ty.zone)] = idx + 1
        hall = halls[i].name
        rid = f"{hall}-z{ty.zone + 1}-{role}-n{idx + 1:02d}" if ty.zone is not None else f"{hall}-{role}-n{idx + 1:02d}"
        out.append(PlacedRack(rid, "network", Position(hall, r, s), ty.zone, idx, ty.power, role, ty.switches))
    out.sort(key=lambda x: (x.position.hall, x.position.row, x.position.slot))
    return out


def _hall_order(halls, name: str) -> int:
    return [h.name for h in halls].index(name)
