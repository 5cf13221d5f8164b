"""What a killed build leaves beside its output folder, and which of it is twin's to remove.

A build writes its new output into a sibling folder ``.<name>.tmp-*`` made by :func:`sibling`, which
holds twin's mark (the file :data:`MARK` with the text :data:`MARK_TEXT`) until the instant before the
swap; the two-rename fallback moves the previous output aside to ``.<name>.old-*``. A build killed
at the wrong instant leaves one of them. The next build of that folder, holding its lock,
(:func:`clean_leftovers`) removes a leftover only when it is proved twin's:

- it holds twin's mark (a regular file, not a link, with that text or the start of it: a kill between
  making the mark and writing it leaves it empty or short): a half-written output, or
- it is a twin output (a twin manifest, and every file in the folder one it lists with the size and
  sha256 it records, as :func:`twin.folder.foreign_entries` proves it): the previous output aside, or
  the new one between the mark's removal and the swap.

A folder twin removes is marked first and its mark removed last (:func:`discard`), so a kill in the
middle of a removal leaves a folder the next build still proves twin's.

An empty folder of such a name (a build killed between making its folder and marking it) is removed
with ``rmdir``, which removes nothing but the name. Anything else named like a leftover (a folder
holding anything else, a file, a link) is left as it is, with one warning line naming it: twin never
removes what it cannot prove it made.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from twin.folder import FolderError, foreign_entries, load_manifest

MARK = ".twin-building"  # in a build's sibling folder while it is written; never in an output
MARK_TEXT = b"twin build: an output being written; the next twin build of this output removes this folder\n"
HEADS = (".tmp-", ".old-")  # .<name>.tmp-*, .<name>.old-*


class LeftoverWarning(UserWarning):
    """A folder named like a leftover of a twin build that twin cannot prove it made: left as it is."""


def sibling(out_dir: Path) -> Path:
    """A new folder ``.<name>.tmp-*`` beside ``out_dir`` for a build to write into, with twin's mark."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    _mark(tmp)
    return tmp


def _mark(folder: Path) -> None:
    if marked(folder):
        return
    fd = os.open(folder / MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        os.write(fd, MARK_TEXT)
    finally:
        os.close(fd)


def aside(out_dir: Path) -> Path:
    """A free name ``.<name>.old-*`` beside ``out_dir`` to move the previous output to (the two-rename
    swap): a name only, so a kill leaves no empty folder that twin could not prove its own."""
    while True:
        path = out_dir.parent / f".{out_dir.name}.old-{secrets.token_hex(6)}"
        if not os.path.lexists(path):
            return path


def unmark(tmp: Path) -> None:
    """The mark taken off a build's sibling folder once it holds the complete output (before the swap)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp / MARK)


def discard(folder: Path) -> None:
    """Remove a folder twin made (a build's sibling, the previous output after the swap) so that a kill
    at any instant leaves it proved twin's: marked first, the mark removed last, then the empty folder."""
    with contextlib.suppress(OSError):
        _mark(folder)
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        entries = [e for e in it if e.name != MARK]
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(e.path)
    unmark(folder)
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def leftovers(out_dir: Path) -> list[Path]:
    """Every entry named ``.<name>.tmp-*`` or ``.<name>.old-*`` beside ``out_dir`` (twin's or not)."""
    if not out_dir.parent.is_dir():
        return []
    heads = tuple(f".{out_dir.name}{h}" for h in HEADS)
    return sorted(p for p in out_dir.parent.iterdir() if p.name.startswith(heads))


def marked(folder: Path) -> bool:
    """``folder`` is a build's sibling folder: a real folder holding twin's mark as :func:`sibling` wrote it
    (or began to)."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
        fd = os.open(folder / MARK, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        # the whole text, or the start of it a kill between creating the file and writing it left
        return stat.S_ISREG(os.fstat(fd).st_mode) and MARK_TEXT.startswith(os.read(fd, len(MARK_TEXT) + 1))
    finally:
        os.close(fd)


def twin_output(folder: Path) -> bool:
    """``folder`` is a real folder holding a twin output: a twin manifest and nothing but files it
    lists, each with the size and sha256 it records."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
        return not foreign_entries(folder, load_manifest(folder), limit=1)
    except (FolderError, OSError):
        return False


def clean_leftovers(out_dir: Path, warn: Callable[[str], None] | None = None) -> list[Path]:
    """With the lock held: put back a previous output that a two-rename swap left aside (the path
    empty, an ``.old-`` folder proved a twin output), then remove every leftover proved twin's (see
    the module docstring). The others are left as they are, each named in one line to ``warn``
    (default: a :class:`LeftoverWarning`); returns them."""
    rest = leftovers(out_dir)
    if not out_dir.exists() and not out_dir.is_symlink():
        olds = [p for p in rest if p.name.startswith(f".{out_dir.name}.old-") and twin_output(p)]
        for old in sorted(olds, key=lambda p: p.stat().st_mtime, reverse=True)[:1]:
            os.rename(old, out_dir)
            rest.remove(old)
    kept = []
    for p in rest:
        if marked(p) or twin_output(p):
            discard(p)
            continue
        with contextlib.suppress(OSError):  # not a folder, or not empty (ENOTDIR, ENOTEMPTY): not removed
            if stat.S_ISDIR(os.lstat(p).st_mode):
                os.rmdir(p)
                continue
        kept.append(p)
        line = (f"{p} is named like a leftover of a twin build of {out_dir.name} but holds no twin mark ({MARK}) and is not"
                " a complete twin output; left as it is: remove it yourself if it is not yours")
        if warn is None:
            warnings.warn(line, LeftoverWarning, stacklevel=2)
        else:
            warn(line)
    return kept
