"""SONiC config_db.json: valid under SONiC's own YANG models for every example site, ports laid out as
the switch model's port map says, buffers consistent; every port's speed is its link's speed in every
target (SONiC, EOS, InfiniBand topology), shown at nic_speed 200 Gbit/s.

The YANG models are SONiC's (sonic-buildimage src/sonic-yang-models), kept outside the repository in
``<repo>/../shared/reference/sonic-yang``; the conformance tests skip only where that folder is absent.
"""

from __future__ import annotations

import copy
import json
import math
import re
from functools import cache
from pathlib import Path

import pytest
from conftest import ROOT, SITES, compiled, emitted, example_sites, tiered

from twin.compiler.config.buffers import port_xoff
from twin.compiler.resolve.targets import target_of
from twin.compiler.resolve.validate import load_spec, validate_text
from twin.emit import configs, configs_ib
from twin.lang.diagnostics import Severity
from twin.verify import ib

MODELS = ROOT.parent / "shared" / "reference" / "sonic-yang" / "models"
LAB = (SITES / "lab-2zone.yaml").read_text()
LAB_IB = (SITES / "lab-ib.yaml").read_text()
ARISTA_RTSW = """
catalog:
  switches:
    arista-7060dx5:
      vendor: Arista
      config: eos
      ports: 64
      port_speed: 400 Gbit/s
      port_name: "Ethernet{n}/1"
      power: 1 kW
      latency: 1 us
      height_u: 2
      weight: 15 kg
      source: assumed, a 64x400G Arista switch for the EOS 200G test
"""


def sonic_sites() -> list[str]:
    """Example sites with at least one switch configured by SONiC (from the spec alone: cheap)."""
    out = []
    for path in example_sites():
        spec = load_spec(path)
        f = spec.fabric
        names = [spec.rack_type.rtsw, f.switch] + [t.model for t in (f.ctsw, f.atsw) if t is not None]
        if f.technology.value == "roce" and any(n and target_of(spec.switch(n)).name == "sonic" for n in names):
            out.append(path.stem)
    return out


SONIC_SITES = sonic_sites()


def sonic_files(site: str) -> dict[str, bytes]:
    """switch -> its config_db.json bytes, as the build writes them."""
    return {p.split("/")[2]: b for p, b in emitted(site).items() if p.startswith("configs/sonic/")}


@cache
def sonic_dbs(site: str) -> dict[str, dict]:
    return {name: json.loads(b) for name, b in sonic_files(site).items()}


@pytest.fixture(scope="session")
def yang():
    if not MODELS.is_dir():
        pytest.skip(f"SONiC YANG models not found: {MODELS} (the shared reference folder beside the repository is absent)")
    from sonic_yang import SonicYang  # needs libyang (Debian libyang2-dev + PyPI libyang 2.7.1, installed by .ci/run)

    return SonicYang(MODELS)


def variant(tmp_path: Path, text: str, name: str):
    """Compile a variant of an example site written to a temporary YAML."""
    import twin

    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace("name: lab-2zone", f"name: {name}").replace("name: lab-ib", f"name: {name}"))
    return twin.load(path)


def lab_200g(text: str = LAB) -> str:
    return text.replace("  technology: roce\n", "  technology: roce\n  nic_speed: 200 Gbit/s\n")


# ------------------------------------------------------------------ conformance with SONiC's models


def test_the_sonic_sites_are_the_roce_examples():
    """The parametrised conformance test below is not vacuous: it covers every RoCE example site."""
    assert {"lab-2zone", "lab-powercap", "meta-24k-roce", "meta-32k-roce"} <= set(SONIC_SITES)
    assert "lab-ib" not in SONIC_SITES and "meta-24k-ib" not in SONIC_SITES


# Every SONiC switch but the RTSWs is validated; of the RTSWs, those of the first two and the last two racks
# of each zone (every RTSW of the lab sites). RTSW configs come from one template and differ only in names,
# addresses, ASNs and neighbours: validating all 1,536 of meta-24k-roce, 2,016 of meta-32k-roce and 6,144
# of meta-campus-100k (at ~25 ms each) would add minutes and no case; bench/bench_sonic_yang.py validates
# every file of meta-24k-roce. The Meta sites are the slow tier's.
EDGE_RACKS = 2


def rtsw_sample(g, names) -> set[str]:
    """The RTSWs of the first and last EDGE_RACKS racks of each zone, and every other switch."""
    racks: dict = {}
    for n in names:
        if g.nodes[n]["role"] == "rtsw":
            racks.setdefault(g.nodes[n]["zone"], set()).add(g.nodes[n]["rack"])
    keep = {r for rs in racks.values() for r in sorted(rs)[:EDGE_RACKS] + sorted(rs)[-EDGE_RACKS:]}
    return {n for n in names if g.nodes[n]["role"] != "rtsw" or g.nodes[n]["rack"] in keep}


@pytest.mark.parametrize("site", tiered(SONIC_SITES))
def test_every_sonic_config_is_valid_under_sonic_yang(site, yang):
    d = compiled(site)
    g = d.fabric.graph
    want = {n for n in d.fabric.switches() if target_of(d.spec.switch(g.nodes[n]["model"])).name == "sonic"}
    files = sonic_files(site)
    assert set(files) == want and want  # meta-24k-roce: the 1,536 RTSWs (CTSW/ATSW are Arista: EOS)
    sample = rtsw_sample(g, files)
    def zones(names):
        return {g.nodes[n]["zone"] for n in names if g.nodes[n]["role"] == "rtsw"}

    assert zones(sample) == zones(files)  # RTSWs of every zone
    bad = {name: errs for name in sorted(sample) if (errs := yang.errors(json.loads(files[name])))}
    assert not bad, f"{len(bad)} of {len(sample)} invalid, e.g. {next(iter(bad.items()))}"


@pytest.mark.parametrize("edit", [
    {"routing": {"unnumbered": True, "ipv6": True}},
    {"routing": {"unnumbered": False, "ipv6": True}},
    {"qos": {"ecn": None, "pfc_watchdog": None, "pfc_priority": 0}},
], ids=["unnumbered-v6", "numbered-v6", "no-ecn-no-watchdog-pfc0"])
def test_routing_and_qos_variants_are_valid_under_sonic_yang(tmp_path, yang, edit):
    """The tables each option adds or drops (IPv6 addresses and peers, link-local-only interfaces,
    no WRED profile, no watchdog, the lossless class on queue 0) stay within SONiC's models."""
    import yaml

    import twin

    data = yaml.safe_load(LAB)
    for section, fields in edit.items():
        data["fabric"].setdefault(section, {}).update(fields)
    path = tmp_path / "lab-variant.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    d = twin.load(path)
    dbs = {p.split("/")[2]: json.loads(b) for p, b in configs.emit(d).items() if p.startswith("configs/sonic/")}
    assert len(dbs) == 18
    for name, db in dbs.items():
        assert yang.errors(db) == [], name
    rtsw = dbs["lab1-z1-r001-rtsw"]
    if edit.get("routing", {}).get("unnumbered"):
        # the first uplink (port 17: Ethernet128) has no address, BGP runs over its link-local one
        assert "BGP_NEIGHBOR" not in rtsw and rtsw["INTERFACE"]["Ethernet128"] == {"ipv6_use_link_local_only": "enable"}
    elif "routing" in edit:
        assert len(rtsw["BGP_NEIGHBOR"]) == 32  # an IPv4 and an IPv6 session per uplink
    else:
        assert "WRED_PROFILE" not in rtsw and "PFC_WD" not in rtsw
        p = d.spec.fabric.qos.pfc_priority  # Ethernet0: a GPU's 3 m DAC
        assert rtsw["BUFFER_PG"][f"Ethernet0|{p}"] == {"profile": "pg_lossless_400000_3m_profile"}


def test_validator_catches_a_missing_lane_a_wrong_type_and_an_unknown_field(yang):
    db = sonic_dbs("lab-2zone")["lab1-z1-r001-rtsw"]
    assert yang.errors(db) == []

    def broken(edit) -> list[str]:
        d = copy.deepcopy(db)
        edit(d)
        return yang.errors(d)

    errs = broken(lambda d: d["PORT"]["Ethernet0"].pop("lanes"))
    assert len(errs) == 1 and 'Mandatory node "lanes"' in errs[0]
    errs = broken(lambda d: d["PORT"]["Ethernet8"].update(mtu="jumbo"))
    assert len(errs) == 1 and 'uint16 value "jumbo"' in errs[0] and "Ethernet8" in errs[0]
    errs = broken(lambda d: d["PORT"]["Ethernet0"].update(speed="4000000"))  # 4 Tbit/s: out of the model's range
    assert len(errs) == 1 and "out of the allowed range" in errs[0]
    errs = broken(lambda d: d["PORT"]["Ethernet0"].update(colour="blue"))
    assert len(errs) == 1 and 'Node "colour" not found' in errs[0]
    # what twin used to write: VLAN members (removed from SONiC in 2020), a table no model defines,
    # an egress profile drawing from a pool that does not exist
    errs = broken(lambda d: d["VLAN"]["Vlan1000"].update(members=["Ethernet0"]))
    assert len(errs) == 1 and 'Node "members" not found' in errs[0]
    errs = broken(lambda d: d.update(BREAKOUT_CONFIG={"Ethernet0": {"brkout_mode": "1x400G"}}))
    assert errs == ["BREAKOUT_CONFIG: no SONiC YANG model defines this table"]
    errs = broken(lambda d: d["BUFFER_PROFILE"]["egress_lossless_profile"].update(pool="egress_pool"))
    assert len(errs) == 1 and 'Invalid leafref value "egress_pool"' in errs[0]


# ------------------------------------------------------------------ what a SONiC platform writes


def test_ports_follow_the_port_map_and_the_graph():
    d = compiled("lab-2zone")
    g = d.fabric.graph
    model = d.spec.switch("minipack2")
    pm = model.port_map
    for name, db in sonic_dbs("lab-2zone").items():
        ports = db["PORT"]
        assert len(ports) == model.ports == len(db["BREAKOUT_CFG"]) == 64
        lanes = [int(x) for row in ports.values() for x in row["lanes"].split(",")]
        assert sorted(lanes) == list(range(1, 513))  # 64 ports x 8 lanes, each lane once
        for pname, row in ports.items():
            i = int(row["index"])
            assert pname == f"Ethernet{(i - 1) * pm.name_step}" and row["alias"] == f"etp{i}"
            assert row["lanes"].split(",")[0] == str(1 + (i - 1) * 8) and row["fec"] == "rs"
            assert db["BREAKOUT_CFG"][pname] == {"brkout_mode": "1x400G[200G,100G,50G,40G,25G,10G]"}
        links = {e[p]: e for _, _, e in g.edges(name, data=True) if e["kind"] == "link" for p in ("a_port", "b_port") if e[p[0]] == name}
        assert {p for p, row in ports.items() if row["admin_status"] == "up"} == set(links)
        for p, e in links.items():
            assert ports[p]["speed"] == str(int(e["speed"] // 1e6)), (name, p)
            peer = e["b"] if e["a"] == name else e["a"]
            assert db["DEVICE_NEIGHBOR"][p] == {"name": peer, "port": e["b_port"] if e["a"] == name else e["a_port"]}
        meta = db["DEVICE_METADATA"]["localhost"]
        assert meta["hostname"] == name and meta["bgp_asn"] == str(d.addressing.asn[name])
        assert (meta["hwsku"], meta["platform"]) == (pm.hwsku, pm.platform)
        assert meta["type"] == {"rtsw": "ToRRouter", "ctsw": "LeafRouter", "atsw": "SpineRouter"}[g.nodes[name]["role"]]


def test_buffer_pools_and_profiles_are_consistent():
    """Egress profiles draw from egress pools, ingress ones from the ingress pool, every queue and
    priority group names a profile of its direction, sizes come from the model's buffer, and each
    port's lossless profile reserves the PFC headroom of its own cable (twin/compiler/config/buffers.py)."""
    d = compiled("lab-2zone")
    model = d.spec.switch("minipack2")
    total = int(model.buffer)
    metres = {}  # (switch, port) -> its cable's ordered length, whole metres up
    for c in d.fabric.cables():
        m = math.ceil(d.cabling.length_of(c.id))
        metres[c.a, c.a_port] = metres[c.b, c.b_port] = m
    for name, db in sonic_dbs("lab-2zone").items():
        pools, profiles = db["BUFFER_POOL"], db["BUFFER_PROFILE"]
        assert {p["type"] for p in pools.values()} == {"ingress", "egress"}
        for prof in profiles.values():
            assert prof["pool"] in pools
        for key, row in db["BUFFER_QUEUE"].items():
            assert pools[profiles[row["profile"]]["pool"]]["type"] == "egress", key
        for key, row in db["BUFFER_PG"].items():
            assert pools[profiles[row["profile"]]["pool"]]["type"] == "ingress", key
        assert pools["egress_lossless_pool"]["size"] == profiles["egress_lossless_profile"]["static_th"] == str(total)
        used = [p for p, row in db["PORT"].items() if row["admin_status"] == "up"]
        # each port's profile is its cable's: 400G over 3 m (a GPU's DAC) reserves
        # 50 GB/s x (2 x 3 m x 4.9 ns/m + 1.5 us) + 2 x 9216 = 76,470 + 18,432 bytes
        if "pg_lossless_400000_3m_profile" in profiles:
            assert profiles["pg_lossless_400000_3m_profile"]["xoff"] == "94902"
        reserved = 0
        for p in used:
            m = metres[name, p]
            assert db["BUFFER_PG"][f"{p}|3"] == {"profile": f"pg_lossless_400000_{m}m_profile"}
            assert profiles[f"pg_lossless_400000_{m}m_profile"]["xoff"] == str(port_xoff(400e9, m, 9216))
            reserved += port_xoff(400e9, m, 9216)
        xoff = int(pools["ingress_lossless_pool"]["xoff"])
        assert xoff == min(total // 4, reserved)
        assert int(pools["ingress_lossless_pool"]["size"]) + xoff == total
        # every used port: the lossless queue and queues 0-7 covered once
        for p in used:
            qs = [k.split("|")[1] for k in db["BUFFER_QUEUE"] if k.split("|")[0] == p]
            covered = sorted(q for r in qs for q in range(int(r.split("-")[0]), int(r.split("-")[-1]) + 1))
            assert covered == list(range(8)) and db["BUFFER_QUEUE"][f"{p}|3"]["profile"] == "egress_lossless_profile"


# ------------------------------------------------------------------ nic_speed reaches every target


@pytest.fixture(scope="module")
def lab200(tmp_path_factory):
    return variant(tmp_path_factory.mktemp("v"), lab_200g(), "lab-200g")


def link_speeds(design, switch: str) -> dict[str, float]:
    g = design.fabric.graph
    return {e[p]: e["speed"] for _, _, e in g.edges(switch, data=True) if e["kind"] == "link"
            for p in ("a_port", "b_port") if e[p[0]] == switch}


@pytest.fixture(scope="module")
def lab200_dbs(lab200) -> dict[str, dict]:
    return {p.split("/")[2]: json.loads(b) for p, b in configs.emit(lab200).items() if p.startswith("configs/sonic/")}


def test_200g_sonic_configs_are_valid_under_sonic_yang(lab200_dbs, yang):
    assert len(lab200_dbs) == 18
    for name, db in lab200_dbs.items():
        assert yang.errors(db) == [], name


def test_200g_nics_give_200g_sonic_ports(lab200, lab200_dbs):
    dbs = lab200_dbs
    assert len(dbs) == 18
    gpu_ports = 0
    for name, db in dbs.items():
        for port, speed in link_speeds(lab200, name).items():
            assert db["PORT"][port]["speed"] == str(int(speed // 1e6)), (name, port)
            peer = db["DEVICE_NEIGHBOR"][port]["name"]
            if lab200.fabric.graph.nodes[peer]["role"] == "nic":
                gpu_ports += 1
                assert speed == 200e9 and db["BUFFER_PG"][f"{port}|3"] == {"profile": "pg_lossless_200000_3m_profile"}
            else:
                assert speed == 400e9
    assert gpu_ports == 128
    # 200G over a 3 m DAC: 25 GB/s x (2 x 3 m x 4.9 ns/m + 1.5 us) + 2 x 9216 bytes
    assert dbs["lab1-z1-r001-rtsw"]["BUFFER_PROFILE"]["pg_lossless_200000_3m_profile"]["xoff"] == str(port_xoff(200e9, 3, 9216)) == "56667"


def test_200g_nics_give_200g_eos_ports(tmp_path):
    text = lab_200g(LAB).replace("    rtsw: minipack2\n", "    rtsw: arista-7060dx5\n") + ARISTA_RTSW
    d = variant(tmp_path, text, "lab-200g-eos")
    eos = {p.split("/")[-1][:-4]: b.decode() for p, b in configs.emit(d).items() if p.startswith("configs/eos/")}
    assert len(eos) == 8  # the RTSWs; CTSW/ATSW stay Minipack2 (SONiC)
    seen = {200: 0, 400: 0}
    for name, text in eos.items():
        blocks = dict(re.findall(r"^interface (Ethernet\S+)\n((?:   .*\n)+)", text, re.M))
        for port, speed in link_speeds(d, name).items():
            gbps = int(speed // 1e9)
            assert f"   speed {gbps}g\n" in blocks[port], (name, port)
            seen[gbps] += 1
    assert seen == {200: 128, 400: 128}  # 16 GPU ports and 16 uplinks on each of 8 RTSWs


def test_frr_configs_carry_no_port_speed(lab200):
    """FRR has no speed to set (the kernel interface does): the 200G lab's FRR configs are the 400G lab's."""
    a = {p: b for p, b in configs.emit(compiled("lab-2zone")).items() if p.startswith("configs/frr/")}
    b = {p: b for p, b in configs.emit(lab200).items() if p.startswith("configs/frr/")}
    assert a.keys() == b.keys() and len(a) == 19
    assert all(a[p] == b[p] for p in a if p.endswith(".conf"))


def test_200g_nics_give_2x_ndr_links_in_the_infiniband_topology(tmp_path):
    d = variant(tmp_path, LAB_IB.replace("nic_speed: 400 Gbit/s", "nic_speed: 200 Gbit/s"), "lab-ib-200g")
    out = configs_ib.emit(d)
    net = out["model/topology.net"].decode()
    rates = re.findall(r'^\[\d+\]\t"([SH])-[0-9a-f]+"\[\d+\]\t\t# "[^"]+" lid 0 (\S+)$', net, re.M)
    # both ends of 128 NIC links at 2 lanes of NDR; both ends of 128 leaf-spine links at 4
    assert sorted(set(rates)) == [("H", "2xNDR"), ("S", "2xNDR"), ("S", "4xNDR")]
    assert sum(r == "2xNDR" for _, r in rates) == 256 and sum(r == "4xNDR" for _, r in rates) == 256
    if ib.missing_binaries() is None:  # ibsim honours the widths: OpenSM routes, every link at its width
        (tmp_path / "osm").mkdir()
        for p, b in out.items():
            (tmp_path / ("osm" if p.startswith("configs/") else ".") / p.split("/")[-1]).write_bytes(b)
        r = ib.route_fabric(tmp_path / "osm", tmp_path / "topology.net")
        assert r.ok, r.problems


# ------------------------------------------------------------------ what validate refuses


def errors(text: str):
    _, diags = validate_text(text, "s.yaml")
    return [d for d in diags if d.severity is Severity.ERROR]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_sonic_switch_without_a_port_map_builds_all_but_its_sonic_configs(tmp_path):
    """A SONiC model without a port map (planned for capacity) is a located warning, not an error: the
    build writes everything (FRR configs included) but that model's config_db.json, and exits 0."""
    from typer.testing import CliRunner

    from twin.cli.app import app

    text = LAB.replace("    rtsw: minipack2\n", "    rtsw: wedge400\n")
    _, diags = validate_text(text, "s.yaml")
    assert not [d for d in diags if d.severity is Severity.ERROR]
    (w,) = [d for d in diags if "port_map" in d.message]
    assert (w.line, w.dotted) == (line_of(text, "rtsw: wedge400"), "rack_types.gt-rack.rtsw")
    assert "'wedge400' has no port_map: the build writes everything but its sonic configs" in w.message and "lanes_per_port" in w.expected
    path = tmp_path / "noportmap.yaml"
    path.write_text(text)
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 0 and f"noportmap.yaml:{w.line}:" in res.output and "1 warning(s)" in res.output, res.output
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["build", str(path), "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    sonic = sorted(p.name for p in (out / "configs" / "sonic").iterdir())
    frr = sorted(p.stem for p in (out / "configs" / "frr").glob("*.conf"))
    rtsws = [n for n in frr if n.endswith("-rtsw")]
    assert len(rtsws) == 8 and not set(rtsws) & set(sonic)  # the 8 wedge400 RTSWs: FRR yes, config_db.json no
    assert sorted(sonic) == sorted(n for n in frr if not n.endswith("-rtsw"))  # the Minipack2 CTSWs and ATSWs keep theirs


def test_a_nic_speed_the_breakout_mode_lacks_is_a_located_error():
    text = LAB.replace("  technology: roce\n", "  technology: roce\n  nic_speed: 300 Gbit/s\n")
    (e,) = errors(text)
    assert (e.line, e.dotted) == (line_of(text, "nic_speed: 300"), "fabric.nic_speed")
    assert "has no 300G" in e.message and "200G" in e.expected


def test_a_port_map_must_agree_with_the_port_speed():
    text = LAB + ARISTA_RTSW.replace("arista-7060dx5", "tor").replace("vendor: Arista", "vendor: Acme").replace("config: eos", "config: sonic") + (
        "      port_map: {platform: p, hwsku: h, lanes_per_port: 4, breakouts: ['1x200G'], source: assumed}\n"
    )
    errs = errors(text)
    assert any(e.dotted == "catalog.switches.tor" and "runs ports at 200G, port_speed is 400G" in e.message for e in errs)
