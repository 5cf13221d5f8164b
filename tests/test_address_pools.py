"""Address pools sized from the fabric: default pools grow, a short pool the user set names the prefix that fits."""

from __future__ import annotations

import ipaddress
import math

import pytest
import yaml
from conftest import SITES, compiled, tiered
from fabric_helpers import variant

import twin
from twin.compiler.resolve.pools import needs, rack_span
from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import Severity

DEFAULT_POOLS = {"loopback_pool": "10.255.0.0/16", "p2p_pool": "10.252.0.0/15", "rack_pool": "10.0.0.0/12"}


def meta_98k(**routing) -> str:
    """meta-24k-roce grown to 32 AI zones (98,304 GPUs): 32 halls of its hall type, 32 ATSWs so that the
    CTSW uplinks fit their ports (32 x 16 x 28 = 14,336 over 32 ATSWs = 448 of 576 ports each)."""
    doc = yaml.safe_load((SITES / "meta-24k-roce.yaml").read_text())
    doc["name"] = "meta-98k-roce"
    doc["power"]["utility_capacity"] = "240 MW"
    doc["halls"] = [{"name": f"dh{i + 1}", "type": "meta-hall", "origin": [f"{20 * (i % 8)} m", f"{60 * (i // 8)} m"]} for i in range(32)]
    doc["fabric"].update(gpus=98_304, zones=32)
    doc["fabric"]["atsw"]["count"] = 32
    doc["fabric"]["routing"].update(routing)
    doc.pop("workloads")
    return yaml.safe_dump(doc, sort_keys=False)


def validate(text: str):
    spec, diags = validate_text(text, "big.yaml")
    return spec, [d for d in diags if d.severity is Severity.ERROR], [d for d in diags if d.severity is Severity.WARNING]


def test_98k_gpus_need_112640_links():
    """Meta's AI zone ([llama3] s3.3.1, [meta-roce] Topology): 192 racks x 16 RTSW uplinks per zone, 16 CTSWs with
    192 downlinks each, 1:7 to the ATSWs -> ceil(192 / 7) = 28 uplinks per CTSW."""
    spec, errs, _ = validate(meta_98k())
    assert errs == []
    n = needs(spec)
    rtsw_ctsw = 32 * 192 * 16
    ctsw_atsw = 32 * 16 * math.ceil(192 / 7)
    assert (rtsw_ctsw, ctsw_atsw) == (98_304, 14_336)
    assert n.links == rtsw_ctsw + ctsw_atsw == 112_640
    assert n.switches == 32 * 192 + 32 * 16 + 32
    assert n.leaf_nics == (16,) * 6144 and n.addresses("rack_pool") == 6144 * 32


def test_default_p2p_pool_grows_to_the_smallest_prefix_that_fits():
    spec, errs, warns = validate(meta_98k())
    assert errs == []
    r = spec.site.fabric.routing
    # 112,640 /31s need 225,280 addresses: a /14 (262,144); 10.252.0.0/14 would overlap the loopbacks
    # (10.255.0.0/16), so the nearest free /14 below it
    assert r.p2p_pool == "10.248.0.0/14"
    assert (r.loopback_pool, r.rack_pool) == (DEFAULT_POOLS["loopback_pool"], DEFAULT_POOLS["rack_pool"])
    w = next(w for w in warns if "p2p_pool" in w.message)
    assert "65,536 /31s" in w.message and "112,640" in w.message and w.message.endswith("using 10.248.0.0/14")
    nets = [ipaddress.ip_network(getattr(r, p)) for p in DEFAULT_POOLS]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])


def test_grown_pool_avoids_a_pool_the_user_moved():
    spec, errs, _ = validate(meta_98k(loopback_pool="10.240.0.0/16"))
    assert errs == [] and spec.site.fabric.routing.p2p_pool == "10.252.0.0/14"  # the loopbacks left 10.255/16


def test_a_short_pool_the_user_set_names_the_smallest_prefix():
    text = meta_98k(p2p_pool="10.252.0.0/15")
    spec, errs, _ = validate(text)
    assert spec is None and len(errs) == 1
    e = errs[0]
    assert e.dotted == "fabric.routing.p2p_pool"
    assert e.message == "10.252.0.0/15 holds 65,536 /31s; the fabric needs 112,640"
    assert e.expected == "a /14 or larger, e.g. 10.248.0.0/14"
    line = text.splitlines()[e.line - 1]
    assert "p2p_pool: 10.252.0.0/15" in line and e.col == line.index("10.252") + 1


def test_unnumbered_needs_no_p2p_pool():
    spec, errs, warns = validate(meta_98k(unnumbered=True))
    assert errs == [] and not warns[1:] and spec.site.fabric.routing.p2p_pool == DEFAULT_POOLS["p2p_pool"]


@pytest.mark.parametrize(
    "pool, value, message, expected",
    [
        # lab-2zone: 18 switches (+ network and broadcast), 192 links, 8 RTSWs with 16 NICs (a /27 each)
        ("loopback_pool", "10.255.0.0/28", "10.255.0.0/28 holds 14 loopbacks; the fabric has 18 switches", "a /27 or larger, e.g. 10.255.0.0/27"),
        ("p2p_pool", "10.252.0.0/25", "10.252.0.0/25 holds 64 /31s; the fabric needs 192", "a /23 or larger, e.g. 10.252.0.0/23"),
        ("rack_pool", "10.0.0.0/26", "10.0.0.0/26 holds 64 addresses; the 8 leaf subnets span 256", "a /24 or larger, e.g. 10.0.0.0/24"),
    ],
)
def test_lab_pool_errors(pool, value, message, expected):
    doc = yaml.safe_load((SITES / "lab-2zone.yaml").read_text())
    doc["fabric"]["routing"][pool] = value
    spec, errs, _ = validate(yaml.safe_dump(doc, sort_keys=False))
    assert spec is None and [(e.dotted, e.message, e.expected) for e in errs] == [(f"fabric.routing.{pool}", message, expected)]


@pytest.mark.parametrize("site", tiered(["lab-2zone", "lab-powercap", "meta-24k-roce", "meta-32k-roce"]))
def test_example_sites_keep_the_default_pools(site):
    spec, errs, warns = validate((SITES / f"{site}.yaml").read_text())
    assert errs == [] and not any("pool" in w.message for w in warns)
    assert {p: getattr(spec.site.fabric.routing, p) for p in DEFAULT_POOLS} == DEFAULT_POOLS


def _variants(tmp_path):
    yield compiled("lab-2zone")
    yield compiled("meta-24k-roce")
    yield twin.load(variant(tmp_path, "lab-2zone", "lab-2rtsw", rack_fields={"rtsw_count": 2}, rtsw={"uplinks": 8}))
    yield twin.load(variant(tmp_path, "lab-2zone", "lab-uneven", ctsw={"model": "minipack2", "count": 3}))
    for family, extra in (("fat-tree", {}), ("rail-optimized", {}), ("rail-only", {"hb_domain": 8}), ("fat-tree", {"gpus": 184})):
        yield twin.load(variant(tmp_path, "lab-ib", f"roce-{family}", technology="roce", family=family, switch="minipack2", **extra))


@pytest.mark.slow
def test_needs_equal_what_the_addressing_pass_hands_out(tmp_path):
    """The closed form validation sizes pools with counts what the graph-driven addressing pass uses."""
    seen = 0
    for d in _variants(tmp_path):
        n, a, fabric = needs(d.spec), d.addressing, d.fabric
        levels = {s: fabric.graph.nodes[s]["level"] for s in fabric.switches()}
        leaves = [s for s in fabric.switches() if levels[s] == 1]
        nics = {s: 0 for s in leaves}
        for lk in fabric.cables():
            if lk.b in nics and lk.a not in levels:
                nics[lk.b] += 1
        assert (n.switches, n.links) == (len(a.loopback), len(a.p2p)), d.spec.name
        assert n.leaf_nics == tuple(nics[s] for s in leaves), d.spec.name
        start = int(ipaddress.ip_network(a.pools["rack_pool"]).network_address)
        end = max(int(ipaddress.ip_network(s).broadcast_address) + 1 for s in a.rack_subnet.values())
        assert rack_span(n.leaf_nics) == end - start, d.spec.name
        # the pools' use, the report's table and the verdicts: handed out as ipaddress counts them
        assert a.pool_use()["rack_pool"][0] == sum(ipaddress.ip_network(s).num_addresses for s in a.rack_subnet.values()) > 0
        seen += n.links > 0
    assert seen >= 6
