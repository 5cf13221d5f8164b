"""Property: any mutation of a valid spec ends in a clean error or a success, never a traceback."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
from fuzz_helpers import assert_located, mutate, physical_mutations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import InfeasibleError, Severity, SpecError

LAB_TEXT = (Path(__file__).resolve().parents[1] / "sites" / "lab-2zone.yaml").read_text()
LAB = yaml.safe_load(LAB_TEXT)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


PATHS = [p for p in _paths(LAB) if p]

# the same lab with its hall written as a hall type: mutations hit the type, the hall and the reference
TYPED = {**{k: v for k, v in LAB.items() if k != "halls"},
         "hall_types": {"lab-hall": {k: v for k, v in LAB["halls"][0].items() if k != "name"}},
         "halls": [{"name": LAB["halls"][0]["name"], "type": "lab-hall", "cross_aisle_every": 4}]}
TYPED_PATHS = [p for p in _paths(TYPED) if p]

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["700 W", "-5 kW", "1e400 W", "0 m", "3 m", "400 Gbit/s", "1:7", "0:0", "1-3", "9-2", "nan W",
                     "inf m", "405B", "2N", "N+1", "roce", "fat-tree", "", " ", "../x", "1e9 degC", "-300 degC"]),
    st.lists(st.integers(min_value=-3, max_value=300), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def _set(doc, path, value):
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _delete(doc, path):
    node = doc
    for p in path[:-1]:
        node = node[p]
    del node[path[-1]]


def check_text(text: str, tmp_path: Path):
    spec, diags = validate_text(text, "fuzz.yaml")
    for d in diags:
        assert d.line >= 0 and d.col >= 0 and d.message
        d.format()
    if spec is None:
        assert any(d.severity is Severity.ERROR for d in diags)
        return
    p = tmp_path / "fuzz.yaml"
    p.write_text(text)
    try:
        compile_design(p)
    except (SpecError, InfeasibleError) as e:
        assert str(e)


ops = st.lists(
    st.tuples(st.sampled_from(["set", "delete"]), st.sampled_from(PATHS), junk), min_size=1, max_size=3
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_structural_mutations(tmp_path, mutations):
    doc = copy.deepcopy(LAB)
    for op, path, value in mutations:
        try:
            if op == "set":
                _set(doc, path, value)
            else:
                _delete(doc, path)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced the parent
    check_text(yaml.safe_dump(doc, sort_keys=False), tmp_path)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=0, max_value=len(LAB_TEXT) - 1), st.integers(min_value=0, max_value=8),
       st.text(alphabet=" \t\n:-[]{}&*!|>'\"#%@`,?0123456789abcWkm", max_size=6))
def test_textual_mutations(tmp_path, at, cut, insert):
    check_text(LAB_TEXT[:at] + insert + LAB_TEXT[at + cut:], tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["set", "delete"]), st.sampled_from(TYPED_PATHS), junk), min_size=1, max_size=3))
def test_structural_mutations_of_hall_types(tmp_path, mutations):
    doc = copy.deepcopy(TYPED)
    for op, path, value in mutations:
        try:
            if op == "set":
                _set(doc, path, value)
            else:
                _delete(doc, path)
        except (KeyError, IndexError, TypeError):
            continue
    check_text(yaml.safe_dump(doc, sort_keys=False), tmp_path)


# The lab with its own catalog entries (the chassis and rack switch it uses, copied from the built-in
# catalog, and a stack), so mutations reach catalog figures and the job's fields: every value the
# twins compute with. A valid mutant is compiled and the build's default twin run on it: its numbers
# must be finite, never a traceback, a NaN or a step time below zero.
def _with_catalog() -> dict:
    builtin = yaml.safe_load((Path(__file__).resolve().parents[1] / "twin" / "lang" / "catalog" / "builtin.yaml").read_text())
    doc = copy.deepcopy(LAB)
    rack = doc["rack_types"][doc["fabric"]["rack_type"]]
    doc["catalog"] = {"chassis": {"gt-fuzz": builtin["chassis"][rack["chassis"]]},
                      "switches": {"mp2-fuzz": builtin["switches"][rack["rtsw"]]},
                      "stacks": {"stack-fuzz": builtin["stacks"]["meta-production-2024"]}}
    rack["chassis"], rack["rtsw"] = "gt-fuzz", "mp2-fuzz"
    doc["workloads"][0]["stack"] = "stack-fuzz"
    return doc


CATALOG = _with_catalog()


def _number_or_quantity(doc, path) -> bool:
    import re

    for p in path:
        doc = doc[p]
    return isinstance(doc, (int, float)) and not isinstance(doc, bool) or isinstance(doc, str) and bool(re.match(r"\s*[-+]?[\d.]", doc))


# the numbers and quantities of the catalog entries and the job (names, sources and port maps aside)
CATALOG_PATHS = [p for p in _paths(CATALOG) if (p[:1] == ("catalog",) and len(p) > 3 and "port_map" not in p
                                                or p[:2] == ("workloads", 0) and len(p) > 2) and _number_or_quantity(CATALOG, p)]


def check_twin(text: str, tmp_path: Path) -> None:
    """Validate, compile and run the build's default twin: a located error, an infeasible design or
    finite, physical figures."""
    import math

    from twin.twins.default import design_results

    spec, diags = validate_text(text, "fuzz.yaml")
    if spec is None:
        assert_located(diags, ("fuzz.yaml",))
        return
    p = tmp_path / "fuzz.yaml"
    p.write_text(text)
    try:
        d = compile_design(p, until="bom", placement_method="naive")
    except (SpecError, InfeasibleError) as e:
        assert str(e)
        return
    r = design_results(d)
    for s in r["schemes"]:
        assert all(math.isfinite(v) and v > 0 for v in s["busbw_GBps"] + s["time_ms"]), s
    job = r["job"]
    if job is not None and "error" not in job:
        for s in job["schemes"]:
            assert math.isfinite(s["step_s"]) and s["step_s"] > 0, s


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(physical_mutations(CATALOG_PATHS))
def test_catalog_and_job_mutations(tmp_path, ops):
    doc = copy.deepcopy(CATALOG)
    mutate(doc, ops)
    check_twin(yaml.safe_dump(doc, sort_keys=False), tmp_path)
