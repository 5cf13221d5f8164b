"""Shared fixtures: paths to the repo and the example sites; each example built once per session (its design,
switch configs and folder shared by every test that reads them)."""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITES = ROOT / "sites"
# Sites no test builds: gigawatt-campus (a million GPUs) takes minutes and most of the machine; its build is
# measured by hand (bench/bench_gigawatt.py) and its counts are proven on a scaled-down copy (tests/test_gigawatt.py).
BY_HAND = frozenset({"gigawatt-campus"})


def example_sites() -> list[Path]:
    """The example sites (sites/*.yaml) the suite builds: all but :data:`BY_HAND`."""
    return [p for p in sorted(SITES.glob("*.yaml")) if p.stem not in BY_HAND]


BUILDS: list[Path] = []  # the session's folder of example builds, made at first use, removed at the end
RUNNING: list = []  # the test being set up or run


def build_of(name: str):
    """``twin build sites/<name>.yaml`` (twin.build.build), once per test session, into a temporary
    folder: its BuildResult (``.design``, ``.out_dir``). Every example's design, switch configs and
    output folder are read from this one build, so a big site is compiled and rendered once. Only the
    lab sites are the fast tier's: a test not marked slow that reads another fails, saying so."""
    test = RUNNING[0] if RUNNING else None
    if not fast_site(name) and test is not None and test.get_closest_marker("slow") is None:
        pytest.fail(f"{test.nodeid} reads {name} but is not marked slow (the fast tier, -m 'not slow', builds only the lab-* sites)", pytrace=False)
    return _build(name)


@lru_cache(maxsize=None)
def _build(name: str):
    from twin.build import build

    if not BUILDS:
        BUILDS.append(Path(tempfile.mkdtemp(prefix="twin-test-builds-")))
    return build(SITES / f"{name}.yaml", BUILDS[0] / name)


@lru_cache(maxsize=None)
def built_with_scenario(name: str, scenario: str) -> Path:
    """The folder ``twin build sites/<name>.yaml --scenario scenarios/<scenario>.yaml`` wrote, once per test
    session (the twins run once for every test that reads the folder; read it, do not change it)."""
    from twin.build import build

    if not BUILDS:
        BUILDS.append(Path(tempfile.mkdtemp(prefix="twin-test-builds-")))
    out = BUILDS[0] / f"{name}+{scenario}"
    build(SITES / f"{name}.yaml", out, scenario=ROOT / "scenarios" / f"{scenario}.yaml")
    return out


def compiled(name: str):
    """The Design of sites/<name>.yaml, compiled once per test session (designs are frozen)."""
    return build_of(name).design


def emitted(name: str) -> dict[str, bytes]:
    """Every switch config file of sites/<name>.yaml (FRR, SONiC, EOS, OpenSM: ``configs/...``, and the
    InfiniBand topology ``model/topology.net`` the OpenSM configs go with), as its build wrote them."""
    return _configs(build_of(name).out_dir)


@lru_cache(maxsize=None)
def _configs(out: Path) -> dict[str, bytes]:
    files = sorted((out / "configs").rglob("*")) + sorted((out / "model").glob("topology.net"))
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in files if p.is_file()}


def fast_site(name: str) -> bool:
    """The lab sites (every fabric family, small) are the fast tier's; the full-size ones (Meta's, Selene:
    a minute or more to compile, render and check) the slow tier's."""
    return name.startswith("lab-")


def tiered(sites):
    """Site names as test parameters, the full-size sites marked slow (:func:`fast_site`)."""
    return [s if fast_site(s) else pytest.param(s, marks=pytest.mark.slow) for s in sites]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def lab():
    return compiled("lab-2zone")


@pytest.fixture(scope="session")
def meta24k():
    """meta-24k-roce compiled; a test that reads it is in the slow tier (see pytest_collection_modifyitems)."""
    return compiled("meta-24k-roce")


@pytest.fixture(scope="session")
def built():
    """``built(name)``: the folder ``twin build sites/<name>.yaml`` wrote, once per test session (read it,
    do not change it)."""
    return lambda name: build_of(name).out_dir


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session (tests/browser.py); skipped where chromium is absent."""
    from browser import Browser, chromium

    if chromium() is None:
        pytest.skip("chromium is not installed (`apt-get install chromium`; .ci/run installs it)")
    with Browser() as b:
        yield b


WARM: list = []  # the session's tests/netbox_warm.Warm, started when collection selects a NetBox test
NETBOX_FIXTURES = {"netbox_package", "netbox"}


# Set in a pytest-xdist worker (`.ci/run` runs the suite on two): the NetBox tests are then one unit of work,
# sent first, and every other test file runs whole on one worker.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")


def needs_netbox(item) -> bool:
    return bool(NETBOX_FIXTURES & set(getattr(item, "fixturenames", ())))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(session, config, items):
    """Where the tests that need NetBox run. In one process they run last (in their order): NetBox's
    preparation, minutes on a fresh machine, then overlaps the whole rest of the suite in a background
    thread (:func:`pytest_collection_finish`) instead of keeping the suite waiting in the middle. Under
    pytest-xdist (``--dist loadgroup``) they are one group, sent first: one worker prepares NetBox and runs
    them while the other takes the rest; every other test is grouped by its file, so a file's module
    fixtures are made once. Tests that read the ``meta24k`` fixture are marked slow."""
    items.sort(key=lambda item: needs_netbox(item) != bool(XDIST_WORKER))
    if XDIST_WORKER:
        for item in items:
            item.add_marker(pytest.mark.xdist_group("netbox" if needs_netbox(item) else item.nodeid.split("::", 1)[0]))
    for item in items:  # whatever reads the compiled meta-24k-roce, directly or through another fixture
        if "meta24k" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    RUNNING[:] = [item]


def pytest_collection_finish(session):
    if session.config.option.collectonly or XDIST_WORKER:  # every worker collects: the NetBox worker prepares it itself
        return
    wanted = {f for item in session.items for f in getattr(item, "fixturenames", ())}
    if NETBOX_FIXTURES & wanted:
        import netbox_warm

        WARM.append(netbox_warm.Warm(want_server="netbox" in wanted, want_loaded="loaded" in wanted))


def pytest_sessionfinish(session, exitstatus):
    for w in WARM:
        w.close()
    for folder in BUILDS:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def netbox_package() -> Path:
    """site-packages of the NetBox the tests run (made once under ~/.cache/twin-netbox): dcim/, extras/ ..."""
    import netbox_server

    if WARM:
        w = WARM[0]
        w.wait()
        if w.skip:
            pytest.skip(w.skip)
        if w.package is None:
            raise RuntimeError(f"preparing NetBox failed (log: {netbox_server.CACHE / 'warm.log'})") from w.error
        return w.package
    why = netbox_server.why_not()
    if why:
        pytest.skip(why)
    netbox_server.ensure_venv()
    return netbox_server.package_dir()


@pytest.fixture(scope="session")
def netbox(netbox_package):
    """A real NetBox on loopback for the whole session (tests/netbox_server.py), stopped at the end; started
    in the background from the end of collection, the lab sites' import sets loaded into it there too when
    test_netbox_live is selected (tests/netbox_warm.py, tests/netbox_load.py)."""
    import netbox_server

    if WARM and WARM[0].want_server:
        w = WARM[0]
        w.join()  # the server, and the import sets it loads in the background when a test wants them
        if w.server is None:
            raise RuntimeError(f"starting NetBox failed (log: {netbox_server.CACHE / 'warm.log'})") from w.error
        yield w.server
        return
    with netbox_server.NetBoxServer() as nb:
        yield nb


def twin_in_process(*args, env: dict | None = None):
    """``twin ARGS`` run in this process through the CLI's own entry point (typer's runner): its exit code,
    stdout and stderr as a CompletedProcess, without a Python start-up and the imports per call. An
    exception the CLI let escape (a traceback, in a real process) fails the test. Tests keep at least one
    real ``python -m twin`` run of each command (tests/test_envelope.py runs every command so)."""
    import subprocess

    from typer.testing import CliRunner

    from twin.cli.app import app

    argv = [str(a) for a in args]
    r = CliRunner().invoke(app, argv, env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"twin {' '.join(argv)} raised {r.exception!r} (a traceback in a real process)") from r.exception
    return subprocess.CompletedProcess(["twin", *argv], r.exit_code, r.stdout, r.stderr)


ENVELOPE = {"tool", "version", "command", "status", "units", "risks", "result"}


def unwrap(text: str) -> dict:
    """A command's ``--json`` (the envelope of twin/cli/envelope.py, checked here) as its document, with
    the envelope's ``status`` and ``risks`` beside the document's own fields."""
    import json

    env = json.loads(text)
    assert set(env) == ENVELOPE and env["tool"] == "twin", sorted(env)
    return {**env["result"], "status": env["status"], "risks": env["risks"]}
