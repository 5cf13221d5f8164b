"""Property: any mutation of a valid sweep file (and of the temperature CSV a scenario reads) is refused
with located errors or loads; a sweep that loads expands into variants without an exception. Nothing
else reaches the user: an infinite range bound used to be an OverflowError, a 131,072-character CSV
field a csv.Error, non-UTF-8 bytes a UnicodeDecodeError.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
from fuzz_helpers import SNIPPETS, assert_located, mutate, mutations, paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.lang.diagnostics import SpecError
from twin.sweep import engine
from twin.sweep.load import load_sweep
from twin.twins.power.thermal import read_hourly_csv

ROOT = Path(__file__).resolve().parents[1]
SWEEP = """name: fuzz
description: every form of axis on the lab site
site: lab-2zone.yaml
scenario:
  name: inline
  routing:
    - {name: e-ecmp-16qp, scheme: e-ecmp, qps: 16}
  jobs:
    - {workload: lab-llama-8b, order: topology}
placement: naive
axes:
  - path: fabric.atsw.oversubscription
    values: ["1:1", "2:1"]
  - path: rack_types.gt-rack.gpu_power_cap
    range: {from: 500 W, to: 0.7 kW, step: 100 W}
  - path: fabric.rtsw.uplinks
    range: {from: 8, to: 16, step: 8}
  - zip:
      fabric.ctsw.count: [2, 4]
      scenario.jobs[0].order: [topology, naive]
    labels: [two, four]
figures: [gpus, capex, step_time_s, 'design:derived.rack.power']
job: 1
scheme: e-ecmp-16qp
"""
BASE = yaml.safe_load(SWEEP)
PATHS = [p for p in paths(BASE) if p]
CSV = "hour,temperature\n0,20 degC\n1,21.5 degC\n2,19 degC\n3,-4 degC\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz-sweep")
    (d / "lab-2zone.yaml").write_bytes((ROOT / "sites" / "lab-2zone.yaml").read_bytes())
    return d


def check(text: str, folder: Path) -> None:
    p = folder / "s.yaml"
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        sw = load_sweep(p)
    except SpecError as e:
        assert_located(e.diagnostics, (str(p), str(folder / "lab-2zone.yaml")))
        return
    vs = engine.variants(sw)
    assert len(vs) == sw.count and all(v.site_text and len(v.hash) == 64 for v in vs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations(PATHS))
def test_structural_mutations(folder, ops):
    doc = copy.deepcopy(BASE)
    mutate(doc, ops)
    check(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), folder)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=0, max_value=len(SWEEP) - 1), st.integers(min_value=0, max_value=8), SNIPPETS)
def test_textual_mutations(folder, at, cut, insert):
    check(SWEEP[:at] + insert + SWEEP[at + cut:], folder)


@pytest.mark.parametrize("line, rng", [
    (15, "{from: 500 W, to: 1e999 W, step: 100 W}"), (15, "{from: nan W, to: 700 W, step: 100 W}"),
    (17, "{from: 8, to: .inf, step: 8}"), (17, "{from: .nan, to: 16, step: 8}"), (17, "{from: 8, to: 16, step: .inf}"),
    (17, "{from: -.inf, to: 16, step: 8}"), (17, "{from: 8, to: 99999999999999999999999999999, step: 1}"),
])
def test_range_bounds_that_are_not_finite_are_located(folder, line, rng):
    """An infinite or NaN bound used to end in OverflowError (int(inf)); now one error at the range."""
    old = "{from: 500 W, to: 0.7 kW, step: 100 W}" if line == 15 else "{from: 8, to: 16, step: 8}"
    p = folder / "inf.yaml"
    p.write_text(SWEEP.replace(old, rng))
    with pytest.raises(SpecError) as e:
        load_sweep(p)
    assert_located(e.value.diagnostics, (str(p),))
    assert [d.line for d in e.value.diagnostics] == [line] and "range" in e.value.diagnostics[0].format()


CSV_JUNK = st.one_of(
    st.binary(max_size=8),
    st.sampled_from([b"\xff\xfe", b"\x00", b'"', b",,,", b"\r", b"-500 degC", b"1e999 degC", b"nan degC", b"9" * 200,
                     b"x" * 131_073, b'"' + b"y" * 131_073 + b'"', "\u0661".encode(), b"24 K", b"24 W", b"\n" * 3]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=0, max_value=len(CSV) - 1), st.integers(min_value=0, max_value=6), CSV_JUNK)
def test_temperature_csv_mutations(tmp_path, at, cut, insert):
    raw = CSV.encode()
    p = tmp_path / "t.csv"
    p.write_bytes(raw[:at] + insert + raw[at + cut:])
    try:
        temps = read_hourly_csv(p)
    except SpecError as e:
        assert_located(e.diagnostics, (str(p),))
        return
    assert len(temps) >= 2 and np.all(np.isfinite(temps)) and temps.min() >= -100 and temps.max() <= 70
