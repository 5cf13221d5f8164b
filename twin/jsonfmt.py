r"""The artifacts' JSON layout (sorted keys, one-space indent, trailing newline), written fast.

``json.dumps(obj, indent=1, sort_keys=True)`` runs the standard library's pure-Python encoder (any
``indent`` switches the C encoder off): ~10 encoder calls per value, seconds for the 1,536
``config_db.json`` files of a 24K-GPU site. :func:`dumps` gives the same bytes from orjson's
two-space layout, halving every line's indentation: JSON never has a raw newline inside a string, so
each newline in orjson's output is followed by the indentation only (a few numpy passes over the bytes;
a ``bytes.replace`` per level costs three times as much). Where the two encoders could
differ, the standard library writes the document instead: a string that needs an escape (a quote,
backslash or control character), DEL, a character outside ASCII when ``ensure_ascii``, keys that
are not strings, integers beyond 64 bits. Floats are the caller's to avoid (orjson and ``repr``
spell some differently: ``1e-05`` / ``1e-5``); the documents written here hold strings and integers.

>>> dumps({"b": ["x", 1], "a": {}})
b'{\n "a": {},\n "b": [\n  "x",\n  1\n ]\n}\n'
>>> dumps({"b": ["x", 1], "a": {}}) == (json.dumps({"b": ["x", 1], "a": {}}, indent=1, sort_keys=True) + "\n").encode()
True
"""

from __future__ import annotations

import json

import numpy as np
import orjson

_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def dumps(obj, ensure_ascii: bool = True) -> bytes:
    """``(json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=ensure_ascii) + "\n")`` as UTF-8
    bytes, for documents of dicts, lists, strings, integers, booleans and None."""
    try:
        raw = orjson.dumps(obj, option=_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        raw = b"\\"  # not orjson's to write: the standard library below
    if b"\\" in raw or b"\x7f" in raw or (ensure_ascii and not raw.isascii()):
        return (json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=ensure_ascii) + "\n").encode("utf-8")
    return _halve_indent(raw)


_SMALL = 16 << 10  # below this size a few bytes.replace passes beat numpy's fixed cost per call


def _halve_indent(raw: bytes) -> bytes:
    r"""orjson's two-space indentation as one space: after each newline, the first half of the
    indentation is dropped (numpy: one mask over the document, no Python loop over its lines; a small
    document, such as a switch's own SONiC tables, by :func:`_halve_small`).

    >>> _halve_indent(b'{\n  "a": [\n    " x"\n  ]\n}')
    b'{\n "a": [\n  " x"\n ]\n}'
    """
    if len(raw) < _SMALL and b"\t" not in raw:
        return _halve_small(raw)
    return _halve_numpy(raw)


def _halve_numpy(raw: bytes) -> bytes:
    """:func:`_halve_indent` as one numpy mask over the document."""
    a = np.frombuffer(raw, np.uint8)
    n = len(a)
    lines = np.flatnonzero(a == 10)
    drop = []
    k = 1
    while len(lines):
        # lines indented by at least 2k spaces (orjson indents by whole levels): drop their k-th space
        lines = lines[(a[np.minimum(lines + 2 * k - 1, n - 1)] == 32) & (a[np.minimum(lines + 2 * k, n - 1)] == 32)]
        drop.append(lines + k)
        k += 1
    keep = np.ones(n, bool)
    keep[np.concatenate(drop)] = False
    return a[keep].tobytes()


def _halve_small(raw: bytes) -> bytes:
    r""":func:`_halve_indent` by replacing: the deepest level first, each level's indentation becomes
    half as many tabs (so a shallower level's pattern cannot match it again), then the tabs become
    spaces. The document must hold no tab (JSON escapes one in a string as ``\t``).

    >>> _halve_small(b'{\n  "a": [\n    " x"\n  ]\n}')
    b'{\n "a": [\n  " x"\n ]\n}'
    """
    depth = 1
    while b"\n" + b"  " * depth in raw:
        depth += 1
    for k in range(depth - 1, 0, -1):
        raw = raw.replace(b"\n" + b"  " * k, b"\n" + b"\t" * k)
    return raw.replace(b"\t", b" ")
