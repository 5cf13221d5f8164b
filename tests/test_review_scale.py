"""The review of a large campus stays readable (issue 40): the report's verdicts grouped, its figures and
picture per building, `twin diff` grouped by kind and building, every instance still in the CSV and JSON.

The site is lab-campus grown to B = 4 buildings of H = 4 halls (16 halls, one AI zone of 2 racks each:
more halls than a page draws floor plans for), built in about 2 s; the per-building counts are also held
to the gigawatt spec's closed form on its scaled copy (tests/test_gigawatt.py's ``scaled``). What a wrong
implementation gets wrong: one verdict row per hall (rows grow with halls), counts that do not add up
to the headline or to review.json's risks, a floor plan per hall, per-building figures that do not
sum to the campus's or to the closed form, a diff that lists every file.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import SITES, twin_in_process, unwrap
from test_gigawatt import COPY_A, GPUS_PER_RACK, PORTS_PER_RTSW, RTSW_PER_RACK, UP_PER_RTSW, C, P, R, closed_form, scaled

from twin.build import build
from twin.compiler import pipeline
from twin.emit import buildings, pic_buildings, verdicts_report

B, H = 4, 4


def many_halls(path: Path, oversubscription: str = "2:1", b: int = B, h: int = H, row_cooling: str | None = None) -> Path:
    """lab-campus with ``b`` buildings of ``h`` halls (b<i>-h<j>), one 2-rack AI zone per hall, routes from the locations."""
    B, H = b, h  # noqa: N806
    doc = yaml.safe_load((SITES / "lab-campus.yaml").read_text(encoding="utf-8"))
    doc["name"] = "lab-campus-many"
    doc["power"]["utility_capacity"] = f"{B * H * 100} kW"
    doc["buildings"] = [{"name": f"b{i + 1}", "location": [f"{0.1 * (i % 2):g} km", f"{0.1 * (i // 2):g} km"], "power": {"utility": f"{H * 100} kW"},
                         "halls": [{"name": f"b{i + 1}-h{j + 1}", "type": "lab-hall"} for j in range(H)]} for i in range(B)]
    doc["campus"]["routes"] = []
    doc["campus"]["fabric"]["oversubscription"] = oversubscription
    doc["fabric"]["zones"] = B * H
    if row_cooling is not None:
        doc["hall_types"]["lab-hall"]["cooling"]["capacity_per_row"] = row_cooling
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def campus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("many")
    res = build(many_halls(tmp / "many.yaml"), tmp / "out")
    return res.design, tmp / "out", tmp


def verdict_rows(md: str) -> list[list[str]]:
    body = md.split("## Verdicts", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in body.splitlines() if ln.startswith("| ") and "|:" not in ln][1:]


def test_verdicts_are_grouped_and_add_up(campus):
    """One row per check and outcome however many halls: each per-hall check is one row counting all B x H
    halls and naming 3; the rows' counts add up to the headline and to review.json's risks, which
    report/verdicts.csv lists one line each in the same order."""
    d, out, _ = campus
    md = (out / "report.md").read_text(encoding="utf-8")
    risks = json.loads((out / "review.json").read_text())["risks"]
    rows = verdict_rows(md)
    checks = [int(r[3].replace(",", "")) for r in rows]
    assert sum(checks) == len(risks) and len(rows) < len(risks) // 3
    per_hall = [r for r in rows if "per hall" in r[2]]
    assert per_hall and all(int(r[3]) == B * H for r in per_hall if r[0] == "PASS" and "GPU racks" in r[2])
    for r in per_hall:
        named = re.findall(r"b\d-h\d", r[2].split("):", 1)[1])
        assert len(set(named)) == min(verdicts_report.SAMPLE, int(r[3])) and (f"and {int(r[3]) - 3} more" in r[2]) == (int(r[3]) > 3)
    space = [x for x in risks if x["key"].startswith("space.")]
    assert len(space) == B * H and {x["group"] for x in space} == {"GPU racks against GPU positions, per hall"}
    routes = [x for x in risks if x["key"].startswith("lossless.route.")]
    assert len(routes) == B * (B - 1) // 2 and sum(int(r[3]) for r in rows if "per route" in r[2]) == len(routes)
    n = {st: sum(c for r, c in zip(rows, checks) if r[0] == st.upper()) for st in ("fail", "warn", "pass")}
    assert f"**{n['fail']} fail, {n['warn']} warning(s), {n['pass']} pass** of {len(risks)} checks" in md
    table = list(csv.reader(io.StringIO((out / verdicts_report.CSV).read_text(encoding="utf-8"))))
    assert table[0] == verdicts_report.CSV_COLUMNS and [r[2] for r in table[1:]] == [x["key"] for x in risks]
    assert '<a href="report/verdicts.csv">verdicts.csv</a>' in (out / "report.html").read_text(encoding="utf-8")


def test_rows_do_not_grow_with_halls(campus, tmp_path):
    """Twice the buildings (twice the halls), the same verdict rows; the per-hall counts double."""
    _, out, _ = campus
    before = verdict_rows((out / "report.md").read_text(encoding="utf-8"))
    res = build(many_halls(tmp_path / "more.yaml", b=2 * B), tmp_path / "out")
    after = verdict_rows((tmp_path / "out" / "report.md").read_text(encoding="utf-8"))
    assert len(res.design.spec.site.halls) == 2 * B * H
    assert [r[0] for r in after] == [r[0] for r in before] and len(after) == len(before)
    assert [int(r[3]) for r in after if "GPU racks against GPU positions, per hall" in r[2]] == [2 * B * H]
    assert [int(r[3]) for r in after if "per route" in r[2]] == [2 * B * (2 * B - 1) // 2]


def test_the_campus_is_drawn_by_building(campus):
    """Above 12 halls: one campus picture with a block per building and a tile per hall, and a floor plan
    for one hall of each building only (every rack still in placement/floor.csv)."""
    d, out, _ = campus
    pics = sorted(p.name for p in (out / "report").glob("*.svg"))
    floors = [p for p in pics if p.startswith("floor-")]
    assert floors == sorted(f"floor-{h}.svg" for h in pic_buildings.floor_halls(d)) and len(floors) == B
    assert {f.split("-")[1] for f in floors} == {f"b{i + 1}" for i in range(B)}
    svg = (out / "report" / "campus-buildings.svg").read_text(encoding="utf-8")
    assert svg.count('<g class="building"') == B and svg.count('<g class="hall"') == B * H
    budget = (out / "report" / "budget.svg").read_text(encoding="utf-8")  # levels per building, not per hall
    assert not re.search(r">b\d-h\d: ", budget) and {m for m in re.findall(r">(b\d) \(4 halls\): ", budget)} == {f"b{i + 1}" for i in range(B)}
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg ") == len(pics)
    rows = list(csv.reader(io.StringIO((out / "placement" / "floor.csv").read_text())))
    assert len(rows) - 1 == len(d.placement.racks)


def test_figures_per_building_add_up(campus):
    """The table's rows sum to the campus: GPUs, racks, switches; cables inside plus links between
    buildings equal every cable; each building's links out equal what the campus tier gives it."""
    d, out, _ = campus
    rows, between = buildings.figures(d)
    assert [b.name for b in rows] == [f"b{i + 1}" for i in range(B)]
    assert sum(b.gpus for b in rows) == d.spec.gpus and sum(b.gpu_racks for b in rows) == d.spec.racks
    assert sum(sum(b.switches.values()) for b in rows) == len(d.fabric.switches())
    assert sum(b.cables for b in rows) + between == len(d.fabric.cables()) and sum(b.links_out for b in rows) == 2 * between
    assert between == d.spec.shape.links("atsw-atsw")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "| **campus** | 16 | 16 | 512 |" in md


def test_per_building_figures_are_the_gigawatt_closed_form(tmp_path):
    """The gigawatt spec's copy in 2 buildings of 1 zone, on its P = 2 planes: per building Z R 72 GPUs and,
    on each plane, Z R RTSWs, Z C CTSWs, 4 ATSWs; cables inside: each plane's NIC-RTSW (a port of every
    GPU) + RTSW-CTSW + CTSW-ATSW of its zone; links out: both planes' meshes."""
    d = pipeline.compile_design(scaled(tmp_path), until="cabling", placement_method="naive")
    want = closed_form(2, 1, COPY_A)
    rows, between = buildings.figures(d)
    for b in rows:
        assert b.gpus == R * GPUS_PER_RACK and b.gpu_racks == R
        assert dict(b.switches) == {"rtsw": P * R * RTSW_PER_RACK, "ctsw": P * C, "atsw": P * COPY_A}
        assert b.cables == P * (R * RTSW_PER_RACK * (PORTS_PER_RTSW + UP_PER_RTSW) + C * want["ctsw_up"]) == 2 * (5_184 + 2_592 + 864)
        assert b.links_out == between == want["cables"]["atsw-atsw"] == P * 312
    s = d.spec
    facility = sum(hb.it_power * s.catalog.facility[h.cooling.medium].price for h, hb in zip(s.site.halls, d.budget.halls) if h.name in s.campus.buildings[0].halls)
    models = ((s.rack_type.rtsw, P * R * RTSW_PER_RACK), (s.fabric.ctsw.model, P * C), (s.fabric.atsw.model, P * COPY_A))
    switches = sum(n * (s.switch(m).price or 0.0) for m, n in models)
    assert rows[0].capex == pytest.approx(rows[0].servers * (s.chassis.price or 0.0) + switches + facility, rel=1e-12) and rows[0].capex > 0


def test_diff_is_grouped_and_json_complete(campus):
    """A change of the campus oversubscription: the terminal review is one line per kind of artifact (the
    ATSW configs counted per building), not one per file; --json still names every changed file."""
    _, out, tmp = campus
    edited = many_halls(tmp / "edited.yaml", "4:1")
    r = twin_in_process("diff", str(edited), "--against", str(out))
    assert r.returncode == 1, r.stderr
    doc = unwrap(twin_in_process("diff", str(edited), "--against", str(out), "--json").stdout)
    eos = sorted(p for p in doc["changed"] if re.fullmatch(r"configs/(eos|frr)/b\d-atsw-\d+\.(cfg|conf)", p))
    assert len(eos) >= 2 * B and len(doc["changed"]) + len(doc["added"]) + len(doc["removed"]) > 20
    text = r.stdout
    assert not any(p in text for p in eos[3:])  # past the sample, no file by name
    per = {m for m in re.findall(r"per building: ([^;]+);", text)}
    assert any(all(f"b{i + 1} " in p for i in range(B)) for p in per), text
    assert len(text.splitlines()) < 80


def test_build_prints_three_of_a_hall_check(tmp_path):
    """Every hall's row cooling at 91% or more (47.4 or, in a building's first hall with its ATSWs, 50.4 of 52
    kW): `twin build` prints three of the 16 warnings and counts the rest; the report's one WARN row counts
    16 and shows the worst (a first hall's 96.9%); review.json keeps all 16."""
    r = twin_in_process("build", str(many_halls(tmp_path / "warm.yaml", row_cooling="52 kW")), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "row cooling in b" in ln]
    assert len(lines) == 3 and f"WARN (high) ... and {B * H - 3} more of row cooling per hall in normal operation" in r.stderr
    rows = verdict_rows((tmp_path / "out" / "report.md").read_text(encoding="utf-8"))
    warm = [x for x in rows if x[0] == "WARN" and "row cooling per hall" in x[2]]
    assert [int(x[3]) for x in warm] == [B * H] and warm[0][4] == "b1-h1: row 1 cooling: 50.4 kW (96.9%)"
    risks = json.loads((tmp_path / "out" / "review.json").read_text())["risks"]
    assert sum(x["status"] == "warn" and x.get("group") == "row cooling per hall in normal operation" for x in risks) == B * H


def test_identical_halls_fold_into_one_row(campus):
    """Per-hall tables of more than 12 halls: each run of identical halls is one row. The budget's 16 halls are
    alike (one row; its GPU racks x 16 are every rack); in the stranded power per hall a building's first
    hall, whose row holds its ATSWs, differs from the other three: 2 rows per building, loads adding up."""
    d, out, _ = campus
    md = (out / "report.md").read_text(encoding="utf-8")

    def rows_after(marker: str) -> list[list[str]]:
        body = md.split(marker, 1)[1].split("\n\n|", 1)[1].split("\n\n", 1)[0]
        return [[c.strip() for c in ln.split("|")[1:-1]] for ln in body.splitlines()[2:]]

    def halls(name: str) -> int:
        m = re.search(r"\((\d+) halls\)", name)
        return int(m.group(1)) if m else 1

    budget = rows_after("## Power and cooling budget")
    assert [r[0] for r in budget] == [f"b1-h1 .. b{B}-h{H} ({B * H} halls)"] and int(budget[0][1]) * B * H == d.spec.racks
    stranded = rows_after("Stranded power per row")
    assert [r[0] for r in stranded] == [x for i in range(B) for x in (f"b{i + 1}-h1", f"b{i + 1}-h2 .. b{i + 1}-h{H} ({H - 1} halls)")]
    load = sum(float(r[2].removesuffix(" kW")) * halls(r[0]) for r in stranded)
    rows = [r for r in d.placement.figures["rows"] if r["load_w"] > 0]
    assert sum(halls(r[0]) for r in stranded) == B * H and load == pytest.approx(sum(r["load_w"] for r in rows) / 1e3, abs=0.1 * B * H)
