"""The build's default twin refuses a job before compiling the fabric for it (issue 40; twin/twins/default.py).

A MoE job's expert all-to-all plans n(n - 1) transfers in each of its GPUs / EP groups; a scheme that does
not fold equal blocks (ECMP, E-ECMP) times every one of them, so past ``collective_transfers`` the job is
refused, whatever the route. gigawatt-campus's job (995,328 GPUs, EP 64: 62.7 M transfers) was refused
only after the default twin had compiled every path of the campus (~17 CPU s of its ~20). Here, on
sites/deepseek-h800.yaml (2,048 GPUs, EP 64: 2,048 x 63 = 129,024 transfers, the closed form), the limit is
lowered instead of the job raised.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.compiler import pipeline
from twin.lang.diagnostics import SpecError
from twin.lang.scenario.job import Case, Job
from twin.twins import default
from twin.twins.net import routing, topology
from twin.twins.net.nccl import Library
from twin.twins.workload import jobs

ROOT = Path(__file__).resolve().parents[1]
TRANSFERS = 2_048 * 63  # GPUs x (EP - 1): every EP group of 64 ranks sends to each of its other 63
HASHED = [routing.Scheme("ecmp, 1 QP", "ecmp", 1), routing.Scheme("spray", "spray", 1)]


@pytest.fixture(scope="module")
def design():
    return pipeline.compile_design(ROOT / "sites" / "deepseek-h800.yaml", until="cabling", placement_method="naive")


def test_past_the_limit_the_job_is_refused_before_the_fabric_is_compiled(design, monkeypatch):
    monkeypatch.setenv("TWIN_LIMITS", f"collective_transfers={TRANSFERS - 1}")
    monkeypatch.setattr(topology, "from_design", lambda *a, **k: pytest.fail("the fabric was compiled for a refused job"))
    out = default.default_job(design, HASHED, Library())
    assert out["workload"] == "deepseek-v3"
    assert out["error"].startswith("job deepseek-v3 (2,048 GPUs), scheme ecmp, 1 QP: 129,024 transfers in a phase of the expert "
                                   "all-to-all over 32 group(s) of 64 ranks; at most 129,023 (limit collective_transfers")


def test_the_refusal_is_the_one_the_compiled_fabric_gives(design, monkeypatch):
    """The same job on the compiled fabric is refused for the same count under the same scheme."""
    monkeypatch.setenv("TWIN_LIMITS", f"collective_transfers={TRANSFERS - 1}")
    net = topology.from_design(design)
    with pytest.raises(SpecError) as e:
        jobs.simulate_job(design, net, Job(workload="deepseek-v3"), HASHED, Library(), Case(name="c"), set(), None, ("w", 0))
    message = e.value.diagnostics[0].message
    assert message.startswith("job deepseek-v3 (2,048 GPUs), scheme ecmp, 1 QP: 129,024 transfers in a phase of alltoall/")
    assert "at most 129,023" in message


def test_at_the_limit_and_under_spraying_nothing_is_refused(design, monkeypatch):
    monkeypatch.setenv("TWIN_LIMITS", f"collective_transfers={TRANSFERS}")
    jobs.refuse_before_fabric(design, Job(workload="deepseek-v3"), HASHED, None, ("w", 0))
    monkeypatch.setenv("TWIN_LIMITS", "collective_transfers=1")
    jobs.refuse_before_fabric(design, Job(workload="deepseek-v3"), HASHED[1:], None, ("w", 0))  # sprayed: folded blocks, not refused here


def test_a_dense_job_is_never_refused_here(monkeypatch):
    d = pipeline.compile_design(ROOT / "sites" / "lab-2zone.yaml", until="placement", placement_method="naive")
    monkeypatch.setenv("TWIN_LIMITS", "collective_transfers=1")
    jobs.refuse_before_fabric(d, Job(workload=d.spec.site.workloads[0].name), HASHED, None, ("w", 0))
