"""A software stack's rank orders (catalog ``stacks: ... plans: orders``): what a job runs in when it states no
``dims``, and what the plan search may pick.

Megatron-LM 2021 lays ranks out TP, DP, PP and in no other order ([megatron-lm-2021-mpu], initialize_model_parallel:
TP groups of consecutive ranks, DP strided by TP inside each block of world / PP ranks, PP strided by world / PP);
Megatron-Core TP, CP, EP, DP, PP or, asked, TP, CP, EP, PP, DP ([megatron-core-order]). Meta's 2024 stack names
none: any order, TP, CP, PP, DP ([llama3] s3.3.2) by default. A pinned order means the layout of the dimensions
above 1: a plan without CP is laid out alike under tp-dp-cp-pp and tp-cp-dp-pp.
"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, compiled, twin_in_process
from twin.lang.catalog import builtin
from twin.lang.scenario.models import Case, Job
from twin.twins.net import routing, topology
from twin.twins.net.nccl import Library
from twin.twins.plan import answer, render, search
from twin.twins.plan.problem import Problem, row
from twin.twins.plan.space import ORDERS, same_layout
from twin.twins.workload import jobs


def test_the_catalog_states_each_frameworks_orders():
    st = builtin().stacks
    assert st["megatron-lm-2021"].plans.orders == ["tp-cp-dp-pp"] == st["megatron-deepspeed-2021"].plans.orders
    assert st["megatron-core-2025"].plans.orders == ["tp-cp-dp-pp", "tp-cp-pp-dp"]
    assert st["meta-production-2024"].plans.orders is None


@pytest.fixture(scope="module")
def lab_2021():
    lab = compiled("lab-2zone")
    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b").model_copy(update={"stack": "megatron-lm-2021"})
    return lab, w


def test_a_job_without_dims_runs_in_its_stacks_first_order(lab_2021):
    lab, w = lab_2021
    net = topology.from_design(lab)
    scheme, lib = routing.site_scheme(lab.spec.fabric), Library(nic_latency=lab.spec.chassis.nic_latency)
    plan = w.model_copy(update={"tp": 8, "pp": 2, "dp": 8, "virtual_stages": 1})

    def run(job):
        return jobs.simulate_job(lab, net, job, [scheme], lib, Case(name="o"), set(), None, ("jobs", 0), workload=plan)

    own = run(Job(workload=w.name))
    assert own["dims"] == "tp-cp-dp-pp"  # Megatron-LM 2021's, not the project's default tp-cp-pp-dp
    stated = run(Job(workload=w.name, dims="tp-cp-pp-dp"))
    assert stated["dims"] == "tp-cp-pp-dp"
    # the two layouts place the 8 DP groups differently: one on neighbouring servers, one across the pipeline's
    assert own["schemes"][0]["dp_s"] != pytest.approx(stated["schemes"][0]["dp_s"], rel=1e-6)


def test_the_search_keeps_to_the_stacks_orders_and_a_pin_wins(lab_2021):
    lab, w = lab_2021
    p = Problem.of(lab, w)
    s = search.search(p, {"recompute": "full", "pp": [2, 4]}, keep=10)
    picked = [row(s.cols, int(i)) for i in s.best(k=10)]
    assert picked and any(c["dp"] > 1 for c in picked)
    # every plan the space holds is one Megatron-LM 2021 can lay out: its dimensions above 1 in the order TP, DP, PP
    combos = {tuple(int(s.cols[k][i]) for k in ("tp", "cp", "pp", "dp", "order")) for i in range(len(s.bound))}
    assert all(same_layout(ORDERS[o], "tp-cp-dp-pp", {"tp": tp, "cp": cp, "pp": pp, "dp": dp}) for tp, cp, pp, dp, o in combos)
    assert sum(1 for tp, cp, pp, dp, o in combos if tp > 1 and dp > 1) > 0  # a structure with three live dimensions: one order of 3!
    # a user's pin wins over the stack's, and matches by layout (CP of size 1 sits anywhere)
    pinned = search.search(p, {"recompute": "full", "pp": 2, "order": "tp-pp-cp-dp"}, keep=3)
    got = {tuple(int(pinned.cols[k][i]) for k in ("tp", "cp", "pp", "dp", "order")) for i in range(len(pinned.bound))}
    assert got and all(same_layout(ORDERS[o], "tp-pp-cp-dp", {"tp": tp, "cp": cp, "pp": pp, "dp": dp}) for tp, cp, pp, dp, o in got)
    assert any(tp > 1 and dp > 1 and ORDERS[o] == "tp-cp-pp-dp" for tp, cp, pp, dp, o in got)  # the order the stack would not run


def test_the_answer_says_why_the_orders_are_few(lab_2021):
    lab, w = lab_2021
    res = answer.answer(Problem.of(lab, w), {"recompute": "full", "pp": 2}, top=2)
    assert res["space"]["stack_limits"]["order"] == ["tp-cp-dp-pp"]
    assert "rank order: tp-cp-dp-pp, the one stack megatron-lm-2021 lays its groups out in" in render.text(res)
    pinned = answer.answer(Problem.of(lab, w), {"recompute": "full", "pp": 2, "order": "tp-cp-pp-dp"}, top=2)
    assert "rank order" not in render.text(pinned).splitlines()[2]


def test_a_job_naming_a_dimension_twice_is_a_located_error(tmp_path):
    scn = tmp_path / "twice.yaml"
    scn.write_text("name: twice\nrouting:\n  - {name: site, scheme: site}\njobs:\n  - {workload: lab-llama-8b, dims: tp-tp-pp-dp}\n",
                   encoding="utf-8")
    r = twin_in_process("simulate", str(ROOT / "sites" / "lab-2zone.yaml"), "--scenario", str(scn))
    assert r.returncode == 2, r.stdout[-800:] + r.stderr[-800:]
    out = r.stdout + r.stderr
    assert "each of tp, cp, pp and dp once" in out and f"{scn}:5:" in out, out[-1500:]
