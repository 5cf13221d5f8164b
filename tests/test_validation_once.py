"""Validation reports each mistake once and all of them: a typo is one error with its suggestion, an
unknown rack type is reported (and nothing it would cause), and scenario and sweep errors speak the
language (names, units), never a regular expression."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.compiler.resolve.validate import validate_text
from twin.lang.base import Slug
from twin.lang.diagnostics import Severity, SpecError
from twin.lang.scenario.models import parse_scenario
from twin.lang.sweep.paths import PathError, check_value

ROOT = Path(__file__).resolve().parents[1]
LAB = (ROOT / "sites" / "lab-2zone.yaml").read_text()
REGEX = ("^", "$", "{0,", "[a-z")


def errors(text: str):
    spec, diags = validate_text(text, "s.yaml")
    assert spec is None
    return [d for d in diags if d.severity is Severity.ERROR]


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_three_mistakes_are_three_errors_each_with_its_suggestion():
    text = (LAB.replace("  rack_type: gt-rack", "  rack_type: gt-rak").replace("  racks_per_zone: 4", "  racks_per_zon: 4")
            .replace("  ctsw:\n    model: minipack2", "  ctsw:\n    model: minipak2"))
    errs = errors(text)
    got = {(e.line, e.dotted): e.message + "; " + e.expected for e in errs}
    assert got == {
        (line_of(text, "rack_type: gt-rak"), "fabric.rack_type"): "unknown rack type 'gt-rak'; did you mean 'gt-rack'?",
        (line_of(text, "racks_per_zon:"), "fabric.racks_per_zon"): "unknown field 'racks_per_zon'; did you mean 'racks_per_zone'?",
        (line_of(text, "model: minipak2"), "fabric.ctsw.model"): "unknown switch model 'minipak2'; did you mean 'minipack2'?",
    }
    # printed as one suggestion, not "(expected did you mean ...?)"
    assert all("(expected did you mean" not in e.format() and "; did you mean '" in e.format() for e in errs)


def test_an_unknown_rack_type_is_one_error():
    (e,) = errors(LAB.replace("  rack_type: gt-rack", "  rack_type: gt-rak"))
    assert e.dotted == "fabric.rack_type"  # not also "rack_types.gt-rak.rtsw: needs a rack switch" at another line


def test_scenario_and_sweep_errors_name_the_form_not_the_regex():
    text = (ROOT / "scenarios" / "lab-twins.yaml").read_text().replace("name: lab-twins", "name: Lab Twins").replace(
        "{name: e-ecmp-16qp,", "{name: e_ecmp,")
    try:
        parse_scenario(text, "s.yaml")
    except SpecError as e:
        msgs = [d.format() for d in e.diagnostics]
    assert len(msgs) == 2 and all("lower-case letters, digits and '-'" in m for m in msgs), msgs
    assert not [m for m in msgs if any(r in m for r in REGEX)], msgs
    try:
        check_value(Slug, "Bad Name")
    except PathError as e:
        said = str(e)
    assert "lower-case letters, digits and '-'" in said and not any(r in said for r in REGEX)


def test_a_campaign_length_takes_the_unit_the_language_uses_elsewhere():
    """campaign.days read '7 d' as "expected number"; it takes a duration with its unit (or days bare)."""
    base = (ROOT / "scenarios" / "lab-twins.yaml").read_text()
    assert "  days: 7\n" in base
    for written, days in (("7", 7.0), ("7 d", 7.0), ("2 week", 14.0), ("36 h", 1.5)):
        scn, _ = parse_scenario(base.replace("  days: 7\n", f"  days: {written}\n"), "s.yaml")
        assert scn.campaign.days == days
    try:
        parse_scenario(base.replace("  days: 7\n", "  days: 7 kg\n"), "s.yaml")
    except SpecError as e:
        (d,) = e.diagnostics
    assert d.dotted == "campaign.days" and d.message.startswith("'7 kg' is a mass; expected a campaign length: days as a number (54)")


def test_a_required_field_with_a_typo_is_one_error_and_the_site_is_checked_on():
    """A typo of a required field (positions_per_row) was two errors ("missing required field" at the
    hall's line and "unknown field" at the typo) and stopped the second stage, so an unknown rack type in
    the same file went unreported. Now: one error at the typo naming the field, and the rack type too."""
    text = LAB.replace("    positions_per_row: 8", "    positions_per_rw: 8").replace("  rack_type: gt-rack", "  rack_type: gt-rak")
    got = {(e.line, e.dotted): e.message + "; " + e.expected for e in errors(text)}
    assert got == {
        (line_of(text, "positions_per_rw:"), "halls[0].positions_per_rw"): "unknown field 'positions_per_rw'; did you mean 'positions_per_row'?",
        (line_of(text, "rack_type: gt-rak"), "fabric.rack_type"): "unknown rack type 'gt-rak'; did you mean 'gt-rack'?",
    }


def _scenario_errors(old: str, new: str) -> list[str]:
    """The messages of lab-twins.yaml with ``old`` replaced by ``new`` (which must make it invalid)."""
    text = (ROOT / "scenarios" / "lab-twins.yaml").read_text()
    assert old in text
    with pytest.raises(SpecError) as e:
        parse_scenario(text.replace(old, new, 1), "s.yaml")
    return [d.format() for d in e.value.diagnostics]


def test_a_scenario_required_field_with_a_typo_is_one_error():
    msgs = _scenario_errors("  - {workload: lab-llama-8b,", "  - {workloa: lab-llama-8b,")
    assert len(msgs) == 1 and "unknown field 'workloa'; did you mean 'workload'?" in msgs[0], msgs


def test_a_campaign_length_error_speaks_of_days_not_microseconds():
    msgs = _scenario_errors("  days: 7\n", "  days: soon\n")
    assert len(msgs) == 1 and "campaign.days: 'soon' is not a number with a unit; expected a campaign length" in msgs[0], msgs
    assert "us'" not in msgs[0]
