"""The published schemas: a JSON Schema and a Markdown field reference for each input language (site,
scenario, sweep), generated from their models, and the JSON Schema of the result documents
(review.json, ``twin simulate --json``) and of the envelope every command's ``--json`` prints, from
:mod:`twin.twins.results`.

Where: a source checkout keeps them in its top-level ``schemas/`` (committed, held current by a test);
an installed wheel carries a read-only copy inside the package (``twin/schemas``), which
``twin schema --check`` can compare with the models it was installed with.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from twin.lang.reference import render
from twin.lang.scenario.models import Scenario
from twin.lang.site.written import PARTIAL_OF, SiteInput
from twin.lang.sweep.models import SweepFile
from twin.resources import data_dir, in_checkout
from twin.twins.results import Envelope, ReviewDocument, SimulateDocument

SCHEMA_FILE = "twin-site.schema.json"  # the site language's (the path `twin schema -o` names)
REFERENCE_FILE = "reference.md"
RESULTS_FILE = "twin-results.schema.json"
OUTPUT_FILE = "twin-output.schema.json"  # every command's --json envelope

# language: (root model, schema file, reference file, reference title, template models)
LANGUAGES: dict[str, tuple[type[BaseModel], str, str, str, dict]] = {
    "site": (SiteInput, SCHEMA_FILE, REFERENCE_FILE, "twin spec reference", PARTIAL_OF),
    "scenario": (Scenario, "twin-scenario.schema.json", "scenario-reference.md", "twin scenario reference", {}),
    "sweep": (SweepFile, "twin-sweep.schema.json", "sweep-reference.md", "twin sweep reference", {}),
}


def _dump(schema: dict, name: str) -> str:
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = name
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_text(language: str = "site") -> str:
    """The JSON Schema of ``language`` (site, scenario or sweep)."""
    root, name, *_ = LANGUAGES[language]
    return _dump(root.model_json_schema(mode="validation"), name)


def results_schema_text() -> str:
    """One schema for the result documents: review.json or a simulation, told apart by their fields."""
    defs: dict = {}
    refs = []
    for model in (ReviewDocument, SimulateDocument):
        s = model.model_json_schema(mode="serialization", ref_template="#/$defs/{model}")
        defs.update(s.pop("$defs", {}))
        defs[model.__name__] = s
        refs.append({"$ref": f"#/$defs/{model.__name__}"})
    return _dump({"title": "twin result documents", "oneOf": refs, "$defs": defs}, RESULTS_FILE)


def output_schema_text() -> str:
    """The envelope every command's ``--json`` prints (twin/cli/envelope.py)."""
    return _dump(Envelope.model_json_schema(mode="serialization", ref_template="#/$defs/{model}"), OUTPUT_FILE)


def schema_files(schema_path: Path) -> dict[Path, str]:
    """Every published schema file, the site schema at ``schema_path`` and the others beside it."""
    out: dict[Path, str] = {}
    for language, (root, name, ref, title, partial) in LANGUAGES.items():
        out[schema_path if language == "site" else schema_path.with_name(name)] = schema_text(language)
        out[schema_path.with_name(ref)] = render(root, title, partial)
    out[schema_path.with_name(RESULTS_FILE)] = results_schema_text()
    out[schema_path.with_name(OUTPUT_FILE)] = output_schema_text()
    return out


def default_schema_path(for_check: bool) -> Path | None:
    """The site schema ``twin schema`` writes (or checks) when no ``-o`` is given; the others go beside it.

    In a checkout: its ``schemas/`` folder. Installed: nothing to write (the package's copy is not
    the user's to edit, so the caller asks for ``-o``), but the package's copy can be checked.
    """
    if in_checkout() or for_check:
        return data_dir("schemas") / SCHEMA_FILE
    return None


def stale_files(files: dict[Path, str]) -> list[Path]:
    """The files that are missing or differ from what they should read."""
    return [p for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
