"""twin as-built: known answers on lab-2zone (the golden build in generated/), the formats' quirks, and
bad input. The real-software runs are in test_asbuilt_lab.py (lldpd) and test_asbuilt_ib.py (ibnetdiscover)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from asbuilt_synth import collection, got, inject, planned_wiring
from conftest import ROOT, unwrap
from typer.testing import CliRunner

from twin.asbuilt import check
from twin.asbuilt.plan import load
from twin.cli.app import app

GEN = ROOT / "generated" / "lab-2zone"
EOS = ROOT / "tests" / "data" / "asbuilt" / "arista-eos-model"


@pytest.fixture(scope="module")
def plan():
    p, problems = load(GEN)
    assert p is not None, [d.format() for d in problems.items]
    return p


def write(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def twin(*args: str) -> SimpleNamespace:
    """The command in this process (typer's runner): exit code, standard output and error."""
    r = CliRunner().invoke(app, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception  # never a traceback
    return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_seeded_faults_come_back_exactly(plan, tmp_path, seed):
    """k moved ends, j swaps, m missing, n unexpected cables at random: precision and recall 1.0, a swap as one finding."""
    k, j, m, n = seed, 6 - seed, (seed * 2) % 5, 1 + seed % 3
    wiring, want = inject(plan, seed, k, j, m, n)
    res, _d, errors = check(GEN, [write(tmp_path, collection(plan, wiring))])
    found = got(res.findings)
    assert errors == 0 and found == want  # every fault found (recall 1.0), nothing else (precision 1.0)
    assert len(res.findings) == k + j + m + n and sum(f.kind == "swapped" for f in res.findings) == j
    assert len(res.correct) == 320 - k - 2 * j - m


def test_clean_lab_every_cable_correct_exit_0(plan, tmp_path):
    folder = write(tmp_path / "lldp", collection(plan, planned_wiring(plan), eos={"atsw-01", "atsw-02"}))
    p = twin("as-built", str(GEN), str(folder), "--json")
    assert p.returncode == 0, p.stderr
    doc = unwrap(p.stdout)
    assert doc["status"] == "ok" and doc["ok"] and doc["exit"] == 0 and doc["site"] == "lab-2zone"
    assert doc["counts"]["correct"] == doc["counts"]["correct_both_ends"] == 320 and doc["findings"] == []
    assert doc["coverage"]["devices_reported"] == doc["coverage"]["devices_planned"] == 146 and doc["coverage"]["never_reported"] == []
    assert sorted(f["format"] for f in doc["inputs"]).count("eos") == 2 and len(doc["correct"]) == 320


def test_lldpd_shapes_one_neighbour_object_and_host_mac(plan, tmp_path):
    """lldpd prints an object for one neighbour and a list for several; a host's port is a MAC with
    the interface name only in the description. A merged file (device -> table) reads the same."""
    w = planned_wiring(plan)
    files = collection(plan, w, only={"lab1-z1-r001-s1", "lab1-z1-r001-rtsw"})
    server = json.loads(files["lab1-z1-r001-s1.json"])
    one = {"lldp": {"interface": server["lldp"]["interface"][0]}}  # the server with one NIC cabled
    assert isinstance(one["lldp"]["interface"], dict)
    rtsw = json.loads(files["lab1-z1-r001-rtsw.json"])
    host_port = next(iter(rtsw["lldp"]["interface"][0].values()))["port"]
    assert host_port["id"]["type"] == "mac" and host_port["descr"] == "nic1"
    merged = tmp_path / "merged.json"
    merged.write_text(json.dumps({"lab1-z1-r001-s1": one, "lab1-z1-r001-rtsw": rtsw}, indent=2))  # the switch's name first appears as a neighbour
    res, _d, errors = check(GEN, [merged])
    assert errors == 0 and res.col.files[0]["format"] == "lldpd (merged)" and res.col.files[0]["devices"] == 2
    text = merged.read_text().splitlines()
    for c in res.col.claims:  # every entry's file:line is its interface's own line
        line = int(c.src.rsplit(":", 1)[1])
        local = c.x[1] if c.x[0].startswith("lab1-z1-r001-rtsw") else "nic" + c.x[0].rsplit("nic", 1)[1]
        assert text[line - 1].strip().startswith(f'"{local}": {{'), (c, text[line - 1])
    mine = {plan.ids[i] for i, _ in res.correct}
    assert plan.ids[plan.at[("lab1-z1-r001-s1-nic1", "port1")]] in mine
    # nic2..nic8 of s1: the switch sees them, the server's table (one neighbour) does not: one end only
    nic2 = next(s for i, s in res.correct if plan.a[i] == ("lab1-z1-r001-s1-nic2", "port1"))
    assert nic2.evidence == "seen from lab1-z1-r001-rtsw only: lab1-z1-r001-s1-nic2 reports nothing on port1"


def test_eos_samples_after_aristas_json_model(plan, tmp_path):
    """atsw-01.json is `show lldp neighbors detail | json` as Arista's JSON model has it (lldpNeighborInfo
    lists, quoted interfaceId, interfaceId_v2, a SONiC neighbour's alias as a local id, an FQDN system
    name, a management port); eapi-atsw-02.json is an eAPI reply to `show hostname` and the summary
    `show lldp neighbors`. The switches at the other ends report in lldpd's JSON."""
    w = planned_wiring(plan)
    a8, a16 = ("atsw-01", "Ethernet8"), ("atsw-01", "Ethernet16")
    c8, c16 = w[a8], w[a16]
    w[a8], w[c16], w[a16], w[c8] = c16, a8, c8, a16  # crossed, as the sample reports
    other = write(tmp_path / "lldp", collection(plan, w, only={"z1-ctsw-01", "z1-ctsw-02"}))
    res, diags, errors = check(GEN, [EOS, other])
    assert errors == 0, [d.format() for d in diags]
    assert {f["format"] for f in res.col.files} == {"eos", "lldpd"} and res.col.ignored == 2  # the two Management1 entries
    by = {f.cables: f for f in res.findings}
    cid = lambda dev, port: plan.ids[plan.at[(dev, port)]]  # noqa: E731
    assert by[tuple(sorted((cid(*a8), cid(*a16))))].kind == "swapped"
    assert by[(cid("atsw-02", "Ethernet16"),)].kind == "disagree"  # atsw-02 names etp18 twice; z1-ctsw-02 says Ethernet144 is atsw-02's Ethernet16
    correct = {plan.ids[i]: s.evidence for i, s in res.correct}
    assert correct[cid("atsw-01", "Ethernet0")] == correct[cid("atsw-02", "Ethernet8")] == "both ends"  # etp17/etp18: SONiC aliases
    assert correct[cid("atsw-01", "Ethernet24")] == "seen from z1-ctsw-01 only: atsw-01 reports nothing on Ethernet24"
    rest = [f for f in res.findings if f.kind == "missing"]
    # each ATSW has 32 cables, 8 of them to the two CTSWs that reported: the other 24 nobody sees
    assert len(rest) == 2 * 24 and len(res.findings) == 2 * 24 + 2


def test_disagree_one_end_and_not_collected_are_told_apart(plan, tmp_path):
    w = planned_wiring(plan)
    files = collection(plan, w, only={"lab1-z1-r001-rtsw", "z1-ctsw-01", "lab1-z1-r002-rtsw"})
    rtsw = json.loads(files["lab1-z1-r002-rtsw.json"])
    for item in rtsw["lldp"]["interface"]:  # r002 claims the CTSW port that r001's uplink is on
        for port, e in item.items():
            if port == "Ethernet128":
                e["port"]["id"]["value"] = "etp17"  # z1-ctsw-01 Ethernet128, r001's
    files["lab1-z1-r002-rtsw.json"] = json.dumps(rtsw).encode()
    res, _d, _e = check(GEN, [write(tmp_path, files)])
    dis = [f for f in res.findings if f.kind == "disagree"]
    assert len(dis) == 1 and "but z1-ctsw-01 reports" in dis[0].evidence
    ev = {s.evidence for _, s in res.correct}
    assert "both ends" in ev and "seen from z1-ctsw-01 only: atsw-01 is not in the collection" in ev


def test_partial_collection_and_complete_flag(plan, tmp_path):
    folder = write(tmp_path / "z1", collection(plan, planned_wiring(plan), only={"lab1-z1-r001-rtsw", "lab1-z1-r001-s1", "lab1-z1-r001-s2"}))
    p = twin("as-built", str(GEN), str(folder))
    assert p.returncode == 0 and "matches the plan for what was reported" in p.stdout
    assert "never reported (129, coverage, not a fault)" in p.stdout and "288 not covered" in p.stdout
    assert twin("as-built", str(GEN), str(folder), "--complete").returncode == 1


def test_work_order_walks_the_room_and_writes_only_there(plan, tmp_path):
    wiring, want = inject(plan, 7, 4, 3, 3, 2)
    folder = write(tmp_path / "lldp", collection(plan, wiring))
    before = sorted(p for p in tmp_path.rglob("*"))
    gen_before = {p: p.read_bytes() for p in GEN.rglob("*") if p.is_file()}
    out = tmp_path / "out" / "order"
    p = twin("as-built", str(GEN), str(folder), "-o", str(out))
    assert p.returncode == 1, p.stderr
    written = [out / "work-order.csv", out / "as-built.json", out / "as-built.html", out / ".twin-written"]  # and its record of them (twin/owned.py)
    assert sorted(p for p in tmp_path.rglob("*")) == sorted(before + [tmp_path / "out", out, *written])
    assert {p: p.read_bytes() for p in GEN.rglob("*") if p.is_file()} == gen_before
    rows = list(csv.DictReader((out / "work-order.csv").open()))
    assert len(rows) == 12 and [int(r["step"]) for r in rows] == list(range(1, 13))
    keys = [(r["hall"], int(r["row"]), plan.floor[r["rack"]][2], r["rack"], int(r["u"])) for r in rows]
    assert keys == sorted(keys)  # hall, row, position in the row, rack, U
    swap = next(r for r in rows if r["finding"] == "swapped")
    assert len(swap["cables"].split()) == 2 and swap["a_label"].count(" | ") == 1
    doc = json.loads((out / "as-built.json").read_text())
    assert doc["status"] == "differs" and len(doc["findings"]) == 12
    assert twin("as-built", str(GEN), str(folder), "-o", str(GEN / "as-built")).returncode == 2  # never into the build


def test_bad_input_is_located_never_a_traceback(plan, tmp_path):
    bad = tmp_path / "bad"
    files = collection(plan, planned_wiring(plan), only={"lab1-z1-r001-rtsw", "z1-ctsw-01"})
    write(bad, files)
    text = files["z1-ctsw-01.json"].decode()
    (bad / "z1-ctsw-01.json").write_text(text[: len(text) // 2])  # truncated
    (bad / "no-such-switch.json").write_text('{"lldp": {}}')
    (bad / "blob.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    (bad / "notes.txt").write_text("show lldp neighbors\n")
    other = {"lldp": {"interface": {"Ethernet0": {"chassis": {"dh9-z3-r007-s1": {}}, "port": {"id": {"type": "mac", "value": "x"}, "descr": "nic1"}}}}}
    (bad / "dh9-z3-r007-rtsw.json").write_text(json.dumps(other, indent=2))  # another site's switch
    rtsw = json.loads(files["lab1-z1-r001-rtsw.json"])
    rtsw["lldp"]["interface"].append({"Ethernet0": rtsw["lldp"]["interface"][1]["Ethernet8"]})  # Ethernet0 again, another neighbour
    (bad / "lab1-z1-r001-rtsw.json").write_text(json.dumps(rtsw, indent=2))
    p = twin("as-built", str(GEN), str(bad))
    assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout
    err = p.stderr
    assert f"{bad / 'z1-ctsw-01.json'}:" in err and "JSON ends early (truncated?)" in err
    assert f"{bad / 'no-such-switch.json'}:1:1: device 'no-such-switch' is not in the plan of site lab-2zone" in err
    assert f"{bad / 'blob.bin'}:1:8: binary content (a NUL byte at byte 7)" in err
    assert f"{bad / 'notes.txt'}:1:1: not a neighbour table of a known format" in err
    assert "a neighbour file for another site?" in err
    assert "conflict" in p.stdout and "reported with 2 different neighbours" in p.stdout  # the same port twice: a finding
    res, diags, errors = check(GEN, [bad])
    conflict = next(f for f in res.findings if f.kind == "conflict")
    assert conflict.work == ("lab1-z1-r001-rtsw", "Ethernet0") and len(conflict.sources) == 2
    assert all(":" in s and s.rsplit(":", 1)[1].isdigit() for s in conflict.sources)  # file:line of each report


def test_untrusted_generated_folder(tmp_path):
    gen = tmp_path / "gen"
    shutil.copytree(GEN, gen)
    folder = tmp_path / "none"
    folder.mkdir()
    csvp = gen / "cabling" / "cables.csv"
    csvp.write_text(csvp.read_text().replace("Ethernet8,", "Ethernet9,", 1))
    p = twin("as-built", str(gen), str(folder))
    assert p.returncode == 2 and "cables.csv:1:1: does not match manifest.json (changed after the build; rebuild the folder)" in p.stderr
    csvp.unlink()
    csvp.symlink_to("/etc/passwd")
    p = twin("as-built", str(gen), str(folder), "--json")
    doc = unwrap(p.stdout)
    assert p.returncode == 2 and doc["status"] == "invalid" and "a symlink leads outside" in doc["diagnostics"][0]["message"]
    assert twin("as-built", str(tmp_path / "nowhere"), str(folder)).returncode == 2
    p = twin("as-built", str(GEN), str(folder))  # an empty collection checks nothing: not "matches"
    assert p.returncode == 2 and "no neighbour table was read: nothing to check" in p.stderr


def test_tampered_plan_rows_are_located(tmp_path):
    """A plan that passes the manifest (rewritten with it) but contradicts itself is still refused, row by row."""
    import hashlib

    gen = tmp_path / "gen"
    shutil.copytree(GEN, gen)
    csvp = gen / "cabling" / "cables.csv"
    lines = csvp.read_text().splitlines()
    lines[3] = lines[3].replace("lab1-z1-r001-s1-nic3/port1", "lab1-z1-r001-s1-nic3/port2")  # a label that disagrees with its columns
    lines[5] = lines[5].replace(",1,lab1-z1-r001,47,", ",x,lab1-z1-r001,47,")  # a row that is not a number
    csvp.write_text("\n".join(lines) + "\n")
    man = json.loads((gen / "manifest.json").read_text())
    for a in man["artifacts"]:
        if a["path"] == "cabling/cables.csv":
            a["sha256"] = hashlib.sha256(csvp.read_bytes()).hexdigest()
    (gen / "manifest.json").write_text(json.dumps(man))
    _res, diags, errors = check(gen, [])
    text = "\n".join(d.format() for d in diags)
    assert errors == 2 and _res is None  # each row's own fault, not their consequences
    assert "cables.csv:4:" in text and "a_label" in text and "disagrees with its own columns" in text
    assert "cables.csv:6:" in text and "row and U must be whole numbers" in text


def test_page_puts_the_findings_on_the_floor_plan(plan, tmp_path):
    """as-built.html: one floor plan per hall, a rack red exactly when a finding's work is there (its
    tooltip names the finding), green when all it reported is correct; the same bytes every time."""
    import re

    from twin.asbuilt.page import page
    from twin.emit.svg import OK, OVER

    wiring, _want = inject(plan, 11, 2, 2, 2, 1)
    res, _d, _e = check(GEN, [write(tmp_path, collection(plan, wiring))])
    html = page(res)
    assert html == page(res) and html.count(b"<svg") == 1  # lab-2zone has one hall
    cells = {rack: colour for colour, rack in re.findall(r'fill="(#[0-9a-f]{6})"><title>([a-z0-9-]+): \d+ of', html.decode())}
    red = {plan.devices[f.work[0]].rack for f in res.findings}
    assert {r for r, c in cells.items() if c == OVER} == red and len(red) >= 3
    assert {r for r, c in cells.items() if c == OK} == set(cells) - red
    first = res.ordered()[0]
    assert first.action.split(":")[0].encode() in html


def test_a_neighbour_the_plan_does_not_have(plan, tmp_path):
    """A switch seen on a free port that the plan has no device for: an unexpected cable whose far end is
    labelled not-in-plan, and a located warning naming the stranger once."""
    files = collection(plan, planned_wiring(plan), only={"lab1-z1-r001-rtsw"})
    rtsw = json.loads(files["lab1-z1-r001-rtsw.json"])
    stranger = {"via": "LLDP", "chassis": {"mystery-sw": {"id": {"type": "mac", "value": "02:00:00:00:00:01"}}},
                "port": {"id": {"type": "ifname", "value": "swp7"}, "descr": "swp7"}}
    rtsw["lldp"]["interface"].append({"Ethernet256": stranger})
    (tmp_path / "lab1-z1-r001-rtsw.json").write_text(json.dumps(rtsw, indent=2))
    res, diags, errors = check(GEN, [tmp_path])
    assert errors == 0
    un = [f for f in res.findings if f.kind == "unexpected"]
    assert len(un) == 1 and un[0].ends[0] == (plan.label(("lab1-z1-r001-rtsw", "Ethernet256")), "not-in-plan/mystery-sw/swp7")
    assert un[0].evidence == "seen from lab1-z1-r001-rtsw only: mystery-sw is not in the plan"
    warn = [d for d in diags if "mystery-sw" in d.message]
    assert len(warn) == 1 and warn[0].line > 1 and "not a device of the plan" in warn[0].message


def test_a_server_port_that_is_no_nic_keeps_its_rack_label(plan, tmp_path):
    """A server cabled on an interface the plan has no NIC for (eth4 into a free switch port): the
    far end is still labelled where the server stands, and the interface is named in a warning."""
    files = collection(plan, planned_wiring(plan), only={"lab1-z1-r001-rtsw"})
    rtsw = json.loads(files["lab1-z1-r001-rtsw.json"])
    host = {"via": "LLDP", "chassis": {"lab1-z1-r001-s2": {"id": {"type": "mac", "value": "02:00:00:00:00:02"}}},
            "port": {"id": {"type": "mac", "value": "02:00:00:00:00:02"}, "descr": "eth4"}}
    rtsw["lldp"]["interface"].append({"Ethernet264": host})
    (tmp_path / "lab1-z1-r001-rtsw.json").write_text(json.dumps(rtsw, indent=2))
    res, diags, _e = check(GEN, [tmp_path])
    un = [f for f in res.findings if f.kind == "unexpected"]
    assert len(un) == 1 and "lab1/R01/lab1-z1-r001/U" in un[0].ends[0][1] and un[0].ends[0][1].endswith("/lab1-z1-r001-s2/eth4")
    assert any("interface 'eth4' of server lab1-z1-r001-s2 is not one of its NICs" in d.message for d in diags)


def test_an_output_folder_that_cannot_be_written(plan, tmp_path):
    """-o under a file (no user can create it, root included): one line and exit 3, as twin build says it."""
    folder = write(tmp_path / "lldp", collection(plan, planned_wiring(plan), only={"lab1-z1-r001-rtsw"}))
    (tmp_path / "file").write_text("x")
    p = twin("as-built", str(GEN), str(folder), "-o", str(tmp_path / "file" / "out"))
    assert p.returncode == 3 and "cannot write (Not a directory)" in p.stderr
    p = twin("as-built", str(GEN), str(folder), "-o", str(tmp_path / "file" / "out"), "--json")
    doc = unwrap(p.stdout)
    assert p.returncode == 3 and doc["status"] == "not written" and doc["exit"] == 3
