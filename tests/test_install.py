"""twin installed from its wheel is the whole tool: built, installed into a fresh virtualenv and run from
outside the checkout, it rebuilds the committed ``generated/lab-2zone`` byte for byte. And the README's
first command, run in a clean virtualenv (no system site-packages, no test extras, no compiler), installs
twin from PyPI's wheels and builds ``sites/lab-2zone.yaml``.

The editable install the rest of the suite runs from finds ``templates/`` and ``schemas/`` beside the
package; a wheel must carry them inside it (``pyproject.toml`` maps them to ``twin/templates`` and
``twin/schemas``). Nothing here writes into the checkout: the wheel is built from a copy of it.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest
from conftest import unwrap
from golden import differences, files_under

ROOT = Path(__file__).resolve().parents[1]
MAPPED = {"twin.templates": "templates", "twin.schemas": "schemas"}
# Not part of a source tree, or rewritten by builds: never copied into the build folder.
IGNORED = (".git", "generated", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", ".venv*")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def run(*args, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    res = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
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


def source_copy(dest: Path) -> Path:
    """A copy of the checkout's source tree (no git, no build output but the committed generated/lab-2zone,
    which tests read): builds and installs write into it, never into the checkout."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(*IGNORED))
    shutil.copytree(ROOT / "generated" / "lab-2zone", dest / "generated" / "lab-2zone")
    return dest


def clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH (it would put a checkout's twin first) or site overrides."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


@pytest.mark.slow
def test_wheel_install_rebuilds_lab_2zone(tmp_path):
    src = source_copy(tmp_path / "src")
    env = clean_env()

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
    diff = differences(files_under(tmp_path / "out"), files_under(ROOT / "generated" / "lab-2zone"))
    assert not diff, f"built from the wheel, the build differs from generated/lab-2zone:\n{diff}"

    # The schema the wheel ships is the one its models produce; without a checkout there is nowhere
    # to write by default, so `twin schema` asks for -o (exit 2) instead of writing into site-packages.
    run(twin, "schema", "--check", cwd=work, env=env)
    refused = subprocess.run([str(twin), "schema"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "-o PATH" in refused.stderr
    assert not any(work.iterdir()), "twin wrote into the working directory"


def quick_start() -> tuple[list[str], list[str]]:
    """The README's first command (the first line of the Quick start's code block), split at ``&&``
    into the install and the build."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("\n## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    first = block.splitlines()[0].split("#", 1)[0]
    install, build = (shlex.split(part) for part in first.split("&&"))
    return install, build


def test_readme_first_command_installs_without_test_extras_then_builds():
    install, build = quick_start()
    assert install[:2] == ["pip", "install"] and build[:2] == ["twin", "build"] and build[2].startswith("sites/")
    targets = [a for a in install[2:] if not a.startswith("-")]
    assert targets == ["."], f"the first command must install the checkout without extras (no [test]: it compiles libyang): {install}"


def test_readme_command_table_lists_every_command_once():
    """README's command table is one table (no blank line inside), with a row per CLI command and
    subcommand (`twin netbox push`), none twice, and `python -m twin`."""
    import re

    import typer

    from twin.cli.app import app

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.split("\n## Commands", 1)[1].split("| command | what it does |", 1)[1].splitlines()[1:]
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines))
    after = "\n".join(lines[len(table):]).split("\n## ", 1)[0]
    assert "| `twin " not in after and "| `python -m twin" not in after, "a row after the table's end (a blank line inside it?)"
    rows = [m.group(1) for line in table if (m := re.match(r"\| `twin ([a-z][a-z-]*(?: [a-z][a-z-]*)*)", line))]
    group = typer.main.get_command(app)
    commands = []
    for name, cmd in group.commands.items():
        commands += [f"{name} {sub}" for sub in cmd.commands] if hasattr(cmd, "commands") else [name]
    assert sorted(rows) == sorted(commands) and len(rows) == len(set(rows))
    assert any(line.startswith("| `python -m twin") for line in table)


def index_problem() -> str | None:
    """Why pip's package index cannot be reached from here (None when it can)."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/")
    try:
        with urllib.request.urlopen(f"{index}/pip/", timeout=15) as r:
            r.read(1)
    except (OSError, ValueError) as e:
        return f"the package index {index} is unreachable ({e}): the README's install needs it"
    return None


# Import names whose distribution is named otherwise; every other import is its distribution's name.
DISTRIBUTION = {"yaml": "pyyaml", "jinja2": "jinja2", "pydantic_core": "pydantic-core"}
# What a code path needs without importing it by name: distributed's Security.temporary() (the sweep's
# private TLS cluster) makes its key and certificate with cryptography, which distributed does not require.
NEEDED_UNIMPORTED = {"cryptography": ("twin/sweep/cluster.py", "Security.temporary()")}


def declared(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower().replace("_", "-") for r in requirements}


def third_party_imports() -> dict[str, set[str]]:
    """Top-level modules twin's code imports that are neither the standard library nor twin, with the files."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "twin").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "twin":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_import_is_a_declared_dependency():
    """A plain install (the README's first command) gets only pyproject's dependencies: every module twin
    imports must be one of them, or of the extra whose command uses it (`twin netbox push`); and what a
    code path needs unimported (cryptography for the sweep's TLS) is declared beside them."""
    project = pyproject()["project"]
    core = declared(project["dependencies"])
    netbox = declared(project["optional-dependencies"]["netbox"])
    missing = []
    for module, files in sorted(third_party_imports().items()):
        dist = DISTRIBUTION.get(module, module).lower().replace("_", "-")
        if dist in core:
            continue
        if dist in netbox and all("netbox" in f for f in files):
            continue
        missing.append(f"{module} ({', '.join(sorted(files))})")
    assert not missing, f"imported but not declared in pyproject's dependencies: {missing}"
    for dist, (file, use) in NEEDED_UNIMPORTED.items():
        assert use in (ROOT / file).read_text(encoding="utf-8"), f"{file} no longer uses {use}: is {dist} still needed?"
        assert dist in core, f"{file} needs {dist} for {use}, and it is not a dependency"
    assert {"pyyaml", "jinja2", "pydantic-core", "distributed", "cryptography"} <= core  # the map above is not dead


def doc_pages() -> list[Path]:
    """The README, the getting-started page and the how-to pages in name order: the commands a user follows
    step by step (the concept and reference pages show commands on files of the reader's own, such as
    ``s.yaml``; tests/test_docs.py checks those parse)."""
    return [ROOT / "README.md", ROOT / "docs" / "getting-started.md", *sorted((ROOT / "docs" / "howto").glob("*.md"))]


def readme_commands() -> list[tuple[str, str]]:
    """Every twin command in the README's and the docs' bash and untagged code blocks, and the ``$ `` lines
    of their console blocks (``file:line``, command), a line's ``a && b`` as two, comments dropped."""
    found, lang = [], None
    for page in doc_pages():
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                lang = None if lang is not None else line[3:].strip()
                continue
            if lang not in ("", "bash", "console") or (lang == "console" and not line.startswith("$ ")):
                continue
            text = re.split(r"\s#", line.strip().removeprefix("$ "))[0]
            where = f"{page.relative_to(ROOT)}:{n}"
            found += [(where, part.strip()) for part in text.split("&&") if part.strip().startswith("twin ")]
    return found


# README commands the clean venv cannot run, and why: they need what only an operator has.
NOT_RUNNABLE = {
    "twin netbox push": "needs a NetBox server and its token (tests/test_netbox_live.py pushes into a real one)",
    "--scheduler tls://10.0.0.5": "needs an operator's Dask scheduler and the certificates it issued",
}


def runnable(command: str, tmp: Path) -> tuple[list[str] | None, str]:
    """The README command as the test runs it (``/tmp/`` inside the test's folder, ``[--opt]`` given),
    or None and why it cannot run here."""
    for key, why in NOT_RUNNABLE.items():
        if key in command:
            return None, why
    args = shlex.split(re.sub(r"\[([^\]]*)\]", r"\1", command).replace("/tmp/", f"{tmp}/"))
    if args[1] == "verify" and not shutil.which("ibsim"):
        return None, "needs ibsim and OpenSM (Debian ibsim-utils, opensm), not installed on this machine"
    return args, ""


def neighbour_inputs(src: Path, command: list[str]) -> None:
    """The inputs a README command reads that the reader makes on their cluster: LLDP tables (a few
    devices' worth: a partial collection is checked for what it covers), ibnetdiscover's output, an
    edited spec, a second build to compare."""
    sys.path.insert(0, str(ROOT / "tests"))
    from asbuilt_synth import collection, planned_wiring, topology

    from twin.asbuilt.plan import load

    if command[1] == "as-built":
        built = src / command[2]
        plan, problems = load(built)
        assert plan is not None, problems
        target = src / command[3]
        if command[3].endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
            devices = sorted(plan.devices)[:6]
            for name, data in collection(plan, planned_wiring(plan), only=set(devices)).items():
                (target / name).write_bytes(data)
        else:
            target.write_text(topology(plan, (built / "model" / "topology.net").read_text(encoding="utf-8"), planned_wiring(plan)))
    if command[1] == "diff":
        for side in command[2:4]:
            if side.startswith("edited/"):
                (src / "edited").mkdir(exist_ok=True)
                spec = (src / "sites" / Path(side).name).read_text(encoding="utf-8")
                assert "pue: 1.3" in spec
                (src / side).write_text(spec.replace("pue: 1.3", "pue: 1.4"), encoding="utf-8")


@pytest.mark.slow
def test_readme_install_in_clean_venv_without_compiler(tmp_path):
    """The README's first command in a virtualenv of its own (no system site-packages, so every dependency
    comes from the index; pip's cache keeps reruns fast), with no compiler anywhere (CC and CXX are
    /bin/false, PATH holds only the venv): it installs twin and its dependencies from wheels alone, without
    the test extras, and every twin command the README shows then runs to the end (the sweep on its private
    TLS cluster of 2 local workers included), save those that need an operator's server; a command shown on
    several pages runs once, where it is first shown."""
    install, build = quick_start()
    if why := index_problem():
        pytest.skip(why)
    src = source_copy(tmp_path / "src")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path, env=clean_env())
    env = {**clean_env(), "PATH": str(venv / "bin"), "CC": "/bin/false", "CXX": "/bin/false", "VIRTUAL_ENV": str(venv)}
    for cc in ("cc", "gcc", "c++", "g++", "clang"):
        assert shutil.which(cc, path=env["PATH"]) is None, f"{cc} is on the venv's PATH"

    run(venv / "bin" / install[0], *install[1:], cwd=src, env=env, timeout=1200)
    py = venv / "bin" / "python"
    probe = "import importlib.util as u, twin; print(twin.__file__); print(*[m for m in ('pytest', 'libyang', 'pynetbox') if u.find_spec(m)])"
    where, extras = run(py, "-c", probe, cwd=tmp_path, env=env).stdout.splitlines()
    assert Path(where).resolve().is_relative_to(src.resolve()), f"twin imported from {where}, not the editable copy"
    assert extras == "", f"the first command installed test extras: {extras}"

    out = tmp_path / "out"
    run(venv / "bin" / build[0], build[1], "sites/lab-2zone.yaml", "-o", out, "-q", cwd=src, env=env, timeout=600)
    built, committed = files_under(out), files_under(ROOT / "generated" / "lab-2zone")
    assert sorted(built) == sorted(committed)
    manifest = json.loads(built["manifest.json"])
    assert manifest["site"] == "lab-2zone" and {a["path"] for a in manifest["artifacts"]} == set(built) - {"manifest.json"}
    assert json.loads(built["design.json"])["derived"]["gpus"] == 128

    # Every command the README shows, in its order (a later one reads what an earlier one built).
    run(venv / "bin" / "twin", "build", "sites/lab-2zone.yaml", "-o", tmp_path / "lab-new", "-q", cwd=src, env=env, timeout=600)
    ran, skipped = [], []
    env = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}  # verify runs ibsim and OpenSM where installed
    first: dict[str, str] = {}  # command -> the line that showed it first
    for line, command in readme_commands():
        args, why = runnable(command, tmp_path)
        if args is None:
            skipped.append(f"{line}: {command}: {why}")
            continue
        if command in first:  # shown again on another page (the same build, validate, diff): it ran, once
            skipped.append(f"{line}: {command}: the same command as {first[command]}, run there")
            continue
        first[command] = line
        if args[1] in ("as-built", "verify") and args[2].startswith("generated/") and not (src / args[2]).exists():
            # a page that reads a built example says to build it first; the page that shows that build may come later
            run(venv / "bin" / "twin", "build", f"sites/{Path(args[2]).name}.yaml", "-q", cwd=src, env=env, timeout=600)
        neighbour_inputs(src, args)
        res = subprocess.run([str(venv / "bin" / "twin"), *args[1:]], cwd=src, env=env, capture_output=True, text=True, timeout=900)
        said = res.stdout + res.stderr
        # 0; 4: a verdict fails, the output written all the same; diff's 1: the sides differ (README "Commands"); never a traceback
        allowed = (0, 1) if args[1] == "diff" else (0, 4)
        assert res.returncode in allowed and "Traceback" not in said, f"{line}: {command} exited {res.returncode}\n{said[-3000:]}"
        ran.append(command)
    sweeps = [c for c in ran if c.startswith("twin sweep") and "--workers 2" in c]
    assert sweeps, "the README's sweep on 2 local workers did not run"
    results = (src / "generated" / "sweep-meta-oversubscription" / "results.csv").read_text(encoding="utf-8").splitlines()
    assert len(results) == 1 + 5 and all(",ok," in row for row in results[1:]), results
    assert len(ran) >= 20, (ran, skipped)
    print("\n".join(skipped))

    # Without the test extras (pytest alone added), collection runs through: the tests of a missing
    # optional package skip, saying why, instead of stopping it.
    run(venv / "bin" / "pip", "install", "-q", "pytest", cwd=tmp_path, env=env, timeout=600)
    collected = run(py, "-m", "pytest", "--collect-only", "-q", "-rs", "-p", "no:cacheprovider", cwd=src, env=env, timeout=600).stdout
    for missing in ("libyang", "hypothesis", "pynetbox"):
        assert f"{missing} is not installed" in collected, collected[-3000:]


def test_readme_commands_are_all_run_or_said_why():
    """The list the clean venv test runs is the README's: each command found, runnable here or named in
    NOT_RUNNABLE (or verify without ibsim), and the sweep on 2 local workers among them."""
    commands = [c for _, c in readme_commands()]
    assert commands[0] == "twin build sites/meta-24k-roce.yaml" and "twin verify generated/lab-ib" in commands
    assert "twin sweep sweeps/meta-oversubscription.yaml --root . --workers 2" in commands
    assert "twin as-built generated/lab-ib fabric.txt --json" in commands
    for key in NOT_RUNNABLE:
        assert any(key in c for c in commands), f"NOT_RUNNABLE names {key!r}, which the README no longer shows"
    args, _ = runnable("twin simulate s.yaml --scenario x.yaml [--json] [--plot-dir out/]", Path("/t"))
    assert args == ["twin", "simulate", "s.yaml", "--scenario", "x.yaml", "--json", "--plot-dir", "out/"]
    assert runnable("twin diff a /tmp/lab-new", Path("/t"))[0][-1] == "/t/lab-new"


def test_schema_command_writes_checks_and_prints(tmp_path):
    """From a checkout: -o writes the schema and the reference beside it, --check finds a stale file
    and names it, --print gives the same schema text, and the default checks the checkout's schemas/."""
    from twin.schema import schema_text

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "twin", "schema", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)

    target = tmp_path / "s" / "site.schema.json"
    wrote = cli("-o", target, "--json")
    assert wrote.returncode == 0 and unwrap(wrote.stdout)["status"] == "written"
    assert target.read_text(encoding="utf-8") == schema_text() and (target.parent / "reference.md").is_file()
    assert cli("-o", target, "--check").returncode == 0
    (target.parent / "reference.md").write_text("stale\n", encoding="utf-8")
    stale = cli("-o", target, "--check")
    assert stale.returncode == 1 and "reference.md is stale" in stale.stderr and f"-o {target}" in stale.stderr
    assert cli("--print").stdout == schema_text()
    folder = cli("-o", target.parent)  # a folder is refused in one line, naming the file path it takes
    assert folder.returncode == 2 and f"expected -o {target.parent / 'twin-site.schema.json'}" in folder.stderr, folder.stderr
    checkout = cli("--check", "--json")  # no -o, run from elsewhere: the checkout's own schemas/
    assert checkout.returncode == 0 and str(ROOT / "schemas" / "reference.md") in checkout.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]

