"""Run a scenario on a design: resolve ranks and failures, time every collective and job per scheme.

The result is plain JSON-ready data (``Result.data``) plus the per-arc loads the plots need
(``Result.loads``). Failures change the graph, so each case recompiles the fabric: a link that is
down is withdrawn from every ECMP group (BGP does the same), a degraded link keeps its place in the
groups at lower capacity (hashing does not know about capacity), which is exactly why a degraded
link hurts ECMP more than a failed one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx
import numpy as np

from twin.lang.diagnostics import SpecError
from twin.lang.scenario.models import Case, Failure, Scenario
from twin.lang.site.models import FIVE_TUPLE
from twin.lang.validator import error
from twin.twins import bind
from twin.twins.bind import apply_failures, resolve_ranks
from twin.twins.net import collectives as coll
from twin.twins.net import load as link_load
from twin.twins.net import routing, topology
from twin.twins.net.nccl import Library
from twin.twins.net.timing import nccl_table
from twin.twins.net.topology import Net
from twin.twins.reliability.campaign import run_campaign
from twin.twins.results import SCHEMA_VERSION
from twin.twins.workload import jobs as jobs_mod
from twin.twins.workload import serving

SYNTHETIC_NVLINK = 3.6e12  # bit/s per GPU and direction (H100 SXM) for graphs without a design/catalog
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "int8": 1}


@dataclass
class Result:
    data: dict[str, Any]
    loads: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)  # (case, collective, scheme)
    sweeps: dict[tuple[str, str], list[dict]] = field(default_factory=dict)  # (case, collective) -> table rows
    events: list = field(default_factory=list)  # campaign: timeline.Event list of the representative run
    power_views: dict = field(default_factory=dict)  # arrays for the power twin's plots


def schemes_of(scn: Scenario, default_qps: int, site_fields: list[str] | None = None, fabric=None, src=None) -> list[routing.Scheme]:
    """The scenario's routing schemes; ``scheme: site`` takes the kind the site's ``fabric`` spec states
    (:func:`twin.twins.net.routing.site_scheme`), a located error without a site."""
    out = []
    for k, r in enumerate(scn.routing):
        h = r.hash or scn.hash
        fields = tuple(f for f in (site_fields or FIVE_TUPLE) if f != "roce-dst-qp")
        kind, qps = r.scheme, r.qps or default_qps
        if kind == "site":
            if fabric is None:
                raise SpecError([error(src, ("routing", k, "scheme"), "scheme site takes the site's routing, but this run has no site",
                                       "a scheme kind: " + ", ".join(routing.SCHEMES))])
            own = routing.site_scheme(fabric)
            kind, qps = own.kind, r.qps or own.qps
        out.append(routing.Scheme(r.name, kind, qps, h.function, h.seed, h.per_switch, fields, r.ecmp_width))
    return out


def _compile(design, graph, net_base: Net | None) -> Net:
    if design is not None:
        return topology.from_design(design, graph)
    return topology.compile_graph(graph, {}, SYNTHETIC_NVLINK)


def simulate(design, scn: Scenario, src=None, graph: nx.MultiGraph | None = None, progress=None) -> Result:
    """Time every collective and job of the scenario, per case and routing scheme.

    ``design`` may be None when ``graph`` is given (a synthetic fabric; catalog defaults then apply). A
    fabric-only study runs the network twins alone: the power, reliability and cluster twins need the floor."""
    if design is not None and design.spec.site.fabric_only and (scn.power or scn.campaign or scn.cluster):
        from twin.compiler.study import floor_needed

        floor_needed(design.spec, "the scenario's power, reliability and cluster twins")
    if not scn.collectives and not scn.jobs and not scn.serving and scn.campaign is None:
        return _design_only(design, scn, src, progress)
    g0 = graph if graph is not None else design.fabric.graph
    routing_spec = design.spec.fabric.routing if design is not None else None
    default_qps = routing_spec.qps_per_gpu_pair if routing_spec else 16
    schemes = schemes_of(scn, default_qps, list(routing_spec.hash_fields) if routing_spec else None,
                         design.spec.fabric if design is not None else None, src)
    net0 = None  # a campaign alone reads the graph, not its paths (at a million GPUs the paths are the largest part)
    if scn.collectives or scn.jobs or scn.serving or any(c.failures for c in scn.cases):
        if progress:
            progress("the fabric's paths and links for the network twin")
        net0 = _compile(design, g0, None)
    if progress:
        progress("check the scenario's references against the design")
    bind.check(design, scn, src, g0, net0)  # every reference at once, before anything runs
    lib = library_of(scn, design)
    plans = []
    if any(j.plan == "best" for j in scn.jobs):  # plan: best jobs take the plan search's pick on this design
        from twin.twins.plan import best as plan_best

        scn, plans = plan_best.resolve(design, scn, schemes, lib, src, progress)
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "scenario": scn.name,
        "site": design.name if design is not None else "synthetic",
        "gpus": net0.n_gpus if net0 is not None else design.spec.gpus,
        "protocol_efficiency": scn.protocol_efficiency,
        "step_overhead_us": scn.step_overhead * 1e6,
        "nccl": {"channels_per_nic": scn.nccl.channels_per_nic or "auto", "p2p_channels": scn.nccl.p2p_channels,
                 "protocols": list(scn.nccl.protocols), "nic_latency_us": lib.nic_latency * 1e6,
                 **({"version": scn.nccl.version} if scn.nccl.version else {})},
        "schemes": [{"name": s.name, "scheme": s.kind, "qps": s.qps, "hash": s.hash_function, "seed": s.seed, "per_switch": s.per_switch} for s in schemes],
        "notes": list(net0.notes) if net0 is not None else [],
        "cases": [],
        **({"plans": plans} if plans else {}),
    }
    res = Result(out)
    for ci, case in enumerate(scn.cases):
        if progress:
            progress(f"case {case.name}")
        net, down = apply_failures(g0, net0, case, src, ci)
        c_out: dict[str, Any] = {"case": case.name, "failures": [f.model_dump(exclude_defaults=True) for f in case.failures],
                                 "replace": [r.model_dump(by_alias=True) for r in case.replace], "collectives": [], "jobs": [], "serving": []}
        down_idx = {net.server_ids.index(s) for s in down}
        for k, c in enumerate(scn.collectives):
            path = ("collectives", k)
            ranks = resolve_ranks(net, c.ranks, case, src, path + ("ranks",), at_least=2)
            if down_idx & set(net.gpu_server[ranks].tolist()):
                raise SpecError([error(src, path + ("ranks",), f"case '{case.name}' fails a server this collective runs on", "replace it with `replace:` or pick other ranks")])
            peers = resolve_ranks(net, c.peers, case, src, path + ("peers",)) if c.peers is not None else None
            alg = c.algorithm or ("direct" if c.op in ("alltoall", "sendrecv") else "ring")
            algs = list(dict.fromkeys(c.compare)) if c.compare else [alg]
            for k_alg, a in enumerate(algs):
                if a not in coll.ALGORITHMS[c.op]:
                    where = path + (("compare", k_alg) if c.compare else ("algorithm",))
                    raise SpecError([error(src, where, f"{a} is not an algorithm of {c.op}", ", ".join(coll.ALGORITHMS[c.op]))])
            clib = replace(lib, channels_per_nic=c.channels) if c.channels else lib
            sizes = _sizes(c)
            comparison = {}
            for a in algs[1:]:
                comparison[a] = [_timed(net, c.op, a, ranks, s, peers, clib, src, path, per_rail=c.per_rail) for s in schemes]
            timings, entries = [], []
            if c.per_rail:  # the plan, for the links a shortest path may take (twin.twins.net.load)
                phases = coll.plan_groups(net, c.op, algs[0], rail_groups(net, ranks), lib=clib)[0]
            else:
                phases = coll.plan(net, c.op, algs[0], ranks, peers, clib)[0]
            for s in schemes:
                if progress:
                    progress(f"{case.name}: {c.name} / {s.name}")
                tm = _timed(net, c.op, algs[0], ranks, s, peers, clib, src, path, keep_load=True, per_rail=c.per_rail)
                timings.append(tm)
                ll = link_load.collective(net, tm, phases)
                res.loads[(case.name, c.name, s.name)] = ll.utilisation()
                big = sizes[-1]
                entries.append({
                    "scheme": s.name,
                    "latency_share_at_max_size": tm.latency(big) / tm.time(big),
                    "busbw_GBps_at_max_size": tm.busbw(big) / 1e9,
                    "algbw_GBps_at_max_size": tm.algbw(big) / 1e9,
                    "time_us_at_max_size": tm.time(big) * 1e6,
                    "link_load": ll.as_dict(),
                    "phases": [{"label": p.label, "repeat": p.repeat, "steps": p.steps, "us_per_MiB": p.t_per_byte * 2**20 * 1e6,
                                "latency_us": p.latency * 1e6, "flows": p.flows, "classes": p.classes, "events": p.events} for p in tm.phases],
                })
            rows = nccl_table(timings, sizes, DTYPE_BYTES[c.dtype], c.dtype)
            res.sweeps[(case.name, c.name)] = rows
            entry = {"name": c.name, "op": c.op, "algorithm": algs[0], "ranks": int(timings[0].n), "per_rail": c.per_rail,
                     "servers": sorted({net.server_ids[i] for i in net.gpu_server[ranks]})[:16],
                     "schemes": entries, "table": rows}
            if comparison:
                comparison = {algs[0]: timings, **comparison}
                entry["comparison"] = compare_algorithms(comparison, sizes, [s.name for s in schemes])
            c_out["collectives"].append(entry)
        for k, j in enumerate(scn.jobs):
            if progress:
                progress(f"{case.name}: job {j.workload}")
            c_out["jobs"].append(jobs_mod.simulate_job(design, net, j, schemes, lib, case, down_idx, src, ("jobs", k)))
        for k, sv in enumerate(scn.serving):
            if progress:
                progress(f"{case.name}: serving {sv.name}")
            c_out["serving"].append(serving.simulate_serving(design, net, sv, schemes, lib, down_idx, src, ("serving", k)))
        out["cases"].append(c_out)
    if scn.campaign is not None:  # the reliability twin (twin/twins/reliability)
        if design is None:
            raise SpecError([error(src, ("campaign",), "a campaign needs a site design (catalog, workloads, storage)")])
        out["campaign"], res.events = run_campaign(
            design, scn, src, g0, lambda f: campaign_job(design, g0, net0, scn, schemes, src, out, f), progress)
    if scn.cluster is not None:
        _add_cluster(res, design, scn, src, progress, out["cases"][0]["jobs"] if out["cases"] else [])
    if scn.power is not None:
        _add_power(res, design, scn, src, out["cases"][0]["jobs"] if out["cases"] else [], res.events, progress)
    return res


def library_of(scn: Scenario, design) -> Library:
    """The collective library's settings: the scenario's, with the chassis' NIC latency."""
    nic = design.spec.chassis.nic_latency if design is not None else Library().nic_latency
    version = tuple(int(x) for x in scn.nccl.version.split(".")) if scn.nccl.version else Library().version
    return Library(eta=scn.protocol_efficiency, protocols=tuple(scn.nccl.protocols), channels_per_nic=scn.nccl.channels_per_nic,
                   p2p_channels=scn.nccl.p2p_channels, nic_latency=nic, step_overhead=scn.step_overhead, version=version)


def rail_groups(net: Net, ranks: np.ndarray) -> list[np.ndarray]:
    """The selection split by GPU index inside the server: rail c holds GPU c of every server."""
    loc = net.gpu_local[ranks]
    groups = [ranks[loc == c] for c in sorted(set(loc.tolist()))]
    if len({len(g) for g in groups}) != 1:
        raise ValueError("per_rail needs the same GPUs on every selected server")
    return groups


def _timed(net, op, alg, ranks, scheme, peers, lib, src, path, keep_load=False, per_rail=False):
    try:
        if per_rail:
            return coll.time_collective(net, op, alg, None, scheme, keep_load=keep_load, groups=rail_groups(net, ranks), lib=lib)
        return coll.time_collective(net, op, alg, ranks, scheme, peers, keep_load=keep_load, lib=lib)
    except ValueError as e:
        raise SpecError([error(src, path, str(e))]) from None


def compare_algorithms(timings: dict[str, list], sizes: list[float], schemes: list[str]) -> dict:
    """Per scheme: the fastest algorithm at each size, its time, and the sizes where the winner changes.

    >>> class T:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    ...     def time(self, s): return self.a + s / self.b
    >>> c = compare_algorithms({"ring": [T(10.0, 2.0)], "direct": [T(1.0, 1.0)]}, [1, 8, 16, 32], ["x"])
    >>> c["x"]["fastest"], c["x"]["crossovers"]
    (['direct', 'direct', 'direct', 'ring'], [{'from': 'direct', 'to': 'ring', 'between': [16, 32]}])
    """
    out = {}
    for k, name in enumerate(schemes):
        best, times = [], []
        for s in sizes:
            t = {a: ts[k].time(s) for a, ts in timings.items()}
            a = min(t, key=t.get)
            best.append(a)
            times.append({alg: v * 1e6 for alg, v in t.items()})
        cross = [{"from": best[i], "to": best[i + 1], "between": [int(sizes[i]), int(sizes[i + 1])]}
                 for i in range(len(best) - 1) if best[i] != best[i + 1]]
        out[name] = {"fastest": best, "time_us": times, "crossovers": cross}
    return out


# ---------------------------------------------------------------- the power and thermal twin (twin/twins/power)


def _add_power(res: Result, design, scn: Scenario, src, jobs: list[dict], events: list | None = None, progress=None) -> None:
    """Draw the site's power for the scenario's ``power:`` section (jobs: the first case's job results;
    ``events``: the reliability twin's timeline of a representative campaign run, when one ran)."""
    from pathlib import Path

    from twin.twins.power.run import simulate_power

    if design is None:
        raise SpecError([error(src, ("power",), "the power twin needs a site design (placement, catalog)")])
    base = Path(src.path).parent if src is not None and src.path and not src.path.startswith("<") else Path(".")
    if scn.power.campaign_events and not events:
        raise SpecError([error(src, ("power", "campaign_events"), "no campaign ran to take events from", "a campaign: section")])
    window = [e for e in events or [] if e.t < scn.power.duration] if scn.power.campaign_events else None
    pr = simulate_power(design, scn.power, src, jobs, base_dir=base, events=window, progress=progress)
    res.data["power"] = pr.data
    res.power_views = pr.views


def _add_cluster(res: Result, design, scn: Scenario, src, progress=None, jobs: list[dict] | None = None) -> None:
    """The cluster twin (twin/twins/cluster): the scenario's ``cluster:`` section over the whole site (jobs: the first
    case's job results, for the mix's classes that run a workload)."""
    from twin.twins.cluster.run import simulate_cluster

    if design is None:
        raise SpecError([error(src, ("cluster",), "the cluster twin needs a site design (its servers, zones and catalog)")])
    res.data["cluster"], _ = simulate_cluster(design, scn.cluster, src, _base_dir(src), progress, results=jobs)


def _base_dir(src):
    from pathlib import Path

    return Path(src.path).parent if src is not None and src.path and not src.path.startswith("<") else Path(".")


def _design_only(design, scn: Scenario, src, progress=None) -> Result:
    """A scenario without collectives, jobs, serving or a campaign: its cluster and power sections."""
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "scenario": scn.name, "site": design.name if design is not None else "synthetic",
                           "gpus": design.spec.gpus if design is not None else 0, "protocol_efficiency": scn.protocol_efficiency,
                           "step_overhead_us": scn.step_overhead * 1e6, "schemes": [], "notes": [], "cases": []}
    res = Result(out)
    if scn.cluster is not None:
        _add_cluster(res, design, scn, src, progress)
    if scn.power is not None:
        _add_power(res, design, scn, src, [], progress=progress)
    return res


def campaign_job(design, g0, net0: Net, scn: Scenario, schemes, src, out: dict, failure: dict | None) -> dict | None:
    """The campaign's job timed by the job twin on the intact graph, or with one ``failure`` applied
    ({"switch": id}, {"link": id} or {"plane": n}); None when the scenario has no job."""
    if not scn.jobs:
        return None
    k = scn.campaign.job - 1
    first = scn.cases[0]
    if failure is None and not first.failures and not first.replace and out["cases"]:
        return out["cases"][0]["jobs"][k]
    case = Case(name="campaign", failures=[Failure(**failure)] if failure else [])
    net, down = apply_failures(g0, net0, case, src)
    picked = [s for s in schemes if s.name == scn.campaign.routing] or schemes[:1]
    return jobs_mod.simulate_job(design, net, scn.jobs[k], picked, library_of(scn, design), case, {net.server_ids.index(s) for s in down}, src, ("jobs", k))


def _sizes(c) -> list[float]:
    if c.sizes:
        return sorted(c.sizes)
    s, out = c.sweep.min, []
    while s <= c.sweep.max * (1 + 1e-9):
        out.append(float(s))
        s *= c.sweep.factor
    return out
