"""Node-limited routing (DeepSeek-V3, arXiv 2412.19437 s3.2.2): a token is sent once to each NVLink domain
holding its experts, at most ``max_nodes`` of them, to the GPU with its own index there, which forwards it
over NVLink. Known answers: the bytes each phase moves (closed form from the routing) and the network
traffic's drop against one copy per expert."""

from __future__ import annotations

import numpy as np
import pytest

from twin.twins.net import collectives as coll
from twin.twins.net import dispatch, routing, topology
from twin.twins.net.nccl import Library

E16 = routing.Scheme("e16", "e-ecmp", 16)


@pytest.fixture(scope="module")
def lab_net(lab):
    return topology.from_design(lab)


def test_two_phases_move_what_the_routing_sends(lab_net):
    net = lab_net
    ranks = np.arange(32)  # four 8-GPU servers (NVLink domains) of the lab
    assert len(np.unique(net.domain[ranks])) == 4
    share = dispatch.distinct_domains(4, 8, 2) / 8  # top-8 over 4 domains, at most 2: 2 copies of 8 cross
    assert share == 0.25
    p1, p2 = coll.plan(net, "alltoall", dispatch.algorithm(share), ranks)[0]
    cross = net.domain[p1.src] != net.domain[p1.dst]
    # phase 1: to its counterpart (same index in the domain) in each of the 3 other domains, S x share / 4 each
    assert np.all(net.gpu_local[p1.src[cross]] == net.gpu_local[p1.dst[cross]])
    assert p1.frac[cross].sum() == pytest.approx(32 * 3 * share / 4)
    assert p1.frac[~cross].sum() == pytest.approx(32 * 7 / 32)  # inside its own domain: S / n to each peer
    # phase 2: over NVLink only, each remote sender's S / n to every peer of the domain but the counterpart
    assert np.all(net.domain[p2.src] == net.domain[p2.dst])
    assert p2.frac.sum() == pytest.approx(32 * 24 / 32 - 32 * 3 / 32)


def test_node_limited_routing_cuts_the_network_traffic(lab_net):
    lib = Library(nic_latency=1e-6)
    groups = [np.arange(32), np.arange(32, 64)]
    direct = coll.time_collective(lab_net, "alltoall", "direct", None, E16, groups=groups, lib=lib)
    limited = coll.time_collective(lab_net, "alltoall", dispatch.algorithm(0.25), None, E16, groups=groups, lib=lib)
    size = 256e6
    # one copy per expert puts 24/32 of S on the NICs; node-limited 0.25 x 3/4: 4x less, plus an NVLink phase
    ratio = direct.time(size) / limited.time(size)
    assert 2.5 < ratio < 4.2, ratio


def test_a_group_inside_one_domain_runs_direct(lab_net):
    phases, _ = coll.plan(lab_net, "alltoall", dispatch.algorithm(0.5), np.arange(8))
    assert len(phases) == 1
    with pytest.raises(ValueError):
        dispatch.share_of("node-limited:1.5")
