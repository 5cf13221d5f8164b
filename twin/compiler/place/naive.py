"""The naive fill: racks go to positions in reading order (row by row, slot by slot).

This is what a spreadsheet does, and the baseline the optimiser is compared against. Zones go to the
halls chosen by the feasibility budget (a zone never spans halls); network racks take the positions
reserved for the network first, then free positions after the GPU racks.
"""

from __future__ import annotations

import math
from collections import deque
from typing import NamedTuple

from twin.compiler.place.model import PlacedRack, Placement, Position, rack_fill, switches_per_rack
from twin.compiler.resolve.feasibility import Budget
from twin.compiler.resolve.pairs import adjacent, pair_slots
from twin.compiler.resolve.spec import Spec
from twin.lang.diagnostics import InfeasibleError
from twin.lang.site.families import AI_ZONE_LAYOUT, CLOS_LAYOUT, UNIT_LAYOUT


class NetworkRack(NamedTuple):
    """One network rack the placement must stand somewhere."""

    role: str  # "ctsw", "atsw", "cssw" (a campus spine), "fabric" (every tier of a folded Clos), "ep-<attachment>"
    zone: int | None  # the AI zone whose spine switches it holds (0-based), else None
    hall: int  # index of the hall it goes to
    switches: int  # switches (or attachment units) in the rack
    power: float  # W, all of them


def network_rack_plan(
    spec: Spec, budget: Budget | None = None, zone_hall: dict[int, int] | None = None, hall_racks: list[int] | None = None
) -> list[NetworkRack]:
    """Network racks to place, in a stable order: the family's switch racks (its layout's
    ``SWITCH_RACKS``), then the attachments' racks.

    ``zone_hall`` (zone -> hall index) and ``hall_racks`` (GPU racks per hall) default to the
    feasibility ``budget``'s hall fill; the optimiser passes its own assignment.
    """
    shelf = spec.rack_type.power_shelf  # network racks use the same rack frame and power shelf
    if spec.family.zoned:
        if zone_hall is None:
            zone_hall = {z: i for i, hb in enumerate(budget.halls) for z in hb.zones}
        halls = sorted(set(zone_hall.values())) or [0]
    else:
        weights = hall_racks if hall_racks is not None else [hb.gpu_racks for hb in budget.halls]
        halls = [i for i, w in enumerate(weights) if w] or [0]
    switch_racks = SWITCH_RACKS[spec.family.layout](spec, zone_hall, hall_racks, budget, shelf)
    return switch_racks + attachment_racks(spec, halls, shelf)


def attachment_racks(spec: Spec, halls: list[int], shelf: float) -> list[NetworkRack]:
    """Racks of the fabric attachments (role ``ep-<name>``), one attachment per rack, as many per rack
    as its height and the power shelf allow, round the halls that hold GPU racks (like ATSW racks).
    Their cables are routed once placed; the fiber objective does not weigh them."""
    plan = []
    for a in spec.fabric.attachments:
        per = switches_per_rack(a.height_u, a.power, shelf)
        for k, n in enumerate(rack_fill(a.count, per)):
            plan.append(NetworkRack(f"ep-{a.name}", None, halls[k % len(halls)], n, n * a.power))
    return plan


def network_device(spec: Spec, role: str):
    """What a network rack of ``role`` holds (``height_u``, ``power``, ``weight``): a switch model or
    an attachment (role ``ep-<name>``); ``cssw`` is a campus spine."""
    f = spec.fabric
    if role.startswith("ep-"):
        return next(a for a in f.attachments if a.name == role[3:])
    if role == "cssw":
        return spec.switch(spec.campus.spine_model)
    return spec.switch(f.ctsw.model if role == "ctsw" else (f.atsw.model if role == "atsw" else f.switch))


def _ai_zone_racks(spec: Spec, zone_hall, hall_racks, budget, shelf: float) -> list[NetworkRack]:
    """Each zone's CTSWs in racks in its own hall; the ATSWs round the halls holding zones (on a
    campus, each building's round its own halls); a campus spine in its building's halls."""
    f = spec.fabric
    plan = []
    ctsw = spec.switch(f.ctsw.model)
    per = switches_per_rack(ctsw.height_u, ctsw.power, shelf)
    for z in range(spec.zones):
        if z not in zone_hall:
            continue
        for n in rack_fill(f.ctsw.count * f.planes, per):  # every plane's CTSWs of the zone
            plan.append(NetworkRack("ctsw", z, zone_hall[z], n, n * ctsw.power))
    if f.atsw and f.atsw.count and spec.zones > 1:
        atsw = spec.switch(f.atsw.model)
        per = switches_per_rack(atsw.height_u, atsw.power, shelf)
        for halls in atsw_hall_groups(spec, zone_hall):  # the site, or each building of a campus
            for k, n in enumerate(rack_fill(f.atsw.count * f.planes, per)):  # every plane's ATSWs (of the building)
                plan.append(NetworkRack("atsw", None, halls[k % len(halls)], n, n * atsw.power))
    if spec.campus is not None and spec.campus.spine_count:  # a campus spine, in its building's halls
        cp = spec.campus
        spine = spec.switch(cp.spine_model)
        per = switches_per_rack(spine.height_u, spine.power, shelf)
        halls = atsw_hall_groups(spec, zone_hall)[cp.spine_building]
        for k, n in enumerate(rack_fill(cp.spine_count * f.planes, per)):  # every plane's campus spines
            plan.append(NetworkRack("cssw", None, halls[k % len(halls)], n, n * spine.power))
    return plan


def _clos_racks(spec: Spec, zone_hall, hall_racks, budget, shelf: float) -> list[NetworkRack]:
    """Every switch of a folded Clos in shared "fabric" racks, apportioned over the halls by GPU racks."""
    sw = spec.switch(spec.fabric.switch)
    total = spec.shape.switches
    per = switches_per_rack(sw.height_u, sw.power, shelf)
    racks = math.ceil(total / per)
    weights = hall_racks if hall_racks is not None else [hb.gpu_racks for hb in budget.halls]
    share = _apportion(racks, weights)
    left = total
    plan = []
    for hall_index, n_racks in enumerate(share):
        for _ in range(n_racks):
            n = min(per, left)
            left -= n
            plan.append(NetworkRack("fabric", None, hall_index, n, n * sw.power))
    return plan


# The switch racks of each layout (twin/lang/site/families.py)
SWITCH_RACKS = {AI_ZONE_LAYOUT: _ai_zone_racks, CLOS_LAYOUT: _clos_racks, UNIT_LAYOUT: _clos_racks}  # units: as a Clos


def atsw_hall_groups(spec: Spec, zone_hall: dict[int, int]) -> list[list[int]]:
    """Hall indices that take ATSW racks, in order: the halls holding zones; on a campus one list per
    building (its ATSWs stand in its own halls)."""
    used = sorted(set(zone_hall.values()))
    if spec.campus is None:
        return [used]
    index = {h.name: i for i, h in enumerate(spec.site.halls)}
    out = []
    for b in spec.campus.buildings:
        mine = [i for i in used if spec.site.halls[i].name in b.halls]
        out.append(mine or [index[b.halls[0]]])
    return out


def _apportion(total: int, weights: list[int]) -> list[int]:
    """Split ``total`` in proportion to ``weights`` (largest remainder; ties to the first)."""
    s = sum(weights)
    if s == 0:
        return [total] + [0] * (len(weights) - 1)
    raw = [total * w / s for w in weights]
    out = [math.floor(r) for r in raw]
    order = sorted(range(len(weights)), key=lambda i: (-(raw[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def place(spec: Spec, budget: Budget) -> Placement:
    """Racks in reading order into the halls the feasibility ``budget`` chose."""
    halls = spec.site.halls
    racks: list[PlacedRack] = []
    free: dict[int, deque[Position]] = {}  # taken from the front, one by one: a deque, not list.pop(0)
    reserved: dict[int, deque[Position]] = {}
    for i, h in enumerate(halls):
        slots = spec.slots[h.name]
        free[i] = deque(Position(h.name, r, p) for r, p in slots.free)
        reserved[i] = deque(Position(h.name, r, p) for r, p in slots.network)
    zoned = spec.family.zoned
    span = spec.chassis.span
    gpu_index = 0
    for i, hb in enumerate(budget.halls):
        take = _taker(halls[i], free[i], span)
        if zoned:
            for z in hb.zones:
                for k in range(spec.racks_per_zone):
                    pos = take()
                    racks.append(PlacedRack(f"{pos.hall}-z{z + 1}-r{k + 1:03d}", "gpu", pos, z, k, spec.rack.power))
        else:
            for _ in range(hb.gpu_racks):
                z = gpu_index // spec.racks_per_zone
                k = gpu_index % spec.racks_per_zone
                pos = take()
                racks.append(PlacedRack(f"{pos.hall}-r{gpu_index + 1:04d}", "gpu", pos, z, k, spec.rack.power))
                gpu_index += 1
    counters: dict[tuple[str, int | None], int] = {}
    for nr in network_rack_plan(spec, budget):
        pool = reserved[nr.hall] or free[nr.hall]
        if not pool:
            raise InfeasibleError([f"hall {halls[nr.hall].name}: no position left for a {nr.role} network rack"])
        pos = pool.popleft()
        idx = counters.get((nr.role, nr.zone), 0)
        counters[(nr.role, nr.zone)] = idx + 1
        rid = f"{pos.hall}-z{nr.zone + 1}-{nr.role}-n{idx + 1:02d}" if nr.zone is not None else f"{pos.hall}-{nr.role}-n{idx + 1:02d}"
        racks.append(PlacedRack(rid, "network", pos, nr.zone, idx, nr.power, nr.role, nr.switches))
    racks.sort(key=lambda r: (r.position.hall, r.position.row, r.position.slot))
    system_racks(spec, racks)  # a rack pair's racks side by side, or a located reason why not
    return Placement(tuple(racks), "naive-fill")


def _taker(h, free: deque[Position], span: int):
    """The next GPU position of hall ``h`` in reading order, taken out of ``free``; with ``span`` 2 (a system
    over a rack pair) positions come two by two, side by side in one row (twin/compiler/resolve/pairs.py)."""
    if span == 1:
        return free.popleft
    queue = [Position(h.name, *p) for pair in pair_slots(h, [(p.row, p.slot) for p in free]) for p in pair]

    def take() -> Position:
        if not queue:
            raise InfeasibleError([f"hall {h.name}: no pair of neighbouring positions left for a {span}-rack system"])
        pos = queue.pop(0)
        free.remove(pos)
        return pos
    return take


def system_racks(spec: Spec, racks) -> list[tuple[PlacedRack, ...]]:
    """The GPU racks of each system in the fabric's order (zone, index): one rack each, or a rack pair
    (``chassis.span`` 2, NVL36x2) whose two racks stand side by side in one row; a pair split apart is
    an infeasible placement, named."""
    gpu = sorted((r for r in racks if r.kind == "gpu"), key=lambda r: (r.zone, r.index))
    span = spec.chassis.span
    units = [tuple(gpu[i:i + span]) for i in range(0, len(gpu), span)]
    if span > 1 and all(r.position is not None for u in units for r in u):  # a study's racks stand nowhere
        halls = {h.name: h for h in spec.site.halls}
        bad = [u for u in units if len(u) < span or u[0].position.hall != u[-1].position.hall
               or not adjacent(halls[u[0].position.hall], *((r.position.row, r.position.slot) for r in u))]
        if bad:
            u = bad[0]
            raise InfeasibleError([f"rack pair {' + '.join(r.id for r in u)} of '{spec.rack_type.chassis}' is not two neighbouring "
                                   f"positions in one row ({len(bad)} such); its racks share one NVLink domain"])
    return units
