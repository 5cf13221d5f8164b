"""The addressing pass: RFC 7938 ASN plan, unique loopbacks, /31 links, rack subnets, pool errors."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml
from conftest import SITES, compiled

import twin
from twin.lang.diagnostics import InfeasibleError, SpecError


def variant(tmp_path: Path, base: str, **routing) -> Path:
    """sites/<base>.yaml with fabric.routing fields replaced."""
    data = yaml.safe_load((SITES / f"{base}.yaml").read_text())
    data["fabric"].setdefault("routing", {}).update(routing)
    p = tmp_path / f"{base}-variant.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def test_asn_plan_is_rfc7938():
    d = compiled("lab-2zone")
    a, g = d.addressing, d.fabric.graph
    by_role: dict[str, dict] = {}
    for n, asn in a.asn.items():
        by_role.setdefault(g.nodes[n]["role"], {})[n] = asn
    rtsw, ctsw, atsw = by_role["rtsw"], by_role["ctsw"], by_role["atsw"]
    assert len(set(rtsw.values())) == len(rtsw) == 8  # one ASN per rack switch
    zones = {g.nodes[n]["zone"]: set() for n in ctsw}
    for n, asn in ctsw.items():
        zones[g.nodes[n]["zone"]].add(asn)
    assert all(len(s) == 1 for s in zones.values()) and len({min(s) for s in zones.values()}) == 2
    assert len(set(atsw.values())) == 1
    pools = d.spec.fabric.routing.asn_pools
    assert all(pools["level1"].first <= v <= pools["level1"].last for v in rtsw.values())
    assert not set(rtsw.values()) & set(ctsw.values()) | set(atsw.values()) & set(ctsw.values())


def test_addresses_unique_and_inside_their_pools():
    d = compiled("lab-2zone")
    a = d.addressing
    r = d.spec.fabric.routing
    los = [ipaddress.ip_interface(x) for x in a.loopback.values()]
    assert len(set(los)) == len(los) == len(d.fabric.switches())
    assert all(x.ip in ipaddress.ip_network(r.loopback_pool) for x in los)
    ends = [ipaddress.ip_interface(x) for pair in a.p2p.values() for x in pair]
    assert len(set(ends)) == len(ends) == 2 * 192
    for x, y in a.p2p.values():
        x, y = ipaddress.ip_interface(x), ipaddress.ip_interface(y)
        assert x.network == y.network and x.network.prefixlen == 31 and x != y
    subnets = [ipaddress.ip_network(s) for s in a.rack_subnet.values()]
    assert len(subnets) == 8 and all(s.prefixlen == 27 for s in subnets)  # 16 NICs + gateway
    assert not any(s.overlaps(t) for i, s in enumerate(subnets) for t in subnets[i + 1:])
    assert all(s.subnet_of(ipaddress.ip_network(r.rack_pool)) for s in subnets)
    # the pools' use (report, verdicts) counts what ipaddress counts: 8 racks x /27
    use = a.pool_use()
    assert use["rack_pool"] == (sum(s.num_addresses for s in subnets), ipaddress.ip_network(r.rack_pool).num_addresses) == (8 * 32, 2**20)
    assert use["p2p_pool"][0] == 2 * 192 and use["loopback_pool"][0] == len(los)


def test_infiniband_has_no_ip_plan():
    assert compiled("lab-ib").addressing is None


def test_unnumbered_and_ipv6(tmp_path):
    d = twin.load(variant(tmp_path, "lab-2zone", unnumbered=True, ipv6=True))
    a = d.addressing
    assert a.unnumbered and not a.p2p and not a.p2p6
    assert len(a.rack_subnet6) == 8 and all(s.endswith("/64") for s in a.rack_subnet6.values())
    assert len(set(a.loopback6.values())) == len(a.loopback)


@pytest.mark.parametrize(
    "routing, words",
    [
        ({"asn_pools": {"rtsw": {"first": 4200000000, "last": 4200000003}, "ctsw": {"first": 4201000000, "last": 4201000999}, "atsw": {"first": 4201001000, "last": 4201001999}}}, ["asn_pools.rtsw", "8"]),
        ({"p2p_pool": "10.252.0.0/25"}, ["p2p_pool", "192"]),
        ({"rack_pool": "10.0.0.0/26"}, ["rack_pool", "span 256", "/24"]),
        ({"loopback_pool": "10.0.0.0/16"}, ["loopback_pool", "overlaps", "rack_pool"]),
        ({"asn_pools": {"rtsw": {"first": 65000, "last": 65100}, "ctsw": {"first": 65050, "last": 65060}, "atsw": {"first": 65200, "last": 65200}}}, ["asn_pools.ctsw", "overlaps", "rtsw"]),
    ],
)
def test_pool_errors_name_the_pool(tmp_path, routing, words):
    with pytest.raises((InfeasibleError, SpecError)) as e:
        twin.load(variant(tmp_path, "lab-2zone", **routing))
    text = str(e.value)
    assert all(w in text for w in words), text
