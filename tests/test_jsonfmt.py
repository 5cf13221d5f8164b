"""twin.jsonfmt writes what ``json.dumps(indent=1, sort_keys=True)`` writes, byte for byte.

The reference is the standard library itself: any document of dicts, lists, strings, integers,
booleans and None (the artifacts' JSON) must come out identical, whether orjson writes it (the
indentation halved) or the standard library (escapes, non-ASCII, odd keys).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.jsonfmt import _OPTIONS, _halve_indent, _halve_numpy, _halve_small, dumps

# keys and strings with spaces (runs of them, leading ones: the indentation must not be confused
# with them), quotes, backslashes, control characters, DEL and non-ASCII
# with the plain alphabet alone most documents go through orjson, with the full one most fall back
PLAIN = st.text(alphabet=st.sampled_from(list("ab Z0|: ")), max_size=8)
TEXT = st.one_of(PLAIN, PLAIN, st.text(alphabet=st.sampled_from(list("ab Z0|: ") + ['"', "\\", "\n", "\x7f", "\x01", "é", "→"]), max_size=8))
SCALAR = st.one_of(TEXT, st.integers(min_value=-(2**70), max_value=2**70), st.booleans(), st.none())
DOC = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
                   max_leaves=30)


def reference(obj, ensure_ascii: bool = True) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=ensure_ascii) + "\n").encode("utf-8")


@settings(max_examples=400, deadline=None)
@given(DOC, st.booleans())
def test_same_bytes_as_the_standard_library(doc, ensure_ascii):
    assert dumps(doc, ensure_ascii=ensure_ascii) == reference(doc, ensure_ascii)


def test_deep_documents_and_leading_spaces():
    # six levels deep, and strings that begin with spaces right after the indentation
    doc = {"t": {"k": {"f": [[{"x": ["  two", " one", "   "]}]], "e": {}, "l": []}}, "a": " v"}
    assert dumps(doc) == reference(doc)
    assert b'\n       "  two",\n' in dumps(doc)  # seven levels: seven spaces, then the string's own two


def test_halving_keeps_everything_but_the_first_half_of_each_indentation():
    raw = b'{\n  "a": {\n    "b": "  c"\n  }\n}\n'
    assert _halve_indent(raw) == b'{\n "a": {\n  "b": "  c"\n }\n}\n'


@settings(max_examples=300, deadline=None)
@given(DOC)
def test_both_ways_of_halving_agree(doc):
    # small documents are halved by bytes.replace passes, large ones by a numpy mask: the same bytes
    try:
        raw = orjson.dumps(doc, option=_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return
    if b"\t" not in raw:
        assert _halve_small(raw) == _halve_numpy(raw)


def test_a_large_document_is_halved_as_a_small_one():
    doc = {f"k{i:05d}": {"v": [i, " x", {"d": "  y"}]} for i in range(2000)}  # ~150 KB: the numpy path
    raw = orjson.dumps(doc, option=_OPTIONS)
    assert len(raw) > 16 << 10 and _halve_indent(raw) == _halve_small(raw) == reference(doc)


def test_integer_keys_and_big_integers_follow_the_standard_library():
    doc = {1: 2**80, 2: [{"2": -(2**65)}]}
    assert dumps(doc) == reference(doc)
