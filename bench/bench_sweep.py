"""Benchmark: a 20-variant sweep on 1 and on 2 Dask worker processes (goal: 2 workers >= 1.7x faster on 2 cores).

The variants are meta-24k-roce cut to 2 AI zones (6,144 GPUs, 768 racks) with the cross-zone oversubscription
from 1:1 to 1:10, each built through its bill of materials and priced (naive placement), and the Llama 3
405B job cut to DP32 (4,096 GPUs) timed by the job twin in topology and in naive rank order. Each worker count gets its own LocalCluster, warmed up (imports,
one throwaway variant per worker) before the timed runs, so the medians time the sweep, not Python's
start-up; the cold run (cluster start included, as `twin sweep` does it) is reported once. Every run
starts from an empty results folder (no cache). The results files must be byte-identical across runs
and worker counts.

Run: python bench/bench_sweep.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twin.sweep import engine  # noqa: E402
from twin.sweep.cluster import private_cluster  # noqa: E402
from twin.sweep.load import load_sweep  # noqa: E402
from twin.sweep.output import write  # noqa: E402
from twin.sweep.worker import evaluate, peak_rss_bytes  # noqa: E402


def cpu_seconds() -> float:
    """CPU time (user + system) this process has used: summed over the workers around each run."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_pressure() -> str:
    """Linux PSI: the share of the last 60 s some runnable task waited for a CPU (other users' load)."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return line.split()[2].split("=")[1] + "%"
    except (OSError, IndexError):
        return "n/a"

SWEEP = f"""name: bench-sweep
site: {ROOT / 'sites' / 'meta-24k-roce.yaml'}
placement: naive
scenario:
  name: bench-job
  routing:
    - {{name: e-ecmp-16qp, scheme: e-ecmp, qps: 16}}
  jobs:
    - {{workload: llama3-405b-16k, order: topology, kv_heads: 8, virtual_stages: 4}}
axes:
  - zip:
      fabric.zones: [2]
      fabric.gpus: [null]
      workloads[0].dp: [32]
      workloads[1].dp: [32]
    labels: [2-zones]
  - path: fabric.atsw.oversubscription
    range: {{from: 1, to: 10, step: 1}}
  - path: scenario.jobs[0].order
    values: [topology, naive]
figures: [gpus, switches, capex, capex_network, network_share, step_time_s, tokens_per_day_per_dollar]
"""
FILES = ("results.csv", "results.parquet", "summary.md")


def timed(sw, workers: int, repeats: int) -> tuple[list[float], dict[str, int], list[dict[str, bytes]], list[float]]:
    client = private_cluster(workers)  # the sweep's own TLS cluster: no other local user can join the benchmark's either
    try:
        warm = engine.payload(sw, engine.variants(sw)[0])
        client.run(evaluate, warm)  # every worker imports twin and builds one variant
        times, outputs, cpu = [], [], []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                c0 = sum(client.run(cpu_seconds).values())
                t0 = time.perf_counter()
                oc = engine.run(sw, Path(tmp), client=client)
                times.append(time.perf_counter() - t0)
                cpu.append(sum(client.run(cpu_seconds).values()) - c0)
                files = write(sw, oc, Path(tmp))
                assert oc.computed == 20 and all(r["status"] == "ok" for r in oc.results.values()), oc.results
                outputs.append({k: files[k] for k in FILES})
        peak = client.run(peak_rss_bytes)
    finally:
        engine.close_client(client)
    return times, peak, outputs, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "bench.yaml"
        p.write_text(SWEEP)
        sw = load_sweep(p, root=ROOT)  # the site is in the checkout, the sweep file in a temporary folder
        assert sw.count == 20
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            engine.run(sw, Path(out), workers=2)
        cold = time.perf_counter() - t0
        res = {}
        for w in (1, 2):
            res[w] = timed(sw, w, args.repeats)
            times, peak, _, cpu = res[w]
            busy = statistics.median(c / (t * w) for c, t in zip(cpu, times))
            print(f"{w} worker(s): median {statistics.median(times):.1f} s over {len(times)} runs "
                  f"({', '.join(f'{t:.1f}' for t in times)}); worker CPU {statistics.median(cpu):.1f} s, "
                  f"{100 * busy:.0f}% of the workers' wall time on a CPU; peak RSS per worker "
                  + ", ".join(f"{b / 2**20:.0f} MiB" for b in peak.values()) + f"; CPU pressure (60 s) {cpu_pressure()}")
        m1, m2 = statistics.median(res[1][0]), statistics.median(res[2][0])
        outs = res[1][2] + res[2][2]
        same = all(o == outs[0] for o in outs)
        print(f"speed-up 2 workers / 1 worker: {m1 / m2:.2f}x (goal >= 1.7x); a CPU pressure near 100% means other"
              " processes held the cores and the wall times measure the machine's load, not the sweep")
        print(f"cold sweep with 2 workers (cluster start included): {cold:.1f} s")
        print(f"results byte-identical across {len(outs)} runs and both worker counts: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
