"""Benchmark: one ring AllReduce across the GPUs of meta-24k-roce, NCCL's 2 channels per NIC with
16 QPs each (32 QP flows per GPU pair of a ring), per-switch E-ECMP hashing, flow-level max-min fluid
model; growth from 1K to 24K GPUs.

Each size runs in its own process so peak memory (ru_maxrss) is that size's own. The design is
compiled once per process (reported apart: it is the compiler, not the twin); the simulation time
is compile-to-arrays + routing + fluid model of one ring step (the 2(n-1) steps of a ring are
identical, so the AllReduce time is that step times 2(n-1) plus latency).

    python bench/bench_sim.py            # the growth table, then the naive-order Llama 3 job
    python bench/bench_sim.py --one 24576
    python bench/bench_sim.py --job      # only the job line

The job line times the 16K-GPU Llama 3 405B job (TP8 PP16 DP128) with naive (shuffled servers) rank
order under 1-QP ECMP and 16-QP E-ECMP: the case that crosses the 1:7 ATSW tier with thousands of
distinct bottleneck rates, which used to take over 13 minutes before the fluid model's warm start.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "sites" / "meta-24k-roce.yaml"
SIZES = [1024, 3072, 6144, 12288, 24576]


def subgraph(g, gpus: int, gpus_per_rack: int, racks_per_zone: int):
    """The fabric of the first ``gpus`` GPUs: whole zones, or the first racks of zone 1 (with its
    CTSWs); the ATSWs only when more than one zone is kept."""
    racks = gpus // gpus_per_rack
    zones = max(1, racks // racks_per_zone)
    keep_racks = None if racks >= racks_per_zone else racks
    nodes = []
    rack_ids = sorted({d["rack"] for n, d in g.nodes(data=True) if d.get("role") == "rtsw" and d.get("zone") == 0})
    allowed = set(rack_ids[:keep_racks]) if keep_racks else None
    for n, d in g.nodes(data=True):
        z = d.get("zone")
        role = d.get("role")
        if role in ("atsw", "core"):
            if zones > 1:
                nodes.append(n)
            continue
        if z is None or z >= zones:
            continue
        if allowed is not None and role in ("rtsw", "server", "nic", "leaf") and d.get("rack") not in allowed:
            continue
        nodes.append(n)
    return g.subgraph(nodes).copy()


def one(gpus: int) -> dict:
    import numpy as np

    import twin
    from twin.twins.net import collectives as coll
    from twin.twins.net import fluid, routing, topology
    from twin.twins.net.nccl import Library

    t0 = time.perf_counter()
    design = twin.load(SITE)
    t_design = time.perf_counter() - t0
    spec = design.spec
    g = design.fabric.graph
    if gpus < spec.gpus:
        g = subgraph(g, gpus, spec.rack.gpus, spec.racks_per_zone)
    t1 = time.perf_counter()
    net = topology.from_design(design, g)
    t_compile = time.perf_counter() - t1
    ranks = np.arange(net.n_gpus)
    scheme = routing.Scheme("e-ecmp-16qp", "e-ecmp", 16)
    lib = Library(nic_latency=spec.chassis.nic_latency)
    t2 = time.perf_counter()
    ph = coll.plan(net, "allreduce", "ring", ranks, lib=lib)[0][0]
    r = routing.route(net, ph.src, ph.dst, ph.frac, scheme, ph.conns, ph.pxn)
    t_route = time.perf_counter() - t2
    t3 = time.perf_counter()
    res = fluid.complete(r.A, coll.effective_capacity(net, lib, net.arc_cap), r.size)
    t_fluid = time.perf_counter() - t3
    total = t_compile + t_route + t_fluid
    # the same collective through the public API (one phase, so the solve above is all it does)
    tm = coll.time_collective(net, "allreduce", "ring", ranks, scheme, lib=lib)
    size = 2.0**30
    return {
        "gpus": int(net.n_gpus),
        "flows": int(r.n_flows),
        "classes": int(r.A.shape[1]),
        "events": int(res.events),
        "design_s": t_design,
        "compile_s": t_compile,
        "route_s": t_route,
        "fluid_s": t_fluid,
        "sim_s": total,
        "peak_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "busbw_GBps_1GiB": tm.busbw(size) / 1e9,
        "busbw_GBps_bandwidth_only": (2 * (len(ranks) - 1) / len(ranks)) / (ph.repeat * res.makespan / lib.eta) / 1e9,
    }


def naive_job() -> dict:
    """Simulate scenarios/llama3-405b.yaml's naive-order job alone; the design compile is apart."""
    import twin
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.run import simulate

    t0 = time.perf_counter()
    design = twin.load(SITE)
    t_design = time.perf_counter() - t0
    scn, src = parse_scenario(
        "name: naive-job\n"
        "routing:\n"
        "  - {name: ecmp-1qp, scheme: ecmp, qps: 1}\n"
        "  - {name: e-ecmp-16qp, scheme: e-ecmp, qps: 16}\n"
        "jobs:\n"
        "  - {workload: llama3-405b-16k, order: naive}\n")
    t1 = time.perf_counter()
    res = simulate(design, scn, src)
    t_sim = time.perf_counter() - t1
    job = res.data["cases"][0]["jobs"][0]
    return {"design_s": t_design, "sim_s": t_sim, "peak_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "step_s": {s["scheme"]: s["step_s"] for s in job["schemes"]}}


def print_job(j: dict) -> None:
    steps = ", ".join(f"{k} {v:.3f} s" for k, v in j["step_s"].items())
    print(f"Llama 3 405B, 16,384 GPUs, naive rank order, 2 schemes: sim {j['sim_s']:.1f} s, peak {j['peak_rss_GiB']:.2f} GiB "
          f"(design compile {j['design_s']:.1f} s apart); step {steps}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", type=int, help="run one size in this process and print JSON")
    ap.add_argument("--job", action="store_true", help="only time the naive-order Llama 3 405B job")
    ap.add_argument("--job-json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    if args.job_json:
        print(json.dumps(naive_job()))
        return
    job_cmd = [sys.executable, __file__, "--job-json"]
    if args.job:
        out = subprocess.run(job_cmd, capture_output=True, text=True, check=True)
        print_job(json.loads(out.stdout.strip().splitlines()[-1]))
        return
    rows = []
    for n in SIZES:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    head = f"{'GPUs':>6} {'QP flows':>9} {'classes':>8} {'events':>6} {'compile s':>9} {'route s':>7} {'fluid s':>7} {'sim s':>6} {'peak GiB':>8} {'busbw GB/s':>10} {'(bw only)':>9}"
    print(head)
    for r in rows:
        print(f"{r['gpus']:>6} {r['flows']:>9,} {r['classes']:>8,} {r['events']:>6} {r['compile_s']:>9.2f} {r['route_s']:>7.2f} "
              f"{r['fluid_s']:>7.2f} {r['sim_s']:>6.2f} {r['peak_rss_GiB']:>8.2f} {r['busbw_GBps_1GiB']:>10.1f} {r['busbw_GBps_bandwidth_only']:>9.1f}")
    print(f"design compile (twin.load, not part of the simulation): {rows[-1]['design_s']:.1f} s at {rows[-1]['gpus']:,} GPUs")
    big = rows[-1]
    ok = big["sim_s"] < 30 and big["peak_rss_GiB"] < 8
    print(f"target at {big['gpus']:,} GPUs: < 30 s and < 8 GiB: {'met' if ok else 'NOT met'}")
    out = subprocess.run(job_cmd, capture_output=True, text=True, check=True)
    print_job(json.loads(out.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
