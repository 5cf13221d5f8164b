"""`twin diff` reads a built folder as untrusted input (issue 25): any tampering of a generated folder ends
in exit 0/1 with a review, or exit 2 with one located line; never a traceback, and never a read of a file
outside the two folders.

lab-2zone is built once per session (the ``built`` fixture); each example copies it, tampers with the copy
(values of manifest.json, review.json and design.json swapped for other types, deleted, huge, NaN or
unicode; files truncated, deleted, made huge, replaced by symlinks out; manifest paths climbing out with
`../` or absolute) and diffs it both ways against the original, in-process, with an audit hook recording
every file opened.
"""

from __future__ import annotations

import copy
import hashlib
import io
import itertools
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from twin.cli.diff import run_diff

SECRET = "TOP-SECRET-0f4c2e"  # in a file beside the folders: it must never be read or shown
JSON_FILES = ["manifest.json", "review.json", "design.json"]
OPENED: list[str] = []
CASES = itertools.count()
WATCH: list[Path] = []  # the root below which opens are recorded (the test's temporary folder)


def _audit(event, args):
    if event == "open" and WATCH and isinstance(args[0], (str, bytes, os.PathLike)):
        p = os.fsdecode(args[0])
        if p.startswith(str(WATCH[0])):
            OPENED.append(p)


sys.addaudithook(_audit)


@pytest.fixture(scope="module")
def lab(built, tmp_path_factory):
    """The built folder copied under one root with a secret file beside it."""
    root = tmp_path_factory.mktemp("tamper")
    shutil.copytree(built("lab-2zone"), root / "lab")
    (root / "secret.txt").write_text(SECRET)
    return root


def diff(old: Path, new: Path, as_json: bool = False) -> tuple[int, str, str]:
    """run_diff in-process on plain consoles: (exit code, stdout, stderr)."""
    o, e = io.StringIO(), io.StringIO()
    out, err = (Console(file=f, width=200, no_color=True, highlight=False, soft_wrap=True) for f in (o, e))

    def emit(obj):
        o.write(json.dumps(obj, indent=1, sort_keys=True) + "\n")

    def diags(ds):
        for d in ds:
            e.write(d.format() + "\n")

    code = run_diff(old, new, None, as_json, None, None, out, err, diags, emit)
    return code, o.getvalue(), e.getvalue()


def rehash(folder: Path, rel: str) -> None:
    """Make manifest.json agree with ``rel`` as it now is (so the content checks, not the hash, must catch it)."""
    m = json.loads((folder / "manifest.json").read_text())
    data = (folder / rel).read_bytes()
    for a in m["artifacts"]:
        if a["path"] == rel:
            a.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (folder / "manifest.json").write_text(json.dumps(m))


def json_paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from json_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:6]):
            yield from json_paths(v, prefix + (i,))


junk = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["../secret.txt", "/etc/passwd", "lab/../../secret.txt", "../../" * 8 + "etc/shadow", "configs/../../secret.txt",
                     "[bold]x[/", "a\nb", "\x1b[31mred", "\u202e\u0000", "ok.md", "0" * 64, "f" * 64, "", "."]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
OP = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(JSON_FILES), st.integers(min_value=0, max_value=10**6), junk, st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(JSON_FILES), st.integers(min_value=0, max_value=10**6), st.none(), st.booleans()),
    st.tuples(st.just("truncate"), st.sampled_from(JSON_FILES + ["report.md", "configs/frr/atsw-01.conf"]),
              st.integers(min_value=0, max_value=10**6), st.none(), st.booleans()),
    st.tuples(st.just("bytes"), st.sampled_from(JSON_FILES + ["report.md"]), st.integers(min_value=0, max_value=10**6),
              st.binary(min_size=1, max_size=8), st.booleans()),
    st.tuples(st.just("remove"), st.sampled_from(JSON_FILES + ["report.md", "configs/frr/topology.json"]), st.just(0), st.none(), st.just(False)),
    st.tuples(st.just("huge"), st.sampled_from(JSON_FILES + ["report.md"]), st.just(0), st.sampled_from([65 * 2**20, 2**31]), st.booleans()),
    st.tuples(st.just("symlink"), st.sampled_from(JSON_FILES + ["report.md", "configs"]), st.just(0),
              st.sampled_from(["../secret.txt", "/etc/passwd", "..", "/"]), st.just(False)),
    st.tuples(st.just("deep"), st.sampled_from(JSON_FILES), st.just(0), st.sampled_from([70, 5_000, 200_000]), st.booleans()),
)


def own(path: Path) -> None:
    """Give ``path`` its own inode before it is edited (the case folder hard-links the original's files)."""
    if path.is_file() and not path.is_symlink() and path.stat().st_nlink > 1:
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)


def clone(src: Path, dst: Path) -> None:
    """A copy of ``src`` made of hard links (fast); :func:`tamper` breaks a link before it edits."""
    shutil.copytree(src, dst, symlinks=True, copy_function=os.link)


def tamper(folder: Path, op: tuple) -> None:
    kind, rel, at, value, fix = op
    path = folder / rel
    # An earlier op may have made this path, or a folder above it, a link out of the case (to /etc/passwd,
    # to /): writing or deleting through it would edit the machine's files. Only the link itself is touched.
    if not path.parent.resolve().is_relative_to(folder.resolve()) or (path.is_symlink() and kind not in ("remove", "symlink")):
        raise ValueError("an earlier op made it a link out of the case: the tamper would write through it")
    if path.is_file() and path.stat().st_size > 2**24 and kind not in ("remove", "symlink", "huge"):
        raise ValueError("an earlier op made it huge: reading it back would only slow the test")
    own(path)
    own(folder / "manifest.json")
    if kind in ("set", "delete"):
        doc = json.loads(path.read_text())
        paths = [p for p in json_paths(doc) if p]
        target = paths[at % len(paths)]
        node = doc
        for k in target[:-1]:
            node = node[k]
        if kind == "set":
            node[target[-1]] = value
        else:
            del node[target[-1]]
        path.write_text(json.dumps(doc, allow_nan=True))
    elif kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: at % max(len(data), 1)])
    elif kind == "bytes":
        data = path.read_bytes()
        i = at % max(len(data), 1)
        path.write_bytes(data[:i] + value + data[i + len(value):])
    elif kind == "remove":
        path.unlink()
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(value)  # sparse: big on paper, nothing written
        if fix and rel != "manifest.json":  # the manifest agrees on the size, with another sha256 (hashing 2 GiB is slow)
            m = json.loads((folder / "manifest.json").read_text())
            for a in m["artifacts"]:
                if a["path"] == rel:
                    a.update(bytes=value, sha256="0" * 64)
            (folder / "manifest.json").write_text(json.dumps(m))
        return
    elif kind == "symlink":
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        path.symlink_to(value)
    elif kind == "deep":
        path.write_text("[" * value + "]" * value)
    if fix and rel != "manifest.json" and path.is_file() and not path.is_symlink():
        rehash(folder, rel)


def check(code: int, out: str, err: str, folders: tuple[Path, Path]) -> None:
    assert code in (0, 1, 2), (code, out, err)
    assert SECRET not in out + err and "Traceback" not in err and "\x1b" not in out + err
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert any(lines[0].startswith(str(f)) for f in folders), lines[0]  # located: the file (and line or JSON path)
    outside = [p for p in OPENED if not any(Path(p).resolve().is_relative_to(f.resolve()) for f in folders)]
    assert not outside, outside


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OP, min_size=1, max_size=3), json_out=st.booleans())
def test_any_tampering_is_a_review_or_one_located_line(lab, tmp_path, ops, json_out):
    """60 tampered copies (hard links but for the edited files), each diffed both ways: ~2 s on an idle machine."""
    work = tmp_path / f"case{next(CASES)}"  # (removing each case's folder costs more than the case)
    clone(lab / "lab", work)
    for op in ops:
        try:
            tamper(work, op)
        except (OSError, ValueError, KeyError, IndexError, TypeError, RecursionError):
            continue  # an earlier op removed or replaced what this one edits
    for pair in ((work, lab / "lab"), (lab / "lab", work)):
        OPENED.clear()
        WATCH[:] = [tmp_path.parent.parent]
        try:
            code, out, err = diff(*pair, as_json=json_out)
        finally:
            WATCH.clear()
        if json_out and code == 2:
            doc = json.loads(out)
            assert doc["status"] == "invalid" and not err
            out, err = "", doc["error"]
        check(code, out, err, pair)


KNOWN = [  # (tampering, what the one line says); each a tampering the battery found giving a traceback or worse
    (("truncate", "manifest.json", 500, None, False), "manifest.json:"),
    (("set", "manifest.json", 0, None, False), "artifacts"),
    (("remove", "report.md", 0, None, False), "report.md: listed in manifest.json but missing"),
    (("huge", "review.json", 0, 2**31, False), "review.json: 2,147,483,648 bytes, manifest.json records"),
    (("huge", "review.json", 0, 2**31, True), "review.json: 2,147,483,648 bytes, more than the 67,108,864 bytes twin reads"),
    (("huge", "design.json", 0, 2**31, True), "design.json: more than the 67,108,864 bytes twin reads"),
    (("symlink", "report.md", 0, "../secret.txt", False), "report.md: a symlink leads outside"),
    (("symlink", "configs", 0, "/", False), "configs/frr/atsw-01.conf: a symlink leads outside"),
    (("deep", "review.json", 0, 200_000, True), "review.json: JSON nested too deeply"),
    (("deep", "design.json", 0, 70, True), "design.json: JSON nested deeper than 64 levels"),
    (("bytes", "review.json", 3, b"\xff\xfe", True), "review.json: not UTF-8 (byte 3)"),
]


@pytest.mark.parametrize("op, says", KNOWN, ids=[f"{k[0]}-{k[1]}" for k, _ in KNOWN])
def test_known_tamperings(lab, tmp_path, op, says):
    work = tmp_path / "case"
    clone(lab / "lab", work)
    tamper(work, op)
    code, out, err = diff(work, lab / "lab")
    assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, err


@pytest.mark.parametrize("escape", ["../secret.txt", "/etc/passwd", "configs/../../secret.txt", "../../../../../../../etc/shadow"])
def test_manifest_path_climbing_out_reads_nothing_outside(lab, tmp_path, escape):
    """A manifest entry naming a file outside (with that file's real sha256 and size, so only the path
    check stands between it and a read) is one located line; the file is never opened."""
    work = tmp_path / "case"
    clone(lab / "lab", work)
    own(work / "manifest.json")
    m = json.loads((work / "manifest.json").read_text())
    secret = (lab / "secret.txt").read_bytes()
    m["artifacts"][0] = {"path": escape, "sha256": hashlib.sha256(secret).hexdigest(), "bytes": len(secret)}
    (work / "manifest.json").write_text(json.dumps(m))
    OPENED.clear()
    WATCH[:] = [lab]
    try:
        code, out, err = diff(work, lab / "lab")
    finally:
        WATCH.clear()
    assert code == 2 and "artifacts[0].path" in err and "leaves the folder" in err and SECRET not in out + err
    assert not [p for p in OPENED if "secret" in p]


def test_a_huge_changed_artifact_is_named_not_read(lab, tmp_path):
    """A changed artifact over 64 MiB (a sparse 2 GiB report.md the manifest agrees with) is listed as
    changed, too large to count lines, and never opened: exit 1 in seconds, no memory spent on it."""
    work = tmp_path / "case"
    clone(lab / "lab", work)
    own(work / "manifest.json")
    (work / "report.md").unlink()
    with open(work / "report.md", "wb") as f:
        f.truncate(2**31)
    m = json.loads((work / "manifest.json").read_text())
    for a in m["artifacts"]:
        if a["path"] == "report.md":
            a.update(bytes=2**31, sha256="0" * 64)
    (work / "manifest.json").write_text(json.dumps(m))
    OPENED.clear()
    WATCH[:] = [lab]
    try:
        code, out, err = diff(work, lab / "lab")
    finally:
        WATCH.clear()
    assert code == 1 and "~ report.md (too large to count lines)" in out and not err
    assert not [p for p in OPENED if p.endswith("report.md")]


def test_an_untampered_copy_is_no_change(lab, tmp_path):
    work = tmp_path / "case"
    clone(lab / "lab", work)
    assert diff(work, lab / "lab")[0] == 0
    # a type swap the manifest agrees with: review.json's first figure's value as a list
    own(work / "review.json")
    own(work / "manifest.json")
    doc = json.loads((work / "review.json").read_text())
    bad = copy.deepcopy(doc)
    bad["figures"][0]["value"] = [1, 2]
    (work / "review.json").write_text(json.dumps(bad))
    rehash(work, "review.json")
    code, _, err = diff(work, lab / "lab")
    assert code == 2 and "review.json: figures[0].value: expected a number, text, a truth value or null, got list [1, 2]" in err
