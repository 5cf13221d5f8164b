"""Blocks of a collective across planes (twin/twins/net/blocks.py, issue 40: "expert all-to-all across planes").

On a multi-plane fabric each GPU has a port per plane and a transfer runs port j to port j, so a block is
the servers whose ports hang off one tuple of leaf classes, a class per plane. Equal blocks are timed once,
and the result must be the result of every group at once, phase by phase, to 1e-12 (the same max-min
solution): here on the two-plane lab. Where a port is down, or a class serves two tuples, nothing is
reduced. gigawatt-campus is itself on two planes (each NIC's 400G as 2 x 200G, one port per plane), so
tests/test_gigawatt_moe.py holds the same on its 2-building copy (10,368 GPUs): the expert all-to-all
sent directly and node-limited, 56/64 of S over two 200G ports as the known answer, and the MoE step
term by term.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from twin.compiler import pipeline
from twin.twins.net import blocks, collectives, routing, topology

ROOT = Path(__file__).resolve().parents[1]
ADAPTIVE = routing.Scheme("adaptive", "adaptive", 1)


def both(net, algorithm, groups, monkeypatch, op="alltoall"):
    folded = collectives.time_collective(net, op, algorithm, None, ADAPTIVE, groups=groups)
    monkeypatch.setattr(collectives, "REDUCE_BLOCKS", False)
    whole = collectives.time_collective(net, op, algorithm, None, ADAPTIVE, groups=groups)
    monkeypatch.setattr(collectives, "REDUCE_BLOCKS", True)
    return folded, whole


def same(folded, whole):
    assert len(folded.phases) == len(whole.phases)
    for a, b in zip(folded.phases, whole.phases):
        assert a.t_per_byte == pytest.approx(b.t_per_byte, rel=1e-12) and a.latency == pytest.approx(b.latency, rel=1e-12)
        assert (a.steps, a.net_steps, a.posts) == (b.steps, b.net_steps, b.posts)
    for size in (2.0**20, 2.0**30):
        assert folded.time(size) == pytest.approx(whole.time(size), rel=1e-12)


@pytest.fixture(scope="module")
def lab():
    return topology.from_design(pipeline.compile_design(ROOT / "sites" / "lab-2zone-2plane.yaml", until="fabric",
                                                        placement_method="naive"))


@pytest.mark.parametrize("stride", [1, 4], ids=["consecutive", "across-racks"])
def test_the_lab_zones_on_two_planes_are_one_class(lab, stride, monkeypatch):
    assert lab.gpu_ports is not None and lab.gpu_ports.shape == (128, 2)
    zone = 64
    groups = [z * zone + np.arange(zone).reshape(-1, stride).T.reshape(-1)[q * 16:(q + 1) * 16] for z in (0, 1) for q in range(4)]
    folded, whole = both(lab, "direct", groups, monkeypatch)
    assert folded.blocks == {"blocks": 2, "classes": 1, "groups": 8, "groups_timed": 4} and whole.blocks is None
    assert [2 * a.flows for a in folded.phases] == [b.flows for b in whole.phases]  # one zone routed, on both planes
    same(folded, whole)


def test_a_port_down_or_a_class_in_two_tuples_is_not_reduced(lab):
    groups = [z * 64 + np.arange(16) for z in (0, 1)]
    assert blocks.representatives(lab, groups, ADAPTIVE)[1]["classes"] == 1
    leaf = lab.nic_leaf.copy()
    leaf[lab.gpu_ports[70, 1]] = -1  # plane 2's port of one GPU of zone 2 is down
    assert blocks.representatives(dataclasses.replace(lab, nic_leaf=leaf), groups, ADAPTIVE) is None
    # two servers share their plane-1 class but not their plane-2 one: a transfer between them on plane 2 leaves
    # its class, so the two tuples cannot be blocks
    net = SimpleNamespace(n_switches=4, gpu_ports=np.array([[0, 1], [2, 3]]), nic_leaf=np.array([0, 1, 2, 3]))
    nb = np.array([0, 1, 0, 2, 0, 1, 0, 2])  # switches 0-3 (leaves 0 and 2 one class), then the 4 port NICs
    assert blocks._plane_blocks(net, nb) is None
    nb = np.array([0, 1, 0, 1, 0, 1, 0, 1])  # both servers on the same classes: one tuple, one block
    assert blocks._plane_blocks(net, nb).tolist() == [0] * 8
