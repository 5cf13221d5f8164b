"""The published schemas describe what twin reads and writes: every example scenario and sweep file
validates against its language's JSON Schema, and review.json and `twin simulate --json` validate
against the results schema and carry its version (a reader checks it first)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import unwrap

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test extra (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"


def validator(name: str):
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("language,folder", [("scenario", "scenarios"), ("sweep", "sweeps")])
def test_example_files_validate_against_their_language_schema(language, folder):
    v = validator(f"twin-{language}.schema.json")
    files = sorted((ROOT / folder).glob("*.yaml"))
    assert files
    for f in files:
        errors = [e.message for e in v.iter_errors(yaml.safe_load(f.read_text(encoding="utf-8")))]
        assert not errors, f"{f.name}: {errors[:3]}"
    # and the schema refuses what the language refuses: an unknown top-level field
    bad = yaml.safe_load(files[0].read_text(encoding="utf-8")) | {"colectives": []}
    assert any("colectives" in e.message for e in v.iter_errors(bad))


def test_review_json_and_simulate_json_carry_the_results_schema(tmp_path):
    from twin.twins.results import SCHEMA_VERSION

    v = validator("twin-results.schema.json")
    review = json.loads((ROOT / "generated" / "lab-2zone" / "review.json").read_text(encoding="utf-8"))
    assert review["schema_version"] == SCHEMA_VERSION
    assert not [e.message for e in v.iter_errors(review)]
    r = subprocess.run([sys.executable, "-m", "twin", "simulate", "sites/lab-2zone.yaml", "--scenario", "scenarios/allreduce-sweep.yaml",
                        "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = unwrap(r.stdout)
    assert doc["schema_version"] == SCHEMA_VERSION and not [e.message for e in v.iter_errors(doc)]
    # a document of another version (or none) is not a twin result of this schema
    assert list(v.iter_errors({**review, "schema_version": "0"}))
    assert list(v.iter_errors({k: x for k, x in doc.items() if k != "schema_version"}))
