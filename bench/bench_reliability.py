"""Benchmark: the reliability twin's campaign Monte Carlo on meta-24k-roce.

Goal (issue 10): 1,000 campaigns of 54 days for the 16,384-GPU Llama 3 job in under 10 s on 2 cores,
vectorised over runs, and a 100K-GPU job the same. The 100K job is extrapolated per GPU from the whole
24,576-GPU site (the design has no 100K GPUs). Each line is the median of ``--repeat`` timings of
``engine.simulate`` alone (the design compile, the footprint and the network twin are reported apart:
they are done once per campaign, not per run), with an unlimited spare pool and with a finite one
(which tracks every server in repair).

    python bench/bench_reliability.py            # both sizes, 5 repeats
    python bench/bench_reliability.py --repeat 3 --runs 1000
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "sites" / "meta-24k-roce.yaml"
DAYS = 54


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runs", type=int, default=1000)
    args = ap.parse_args()

    import twin
    from twin.twins.reliability import answers, checkpoint
    from twin.twins.reliability.components import Reach, failure_modes, footprint, scaled
    from twin.twins.reliability.engine import Plan, simulate

    t0 = time.perf_counter()
    design = twin.load(SITE)
    t_design = time.perf_counter() - t0
    g = design.fabric.graph
    classes = design.spec.catalog.reliability
    print(f"design compile (apart): {t_design:.1f} s")
    for gpus in (16384, 100_000):
        t1 = time.perf_counter()
        if gpus <= design.spec.gpus:
            fp = footprint(g, gpus)
            modes = failure_modes(classes, fp, Reach(g, fp))
        else:
            whole = footprint(g, design.spec.gpus)
            modes = failure_modes(classes, scaled(whole, gpus), Reach(g, whole))
        t_fp = time.perf_counter() - t1
        servers = gpus // 8
        ck = checkpoint.cost(405e9 * 16, gpus, servers, 1, 2e12, 25e9, "sync", 50e9)
        lam = answers.unexpected_rate(modes)
        interval = checkpoint.young_daly(ck.stall_s, 1 / lam)
        for spares in (None, 64 if gpus <= 16384 else 256):
            plan = Plan(DAYS * 86400.0, args.runs, 1, interval=interval, stall=ck.stall_s, restore=ck.restore_s,
                        restart=300.0, swap=120.0, final_write=ck.final_write_s, spares=spares, keep_events=False)
            times, out = [], None
            for _ in range(args.repeat):
                t2 = time.perf_counter()
                out = simulate(modes, plan)
                times.append(time.perf_counter() - t2)
            med = statistics.median(times)
            n = out.counts[:, [i for i, m in enumerate(modes) if m.kind != "degrade"]].sum(axis=1).mean()
            pool = "unlimited" if spares is None else f"{spares:>9}"
            print(f"{gpus:>7,} GPUs  {args.runs:,} runs x {DAYS} d  spares {pool}  {n:7.1f} interruptions/run  "
                  f"ETTR P50 {100 * float(statistics.median(out.ettr)):5.1f}%  median {med:6.2f} s  "
                  f"(footprint and blast radii {t_fp:.1f} s apart)  goal < 10 s: {'met' if med < 10 else 'NOT met'}")
    whole_campaign(design, args.runs)


def whole_campaign(design, runs: int) -> None:
    """The whole campaign of a scenario without a job (step time given): main run plus the three sweeps
    (200 runs per point), as `twin simulate` runs it; the design compile is apart."""
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.run import simulate

    scn, src = parse_scenario(f"""name: bench
campaign: {{days: {DAYS}, runs: {runs}, workload: llama3-405b-16k, step_time: 8.28 s}}
""")
    t0 = time.perf_counter()
    c = simulate(design, scn, src).data["campaign"]
    print(f"whole campaign, 16,384 GPUs, {runs:,} runs + interval/spares/size sweeps: {time.perf_counter() - t0:.1f} s "
          f"(ETTR P50 {100 * c['ettr']['p50']:.1f}%, best interval {c['sweeps']['interval']['best_s'] / 60:.1f} min, "
          f"smallest spare pool {c['sweeps']['spares']['smallest_within_tolerance']})")


if __name__ == "__main__":
    main()
