"""Plan search benchmark (issue 34): how big each plan space is, and how fast `twin plan` searches it.

Goals on 2 cores: the fast stage at 1,000,000 candidate plans per second per core or more; the whole space of
GPT-3 175B on 1,024 GPUs searched end to end (enumeration included) in at most 1 s; a space of 12 million
candidates in at most 10 s; the full twin on the leaders in at most 30 s; under 2 GiB.

Each case runs in its own process (its peak memory is its own), after the site is compiled (the compiler is
reported apart: it is not the search). Per case, medians of ``--runs`` searches:

- ``space``: plans enumerated, pruned by rule and by memory, feasible;
- ``search_s``: enumeration, memory, compute tables and branch and bound, collectives included;
- ``collectives_s`` and ``timed``: the part of it spent timing distinct collectives on the fabric (CPU seconds
  summed over the worker processes);
- ``second bound``: plans whose model-parallel exchanges were timed first (the search's second bound), of which
  ``scored`` went on to the data-parallel ones;
- ``fast plans/s``: the fast stage alone (tables warm) on the plans branch and bound scored, repeated to 300K rows,
  CPU seconds of one process;
- ``full_s``: the full job twin on the leaders (``--top``).

    python bench/bench_plan.py                 # every case, a Markdown table
    python bench/bench_plan.py --runs 3 --json
    python bench/bench_plan.py --large         # and Llama 3 405B on 8,192 and 16,384 GPUs of meta-24k-roce (minutes)
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's twin, whatever is installed
GPT3_175B = ["parameters=175B", "layers=96", "hidden_size=12288", "heads=96", "global_batch=1536", "sequence_length=2048"]
CASES = {  # name: (site, workload, GPUs, --set, --fix)
    "lab llama-8b @128": ("lab-2zone", "lab-llama-8b", 128, [], {}),
    "gpt3-175b @1,024": ("selene-a100", "gpt-145p6b", 1024, GPT3_175B, {}),
    "gpt3-175b @1,024, every axis": ("selene-a100", "gpt-145p6b", 1024, [*GPT3_175B, "stack=meta-production-2024"], {}),
    "gpt-145.6b @1,536": ("selene-a100", "gpt-145p6b", 1536, [], {}),
    # under Meta's stack (every rank order; the site's own, Megatron-Core, lays ranks out in two)
    "llama3-70b @1,152 NVL72": ("gb200-nvl72", "llama3-70b-tp8", 1152, ["stack=meta-production-2024"], {}),
    # hybrid sharding searched as well (--fix dp_shard=0,8,72: one shard over every DP rank, 8, or one NVL72 rack)
    "llama3-70b @1,152 NVL72, HSDP (20.5 M plans)": ("gb200-nvl72", "llama3-70b-tp8", 1152, ["stack=meta-production-2024"], {"dp_shard": [0, 8, 72]}),
}
LARGE = {"llama3-405b @8,192": ("meta-24k-roce", "llama3-405b-8k", 8192, [], {}),  # minutes: with --large only
         "llama3-405b @16,384": ("meta-24k-roce", "llama3-405b-16k", 16384, [], {})}
GOALS = {"plans_per_s_per_core": 1e6, "gpt3_search_s": 1.0, "12m_search_s": 10.0, "full_s": 30.0, "peak_GiB": 2.0}


def one(name: str, runs: int, top: int) -> dict:
    from twin.cli.plan import with_sets
    from twin.compiler.pipeline import compile_design
    from twin.twins.plan import answer as ans
    from twin.twins.plan import fast, search, tables
    from twin.twins.plan.problem import Problem, row

    site, wname, gpus, sets, pins = {**CASES, **LARGE}[name]
    t0 = time.perf_counter()
    d = compile_design(ROOT / "sites" / f"{site}.yaml", placement_method="naive")
    compile_s = time.perf_counter() - t0
    w = with_sets(d, next(x for x in d.spec.site.workloads if x.name == wname), sets)
    rows = []
    for _ in range(runs):
        p = Problem.of(d, w, gpus)  # a fresh fabric and fresh tables each run: nothing cached between runs
        t0 = time.perf_counter()
        s = search.search(p, pins, keep=top, mask_fn=ans.classes(p))
        search_s = time.perf_counter() - t0
        idx = s.best(None, top)
        t0 = time.perf_counter()
        for i in idx:
            ans.full_twin(p, row(s.cols, int(i)))
        full_s = time.perf_counter() - t0
        reps = max(1, 300_000 // int(s.scored.sum()))  # the scored plans repeated to 300K rows: the arrays' size, not Python's overhead
        scored = {k: np.tile(v[s.scored], reps) for k, v in s.cols.items()}
        comp = tables.compute_table(p, scored)
        reps, t0, c0 = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < 0.5:
            fast.evaluate(p, scored, s.coll, comp)
            reps += 1
        fast_cpu = (time.process_time() - c0) / reps
        rows.append({"search_s": search_s, "collectives_s": sum(s.coll.seconds.values()), "full_s": full_s,
                     "plans_per_s_per_core": len(scored['tp']) / fast_cpu, "timed": s.coll.calls,
                     "enumerated": s.space.enumerated, "feasible": s.feasible, "scored": int(s.scored.sum()),
                     "second": int((~np.isnan(s.tight)).sum()),
                     "pruned": sum(s.pruned.values())})
        del p, s, scored, comp  # one search's tables alive at a time: the peak is a search's, not two runs' at once
    out = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    out.update(case=name, compile_s=compile_s, runs=runs, peak_GiB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)
    return out


def main() -> None:
    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 1
    top = int(args[args.index("--top") + 1]) if "--top" in args else 10
    if "--case" in args:
        print(json.dumps(one(args[args.index("--case") + 1], runs, top)))
        return
    results = []
    for name in [*CASES, *(LARGE if "--large" in args else ())]:
        r = subprocess.run([sys.executable, __file__, "--case", name, "--runs", str(runs), "--top", str(top)],
                           capture_output=True, text=True, cwd=ROOT)
        if r.returncode:
            results.append({"case": name, "error": (r.stderr.strip().splitlines() or ["failed"])[-1]})
            continue
        results.append(json.loads(r.stdout.strip().splitlines()[-1]))
    if "--json" in args:
        print(json.dumps({"goals": GOALS, "cases": results}, indent=2))
        return
    print(f"twin plan search, medians of {runs} run(s); goals: {GOALS}\n")
    print("| case | enumerated | feasible | second bound | scored | search s | of which collectives s (timed) | fast plans/s/core | full twin s (top) | peak GiB | compile s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        if "error" in r:
            print(f"| {r['case']} | error: {r['error']} |")
            continue
        print(f"| {r['case']} | {r['enumerated']:,.0f} | {r['feasible']:,.0f} | {r['second']:,.0f} | {r['scored']:,.0f} | {r['search_s']:.2f} | "
              f"{r['collectives_s']:.2f} ({r['timed']:.0f}) | {r['plans_per_s_per_core']:,.0f} | {r['full_s']:.1f} ({top}) | "
              f"{r['peak_GiB']:.2f} | {r['compile_s']:.1f} |")


if __name__ == "__main__":
    main()
