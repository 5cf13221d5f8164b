"""Validate every SONiC config_db.json of a site against SONiC's YANG models; report the median per file.

Goal: the whole of meta-24k-roce (1,536 config_db.json) in the test suite, i.e. well under 0.03 s a file.
Needs libyang (Debian libyang2-dev + PyPI libyang 2.7.1) and the models in ../shared/reference/sonic-yang.
The validator is the test suite's (tests/sonic_yang.py).

Usage: python bench/bench_sonic_yang.py [sites/meta-24k-roce.yaml] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
MODELS = ROOT.parent / "shared" / "reference" / "sonic-yang" / "models"


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    spec = Path(args[0]) if args else ROOT / "sites" / "meta-24k-roce.yaml"
    from sonic_yang import SonicYang

    import twin
    from twin.emit import configs

    t0 = time.perf_counter()
    yang = SonicYang(MODELS)
    t_load = time.perf_counter() - t0
    files = {p: b for p, b in configs.emit(twin.load(spec)).items() if p.startswith("configs/sonic/")}
    times, cpu, invalid = [], [], 0
    for data in files.values():
        t, c = time.perf_counter(), time.process_time()
        invalid += bool(yang.errors(json.loads(data)))
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    # the machine is shared: CPU time is what validation costs, wall time what a run waits
    result = {
        "site": spec.stem, "files": len(files), "invalid": invalid, "models_load_s": round(t_load, 3),
        "median_ms_per_file": round(1000 * statistics.median(times), 2), "total_s": round(sum(times), 2),
        "median_cpu_ms_per_file": round(1000 * statistics.median(cpu), 2), "load_average": round(os.getloadavg()[0], 2),
    }
    if "--json" in argv:
        print(json.dumps(result, indent=1, sort_keys=True))
    else:
        print(f"{result['site']}: {result['files']} config_db.json, {invalid} invalid; median {result['median_ms_per_file']} ms "
              f"per file ({result['median_cpu_ms_per_file']} ms CPU, load {result['load_average']}), {result['total_s']} s in all "
              f"(models loaded in {result['models_load_s']} s)")
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
