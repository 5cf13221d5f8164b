"""Known answers for the twin's engine: max-min fairness, hashing imbalance, ring busbw, ATSW bound."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csc_matrix

from twin.twins.net import collectives as coll
from twin.twins.net import fluid, hashing, routing, synthetic, te, topology

LINE = 400e9 / 8  # bytes/s of a 400G NIC


def net_of(nvlink: float | None = 3.6e12, **kw) -> topology.Net:
    return topology.compile_graph(synthetic.clos(**kw), {"minipack2": 700e-9}, nvlink)


def test_max_min_hand_computed_three_links():
    # arcs: capacity 10, 10, 4. a: arcs 0+1; b: arc 0; c: arcs 1+2.
    # arc 2 saturates at c = 4; then arc 0 saturates with a = b = 5 (arc 1 carries 9 < 10).
    A = csc_matrix(np.array([[1, 1, 0], [1, 0, 1], [0, 0, 1]], float))
    assert np.allclose(fluid.max_min(A, np.array([10.0, 10.0, 4.0])), [5, 5, 4])


def test_max_min_counts_members_and_fluid_recomputes_rates():
    # one arc of 12: a class of 2 members and a single flow share it -> 4 each;
    # the single flow has 4 bytes, the pair 8 bytes each: single ends at t=1, then the pair gets 6 each
    A = csc_matrix(np.array([[2.0, 1.0]]))
    assert np.allclose(fluid.max_min(A, np.array([12.0])), [4, 4])
    res = fluid.complete(A, np.array([12.0]), np.array([8.0, 4.0]))
    assert res.finish[1] == pytest.approx(1.0)
    assert res.finish[0] == pytest.approx(1.0 + 4.0 / 6.0)
    assert res.events == 2


def test_ecmp_groups_follow_bfs_distances():
    net = net_of(zones=1, racks_per_zone=3, servers_per_rack=1, gpus_per_server=4, ctsw_per_zone=2)
    leaf0, leaf1 = net.leaf_of_dest[0], net.leaf_of_dest[1]
    up = net.group(leaf0, 1)
    assert len(up) == 4  # 4 uplinks (2 parallel to each CTSW), all one hop closer to leaf 1
    assert set(net.arc_head[up]) == {i for i, s in enumerate(net.switch_ids) if "ctsw" in s}
    ctsw = net.arc_head[up[0]]
    down = net.group(ctsw, 1)
    assert len(down) == 2 and set(net.arc_head[down]) == {leaf1}
    assert net.group_of[leaf0, 0] == -1


def test_hashing_1000_flows_on_16_links_max_over_mean_above_1_2():
    """[meta-roce] Routing: 1,000 flows hashed onto 16 links give max/mean > 1.2 on average."""
    net = net_of(zones=1, racks_per_zone=2, servers_per_rack=16, gpus_per_server=8, ctsw_per_zone=16, rtsw_uplinks=16, nvlink=None)
    src = np.arange(125)  # 125 NIC pairs x 8 QPs = 1,000 flows from rack 1 to rack 2
    dst = src + 128
    ratios = []
    for seed in range(40):
        P = routing.hashed_paths(net, src, dst, routing.Scheme("e", "e-ecmp", 8, seed=seed))
        counts = np.unique(P[:, 1], return_counts=True)[1]
        assert counts.sum() == 1000 and len(counts) <= 16
        full = np.zeros(16)
        full[: len(counts)] = counts
        ratios.append(full.max() / full.mean())
    assert 1.2 <= np.mean(ratios) < 1.6


def test_hash_is_deterministic_and_seed_sensitive():
    f = hashing.flow_fields(np.arange(100), np.arange(100) + 7, np.zeros(100, int))
    a = hashing.base_hash(f, list(f), "xxmix", 1)
    assert np.array_equal(a, hashing.base_hash(f, list(f), "xxmix", 1))
    assert not np.array_equal(a, hashing.base_hash(f, list(f), "xxmix", 2))
    c = hashing.crc32_words([np.array([0x64636261])])  # "abcd"
    assert int(c[0]) == 0xED82CD11  # zlib.crc32(b"abcd")


def test_ring_allreduce_on_nonblocking_fat_tree_is_line_rate_times_eta():
    # one GPU per server, 8 servers, 1:1 Clos: busbw -> line rate x protocol efficiency
    net = net_of(zones=1, racks_per_zone=4, servers_per_rack=2, gpus_per_server=1, ctsw_per_zone=2)
    tm = coll.time_collective(net, "allreduce", "ring", np.arange(8), routing.Scheme("s", "spray", 1), eta=0.94, step_overhead=0.0)
    big = 2.0**40  # path latency is negligible at 1 TiB
    assert tm.busbw(big) == pytest.approx(LINE * 0.94, rel=1e-4)


def test_ring_allreduce_full_servers_uses_every_nic():
    # 8 GPUs and 8 NICs per server, NVLink 450 GB/s: channel rings put one NIC hop per channel,
    # so busbw = 8 x line x eta (nccl-tests' ~370-385 GB/s on 8x400G H100 servers)
    net = net_of(zones=1, racks_per_zone=2, servers_per_rack=2, gpus_per_server=8, ctsw_per_zone=4)
    tm = coll.time_collective(net, "allreduce", "ring", np.arange(32), routing.Scheme("s", "spray", 1), eta=0.94, step_overhead=0.0)
    assert tm.busbw(2.0**40) == pytest.approx(8 * LINE * 0.94, rel=1e-3)


def test_busbw_definitions_match_nccl_tests():
    net = net_of(zones=1, racks_per_zone=4, servers_per_rack=2, gpus_per_server=1, ctsw_per_zone=2)
    ranks = np.arange(8)
    for op in ("allgather", "reducescatter"):
        tm = coll.time_collective(net, op, "ring", ranks, routing.Scheme("s", "spray", 1), eta=1.0, step_overhead=0.0)
        assert tm.busbw(2.0**40) == pytest.approx(LINE, rel=1e-4)
        assert tm.busbw(2.0**40) == pytest.approx(tm.algbw(2.0**40) * 7 / 8)
    hd = coll.time_collective(net, "allgather", "doubling", ranks, routing.Scheme("s", "spray", 1), eta=1.0, step_overhead=0.0)
    assert hd.busbw(2.0**40) == pytest.approx(LINE, rel=1e-4)  # no contention: (n-1)/n S at line rate


def test_e_ecmp_16_qps_recovers_most_of_the_1qp_ecmp_loss():
    net = net_of(zones=1, racks_per_zone=16, servers_per_rack=2, gpus_per_server=8, ctsw_per_zone=16, rtsw_uplinks=16)
    ranks = np.arange(net.n_gpus)
    bw = {}
    for name, kind, q in (("ecmp1", "ecmp", 1), ("eecmp16", "e-ecmp", 16), ("spray", "spray", 1)):
        bw[name] = np.mean([coll.time_collective(net, "allreduce", "ring", ranks, routing.Scheme(name, kind, q, seed=s)).busbw(2.0**30)
                            for s in (1, 2, 3)])
    assert bw["ecmp1"] < 0.9 * bw["spray"]  # collisions cost 1-QP ECMP real bandwidth
    recovered = (bw["eecmp16"] - bw["ecmp1"]) / (bw["spray"] - bw["ecmp1"])
    assert recovered > 0.5
    assert 1.1 < bw["eecmp16"] / bw["ecmp1"] < 4.0  # Meta: up to 40% better AllReduce; same direction, plausible size


def _cross_zone_net():
    # 2 zones x 7 racks x 2 NICs; 2 uplinks per rack to 2 CTSWs (7 down each), 1 CTSW uplink: 7:1
    return net_of(zones=2, racks_per_zone=7, servers_per_rack=1, gpus_per_server=2, ctsw_per_zone=2,
                  atsw=2, ctsw_uplinks=1)


def test_alltoall_across_zones_behind_1_to_7_atsw_gets_at_most_a_seventh():
    net = _cross_zone_net()
    z = net.server_zone[net.gpu_server]
    a, b = np.flatnonzero(z == 0), np.flatnonzero(z == 1)
    src = np.concatenate([np.repeat(a, len(b)), np.repeat(b, len(a))])
    dst = np.concatenate([np.tile(b, len(a)), np.tile(a, len(b))])
    per_gpu = 1.0  # each GPU sends 1 byte in total to the other zone
    frac = np.full(len(src), per_gpu / len(b))
    rates = {}
    for kind, q in (("spray", 1), ("e-ecmp", 16), ("ecmp", 1)):
        r = routing.route(net, src, dst, frac, routing.Scheme(kind, kind, q))
        rates[kind] = per_gpu / fluid.complete(r.A, net.arc_cap, r.size).makespan
    assert rates["spray"] == pytest.approx(LINE / 7, rel=1e-6)
    assert rates["e-ecmp"] <= rates["spray"] * (1 + 1e-9)
    assert rates["ecmp"] <= rates["spray"] * (1 + 1e-9)


def test_te_reference_beats_even_split_around_a_degraded_link():
    g = synthetic.clos(zones=1, racks_per_zone=2, servers_per_rack=1, gpus_per_server=4, ctsw_per_zone=2)
    key = next(k for u, v, k, d in g.edges(keys=True, data=True) if d["tier"] == "rtsw-ctsw")
    u, v = next((u, v) for u, v, k in g.edges(keys=True) if k == key)
    g.edges[u, v, key]["speed"] *= 0.25
    net = topology.compile_graph(g)
    src, dst, frac = np.arange(4), np.arange(4) + 4, np.ones(4)
    t_te = te.phase_time(net, src, dst, frac, net.arc_cap)[0]
    r = routing.route(net, src, dst, frac, routing.Scheme("s", "spray", 1))
    t_spray = fluid.complete(r.A, net.arc_cap, r.size).makespan
    # 4 bytes over uplinks of 50, 50, 50, 12.5 GB/s: TE fills them in proportion -> 4 / 162.5e9;
    # spray gives each uplink 1 byte, so the slow one takes 1 / 12.5e9
    assert t_te == pytest.approx(4 / 162.5e9, rel=1e-4)
    assert t_spray == pytest.approx(1 / 12.5e9, rel=1e-4)


def test_static_pinning_uses_destination_host_index():
    net = net_of(zones=1, racks_per_zone=3, servers_per_rack=2, gpus_per_server=8, ctsw_per_zone=16, rtsw_uplinks=16)
    # rack 1 sends to the first server of rack 2 and of rack 3: same host indices 0-7 -> same 8 uplinks
    src = np.arange(16)
    dst = np.concatenate([np.arange(16, 24), np.arange(32, 40)])
    P = routing.hashed_paths(net, src, dst, routing.Scheme("st", "static", 1))
    assert len(set(P[:, 1])) == 8
    P2 = routing.hashed_paths(net, src, np.arange(16, 32), routing.Scheme("st", "static", 1))
    assert len(set(P2[:, 1])) == 16


@pytest.mark.slow
def test_warm_started_fluid_model_matches_cold_solves():
    """The fluid model re-solves only the classes at or above the slowest finished one; that must be
    exact. Random problems (weighted members, mixed sizes, every window mode) and a hashed ring on a
    Clos, compared with re-solving every class at every event."""
    from scipy.sparse import random as sprand

    rng = np.random.default_rng(0)
    for trial in range(40):
        arcs, K = int(rng.integers(3, 40)), int(rng.integers(2, 200))
        A = (sprand(arcs, K, density=0.2, random_state=trial, format="csc") > 0).astype(float)
        A = A[:, np.flatnonzero(np.diff(A.indptr) > 0)]
        A = csc_matrix(A.multiply(rng.integers(1, 4, size=(1, A.shape[1]))))
        cap = rng.uniform(1, 10, arcs)
        size = rng.choice([1.0, 2.0, 5.0], A.shape[1]) if trial % 2 else rng.uniform(0.5, 5, A.shape[1])
        for w in (None, 0.0, 0.05):
            cold = fluid.complete(A, cap, size, w, warm=False)
            warm = fluid.complete(A, cap, size, w, warm=True)
            assert np.allclose(warm.finish, cold.finish, rtol=1e-9, atol=0)
            assert warm.events == cold.events
    net = net_of(zones=1, racks_per_zone=8, servers_per_rack=2, gpus_per_server=8, ctsw_per_zone=8, rtsw_uplinks=8)
    ph = coll.plan(net, "allreduce", "ring", np.arange(net.n_gpus))[0][0]
    r = routing.route(net, ph.src, ph.dst, ph.frac, routing.Scheme("e", "ecmp", 1))
    cold = fluid.complete(r.A, net.arc_cap, r.size, warm=False)
    warm = fluid.complete(r.A, net.arc_cap, r.size)
    assert cold.events > 1 and np.allclose(warm.finish, cold.finish, rtol=1e-9, atol=0)
