"""Only twin's own leftovers are removed (twin/leftovers.py, issue 38).

Known answers: beside `-o out`, a `.out.tmp-*` folder carrying twin's mark and an `.out.old-*` folder that is
a complete twin output (every file as its manifest lists it) are removed by the next build; a folder of the
user's, one whose mark is forged, a twin output edited since, a file, and a symlink (even to a marked folder)
of the same names are left byte for byte, each named in one warning line. The mark is in the build's sibling
folder while it is written and never in the output.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import twin_in_process, unwrap

from twin.leftovers import MARK, MARK_TEXT, LeftoverWarning, clean_leftovers, leftovers, marked, sibling
from twin.output import claimed, ownership_problem, write_atomically, write_claimed_with

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "sites" / "lab-2zone.yaml"


def snapshot(path: Path) -> dict[str, str]:
    """``path`` and everything under it: files by sha256, links by target, folders as 'dir' (links not followed)."""
    entries = [path, *sorted(path.rglob("*"))] if path.is_dir() and not path.is_symlink() else [path]
    out = {}
    for p in entries:
        rel = p.relative_to(path.parent).as_posix()
        out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else ("dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def plant(tmp_path: Path, twin_output: Path) -> tuple[Path, list[Path], list[Path]]:
    """``tmp_path/out`` (a twin output) and beside it what killed builds and a user may have left: those
    twin made (a marked half-written folder, the previous output aside, an empty folder) and foreign ones."""
    out = tmp_path / "out"
    shutil.copytree(twin_output, out)
    half = sibling(out)
    (half / "configs").mkdir()
    (half / "configs" / "leaf1.conf").write_text("router bgp 65001\n")
    aside = tmp_path / ".out.old-k1ll3d"
    shutil.copytree(twin_output, aside)
    empty = tmp_path / ".out.tmp-3mpty"
    empty.mkdir()
    cut = tmp_path / ".out.tmp-cut"  # killed between creating the mark (O_EXCL) and writing its text
    (cut / "configs").mkdir(parents=True)
    (cut / MARK).write_bytes(b"")
    (cut / "configs" / "leaf1.conf").write_text("router bgp 65001\n")
    short = tmp_path / ".out.old-short"  # the previous output being discarded, killed inside the mark's write
    shutil.copytree(twin_output, short)
    (short / MARK).write_bytes(MARK_TEXT[:9])
    mine = tmp_path / ".out.tmp-mine"
    (mine / "notes").mkdir(parents=True)
    (mine / "notes" / "todo.txt").write_text("my own notes\n")
    forged = tmp_path / ".out.tmp-forged"
    forged.mkdir()
    (forged / MARK).write_bytes(b"not twin's mark\n")
    (forged / "data.csv").write_text("a,b\n1,2\n")
    edited = tmp_path / ".out.old-edited"
    shutil.copytree(twin_output, edited)
    (edited / "report.md").write_bytes((edited / "report.md").read_bytes() + b"my annotation\n")
    webapp = tmp_path / ".out.old-webapp"
    webapp.mkdir()
    (webapp / "manifest.json").write_text('{"name": "my app"}')
    a_file = tmp_path / ".out.tmp-file"
    a_file.write_text("a file of the user's\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = sibling(elsewhere / "x")  # a marked folder, but reached through a link
    link = tmp_path / ".out.tmp-link"
    link.symlink_to(target, target_is_directory=True)
    return out, [half, aside, empty, cut, short], [mine, forged, edited, webapp, a_file, link]


def test_only_what_twin_made_is_removed(tmp_path, built):
    lab = built("lab-2zone")
    out, ours, foreign = plant(tmp_path, lab)
    before = {p: snapshot(p) for p in foreign}
    target = Path(os.readlink(foreign[-1]))
    target_before = snapshot(target)
    assert marked(ours[0]) and not marked(foreign[1]) and not marked(foreign[-1])
    lines: list[str] = []
    kept = clean_leftovers(out, lines.append)
    assert kept == sorted(foreign) and leftovers(out) == sorted(foreign)
    assert not any(os.path.lexists(p) for p in ours)
    assert {p: snapshot(p) for p in foreign} == before and snapshot(target) == target_before and marked(target)
    assert len(lines) == len(foreign)
    for p, line in zip(sorted(foreign), lines):
        assert str(p) in line and "left as it is" in line and MARK in line
    assert ownership_problem(out) is None  # the output itself untouched
    with pytest.warns(LeftoverWarning) as caught:  # no warn callback: a Python warning each
        assert clean_leftovers(out) == sorted(foreign)
    assert [str(w.message) for w in caught] == lines


def test_the_previous_output_is_put_back_only_when_proved_twins(tmp_path, built):
    """With the output path empty (a kill between the fallback's two renames), an `.old-` folder is put
    back only when it is a complete twin output: an edited copy, though newer, is left beside it."""
    lab = built("lab-2zone")
    out = tmp_path / "out"
    shutil.copytree(lab, tmp_path / ".out.old-k1ll3d")
    edited = tmp_path / ".out.old-zzz"
    shutil.copytree(lab, edited)
    (edited / "report.md").write_text("mine now\n")
    os.utime(edited, (2e9, 2e9))  # the newest of the two
    lines: list[str] = []
    assert clean_leftovers(out, lines.append) == [edited]
    assert ownership_problem(out) is None and (out / "report.md").read_bytes() == (lab / "report.md").read_bytes()
    assert (edited / "report.md").read_text() == "mine now\n" and len(lines) == 1


def test_the_mark_is_in_the_folder_being_written_and_never_in_the_output(tmp_path, built):
    lab = built("lab-2zone")
    files = {p.relative_to(lab).as_posix(): p.read_bytes() for p in sorted(lab.rglob("*")) if p.is_file()}
    out = tmp_path / "out"
    write_atomically(out, files)
    seen = []

    def fill(folder: Path) -> None:
        seen.append((folder.name.startswith(".out.tmp-"), marked(folder), (folder / MARK).read_bytes() == MARK_TEXT))
        for rel, data in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)

    for same in (False, True):  # written and swapped; then the same output again, kept as it stands
        with claimed(out) as real:
            write_claimed_with(real, fill, expect_same=same)
        assert not (out / MARK).exists() and ownership_problem(out) is None
    assert seen == [(True, True, True)] * 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_build_cli_warns_and_keeps_a_foreign_leftover(tmp_path, built):
    """The real `twin build -o out -q` beside a user's `.out.tmp-mine` and a marked half-written folder:
    exit 0, the marked one gone, the user's untouched and named in one warning line on stderr (shown with
    -q). A rebuild with --json lists it under `leftovers_kept`."""
    lab = built("lab-2zone")
    out, ours, foreign = plant(tmp_path, lab)
    mine = foreign[0]
    before = snapshot(mine)
    r = subprocess.run([sys.executable, "-m", "twin", "build", str(SPEC), "-o", str(out), "-q"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    warned = [line for line in r.stderr.splitlines() if "warning:" in line]
    assert len(warned) == len(foreign) and any(str(mine) in line and "left as it is" in line for line in warned)
    assert not any(os.path.lexists(p) for p in ours) and snapshot(mine) == before
    assert ownership_problem(out) is None
    js = unwrap(twin_in_process("build", SPEC, "-o", out, "--json").stdout)
    kept = js["leftovers_kept"]
    assert len(kept) == len(foreign) and all(any(line.startswith(f"{p} is named like") for line in kept) for p in foreign)
