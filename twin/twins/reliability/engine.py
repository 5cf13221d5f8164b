"""The campaign Monte Carlo: one training job over a horizon, ``runs`` independent runs at once.

Failures arrive in wall time as independent Poisson processes, one per mode (a catalog class on one
role or tier of the job's footprint). Hardware fails whether or not the job is running, which is how
Llama 3 counted Table 5 over 54 days of wall time; an arrival while the job is down is found when it
restarts and stops it again (a failed restart is an interruption too).

Per event, vectorised over runs (the k-th event of every run in one numpy step):

1. the job ran from its last start to the event: checkpoint cycles of ``interval`` compute then
   ``stall``; the compute since the last *durable* checkpoint is lost (async: a checkpoint is durable
   ``lag`` after its stall ends);
2. a hard failure hangs the job for ``detection`` (a straggler instead runs it ``slowdown`` x slower for
   ``detection``; planned maintenance first writes a final checkpoint and loses nothing);
3. the failed servers go to repair (``repair`` s); the job swaps them for hot spares, or waits until
   enough repairs finish when the pool is empty (``spares=None`` is an unlimited pool);
4. maintenance, swap, restart and restore, then the job runs again.

Non-interrupting modes (a spine or fabric cable) slow the job by their ``slowdown`` while repaired.
Every run's wall time is split into buckets that sum to the horizon exactly; ETTR = useful / horizon.

Closed forms the tests hold it to: no failures -> ETTR = interval / (interval + stall) at whole cycles;
one server mode, zero pool, no overheads -> ETTR = exp(-rate x repair) (the probability that no server
is in repair, M/G/inf); Young/Daly's interval near the swept optimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.twins.reliability.components import Mode
from twin.twins.reliability.cost import cells
from twin.twins.workload.timeline import Event

BUCKETS = ("useful", "checkpoint", "lost", "detection", "spare_wait", "maintenance", "restart", "restore",
           "straggling", "degraded")
KINDS = ("restart", "swap", "straggle", "planned", "degrade")
RESTART, SWAP, STRAGGLE, PLANNED, DEGRADE = range(5)


@dataclass(frozen=True)
class Plan:
    horizon: float  # s of wall time
    runs: int
    seed: int
    interval: float  # compute between checkpoints, s (> 0)
    stall: float  # the job stalls this long per checkpoint
    lag: float = 0.0  # async: durable this long after the stall (<= interval)
    final_write: float = 0.0  # before a planned stop
    restore: float = 0.0
    restart: float = 0.0
    swap: float = 0.0
    spares: int | None = None  # None: unlimited
    mode: str = "sync"
    keep_events: bool = True


@dataclass
class Outcome:
    plan: Plan
    modes: list[Mode]
    buckets: dict[str, np.ndarray]  # seconds per run
    counts: np.ndarray  # (runs, modes): interruptions (degrade modes: episodes)
    events: list[Event] = field(default_factory=list)  # run 0, checkpoints not included
    segments: list[tuple[float, float]] = field(default_factory=list)  # run 0: [start, end) of running

    @property
    def ettr(self) -> np.ndarray:
        return self.buckets["useful"] / self.plan.horizon


def split_segment(length: np.ndarray, tau: float, stall: float, lag: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(compute done, compute kept by a durable checkpoint, checkpoint stall) of ``length`` s of running.

    Two cycles of 10 s compute + 2 s stall, then 1 s more compute (25 s), or the third stall 1 s in (35 s):

    >>> d, c, s = split_segment(np.array([25.0, 35.0]), tau=10.0, stall=2.0, lag=0.0)
    >>> d.tolist(), c.tolist(), s.tolist()
    ([21.0, 30.0], [20.0, 20.0], [4.0, 5.0])
    """
    c = tau + stall
    n = np.floor(length / c)
    rho = length - n * c
    done = n * tau + np.minimum(rho, tau)
    ck = n * stall + np.maximum(rho - tau, 0.0)
    pending = (rho < tau) & (rho < lag)  # async: the latest checkpoint is still being written
    kept = np.where(pending, np.maximum(n - 1.0, 0.0), n) * tau
    return done, kept, ck


def _arrivals(rng: np.random.Generator, runs: int, horizon: float, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times (runs, K) of the superposed Poisson processes covering the horizon, and their mode."""
    total = float(rates.sum())
    mean = total * horizon
    k = int(np.ceil(mean + 6.0 * np.sqrt(mean) + 16))
    times = np.cumsum(rng.exponential(1.0 / total, (runs, k)), axis=1)
    while times[:, -1].min() < horizon:  # rare: extend the runs that need more
        more = np.cumsum(rng.exponential(1.0 / total, (runs, k)), axis=1) + times[:, -1:]
        times = np.concatenate([times, more], axis=1)
    cum = np.cumsum(rates / total)
    cum[-1] = 1.0
    modes = np.searchsorted(cum, rng.random(times.shape), side="right")
    return times, np.minimum(modes, len(rates) - 1)


def simulate(modes: list[Mode], plan: Plan) -> Outcome:
    """Run the campaign; deterministic for a given ``plan.seed``."""
    R, D = plan.runs, plan.horizon
    tau, stall, lag = plan.interval, plan.stall, min(plan.lag, plan.interval)
    share = tau / (tau + stall)
    rate = np.array([m.job_rate for m in modes], float)
    kind = np.array([KINDS.index(m.kind) for m in modes], np.int64)
    det = np.array([m.detection for m in modes], float)
    rep = np.array([m.repair for m in modes], float)
    slow = np.array([m.slowdown for m in modes], float)
    nsrv = np.array([m.servers for m in modes], np.int64)
    B = {b: np.zeros(R) for b in BUCKETS}
    counts = np.zeros((R, len(modes)), np.int64)
    t_free = np.zeros(R)
    rows = np.arange(R)
    events: list[Event] = []
    segments: list[tuple[float, float]] = []
    stops = np.flatnonzero((kind != DEGRADE) & (rate > 0))
    pool = None
    if plan.spares is not None:
        pool = np.zeros((R, plan.spares + int(nsrv[stops].max(initial=0)) + 1))  # repair completion times

    def span(x0, x1):
        return np.minimum(x1, D) - np.minimum(x0, D)

    if len(stops):
        cells(R, float(rate[stops].sum()), D)  # refused before the (runs, events) arrays exist
        A, M = _arrivals(np.random.default_rng(plan.seed), R, D, rate[stops])
        M = stops[M]
        for k in range(A.shape[1]):
            a = A[:, k]
            t = np.maximum(a, t_free)
            act = t < D
            if not act.any():
                break
            m = M[:, k]
            late = a < t_free
            kd = kind[m]
            is_str, is_pl = kd == STRAGGLE, kd == PLANNED
            seg_end = np.minimum(np.where(is_str, t + det[m], t), D)
            done, kept, ck = split_segment(seg_end - t_free, tau, stall, lag)
            kept = np.where(is_pl, done, kept)
            take = np.where(is_str, np.minimum(kept, (seg_end - t) * share * (1.0 - 1.0 / slow[m])), 0.0)
            stop = seg_end + np.where(is_str | is_pl | late, 0.0, det[m])
            fw = np.where(is_pl, plan.final_write, 0.0)
            B["useful"] += np.where(act, kept - take, 0.0)
            B["straggling"] += np.where(act, take, 0.0)
            B["lost"] += np.where(act, done - kept, 0.0)
            B["detection"] += np.where(act, span(seg_end, stop), 0.0)
            B["checkpoint"] += np.where(act, ck + span(stop, stop + fw), 0.0)
            stop = stop + fw
            need = np.where(act, nsrv[m], 0)
            ready = stop
            if pool is not None and need.any():
                done_at = np.where(late & (kd == SWAP), a, stop) + rep[m]
                for j in range(int(need.max())):
                    r = np.flatnonzero(need > j)
                    pool[r, np.argmin(pool[r], axis=1)] = done_at[r]
                busy = (pool > stop[:, None]).sum(axis=1)
                short = np.flatnonzero(act & (busy > plan.spares))
                if len(short):
                    srt = np.sort(pool[short], axis=1)
                    ready = ready.copy()  # the job may run with `spares` servers still in repair
                    ready[short] = srt[:, pool.shape[1] - plan.spares - 1]
            t2 = ready + np.where(is_pl, rep[m], 0.0)
            t3 = t2 + np.where(need > 0, plan.swap, 0.0) + plan.restart
            t4 = t3 + plan.restore
            B["spare_wait"] += np.where(act, span(stop, ready), 0.0)
            B["maintenance"] += np.where(act, span(ready, t2), 0.0)
            B["restart"] += np.where(act, span(t2, t3), 0.0)
            B["restore"] += np.where(act, span(t3, t4), 0.0)
            counts[rows[act], m[act]] += 1
            if plan.keep_events and act[0]:
                events.extend(_run0_events(modes[m[0]], float(a[0]), float(t[0]), float(seg_end[0]), float(stop[0]),
                                           float(fw[0]), float(ready[0]), float(t3[0]), float(t4[0]), bool(late[0])))
                segments.append((float(t_free[0]), float(seg_end[0])))
            t_free = np.where(act, t4, t_free)
    tail = np.maximum(D - t_free, 0.0)
    done, _, ck = split_segment(tail, tau, stall, lag)
    B["useful"] += done  # the campaign ends, the job does not: nothing is lost at the horizon
    B["checkpoint"] += ck
    if plan.keep_events and t_free[0] < D:
        segments.append((float(t_free[0]), D))
    _degrade(modes, kind, rate, rep, slow, plan, B, counts)
    return Outcome(plan, modes, B, counts, events, segments)


def _degrade(modes, kind, rate, rep, slow, plan: Plan, B: dict, counts: np.ndarray) -> None:
    """Spine and fabric-cable failures: the job runs ``slowdown`` x slower while each is repaired."""
    R, D = plan.runs, plan.horizon
    rng = np.random.default_rng([plan.seed, 1])  # its own stream: the interruptions stay the same
    for j in np.flatnonzero((kind == DEGRADE) & (rate > 0)):
        cells(R, float(rate[j]), D)
        n = rng.poisson(rate[j] * D, R)
        top = int(n.max())
        if not top:
            continue
        starts = rng.random((R, top)) * D
        live = np.arange(top)[None, :] < n[:, None]
        exposure = np.where(live, np.minimum(rep[j], D - starts), 0.0).sum(axis=1)
        loss = np.minimum(exposure, D) * (B["useful"] / D) * (1.0 - 1.0 / slow[j])
        B["useful"] -= loss
        B["degraded"] += loss
        counts[:, j] = n


def _run0_events(mode: Mode, a, t, seg_end, stop, fw, ready, t3, t4, late) -> list[Event]:
    """The timeline of one event of the representative run (run 0), for the power twin."""
    out = [Event(stop - fw, "checkpoint", fw, "before a planned stop")] if fw > 0 else []
    if mode.kind == "straggle":
        out.append(Event(t, "straggler", seg_end - t, mode.name, mode.servers))
    elif mode.kind != "planned":
        out.append(Event(a, "failure", 0.0, mode.name + (" (found at restart)" if late else ""), mode.servers))
    out.append(Event(stop, "stop", 0.0, mode.name, mode.servers))
    if mode.servers:
        out.append(Event(ready, "repair", 0.0, f"{mode.servers} spare server(s) in", mode.servers))
    out.append(Event(t3, "restore", t4 - t3, "last checkpoint"))
    out.append(Event(t4, "start", 0.0, "training resumes"))
    return out


def checkpoint_events(outcome: Outcome) -> list[Event]:
    """Checkpoint writes of run 0 (one per cycle of running), on the same time base as the events."""
    p = outcome.plan
    c = p.interval + p.stall
    out = []
    for s0, s1 in outcome.segments:
        for t in np.arange(s0 + p.interval, s1, c):
            out.append(Event(float(t), "checkpoint", min(p.stall, s1 - float(t)), p.mode))
    return out


def timeline(outcome: Outcome) -> list[Event]:
    """Every event of run 0 in time order: failures, stops, restores, starts and checkpoint writes."""
    ev = outcome.events + checkpoint_events(outcome)
    return sorted(ev, key=lambda e: (e.t, e.kind))
