"""Load + validate sites/meta-24k-roce.yaml: median wall time over repeated runs (goal: well under 1 s)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from twin.compiler.resolve.validate import validate_file

ROOT = Path(__file__).resolve().parents[1]


def main(runs: int = 15) -> None:
    site = ROOT / "sites" / "meta-24k-roce.yaml"
    validate_file(site)  # warm caches (unit registry, built-in catalog): a CLI run pays these once
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        spec, _ = validate_file(site)
        times.append(time.perf_counter() - t)
    assert spec is not None
    probe = (
        "import time; t = time.perf_counter(); from twin.compiler.resolve.validate import validate_file; "
        f"validate_file({str(site)!r}); print(time.perf_counter() - t)"
    )
    cold = [float(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout)
            for _ in range(5)]
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "twin", "validate", str(site)], check=True, capture_output=True)
    cli = time.perf_counter() - t0
    print(f"validate {site.name}:")
    print(f"  warm, in-process:            median {statistics.median(times) * 1e3:7.1f} ms over {runs} runs")
    print(f"  cold (imports + unit registry + validate): median {statistics.median(cold) * 1e3:7.1f} ms over 5 runs")
    print(f"  whole CLI process incl. interpreter start: {cli * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
