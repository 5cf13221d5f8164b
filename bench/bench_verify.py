"""``twin verify`` of one full Meta AI zone in real FRR: 192 RTSWs + 16 CTSWs + the ATSW tier.

Target (issue 5): under 10 minutes on this machine, printing convergence time and peak memory.
It starts ~450 FRR daemons (~42 MiB each), so it needs root, ~10 GiB of free memory, and should
run alone. BFD daemons are left out by default (--bfd adds them): they only add per-session timers,
not routing behaviour, and the lab test already checks BFD.

Usage: sudo python bench/bench_verify.py [sites/meta-24k-roce.yaml] [--zone N] [--bfd] [--json]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    spec = Path(args[0]) if args else ROOT / "sites" / "meta-24k-roce.yaml"
    zone = int(argv[argv.index("--zone") + 1]) if "--zone" in argv else 1
    if "--zone" in argv:
        args = [a for a in args if a != str(zone)]
    from twin.build import build
    from twin.verify import roce

    quiet = "--json" in argv
    log = (lambda m: None) if quiet else (lambda m: print(f"  [{time.strftime('%H:%M:%S')}] {m}", flush=True))
    with tempfile.TemporaryDirectory(prefix="twin-bench-verify-") as tmp:
        t0 = time.perf_counter()
        out = build(spec, Path(tmp) / "site").out_dir
        t_build = time.perf_counter() - t0
        log(f"built {spec.name} in {t_build:.1f} s")
        res = roce.verify(out, zone=zone, timeout=900, bfd="--bfd" in argv, log=log)
    js = res.to_json()
    js["build_s"] = round(t_build, 1)
    js["target_met"] = res.ok and js.get("total_s", 1e9) < 600
    if quiet:
        print(json.dumps(js, indent=1, sort_keys=True))
    else:
        for p in js["problems"]:
            print(f"  - {p}")
        print(
            f"{js['site']} zone {zone}: {js['switches']} FRR instances, {js['links']} links, {js['racks']} racks; "
            f"setup {js.get('setup_s')} s, converged in {js.get('convergence_s')} s, link-down reconvergence "
            f"{js.get('link_down', {}).get('convergence_s')} s, total {js.get('total_s')} s; peak FRR memory "
            f"{js.get('peak_rss_mib', 0) / 1024:.1f} GiB; {'OK' if res.ok else 'FAILED'}"
        )
    return 0 if js["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
