"""Placement stage 1: how many GPU racks each hall can hold, and which zones go to which hall.

Each hall's capacity is a small row-level MILP (:func:`hall_capacity`: GPU racks per row under every
busway, block, cooling and utility limit in every failure state). Zones are identical, so filling halls
in order up to their capacity maximises GPUs placed; the ATSW racks then go round-robin to the halls
that hold zones (:func:`twin.compiler.place.naive.network_rack_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.compiler.place import capacity, naive
from twin.compiler.place.model import rack_fill, switches_per_rack
from twin.compiler.place.solver import highs
from twin.compiler.resolve.feasibility import fill_groups, hall_pue
from twin.compiler.resolve.liquid import liquid_share
from twin.compiler.resolve.spec import HallSlots, Spec
from twin.lang.site.models import Hall


def _hall_key(h: Hall) -> tuple:
    """Everything of a hall that matters for its capacity (not its name or where it stands)."""
    return (h.model_copy(update={"name": "x", "origin": (0.0, 0.0)}).model_dump_json(),)


class _Trivial(Exception):
    """A constraint without variables that is false: the model is infeasible as built."""


_CAPACITY: dict[tuple, tuple[float, str]] = {}  # identical halls (the usual case) are solved once


def hall_capacity(h: Hall, pue: float, gpu_power: float, nets: tuple[tuple[float, int], ...], relax: bool = False,
                  kinds: tuple[str, ...] | None = None, share: float = 0.0) -> tuple[float, str]:
    """Most GPU racks hall ``h`` can hold next to ``nets`` network racks ((power W, count), ...), and
    the solver status. With ``relax`` the row counts are continuous (an upper bound for the report);
    ``kinds`` keeps only those limit families ("busway:failure", ...; see capacity.family); ``share`` is
    the GPU racks' share of heat to liquid (:func:`twin.compiler.resolve.liquid.liquid_share`)."""
    key = (_hall_key(h), pue, gpu_power, tuple(sorted(nets)), relax, kinds, share)
    if key not in _CAPACITY:
        if len(_CAPACITY) > 20_000:
            _CAPACITY.clear()
        _CAPACITY[key] = _capacity_model(h, pue, gpu_power, key[3], relax, kinds, share)
    return _CAPACITY[key]


def _capacity_model(h: Hall, pue: float, gpu_power: float, nets: tuple, relax: bool,
                    kinds: tuple | None, share: float) -> tuple[float, str]:
    import pyomo.environ as pyo  # here, not at import (see solver.highs)

    slots = HallSlots.of(h)
    rows = list(range(1, h.rows + 1))
    free = {r: 0 for r in rows}
    res = {r: 0 for r in rows}
    for r, _ in slots.free:
        free[r] += 1
    for r, _ in slots.network:
        res[r] += 1
    n_net = sum(c for _, c in nets)
    spill = n_net > len(slots.network)  # network racks also take free positions
    dom = pyo.NonNegativeReals if relax else pyo.NonNegativeIntegers
    m = pyo.ConcreteModel()
    m.n = pyo.Var(rows, domain=dom, bounds=lambda _m, r: (0, free[r]))
    T = list(range(len(nets)))
    m.yr = pyo.Var(T, rows, domain=dom, bounds=lambda _m, t, r: (0, res[r]))
    m.yf = pyo.Var(T, rows, domain=dom, bounds=lambda _m, t, r: (0, free[r] if spill else 0))
    m.c = pyo.ConstraintList()

    def add(expr) -> None:
        if expr is True:
            return
        if expr is False:
            raise _Trivial
        m.c.add(expr)

    for t in T:
        add(sum(m.yr[t, r] + m.yf[t, r] for r in rows) == nets[t][1])
    for r in rows:
        if T:
            add(sum(m.yr[t, r] for t in T) <= res[r])
        add(m.n[r] + sum(m.yf[t, r] for t in T) <= free[r])
    load = {r: gpu_power * m.n[r] + sum(nets[t][0] * (m.yr[t, r] + m.yf[t, r]) for t in T) for r in rows}
    lims = [L for L in capacity.hall_limits(h, pue, share) if L.rows and (kinds is None or capacity.family(L) in kinds)]
    try:
        for L in lims:
            add(sum(L.coef * load[r] + L.gpu_coef * gpu_power * m.n[r] for r in L.rows) <= L.capacity)
    except _Trivial:
        return -1.0, "infeasible"
    m.obj = pyo.Objective(expr=sum(m.n[r] for r in rows), sense=pyo.maximize)
    r = highs(30.0).solve(m)
    tc = r.termination_condition.name
    if r.best_feasible_objective is None:
        return -1.0, tc
    return float(r.best_feasible_objective if relax else round(r.best_feasible_objective)), tc


# ---------------------------------------------------------------- stage 1: zones to halls


@dataclass(frozen=True)
class Assignment:
    hall_groups: dict[int, list[tuple[int, int]]]  # hall index -> [(zone, GPU racks)]
    plan: list[naive.NetworkRack]  # network racks (naive.network_rack_plan)
    placed_racks: int
    capacity: dict[int, float]  # hall index -> most GPU racks next to its network racks


def hall_networks(plan: list[naive.NetworkRack], hall_index: int) -> tuple[tuple[float, int], ...]:
    """(power, racks of that power) of the network racks of one hall."""
    acc: dict[float, int] = {}
    for nr in plan:
        if nr.hall == hall_index:
            acc[nr.power] = acc.get(nr.power, 0) + 1
    return tuple(sorted(acc.items()))


def assign(spec: Spec) -> Assignment:
    """Zones (or, for non-zoned families, racks) to halls in hall order, each hall filled up to what
    its rows can power and cool. Zones are interchangeable, so this maximises what is placed."""
    site = spec.site
    pue = site.power.pue
    P = spec.rack.power
    zoned = spec.family.zoned
    halls = site.halls
    share = liquid_share(site)
    if zoned:
        f = spec.fabric
        zone_net = zone_network_power(spec)
        zone_hall: dict[int, int] = {}
        caps: dict[int, float] = {}
        index = {h.name: i for i, h in enumerate(halls)}
        for group_halls, group_zones in fill_groups(spec, spec.zones):  # a campus: each building its own zones
            z = 0
            for h in group_halls:
                i = index[h.name]
                kmax = min(f.zones_per_hall, len(group_zones) - z, len(spec.slots[h.name].free) // max(1, spec.racks_per_zone))
                k = kmax
                while k > 0:
                    nets = count_powers(zone_net * k)
                    need = k * spec.racks_per_zone
                    cap, _ = hall_capacity(h, hall_pue(spec, h.name), P, nets, share=share)
                    if cap >= need:
                        break
                    k -= 1
                for _ in range(k):
                    zone_hall[group_zones[z]] = i
                    z += 1
        plan = naive.network_rack_plan(spec, zone_hall=zone_hall) if zone_hall else []
        hall_groups = {i: [] for i in range(len(halls))}
        for zz, i in sorted(zone_hall.items()):
            hall_groups[i].append((zz, spec.racks_per_zone))
        for i, h in enumerate(halls):
            caps[i], _ = hall_capacity(h, hall_pue(spec, h.name), P, hall_networks(plan, i), share=share)
        placed = len(zone_hall) * spec.racks_per_zone
        return Assignment(hall_groups, plan, placed, caps)
    # non-zoned: racks fill halls in order; fabric racks follow the GPU racks (apportioned)
    want = [0] * len(halls)
    plan: list = []
    for _ in range(4):
        left = spec.racks
        racks = []
        for i, h in enumerate(halls):
            cap, _ = hall_capacity(h, pue, P, hall_networks(plan, i) if plan else (), share=share)
            take = max(0, min(left, int(cap)))
            racks.append(take)
            left -= take
        new_plan = naive.network_rack_plan(spec, hall_racks=racks)
        if racks == want and new_plan == plan:
            break
        want, plan = racks, new_plan
    hall_groups = {i: [] for i in range(len(halls))}
    g = 0
    for i, n in enumerate(want):
        # GPU racks keep their global order: zone = index // racks_per_zone
        while n > 0:
            z = g // spec.racks_per_zone
            take = min(n, (z + 1) * spec.racks_per_zone - g)
            hall_groups[i].append((z, take))
            g += take
            n -= take
    caps = {i: hall_capacity(h, pue, P, hall_networks(plan, i), share=share)[0] for i, h in enumerate(halls)}
    return Assignment(hall_groups, plan, sum(want), caps)


def zone_network_power(spec) -> list[float]:
    """Power of each CTSW rack of one zone (W)."""
    f = spec.fabric
    ctsw = spec.switch(f.ctsw.model)
    per = switches_per_rack(ctsw.height_u, ctsw.power, spec.rack_type.power_shelf)
    return [n * ctsw.power for n in rack_fill(f.ctsw.count, per)]


def count_powers(powers: list[float]) -> tuple[tuple[float, int], ...]:
    acc: dict[float, int] = {}
    for p in powers:
        acc[p] = acc.get(p, 0) + 1
    return tuple(sorted(acc.items()))
