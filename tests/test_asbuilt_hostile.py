"""`twin as-built` reads neighbour files any host on the fabric writes (issue 38): names are escaped for the
terminal and never a formula in the work order, the reader is linear in a file's size, numbers and names
outside their domain are located errors, and no symbolic link takes it out of the folder given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from asbuilt_synth import collection, planned_wiring

from twin.asbuilt.plan import load

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "generated" / "lab-2zone"


def asbuilt(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "twin", "as-built", str(LAB), *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tables():
    plan, problems = load(LAB)
    assert plan is not None, problems
    return {name: json.loads(data) for name, data in collection(plan, planned_wiring(plan)).items()}


def test_a_forged_name_reaches_neither_terminal_nor_spreadsheet(tmp_path, tables):
    # a neighbour names itself with an escape sequence that clears the screen and prints a forged
    # verdict, and starts with '=' (a formula to a spreadsheet)
    import copy

    name, doc = next((n, copy.deepcopy(d)) for n, d in sorted(tables.items()) if "lldp" in d and isinstance(d["lldp"].get("interface"), list))
    entry = next(iter(doc["lldp"]["interface"][0].values()))
    forged = '=HYPERLINK("x")\x1b[2J\x1b[Has-built lab-2zone: every cable matches the plan'
    entry["chassis"] = {forged: {}}
    (tmp_path / "lldp").mkdir()
    (tmp_path / "lldp" / name).write_text(json.dumps(doc), encoding="utf-8")
    res = asbuilt(tmp_path / "lldp", "-o", tmp_path / "out")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "\x1b" not in res.stdout + res.stderr and "\\x1b[2J" in res.stdout + res.stderr
    order = (tmp_path / "out" / "work-order.csv").read_text(encoding="utf-8")
    assert "\x1b" not in order and "\\x1b[2J" in order
    assert not any(c.startswith(("=", "+", "@")) for line in order.splitlines()[1:] for c in line.split(","))
    html = (tmp_path / "out" / "as-built.html").read_text(encoding="utf-8")
    assert "\x1b" not in html and "<script" not in html.lower()


@pytest.mark.parametrize("text, says", [
    ('{"lldp": {"interface": {"Ethernet0": {"chassis": {"x": {"id": {"type": "mac", "value": ' + "9" * 5000 + '}}}, "port": {}}}}}',
     "an integer of 5,000 digits"),
    ('{"leaf-x": {"lldp": {"interface": {"Ethernet0": {"chassis": {"a": {}}, "port": {"id": ' + "1" * 4400 + '}}}}}}',
     "an integer of 4,400 digits"),
    ('{"lldp": {"interface": {"Ethernet0": {"chassis": {"sp\\ud800ine": {}}, "port": {"id": {"type": "local", "value": "etp1"}}}}}}',
     "surrogate"),
], ids=["json-int-5000-digits", "merged-int-4400-digits", "lone-surrogate"])
def test_numbers_and_names_outside_their_domain_are_located(tmp_path, text, says):
    f = tmp_path / "rtsw-z1-r01.json"
    f.write_text(text, encoding="utf-8")
    res = asbuilt(f)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert f"{f}:1:" in res.stderr and says in res.stderr, res.stderr


def test_an_ibnetdiscover_port_of_thousands_of_digits_is_located(tmp_path):
    f = tmp_path / "fabric.txt"
    f.write_text('Switch\t64 "S-0000000000000001"\t\t# "leaf" enhanced port 0 lid 1 lmc 0\n'
                 f'[{"7" * 5000}]\t"H-0000000000000002"[1](2)\t\t# "host" lid 2 4xNDR\n', encoding="utf-8")
    res = asbuilt(f)
    assert res.returncode == 2 and "Traceback" not in res.stderr and f"{f}:2:1: port number" in res.stderr, res.stderr


def test_a_symlink_in_the_folder_is_not_followed(tmp_path, tables):
    outside = tmp_path / "outside.json"
    name, doc = sorted(tables.items())[0]
    outside.write_text(json.dumps(doc), encoding="utf-8")
    folder = tmp_path / "lldp"
    folder.mkdir()
    (folder / name).symlink_to(outside)
    res = asbuilt(folder, "--json")
    assert "Traceback" not in res.stderr
    out = json.loads(res.stdout)["result"]
    assert not out.get("inputs") and any("symbolic link: not followed" in d["message"] for d in out["diagnostics"]), out


@pytest.mark.slow
def test_a_20_mb_one_line_merged_file_of_unknown_devices_reads_in_linear_time(tmp_path):
    """The issue's case: a one-line merged file whose names escape '/' as '\\/' (valid JSON) took more
    than 300 s at 20 MB, each entry's key searched to the end of the file; now well under 10 s."""
    entry = {"lldp": {"interface": {"Ethernet1/1": {"chassis": {"spine-x/1": {}}, "port": {"id": {"type": "local", "value": "Ethernet1/1"}}}}}}
    one = json.dumps(entry, separators=(",", ":")).replace("/", "\\/")
    n = 20_000_000 // (len(one) + 24)
    f = tmp_path / "merged.json"
    f.write_text("{" + ",".join(f'"unknown\\/dev-{i:07d}":{one}' for i in range(n)) + "}", encoding="utf-8")
    assert f.stat().st_size > 19_000_000
    import resource

    def cpu() -> float:  # the command's own CPU seconds (a waited-for child): wall time on a shared machine says little
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    t = cpu()
    res = asbuilt(f, timeout=300)
    took = cpu() - t
    assert res.returncode == 2 and "Traceback" not in res.stderr and "is a device of site lab-2zone" in res.stderr
    assert took < 10, f"{took:.1f} s of CPU"


@pytest.mark.parametrize("column, value", [("a_u", "9" * 5000), ("a_row", "²")])
def test_a_tampered_plan_is_refused(tmp_path, column, value):
    """cables.csv edited and its sha256 put back in the manifest (the manifest vouches for nothing then):
    the edited field is a located error and nothing is checked, as `twin diff` and `twin verify` refuse it."""
    import hashlib
    import shutil

    folder = tmp_path / "lab"
    shutil.copytree(LAB, folder)
    cables = folder / "cabling" / "cables.csv"
    lines = cables.read_text(encoding="utf-8").splitlines()
    head, row = lines[0].split(","), lines[1].split(",")
    row[head.index(column)] = value
    lines[1] = ",".join(row)
    cables.write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    for a in manifest["artifacts"]:
        if a["path"] == "cabling/cables.csv":
            a["sha256"] = hashlib.sha256(cables.read_bytes()).hexdigest()
            a.update({k: cables.stat().st_size for k in ("bytes", "size") if k in a})
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (tmp_path / "x.json").write_text('{"lldp": {}}', encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "twin", "as-built", str(folder), str(tmp_path / "x.json")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert f"{cables}:2:" in res.stderr and "whole numbers of at most 6 digits" in res.stderr and "nothing was checked" in res.stderr


def test_output_files_of_the_user_are_never_overwritten(tmp_path, tables):
    """as-built -o over a user's own work-order.csv is refused (exit 3, one line, the file unchanged);
    over twin's own output it writes again; onto a symbolic link loop it is one line, exit 3."""
    name, doc = sorted(tables.items())[0]
    f = tmp_path / name
    f.write_text(json.dumps(doc), encoding="utf-8")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "work-order.csv").write_text("my own notes\n", encoding="utf-8")
    res = asbuilt(f, "-o", mine)
    assert res.returncode == 3 and "Traceback" not in res.stderr and "twin did not write it" in res.stderr, res.stderr
    assert (mine / "work-order.csv").read_text(encoding="utf-8") == "my own notes\n" and sorted(p.name for p in mine.iterdir()) == ["work-order.csv"]
    ours = tmp_path / "ours"
    assert asbuilt(f, "-o", ours).returncode == 0 and asbuilt(f, "-o", ours).returncode == 0  # its own files: written again
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    res = asbuilt(f, "-o", loop)
    assert res.returncode == 3 and "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_sweep_refuses_a_results_file_it_did_not_write(tmp_path):
    import yaml

    doc = yaml.safe_load((ROOT / "sweeps" / "lab-oversubscription.yaml").read_text(encoding="utf-8"))
    doc["site"] = str(ROOT / "sites" / "lab-2zone.yaml")
    sw = tmp_path / "sw.yaml"
    sw.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").write_text("a user's table\n", encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "twin", "sweep", str(sw), "--root", "/", "-o", str(out), "--workers", "1"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 3 and "Traceback" not in res.stderr and "twin did not write it" in res.stderr, res.stderr
    assert (out / "results.csv").read_text(encoding="utf-8") == "a user's table\n" and sorted(p.name for p in out.iterdir()) == ["results.csv"]


def test_build_onto_a_symlink_loop_is_one_line_exit_3(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    res = subprocess.run([sys.executable, "-m", "twin", "build", "sites/lab-2zone.yaml", "-o", str(loop), "-q"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 3 and "Traceback" not in res.stderr and len(lines) == 1, res.stderr
    assert lines[0].startswith(f"sites/lab-2zone.yaml: {loop}: cannot be resolved (") and lines[0].endswith("); not written")


def test_a_lock_file_twin_did_not_write_is_neither_taken_nor_removed(tmp_path):
    """A user's own `.out.lock` beside `-o out` was locked and then removed; now the build stops (exit 3)
    and the file stays. A lock twin left (its mark, or an empty file) is still taken over."""
    lock = tmp_path / ".out.lock"
    lock.write_text("my notes\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "twin", "build", "sites/lab-2zone.yaml", "-o", str(tmp_path / "out"), "-q"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 3 and "is not a twin lock" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert lock.read_text(encoding="utf-8") == "my notes\n" and not (tmp_path / "out").exists()
    lock.write_bytes(b"twin build lock\n")  # a killed build's stale lock
    assert subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300).returncode == 0 and not lock.exists()
