"""A Markdown field reference of an input language, generated from its root model (like the JSON Schema).

``twin schema`` writes one per language (``schemas/reference.md`` for sites,
``scenario-reference.md``, ``sweep-reference.md``), held current by a test, so the field
documentation can never drift from what validation accepts.
"""

from __future__ import annotations

import types
import typing
from enum import Enum

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from twin.lang.units import AREAL_LOAD, DATA_RATE, DATA_SIZE, LENGTH, MASS, POWER, TEMPERATURE, TIME, Bounds, fmt, readable

_KINDS = {"Power": POWER, "Length": LENGTH, "Mass": MASS, "ArealLoad": AREAL_LOAD, "DataRate": DATA_RATE,
          "DataSize": DATA_SIZE, "Time": TIME, "Temperature": TEMPERATURE}


def _kind_of(field) -> object | None:
    found = _kind_in(list(field.metadata))
    return found or _kind_in_annotation(field.annotation)


def _kind_in(metadata: list) -> object | None:
    for meta in metadata:
        desc = getattr(meta, "json_schema", None)
        if isinstance(desc, dict) and "stored in" in str(desc.get("description", "")):
            for k in _KINDS.values():
                if desc["description"].startswith(k.name + " "):
                    return k
    return None


def _kind_in_annotation(ann) -> object | None:
    if typing.get_origin(ann) is typing.Annotated:
        return _kind_in(list(ann.__metadata__))
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        for a in typing.get_args(ann):
            k = _kind_in_annotation(a)
            if k:
                return k
    return None


def _range(field, kind) -> str:
    """The field's domain as the reference prints it (``> 0 W, <= 10 kW``; ``>= 1, <= 10000``), or ""."""
    found = [m for m in _metadata(field.metadata, field.annotation) if isinstance(m, Bounds)]
    if found and kind is not None:
        return found[0].text(kind)
    words = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    meta = _metadata(field.metadata, field.annotation)
    parts = [f"{sign} {readable(getattr(m, op), kind) if kind else _number(getattr(m, op))}" for op, sign in words.items() for m in meta
             if isinstance(getattr(m, op, None), (int, float)) and not isinstance(getattr(m, op), bool)]
    return ", ".join(dict.fromkeys(parts))


def _number(v: float) -> str:
    """``1,000,000``, ``0.5``, ``1e+16``."""
    return f"{int(v):,}" if float(v).is_integer() and abs(v) < 1e15 else f"{v:g}"


def _metadata(own: list, ann) -> list:
    """A field's constraints: its own and those of its annotation (through Optional and Annotated)."""
    out = list(own)
    if typing.get_origin(ann) is typing.Annotated:
        out += [m for m in ann.__metadata__ if not hasattr(m, "metadata")]
        out += [c for m in ann.__metadata__ for c in getattr(m, "metadata", [])]
    elif typing.get_origin(ann) in (typing.Union, types.UnionType):
        for a in typing.get_args(ann):
            out += _metadata([], a)
    return out


def _type_name(ann) -> str:
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(parts) + (" (optional)" if type(None) in args else "")
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is list:
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}"
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"list of {_type_name(args[0])}"
    if origin is tuple:
        return "(" + ", ".join(_type_name(a) for a in args) + ")"
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if isinstance(ann, type) and issubclass(ann, Enum):
        return " \\| ".join(f"`{m.value}`" for m in ann)
    if isinstance(ann, type):
        return ann.__name__
    return str(ann)


def _models(model: type[BaseModel], seen: list[type[BaseModel]], partial_of: dict) -> None:
    if model in seen:
        return
    seen.append(model)
    if model in partial_of:  # its nested models are partial copies of ones listed under the full model
        return
    for f in model.model_fields.values():
        for sub in _nested(f.annotation):
            _models(sub, seen, partial_of)


def _nested(ann):
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        yield ann
    for a in typing.get_args(ann):
        yield from _nested(a)


def render(root: type[BaseModel], title: str, partial_of: dict[type[BaseModel], type[BaseModel]] | None = None) -> str:
    """The reference of the language whose files validate against ``root``; ``partial_of`` maps a
    template model (every field optional) to the model it templates, so its fields are not repeated."""
    partial_of = partial_of or {}
    models: list[type[BaseModel]] = []
    _models(root, models, partial_of)
    out = [f"# {title}", "", "Generated from the models by `twin schema`; do not edit.", ""]
    for m in models:
        out += [f"## {m.__name__}", ""]
        doc = " ".join((m.__doc__ or "").strip().split("\n\n")[0].split())
        if doc and not doc.startswith("!!!"):
            out += [doc, ""]
        fields = m.model_fields
        base = partial_of.get(m)
        if base is not None:  # a template of another model: say so instead of repeating its fields
            fields = {n: f for n, f in fields.items() if n not in base.model_fields or f.is_required()}
            missing = [f"`{n}`" for n in base.model_fields if n not in m.model_fields]
            rest = f"every {'other ' if fields else ''}field of {base.__name__}" + (f" except {', '.join(missing)}" if missing else "")
            out += [f"Fields: the ones below, then {rest}, all optional." if fields else f"Fields: {rest}, all optional.", ""]
            if not fields:
                continue
        out += ["| field | type | default | description |", "|---|---|---|---|"]
        for name, f in fields.items():
            kind = _kind_of(f)
            optional = type(None) in typing.get_args(f.annotation)
            if kind:
                typ = f"{kind.name} (`{kind.example}`)" + (" (optional)" if optional else "")
            else:
                typ = _type_name(f.annotation)
            if bounds := _range(f, kind):
                typ += f"; {bounds}"
            if f.is_required():
                default = "**required**"
            elif f.default_factory is not None:
                default = "(computed)"
            elif f.default is None or f.default is PydanticUndefined:
                default = "-"
            elif kind and isinstance(f.default, float):
                default = f"`{fmt(f.default, kind)}`"
            elif isinstance(f.default, Enum):
                default = f"`{f.default.value}`"
            else:
                default = f"`{f.default}`"
            desc = (f.description or "").replace("|", "\\|")
            out.append(f"| `{name}` | {typ} | {default} | {desc} |")
        out.append("")
    return "\n".join(out)
