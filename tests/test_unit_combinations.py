"""Every scalable-unit combination is built exactly as counted or refused with counts that build (issue 36).

The GB200 NVL72 SuperPOD example [dgx-gb200-ra] as a fabric-only study (no floor to run short of power) with
its unit's fields drawn from a fixed grid: hosts per leaf (divisors of a rack's 18 trays, whole racks, and
counts that are neither), leaf uplinks, spine down and up ports, racks per unit, where the rails meet and the
rail group. Each draw is either refused, every error at a line of the file with what was expected, where a
spine count that takes the links unevenly names spine down-port counts that then pass that check, or built
with every leaf at its stated hosts down and uplinks up, every spine alike, and the graph equal to the shape
(:func:`twin.compiler.fabric.synthesis.mismatches`). A draw the refusals miss shows up as a mismatch or an
exception in the builder.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import yaml

from twin.compiler.fabric.synthesis import mismatches
from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.validate import validate_file

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "sites" / "gb200-nvl72-superpod.yaml"
MEDIA = {"nic-leaf": ["aoc-400g"], "leaf-spine": ["aoc-400g"], "spine-core": ["aoc-400g"]}


def study(tmp: Path, name: str, units: int, unit: dict) -> Path:
    doc = yaml.safe_load(SITE.read_text())
    for key in ("halls", "power", "workloads"):
        doc.pop(key, None)
    doc["fabric"].update(gpus=72 * unit["racks"] * units, media=MEDIA)
    doc["fabric"]["unit"] = unit
    p = tmp / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def draw(rnd: random.Random) -> tuple[int, dict]:
    unit = {"racks": rnd.choice([8, 8, 4, 6]),
            "leaf": {"hosts": rnd.choice(["rack", 1, 2, 3, 6, 9, 18, 36, 7, 54]), "up": rnd.choice([6, 9, 12, 18, 24])},
            "spine": {"down": rnd.choice([8, 12, 16, 18, 24, 32, 36, 48]), "up": rnd.choice([8, 16, 24, 32])},
            "rails_meet": rnd.choice(["core", "spine"])}
    if (g := rnd.choice([None, None, 1, 2, 3, 4])) is not None:
        unit["rail_group"] = g
    return rnd.choice([1, 2, 3]), unit


def test_every_combination_is_built_as_counted_or_refused_with_counts_that_build(tmp_path):
    rnd = random.Random(36)
    built = refused = 0
    for i in range(160):
        units, unit = draw(rnd)
        spec, diags = validate_file(study(tmp_path, f"u{i}", units, unit))
        if spec is None:
            refused += 1
            errors = [d for d in diags if d.severity.name == "ERROR"]
            assert errors and all(d.line > 0 and d.expected for d in errors), (unit, errors)
            for d in errors:
                if d.path == ("fabric", "unit", "spine", "down"):
                    for down in re.findall(r"down (\d+) \(", d.expected):
                        fixed = {**unit, "spine": {**unit["spine"], "down": int(down)}}
                        _, again = validate_file(study(tmp_path, f"u{i}-{down}", units, fixed))
                        assert not [e for e in again if e.path == d.path], (unit, d.expected, down)
            continue
        built += 1
        d = compile_design(study(tmp_path, f"u{i}", units, unit), until="fabric")
        us = d.spec.shape.unit
        assert mismatches(d.spec.shape, d.fabric) == [], unit
        down, up = Counter(), Counter()
        for lk in d.fabric.cables():
            up[lk.a] += 1
            down[lk.b] += 1
        by_role: dict[str, set] = {}
        for n, r in d.fabric.graph.nodes(data="role"):
            if r in ("leaf", "spine"):
                by_role.setdefault(r, set()).add((down[n], up[n]))
        assert by_role == {"leaf": {(us.leaf_hosts, us.leaf_up)}, "spine": {(us.spine_down, us.spine_up)}}, unit
        assert Counter(r for _, r in d.fabric.graph.nodes(data="role"))["leaf"] == us.counts()[0], unit
    assert built >= 10 and refused >= 100  # the grid reaches both sides


def test_a_rail_group_of_one_rail_is_the_core_drawing_and_is_refused_as_such(tmp_path):
    unit = {"racks": 8, "leaf": {"hosts": "rack", "up": 18}, "spine": {"down": 24, "up": 24}, "rails_meet": "spine", "rail_group": 1}
    spec, diags = validate_file(study(tmp_path, "one", 2, unit))
    (d,) = [d for d in diags if d.severity.name == "ERROR"]
    assert spec is None and d.path == ("fabric", "unit", "rail_group") and d.line > 0
    assert "keeps the rails apart up to the cores" in d.message and d.expected == "one of 2, 4 (rails meeting at the spines), or rails_meet: core"
