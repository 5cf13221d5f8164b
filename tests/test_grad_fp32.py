"""Gradients held and reduced in FP32 (a stack's ``grad_reduce_fp32``; Megatron-Core's grad_reduce_in_fp32, set by
every Llama recipe of Megatron-Bridge, [megatron-bridge-recipes]): the data-parallel reduction moves 4 bytes a
gradient and the memory holds them, and the plan search's fast stage agrees with the job twin on both.

Known answer ([megatron-distopt], Megatron-Core's distributed optimizer, "bf16 parameters, fp32 gradients"): 18 bytes
of model state per parameter without sharding and 6 + 12/d with the distributed optimizer over d ranks.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import compiled
from twin.compiler.resolve import memory
from twin.compiler.resolve.transformer import Shape
from twin.lang.catalog import builtin
from twin.twins.plan import answer, fast, search, tables
from twin.twins.plan.problem import Problem, row
from twin.twins.workload.recipe import Recipe


@pytest.mark.parametrize("zero,dp,want", [(0, 8, 18.0), (1, 8, 6 + 12 / 8), (1, 64, 6 + 12 / 64)])
def test_model_state_per_parameter_is_megatron_cores_count(zero, dp, want):
    lab = compiled("lab-2zone")
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b").model_copy(update={"zero": zero, "dp": dp, "tp": 1, "pp": 1, "cp": 1})
    s = Shape.of(w)
    m = memory.training(s, memory.Plan.of(w, grad_bytes=memory.grad_bytes(True)), 80e9)
    n = sum(memory.stage_params(s, memory.Plan.of(w)))
    assert (m.weights + m.grads + m.optimizer) / n == pytest.approx(want, rel=1e-12)
    bf16 = memory.training(s, memory.Plan.of(w), 80e9)
    assert (m.grads - bf16.grads) / n == pytest.approx(2.0, rel=1e-12)  # 2 bytes more a gradient, and nothing else
    assert (m.weights, m.optimizer, m.activations) == (bf16.weights, bf16.optimizer, bf16.activations)


def test_the_stack_sets_it_and_a_recipe_overrides_it():
    stacks = builtin().stacks
    assert stacks["megatron-core-2025"].grad_reduce_fp32 and stacks["meta-production-2024"].grad_reduce_fp32  # [llama3] s3.3.2
    assert not stacks["megatron-lm-2021"].grad_reduce_fp32
    d = compiled("dgx-h100-pod")
    w = next(x for x in d.spec.site.workloads if x.name == "nemo-llama31-405b")
    # the row states what its performance script ran ([megatron-bridge-perf-scripts]: grad_reduce_in_fp32 = False);
    # without that line it takes the stack's, the recipes' FP32
    assert w.grad_reduce_fp32 is False and Recipe.of(w, stacks).grad_bytes == 2.0
    unstated = w.model_copy(update={"grad_reduce_fp32": None})
    assert Recipe.of(unstated, stacks).grad_bytes == 4.0


@pytest.fixture(scope="module")
def fp32_problem():
    """The lab's 8B model under Megatron-Core 2025 (FP32 gradients), on the lab site."""
    lab = compiled("lab-2zone")
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b").model_copy(update={"stack": "megatron-core-2025"})
    p = Problem.of(lab, w)
    assert p.base.grad_bytes == 4.0
    return p, search.search(p, {"fp8": 0, "zero": [0, 1, 3], "cp": 1}, keep=10)


def test_fast_stage_and_memory_table_agree_with_the_job_twin(fp32_problem):
    p, s = fp32_problem
    rng = np.random.default_rng(5)
    # feasible plans with data parallelism, four at ZeRO 0 and four at ZeRO 1, each scored on tables of its own
    # (a fresh set of collectives: its own groups timed, no signature shared with another layout)
    picks = [int(i) for z in (0, 1) for i in rng.choice(np.flatnonzero((s.cols["dp"] > 1) & (s.cols["zero"] == z)), 4, replace=False)]
    for i in picks:
        c = row(s.cols, i)
        sub = {k: v[[i]] for k, v in s.cols.items()}
        fast_step = fast.evaluate(p, sub, tables.Collectives(p), tables.compute_table(p, sub))["step_s"][0]
        full = answer.full_twin(p, c)["schemes"][0]["step_s"]
        assert fast_step == pytest.approx(full, rel=1e-6), answer.label(c)
        w = p.workload_of(c)
        m = memory.training(p.shape, memory.Plan.of(w, p.base.fused_attention, grad_bytes=p.base.grad_bytes), p.hbm)
        assert s.memory["total"][i] == pytest.approx(m.total, rel=1e-9), answer.label(c)


def test_the_405b_rows_reduction_moves_twice_the_gathers_bytes():
    """On the 405B row (ZeRO 1, DP 8 across servers): BF16 gradients cost a gather and a reduce-scatter of the same
    bytes; FP32 ones a reduce-scatter of twice the bytes, so the data-parallel time is about 3/2 of it (less the
    latency the bigger transfer does not pay twice)."""
    from twin.lang.scenario.models import Case, Job
    from twin.twins.net import routing, topology
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs

    d = compiled("dgx-h100-pod")
    net = topology.from_design(d)
    scheme = routing.site_scheme(d.spec.fabric)
    lib = Library(nic_latency=d.spec.chassis.nic_latency)

    def dp_s(fp32: bool) -> float:
        job = Job(workload="nemo-llama31-405b", recipe={"grad_reduce_fp32": fp32})
        r = jobs.simulate_job(d, net, job, [scheme], lib, Case(name="v"), set(), None, ("jobs", 0))
        return r["schemes"][0]["dp_s"]

    ratio = dp_s(True) / dp_s(False)
    assert 1.45 < ratio <= 1.5, ratio
