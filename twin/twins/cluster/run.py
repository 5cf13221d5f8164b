"""A scenario's ``cluster:`` section run on a compiled design: the result document's ``cluster`` part.

Reads the design's servers (:mod:`twin.twins.cluster.site`), draws or loads the jobs, draws the
failures, checks every cost first (jobs, failures) and every job against the site (a job larger than
the site is a located error), runs the clock once and summarises: the GPU-time buckets (which sum to
GPUs x span, checked), utilisation and goodput, the counts, the failures by source and by causes, the
table per job size class and the GPU states over time.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from twin.lang import limits
from twin.lang.diagnostics import SpecError
from twin.lang.validator import error
from twin.twins.cluster import failures as fail
from twin.twins.cluster import jobset, profiles
from twin.twins.cluster.answers import LABELS, by_class, size_class
from twin.twins.cluster.cycle import BUCKETS, JOB_BUCKETS, Policy
from twin.twins.cluster.engine import Run
from twin.twins.cluster.site import ClusterSite, from_design


def policy_of(cl) -> Policy:
    sch, pre, lem = cl.scheduler, cl.scheduler.preemption, cl.failures.lemons
    return Policy(policy=sch.policy, depth=sch.backfill_depth, packing=sch.packing, preempt=pre is not None,
                  guard=pre.guard if pre else 0.0, lifetime=(pre.lifetime or math.inf) if pre else math.inf,
                  interval=cl.checkpoint.interval, write=cl.checkpoint.write, restart=cl.restart, spares=cl.spares,
                  lemon_after=lem.detect_after if lem else None, lemon_window=lem.window if lem else 7 * 86400.0,
                  lemon_drain=lem.drain if lem else 0.0, bin=3600.0 if cl.days <= 62 else 86400.0, seed=cl.seed)


def load_jobs(cl, site: ClusterSite, src, base_dir: Path | None, horizon: float) -> tuple[jobset.JobSet, dict | None]:
    """The run's jobs, and the trace's statistics when they come from a trace."""
    where = ("cluster", "jobs")
    if cl.jobs.mix is not None:
        mix = cl.jobs.mix
        names = [k.name for k in mix.kinds]
        for i, c in enumerate(mix.sizes):
            if c.kind is not None and c.kind not in names:
                raise SpecError([error(src, where + ("mix", "sizes", i, "kind"), f"kind '{c.kind}' is not among the mix's kinds",
                                       ", ".join(names))])
            if c.gpus > site.gpus:
                raise SpecError([error(src, where + ("mix", "sizes", i, "gpus"), f"{c.gpus:,} GPUs: more than the site's {site.gpus:,}",
                                       f"at most {site.gpus:,}")])
        try:
            return jobset.from_mix(mix, horizon, site.gpus_per_server, cl.seed), None
        except limits.CostError as e:
            raise SpecError([error(src, where + ("mix", "rate"), str(e))]) from None
    from twin.twins.cluster import traces

    tr = cl.jobs.trace
    try:
        loaded = traces.read(tr, src, base_dir)
        return traces.jobset_of(loaded, site, tr.kind, tr.start, horizon), traces.statistics(loaded)
    except traces.TraceError as e:
        raise SpecError([e.diagnostic]) from None
    except limits.CostError as e:
        raise SpecError([error(src, where + ("trace", "file"), str(e))]) from None


def simulate_cluster(design, cl, src=None, base_dir: Path | None = None, progress=None, site: ClusterSite | None = None,
                     results: list[dict] | None = None) -> tuple[dict, object]:
    """(the result document's ``cluster`` part, the raw :class:`Outcome`); ``results``: the job twin's results of the
    scenario's jobs (the first case), for the mix's classes that run a workload."""
    site = site or from_design(design)
    D = cl.days * 86400.0
    if progress:
        progress("cluster: the jobs")
    linked = profiles.resolve(cl.jobs.mix, results, src) if cl.jobs.mix is not None else {}
    jobs, stats = load_jobs(cl, site, src, base_dir, D)
    classes = design.spec.catalog.reliability if design is not None else {}
    sources, notes = fail.from_scenario(cl.failures, classes, site.gpus_per_server, site.trays)
    lem = cl.failures.lemons
    lemons = fail.lemon_mask(site.servers, lem.share if lem else 0.0, cl.seed)
    factor = lem.factor if lem else 1.0
    racks = int(site.rack.max()) + 1
    n_fail = fail.expected(sources, site.servers, racks, lemons, factor, D)
    try:
        limits.check("cluster_failures", n_fail, "failures expected over the span")
    except limits.CostError as e:
        raise SpecError([error(src, ("cluster", "failures"), str(e))]) from None
    if cl.spares >= site.servers:
        raise SpecError([error(src, ("cluster", "spares"), f"{cl.spares:,} spares of {site.servers:,} servers leave none to run jobs",
                               f"fewer than {site.servers:,}")])
    arr = fail.arrivals(sources, site.servers, racks, lemons, factor, D, cl.seed)
    if progress:
        progress(f"cluster: {len(jobs):,} jobs and {len(arr[0]):,} failures over {cl.days:g} days")
    shared = shared_fabric(design, cl, site, progress)
    pol = policy_of(cl)
    power, kind = site_draw(design, cl, src, D, pol.bin, jobs, linked)
    cap = power if power is not None and power.controls else None
    comm = profiles.comm_of(jobs, linked)
    out = Run(site, jobs, sources, arr, lemons, pol, D, shared, comm, power, profiles.busy_of(jobs, linked, comm, cl.fabric), kind).go()
    doc = summary(out, jobs, site, sources, lemons, list(jobs.notes) + notes)
    if linked:
        doc["workloads"] = profiles.summary(jobs, out, linked)
    if shared is not None:
        doc["fabric"] = {"comm_share": shared.w, "placements_routed": shared.routed,
                         "slowed_share_of_held": out.buckets["neighbours"] / max(sum(out.buckets[k] for k in JOB_BUCKETS), 1e-300)}
    if design is not None and getattr(design, "budget", None) is not None:
        from twin.twins.cluster.power import site_power

        running = np.asarray(doc["series"]["gpu_states"]["running"], float)
        nb = len(running)
        width = np.minimum(out.bin, out.horizon - np.arange(nb) * out.bin)
        doc["power"] = site_power(design, running, site.gpus, site.gpus_per_server, out.bin, cl.fabric.comm_share if cl.fabric else None,
                                  power.held_j / width if power is not None else None, cap.F if cap is not None else None)
        if cap is not None:
            doc["power"]["site_cap"] = {"cap_kw": cap.F / 1e3, "interval_s": cap.interval, "gpu_w_min": cap.lowest,
                                        "gpu_w_uncapped": cap.ph.compute, "levels_set": cap.levels,
                                        "slowed_share_of_held": out.buckets["powercap"] / max(sum(out.buckets[k] for k in JOB_BUCKETS), 1e-300)}
    if stats is not None:
        doc["trace"] = stats
    return doc, out


def site_draw(design, cl, src, horizon: float, bin_s: float, jobs, linked: dict):
    """(the site power cap's manager, :mod:`twin.twins.cluster.sitecap`, when the scenario states one; else the count of
    GPUs held by kind when some jobs run a workload, for the site's power; else None, each job's kind of draw)."""
    if cl.power is None and not linked:
        return None, None
    if design is None or getattr(design, "budget", None) is None:
        if cl.power is None:
            return None, None
        raise SpecError([error(src, ("cluster", "power"), "a site power cap needs the design's power budget")])
    from twin.twins.cluster.power import SiteDraw, phases_of
    from twin.twins.cluster.sitecap import SiteCap

    draws, kind = profiles.draws_of(jobs, linked, phases_of(design), cl.fabric)
    if cl.power is None:
        return SiteDraw(design, draws, horizon, bin_s), kind
    return SiteCap(design, draws, horizon, bin_s, cl.power.cap, cl.power.interval), kind


def shared_fabric(design, cl, site: ClusterSite, progress=None):
    """The compiled fabric the jobs share (:mod:`twin.twins.cluster.fabric`), when the scenario asks for it."""
    if cl.fabric is None:
        return None
    from twin.twins.cluster.fabric import SharedFabric
    from twin.twins.net.topology import from_design as net_of

    if progress:
        progress("cluster: the shared fabric")
    return SharedFabric(net_of(design), site.ids, cl.fabric.comm_share)


def summary(out, jobs, site: ClusterSite, sources, lemons: np.ndarray, notes: list[str]) -> dict:
    total = float(site.gpus) * out.horizon
    b = out.buckets
    booked = sum(b.values())
    held = sum(b[k] for k in JOB_BUCKETS)
    cls = size_class(jobs.gpus)
    gpu_time = jobs.gpus * jobs.work
    small = float((jobs.gpus < 8).mean()) if len(jobs) else 0.0
    big_share = float(gpu_time[jobs.gpus >= 256].sum() / gpu_time.sum()) if len(jobs) else 0.0
    nb = len(out.series["running"])
    width = np.minimum(out.bin, out.horizon - np.arange(nb) * out.bin)
    return {
        "site": site.name, "gpus": site.gpus, "servers": site.servers, "zones": site.zones,
        "days": out.horizon / 86400.0, "jobs": len(jobs),
        "buckets_gpu_h": {k: b[k] / 3600.0 for k in BUCKETS},
        "shares": {k: b[k] / total for k in BUCKETS},
        "conservation_gpu_s": booked - total,
        "utilization": held / total,
        "goodput": b["productive"] / total,
        "counts": out.counts,
        "failures_by_source": out.by_source,
        "failures_by_causes": out.by_causes,
        "sources": [{"name": s.name, "causes": s.causes, "unit": s.unit, "per_1000_unit_days": s.rate * 86400e3,
                     "detection_s": s.detection, "repair_s": s.repair} for s in sources],
        "lemons": {"servers": int(lemons.sum()), "drained": out.counts["lemons_drained"], "drained_true": out.counts["lemons_true"],
                   "jobs_touched_share": out.counts["jobs_on_lemons"] / len(jobs) if len(jobs) else 0.0},
        "mix": {"jobs_under_8_gpus": small, "gpu_time_256_plus": big_share,
                "jobs_by_size": {LABELS[c]: int((cls == c).sum()) for c in range(len(LABELS)) if (cls == c).any()}},
        "by_size": by_class(out, jobs),
        "series": {"bin_s": out.bin, "gpu_states": {k: (v / width).round(3).tolist() for k, v in out.series.items()}},
        "notes": notes,
    }
