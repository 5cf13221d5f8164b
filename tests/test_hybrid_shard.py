"""Hybrid sharding (``dp_shard``: PyTorch's HSDP, Megatron-Core's distributed optimizer instances): ZeRO's states
sharded over a shard group of consecutive data-parallel ranks and replicated across the groups.

Known answers:
- Memory (ZeRO, Rajbhandari et al. SC'20, s5.1): ZeRO 1 holds ``K Psi / N_d`` optimizer bytes per GPU over
  ``N_d`` sharding ranks; under hybrid sharding ``N_d`` is the shard group, so the optimizer state grows by
  (DP x CP) / dp_shard against one shard over every rank, and the weights and gradients do not change.
- The step's data-parallel traffic is, per step (ZeRO 1): a reduce-scatter of the gradients inside each shard
  group, an all-reduce of each rank's 1/dp_shard shard across the replicas (the ranks dp_shard apart), an
  all-gather of the weights inside the shard group; each timed here on groups built from the HSDP mesh
  (replicate, shard) with the shard inner, independently of the job twin's own groups.
- Bad input is a located error: a shard group that does not divide DP x CP, that holds no whole EP group, or
  ZeRO 0 (nothing sharded).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from twin.compiler.resolve import memory
from twin.compiler.resolve.transformer import Shape
from twin.lang.scenario.models import Case, Job
from twin.twins.net import collectives, routing, topology
from twin.twins.net.nccl import Library
from twin.twins.workload import comm, compute, jobs
from twin.twins.workload.recipe import Recipe

ROOT = Path(__file__).resolve().parents[1]
E16 = routing.Scheme("e16", "e-ecmp", 16)
LLAMA_8B = dict(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, vocab=128256)


@pytest.fixture(scope="module")
def lab_net(lab):
    return topology.from_design(lab)


def test_the_optimizer_state_is_sharded_over_the_shard_group_only():
    s = Shape(**LLAMA_8B)
    full = memory.training(s, memory.Plan(seq=8192, tp=8, pp=2, dp=16, microbatches=4, zero=1), 80e9)
    for shard in (2, 4, 8):
        hsdp = memory.training(s, memory.Plan(seq=8192, tp=8, pp=2, dp=16, microbatches=4, zero=1, dp_shard=shard), 80e9)
        assert hsdp.optimizer == pytest.approx(full.optimizer * 16 / shard)
        assert hsdp.weights == full.weights and hsdp.grads == full.grads
    z3 = memory.training(s, memory.Plan(seq=8192, tp=8, pp=2, dp=16, microbatches=4, zero=3, dp_shard=4), 80e9)
    layer = 2 * sum(s.zero3_layer(8, 1)) * 2  # two layers gathered, BF16
    assert z3.weights - layer == pytest.approx(2 * full.weights / 2 / 4)  # BF16 weights over a shard group of 4


def test_the_data_parallel_traffic_is_a_reduce_scatter_a_replica_all_reduce_and_an_all_gather(lab, lab_net):
    """TP8 fills each of lab-2zone's 16 servers: DP 16 is one GPU per server, 8 groups (one per GPU index)."""
    net = lab_net
    s = Shape(**LLAMA_8B)
    gpu = jobs.gpu_of(lab, 1.0)
    r = Recipe(tp=8, dp=16, seq=8192, global_batch=64, zero=1, dp_shard=4, overlap_grad_reduce=False, overlap_param_gather=False)
    c = compute.training(gpu, s, r)
    servers = np.unique(net.gpu_server)
    by_server = [np.flatnonzero(net.gpu_server == x) for x in servers]
    grad = [np.array([g[i] for g in by_server]) for i in range(8)]  # GPU i of every server, server order
    lib = Library(nic_latency=1e-6)

    def timed(key, op, algs, groups, peers=None):
        return comm.time_fastest(net, op, algs, groups, E16, lib, peers)

    g = comm.Groups(tp=by_server, cp=[], pp=[], grad=grad, ep=[], intra_tp=True)
    total, exposed, _ = comm._data_parallel(timed, g, r, s, c)
    # the HSDP mesh (replicate 4, shard 4), shard inner: shard groups are servers 0-3, 4-7, ...; replicas 0, 4, 8, 12
    shards = [x[4 * k:4 * k + 4] for x in grad for k in range(4)]
    replicas = [x[j::4] for x in grad for j in range(4)]
    assert sorted(map(tuple, shards)) == sorted(map(tuple, comm.shard_groups(grad, 4)))
    assert sorted(map(tuple, replicas)) == sorted(map(tuple, comm.replica_groups(grad, 4)))
    g_bytes = s.replicated_params / 8 * 2  # BF16 gradients after TP8

    def t(op, algs, groups, size):
        return min(collectives.time_collective(net, op, a, None, E16, groups=groups, lib=lib).time(size) for a in algs)

    expect = t("allgather", ["ring"], shards, g_bytes) * 2 + t("allreduce", ["ring", "tree"], replicas, g_bytes / 4)
    assert total == pytest.approx(expect, rel=1e-9) and exposed == pytest.approx(expect, rel=1e-9)
    flat = comm._data_parallel(timed, g, dataclasses.replace(r, dp_shard=0), s, c)[0]
    assert flat == pytest.approx(2 * t("allgather", ["ring"], grad, g_bytes), rel=1e-9)
    assert total != pytest.approx(flat, rel=1e-3)


def test_a_job_runs_hybrid_sharding_from_the_workload_or_a_scenario(lab, lab_net):
    w = lab.spec.site.workloads[0]
    base = dict(tp=8, pp=1, dp=16, global_batch=64, zero=1)
    out = {}
    for shard in (None, 4):
        job = Job(workload=w.name, recipe={**base, **({"dp_shard": shard} if shard else {})})
        r = jobs.simulate_job(lab, lab_net, job, [E16], Library(nic_latency=1e-6), Case(name="h"), set(), None, ("jobs", 0))
        out[shard] = r
    assert out[4]["recipe"]["dp_shard"] == 4 and out[None]["recipe"]["dp_shard"] is None
    assert out[4]["parallelism"] == "TP8 CP1 PP1 DP16, ZeRO shards of 4 x 4 replicas"
    assert out[4]["memory"]["optimizer_bytes"] == pytest.approx(4 * out[None]["memory"]["optimizer_bytes"])
    assert out[4]["schemes"][0]["dp_s"] != pytest.approx(out[None]["schemes"][0]["dp_s"], rel=1e-3)


@pytest.mark.parametrize("fields, message", [
    ({"dp_shard": 3}, "a shard group of 3 ranks does not divide the DP8 x CP1 = 8 data-parallel ranks"),
    ({"dp_shard": 4, "zero": 0}, "dp_shard 4 shards ZeRO's states, but ZeRO 0 shards none"),
])
def test_a_shard_group_that_cannot_be_is_a_located_error(tmp_path, fields, message):
    doc = yaml.safe_load((ROOT / "sites" / "lab-2zone.yaml").read_text(encoding="utf-8"))
    doc["workloads"][0].update({"zero": 1, **fields})
    p = tmp_path / "lab.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "twin", "validate", str(p)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stdout + r.stderr and "workloads[0].dp_shard" in r.stdout + r.stderr
    assert "Traceback" not in r.stderr


def test_the_plan_search_shards_over_every_data_parallel_rank(lab):
    from twin.twins.plan.problem import Problem

    w = lab.spec.site.workloads[0].model_copy(update={"zero": 1, "dp_shard": 4})
    p = Problem.of(lab, w, fabric=False)
    assert p.workload.dp_shard is None and p.base.dp_shard == 0


def test_an_algorithm_refused_for_its_cost_is_left_out_and_named(lab_net, monkeypatch):
    """Sprayed transfers that are not folded into classes are counted before they are laid out: a tree's transfers
    share their NICs (a parent receives from two children), so they cannot be folded as a ring's are, and past
    ``spray_entries`` the tree is refused with the count and the limit while the ring (folded) is timed."""
    from twin.lang.limits import CostError

    net = lab_net
    spray = routing.Scheme("spray", "adaptive", 1)
    servers = np.unique(net.gpu_server)
    group = [np.array([np.flatnonzero(net.gpu_server == x)[0] for x in servers])]  # GPU 0 of every server
    monkeypatch.setattr(collectives, "LUMP_TRANSFERS", 1)  # every sprayed phase tries the classes
    both = comm.time_fastest(net, "allreduce", ["ring", "tree"], group, spray, Library())
    assert len(both.timings) == 2 and both.refused == []
    monkeypatch.setenv("TWIN_LIMITS", "spray_entries=1")
    one = comm.time_fastest(net, "allreduce", ["ring", "tree"], group, spray, Library())
    assert len(one.timings) == 1 and one.timings[0].algorithm == "ring"
    assert one.at(1e9)[0] == both.timings[0].time(1e9)  # the ring is the same ring
    assert len(one.refused) == 1 and "allreduce/tree over 1 group(s) of 16 ranks not timed" in one.refused[0]
    assert "limit spray_entries" in one.refused[0]
    with pytest.raises(CostError, match="spray_entries"):  # nothing else to take: refused, never 0 s
        comm.time_fastest(net, "allreduce", ["tree"], group, spray, Library())


@pytest.fixture(scope="module")
def shard_search(lab):
    from twin.twins.plan import search
    from twin.twins.plan.problem import Problem

    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b")
    p = Problem.of(lab, w)
    return p, search.search(p, {"fp8": 0, "zero": [0, 1, 3], "dp_shard": [0, 2, 4, 8], "tp": [1, 2], "recompute": "none"}, keep=10)


def test_the_search_opens_hybrid_sharding_when_it_is_pinned(shard_search):
    from twin.twins.plan.space import Axes, Space

    p, s = shard_search
    sh, ranks = s.cols["shard"], s.cols["dp"] * s.cols["cp"]
    hyb = sh > 0
    assert hyb.any() and (~hyb).any()
    assert np.all(ranks[hyb] % sh[hyb] == 0) and np.all(sh[hyb] < ranks[hyb]) and np.all(s.cols["zero"][hyb] >= 1)
    assert s.space.pruned["shard"] > 0  # shard groups that cannot be, and shard groups with ZeRO 0, counted
    closed = Space.of(Axes(gpus=16, layers=8, heads=8, kv_heads=2, ffn=48, seq=96, batch=16))
    assert set(closed.cols["shard"].tolist()) == {0} and closed.pruned["shard"] == 0  # not pinned: not searched


def test_hybrid_plans_in_the_fast_stage_are_the_job_twin(shard_search):
    """Memory table and fast stage against the job twin on hybrid-sharded plans drawn at random (ZeRO 1 and 3),
    each scored on tables of its own: the memory to 1e-9, the step to 1e-6."""
    from twin.compiler.resolve import memory
    from twin.twins.plan import answer, fast, tables
    from twin.twins.plan.problem import row

    p, s = shard_search
    idx = np.flatnonzero(s.cols["shard"] > 0)
    rng = np.random.default_rng(3)
    for i in rng.choice(idx, 6, replace=False):
        c = row(s.cols, int(i))
        w = p.workload_of(c)
        assert w.dp_shard == c["shard"]
        m = memory.training(p.shape, memory.Plan.of(w, p.base.fused_attention, grad_bytes=p.base.grad_bytes), p.hbm)
        assert s.memory["total"][i] == pytest.approx(m.total, rel=1e-9)
        sub = {k: v[[i]] for k, v in s.cols.items()}
        step = fast.evaluate(p, sub, tables.Collectives(p), tables.compute_table(p, sub))["step_s"][0]
        full = answer.full_twin(p, c)
        assert full["parallelism"].endswith(f"ZeRO shards of {c['shard']} x {(c['dp'] * c['cp']) // c['shard']} replicas")
        assert step == pytest.approx(full["schemes"][0]["step_s"], rel=1e-6), answer.label(c)


def test_a_pinned_shard_is_written_into_the_scenario_and_plan_best_runs_it(lab, tmp_path):
    from twin.twins.plan import answer, render

    out = answer.answer(_problem(lab), {"fp8": 0, "zero": 1, "dp_shard": 8, "tp": 1, "recompute": "none"}, top=3)
    pick = out["plans"][0]
    assert pick["plan"]["dp_shard"] == 8 and " shard8 " in pick["label"]
    doc = yaml.safe_load(render.scenario({**out, "workload": "lab-llama-8b", "gpus": 128, "site": "lab-2zone"}))
    assert doc["jobs"][0]["recipe"]["dp_shard"] == 8


def _problem(lab):
    from twin.twins.plan.problem import Problem

    w = next(x for x in lab.spec.site.workloads if x.name == "lab-llama-8b")
    p = Problem.of(lab, w)
    return p


def test_plan_best_with_a_shard_group_in_the_recipe_searches_hybrid_plans(lab):
    """A scenario's ``plan: best`` job whose recipe names ``dp_shard`` pins the search to it, and the job twin
    times the pick hybrid-sharded, at the step the search predicted."""
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.run import simulate

    scn, src = parse_scenario("name: best-hsdp\nrouting:\n  - {name: site, scheme: site}\njobs:\n"
                              "  - {workload: lab-llama-8b, plan: best, recipe: {dp_shard: 8, zero: 1, tp: 1, recompute: none, fp8: none}}\n",
                              "best.yaml")
    data = simulate(lab, scn, src).data
    job, plan = data["cases"][0]["jobs"][0], data["plans"][0]
    assert plan["plan"]["dp_shard"] == 8 and job["recipe"]["dp_shard"] == 8
    assert job["schemes"][0]["step_s"] == pytest.approx(plan["predicted_step_s"], rel=1e-9)


def test_measured_runs_may_state_their_shard_group(lab, tmp_path):
    """A measured CSV's ``dp_shard`` column: a hybrid-sharded run is timed hybrid-sharded, and one that cannot be
    is located at its cell."""
    from twin.twins.plan import measured

    p = _problem(lab)
    f = tmp_path / "runs.csv"
    f.write_text("name,tp,cp,pp,dp,zero,dp_shard,micro_batch,recompute,fp8,step_s\n"
                 "flat,1,2,1,64,1,,1,none,none,0.50\nhsdp,1,2,1,64,1,8,1,none,none,0.55\n")
    rows = measured.plans(p, f, measured.read(f))
    assert [c["shard"] for _, _, c in rows] == [0, 8]
    f.write_text("name,tp,cp,pp,dp,zero,dp_shard,micro_batch,recompute,fp8,step_s\nbad,1,2,1,64,1,6,1,none,none,0.5\n")
    with pytest.raises(measured.MeasuredError) as e:
        measured.plans(p, f, measured.read(f))
    assert str(e.value).startswith(f"{f}:2: dp_shard: ") and "a dp_shard of at least 2 dividing DP x CP" in str(e.value)


def test_calibration_runs_may_state_their_shard_group(lab):
    """twin calibrate's CSV takes a dp_shard column; a run whose shard group (its own, or the workload's at the
    run's DP) cannot be is a located error before anything is timed."""
    from twin.lang.diagnostics import SpecError
    from twin.twins.workload import calibrate

    wl = {w.name: w for w in lab.spec.site.workloads}
    runs = calibrate.read_runs("workload,gpus,tp,pp,dp,zero,dp_shard,step_s\nlab-llama-8b,128,8,1,16,1,4,1.5\n", "runs.csv", wl)
    assert runs[0].plan["dp_shard"] == 4
    with pytest.raises(SpecError) as e:
        calibrate.read_runs("workload,gpus,tp,pp,dp,zero,dp_shard,step_s\nlab-llama-8b,128,8,1,16,1,3,1.5\n", "runs.csv", wl)
    d = e.value.diagnostics[0]
    assert (d.line, d.col) == (2, 7) and "a ZeRO shard group of 3 ranks for DP16 x CP1 = 16" in d.message
    sharded = {k: (w.model_copy(update={"zero": 1, "dp_shard": 8}) if k == "lab-llama-8b" else w) for k, w in wl.items()}
    with pytest.raises(SpecError) as e:  # the workload's shard group at a DP it does not divide
        calibrate.read_runs("workload,gpus,tp,pp,dp,step_s\nlab-llama-8b,96,8,2,6,1.5\n", "runs.csv", sharded)
    d = e.value.diagnostics[0]
    assert (d.line, d.col) == (2, 2) and "(workload lab-llama-8b's)" in d.message


def test_hashed_flows_are_counted_before_their_paths_are_laid_out(lab_net, monkeypatch):
    """Each hashed transfer is channels x QPs flows, each with its own path: past ``hashed_flows`` the collective is
    refused with the count and the limit (at a million GPUs a ring's 63.7 M QP flows ran out of memory before)."""
    from twin.lang.limits import CostError

    servers = np.unique(lab_net.gpu_server)
    group = [np.array([np.flatnonzero(lab_net.gpu_server == x)[0] for x in servers])]
    t = comm.time_fastest(lab_net, "allgather", ["ring"], group, E16, Library())
    assert t.at(1e9)[0] > 0
    monkeypatch.setenv("TWIN_LIMITS", "hashed_flows=100")
    with pytest.raises(CostError, match=r"QP flows of .* hashed transfers \(.* each\) in one phase; at most 100 \(limit hashed_flows"):
        comm.time_fastest(lab_net, "allgather", ["ring"], group, E16, Library())
