"""The placement pass: GPU and network racks onto hall positions, as a Pyomo model solved by HiGHS.

A position-level model of a whole 24K-GPU site (tens of thousands of binaries, quadratic fiber terms)
does not close its gap in minutes, so the problem is decomposed along its natural seams:

1. **Zones to halls** (an AI zone never spans halls): each hall's capacity is a small row-level MILP
   (:func:`hall_capacity`: GPU racks per row under every busway, block, cooling and utility limit in
   every failure state). Zones are identical, so filling halls in order up to their capacity
   maximises GPUs placed; the ATSW racks then go round-robin to the halls that hold zones.
2. **Each hall on its own** (:func:`solve_hall`): which position holds which GPU rack and which
   network rack. Fiber between a GPU rack and its zone's spine racks is bilinear in the two
   placements; it is linearised exactly with a transportation-shaped flow ``f[p, q]`` (every GPU rack
   links to every spine rack of its zone, so ``sum_q f = spines * x[p]`` and ``sum_p f = racks *
   u[q]``), whose LP relaxation is tight enough that HiGHS closes the gap at the root on real halls.
   Links that leave the hall (spine to ATSW racks elsewhere) run through the hall door, which makes
   them linear per hall and the decomposition exact for the fiber objective.

Objective, in order: GPUs placed (stage 1: all or a diagnosis), fiber metres (stage 2), and as a tie
breaker the peak row load (spreading load evens the busways and blocks; with 2N dual-corded racks A
and B carry equal halves by construction). HiGHS runs single-threaded with a fixed seed, and ids are
assigned by position order, so the same spec gives the same bytes.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from dataclasses import dataclass, field

import pyomo.environ as pyo
from pyomo.contrib.appsi.solvers import Highs

from ..design import Design
from ..spec.diagnostics import InfeasibleError
from ..spec.models import Family, Hall
from . import capacity, diagnose, naive
from .model import HallGrid, PlacedRack, Placement, Position, rack_fill, site_distance, switches_per_rack

BALANCE_WEIGHT = 1e-6  # metres of fiber per W of peak row load: a tie breaker, never trades fiber
MIP_GAP = 1e-4


# ---------------------------------------------------------------- problem description


@dataclass(frozen=True)
class NetType:
    """Identical network racks of one role (and zone) to place in one hall."""

    role: str
    zone: int | None
    count: int
    switches: int  # per rack
    power: float  # W per rack
    weight: float  # kg per rack


@dataclass(frozen=True)
class HallSlots:
    """The positions of a hall by use: free for GPU racks, reserved for the network, or neither."""

    free: tuple[tuple[int, int], ...]
    network: tuple[tuple[int, int], ...]

    @staticmethod
    def of(h: Hall) -> "HallSlots":
        net = {(r, p) for res in h.reserved if res.purpose == "network" for r in res.rows for p in res.positions}
        other = {(r, p) for res in h.reserved if res.purpose != "network" for r in res.rows for p in res.positions}
        grid = [(r, p) for r in range(1, h.rows + 1) for p in range(1, h.positions_per_row + 1)]
        return HallSlots(tuple(x for x in grid if x not in net and x not in other), tuple(x for x in grid if x in net))


@dataclass(frozen=True)
class Links:
    """Links (fibers) between racks, per rack pair: the weights of the fiber objective."""

    gpu_to_spine: dict  # (zone, role, spine zone) -> links per GPU rack per spine rack switch
    spine_to_core: float  # links per (CTSW switch, ATSW switch) pair
    spine_role: str  # "ctsw" or "fabric"


def links_of(spec) -> Links:
    f = spec.fabric
    if f.family == Family.AI_ZONE:
        down = spec.rack.nics // max(1, spec.rack_type.rtsw_count)
        up = f.rtsw.uplinks if f.rtsw and f.rtsw.uplinks is not None else down
        per_rack = up * spec.rack_type.rtsw_count
        core = 0.0
        if f.atsw and f.atsw.count and spec.zones > 1:
            from ..fabric.sizing import ctsw_ports

            _d, cup = ctsw_ports(spec.racks_per_zone, up, f.ctsw.count, f.atsw.oversubscription or 1.0)
            core = cup / f.atsw.count
        return Links({"per_rack": per_rack / f.ctsw.count}, core, "ctsw")
    return Links({"per_rack": float(spec.rack.nics)}, 0.0, "fabric")


@dataclass
class Figures:
    solver: dict = field(default_factory=dict)


# ---------------------------------------------------------------- HiGHS


def _solver(time_limit: float) -> Highs:
    s = Highs()
    s.config.load_solution = False
    s.config.stream_solver = False
    s.config.time_limit = time_limit
    s.highs_options.update({"threads": 1, "random_seed": 0, "mip_rel_gap": MIP_GAP, "presolve": "on"})
    return s


# ---------------------------------------------------------------- stage 1: hall capacity


def _hall_key(h: Hall) -> tuple:
    """Everything of a hall that matters for its capacity (not its name or where it stands)."""
    return (h.model_copy(update={"name": "x", "origin": (0.0, 0.0)}).model_dump_json(),)


class _Trivial(Exception):
    """A constraint without variables that is false: the model is infeasible as built."""


_CAPACITY: dict[tuple, tuple[float, str]] = {}  # identical halls (the usual case) are solved once


def hall_capacity(h: Hall, pue: float, gpu_power: float, nets: tuple[tuple[float, int], ...], relax: bool = False,
                  kinds: tuple[str, ...] | None = None) -> tuple[float, str]:
    """Most GPU racks hall ``h`` can hold next to ``nets`` network racks ((power W, count), ...), and
    the solver status. With ``relax`` the row counts are continuous (an upper bound for the report);
    ``kinds`` keeps only those limit families ("busway:failure", ...; see diagnose.family)."""
    key = (_hall_key(h), pue, gpu_power, tuple(sorted(nets)), relax, kinds)
    if key not in _CAPACITY:
        if len(_CAPACITY) > 20_000:
            _CAPACITY.clear()
        _CAPACITY[key] = _capacity_model(h, pue, gpu_power, key[3], relax, kinds)
    return _CAPACITY[key]


def _capacity_model(h: Hall, pue: float, gpu_power: float, nets: tuple, relax: bool,
                    kinds: tuple | None) -> tuple[float, str]:
    from .diagnose import family

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
    lims = [L for L in capacity.hall_limits(h, pue) if L.rows and (kinds is None or family(L) in kinds)]
    try:
        for L in lims:
            add(L.coef * sum(load[r] for r in L.rows) <= L.capacity)
    except _Trivial:
        return -1.0, "infeasible"
    m.obj = pyo.Objective(expr=sum(m.n[r] for r in rows), sense=pyo.maximize)
    r = _solver(30.0).solve(m)
    tc = r.termination_condition.name
    if r.best_feasible_objective is None:
        return -1.0, tc
    return float(r.best_feasible_objective if relax else round(r.best_feasible_objective)), tc


# ---------------------------------------------------------------- stage 1: zones to halls


@dataclass(frozen=True)
class Assignment:
    hall_groups: dict[int, list[tuple[int, int]]]  # hall index -> [(zone, GPU racks)]
    plan: list[tuple[str, int | None, int, int, float]]  # network racks (naive.network_rack_plan shape)
    placed_racks: int
    capacity: dict[int, float]  # hall index -> most GPU racks next to its network racks


def _net_of(plan, hall_index: int) -> tuple[tuple[float, int], ...]:
    acc: dict[float, int] = {}
    for _role, _z, hi, _n, pw in plan:
        if hi == hall_index:
            acc[pw] = acc.get(pw, 0) + 1
    return tuple(sorted(acc.items()))


def assign(design: Design, spec=None) -> Assignment:
    """Zones (or, for non-zoned families, racks) to halls in hall order, each hall filled up to what
    its rows can power and cool. Zones are interchangeable, so this maximises what is placed."""
    spec = spec or design.spec
    site = spec.site
    pue = site.power.pue
    P = spec.rack.power
    zoned = spec.fabric.family == Family.AI_ZONE
    halls = site.halls
    if zoned:
        f = spec.fabric
        zone_net = zone_network_power(spec)
        zone_hall: dict[int, int] = {}
        z = 0
        caps: dict[int, float] = {}
        for i, h in enumerate(halls):
            kmax = min(f.zones_per_hall, spec.zones - z, len(HallSlots.of(h).free) // max(1, spec.racks_per_zone))
            k = kmax
            while k > 0:
                nets = _count(zone_net * k)
                need = k * spec.racks_per_zone
                cap, _ = hall_capacity(h, pue, P, nets)
                if cap >= need:
                    break
                k -= 1
            for _ in range(k):
                zone_hall[z] = i
                z += 1
        plan = naive.network_rack_plan(design, zone_hall=zone_hall) if zone_hall else []
        hall_groups = {i: [] for i in range(len(halls))}
        for zz, i in sorted(zone_hall.items()):
            hall_groups[i].append((zz, spec.racks_per_zone))
        for i, h in enumerate(halls):
            caps[i], _ = hall_capacity(h, pue, P, _net_of(plan, i))
        placed = len(zone_hall) * spec.racks_per_zone
        return Assignment(hall_groups, plan, placed, caps)
    # non-zoned: racks fill halls in order; fabric racks follow the GPU racks (apportioned)
    want = [0] * len(halls)
    plan: list = []
    for _ in range(4):
        left = spec.racks
        racks = []
        for i, h in enumerate(halls):
            cap, _ = hall_capacity(h, pue, P, _net_of(plan, i)) if plan else hall_capacity(h, pue, P, ())
            take = max(0, min(left, int(cap)))
            racks.append(take)
            left -= take
        new_plan = naive.network_rack_plan(design, hall_racks=racks)
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
    caps = {i: hall_capacity(h, pue, P, _net_of(plan, i))[0] for i, h in enumerate(halls)}
    return Assignment(hall_groups, plan, sum(want), caps)


def zone_network_power(spec) -> list[float]:
    """Power of each CTSW rack of one zone (W)."""
    f = spec.fabric
    ctsw = spec.switch(f.ctsw.model)
    per = switches_per_rack(ctsw.height_u, ctsw.power, spec.rack_type.power_shelf)
    return [n * ctsw.power for n in rack_fill(f.ctsw.count, per)]


def _count(powers: list[float]) -> tuple[tuple[float, int], ...]:
    acc: dict[float, int] = {}
    for p in powers:
        acc[p] = acc.get(p, 0) + 1
    return tuple(sorted(acc.items()))


# ---------------------------------------------------------------- stage 2: one hall


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
               reach: float, time_limit: float) -> HallResult:
    """Positions for ``groups`` ((zone, GPU racks), ...) and network racks ``types`` in hall ``h``,
    minimising tray metres of fiber.

    ``w_gpu[(g, t)]``: links between one GPU rack of group g and one rack of type t.
    ``w_net[(t, u)]``: links between one rack of type t and one of type u (t < u, both in this hall).
    ``ext[t]``: links from one rack of type t to racks in other halls (routed through the door).
    ``reach``: longest allowed tray run of a GPU-to-spine link (m).
    """
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
    for t in T:
        for q in Q:
            load[rs_of(q)[0]] = load[rs_of(q)[0]] + types[t].power * m.u[t, q]
    for L in capacity.hall_limits(h, pue):
        if L.rows:
            expr = L.coef * sum(load[r] for r in L.rows)
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
    r = _solver(time_limit).solve(m)
    status = r.termination_condition.name
    if r.best_feasible_objective is None:
        return HallResult({}, {}, math.inf, r.best_objective_bound or math.nan, status, time.perf_counter() - t0, len(fidx))
    r.solution_loader.load_vars()
    gpu = {groups[g][0]: sorted(rs_of(p) for p in Pf if pyo.value(m.x[g, p]) > 0.5) for g in G}
    net = {t: sorted(rs_of(q) for q in Q if pyo.value(m.u[t, q]) > 0.5) for t in T}
    bound = r.best_objective_bound if r.best_objective_bound is not None else r.best_feasible_objective
    return HallResult(gpu, net, float(r.best_feasible_objective), float(bound), status, time.perf_counter() - t0,
                      len(fidx) + len(hidx) + len(Pf) * len(G) + len(Q) * len(T))


# ---------------------------------------------------------------- the pass


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


def place(design: Design) -> Placement:
    t_start = time.perf_counter()
    spec = design.spec
    site = spec.site
    pue = site.power.pue
    halls = site.halls
    grids = {h.name: HallGrid(h) for h in halls}
    opts = site.placement
    diagnose.check_floor(spec)
    if opts.method == "naive":
        base = naive.place(design)
        return Placement(base.racks, base.method, {**figures(design, base.racks, grids), "naive": None})
    asg = assign(design)
    if asg.placed_racks < spec.racks:
        raise InfeasibleError(diagnose.explain(design, asg))
    medium, reach = uplink_reach(spec)
    links = links_of(spec)
    P = spec.rack.power
    empty = spec.rack_type.weight
    # network rack types per hall, and the core switches in each hall (for links through the door)
    types_by_hall: dict[int, list[NetType]] = {i: [] for i in range(len(halls))}
    acc: dict[tuple, list] = {}
    for role, zone, hi, n, power in asg.plan:
        acc.setdefault((hi, role, zone, n, power), []).append(1)
    for (hi, role, zone, n, power), lst in sorted(acc.items(), key=lambda kv: (kv[0][0], kv[0][1], -1 if kv[0][2] is None else kv[0][2], kv[0][3])):
        swm = spec.switch(spec.fabric.ctsw.model if role == "ctsw" else (spec.fabric.atsw.model if role == "atsw" else spec.fabric.switch))
        types_by_hall[hi].append(NetType(role, zone, len(lst), n, power, empty + n * swm.weight))
    core_sw_in = {i: sum(t.count * t.switches for t in ts if t.role == "atsw") for i, ts in types_by_hall.items()}
    spine_sw_in = {i: sum(t.count * t.switches for t in ts if t.role == "ctsw") for i, ts in types_by_hall.items()}
    total_core = sum(core_sw_in.values())
    total_spine = sum(spine_sw_in.values())
    results: dict[int, HallResult] = {}
    hall_rows = []
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
                    ext[t] = ty.switches * links.spine_to_core * (total_core - core_sw_in[i])
                    for s, ty2 in enumerate(types):
                        if ty2.role == "atsw":
                            w_net[min(t, s), max(t, s)] = ty.switches * ty2.switches * links.spine_to_core
                elif ty.role == "atsw":
                    ext[t] = ty.switches * links.spine_to_core * (total_spine - spine_sw_in[i])
        res = solve_hall(h, pue, groups, types, P, w_gpu, w_net, ext, reach - 2 * h.tray_height,
                         opts.time_limit)
        if res.objective == math.inf:
            raise InfeasibleError(diagnose.explain(design, asg, hall_index=i, reach=(medium, reach)))
        results[i] = res
        hall_rows.append({"hall": h.name, "status": res.status, "objective_m": res.objective, "bound_m": res.bound,
                          "seconds": res.seconds, "variables": res.variables})
    racks = _racks(spec, asg, types_by_hall, results, halls)
    fig = figures(design, racks, grids)
    # the bound: per-hall bounds plus the door-to-door legs of links between halls (fixed by stage 1)
    # hall objectives differ from the fiber total by the door-to-door legs (a constant of stage 1),
    # so the hall gaps add up to the gap of the total
    obj = sum(r.objective for r in results.values())
    bnd = sum(r.bound for r in results.values())
    lower = fig["fiber_m"]["total"] - (obj - bnd)
    gap = (fig["fiber_m"]["total"] - lower) / fig["fiber_m"]["total"] if fig["fiber_m"]["total"] > 0 else 0.0
    fig["solver"] = {
        "method": "pyomo+highs (zones to halls by row-level MILP, then one MILP per hall)",
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
        "gpu_rack_upper_bound": _upper_bound(spec),
        "hall_capacity_racks": {halls[i].name: c for i, c in sorted(asg.capacity.items())},
    }
    try:
        base = naive.place(design)
        fig["naive"] = figures(design, base.racks, grids)
    except InfeasibleError as e:  # the baseline may not even find positions; say so
        fig["naive"] = {"error": list(e.diagnosis)}
    from . import powercap

    fig["powercap"] = powercap.tradeoff(spec, asg)
    return Placement(tuple(racks), "optimized", fig)


def _upper_bound(spec) -> int:
    """GPU racks the site could hold at most: LP relaxation of every hall's capacity (network racks
    of a full hall share), capped by the site utility."""
    pue = spec.site.power.pue
    total = 0.0
    for h in spec.site.halls:
        cap, _ = hall_capacity(h, pue, spec.rack.power, (), relax=True)
        total += max(0.0, cap)
    site = spec.site.power.utility_capacity / pue / spec.rack.power
    return int(math.floor(min(total, site) + 1e-9))


def _racks(spec, asg: Assignment, types_by_hall, results, halls) -> list[PlacedRack]:
    """PlacedRacks with the ids of the naive fill: index by position order within zone / role."""
    zoned = spec.fabric.family == Family.AI_ZONE
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


# ---------------------------------------------------------------- figures (optimised and naive alike)


def figures(design: Design, racks, grids) -> dict:
    """Fiber, row loads, stranded power and utilisation of every limit in every state."""
    spec = design.spec
    pue = spec.site.power.pue
    links = links_of(spec)
    gpu = [r for r in racks if r.kind == "gpu"]
    nets = [r for r in racks if r.kind == "network"]
    switches = {r.id: r.switches or max(1, round(r.power / _sw_power(spec, r.role))) for r in nets}
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
        for s in spines:
            for c in cores:
                spine_core += links.spine_to_core * switches[s.id] * switches[c.id] * dd(s.position, c.position)
    rows = []
    usage_rows = []
    for h in spec.site.halls:
        load = {r: 0.0 for r in range(1, h.rows + 1)}
        for r in racks:
            if r.position.hall == h.name:
                load[r.position.row] += r.power
        lim = capacity.row_power_limit(h, pue)
        for r in range(1, h.rows + 1):
            rows.append({"hall": h.name, "row": r, "load_w": load[r], "limit_w": lim[r],
                         "stranded_w": max(0.0, lim[r] - load[r]) if math.isfinite(lim[r]) else 0.0})
        for u in capacity.usage(h, pue, load):
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


def _sw_power(spec, role: str) -> float:
    f = spec.fabric
    name = f.ctsw.model if role == "ctsw" else (f.atsw.model if role == "atsw" else f.switch)
    return spec.switch(name).power


def peak_memory(fn, *args):
    """(result, peak MiB) of ``fn(*args)`` under tracemalloc (Python allocations; for the benchmark)."""
    tracemalloc.start()
    try:
        out = fn(*args)
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak / 2**20
