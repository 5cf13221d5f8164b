"""`twin plan`'s progress while it searches (issue 34: "progress with counts, an estimate of the time left and
the best plan so far"): the branch and bound reports, per class, the plans considered, how many could still beat
the leaders, the time left at its pace so far, and the best plan yet; a terminal shows it."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from tests.conftest import ROOT
from twin.compiler.pipeline import compile_design
from twin.twins.plan import search
from twin.twins.plan.problem import Problem

LAB = ROOT / "sites" / "lab-2zone.yaml"


def test_the_search_reports_what_is_considered_what_could_still_win_and_the_time_left():
    d = compile_design(LAB, placement_method="naive")
    p = Problem.of(d, next(w for w in d.spec.site.workloads if w.name == "lab-llama-8b"))
    seen = []
    s = search.search(p, {"fp8": 0, "zero": [0, 1]}, keep=10, progress=lambda *a, **k: seen.append((a, k)))
    assert seen
    considered = [k["considered"] for _, k in seen]
    assert considered == sorted(considered) and 0 < considered[-1] <= s.feasible
    for (stage, _scored, total, best, _c), k in seen:
        assert stage == "all" and total == s.feasible and k["of"] == s.feasible
        assert 0 <= k["left"] <= k["of"] - k["considered"] and k["eta_s"] >= 0
        assert best is None or best >= s.step[s.best(None, 1)[0]] - 1e-12  # the best so far only improves to the pick
    # once there are leaders, only plans whose first bound is under the tenth's step could still win: the count
    # falls as plans are considered and the leaders improve, and no plan under the final cut is left unconsidered
    lefts = [k["left"] for _, k in seen]
    assert lefts[-1] <= lefts[0] and all(k["eta_s"] == 0 for _, k in seen if k["left"] == 0)
    cut = s.step[s.best(None, 10)[-1]]
    assert not (~s.scored & (s.bound < cut) & np.isnan(s.tight)).any()
    assert np.isfinite(seen[-1][0][3])


def test_a_terminal_sees_the_progress_line():
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "400"}
    r = subprocess.run([sys.executable, "-m", "twin", "plan", str(LAB), "--fix", "fp8=0", "--fix", "tp=1", "--top", "2"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stderr.replace("\r", "\n").splitlines() if "plans considered" in x)
    assert "could still win" in line and "s left" in line and "best so far" in line, line
