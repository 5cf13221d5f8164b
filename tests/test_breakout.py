"""Current switches and optics (issue 28, part 2), and a switch port that serves a slower NIC port through a
split cage: the cabling plan, the BOM, the SONiC port breakout and the NetBox set all say which cage, which
lanes and which transceiver sits at each end.

Known answers: [sonic-sn5600] Mellanox-SN5600-O128 port_config.ini: Ethernet4 is etp1b, lanes 4-7, index 1;
a twin-port module serves the two 400G ports of one cage ([sn5600]), so 128 NIC links on 64 cages take 64
modules at the switch and 128 DR4 at the NICs, where single-port optics would take 2 x 128.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from twin.compiler.fabric.cabling import select_media
from twin.compiler.resolve.targets import ib_rate
from twin.lang.catalog import builtin

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "tests" / "data" / "sn5600-breakout.yaml"
MODELS = ROOT.parent / "shared" / "reference" / "sonic-yang" / "models"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sn") / "out"
    r = subprocess.run([sys.executable, "-m", "twin", "build", str(SITE), "-o", str(d)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return d


def test_catalog_switches_and_optics():
    c = builtin()
    q = c.switches["q3400"]
    assert (q.ports, q.port_speed, q.ports_per_cage, q.technology) == (144, 800e9, 2, "infiniband")  # [dgx-b300-xdr-ra]
    assert ib_rate(800e9, q.port_speed) == "4xXDR" and ib_rate(400e9, q.port_speed) == "2xXDR"
    s, b = c.switches["sn5600"], c.switches["sn5600-2x400g"]
    assert (s.ports, s.port_speed, b.ports, b.port_speed) == (64, 800e9, 128, 400e9)  # [sn5600]
    assert s.ports * s.port_speed == b.ports * b.port_speed == 51.2e12
    by = {n: (m.speed, m.reach, m.fiber) for n, m in c.media.items()}
    assert by["dr8-800g"] == (800e9, 500.0, "smf") and by["sr8-800g"] == (800e9, 100.0, "mmf")  # [ieee-802.3df]
    assert by["dr8-1600g"] == (1600e9, 500.0, "smf")  # [ieee-802.3dj]
    tp = c.media["2xdr4-800g"]
    assert (tp.module_ports, tp.far_end, tp.speed) == (2, "dr4-400g", 400e9)


def test_twin_port_module_only_where_listed():
    media = builtin().media
    length, speed = np.array([40.0, 300.0]), np.array([400e9, 400e9])
    idx, names, _ = select_media(length, speed, media)
    assert [names[i] for i in idx] == ["sr8-400g", "dr4-400g"]  # never the twin-port module unasked
    tiers = np.array(["nic-leaf", "nic-leaf"])
    idx, names, _ = select_media(length, speed, media, tiers, {"nic-leaf": ["2xdr4-800g"]})
    assert [names[i] for i in idx] == ["2xdr4-800g"] * 2


def _csv(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_bom_counts_one_module_per_cage_and_a_far_end_per_link(out):
    rows = _csv(out / "bom.csv")

    def qty(cat: str, item: str) -> int:
        return sum(int(r["quantity"]) for r in rows if r["category"] == cat and r["item"] == item)

    assert qty("transceiver", "2xdr4-800g") == 64  # 128 links, 2 per cage
    assert qty("transceiver", "dr4-400g") == 128  # one at every NIC
    assert qty("cable", "smf-mpo-12") == 128  # one fiber per 400G link (per stock length on its own line)


def test_cabling_plan_names_cage_lanes_and_both_ends(out):
    rows = _csv(out / "cabling" / "breakouts.csv")
    assert len(rows) == 128
    cages: dict[int, list[dict]] = {}
    for r in rows:
        assert r["switch"] == "leaf-0001" and r["mode"].startswith("2x400G")
        cages.setdefault(int(r["cage"]), []).append(r)
    assert sorted(cages) == list(range(1, 65))
    for cage, (a, b) in cages.items():
        first = 8 * (cage - 1)
        assert (a["port"], a["lanes"], b["port"], b["lanes"]) == (f"Ethernet{first}", f"{first}-{first + 3}", f"Ethernet{first + 4}", f"{first + 4}-{first + 7}")
        assert a["switch_end"] == b["switch_end"] == "2xdr4-800g (one module for the cage's 2 ports)"
        assert a["far_end"] == b["far_end"] == "dr4-400g" and a["peer"] != b["peer"]


def test_sonic_breakout_follows_the_o128_port_config(out):
    db = json.loads((out / "configs" / "sonic" / "leaf-0001" / "config_db.json").read_text())
    assert db["PORT"]["Ethernet4"]["alias"] == "etp1b" and db["PORT"]["Ethernet4"]["lanes"] == "4,5,6,7"
    assert db["PORT"]["Ethernet4"]["index"] == db["PORT"]["Ethernet0"]["index"] == "1"
    assert db["PORT"]["Ethernet508"]["alias"] == "etp64b" and db["PORT"]["Ethernet508"]["lanes"] == "508,509,510,511"
    assert set(db["BREAKOUT_CFG"]) == {f"Ethernet{8 * c}" for c in range(64)}  # one per cage, under its first port
    assert {v["brkout_mode"] for v in db["BREAKOUT_CFG"].values()} == {"2x400G[200G,100G,50G,40G,25G,10G]"}
    assert len(db["PORT"]) == 128


def test_sonic_breakout_config_is_valid_under_sonic_yang(out):
    if not MODELS.is_dir():
        pytest.skip(f"SONiC YANG models not found: {MODELS}")
    sys.path.insert(0, str(ROOT / "tests"))
    from sonic_yang import SonicYang

    db = json.loads((out / "configs" / "sonic" / "leaf-0001" / "config_db.json").read_text())
    assert SonicYang(MODELS).errors(db) == []


def test_netbox_says_cage_lanes_and_module(out):
    ifs = {(r["device"], r["name"]): r["description"] for r in _csv(next((out / "netbox").glob("*interfaces.csv")))}
    assert ifs[("sn5600-breakout-leaf-0001", "Ethernet4")].endswith("; cage 1 port 2 of 2, lanes 4-7, 2x400G[200G,100G,50G,40G,25G,10G]")
    cables = _csv(next((out / "netbox").glob("*cables.csv")))
    assert all("2xdr4-800g module in leaf-0001 Ethernet" in c["description"] and "dr4-400g at the far end" in c["description"]
               for c in cables)


@pytest.mark.parametrize("edit,what", [
    ("    nic-leaf: [2xdr4-800g]\n", "unknown medium 'nope'"),
    ("  switch: sn5600-2x400g\n", "puts 2 port(s) in a cage, ports_per_cage is 1"),
])
def test_bad_breakout_input_is_located(tmp_path, edit, what):
    text = SITE.read_text()
    if "nic-leaf" in edit:
        text = text.replace(edit, edit + """catalog:
  media:
    bad-twin:
      kind: optic
      speed: 400 Gbit/s
      reach: 500 m
      fiber: smf
      stock_lengths: [10 m]
      weight_per_metre: 0.009 kg
      module_ports: 2
      far_end: nope
      source: test
""")
    else:
        text = text.replace(edit, """  switch: split
catalog:
  switches:
    split:
      vendor: test
      config: sonic
      ports: 128
      port_speed: 400 Gbit/s
      port_name: "Ethernet{n0_step}"
      port_map: {platform: p, hwsku: h, lanes_per_port: 4, name_step: 4, breakouts: ["2x400G"], source: test}
      power: 1 kW
      latency: 1 us
      height_u: 2
      weight: 20 kg
      source: test
""")
    site = tmp_path / "s.yaml"
    site.write_text(text)
    r = subprocess.run([sys.executable, "-m", "twin", "validate", str(site)], capture_output=True, text=True, cwd=ROOT)
    outp = r.stdout + r.stderr
    assert r.returncode == 2 and what in outp and "Traceback" not in outp
    assert "s.yaml:" in outp


def test_twin_port_module_without_a_split_cage_is_located(tmp_path):
    text = SITE.read_text().replace("  switch: sn5600-2x400g\n", "  switch: minipack2\n")
    site = tmp_path / "s.yaml"
    site.write_text(text)
    r = subprocess.run([sys.executable, "-m", "twin", "validate", str(site)], capture_output=True, text=True, cwd=ROOT)
    out = r.stdout + r.stderr
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "nic-leaf: [2xdr4-800g]" in t)
    assert r.returncode == 2 and f"s.yaml:{line}:" in out and "no switch of this fabric has 2-port cages" in out


def test_infiniband_twin_port_cages_number_their_lanes_by_cage_type():
    """An OSFP cage has 8 lanes ([qm9700], [quantum-x800]): its two ports take lanes 0-3 and 4-7; a cage of a
    model that does not say its type is a 4-lane QSFP one, split 0-1 / 2-3."""
    from twin.compiler.fabric.ports import cage_of, cage_text

    c = builtin()
    qm, xdr = c.switches["qm9700"], c.switches["q3400"]
    assert (qm.cage_lanes, xdr.cage_lanes) == (8, 8)
    assert [cage_of(qm, p) for p in ("3/1", "3/2")] == [(3, 1, (0, 3)), (3, 2, (4, 7))]
    assert cage_of(xdr, "72/2") == (72, 2, (4, 7))
    assert cage_text(qm, "3/2") == "cage 3 port 2 of 2, lanes 4-7, 2x400G"
    qsfp = qm.model_copy(update={"cage_lanes": None})
    assert cage_of(qsfp, "3/2") == (3, 2, (2, 3))
