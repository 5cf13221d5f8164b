"""Loader and validation errors point at the right line and column and say what was expected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import Severity
from twin.lang.loader import LoadError, load_text

LAB = (Path(__file__).resolve().parents[1] / "sites" / "lab-2zone.yaml").read_text()


def errors(text):
    spec, diags = validate_text(text, "s.yaml")
    return spec, [d for d in diags if d.severity is Severity.ERROR]


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


def test_lab_is_valid():
    spec, errs = errors(LAB)
    assert errs == [] and spec.gpus == 128 and spec.racks == 8


def test_wrong_dimension_points_at_value():
    text = LAB.replace("busway_rating: 250 kW", "busway_rating: 250 m")
    _, errs = errors(text)
    assert len(errs) == 1
    e = errs[0]
    assert e.line == line_of(text, "busway_rating: 250 m")
    assert e.col == text.splitlines()[e.line - 1].index("250 m") + 1
    assert e.dotted == "halls[0].power.busway_rating"
    assert "expected a power" in e.message
    assert re.match(r"s\.yaml:\d+:\d+: halls\[0\]\.power\.busway_rating: ", e.format())


def test_all_errors_reported_together():
    text = LAB.replace("pue: 1.3", "pue: 0.5").replace("slot_width: 0.6 m", "slot_width: 0.6 kg").replace("zones: 2", "zones: two")
    _, errs = errors(text)
    paths = {e.dotted for e in errs}
    assert {"power.pue", "halls[0].slot_width", "fabric.zones"} <= paths


def test_unknown_field_suggests_the_right_one():
    text = LAB.replace("row_pitch: 3.6 m", "row_pitchh: 3.6 m")
    _, errs = errors(text)
    assert any(e.message == "unknown field 'row_pitchh'" and "row_pitch" in e.expected for e in errs)
    e = next(e for e in errs if "row_pitchh" in e.message)
    assert e.line == line_of(text, "row_pitchh")


def test_missing_field_points_at_parent():
    text = LAB.replace("      busway_rating: 250 kW      # one A and one B busway per row\n", "")
    _, errs = errors(text)
    e = next(e for e in errs if "busway_rating" in e.message)
    assert e.message == "missing required field 'busway_rating'"
    assert e.line == line_of(text, "utility: 500 kW", ) or e.line == line_of(text, "    power:") + 1


def test_unknown_reference_lists_choices():
    text = LAB.replace("chassis: grand-teton-h100", "chassis: grand-teton-b200")
    _, errs = errors(text)
    e = errs[0]
    assert e.dotted == "rack_types.gt-rack.chassis" and "unknown chassis 'grand-teton-b200'" in e.message
    assert "grand-teton-h100" in e.expected
    assert e.line == line_of(text, "grand-teton-b200")


def test_gpu_count_must_match_zones():
    text = LAB.replace("  racks_per_zone: 4\n", "  racks_per_zone: 4\n  gpus: 100\n")
    _, errs = errors(text)
    assert any("100 GPUs does not match 2 zones x 4 racks x 16 GPUs per rack = 128" in e.message for e in errs)


def test_rtsw_port_budget():
    text = LAB.replace("uplinks: 16 ", "uplinks: 60 ")
    _, errs = errors(text)
    e = next(e for e in errs if "RTSW" in e.message)
    assert "16 down + 60 up = 76 ports, has 64" in e.message and e.expected == "at most 48 uplinks"


def test_ctsw_port_budget():
    # 64-port CTSW: 300 racks x 16 uplinks / 4 CTSWs = 1200 down ports per CTSW
    text = LAB.replace("racks_per_zone: 4", "racks_per_zone: 300")
    _, errs = errors(text)
    assert any(e.dotted == "fabric.ctsw.count" and "1200 down" in e.message for e in errs)


def test_atsw_port_budget():
    text = LAB.replace("    count: 2\n", "    count: 1\n").replace('oversubscription: "2:1"', 'oversubscription: "1:1"')
    # 2 zones x 4 CTSW x 16 up = 128 uplinks on one 64-port ATSW
    _, errs = errors(text)
    assert any(e.dotted == "fabric.atsw.count" and "need 128 ports each" in e.message for e in errs)


def test_asn_pool_exhaustion():
    text = LAB.replace("  routing:\n", "  routing:\n    asn_pools:\n      rtsw: {first: 4200000000, last: 4200000004}\n")
    _, errs = errors(text)
    assert any(e.message == "pool holds 5 ASNs; 8 rtsw ASNs are needed" and e.path[-1] == "rtsw" for e in errs)


def test_workload_bigger_than_site():
    text = LAB.replace("    dp: 8\n", "    dp: 16\n")
    _, errs = errors(text)
    assert any("= 256 GPUs, the site has 128" in e.message for e in errs)


def test_yaml_syntax_error_has_position():
    with pytest.raises(LoadError) as e:
        load_text("name: x\nhalls: [1, 2\npower: {}\n", "bad.yaml")
    d = e.value.diagnostics[0]
    assert d.file == "bad.yaml" and d.line >= 2 and "YAML syntax" in d.message


def test_duplicate_keys_and_python_tags_are_refused():
    with pytest.raises(LoadError) as e:
        load_text("name: a\nname: b\n", "d.yaml")
    assert "duplicate key 'name'" in e.value.diagnostics[0].message and e.value.diagnostics[0].line == 2
    with pytest.raises(LoadError):
        load_text("x: !!python/object/apply:os.system ['true']\n", "t.yaml")


def test_alias_bomb_is_bounded():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    prev = "a"
    for i in range(8):
        bomb += f"b{i}: &b{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
        prev = f"b{i}"
    with pytest.raises(LoadError) as e:
        load_text(bomb, "bomb.yaml")
    assert "too many values" in e.value.diagnostics[0].message


def test_name_must_be_a_slug():
    _, errs = errors(LAB.replace("name: lab-2zone", "name: ../../etc"))
    assert errs and errs[0].dotted == "name"


def test_ctsw_budget_counts_every_rtsw_of_a_rack():
    # 2 RTSWs per rack, 8 NICs and 8 uplinks each: a rack sends 16 uplinks, so 4 racks x 16 / 4 CTSWs = 16
    # down ports per CTSW; with 40 racks that is 160 > 64 ports, which counting one RTSW would miss (80 > 64
    # too), so use 24 racks: 96 down (2 RTSWs) vs 48 (1 RTSW) on a 64-port CTSW.
    text = LAB.replace("    rtsw: minipack2\n", "    rtsw: minipack2\n    rtsw_count: 2\n").replace(
        "uplinks: 16 ", "uplinks: 8 ").replace("racks_per_zone: 4", "racks_per_zone: 24").replace('oversubscription: "2:1"', 'oversubscription: "8:1"')
    _, errs = errors(text)
    assert any(e.dotted == "fabric.ctsw.count" and "96 down" in e.message for e in errs), [e.format() for e in errs]
