"""Placement stage 2: one hall's MILP, which position holds which GPU rack and which network rack
(built as arrays, :class:`~twin.compiler.place.solver.Milp`, and solved by HiGHS).

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

import numpy as np

from twin.compiler.place import capacity
from twin.compiler.place.model import HallGrid
from twin.compiler.place.solver import Milp
from twin.compiler.resolve.pairs import pair_slots
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
               reach: float, time_limit: float, liquid_share: float = 0.0, span: int = 1) -> HallResult:
    """Positions for ``groups`` ((zone, GPU racks), ...) and network racks ``types`` in hall ``h``,
    minimising tray metres of fiber.

    ``w_gpu[(g, t)]``: links between one GPU rack of group g and one rack of type t.
    ``w_net[(t, u)]``: links between one rack of type t and one of type u (t < u, both in this hall).
    ``ext[t]``: links from one rack of type t to racks in other halls (routed through the door).
    ``reach``: longest allowed tray run of a GPU-to-spine link (m).
    ``span`` 2: GPU racks come in pairs (one system over two racks) on neighbouring positions of a row.

    Columns: ``x[g, p]`` (group g's GPU rack at free position p), ``u[t, q]`` (a rack of type t at
    position q), the flows ``f`` and ``h`` below and the peak row load. Rows, in order: racks per group
    and per type, one rack per position, the GPU-to-spine flow's row and column sums, ``f <= u``, the
    network-to-network flow's sums, every power and cooling limit, the peak.
    """
    t0 = time.perf_counter()
    grid = HallGrid(local(h))
    slots = HallSlots.of(h)
    n_net = sum(t.count for t in types)
    ppr = h.positions_per_row

    def pid(rs: tuple[int, int]) -> int:  # integer position ids: (row, slot) in reading order
        return (rs[0] - 1) * ppr + rs[1] - 1

    def rs_of(i: int) -> tuple[int, int]:
        return (i // ppr + 1, i % ppr + 1)

    Pf = [pid(x) for x in slots.free]
    Q = [pid(x) for x in slots.network] + (Pf if n_net > len(slots.network) else [])
    nG, nT, nP, nQ = len(groups), len(types), len(Pf), len(Q)
    count = np.array([t.count for t in types], float)
    racks = np.array([n for _z, n in groups], float)
    m = Milp()
    x = m.add_cols(nG * nP, 0, 1, integer=True).reshape(nG, nP)
    u = m.add_cols(nT * nQ, 0, 1, integer=True).reshape(nT, nQ)
    m.add_rows([nP] * nG, x.ravel(), 1.0, racks, racks)
    m.add_rows([nQ] * nT, u.ravel(), 1.0, count, count)
    # at most one rack per position
    free_at = {p: i for i, p in enumerate(Pf)}
    net_at = {q: j for j, q in enumerate(Q)}
    lengths, cols = [], []
    for pos in sorted(free_at.keys() | net_at.keys()):
        terms = [x[g, free_at[pos]] for g in range(nG)] if pos in free_at else []
        terms += [u[t, net_at[pos]] for t in range(nT)] if pos in net_at else []
        if len(terms) > 1:
            lengths.append(len(terms))
            cols.extend(terms)
    m.add_rows(lengths, cols, 1.0, None, 1.0)
    if span > 1 and nG:
        _pair_rows(m, h, x, Pf, free_at, rs_of, pid)
    D = grid.distances([rs_of(p) for p in Pf], [rs_of(q) for q in Q])
    # GPU-to-spine fiber: f[g, t, p, q] = x[g, p] * u[t, q] for (p, q) within reach, linearised
    # through its row and column sums
    pairs = [(g, t) for g in range(nG) for t in range(nT) if w_gpu.get((g, t), 0.0) > 0]
    fp, fq = np.nonzero((np.array(Pf)[:, None] != np.array(Q)[None, :]) & (D <= reach))
    nf = len(fp)
    f = m.add_cols(len(pairs) * nf, 0, 1).reshape(len(pairs), nf)
    by_q = np.lexsort((fp, fq))
    for k, (g, t) in enumerate(pairs):
        _flow_sums(m, f[k], fp, x[g], count[t], nP)
        _flow_sums(m, f[k][by_q], fq[by_q], u[t], racks[g], nQ)
    if pairs:
        ends = u[np.repeat([t for _g, t in pairs], nf), np.tile(fq, len(pairs))]
        m.add_rows(np.full(len(pairs) * nf, 2), np.column_stack([f.ravel(), ends]).ravel(), np.tile([1.0, -1.0], len(pairs) * nf),
                   None, 0.0)
    # network-to-network fiber inside the hall: h[t, s, q, r] = u[t, q] * u[s, r], q != r
    npairs = [(t, s_) for t in range(nT) for s_ in range(nT) if t < s_ and w_net.get((t, s_), 0.0) > 0]
    QA, QB = np.nonzero(~np.eye(nQ, dtype=bool))
    hv = m.add_cols(len(npairs) * len(QA), 0, 1).reshape(len(npairs), len(QA))
    by_r = np.lexsort((QA, QB))
    for k, (t, s_) in enumerate(npairs):
        _net_flow_sums(m, hv[k], QA, QB, by_r, u[t], u[s_], count[s_], count[t], nQ)
    # row loads and every power / cooling limit in every state
    row_of_p = np.array([rs_of(p)[0] for p in Pf], int)
    row_of_q = np.array([rs_of(q)[0] for q in Q], int)
    power = np.array([t.power for t in types], float)
    load: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # row: columns, watts, GPU-rack watts (liquid limits)
    for r in range(1, h.rows + 1):
        ip, jq = np.flatnonzero(row_of_p == r), np.flatnonzero(row_of_q == r)
        gpu_w = np.full(nG * len(ip), gpu_power)
        load[r] = (np.concatenate([x[:, ip].ravel(), u[:, jq].ravel()]), np.concatenate([gpu_w, np.repeat(power, len(jq))]),
                   np.concatenate([gpu_w, np.zeros(nT * len(jq))]))
    lengths, cols, vals, caps = [], [], [], []
    for L in capacity.hall_limits(h, pue, liquid_share):
        if not L.rows:
            continue
        c = np.concatenate([load[r][0] for r in L.rows])
        if not len(c):  # no position in these rows: a constant 0 against the limit
            if L.coef * 0 > L.capacity:
                return HallResult({}, {}, math.inf, math.nan, "infeasible", time.perf_counter() - t0, 0)
            continue
        lengths.append(len(c))
        cols.append(c)
        vals.append(np.concatenate([L.coef * load[r][1] + L.gpu_coef * load[r][2] for r in L.rows]))
        caps.append(L.capacity)
    if lengths:
        m.add_rows(lengths, np.concatenate(cols), np.concatenate(vals), None, np.array(caps))
    peak = m.add_cols(1, 0, np.inf)[0]
    busy = [r for r in range(1, h.rows + 1) if len(load[r][0])]
    if busy:
        m.add_rows([len(load[r][0]) + 1 for r in busy], np.concatenate([np.append(load[r][0], peak) for r in busy]),
                   np.concatenate([np.append(load[r][1], -1.0) for r in busy]), None, 0.0)
    # objective: tray metres of fiber, then the peak row load as a tie breaker
    for k, (g, t) in enumerate(pairs):
        m.cost(f[k], w_gpu[g, t] * D[fp, fq])
    if npairs:
        DQ = grid.distances([rs_of(q) for q in Q], [rs_of(q) for q in Q])
        for k, (t, s_) in enumerate(npairs):
            m.cost(hv[k], w_net[t, s_] * DQ[QA, QB])
    door = np.array([grid.to_door(rs_of(q)) for q in Q], float)
    for t in range(nT):
        if ext.get(t, 0.0):
            m.cost(u[t], ext[t] * door)
    m.cost([peak], [BALANCE_WEIGHT])
    r = m.solve(time_limit)
    if r.x is None:
        return HallResult({}, {}, math.inf, r.bound or math.nan, r.status, time.perf_counter() - t0, nf * len(pairs))
    gpu = {groups[g][0]: sorted(rs_of(Pf[i]) for i in np.flatnonzero(r.x[x[g]] > 0.5)) for g in range(nG)}
    net = {t: sorted(rs_of(Q[j]) for j in np.flatnonzero(r.x[u[t]] > 0.5)) for t in range(nT)}
    canonical_zones(groups, types, w_gpu, w_net, ext, gpu, net)
    return HallResult(gpu, net, r.objective, r.bound, r.status, time.perf_counter() - t0,
                      nf * len(pairs) + len(QA) * len(npairs) + nP * nG + nQ * nT)


def local(h: Hall) -> Hall:
    """``h`` with its origin at (0, 0): the hall model measures tray runs inside the hall and to its door,
    where the hall stands on the site changes no length, and with hall-local coordinates not even a
    float's last bit, so that halls of one floor plan pose one model (:func:`problem_key`)."""
    return h if h.origin == (0.0, 0.0) else h.model_copy(update={"origin": (0.0, 0.0)})


def _zones(groups: list[tuple[int, int]], types: list[NetType]) -> list[int]:
    """The zones the hall model names (its GPU groups' and its network racks'), in order."""
    return sorted({z for z, _n in groups} | {t.zone for t in types if t.zone is not None})


def problem_key(h: Hall, pue: float, groups: list[tuple[int, int]], types: list[NetType], gpu_power: float,
                w_gpu: dict, w_net: dict, ext: dict, reach: float, time_limit: float, liquid_share: float = 0.0,
                span: int = 1) -> tuple:
    """Everything :func:`solve_hall` reads, as a hashable key, less what its model does not depend on: the
    hall's name and origin (:func:`local`) and the zones' labels, which it only sorts and compares (each
    is replaced by its rank among the hall's zones). Two halls with equal keys pose the same MILP, the
    same columns, rows and costs in the same order; HiGHS (one thread, a fixed seed) solves it to the
    same answer, so one solve serves both (:func:`relabel`)."""
    rank = {z: k for k, z in enumerate(_zones(groups, types))}
    return (repr(h.model_dump(exclude={"name", "origin"})), pue, tuple((rank[z], n) for z, n in groups),
            tuple((t.role, None if t.zone is None else rank[t.zone], t.count, t.switches, t.power, t.weight) for t in types),
            gpu_power, tuple(sorted(w_gpu.items())), tuple(sorted(w_net.items())), tuple(sorted(ext.items())), reach,
            time_limit, liquid_share, span)


def relabel(res: HallResult, groups: list[tuple[int, int]], types: list[NetType], solved_groups: list[tuple[int, int]],
            solved_types: list[NetType], seconds: float) -> HallResult:
    """The result of a hall whose :func:`problem_key` equals that of the solved hall (``solved_groups``,
    ``solved_types``), for this hall's zones: the same positions, each zone of the solved hall handed to
    the zone of the same rank here; the solver's figures are the model's, ``seconds`` this hall's own."""
    to = dict(zip(_zones(solved_groups, solved_types), _zones(groups, types)))
    return HallResult({to[z]: list(p) for z, p in res.gpu.items()}, {t: list(p) for t, p in res.net.items()},
                      res.objective, res.bound, res.status, seconds, res.variables)


def solve_halls(problems: dict[int, tuple], names: list[str]) -> tuple[dict[int, HallResult], list[dict]]:
    """:func:`solve_hall` for each hall's arguments (``problems[i]``, in hall order), each distinct problem
    once: a hall whose :func:`problem_key` a hall before it had takes that hall's answer for its own zones
    (the eight halls of a Meta building, one floor plan with one AI zone each, are one MILP). Returns the
    results and a row of solver figures per hall (``same_model_as``: the hall whose solve it took); stops
    after the first hall that does not fit."""
    results: dict[int, HallResult] = {}
    rows: list[dict] = []
    solved: dict[tuple, int] = {}  # problem key -> the hall solved for it
    for i, problem in problems.items():
        t0 = time.perf_counter()
        key = problem_key(*problem)
        row = {"hall": names[i]}
        if key in solved:
            first = solved[key]
            res = relabel(results[first], problem[2], problem[3], problems[first][2], problems[first][3], time.perf_counter() - t0)
            row["same_model_as"] = names[first]
        else:
            res = solve_hall(*problem)
            solved[key] = i
        results[i] = res
        rows.append({**row, "status": res.status, "objective_m": res.objective, "bound_m": res.bound,
                     "seconds": res.seconds, "variables": res.variables})
        if res.objective == math.inf:
            break
    return results, rows


def _flow_sums(m: Milp, flow: np.ndarray, at: np.ndarray, ends: np.ndarray, per: float, n: int) -> None:
    """Rows ``sum(flow at k) - per * ends[k] == 0`` for k < n (``at``: each flow column's k, sorted);
    a k without flow has ``per * ends[k] == 0`` (the sign Pyomo wrote it with: same model, same solution)."""
    cnt = np.bincount(at, minlength=n)
    key = np.concatenate([2 * at, 2 * np.arange(n) + 1])
    order = np.argsort(key, kind="stable")
    cols = np.concatenate([flow, ends])[order]
    vals = np.concatenate([np.ones(len(flow)), np.where(cnt > 0, -per, per)])[order]
    m.add_rows(cnt + 1, cols, vals, 0.0, 0.0)


def _net_flow_sums(m: Milp, hv, QA, QB, by_r, ut, us, count_s: float, count_t: float, nQ: int) -> None:
    """For each position q: ``sum_r h[q, r] == count_s * u[t, q]`` and ``sum_r h[r, q] == count_t * u[s, q]``."""
    a_at, b_at = QA, QB[by_r]
    key = np.concatenate([4 * a_at, 4 * np.arange(nQ) + 1, 4 * b_at + 2, 4 * np.arange(nQ) + 3])
    order = np.argsort(key, kind="stable")
    sign = -1.0 if nQ > 1 else 1.0
    cols = np.concatenate([hv, ut, hv[by_r], us])[order]
    vals = np.concatenate([np.ones(len(hv)), np.full(nQ, sign * count_s), np.ones(len(hv)), np.full(nQ, sign * count_t)])[order]
    m.add_rows(np.full(2 * nQ, nQ), cols, vals, 0.0, 0.0)


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


def _pair_rows(m: Milp, h: Hall, x: np.ndarray, Pf: list[int], free_at: dict[int, int], rs_of, pid) -> None:
    """A rack pair's two racks together: on each pair of neighbouring free positions a group holds both or
    neither (x[g, a] - x[g, b] = 0); a free position in no pair holds no GPU rack."""
    pairs = pair_slots(h, [rs_of(p) for p in Pf])
    paired = {pid(p) for pair in pairs for p in pair}
    nG = x.shape[0]
    cols = [c for a, b in pairs for g in range(nG) for c in (x[g, free_at[pid(a)]], x[g, free_at[pid(b)]])]
    if cols:
        m.add_rows([2] * (len(cols) // 2), cols, np.tile([1.0, -1.0], len(cols) // 2), 0.0, 0.0)
    lone = [x[g, free_at[p]] for p in Pf if p not in paired for g in range(nG)]
    if lone:
        m.add_rows([1] * len(lone), lone, 1.0, None, 0.0)
