"""One owner per figure (issue 23): the review, the report and the sweeps read each figure from its owner,
so they cannot disagree with what the switches are configured with or what the BOM buys."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from conftest import compiled, emitted

import twin
from twin.analysis import registry
from twin.analysis.figures import build_figures
from twin.analysis.registry import Inputs
from twin.analysis.review import figures
from twin.compiler.cost import cost


def test_review_ecmp_width_is_what_the_switches_are_configured_with(lab):
    """review.json's ECMP width per role is the intent's maximum_paths, which the FRR configs carry: lab-2zone
    RTSW 16 uplinks, CTSW 8 ATSW uplinks, ATSW 16 links into a zone (twin/compiler/config/intent.py)."""
    review = {r["key"]: r["value"] for r in figures(lab)}
    frr = {}
    for path, text in emitted("lab-2zone").items():
        m = re.match(r"configs/frr/([^/]+)\.conf", path)
        if m:
            frr[m.group(1)] = {int(x) for x in re.findall(r"maximum-paths (\d+)", text.decode())}
    for role, width in (("rtsw", 16), ("ctsw", 8), ("atsw", 16)):
        names = [n for n, a in lab.fabric.graph.nodes(data=True) if a.get("role") == role]
        assert review[f"ecmp.{role}"] == width == max(lab.intent.switches[n]["maximum_paths"] for n in names)
        assert all(frr[n] == {width} for n in names)


@pytest.mark.parametrize("site", ["lab-2zone", "lab-ib", "lab-campus", "lab-powercap"])
def test_switches_are_the_graphs_and_the_boms(site):
    """`switches` has one definition, the fabric graph's switch nodes, and the BOM buys exactly those: the
    same count per model (bom.py counts one line per model from the graph)."""
    d = compiled(site)
    review = {r["key"]: r["value"] for r in figures(d)}
    models = Counter(d.fabric.graph.nodes[n]["model"] for n in d.fabric.switches())
    bom = {ln.item: ln.quantity for ln in d.bom if ln.category == "switch"}
    assert review["switches"] == len(d.fabric.switches()) == sum(bom.values()) == sum(review[f"switches.{r}"] for r in d.fabric.roles)
    assert bom == dict(models)


def test_servers_are_the_graphs_when_the_last_rack_is_part_filled(tmp_path):
    """lab-ib at 120 GPUs: 8 racks of 2 servers hold them, but a tree family cables only the 15 servers
    120 GPUs need (ceil(120 / 8)); review.json, the sweeps, cost and the report all say 15 (review.json
    said racks x servers = 16 while cost said 15)."""
    from fabric_helpers import variant

    from twin.emit.report import summary

    d = twin.load(variant(tmp_path, "lab-ib", "lab-ib-120", gpus=120))
    assert (d.spec.racks * d.spec.rack_type.servers, d.fabric.server_count()) == (16, 15)
    review = {r["key"]: r["value"] for r in figures(d)}
    sweep = build_figures(Inputs(d), [])
    assert review["servers"] == sweep["servers"] == cost(d).server_count == 15
    assert "| GPU servers | 15 x " in summary(d)
    assert review["capex_servers"] == 15 * d.spec.chassis.price


def test_review_and_sweep_read_one_registry(lab):
    """Every figure a sweep can name is review.json's figure of the same name: equal values (the review
    rounds to the registry's digits), one label and unit."""
    review = {r["key"]: r for r in figures(lab)}
    sweep = build_figures(Inputs(lab), [])
    shared = [f for f in registry.sweepable() if f.needs == "design"]
    assert {"gpus", "servers", "switches", "cables", "it_power_mw", "capex", "network_share", "energy_cost_per_year"} <= {f.name for f in shared}
    for f in shared:
        if sweep[f.name] is None:
            assert f.name not in review
            continue
        row = review[f.name]
        want = round(sweep[f.name], f.digits) if f.digits is not None and isinstance(sweep[f.name], float) else sweep[f.name]
        assert (row["value"], row["label"], row["unit"]) == (want, f.label, f.unit), f.name


def test_energy_per_year_prices_a_julian_year_at_the_draw(lab):
    """One definition of energy per year (twin/compiler/cost.py): the draw x 8,766 h x the energy price.
    Without a power twin the draw is the budgeted facility power (lab-2zone: 250.4 kW at 8.92 cents/kWh =
    $195,779); with one, its mean grid draw (1 MW: 8,766 MWh, $781,927)."""
    price = lab.spec.site.power.energy_price
    assert price == pytest.approx(0.0892)
    budget = {r["key"]: r["value"] for r in figures(lab)}
    assert budget["energy_cost_per_year"] == round(lab.budget.facility_power / 1e3 * 8766 * price, 2)
    assert budget["draw_mw"] == round(lab.budget.facility_power / 1e6, 4)
    sim = {"power": {"grid": {"mean_W": 1e6, "peak_W": 1.2e6, "range_W": 0.4e6}, "limits": [], "limits_pass": True}}
    twin_run = registry.values(Inputs(lab, sim=sim), registry.SWEEPABLE_NEEDS)
    assert twin_run["energy_cost_per_year"] == pytest.approx(1e3 * 8766 * 0.0892) == pytest.approx(781_927.2)
    assert twin_run["draw_mw"] == 1.0 and twin_run["grid_swing_mw"] == pytest.approx(0.4)
