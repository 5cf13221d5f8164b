"""ARCHITECTURE.md stays true: its rooms table names every module of twin/ exactly once, every path it
names exists, imports run up the table (a room imports only from rooms above it), and no two packages
import each other.

The import graph is read from the source with ``ast`` (every ``import``, at module level or inside a
function, ``TYPE_CHECKING`` blocks included), so a lazy import cannot hide an arrow.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TWIN = ROOT / "twin"
DOC = ROOT / "ARCHITECTURE.md"


def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module and package of twin/."""
    out = {}
    for p in sorted(TWIN.rglob("*.py")):
        parts = p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def room_of(path: Path) -> str:
    """The room a file belongs to: its folder, or itself for a module directly in twin/."""
    rel = path.relative_to(ROOT)
    if rel.parent == Path("twin") and rel.name != "__init__.py":
        return rel.as_posix()
    if rel.parent == Path("twin"):
        return "twin/__init__.py"
    return rel.parent.as_posix() + "/"


def imports(path: Path, mods: dict[str, Path]) -> set[str]:
    """The twin modules ``path`` imports (``from a import b`` counts a.b when b is a module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (write the absolute path of the room)"
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""]
        for n in names:
            while n and n not in mods:
                n = n.rpartition(".")[0]
            if n.startswith("twin"):
                out.add(n)
    return out


def rooms_table() -> list[tuple[str, list[str]]]:
    """(room, modules named) per row of the "Rooms, in dependency order" table, in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Rooms, in dependency order", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        room = re.fullmatch(r"`([^`]+)`", cells[0]).group(1)
        rows.append((room, re.findall(r"`([A-Za-z0-9_]+\.py)`", cells[2])))
    return rows


def has_code(init: Path) -> bool:
    """An __init__.py with more than a docstring (it must then be named like a module)."""
    body = ast.parse(init.read_text(encoding="utf-8")).body
    return any(not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in body)


def test_rooms_table_names_every_module_once():
    rows = rooms_table()
    assert len(rows) > 20, "ARCHITECTURE.md's rooms table is missing"
    rooms = [r for r, _ in rows]
    assert len(rooms) == len(set(rooms)), f"a room is named twice: {sorted({r for r in rooms if rooms.count(r) > 1})}"
    named: dict[Path, int] = defaultdict(int)
    for room, mods in rows:
        path = ROOT / room
        assert path.exists(), f"ARCHITECTURE.md names {room}, which does not exist"
        if room.endswith("/"):
            for m in mods:
                assert (path / m).is_file(), f"ARCHITECTURE.md names {room}{m}, which does not exist"
                named[path / m] += 1
        else:
            assert not mods, f"{room} is a module; its row names no modules"
            named[path] += 1
    wanted = {p for p in TWIN.rglob("*.py") if p.name != "__init__.py" or has_code(p) or p.parent == TWIN}
    missing = sorted(p.relative_to(ROOT).as_posix() for p in wanted if named.get(p, 0) == 0)
    twice = sorted(p.relative_to(ROOT).as_posix() for p, n in named.items() if n > 1)
    assert not missing, f"modules ARCHITECTURE.md does not name: {missing}"
    assert not twice, f"modules ARCHITECTURE.md names twice: {twice}"
    folders = {room_of(p) for p in TWIN.rglob("*.py")}
    assert folders <= set(rooms), f"rooms with no row: {sorted(folders - set(rooms))}"


def test_imports_run_up_the_rooms_table():
    rank = {room: i for i, (room, _) in enumerate(rooms_table())}
    mods = modules()
    against = []
    for name, path in mods.items():
        src = room_of(path)
        for target in imports(path, mods):
            dst = room_of(mods[target])
            if dst != src and rank[dst] > rank[src]:
                against.append(f"{name} ({src}) imports {target} ({dst}), a room below it in ARCHITECTURE.md")
    assert not against, "\n".join(sorted(against))


def test_no_import_cycle_between_packages():
    mods = modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for path in mods.values():
        for target in imports(path, mods):
            a, b = room_of(path), room_of(mods[target])
            if a != b:
                edges[a].add(b)
    cycles = sorted(f"{a} <-> {b}" for a in edges for b in edges[a] if a < b and a in edges.get(b, ()))
    assert not cycles, cycles


@pytest.mark.parametrize("doc", ["ARCHITECTURE.md", "README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))])
def test_named_twin_paths_exist(doc):
    """Every `twin/...` path a document names exists (a renamed module cannot leave a stale pointer)."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    stale = sorted({p for p in re.findall(r"`(twin/[A-Za-z0-9_/]+(?:\.py|/))`", text) if not (ROOT / p).exists()})
    assert not stale, f"{doc} names paths that do not exist: {stale}"


def test_the_checker_sees_a_backward_import(tmp_path):
    """The import reader catches an import inside a function, where a lazy import would hide it."""
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from twin.build import build\n    return build\n")
    assert imports(f, modules()) == {"twin.build"}


def test_the_repository_top_level_is_the_design_cards_layout():
    """What git tracks at the top of the repository: the design card's folders and files, nothing else (a stray
    archive, a profiler's wheel, a scratch notebook committed by accident fails here)."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    top = {line.split("/", 1)[0] for line in r.stdout.splitlines() if line}
    card = {"pyproject.toml", "README.md", "ARCHITECTURE.md", "mkdocs.yml", ".gitignore", ".ci", "twin", "schemas", "templates",
            "sites", "tests", "generated", "bench", "scenarios", "sweeps", "docs"}
    assert top <= card, sorted(top - card)
    assert {"twin", "tests", "sites", "pyproject.toml", "README.md"} <= top
