"""Generated switch configs: FRR syntax checked by FRR itself, policies and ECMP from the design,
SONiC/EOS carrying the spec's QoS, deterministic output, InfiniBand artifacts consistent."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from conftest import compiled, emitted

from twin.emit import configs

VTYSH = shutil.which("vtysh")


def files(site: str) -> dict[str, bytes]:
    return emitted(site)


def frr(site: str) -> dict[str, str]:
    return {p.split("/")[-1][:-5]: b.decode() for p, b in files(site).items() if p.startswith("configs/frr/") and p.endswith(".conf")}


@pytest.mark.skipif(VTYSH is None, reason="frr not installed")
def test_every_frr_config_passes_vtysh_check(tmp_path):
    confs = frr("lab-2zone")
    assert len(confs) == 18
    for name, text in confs.items():
        f = tmp_path / f"{name}.conf"
        f.write_text(text)
        p = subprocess.run([VTYSH, "-C", "-f", str(f)], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"{name}: {p.stdout}{p.stderr}"


@pytest.mark.skipif(VTYSH is None, reason="frr not installed")
def test_vtysh_check_rejects_a_broken_config(tmp_path):
    """The gate above is real: a garbled line makes vtysh -C fail."""
    text = frr("lab-2zone")["z1-ctsw-01"].replace(" bgp bestpath as-path multipath-relax", " bgp bestpath as-path multipath-relaxx")
    f = tmp_path / "broken.conf"
    f.write_text(text)
    assert subprocess.run([VTYSH, "-C", "-f", str(f)], capture_output=True, timeout=60).returncode != 0


def test_frr_intent_matches_the_graph():
    d = compiled("lab-2zone")
    g = d.fabric.graph
    a = d.addressing
    for name, text in frr("lab-2zone").items():
        role = g.nodes[name]["role"]
        assert f"router bgp {a.asn[name]}\n" in text
        assert "bgp bestpath as-path multipath-relax" in text
        sessions = len(re.findall(r"^ neighbor \S+ peer-group \S+$", text, re.M))
        links = sum(1 for _, _, k, e in g.edges(name, keys=True, data=True) if e["kind"] == "link" and g.nodes[e["a"]]["role"] != "nic")
        assert sessions == links, name
        width = int(re.search(r"maximum-paths (\d+)", text).group(1))
        # lab: RTSW 16 uplinks; CTSW 8 uplinks (2:1 of 16 down); ATSW 16 links into each zone
        assert width == {"rtsw": 16, "ctsw": 8, "atsw": 16}[role], name
        assert " neighbor {0} bfd".format({"rtsw": "CTSW", "ctsw": "RTSW", "atsw": "CTSW"}[role]) in text
        if role == "rtsw":
            # announces only its rack subnet and loopback
            plist = re.findall(r"^ip prefix-list RACK-LOCAL seq \d+ permit (\S+)$", text, re.M)
            assert plist == [a.rack_subnet[name], a.loopback[name]]
            assert "route-map RACK-ONLY out" in text
        if role == "ctsw":
            atsw_asn = {a.asn[n] for n in a.asn if g.nodes[n]["role"] == "atsw"}.pop()
            assert f"bgp as-path access-list FROM-ATSW seq 10 permit _{atsw_asn}_" in text
            assert "neighbor ATSW route-map TO-UP out" in text


def test_maximum_paths_equals_the_widest_predicted_ecmp():
    """Two independent computations agree: the emitter's width and the verify model's BGP simulation."""
    from twin.emit.configs import topology
    from twin.verify.roce import Topology, predict

    js = topology(compiled("lab-2zone").intent)
    topo = Topology({s["name"]: {**s, "maximum_paths": 1024} for s in js["switches"]}, js["links"], js["hosts"], False, True, "lab")
    widths = predict(topo)
    for s in js["switches"]:
        assert s["maximum_paths"] == max(widths[s["name"]].values()), s["name"]


def test_sonic_config_db_carries_the_spec():
    d = compiled("lab-2zone")
    q = d.spec.fabric.qos
    a = d.addressing
    dbs = {p.split("/")[2]: json.loads(b) for p, b in files("lab-2zone").items() if p.endswith("config_db.json")}
    assert len(dbs) == 18  # every lab switch is a Minipack2 (SONiC)
    db = dbs["lab1-z1-r001-rtsw"]
    assert db["DEVICE_METADATA"]["localhost"]["bgp_asn"] == str(a.asn["lab1-z1-r001-rtsw"])
    assert len(db["BGP_NEIGHBOR"]) == 16 and len(db["PORT"]) == 64  # every front-panel port; 32 cabled
    up = [p for p in db["PORT"].values() if p["admin_status"] == "up"]
    assert len(up) == 32 and all(p["mtu"] == str(q.mtu) and p["speed"] == "400000" for p in up)
    assert db["DSCP_TO_TC_MAP"]["TWIN"][str(q.lossless_dscp[0])] == str(q.pfc_priority)
    assert db["DSCP_TO_TC_MAP"]["TWIN"][str(q.control_dscp)] != str(q.pfc_priority)
    assert {v["pfc_enable"] for v in db["PORT_QOS_MAP"].values()} == {str(q.pfc_priority)}
    wred = db["WRED_PROFILE"]["TWIN_LOSSLESS"]
    assert wred["green_min_threshold"] == str(int(q.ecn.min_threshold)) and wred["ecn"] == "ecn_all"
    assert f"Vlan1000|{a.rack_gateway['lab1-z1-r001-rtsw']}" in db["VLAN_INTERFACE"]
    assert len(db["VLAN_MEMBER"]) == 16 and "members" not in db["VLAN"]["Vlan1000"]
    assert db["SWITCH_HASH"]["GLOBAL"]["ecmp_hash"][:2] == ["SRC_IP", "DST_IP"]
    assert all(pg in db["BUFFER_PG"] for pg in ("Ethernet0|3", "Ethernet128|3"))
    assert db["PFC_WD"]["Ethernet0"]["detection_time"] == "200"


@pytest.mark.slow
def test_eos_configs_for_arista_switches():
    d = compiled("meta-24k-roce")
    out = files("meta-24k-roce")
    eos = {p: b.decode() for p, b in out.items() if p.startswith("configs/eos/")}
    g = d.fabric.graph
    arista = [n for n in d.fabric.switches() if d.spec.switch(g.nodes[n]["model"]).vendor == "Arista"]
    assert len(eos) == len(arista) > 0
    text = eos[f"configs/eos/{arista[0]}.cfg"]
    assert "fields ip src-ip dst-ip protocol src-port dst-port" in text
    assert "priority-flow-control priority 3 no-drop" in text
    assert re.search(r"maximum-paths \d+ ecmp \d+", text)
    assert "roce-dst-qp" in text  # the unsupported field is stated, not silently dropped


@pytest.mark.slow
@pytest.mark.skipif(VTYSH is None, reason="frr not installed")
def test_meta_configs_pass_vtysh_check_per_role(tmp_path):
    """One switch of each role of the 24K site (CTSWs are Arista: '/'-free FRR interface names)."""
    d = compiled("meta-24k-roce")
    g = d.fabric.graph
    confs = frr("meta-24k-roce")
    picked = {}
    for name in sorted(confs):
        picked.setdefault(g.nodes[name]["role"], name)
    assert set(picked) == {"rtsw", "ctsw", "atsw"}
    for _role, name in picked.items():
        f = tmp_path / f"{name}.conf"
        f.write_text(confs[name])
        p = subprocess.run([VTYSH, "-C", "-f", str(f)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"{name}: {p.stdout[-500:]}{p.stderr[-500:]}"


def test_output_is_deterministic():
    d = compiled("lab-2zone")
    assert configs.emit(d) == configs.emit(d)


def test_topology_json_lists_every_link_and_rack():
    topo = json.loads(files("lab-2zone")["configs/frr/topology.json"])
    assert len(topo["switches"]) == 18 and len(topo["links"]) == 192 and len(topo["hosts"]) == 8
    ifs = [(lk["a"], lk["a_if"]) for lk in topo["links"]] + [(lk["b"], lk["b_if"]) for lk in topo["links"]]
    assert len(set(ifs)) == len(ifs)


def test_infiniband_artifacts():
    f = files("lab-ib")
    conf = f["configs/opensm/opensm.conf"].decode()
    assert "routing_engine ftree" in conf and "lmc 0" in conf
    net = f["model/topology.net"].decode()
    assert net.count("\nHca\t") == 128 and net.count("\nSwitch\t") == 6
    roots = f["configs/opensm/root_guids.conf"].decode().split()
    assert len(roots) == 2 and all(f"switchguid={r}" in net for r in roots)
    parts = f["configs/opensm/partitions.conf"].decode()
    assert "Default=0x7fff" in parts and "training=0x0101" in parts
    # every port line has its mirror on the other side
    links = set(re.findall(r'^\[(\d+)\]\t"(\S+)"\[(\d+)\]', net, re.M))
    assert len(links) == 2 * 128 + 2 * 128  # NIC-leaf both ends + leaf-spine both ends


def test_switch_intent_is_a_frozen_record():
    """A CTSW of lab-2zone: 4 links to each of its zone's 4 RTSWs and 8 uplinks, 4 to each of the 2
    ATSWs (which share one ASN), so 24 neighbours; the RTSW group below first; maximum-paths 8 (its
    uplinks; the ecmp_widths doctest). The record cannot be changed after the pass."""
    import dataclasses

    sw = compiled("lab-2zone").intent.switches["z1-ctsw-01"]
    assert (sw.role, sw.level, sw.zone, sw.model, sw.maximum_paths, len(sw.neighbors)) == ("ctsw", 2, 0, "minipack2", 8, 24)
    assert [(g.name, g.direction, len(g.peer_asn)) for g in sw.groups] == [("RTSW", "down", 4), ("ATSW", "up", 1)]
    assert sum(nb.group == "ATSW" for nb in sw.neighbors) == 8 and sw.host is None and sw.server_ports == ()
    assert all(nb.speed == 400_000_000_000 and 0 < nb.cable_m < 100 and nb.xoff > 0 for nb in sw.neighbors)  # in-hall cables
    with pytest.raises(dataclasses.FrozenInstanceError):
        sw.maximum_paths = 1
