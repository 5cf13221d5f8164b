"""First physical feasibility check: space, power and cooling at site and hall level.

This runs before placement and answers "can this many racks possibly fit?" with sums, so an impossible
spec fails fast with the binding limit named. The placement pass later refines it per row and busway.
Figures use the switch counts of the closed-form sizing (the fabric graph does not exist yet).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from twin.compiler.resolve import liquid as lq
from twin.compiler.resolve.pairs import pair_slots
from twin.compiler.resolve.spec import Spec
from twin.lang.site.models import Redundancy
from twin.lang.units import kw


@dataclass(frozen=True)
class HallBudget:
    name: str
    zones: tuple[int, ...]
    gpu_racks: int
    positions: int
    it_power: float  # W, GPU racks + network in this hall
    facility_power: float  # W, it_power x PUE
    utility: float  # W
    distribution: float  # W, usable IT capacity of the busways / UPS blocks after a failure
    cooling: float  # W: air (and, without CDUs, all) heat rejection
    liquid: float = 0.0  # W of heat to the CDUs' coolant (GPU racks x liquid share; 0 without CDUs)

    @property
    def air_heat(self) -> float:
        """W the hall's air cooling must reject: the IT load less what goes to liquid."""
        return self.it_power - self.liquid


@dataclass(frozen=True)
class Budget:
    """Power and space figures of the whole site, per hall and per level of the power chain."""

    rack_power: float
    gpu_racks: int
    network_switches: dict[str, int]
    network_power: float
    it_power: float
    facility_power: float
    utility: float
    halls: list[HallBudget] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    largest_fit_racks: int = 0
    # after the BOM (twin.compiler.fabric.power_budget.reconcile): network_power is the bill's switches outside
    # the GPU racks, and the optics and powered cable ends are in it_power and facility_power too
    optics_power: float = 0.0  # W, transceivers and powered cable ends (0 until the BOM exists)
    rack_switch_power: float = 0.0  # W, the rack switches' share of the GPU racks' power (informative)
    network_from_bom: bool = False  # False: network_power is the shape's estimate (before the fabric)

    @property
    def network_total(self) -> float:
        """W of network the budget counts: outside the racks, inside them, optics (the BOM's total once reconciled)."""
        return self.network_power + self.rack_switch_power + self.optics_power

    @property
    def feasible(self) -> bool:
        return not self.problems


def network_estimate(spec: Spec) -> dict[str, tuple[int, float]]:
    """Switch counts and power per tier outside the GPU racks: {tier: (count, watts)}; the tree
    families' tiers all share the fabric racks and are summed as ``fabric``; fabric attachments are
    ``ep-<name>``."""
    out: dict[str, tuple[int, float]] = {}
    for t in spec.shape.tiers:
        if t.role == "rtsw":
            continue
        key = t.role if spec.family.zoned else "fabric"
        n, w = out.get(key, (0, 0.0))
        out[key] = (n + t.count, w + t.count * spec.switch(t.model).power)
    for a in spec.fabric.attachments:  # non-GPU endpoints in their own racks (twin.compiler.fabric.attach)
        out[f"ep-{a.name}"] = (a.count, a.count * a.power)
    return out


def hall_capacity(h) -> tuple[float, float]:
    """(usable IT power of the distribution after the worst single failure, cooling capacity).

    2N: each row has an A and a B busway and either alone must carry the row, so a row is good for one
    busway's derated rating. N+1 block-redundant: one of the blocks may fail, the rest carry the hall.
    """
    p = h.power
    if p.redundancy == Redundancy.TWO_N:
        dist = h.rows * p.busway_rating * p.derating
    else:
        dist = min((p.blocks - 1) * (p.block_rating or 0.0), h.rows * 2 * p.busway_rating) * p.derating
    c = h.cooling
    cool = c.capacity_per_row * h.rows if c.capacity_per_row is not None else sum(z.capacity for z in c.zones)
    return dist, cool


def check(spec: Spec) -> Budget:
    site = spec.site
    pue = site.power.pue
    rack_power = spec.rack.power
    net = network_estimate(spec)
    net_power = sum(w for _, w in net.values())
    problems: list[str] = lq.rack_problems(site, rack_power)
    share = lq.liquid_share(site)

    # zones (or, for non-zoned families, racks) go to halls in order; a zone never spans halls (nor,
    # on a campus, its building: each building's halls take its own zones)
    halls: list[HallBudget] = []
    zoned = spec.family.zoned
    span = spec.chassis.span  # a system over a rack pair (NVL36x2) needs two neighbouring positions
    unit_racks = spec.racks_per_zone if zoned else span
    units = spec.zones if zoned else spec.racks // span
    per_unit_net = net_power / max(1, units)
    placed_units = 0
    for group_halls, group_units in fill_groups(spec, units):
        u = 0
        for h in group_halls:
            positions = spec.positions[h.name] if span == 1 else span * len(pair_slots(h, spec.slots[h.name].free))
            dist, cool = hall_capacity(h)
            take: list[int] = []
            racks = 0
            cap_units = spec.fabric.zones_per_hall if zoned else units
            while u < len(group_units) and len(take) < cap_units and racks + unit_racks <= positions:
                take.append(group_units[u])
                racks += unit_racks
                u += 1
            it = racks * rack_power + len(take) * per_unit_net
            hp = hall_pue(spec, h.name)
            wet = racks * rack_power * share if h.cooling.cdus is not None else 0.0
            halls.append(HallBudget(h.name, tuple(take) if zoned else (), racks, positions, it, it * hp, h.power.utility, dist, cool, wet))
        placed_units += u
    if placed_units < units:
        what = "AI zones" if zoned else ("rack pairs" if span > 1 else "racks")
        free = sum(hb.positions for hb in halls)
        problems.append(
            f"space: {units:,} {what} of {unit_racks} racks need {units * unit_racks:,} GPU positions"
            + (f" with at most {spec.fabric.zones_per_hall} zone(s) per hall" if zoned else "")
            + f"; the halls fit {placed_units:,} ({free:,} free positions, {sum(hb.gpu_racks for hb in halls):,} used)"
        )
    for hb in halls:
        if hb.it_power > hb.distribution:
            problems.append(
                f"hall {hb.name} power distribution: need {kw(hb.it_power)} IT, have {kw(hb.distribution)} after a feed/block failure"
                f" (short {kw(hb.it_power - hb.distribution)})"
            )
        if hb.facility_power > hb.utility:
            problems.append(
                f"hall {hb.name} utility: need {kw(hb.facility_power)} (IT x PUE {pue:g}), have {kw(hb.utility)}"
                f" (short {kw(hb.facility_power - hb.utility)})"
            )
        if hb.air_heat > hb.cooling:
            air = " by air" if hb.liquid else ""
            problems.append(
                f"hall {hb.name} cooling: need {kw(hb.air_heat)} of heat rejection{air}, have {kw(hb.cooling)}"
                f" (short {kw(hb.air_heat - hb.cooling)})"
            )
    for h, hb in zip([h for g, _ in fill_groups(spec, units) for h in g], halls):
        problems += lq.hall_problems(h, hb.liquid)
    problems += building_problems(spec, halls)
    it = spec.racks * rack_power + net_power
    facility = it * pue
    if facility > site.power.utility_capacity:
        problems.append(
            f"site utility: need {kw(facility)} (IT {kw(it)} x PUE {pue:g}), have {kw(site.power.utility_capacity)}"
            f" (short {kw(facility - site.power.utility_capacity)})"
        )
    largest = _largest_fit(spec, halls, rack_power, per_unit_net / max(1, unit_racks))
    return Budget(
        rack_power=rack_power,
        gpu_racks=spec.racks,
        network_switches={k: n for k, (n, _) in net.items()},
        network_power=net_power,
        it_power=it,
        facility_power=facility,
        utility=site.power.utility_capacity,
        halls=halls,
        problems=problems,
        largest_fit_racks=largest,
    )


def fill_groups(spec: Spec, units: int) -> list[tuple[list, list[int]]]:
    """(halls, the zones or racks they take in order): the whole site, or one entry per building."""
    site = spec.site
    if spec.campus is None:
        return [(list(site.halls), list(range(units)))]
    by_name = {h.name: h for h in site.halls}
    return [([by_name[n] for n in b.halls], list(b.zones)) for b in spec.campus.buildings]


def hall_pue(spec: Spec, hall: str) -> float:
    """The PUE of a hall: its building's on a campus, else the site's."""
    if spec.campus is None:
        return spec.site.power.pue
    return spec.campus.buildings[spec.campus.hall_building[hall]].pue


def building_problems(spec: Spec, halls: list[HallBudget]) -> list[str]:
    """Each building's IT x PUE against its own feed (a campus)."""
    if spec.campus is None:
        return []
    out = []
    for b in spec.campus.buildings:
        facility = sum(hb.facility_power for hb in halls if hb.name in b.halls)
        if facility > b.utility:
            out.append(f"building {b.name} utility: need {kw(facility)} (IT x PUE {b.pue:g}), have {kw(b.utility)}"
                       f" (short {kw(facility - b.utility)})")
    return out


def _largest_fit(spec: Spec, halls: list[HallBudget], rack_power: float, net_per_rack: float) -> int:
    """Most GPU racks the halls and the site could power, cool and hold (zone granularity ignored)."""
    pue = spec.site.power.pue
    per_rack = rack_power + net_per_rack
    total = 0
    share = lq.liquid_share(spec.site)
    by_name = {h.name: h for h in spec.site.halls}
    for hb in halls:
        limit_w = min(hb.distribution, hb.utility / pue)
        fit = min(hb.positions, math.floor(limit_w / per_rack))
        h = by_name[hb.name]
        wet = share * rack_power if h.cooling.cdus is not None else 0.0
        fit = min(fit, math.floor(hb.cooling / (per_rack - wet)) if per_rack > wet else fit)
        if wet > 0:
            fit = min(fit, math.floor(lq.hall_liquid_capacity(h) / wet))
        total += fit
    site_limit = math.floor(spec.site.power.utility_capacity / pue / per_rack)
    return max(0, min(total, site_limit, spec.racks))

