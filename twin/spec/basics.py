"""Small types every part of the site language shares: the frozen base model, slugs and ratios.

They live apart from :mod:`twin.spec.models` so that sections defined in their own modules (the
campus, :mod:`twin.spec.campus`) can use them without importing the models that hang them on a site.

>>> from pydantic import TypeAdapter
>>> TypeAdapter(Ratio).validate_python("1:2.8")
2.8
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

SLUG = r"^[a-z0-9][a-z0-9-]{0,62}$"
Slug = Annotated[str, Field(pattern=SLUG, description="lower-case letters, digits and '-', at most 63")]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def parse_ratio(v: Any) -> Any:
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


RATIO_RE = r"^\s*\d+(\.\d+)?\s*:\s*\d+(\.\d+)?\s*$"
Ratio = Annotated[
    float,
    Field(ge=1.0, le=1000.0),
    BeforeValidator(parse_ratio),
    WithJsonSchema({"anyOf": [{"type": "number", "minimum": 1}, {"type": "string", "pattern": RATIO_RE}],
                    "description": "a ratio such as '1:7' or a factor such as 7"}),
]
