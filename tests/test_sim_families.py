"""The twin on the other fabric families: InfiniBand fat-tree, rail-optimized and rail-only.

Why: the engine was first checked on the AI-zone Clos only. These fabrics come from the real fabric
pass (sites/lab-ib.yaml and variants of it), so the tests also hold the graph contract: the twin must
read leaves/spines and rail attributes the same way it reads RTSW/CTSW.

Known answers (8 GPUs and 8 x 400G NICs per server, NVLink 450 GB/s per GPU and direction, eta 0.94):
- ring AllReduce with spraying on a non-blocking tree: busbw = 8 x 50 GB/s x 0.94 = 376 GB/s;
- AllToAll over n GPUs on s servers: each NIC sends (n - n/s) / n of S, so
  busbw = (n-1)/n x S / t = (n-1)/(n - n/s) x 47 GB/s;
- rail-only: the same ring AllReduce (the cross-server hop is forwarded over NVLink to the next
  rail's GPU, which NVLink absorbs), and an AllToAll slower by the forwarding step, as the rail-only
  paper (arXiv 2307.12169) reports (8.2-11.2%).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from fabric_helpers import SITES, compile_naive

from twin.twins.net import collectives as coll
from twin.twins.net import relays, routing, topology
from twin.twins.net.nccl import NVLINK_EFFICIENCY

LINE = 400e9 / 8
NVL = 3.6e12 / 8  # grand-teton-h100 NVLink, bytes/s per GPU and direction
ETA = 0.94
SPRAY = routing.Scheme("spray", "spray", 1)
BIG = 2.0**40  # latency is negligible at 1 TiB


def _lab_ib(tmp_path_factory, family: str | None, gpus: int = 128):
    """sites/lab-ib.yaml, optionally as another tree family; 256 GPUs need 16 racks, so the hall
    gets 12 positions per row (the fabric pass needs nothing else)."""
    if family is None:
        return compile_naive(SITES / "lab-ib.yaml")
    doc = copy.deepcopy(yaml.safe_load((SITES / "lab-ib.yaml").read_text()))
    doc["name"] = f"lab-{family}"
    doc.pop("workloads", None)
    doc["fabric"]["family"] = family
    doc["fabric"]["gpus"] = gpus
    doc["halls"][0]["positions_per_row"] = 12
    path = tmp_path_factory.mktemp(family) / f"lab-{family}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return compile_naive(path)


@pytest.fixture(scope="module")
def fat_tree(tmp_path_factory):
    return topology.from_design(_lab_ib(tmp_path_factory, None))


@pytest.fixture(scope="module")
def rail_opt(tmp_path_factory):
    return topology.from_design(_lab_ib(tmp_path_factory, "rail-optimized", 256))


@pytest.fixture(scope="module")
def rail_only_design(tmp_path_factory):
    return _lab_ib(tmp_path_factory, "rail-only", 256)


@pytest.fixture(scope="module")
def rail_only(rail_only_design):
    return topology.from_design(rail_only_design)


def _busbw(net, op, scheme=SPRAY):
    alg = "ring" if op == "allreduce" else "direct"
    return coll.time_collective(net, op, alg, np.arange(net.n_gpus), scheme, eta=ETA, step_overhead=0.0).busbw(BIG)


def _a2a_busbw(n: int, servers: int) -> float:
    return (n - 1) / (n - n / servers) * LINE * ETA


def test_fat_tree_ring_allreduce_is_line_rate_times_eta(fat_tree):
    assert fat_tree.n_gpus == 128 and set(fat_tree.switch_level.tolist()) == {1, 2}
    assert _busbw(fat_tree, "allreduce") == pytest.approx(8 * LINE * ETA, rel=1e-3)


def test_fat_tree_alltoall_known_answer_and_hashing_below_spray(fat_tree):
    spray = _busbw(fat_tree, "alltoall")
    assert spray == pytest.approx(_a2a_busbw(128, 16), rel=1e-3)
    hashed = _busbw(fat_tree, "alltoall", routing.Scheme("e", "e-ecmp", 16))
    assert 0.5 * spray < hashed <= spray * (1 + 1e-9)


def test_rail_optimized_known_answers(rail_opt):
    assert rail_opt.n_gpus == 256
    # every pair is reachable: rails meet at the spines, nothing is forwarded
    g = np.arange(rail_opt.n_gpus)
    assert (relays.relays(rail_opt, np.repeat(g, 8), np.tile(g[::32], 256)) < 0).all()
    assert _busbw(rail_opt, "allreduce") == pytest.approx(8 * LINE * ETA, rel=1e-3)
    assert _busbw(rail_opt, "alltoall") == pytest.approx(_a2a_busbw(256, 32), rel=1e-3)


def test_rail_only_has_no_cross_rail_path_and_relays_through_the_destination_rail(rail_only):
    net = rail_only
    assert (net.dist < 0).any()  # the rails never meet
    # GPU 2 of server 1 -> GPU 6 of server 6: forwarded through GPU 6 of server 1
    src, dst = 2, 5 * 8 + 6
    assert relays.relays(net, np.array([src]), np.array([dst]))[0] == 6
    # same rail, other server: direct
    assert relays.relays(net, np.array([src]), np.array([5 * 8 + 2]))[0] == -1
    for scheme in (SPRAY, routing.Scheme("e", "e-ecmp", 4)):
        r = routing.route(net, np.array([src]), np.array([dst]), np.array([1.0]), scheme)
        used = set(np.flatnonzero(np.asarray(r.A.sum(axis=1)).ravel()).tolist())
        assert {net.gpu_nvl_out[src], net.gpu_nvl_in[6], net.nic_up[net.gpu_nic[6]], net.nic_down[net.gpu_nic[dst]]} <= used
        assert net.nic_up[net.gpu_nic[src]] not in used  # the source's own rail is not used


def test_rail_only_without_nvlink_is_unreachable(rail_only_design):
    g = rail_only_design.fabric.graph
    net = topology.compile_graph(g, {}, None)
    with pytest.raises(ValueError, match="unreachable"):
        routing.route(net, np.array([2]), np.array([5 * 8 + 6]), np.array([1.0]), SPRAY)


def test_rail_only_ring_allreduce_matches_rail_optimized(rail_only):
    # channel c leaves server k from GPU c-1 and enters server k+1 at GPU c: forwarded over NVLink
    # to GPU c, whose rail carries it; NVLink (450 GB/s) absorbs the extra hop
    assert _busbw(rail_only, "allreduce") == pytest.approx(8 * LINE * ETA, rel=1e-3)


def test_rail_only_alltoall_completes_and_pays_the_forwarding_step(rail_only, rail_opt):
    only = _busbw(rail_only, "alltoall")
    opt = _busbw(rail_opt, "alltoall")
    # step 1 (NVLink): each GPU hands 1/8 of S to each of its 7 server peers -> 7/8 S at 450 GB/s
    # x 370/450 (NVLink's measured efficiency, twin/twins/net/nccl.py); step 2 (rails): each NIC sends
    # 31 servers x 8 GPUs x S/256 = 248/256 S at 50 GB/s x eta
    t1 = 7 / 8 / (NVL * NVLINK_EFFICIENCY)
    t2 = 248 / 256 / (LINE * ETA)
    assert opt / only == pytest.approx((t1 + t2) / t2, rel=1e-3)
    assert 1.05 < opt / only < 1.15  # the paper: 8.2-11.2% completion-time overhead
    tm = coll.time_collective(rail_only, "alltoall", "direct", np.arange(256), routing.Scheme("e", "e-ecmp", 16), eta=ETA, step_overhead=0.0)
    assert [p.label for p in tm.phases] == ["forward to the destination's rail (NVLink)", "rail all-to-all"]
    assert 0.5 * only < tm.busbw(BIG) <= only * (1 + 1e-9)


def test_te_reference_on_rail_only_starts_the_network_leg_at_the_relay(rail_only, rail_opt):
    # the TE LP routes leaf to leaf; a ring step leaving server k from GPU c-1 for GPU c of server
    # k+1 is forwarded, so its network leg starts at the relay's leaf (from the source's own leaf
    # the destination is unreachable and the LP would be infeasible)
    te = routing.Scheme("te", "te", 1)
    for net in (rail_only, rail_opt):
        assert _busbw(net, "allreduce", te) == pytest.approx(8 * LINE * ETA, rel=1e-3)
        assert _busbw(net, "alltoall", te) == pytest.approx(_busbw(net, "alltoall"), rel=1e-3)
