"""JSON Schema of the site language, generated from the pydantic models (editor completion)."""

from __future__ import annotations

import json

from .spec.hall_types import SiteInput


def schema_text() -> str:
    schema = SiteInput.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "twin-site.schema.json"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
