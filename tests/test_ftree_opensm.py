"""OpenSM's ftree engine as the network twin replays it (twin/twins/net/ftree.py), held to real OpenSM.

The site's fabric is built, routed by OpenSM 3.3 with the generated ``opensm.conf`` in ibsim, and every
forwarding entry OpenSM programmed is compared with the replay's: on the two-tier lab fat tree every entry,
and on a three-tier rail-optimized copy of the Selene site (with a partial last pod, so the secondary paths
run) every path from a leaf to a NIC. Without ibsim/OpenSM these tests skip with the reason; the replay's
own properties are checked without them.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import SITES, build_of

from twin.compiler.pipeline import compile_design
from twin.emit import configs_ib
from twin.twins.net import ftree, routing
from twin.twins.net.topology import from_design
from twin.verify import ib

WHY = ib.missing_binaries()
needs_ib = pytest.mark.skipif(WHY is not None, reason=WHY or "")


def _opensm_next(out, net):
    """(switch, NIC) -> the node OpenSM's table forwards to, by name, for every entry it programmed."""
    r = ib.route_fabric(out / "configs" / "opensm", out / "model" / "topology.net", keep_tables=True)
    assert r.ok and r.engine == "ftree" and r.engine_in_use, r.problems
    nodes, ports, lfts = r.tables
    name = {nid: v.get("desc") for nid, v in nodes.items()}
    by_name = {v["desc"]: nid for nid, v in nodes.items() if v.get("kind") == "switch"}
    lid = {v["desc"]: v["lid"] for v in nodes.values() if v.get("kind") == "hca" and "lid" in v}

    def nxt(s: int, n: int) -> str | None:
        nid = by_name[net.switch_ids[s]]
        port = lfts[nid].get(lid[net.nic_ids[n]])
        return name.get(ports.get((nid, port))) if port is not None else None
    return nxt


def _head(net, arc: int) -> str:
    h = int(net.arc_head[arc])
    return net.switch_ids[h] if h < net.n_switches else net.nic_ids[h - net.n_switches]


@needs_ib
def test_every_entry_equals_opensm_on_the_lab_fat_tree():
    res = build_of("lab-ib")
    net = from_design(res.design)
    T = ftree.tables(net)
    assert T.unrouted == 0
    nxt = _opensm_next(res.out_dir, net)
    s, n = np.nonzero(T.arc >= 0)
    # 4 leaves and 2 spines: the other three leaves and the main path's spine hold an entry towards each NIC (the
    # other spine's, set by a secondary path no NIC's flow reaches, is not replayed)
    assert len(s) == 4 * len(net.nic_ids)
    assert [_head(net, T.arc[a, b]) for a, b in zip(s, n)] == [nxt(a, b) for a, b in zip(s, n)]


def _selene_copy(tmp_path, gpus: int):
    """A copy of the Selene site at ``gpus`` compiled (naive placement: only the fabric matters) and its OpenSM
    configs and ibnetdiscover topology written as a build writes them, into ``tmp_path``."""
    spec = yaml.safe_load((SITES / "selene-a100.yaml").read_text())
    spec["name"] = "selene-copy"
    spec["fabric"]["gpus"] = gpus
    spec["workloads"] = []
    p = tmp_path / "selene-copy.yaml"
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    design = compile_design(p, placement_method="naive")
    for name, body in configs_ib.emit(design).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(body)
    return design


@pytest.mark.slow
@needs_ib
def test_every_path_equals_opensm_on_three_tiers_with_a_partial_pod(tmp_path):
    """1,120 A100s (140 DGX): 56 leaves in pods of 20, so the last pod is partial and some roots miss it."""
    design = _selene_copy(tmp_path, 1120)
    net = from_design(design)
    assert sorted(set(net.switch_level.tolist())) == [1, 2, 3]
    T = ftree.tables(net)
    assert T.unrouted == 0
    nxt = _opensm_next(tmp_path, net)
    leaves = np.unique(net.nic_leaf)
    idx = {x: i for i, x in enumerate(net.switch_ids)}
    nics = range(0, len(net.nic_ids), 7)  # every 7th NIC: every leaf and every place on a leaf (20 NICs a leaf)
    same = 0
    for n in nics:
        for leaf in leaves:
            if leaf == net.nic_leaf[n]:
                continue
            ours, theirs, s, t = [], [], int(leaf), int(leaf)
            while s != net.nic_leaf[n] and len(ours) < 6:
                s = int(net.arc_head[T.arc[s, n]])
                ours.append(net.switch_ids[s])
            while t != net.nic_leaf[n] and len(theirs) < 6:
                t = idx[nxt(t, n)]
                theirs.append(net.switch_ids[t])
            assert ours == theirs, (net.switch_ids[leaf], net.nic_ids[n], ours, theirs)
            same += 1
    assert same == len(nics) * (len(leaves) - 1) > 8000


def test_the_site_engine_names_the_replay_and_it_spreads_a_shift():
    """On the lab's full two-tier fat tree, every NIC sending to the NIC at the same place on the next leaf (a
    shift permutation) meets no other flow on any uplink under ftree ([opensm] doc/current-routing.txt:
    "congestion-free shift communication pattern"), and OpenSM's ftree is what the site's spec runs."""
    res = build_of("lab-ib")
    net = from_design(res.design)
    scheme = routing.site_scheme(res.design.spec.fabric)
    assert (scheme.kind, scheme.name, scheme.qps) == ("ftree", "ftree", 1)
    leaves = np.unique(net.nic_leaf)
    order = np.argsort(net.nic_leaf * 1000 + net.nic_host, kind="stable")
    per = len(order) // len(leaves)
    dst = np.roll(order, -per)  # the same host index on the next leaf
    g = np.argsort(net.gpu_nic)
    r = routing.route(net, g[order], g[dst], np.ones(len(order)), scheme)
    load = np.asarray(r.A.sum(axis=1)).ravel()[:net.n_link_arcs]
    up = np.flatnonzero((net.arc_tail[:net.n_link_arcs] < net.n_switches) & (net.arc_head[:net.n_link_arcs] < net.n_switches))
    assert load[up].max() == 1
