"""Override paths of a sweep: ``fabric.atsw.oversubscription``, ``halls[0].power.utility``, ``scenario.jobs[0].order``.

A path is dotted field names with ``[i]`` list indexes, written as the diagnostics print them. It is
checked against the language's models (:class:`~twin.lang.site.models.Site` or the scenario's) together with
the base document: a model field may be absent from the YAML (it gets created), a mapping entry
(``rack_types.gt-rack``) or a list item must exist. A value is checked against the field's own type
(units, ranges, enumerations) before any variant runs, so a wrong unit is an error in the sweep file.
Setting a path to ``null`` removes it from the variant (the field takes its default).

>>> parse_path("halls[0].power.utility")
('halls', 0, 'power', 'utility')
>>> from twin.lang.site.models import Site
>>> base = {"rack_types": {"gt-rack": {"chassis": "x", "servers": 2}}}
>>> check_value(field_type(Site, base, parse_path("rack_types.gt-rack.gpu_power_cap")), "500 W")
500.0
>>> field_type(Site, base, parse_path("rack_types.gt-rack.gpu_cap"))
Traceback (most recent call last):
...
twin.lang.sweep.paths.PathError: unknown field 'gpu_cap' in rack_types.gt-rack; did you mean 'gpu_power_cap'?
"""

from __future__ import annotations

import copy
import difflib
import re
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError

from twin.lang.base import PATTERN_WORDS
from twin.lang.diagnostics import dotted
from twin.lang.validator import strip_optional

_SEGMENT = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_-]*)((?:\[\d+\])*)")


class PathError(ValueError):
    """A path that does not exist or a value its field refuses; ``expected`` says what would do."""

    def __init__(self, message: str, expected: str = ""):
        tail = f"; {expected}" if expected.startswith("did you mean") else f" (expected {expected})" if expected else ""
        super().__init__(message + tail)
        self.message, self.expected = message, expected


def parse_path(text: str) -> tuple:
    """``"a.b[2].c"`` -> ``("a", "b", 2, "c")``; a malformed path raises :class:`PathError`."""
    if not isinstance(text, str) or not text.strip():
        raise PathError("a path must be a non-empty string", "e.g. fabric.atsw.oversubscription")
    out: list = []
    for part in text.strip().split("."):
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise PathError(f"'{text}' is not a path", "dotted field names with [i] for list items, e.g. halls[0].power.utility")
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return tuple(out)


def field_type(root: type[BaseModel], data: Any, path: tuple) -> Any:
    """The type (with its field's constraints) a value at ``path`` must have; PathError when the path
    does not exist in the model, or names a mapping entry or list item the base document lacks."""
    t: Any = root
    leaf: Any = root
    for k, p in enumerate(path):
        where = dotted(path[:k]) or "the document"
        origin = get_origin(t)
        if isinstance(t, type) and issubclass(t, BaseModel):
            if not isinstance(p, str) or p not in t.model_fields:
                known = sorted(t.model_fields)
                close = difflib.get_close_matches(str(p), known, n=1)
                raise PathError(f"unknown field '{p}' in {where}", f"did you mean '{close[0]}'?" if close else "one of: " + ", ".join(known))
            f = t.model_fields[p]
            leaf = Annotated[f.annotation, f]
            t = strip_optional(f.annotation)
            data = data.get(p) if isinstance(data, dict) else None
        elif origin is dict:
            if not isinstance(p, str):
                raise PathError(f"{where} is a mapping: [{p}] names no entry", "an entry name")
            if not isinstance(data, dict) or p not in data:
                names = sorted(data) if isinstance(data, dict) else []
                close = difflib.get_close_matches(p, names, n=1)
                raise PathError(f"{where} has no entry '{p}'", f"did you mean '{close[0]}'?" if close else ("one of: " + ", ".join(names) if names else "an entry the base document has"))
            leaf = t = strip_optional(get_args(t)[1])
            data = data[p]
        elif origin is list:
            n = len(data) if isinstance(data, list) else 0
            if not isinstance(p, int) or not 0 <= p < n:
                raise PathError(f"{where} has no item [{p}]", f"an index 0-{n - 1}" if n else "a list the base document has")
            leaf = t = strip_optional(get_args(t)[0])
            data = data[p]
        else:
            raise PathError(f"{where} is a value, not a section: it has no '{p}'", f"a path ending at {where}")
    return leaf


def check_value(kind: Any, value: Any) -> Any:
    """``value`` validated as ``kind`` (None passes: it removes the path); PathError with the reason."""
    if value is None:
        return None
    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "string_pattern_mismatch":  # the language's words, never the regex
            msg = "not valid; expected " + PATTERN_WORDS.get((err.get("ctx") or {}).get("pattern", ""), "the form the field reference gives")
        inner = dotted(tuple(err["loc"]))
        said = msg if str(value) in msg else f"{value!r}: {msg}"
        raise PathError(said + (f" (at {inner})" if inner else "")) from None


def apply(data: dict, overrides: list[tuple[tuple, Any]]) -> dict:
    """A deep copy of ``data`` with every ``(path, value)`` set (None deletes), in order.

    >>> apply({"a": {"b": 1}}, [(("a", "c"), 2), (("a", "b"), None), (("d", "e"), "x"), (("f", "g"), None)])
    {'a': {'c': 2}, 'd': {'e': 'x'}}
    """
    out = copy.deepcopy(data)
    for path, value in overrides:
        node = out
        for p in path[:-1]:
            if isinstance(p, int):
                node = node[p]
            else:
                if not isinstance(node.get(p), (dict, list)):
                    if value is None:
                        break  # removing below a section that is not there: nothing to remove
                    node[p] = {}
                node = node[p]
        else:
            _set(node, path[-1], value)
    return out


def _set(node, last, value) -> None:
    if value is None:
        if isinstance(last, str):
            node.pop(last, None)
    else:
        node[last] = copy.deepcopy(value)
