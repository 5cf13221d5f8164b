"""twin verify in real FRR: the lab site converges to the predicted ECMP, survives a link failure,
and broken configs (a dropped peer, a wrong maximum-paths) are caught. Needs root and FRR."""

from __future__ import annotations

import re

import pytest
from conftest import SITES

from twin.build import build
from twin.verify import roce
from twin.verify.frr import binaries
from twin.verify.netns import leftover, require_root

WHY = require_root(binaries(bfd=True))
needs_frr = pytest.mark.skipif(WHY is not None, reason=WHY or "")


@pytest.fixture(scope="module")
def lab_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "lab-2zone"
    build(SITES / "lab-2zone.yaml", out)
    return out


def test_prediction_shrinks_when_a_link_goes(lab_out):
    """Pure model, no root: losing one RTSW-CTSW link costs that RTSW one path to every other rack."""
    topo = roce.Topology.load(lab_out)
    before = roce.predict(topo)
    link = topo.links[0]
    leaf = link["a"] if topo.switches[link["a"]]["level"] == 1 else link["b"]
    after = roce.predict(topo.without(link["id"]))
    assert all(w == 15 for w in after[leaf].values()) and all(w == 16 for w in before[leaf].values())
    assert len(before[leaf]) == 7  # every other rack
    z2 = roce.predict(topo.slice_zone(2))
    assert all(len(v) == 3 for n, v in z2.items() if topo.switches[n]["level"] == 1)  # zone-local racks only


@pytest.mark.root
@pytest.mark.slow
@needs_frr
def test_lab_verifies_in_frr(lab_out):
    res = roce.verify(lab_out, timeout=180)
    js = res.to_json()
    assert res.ok, js["problems"]
    assert js["bgp_sessions_established"] == js["bgp_sessions_expected"] == 384
    assert js["routes_checked"] > 100 and js["pings"]["failed"] == 0 and js["pings"]["sent"] == 56
    assert js["link_down"]["routes_changed"] == 8 and js["link_down"]["pings_failed"] == 0
    assert js["bfd_sessions_down"] == 0 and js["leaves_leaking_transit"] == 0
    assert not leftover(js["namespace_prefix"])


@pytest.mark.root
@pytest.mark.slow
@needs_frr
def test_broken_configs_are_caught(lab_out):
    """One RTSW loses a peer, another gets maximum-paths 8, a third loses its outbound policy:
    verify must name all three."""

    def breaking(configs: dict[str, str]) -> None:
        a, b, c = "lab1-z1-r001-rtsw", "lab1-z2-r002-rtsw", "lab1-z1-r003-rtsw"
        assert "  neighbor CTSW route-map RACK-ONLY out\n" in configs[c]
        configs[c] = configs[c].replace("  neighbor CTSW route-map RACK-ONLY out\n", "")
        peer = re.search(r"^ neighbor (\S+) peer-group CTSW$", configs[a], re.M).group(1)
        configs[a] = re.sub(rf"^ neighbor {re.escape(peer)} .*\n", "", configs[a], flags=re.M)
        configs[b] = configs[b].replace("maximum-paths 16", "maximum-paths 8")

    res = roce.verify(lab_out, timeout=40, bfd=False, mutate=breaking)
    text = "\n".join(res.problems)
    assert not res.ok
    assert re.search(r"lab1-z1-r001-rtsw: 15 BGP peers configured for 16 links, 15 established of 16 expected", text), text
    assert re.search(r"lab1-z2-r002-rtsw: \S+ has 8 next hop\(s\), design predicts 16", text), text
    assert "lab1-z1-r003-rtsw announces more than its rack" in text and res.figures["leaves_leaking_transit"] == 1
    assert not leftover(res.figures["namespace_prefix"])


@pytest.mark.root
@pytest.mark.slow
@needs_frr
def test_zone_slice_verifies(lab_out):
    """One zone with the ATSWs: their sessions into the other zone are configured but out of scope."""
    res = roce.verify(lab_out, zone=2, timeout=120)
    assert res.ok, res.problems
    assert res.figures["bfd_sessions_down"] == 0
    assert res.switches == 4 + 4 + 2 and res.racks == 4
    assert res.figures["bgp_sessions_established"] == 2 * res.links


def test_bad_slice_is_an_error(lab_out):
    with pytest.raises(ValueError, match="no zone 3"):
        roce.Topology.load(lab_out).slice_zone(3)


@pytest.mark.root
@pytest.mark.slow
@needs_frr
@pytest.mark.parametrize("routing", [{"unnumbered": True, "ipv6": True}, {"unnumbered": False, "ipv6": True}], ids=["unnumbered-v6", "numbered-v6"])
def test_addressing_options_verify(tmp_path, routing):
    """BGP unnumbered (RFC 5549) and dual-stack /31 + /127 sessions: IPv4 and IPv6 rack subnets at
    the predicted width."""
    import yaml

    data = yaml.safe_load((SITES / "lab-2zone.yaml").read_text())
    data["fabric"]["routing"].update(routing)
    spec = tmp_path / "lab-variant.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    build(spec, out)
    res = roce.verify(out, timeout=120, bfd=False)
    assert res.ok, res.problems
    assert res.figures["routes_checked"] == 2 * 136  # every IPv4 and IPv6 rack subnet on every switch
    per_link = 1 if routing["unnumbered"] else 2
    assert res.figures["bgp_sessions_established"] == 2 * per_link * 192


@pytest.mark.root
@pytest.mark.slow
@needs_frr
def test_failed_start_leaves_nothing_behind(lab_out):
    """A config FRR refuses aborts the run, and every namespace and daemon it started is gone."""
    import os
    import subprocess
    import time

    from twin.verify.netns import LabError

    def bad(configs: dict[str, str]) -> None:
        configs["z1-ctsw-02"] += "\nrouter bgp 1\n neighbor nonsense-here\n"

    with pytest.raises(LabError, match="z1-ctsw-02: vtysh -b exited"):
        roce.verify(lab_out, timeout=30, bfd=False, mutate=bad)
    mine = f"tw{os.getpid() % 100000}"
    assert mine not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    time.sleep(1)
    ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    assert not [line for line in ps.splitlines() if f"/{mine}" in line and not line.startswith("Z")]


def three_tier_roce_tree(tmp_path):
    """16 GPUs on a RoCE fat-tree of 4-port switches (k = 4, h = 2): three tiers (2 x 2^3 = 16 NICs),
    8 leaves, 8 spines in 4 pods of 2, 4 cores."""
    import yaml

    doc = yaml.safe_load((SITES / "lab-ib.yaml").read_text())
    doc["name"] = "lab-ft3-roce"
    doc.pop("workloads", None)
    f = doc["fabric"]
    f.update(technology="roce", gpus=16, switch="lab-4port", tiers=3)
    f.pop("infiniband", None)
    doc["catalog"] = {"switches": {"lab-4port": {
        "description": "a 4-port lab switch", "vendor": "Arista", "config": "eos", "ports": 4, "port_speed": "400 Gbit/s",
        "port_name": "Ethernet{n}", "power": "200 W", "max_power": "300 W", "height_u": 1, "weight": "10 kg",
        "technology": "ethernet", "latency": "500 ns", "source": "assumed"}}}
    p = tmp_path / "lab-ft3-roce.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def test_three_tier_tree_spines_get_an_asn_per_pod(tmp_path):
    """eBGP's loop check drops a route whose AS path already holds the receiver's ASN: if every spine of a
    3-tier tree shared one ASN, a route climbing pod 1's spine, a core and pod 2's spine would be dropped
    at pod 2 (before this rule, 48 of 56 pings between racks failed in FRR). RFC 7938: one ASN per pod."""
    import twin

    d = twin.load(three_tier_roce_tree(tmp_path))
    g, asn = d.fabric.graph, d.addressing.asn
    spines = sorted(n for n in d.fabric.switches() if g.nodes[n]["level"] == 2)
    by_pod = {}
    for n in spines:
        by_pod.setdefault(g.nodes[n]["pod"], set()).add(asn[n])
    assert len(spines) == 8 and len(by_pod) == 4 and all(len(v) == 1 for v in by_pod.values())
    assert len({min(v) for v in by_pod.values()}) == 4
    assert len({asn[n] for n in d.fabric.switches() if g.nodes[n]["level"] == 3}) == 1


@pytest.mark.root
@pytest.mark.slow
@needs_frr
def test_three_tier_roce_tree_verifies_in_frr(tmp_path):
    out = tmp_path / "ft3"
    build(three_tier_roce_tree(tmp_path), out)
    res = roce.verify(out, timeout=180)
    js = res.to_json()
    assert res.ok, js["problems"]
    assert js["bgp_sessions_established"] == js["bgp_sessions_expected"] == 64  # 2 x (16 + 16) switch links
    assert js["pings"]["failed"] == 0 and js["pings"]["sent"] == 56
    assert not leftover(js["namespace_prefix"])
