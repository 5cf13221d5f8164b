"""The build's default twin run: a ring AllReduce over the first GPUs under three routing schemes and
the site's first workload on its fabric (:func:`design_results`). The build runs it once and hands the
result to the report, the pictures and review.json (:mod:`twin.build`); nothing else runs it.
"""

from __future__ import annotations

REPORT_GPUS = 256  # the report's AllReduce runs on the first GPUs only, so `twin build` stays fast
REPORT_SIZES = [2.0**k for k in range(20, 31, 2)]  # 1 MiB .. 1 GiB, the busbw-vs-size curve of the report
LOAD_BIN = 0.25  # link-load histogram bin (x the mean load of the links a shortest path may take)


def design_results(d, progress=None) -> dict | None:
    """:func:`_design_results` with the cyclic garbage collector paused: the run allocates arrays and
    small containers, none cyclic, and every collection it would trigger rescans the compiled design
    (~0.25 CPU-s of the 24K site's run); garbage it leaves is collected after."""
    from twin.heap import collector_paused

    with collector_paused():
        return _design_results(d, progress)


def design_results_or_why(d, progress=None) -> tuple[dict | None, str | None]:
    """:func:`design_results`, or None and why it could not run in one line: a twin that cannot run is a line
    of the report, not a failed build."""
    try:
        return design_results(d, progress), None
    except Exception as e:  # noqa: BLE001 - any failure of the twin, said in one line
        return None, one_line(e)


def one_line(e: BaseException, limit: int = 300) -> str:
    """Why a twin could not run, in one line: the exception's first line (its type where it says nothing).

    >>> one_line(ValueError("some destinations are unreachable\\nmore"))
    'some destinations are unreachable'
    >>> one_line(ZeroDivisionError())
    'ZeroDivisionError'
    """
    text = str(e).strip().splitlines()
    line = text[0] if text else type(e).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _design_results(d, progress=None) -> dict | None:
    """The build's default twin run, as JSON-ready data: ring AllReduce over the first REPORT_GPUS GPUs
    under three routing schemes (busbw at REPORT_SIZES; max/mean link load and its histogram over the
    links a shortest path may take, :mod:`twin.twins.net.load`), and the step breakdown of the site's first workload on the whole fabric.

    Cheap by construction (a subgraph of at most REPORT_GPUS GPUs, one ring phase per scheme; the job
    twin's closed-form step on the whole fabric); the full what-ifs are `twin simulate`'s job."""
    fab = d.fabric
    if fab is None or getattr(fab, "graph", None) is None:
        return None
    import numpy as np

    from twin.twins.net import collectives as coll
    from twin.twins.net import load as link_load
    from twin.twins.net import routing, subfabric, topology
    from twin.twins.net.nccl import PROTOCOL_EFFICIENCY, Library

    net = topology.from_design(d, within=subfabric.first_gpus(fab.graph, REPORT_GPUS))
    if net.n_gpus < 2 or (net.nic_leaf < 0).all():
        return None
    qps = d.spec.fabric.routing.qps_per_gpu_pair
    ranks = np.arange(net.n_gpus)
    schemes = [routing.Scheme("ecmp, 1 QP", "ecmp", 1), routing.Scheme(f"e-ecmp, {qps} QPs", "e-ecmp", qps),
               routing.Scheme("spray (upper bound)", "spray", 1)]
    out = {"gpus": int(net.n_gpus), "racks": len(set(net.server_rack)), "protocol_efficiency": PROTOCOL_EFFICIENCY,
           "sizes": REPORT_SIZES, "load_bin": LOAD_BIN, "schemes": []}
    lib = Library(nic_latency=d.spec.chassis.nic_latency)
    out["channels_per_nic"] = {}
    phases = coll.plan(net, "allreduce", "ring", ranks, None, lib)[0]
    say = progress or (lambda _m: None)
    for s in schemes:
        say(f"default twin: AllReduce over {net.n_gpus:,} GPUs, {s.name}")
        tm = coll.time_collective(net, "allreduce", "ring", ranks, s, keep_load=True, lib=lib)
        hier = hierarchical(net, ranks, s, lib)
        out["channels_per_nic"]["ring"] = tm.cost.channels
        if hier:
            out["channels_per_nic"]["hierarchical"] = hier.cost.channels
        ll = link_load.collective(net, tm, phases)  # the one definition, as `twin simulate` reports it
        rel = ll.relative()
        bins = int(np.ceil(max(1.0, float(rel.max(initial=0.0))) / LOAD_BIN + 1e-9))
        counts, _ = np.histogram(rel, bins=bins, range=(0.0, bins * LOAD_BIN))
        out["schemes"].append({"name": s.name, "busbw_GBps": [tm.busbw(z) / 1e9 for z in REPORT_SIZES],
                               "time_ms": [tm.time(z) * 1e3 for z in REPORT_SIZES],
                               "max_over_mean": ll.max_over_mean, "load_hist": [int(c) for c in counts],
                               "hierarchical_busbw_GBps": hier.busbw(REPORT_SIZES[-1]) / 1e9 if hier else None})
    if d.spec.site.workloads:
        say(f"default twin: job {d.spec.site.workloads[0].name}")
    out["job"] = default_job(d, schemes, lib)
    return out


def hierarchical(net, ranks, scheme, lib):
    """The hierarchical AllReduce timed under ``scheme`` (NVLink inside each server, one ring per rail
    across servers: a communicator of one GPU per server, with NCCL's channels for that), or None where
    servers hold different numbers of the ranks."""
    from twin.twins.net import collectives as coll

    try:
        return coll.time_collective(net, "allreduce", "hierarchical", ranks, scheme, lib=lib)
    except ValueError:
        return None


def default_job(d, schemes, lib) -> dict | None:
    """The site's first workload as the job twin times it (topology rank order, healthy fabric)."""
    if not d.spec.site.workloads:
        return None
    from twin.lang.diagnostics import SpecError
    from twin.lang.scenario.job import Case, Job
    from twin.twins.net import subfabric, topology
    from twin.twins.workload import jobs

    w = d.spec.site.workloads[0]
    job = Job(workload=w.name)
    try:
        jobs.refuse_before_fabric(d, job, schemes, None, ("workloads", 0))  # said before a million GPUs' paths are compiled
        # the job's GPUs come first in topology order: the fabric that serves them times it exactly
        net = topology.from_design(d, within=subfabric.first_gpus(d.fabric.graph, w.gpus))
        return jobs.simulate_job(d, net, job, schemes, lib,
                                 Case(name="healthy"), set(), None, ("workloads", 0))
    except SpecError as e:
        return {"workload": w.name, "error": "; ".join(x.message for x in e.diagnostics)}
