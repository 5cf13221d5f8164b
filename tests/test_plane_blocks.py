"""Blocks of a collective across planes (twin/twins/net/blocks.py, issue 40: "expert all-to-all across planes").

On a multi-plane fabric each GPU has a port per plane and a transfer runs port j to port j, so a block is
the servers whose ports hang off one tuple of leaf classes, a class per plane. Equal blocks are timed once,
and the result must be the result of every group at once, phase by phase, to 1e-12 (the same max-min
solution), on the two-plane lab and on a two-plane copy of gigawatt-campus's zones (two buildings of one
zone: 10,368 GPUs, each NIC's 400G as 2 x 200G, one port per plane). Where a port is down, or a class
serves two tuples, nothing is reduced.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from test_gigawatt import scaled

from twin.compiler import pipeline
from twin.twins.net import blocks, collectives, dispatch, routing, topology

ROOT = Path(__file__).resolve().parents[1]
ADAPTIVE = routing.Scheme("adaptive", "adaptive", 1)
NODE_LIMITED = dispatch.algorithm(dispatch.distinct_domains(2, 8, 4) / 8)  # DeepSeek-V3's dispatch (top-8, 4 domains)


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


@pytest.fixture(scope="module")
def campus(tmp_path_factory):
    """A two-plane copy of the scaled gigawatt campus: each NIC's 400G as 2 x 200G ports, one per plane, one RTSW
    per plane and rack, 9 CTSWs per zone and 4 ATSWs per building on each plane (the one-plane copy: 18 and 9)."""
    tmp = tmp_path_factory.mktemp("gw2p")
    doc = yaml.safe_load(scaled(tmp).read_text(encoding="utf-8"))
    cat = yaml.safe_load((ROOT / "twin" / "lang" / "catalog" / "builtin.yaml").read_text(encoding="utf-8"))
    ch = copy.deepcopy(cat["chassis"]["gb200-nvl72"])
    ch["nic_ports"] = 2
    ch["description"] = "GB200 NVL72 whose 400G NICs run as 2 x 200G ports, one per plane"
    doc.setdefault("catalog", {}).setdefault("chassis", {})["gb200-nvl72-2port"] = ch
    doc["rack_types"]["nvl72"]["chassis"] = "gb200-nvl72-2port"
    doc["rack_types"]["nvl72"]["rtsw_count"] = 1
    doc["fabric"]["planes"] = 2
    doc["fabric"]["ctsw"]["count"] = 9
    doc["fabric"]["atsw"]["count"] = 4
    p = tmp / "gigawatt-2plane.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    design = pipeline.compile_design(p, until="fabric", placement_method="naive")
    return design, topology.from_design(design)


@pytest.mark.parametrize("algorithm", ["direct", NODE_LIMITED], ids=["direct", "node-limited"])
def test_the_campus_expert_all_to_all_across_planes(campus, algorithm, monkeypatch):
    """EP 64 over consecutive ranks, the first 18 groups of each zone (as tests/test_gigawatt_moe.py on one plane)."""
    _, net = campus
    zone = 72 * 72
    assert net.gpu_ports is not None and net.gpu_ports.shape == (2 * zone, 2)
    groups = [z * zone + np.arange(q * 64, q * 64 + 64) for z in (0, 1) for q in range(18)]
    folded, whole = both(net, algorithm, groups, monkeypatch)
    assert folded.blocks == {"blocks": 2, "classes": 1, "groups": 36, "groups_timed": 18}
    same(folded, whole)
    if algorithm == "direct":  # the known answer: the most loaded GPUs (8 of a group in one rack) send 56/64 of S
        # off the rack over two 200G ports, 25 GB/s each
        assert folded.phases[0].t_per_byte == pytest.approx(56 / 64 / (2 * 25e9), rel=1e-9)


def test_the_campus_moe_step_on_two_planes_is_the_same_folded_and_whole(campus, monkeypatch):
    """The campus job (gigawatt-campus's deepseek-v3-campus on the copy's GPUs), term by term."""
    from twin.lang.scenario.job import Job
    from twin.lang.scenario.models import Case
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs

    design, net = campus
    w = design.spec.site.workloads[0]

    def step():
        return jobs.simulate_job(design, net, Job(workload=w.name), [ADAPTIVE], Library(), Case(name="c"), set(), None,
                                 ("jobs", 0))["schemes"][0]

    folded = step()
    monkeypatch.setattr(collectives, "REDUCE_BLOCKS", False)
    monkeypatch.setattr(blocks, "FOLD_RING", 10**12)
    whole = step()
    for k in ("step_s", "ep_s", "dp_s", "dp_exposed_s", "exposed_comm_s", "comm_latency_s"):
        assert folded[k] == pytest.approx(whole[k], rel=1e-12), k
    assert folded["comm_by_kind"]["ep_alltoall"]["total_s"] > 0 and folded["dp_s"] > 0
