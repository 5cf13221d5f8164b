"""The one validator of the input languages (site, scenario, sweep): pydantic's errors as located
findings in the language's own terms.

Each language validates its YAML against its root model and hands the errors here with that root:
unknown fields get a "did you mean" from the model they were written in (walked along the path),
types and ranges read as what was expected. A language that re-addresses positions (the site's hall
types and campus buildings) passes its own ``locate``.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Callable
from enum import Enum
from typing import Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from twin.lang.base import PATTERN_WORDS
from twin.lang.diagnostics import Diagnostic, Severity
from twin.lang.loader import Source

Locate = Callable[[Source, Severity, tuple, str, str], Diagnostic]


def diagnostic(src: Source, severity: Severity, path: tuple, message: str, expected: str = "") -> Diagnostic:
    """A finding at the position of ``path`` in ``src`` (no position without a source: the build's own
    default twin run reports a job that does not fit as text, twin/twins/default.py)."""
    if src is None:
        return Diagnostic(severity, "", 0, 0, tuple(path), message, expected)
    line, col = src.locate(tuple(path))
    return Diagnostic(severity, src.path, line, col, tuple(path), message, expected)


def error(src: Source, path: tuple, message: str, expected: str = "") -> Diagnostic:
    return diagnostic(src, Severity.ERROR, path, message, expected)


def pydantic_diagnostics(src: Source, exc: ValidationError, root: type[BaseModel], locate: Locate = diagnostic) -> list[Diagnostic]:
    """Every error of ``exc`` (validating ``src`` against ``root``) as a located finding; a required field
    written with a typo is one finding (the unknown field, "did you mean" the required one), not two."""
    out = []
    errs = exc.errors(include_url=False)
    explained = set(typo_renames(errs, root).values())
    for err in errs:
        if err["type"] == "missing" and tuple(err["loc"]) in explained:
            continue  # the typo's own finding names it
        loc = _clean_loc(src, tuple(err["loc"]))
        typ = err["type"]
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        expected = ""
        if typ == "missing":
            msg = f"missing required field '{loc[-1]}'"
            choices = literal_values(root, loc)
            expected = f"one of: {', '.join(choices)}" if choices else ""
        elif typ == "extra_forbidden":
            msg = f"unknown field '{loc[-1]}'"
            known = known_fields(root, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            expected = f"did you mean '{close[0]}'?" if close else ("one of: " + ", ".join(known[:12]) if known else "")
        elif typ in ("literal_error", "enum"):
            expected = msg.replace("Input should be ", "")
            msg = f"'{_short(err.get('input'))}' is not allowed"
        elif typ.endswith("_type") or typ.endswith("_parsing"):
            expected = msg.replace("Input should be ", "").replace("a valid ", "")
            msg = f"wrong type: got {_short(err.get('input'))!r}"
        elif typ == "string_pattern_mismatch":
            expected = PATTERN_WORDS.get((err.get("ctx") or {}).get("pattern", ""), "the form the field reference gives")
            msg = f"{_short(err.get('input'))!r} is not valid"
        elif typ == "finite_number":
            msg, expected = f"{_short(err.get('input'))} is not a finite number", "a finite number (the field reference gives its range)"
        elif typ in ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "too_short", "too_long"):
            expected = msg.replace("Input should be ", "").replace("Input should ", "").replace("String should ", "")
            msg = f"{_short(err.get('input'))!r} is out of range" if "than" in typ else f"{_short(err.get('input'))!r} is not valid"
        out.append(locate(src, Severity.ERROR, loc, msg, expected))
    return list(dict.fromkeys(out))


def typo_renames(errs: list[dict], root: type[BaseModel]) -> dict[tuple, tuple]:
    """{unknown field's location: the missing required field's location} for each unknown field whose name is
    close to a required field missing from the same mapping: the same mistake, a typo of that field."""
    missing = {tuple(x["loc"]) for x in errs if x["type"] == "missing"}
    out = {}
    for x in errs:
        if x["type"] != "extra_forbidden":
            continue
        loc = tuple(x["loc"])
        close = difflib.get_close_matches(str(loc[-1]), known_fields(root, loc[:-1]), n=1)
        if close and loc[:-1] + (close[0],) in missing:
            out[loc] = loc[:-1] + (close[0],)
    return out


def _clean_loc(src: Source, loc: tuple) -> tuple:
    """Drop the union-member tags pydantic puts in locations (``literal['all']``, ``function-after[...]``)
    while keeping real keys, which are recognised by being present in the YAML."""
    kept: tuple = ()
    for p in loc:
        if kept + (p,) in src.positions:
            kept += (p,)
        elif isinstance(p, str) and ("[" in p or p.startswith("function-")):
            continue
        else:
            kept += (p,)
    return kept


def _short(v) -> str:
    s = str(v)
    return s if len(s) <= 60 else s[:57] + "..."


def known_fields(root: type[BaseModel], parent: tuple) -> list[str]:
    """Field names (as written: aliases first) allowed at ``parent`` under ``root``, for 'did you mean'."""
    model = _walk(root, parent)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(f.alias or k for k, f in model.model_fields.items())
    return []


def literal_values(root: type[BaseModel], path: tuple) -> list[str]:
    """The values a field at ``path`` under ``root`` allows when it is a Literal or an Enum (else none).

    >>> from twin.lang.site.models import Site
    >>> literal_values(Site, ("catalog", "switches", "x", "config"))
    ['sonic', 'eos', 'opensm', 'none']
    """
    t = _walk(root, path)
    if get_origin(t) is Literal:
        return [str(a) for a in get_args(t)]
    if isinstance(t, type) and issubclass(t, Enum):
        return [str(m.value) for m in t]
    return []


def _walk(root: type[BaseModel], path: tuple):
    """The annotation found along ``path`` under ``root`` (None where the path leaves the models)."""
    model: object = root
    for p in path:
        if isinstance(model, type) and issubclass(model, BaseModel):
            if not isinstance(p, str):
                return None
            f = model.model_fields.get(p) or next((f for f in model.model_fields.values() if f.alias == p), None)
            if f is None:
                return None
            model = f.annotation
        else:
            model = unwrap_model(model, p)
            if model is None:
                return None
        model = strip_optional(model)
    return model


def strip_optional(t):
    if get_origin(t) in (Union, types.UnionType):
        args = [a for a in get_args(t) if a is not type(None)]
        if len(args) == 1:
            return strip_optional(args[0])
    return t


def unwrap_model(t, key):
    from typing import get_args, get_origin

    origin = get_origin(t)
    args = get_args(t)
    if origin is list and args:
        return strip_optional(args[0])
    if origin is dict and len(args) == 2:
        return strip_optional(args[1])
    return None
