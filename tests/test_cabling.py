"""Cabling: media by length at the boundaries, errors naming links, and the cabling files."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
import yaml
from fabric_helpers import SITES, compile_naive

from twin.compiler.fabric.cabling import select_media
from twin.emit import cabling as cabling_emit
from twin.lang.catalog import builtin
from twin.lang.diagnostics import InfeasibleError


@pytest.mark.parametrize("length,medium,stock", [
    (0.4, "dac-400g", 0.5), (2.9, "dac-400g", 3), (3.0, "dac-400g", 3), (3.1, "aec-400g", 4),
    (7.0, "aec-400g", 7), (7.1, "aoc-400g", 10), (30.0, "aoc-400g", 30), (30.5, "sr8-400g", 50),
    (100.5, "dr4-400g", 150), (600, "fr4-400g", 1000),
])
def test_media_by_length(length, medium, stock):
    idx, names, st = select_media(np.array([length]), np.array([400e9]), builtin().media)
    assert names[idx[0]] == medium and st[0] == stock


def test_nothing_reaches():
    idx, _, _ = select_media(np.array([2500.0]), np.array([400e9]), builtin().media)
    assert idx[0] == -1


@pytest.fixture(scope="module")
def lab():
    return compile_naive(SITES / "lab-2zone.yaml")


def test_every_link_is_a_cable(lab):
    plan = lab.cabling
    links = [k for _, _, k, kind in lab.fabric.graph.edges(keys=True, data="kind") if kind == "link"]
    assert sorted(links) == list(plan.ids)
    assert (plan.length >= plan.route).all() and (plan.stock >= plan.length - 1e-9).all()
    nic = next(i for i, t in enumerate(plan.tiers) if t == "nic-rtsw")
    assert plan.medium_of(plan.ids[nic]) == "dac-400g"
    assert plan.length_of(plan.ids[nic]) == 3.0
    assert plan.delay(plan.ids[nic]) == pytest.approx(3.0 * 4.9e-9)


def test_files(lab):
    files = cabling_emit.emit(lab)
    rows = list(csv.DictReader(io.StringIO(files["cabling/cables.csv"].decode())))
    assert len(rows) == len(lab.cabling)
    r = rows[0]
    assert r["a_label"] == f"{r['a_hall']}/R{int(r['a_row']):02d}/{r['a_rack']}/U{int(r['a_u']):02d}/{r['a_device']}/{r['a_port']}"
    pulled = []
    for name, data in files.items():
        if name.startswith("cabling/pull-"):
            pulled += [x["cable_id"] for x in csv.DictReader(io.StringIO(data.decode()))]
    assert sorted(pulled) == sorted(x["cable_id"] for x in rows)
    assert files == cabling_emit.emit(lab)


def test_too_long_is_an_error_naming_the_link(tmp_path):
    doc = yaml.safe_load((SITES / "lab-2zone.yaml").read_text())
    media = {}
    for name, m in builtin().media.items():
        if m.kind in ("aoc", "optic"):
            d = m.model_dump(mode="json")
            d["reach"] = "4 m"
            d["min_length"] = "0 m"
            d["stock_lengths"] = ["3 m", "4 m"]
            d["speed"] = "400 Gbit/s"
            d["power_per_end"] = f"{m.power_per_end} W"
            d["weight_per_metre"] = f"{m.weight_per_metre} kg"
            media[name] = d
    doc["catalog"] = {"media": media}
    p = tmp_path / "short.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(InfeasibleError) as e:
        compile_naive(p)
    assert any(line.startswith("cable L") and "rtsw-ctsw" in line and "no medium" in line for line in e.value.diagnosis)


def test_stated_media_per_tier_are_used_and_checked(tmp_path):
    """fabric.media restricts a tier to the listed media (Meta: single-mode DR4 between RTSW and CTSW);
    a run longer than all of them is an error naming the tier's list, not a silent fallback."""
    import twin
    from twin.compiler.resolve.validate import validate_text
    from twin.lang.diagnostics import InfeasibleError

    site = Path(__file__).resolve().parents[1] / "sites" / "lab-2zone.yaml"
    text = site.read_text().replace("  routing:\n", "  media:\n    rtsw-ctsw: [dr4-400g]\n  routing:\n", 1)
    p = tmp_path / "lab.yaml"
    p.write_text(text)
    d = twin.load(p)
    plan, fabric = d.cabling, d.fabric
    tiers = {lk.id: lk.tier for lk in fabric.cables()}
    used = {plan.medium_of(i) for i in plan.ids if tiers[i] == "rtsw-ctsw"}
    assert used == {"dr4-400g"}
    assert {plan.medium_of(i) for i in plan.ids if tiers[i] == "nic-rtsw"} == {"dac-400g"}
    # DAC only on rack-to-spine runs of several metres: the placement already refuses (its reach limit
    # comes from the stated media), and a naive fill reaches the cabling check, which names the list
    dac = text.replace("rtsw-ctsw: [dr4-400g]", "rtsw-ctsw: [dac-400g]")
    p.write_text(dac)
    with pytest.raises(InfeasibleError) as e:
        twin.load(p)
    assert "optic reach" in str(e.value) and "(dac-400g)" in str(e.value)
    p.write_text(dac + "\nplacement:\n  method: naive\n")
    with pytest.raises(InfeasibleError) as e:
        twin.load(p)
    assert "none of fabric.media.rtsw-ctsw (dac-400g) reaches that far" in str(e.value)
    _, diags = validate_text(text.replace("rtsw-ctsw: [dr4-400g]", "rtsw-ctsw: [dr9-400g]"), "x.yaml")
    assert any(d.dotted == "fabric.media.rtsw-ctsw[0]" and "unknown medium 'dr9-400g'" in d.message for d in diags)
    _, diags = validate_text(text.replace("rtsw-ctsw: [dr4-400g]", "leaf-spine: [dr4-400g]"), "x.yaml")
    assert any(d.dotted == "fabric.media.leaf-spine" and "not a link tier" in d.message for d in diags)
