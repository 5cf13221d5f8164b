"""Sweeps no one else can join, and sweep files that name only their own files.

Known answers: while the sweep's cluster runs, a client without its credentials cannot connect, so it
cannot submit work (the issue: another local user ran code as the sweep's user, root); nothing of the
sweep listens on 8787 and no listener answers HTTP; `site: /etc/shadow` or `../` is a located error
(the issue: /etc/shadow was copied into variants/NNN/site.yaml, mode 0644).
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import unwrap

from twin.lang.diagnostics import SpecError
from twin.sweep import engine
from twin.sweep.cluster import Remote, root_warning
from twin.sweep.load import load_sweep

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "sites" / "lab-2zone.yaml"


def listeners(client) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every listening TCP socket of this process and its children (the workers)."""
    me = psutil.Process()
    pids = {me.pid} | {p.pid for p in me.children(recursive=True)}
    return sorted((c.pid, c.laddr.ip, c.laddr.port) for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN
                  and c.pid in pids)


async def _handshake(address: str, args: dict) -> None:
    """What distributed.Client does first: open a comm to the scheduler and exchange a message."""
    from distributed.comm import connect

    comm = await connect(address, timeout=5, **args)
    try:
        await comm.write({"op": "identity"})
        await comm.read()
    finally:
        await comm.close()


def test_no_other_local_user_can_join_the_cluster():
    from distributed.security import Security

    before = {port for _, _, port in listeners(None)}
    client = engine.connect(None, 1)
    try:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [2, 2]).result(timeout=60) == 4  # the sweep itself can
        ours = [x for x in listeners(client) if x[2] not in before]
        assert len(ours) >= 3 and all(ip == "127.0.0.1" for _, ip, _ in ours), ours  # scheduler, nanny, worker
        assert 8787 not in {port for _, _, port in ours}
        for _, ip, port in ours:  # every listener speaks TLS only: plain HTTP gets no answer
            with socket.create_connection((ip, port), timeout=5) as s:
                s.sendall(b"GET / HTTP/1.0\r\n\r\n")
                try:
                    reply = s.recv(64)
                except OSError:
                    reply = b""
            assert not reply.startswith(b"HTTP/"), (port, reply)
        host, port = address[len("tls://"):].split(":")
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):  # TLS without a client certificate
            with socket.create_connection((host, int(port)), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
                tls.sendall(b"x" * 64)
                assert tls.recv(1) != b""
        for target, args in ((address, {}), (address, Security.temporary().get_connection_args("client")),
                             (address.replace("tls://", "tcp://"), {})):
            with pytest.raises((OSError, TimeoutError, TypeError)):  # never connected: nothing to submit with
                asyncio.run(_handshake(target, args))
    finally:
        engine.close_client(client)


def test_root_is_warned(tmp_path):
    """As root the CLI says so (on stderr, JSON untouched); here the sweep is fully cached, so no cluster starts."""
    assert (root_warning() is not None) == (os.geteuid() == 0)
    (tmp_path / "lab.yaml").write_bytes(LAB.read_bytes())
    p = tmp_path / "s.yaml"
    p.write_text("name: s\nsite: lab.yaml\nplacement: naive\naxes:\n  - path: fabric.atsw.oversubscription\n    values: [2]\n"
                 "figures: [gpus]\n")
    sw = load_sweep(p)
    out = tmp_path / "out"
    for v in engine.variants(sw):
        engine.write_cache(out, v.hash, {"status": "ok", "error": "", "figures": {"gpus": 128.0}})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "twin", "sweep", str(p), "-o", str(out), "--json"], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0 and unwrap(r.stdout)["rows"][0]["figures"] == {"gpus": 128.0}
    assert ("warning: twin sweep runs as root" in r.stderr) == (os.geteuid() == 0)


def sweep_in(folder: Path, site: str, scenario: str | None = None) -> Path:
    p = folder / "s.yaml"
    p.write_text(f"name: s\nsite: {site}\n" + (f"scenario: {scenario}\n" if scenario else "") +
                 "axes:\n  - path: fabric.atsw.oversubscription\n    values: [2]\n")
    return p


@pytest.mark.parametrize("site, words", [
    ("/etc/shadow", "an absolute path outside"),
    ("../lab.yaml", "'..' leads outside"),
    ("sub/../../lab.yaml", "'..' leads outside"),
    ("link.yaml", "'..' leads outside"),  # a symbolic link out of the folder counts where it leads
    ("lab.txt", "'lab.txt' is not a YAML file"),
])
def test_a_sweep_names_only_yaml_files_inside_its_folder(tmp_path, site, words):
    (tmp_path / "lab.yaml").write_bytes(LAB.read_bytes())
    (tmp_path / "lab.txt").write_bytes(LAB.read_bytes())
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "sub").mkdir()
    (inner / "link.yaml").symlink_to(tmp_path / "lab.yaml")
    p = sweep_in(inner if site != "lab.txt" else tmp_path, site)
    with pytest.raises(SpecError) as e:
        load_sweep(p)
    msg = e.value.diagnostics[0].format()
    assert msg.startswith(f"{p}:2:7: site:") and words in msg, msg
    assert not (p.parent / "variants").exists()


def test_root_widens_the_folder_and_the_scenario_follows_the_same_rule(tmp_path):
    (tmp_path / "sites").mkdir()
    (tmp_path / "sites" / "lab.yaml").write_bytes(LAB.read_bytes())
    (tmp_path / "sweeps").mkdir()
    p = sweep_in(tmp_path / "sweeps", "../sites/lab.yaml")
    with pytest.raises(SpecError):
        load_sweep(p)
    assert load_sweep(p, root=tmp_path).site_path == tmp_path / "sweeps" / ".." / "sites" / "lab.yaml"
    q = sweep_in(tmp_path / "sweeps", "../sites/lab.yaml", "../../scenario.yaml")
    with pytest.raises(SpecError) as e:
        load_sweep(q, root=tmp_path)
    assert e.value.diagnostics[0].format().startswith(f"{q}:3:11: scenario:") and "'..' leads outside" in e.value.diagnostics[0].message
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "twin", "sweep", str(p)], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert r.returncode == 2 and f"{p}:2:7: site: '..' leads outside" in r.stderr and "--root" in r.stderr


def test_variants_are_no_more_readable_than_their_site(tmp_path):
    site = tmp_path / "lab.yaml"
    site.write_bytes(LAB.read_bytes())
    site.chmod(0o600)
    sw = load_sweep(sweep_in(tmp_path, "lab.yaml"))
    old = os.umask(0o022)
    try:
        engine.write_variants(tmp_path / "out", engine.variants(sw), engine.source_mode(sw))
        assert (tmp_path / "out" / "variants" / "001" / "site.yaml").stat().st_mode & 0o777 == 0o600
        site.chmod(0o644)
        sw = load_sweep(sweep_in(tmp_path, "lab.yaml"))
        engine.write_variants(tmp_path / "out2", engine.variants(sw), engine.source_mode(sw))
        assert (tmp_path / "out2" / "variants" / "001" / "site.yaml").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)  # and the user's umask narrows it further
        engine.write_variants(tmp_path / "out3", engine.variants(sw), engine.source_mode(sw))
        assert (tmp_path / "out3" / "variants" / "001" / "site.yaml").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_labels_are_text_not_formulas(tmp_path):
    (tmp_path / "lab.yaml").write_bytes(LAB.read_bytes())
    p = tmp_path / "z.yaml"
    p.write_text("name: z\nsite: lab.yaml\naxes:\n  - zip:\n      fabric.atsw.oversubscription: [1, 2]\n    labels: [ok, '=1+2']\n")
    with pytest.raises(SpecError) as e:
        load_sweep(p)
    assert e.value.diagnostics[0].format().startswith(f"{p}:6:18: axes[0].labels[1]:") and "formula" in e.value.diagnostics[0].message


def test_the_dashboard_is_served_only_when_asked():
    """--dashboard ADDRESS brings Dask's HTTP server back at that address (and only then)."""
    import urllib.request

    with socket.socket() as s:  # a free port for it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = engine.connect(None, 1, dashboard=f"127.0.0.1:{port}")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            assert (r.status, r.read()) == (200, b"ok")
    finally:
        engine.close_client(client)


@pytest.mark.parametrize("remote, words", [
    (Remote("tcp://127.0.0.1:9"), "plain TCP lets anyone on the network run code as this user"),
    (Remote("127.0.0.1:9"), "plain TCP lets anyone on the network run code as this user"),
    (Remote("tls://127.0.0.1:9", Path("ca.pem")), "missing --tls-cert, --tls-key"),
    (Remote("tls://127.0.0.1:9", Path("/nonexistent/ca.pem"), Path("c.pem"), Path("k.pem")), "cannot read --tls-ca-file /nonexistent/ca.pem"),
    (Remote("ws://127.0.0.1:9"), "unknown protocol 'ws://'"),
])
def test_a_scheduler_is_reached_over_tls_or_by_a_stated_choice(remote, words):
    """An existing scheduler runs what the client submits and the client unpickles its answers, so plain
    TCP is refused unless --insecure, and tls:// needs the operator's CA, certificate and key; refused
    before any connection is tried."""
    with pytest.raises(engine.SchedulerError) as e:
        engine.connect(remote, None, timeout=1)
    assert words in str(e.value), str(e.value)
    assert Remote("tcp://127.0.0.1:9", insecure=True).problem() is None


@pytest.mark.parametrize("answer, why", [
    (None, "a NoneType, not a result"),
    ({"status": "pwned", "figures": {}}, "no known status"),
    ({"status": "ok", "error": ["x"], "figures": {}}, "an error that is not text"),
    ({"status": "ok", "figures": {"gpus": float("nan")}}, "figures that are not names and numbers"),
    ({"status": "ok", "figures": {"gpus": object()}}, "figures that are not names and numbers"),
    ({"status": "ok", "figures": {"g": 1}, "seconds": -1}, "a duration that is not a time"),
])
def test_a_workers_answer_that_is_not_a_result_is_an_error_row(answer, why):
    r = engine.checked(answer)
    assert r == {"status": "error", "error": f"the worker's answer is not a sweep result: {why}", "figures": {}}
    good = {"status": "ok", "error": "", "figures": {"gpus": 128, "label": "x"}, "seconds": 1.5, "extra": "dropped"}
    assert engine.checked(good) == {"status": "ok", "error": "", "figures": {"gpus": 128, "label": "x"}, "seconds": 1.5}


@pytest.mark.slow
def test_a_sweep_runs_on_a_tls_scheduler_with_the_operators_certificates(tmp_path):
    """Slow (a scheduler and a worker start, then the CLI builds one lab variant on them, ~20 s): with the
    operator's CA, certificate and key the sweep runs; with a certificate of another authority the
    scheduler refuses it, a located exit 2."""
    from distributed import LocalCluster
    from distributed.security import Security

    ours, theirs = Security.temporary(), Security.temporary()
    pem = {}
    for who, sec in (("ours", ours), ("theirs", theirs)):
        for k, v in (("ca", sec.tls_ca_file), ("cert", sec.tls_client_cert), ("key", sec.tls_client_key)):
            pem[who, k] = tmp_path / f"{who}-{k}.pem"
            pem[who, k].write_text(v)
    (tmp_path / "lab.yaml").write_bytes(LAB.read_bytes())
    p = tmp_path / "s.yaml"
    p.write_text("name: s\nsite: lab.yaml\nplacement: naive\naxes:\n  - path: fabric.atsw.oversubscription\n    values: [2]\n"
                 "figures: [gpus]\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", protocol="tls://", security=ours,
                      dashboard_address=None) as cluster:
        def sweep(who: str, out: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "twin", "sweep", str(p), "-o", str(tmp_path / out), "--json",
                                   "--scheduler", cluster.scheduler_address, "--connect-timeout", "5",
                                   "--tls-ca-file", str(pem[who, "ca"]), "--tls-cert", str(pem[who, "cert"]),
                                   "--tls-key", str(pem[who, "key"])], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
        r = sweep("ours", "ok")
        assert r.returncode == 0, r.stderr
        assert unwrap(r.stdout)["rows"][0]["figures"] == {"gpus": 128.0}
        r = sweep("theirs", "refused")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        answer = unwrap(r.stdout)
        assert answer["status"] == "invalid" and "cannot reach the Dask scheduler" in answer["error"], answer


def _worker_dir(dask_worker) -> str:
    return str(dask_worker.local_directory)


def test_the_scratch_space_is_a_private_folder_the_run_makes_and_removes(tmp_path, monkeypatch):
    """Issue 38: the workers used $TMPDIR/dask-scratch-space, which another local user can make first (a
    symbolic link to where they like). Now a fresh 0700 folder of the run's own, removed at the end."""
    import os
    import stat
    import tempfile

    planted, target = tmp_path / "dask-scratch-space", tmp_path / "chosen-by-another-user"
    target.mkdir()
    planted.symlink_to(target)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again, as a fresh process would
    client = engine.connect(None, 1)
    try:
        scratch = Path(client.cluster.twin_scratch)
        assert scratch.parent == tmp_path and scratch.name.startswith("twin-sweep-") and not scratch.is_symlink()
        assert stat.S_IMODE(os.stat(scratch).st_mode) == 0o700
        dirs = client.run(_worker_dir)
        assert dirs and all(Path(d).resolve().is_relative_to(scratch.resolve()) for d in dirs.values()), dirs
    finally:
        engine.close_client(client)
    assert not scratch.exists() and not any(target.iterdir())
