"""A generated folder read as untrusted input: ``twin diff``, ``twin verify``, ``twin as-built`` and the
build's own check of the folder it would replace read files only through here.

A folder handed to twin may have been edited, truncated, or made by someone else. So every path read
stays inside the folder (relative, no ``..``, no symlink leading out, a regular file), every file is
size-capped before it is read, JSON is parsed strictly (no ``NaN``/``Infinity``, no integer of
thousands of digits, bounded nesting) and every problem is a :class:`FolderError`: one line naming the
file (and the line, column or JSON path) and what was expected, never a traceback.

>>> safe_relative("configs/frr/a.conf"), safe_relative("../x") is None, safe_relative("/etc/passwd") is None
('configs/frr/a.conf', True, True)
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MANIFEST = "manifest.json"
JSON_LIMIT = 64 * 2**20  # bytes; twin's largest JSON document (a 24K-GPU manifest) is 0.6 MB
MAX_DEPTH = 64  # nesting of a JSON document; twin writes at most ~10
SHA256 = re.compile(r"[0-9a-f]{64}")


class FolderError(ValueError):
    """A generated folder that cannot be used as it is: one located line (``FILE[:LINE:COL]: what``)."""


def printable(text: str, limit: int = 200) -> str:
    """``text`` safe for one terminal line: control characters escaped, at most ``limit`` characters.

    >>> printable("a\\nb\\x1b[31m"), printable("x" * 5, 3)
    ('a\\\\nb\\\\x1b[31m', 'xxx...')
    """
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return out if len(out) <= limit else out[:limit] + "..."


def safe_relative(rel: str) -> str | None:
    """``rel`` if it is a plain relative POSIX path that stays inside its folder, else None: no
    absolute path, ``..``, ``.``, empty part, backslash, NUL or other control character."""
    if not isinstance(rel, str) or not rel or len(rel) > 4096 or "\\" in rel:
        return None
    if not (rel.isascii() and rel.isprintable()) and any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") for c in rel):
        return None
    parts = rel.split("/")
    if PurePosixPath(rel).is_absolute() or any(p in ("", ".", "..") or len(p.encode("utf-8", "surrogatepass")) > 255 for p in parts):
        return None
    return rel


def inside(folder: Path, rel: str, what: str = "path", resolved: dict[str, Path] | None = None) -> Path:
    """``folder/rel`` after proving it stays in ``folder``: ``rel`` is a safe relative path and no
    symlink on the way leads out (FolderError otherwise). ``resolved`` caches the folders resolved
    so far (one call per artifact of a big build would resolve the same folders thousands of times)."""
    if safe_relative(rel) is None:
        raise FolderError(f"{folder}: {what} {printable(repr(rel))} leaves the folder or is not a plain relative path")
    cache = {} if resolved is None else resolved
    if "" not in cache:
        cache[""] = folder.resolve()
    base = cache[""]
    parent, _, name = rel.rpartition("/")
    if parent not in cache:
        cache[parent] = (base / parent).resolve()
    where = cache[parent] / name
    target = where.resolve() if where.is_symlink() else where
    if target != base and base not in target.parents:
        raise FolderError(f"{folder / rel}: a symlink leads outside {folder}")
    return base / rel


def read_bytes(folder: Path, rel: str, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``folder/rel`` (inside the folder, at most ``limit`` bytes, opened
    without following a final symlink)."""
    path = inside(folder, rel, what)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FolderError(f"{path}: missing") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise FolderError(f"{path}: a symlink (twin writes regular files only)") from None
        raise FolderError(f"{path}: cannot read ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FolderError(f"{path}: not a regular file")
        if st.st_size > limit:
            raise FolderError(f"{path}: {st.st_size:,} bytes, more than the {limit:,} twin reads (expected a file twin wrote)")
        chunks, left = [], limit + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        if len(data) > limit:
            raise FolderError(f"{path}: more than the {limit:,} bytes twin reads")
        return data
    except OSError as e:
        raise FolderError(f"{path}: cannot read ({e.strerror})") from None
    finally:
        os.close(fd)


def _constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    x = float(text)
    if math.isinf(x):
        raise ValueError(f"{text[:40]} is beyond the range of a number")
    return x


def parse_json(data: bytes, where: str):
    """Strict JSON: UTF-8, no NaN/Infinity, no huge integers, nesting at most MAX_DEPTH (FolderError,
    located at the line and column where the parser stopped)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FolderError(f"{where}: not UTF-8 (byte {e.start})") from None
    try:
        doc = json.loads(text, parse_constant=_constant, parse_float=_float)
    except json.JSONDecodeError as e:
        raise FolderError(f"{where}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise FolderError(f"{where}: JSON nested too deeply (twin writes at most {MAX_DEPTH} levels)") from None
    except ValueError as e:  # NaN/Infinity, an integer of thousands of digits
        raise FolderError(f"{where}: invalid JSON: {printable(str(e), 120)}") from None
    if depth(doc) > MAX_DEPTH:
        raise FolderError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels (twin writes at most ~10)")
    return doc


def depth(doc) -> int:
    """Nesting depth of a JSON value, without recursion.

    >>> depth(1), depth([]), depth({"a": [1, {"b": []}]})
    (0, 1, 4)
    """
    best, stack = 0, [(doc, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            best = max(best, d + 1)
            if d + 1 > MAX_DEPTH:
                return d + 1
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return best


def read_json(folder: Path, rel: str, limit: int = JSON_LIMIT):
    return parse_json(read_bytes(folder, rel, limit, "file"), str(folder / rel))


def expect(value, kind, where: str, what: str):
    """``value`` if it is of ``kind`` (a bool is not a number), else FolderError naming ``where``."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise FolderError(f"{where}: expected {what}, got {type(value).__name__} {printable(repr(value), 60)}")
    return value


@dataclass(frozen=True)
class Artifact:
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Manifest:
    """A checked manifest.json: written by twin, every artifact path inside the folder, listed once."""

    doc: dict
    artifacts: dict[str, Artifact]

    @property
    def scenario(self) -> str | None:
        return self.doc.get("scenario")


def parse_manifest(doc, where: str) -> Manifest:
    expect(doc, dict, where, "a JSON object (twin's manifest)")
    if doc.get("tool") != "twin":
        raise FolderError(f"{where}: not a twin manifest (expected \"tool\": \"twin\")")
    arts = expect(doc.get("artifacts"), list, f"{where}: artifacts", "a list")
    out: dict[str, Artifact] = {}
    for i, a in enumerate(arts):
        at = f"{where}: artifacts[{i}]"
        expect(a, dict, at, "an object with path, sha256 and bytes")
        p = expect(a.get("path"), str, f"{at}.path", "a relative path")
        if safe_relative(p) is None or p == MANIFEST:
            raise FolderError(f"{at}.path: {printable(repr(p), 80)} leaves the folder or is not a plain relative path")
        h = expect(a.get("sha256"), str, f"{at}.sha256", "64 hex digits")
        if not SHA256.fullmatch(h):
            raise FolderError(f"{at}.sha256: expected 64 lowercase hex digits, got {printable(repr(h), 80)}")
        n = expect(a.get("bytes"), int, f"{at}.bytes", "a size in bytes")
        if n < 0:
            raise FolderError(f"{at}.bytes: expected a size >= 0, got {n}")
        if p in out:
            raise FolderError(f"{at}.path: {printable(p)} is listed twice")
        out[p] = Artifact(p, h, n)
    if doc.get("scenario") is not None:
        s = expect(doc["scenario"], str, f"{where}: scenario", "a file name")
        if not s.isprintable() or len(s) > 255:
            raise FolderError(f"{where}: scenario: expected a file name, got {printable(repr(s), 80)}")
    return Manifest(doc, out)


def load_manifest(folder: Path) -> Manifest:
    """The folder's manifest.json, checked (FolderError when missing, not JSON or not twin's)."""
    if not (folder / MANIFEST).exists() and not (folder / MANIFEST).is_symlink():
        raise FolderError(f"{folder}: no {MANIFEST} (not a folder twin built; build one with `twin build`)")
    return parse_manifest(read_json(folder, MANIFEST), str(folder / MANIFEST))


def read_artifact(folder: Path, m: Manifest, rel: str) -> bytes:
    """An artifact listed in ``m`` whose bytes on disk are those the manifest records."""
    a = m.artifacts[rel]
    data = read_bytes(folder, rel, a.size, "artifact")
    if len(data) != a.size or hashlib.sha256(data).hexdigest() != a.sha256:
        raise FolderError(f"{folder / rel}: does not match {MANIFEST} (changed after the build; rebuild the folder)")
    return data


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(1 << 20):
            h.update(b)
    return h.hexdigest()


def foreign_entries(folder: Path, m: Manifest, limit: int = 5, proved: dict[str, tuple] | None = None) -> list[str]:
    """What in ``folder`` twin did not write as its manifest says: files not listed, listed files whose
    size or sha256 differ, symlinks and special files (at most ``limit``, as relative paths with why).

    ``proved`` (a dict, filled here): each listed file's identity (inode, size, mtime, ctime) once its
    sha256 matched; a file whose identity is still the one recorded there is not read again (a file
    written or replaced since has another mtime, ctime or inode, and is hashed)."""
    found: list[str] = []
    base = os.fspath(folder.resolve())
    pending = [("", base)]  # (relative folder, its path): depth first, names sorted, as os.walk would go
    while pending:
        rel_root, root = pending.pop()
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
        subdirs = []
        for entry in entries:
            rel = f"{rel_root}{entry.name}"
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                subdirs.append((f"{rel}/", entry.path))
                continue
            if not stat.S_ISREG(st.st_mode):
                found.append(f"{rel} (not a regular file)")
            elif rel == MANIFEST:
                continue
            elif rel not in m.artifacts:
                found.append(f"{rel} (not in its {MANIFEST})")
            elif st.st_size != m.artifacts[rel].size:
                found.append(f"{rel} (changed since twin wrote it)")
            else:
                ident = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, m.artifacts[rel].sha256)
                if proved is not None and proved.get(rel) == ident:
                    continue
                if sha256_file(Path(entry.path)) != m.artifacts[rel].sha256:
                    found.append(f"{rel} (changed since twin wrote it)")
                elif proved is not None:
                    proved[rel] = ident
            if len(found) >= limit:
                return found
        pending.extend(reversed(subdirs))
    return found
