"""NCCL's double binary tree over every group of a job at once (twin/twins/net/trees.py ``tree_groups``): the
same transfers, in the same order, and the same timing as the tree planned group by group and concatenated,
on job layouts of the lab and of selene (one rank per server, several, TP groups across servers)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ROOT
from twin.compiler.pipeline import compile_design
from twin.twins.net import collectives, routing, topology
from twin.twins.net.nccl import Library
from twin.twins.workload.jobs import rank_groups


@pytest.fixture(scope="module", params=["lab-2zone", "selene-a100"])
def site(request):
    d = compile_design(ROOT / "sites" / f"{request.param}.yaml", placement_method="naive")
    return topology.from_design(d), routing.site_scheme(d.spec.fabric)  # the site's own routing: hashed, or OpenSM's ftree


def _one_by_one(net, groups, lib):
    plans = [collectives.plan(net, "allreduce", "tree", g, lib=lib)[0][0] for g in groups]
    return (np.concatenate([p.src for p in plans]), np.concatenate([p.dst for p in plans]),
            np.concatenate([p.frac for p in plans]), plans[0])


@pytest.mark.parametrize("sizes,order,over", [
    ({"tp": 8, "cp": 1, "pp": 2, "dp": 4}, "tp-cp-pp-dp", ("cp", "dp")),   # one rank per server
    ({"tp": 2, "cp": 1, "pp": 2, "dp": 16}, "tp-cp-dp-pp", ("cp", "dp")),  # four per server
    ({"tp": 16, "cp": 1, "pp": 1, "dp": 4}, "tp-cp-pp-dp", ("tp",)),       # TP across two servers
    ({"tp": 1, "cp": 2, "pp": 1, "dp": 32}, "tp-cp-dp-pp", ("cp", "dp")),  # eight per server, every GPU
])
def test_tree_over_groups_is_the_tree_group_by_group(site, sizes, order, over, monkeypatch):
    net, scheme = site
    lib = Library()
    ranks = np.arange(64)
    groups = rank_groups(ranks, sizes, order.split("-"), over)
    phases, family = collectives.plan_groups(net, "allreduce", "tree", groups, lib=lib)
    src, dst, frac, first = _one_by_one(net, groups, lib)
    (ph,) = phases
    assert family == "tree"
    assert np.array_equal(ph.src, src) and np.array_equal(ph.dst, dst) and np.array_equal(ph.frac, frac)
    assert (ph.repeat, ph.steps, ph.net_steps, ph.conns, ph.label) == (first.repeat, first.steps, first.net_steps, first.conns, first.label)
    # and the collective timed on the fabric is the same to the last bit as when planned group by group
    at_once = collectives.time_collective(net, "allreduce", "tree", None, scheme, groups=groups, lib=lib)
    monkeypatch.setattr(collectives, "job_layout", lambda net, groups: None)
    by_group = collectives.time_collective(net, "allreduce", "tree", None, scheme, groups=groups, lib=lib)
    for size in (1 << 10, 64 << 20, 1 << 32):
        assert at_once.time(size) == by_group.time(size) > 0
