"""The network twin at a million GPUs (issue 40), on a scaled copy of gigawatt-campus (2 buildings of one
zone: 144 NVL72 racks, 10,368 GPUs, on the site's P = 2 planes; tests/test_gigawatt.py's copy).

- Routing tables per class of leaves (twin/twins/net/leafclass.py): on each plane every RTSW of a zone
  hangs off the same 9 CTSWs of that plane, so the classes are the (zone, plane) pairs, 2 x 2 = 4 for
  2 x 144 RTSWs; the hop counts and every (switch, leaf) group equal their definition (arcs to a head one
  hop closer, in (head, arc) order) computed leaf by leaf, a switch of the other plane unreached.
- Lumped classes of sprayed transfers (twin/twins/net/sprayclasses.py ``lumped``): the same phase times as one
  column per transfer. The rail rings' transfers are split over the 2 planes (a column per NIC port,
  2 per GPU) and lumped into 2 classes per rack (one per RTSW: a rack has one on each plane) instead
  of 144 transfers.
- The hierarchical AllReduce against its closed form: reduce-scatter over the 72 GPUs of a rack on
  NVLink (g - 1 steps of S / g), an AllReduce of S / g along each of the 72 rails across the m racks
  (2 (m - 1) ring steps of S / (g m), each split in equal halves over the NIC's two 200 Gbit/s ports, one
  per plane: 400 Gbit/s per GPU as on one 400G plane; every rail ring's hop is one NIC port to one NIC
  port and the RTSWs are 1:1, so nothing else limits it), all-gather on NVLink; busbw = 2 (n - 1) / n x
  S / t ([nccl-tests] PERFORMANCE.md), t the sum of the phases' bytes over their bottleneck bandwidths.
  The planes leave every term as on one 400G plane.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_gigawatt import P, scaled

from twin.compiler import pipeline
from twin.twins.net import collectives, ecmp, nccl, routing, sprayclasses, topology

ADAPTIVE = routing.Scheme("adaptive", "adaptive", 1)


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    return pipeline.compile_design(scaled(tmp_path_factory.mktemp("gwar")), until="fabric", placement_method="naive")


@pytest.fixture(scope="module")
def net(design):
    return topology.from_design(design)


def test_routes_per_class_of_leaves_equal_the_tables_leaf_by_leaf(net):
    S, r = net.n_switches, net.routes
    assert len(net.leaf_of_dest) == P * 2 * 72  # an RTSW per rack and plane: 288 leaves
    assert r.dP.shape == (P * 2, S) and r.dP.dtype == np.int32  # one class per zone and plane: 4, not 288 leaves
    assert len(np.unique(r.leaf_class)) == P * 2
    L = net.n_link_arcs
    sw = np.flatnonzero((net.arc_tail[:L] < S) & (net.arc_head[:L] < S))
    tl, hd = net.arc_tail[sw], net.arc_head[sw]
    # the definition, leaf by leaf: a BFS from each leaf on bitsets (the table the campus cannot hold)
    dist = np.full((len(net.leaf_of_dest), S), -1)
    for k, lv in enumerate(ecmp.bfs_levels(S, tl, hd, net.leaf_of_dest)):
        np.putmask(dist.T, np.unpackbits(lv.view(np.uint8), axis=1, bitorder="little")[:, :dist.shape[0]].astype(bool), k)
    assert np.array_equal(net.dist, dist)
    assert r.max_dist == dist.max() == 5  # RTSW, CTSW, ATSW, ATSW of the other building, CTSW, RTSW: 5 arcs
    # a leaf reaches every switch of its plane (switches named plane<k>-...) and none of the other
    plane = np.array([int(s.split("-", 1)[0].removeprefix("plane")) for s in net.switch_ids])
    assert set(plane.tolist()) == set(range(1, P + 1))
    assert np.array_equal(dist >= 0, plane[net.leaf_of_dest][:, None] == plane[None, :])
    # every (switch, leaf) group: the switch's arcs to a head one hop closer, in (head, arc) order
    order = np.lexsort((sw, hd, tl))
    tl, hd, arcs = tl[order], hd[order], sw[order]
    closer = (dist[:, hd] == dist[:, tl] - 1) & (dist[:, tl] > 0)  # (leaves, arcs)
    groups = net.group_of
    for t in range(dist.shape[0]):
        want = {}
        for a in np.flatnonzero(closer[t]).tolist():
            want.setdefault(int(tl[a]), []).append(int(arcs[a]))
        for u in range(S):
            if u in want:
                assert net.group(u, t).tolist() == want[u], (u, t)
            else:
                assert groups[u, t] == (-1 if dist[t, u] == 0 else -2)


def test_lumped_classes_give_the_phase_times_of_one_column_per_transfer(net, monkeypatch):
    ranks = np.arange(net.n_gpus)
    apart = collectives.time_collective(net, "allreduce", "hierarchical", ranks, ADAPTIVE)
    monkeypatch.setattr(collectives, "LUMP_TRANSFERS", 1)
    lumped = collectives.time_collective(net, "allreduce", "hierarchical", ranks, ADAPTIVE)
    racks = net.n_gpus // 72
    assert [p.classes for p in apart.phases] == [net.n_gpus, P * net.n_gpus, net.n_gpus]  # the rings: a column per NIC port
    assert [p.classes for p in lumped.phases] == [net.n_gpus, P * racks, net.n_gpus]  # per (RTSW, next rack's RTSW)
    for a, b in zip(apart.phases, lumped.phases):
        assert b.t_per_byte == pytest.approx(a.t_per_byte, rel=1e-12)
        assert b.latency == pytest.approx(a.latency, rel=1e-12)
    assert lumped.busbw(2.0**30) == pytest.approx(apart.busbw(2.0**30), rel=1e-12)
    # the link loads of the lumped phase are those of the transfers one by one (the NIC arcs included)
    ph = collectives.plan(net, "allreduce", "hierarchical", ranks)[0][1]
    one = routing.link_load(net, routing.route(net, ph.src, ph.dst, ph.frac, ADAPTIVE))
    many = routing.route(net, ph.src, ph.dst, ph.frac, ADAPTIVE, lump=1)
    assert len(many.extra_cap) == 2 * P * racks  # a class's NIC up- and down-arcs, each a virtual arc
    np.testing.assert_allclose(routing.link_load(net, many), one, rtol=1e-12, atol=1e-18)


def test_transfers_sharing_a_private_arc_are_not_lumped(net):
    # a NIC that sends two transfers: its up-arc carries both, so no virtual arc can stand for it
    nic = net.gpu_nic[:2]
    assert sprayclasses.lumped(net, np.r_[nic[0], nic[0]], np.r_[net.gpu_nic[72], net.gpu_nic[73]], np.ones(2), None) is None
    assert sprayclasses.lumped(net, nic, net.gpu_nic[72:74], np.ones(2), None) is not None
    # nor when the phase's NVLink transfers cross one of their private arcs (a relay's NVLink hop)
    pre = np.stack([net.gpu_nvl_out[:2], net.gpu_nvl_in[2:4]], axis=1)
    assert sprayclasses.lumped(net, nic, net.gpu_nic[72:74], np.ones(2), pre) is not None
    assert sprayclasses.lumped(net, nic, net.gpu_nic[72:74], np.ones(2), pre, taken=net.gpu_nvl_in[3:4]) is None


def test_the_hierarchical_allreduce_is_its_closed_form(design, net):
    lib = nccl.Library()
    n, g = net.n_gpus, 72
    m = n // g
    assert design.spec.fabric.planes == P
    nic = P * 200e9 / 8  # a GPU's two 200G ports, one per plane: the 400G of one plane
    nvl = design.spec.chassis.nvlink_bandwidth / 8 * lib.nvlink_eta / lib.eta  # the twin's NVLink arcs (effective_capacity)
    tm = collectives.time_collective(net, "allreduce", "hierarchical", np.arange(n), ADAPTIVE)
    assert [p.label for p in tm.phases] == ["intra-server reduce-scatter", "inter-server rail rings", "intra-server all-gather"]
    assert [p.repeat for p in tm.phases] == [g - 1, 2 * (m - 1), g - 1]
    closed = [1 / g / nvl, 1 / (g * m) / nic, 1 / g / nvl]  # seconds per byte of S, per step
    for p, c in zip(tm.phases, closed):
        assert p.t_per_byte == pytest.approx(c, rel=1e-9)
    S = 2.0**36
    t = sum(p.repeat * c for p, c in zip(tm.phases, closed)) / lib.eta
    busbw = 2 * (n - 1) / n * S / (tm.time(S) - tm.latency(S))
    assert busbw == pytest.approx(2 * (n - 1) / n / t, rel=0.05)
    assert busbw / 1e9 == pytest.approx(615, rel=0.01)  # NVLink's two passes dominate: ~0.6 TB/s
