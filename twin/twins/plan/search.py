"""The plan search: enumerate, prune by rule and memory, score with the fast stage by branch and bound,
re-time the leaders with the full job twin.

Branch and bound: every plan has a lower bound on its step (its compute, bubble and stragglers with
every collective free, :func:`twin.twins.plan.fast.lower_bound`), exact from the compute table. Plans are
scored by the fast stage in the order of their bound, in chunks; the search stops when the next bound
exceeds the ``keep``-th best fast step found, so no unscored plan could enter the leaders. A chunk is
scored in two passes: first with its model-parallel collectives (TP, CP, EP, PP) and the data-parallel
traffic free, a second, tighter lower bound; then in full, only the plans that bound leaves in the running
(before there are leaders, the chunk's most promising plans are scored first, to make them). Once there are
leaders, a collective not yet timed on the whole fabric enters the second bound first as its first group
timed alone on an idle fabric (a few GPUs' flow simulation: the other groups' traffic can only slow it); a
plan that bound already puts behind the leaders keeps it and is never timed in full. The
data-parallel collectives of a large job are the costliest to time (flow simulations over every DP group
at once), and a plan whose tensor-parallel exchanges alone lose never needs them. The plans it skips are counted (``bounded``): they were considered and shown slower, not
left out.

The leaders (``top`` best by the fast stage) are re-timed by the full job twin
(:func:`twin.twins.workload.jobs.simulate_job`) on the same fabric, and the two orders compared by
Spearman's rank correlation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from twin.compiler.resolve import memory
from twin.twins.net.fluid import EVENT_BATCH, LARGE_WINDOW
from twin.twins.plan import fast, parallel, tables
from twin.twins.plan.problem import Problem, row
from twin.twins.plan.space import ORDERS, RULES, Space

CHUNK = 64  # plans scored in the first round of a class; each round doubles
# the idle-fabric bound is taken this much lower: the fluid model may time a finish late by its event windows
# (twin/twins/net/fluid.py: flows ending within 0.1% together, then windows of 2% of the elapsed time), so one
# group alone might come out up to that much slower than the same group among the others
ALONE_SLACK = LARGE_WINDOW + EVENT_BATCH


@dataclass
class Searched:
    """A searched space: the surviving columns, their bounds and (where scored) fast-stage parts."""

    problem: Problem
    space: Space
    cols: dict[str, np.ndarray]  # plans that pass the rules and fit in memory
    memory: dict[str, np.ndarray]
    bound: np.ndarray
    scored: np.ndarray  # bool: the fast stage scored this plan
    parts: dict[str, np.ndarray]  # fast-stage parts (NaN where not scored)
    pruned: dict[str, int]
    coll: tables.Collectives
    tight: np.ndarray  # the second bound (the step with data-parallel traffic free), NaN where not taken
    exact: np.ndarray  # bool: ``tight`` timed on the whole fabric (else, where taken, the idle-fabric bound)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def feasible(self) -> int:
        return len(self.bound)

    @property
    def step(self) -> np.ndarray:
        return self.parts["step_s"]

    def best(self, mask: np.ndarray | None = None, k: int = 1) -> np.ndarray:
        """Indices of the ``k`` best scored plans (under ``mask``), fastest first; between equal steps the one
        that needs less memory, then the first enumerated."""
        ok = self.scored if mask is None else self.scored & mask
        idx = np.flatnonzero(ok & np.isfinite(self.step))  # a plan with a refused collective is never a pick
        return idx[np.lexsort((idx, self.memory["total"][idx], self.step[idx]))][:k]


def smallest_shortfall(p: Problem, space: Space, mem: dict[str, np.ndarray]) -> str:
    """Why nothing fits: the plan that comes closest, and by how much."""
    i = int(np.argmin(mem["total"]))
    budget = p.hbm - memory.RESERVE_BYTES
    c = row(space.cols, i)
    return (f"no plan fits in {p.hbm / 1e9:.0f} GB: the smallest need is {mem['total'][i] / 1e9:.1f} GB per GPU "
            f"(TP {c['tp']} CP {c['cp']} PP {c['pp']} DP {c['dp']}, micro-batch {c['mb']}), "
            f"{(mem['total'][i] - budget) / 1e9:.1f} GB over the {budget / 1e9:.0f} GB left after the reserve")


def search(p: Problem, fixed: dict | None = None, keep: int = 10, mask_fn=None, progress=None, workers: int | None = None) -> Searched:
    """Search the plans of ``p`` (pins ``fixed``); score until the ``keep`` best are proven, and also the
    best of every class ``mask_fn(cols, memory) -> {name: mask}`` names; collectives timed on ``workers`` processes
    (default: every core the process may use; :mod:`twin.twins.plan.parallel`). ``progress(class, scored,
    feasible, best step, best plan, considered=, of=, left=, eta_s=)`` is called after every chunk
    (:func:`_outlook`)."""
    sec = {}
    t0 = time.perf_counter()
    space = Space.of(p.axes(fixed))
    sec["enumerate_s"] = time.perf_counter() - t0
    pruned = dict(space.pruned)
    if not space.size and not space.enumerated:
        raise ValueError(f"no plan has the pinned values ({', '.join(f'{k}={v}' for k, v in (fixed or {}).items())}) on {p.gpus:,} GPUs: "
                         "a pinned TP, CP, PP, DP or EP divides the GPU count, and the axes' product is the GPU count")
    if not space.size:
        raise ValueError(_why_empty(space))
    t0 = time.perf_counter()
    mem = tables.memory_table(p, space.cols)
    fit = mem["total"] <= p.hbm - memory.RESERVE_BYTES
    pruned["memory"] = int((~fit).sum())
    if not fit.any():
        raise ValueError(smallest_shortfall(p, space, mem))
    cols = {k: v[fit] for k, v in space.cols.items()}
    mem = {k: v[fit] for k, v in mem.items()}
    sec["memory_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    comp = tables.compute_table(p, cols)
    bound = fast.lower_bound(p, cols, comp)
    sec["compute_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n = len(bound)
    parts = {k: np.full(n, np.nan) for k in (*fast.PARTS, "step_s", "exposed_s", "straggler_s", "dp_total_s")}
    scored = np.zeros(n, bool)
    coll = tables.Collectives(p)
    s = Searched(p, space, cols, mem, bound, scored, parts, pruned, coll, np.full(n, np.nan), np.zeros(n, bool), sec)
    masks = {"all": np.ones(n, bool), **(mask_fn(cols, mem) if mask_fn else {})}
    with parallel.Timer(coll, workers) as timer:
        for name, mask in masks.items():
            _branch_and_bound(s, comp, mask, keep if name == "all" else 1, progress, name, timer)
    sec["fast_s"] = time.perf_counter() - t0
    return s


def _branch_and_bound(s: Searched, comp: dict, mask: np.ndarray, keep: int, progress, name: str, timer) -> None:
    order = np.flatnonzero(mask)
    order = order[np.argsort(s.bound[order], kind="stable")]
    pos, chunk = 0, CHUNK
    started = time.perf_counter()
    while pos < len(order):
        best = s.best(mask, keep)
        if len(best) >= keep and s.bound[order[pos]] > s.step[best[-1]]:
            break
        idx = order[pos:pos + chunk]
        idx = idx[~s.scored[idx]]
        pos += chunk
        chunk *= 2
        if not len(idx):
            continue
        if len(best) < keep:  # no leaders yet: the chunk's most promising plans are scored first (_first)
            first = _first(s, comp, idx, keep - len(best))
            _second_bound(s, comp, first, timer)
            _score(s, comp, first[~s.scored[first]], timer)
            best = s.best(mask, keep)
        _second_bound(s, comp, idx, timer, s.step[best[-1]] if len(best) >= keep else None)  # the model-parallel collectives first
        if len(best) >= keep:
            idx = idx[s.tight[idx] <= s.step[best[-1]]]
        _score(s, comp, idx[~s.scored[idx]], timer)
        if progress is not None:
            b = s.best(None, 1)
            progress(name, int(s.scored.sum()), len(s.bound), float(s.step[b[0]]) if len(b) else None, row(s.cols, int(b[0])) if len(b) else None,
                     **_outlook(s, order, min(pos, len(order)), mask, keep, time.perf_counter() - started))


def _score(s: Searched, comp: dict, idx: np.ndarray, timer) -> None:
    """The fast stage on the plans ``idx``, their new collectives timed on every core first."""
    if not len(idx):
        return
    sub, csub = {k: v[idx] for k, v in s.cols.items()}, {k: v[idx] for k, v in comp.items()}
    timer.before(lambda: fast.evaluate(s.problem, sub, s.coll, csub))
    ev = fast.evaluate(s.problem, sub, s.coll, csub)
    for k in s.parts:
        s.parts[k][idx] = ev[k]
    s.scored[idx] = True


def _outlook(s: Searched, order: np.ndarray, pos: int, mask: np.ndarray, keep: int, elapsed: float) -> dict:
    """How far a class's branch and bound has come: plans considered, plans not yet considered whose first
    bound is still under the leaders' step (all of them until there are leaders), and the time left at the
    pace so far (an estimate: the collectives timed early serve the plans after them)."""
    best = s.best(mask, keep)
    rest = s.bound[order[pos:]]
    left = int((rest <= s.step[best[-1]]).sum()) if len(best) >= keep else len(rest)
    return {"considered": pos, "of": len(order), "left": left, "eta_s": elapsed / max(pos, 1) * left}


def _first(s: Searched, comp: dict, idx: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` plans of ``idx`` to score before there are leaders: the most promising by the idle-fabric bound,
    among those in the job's own rank order where the chunk has some (a plan whose groups cross the fabric's
    oversubscribed tier in their thousands can look best with one group alone; its full timing then makes a
    loose first limit). Only the search's speed depends on this choice, never its result."""
    own = idx[s.cols["order"][idx] == ORDERS.index(s.problem.base.dims)]
    pool = own if len(own) else idx
    return pool[np.argsort(_alone_bound(s, comp, pool, True), kind="stable")][:k]


def _alone_bound(s: Searched, comp: dict, idx: np.ndarray, data_parallel: bool = False) -> np.ndarray:
    """The step of the plans ``idx`` (by default with the data-parallel traffic free), every collective not
    timed yet on the whole fabric timed by its first group alone (a lower bound: the other groups' traffic
    only slows it; a step never falls as a collective's time grows)."""
    sub, csub = {k: v[idx] for k, v in s.cols.items()}, {k: v[idx] for k, v in comp.items()}
    s.coll.optimistic = True
    try:
        return fast.evaluate(s.problem, sub, s.coll, csub, data_parallel=data_parallel)["step_s"]
    finally:
        s.coll.optimistic = False


def _second_bound(s: Searched, comp: dict, idx: np.ndarray, timer, limit: float | None = None) -> None:
    """The second bound of the plans of ``idx`` (their step with the data-parallel traffic free), taken once
    per plan: a plan another class's search reaches again keeps it. With the leaders' step ``limit``, the
    collectives not timed yet are first bounded by one group of each on an idle fabric (a flow simulation of a
    few GPUs instead of every group at once); a plan that bound puts over ``limit`` keeps it, and what only
    such plans need is never timed on the whole fabric (a TP group spread over pods: thousands of groups
    crossing the aggregation tier at once, to rule out a plan its own NICs already rule out)."""
    new = idx[~s.exact[idx]]
    if limit is not None and len(new):
        rough = new[np.isnan(s.tight[new])]
        s.tight[rough] = _alone_bound(s, comp, rough) * (1 - ALONE_SLACK)
        new = new[s.tight[new] <= limit]  # a plan the idle-fabric bound leaves under the leaders is timed in full
    if len(new):
        sub, csub = {k: v[new] for k, v in s.cols.items()}, {k: v[new] for k, v in comp.items()}
        timer.before(lambda: fast.evaluate(s.problem, sub, s.coll, csub, data_parallel=False))
        s.tight[new] = fast.evaluate(s.problem, sub, s.coll, csub, data_parallel=False)["step_s"]
        s.exact[new] = True


def _why_empty(space: Space) -> str:
    worst = max(space.pruned, key=lambda k: space.pruned[k])
    return (f"no plan passes the rules: {space.enumerated:,} plans enumerated, most pruned because "
            f"{RULES[worst]} ({space.pruned[worst]:,})")


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two orders (average ranks for ties); 1.0 for fewer than 2 items."""
    if len(a) < 2:
        return 1.0

    def ranks(x):
        o = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[o] = np.arange(len(x))
        for v in np.unique(x):  # ties share their mean rank
            t = x == v
            r[t] = r[t].mean()
        return r

    ra, rb = ranks(np.asarray(a, float)), ranks(np.asarray(b, float))
    if ra.std() == 0 or rb.std() == 0:
        return 1.0
    return float(np.corrcoef(ra, rb)[0, 1])
