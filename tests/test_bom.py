"""BOM: counted from the graph and the cable plan, transceivers only on pluggable optics."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pytest
from fabric_helpers import SITES, compile_naive

from twin.compiler.fabric.bom import network_power
from twin.emit import bom as bom_emit


@pytest.fixture(scope="module")
def d():
    return compile_naive(SITES / "meta-24k-roce.yaml")


def test_switches_by_model(d):
    lines = {(ln.category, ln.item): ln for ln in d.bom}
    assert lines[("switch", "minipack2")].quantity == 1_536
    assert lines[("switch", "arista-7800r3")].quantity == 8 * 16 + 16


def test_transceivers_two_per_optic_link(d):
    plan = d.cabling
    media = d.spec.catalog.media
    per_medium = Counter(plan.media[i] for i in plan.medium)
    lines = d.bom
    xcvr = {ln.item: ln.quantity for ln in lines if ln.category == "transceiver"}
    for name, n in per_medium.items():
        if media[name].kind == "optic":
            assert xcvr[name] == 2 * n
        else:
            assert name not in xcvr
    cables = sum(ln.quantity for ln in lines if ln.category == "cable")
    assert cables == len(plan) == 24_576 * 2 + 8 * 16 * 28


def test_power_and_csv(d):
    lines = d.bom
    p = network_power(lines)
    assert p["switch"] == 1_536 * 1_500 + 144 * 14_000
    optics = sum(2 * d.spec.catalog.media[d.cabling.media[i]].power_per_end for i in d.cabling.medium)
    assert p["transceiver"] + p["cable"] == pytest.approx(optics)
    rows = list(csv.DictReader(io.StringIO(bom_emit.emit(d)["bom.csv"].decode())))
    assert all(r["source"] for r in rows if r["category"] != "total")
    totals = {r["item"]: r for r in rows if r["category"] == "total"}
    assert float(totals["network power"]["total_power_w"]) == pytest.approx(p["total"], abs=0.01)
    # cable mass: every cable's stock length x its medium's weight_per_metre (copper 0.045, fiber 0.009 kg/m)
    plan, media = d.cabling, d.spec.catalog.media
    mass = sum(float(plan.stock[i]) * media[plan.media[plan.medium[i]]].weight_per_metre for i in range(len(plan)))
    assert float(totals["cable mass"]["total_mass_kg"]) == pytest.approx(mass, rel=1e-6)
    assert 1_000 < mass < 100_000  # ~120K cables of 1-100 m at 9-45 g/m
    assert "two transceivers" in bom_emit.section(d)


def test_prices_counted_from_the_catalog(d):
    """Every line's price is its catalog price; optics count two transceivers plus the fiber per metre."""
    cat = d.spec.catalog
    lines = d.bom
    assert all(ln.unit_price is not None for ln in lines)  # the built-in catalog prices every item it has
    by = {(ln.category, ln.item, ln.length_m): ln for ln in lines}
    assert by[("switch", "arista-7800r3", None)].total_price == 144 * cat.switches["arista-7800r3"].price
    assert by[("transceiver", "dr4-400g", None)].unit_price == cat.media["dr4-400g"].price
    plan = d.cabling
    fiber = sum(float(plan.stock[i]) * cat.media[plan.media[plan.medium[i]]].price_per_metre
                for i in range(len(plan)) if cat.media[plan.media[plan.medium[i]]].kind == "optic")
    assert sum(ln.total_price for ln in lines if ln.category == "cable" and ln.item.startswith("smf")) == pytest.approx(fiber, rel=1e-9)
    rows = list(csv.DictReader(io.StringIO(bom_emit.emit(d)["bom.csv"].decode())))
    capex = next(r for r in rows if r["item"] == "network capex")
    assert float(capex["total_price_usd"]) == pytest.approx(sum(ln.total_price for ln in lines), abs=0.01)
