"""Placement stage 2: one hall's MILP, which position holds which GPU rack and which network rack.

Fiber between a GPU rack and its zone's spine racks is bilinear in the two placements; it is
linearised exactly with a transportation-shaped flow ``f[p, q]`` (every GPU rack links to every spine
rack of its zone, so ``sum_q f = spines * x[p]`` and ``sum_p f = racks * u[q]``), whose LP relaxation
is tight enough that HiGHS closes the gap at the root on real halls. Links that leave the hall (spine
to ATSW racks elsewhere) run through the hall door, which makes them linear per hall and the
decomposition exact for the fiber objective.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from twin.compiler.place import capacity
from twin.compiler.place.model import HallGrid
from twin.compiler.place.solver import highs
from twin.compiler.resolve.spec import HallSlots
from twin.lang.site.models import Hall

BALANCE_WEIGHT = 1e-6  # metres of fiber per W of peak row load: a tie breaker, never trades fiber


@dataclass(frozen=True)
class NetType:
    """Identical network racks of one role (and zone) to place in one hall."""

    role: str
    zone: int | None
    count: int
    switches: int  # per rack
    power: float  # W per rack
    weight: float  # kg per rack



@dataclass
class HallResult:
    gpu: dict[int, list[tuple[int, int]]]  # zone -> positions
    net: dict[int, list[tuple[int, int]]]  # net type index -> positions
    objective: float
    bound: float
    status: str
    seconds: float
    variables: int


def solve_hall(h: Hall, pue: float, groups: list[tuple[int, int]], types: list[NetType], gpu_power: float,
               w_gpu: dict[tuple[int, int], float], w_net: dict[tuple[int, int], float], ext: dict[int, float],
               reach: float, time_limit: float, liquid_share: float = 0.0) -> HallResult:
    """Positions for ``groups`` ((zone, GPU racks), ...) and network racks ``types`` in hall ``h``,
    minimising tray metres of fiber.

    ``w_gpu[(g, t)]``: links between one GPU rack of group g and one rack of type t.
    ``w_net[(t, u)]``: links between one rack of type t and one of type u (t < u, both in this hall).
    ``ext[t]``: links from one rack of type t to racks in other halls (routed through the door).
    ``reach``: longest allowed tray run of a GPU-to-spine link (m).
    """
    import pyomo.environ as pyo  # here, not at import (see solver.highs)

    t0 = time.perf_counter()
    grid = HallGrid(h)
    slots = HallSlots.of(h)
    n_net = sum(t.count for t in types)
    ppr = h.positions_per_row

    def pid(rs: tuple[int, int]) -> int:  # integer position ids keep Pyomo indices flat and fast
        return (rs[0] - 1) * ppr + rs[1] - 1

    def rs_of(i: int) -> tuple[int, int]:
        return (i // ppr + 1, i % ppr + 1)

    Pf = [pid(x) for x in slots.free]
    Q = [pid(x) for x in slots.network] + (Pf if n_net > len(slots.network) else [])
    G = list(range(len(groups)))
    T = list(range(len(types)))
    rows = list(range(1, h.rows + 1))
    dist: dict[tuple, float] = {}

    def d(a: int, b: int) -> float:
        k = (a, b)
        if k not in dist:
            dist[k] = grid.distance(rs_of(a), rs_of(b))
        return dist[k]

    m = pyo.ConcreteModel()
    m.x = pyo.Var([(g, p) for g in G for p in Pf], domain=pyo.Binary)
    m.u = pyo.Var([(t, q) for t in T for q in Q], domain=pyo.Binary)
    m.c = pyo.ConstraintList()
    for g in G:
        m.c.add(sum(m.x[g, p] for p in Pf) == groups[g][1])
    for t in T:
        m.c.add(sum(m.u[t, q] for q in Q) == types[t].count)
    qset, pset = set(Q), set(Pf)
    for pos in sorted(pset | qset):
        terms = [m.x[g, pos] for g in G if pos in pset] + [m.u[t, pos] for t in T if pos in qset]
        if len(terms) > 1:
            m.c.add(sum(terms) <= 1)
    # GPU-to-spine fiber: f[g, t, p, q] = x[g, p] * u[t, q], linearised through its row and column sums
    pairs = [(g, t) for g in G for t in T if w_gpu.get((g, t), 0.0) > 0]
    fidx = [(g, t, p, q) for g, t in pairs for p in Pf for q in Q if p != q and d(p, q) <= reach]
    m.f = pyo.Var(fidx, domain=pyo.NonNegativeReals, bounds=(0, 1))
    by_gtp: dict[tuple, list] = {}
    by_gtq: dict[tuple, list] = {}
    for k in fidx:
        by_gtp.setdefault(k[:3], []).append(m.f[k])
        by_gtq.setdefault((k[0], k[1], k[3]), []).append(m.f[k])
    for g, t in pairs:
        for p in Pf:
            m.c.add(sum(by_gtp.get((g, t, p), [])) == types[t].count * m.x[g, p])
        for q in Q:
            m.c.add(sum(by_gtq.get((g, t, q), [])) == groups[g][1] * m.u[t, q])
    for k in fidx:
        m.c.add(m.f[k] <= m.u[k[1], k[3]])
    # network-to-network fiber inside the hall: h[t, s, q, r] = u[t, q] * u[s, r]
    npairs = [(t, s) for t in T for s in T if t < s and w_net.get((t, s), 0.0) > 0]
    hidx = [(t, s, q, r) for t, s in npairs for q in Q for r in Q if q != r]
    m.h = pyo.Var(hidx, domain=pyo.NonNegativeReals, bounds=(0, 1))
    by_tsq: dict[tuple, list] = {}
    by_tsr: dict[tuple, list] = {}
    for k in hidx:
        by_tsq.setdefault(k[:3], []).append(m.h[k])
        by_tsr.setdefault((k[0], k[1], k[3]), []).append(m.h[k])
    for t, s_ in npairs:
        for q in Q:
            m.c.add(sum(by_tsq.get((t, s_, q), [])) == types[s_].count * m.u[t, q])
            m.c.add(sum(by_tsr.get((t, s_, q), [])) == types[t].count * m.u[s_, q])
    # row loads and every power / cooling limit in every state
    load: dict[int, object] = {r: 0 for r in rows}
    for g in G:
        for p in Pf:
            load[rs_of(p)[0]] = load[rs_of(p)[0]] + gpu_power * m.x[g, p]
    gpu_load = dict(load)  # the GPU racks' part (liquid limits count it alone)
    for t in T:
        for q in Q:
            load[rs_of(q)[0]] = load[rs_of(q)[0]] + types[t].power * m.u[t, q]
    for L in capacity.hall_limits(h, pue, liquid_share):
        if L.rows:
            expr = L.coef * sum(load[r] for r in L.rows) + L.gpu_coef * sum(gpu_load[r] for r in L.rows)
            if not isinstance(expr, (int, float)):
                m.c.add(expr <= L.capacity)
            elif expr > L.capacity:
                return HallResult({}, {}, math.inf, math.nan, "infeasible", time.perf_counter() - t0, 0)
    m.peak = pyo.Var(domain=pyo.NonNegativeReals)
    for r in rows:
        if not isinstance(load[r], (int, float)):
            m.c.add(m.peak >= load[r])
    fiber = sum(w_gpu[g, t] * d(p, q) * m.f[g, t, p, q] for g, t, p, q in fidx)
    fiber = fiber + sum(w_net[t, s_] * d(q, r) * m.h[t, s_, q, r] for t, s_, q, r in hidx)
    fiber = fiber + sum(ext.get(t, 0.0) * grid.to_door(rs_of(q)) * m.u[t, q] for t in T for q in Q if ext.get(t, 0.0))
    m.obj = pyo.Objective(expr=fiber + BALANCE_WEIGHT * m.peak, sense=pyo.minimize)
    r = highs(time_limit).solve(m)
    status = r.termination_condition.name
    if r.best_feasible_objective is None:
        return HallResult({}, {}, math.inf, r.best_objective_bound or math.nan, status, time.perf_counter() - t0, len(fidx))
    r.solution_loader.load_vars()
    gpu = {groups[g][0]: sorted(rs_of(p) for p in Pf if pyo.value(m.x[g, p]) > 0.5) for g in G}
    net = {t: sorted(rs_of(q) for q in Q if pyo.value(m.u[t, q]) > 0.5) for t in T}
    canonical_zones(groups, types, w_gpu, w_net, ext, gpu, net)
    bound = r.best_objective_bound if r.best_objective_bound is not None else r.best_feasible_objective
    return HallResult(gpu, net, float(r.best_feasible_objective), float(bound), status, time.perf_counter() - t0,
                      len(fidx) + len(hidx) + len(Pf) * len(G) + len(Q) * len(T))


def own_types(types: list[NetType], zone: int) -> list[int]:
    """Indices of the network rack types that serve ``zone`` alone, by role."""
    return sorted((t for t in range(len(types)) if types[t].zone == zone), key=lambda t: types[t].role)


def _profile(g: int, groups, types: list[NetType], w_gpu, w_net, ext) -> tuple | None:
    """What the hall model knows of group ``g``'s zone, without its name: its GPU racks, its own
    network racks and every fiber weight they have; None if it has links to another zone's racks."""
    own = own_types(types, groups[g][0])
    shared = [t for t in range(len(types)) if types[t].zone is None]
    others = [t for t in range(len(types)) if t not in own and t not in shared]
    if any(w_gpu.get((g, t), 0.0) for t in others):
        return None
    if any(w_net.get((min(t, u), max(t, u)), 0.0) for t in own for u in others):
        return None
    kinds = tuple((types[t].role, types[t].count, types[t].switches, types[t].power, types[t].weight,
                   w_gpu.get((g, t), 0.0), ext.get(t, 0.0)) for t in own)
    to_shared = tuple(w_gpu.get((g, s), 0.0) for s in shared)
    net_net = tuple(w_net.get((min(t, u), max(t, u)), 0.0) for t in own for u in own + shared if t != u)
    return (groups[g][1], kinds, to_shared, net_net)


def canonical_zones(groups, types: list[NetType], w_gpu, w_net, ext, gpu: dict, net: dict) -> None:
    """Relabel interchangeable zones in place so that the lowest zone holds the first positions.

    Zones whose GPU racks, own network racks and fiber weights are the same are symmetric in the hall
    model: any permutation of them scores the same, and which one the solver returns depends on its
    version and seed. Sorting the zones' position sets and handing them out in zone order gives one
    answer for every solver (byte-identical builds)."""
    classes: dict[tuple, list[int]] = {}
    for g in range(len(groups)):
        prof = _profile(g, groups, types, w_gpu, w_net, ext)
        if prof is not None:
            classes.setdefault(prof, []).append(g)
    for members in classes.values():
        if len(members) < 2:
            continue
        zones = sorted(groups[g][0] for g in members)
        own = {z: own_types(types, z) for z in zones}
        bundles = sorted((gpu[z], [net[t] for t in own[z]]) for z in zones)
        for z, (gp, nets) in zip(zones, bundles):
            gpu[z] = gp
            for t, pos in zip(own[z], nets):
                net[t] = pos

