"""Build benchmark: `twin build` of the 24K and 100K sites, pass by pass, against a pinned earlier commit.

Goals (issue 26), on 2 cores: meta-24k-roce under 5 s and 500 MiB, meta-campus-100k under 20 s and
2 GiB (placement and report included), each timed three ways: a rebuild of the unchanged spec, a
rebuild after an edit of the spec, and a first build into a new folder; `twin --help` under 0.3 s;
`twin validate --fast` of the Meta site under 1 s. Plain `twin validate` compiles the design up to
addressing for its verdicts (placement, fabric, cabling, BOM, addressing; numpy, networkx and HiGHS
load): its own row, against 1.5 s rather than the issue's 1 s, compared with a baseline only where the
baseline's `validate` compiled too (one with `--fast`). Each build is its own process, timed from
outside with its own rusage (os.wait4: CPU seconds and peak RSS of that process alone). The current
tree and the baseline commit (extracted with `git archive` into a temporary folder; it needs its own
dependencies, Pyomo among them; both byte-compiled first) run in turn, A B A B ..., and the ratio is
taken pair by pair: on a shared machine the wall clock also counts other people's work, a ratio of
builds timed side by side holds. A second run of the current tree in-process splits the build by
pass: wall and CPU seconds, and the resident memory after each pass with the peak so far; the last
row is the forked children: the twins (from the end of the BOM pass) and the design-only emitters
(their CPU and the larger peak).

    python bench/bench_build.py                       # both sites, 3 runs each side, a Markdown table
    python bench/bench_build.py --sites meta-24k-roce --runs 5 --json
    python bench/bench_build.py --baseline HEAD~3     # another commit to compare with
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# main before issue 26 (SONiC through json.dumps(indent=1), Pyomo-built placement models, eager imports)
BASELINE = "963a84d"
GOALS = {"meta-24k-roce": (5.0, 500), "meta-campus-100k": (20.0, 2048)}  # seconds, MiB
SHORT = {"twin --help": (["--help"], 0.3), "twin validate --fast meta-24k-roce": (["validate", "--fast", "sites/meta-24k-roce.yaml"], 1.0)}
COMPILING = {"twin validate meta-24k-roce": (["validate", "sites/meta-24k-roce.yaml"], 1.5)}  # the design's verdicts


def _has_fast(code: Path) -> bool:
    """Whether ``code``'s `twin validate` has `--fast` (and so compiles the design without it)."""
    return "--fast" in (code / "twin" / "cli" / "app.py").read_text()


def _flags(args: list[str], code: Path) -> list[str]:
    """A baseline without `twin validate --fast` (before issue 26) validated the spec alone already;
    one with it (main since) gets the flag, so both sides validate the spec alone."""
    return args if _has_fast(code) else [a for a in args if a != "--fast"]


def timed(cmd: list[str], cwd: Path, env: dict) -> dict:
    """One process: wall, CPU (user + system) and peak RSS of that process alone."""
    with tempfile.TemporaryFile() as out:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            out.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{out.read().decode()[-3000:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_mib": ru.ru_maxrss / 1024}


def side(code: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(code), "PYTHONHASHSEED": "0"}


def build_cmd(site: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "twin", "build", f"sites/{site}.yaml", "-o", str(out), "-q"]


def build_kinds(site: str, tmp: Path) -> dict[str, object]:
    """The three builds a user makes, each a function of the side's code root giving its command:
    a rebuild of the unchanged spec (the output it replaces was built from the same inputs: kept as it
    stands when every file comes out the same, twin/rebuild.py), a rebuild after an edit of the spec
    (a comment added, a new one each run: the spec's sha256 differs, so the unchanged files are
    hard-linked and the folder swapped), and a first build into a folder that does not exist yet."""
    out = tmp / f"{site}-out"
    runs = {"edit": 0, "first": 0}

    def edited(code: Path) -> list[str]:
        runs["edit"] += 1
        spec = tmp / f"edit-{site}-{runs['edit']}" / f"{site}.yaml"
        spec.parent.mkdir()
        spec.write_text((ROOT / "sites" / f"{site}.yaml").read_text() + f"# edit {runs['edit']}\n")
        return [sys.executable, "-m", "twin", "build", str(spec), "-o", str(out), "-q"]

    def first(code: Path) -> list[str]:
        runs["first"] += 1
        return build_cmd(site, tmp / f"{site}-first-{runs['first']}")

    return {site: lambda code: build_cmd(site, out), f"{site}, spec edited": edited, f"{site}, first build": first}


def pairs(label: str, args_for, runs: int, base: Path | None) -> dict:
    """A and B in turn, ``runs`` times; medians of each and of the pairwise wall and CPU ratios."""
    rows = []
    for _ in range(runs):
        row = {"new": timed(args_for(ROOT), ROOT, side(ROOT))}
        if base is not None:
            row["base"] = timed(args_for(base), base, side(base))
        rows.append(row)
    med = {k: {m: statistics.median(r[k][m] for r in rows) for m in ("wall_s", "cpu_s", "peak_mib")} for k in rows[0]}
    if base is not None:
        med["ratio"] = {m: statistics.median(r["new"][m] / r["base"][m] for r in rows) for m in ("wall_s", "cpu_s")}
    return {"label": label, "runs": runs, "median": med}


def passes(site: str) -> dict:
    """The current tree's build of ``site`` in this process, split by pass."""
    code = (
        "import gc, json, resource, sys, time\n"
        "gc.set_threshold(100_000, 50, 100)  # as twin's CLI (twin/cli/app.py main)\n"
        "t0 = (time.perf_counter(), time.process_time())\n"
        "from twin.build import build\n"
        "marks = [('imports', *t0)]\n"
        "def rss():\n"
        "    return int(open('/proc/self/statm').read().split()[1]) * resource.getpagesize() / 2**20\n"
        "rows = []\n"
        "def step(name):\n"
        "    w, c = time.perf_counter(), time.process_time()\n"
        "    prev = marks[-1]\n"
        "    rows.append({'pass': prev[0], 'wall_s': w - prev[1], 'cpu_s': c - prev[2], 'rss_mib': rss(),\n"
        "                 'peak_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})\n"
        "    marks.append((name, w, c))\n"
        "step('validate')\n"
        "build(sys.argv[1], sys.argv[2], progress=step)\n"
        "step('end')\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "rows.append({'pass': 'children (the twins; the design-only emitters)', 'wall_s': float('nan'), 'cpu_s': kids.ru_utime + kids.ru_stime,\n"
        "             'rss_mib': float('nan'), 'peak_mib': kids.ru_maxrss / 1024})\n"
        "print(json.dumps(rows))\n"
    )
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        p = subprocess.run([sys.executable, "-c", code, f"sites/{site}.yaml", str(Path(tmp) / "out")], cwd=ROOT, env=side(ROOT),
                           capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    return {"site": site, "passes": json.loads(p.stdout.strip().splitlines()[-1])}


def baseline_tree(commit: str, tmp: Path) -> Path:
    """The baseline commit's files (git archive), as its own import root."""
    out = tmp / "baseline"
    out.mkdir()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def compiled(code: Path) -> None:
    """``code``'s modules byte-compiled, as an installed package's are: where PYTHONDONTWRITEBYTECODE is set
    (this machine's shells), a tree without __pycache__ would compile its sources on every run (~0.1-0.2 s
    of a short command), and a fresh `git archive` has none."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "twin")], check=True)


def main(argv: list[str]) -> int:
    def opt(name: str, default: str) -> str:
        return argv[argv.index(name) + 1] if name in argv else default

    runs = int(opt("--runs", "3"))
    sites = opt("--sites", ",".join(GOALS)).split(",")
    commit = opt("--baseline", BASELINE)
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        base = None if "--no-baseline" in argv else baseline_tree(commit, Path(tmp))
        for code in (ROOT, base) if base is not None else (ROOT,):
            compiled(code)
        results = {"baseline": None if base is None else commit, "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()[0]},
                   "short": [pairs(k, lambda code, a=a: [sys.executable, "-m", "twin", *_flags(a, code)], runs, base) for k, (a, _) in SHORT.items()]
                   + [pairs(k, lambda code, a=a: [sys.executable, "-m", "twin", *a], runs, base if base is not None and _has_fast(base) else None)
                      for k, (a, _) in COMPILING.items()],
                   "builds": [pairs(label, cmd, runs, base) for s in sites for label, cmd in build_kinds(s, Path(tmp)).items()],
                   "passes": [passes(s) for s in sites]}
    goals = {**{k: g for k, (_, g) in {**SHORT, **COMPILING}.items()},
             **{r["label"]: GOALS.get(r["label"].split(",")[0], (None, None))[0] for r in results["builds"]}}
    if "--json" in argv:
        print(json.dumps({**results, "goals_s": goals, "goals_mib": {s: GOALS.get(s, (None, None))[1] for s in sites}}, indent=1))
        return 0
    base_cols = " | baseline wall s | baseline CPU s | baseline MiB | ratio wall | ratio CPU" if base is not None else ""
    print(f"median of {runs} runs, each side in turn; baseline {commit}; load average {results['machine']['load_average']:.1f} "
          f"on {results['machine']['cpus']} CPUs\n")
    print(f"| command | goal s | wall s | CPU s | peak MiB{base_cols} |\n|---|---:|---:|---:|---:|" + "---:|" * (5 if base else 0))
    for r in results["short"] + results["builds"]:
        m = r["median"]
        extra = (f" | {m['base']['wall_s']:.2f} | {m['base']['cpu_s']:.2f} | {m['base']['peak_mib']:.0f} | {m['ratio']['wall_s']:.2f} | "
                 f"{m['ratio']['cpu_s']:.2f}") if "base" in m else " | - | - | - | - | -" if base is not None else ""
        print(f"| {r['label']} | {goals.get(r['label']) or '-'} | {m['new']['wall_s']:.2f} | {m['new']['cpu_s']:.2f} | "
              f"{m['new']['peak_mib']:.0f}{extra} |")
    for p in results["passes"]:
        print(f"\n{p['site']}, one build in-process, by pass\n\n| pass | wall s | CPU s | RSS after MiB | peak so far MiB |\n|---|---:|---:|---:|---:|")
        for row in p["passes"]:
            print(f"| {row['pass']} | {row['wall_s']:.2f} | {row['cpu_s']:.2f} | {row['rss_mib']:.0f} | {row['peak_mib']:.0f} |")
    print(f"\n(peak of this harness: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
