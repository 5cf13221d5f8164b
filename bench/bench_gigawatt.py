"""Gigawatt benchmark (issue 40): `twin build` of gigawatt-campus (995,328 GPUs) against meta-campus-100k,
pass by pass, with each pass's CPU time per GPU and its growth from the 100K site to the gigawatt one.

Goals on 2 cores: the whole build of the gigawatt site in at most 3 minutes and 16 GiB peak, and no pass
whose time per GPU grows by more than 1.5x from meta-campus-100k. Two measurements per site:

- the passes (bench_passes.py): every pass and every emitter one after another in one process, nothing
  forked, each with its own CPU seconds (the build proper splits its emitters between two processes as they
  come off a queue, a different split from one site to the next, so its own split cannot be compared);
- the build: `twin build` as a user runs it, timed from outside (os.wait4: wall and CPU seconds of it and
  its forked children), its memory sampled every 0.5 s as the summed proportional set size (PSS) of its
  processes (a forked child shares the parent's pages: the sum of their RSS counts those twice) and as the
  largest RSS of one of them.

The gigawatt build takes minutes, most of the machine and ~10 GB of disk: run it by hand, never in CI.

`--twins` measures the twins at a million GPUs instead (bench_gigawatt_twins.py): each in its own
process, compiled only as far as it reads, time and peak memory per step.

    python bench/bench_gigawatt.py               # one build of each site, a Markdown table
    python bench/bench_gigawatt.py --runs 3 --json
    python bench/bench_gigawatt.py --small-runs 5      # the 100K site's passes 5 times, the gigawatt's once
    python bench/bench_gigawatt.py --twins --runs 3
    python bench/bench_gigawatt.py --commands          # each twin's whole `twin simulate` command, timed from outside
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITES = ("meta-campus-100k", "gigawatt-campus")
GPUS = {"meta-campus-100k": 98_304, "gigawatt-campus": 995_328}
GOAL_S, GOAL_GIB, GOAL_GROWTH = 180.0, 16.0, 1.5


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0"}


def serial(site: str) -> dict:
    """bench_passes.py's rows and counts for ``site``, in its own process."""
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_passes.py"), f"sites/{site}.yaml"], cwd=ROOT, env=_env(),
                       capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def _tree(root: int) -> set[int]:
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, grew = {root}, True
    while grew:
        new = {p for p, pp in parent.items() if pp in tree} - tree
        grew, tree = bool(new), tree | new
    return tree


def _memory(pids: set[int]) -> tuple[float, float]:
    """(summed PSS, largest RSS) of ``pids`` in MiB."""
    pss, rss = 0, 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                fields = dict(line.split(":", 1) for line in f if line.startswith(("Pss:", "Rss:")))
        except OSError:
            continue
        pss += int(fields.get("Pss", "0 kB").split()[0])
        rss = max(rss, int(fields.get("Rss", "0 kB").split()[0]))
    return pss / 1024, rss / 1024


def timed(cmd: list[str], ok: tuple[int, ...] = (0,)) -> dict:
    """One command of twin's from outside: wall and CPU seconds of it and its children, peak summed PSS, largest RSS."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0.0, 0.0]

    def sample() -> None:
        while p.returncode is None:
            pss, rss = _memory(_tree(p.pid))
            peak[:] = max(peak[0], pss), max(peak[1], rss)
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    sampler.join()
    if p.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr.read().decode()[-3000:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "pss_peak_mib": peak[0], "rss_max_mib": max(peak[1], ru.ru_maxrss / 1024)}


def build(site: str) -> dict:
    """`twin build` of ``site`` into a temporary folder (4: written, a verdict fails; the build's output is whole)."""
    with tempfile.TemporaryDirectory(prefix="bench-gigawatt-") as tmp:
        return timed([sys.executable, "-m", "twin", "build", f"sites/{site}.yaml", "-o", str(Path(tmp) / "out"), "-q"], (0, 4))


COMMANDS = ("power", "campaign", "allreduce", "moe", "moe-pp")  # scenarios/gigawatt-X.yaml
COMMAND_GOAL = (60.0, 8.0)  # seconds, GiB: the twins' goal, held here to the whole command a user runs


def commands(runs: int, as_json: bool) -> int:
    """`twin simulate` of the gigawatt site with each twin's scenario, whole (compile, twin, verdicts), from
    outside: medians of ``runs`` (memory: the largest), against the twins' 60 s and 8 GiB."""
    rows = {}
    for name in COMMANDS:
        cmd = [sys.executable, "-m", "twin", "simulate", f"sites/{SITES[1]}.yaml", "--scenario", f"scenarios/gigawatt-{name}.yaml"]
        got = [timed(cmd, (0, 4)) for _ in range(runs)]
        rows[name] = {"wall_s": statistics.median(r["wall_s"] for r in got), "cpu_s": statistics.median(r["cpu_s"] for r in got),
                      "rss_max_gib": max(r["rss_max_mib"] for r in got) / 1024, "pss_peak_gib": max(r["pss_peak_mib"] for r in got) / 1024}
    ok = all(r["wall_s"] <= COMMAND_GOAL[0] and r["rss_max_gib"] <= COMMAND_GOAL[1] for r in rows.values())
    if as_json:
        print(json.dumps({"commands": rows, "runs": runs, "ok": ok}))
    else:
        print(f"| `twin simulate` of gigawatt-campus ({runs} run(s); memory: the largest) | wall s | CPU s | largest RSS GiB |")
        print("|---|---:|---:|---:|")
        for name, r in rows.items():
            print(f"| scenarios/gigawatt-{name}.yaml | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['rss_max_gib']:.2f} |")
        print(f"{'OK' if ok else 'MISSED'} (goal {COMMAND_GOAL[0]:.0f} s and {COMMAND_GOAL[1]:.0f} GiB per command)")
    return 0 if ok else 1


def measured(site: str, runs: int, builds: int | None = None) -> dict:
    """Medians over ``runs`` of each pass's wall and CPU seconds (bench_passes.py) and over ``builds``
    (default ``runs``) of the build's."""
    runs_ = [serial(site) for _ in range(runs)]
    results = [r["passes"] for r in runs_]
    rows = {}
    for i, r in enumerate(results[0]):
        rows[r["pass"]] = {k: statistics.median(x[i].get(k, 0) for x in results) for k in ("wall_s", "cpu_s", "user_s", "sys_s", "peak_mib", "bytes")}
    done = [build(site) for _ in range(runs if builds is None else builds)]
    b = {k: statistics.median(x[k] for x in done) for k in ("wall_s", "cpu_s")}
    b.update({k: max(x[k] for x in done) for k in ("pss_peak_mib", "rss_max_mib")})
    return {"site": site, "gpus": GPUS[site], "counts": runs_[0]["counts"], "runs": runs, "passes": rows, "build": b,
            "passes_cpu_s": statistics.median(sum(x["cpu_s"] for x in r) for r in results)}


def growth(small: dict, big: dict, per: str = "gpus") -> dict[str, float]:
    """Per pass: (CPU seconds per GPU of the big site) / (the same of the small one); ``per="cables"``: per
    cable of the fabric instead (a NIC on two planes has two cables: gigawatt-campus has 1.4x the cables per GPU of the 100K site)."""
    n_big, n_small = (big["gpus"], small["gpus"]) if per == "gpus" else (big["counts"][per], small["counts"][per])
    out = {}
    for name, row in big["passes"].items():
        s = small["passes"].get(name)
        if s and s["cpu_s"] > 0.05:
            out[name] = (row["cpu_s"] / n_big) / (s["cpu_s"] / n_small)
    return out


def main(argv: list[str]) -> int:
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 1
    if "--twins" in argv:
        from bench_gigawatt_twins import main as twins

        return twins(runs, "--json" in argv)
    if "--commands" in argv:
        return commands(runs, "--json" in argv)
    small_runs = int(argv[argv.index("--small-runs") + 1]) if "--small-runs" in argv else runs
    big = measured(SITES[1], runs)
    small = measured(SITES[0], small_runs, builds=runs)  # the 100K site's passes vary most, relative to their size
    g, gc = growth(small, big), growth(small, big, "cables")
    bb = big["build"]
    ok = bb["wall_s"] <= GOAL_S and bb["pss_peak_mib"] / 1024 <= GOAL_GIB and all(v <= GOAL_GROWTH for v in g.values())
    summary = {"machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()[0]}, "sites": [small, big], "growth_per_gpu": g, "growth_per_cable": gc,
               "goal": {"seconds": GOAL_S, "gib": GOAL_GIB, "growth": GOAL_GROWTH}, "ok": ok}
    if "--json" in argv:
        print(json.dumps(summary, indent=1))
        return 0 if ok else 1
    print(f"median of {runs} run(s) per site; load average {summary['machine']['load_average']:.1f} on {os.cpu_count()} CPUs "
          f"(goal: gigawatt-campus <= {GOAL_S:g} s, <= {GOAL_GIB:g} GiB; no pass's CPU per GPU x{GOAL_GROWTH:g} or more)\n")
    cs, cb = small["counts"], big["counts"]
    print(f"cables per GPU: {cs['cables'] / small['gpus']:.2f} ({cs['cables']:,}) against {cb['cables'] / big['gpus']:.2f} ({cb['cables']:,}), "
          f"x{(cb['cables'] / big['gpus']) / (cs['cables'] / small['gpus']):.2f}\n")
    print("| pass (one process, one after another) | 100K CPU s | 100K us/GPU | 1M CPU s | 1M us/GPU | growth per GPU | per cable | 1M of it system s | 1M wall s | 1M peak MiB |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, row in big["passes"].items():
        s = small["passes"].get(name, {"cpu_s": float("nan")})
        gr, grc = (f"{g[name]:.2f}", f"{gc[name]:.2f}") if name in g else ("-", "-")
        print(f"| {name} | {s['cpu_s']:.2f} | {s['cpu_s'] / small['gpus'] * 1e6:.1f} | {row['cpu_s']:.2f} | "
              f"{row['cpu_s'] / big['gpus'] * 1e6:.1f} | {gr} | {grc} | {row['sys_s']:.2f} | {row['wall_s']:.2f} | {row['peak_mib']:.0f} |")
    print(f"| all passes | {small['passes_cpu_s']:.1f} | | {big['passes_cpu_s']:.1f} | | | | | | |")
    print("\n| emitter | 100K MB | 1M MB | bytes per GPU, growth | CPU per byte, growth |\n|---|---:|---:|---:|---:|")
    for name, row in big["passes"].items():
        s = small["passes"].get(name, {})
        if name in g and s.get("bytes") and row.get("bytes"):
            per_byte = (row["bytes"] / big["gpus"]) / (s["bytes"] / small["gpus"])
            print(f"| {name} | {s['bytes'] / 1e6:,.0f} | {row['bytes'] / 1e6:,.0f} | {per_byte:.2f} | {g[name] / per_byte:.2f} |")
    print("\n| `twin build` (two processes, as a user runs it) | wall s | CPU s | peak PSS MiB (all processes) | largest RSS MiB (one process) |\n"
          "|---|---:|---:|---:|---:|")
    for site in (small, big):
        b = site["build"]
        print(f"| {site['site']} | {b['wall_s']:.1f} | {b['cpu_s']:.1f} | {b['pss_peak_mib']:.0f} | {b['rss_max_mib']:.0f} |")
    over = [f"{k} x{v:.2f}" for k, v in g.items() if v > GOAL_GROWTH]
    over_c = [f"{k} x{v:.2f}" for k, v in gc.items() if v > GOAL_GROWTH]
    print(f"\nbuild: {bb['wall_s']:.0f} s, {bb['pss_peak_mib'] / 1024:.1f} GiB; passes over x{GOAL_GROWTH:g} per GPU: "
          f"{', '.join(over) or 'none'}; per cable: {', '.join(over_c) or 'none'}")
    print(f"{'OK' if ok else 'GOAL MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
