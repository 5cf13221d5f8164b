"""Gigawatt benchmark (issue 40): `twin build` of gigawatt-campus (995,328 GPUs) against meta-campus-100k,
pass by pass, with each pass's time per GPU and its growth from the 100K site to the gigawatt one.

Goals on 2 cores: the whole build of the gigawatt site in at most 3 minutes and 16 GiB peak, and no pass
whose time per GPU grows by more than 1.5x from meta-campus-100k. Each site is built in its own process
(bench/bench_build.py's in-process split: wall and CPU seconds per pass, resident memory after each and
the peak so far; the last row is the forked children, the twins and the design-only emitters), timed from
outside with os.wait4 (wall, CPU, peak RSS of that process alone). The gigawatt build takes minutes and
most of the machine: run it by hand, never in CI.

`--twins` measures the twins at a million GPUs instead (bench_gigawatt_twins.py): each in its own
process, compiled only as far as it reads, time and peak memory per step.

    python bench/bench_gigawatt.py               # one build of each site, a Markdown table
    python bench/bench_gigawatt.py --runs 3 --json
    python bench/bench_gigawatt.py --twins --runs 3
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build import passes  # noqa: E402  (bench/ is a folder of scripts)

SITES = ("meta-campus-100k", "gigawatt-campus")
GPUS = {"meta-campus-100k": 98_304, "gigawatt-campus": 995_328}
GOAL_S, GOAL_GIB, GOAL_GROWTH = 180.0, 16.0, 1.5


def measured(site: str, runs: int) -> dict:
    """Medians over ``runs`` builds of each pass's wall and CPU seconds; the largest peak RSS (self or children)."""
    results = [passes(site)["passes"] for _ in range(runs)]
    names = [r["pass"] for r in results[0]]
    rows = {}
    for i, name in enumerate(names):
        rows[name] = {k: statistics.median(r[i][k] for r in results) for k in ("wall_s", "cpu_s", "peak_mib")}
    total = {k: statistics.median(sum(x[k] for x in r if not math.isnan(x[k])) for r in results) for k in ("wall_s", "cpu_s")}
    peak = max(max(x["peak_mib"] for x in r) for r in results)
    return {"site": site, "gpus": GPUS[site], "runs": runs, "passes": rows, "total": total, "peak_mib": peak}


def growth(small: dict, big: dict) -> dict[str, float]:
    """Per pass: (CPU seconds per GPU of the big site) / (the same of the small one)."""
    out = {}
    for name, row in big["passes"].items():
        s = small["passes"].get(name)
        if s and s["cpu_s"] > 0.05 and not math.isnan(row["cpu_s"]):
            out[name] = (row["cpu_s"] / big["gpus"]) / (s["cpu_s"] / small["gpus"])
    return out


def main(argv: list[str]) -> int:
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 1
    if "--twins" in argv:
        from bench_gigawatt_twins import main as twins

        return twins(runs, "--json" in argv)
    small, big = (measured(s, runs) for s in SITES)
    g = growth(small, big)
    ok = big["total"]["wall_s"] <= GOAL_S and big["peak_mib"] / 1024 <= GOAL_GIB and all(v <= GOAL_GROWTH for v in g.values())
    summary = {"machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()[0]}, "sites": [small, big], "growth_per_gpu": g,
               "goal": {"seconds": GOAL_S, "gib": GOAL_GIB, "growth": GOAL_GROWTH}, "ok": ok}
    if "--json" in argv:
        print(json.dumps(summary, indent=1))
        return 0 if ok else 1
    print(f"median of {runs} build(s) per site; load average {summary['machine']['load_average']:.1f} on {os.cpu_count()} CPUs "
          f"(goal: gigawatt-campus <= {GOAL_S:g} s, <= {GOAL_GIB:g} GiB; no pass's CPU per GPU x{GOAL_GROWTH:g} or more)\n")
    print("| pass | 100K CPU s | 100K us/GPU | 1M CPU s | 1M us/GPU | growth per GPU | 1M wall s | 1M peak MiB |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, row in big["passes"].items():
        s = small["passes"].get(name, {"cpu_s": float("nan")})
        gr = f"{g[name]:.2f}" if name in g else "-"
        print(f"| {name} | {s['cpu_s']:.2f} | {s['cpu_s'] / small['gpus'] * 1e6:.1f} | {row['cpu_s']:.2f} | "
              f"{row['cpu_s'] / big['gpus'] * 1e6:.1f} | {gr} | {row['wall_s']:.2f} | {row['peak_mib']:.0f} |")
    print(f"| total (this process; children: CPU) | {small['total']['cpu_s']:.1f} | | {big['total']['cpu_s']:.1f} | | | "
          f"{big['total']['wall_s']:.1f} | {big['peak_mib']:.0f} |")
    print(f"\n{'OK' if ok else 'GOAL MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
