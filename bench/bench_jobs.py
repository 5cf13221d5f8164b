"""Benchmark: the job twin on its two goals (issue 24).

1. The 16,384-GPU Llama 3 405B job (``llama3-405b-16k``: TP8 PP16 DP128, ZeRO 2, topology order, E-ECMP
   with 16 QPs) on the compiled meta-24k-roce: the training step timed on the fabric, < 15 s (the design's
   compile is reported apart: it is the compiler, not the twin).
2. The validation table (``twin validate-jobs``: both sites compiled and every row of the open set timed)
   end to end, < 2 minutes on 2 cores.

Each measurement runs in its own process (peak memory is its own).

    python bench/bench_jobs.py
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def job() -> dict:
    from twin.compiler.pipeline import compile_design
    from twin.lang.scenario.models import Case, Job
    from twin.twins.net import routing, topology
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs

    t0 = time.perf_counter()
    d = compile_design(ROOT / "sites" / "meta-24k-roce.yaml")
    t_design = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    net = topology.from_design(d)
    j = jobs.simulate_job(d, net, Job(workload="llama3-405b-16k"), [routing.Scheme("e-ecmp-16qp", "e-ecmp", 16)],
                          Library(nic_latency=d.spec.chassis.nic_latency), Case(name="bench"), set(), None, ("jobs", 0))
    t_sim, c_sim = time.perf_counter() - t1, time.process_time() - c1
    return {"design_s": t_design, "sim_s": t_sim, "sim_cpu_s": c_sim, "tflops": j["schemes"][0]["predicted_tflops_per_gpu"],
            "peak_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def table() -> dict:
    from twin.twins.workload import validation

    t0, c0 = time.perf_counter(), time.process_time()
    rows = validation.run()
    s = validation.summary(rows)
    return {"s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "rows": len(rows), "mae": s["open_set"]["mean_abs_error"],
            "peak_rss_GiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("--job", "--table"):
        print(json.dumps(job() if sys.argv[1] == "--job" else table()))
        return
    out = {}
    for what in ("--job", "--table"):
        r = subprocess.run([sys.executable, __file__, what], capture_output=True, text=True, check=True)
        out[what] = json.loads(r.stdout.strip().splitlines()[-1])
    j, t = out["--job"], out["--table"]
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores (wall times stretch under load; CPU times do not)")
    print(f"Llama 3 405B, 16,384 GPUs, topology order, E-ECMP 16 QPs: fabric compiled and the step timed in {j['sim_s']:.1f} s wall, "
          f"{j['sim_cpu_s']:.1f} s CPU ({j['tflops']:.0f} TFLOPs/GPU; design compile {j['design_s']:.1f} s apart; peak "
          f"{j['peak_rss_GiB']:.2f} GiB): {'met' if min(j['sim_s'], j['sim_cpu_s']) < 15 else 'NOT met'} (< 15 s)")
    print(f"validation table: {t['rows']} rows in {t['s']:.1f} s wall, {t['cpu_s']:.1f} s CPU (open-set mean |error| "
          f"{100 * t['mae']:.1f}%, peak {t['peak_rss_GiB']:.2f} GiB): {'met' if min(t['s'], t['cpu_s']) < 120 else 'NOT met'} (< 2 min)")


if __name__ == "__main__":
    main()
