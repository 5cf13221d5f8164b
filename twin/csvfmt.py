r"""The artifacts' CSV (``csv.writer(buf, lineterminator="\n")``, its default excel dialect), written fast.

``csv.writer`` formats field by field in C but still costs ~0.8 s for the ~200K rows of a 24K-GPU
site's NetBox set. :func:`table` and :func:`columns` give the same bytes by joining: a column whose
values hold no delimiter, quote or newline (almost all) is joined as it is; a column that does has its
distinct values quoted once each, as the excel dialect quotes (the value in double quotes, inner quotes
doubled). Where the two could differ, ``csv.writer`` writes the table instead: a value that is not a
``str`` (the writer's ``str()`` of numbers and ``None`` is the caller's to spell), a carriage return
(the writer's handling of ``\r`` differs between Python versions), a single-column table (the writer
quotes a lone empty field).

>>> table(("a", "b"), [("x", "1,5"), ("y", 'say "hi" twice')])
b'a,b\nx,"1,5"\ny,"say ""hi"" twice"\n'

A column of few distinct values (a medium, a length, a rack's hall) can be given as a :class:`Coded`
column, NumPy codes into its values: each distinct value is checked and quoted once, and a chunk's rows
take theirs by the codes (no value's text looked at per row).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence

import numpy as np


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> bytes:
    """The CSV of ``header`` then ``rows`` (every row as long as the header), as UTF-8 bytes."""
    if not rows:
        return columns(header, [[] for _ in header])
    first = rows[0]
    clean = len(header) > 1 and all(type(v) is str and "," not in v and '"' not in v for v in first)
    if clean:  # the rows joined as they are: right when no value needs quoting (the count says; the first row hints)
        try:
            text = "\n".join(map(",".join, (header, *rows)))
        except TypeError:  # a value that is not text
            return _written(header, None, rows)
        if (text.count(",") == len(rows) * (len(header) - 1) + len(header) - 1 and text.count("\n") == len(rows)
                and '"' not in text and "\r" not in text):
            return (text + "\n").encode("utf-8")
    return _joined(header, list(zip(*rows, strict=True)), rows)


def columns(header: Sequence[str], cols: Sequence[Sequence[str]]) -> bytes:
    """:func:`table` from the table's columns (each as long as the others, a list or a :class:`Coded`) instead
    of its rows."""
    return _joined(header, cols, None)


class Coded:
    """A column as ``codes`` (a NumPy integer array) into its distinct ``values``: row ``i`` holds
    ``values[codes[i]]``. Sliced, it keeps its values (and their CSV fields, made once)."""

    __slots__ = ("codes", "values", "_fields")

    def __init__(self, codes, values: Sequence[str], _fields=None):
        self.codes, self.values, self._fields = codes, values, _fields

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, at: slice) -> Coded:
        return Coded(self.codes[at], self.values, self.fields())

    def __iter__(self) -> Iterator[str]:
        return map(self.values.__getitem__, self.codes.tolist())

    def fields(self):
        """Its values as CSV fields (quoted where they need it), an object array; False where a value is not
        text or holds a carriage return (``csv.writer``'s to write)."""
        if self._fields is None:
            values = list(self.values)
            try:
                text = "".join(values)
            except TypeError:  # a value that is not text
                self._fields = False
                return False
            if "\r" in text:
                self._fields = False
                return False
            self._fields = np.empty(len(values), dtype=object)
            self._fields[:] = [_quote(v) for v in values] if "," in text or '"' in text or "\n" in text else values
        return self._fields


# rows rendered at a time by the *_in_chunks writers: a chunk's text (~0.7 MB of the cable schedule) stays in the
# CPU's cache from its join to its write, and its rows' lines (small objects) reuse the same memory chunk after
# chunk instead of faulting in fresh pages (100K-row chunks: the gigawatt emitter 14.2 -> 12.6 CPU s)
CHUNK_ROWS = 2_000


def columns_in_chunks(header: Sequence[str], cols: Sequence[Sequence[str]], size: int | None = None) -> Iterator[bytes]:
    """:func:`columns` as chunks of bytes, ``size`` rows at a time (joined, the same bytes: every field is quoted
    or not on its own, the header written once): the rows' lines and their text exist a chunk at a time, and a
    writer can write each before the next is made (the gigawatt site's ~3.4M cables)."""
    size = size or CHUNK_ROWS
    n = len(cols[0]) if cols else 0
    if n <= size:
        yield columns(header, cols)
        return
    yield columns(header, [[] for _ in header])
    for i in range(0, n, size):
        yield _joined(header, [c[i:i + size] for c in cols], None, head=False)


def table_in_chunks(header: Sequence[str], rows: Sequence[Sequence[str]], size: int | None = None) -> Iterator[bytes]:
    """:func:`table` as chunks of bytes, ``size`` rows at a time (as :func:`columns_in_chunks`)."""
    size = size or CHUNK_ROWS
    if len(rows) <= size:
        yield table(header, rows)
        return
    head = table(header, [])
    yield head
    for i in range(0, len(rows), size):
        yield table(header, rows[i:i + size])[len(head):]


def _joined(header: Sequence[str], cols: Sequence[Sequence[str]], rows: Sequence[Sequence[str]] | None,
            head: bool = True) -> bytes:
    """The table's bytes (``head``: with its header line; without, the rows alone)."""
    if len(header) < 2 or len(cols) != len(header):
        return _written(header, cols, rows, head)
    out = []
    for col in (header, *cols):
        if type(col) is Coded:  # its distinct values checked and quoted once (Coded.fields), taken by the codes
            fields = col.fields()
            if fields is False:
                return _written(header, cols, rows, head)
            out.append(fields[col.codes].tolist())
            continue
        if type(col) is np.ndarray:  # an object array of text
            col = col.tolist()
        try:
            text = "".join(col)
        except TypeError:  # a value that is not text
            return _written(header, cols, rows, head)
        if "\r" in text:
            return _written(header, cols, rows, head)
        if '"' in text:  # the distinct values that need it quoted (inner quotes doubled), the rest kept
            quoted = {v: _quote(v) for v in set(col) if "," in v or '"' in v or "\n" in v}
            col = list(map(quoted.get, col, col))
        elif "," in text or "\n" in text:  # no inner quotes: a value that needs it is wrapped, value by value
            col = [f'"{v}"' if "," in v or "\n" in v else v for v in col]
        out.append(col)
    first, *body = out
    lines = [",".join(first)] if head else []
    lines.extend(map(",".join, zip(*body, strict=True)))
    lines.append("")
    return "\n".join(lines).encode("utf-8")


def _quote(value: str) -> str:
    """One field as the excel dialect writes it (QUOTE_MINIMAL, doublequote)."""
    if "," in value or '"' in value or "\n" in value:
        return '"' + value.replace('"', '""') + '"'
    return value


def _written(header: Sequence[str], cols: Sequence[Sequence[str]], rows: Sequence[Sequence[str]] | None,
             head: bool = True) -> bytes:
    """The table through ``csv.writer`` itself (the cases :func:`table` does not join)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if head:
        w.writerow(header)
    w.writerows(rows if rows is not None else zip(*cols, strict=True))
    return buf.getvalue().encode("utf-8")
