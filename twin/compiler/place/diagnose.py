"""Why a design does not fit, in lines a facility engineer can act on.

Each limit family (busways in normal operation, busways after losing a feed, UPS blocks, row cooling,
cooling zones, hall utility, positions, floor load, optic reach) is tested on its own: a family is
binding when the hall's capacity under that family alone is below what the hall must hold. Every line
names the rows, the need and the capacity with numbers, and the diagnosis ends with the largest
configuration that fits (fewer zones, or all of them at a lower GPU power cap).
"""

from __future__ import annotations

import math

from twin.compiler.place import capacity, powercap
from twin.compiler.place.assign import Assignment, count_powers, hall_capacity, hall_networks, zone_network_power
from twin.compiler.place.capacity import family
from twin.compiler.place.model import HallGrid
from twin.compiler.resolve.liquid import liquid_share
from twin.lang.diagnostics import InfeasibleError
from twin.lang.site.models import Hall
from twin.lang.units import kw

FAMILIES = [
    ("busway:normal", "power in normal operation"),
    ("busway:failure", "power after losing a feed"),
    ("block:normal", "UPS blocks in normal operation"),
    ("block:failure", "UPS blocks after losing a block"),
    ("cooling-row:normal", "cooling"),
    ("cooling-zone:normal", "cooling zones"),
    ("utility:normal", "utility"),
    ("cdu:normal", "liquid cooling (CDUs)"),
    ("cdu:failure", "liquid cooling after losing a CDU or pump"),
    ("facility-water:normal", "facility water"),
]


def ranges(rows) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    rows = sorted(set(rows))
    out, i = [], 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and rows[j + 1] == rows[j] + 1:
            j += 1
        out.append(f"{rows[i]}-{rows[j]}" if j > i else f"{rows[i]}")
        i = j + 1
    return ", ".join(out)


def check_floor(spec) -> None:
    """Floor load is a per-rack property (every slot has the same footprint): check it up front."""
    problems = []
    for h in spec.site.halls:
        if h.floor_load_limit is None:
            continue
        area = h.slot_width * h.rack_depth
        load = capacity.floor_load(spec.rack.weight, h)
        if load > h.floor_load_limit:
            problems.append(
                f"hall {h.name} floor load: a GPU rack of {spec.rack.weight:.0f} kg on {area:.2f} m^2"
                f" ({h.slot_width:g} m x {h.rack_depth:g} m) puts {load:.0f} kg/m^2 on the floor, limit"
                f" {h.floor_load_limit:.0f} kg/m^2; at most {math.floor(h.floor_load_limit * area):.0f} kg per rack"
                f" (fewer servers per rack, or spreader plates)"
            )
    if problems:
        raise InfeasibleError(problems)


def _need(spec, racks: int, nets) -> float:
    return racks * spec.rack.power + sum(p * c for p, c in nets)


def hall_lines(spec, h: Hall, racks_needed: int, nets) -> list[str]:
    """Binding limits of one hall asked to hold ``racks_needed`` GPU racks next to ``nets``."""
    pue = spec.site.power.pue
    P = spec.rack.power
    lines: list[str] = []
    slots = spec.slots[h.name]
    free_r: dict[int, int] = {}
    for r, _ in slots.free:
        free_r[r] = free_r.get(r, 0) + 1
    n_net = sum(c for _, c in nets)
    spare_net = max(0, n_net - len(slots.network))
    if racks_needed + spare_net > len(slots.free):
        lines.append(
            f"hall {h.name} space: need {racks_needed + spare_net} free positions ({racks_needed} GPU racks"
            + (f" + {spare_net} network racks beyond the {len(slots.network)} reserved" if spare_net else "")
            + f"), have {len(slots.free)}"
        )
    need_w = _need(spec, racks_needed, nets)
    share = liquid_share(spec.site)
    limits = capacity.hall_limits(h, pue, share)
    fams = sorted({family(L) for L in limits})
    normal_cap = None
    for fam, label in FAMILIES:
        if fam not in fams:
            continue
        only = tuple(fam2 for fam2 in fams if fam2 == fam)
        cap, _ = hall_capacity(h, pue, P, nets, kinds=only, share=share)
        if fam == "busway:normal":
            normal_cap = cap
        if cap >= racks_needed:
            continue
        fl = [L for L in limits if family(L) == fam]
        if fam.startswith(("cdu", "facility-water")):
            lines += _liquid_lines(h, fl, free_r, P * share, racks_needed, cap)
            continue
        if fam.startswith("utility"):
            lines.append(
                f"hall {h.name} utility: need {kw(need_w * pue)} (IT {kw(need_w)} x PUE {pue:g}), have"
                f" {kw(h.power.utility)}; fits {max(0, int(cap))} of {racks_needed} GPU racks"
            )
            continue
        single = [L for L in fl if L.kind in ("busway", "cooling-row")]
        per = lambda L: L.capacity / L.per_gpu_watt if L.per_gpu_watt > 0 else math.inf  # noqa: E731  W of GPU racks
        if single:
            # rows whose limit is below a full row of GPU racks
            tight = sorted({L.rows[0] for L in single if per(L) < free_r.get(L.rows[0], 0) * P})
            per_row = min(per(L) for L in single)
            L0 = min(single, key=lambda L: per(L))
            full = max(free_r.values()) if free_r else 0
            worst_state = L0.state
            what = {
                "busway:normal": "each busway carries half its row",
                "busway:failure": f"{worst_state}: one busway carries the whole row",
                "cooling-row:normal": "heat rejection per row",
            }.get(fam, label)
            rows_txt = (f"row {ranges(tight)}" if len(tight) == 1 else f"rows {ranges(tight)}") if tight else "rows"
            lines.append(
                f"hall {h.name} {rows_txt} {label} ({what}; {L0.rating} = {kw(per_row)} per row):"
                f" need {kw(need_w)} for {racks_needed} GPU racks of {kw(P)} + network,"
                f" a full row of {full} GPU racks needs {kw(full * P)}; the rows carry {int(max(0, cap))} GPU racks"
                f" ({kw(max(0, cap) * P)})"
            )
        else:
            for L in fl:
                full_rows = sum(free_r.get(r, 0) for r in L.rows) * P
                if L.coef * full_rows > L.capacity:
                    lines.append(
                        f"hall {h.name} {L.name} ({'row' if len(L.rows) == 1 else 'rows'} {ranges(L.rows)}){' ' + L.state if L.state != 'normal' else ''}:"
                        f" full rows need {kw(L.coef * full_rows)}, have {kw(L.capacity)} ({L.rating});"
                        f" the hall holds {int(max(0, cap))} of {racks_needed} GPU racks"
                    )
    if normal_cap is not None:
        fail_cap, _ = hall_capacity(h, pue, P, nets, kinds=tuple(f for f in fams if f.endswith(":failure")) or None, share=share)
        if normal_cap >= racks_needed > fail_cap:
            lines.append(
                f"hall {h.name} fits {racks_needed} GPU racks in normal operation but not after a"
                f" {'feed/block/CDU/pump' if any(f.startswith('cdu') for f in fams) else 'feed/block'} failure"
                f" (then only {int(max(0, fail_cap))}): the design does not fit"
            )
    return lines


def _liquid_lines(h: Hall, fl: list, free_r: dict[int, int], wet: float, racks_needed: int, cap: float) -> list[str]:
    """The CDUs of the rows (or the facility water) whose full rows of GPU racks need more liquid heat
    removed than they carry, with the shortfall; ``wet`` is one GPU rack's liquid heat (W)."""
    out = []
    worst: dict[tuple, list] = {}
    for L in fl:
        full = sum(free_r.get(r, 0) for r in L.rows)
        need = full * wet
        if need > L.capacity * (1 + 1e-9):
            worst.setdefault((L.kind, L.state, need, L.capacity, L.rating), []).append(L)
    for (kind, state, need, have, rating), ls in sorted(worst.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][3] - kv[0][2])):
        rows = sorted(r for L in ls for r in L.rows)
        if kind == "cdu":
            where = f"row {ranges(rows)}" if len(rows) == 1 else f"rows {ranges(rows)}"
            full = free_r.get(rows[0], 0)
            out.append(f"hall {h.name} {where} CDUs, {state}: a full row of {full} GPU racks needs {kw(need)} of liquid heat"
                       f" removed ({kw(wet)} each), have {kw(have)} ({rating}) (short {kw(need - have)});"
                       f" the rows carry {int(max(0, cap))} of {racks_needed} GPU racks")
        else:
            out.append(f"hall {h.name} facility water: full rows need {kw(need)} of liquid heat removed, have {kw(have)}"
                       f" ({rating}) (short {kw(need - have)}); the hall holds {int(max(0, cap))} of {racks_needed} GPU racks")
    return out


def explain(spec, asg: Assignment, hall_index: int | None = None, reach: tuple[str, float] | None = None) -> list[str]:
    """Lines saying why ``asg`` (or the hall MILP of ``hall_index``) could not place every rack."""
    halls = spec.site.halls
    zoned = spec.family.zoned
    lines: list[str] = []
    if hall_index is not None:
        # capacity says it fits, the position-level model does not: optic reach or network positions
        h = halls[hall_index]
        grid = HallGrid(h)
        slots = spec.slots[h.name]
        cands = list(slots.network) or list(slots.free)
        need_sp = max(1, len([nr for nr in asg.plan if nr.hall == hall_index and nr.role in ("ctsw", "fabric")]) // max(1, len(asg.hall_groups[hall_index])))
        worst = 0.0
        for p in slots.free:
            ds = sorted(grid.distance(p, q) for q in cands)
            worst = max(worst, ds[min(len(ds), need_sp) - 1])
        name, rch = reach or ("", math.inf)
        lines.append(
            f"hall {h.name} optic reach: GPU racks must reach all {need_sp} spine racks of their zone within"
            f" {rch:g} m ({name}) less {2 * h.tray_height:g} m of rise and drop; the farthest GPU position is"
            f" {worst + 2 * h.tray_height:.1f} m from its {need_sp}th nearest network position"
            f" (use a longer-reach optic via placement.uplink_medium, or reserve network positions nearer the middle)"
        )
        lines += hall_lines(spec, h, sum(n for _, n in asg.hall_groups[hall_index]), hall_networks(asg.plan, hall_index))
        return lines
    placed = asg.placed_racks
    lines.append(
        f"placement: {placed:,} of {spec.racks:,} GPU racks fit ({placed * spec.rack.gpus:,} of {spec.gpus:,} GPUs)"
        + (f" with {spec.fabric.zones_per_hall} zone(s) of {spec.racks_per_zone} racks per hall" if zoned else "")
    )
    # the first hall that could not take a full share says why
    for i, h in enumerate(halls):
        have = sum(n for _, n in asg.hall_groups[i])
        if zoned:
            want = min(spec.fabric.zones_per_hall, spec.zones) * spec.racks_per_zone
            if have >= want or len(spec.slots[h.name].free) < spec.racks_per_zone:
                continue
            k = have // spec.racks_per_zone + 1
            lines += hall_lines(spec, h, k * spec.racks_per_zone, count_powers(zone_network_power(spec) * k))
        else:
            if have >= len(spec.slots[h.name].free):
                continue
            lines += hall_lines(spec, h, len(spec.slots[h.name].free), hall_networks(asg.plan, i))
        if len(lines) > 12:
            break
    site_need = spec.racks * spec.rack.power * spec.site.power.pue
    if site_need > spec.site.power.utility_capacity:
        lines.append(f"site utility: need {kw(site_need)} for the GPU racks alone, have {kw(spec.site.power.utility_capacity)}")
    if zoned:
        zones_fit = placed // spec.racks_per_zone
        lines.append(
            f"largest configuration that fits: {zones_fit} zone(s) x {spec.racks_per_zone} racks ="
            f" {zones_fit * spec.racks_per_zone * spec.rack.gpus:,} GPUs at {spec.rack.gpu_power_cap:g} W per GPU"
        )
    else:
        lines.append(f"largest configuration that fits: {placed:,} GPU racks = {placed * spec.rack.gpus:,} GPUs")
    cap = powercap.highest_fitting_cap(spec)
    if cap is not None and cap < spec.rack.gpu_power_cap:
        lines.append(
            f"or all {spec.gpus:,} GPUs with the GPU power cap at {cap:g} W (placement.gpu_power_cap: auto picks it)"
        )
    return lines
