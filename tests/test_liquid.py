"""Liquid cooling as a system (issue 28, deliver 2): CDUs per row, facility water, each rack's liquid share,
checked in normal operation and after the loss of one CDU or pump.

Known answers (closed forms):
- a row whose liquid heat exceeds its CDUs after the worst single CDU loss is refused with the shortfall
  (full row x rack power x liquid share - (count - 1) x CDU capacity); one more CDU and it is placed;
- a coolant flow carries flow x density x heat capacity x rise (water at 25 degC, [nist-water]): about
  1.439 L/min per kW at a 10 K rise (present-day.md's rule of thumb says roughly 1.5);
- facility water short of the hall's liquid heat is refused with its own shortfall;
- the power twin's coolant supply is the facility water supply plus the CDU approach when that is above
  the CDU's set point.

The site is lab-2zone with its hall made liquid (2 rows of 6 free positions, 2 zones of 6 GPU racks of
22.2 kW, so both rows are full); the liquid share 0.75 is a test figure.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from twin.cli.app import app
from twin.compiler import pipeline
from twin.compiler.resolve.liquid import cdu_heat, flow_heat, unit_states
from twin.lang.diagnostics import InfeasibleError
from twin.lang.scenario.power import PowerScenario
from twin.lang.site.cooling import Cdus
from twin.lang.units import kw
from twin.twins.power.run import simulate_power

SHARE, P, ROW = 0.75, 22_200.0, 6  # liquid share, GPU rack power (W), GPU racks per full row
RHO_CP = 997.05 * 4181.6  # J/(m^3 K), water at 25 degC [nist-water]


def liquid_site(root, tmp_path, cdus: str, water: str = "{supply_temperature: 30 degC, flow: 600 L/min}", share: str = f"{SHARE}"):
    text = (root / "sites" / "lab-2zone.yaml").read_text()
    text = text.replace("""    cooling:
      medium: air
      capacity_per_row: 180 kW
      inlet_temperature: 27 degC""", f"""    cooling:
      medium: liquid
      capacity_per_row: 180 kW
      cdus: {cdus}
      facility_water: {water}""")
    text = text.replace("    other_power: 300 W\n", f"    other_power: 300 W\n    liquid_share: {share}\n" if share else "    other_power: 300 W\n")
    text = text.replace("racks_per_zone: 4", f"racks_per_zone: {ROW}")
    p = tmp_path / "liquid.yaml"
    p.write_text(text)
    return p


def test_coolant_flow_carries_its_closed_form():
    assert flow_heat(1.0 / 60e3, 10.0) == pytest.approx(1 / 60e3 * RHO_CP * 10, rel=1e-12)
    assert 1e3 / flow_heat(1.0 / 60e3, 10.0) == pytest.approx(1.439, abs=0.001)  # L/min per kW at 10 K
    c = Cdus.model_validate({"kind": "in-row", "count": 3, "capacity": "1 MW", "supply_temperature": "35 degC",
                             "flow": "1200 L/min", "pumps": 2})
    full, half = 0.02 * RHO_CP * 10, 0.01 * RHO_CP * 10  # the flow binds (834 kW < 1 MW); one pump gives half
    assert cdu_heat(c, 2) == pytest.approx(full) and cdu_heat(c, 1) == pytest.approx(half)
    states = {s: w for s, w, _ in unit_states(c)}
    assert states == pytest.approx({"normal": 3 * full, "one CDU lost": 2 * full, "one pump lost": 2 * full + half})
    n = c.model_copy(update={"redundancy": "N"})
    assert [s for s, _, _ in unit_states(n)] == ["normal"]


def test_row_short_of_cdus_after_one_loss_is_refused_with_the_shortfall(root, tmp_path):
    path = liquid_site(root, tmp_path, "{kind: in-row, count: 2, capacity: 80 kW, supply_temperature: 35 degC}")
    assert pipeline.check(path).spec.rack.power == P
    with pytest.raises(InfeasibleError) as e:
        pipeline.compile_design(path, until="placement")
    text = "\n".join(e.value.diagnosis)
    need, have = ROW * P * SHARE, (2 - 1) * 80e3
    assert f"CDUs, one CDU lost: a full row of {ROW} GPU racks needs {kw(need)}" in text, text
    assert f"have {kw(have)}" in text and f"(short {kw(need - have)})" in text, text
    assert kw(need - have) == "19.9 kW"


def test_the_same_row_passes_with_one_more_cdu(root, tmp_path):
    path = liquid_site(root, tmp_path, "{kind: in-row, count: 3, capacity: 80 kW, supply_temperature: 35 degC}")
    d = pipeline.compile_design(path, until="placement")
    assert len(d.placement.gpu_racks()) == 2 * ROW
    use = {(u["name"], u["state"]): u for u in d.placement.figures["usage"] if u["kind"] == "cdu"}
    for row in (1, 2):
        assert use[(f"row {row} CDUs", "one CDU lost")]["load_w"] == pytest.approx(ROW * P * SHARE)
        assert use[(f"row {row} CDUs", "one CDU lost")]["capacity_w"] == pytest.approx(2 * 80e3)
    # the air cooling of a row carries what the cold plates do not, plus the network racks
    air = [u for u in d.placement.figures["usage"] if u["kind"] == "cooling-row"]
    nets = {r.position.row: 0.0 for r in d.placement.racks}
    for r in d.placement.racks:
        if r.kind != "gpu":
            nets[r.position.row] += r.power
    for u in air:
        row = int(u["name"].split()[1])
        assert u["load_w"] == pytest.approx(ROW * P * (1 - SHARE) + nets[row])
    assert not d.placement.figures["violations"]
    # the report's budget: liquid heat, air heat, the CDUs in every state, the facility water
    from twin.emit.report import liquid_table

    text = "".join(liquid_table(d))
    assert f"| lab1 | {kw(2 * ROW * P * SHARE)} | {kw(d.budget.halls[0].it_power - 2 * ROW * P * SHARE)} " in text
    assert f"per row: normal {kw(3 * 80e3)}; one CDU lost {kw(2 * 80e3)}" in text


def test_facility_water_short_of_the_hall_is_refused_with_the_shortfall(root, tmp_path):
    path = liquid_site(root, tmp_path, "{kind: in-row, count: 3, capacity: 80 kW, supply_temperature: 35 degC}",
                       "{supply_temperature: 30 degC, flow: 240 L/min}")
    b = pipeline.check(path).budget
    need, have = 2 * ROW * P * SHARE, 240 / 60e3 * RHO_CP * 10
    assert b.halls[0].liquid == pytest.approx(need)
    assert f"hall lab1 facility water: need {kw(need)} of liquid heat removed, the water carries {kw(have)}" in b.problems[0]
    assert f"(short {kw(need - have)})" in b.problems[0]


def test_in_rack_cdu_loss_and_pump_loss(root, tmp_path):
    # one in-rack CDU of 25 kW per rack, its flow 30 L/min from 2 pumps: 20.85 kW, one pump 10.4 kW;
    # a rack needs 16.65 kW: fine in normal operation, short after a pump loss, all of it after the CDU's loss
    path = liquid_site(root, tmp_path, "{kind: in-rack, count: 1, capacity: 25 kW, supply_temperature: 35 degC, "
                                       "flow: 30 L/min, pumps: 2}")
    probs = pipeline.check(path).budget.problems
    need, part = P * SHARE, 15 / 60e3 * RHO_CP * 10
    assert not [p for p in probs if "in-rack CDUs, normal" in p]
    pump = [p for p in probs if "in-rack CDUs, one pump lost" in p]
    assert pump and f"have {kw(part)}" in pump[0] and f"(short {kw(need - part)})" in pump[0], probs
    lost = [p for p in probs if "in-rack CDUs, one CDU lost" in p]
    assert lost and f"(short {kw(need)})" in lost[0], probs
    # redundancy N: normal operation only, and that fits
    path = liquid_site(root, tmp_path, "{kind: in-rack, count: 1, redundancy: N, capacity: 25 kW, supply_temperature: 35 degC, "
                                       "flow: 30 L/min, pumps: 2}")
    assert not [p for p in pipeline.check(path).budget.problems if "CDU" in p]


def run_validate(path):
    return CliRunner().invoke(app, ["validate", str(path)])


@pytest.mark.parametrize("cdus, water, share, where, words", [
    ("{kind: in-row, count: 2, capacity: 80 kW}", None, "0.75", "liquid.yaml:32:13", "missing required field 'supply_temperature'"),
    ("{kind: in-row, count: 2, capacity: 80 kW, supply_temperature: 31 degC}", None, "0.75", "liquid.yaml:32:",
     "31 degC is below the facility water supply 30 degC + the CDU approach 3 K"),
    ("{kind: in-row, count: 2, capacity: 80 kW, supply_temperature: 35 degC, approach: 3 degC}", None, "0.75", "liquid.yaml:32:94",
     "not a temperature difference"),
    ("{kind: in-row, count: 2, capacity: 80 kW, supply_temperature: 35 degC}", None, "", "liquid.yaml:37:5", "gives no liquid_share"),
    ("{kind: in-row, count: 2, capacity: 80 kW, supply_temperature: 35 degC}", "{supply_temperature: 30 degC}", "0.75",
     "liquid.yaml:33:23", "missing required field 'flow'"),
])
def test_bad_liquid_input_is_located(root, tmp_path, cdus, water, share, where, words):
    path = liquid_site(root, tmp_path, cdus, water or "{supply_temperature: 30 degC, flow: 600 L/min}", share)
    res = run_validate(path)
    assert res.exit_code == 2, res.output
    assert where in res.output and words in res.output, res.output
    assert "Traceback" not in res.output


def test_power_twin_reads_the_facility_water_temperature(root, tmp_path):
    def hall(outdoor: float, fw: float, cdu: float, approach: float) -> dict:
        cool = f"{{kind: in-row, count: 3, capacity: 80 kW, supply_temperature: {cdu} degC, approach: {approach} K}}"
        d = pipeline.compile_design(liquid_site(root, tmp_path, cool, f"{{supply_temperature: {fw} degC, flow: 600 L/min}}"),
                                    until="placement")
        scen = PowerScenario.model_validate({"duration": "10 min", "resolution": "1 s", "weather": {"constant": f"{outdoor} degC"},
                                             "job": {"step": {"step": "8 s", "compute": "6 s", "bubble": "2 s"}}})
        data = simulate_power(d, scen, mitigations=False).data
        # the twin holds each row's liquid heat to its CDUs in every state: the compute phase is the full rack
        cdu = {(r["limit"], r["state"]): r for r in data["distribution"]["limits"]}
        lost = cdu[("row 1 CDUs", "one CDU lost")]
        assert lost["peak_W"] == pytest.approx(ROW * P * SHARE, rel=1e-9) and lost["rating_W"] == pytest.approx(2 * 80e3)
        assert lost["peak_ok"] and lost["continuous_ok"] and lost["continuous_W"] < lost["peak_W"]
        return data["thermal"]["halls"][0]

    # a cool day: the water holds its supply temperature and the CDUs their set point
    h = hall(20, 30, 35, 3)
    assert (h["facility_water_max_degC"], h["inlet_max_degC"], h["setpoint_degC"]) == (30, 35, 35)
    h = hall(20, 34, 37, 3)
    assert (h["facility_water_max_degC"], h["inlet_max_degC"]) == (34, 37)
    # a hot day: the dry coolers' water follows the outdoor air (+ up to 3 K at full load) and the cold
    # plates get the water plus the CDU approach, above the set point
    for approach in (3, 5):
        h = hall(40, 30, 35, approach)
        assert 40 < h["facility_water_max_degC"] < 43
        assert h["inlet_max_degC"] == pytest.approx(h["facility_water_max_degC"] + approach, abs=1e-12)


def test_hall_short_of_cdus_after_one_loss_is_refused_before_placement(root, tmp_path):
    # one in-row CDU of 150 kW per row: after its loss a row has none, so the hall's two rows carry 150 kW
    path = liquid_site(root, tmp_path, "{kind: in-row, count: 1, capacity: 150 kW, supply_temperature: 35 degC}")
    probs = pipeline.check(path).budget.problems
    need, have = 2 * ROW * P * SHARE, (2 - 1) * 150e3
    assert [p for p in probs if p.startswith("hall lab1 CDUs, one CDU lost")] == [
        f"hall lab1 CDUs, one CDU lost: need {kw(need)} of liquid heat removed, 2 rows of 1 CDUs carry {kw(have)} (short {kw(need - have)})"]
    # with redundancy N the hall is held to normal operation only (2 x 150 kW carry 199.8 kW)
    path = liquid_site(root, tmp_path, "{kind: in-row, count: 1, redundancy: N, capacity: 150 kW, supply_temperature: 35 degC}")
    assert not [p for p in pipeline.check(path).budget.problems if "CDU" in p]


def test_liquid_share_without_cdus_is_a_warning_and_changes_nothing(root):
    from twin.compiler.resolve.validate import validate_text

    text = (root / "sites" / "lab-2zone.yaml").read_text().replace("    other_power: 300 W\n", "    other_power: 300 W\n    liquid_share: 0.8\n")
    spec, diags = validate_text(text, "lab.yaml")
    assert spec is not None
    assert any("sends 80% of its heat to liquid but this hall has no cdus" in d.format() for d in diags)


@pytest.mark.parametrize("redundancy, count", [("N+1", 3), ("N", 2)])
def test_auto_count_carries_a_full_row_plus_one(root, tmp_path, redundancy, count):
    # a full row: 6 GPU racks x 16.65 kW = 99.9 kW of liquid heat over CDUs of 80 kW: ceil(1.25) = 2, N+1: 3
    path = liquid_site(root, tmp_path, f"{{kind: in-row, count: auto, redundancy: {redundancy}, capacity: 80 kW, supply_temperature: 35 degC}}")
    d = pipeline.compile_design(path, until="placement")
    assert d.spec.site.halls[0].cooling.cdus.count == count
    assert len(d.placement.gpu_racks()) == 2 * ROW and not d.placement.figures["violations"]
