"""A collective the network twin refuses to time (past ``collective_transfers``) makes the plans that need it
infeasible in the plan search, with the reason: never 0 s, never a traceback, never the pick."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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


def test_a_search_over_more_gpus_than_its_limit_is_refused_before_the_fabric(lab, monkeypatch):
    """A plan search times every candidate's collectives as flow simulations over all of the job's GPUs: the
    GPU count is checked (limit plan_gpus) before the fabric of that many GPUs is compiled, and the plans a
    search would lay out (limit plan_candidates) before their columns are; TWIN_LIMITS moves both."""
    import time

    from twin.lang.limits import CostError
    from twin.twins.plan.problem import Problem
    from twin.twins.plan.space import Space

    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b")
    monkeypatch.setenv("TWIN_LIMITS", "plan_gpus=64")
    t0 = time.perf_counter()
    with pytest.raises(CostError, match=r"128 GPUs in one plan search \(search a slice of the job with --gpus.*at most 64 \(limit plan_gpus"):
        Problem.of(lab, w)
    assert time.perf_counter() - t0 < 0.5
    monkeypatch.setenv("TWIN_LIMITS", "plan_candidates=1000")
    p = Problem.of(lab, w, fabric=False)
    with pytest.raises(CostError, match=r"plans to lay out; at most 1,000 \(limit plan_candidates"):
        Space.of(p.axes())
    monkeypatch.delenv("TWIN_LIMITS")
    assert Space.of(p.axes()).size > 1000


def test_the_search_forks_no_more_workers_than_free_memory_holds(monkeypatch):
    from twin.twins.plan import parallel

    monkeypatch.setattr(parallel, "open", lambda path, encoding=None: __import__("io").StringIO(
        "MemAvailable:    1000 kB\n" if path == "/proc/meminfo" else "100000 1000 0 0 0 0 0\n"), raising=False)
    assert parallel.affordable(8) == 1  # 1 MB free against a 4 MB search: none beside it
    monkeypatch.setattr(parallel, "open", lambda path, encoding=None: __import__("io").StringIO(
        "MemAvailable:    100000 kB\n" if path == "/proc/meminfo" else "100000 1000 0 0 0 0 0\n"), raising=False)
    assert parallel.affordable(8) == 8 and parallel.affordable(2) == 2


def test_twin_plan_refuses_a_search_too_large_before_compiling_the_site(monkeypatch):
    from tests.conftest import twin_in_process

    monkeypatch.setenv("TWIN_LIMITS", "plan_gpus=64")
    r = twin_in_process("plan", ROOT / "sites" / "lab-2zone.yaml")
    assert r.returncode == 2 and "128 GPUs in one plan search" in r.stderr and "--gpus" in r.stderr and "Traceback" not in r.stderr
    r = twin_in_process("plan", ROOT / "sites" / "lab-2zone.yaml", "--gpus", "64", "--top", "2", "--fix", "tp=8", "--fix", "pp=2")
    assert r.returncode == 0, r.stderr[-1500:]
