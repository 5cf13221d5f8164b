"""The output folder is twin's or it is left alone: how ``twin build`` replaces a folder.

- **Whose folder.** A folder is replaced only when twin wrote it: its ``manifest.json`` is a twin
  manifest and every file in the folder is one the manifest lists, with the size and sha256 it
  records (:func:`twin.folder.foreign_entries`). A folder that merely holds a file named
  ``manifest.json``, one with a file added or edited since the build, or a symlink in it, is refused
  (exit 2) and not touched. An empty folder may be filled.
- **One atomic step.** The new output is written to a sibling ``.<name>.tmp-*`` folder, then exchanged
  with the old one by a single ``renameat2(RENAME_EXCHANGE)`` (Linux >= 3.15 on ext4, xfs, btrfs,
  tmpfs, ...): at every instant the output path holds the complete old or the complete new output.
  Where the exchange is not available (another OS, a file system without it) twin falls back to two
  renames (old aside to ``.<name>.old-*``, new in); a signal between those two leaves the path empty
  for that instant and the next build puts the previous output back before it starts.
- **One writer.** ``.<name>.lock`` beside the folder is held (``flock``) for the whole build; a second
  build of the same folder stops at once with one line (exit 3) instead of racing the first.
- **Leftovers.** A build killed mid-write leaves ``.<name>.tmp-*`` / ``.<name>.old-*``; the next
  build of that folder removes those twin's mark proves it made, and leaves any other with a warning
  (while it holds the lock, so never another build's: :mod:`twin.leftovers`).
- **Disk full, read-only, no permission** end in one line (exit 3) with the previous output intact.
- **Only what changed.** A large old output is hashed by a forked child while the build compiles; a
  file it holds as the new one is hard-linked, not written, and an output that comes out the same as
  the one it replaces is kept as it stands (:mod:`twin.rebuild`).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from twin.exits import INVALID as EXIT_NOT_OURS
from twin.exits import WRITE as EXIT_WRITE
from twin.folder import MANIFEST, FolderError, foreign_entries, load_manifest
from twin.forked import Child, apart
from twin.leftovers import aside, clean_leftovers, discard, sibling, unmark
from twin.rebuild import ChangedDuringBuild, Replacing, folder_for, folders_of, prune


class OutputError(Exception):
    """The output folder cannot be written safely; ``code`` is the exit code the CLI uses."""

    def __init__(self, message: str, code: int = EXIT_NOT_OURS):
        super().__init__(message)
        self.code = code

    def __reduce__(self):  # its code survives a trip between processes (the build's emitting child)
        return OutputError, (str(self), self.code)


_PROVED: dict[str, dict[str, tuple]] = {}  # claimed folder -> its files' identities when their sha256 matched
_PROVING: dict[str, Child] = {}  # claimed folder -> the forked child hashing its files meanwhile
PROVE_APART_BYTES = 32 << 20  # an old output this large is hashed in a child while the build compiles


def ownership_problem(out_dir: Path) -> str | None:
    """Why ``out_dir`` must not be replaced, or None (it does not exist, is empty, or twin wrote
    every file in it as its manifest says). Inside :func:`claimed` a file proved at the claim and not
    touched since (the same inode, size, mtime and ctime) is not hashed a second time before the swap."""
    return _problem(out_dir, whole=True)[0]


def _problem(out_dir: Path, whole: bool) -> tuple[str | None, int]:
    """:func:`ownership_problem` (``whole=False``: only that a twin manifest is there), and the bytes
    the manifest lists."""
    if not out_dir.exists() and not out_dir.is_symlink():
        return None, 0
    if not out_dir.is_dir():
        return f"{out_dir} exists and is not a folder; not replacing it", 0
    if not any(out_dir.iterdir()):
        return None, 0
    try:
        m = load_manifest(out_dir)
    except FolderError as e:
        return f"{out_dir} is not twin output ({e}); not replacing it: choose another -o or remove it yourself", 0
    size = sum(a.size for a in m.artifacts.values())
    if whole and (odd := foreign_entries(out_dir, m, proved=_PROVED.get(str(out_dir)))):
        return (f"{out_dir} holds files twin did not write as its {MANIFEST} lists them: {', '.join(odd)}; not replacing it:"
                " move them out or remove the folder yourself"), size
    return None, size


def _prove(out_dir: Path, apart_above: int, folders_ahead: bool) -> None:
    """The claim's proof: a twin manifest is there now (OutputError), then every entry is a file it
    lists with its size and sha256, checked here or, for an output of ``apart_above`` bytes or more,
    in a forked child while the build compiles (the other core is idle until the twins start);
    :func:`_proved` waits for it before anything is written. ``folders_ahead``: that child also makes
    the build's sibling folder with the old output's folders in it (:func:`_ahead`)."""
    why, size = _problem(out_dir, whole=False)
    if why:
        raise OutputError(why)
    if size and size >= apart_above and hasattr(os, "fork"):
        key = str(out_dir)
        tmp = sibling(out_dir) if folders_ahead else None
        if tmp is not None:
            _AHEAD[key] = tmp
        _PROVING[key] = apart(lambda: _ahead(out_dir, tmp))
    elif why := ownership_problem(out_dir):
        raise OutputError(why)


_AHEAD: dict[str, Path] = {}  # claimed folder -> its build's sibling folder, made at the claim


def _ahead(out_dir: Path, tmp: Path | None) -> tuple[str | None, dict[str, tuple]]:
    """The proof (:func:`ownership_problem`, the identities proved) and, with ``tmp``, every folder of
    the proved old output made in ``tmp``: a rebuild after an edit of the spec writes most of them
    again (a 24K-GPU site has 1,540, and a folder is an inode: 0.4-0.8 ms each on this machine's
    ext4), here beside the compile instead of on the emitters' way. Those the new output leaves empty
    are removed before the swap (:func:`twin.rebuild.prune`)."""
    why = ownership_problem(out_dir)
    proved = _PROVED[str(out_dir)]
    if why is None and tmp is not None:
        folders_of(tmp, proved)
    return why, proved


def _proved(out_dir: Path) -> None:
    """The claim's proof finished (OutputError if a file's bytes are not those its manifest lists);
    its identities recorded for :func:`_link_same` and the check before the swap."""
    key = str(out_dir)
    if (child := _PROVING.pop(key, None)) is None:
        return
    try:
        why, proved = child.join()
    except Exception:  # noqa: BLE001 - the child died (killed, out of memory): prove it here instead
        why, proved = ownership_problem(out_dir), None
    if proved is not None:
        _PROVED[key].update(proved)
    if why:
        raise OutputError(why)


# ------------------------------------------------------------------ the exchange
AT_FDCWD = -100
RENAME_EXCHANGE = 2
_renameat2 = None


def _libc_renameat2():
    global _renameat2
    if _renameat2 is None:
        try:
            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
            _renameat2 = fn
        except (AttributeError, OSError):
            _renameat2 = False
    return _renameat2


def exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one atomic step; False where the system cannot (no
    renameat2, or a file system without RENAME_EXCHANGE), OSError for any other refusal."""
    fn = _libc_renameat2()
    if not fn:
        return False
    if fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


# ------------------------------------------------------------------ the lock
LOCK_MARK = b"twin build lock\n"


@contextmanager
def locked(out_dir: Path) -> Iterator[None]:
    """Hold ``.<name>.lock`` beside ``out_dir`` (OutputError, exit 3, when another build holds it).
    The file is removed on release; a holder re-checks after locking that the path is still its file."""
    path = out_dir.parent / f".{out_dir.name}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputError(f"another twin build is writing {out_dir} right now ({path} is locked); "
                              "nothing written: run again when it has finished", EXIT_WRITE) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same and (mine := os.pread(fd, len(LOCK_MARK) + 1, 0)) not in (b"", LOCK_MARK):
            os.close(fd)  # a file of that name that is not twin's lock: neither taken over nor removed
            raise OutputError(f"{path} exists and is not a twin lock; nothing written: move it, or give -o another folder", EXIT_WRITE)
        if same:
            if not mine:
                os.pwrite(fd, LOCK_MARK, 0)  # twin's mark: the next build knows a stale lock for its own
            break
        os.close(fd)  # the previous holder removed it between our open and lock: take the new one
    try:
        yield
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
        os.close(fd)


# ------------------------------------------------------------------ writing
def describe(e: OSError, out_dir: Path) -> str:
    """An OSError while writing ``out_dir`` as one line a person can act on."""
    where = e.filename or out_dir
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the device of {out_dir.parent} (or quota exceeded) while writing {where}"
    if e.errno == errno.EROFS:
        return f"{out_dir.parent} is on a read-only file system"
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"no permission to write {where}"
    if e.errno == errno.EBUSY:
        return f"{out_dir} is a mount point or in use; twin swaps the folder itself and cannot replace it"
    return f"cannot write {where}: {e.strerror or e}"


@contextmanager
def claimed(out_dir: Path, prove_apart_above: int = PROVE_APART_BYTES, *, folders_ahead: bool = False,
            warn: Callable[[str], None] | None = None) -> Iterator[Path]:
    """The output folder, held for one build: the lock taken, leftovers twin made removed (the others
    named to ``warn``: :func:`twin.leftovers.clean_leftovers`), the folder proved
    twin's (or absent or empty): a twin manifest at once, every file's name, size and bytes before
    anything is written (:func:`_prove`; ``folders_ahead``: the build's sibling folder made
    meanwhile with the old output's folders). Yields the resolved path; OSErrors become one-line
    OutputErrors."""
    try:
        out_dir = out_dir.resolve() if out_dir.exists() or out_dir.is_symlink() else out_dir.absolute()
    except (RuntimeError, OSError) as e:  # a symbolic link loop (RuntimeError before Python 3.13)
        raise OutputError(f"{out_dir}: cannot be resolved ({e}); not written", EXIT_WRITE) from None
    key = str(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        with locked(out_dir):
            clean_leftovers(out_dir, warn)
            _PROVED[key] = {}
            try:
                _prove(out_dir, prove_apart_above, folders_ahead)
                yield out_dir
            finally:
                _PROVED.pop(key, None)
                if (child := _PROVING.pop(key, None)) is not None:
                    child.kill()
                if (tmp := _AHEAD.pop(key, None)) is not None:  # a build that stopped before writing
                    discard(tmp)
    except OSError as e:
        raise OutputError(f"{describe(e, out_dir)}; the previous output is untouched", EXIT_WRITE) from None


def write_atomically(out_dir: Path, files: dict[str, bytes], *, use_exchange: bool = True) -> None:
    """Claim ``out_dir`` and write ``files`` as it (see the module docstring)."""
    with claimed(out_dir) as real:
        write_claimed(real, files, use_exchange=use_exchange)


def write_claimed(out_dir: Path, files: dict[str, bytes], *, use_exchange: bool = True) -> None:
    """Write ``files`` into a sibling folder and swap it in; ``out_dir`` comes from :func:`claimed`.
    ``use_exchange=False`` forces the two-rename fallback (tests)."""
    write_claimed_parts(out_dir, [files], use_exchange=use_exchange)


def write_claimed_parts(out_dir: Path, parts: Iterable[dict[str, bytes]], *, use_exchange: bool = True) -> None:
    """:func:`write_claimed` for files that come in parts: each part is written before the next is
    made, so a caller can render one and drop it (the build: one emitter's files at a time)."""
    write_claimed_with(out_dir, lambda tmp: write_parts(tmp, parts), use_exchange=use_exchange)


_REPLACING: dict[str, Replacing] = {}  # a build's sibling folder -> the output it replaces (twin.rebuild)


def handed_back(folder: Path) -> tuple | None:
    """What this process linked into ``folder`` (the sibling being filled) from the old output, and
    what waits to be: for the process that swaps (:func:`adopt`)."""
    rep = _REPLACING.get(os.fspath(folder))
    return rep.handed_back() if rep else None


def adopt(folder: Path, handed: tuple | None) -> None:
    """Another process's :func:`handed_back` for ``folder``: its links are proved (each was proved
    before it was linked and is the same inode, size and mtime after), its waiting files wait here."""
    if handed and (rep := _REPLACING.get(os.fspath(folder))):
        rep.adopt(handed)


def write_parts(folder: Path, parts: Iterable[dict[str, bytes]], digests: dict[str, tuple[str, int]] | None = None) -> None:
    """Each part's files under ``folder``, one part at a time. Written with plain ``os`` calls: one
    ``open``/``write``/``close`` per file and one ``makedirs`` per folder (not one per file), which
    is most of the cost of the ~3,500 files of a 24K-GPU site besides the kernel's own work.

    With ``digests`` ({path: (sha256, bytes)} of these files) and ``folder`` the sibling of a build
    replacing an output (:func:`write_claimed_with`), a file whose bytes are those the previous output
    holds at that path is hard-linked from it instead of written, or waits to be
    (:class:`twin.rebuild.Replacing`): a rebuild creates a new inode only for what changed."""
    made: set[str] = set()
    base = os.fspath(folder)
    replacing = _REPLACING.get(base) if digests is not None else None
    for files in parts:
        for rel, data in sorted(files.items()):
            target = f"{base}/{rel}"
            if replacing is not None:
                if replacing.take(rel, digests.get(rel), target, made):  # linked, or waits to be
                    continue
            else:
                folder_for(target, made)
            _write_chunks(target, (data,))


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def write_stream(folder: Path, rel: str, chunks: Iterable[bytes]) -> tuple[str, int]:
    """One file under ``folder`` written chunk by chunk as it is rendered, hashed on the way (a file too large
    to hold: a million-GPU site's fabric.graphml, 2 GB); its (sha256, bytes). In a build that replaces an
    output, the old output's copy is taken instead where it holds the same bytes (:meth:`Replacing.written`)."""
    base = os.fspath(folder)
    target = f"{base}/{rel}"
    folder_for(target, set())
    h = hashlib.sha256()
    n = _write_chunks(target, chunks, h.update)
    digest = (h.hexdigest(), n)
    if (replacing := _REPLACING.get(base)) is not None:
        replacing.written(rel, digest, target)
    return digest


def _write_chunks(path: str, chunks: Iterable[bytes], seen: Callable[[bytes], object] | None = None) -> int:
    """``chunks`` written to ``path`` in turn (``Path.write_bytes`` without the buffered file object), each
    handed to ``seen`` first; the bytes written. An error names the file."""
    fd, n = os.open(path, _CREATE, 0o666), 0
    try:
        for chunk in chunks:
            if seen is not None:
                seen(chunk)
            view, done = memoryview(chunk), 0
            while done < len(view):  # a regular file takes it in one call but for >2 GiB; loop regardless
                done += os.write(fd, view[done:])
            n += done
    except OSError as e:
        if e.filename is None:
            e.filename = path
        raise
    finally:
        os.close(fd)
    return n


def write_claimed_with(out_dir: Path, fill: Callable[[Path], None], *, use_exchange: bool = True,
                       expect_same: bool = False) -> None:
    """:func:`write_claimed` for a caller that fills the sibling folder itself (``fill(folder)``; the
    build: two processes writing their emitters' files at once), then the same check and swap.
    ``expect_same``: the old output was built from the same inputs, so its files wait to be linked
    and, if every file (the manifest too) comes out the same, it is kept as it is, its manifest's
    modification time that of this build (:mod:`twin.rebuild`)."""
    _proved(out_dir)
    ahead = _AHEAD.pop(str(out_dir), None)
    tmp = ahead or sibling(out_dir)
    rep = None
    if (proved := _PROVED.get(str(out_dir))) is not None:
        rep = _REPLACING[str(tmp)] = Replacing(str(out_dir), proved, defer=expect_same and bool(proved))
    try:
        fill(tmp)
        if ahead is not None:
            prune(tmp)
        os.chmod(tmp, 0o755)
        try:
            kept = rep is not None and rep.settle(tmp)
        except ChangedDuringBuild as e:
            raise OutputError(ownership_problem(out_dir) or f"{out_dir / str(e)} changed while the build rendered; not replacing it") from None
        if why := ownership_problem(out_dir):  # changed while the build rendered
            raise OutputError(why)
        unmark(tmp)  # complete: from here a leftover tmp is proved twin's by its manifest
        if kept:  # nothing changed: the previous output is this build's, as it stands
            os.utime(out_dir / MANIFEST)
            discard(tmp)
            return
        if not out_dir.exists():
            os.rename(tmp, out_dir)
            return
        if use_exchange and exchange(tmp, out_dir):
            discard(tmp)  # tmp now holds the previous output
            return
        old = aside(out_dir)
        os.rename(out_dir, old)
        os.rename(tmp, out_dir)
        discard(old)
    except BaseException:
        discard(tmp)
        raise
    finally:
        _REPLACING.pop(str(tmp), None)
