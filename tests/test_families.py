"""A fabric family is one registry entry (twin/lang/site/families.py) plus its layout's steps: outside the
registry no code compares a family or names one, and every layout of the registry has a step in every
pass's table.

The scan reads the source with ``ast``: a comparison with a fabric's family (``fabric.family ==``,
``spec.fabric.family.value !=``) or with a family's name, a ``Family.<member>``, or a family's name as a
string anywhere (``"rail-only"`` as a dict key counts) is a finding; docstrings are prose and may name
families. Other things called family (a workload's model family ``llama``/``gpt``, a figure family, a
limit family) are not fabric families and may be compared.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from fabric_helpers import variant

from twin.lang.site.families import FAMILIES, FAMILY_FIELDS, LAYOUTS, Family, family_traits

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "twin" / "lang" / "site" / "families.py"
NAMES = {f.name for f in FAMILIES}
# the text search, narrowed to fabric families (comments included)
GREP = re.compile(r"fabric\.family(\.value)?\s*[!=]=|Family\.(AI_ZONE|FAT_TREE|RAIL)")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _chain(node: ast.AST) -> list[str]:
    """``spec.fabric.family.value`` -> ['spec', 'fabric', 'family', 'value']."""
    out = []
    while isinstance(node, ast.Attribute):
        out.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        out.append(node.id)
    return out[::-1]


def _is_fabric_family(node: ast.AST) -> bool:
    """A fabric's family (``fabric.family``, ``d.fabric.family.value``), a family's name, ``Family.<member>``,
    or a collection of them."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_fabric_family(e) for e in node.elts)
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    chain = _chain(node)
    if chain[:1] == ["Family"]:
        return True
    return "family" in chain and "fabric" in chain[:chain.index("family")]


def family_findings(source: str, where: str = "<string>") -> list[str]:
    """Every place ``source`` compares or names a fabric family."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        at = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Compare) and any(_is_fabric_family(x) for x in [node.left, *node.comparators]):
            out.append(f"{at}: compares a family")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Family":
            out.append(f"{at}: Family.{node.attr}")
        elif isinstance(node, ast.Constant) and node.value in NAMES and id(node) not in docs:
            out.append(f"{at}: names the family '{node.value}'")
    return out


def test_the_scan_finds_what_it_forbids():
    """The scan is not vacuous: each form of choosing by family is found, a trait query is not."""
    forbidden = {
        "if spec.fabric.family == Family.AI_ZONE: pass": 2,  # the comparison and the member
        "zoned = f.family.value != 'ai-zone-clos'": 2,  # the comparison and the name
        "if fabric.family == kind: pass": 1,
        "if family in ('fat-tree', 'rail-only'): pass": 3,  # the comparison and the two names
        "SHAPES = {'rail-only': 1}": 1,
        "x = Family.RAIL_ONLY": 1,
    }
    for src, n in forbidden.items():
        assert len(family_findings(src)) == n, src
    allowed = ['"""A doc naming fat-tree and rail-only."""', "if spec.family.zoned: pass",
               "t = family_traits(fabric.family).rails_apart", "print(f'{f.family.value} fabric')", "x = 'fat-tree-ish'",
               "if family == 'gpt': pass", "if fig.family: pass"]
    for src in allowed:
        assert family_findings(src) == [], src


def test_no_family_is_compared_outside_the_registry():
    found, grep = [], []
    for p in sorted((ROOT / "twin").rglob("*.py")):
        if p == REGISTRY:
            continue
        text = p.read_text(encoding="utf-8")
        rel = p.relative_to(ROOT).as_posix()
        found += family_findings(text, rel)
        grep += [f"{rel}:{i}: {ln.strip()}" for i, ln in enumerate(text.splitlines(), 1) if GREP.search(ln)]
    assert not found, "choose by the family's traits (twin/lang/site/families.py), not by its name:\n" + "\n".join(found)
    assert not grep, "\n".join(grep)
    assert family_findings(REGISTRY.read_text(encoding="utf-8"))  # the registry is where they are named


def layout_tables() -> dict[str, dict]:
    """Each pass's table from layout to its step (the list in twin/lang/site/families.py)."""
    from twin.compiler.fabric.synthesis import SYNTHESIS
    from twin.compiler.place.figures import LINKS
    from twin.compiler.place.naive import SWITCH_RACKS
    from twin.compiler.resolve.checks import NEEDS, PORTS, SWITCH_PATHS
    from twin.compiler.resolve.fabric_checks import SIZING, TIER_FIELDS
    from twin.compiler.resolve.pools import LEAF_NICS
    from twin.compiler.resolve.shape import SHAPES

    return {"shape.SHAPES": SHAPES, "checks.NEEDS": NEEDS, "checks.PORTS": PORTS, "checks.SWITCH_PATHS": SWITCH_PATHS,
            "fabric_checks.TIER_FIELDS": TIER_FIELDS, "fabric_checks.SIZING": SIZING, "pools.LEAF_NICS": LEAF_NICS,
            "naive.SWITCH_RACKS": SWITCH_RACKS, "figures.LINKS": LINKS, "synthesis.SYNTHESIS": SYNTHESIS}


def test_every_layout_has_a_step_in_every_pass():
    doc = REGISTRY.read_text(encoding="utf-8")
    for name, table in layout_tables().items():
        assert set(table) == set(LAYOUTS), f"{name} covers {sorted(table)}, the registry has layouts {sorted(LAYOUTS)}"
        assert name.split(".")[-1] in doc, f"the registry's docstring does not list {name}"
    assert {f.layout for f in FAMILIES} <= set(LAYOUTS)


def test_the_registry_is_the_site_language():
    """fabric.family accepts exactly the registry's names (the schema's enumeration too), and every
    family reads only documented family-specific fields."""
    assert [m.value for m in Family] == [f.name for f in FAMILIES]
    schema = json.loads((ROOT / "schemas" / "twin-site.schema.json").read_text(encoding="utf-8"))
    assert schema["$defs"]["Family"]["enum"] == [f.name for f in FAMILIES]
    for f in FAMILIES:
        assert f.reads <= set(FAMILY_FIELDS), f.name
        assert family_traits(f.name) is f is family_traits(Family(f.name))
    # a rail trait is one of the four the passes know (rails of a scalable unit: apart up to the spines, meeting at the cores)
    assert {(f.rails, f.has_rails, f.rail_groups, f.rails_apart) for f in FAMILIES} <= {
        ("", False, False, False), ("groups", True, True, False), ("apart", True, False, True), ("units", True, False, False)}


@pytest.mark.parametrize("family, field, value", [("fat-tree", "hb_domain", 8), ("ai-zone-clos", "tiers", 2), ("rail-only", "zones_per_hall", 2)])
def test_a_field_the_family_does_not_read_is_refused_naming_its_readers(tmp_path, family, field, value):
    """The refusal comes from the registry: located at the field, naming the families that read it."""
    from twin.compiler.resolve.validate import validate_file

    base = "lab-2zone" if family == "ai-zone-clos" else "lab-ib"
    p = variant(tmp_path, base, "x-" + field.replace("_", "-"), family=family, **{field: value})
    spec, diags = validate_file(p)
    assert spec is None
    (d,) = [d for d in diags if d.path == ("fabric", field)]
    readers = [f.name for f in FAMILIES if field in f.reads]
    line = next(i for i, ln in enumerate(p.read_text().splitlines(), 1) if ln.strip().startswith(f"{field}:"))
    assert d.line == line and f"this one is {family}" in d.message
    assert all(r in d.expected for r in readers) and family not in d.expected
