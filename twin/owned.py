"""Files twin writes into a folder the user names (``twin as-built -o``, ``twin sweep -o``): only into a
folder that is one (made when missing), and never over a file twin did not write there.

Twin proves what it wrote with a record in the folder, :data:`RECORD` (``{name: sha256}`` of each file
it wrote there). A file of the same name that the record does not list with its present content (the
user's own ``results.csv``, or twin's output edited since) is refused, in one line, before anything is
written; so is a symbolic link in its place, and a folder path that is a link loop or not a folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

RECORD = ".twin-written"
MAX_RECORD = 1 << 20


def problem(folder: Path, names: list[str]) -> str | None:
    """Why twin may not write ``names`` into ``folder`` (None: it may)."""
    try:
        os.stat(folder)
    except FileNotFoundError:
        return None if not os.path.islink(folder) else f"{folder} is a symbolic link to nothing"
    except OSError as e:  # ELOOP: a link loop; EACCES; ENOTDIR: a file on the way
        return f"cannot write ({e.strerror or e})"
    if not os.path.isdir(folder):
        return f"{folder} exists and is not a folder"
    record = _record(folder)
    for name in names:
        p = folder / name
        if not os.path.lexists(p):
            continue
        if p.is_symlink() or not p.is_file():
            return f"{p} exists and is not a file twin wrote (a link or a folder); twin does not replace it"
        if record.get(name) != _sha(p):
            return (f"{p} exists and twin did not write it (or it was edited since); twin does not overwrite it: "
                    "move it, or give -o another folder")
    return None


def write(folder: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` into ``folder`` (made when missing), each through a temporary file renamed into
    place, and record them; the caller has asked :func:`problem` first (raises OSError if it cannot)."""
    folder.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0)
    os.umask(umask)
    record = _record(folder)
    for name, data in {**files, RECORD: None}.items():
        if name == RECORD:
            record.update({n: hashlib.sha256(d).hexdigest() for n, d in files.items()})
            data = (json.dumps(record, indent=1, sort_keys=True) + "\n").encode("utf-8")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        try:
            os.fchmod(fd, 0o666 & ~umask)  # as an ordinary file (mkstemp makes it private)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, folder / name)
        except BaseException:
            os.unlink(tmp)
            raise


def _record(folder: Path) -> dict[str, str]:
    p = folder / RECORD
    try:
        if p.is_symlink() or not p.is_file() or p.stat().st_size > MAX_RECORD:
            return {}
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in doc.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(doc, dict) else {}


def _sha(p: Path) -> str | None:
    try:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
