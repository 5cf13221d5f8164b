"""Two ways the plan search's fast stage once parted from the full job twin, on the lab under Megatron-Core 2025
(TP overlap on, the CP ring):

- point-to-point collectives (a CP ring's next rank, a pipeline's next stage) were tabulated by the ranks they
  run over alone: a CP ring over all of a job's GPUs has the same ranks whatever its size or stride, so the
  first one timed stood for every one (a CP 8 ring across servers took a CP 2 ring's time inside one);
- the stack's TP overlap (userbuffers) was applied to TP groups wider than an NVLink domain, which the workload
  checks refuse when a workload states it.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import compiled
from twin.twins.plan import answer, search
from twin.twins.plan.problem import Problem, row


@pytest.fixture(scope="module")
def lab_core():
    lab = compiled("lab-2zone")
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b").model_copy(
        update={"stack": "megatron-core-2025", "cp_comm": "ring"})
    return Problem.of(lab, w)


def test_every_cp_ring_is_timed_for_its_own_layout(lab_core):
    p = lab_core
    s = search.search(p, {"recompute": "none", "fp8": 0, "tp": [1, 2], "cp": [2, 8], "pp": 1, "zero": 1}, keep=40)
    idx = [int(i) for i in s.best(k=40)]
    cps = {int(s.cols["cp"][i]) for i in idx}
    assert cps == {2, 8}, cps  # both ring sizes among the scored plans
    for i in idx[:: max(1, len(idx) // 8)]:
        c = row(s.cols, i)
        full = answer.full_twin(p, c)["schemes"][0]
        assert float(s.parts["cp_s"][i]) == pytest.approx(full["cp_s"], rel=1e-9, abs=1e-12), answer.label(c)
        assert float(s.step[i]) == pytest.approx(full["step_s"], rel=1e-9), answer.label(c)


def test_tp_overlap_stays_inside_the_nvlink_domain(lab_core):
    p = lab_core
    assert p.tp_overlaps(8, 1) and not p.tp_overlaps(16, 1) and not p.tp_overlaps(8, 0) and not p.tp_overlaps(1, 1)
    assert list(p.tp_overlaps(np.array([2, 8, 16]), np.array([1, 1, 1]))) == [True, True, False]
    s = search.search(p, {"recompute": "none", "fp8": 0, "tp": 16, "sequence_parallel": 1, "pp": 1, "cp": 1}, keep=3)
    c = row(s.cols, int(s.best(k=1)[0]))
    assert p.recipe(c).overlap_tp == ()
    full = answer.full_twin(p, c)
    assert full["schemes"][0]["comm_by_kind"]["tp_allgather"]["hidden_s"] == 0.0  # every TP exchange exposed, as the fast stage says
    assert float(s.step[int(s.best(k=1)[0])]) == pytest.approx(full["schemes"][0]["step_s"], rel=1e-9)
