"""Assemble the power model of one scenario: step profile, phases, tree, thermal step, segments.

:func:`prepare` resolves everything that does not depend on a mitigation; :func:`segments_for`
builds the trace segments for a given GPU power floor or fill workload, so the baseline and each
mitigation are drawn by the same code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from twin.compiler.resolve.feasibility import hall_capacity
from twin.compiler.resolve.liquid import facility_heat, liquid_share
from twin.lang import limits
from twin.lang.diagnostics import SpecError
from twin.lang.scenario.power import PowerScenario
from twin.lang.validator import error
from twin.twins.power import thermal
from twin.twins.power.phases import GpuPhases, gpu_phases
from twin.twins.power.schedule import Channels, Step, build_segments, job_states, schedule_events
from twin.twins.power.tree import PowerTree, build_tree
from twin.twins.workload.jobs import step_profile
from twin.twins.workload.timeline import Event, StepProfile

WHERE = ("power",)


@dataclass
class Model:
    cfg: PowerScenario
    profile: StepProfile
    stages: int
    stage_group: int
    tree: PowerTree
    base: GpuPhases
    events: list[Event]
    states: list[tuple[float, float, str]]
    t_grid: np.ndarray  # thermal evaluation times (s)
    t_out: np.ndarray  # outdoor degC at t_grid
    perf: np.ndarray  # compute-rate factor at t_grid (1 = no throttling)
    compute_scale: np.ndarray  # compute-phase power factor at t_grid
    rate: np.ndarray = field(default_factory=lambda: np.zeros(0))  # job throughput factor (steps/s vs unthrottled)
    inlet: dict[str, np.ndarray] = field(default_factory=dict)  # hall -> inlet (coolant with CDUs) degC at t_grid
    facility_water: dict[str, np.ndarray] = field(default_factory=dict)  # hall with CDUs -> facility water supply degC
    pue: float = 1.0
    pue_curve: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def resolve_profile(design, cfg: PowerScenario, jobs: list[dict] | None, src) -> tuple[StepProfile, object]:
    """The job's StepProfile (from the job twin's result, or the scenario's step figures) and its workload."""
    spec = design.spec
    j = cfg.job
    if j.workload is not None:
        found = [r for r in (jobs or []) if r.get("workload") == j.workload]
        if not found:
            raise SpecError([error(src, WHERE + ("job", "workload"), f"workload '{j.workload}' is not among this scenario's jobs",
                                   "list it under jobs: (the job twin computes its step) or give power.job.step")])
        try:
            prof = step_profile(found[0], j.scheme)
        except KeyError:
            names = ", ".join(r["scheme"] for r in found[0]["schemes"])
            raise SpecError([error(src, WHERE + ("job", "scheme"), f"unknown routing scheme '{j.scheme}'", names)]) from None
        wl = next((w for w in spec.site.workloads if w.name == j.workload), None)
        return prof, wl
    s = j.step
    return StepProfile(s.step, s.compute, s.exposed_comm, s.bubble, s.tokens, j.gpus or spec.gpus), None


def prepare(design, cfg: PowerScenario, src=None, jobs: list[dict] | None = None, events: list[Event] | None = None,
            base_dir: Path | None = None) -> Model:
    spec = design.spec
    if design.placement is None:
        raise SpecError([error(src, WHERE, "the power twin needs a placed design (racks at hall, row, slot)")])
    prof, wl = resolve_profile(design, cfg, jobs, src)
    stages = cfg.job.stages or (wl.pp if wl else 1)
    group = cfg.job.stage_group or (wl.tp * wl.cp if wl else spec.chassis.gpus or 1)
    n_job = cfg.job.gpus or prof.gpus or spec.gpus
    placed = spec.rack.gpus * len(design.placement.gpu_racks())
    if n_job > placed:
        raise SpecError([error(src, WHERE + ("job", "gpus"), f"the job needs {n_job:,} GPUs, the placement holds {placed:,}", f"at most {placed:,}")])
    ch = Channels(stages)
    network = _network_total(design)
    tree = build_tree(design, ch, n_job, group, network)
    ch_ = spec.chassis
    base = gpu_phases(ch_.phase_power, ch_.gpu_tdp, spec.rack.gpu_power_cap, ch_.max_power, ch_.gpus)
    evs = events if events is not None else schedule_events(cfg.events, cfg.duration)
    states = job_states(evs, cfg.duration)
    _cost(cfg, src, len(states), len(np.unique(tree.row_W, axis=0)) + len(tree.halls))
    m = Model(cfg, prof, stages, group, tree, base, evs, states, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0),
              pue=spec.site.power.pue, pue_curve=list(spec.site.power.pue_curve))
    _thermal(design, m, src, base_dir or Path("."))
    return m


def _cost(cfg: PowerScenario, src, states: int, rows: int) -> None:
    """The trace's segments (job states, thermal intervals) and the busway check's row-seconds (rows of
    distinct load, each drawn once, and the halls), before either is drawn: a campaign's events are only
    known here."""
    thermal = math.ceil(cfg.duration / cfg.thermal_interval)
    if msg := limits.exceeded("power_segments", states + thermal):
        where = WHERE + (("campaign_events",) if cfg.campaign_events else ("thermal_interval",))
        raise SpecError([error(src, where, f"{states:,} job states + {thermal:,} thermal intervals = {msg}",
                               "a longer thermal_interval, a shorter duration or fewer events")])
    row_seconds = rows * max(1, int(cfg.duration))
    if msg := limits.exceeded("power_row_seconds", row_seconds):
        raise SpecError([error(src, WHERE + ("duration",), f"{rows:,} distinct rows and halls x {int(cfg.duration):,} s: {msg}", "a shorter duration")])


def _network_total(design) -> float:
    """The network watts the budget counts: the BOM's, optics included, once reconciled
    (:mod:`twin.compiler.fabric.power_budget`); before the fabric, the shape's estimate of the switches."""
    return float(design.budget.network_total)


def _thermal(design, m: Model, src, base: Path) -> None:
    """Outdoor temperature, inlet per hall, and the job's throttling on a grid of thermal intervals."""
    cfg = m.cfg
    dt = cfg.thermal_interval
    t = (np.arange(int(np.ceil(cfg.duration / dt))) + 0.5) * dt
    t = np.minimum(t, cfg.duration)
    try:
        t_out = thermal.outdoor(cfg.weather, t, cfg.start_time, base)
    except SpecError as e:
        raise SpecError(e.diagnostics + [error(src, WHERE + ("weather", "csv"), "the temperature CSV has errors (above)")]) from None
    avg = m.base.step_average(m.profile)
    r = np.ones_like(t)
    spec = design.spec
    chans = m.tree.ch
    for i, name in enumerate(m.tree.halls):
        h = next(x for x in spec.site.halls if x.name == name)
        w = m.tree.hall_W[i]
        _, cool = hall_capacity(h)
        gpu_load = float(w[: chans.stages].sum() * avg + w[chans.other_gpu] * avg + (w[chans.job_server] + w[chans.other_server]) * m.base.rest)
        load = gpu_load + float(w[chans.const])
        medium = h.cooling.medium
        c, fw = h.cooling.cdus, h.cooling.facility_water
        if c is not None and fw is not None:
            wet = liquid_share(spec.site) * gpu_load
            m.facility_water[name], t_in = thermal.coolant(c.supply_temperature, c.approach, fw.supply_temperature, t_out,
                                                           wet / facility_heat(fw))
            medium = "liquid"
        else:
            t_in = thermal.inlet(medium, h.cooling.inlet_temperature, t_out, load / cool if cool else 1.0)
        m.inlet[name] = t_in
        if w[: chans.stages].sum() > 0:
            r = np.minimum(r, thermal.throttle(medium, t_in, avg))
    p, ph = m.profile, m.base
    slack = max(0.0, p.step_s - p.compute_s - p.bubble_s - p.exposed_comm_s)
    other = p.bubble_s * ph.waiting + p.exposed_comm_s * ph.communication + slack * ph.waiting
    need = p.compute_s * ph.compute
    scale = np.clip((r * avg * p.step_s - other) / need, 0.05, 1.0) if need > 0 else np.ones_like(r)
    curve = spec.chassis.perf_vs_power
    full = thermal.perf_at(curve, np.array([ph.compute / ph.tdp]))[0]
    m.t_grid, m.t_out, m.compute_scale = t, t_out, scale
    m.perf = np.minimum(1.0, thermal.perf_at(curve, scale * ph.compute / ph.tdp) / full)
    busy = p.compute_s + p.bubble_s
    m.rate = p.step_s / (p.step_s - busy + busy / m.perf)


def step_at(m: Model, slowdown: float = 0.0):
    """The drawn step at time t: throttled compute and bubble stretch, communication does not."""
    p = m.profile
    slack = max(0.0, p.step_s - p.compute_s - p.bubble_s - p.exposed_comm_s)
    k = 1.0 + slowdown

    def at(t: float) -> Step:
        i = min(len(m.t_grid) - 1, max(0, int(t // m.cfg.thermal_interval)))
        f = m.perf[i]
        c, b = p.compute_s / f * k, p.bubble_s / f * k
        return Step(c + b + (p.exposed_comm_s + slack) * k, c, b, p.exposed_comm_s * k, float(m.compute_scale[i]))

    return at


def phases_for(m: Model, design, floor: float | None = None, fill: float | None = None) -> GpuPhases:
    ch = design.spec.chassis
    return gpu_phases(ch.phase_power, ch.gpu_tdp, design.spec.rack.gpu_power_cap, ch.max_power, ch.gpus, floor, fill)


def segments_for(m: Model, ph: GpuPhases, slowdown: float = 0.0):
    avg = ph.step_average(m.profile)
    others = (avg, ph.rest) if m.cfg.job.others == "average" else (ph.idle, ph.rest_idle)
    return build_segments(m.states, m.tree.ch, ph, others, step_at(m, slowdown), m.cfg.thermal_interval)


def pue_series(m: Model, t: np.ndarray) -> np.ndarray:
    return np.interp(t, m.t_grid, thermal.pue_at(m.pue, m.pue_curve, m.t_out))
