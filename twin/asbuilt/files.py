"""Reading files nobody vouches for: a generated folder that may have been edited or planted, and
neighbour tables copied off thousands of devices.

Every file is read as bytes first and checked before it is parsed: a path of the generated folder
must resolve (symlinks followed) to a regular file inside that folder, no file may exceed
``MAX_BYTES``, and text must be UTF-8 without NUL bytes (a binary file is named with the byte where
it stops being text). Every problem is a :class:`~twin.lang.diagnostics.Diagnostic` at
``FILE:LINE:COL``, collected in :class:`Problems` and shown together; nothing here raises on bad
input.
"""

from __future__ import annotations

import json
from pathlib import Path

from twin.lang.diagnostics import Diagnostic, Severity

MAX_BYTES = 2 * 1024**3  # a neighbour table or plan file larger than this is not one


class Problems:
    """Diagnostics collected while reading; ``errors`` says whether any is an error."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def error(self, file: str, line: int, col: int, message: str, expected: str = "", path: tuple = ()) -> None:
        self.items.append(Diagnostic(Severity.ERROR, file, line, col, path, message, expected))

    def warn(self, file: str, line: int, col: int, message: str, expected: str = "", path: tuple = ()) -> None:
        self.items.append(Diagnostic(Severity.WARNING, file, line, col, path, message, expected))

    @property
    def errors(self) -> int:
        return sum(d.severity is Severity.ERROR for d in self.items)


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset.

    >>> line_col("ab\\ncd", 4)
    (2, 2)
    """
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


class Lines:
    """Line numbers of offsets met in increasing order (one pass over the text, however many
    entries a merged file has).

    >>> n = Lines("a\\nb\\nc"); n.at(2), n.at(4), n.at(0)
    (2, 3, 1)
    """

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.n = text, 0, 1

    def at(self, pos: int) -> int:
        if pos < self.pos:
            self.pos, self.n = 0, 1
        self.n += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.n


def inside(root: Path, rel: str) -> Path | None:
    """``root/rel`` when it resolves (symlinks followed) to a path inside ``root``, else None.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> inside(d, "a/b.csv") == d.resolve() / "a" / "b.csv", inside(d, "../etc/passwd")
    (True, None)
    """
    base = root.resolve()
    p = (base / rel).resolve()
    return p if p.is_relative_to(base) and p != base else None


def read_bytes(path: Path, shown: str, problems: Problems) -> bytes | None:
    """The bytes of a regular file of at most ``MAX_BYTES``, or None with the reason recorded."""
    try:
        if not path.is_file():
            problems.error(shown, 1, 1, "not a regular file" if path.exists() else "no such file")
            return None
        size = path.stat().st_size
        if size > MAX_BYTES:
            problems.error(shown, 1, 1, f"{size:,} bytes: too large for a neighbour table or plan file", f"at most {MAX_BYTES:,} bytes")
            return None
        return path.read_bytes()
    except OSError as e:
        problems.error(shown, 1, 1, f"cannot read: {e.strerror or e}")
        return None


def decode(data: bytes, shown: str, problems: Problems) -> str | None:
    """UTF-8 text, or None with the first byte that is not text located (a NUL, or bytes that are
    not UTF-8).

    >>> p = Problems(); decode(b"ok\\n\\x00\\x01", "f", p), p.items[0].format()
    (None, 'f:2:1: binary content (a NUL byte at byte 3) (expected UTF-8 text: lldpd or EOS JSON, or ibnetdiscover output)')
    """
    expected = "UTF-8 text: lldpd or EOS JSON, or ibnetdiscover output"
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
        bad = -1
    except UnicodeDecodeError as e:
        text, bad = None, e.start
    if nul >= 0 and (bad < 0 or nul < bad):
        good = data[:nul].decode("utf-8", errors="replace")
        problems.error(shown, *line_col(good, len(good)), f"binary content (a NUL byte at byte {nul})", expected)
        return None
    if text is None:
        good = data[:bad].decode("utf-8", errors="replace")
        problems.error(shown, *line_col(good, len(good)), f"binary content (byte {bad} is not UTF-8)", expected)
        return None
    return text


def load_json(text: str, shown: str, problems: Problems) -> object | None:
    """Parsed JSON, or None with the place it breaks (a truncated file is told as such)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        ends = e.pos >= len(text.rstrip())
        what = "JSON ends early (truncated?)" if ends else f"not valid JSON: {e.msg}"
        problems.error(shown, e.lineno, e.colno, what, "a complete JSON document")
        return None
    except RecursionError:
        problems.error(shown, 1, 1, "JSON nested too deeply", "a neighbour table")
        return None


def find_key(text: str, key: str, start: int = 0) -> int:
    """Offset of ``"key":`` (as JSON writes it, raw or \\u-escaped) at or after ``start``; ``start``
    when absent. The readers use it to give each neighbour entry a line without a second parser: JSON
    objects keep their order, so the entries are found in one forward pass.

    >>> find_key('{"a": {"b": 1}, "b": 2}', "b", 8)
    16
    """
    plain = key.isascii() and key.isprintable() and '"' not in key and "\\" not in key
    for needle in (f'"{key}"',) if plain else dict.fromkeys((json.dumps(key, ensure_ascii=False), json.dumps(key))):
        i = text.find(needle, start)
        while i >= 0:
            j = i + len(needle)
            while j < len(text) and text[j] in " \t\r\n":
                j += 1
            if j < len(text) and text[j] == ":":
                return i
            i = text.find(needle, i + 1)
    return start
