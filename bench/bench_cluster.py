"""Benchmark: the cluster twin's month of meta-24k-roce (issue 37).

Goal: 30 days of meta-24k-roce with about 300,000 jobs and about 600 node failures in at most 60 s on
one core (a published scheduler simulator runs 20,000 jobs on 6,500 GPUs in 52-111 s). The design
compile is apart (done once, not per run). Each line is the median of ``--repeat`` timings of the
cluster run alone (jobs drawn, failures drawn, the clock, the summary), for the scenario's own mix
(scenarios/meta-rsc-month.yaml, 7,200 jobs a day) and the same mix at 10,000 jobs a day (about 300,000
jobs; the site is then over-subscribed and the queue grows, which is the scheduler's hard case), under
EASY backfill with preemption and under FIFO; the scenario's mix with a shared fabric
(``fabric: {comm_share: 0.3}``: every multi-server job's ring laid on the compiled fabric); and the
scenario's mix under a site power cap of 40 MW (the design's facility budget is 45.8 MW: the manager
caps the GPUs every 15 min and every running job's step follows). Each line gives the wall time and the
process's CPU time (the machine may be shared).

    python bench/bench_cluster.py              # 3 repeats
    python bench/bench_cluster.py --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "sites" / "meta-24k-roce.yaml"
SCENARIO = ROOT / "scenarios" / "meta-rsc-month.yaml"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import twin
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.cluster.run import simulate_cluster
    from twin.twins.cluster.site import from_design

    t0 = time.perf_counter()
    design = twin.load(SITE)
    site = from_design(design)
    print(f"design compile (apart): {time.perf_counter() - t0:.1f} s; {site.gpus:,} GPUs, {site.servers:,} servers, {site.zones} zones")
    text = SCENARIO.read_text(encoding="utf-8")
    for rate, policy, shared, cap in (("7200 / day", "easy", False, None), ("10000 / day", "easy", False, None),
                                      ("10000 / day", "fifo", False, None), ("7200 / day", "easy", True, None),
                                      ("7200 / day", "easy", False, "40 MW")):
        variant = text.replace("rate: 7200 / day", f"rate: {rate}").replace("policy: easy", f"policy: {policy}")
        variant += "  fabric: {comm_share: 0.3}\n" if shared else ""
        variant += f"  power: {{cap: {cap}}}\n" if cap else ""
        scn, src = parse_scenario(variant, str(SCENARIO))
        times, cpu, doc = [], [], None
        for _ in range(args.repeat):
            t1, c1 = time.perf_counter(), time.process_time()
            doc, _ = simulate_cluster(design, scn.cluster, src, site=site)
            times.append(time.perf_counter() - t1)
            cpu.append(time.process_time() - c1)
        med = statistics.median(times)
        k = doc["counts"]
        print(f"{rate:>12}  {policy:4}{' fabric' if shared else ''}{' cap ' + cap if cap else ''}  {doc['jobs']:>7,} jobs  {k['failures']:4} node failures  {k['preemptions']:5,} preemptions  "
              f"utilization {100 * doc['utilization']:5.1f}%  goodput {100 * doc['goodput']:5.1f}%  "
              + (f"slowed by the cap {100 * doc['shares']['powercap']:.1f}%  " if cap else "")
              + f"median {med:5.1f} s (of {', '.join(f'{t:.1f}' for t in times)}; CPU {statistics.median(cpu):.1f} s)  goal <= 60 s: {'met' if med <= 60 else 'NOT met'}")


if __name__ == "__main__":
    main()
