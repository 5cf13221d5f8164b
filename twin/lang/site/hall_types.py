"""Hall types: named hall templates, expanded into ordinary halls before validation.

A site with eight identical data halls writes the hall once under ``hall_types:`` and each hall names it::

    hall_types:
      meta-hall: {rows: 12, positions_per_row: 18, power: {utility: 7 MW, busway_rating: 500 kW}, ...}
    halls:
      - {name: dh1, type: meta-hall, origin: [0 m, 0 m]}
      - {name: dh2, type: meta-hall, origin: [20 m, 0 m], power: {utility: 9 MW}}

A hall takes every field it does not set from its type; nested mappings (``power``, ``cooling``) merge
key by key, anything else (numbers, lists such as ``reserved``) is replaced whole. The expansion works on
the loaded YAML (:class:`~twin.lang.loader.Source`), before the models see it, so every later stage, the
``Spec`` and ``design.json`` see ordinary halls. Each inherited value keeps the position of the line in
the type that gave it, and :func:`origin` tells validation which hall and type a path came from, so an
error in an inherited field points at the type and names the hall ("hall dh3 (type meta-hall): ...").

The language as written (with ``hall_types`` and ``type``) is described for the JSON Schema and
``schemas/reference.md`` by :mod:`twin.lang.site.written`; validation itself runs
:class:`~twin.lang.site.models.Site` on the expanded halls.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from typing import Any

from twin.lang.base import SLUG
from twin.lang.diagnostics import Diagnostic, Severity
from twin.lang.loader import PathT, Source


@dataclass(frozen=True)
class Inherited:
    """Where an expanded hall's value came from: ``hall`` took it from ``type`` at ``type_path``."""

    hall: str
    type: str
    type_path: PathT
    of: str = "hall"  # what inherited: a hall from its type, or a workload from its base (twin.lang.site.workload_bases)

    def label(self) -> str:
        """How a finding names it: ``hall dh3 (type meta-hall)``, ``workload w2 (base w1)``."""
        return f"{self.of} {self.hall} ({'type' if self.of == 'hall' else 'base'} {self.type})"


# ---------------------------------------------------------------- expansion


def expand(src: Source) -> tuple[Source, list[Diagnostic]]:
    """Halls with a ``type`` merged with their type; the source keeps a position for every new path.

    Returns the expanded source (``hall_types`` removed, ``inherited`` filled) and diagnostics: errors
    (unknown type, a type that is not a mapping, a type giving ``name`` or ``type``) stop validation;
    a warning marks a type no hall uses.

    >>> from twin.lang.loader import load_text
    >>> text = "hall_types:\\n  h: {rows: 2, power: {utility: 1 MW}}\\nhalls:\\n  - {name: a, type: h, power: {derating: 0.7}}\\n"
    >>> src, diags = expand(load_text(text))
    >>> src.data["halls"][0], diags
    ({'name': 'a', 'power': {'derating': 0.7, 'utility': '1 MW'}, 'rows': 2}, [])
    >>> origin(src, ("halls", 0, "power", "utility"))
    Inherited(hall='a', type='h', type_path=('hall_types', 'h', 'power', 'utility'), of='hall')
    """
    data = src.data
    if not isinstance(data, dict) or ("hall_types" not in data and not _typed_halls(data.get("halls"))):
        return src, []
    diags: list[Diagnostic] = []

    def say(severity: Severity, path: PathT, message: str, expected: str = "") -> None:
        diags.append(Diagnostic(severity, src.path, *src.locate(path), tuple(path), message, expected))

    types = data.get("hall_types", {})
    if not isinstance(types, dict):
        say(Severity.ERROR, ("hall_types",), "hall_types must map type names to hall fields", "hall_types: {name: {rows: 12, ...}}")
        return src, diags
    for name, body in types.items():
        loc = ("hall_types", name)
        if not re.fullmatch(SLUG, name):
            say(Severity.ERROR, loc, f"hall type name '{name}' is not valid", "lower-case letters, digits and '-', at most 63")
        if not isinstance(body, dict):
            say(Severity.ERROR, loc, "a hall type must be a mapping of hall fields", "rows:, positions_per_row:, power:, ...")
            continue
        for key, why in (("name", "each hall gives its own name"), ("type", "hall types do not name other types")):
            if key in body:
                say(Severity.ERROR, loc + (key,), f"a hall type cannot set '{key}': {why}", f"no '{key}' under hall_types")

    positions = dict(src.positions)
    inherited: dict[PathT, Inherited] = {}
    halls = data.get("halls")
    used: set[str] = set()
    under: dict[str, list] = {}  # type -> (path, position) of everything written under it
    out_halls = halls
    if isinstance(halls, list):
        out_halls = []
        for i, hall in enumerate(halls):
            if not (isinstance(hall, dict) and "type" in hall):
                out_halls.append(hall)
                continue
            tname = hall["type"]
            if not isinstance(tname, str) or tname not in types:
                say(Severity.ERROR, ("halls", i, "type"), f"unknown hall type '{tname}'", _did_you_mean(tname, types))
                out_halls.append(hall)
                continue
            used.add(tname)
            body = types[tname]
            if not isinstance(body, dict):
                out_halls.append(hall)
                continue
            label = hall["name"] if isinstance(hall.get("name"), str) else f"halls[{i}]"
            own = {k: v for k, v in hall.items() if k != "type"}
            index = under.setdefault(tname, [(p, xy) for p, xy in src.positions.items() if p[:2] == ("hall_types", tname)])
            out_halls.append(merge(body, own, ("hall_types", tname), ("halls", i), Inherited(label, tname, ()), index, positions, inherited))
    for name in types:
        if name not in used and isinstance(types[name], dict):
            say(Severity.WARNING, ("hall_types", name), f"hall type '{name}' is not used by any hall", "type: " + name + " in a hall, or remove it")
    if any(d.severity is Severity.ERROR for d in diags):
        return src, diags
    new_data = {k: (out_halls if k == "halls" else v) for k, v in data.items() if k != "hall_types"}
    return replace(src, data=new_data, positions=positions, inherited=inherited), diags


def origin(src: Source, path: PathT) -> Inherited | None:
    """The hall and type a diagnostic path came from, if the nearest value on it was inherited."""
    return src.inherited.get(src.anchor(path))


def _typed_halls(halls: Any) -> bool:
    return isinstance(halls, list) and any(isinstance(h, dict) and "type" in h for h in halls)


def merge(base: dict, own: dict, base_loc: PathT, own_loc: PathT, tag: Inherited, index: list,
           positions: dict, inherited: dict) -> dict:
    """``own`` over ``base``; every path taken from ``base`` gets its position and an :class:`Inherited`."""
    out: dict = {}
    for key, mine in own.items():
        value = base.get(key)
        if isinstance(value, dict) and isinstance(mine, dict):
            out[key] = merge(value, mine, base_loc + (key,), own_loc + (key,), tag, index, positions, inherited)
        else:
            out[key] = mine
    for key, value in base.items():
        if key not in own:
            out[key] = value
            _inherit(base_loc + (key,), own_loc + (key,), tag, index, positions, inherited)
    return out


def _inherit(base_loc: PathT, own_loc: PathT, tag: Inherited, index: list, positions: dict, inherited: dict) -> None:
    n = len(base_loc)
    for path, pos in index:
        if path[:n] == base_loc:
            new = own_loc + path[n:]
            positions[new] = pos
            inherited[new] = replace(tag, type_path=path)


def _did_you_mean(name: Any, types: dict) -> str:
    close = difflib.get_close_matches(str(name), [str(t) for t in types], n=1)
    if close:
        return f"did you mean '{close[0]}'?"
    return ("one of: " + ", ".join(sorted(map(str, types)))) if types else "a name defined under hall_types:"
