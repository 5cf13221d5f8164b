"""Cost figures: money as a unit, catalog prices a site overrides, capex by category, energy per year.

Known answers are closed forms on the catalog's prices: servers x chassis price, switches x switch
price, each hall's critical IT load x its facility price per watt, the budgeted draw x 8,766 h x the
energy price. A wrong implementation (a price in the wrong unit, a double-counted transceiver, a
missing price passing as zero silently) gets these numbers wrong.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.compiler.cost import HOURS_PER_YEAR, cost
from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.validate import validate_text
from twin.emit.cost_report import section
from twin.lang.units import ENERGY_PRICE, PRICE, PRICE_PER_POWER, QuantityError, parse

ROOT = Path(__file__).resolve().parents[1]
LAB = (ROOT / "sites" / "lab-2zone.yaml").read_text()


def lab(tmp_path: Path, text: str):
    p = tmp_path / "lab.yaml"
    p.write_text(text)
    return compile_design(p, until="bom", placement_method="naive")


def test_money_is_a_unit():
    assert parse("$25,000", PRICE) == parse("25 kUSD", PRICE) == parse("25000 USD", PRICE) == 25_000.0
    assert parse("11.7 MUSD/MW", PRICE_PER_POWER) == parse("$11,700,000/MW", PRICE_PER_POWER) == pytest.approx(11.7)
    assert parse("$0.0892/kWh", ENERGY_PRICE) == parse("8.92e-2 USD/kWh", ENERGY_PRICE) == pytest.approx(0.0892)
    for bad, words in ((25000, "bare number"), ("25000 W", "is a power, expected a price"), ("$25,00", "not a dollar amount"),
                       ("25 EUR", "USD only"), ("$5/kWh", "is an energy price, expected a price")):
        with pytest.raises(QuantityError, match=words):
            parse(bad, PRICE)


def test_a_price_where_a_power_belongs_is_located():
    spec, diags = validate_text(LAB.replace("busway_rating: 250 kW", "busway_rating: $250,000"), "lab.yaml")
    assert spec is None
    assert any(d.path[-1] == "busway_rating" and "'$250,000' is a price, expected a power" in d.message and d.line == 26 for d in diags)


def test_capex_by_category_from_the_catalog(tmp_path):
    d = lab(tmp_path, LAB)
    c = cost(d)
    cat = d.spec.catalog
    assert c.server_count == 16 and c.servers == 16 * 270_000
    assert c.switches == 18 * cat.switches["minipack2"].price  # 8 RTSW + 8 CTSW + 2 ATSW
    assert c.transceivers == 0  # the lab is all DAC, AEC and AOC
    # every cable: its assembly price plus its price per metre x its stock length
    plan = d.cabling
    want = sum(cat.media[plan.media[plan.medium[i]]].price + float(plan.stock[i]) * cat.media[plan.media[plan.medium[i]]].price_per_metre
               for i in range(len(plan)))
    assert c.cables == pytest.approx(want, abs=0.01)
    assert c.facility == pytest.approx(d.budget.it_power * 11.7)  # $11.7M per MW of critical load
    assert c.total == pytest.approx(c.servers + c.switches + c.cables + c.facility)
    assert c.network_share == pytest.approx((c.switches + c.cables) / c.total)
    assert c.energy_per_year() == pytest.approx(d.budget.facility_power / 1e3 * HOURS_PER_YEAR * 0.0892)
    assert c.unpriced == ()
    text = section(d)
    assert "## Cost" in text and "network share of capex" in text and "Without a price" not in text


def test_the_site_overrides_prices(tmp_path):
    text = LAB.replace("  pue: 1.3                       # assumed", "  pue: 1.3\n  energy_price: $0.05/kWh") + """
catalog:
  facility:
    air: {price: 8 MUSD/MW, source: assumed}
  media:
    dac-400g:
      kind: dac
      speed: 400 Gbit/s
      reach: 3 m
      fiber: copper
      stock_lengths: [1 m, 2 m, 3 m]
      weight_per_metre: 0.045 kg
      source: assumed (a quote without a price)
"""
    d = lab(tmp_path, text)
    c = cost(d)
    assert c.facility == pytest.approx(d.budget.it_power * 8.0)
    assert c.energy_price == 0.05 and c.energy_per_year(2e6) == pytest.approx(2e3 * HOURS_PER_YEAR * 0.05)
    assert c.unpriced == ("dac-400g",)
    dac = sum(ln.quantity for ln in d.bom if ln.item == "dac-400g")
    assert dac == 128  # the NIC cables are still counted, at no price
    assert "Without a price (counted as zero): `dac-400g`" in section(d)
