"""twin installed from its wheel is the whole tool: built, installed into a fresh virtualenv and run from
outside the checkout, it rebuilds the committed ``generated/lab-2zone`` byte for byte.

The editable install the rest of the suite runs from finds ``templates/`` and ``schemas/`` beside the
package; a wheel must carry them inside it (``pyproject.toml`` maps them to ``twin/templates`` and
``twin/schemas``). Nothing here writes into the checkout: the wheel is built from a copy of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"twin.templates": "templates", "twin.schemas": "schemas"}
# Not part of a source tree, or rewritten by builds: never copied into the build folder.
IGNORED = (".git", "generated", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", ".venv*")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def files_under(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def run(*args, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    res = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{' '.join(map(str, args))} exited {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res


def test_every_package_is_listed():
    """The package list is written by hand (mapped folders cannot be discovered): it must name every
    package directory under twin/, or the wheel silently lacks a subpackage."""
    tool = pyproject()["tool"]["setuptools"]
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "twin").rglob("__init__.py") if "__pycache__" not in p.parts
    }
    for package, folder in MAPPED.items():  # a mapped folder's subfolders are packages to setuptools too
        on_disk |= {package} | {f"{package}.{d.name}" for d in (ROOT / folder).iterdir() if d.is_dir() and d.name != "__pycache__"}
    assert sorted(tool["packages"]) == sorted(on_disk)
    assert tool["package-dir"] == MAPPED


@pytest.mark.slow
def test_wheel_install_rebuilds_lab_2zone(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*IGNORED))
    # A clean environment: no PYTHONPATH (it would put a checkout's twin first) and no site overrides.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"

    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp_path / "dist", src, cwd=tmp_path, env=env)
    (wheel,) = (tmp_path / "dist").glob("twin-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        shipped = set(zf.namelist())
    for package, folder in MAPPED.items():
        prefix = package.replace(".", "/")
        expected = {f"{prefix}/{rel}" for rel in files_under(ROOT / folder)}
        assert expected <= shipped, f"the wheel lacks {sorted(expected - shipped)}"

    # The venv reuses the installed dependencies (offline) but gets twin itself only from the wheel.
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv, cwd=tmp_path, env=env)
    py, twin = venv / "bin" / "python", venv / "bin" / "twin"
    run(py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed", wheel, cwd=tmp_path, env=env)

    work = tmp_path / "work"  # a cwd outside the checkout, so nothing resolves against it
    work.mkdir()
    where = run(py, "-c", "import twin; print(twin.__file__)", cwd=work, env=env).stdout.strip()
    assert Path(where).resolve().is_relative_to(venv.resolve()), f"twin imported from {where}, not the venv"

    run(twin, "build", ROOT / "sites" / "lab-2zone.yaml", "-o", tmp_path / "out", "-q", cwd=work, env=env)
    built, committed = files_under(tmp_path / "out"), files_under(ROOT / "generated" / "lab-2zone")
    assert sorted(built) == sorted(committed)
    differ = [rel for rel in committed if built[rel] != committed[rel]]
    assert not differ, f"built from the wheel, these differ from generated/lab-2zone: {differ}"

    # The schema the wheel ships is the one its models produce; without a checkout there is nowhere
    # to write by default, so `twin schema` asks for -o (exit 2) instead of writing into site-packages.
    run(twin, "schema", "--check", cwd=work, env=env)
    refused = subprocess.run([str(twin), "schema"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "-o PATH" in refused.stderr
    assert not any(work.iterdir()), "twin wrote into the working directory"


def test_schema_command_writes_checks_and_prints(tmp_path):
    """From a checkout: -o writes the schema and the reference beside it, --check finds a stale file
    and names it, --print gives the same schema text, and the default checks the checkout's schemas/."""
    from twin.schema import schema_text

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "twin", "schema", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)

    target = tmp_path / "s" / "site.schema.json"
    wrote = cli("-o", target, "--json")
    assert wrote.returncode == 0 and json.loads(wrote.stdout)["status"] == "written"
    assert target.read_text(encoding="utf-8") == schema_text() and (target.parent / "reference.md").is_file()
    assert cli("-o", target, "--check").returncode == 0
    (target.parent / "reference.md").write_text("stale\n", encoding="utf-8")
    stale = cli("-o", target, "--check")
    assert stale.returncode == 1 and "reference.md is stale" in stale.stderr and f"-o {target}" in stale.stderr
    assert cli("--print").stdout == schema_text()
    checkout = cli("--check", "--json")  # no -o, run from elsewhere: the checkout's own schemas/
    assert checkout.returncode == 0 and str(ROOT / "schemas" / "reference.md") in checkout.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]

