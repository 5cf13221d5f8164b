"""Liquid cooling capacities: what the CDUs of a row (or a rack) and a hall's facility water carry.

A CDU moves at most its rated ``capacity``; with a ``flow`` it also moves at most what its coolant
carries, ``flow x density x heat capacity x delta_t`` (water, :mod:`twin.physics`). Its pumps share the
flow: with one pump lost it pumps ``min(flow, (pumps - 1) x pump_flow)``. A row of ``count`` in-row CDUs
(or a rack of ``count`` in-rack CDUs) carries, in each state:

- normal: ``count x heat(all pumps)``;
- one CDU lost (N+1): ``(count - 1) x heat(all pumps)``;
- one pump lost (N+1, a CDU with a flow and more than one pump): ``(count - 1) x heat(all) + heat(pumps - 1)``.

The facility water of a hall carries ``flow x density x heat capacity x delta_t``. The liquid heat of a
GPU rack is ``liquid_share x`` its power; network racks are air-cooled. With CDUs, a hall's air cooling
(``capacity_per_row``, ``zones``) carries the rest.

>>> from twin.lang.site.cooling import Cdus
>>> c = Cdus.model_validate({"kind": "in-row", "count": 3, "capacity": "1 MW", "supply_temperature": "35 degC",
...                          "flow": "1200 L/min", "pumps": 2})
>>> [(s, round(w / 1e3)) for s, w, _ in unit_states(c)]   # 1200 L/min at 10 K carries 834 kW
[('normal', 2502), ('one CDU lost', 1668), ('one pump lost', 2085)]
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from twin.lang.diagnostics import Severity
from twin.lang.site.cooling import Cdus, FacilityWater
from twin.lang.site.models import Hall, Site
from twin.lang.units import kw
from twin.physics import WATER_DENSITY, WATER_HEAT_CAPACITY

VOLUMETRIC_HEAT = WATER_DENSITY * WATER_HEAT_CAPACITY  # J/(m^3 K)


def flow_heat(flow: float, delta_t: float) -> float:
    """W a water flow (m^3/s) carries at a temperature rise of ``delta_t`` K."""
    return flow * VOLUMETRIC_HEAT * delta_t


def cdu_heat(c: Cdus, pumps_running: int) -> float:
    """W one CDU moves with ``pumps_running`` of its pumps."""
    if c.flow is None:
        return c.capacity if pumps_running > 0 else 0.0
    per_pump = c.pump_flow if c.pump_flow is not None else c.flow / c.pumps
    return min(c.capacity, flow_heat(min(c.flow, pumps_running * per_pump), c.delta_t))


def unit_states(c: Cdus) -> list[tuple[str, float, str]]:
    """(state, W of liquid heat one row (in-row) or one GPU rack (in-rack) carries, how it was derived)."""
    full = cdu_heat(c, c.pumps)
    what = f"{c.count} {c.kind} CDU{'s' if c.count > 1 else ''} of {kw(full)}"
    out = [("normal", c.count * full, what)]
    if c.redundancy == "N+1":
        out.append(("one CDU lost", (c.count - 1) * full, f"{c.count - 1} of {what}"))
        if c.flow is not None and c.pumps > 1:
            part = cdu_heat(c, c.pumps - 1)
            out.append(("one pump lost", (c.count - 1) * full + part, f"{what}, one on {c.pumps - 1} of {c.pumps} pumps ({kw(part)})"))
    return out


def worst_state(c: Cdus) -> tuple[str, float, str]:
    """The state with the least capacity (normal operation when nothing is redundant)."""
    return min(unit_states(c), key=lambda s: s[1])


def facility_heat(fw: FacilityWater) -> float:
    return flow_heat(fw.flow, fw.delta_t)


def chassis_share(chassis) -> float | None:
    """A rack-scale chassis' own liquid share (``rack_scale.liquid_fraction`` in the catalog), if it has one."""
    return getattr(getattr(chassis, "rack_scale", None), "liquid_fraction", None)


def with_chassis_share(site: Site, chassis) -> Site:
    """The site with the GPU rack type's ``liquid_share`` taken from its chassis when the rack type
    gives none and a hall has CDUs (a rack type's own figure wins)."""
    rt = site.rack_types[site.fabric.rack_type]
    share = chassis_share(chassis)
    if rt.liquid_share is not None or share is None or not any(h.cooling.cdus is not None for h in site.halls):
        return site
    types = dict(site.rack_types)
    types[site.fabric.rack_type] = rt.model_copy(update={"liquid_share": float(share)})
    return site.model_copy(update={"rack_types": types})


def liquid_share(site: Site) -> float:
    """The GPU rack type's share of heat to liquid (0 when not given)."""
    rt = site.rack_types.get(site.fabric.rack_type)
    return float(rt.liquid_share or 0.0) if rt is not None else 0.0


def sized(site: Site, rack_power: float) -> Site:
    """The site with every ``count: auto`` resolved: the fewest CDUs that carry the liquid heat of a full
    row of GPU racks (in-row; the row with the most free positions) or of one GPU rack (in-rack) at
    ``rack_power``, plus one with N+1."""
    from twin.compiler.resolve.spec import HallSlots

    heat = liquid_share(site) * rack_power
    halls = []
    for h in site.halls:
        c = h.cooling.cdus
        if c is None or c.count != "auto":
            halls.append(h)
            continue
        per = {}
        for r, _ in HallSlots.of(h).free:
            per[r] = per.get(r, 0) + 1
        need = heat * (max(per.values(), default=0) if c.kind == "in-row" else 1)
        n = max(1, math.ceil(need / cdu_heat(c, c.pumps) - 1e-9)) + (1 if c.redundancy == "N+1" else 0)
        halls.append(h.model_copy(update={"cooling": h.cooling.model_copy(update={"cdus": c.model_copy(update={"count": min(64, n)})})}))
    return site.model_copy(update={"halls": halls}) if halls != list(site.halls) else site


def findings(site: Site, catalog=None) -> Iterator[tuple[Severity, tuple, str, str]]:
    """A hall with CDUs needs the GPU rack type's liquid share (or its chassis'); a hall without them
    cannot take it."""
    for i, h in enumerate(site.halls):
        c, fw = h.cooling.cdus, h.cooling.facility_water
        if c is not None and fw is not None and c.supply_temperature < fw.supply_temperature + c.approach:
            yield (Severity.ERROR, ("halls", i, "cooling", "cdus", "supply_temperature"),
                   f"{c.supply_temperature:g} degC is below the facility water supply {fw.supply_temperature:g} degC + the CDU approach"
                   f" {c.approach:g} K (a heat exchanger cannot cool below the water feeding it)",
                   f"at least {fw.supply_temperature + c.approach:g} degC, or a cooler facility_water.supply_temperature")
    rt_name = site.fabric.rack_type
    rt = site.rack_types.get(rt_name)
    if rt is None:
        return
    cooled = [i for i, h in enumerate(site.halls) if h.cooling.cdus is not None]
    chassis = catalog.chassis.get(rt.chassis) if catalog is not None else None
    if cooled and rt.liquid_share is None and chassis_share(chassis) is None:
        yield (Severity.ERROR, ("rack_types", rt_name), f"halls[{cooled[0]}] has CDUs but rack type '{rt_name}' gives no liquid_share",
               "liquid_share: the share of the rack's heat its cold plates give to the coolant, e.g. 0.85")
    if rt.liquid_share and len(cooled) < len(site.halls):
        i = next(i for i, h in enumerate(site.halls) if h.cooling.cdus is None)
        yield (Severity.WARNING, ("halls", i, "cooling"), f"rack type '{rt_name}' sends {rt.liquid_share:.0%} of its heat to liquid "
               "but this hall has no cdus: its cooling capacity is taken to carry all of it", "cdus and facility_water")


def rack_problems(site: Site, rack_power: float) -> list[str]:
    """In-rack CDUs: every GPU rack's liquid heat against its own CDUs in every state."""
    out = []
    heat = liquid_share(site) * rack_power
    for h in site.halls:
        c = h.cooling.cdus
        if c is None or c.kind != "in-rack":
            continue
        for state, cap, what in unit_states(c):
            if heat > cap * (1 + 1e-9):
                out.append(f"hall {h.name} in-rack CDUs, {state}: a GPU rack needs {kw(heat)} of liquid heat removed"
                           f" ({liquid_share(site):.0%} of {kw(rack_power)}), have {kw(cap)} ({what}) (short {kw(heat - cap)})")
    return out


def hall_liquid_capacity(h: Hall) -> float:
    """W of liquid heat a hall carries in its worst state: its facility water, and in-row CDUs in every row
    with the worst single loss in one of them (in-rack CDUs are checked per rack)."""
    c, fw = h.cooling.cdus, h.cooling.facility_water
    if c is None or fw is None:
        return float("inf")
    cap = facility_heat(fw)
    if c.kind == "in-row":
        cap = min(cap, (h.rows - 1) * unit_states(c)[0][1] + worst_state(c)[1])
    return cap


def hall_problems(h: Hall, liquid: float) -> list[str]:
    """A hall's liquid heat (W, all its GPU racks) against its facility water, and, with in-row CDUs, against
    every row's CDUs together after the worst single loss (the rows themselves are checked by placement)."""
    c, fw = h.cooling.cdus, h.cooling.facility_water
    if c is None or fw is None:
        return []
    out = []
    cap = facility_heat(fw)
    if liquid > cap * (1 + 1e-9):
        out.append(f"hall {h.name} facility water: need {kw(liquid)} of liquid heat removed, the water carries {kw(cap)}"
                   f" ({fw.flow * 60e3:,.0f} L/min x {fw.delta_t:g} K) (short {kw(liquid - cap)})")
    if c.kind == "in-row":
        full = unit_states(c)[0][1]
        state, worst, _ = worst_state(c)
        total = (h.rows - 1) * full + worst
        if liquid > total * (1 + 1e-9):
            out.append(f"hall {h.name} CDUs, {state}: need {kw(liquid)} of liquid heat removed, {h.rows} rows of {c.count} CDUs"
                       f" carry {kw(total)} (short {kw(liquid - total)})")
    return out
