"""A collective the network twin refuses to time (past ``collective_transfers``) makes the plans that need it
infeasible in the plan search, with the reason: never 0 s, never a traceback, never the pick."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from twin.twins.workload.comm import Refused

ROOT = Path(__file__).resolve().parents[1]


def test_a_refused_collective_takes_forever_and_says_why():
    r = Refused("326,592 transfers in a phase of alltoall/direct; at most 100,000")
    assert r.at(1e6) == (float("inf"), float("inf")) and r.at(0.0) == (0.0, 0.0)
    assert not np.isfinite(r.at(1.0)[0]) and "at most 100,000" in r.reason


def test_a_search_whose_every_plan_is_refused_is_a_clear_exit_2():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TWIN_LIMITS": "collective_transfers=100"}
    p = subprocess.run([sys.executable, "-m", "twin", "plan", "sites/lab-2zone.yaml", "--gpus", "128"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    msg = " ".join(p.stderr.split())
    assert "can be timed" in msg and "at most 100 (limit collective_transfers" in msg, msg[-1500:]
