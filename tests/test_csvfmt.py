"""twin.csvfmt writes what ``csv.writer(buf, lineterminator="\\n")`` writes, byte for byte.

The reference is the standard library's writer itself: any table of text (commas, quotes, newlines,
carriage returns, empty fields, non-ASCII), joined or handed back to the writer, must come out the same.
"""

from __future__ import annotations

import csv
import io

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.csvfmt import Coded, columns, columns_in_chunks, table

PLAIN = st.text(alphabet=st.sampled_from(list("ab Z0|;: ")), max_size=6)
TEXT = st.one_of(PLAIN, PLAIN, PLAIN, st.text(alphabet=st.sampled_from(list("ab 0") + [",", '"', "\n", "\r", "é", "'"]), max_size=6))


def reference(header, rows) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue().encode("utf-8")


@st.composite
def tables(draw):
    width = draw(st.integers(1, 5))
    header = draw(st.lists(TEXT, min_size=width, max_size=width))
    rows = draw(st.lists(st.lists(TEXT, min_size=width, max_size=width).map(tuple), max_size=8))
    return header, rows


@settings(max_examples=500, deadline=None)
@given(tables())
def test_same_bytes_as_the_csv_writer(t):
    header, rows = t
    assert table(header, rows) == reference(header, rows)
    assert columns(header, [[r[i] for r in rows] for i in range(len(header))]) == reference(header, rows)


@settings(max_examples=300, deadline=None)
@given(tables(), st.integers(1, 4), st.data())
def test_chunks_of_coded_columns_are_the_writers_bytes(t, size, data):
    # a column given as codes into its distinct values (quoted once) and the table rendered a few rows at a
    # time (the header once, no row split or repeated) come out as the writer writes the whole table
    header, rows = t
    cols = []
    for i in range(len(header)):
        col = [r[i] for r in rows]
        if data.draw(st.booleans()):
            values = sorted(set(col)) + ["unused"]
            col = Coded(np.array([values.index(v) for v in col], dtype=np.int64), values)
        cols.append(col)
    assert b"".join(columns_in_chunks(header, cols, size)) == reference(header, rows)


def test_quoting_and_what_goes_back_to_the_writer():
    # a comma, a quote and a newline are quoted (inner quotes doubled); other text is joined as is
    assert table(("a", "b"), [("x,y", 'q"'), ("", "l\nm")]) == b'a,b\n"x,y","q"""\n,"l\nm"\n'
    # numbers and None are the writer's to spell (str(1.5), empty for None); a lone empty field is quoted
    assert table(("n", "v"), [(1.5, None)]) == b"n,v\n1.5,\n"
    assert table(("only",), [("",)]) == b'only\n""\n'
    assert table(("a", "b"), []) == b"a,b\n"
