"""Shared pieces of the input language: the frozen base model and the small parsed types (slugs,
ratios such as ``"1:7"``, row/position ranges such as ``"1-4, 7"``, counts such as ``405B``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator

SLUG = r"^[a-z0-9][a-z0-9-]{0,62}$"

# What a string field's pattern means, in the language's words: an error names this, never the regex
# (twin/lang/validator.py). A model with a pattern of its own registers it with :func:`pattern`.
PATTERN_WORDS: dict[str, str] = {SLUG: "a name of lower-case letters, digits and '-', starting with a letter or digit, at most 63 characters, such as 'e-ecmp-16qp'"}


def pattern(regex: str, words: str) -> str:
    """``regex``, registered with what it means in words (for error messages)."""
    PATTERN_WORDS[regex] = words
    return regex
Slug = Annotated[str, Field(pattern=SLUG, description="lower-case letters, digits and '-', at most 63")]


class Model(BaseModel):
    """The language's models: unknown fields refused, frozen, no infinite or NaN number anywhere, and a
    yes/no (``true``) never read as the number 1."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_number(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, bool) and info.field_name is not None and _numeric(cls, info.field_name):
            raise ValueError(f"{str(v).lower()} is a yes/no, not a number")
        return v


_NUMERIC: dict[tuple[type, str], bool] = {}


def _numeric(model: type[BaseModel], name: str) -> bool:
    """The field takes a number (int or float, a Literal of numbers) and not a yes/no."""
    key = (model, name)
    if key not in _NUMERIC:
        leaves = _leaves(model.model_fields[name].annotation)
        _NUMERIC[key] = bool(leaves & {int, float}) and bool not in leaves
    return _NUMERIC[key]


def _leaves(ann: Any) -> set:
    """The plain types a field annotation accepts (through Optional, unions, Annotated and Literal)."""
    import typing

    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _leaves(typing.get_args(ann)[0])
    if origin is typing.Literal:
        return {type(a) for a in typing.get_args(ann)}
    if origin is not None and origin not in (list, dict, tuple, set):
        return set().union(*(_leaves(a) for a in typing.get_args(ann)))
    return {ann} if isinstance(ann, type) else set()


# ---------------------------------------------------------------- free text

MAX_TEXT = 1000
FORMULA_START = "=+-@"  # a spreadsheet runs a cell that starts with one of these as a formula (CSV injection)


def _text(v: str) -> str:
    """Free text (descriptions, vendors, sources) is data wherever it lands: one line, no control or
    bidirectional-override characters (they add lines to a config or hide text), not a spreadsheet
    formula (bom.csv and the other CSVs carry it), at most 1,000 characters.

    >>> _text("Meta Wedge400, Broadcom Tomahawk 3")
    'Meta Wedge400, Broadcom Tomahawk 3'
    """
    if len(v) > MAX_TEXT:
        raise ValueError(f"text of {len(v):,} characters; at most {MAX_TEXT:,}")
    for i, c in enumerate(v):
        if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            raise ValueError(f"character {i + 1} is {_name(c)}; free text is one line of printable characters")
    if v[:1] and v[0] in FORMULA_START:
        raise ValueError(f"text starting with '{v[0]}' is a formula to a spreadsheet (the CSVs carry it); start with a letter or digit")
    return v


def _name(c: str) -> str:
    return f"U+{ord(c):04X}" + (f" ({unicodedata.name(c)})" if unicodedata.name(c, "") else "")


Text = Annotated[str, AfterValidator(_text)]


# ---------------------------------------------------------------- small parsed types


def _parse_ratio(v: Any) -> Any:
    """'1:7', '7:1' or 7 -> 7.0: an oversubscription factor is always >= 1 (the larger side first)."""
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*", v)
        if not m:
            raise ValueError(f"'{v}' is not a ratio; expected e.g. '1:7' or 7")
        a, b = float(m.group(1)), float(m.group(2))
        if a <= 0 or b <= 0:
            raise ValueError("ratio terms must be positive")
        return max(a, b) / min(a, b)
    return v


_RATIO_RE = r"^\s*\d+(\.\d+)?\s*:\s*\d+(\.\d+)?\s*$"
Ratio = Annotated[
    float,
    Field(ge=1.0, le=1000.0),
    BeforeValidator(_parse_ratio),
    WithJsonSchema({"anyOf": [{"type": "number", "minimum": 1}, {"type": "string", "pattern": _RATIO_RE}],
                    "description": "a ratio such as '1:7' or a factor such as 7"}),
]


def _parse_ranges(v: Any) -> Any:
    """'1-4, 7' -> [1, 2, 3, 4, 7]; lists of ints pass through. Rows and positions count from 1."""
    if isinstance(v, int) and not isinstance(v, bool):
        return [v]
    if isinstance(v, str):
        out: list[int] = []
        for part in v.split(","):
            part = part.strip()
            m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
            if not m:
                raise ValueError(f"'{part}' is not a number or range like '3-7'")
            a = int(m.group(1))
            b = int(m.group(2) or a)
            if b < a or b - a > 100_000:
                raise ValueError(f"range '{part}' is empty or too large")
            out.extend(range(a, b + 1))
        return out
    return v


IndexList = Annotated[
    list[Annotated[int, Field(ge=1)]],
    BeforeValidator(_parse_ranges),
    WithJsonSchema({"anyOf": [
        {"type": "integer", "minimum": 1},
        {"type": "string", "pattern": r"^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$"},
        {"type": "array", "items": {"type": "integer", "minimum": 1}},
    ], "description": "numbers from 1: 3, '1-4, 7' or [1, 2]"}),
]


def _parse_count(v: Any) -> Any:
    """'405B', '70B', '8M' -> numbers: model sizes are written the way people say them. '405e9' too:
    YAML 1.1 reads an exponent without a dot as a string.

    >>> _parse_count("405B"), _parse_count("405e9"), _parse_count(" 1.5 K ")
    (405000000000.0, 405000000000.0, 1500.0)
    """
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*([KMBT]?)\s*", v)
        if not m:
            raise ValueError(f"'{v}' is not a count; expected e.g. 405B or 405e9")
        return float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m.group(2)]
    return v


Count = Annotated[
    float,
    Field(gt=0),
    BeforeValidator(_parse_count),
    WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                              {"type": "string", "pattern": r"^\s*\d+(\.\d+)?([eE][+-]?\d+)?\s*[KMBT]?\s*$"}],
                    "description": "a count such as 405e9 or '405B'"}),
]
