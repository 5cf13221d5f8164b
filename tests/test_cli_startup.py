"""A command loads what it needs and nothing more: `twin --help` none of the scientific stack, `twin
validate --fast` no graph, plotting, dataframe or cluster library (their import is most of a short command's
time; bench/bench_build.py times the processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ["pyomo", "networkx", "matplotlib", "scipy", "dask", "distributed", "pandas", "pyarrow", "jinja2", "highspy"]

PROBE = """
import json, sys
sys.argv = ["twin", *json.loads(sys.argv[1])]
from twin.cli.app import main
try:
    main()
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def loaded(*args: str) -> tuple[int, set[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["code"], set(out["loaded"])


def test_help_loads_no_scientific_library():
    code, mods = loaded("--help")
    assert code == 0
    assert not mods & {*HEAVY, "numpy", "pint", "pydantic", "yaml"}, mods & {*HEAVY, "numpy", "pint", "pydantic", "yaml"}


def test_validate_loads_no_graph_plot_frame_cluster_or_solver_library():
    # --fast: the spec alone (plain `twin validate` compiles the design for its verdicts, issue 27)
    code, mods = loaded("validate", "--fast", "sites/meta-24k-roce.yaml", "--json")
    assert code == 0
    assert {"pydantic", "pint", "yaml"} <= mods  # it did validate
    # not even numpy: pint is imported without its numpy and scipy support (twin/lang/units.py)
    assert not mods & {*HEAVY, "numpy"}, mods & {*HEAVY, "numpy"}


def test_plain_validate_loads_what_the_compile_needs_and_not_scipy():
    # placement (HiGHS), the fabric graph (networkx) and numpy; the verdicts' PFC headroom reads no sparse
    # matrix (twin/analysis/headroom.py imports scipy.sparse for the report's latency ladder only)
    code, mods = loaded("validate", "sites/meta-24k-roce.yaml", "--json")
    assert code == 0
    assert {"numpy", "networkx", "highspy"} <= mods
    assert not mods & (set(HEAVY) - {"networkx", "highspy"}), mods & set(HEAVY)
