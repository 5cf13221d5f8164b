"""OpenSM's ftree tables replayed (twin/twins/net/ftree.py): seconds and table size per site, and with
``--opensm`` real OpenSM routing the same site in ibsim, side by side (median of ``--runs``).

    python bench/bench_ftree.py                    # selene-a100, meta-24k-ib
    python bench/bench_ftree.py --opensm --runs 3  # + OpenSM on selene-a100 (about 40 s a run here)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from twin.compiler.pipeline import compile_design  # noqa: E402
from twin.emit import configs_ib  # noqa: E402
from twin.twins.net import ftree  # noqa: E402
from twin.twins.net.topology import from_design  # noqa: E402

SITES = ("selene-a100", "meta-24k-ib")


def main(argv: list[str]) -> int:
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 3
    print("| site | switches | NICs | replay s (median) | table MB | OpenSM s (median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for site in SITES:
        d = compile_design(ROOT / "sites" / f"{site}.yaml", placement_method="naive")
        net = from_design(d)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            T = ftree.tables(net)
            times.append(time.perf_counter() - t)
        osm = ""
        if "--opensm" in argv and site == "selene-a100":
            from twin.verify import ib

            if ib.missing_binaries() is None:
                with tempfile.TemporaryDirectory() as tmp:
                    for name, body in configs_ib.emit(d).items():
                        (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
                        (Path(tmp) / name).write_bytes(body)
                    o = [ib.route_fabric(Path(tmp) / "configs" / "opensm", Path(tmp) / "model" / "topology.net").route_seconds
                         for _ in range(runs)]
                osm = f"{statistics.median(o):.1f}"
        print(f"| {site} | {net.n_switches:,} | {len(net.nic_ids):,} | {statistics.median(times):.2f} | "
              f"{T.arc.nbytes / 1e6:.0f} | {osm} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
