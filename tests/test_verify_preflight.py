"""twin verify checks its tools before it starts anything: each program it needs, hidden from PATH (or
from FRR's daemon directory) in turn, is a one-line message naming its Debian package and exit 2, while
a configuration that fails its check is exit 1."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from twin.verify import preflight
from twin.verify.roce import Topology

LAB = ROOT / "generated" / "lab-2zone"
ROCE = preflight.roce_needs(bfd=Topology.load(LAB).bfd)
IB = preflight.ib_needs()


def real(need: preflight.Need) -> str | None:
    if need.where == "frr":
        p = preflight.frr_lib() / need.program
        return str(p) if p.is_file() else None
    if need.where == "file":
        return need.program if Path(need.program).is_file() else None
    return shutil.which(need.program)


def toolbox(tmp_path: Path, needs: list[preflight.Need], hide: str | None) -> dict[str, str]:
    """An environment whose PATH and FRR directory hold every needed program (links to the real ones)
    except ``hide``; nothing else is on PATH."""
    missing = [n.program for n in needs if real(n) is None]
    if missing:
        pytest.skip(f"not installed here: {missing}")
    bin_dir, frr_dir = tmp_path / "bin", tmp_path / "frr"
    bin_dir.mkdir()
    frr_dir.mkdir()
    env = {**os.environ, "PATH": str(bin_dir), "TWIN_FRR_LIB": str(frr_dir), "PYTHONPATH": str(ROOT)}
    for n in needs:
        if n.program == hide:
            if n.where == "file":
                env["TWIN_UMAD2SIM"] = str(tmp_path / "absent" / Path(n.program).name)
            continue
        if n.where == "path":
            (bin_dir / n.program).symlink_to(real(n))
        elif n.where == "frr":
            (frr_dir / n.program).symlink_to(real(n))
    return env


def verify_cli(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.Popen([sys.executable, "-m", "twin", "verify", str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)
    out, err = proc.communicate(timeout=600)
    res = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    res.pid = proc.pid
    return res


def namespaces_of(pid: int) -> list[str]:
    """The network namespaces a verify run with this pid made (twin.verify.netns.new_prefix names them
    tw<pid><4 hex>-...); other runs' on this machine do not count."""
    ip = shutil.which("ip")
    names = subprocess.run([ip, "netns", "list"], capture_output=True, text=True).stdout.split() if ip else []
    return [n for n in names if re.match(rf"tw{pid % 100000}[0-9a-f]{{4}}-", n)]


@pytest.mark.parametrize("hidden", [n.program for n in ROCE])
def test_each_missing_roce_program_is_named_with_its_package(tmp_path, monkeypatch, hidden):
    env = toolbox(tmp_path, ROCE, hidden)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("TWIN_FRR_LIB", env["TWIN_FRR_LIB"])
    need = next(n for n in ROCE if n.program == hidden)
    why = preflight.check_roce(bfd=any(n.program == "bfdd" for n in ROCE))
    assert why is not None and hidden in why and f"Debian package {need.package}" in why, why


def test_a_missing_roce_program_is_exit_2_before_anything_starts(tmp_path):
    """Through the CLI (the other programs as above, in process): one line, exit 2, no namespace made."""
    hidden = ROCE[-1].program
    p = verify_cli(LAB, toolbox(tmp_path, ROCE, hidden))
    assert p.returncode == 2, p.stderr + p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and hidden in lines[0] and f"Debian package {ROCE[-1].package}" in lines[0], p.stderr
    assert "FAILED" not in p.stdout and namespaces_of(p.pid) == []  # nothing was started


@pytest.fixture(scope="module")
def lab_ib(built):
    """lab-ib as `twin build` wrote it, once per session (tests/conftest.py); read, never changed."""
    return built("lab-ib")


@pytest.mark.parametrize("hidden", [n.program for n in IB])
def test_each_missing_infiniband_program_is_named_with_its_package(tmp_path, monkeypatch, hidden):
    env = toolbox(tmp_path, IB, hidden)
    for var in ("PATH", "TWIN_FRR_LIB", "TWIN_UMAD2SIM"):
        if var in env:
            monkeypatch.setenv(var, env[var])
    need = next(n for n in preflight.ib_needs() if Path(n.program).name == Path(hidden).name)
    why = preflight.check_ib()
    assert why is not None and Path(hidden).name in why and f"apt-get install {need.package}" in why, why


def test_a_missing_infiniband_program_is_exit_2(tmp_path, lab_ib):
    hidden = IB[0].program
    p = verify_cli(lab_ib, toolbox(tmp_path, IB, hidden))
    assert p.returncode == 2, p.stderr + p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and hidden in lines[0] and f"apt-get install {IB[0].package}" in lines[0], p.stderr


def test_the_toolbox_is_complete(tmp_path, monkeypatch):
    """With nothing hidden the same environment passes the check: each case above fails for its one program."""
    env = toolbox(tmp_path, ROCE + IB, None)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("TWIN_FRR_LIB", env["TWIN_FRR_LIB"])
    assert preflight.missing_program(ROCE) is None and preflight.check_ib() is None


def test_not_root_is_a_permission_message(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "needs root" in preflight.roce_permissions()


@pytest.mark.skipif(preflight.check_ib() is not None, reason=preflight.check_ib() or "")
def test_a_failed_verification_is_exit_1(tmp_path, lab_ib):
    """Every tool present, the configuration wrong (leaves named as the fat tree's roots: OpenSM falls
    back to min-hop routing): that is the design's problem, exit 1."""
    folder = tmp_path / "lab-ib"
    shutil.copytree(lab_ib, folder)
    net = (folder / "model" / "topology.net").read_text()
    leaves = [line.split("=")[1] for line in net.splitlines() if line.startswith("switchguid=")][:2]
    (folder / "configs" / "opensm" / "root_guids.conf").write_text("\n".join(leaves) + "\n")
    p = verify_cli(folder, {**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 1 and "FAILED" in p.stdout, p.stdout + p.stderr
