"""Placement benchmark: meta-24k-roce and a 100K-GPU site built by scaling it.

Targets (issue 4): meta-24k-roce in < 30 s with a gap to the proven fiber bound < 1%; 100K GPUs in
< 3 min. Each case runs in its own process so peak memory (max RSS) is its own. Times cover the
placement pass (zones to halls, every hall MILP, the naive baseline, figures and power-cap curve).

    python bench/bench_place.py            # both cases, a Markdown table
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "sites" / "meta-24k-roce.yaml"


def scaled_site(zones: int) -> str:
    """meta-24k-roce with ``zones`` AI zones, one per hall (halls copied on a grid of 8 per line)."""
    doc = yaml.safe_load(BASE.read_text())
    hall = doc["halls"][0]
    halls = []
    for i in range(zones):
        h = dict(hall)
        h["name"] = f"dh{i + 1}"
        h["origin"] = [f"{20 * (i % 8)} m", f"{60 * (i // 8)} m"]
        halls.append(h)
    doc["name"] = f"meta-{zones}z-roce"
    doc["halls"] = halls
    doc["fabric"]["zones"] = zones
    doc["fabric"]["gpus"] = zones * doc["fabric"]["racks_per_zone"] * 16
    doc["fabric"]["atsw"]["count"] = 16 * math.ceil(zones / 16)
    doc["power"]["utility_capacity"] = f"{7 * zones} MW"
    return yaml.safe_dump(doc, sort_keys=False)


def run_case(path: str) -> dict:
    from twin.compiler import pipeline
    from twin.compiler.place import optimize

    spec = pipeline.check(path).spec
    t0 = time.perf_counter()
    pl = optimize.place(spec)
    secs = time.perf_counter() - t0
    f = pl.figures
    return {
        "site": spec.name,
        "gpus": len(pl.gpu_racks()) * spec.rack.gpus,
        "racks": len(pl.racks),
        "seconds": secs,
        "gap": f["solver"]["gap"],
        "status": f["solver"]["status"],
        "fiber_m": f["fiber_m"]["total"],
        "bound_m": f["solver"]["fiber_bound_m"],
        "naive_m": f["naive"]["fiber_m"]["total"],
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        print(json.dumps(run_case(sys.argv[2])))
        return 0
    cases = [("meta-24k-roce", str(BASE), 30.0)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-place-"))
    big = tmp / "meta-100k-roce.yaml"
    big.write_text(scaled_site(33))  # 33 x 3,072 = 101,376 GPUs
    cases.append(("100K (33 zones)", str(big), 180.0))
    rows = []
    ok = True
    for label, path, limit in cases:
        out = subprocess.run([sys.executable, __file__, "--case", path], capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            print(out.stderr, file=sys.stderr)
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        passed = r["seconds"] < limit and r["gap"] < 0.01
        ok &= passed
        rows.append(f"| {label} | {r['gpus']:,} | {r['racks']:,} | {r['seconds']:.1f} s (< {limit:g} s) | {r['status']} |"
                    f" {100 * r['gap']:.4f}% | {r['fiber_m']:,.0f} | {r['bound_m']:,.0f} | {r['naive_m']:,.0f} |"
                    f" {r['fiber_m'] / r['naive_m']:.3f} | {r['peak_mib']:.0f} | {'pass' if passed else 'FAIL'} |")
    print("| site | GPUs placed | racks | time | status | gap | fiber m | bound m | naive m | fiber/naive | peak MiB | target |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    print("\n".join(rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
