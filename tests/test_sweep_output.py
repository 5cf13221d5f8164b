"""A sweep's files as a planner reads them (issue 27): units in every CSV header, whole numbers as
integers, one column per axis, a winner named only beyond the job twin's stated error, Pareto axes
that show the real spread.

The figures here are set by hand (the worker's part is tested in test_sweep.py on a real cluster):
what is under test is how the output states them, and a wrong writer gets each assertion wrong.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from twin.sweep import engine
from twin.sweep.load import load_sweep
from twin.sweep.output import axis_columns, axis_limits, write
from twin.twins.workload.validation import STATED_ERROR

ROOT = Path(__file__).resolve().parents[1]
SWEEP = """name: t
site: lab-2zone.yaml
placement: naive
scenario:
  name: s
  routing: [{name: e, scheme: e-ecmp, qps: 16}]
  jobs:
    - {workload: lab-llama-8b, order: topology}
axes:
  - path: fabric.atsw.oversubscription
    values: ["1:1", "2:1", "4:1"]
  - path: scenario.jobs[0].order
    values: [topology, naive]
figures: [gpus, capex, step_time_s, delivered_tokens_per_day, tokens_per_day_per_dollar, draw_mw]
"""


@pytest.fixture
def sweep(tmp_path):
    (tmp_path / "lab-2zone.yaml").write_bytes((ROOT / "sites" / "lab-2zone.yaml").read_bytes())
    (tmp_path / "t.yaml").write_text(SWEEP)
    return load_sweep(tmp_path / "t.yaml")


def outcome(sw, per_dollar: list[float]) -> engine.Outcome:
    vs = engine.variants(sw)
    res = {}
    for v, tpd in zip(vs, per_dollar):
        capex = 7.4e6 - 10_000.0 * v.index
        res[v.hash] = {"status": "ok", "error": "", "seconds": 1.0, "figures": {
            "gpus": 128.0, "capex": capex, "step_time_s": 0.78 + v.index / 1000, "delivered_tokens_per_day": tpd * capex,
            "tokens_per_day_per_dollar": tpd, "draw_mw": 0.25}}
    return engine.Outcome(vs, res, computed=len(vs))


def test_headers_carry_units_and_counts_are_integers(sweep, tmp_path):
    (tmp_path / "out").mkdir()
    files = write(sweep, outcome(sweep, [7800.0] * 6), tmp_path / "out")
    rows = list(csv.reader(io.StringIO(files["results.csv"].decode())))
    head = rows[0]
    assert head[-6:] == ["gpus [1]", "capex [USD]", "step_time_s [s]", "delivered_tokens_per_day [token/d]",
                         "tokens_per_day_per_dollar [token/d/USD]", "draw_mw [MW]"]
    first = dict(zip(head, rows[1]))
    assert first["gpus [1]"] == "128" and first["capex [USD]"] == "7390000" and first["step_time_s [s]"] == "0.781"
    table = pq.read_table(io.BytesIO(files["results.parquet"]))
    assert str(table.schema.field("gpus").type) == "int64" and table.column("gpus").to_pylist() == [128] * 6
    assert str(table.schema.field("step_time_s").type) == "double"
    assert table.schema.field("capex").metadata == {b"unit": b"USD"} and table.schema.field("gpus").metadata == {b"unit": b"1"}


def test_each_axis_is_its_own_column_with_whole_values(sweep):
    vs = engine.variants(sweep)
    assert axis_columns(sweep, vs) == [("oversubscription", ["1:1", "1:1", "2:1", "2:1", "4:1", "4:1"]),
                                       ("order", ["topology", "naive"] * 3)]


def test_a_winner_only_beyond_the_stated_error(sweep, tmp_path):
    close = [7800.0, 7790.0, 7810.0, 7805.0, 7780.0, 7795.0]  # a 0.4% spread: inside the twin's 2.8%
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    text = write(sweep, outcome(sweep, close), tmp_path / "a")["summary.md"].decode()
    assert f"No variant leads on delivered tokens per day per dollar of capex by more than the job twin's stated error ({100 * STATED_ERROR:.1f}%)" in text
    assert "variants 3 (oversubscription=2:1, order=topology), 4 (" in text and "Most delivered" not in text
    clear = [7800.0, 7790.0, 9000.0, 7805.0, 7780.0, 7795.0]  # variant 3 leads by 15.3%
    text = write(sweep, outcome(sweep, clear), tmp_path / "b")["summary.md"].decode()
    assert ("Most delivered tokens per day per dollar of capex: variant 3 (oversubscription=2:1, order=topology), 9,000.0 tokens/day/$, "
            "15.3% ahead of variant 4") in text


def test_pareto_axes_show_the_real_spread(sweep, tmp_path):
    """A 0.4% spread must not fill the plot: an axis spans at least MIN_SPAN (10%) of its middle, so the
    points sit in a band of about a twentieth of its height; a 40% spread is shown as it is."""
    ys = [57.8, 58.0]
    lo, hi = axis_limits(ys)
    assert (max(ys) - min(ys)) / (hi - lo) < 0.05 and lo < 57.8 and hi > 58.0
    lo, hi = axis_limits([50.0, 70.0])
    assert (lo, hi) == (48.0, 72.0)  # the range plus a tenth each side
    (tmp_path / "p").mkdir()
    files = write(sweep, outcome(sweep, [7800.0, 7790.0, 7810.0, 7805.0, 7780.0, 7795.0]), tmp_path / "p")
    assert Image.open(io.BytesIO(files["pareto-mw.png"])).size == (800, 500)
    assert Image.open(io.BytesIO(files["pareto-capex.png"])).size == (800, 500)
