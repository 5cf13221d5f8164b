"""Run a scenario's ``campaign:`` on a compiled design: the entry ``twin simulate`` calls.

Inputs, all from the design or the scenario: failure classes from the merged catalog (the site may
override them; the campaign overrides detection, repair and rates), the job's footprint and blast
radii from the fabric graph, the step time from the job twin (or ``step_time``), checkpoint times
from the site's ``storage:`` and the workload. The job twin is reached only through ``job_under``
(given by :mod:`twin.twins.run`) and its result only through :func:`step_profile`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, replace

from twin.lang import limits
from twin.lang.diagnostics import SpecError
from twin.lang.site.reliability_models import FailureClass
from twin.lang.validator import error
from twin.twins.reliability import answers, checkpoint, cost
from twin.twins.reliability.components import PLANE, TRAY_PARTS, Footprint, Mode, Reach, failure_modes, footprint, scaled
from twin.twins.reliability.engine import Plan, simulate, timeline
from twin.twins.workload.jobs import step_profile
from twin.twins.workload.timeline import Event, StepProfile

# failure -> the job twin's result dict for the campaign's job on the graph with that failure applied;
# the failure is None (intact fabric), {"switch": id}, {"link": id} or {"plane": n}. None when the scenario has no job.
JobUnder = Callable[[dict | None], dict | None]


def resolve_classes(catalog: dict[str, FailureClass], c, src) -> dict[str, FailureClass]:
    """The catalog's failure classes with the campaign's detection, repair and rate overrides."""
    errs = [error(src, ("campaign", f, name), f"unknown failure class '{name}'", "one of: " + ", ".join(sorted(catalog)))
            for f in ("detection", "repair", "rates") for name in getattr(c, f) if name not in catalog]
    if errs:
        raise SpecError(errs)
    out = {}
    for name, fc in catalog.items():
        upd = {k: v for k, v in (("detection", c.detection.get(name)), ("repair", c.repair.get(name)), ("rate", c.rates.get(name)))
               if v is not None}
        out[name] = fc.model_copy(update=upd)
    return out


def run_campaign(design, scn, src, graph, job_under: JobUnder, progress=None) -> tuple[dict, list[Event]]:
    """The campaign's figures (JSON-ready) and the timeline of its representative run (run 0)."""
    c = scn.campaign
    say = progress or (lambda _m: None)
    classes = resolve_classes(design.spec.catalog.reliability, c, src)
    if not classes:
        raise SpecError([error(src, ("campaign",), "the catalog has no failure classes", "a reliability: section in the catalog")])
    workloads = {w.name: w for w in design.spec.site.workloads}
    notes: list[str] = []
    if scn.jobs:
        if c.job > len(scn.jobs):
            raise SpecError([error(src, ("campaign", "job"), f"job {c.job} does not exist", f"1..{len(scn.jobs)}")])
        if c.routing is not None and c.routing not in [r.name for r in scn.routing]:
            raise SpecError([error(src, ("campaign", "routing"), f"unknown routing scheme '{c.routing}'", ", ".join(r.name for r in scn.routing))])
        say("campaign: the job's step time")
        base_job = job_under(None)
        step = step_profile(base_job, c.routing)
        workload = workloads.get(scn.jobs[c.job - 1].workload)
        gpus, step_source = step.gpus, "job twin"
        if c.step_time is not None:
            notes.append("step_time ignored: the job twin gives the step time")
        if scn.jobs[c.job - 1].order != "topology":
            notes.append("the job twin places this job in naive order; the footprint counts its first servers in topology order")
    else:
        if c.step_time is None:
            raise SpecError([error(src, ("campaign",), "a campaign without a job needs step_time", "step_time: 8 s, or a job under jobs:")])
        if c.workload is not None and c.workload not in workloads:
            raise SpecError([error(src, ("campaign", "workload"), f"unknown workload '{c.workload}'", ", ".join(sorted(workloads)) or "a site workload")])
        workload = workloads.get(c.workload) if c.workload else None
        gpus = c.gpus or (workload.gpus if workload else design.spec.gpus)
        step = StepProfile(step_s=c.step_time, compute_s=c.step_time, exposed_comm_s=0.0, gpus=gpus)
        step_source = "campaign.step_time"
    say("campaign: the job's footprint on the fabric graph")
    try:
        fabric = getattr(design, "fabric", None)
        fp = footprint(graph, gpus, links=fabric.links if fabric is not None and fabric.graph is graph else None)
    except ValueError as e:
        raise SpecError([error(src, ("campaign", "gpus"), str(e))]) from None
    modes = failure_modes(classes, fp, Reach(graph, fp))
    modes = _time_degradations(modes, step, c.routing, job_under if scn.jobs else None, say)
    ck = _checkpoint_cost(design, c, src, workload, gpus, len(fp.servers))
    D = c.days * 86400.0
    lam_u = answers.unexpected_rate(modes)
    yd = checkpoint.young_daly(ck.stall_s, 1.0 / lam_u) if lam_u > 0 else None

    def quantize(x: float, lag: float = ck.lag_s) -> float:
        """Whole steps, at least one; async: no shorter than the background write."""
        n = max(1, round(x / step.step_s))
        if n * step.step_s < lag:
            n = math.ceil(lag / step.step_s)
        return n * step.step_s

    base = Plan(D, c.runs, c.seed, interval=quantize(yd or D), stall=ck.stall_s, lag=ck.lag_s, final_write=ck.final_write_s,
                restore=ck.restore_s, restart=c.restart, swap=c.swap, spares=None if c.spares == "unlimited" else int(c.spares),
                mode=ck.mode)
    sweep_plan = replace(base, runs=min(c.runs, c.sweep.runs))
    grid = c.sweep.intervals or ([yd * f for f in answers.INTERVAL_FACTORS] if yd and yd > 0 else [step.step_s * k for k in (1, 10, 100, 1000)])
    grid = sorted({quantize(x) for x in grid})
    spare_limit = max(64, len(fp.servers))
    _refuse(src, cost.check(modes, D, c.runs, sweep_plan.runs, len(grid) if c.sweep.enabled or c.checkpoint.interval == "auto" else 0,
                            cost.spare_passes(c.sweep.spares, spare_limit) if c.sweep.enabled else 0,
                            list(c.sweep.gpus) if c.sweep.enabled else [], gpus))
    if c.checkpoint.interval != "auto":
        _refuse(src, cost.checkpoints(D, quantize(c.checkpoint.interval), ck.stall_s), ("campaign", "checkpoint", "interval"))
    try:
        main, sweeps, interval, interval_source = _monte_carlo(c, modes, base, sweep_plan, grid, yd, quantize, spare_limit, say,
                                                               lambda: _size_setup(graph, classes, modes, fp, design, c, workload,
                                                                                   step, sweep_plan, quantize), src, ck)
    except limits.CostError as e:  # the engine's own guard: a pass the estimate above did not foresee
        raise SpecError([error(src, ("campaign",), str(e), "fewer runs, days or sweep points, or lower failure rates")]) from None
    summary = answers.summarize(main)
    events = timeline(main)
    n_ck = sum(e.kind == "checkpoint" for e in events)
    data = {
        "days": c.days, "runs": c.runs, "seed": c.seed, "min_ettr": c.min_ettr,
        "job": {"workload": workload.name if workload else None, "gpus": gpus, "servers": len(fp.servers), "step_s": step.step_s,
                "scheme": c.routing, "step_source": step_source, "step_profile": asdict(step)},
        "components": _component_counts(fp),
        "checkpoint": {**asdict(ck), "interval_s": interval, "interval_steps": round(interval / step.step_s),
                       "interval_source": interval_source, "young_daly_s": yd,
                       "overhead_without_failures": ck.stall_s / (interval + ck.stall_s)},
        "spares": c.spares, "restart_s": c.restart, "swap_s": c.swap,
        "inputs": assumed_inputs(c, step_source, step.step_s, ck),
        **summary,
        "sweeps": sweeps,
        "events_run0": [asdict(e) for e in events if e.kind != "checkpoint"],
        "checkpoints_run0": n_ck,
        "notes": notes + _notes(fp, modes),
    }
    return data, events


def assumed_inputs(c, step_source: str, step_s: float, ck) -> list[dict]:
    """The inputs the result rests on, each with its value and where it came from: ``scenario`` when the
    scenario sets it, else ``assumed`` (the language's default) or the model that computed it; the report
    shows them beside the result."""
    given, ckg = c.model_fields_set, c.checkpoint.model_fields_set

    def src(name: str, fields=given) -> str:
        return "scenario" if name in fields else "assumed (default)"

    def minutes(s: float) -> str:
        return f"{s / 60:g} min" if s >= 60 else f"{s:g} s"

    rows = [
        {"input": "restart after a stop (scheduling, process start, NCCL init)", "value": minutes(c.restart), "source": src("restart")},
        {"input": "extra to swap in spare servers", "value": minutes(c.swap), "source": src("swap")},
        {"input": "hot spare servers", "value": str(c.spares), "source": src("spares")},
        {"input": "checkpoint write / restore", "value": f"{ck.write_s:.1f} s / {ck.restore_s:.1f} s ({c.checkpoint.mode})",
         "source": "scenario" if {"write_time", "restore_time"} & ckg else f"storage model ({ck.limit})"},
        {"input": "checkpoint interval", "value": "auto (best swept)" if c.checkpoint.interval == "auto" else minutes(c.checkpoint.interval),
         "source": src("interval", ckg)},
        {"input": "step time", "value": f"{step_s:.3f} s", "source": step_source},
        {"input": "failure rates, detection and repair times", "value": "catalog failure classes"
         + (f", {len(c.rates) + len(c.detection) + len(c.repair)} overridden" if c.rates or c.detection or c.repair else ""),
         "source": "scenario" if c.rates or c.detection or c.repair else "catalog"},
        {"input": "Monte Carlo runs, seed", "value": f"{c.runs:,}, {c.seed}", "source": src("runs")},
    ]
    return rows


def _refuse(src, problem: str | None, where: tuple = ("campaign",)) -> None:
    if problem is not None:
        raise SpecError([error(src, where, problem, "fewer runs, days or sweep points, a longer interval, or lower failure rates")])


def _monte_carlo(c, modes, base: Plan, sweep_plan: Plan, grid, yd, quantize, spare_limit: int, say, size_setup, src, ck):
    """The interval sweep, the main campaign, the spare and size sweeps (every pass already costed)."""
    sweeps: dict = {}
    if c.sweep.enabled or c.checkpoint.interval == "auto":
        say("campaign: checkpoint interval sweep")
        rows, best = answers.interval_sweep(modes, sweep_plan, grid)
        sweeps["interval"] = {"rows": rows, "best_s": best, "young_daly_s": yd, "runs": sweep_plan.runs}
    if c.checkpoint.interval == "auto":
        interval, interval_source = quantize(sweeps["interval"]["best_s"]), "auto: best swept interval"
        _refuse(src, cost.checkpoints(base.horizon, interval, ck.stall_s), ("campaign", "checkpoint", "interval"))
    else:
        interval, interval_source = quantize(c.checkpoint.interval), "given"
    plan = replace(base, interval=interval)
    say(f"campaign: {c.runs:,} runs of {c.days:g} days")
    main = simulate(modes, plan)
    if c.sweep.enabled:
        say("campaign: spare pool sweep")
        rows, unlimited, smallest = answers.spare_sweep(modes, replace(sweep_plan, interval=interval), c.sweep.spares, limit=spare_limit)
        sweeps["spares"] = {"rows": rows, "unlimited": unlimited, "smallest_within_tolerance": smallest,
                            "tolerance": answers.SPARE_TOLERANCE, "runs": sweep_plan.runs}
        say("campaign: job size sweep")
        sweeps["gpus"] = {"rows": answers.size_sweep(c.sweep.gpus, size_setup()), "runs": sweep_plan.runs}
    return main, sweeps, interval, interval_source


def _component_counts(fp: Footprint) -> dict:
    out = {"gpu": fp.count("gpu"), "server": fp.count("server"), "nic": fp.count("nic")}
    if fp.planes:
        out[PLANE] = fp.count(PLANE)
    for per in ("rack-switch", "fabric-switch", "link"):
        for g in fp.groups(per):
            out[f"{per}/{g}"] = fp.count(per, g)
    return out


def _time_degradations(modes: list[Mode], step: StepProfile, scheme, job_under, say) -> list[Mode]:
    """Slowdown of each non-interrupting mode, from the job twin on the graph without its component (once each)."""
    out = []
    for m in modes:
        if m.kind != "degrade" or m.job_rate <= 0 or not m.component:
            out.append(m)
            continue
        if job_under is None:
            out.append(replace(m, slowdown=1.0, notes=m.notes + ("not timed: the scenario has no job for the network twin",)))
            continue
        say(f"campaign: job with {m.component} down ({m.name})")
        failure = {"plane": int(m.component.removeprefix("plane"))} if m.per == PLANE else {"link" if m.per == "link" else "switch": m.component}
        res = job_under(failure)
        ratio = step_profile(res, scheme).step_s / step.step_s
        note = f"network twin: step x{ratio:.4f} with {m.component} down"
        if ratio < 1:
            note += " (faster by hashing chance; taken as 1)"
        out.append(replace(m, slowdown=max(1.0, ratio), notes=m.notes + (note,)))
    return out


def _checkpoint_cost(design, c, src, workload, gpus: int, servers: int) -> checkpoint.CheckpointCost:
    cp = c.checkpoint
    size = cp.size or (workload.parameters * cp.bytes_per_param if workload is not None else None)
    if size is None:
        raise SpecError([error(src, ("campaign", "checkpoint"), "no checkpoint size: the campaign has no workload",
                               "checkpoint.size, campaign.workload or a job")])
    storage = design.spec.site.storage
    if storage is None and (cp.write_time is None or cp.restore_time is None):
        raise SpecError([error(src, ("campaign", "checkpoint"), f"site '{design.name}' has no storage: section to time checkpoints",
                               "storage: in the site, or checkpoint.write_time and restore_time")])
    return checkpoint.cost(size, gpus, servers, workload.cp if workload is not None else 1, *_bandwidths(design, c), cp.mode,
                           cp.snapshot_bandwidth / 8, cp.write_time, cp.restore_time)


def _size_setup(graph, classes, main_modes: list[Mode], fp_job: Footprint, design, c, workload, step, plan: Plan, quantize):
    """``setup(gpus)`` for the job-size sweep: counts from the graph (extrapolated per GPU beyond the
    site), blast radii and slowdowns of the campaign's job, each size at its own Young/Daly interval."""
    site_gpus = sum(int(d.get("gpus", 0)) for _, d in graph.nodes(data=True) if d.get("role") == "server")
    known = {m.name: m for m in main_modes}
    whole: list[Footprint] = []

    def setup(n: int):
        if n <= site_gpus:
            fp = fp_job if n == fp_job.gpus else footprint(graph, n)
        else:
            if not whole:
                whole.append(footprint(graph, site_gpus))
            fp = scaled(whole[0], n)
        modes = []
        for m in failure_modes(classes, fp, None):
            k = known.get(m.name)
            if k is not None:
                m = replace(m, kind=k.kind, servers=k.servers, slowdown=k.slowdown, component=k.component)
            elif m.per not in ("gpu", "server", "nic", "job"):
                m = replace(m, notes=("not in the campaign's job: blast radius and slowdown not analysed",))
            modes.append(m)
        servers = round(len(fp.servers) * fp.scale)
        ck = checkpoint.cost(c.checkpoint.size or (workload.parameters * c.checkpoint.bytes_per_param if workload else 1.0),
                             n, servers, workload.cp if workload else 1, *_bandwidths(design, c), c.checkpoint.mode,
                             c.checkpoint.snapshot_bandwidth / 8, c.checkpoint.write_time, c.checkpoint.restore_time)
        lam = answers.unexpected_rate(modes)
        yd = checkpoint.young_daly(ck.stall_s, 1 / lam) if lam > 0 and ck.stall_s > 0 else plan.interval
        p = replace(plan, interval=quantize(yd, ck.lag_s), stall=ck.stall_s, lag=ck.lag_s, final_write=ck.final_write_s, restore=ck.restore_s)
        return modes, p, {"extrapolated": n > site_gpus, "servers": servers, "expected_interruptions": lam * plan.horizon}

    return setup


def _bandwidths(design, c) -> tuple[float | None, float | None]:
    s = design.spec.site.storage
    if s is None:
        return None, None
    bw = s.peak_bandwidth if c.checkpoint.bandwidth == "peak" and s.peak_bandwidth else s.sustained_bandwidth
    return bw / 8, (s.frontend_per_server / 8 if s.frontend_per_server else None)


def _notes(fp: Footprint, modes: list[Mode]) -> list[str]:
    out = [f"footprint: the first {len(fp.servers):,} servers in topology order (zone, rack, server)"]
    for m in modes:
        if m.per in TRAY_PARTS:
            out.append(f"{m.name}: {m.count:,} in the job's rack-scale systems; one down swaps its NVLink domain ({m.servers} server)")
        elif m.kind in ("swap", "straggle") and m.per not in ("gpu", "server", "nic"):
            out.append(f"{m.name}: {m.component} down cuts {m.servers} server(s) off the job (fabric graph)")
        out.extend(f"{m.name}: {n}" for n in m.notes)
    return out
