"""JSON Schema of the site language, generated from the pydantic models (editor completion), and the
files ``twin schema`` writes or checks: the schema and ``reference.md`` beside it.

Where: a source checkout keeps them in its top-level ``schemas/`` (committed, held current by a test);
an installed wheel carries a read-only copy inside the package (``twin/schemas``), which
``twin schema --check`` can compare with the models it was installed with.
"""

from __future__ import annotations

import json
from pathlib import Path

from twin.lang.site.hall_types import SiteInput
from twin.resources import data_dir, in_checkout

SCHEMA_FILE = "twin-site.schema.json"
REFERENCE_FILE = "reference.md"


def schema_text() -> str:
    schema = SiteInput.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_FILE
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_files(schema_path: Path) -> dict[Path, str]:
    """What the schema at ``schema_path`` and the reference beside it should read."""
    from twin.lang.site.reference import render

    return {schema_path: schema_text(), schema_path.with_name(REFERENCE_FILE): render()}


def default_schema_path(for_check: bool) -> Path | None:
    """The schema ``twin schema`` writes (or checks) when no ``-o`` is given.

    In a checkout: its ``schemas/`` folder. Installed: nothing to write (the package's copy is not
    the user's to edit, so the caller asks for ``-o``), but the package's copy can be checked.
    """
    if in_checkout() or for_check:
        return data_dir("schemas") / SCHEMA_FILE
    return None


def stale_files(files: dict[Path, str]) -> list[Path]:
    """The files that are missing or differ from what they should read."""
    return [p for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
