"""Reading files nobody vouches for: a generated folder that may have been edited or planted, and
neighbour tables copied off thousands of devices.

Every file is read as bytes first and checked before it is parsed: a generated folder's files
through :mod:`twin.folder` (inside the folder, as its manifest records them), a neighbour file up to
``MAX_BYTES``, and text must be UTF-8 without NUL bytes (a binary file is named with the byte where
it stops being text). Every problem is a :class:`~twin.lang.diagnostics.Diagnostic` at
``FILE:LINE:COL``, collected in :class:`Problems` and shown together; nothing here raises on bad
input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from twin.lang.diagnostics import Diagnostic, Severity

# a neighbour table larger than this is not one (a merged file of a 24K-GPU site is tens of MB); checked
# before a byte is read. Reading holds about 5x a one-line merged file's size (20 MB: 183 MB peak with
# the interpreter's ~90 MB, issue 38), so this bounds the reader near 1.5 GB.
MAX_BYTES = 256 * 1024**2
FOLDER_ERROR = re.compile(r"^(?P<file>[^:\n]+?)(?::(?P<line>\d+):(?P<col>\d+))?: (?P<what>.*)$", re.S)


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
        self.text, self.pos, self.n, self.nl = text, 0, 1, -1
        self.end = len(text)  # where the document being read ends: key searches stop there (find_key)

    def at(self, pos: int) -> int:
        if pos < self.pos:
            self.pos, self.n, self.nl = 0, 1, -1
        self.n += self.text.count("\n", self.pos, pos)
        k = self.text.rfind("\n", self.pos, pos)
        self.nl = k if k >= 0 else self.nl
        self.pos = pos
        return self.n

    def line_col(self, pos: int) -> tuple[int, int]:
        """(line, column) of ``pos`` met in increasing order, without rescanning the text before it
        (a one-line file of 20 MB has no newline to stop a backward search)."""
        line = self.at(pos)
        return line, pos - self.nl


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


def json_error(e: json.JSONDecodeError, text: str, shown: str, problems: Problems) -> None:
    """A JSON syntax error at its line and column (a truncated file is told as such)."""
    ends = e.pos >= len(text.rstrip())
    what = "JSON ends early (truncated?)" if ends else f"not valid JSON: {e.msg}"
    problems.error(shown, e.lineno, e.colno, what, "a complete JSON document")


def load_json(text: str, shown: str, problems: Problems) -> object | None:
    """Parsed JSON, or None with the place it breaks (an integer too long to be one located too)."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as e:
        json_error(e, text, shown, problems)
        return None
    except NotANumber as e:
        digits = re.search(r"\d{%d,}" % (MAX_DIGITS + 1), text)
        problems.error(shown, *line_col(text, digits.start() if digits else 0), str(e), f"a number of at most {MAX_DIGITS} digits")
        return None
    except RecursionError:
        problems.error(shown, 1, 1, "JSON nested too deeply", "a neighbour table")
        return None


_WS = re.compile(r"[ \t\n\r]*")
MAX_DIGITS = 30  # an integer in a neighbour table (a port, a chassis id) longer than this is not one


class NotANumber(ValueError):
    """A JSON integer outside any neighbour table's domain (refused before Python converts it)."""


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise NotANumber(f"an integer of {len(digits.lstrip('-')):,} digits")
    return int(digits)


_DECODER = json.JSONDecoder(parse_int=_int)
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(s: str) -> bool:
    """A name holding half of a UTF-16 pair (JSON's ``\\ud800``): no text, and no file can hold it."""
    return bool(_SURROGATE.search(s))


def shown_name(s: str, limit: int = 200) -> str:
    """A name from a neighbour file as the terminal, CSV and HTML show it: every character that is not
    printable (escape sequences, bidirectional overrides, newlines) written as its Python escape, at
    most ``limit`` characters.

    >>> print(shown_name("spine\\x1b[2J\\u202e01"))
    spine\\x1b[2J\\u202e01
    """
    if not s.isprintable():
        s = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in s)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def first_key(text: str) -> str | None:
    """The first key of a top-level JSON object without parsing its value (None when the text does
    not open an object with a key).

    >>> first_key(' {"lldp": {}}'), first_key("[1]"), first_key("{}")
    ('lldp', None, None)
    """
    i = _WS.match(text, 0).end()
    if not text.startswith("{", i):
        return None
    i = _WS.match(text, i + 1).end()
    if not text.startswith('"', i):
        return None
    try:
        return json.decoder.scanstring(text, i + 1)[0]
    except (json.JSONDecodeError, ValueError):
        return None


def members(text: str) -> Iterator[tuple[str, int, object]]:
    """The members of a top-level JSON object one at a time: (key, offset of the key, value, offset after
    the value). A merged
    file of thousands of devices is parsed device by device, each key found where it really is (a
    search could meet the same name first as a neighbour). Raises ``json.JSONDecodeError`` at the
    place the text stops being JSON.

    >>> [(k, at, end) for k, at, _v, end in members('{"a": 1, "b": {"c": 2}}')]
    [('a', 1, 7), ('b', 9, 22)]
    """
    try:
        i = _WS.match(text, 0).end()
        if text[i] != "{":
            raise json.JSONDecodeError("Expecting '{'", text, i)
        i = _WS.match(text, i + 1).end()
        if text[i] == "}":
            return
        while True:
            if text[i] != '"':
                raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, i)
            key, j = json.decoder.scanstring(text, i + 1)
            j = _WS.match(text, j).end()
            if text[j] != ":":
                raise json.JSONDecodeError("Expecting ':' delimiter", text, j)
            try:
                value, end = _DECODER.raw_decode(text, _WS.match(text, j + 1).end())
            except NotANumber as e:
                raise json.JSONDecodeError(f"{e} in {key!r} (at most {MAX_DIGITS} digits)", text, i) from None
            yield key, i, value, end
            i = _WS.match(text, end).end()
            if text[i] == "}":
                if text[i + 1:].strip():
                    raise json.JSONDecodeError("Extra data", text, i + 1)
                return
            if text[i] != ",":
                raise json.JSONDecodeError("Expecting ',' delimiter", text, i)
            i = _WS.match(text, i + 1).end()
    except IndexError:
        raise json.JSONDecodeError("Expecting value", text, len(text)) from None


def find_key(text: str, key: str, start: int = 0, end: int | None = None) -> int:
    """Offset of ``"key":`` (as JSON writes it, raw or \\u-escaped) at or after ``start``; ``start``
    when absent. The readers use it to give each neighbour entry a line without a second parser: JSON
    objects keep their order, so the entries are found in one forward pass. ``end``: where the
    document being read ends; a key written with escapes the search does not try (``\\/``,
    ``\\u0045``) costs a scan to ``end``, never to the end of a merged file of thousands of devices.

    >>> find_key('{"a": {"b": 1}, "b": 2}', "b", 8)
    16
    """
    plain = key.isascii() and key.isprintable() and '"' not in key and "\\" not in key
    for needle in (f'"{key}"',) if plain else dict.fromkeys((json.dumps(key, ensure_ascii=False), json.dumps(key))):
        i = text.find(needle, start, end)
        while i >= 0:
            j = i + len(needle)
            while j < len(text) and text[j] in " \t\r\n":
                j += 1
            if j < len(text) and text[j] == ":":
                return i
            i = text.find(needle, i + 1, end)
    return start


class Folder:
    """The files of a generated folder, read through the project's reader of untrusted folders
    (:mod:`twin.folder`: paths kept inside, no symlink followed, each file at most the size and
    exactly the sha256 its manifest records), with every problem a located diagnostic."""

    def __init__(self, root: Path, problems: Problems) -> None:
        from twin.folder import FolderError, load_manifest

        self.root, self.problems = root, problems
        self.manifest = None
        try:
            self.manifest = load_manifest(root)
        except FolderError as e:
            self.folder_error(e, str(root / "manifest.json"))

    def folder_error(self, e: Exception, shown: str) -> None:
        """A :class:`twin.folder.FolderError` (``FILE[:LINE:COL]: what``) as a diagnostic."""
        m = FOLDER_ERROR.match(str(e))
        if m:
            self.problems.error(m["file"], int(m["line"] or 1), int(m["col"] or 1), m["what"], "the folder as `twin build` wrote it")
        else:
            self.problems.error(shown, 1, 1, str(e), "the folder as `twin build` wrote it")

    def shown(self, rel: str) -> str:
        return str(self.root / rel)

    def text(self, rel: str, required: bool = True) -> str | None:
        from twin.folder import FolderError, read_artifact

        shown = self.shown(rel)
        if self.manifest is None:
            return None
        if rel not in self.manifest.artifacts:
            if required:
                self.problems.error(shown, 1, 1, "not listed in manifest.json (not written by this build)", "an artifact of the build")
            return None
        try:
            data = read_artifact(self.root, self.manifest, rel)
        except FolderError as e:
            self.folder_error(e, shown)
            return None
        return decode(data, shown, self.problems)

    def json(self, rel: str) -> tuple[object | None, str]:
        """(document, its text); (None, "") when it cannot be read or parsed."""
        text = self.text(rel)
        return (None, "") if text is None else (load_json(text, self.shown(rel), self.problems), text)
