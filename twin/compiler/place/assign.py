"""Placement stage 1: how many GPU racks each hall can hold, and which zones go to which hall.

Each hall's capacity is a small row-level MILP (:func:`hall_capacity`: GPU racks per row under every
busway, block, cooling and utility limit in every failure state). Zones are identical, so filling halls
in order up to their capacity maximises GPUs placed; the ATSW racks then go round-robin to the halls
that hold zones (:func:`twin.compiler.place.naive.network_rack_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.compiler.place import capacity, naive
from twin.compiler.place.model import rack_fill, switches_per_rack
from twin.compiler.place.solver import Milp
from twin.compiler.resolve.feasibility import fill_groups, hall_pue
from twin.compiler.resolve.liquid import liquid_share
from twin.compiler.resolve.pairs import pair_slots
from twin.compiler.resolve.spec import HallSlots, Spec
from twin.lang.site.models import Hall


def _hall_key(h: Hall) -> tuple:
    """Everything of a hall that matters for its capacity (not its name or where it stands)."""
    return (h.model_copy(update={"name": "x", "origin": (0.0, 0.0)}).model_dump_json(),)


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
    """Most GPU racks per row (``n[r]``) next to network racks of each power on the hall's network
    positions (``yr[t, r]``) and, when those are too few, on free ones (``yf[t, r]``)."""
    slots = HallSlots.of(h)
    rows = h.rows
    free = np.zeros(rows)
    res = np.zeros(rows)
    for r, _ in slots.free:
        free[r - 1] += 1
    for r, _ in slots.network:
        res[r - 1] += 1
    nT = len(nets)
    spill = sum(c for _, c in nets) > len(slots.network)  # network racks also take free positions
    m = Milp()
    n = m.add_cols(rows, 0, free, integer=not relax)
    y = m.add_cols(2 * nT * rows, 0, np.tile(np.concatenate([res, free if spill else np.zeros(rows)]), nT),
                   integer=not relax).reshape(nT, 2, rows)  # y[t, 0]: yr, y[t, 1]: yf
    yr, yf = y[:, 0], y[:, 1]
    # the racks of each power, wherever they stand (yr[t, 1], yf[t, 1], yr[t, 2], ...)
    m.add_rows(np.full(nT, 2 * rows), np.stack([yr, yf], axis=2).ravel(), 1.0, [c for _, c in nets], [c for _, c in nets])
    # per row: the network positions it has, then its free positions
    lengths = np.tile([nT, 1 + nT], rows) if nT else np.ones(rows, int)
    cols = np.concatenate([np.concatenate([yr[:, r], [n[r]], yf[:, r]]) for r in range(rows)])
    upper = np.column_stack([res, free]).ravel() if nT else free
    m.add_rows(lengths, cols, 1.0, None, upper)
    # each row's load: its GPU racks, then each power's racks on network and free positions
    load_cols = [np.concatenate([[n[r]], np.stack([yr[:, r], yf[:, r]], axis=1).ravel()]) for r in range(rows)]
    load_vals = np.concatenate([[gpu_power], np.repeat([p for p, _ in nets], 2)])
    lims = [L for L in capacity.hall_limits(h, pue, share) if L.rows and (kinds is None or capacity.family(L) in kinds)]
    gpu_only = np.zeros_like(load_vals)
    gpu_only[0] = gpu_power  # a liquid limit counts the GPU racks' share (gpu_coef) on top of coef x load
    if lims:
        m.add_rows([len(L.rows) * (1 + 2 * nT) for L in lims], np.concatenate([load_cols[r - 1] for L in lims for r in L.rows]),
                   np.concatenate([L.coef * load_vals + L.gpu_coef * gpu_only for L in lims for _r in L.rows]), None,
                   [L.capacity for L in lims])
    m.cost(n, np.ones(rows))
    r = m.solve(30.0, maximize=True)
    if r.objective is None:
        return -1.0, r.status
    return float(r.objective if relax else round(r.objective)), r.status


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
    span = spec.chassis.span
    want = [0] * len(halls)
    plan: list = []
    for _ in range(4):
        left = spec.racks
        racks = []
        for i, h in enumerate(halls):
            cap, _ = hall_capacity(h, pue, P, hall_networks(plan, i) if plan else (), share=share)
            take = max(0, min(left, int(cap)))
            if span > 1:  # whole rack pairs, on neighbouring positions (twin/compiler/resolve/pairs.py)
                take = min(take, span * len(pair_slots(h, spec.slots[h.name].free)))
                take -= take % span
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
    return [n * ctsw.power for n in rack_fill(f.ctsw.count * f.planes, per)]


def count_powers(powers: list[float]) -> tuple[tuple[float, int], ...]:
    acc: dict[float, int] = {}
    for p in powers:
        acc[p] = acc.get(p, 0) + 1
    return tuple(sorted(acc.items()))
