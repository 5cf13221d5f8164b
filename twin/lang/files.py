"""Input files as untrusted data: regular files only, read with a size cap, and files named inside an
input resolved relative to it without escaping its folder.

``/dev/zero``, a FIFO or a directory given as a spec, scenario, sweep or CSV is refused before a byte is
read (reading ``/dev/zero`` never ends; opening a FIFO blocks). A file is opened without following it
into a device, checked with ``fstat`` on the open descriptor (no race between the check and the read),
and never read past its cap.

A file named inside another (a sweep's ``site:`` and ``scenario:``) is resolved the way a relative link
is: against the folder of the file that names it, and it must stay inside that folder (``root``),
symbolic links resolved. ``..`` or an absolute path that leaves it is refused unless the user widens
``root`` (``twin sweep --root DIR``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from twin.lang import limits


class FileRefused(OSError):
    """A path that is not a readable regular file within its cap, or that leaves its root."""


def read_bytes(path: str | Path, limit: str, what: str = "file") -> bytes:
    """The bytes of a regular file within the size limit ``limit`` (:mod:`twin.lang.limits`);
    :class:`FileRefused` says why not."""
    max_bytes = int(limits.value(limit))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise FileRefused(f"cannot read: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else
                    "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                    "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise FileRefused(f"{kind}, not a regular {what}")
        if st.st_size > max_bytes:
            raise FileRefused(f"{what}: {limits.message(limit, st.st_size)}")
        chunks, total = [], 0
        while True:
            b = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not b:
                break
            chunks.append(b)
            total += len(b)
            if total > max_bytes:  # it grew while we read it
                raise FileRefused(f"{what}: {limits.message(limit, total, 'bytes or more')}")
        return b"".join(chunks)
    except OSError as e:
        if isinstance(e, FileRefused):
            raise
        raise FileRefused(f"cannot read: {e.strerror}") from None
    finally:
        os.close(fd)


def inside(named: str, base: Path, root: Path | None = None) -> Path:
    """The file ``named`` (as written in a file in folder ``base``), refused when it leaves ``root``
    (default ``base``); symbolic links are followed before the check."""
    if "\x00" in named:
        raise FileRefused("a path with a NUL character")
    p = Path(named)
    full = p if p.is_absolute() else base / p
    root = (root or base).resolve()
    real = full.resolve()
    if real != root and root not in real.parents:
        how = "an absolute path" if p.is_absolute() else "'..' leads"
        raise FileRefused(f"{how} outside {root}; files are named relative to the file that names them, inside its folder "
                          f"(twin sweep --root DIR widens it)")
    return full
