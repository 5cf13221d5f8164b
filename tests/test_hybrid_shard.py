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
