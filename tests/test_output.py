"""The output folder is twin's or it is left alone (twin/output.py, issue 25).

Known answers: `-o` onto a folder holding an unrelated manifest.json leaves every file in it untouched;
a SIGKILL at any instant of the swap leaves the complete previous or the complete new output at the
output path (and a reader polling the path never finds it missing); of two concurrent builds one wins
and the other says so in one line; disk full and a read-only file system are one line, exit 3, with the
previous output intact; a later build removes what a killed one left.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import unwrap

from twin.leftovers import MARK, leftovers, sibling
from twin.output import EXIT_WRITE, OutputError, claimed, exchange, ownership_problem, write_atomically

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "sites" / "lab-2zone.yaml"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def twin_cli(*args):
    return subprocess.run([sys.executable, "-m", "twin", *map(str, args)], cwd=ROOT, capture_output=True, text=True, env=ENV, timeout=600)


def tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: files by sha256, symlinks by target, folders as 'dir'."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else ("dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture(scope="module")
def outputs(built):
    """Two complete twin outputs as {path: bytes}: lab-2zone as built, and the same with report.md
    changed and its manifest updated to match (what a rebuild after an edit writes)."""
    folder = built("lab-2zone")
    a = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    b = dict(a)
    b["report.md"] = a["report.md"] + b"\nedited\n"
    m = json.loads(a["manifest.json"])
    for art in m["artifacts"]:
        if art["path"] == "report.md":
            art.update(sha256=hashlib.sha256(b["report.md"]).hexdigest(), bytes=len(b["report.md"]))
    b["manifest.json"] = json.dumps(m, indent=1, sort_keys=True).encode()
    return a, b


def files_hash(files: dict[str, bytes]) -> dict[str, str]:
    return {p: hashlib.sha256(d).hexdigest() for p, d in files.items()}


def replaced(out: Path, a: dict[str, bytes], b: dict[str, bytes], between, expect_same: bool = False) -> dict[str, int]:
    """``a`` written as ``out``, then replaced by ``b`` as a build does: b's files with their digests
    (linked from ``a`` where the bytes are a's), ``between(folder)`` asserted, then the manifest.
    Returns a's inodes."""
    from twin.output import write_claimed_with, write_parts

    write_atomically(out, a)
    inode = {p: (out / p).stat().st_ino for p in a}
    digests = {p: (hashlib.sha256(d).hexdigest(), len(d)) for p, d in b.items()}

    def fill(folder):
        write_parts(folder, [{p: d for p, d in b.items() if p != "manifest.json"}], digests)
        assert between(folder)
        write_parts(folder, [{"manifest.json": b["manifest.json"]}])

    with claimed(out) as real:
        write_claimed_with(real, fill, expect_same=expect_same)
    return inode


def test_unrelated_manifest_folder_left_untouched(tmp_path):
    """A web project that happens to hold a manifest.json: `twin build -o` refuses it (exit 2, one line,
    before compiling) and every file in it keeps its bytes and modification time."""
    proj = tmp_path / "webapp"
    (proj / "src").mkdir(parents=True)
    (proj / "manifest.json").write_text('{"name": "my app", "start_url": "/"}')
    (proj / "index.html").write_text("<h1>mine</h1>")
    (proj / "src" / "app.js").write_text("console.log(1)")
    before = tree(proj)
    mtimes = {p: p.stat().st_mtime_ns for p in proj.rglob("*")}
    r = twin_cli("build", SPEC, "-o", proj, "-q")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "is not twin output" in r.stderr and "not a twin manifest" in r.stderr
    assert tree(proj) == before and {p: p.stat().st_mtime_ns for p in proj.rglob("*")} == mtimes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["webapp"]  # no lock, tmp or old folder left beside it


def test_only_a_folder_twin_wrote_is_replaced(tmp_path, outputs):
    """A twin folder with anything twin did not write in it (a file added, an artifact edited, a symlink)
    is refused and untouched; as written, or emptied, it is replaced."""
    a, b = outputs
    out = tmp_path / "out"
    write_atomically(out, a)
    assert ownership_problem(out) is None
    cases = {
        "notes.txt (not in its manifest.json)": lambda: (out / "notes.txt").write_text("mine"),
        "report.md (changed since twin wrote it)": lambda: (out / "report.md").write_bytes(a["report.md"] + b"my note"),
        "link (not a regular file)": lambda: (out / "link").symlink_to("/etc"),
    }
    for why, spoil in cases.items():
        spoil()
        before = tree(out)
        with pytest.raises(OutputError) as e:
            write_atomically(out, b)
        assert why in str(e.value) and e.value.code == 2
        assert tree(out) == before
        for p in ("notes.txt", "link"):
            if (out / p).is_symlink() or (out / p).exists():
                (out / p).unlink()
        (out / "report.md").write_bytes(a["report.md"])
    assert ownership_problem(out) is None
    write_atomically(out, b)
    assert files_hash({p: (out / p).read_bytes() for p in b}) == files_hash(b) and set(tree(out)) >= set(b)
    empty = tmp_path / "empty"
    empty.mkdir()
    write_atomically(empty, a)
    assert (empty / "manifest.json").read_bytes() == a["manifest.json"]


def test_an_edit_during_the_build_is_found_at_the_swap(tmp_path, outputs):
    """The folder is proved twin's at the claim; before the swap only what changed since is hashed again
    (twin/folder.py ``proved``). An artifact rewritten during the build with its size kept and its
    modification time put back (its ctime cannot be) is still found, and the folder is left as it is."""
    from twin.output import write_claimed_with

    a, b = outputs
    out = tmp_path / "out"
    write_atomically(out, a)
    report = out / "report.md"

    def edit_while_rendering(folder):
        (folder / "report.md").write_bytes(b["report.md"])
        st = report.stat()
        time.sleep(0.01)
        report.write_bytes(a["report.md"][:-5] + b"EDIT\n")  # the same size
        os.utime(report, ns=(st.st_atime_ns, st.st_mtime_ns))

    with claimed(out) as real:
        before = None
        with pytest.raises(OutputError) as e:
            before = tree(out)
            write_claimed_with(real, edit_while_rendering)
    assert "report.md (changed since twin wrote it)" in str(e.value) and e.value.code == 2
    assert report.read_bytes().endswith(b"EDIT\n") and before is not None and set(tree(out)) == set(before)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.tmp-")] == []


def test_a_rebuild_links_what_did_not_change(tmp_path, outputs):
    """Replacing an output, a file whose bytes the old output holds at that path (proved at the claim)
    is hard-linked from it instead of written (twin/output.py ``_link_same``): the same inode; a changed
    file is a new one. The old folder's files keep their bytes until the swap."""
    a, b = outputs
    out = tmp_path / "out"
    inode = replaced(out, a, b, lambda folder: (out / "report.md").read_bytes() == a["report.md"])
    assert files_hash({p: (out / p).read_bytes() for p in b}) == files_hash(b)
    same = sorted(p for p in b if (out / p).stat().st_ino == inode[p])
    assert same == sorted(p for p in b if p not in ("report.md", "manifest.json")) and len(same) > 50
    assert all((out / p).stat().st_nlink == 1 for p in b)  # the old output is gone, its inodes are the new output's


def test_the_claim_hashes_a_large_output_in_a_child_and_finds_an_edit_before_writing(tmp_path, outputs):
    """An output of PROVE_APART_BYTES or more is checked by a forked child while the build compiles
    (``prove_apart_above=0`` forces that here; the claim itself reads only the manifest): an artifact
    edited in place with its size kept, or a file added, is found before anything is written
    (OutputError, exit 2, no sibling folder), the child is reaped, and an unedited output is
    replaced as before."""
    from twin.output import _PROVING, write_claimed

    a, b = outputs
    out = tmp_path / "out"
    write_atomically(out, a)
    report = out / "report.md"
    report.write_bytes(a["report.md"][:-5] + b"EDIT\n")  # the same size: only its bytes tell
    with claimed(out, prove_apart_above=0) as real:  # names and sizes agree: the claim itself passes
        child = _PROVING[str(real)]
        with pytest.raises(OutputError) as e:
            write_claimed(real, b)
    assert "report.md (changed since twin wrote it)" in str(e.value) and e.value.code == 2
    assert str(real) not in _PROVING and not _alive(child.pid)
    assert report.read_bytes().endswith(b"EDIT\n") and sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    report.write_bytes(a["report.md"])
    (out / "notes.txt").write_text("mine")  # a file twin did not write: found by the child too
    with claimed(out, prove_apart_above=0) as real, pytest.raises(OutputError) as e:
        write_claimed(real, b)
    assert "notes.txt (not in its manifest.json)" in str(e.value) and (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    with claimed(out, prove_apart_above=0) as real:
        write_claimed(real, b)
    assert (out / "report.md").read_bytes() == b["report.md"]


def test_folders_made_ahead_leave_no_trace(tmp_path, outputs):
    """After an edit of the spec the claim's child makes the build's sibling folder with the old
    output's folders in it while the build compiles (``folders_ahead``): the new output holds exactly
    its own files and folders (one the new output does not use is removed, not left empty), and a
    build that stops before writing leaves no sibling folder behind."""
    from twin.output import write_claimed

    a, b = outputs
    out = tmp_path / "out"
    old = {**a, "old-only/deep/x.txt": b"gone in the new output\n"}
    m = json.loads(a["manifest.json"])
    m["artifacts"].append({"path": "old-only/deep/x.txt", "sha256": hashlib.sha256(old["old-only/deep/x.txt"]).hexdigest(),
                           "bytes": len(old["old-only/deep/x.txt"])})
    old["manifest.json"] = json.dumps(m, indent=1, sort_keys=True).encode()
    write_atomically(out, old)
    with claimed(out, prove_apart_above=0, folders_ahead=True):
        pass  # the compile failed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with claimed(out, prove_apart_above=0, folders_ahead=True) as real:
        write_claimed(real, b)
    assert tree(out) == {**{p: hashlib.sha256(d).hexdigest() for p, d in b.items()},
                         **{str(d): "dir" for p in b for d in Path(p).parents if str(d) != "."}}
    assert not (out / "old-only").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_linked_file_is_not_hashed_again_at_the_swap(tmp_path, monkeypatch):
    """A rebuild proves the old output once (at the claim); the files it links from it are proved
    by that (the same inode, size and mtime after the link, twin/rebuild.py), also those the build's
    forked emitting child linked (handed back): the check before the swap reads none of them again.
    Counted on a real rebuild of lab-2zone from its spec with a comment added (design.json and the
    report change, the rest links), whose output is small enough to be hashed in this process at the
    claim: each file is read once, not twice."""
    import twin.folder
    from twin.build import build

    out = tmp_path / "lab"
    build(SPEC, out)
    edited = tmp_path / "lab-2zone.yaml"
    edited.write_text(SPEC.read_text() + "# a comment changes the spec's sha256, not the design\n")
    files = sum(1 for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    reads = []
    real = twin.folder.sha256_file
    monkeypatch.setattr(twin.folder, "sha256_file", lambda path: reads.append(path) or real(path))
    inode = {p.relative_to(out): p.stat().st_ino for p in out.rglob("*") if p.is_file()}
    build(edited, out)
    assert len(reads) == files > 20  # the claim's proof, and nothing at the swap
    changed = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.stat().st_ino != inode.get(p.relative_to(out)))
    assert changed == ["design.json", "manifest.json", "report.html", "report.md"]


def test_a_rebuild_that_changes_nothing_keeps_the_output(tmp_path, outputs):
    """The same spec built again by the same twin (its manifest says so): every file comes out the
    same, so the output folder is kept as it stands (the same folder and file inodes, nothing
    created or removed, the manifest's mtime that of the build). Built from the same inputs but with
    one file different after all (``expect_same`` and a changed report.md), the waiting files are
    linked at the end and the build swaps as usual."""
    from twin.build import build

    out = tmp_path / "lab"
    build(SPEC, out)
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in [out, *out.rglob("*")]}
    build(SPEC, out)
    after = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in [out, *out.rglob("*")]}
    assert after.keys() == before.keys() and sorted(p.name for p in tmp_path.iterdir()) == ["lab"]
    assert [p.name for p in after if after[p] != before[p]] == ["manifest.json"] and after[out / "manifest.json"][0] == before[out / "manifest.json"][0]

    a, b = outputs
    old = tmp_path / "old"
    # the rest waits: no folder made
    inode = replaced(old, a, b, lambda folder: sorted(e.name for e in folder.iterdir()) == [MARK, "report.md"], expect_same=True)
    assert files_hash({p: (old / p).read_bytes() for p in b}) == files_hash(b)
    assert sorted(p for p in b if (old / p).stat().st_ino != inode[p]) == ["manifest.json", "report.md"]


WRITER = """
import pickle, sys
from pathlib import Path
from twin.output import write_atomically
a, b = pickle.load(open(sys.argv[1], "rb"))
out = Path(sys.argv[2])
print("ready", flush=True)
i = 0
while True:
    write_atomically(out, (a, b)[i % 2], use_exchange=sys.argv[3] == "exchange")
    i += 1
"""


def run_writer(tmp_path: Path, out: Path, mode: str) -> subprocess.Popen:
    data = tmp_path / "ab.pickle"
    if not data.exists():
        raise AssertionError("outputs not saved")
    p = subprocess.Popen([sys.executable, "-c", WRITER, str(data), str(out), mode], env=ENV, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


@pytest.mark.slow
def test_sigkill_at_any_instant_leaves_old_or_new(tmp_path, outputs):
    """A process swaps two outputs in a loop; it is killed with SIGKILL 15 times at random instants
    (seeded). After every kill the output path holds exactly one complete output, and a reader polling
    the path the whole time never finds it missing. The next build removes the leftovers.
    Slow: 15 writer processes (~8 s)."""
    if not exchange_supported(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    a, b = outputs
    (tmp_path / "ab.pickle").write_bytes(pickle.dumps((a, b)))
    want = [files_hash(a), files_hash(b)]
    out = tmp_path / "out"
    write_atomically(out, a)
    rng = random.Random(25)
    polls = misses = killed_mid_write = 0
    for _ in range(15):
        writer = run_writer(tmp_path, out, "exchange")
        stop = threading.Event()

        def poll(stop: threading.Event = stop):
            nonlocal polls, misses
            while not stop.is_set():
                polls += 1
                if not (out / "manifest.json").is_file():
                    misses += 1

        watcher = threading.Thread(target=poll)
        watcher.start()
        time.sleep(rng.uniform(0.02, 0.4))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        stop.set()
        watcher.join()
        on_disk = {p: hashlib.sha256((out / p).read_bytes()).hexdigest() for p in tree(out) if (out / p).is_file()}
        assert on_disk in want, "the output path holds neither complete output"
        killed_mid_write += bool(leftovers(out))
    assert misses == 0 and polls > 5_000
    assert killed_mid_write >= 3  # the kills did land inside writes, not only between them
    write_atomically(out, a)
    assert leftovers(out) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["ab.pickle", "out"]


ONCE = """
import pickle, sys
from pathlib import Path
from twin.output import write_atomically
a, b = pickle.load(open(sys.argv[1], "rb"))
write_atomically(Path(sys.argv[2]), b, use_exchange=sys.argv[3] == "exchange")
"""
RENAMES = "rename,renameat,renameat2"


def traced_write(tmp_path: Path, out: Path, mode: str, kill_at: int | None) -> tuple[int, str]:
    """Write output B over A under strace: SIGKILL on entering the ``kill_at``-th rename-family call
    (None: no kill). Returns (exit status, strace's lines for those calls)."""
    inject = ["-e", f"inject={RENAMES}:signal=SIGKILL:when={kill_at}"] if kill_at else []
    p = subprocess.run(["strace", "-qq", "-e", f"trace={RENAMES}", "-e", "signal=none", *inject, sys.executable, "-c", ONCE,
                        str(tmp_path / "ab.pickle"), str(out), mode], env={**ENV, "PYTHONDONTWRITEBYTECODE": "1"},
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stderr


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_sigkill_before_every_rename_of_the_swap(tmp_path, outputs):
    """The output path changes only at rename calls, so killing the build on entering each of them (strace
    fault injection) visits every state the path can be in. With the exchange: always the complete old or
    new output. The same check on the two-rename fallback finds the path empty after the first rename,
    which is what makes it a fallback (and the next build puts the old output back)."""
    a, b = outputs
    (tmp_path / "ab.pickle").write_bytes(pickle.dumps((a, b)))
    want = {"old": files_hash(a), "new": files_hash(b)}

    def state(out: Path) -> str:
        if not out.exists():
            return "missing"
        on_disk = {p: hashlib.sha256((out / p).read_bytes()).hexdigest() for p in tree(out) if (out / p).is_file()}
        return next((k for k, v in want.items() if v == on_disk), "mixed")

    seen = {}
    for mode in ("exchange", "rename"):
        out = tmp_path / mode
        write_atomically(out, a)
        code, trace = traced_write(tmp_path, out, mode, None)
        calls = [line for line in trace.splitlines() if line.startswith(("rename", "renameat"))]
        assert code == 0 and state(out) == "new", trace
        seen[mode] = []
        for k in range(1, len(calls) + 1):
            if state(out) != "old":
                write_atomically(out, a)
            code, trace = traced_write(tmp_path, out, mode, k)
            assert code == -signal.SIGKILL, trace
            seen[mode].append(state(out))
            with claimed(out):  # what the next build does first
                assert state(out) in ("old", "new") and leftovers(out) == []
    assert len(seen["exchange"]) == 1 and set(seen["exchange"]) <= {"old", "new"}  # one renameat2: nothing between
    assert seen["rename"] == ["old", "missing"]  # killed between rename(out, old) and rename(tmp, out)


def exchange_supported(tmp: Path) -> bool:
    x, y = tmp / "x-probe", tmp / "y-probe"
    x.mkdir()
    y.mkdir()
    try:
        return exchange(x, y)
    finally:
        x.rmdir()
        y.rmdir()


def test_two_rename_fallback_restores_the_previous_output(tmp_path, outputs):
    """Without the exchange a signal between the two renames leaves the path empty and the previous output
    in `.out.old-*`: the next build of that folder puts it back before anything else, and removes the
    half-written `.out.tmp-*`."""
    a, b = outputs
    out = tmp_path / "out"
    write_atomically(out, a, use_exchange=False)
    write_atomically(out, b, use_exchange=False)
    assert files_hash({p: (out / p).read_bytes() for p in b}) == files_hash(b) and leftovers(out) == []
    # the state a SIGKILL between `rename(out, old)` and `rename(tmp, out)` leaves:
    os.rename(out, tmp_path / ".out.old-k1ll3d")
    half = sibling(out)  # the new output's folder as twin made it, half written
    (half / "configs").mkdir()
    (half / "configs" / "half.conf").write_text("router bgp")
    with claimed(out) as real:
        assert real == out.resolve()
        assert files_hash({p: (out / p).read_bytes() for p in b}) == files_hash(b)
        assert leftovers(out) == []
        with pytest.raises(OutputError) as e:  # the lock is held: a second build stops at once
            write_atomically(out, a)
        assert e.value.code == EXIT_WRITE and "another twin build is writing" in str(e.value)


def test_concurrent_build_says_so(tmp_path, outputs):
    """While one build holds the folder, `twin build -o` of the same folder is one line, exit 3, and
    writes nothing; the holder's build then completes."""
    a, b = outputs
    out = tmp_path / "out"
    write_atomically(out, a)
    before = tree(out)
    with claimed(out):
        r = twin_cli("build", SPEC, "-o", out, "--json")
        assert tree(out) == before
    assert r.returncode == EXIT_WRITE and "Traceback" not in r.stderr
    js = unwrap(r.stdout)
    assert js["status"] == "not written" and js["exit"] == 3 and "another twin build is writing" in js["error"]
    write_atomically(out, b)
    assert (out / "report.md").read_bytes() == b["report.md"]


needs_mount = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root)")


@pytest.fixture
def tmpfs(tmp_path):
    """A mount point for tmpfs file systems of a chosen size, unmounted at the end."""
    mounted = []

    def mount(name: str, *opts: str) -> Path:
        d = tmp_path / name
        d.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(opts), "tmpfs", str(d)], capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip(f"cannot mount tmpfs here: {p.stderr.strip()}")
        mounted.append(d)
        return d

    yield mount
    for d in mounted:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


@pytest.mark.root
@needs_mount
def test_disk_full_keeps_previous_output(tmpfs, outputs):
    """A 3 MiB file system holds one 2 MiB output but not a second beside it: the second write is ENOSPC,
    one line, exit 3, the previous output intact and no temporary folder left."""
    a, b = outputs
    assert 1.6 * 2**20 < sum(map(len, a.values())) < 2.5 * 2**20
    fs = tmpfs("small", "size=3m")
    out = fs / "out"
    write_atomically(out, a)
    before = tree(out)
    with pytest.raises(OutputError) as e:
        write_atomically(out, b)
    assert e.value.code == EXIT_WRITE and "no space left" in str(e.value) and "previous output is untouched" in str(e.value)
    assert tree(out) == before and sorted(p.name for p in fs.iterdir()) == ["out"]


@pytest.mark.root
@needs_mount
def test_read_only_file_system_is_one_line(tmpfs):
    """`twin build -o` onto a read-only file system: one line, exit 3, before compiling."""
    ro = tmpfs("ro", "size=1m", "ro")
    r = twin_cli("build", SPEC, "-o", ro / "out")
    assert r.returncode == EXIT_WRITE and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [f"{SPEC}: {ro} is on a read-only file system; the previous output is untouched"]
