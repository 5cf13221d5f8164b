"""`twin verify` reads a generated folder as untrusted input and leaves nothing behind (issue 25).

Known answers: a switch named `../x` (or `/etc`) is one located line, exit 2, and nothing is written
anywhere (the lab code refuses such a name too, before it creates anything); a config path in
topology.json that leaves configs/frr, or a config that is a symlink out, is refused without reading or
printing the file; opensm.conf options twin does not write (a plugin, a dump folder) are refused at their
line; any tampering of topology.json is a located error or a topology whose every name is safe. Root:
after `kill -9` of a verify run its watchdog removes every namespace, FRR daemon, work folder and raised
sysctl within seconds; with the watchdog killed too, `twin verify --cleanup` does. InfiniBand (no root):
after `kill -9` ibsim, the work folder and the record are gone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, unwrap

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.folder import FolderError
from twin.verify.frr import FrrLab, Switch, binaries
from twin.verify.ib import _rewrite_conf, missing_binaries
from twin.verify.netns import LabError, require_root
from twin.verify.runs import namespaces_of, processes_with
from twin.verify.topology import TOPOLOGY, Topology, hostname, ifname, parse

SECRET = "TOP-SECRET-7d1e"


def twin_cli(*args, env=None, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "twin", *map(str, args)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600, **kw)


@pytest.fixture(scope="module")
def lab(built, tmp_path_factory):
    root = tmp_path_factory.mktemp("verify-untrusted")
    shutil.copytree(built("lab-2zone"), root / "lab")
    (root / "secret.txt").write_text(SECRET)
    return root


def rename_switch(folder: Path, old: str, new: str) -> None:
    p = folder / TOPOLOGY
    d = json.loads(p.read_text())
    for s in d["switches"]:
        if s["name"] == old:
            s["name"] = new
    for lk in d["links"]:
        for end in ("a", "b"):
            if lk[end] == old:
                lk[end] = new
    for h in d["hosts"]:
        if h["switch"] == old:
            h["switch"] = new
    p.write_text(json.dumps(d))


def listing(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*")}


def test_switch_named_dot_dot_x_writes_nothing(lab, tmp_path):
    """`twin verify` on a folder with a switch named `../x`: one located line, exit 2, nothing written (not
    even the run's record: the folder is refused before anything starts)."""
    folder = tmp_path / "lab"
    shutil.copytree(lab / "lab", folder)
    rename_switch(folder, "atsw-01", "../x")
    state = tmp_path / "state"
    before = listing(tmp_path)
    escapes = [Path("/tmp/x"), folder.parent / "x", Path("/tmp/x.conf")]
    assert not any(p.exists() for p in escapes)
    r = twin_cli("verify", folder, env={"TWIN_VERIFY_STATE": str(state)})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"{folder / TOPOLOGY}: switches[0].name: '../x' is not a hostname (expected letters, digits and '-', at most 63, "
        "not starting or ending with '-')"]
    assert listing(tmp_path) == before and not state.exists() and not any(p.exists() for p in escapes)


@pytest.mark.parametrize("name", ["../x", "/etc", "../../../../tmp/evil", "x/../../y", "a b", "-x", "a" * 64, "x\nrouter bgp 1"])
def test_names_that_are_not_hostnames_are_refused(lab, tmp_path, name):
    """Refused where topology.json is read, and by the lab itself before it creates anything."""
    folder = tmp_path / "lab"
    shutil.copytree(lab / "lab", folder)
    rename_switch(folder, "atsw-01", name)
    with pytest.raises(FolderError) as e:
        Topology.load(folder)
    assert str(e.value).startswith(f"{folder / TOPOLOGY}: switches[0].name: {name!r} is not a hostname")
    with pytest.raises(LabError, match="is not a hostname"):
        FrrLab([Switch(name, "")], [])


def test_config_path_out_of_the_folder_is_never_read(lab, tmp_path):
    folder = tmp_path / "lab"
    shutil.copytree(lab / "lab", folder)
    d = json.loads((folder / TOPOLOGY).read_text())
    for cfg in ("../../../secret.txt", "/etc/shadow", "x/../../secret.txt"):
        d["switches"][0]["config"] = cfg
        (folder / TOPOLOGY).write_text(json.dumps(d))
        with pytest.raises(FolderError) as e:
            Topology.load(folder)
        assert str(e.value) == (f"{folder / TOPOLOGY}: switches[0].config: {cfg!r} is not a config file name in configs/frr "
                                "(expected e.g. z1-ctsw-01.conf)")
    r = twin_cli("verify", folder, "--json")  # the last one through the command: the same line, as JSON
    js = unwrap(r.stdout)
    assert r.returncode == 2 and js["status"] == "invalid" and not r.stderr and js["problems"] == [str(e.value)]
    # a config that is a symlink out: the name is fine, the file is not read
    d["switches"][0]["config"] = "atsw-01.conf"
    (folder / TOPOLOGY).write_text(json.dumps(d))
    (folder / "configs" / "frr" / "atsw-01.conf").unlink()
    (folder / "configs" / "frr" / "atsw-01.conf").symlink_to(lab / "secret.txt")
    with pytest.raises(FolderError, match="a symlink leads outside"):
        Topology.load(folder).config("atsw-01")
    (folder / "configs" / "frr" / "atsw-01.conf").unlink()
    os.symlink("../../../secret.txt", folder / "configs" / "frr" / "atsw-01.conf")
    with pytest.raises(FolderError) as e:
        Topology.load(folder).config("atsw-01")
    assert SECRET not in str(e.value)


@pytest.mark.parametrize("line, says", [
    ("event_plugin_name osmeventplugin", "'event_plugin_name' is not an option twin writes"),
    ("dump_files_dir /etc/", "'dump_files_dir' is not an option twin writes"),
    ("routing_engine ftree; rm -rf /", "routing_engine 'ftree; rm -rf /' is not a value twin writes"),
    ("lmc 9", "lmc '9' is not a value twin writes"),
])
def test_opensm_conf_takes_only_what_twin_writes(line, says):
    conf = "# generated\nrouting_engine ftree\nlmc 0\n" + line + "\n"
    with pytest.raises(FolderError, match="opensm.conf:4: " + says.replace("(", r"\(").replace(")", r"\)")):
        _rewrite_conf(conf, {}, "opensm.conf")
    with pytest.raises(FolderError, match="opensm.conf:1: root_guid_file names a file the folder does not have"):
        _rewrite_conf("root_guid_file /etc/opensm/root_guids.conf\n", {}, "opensm.conf")
    assert _rewrite_conf("routing_engine ftree\nroot_guid_file /x\n", {"root_guid_file": Path("/w/r.conf")})[1] == "ftree"


LAB_TOPOLOGY = json.loads((ROOT / "generated" / "lab-2zone" / TOPOLOGY).read_text())


def topo_paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from topo_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            yield from topo_paths(v, prefix + (i,))


PATHS = [p for p in topo_paths(LAB_TOPOLOGY) if p]
junk = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(), st.text(max_size=20),
                 st.sampled_from(["../x", "/etc/passwd", "eth0\nlink del", "a" * 16, "Ethernet0", "10.0.0.1", "10.0.0.0/33",
                                  "::1/128", "10.0.0.1/27", "x.conf", "../x.conf", "a\x00b", "z1-ctsw-01"]),
                 st.lists(st.text(max_size=5), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["set", "delete"]), st.sampled_from(PATHS), junk), min_size=1, max_size=3))
def test_tampered_topology_is_refused_or_safe(edits):
    """Any tampering of topology.json: a FolderError naming the file, or a topology in which every switch
    name is a hostname, every interface a Linux interface name and every link end a known switch."""
    doc = json.loads(json.dumps(LAB_TOPOLOGY))
    for op, path, value in edits:
        try:
            node = doc
            for k in path[:-1]:
                node = node[k]
            if op == "set":
                node[path[-1]] = value
            else:
                del node[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
    try:
        t = parse(doc, "topology.json")
    except FolderError as e:
        assert str(e).startswith("topology.json") and "\n" not in str(e)
        return
    assert all(hostname(n) for n in t.switches) and t.site and hostname(t.site)
    assert all(ifname(lk[f"{e}_if"]) and lk[e] in t.switches for lk in t.links for e in "ab")
    assert all(ifname(h["ifname"]) and h["switch"] in t.switches for h in t.hosts)


# ------------------------------------------------------------------ kill -9 (root, FRR)
WHY = require_root(binaries(bfd=False))
needs_frr = pytest.mark.skipif(WHY is not None, reason=WHY or "")
GC3 = Path("/proc/sys/net/ipv4/neigh/default/gc_thresh3")


def start_and_kill(folder: Path, state: Path, kill_watchdog: bool) -> dict:
    """Start `twin verify --slice zone:1` (10 FRR instances), wait until its daemons run with their configs,
    then SIGKILL it (and its watchdog first, if asked). Returns its record and what was alive at the kill."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TWIN_VERIFY_STATE": str(state)}
    p = subprocess.Popen([sys.executable, "-m", "twin", "verify", str(folder), "--slice", "zone:1", "--no-bfd"], cwd=ROOT, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 300
    for line in p.stderr:
        if "waiting for convergence" in line or time.monotonic() > end:
            break
    rec = json.loads(next(f for f in state.glob("tw*.json")).read_text())
    assert rec["pid"] == p.pid
    seen = {"namespaces": namespaces_of(rec["prefix"]), "processes": processes_with(rec["workdirs"]), "gc_thresh3": int(GC3.read_text())}
    if kill_watchdog:
        os.kill(rec["watchdog"][0], signal.SIGKILL)
    p.send_signal(signal.SIGKILL)
    p.wait()
    return {**rec, "seen": seen}


def nothing_left(rec: dict, state: Path) -> bool:
    return not (namespaces_of(rec["prefix"]) or processes_with(rec["workdirs"]) or any(Path(w).exists() for w in rec["workdirs"])
                or (state / f"{rec['prefix']}.json").exists())


def others_running() -> bool:
    """Another engineer's verify (namespaces tw*) holds the kernel-wide sysctls up: then they stay up."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return any(line.startswith("tw") for line in out.splitlines())


@pytest.mark.root
@pytest.mark.slow
@needs_frr
@pytest.mark.parametrize("kill_watchdog", [False, True], ids=["watchdog", "cleanup-command"])
def test_kill_9_leaves_nothing(lab, tmp_path, kill_watchdog):
    """Slow: brings 10 FRR instances up each time (~20 s). With the watchdog alive it removes everything
    within 20 s; killed too, the namespaces and daemons stay until `twin verify --cleanup` removes them."""
    state = tmp_path / "state"
    base = int(GC3.read_text())
    rec = start_and_kill(lab / "lab", state, kill_watchdog)
    assert len(rec["seen"]["namespaces"]) == 10 + 4 and len(rec["seen"]["processes"]) >= 20  # zebra + bgpd per switch
    assert rec["seen"]["gc_thresh3"] >= 4096
    if kill_watchdog:
        time.sleep(3)
        assert namespaces_of(rec["prefix"]) and processes_with(rec["workdirs"])  # nobody cleaned up
        r = twin_cli("verify", "--cleanup", "--json", env={"TWIN_VERIFY_STATE": str(state)})
        assert r.returncode == 0, r.stderr
        removed = {x["run"]: x for x in unwrap(r.stdout)["removed"]}[rec["prefix"]]
        assert removed["namespaces"] == 14 and removed["processes"] >= 20 and removed["workdirs"] == 1
    end = time.monotonic() + 20
    while not nothing_left(rec, state) and time.monotonic() < end:
        time.sleep(0.2)
    assert nothing_left(rec, state)
    if not others_running():
        assert int(GC3.read_text()) == base


IB_WHY = missing_binaries()


@pytest.mark.slow
@pytest.mark.skipif(IB_WHY is not None, reason=IB_WHY or "")
def test_kill_9_of_an_infiniband_run_leaves_nothing(built, tmp_path):
    """Slow: starts ibsim on lab-ib (~5 s). Killed once ibsim runs: ibsim dies with it, the watchdog removes
    the work folder and the record, and the fake sysfs of the preload library is not left in the caller's folder."""
    state = tmp_path / "state"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TWIN_VERIFY_STATE": str(state)}
    p = subprocess.Popen([sys.executable, "-m", "twin", "verify", str(built("lab-ib"))], cwd=cwd, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 120
    rec = None
    while time.monotonic() < end:
        files = list(state.glob("twib*.json")) if state.exists() else []
        rec = json.loads(files[0].read_text()) if files else None
        if rec and processes_with(rec["workdirs"]):
            break
        time.sleep(0.05)
    assert rec and rec["pid"] == p.pid and processes_with(rec["workdirs"]), "ibsim never started"
    p.send_signal(signal.SIGKILL)
    p.wait()
    end = time.monotonic() + 20
    while not nothing_left(rec, state) and time.monotonic() < end:
        time.sleep(0.1)
    assert nothing_left(rec, state) and list(cwd.iterdir()) == []
