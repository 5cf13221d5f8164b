"""Rails that share switches (issue 18, rule 2): rail-only counted as the rail-only paper counts a
rail's ports, rails kept apart on a shared switch, the NVLink domain unchanged.

Counts worked out by hand in the comments; one rail per switch (the old rule) gives twice as many.
"""

from __future__ import annotations

import numpy as np
import pytest
from fabric_helpers import compile_naive, variant

from twin.compiler.fabric.synthesis import mismatches
from twin.compiler.pipeline import check
from twin.lang.diagnostics import Severity
from twin.twins.net import relays, topology

# a 256-port InfiniBand switch for the issue's example (figures assumed: only the port count matters)
BIG = {"switches": {"ib256": {
    "vendor": "test", "technology": "infiniband", "config": "opensm", "ports": 256, "port_speed": "400 Gbit/s", "ports_per_cage": 2,
    "port_name": "{cage}/{sub}", "power": "3 kW", "latency": "600 ns", "height_u": 4, "weight": "60 kg", "source": "assumed",
}}}


def rail_only(tmp_path, name, gpus, **fabric):
    p = variant(tmp_path, "meta-24k-ib", name, family="rail-only", gpus=gpus, hb_domain=8, **fabric)
    return p


def test_issue_example_two_rails_per_256_port_switch(tmp_path):
    # 1,024 GPUs in NVLink domains of 8: 8 rails of 128 NICs. A 256-port switch holds one rail in half
    # its ports; packing 2 rails per switch: 8 / 2 = 4 switches (1,024 NICs / 256 ports), where one rail
    # per switch would take 8 half-empty ones.
    import yaml

    p = rail_only(tmp_path, "ro-1k", 1024, switch="ib256")
    doc = yaml.safe_load(p.read_text())
    doc["catalog"] = BIG
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    spec = check(p).spec
    assert spec.shape.rails_per_switch == 2
    assert {t.role: t.count for t in spec.shape.tiers} == {"leaf": 4}
    assert spec.shape.tier("leaf").down == 256 and spec.shape.tier("leaf").free == 0
    one = yaml.safe_load(p.read_text())
    one["fabric"]["rails_per_switch"] = 1
    p.write_text(yaml.safe_dump(one, sort_keys=False))
    assert {t.role: t.count for t in check(p).spec.shape.tiers} == {"leaf": 8}


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    # 256 GPUs = 32 servers: 8 rails of 32 NICs on 64-port QM9700s: 2 rails per switch (2 x 32 = 64),
    # 4 switches
    return compile_naive(rail_only(tmp_path_factory.mktemp("ro"), "ro-256", 256))


def test_rail_only_packing_builds_the_shape(packed):
    shape = packed.spec.shape
    assert shape.rails_per_switch == 2 and shape.trees == 4
    assert {t.role: t.count for t in shape.tiers} == {"leaf": 4}
    assert mismatches(shape, packed.fabric) == []
    g = packed.fabric.graph
    leaves = packed.fabric.nodes("leaf")
    assert leaves[0] == "rails1-2-leaf-0001" and (g.nodes[leaves[0]]["rail"], g.nodes[leaves[0]]["rails"]) == (0, 2)
    # each leaf carries 32 NICs of each of its two rails, rail a on the first 32 ports
    for leaf in leaves:
        rails = sorted(g.nodes[p]["rail"] for p in g[leaf])
        first = g.nodes[leaf]["rail"]
        assert rails == [first] * 32 + [first + 1] * 32


def test_shared_switch_keeps_rails_apart_and_the_nvlink_domain(packed):
    # the NVLink domain is the spec's 8 GPUs: a GPU's rail is its rank in the server (packing does not
    # shrink it), and the twin routes GPU 0 of server 1 to GPU 1 of server 2 over NVLink to GPU 1 of
    # server 1, then rail 1, although rails 0 and 1 share a switch
    assert packed.spec.fabric.hb_domain == 8
    g = packed.fabric.graph
    assert {g.nodes[n]["rail"] for n in packed.fabric.nodes("nic")} == set(range(8))
    net = topology.from_design(packed)
    assert relays.relays(net, np.array([0]), np.array([8 + 1]))[0] == 1
    assert relays.relays(net, np.array([0]), np.array([8 + 0]))[0] == -1  # same rail: direct
    assert (net.dist < 0).any()  # no path between the rails through the shared switch


@pytest.mark.parametrize("fabric, words", [
    # 8 rails of 32 NICs: 4 per 64-port switch would need 128 ports
    (dict(rails_per_switch=4), "4 rails x 32 ports = 128 exceeds the switch radix 64"),
    # 3 does not divide 8 rails
    (dict(rails_per_switch=3), "does not divide the 8 rails"),
])
def test_packing_beyond_the_radix_is_refused(tmp_path, fabric, words):
    p = rail_only(tmp_path, "ro-bad", 256, **fabric)
    errs = [d for d in check(p).diagnostics if d.severity is Severity.ERROR]
    assert any(e.dotted == "fabric.rails_per_switch" and words in e.message for e in errs), [e.format() for e in errs]


def test_multi_tier_rails_do_not_share(tmp_path):
    # 2,048 GPUs: rails of 256 NICs on 64-port switches need 2 tiers whose leaves use all 64 ports:
    # auto keeps one rail per switch; asking for 2 is refused
    assert check(rail_only(tmp_path, "ro-2k", 2048)).spec.shape.rails_per_switch == 1
    errs = [d for d in check(rail_only(tmp_path, "ro-2k-2", 2048, rails_per_switch=2)).diagnostics if d.severity is Severity.ERROR]
    assert any("leaves use all 64 ports" in e.message for e in errs)
