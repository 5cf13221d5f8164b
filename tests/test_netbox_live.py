"""The NetBox hand-off in a real NetBox (tests/netbox_server.py: PyPI's netbox on PostgreSQL and Redis).

- lab-2zone's and lab-ib's import sets load whole through NetBox's own bulk-import pages, one after the
  other into the same NetBox: every row of every file accepted;
- NetBox's cable trace from every GPU NIC ends at the switch port the cabling plan names;
- ``twin netbox push`` agrees with the files (a push after the import changes nothing), creates a third
  site whose twin names collide with lab-2zone's, changes only what a changed spec changes, never
  touches an object twin did not make, and refuses an unknown URL or a refused token with exit 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from conftest import ROOT, SITES, compiled, unwrap
from netbox_load import load_all

from twin.emit.netbox_objects import device_name, import_set, nic_end

pytestmark = [pytest.mark.netbox, pytest.mark.slow]
# `twin netbox push` needs pynetbox, the tests' own REST calls requests (pynetbox's dependency): without
# them the module is skipped, so no NetBox is started for it
pytest.importorskip("pynetbox", reason="pynetbox is not installed (a test extra: pip install -e '.[test]')")
requests = pytest.importorskip("requests", reason="requests is not installed (it comes with pynetbox, a test extra: pip install -e '.[test]')")
SITE_LISTS = {"dcim.location": "/api/dcim/locations/", "dcim.rack": "/api/dcim/racks/", "dcim.device": "/api/dcim/devices/",
              "dcim.interface": "/api/dcim/interfaces/", "dcim.cable": "/api/dcim/cables/"}


def twin_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "twin", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)


def push(netbox, spec, token: str | None = None, url: str | None = None, process: bool = False) -> tuple[int, dict, str]:
    """``twin netbox push --json`` with the token in $TWIN_NETBOX_TOKEN (never on the command line): in this
    process through the CLI's own entry point (typer's runner: the same command, arguments, environment,
    exit code and output streams, without a Python start-up and import per push), or with ``process`` in
    a real ``python -m twin`` (test_unreachable_netbox_and_refused_tokens_exit_2 runs its pushes so)."""
    env = {"TWIN_NETBOX_TOKEN": token or netbox.token}
    if process:
        p = twin_cli("netbox", "push", str(spec), "--url", url or netbox.url, "--json", env=env)
        code, out, err = p.returncode, p.stdout, p.stderr
    else:
        from typer.testing import CliRunner

        from twin.cli.app import app

        r = CliRunner().invoke(app, ["netbox", "push", str(spec), "--url", url or netbox.url, "--json"], env=env)
        assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
        code, out, err = r.exit_code, r.stdout, r.stderr
    assert (token or netbox.token) not in out + err
    return code, unwrap(out) if out.strip() else {}, err


def site_counts(netbox, site: str) -> dict[str, int]:
    out = {m: len(netbox.api_all(path, site=site)) for m, path in SITE_LISTS.items()}
    out["dcim.site"] = len(netbox.api_all("/api/dcim/sites/", name=site))
    return out


@pytest.fixture(scope="module")
def loaded(netbox):
    """Both lab sites, every file through NetBox's bulk-import page (tests/netbox_load.py): {(site, file):
    (rows sent, ok, errors)}; loaded ahead in the background when the session's NetBox came up."""
    from conftest import WARM

    if WARM and WARM[0].loaded is not None:
        return WARM[0].loaded
    if WARM and WARM[0].load_error is not None:
        raise RuntimeError("loading the import sets in the background failed") from WARM[0].load_error
    return load_all(netbox)


def test_import_sets_load_whole(loaded, netbox):
    refused = {k: v[2][:5] for k, v in loaded.items() if not v[1]}
    assert not refused, refused
    for site in ("lab-2zone", "lab-ib"):
        tables = {t.model: t for t in import_set(compiled(site))}
        want = {m: len(tables[m].rows) for m in list(SITE_LISTS) + ["dcim.site"]}
        assert site_counts(netbox, site) == want
    # the second site's shared rows that were new were accepted; those it shares were already there
    assert loaded[("lab-ib", "06-device-types")][0] == 1  # qm9700; grand-teton-h100 came with lab-2zone
    assert loaded[("lab-ib", "01-tags")][0] == 0


@pytest.mark.parametrize("site", ["lab-2zone", "lab-ib"])
def test_trace_from_every_gpu_nic_ends_at_the_planned_port(loaded, netbox, site):
    design = compiled(site)
    g = design.fabric.graph
    planned = {}  # (server, nicN) -> (switch, port), from the cabling plan
    for lk in design.fabric.cables():
        if g.nodes[lk.a]["role"] == "nic":
            server, nic = nic_end(g, lk.a, lk.a_port)
            planned[(device_name(site, server), nic)] = (device_name(site, lk.b), lk.b_port)
    assert len(planned) == design.spec.gpus == 128
    ids = {(i["device"]["name"], i["name"]): i["id"] for i in netbox.api_all("/api/dcim/interfaces/", site=site)}

    def far_end(nic):
        trace = requests.get(f"{netbox.url}/api/dcim/interfaces/{ids[nic]}/trace/", headers=netbox.headers, timeout=60).json()
        far = trace[-1][2]
        assert len(far) == 1, (nic, trace)
        return nic, (far[0]["device"]["name"], far[0]["name"])

    # 128 read-only traces, four at a time (runserver answers each request in its own thread): the database
    # round trips of one overlap another's Python
    with ThreadPoolExecutor(4) as pool:
        ends = dict(pool.map(far_end, sorted(planned)))
    assert ends == planned


def test_push_after_the_import_changes_nothing(loaded, netbox):
    """The files and the REST push describe the same NetBox objects, field for field."""
    for site in ("lab-2zone", "lab-ib"):
        code, js, err = push(netbox, SITES / f"{site}.yaml")
        assert code == 0, err
        assert js["changes"] == 0, js
        assert sum(js["unchanged"].values()) == sum(len(t.rows) for t in import_set(compiled(site)))


def mini(tmp_path, racks_per_zone: int, description: str) -> object:
    """A third AI-zone site whose twin names (atsw-01, lab1-z1-r001-rtsw, ...) are lab-2zone's too. One CTSW
    per zone (each RTSW's 4 uplinks to it) instead of lab-2zone's 4: what the push tests claim (names that
    collide, only what changed is written, a person's objects are left alone) does not depend on the
    fabric's size, and NetBox writes ~50 ms of its own CPU per interface: 416 interfaces and 44 cables
    at one rack per zone instead of 800 and 80."""
    doc = yaml.safe_load((SITES / "lab-2zone.yaml").read_text())
    doc.update(name="lab-mini", description=description, workloads=[])
    doc["fabric"]["racks_per_zone"] = racks_per_zone
    doc["fabric"]["ctsw"]["count"] = 1
    doc["fabric"]["rtsw"]["uplinks"] = 4
    path = tmp_path / f"lab-mini-{racks_per_zone}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def expected_changes(old, new) -> tuple[Counter, Counter, Counter]:
    """created, updated, deleted per model, from the two import sets by natural key (site objects only)."""
    from twin.netbox.push import key_of

    created, updated, deleted = Counter(), Counter(), Counter()
    olds = {t.model: {key_of(t.model, r): r for r in t.records()} for t in import_set(old)}
    for t in import_set(new):
        if t.shared:
            continue
        now = {key_of(t.model, r): r for r in t.records()}
        before = olds[t.model]
        created[t.model] = len(now.keys() - before.keys())
        deleted[t.model] = len(before.keys() - now.keys())
        updated[t.model] = sum(1 for k in now.keys() & before.keys() if now[k] != before[k])
    return +created, +updated, +deleted


def test_push_creates_updates_and_deletes_only_what_changed(loaded, netbox, tmp_path):
    import twin

    one, two = mini(tmp_path, 1, "a small lab"), mini(tmp_path, 2, "a small lab, grown")
    d1, d2 = twin.load(one), twin.load(two)
    shared_names = set(d1.fabric.graph.nodes) & set(compiled("lab-2zone").fabric.graph.nodes)
    assert {"atsw-01", "lab1-z1-r001-rtsw"} <= shared_names
    code, js, err = push(netbox, one)
    assert code == 0, err
    assert js["created"] == {t.model: len(t.rows) for t in import_set(d1) if not t.shared}
    assert site_counts(netbox, "lab-2zone")["dcim.device"] == 34  # lab-2zone's devices untouched
    code, js, err = push(netbox, one)
    assert (code, js["changes"]) == (0, 0), err

    # an object a person made, inside the site: never changed or deleted; one in the design's way: refused
    site_id = netbox.api_all("/api/dcim/sites/", name="lab-mini")[0]["id"]
    some_device = netbox.api_all("/api/dcim/devices/", site="lab-mini")[0]
    mine = requests.post(f"{netbox.url}/api/dcim/devices/", headers=netbox.headers, timeout=60, json={
        "name": "lab-mini-console", "site": site_id, "role": some_device["role"]["id"],
        "device_type": some_device["device_type"]["id"], "status": "active"}).json()
    blocker = requests.post(f"{netbox.url}/api/dcim/devices/", headers=netbox.headers, timeout=60, json={
        "name": device_name("lab-mini", "lab1-z1-r002-s1"), "site": site_id, "role": some_device["role"]["id"],
        "device_type": some_device["device_type"]["id"], "status": "active"}).json()
    before = site_counts(netbox, "lab-mini")
    code, js, err = push(netbox, two)
    assert code == 2 and "lab-mini-lab1-z1-r002-s1" in js["error"] and "nothing written" in js["error"], (code, js, err)
    assert site_counts(netbox, "lab-mini") == before
    requests.delete(f"{netbox.url}/api/dcim/devices/{blocker['id']}/", headers=netbox.headers, timeout=60).raise_for_status()

    created, updated, deleted = expected_changes(d1, d2)
    assert created["dcim.device"] == 6 and created["dcim.rack"] == 2 and not deleted.get("dcim.device")
    code, js, err = push(netbox, two)
    assert code == 0, err
    assert (Counter(js["created"]), Counter(js["updated"]), Counter(js["deleted"])) == (created, updated, deleted)
    code, js, err = push(netbox, two)
    assert (code, js["changes"]) == (0, 0), err
    names = {o["name"] for o in netbox.api_all("/api/dcim/devices/", site="lab-mini")}
    assert names == {r["name"] for r in import_set(d2)[7].records()} | {"lab-mini-console"}

    created, updated, deleted = expected_changes(d2, d1)  # and back: what was added goes, nothing else
    code, js, err = push(netbox, one)
    assert code == 0, err
    assert (Counter(js["created"]), Counter(js["updated"]), Counter(js["deleted"])) == (created, updated, deleted)
    assert deleted["dcim.device"] == 6
    assert any(o["id"] == mine["id"] for o in netbox.api_all("/api/dcim/devices/", site="lab-mini"))


def test_unreachable_netbox_and_refused_tokens_exit_2(loaded, netbox, tmp_path):
    from netbox_server import free_port

    spec = SITES / "lab-2zone.yaml"
    code, js, _ = push(netbox, spec, url=f"http://127.0.0.1:{free_port()}", process=True)
    assert code == 2 and "does not answer" in js["error"] and "nothing written" in js["error"]
    code, js, _ = push(netbox, spec, token="nbt_bogus1234.0123456789abcdef0123456789abcdef01234567", process=True)
    assert code == 2 and "refused the token" in js["error"]
    # a token that may read but not write: refused at the first write, and the message says what was written
    r = requests.post(f"{netbox.url}/api/users/tokens/", headers=netbox.headers, timeout=60,
                      json={"user": netbox.api_all("/api/users/users/")[0]["id"], "version": 1, "write_enabled": False})
    r.raise_for_status()
    read_only = r.json()["token"]
    before = site_counts(netbox, "lab-mini")
    code, js, _ = push(netbox, mini(tmp_path, 2, "changed again"), token=read_only, process=True)
    assert code == 2 and "refused a write" in js["error"] and "Written before that: nothing" in js["error"], js
    assert site_counts(netbox, "lab-mini") == before
