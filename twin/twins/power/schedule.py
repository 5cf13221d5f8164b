"""From a step profile and a list of campaign events to trace segments.

Job states over time come from :class:`twin.twins.workload.timeline.Event` lists (the reliability twin's output,
or the simple schedule of a scenario: a checkpoint every X, failures at given times). Inside a
running stretch, every pipeline stage follows the step profile shifted by its place in the pipeline
(1F1B fill and drain): stage s waits ``s x b`` before its first micro-batch and ``(P-1-s) x b`` after
its last, with ``b = bubble / (P - 1)``; then every stage waits together on the exposed collectives
at the end of the step. So each stage computes for ``compute_s`` and idles ``bubble_s`` per step (the
job twin's figures), and the whole site is at compute power only while every stage computes.

>>> from twin.twins.workload.timeline import Event
>>> job_states([Event(0.0, "start"), Event(100.0, "checkpoint", 10.0), Event(200.0, "failure", 50.0),
...             Event(250.0, "restore", 20.0)], 400.0)
[(0.0, 100.0, 'run'), (100.0, 110.0, 'checkpoint'), (110.0, 200.0, 'run'), (200.0, 250.0, 'idle'), (250.0, 270.0, 'restore'), (270.0, 400.0, 'run')]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from twin.lang.scenario.power import Schedule
from twin.twins.power.phases import GpuPhases
from twin.twins.power.trace import Segment, constant, stepping
from twin.twins.workload.timeline import Event


def schedule_events(cfg: Schedule, duration: float) -> list[Event]:
    """The scenario's simple schedule as events: start, checkpoints every X, failure + restore."""
    ev = [Event(cfg.start, "start")]
    down: list[tuple[float, float]] = []
    for f in cfg.failures:
        ev.append(Event(f.at, "failure", f.recovery))
        ev.append(Event(f.at + f.recovery, "restore", f.restore))
        down.append((f.at, f.at + f.recovery + f.restore))
    if cfg.checkpoint is not None:
        t = cfg.start + cfg.checkpoint.every
        while t < duration:
            if not any(a - cfg.checkpoint.duration < t < b for a, b in down):
                ev.append(Event(t, "checkpoint", cfg.checkpoint.duration))
            t += cfg.checkpoint.every
    return sorted(ev, key=lambda e: (e.t, e.kind))


def job_states(events: list[Event], duration: float) -> list[tuple[float, float, str]]:
    """Cut ``[0, duration)`` into job states: run, checkpoint, restore, idle (other kinds ignored)."""
    kinds = [e for e in sorted(events, key=lambda e: e.t) if e.kind in ("start", "stop", "failure", "checkpoint", "restore")]
    state = "idle" if (kinds and kinds[0].kind in ("start", "restore")) else "run"
    out: list[tuple[float, float, str]] = []
    t = 0.0

    def go(until: float, s: str) -> None:
        nonlocal t
        until = min(max(until, t), duration)
        if until > t:
            if out and out[-1][2] == s and out[-1][1] == t:
                out[-1] = (out[-1][0], until, s)
            else:
                out.append((t, until, s))
        t = until

    for e in kinds:
        if e.t >= duration:
            break
        go(e.t, state)
        if e.kind == "start":
            state = "run"
        elif e.kind in ("stop", "failure"):
            state = "idle"
        elif e.kind == "checkpoint" and state == "run":
            go(e.t + e.duration, "checkpoint")
        elif e.kind == "restore":
            go(e.t + e.duration, "restore")
            state = "run"
    go(duration, state)
    return out


@dataclass(frozen=True)
class Channels:
    """Channel layout: ``stages`` stage channels, then others' GPUs, job servers, other servers, 1 W."""

    stages: int

    @property
    def n(self) -> int:
        return self.stages + 4

    @property
    def other_gpu(self) -> int:
        return self.stages

    @property
    def job_server(self) -> int:
        return self.stages + 1

    @property
    def other_server(self) -> int:
        return self.stages + 2

    @property
    def const(self) -> int:
        return self.stages + 3


@dataclass(frozen=True)
class Step:
    """One step as the trace draws it (seconds) and the compute power scale of thermal throttling."""

    step: float
    compute: float
    bubble: float
    comm: float
    compute_scale: float = 1.0


def step_table(ch: Channels, st: Step, ph: GpuPhases, others: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints of one step and the cumulative energy of every channel at them."""
    P = ch.stages
    b = st.bubble / (P - 1) if P > 1 else 0.0
    s = np.arange(P)
    c0 = s * b  # compute starts
    c1 = c0 + st.compute
    m0 = st.compute + st.bubble
    m1 = min(st.step, m0 + st.comm)
    # breakpoints on a 1 ns grid: sums of the step's parts that differ by rounding are one breakpoint
    xs = np.unique(np.round(np.clip(np.concatenate([[0.0, st.step, m0, m1], c0, c1]), 0.0, st.step), 9))
    xs[-1] = st.step
    mid = (xs[:-1] + xs[1:]) / 2
    comp = (c0[:, None] <= mid) & (mid < c1[:, None])
    comm = (m0 <= mid) & (mid < m1)
    p = np.where(comp, ph.compute * st.compute_scale, np.where(comm[None, :], ph.communication, ph.waiting))
    dx = np.diff(xs)
    E = np.zeros((ch.n, len(xs)))
    E[:P, 1:] = np.cumsum(p * dx, axis=1)
    for c, w in ((ch.other_gpu, others[0]), (ch.job_server, ph.rest), (ch.other_server, others[1]), (ch.const, 1.0)):
        E[c] = w * xs
    return xs, E


def state_power(ch: Channels, state: str, ph: GpuPhases, others: tuple[float, float]) -> np.ndarray:
    p = np.zeros(ch.n)
    p[: ch.stages] = ph.checkpoint if state in ("checkpoint", "restore") else ph.idle
    p[ch.other_gpu], p[ch.other_server], p[ch.const] = others[0], others[1], 1.0
    p[ch.job_server] = ph.rest_idle if state == "idle" else ph.rest
    return p


def build_segments(states: list[tuple[float, float, str]], ch: Channels, ph: GpuPhases, others: tuple[float, float],
                   step_at: Callable[[float], Step], interval: float) -> list[Segment]:
    """Segments for the job states; running stretches are re-evaluated every ``interval`` seconds
    (throttling changes the step) keeping the step phase continuous across the cut."""
    segs: list[Segment] = []
    for t0, t1, state in states:
        if state != "run":
            segs.append(constant(t0, t1, state_power(ch, state, ph, others), state))
            continue
        origin, prev = t0, None
        a = t0
        while a < t1:
            b = min(t1, (np.floor(a / interval) + 1) * interval)
            st = step_at((a + b) / 2)
            if prev is not None:
                frac = ((a - origin) % prev.step) / prev.step
                origin = a - frac * st.step
            xs, E = step_table(ch, st, ph, others)
            segs.append(stepping(a, b, origin, st.step, xs, E))
            prev, a = st, b
    return segs
