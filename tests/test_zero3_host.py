"""A stack's host time per ZeRO-3 parameter gather (``zero3_host``: DeepSpeed 2021 synchronises the device before
each gather, [deepspeed-zero3-2021]), which the GPU waits out.

Known answers (closed forms of the job twin's own counting, no constant set on them):
- Without prefetch of the gathers (``overlap_param_gather: false``, DeepSpeed 2021) every gather is exposed, so
  the host time adds ``m x layers x gathers x tensors x h`` to the step: ``gathers`` 3 with full recomputation
  (forward, recomputed forward, backward), ``tensors`` the parameter tensors per layer when each has its own
  collective (6 in a Llama layer: two norms, QKV, the output projection, gate/up, down), and nothing to plans
  without ZeRO-3.
- The plan search's fast stage times it as the job twin does.
- Megatron-DeepSpeed 2021 runs Megatron-LM 2021's kernels ([megatron-sc21] s5.2): the two stacks' kernel_share
  are one number.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.conftest import compiled
from twin.lang.catalog import builtin
from twin.twins.plan import answer, fast, search, tables
from twin.twins.plan.problem import Problem, row

H = 0.004


def _with_host(design, stack: str, host: float):
    cat = design.spec.catalog
    stacks = {**cat.stacks, stack: cat.stacks[stack].model_copy(update={"zero3_host": host})}
    return dataclasses.replace(design, spec=dataclasses.replace(design.spec, catalog=cat.model_copy(update={"stacks": stacks})))


@pytest.fixture(scope="module")
def problems():
    """The lab's 8B model under Megatron-DeepSpeed 2021 (one collective per tensor, no prefetch), its host time
    per gather 0 and 4 ms, on 16 of its GPUs."""
    lab = compiled("lab-2zone")
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b").model_copy(update={"stack": "megatron-deepspeed-2021"})
    return {h: Problem.of(_with_host(lab, "megatron-deepspeed-2021", h), w, gpus=16) for h in (0.0, H)}


def test_the_stacks_share_megatrons_kernels():
    st = builtin().stacks
    assert st["megatron-deepspeed-2021"].kernel_share == st["megatron-lm-2021"].kernel_share
    assert st["megatron-deepspeed-2021"].zero3_host == pytest.approx(4.215e-3)
    assert all(st[k].zero3_host == 0 for k in st if k != "megatron-deepspeed-2021")


def test_every_gather_pays_the_host_time_and_nothing_else_does(problems):
    pins = {"tp": 1, "pp": 1, "cp": 1, "fp8": 0, "recompute": "full", "zero": [1, 3]}
    got = {}
    for h, p in problems.items():
        s = search.search(p, pins, keep=50)
        got[h] = {row(s.cols, int(i))["zero"]: (row(s.cols, int(i)), answer.full_twin(p, row(s.cols, int(i))))
                  for i in s.best(None, 50)[::-1]}
    for zero in (1, 3):
        c, base = got[0.0][zero]
        with_h = answer.full_twin(problems[H], c)
        extra = with_h["schemes"][0]["step_s"] - base["schemes"][0]["step_s"]
        if zero == 1:
            assert extra == pytest.approx(0.0, abs=1e-12)
            continue
        m, layers = base["microbatches"], base["layers_on_slowest_stage"]
        tensors = problems[H].shape.zero3_tensors(1)
        assert tensors == 6  # SwiGLU without biases: two norms, the fused QKV, the output projection, the fused gate/up, the down
        assert extra == pytest.approx(m * layers * 3 * tensors * H, rel=1e-9)


def test_the_fast_stage_times_it_as_the_job_twin(problems):
    p = problems[H]
    s = search.search(p, {"fp8": 0, "zero": 3, "cp": 1}, keep=10)
    rng = np.random.default_rng(3)
    for i in rng.choice(np.flatnonzero(s.cols["dp"] > 1), 4, replace=False):
        c = row(s.cols, int(i))
        sub = {k: v[[i]] for k, v in s.cols.items()}
        fast_step = fast.evaluate(p, sub, tables.Collectives(p), tables.compute_table(p, sub))["step_s"][0]
        assert fast_step == pytest.approx(answer.full_twin(p, c)["schemes"][0]["step_s"], rel=1e-6), answer.label(c)
