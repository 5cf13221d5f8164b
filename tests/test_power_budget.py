"""Every watt in the BOM is in the power budget, optics included (issue 27, part 7).

Before: the BOM's network power (switches, optics, powered cables) was 4.88 MW on meta-24k-roce while the
site's IT budget counted 2.02 MW of switches outside the racks, so the optics sat outside the budget.
The budget is now reconciled with the BOM after the BOM pass (twin/compiler/fabric/power_budget.py);
every artifact that prints network watts prints the reconciled figure. The known answers are the BOM's
own lines (bom.csv, which a reader can sum) and the closed form IT = GPU racks x rack power + switches
outside the racks + optics and powered cables.
"""

from __future__ import annotations

import csv
import json

import pytest

from tests.conftest import build_of


@pytest.mark.parametrize("site", ["lab-campus", "lab-2zone"])
def test_the_budget_counts_every_network_watt_of_the_bom(site):
    r = build_of(site)
    d, out = r.design, r.out_dir
    rows = list(csv.DictReader((out / "bom.csv").open()))
    watts = {c: sum(float(x["total_power_w"]) for x in rows if x["category"] == c) for c in ("switch", "endpoint", "transceiver", "cable")}
    bom_total = sum(watts.values())
    b = d.budget
    assert b.network_from_bom
    assert b.optics_power == pytest.approx(watts["transceiver"] + watts["cable"]) and b.optics_power > 0
    # the rack switches are in each GPU rack's power, the rest outside the racks: the three add up to the BOM
    assert b.rack_switch_power == pytest.approx(d.spec.racks * d.spec.rack.rtsw_power)
    assert b.network_total == pytest.approx(bom_total)
    assert b.it_power == pytest.approx(d.spec.racks * d.spec.rack.power + b.network_power + b.optics_power)
    assert sum(h.it_power for h in b.halls) == pytest.approx(b.it_power)
    assert b.facility_power == pytest.approx(b.it_power * d.spec.site.power.pue)
    # the artifacts print that one figure: design.json (the --json of the design), review.json, report.md
    power = json.loads((out / "design.json").read_text())["derived"]["power"]
    assert float(power["network_total"].split()[0]) == pytest.approx(bom_total)
    assert float(power["network_optics"].split()[0]) == pytest.approx(watts["transceiver"] + watts["cable"])
    figs = {f["key"]: f["value"] for f in json.loads((out / "review.json").read_text())["figures"]}
    assert figs["network_power_kw"] == pytest.approx(bom_total / 1e3, abs=0.01)
    assert figs["it_power_mw"] == pytest.approx(b.it_power / 1e6, abs=1e-4)
    md = (out / "report.md").read_text()
    assert f"| network total (= the bill of materials' network power) | {bom_total / 1e3:,.1f} kW |" in md
    assert f"| optics and powered cables | {b.optics_power / 1e3:,.1f} kW |" in md


def test_before_the_bom_the_budget_is_the_shapes_estimate(root):
    from twin.compiler.pipeline import check

    b = check(root / "sites" / "lab-campus.yaml").budget
    assert not b.network_from_bom and b.optics_power == 0.0
    # lab-campus: 6 CTSWs and 6 ATSWs of 1.5 kW outside the GPU racks, counted from the shape
    assert b.network_power == pytest.approx(12 * 1_500)
