"""Which fields of two JSON documents differ: every changed leaf as a dotted path, and the changed inputs
(design.json's ``site``, the spec as validated) with their old and new values. :mod:`twin.diff.compare` uses both.
"""

from __future__ import annotations

from twin.lang.diagnostics import dotted


def input_changes(a: dict, b: dict) -> list[dict]:
    """What changed in the inputs: every leaf of design.json's ``site`` (the spec as validated, defaults
    filled) that differs, as ``{path, old, new}`` (None where a side lacks it).

    >>> input_changes({"site": {"fabric": {"atsw": {"oversubscription": 2.0}}}}, {"site": {"fabric": {"atsw": {"oversubscription": 4.0}}}})
    [{'path': 'fabric.atsw.oversubscription', 'old': 2.0, 'new': 4.0}]
    """
    sa, sb = a.get("site") or {}, b.get("site") or {}
    return [{"path": dotted(loc), "old": _leaf(sa, loc), "new": _leaf(sb, loc)} for loc in _changed(sa, sb, ())]


def _leaf(doc, loc: tuple):
    for k in loc:
        if isinstance(doc, dict) and k in doc:
            doc = doc[k]
        elif isinstance(doc, list) and isinstance(k, int) and k < len(doc):
            doc = doc[k]
        else:
            return None
    return doc


def _changed(a, b, loc: tuple) -> list[tuple]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [x for k in sorted(set(a) | set(b), key=str) for x in _changed(a.get(k), b.get(k), loc + (k,))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [x for i, (p, q) in enumerate(zip(a, b)) for x in _changed(p, q, loc + (i,))]
    return [] if a == b else [loc]


def changed_paths(a, b, prefix: str = "") -> list[str]:
    """Dotted paths of the leaves that differ between two JSON documents.

    >>> changed_paths({"a": {"b": 1, "c": [1, 2]}}, {"a": {"b": 1, "c": [1, 3]}, "d": 0})
    ['a.c[1]', 'd']
    """
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += changed_paths(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += changed_paths(x, y, f"{prefix}[{i}]")
        return out
    return [] if a == b else [prefix]
