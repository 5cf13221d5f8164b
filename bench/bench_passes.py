"""Every pass of `twin build`, one after another in one process, each timed on its own (issue 40).

The build itself splits its emitters between two processes as they come off a queue (twin/build.py), so
its in-process split (bench_build.py's ``passes``) times a different set of emitters in each process from
one site to the next. Here nothing is forked: the compiler's passes, the twins, the verdicts, the report
and then each emitter with its files written (as the build writes them: checked, hashed, written before the
next renders), each with the CPU seconds (user + system) and wall seconds it took and the resident memory
after it and at its peak. bench_gigawatt.py compares two sites with it, pass by pass.

    python bench/bench_passes.py sites/meta-campus-100k.yaml      # JSON on stdout: {"passes": [rows], "counts": {...}}
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def run(spec: str, out: Path) -> dict:
    gc.set_threshold(100_000, 50, 100)  # as twin's CLI (twin/cli/app.py main)
    rows: list[dict] = []
    mark = ["imports", time.perf_counter(), os.times()]
    collector = {"s": 0.0, "full": 0, "t": 0.0}  # the cyclic collector's seconds and full collections in the running pass

    def collecting(phase: str, info: dict) -> None:
        if phase == "start":
            collector["t"] = time.process_time()
        else:
            collector["s"] += time.process_time() - collector["t"]
            collector["full"] += info["generation"] == 2

    gc.callbacks.append(collecting)

    written = [0]  # bytes the running pass wrote

    def step(name: str) -> None:
        """The running pass ends, ``name`` starts. CPU seconds are user + system; the system part (the
        kernel's, mostly writing files and faulting in fresh memory) is kept apart too: it varies from run
        to run with what the disk is still writing back."""
        w, t = time.perf_counter(), os.times()
        user, system = t.user - mark[2].user, t.system - mark[2].system
        rows.append({"pass": mark[0], "wall_s": w - mark[1], "cpu_s": user + system, "user_s": user, "sys_s": system,
                     "rss_mib": rss_mib(), "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                     "gc_s": collector["s"], "gc_full": collector["full"], "bytes": written[0]})
        collector.update(s=0.0, full=0)
        written[0] = 0
        os.sync()  # the files a pass wrote go to disk before the next starts, outside both timings
        mark[:] = name, time.perf_counter(), os.times()

    from twin.analysis.verdicts_twins import verdicts
    from twin.build import _write_emitters, run_twins
    from twin.compiler.fabric.figures import compute
    from twin.compiler.pipeline import compile_design
    from twin.emit import BY_COST, EMITTER_LABELS
    from twin.emit.report import emit as report_emit

    design = compile_design(spec, progress=step)
    step("default twin")
    runs = run_twins(design)
    step("verdicts")
    compute(design.fabric, design.spec)  # the report's figures (memoised), as the build computes them beside the twins
    risks = tuple(verdicts(design, runs.scenario))
    step("emit: report")
    written[0] = sum(n for _, n in _write_emitters(out, [lambda d: report_emit(d, runs, list(risks))], design).values())
    for emitter in BY_COST:
        step(f"emit: {EMITTER_LABELS[emitter]}")
        written[0] = sum(n for _, n in _write_emitters(out, [emitter], design, acyclic=True).values())
    step("end")
    roles = [r for _, r in design.fabric.graph.nodes(data="role")]  # the work the passes scale with, counted outside their times
    counts = {"cables": sum(lk.kind == "link" for lk in design.fabric.links), "nics": roles.count("nic"),
              "switches": sum(r not in ("nic", "server", "endpoint") for r in roles)}
    return {"passes": rows, "counts": counts}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="bench-passes-") as tmp:
        print(json.dumps(run(sys.argv[1], Path(tmp))))
