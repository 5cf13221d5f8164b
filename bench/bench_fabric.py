"""Time and peak memory of fabric synthesis + cabling plan + BOM + cabling files, by cluster size,
and, in its own column, of the model exports (model/fabric.graphml + model/fabric.json).

Specs are generated from sites/meta-24k-roce.yaml by changing the number of AI zones (one zone per
hall, halls copied from dh1 on a grid). Placement (the naive fill) runs first and is not timed: this
measures the fabric work. The export is timed apart because it is an emitter that every build runs
and once dominated it (networkx.write_graphml took ~17 s at 24K GPUs). Each size runs in a fresh
process so that its peak RSS is its own.

    python bench/bench_fabric.py            # 4K, 24K, 50K, 100K GPUs
    python bench/bench_fabric.py 24576      # one size
"""

from __future__ import annotations

import copy
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SIZES = {4096: (2, 128, 4), 24576: (8, 192, 16), 49152: (16, 192, 16), 98304: (32, 192, 32)}  # zones, racks/zone, ATSWs
RUNS = 3


def make_spec(gpus: int, folder: Path) -> Path:
    zones, rpz, atsw = SIZES[gpus]
    doc = yaml.safe_load((ROOT / "sites" / "meta-24k-roce.yaml").read_text())
    base = doc["halls"][0]
    doc["name"] = f"bench-{gpus}"
    doc.pop("workloads", None)
    doc["halls"] = []
    for z in range(zones):
        h = copy.deepcopy(base)
        h["name"] = f"dh{z + 1}"
        h["origin"] = [f"{(z % 4) * 20} m", f"{(z // 4) * 60} m"]
        doc["halls"].append(h)
    doc["power"]["utility_capacity"] = f"{zones * 7} MW"
    f = doc["fabric"]
    f.update(gpus=zones * rpz * 16, zones=zones, racks_per_zone=rpz)
    f["atsw"]["count"] = atsw
    path = folder / f"bench-{gpus}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_one(path: str) -> dict:
    from dataclasses import replace

    from twin.compiler import pipeline
    from twin.compiler.fabric import bom, cabling
    from twin.compiler.fabric.synthesis import synthesize
    from twin.emit import bom as bom_emit
    from twin.emit import cabling as cabling_emit
    from twin.emit import model_export

    placed = pipeline.compile_design(path, until="placement", placement_method="naive")
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        spec, pl = placed.spec, placed.placement
        fabric = synthesize(spec, pl)
        plan = cabling.plan(spec, pl, fabric)
        d = replace(placed, fabric=fabric, cabling=plan, bom=bom.bill(spec, fabric, plan))
        files = {**bom_emit.emit(d), **cabling_emit.emit(d)}
        times.append(time.perf_counter() - t)
    export_times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        model = model_export.emit(d)
        export_times.append(time.perf_counter() - t)
    g = d.fabric.graph
    return {
        "gpus": d.spec.gpus,
        "nodes": g.number_of_nodes(),
        "edges": g.number_of_edges(),
        "cables": len(d.cabling),
        "files": len(files),
        "median_s": statistics.median(times),
        "export_s": statistics.median(export_times),
        "export_mib": sum(len(v) for v in model.values()) / 2**20,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--one":
        print(json.dumps(run_one(argv[1])))
        return
    sizes = [int(a) for a in argv] or list(SIZES)
    print(f"{'GPUs':>8} {'nodes':>8} {'edges':>8} {'cables':>8} {'time (s)':>9} {'export (s)':>11} {'export (MiB)':>13} {'peak RSS (MiB)':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for gpus in sizes:
            spec = make_spec(gpus, Path(tmp))
            out = subprocess.run([sys.executable, __file__, "--one", str(spec)], capture_output=True, text=True, cwd=ROOT)
            if out.returncode:
                print(out.stderr[-2000:])
                raise SystemExit(out.returncode)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{r['gpus']:>8,} {r['nodes']:>8,} {r['edges']:>8,} {r['cables']:>8,} {r['median_s']:>9.2f} {r['export_s']:>11.2f} {r['export_mib']:>13,.1f} {r['peak_rss_mib']:>15,.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
