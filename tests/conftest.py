"""Shared fixtures: paths to the repo and the example sites; designs compiled once per session."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITES = ROOT / "sites"


@lru_cache(maxsize=None)
def compiled(name: str):
    """The Design of sites/<name>.yaml, compiled once per test session (designs are frozen)."""
    import twin

    return twin.load(SITES / f"{name}.yaml")


@lru_cache(maxsize=None)
def switch_configs(name: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The RoCE (FRR, SONiC, EOS) and the InfiniBand (OpenSM) config files of sites/<name>.yaml, rendered
    once per session."""
    from twin.emit import configs, configs_ib

    d = compiled(name)
    return configs.emit(d), configs_ib.emit(d)


def emitted(name: str) -> dict[str, bytes]:
    """Every switch config file of sites/<name>.yaml (FRR, SONiC, EOS, OpenSM), rendered once per session."""
    roce, ib = switch_configs(name)
    return {**roce, **ib}


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def lab():
    return compiled("lab-2zone")


@pytest.fixture(scope="session")
def meta24k():
    return compiled("meta-24k-roce")


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """``built(name)``: the folder ``twin build sites/<name>.yaml`` writes, built once per test session
    into a temporary folder. It is ``twin.build.build`` from the session's compiled design and switch
    configs (a big site is compiled and its configs rendered once, however many tests read them);
    tests/test_build.py holds it byte-identical to ``build`` itself on lab-2zone."""
    from twin.build import MANIFEST, manifest, run_twins, write_atomically
    from twin.emit import configs, configs_ib, emit_all

    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            design, (roce, ib) = compiled(name), switch_configs(name)
            files = emit_all(design, run_twins(design), {configs.emit: lambda _d: roce, configs_ib.emit: lambda _d: ib})
            files[MANIFEST] = manifest(design, files)
            cache[name] = tmp_path_factory.mktemp(f"built-{name}") / name
            write_atomically(cache[name], files)
        return cache[name]

    return get


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


def pytest_collection_modifyitems(session, config, items):
    """The tests that need NetBox run last (in their order): its preparation, minutes on a fresh machine,
    then overlaps the whole rest of the suite instead of keeping the suite waiting in the middle."""
    items.sort(key=lambda item: bool(NETBOX_FIXTURES & set(getattr(item, "fixturenames", ()))))


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    wanted = {f for item in session.items for f in getattr(item, "fixturenames", ())}
    if NETBOX_FIXTURES & wanted:
        import netbox_warm

        WARM.append(netbox_warm.Warm(want_server="netbox" in wanted))


def pytest_sessionfinish(session, exitstatus):
    for w in WARM:
        w.close()


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
    in the background from the end of collection (tests/netbox_warm.py)."""
    import netbox_server

    if WARM and WARM[0].want_server:
        w = WARM[0]
        w.wait()
        if w.server is None:
            raise RuntimeError(f"starting NetBox failed (log: {netbox_server.CACHE / 'warm.log'})") from w.error
        yield w.server
        return
    with netbox_server.NetBoxServer() as nb:
        yield nb
