"""The report's diagrams show the design (issue 27, part 9): a campus's buildings and the links between
them, the switches a zone detail leaves out, rack names that survive printing. Checked on the SVG the
build wrote (parsed) against the design's graph, cabling and shape, and in Chromium as printed."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from conftest import compiled, tiered

from twin.compiler.resolve.zone_links import ctsw_uplink_targets
from twin.emit import pic_fabric, pic_floor

NS = "{http://www.w3.org/2000/svg}"


def svg_of(out, name: str) -> ET.Element:
    return ET.fromstring((out / "report" / name).read_bytes())


def texts(el: ET.Element) -> list[str]:
    return [t.text or "" for t in el.iter(f"{NS}text")]


def test_campus_diagram_has_every_building_and_link_class(built):
    """lab-campus: one group per building with its GPUs (NICs counted on the graph) and ATSW layer; one
    route per pair of buildings whose ATSWs are linked, with the graph's link count and the optics the
    cabling pass gave those links. The site is laid out so that each optic class is used (300 m DR4,
    1.5 km FR4, 12 km ZR: sites/lab-campus.yaml); the 12 km route cannot run lossless on Minipack2's
    shallow buffer, so it is marked as failing."""
    d = compiled("lab-campus")
    g, plan = d.fabric.graph, d.cabling
    root = svg_of(built("lab-campus"), "fabric.svg")
    groups = [e for e in root.iter(f"{NS}g")]
    buildings = [e for e in groups if e.get("class") == "building"]
    assert [e.get("data-building") for e in buildings] == [b.name for b in d.spec.campus.buildings] == ["b1", "b2", "b3"]
    names = {b.index: b.name for b in d.spec.campus.buildings}
    nics = Counter(names[a["building"]] for _n, a in g.nodes(data=True) if a["role"] == "nic")
    atsws = Counter(names[a["building"]] for _n, a in g.nodes(data=True) if a["role"] == "atsw")
    for e in buildings:
        words = " ".join(texts(e))
        assert f"{nics[e.get('data-building')]:,} GPUs" in words and f"ATSW: {atsws[e.get('data-building')]} x minipack2" in words
    links: Counter = Counter()
    media: dict[tuple[str, str], set] = {}
    for _u, _v, k, a in g.edges(keys=True, data=True):
        if a.get("tier") == "atsw-atsw":
            pair = tuple(sorted((names[g.nodes[a["a"]]["building"]], names[g.nodes[a["b"]]["building"]])))
            links[pair] += 1
            media.setdefault(pair, set()).add(plan.medium_of(k))
    routes = {(e.get("data-a"), e.get("data-b")): e for e in groups if e.get("class") == "route"}
    assert set(routes) == set(links) == {("b1", "b2"), ("b1", "b3"), ("b2", "b3")}
    for pair, e in routes.items():
        assert int(e.get("data-links")) == links[pair] == 8
        assert set(e.get("data-media").split()) == media[pair]
        assert len(list(e.iter(f"{NS}line"))) >= 1
    assert {m for s in media.values() for m in s} == {"dr4-400g", "fr4-400g", "zr-400g"}
    legend = " ".join(texts(root))
    for m in ("dr4-400g", "fr4-400g", "zr-400g"):
        assert f"{m} (8 links)" in legend
    far = next(t for t in texts(root) if t.startswith("b2 - b3:"))
    assert far.startswith("b2 - b3: 12.00 km") and "8 x zr-400g" in far
    verdict = texts(root)[texts(root).index(far) + 1]
    assert verdict.startswith("lossless (PFC): does not fit")


def test_campus_diagram_in_chromium(built, browser):
    """As painted: every building box has a size, no two overlap, and every route's line is longer than
    the gap it crosses is wide (it shows between the boxes)."""
    page = browser.open_page(built("lab-campus") / "report.html")
    boxes = page.evaluate("Array.from(document.querySelectorAll('#fig-fabric g.building rect')).map(r => {"
                          " const b = r.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })")
    assert len(boxes) == 3 and all(r - x > 80 and b - y > 30 for x, y, r, b in boxes)
    for i, p in enumerate(boxes):
        for q in boxes[i + 1:]:
            assert p[2] <= q[0] or q[2] <= p[0] or p[3] <= q[1] or q[3] <= p[1], (p, q)
    lines = page.evaluate("Array.from(document.querySelectorAll('#fig-fabric g.route line')).map(l => {"
                          " const b = l.getBoundingClientRect(); return Math.hypot(b.width, b.height); })")
    assert len(lines) >= 3 and min(lines) > 100


@pytest.mark.slow
def test_zone_detail_marks_every_elided_switch(built):
    """meta-24k-roce's zone 1 has 192 RTSWs, 16 CTSWs and reaches all 16 ATSWs (spec.shape: each CTSW's
    uplink targets); the detail draws 8 of each tier and says "+N more" for the rest: 184, 8, 8."""
    d = compiled("meta-24k-roce")
    shape = d.spec.shape
    ctsws, atsws = shape.tier("ctsw").count // d.spec.zones, shape.tier("atsw").count
    reached = {t for j in range(ctsws) for t in ctsw_uplink_targets(0, j, shape.ctsw_up[j], ctsws, atsws)}
    want = [d.spec.racks_per_zone - pic_fabric.SHOWN, ctsws - pic_fabric.SHOWN, len(reached) - pic_fabric.SHOWN]
    assert want == [184, 8, 8]
    root = svg_of(built("meta-24k-roce"), "fabric.svg")
    elided = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "elided"]
    assert [int(re.fullmatch(r"\+([\d,]+) more", s).group(1).replace(",", "")) for s in elided] == want
    atsw_colour = pic_fabric.TIER_COLOURS[3]
    assert sum(1 for r in root.iter(f"{NS}rect") if r.get("fill") == atsw_colour) == 1 + pic_fabric.SHOWN  # overview + 8 drawn


def rack_labels(root: ET.Element) -> dict[str, tuple[str, tuple[float, float, float, float], tuple[float, float]]]:
    """Rack id -> (printed label, its box x, y, w, h, the label's anchor x, y), read in drawing order (a
    rack's label follows its box)."""
    out = {}
    last = None
    for e in root:
        if e.tag == f"{NS}rect" and (tip := e.find(f"{NS}title")) is not None and re.match(r"^\S+: (GPU|\S+ network) rack", tip.text):
            last = (tip.text.split(":")[0], tuple(float(e.get(k)) for k in ("x", "y", "width", "height")))
        elif e.tag == f"{NS}text" and e.get("class") == "rack-label":
            assert last is not None
            out[last[0]] = (e.text, last[1], (float(e.get("x")), float(e.get("y"))))
            last = None
    return out


@pytest.mark.parametrize("site", tiered(["lab-2zone", "meta-24k-roce"]))
def test_floor_plan_prints_every_rack_name(site, built):
    """Every rack of every hall carries its name as text inside its box (not only a tooltip): the end of
    its id after the hall (a network rack's role as its letter), which with the hall names exactly one
    rack. meta-24k-roce's 0.6 m racks are 9.4 px wide, so there the names stand rotated."""
    d = compiled(site)
    out = built(site)
    rotated = 0
    for h in d.spec.site.halls:
        racks = [r for r in d.placement.racks if r.position.hall == h.name]
        root = svg_of(out, f"floor-{h.name}.svg")
        got = rack_labels(root)
        assert set(got) == {r.id for r in racks}
        for r in racks:
            label, (x, y, w, hh), (tx, ty) = got[r.id]
            full = r.id.replace(f"-{r.role}-", f"-{pic_floor.LETTER[r.role]}") if r.kind == "network" else r.id
            assert full.endswith("-" + label) and len(label) >= 3, (r.id, label)
            assert x <= tx <= x + w and y <= ty <= y + hh, (r.id, (tx, ty), (x, y, w, hh))
        same = Counter((r.kind, r.zone, got[r.id][0]) for r in racks)  # the zone is the rack's colour
        assert max(same.values()) == 1, same.most_common(3)
        rotated += sum(1 for t in root.iter(f"{NS}text") if t.get("class") == "rack-label" and "rotate(-90" in (t.get("transform") or ""))
    if site == "meta-24k-roce":
        assert rotated == len(d.placement.racks)


def test_floor_plan_rack_names_survive_print(built, browser):
    """With the print stylesheet applied (as Chromium prints to PDF), every rack label of the lab's floor
    plan is laid out at a readable size and inside its rack's box."""
    d = compiled("lab-2zone")
    hall = d.spec.site.halls[0]
    page = browser.open_page(built("lab-2zone") / "report.html")
    browser.call("Emulation.setEmulatedMedia", {"media": "print"}, page.session)
    try:
        got = page.evaluate(f"Array.from(document.querySelectorAll('#fig-floor-{hall.name} text.rack-label')).map(t => {{"
                            " const b = t.getBoundingClientRect(), r = t.previousElementSibling.getBoundingClientRect();"
                            " return [t.textContent, getComputedStyle(t).visibility, b.width, b.height,"
                            " b.left >= r.left - 0.5 && b.right <= r.right + 0.5 && b.top >= r.top - 0.5 && b.bottom <= r.bottom + 0.5]; })")
    finally:
        browser.call("Emulation.setEmulatedMedia", {"media": ""}, page.session)
    racks = [r for r in d.placement.racks if r.position.hall == hall.name]
    assert sorted(t for t, *_ in got) == sorted(rack_labels(svg_of(built("lab-2zone"), f"floor-{hall.name}.svg"))[r.id][0] for r in racks)
    assert all(v == "visible" and max(w, h) >= 12 and inside for _t, v, w, h, inside in got), got


LIMITS = """  limits:
    max_ramp: 20 kW/s
    ramp_window: 1 s
    max_swing: 200 kW
    swing_window: 60 s
    oscillation:
      - {band: [0.1 Hz, 20 Hz], max_amplitude: 5 kW, window: 60 s}
"""


@pytest.fixture(scope="module")
def lab_limits(tmp_path_factory, root):
    """lab-2zone given utility limits, its twins run with scenarios/lab-twins.yaml as a build runs them:
    (site file, scenario file, design, runs, report Markdown, pictures)."""
    from twin.build import compile_design, run_twins
    from twin.emit.report import compose
    from twin.lang.scenario.models import load_scenario

    text = (root / "sites" / "lab-2zone.yaml").read_text(encoding="utf-8").replace("  pue: 1.3                       # assumed\n",
                                                                                   "  pue: 1.3\n" + LIMITS, 1)
    assert LIMITS in text
    site = tmp_path_factory.mktemp("limits") / "lab-limits.yaml"
    site.write_text(text, encoding="utf-8")
    scenario = root / "scenarios" / "lab-twins.yaml"
    d = compile_design(site)
    runs = run_twins(d, (str(scenario), load_scenario(scenario)))
    md, pics = compose(d, runs)
    return site, scenario, d, runs, md, pics


def section_of(md: str, heading: str) -> str:
    at = md.index(heading)
    nxt = md.find("\n## ", at + 1)
    return md[at:nxt if nxt >= 0 else len(md)]


def test_power_traces_draw_every_limit_and_the_worst_moment(lab_limits, tmp_path, browser):
    """lab-2zone with utility limits (a 20 kW/s ramp its 0.78 s steps break, a 200 kW swing they keep)
    built with scenarios/lab-twins.yaml: the power section (not the top of the report) carries the draw at
    three zooms; the whole run marks each limit's worst moment at the time the twin reports, red where it
    fails; the zoom round the worst moment is the failed ramp's and draws the allowed slope and swing box;
    the whole run's band spans exactly the one-second means' range; the spectrum shades the 0.1-20 Hz band
    at its width on the log axis, coloured by the oscillation verdict."""
    import numpy as np

    from twin.build import build
    from twin.emit import pic_power
    from twin.emit.svg import OK, OVER

    site, scenario, d, runs, md, pics = lab_limits
    p, views = runs.scenario[1]["power"], runs.power_views
    verdicts = {v["kind"]: v for v in p["limits"]}
    assert not verdicts["ramp"]["pass"] and verdicts["swing"]["pass"]
    section = section_of(md, "## Power and thermal")
    for name in ("power-whole.svg", "power-worst.svg", "power-steps.svg", "power-spectrum.svg"):
        assert f"(report/{name})" in section and f"report/{name}" in pics
    whole = ET.fromstring(pics["report/power-whole.svg"])
    marks = [e for e in whole.iter(f"{NS}line") if (e.find(f"{NS}title") is not None and e.find(f"{NS}title").text.startswith("worst "))]
    assert len(marks) == len(p["limits"]) == 3
    for e, v in zip(marks, p["limits"]):
        assert e.find(f"{NS}title").text == f"worst {v['limit']}"
        assert e.get("stroke") == (OK if v["pass"] else OVER)
        x = pic_power.L + v["worst_at_s"] / p["duration_s"] * (pic_power.W - pic_power.L - pic_power.R)
        assert abs(float(e.get("x1")) - x) <= 0.06
    band = next(whole.iter(f"{NS}polygon"))
    ys = [float(pt.split(",")[1]) for pt in band.get("points").split()]
    ch = pic_power.Chart("t", 0, 1, float(views["sec"].min()), float(views["sec"].max()))
    assert abs(min(ys) - ch.y(float(np.max(views["sec"])))) <= 0.06 and abs(max(ys) - ch.y(float(np.min(views["sec"])))) <= 0.06
    worst = ET.fromstring(pics["report/power-worst.svg"])
    title = worst.find(f"{NS}title").text
    assert "ramp over 1 s" in title and pic_power.worst(p) == (verdicts["ramp"]["worst_at_s"], "ramp over 1 s")
    tips = [e.find(f"{NS}title").text for e in worst.iter() if e.find(f"{NS}title") is not None]
    assert "allowed ramp 0.02 MW/s" in tips and "allowed swing within 60 s: 0.20 MW" in tips
    spectrum = ET.fromstring(pics["report/power-spectrum.svg"])
    band = next(e for e in spectrum.iter(f"{NS}rect") if e.find(f"{NS}title") is not None and e.find(f"{NS}title").text.endswith("Hz band"))
    allowed = next(e for e in spectrum.iter(f"{NS}line") if e.find(f"{NS}title") is not None and e.find(f"{NS}title").text.startswith("allowed"))
    assert band.get("fill") == allowed.get("stroke") == (OK if verdicts["oscillation"]["pass"] else OVER)
    width = float(band.get("width")) / (pic_power.W - pic_power.L - pic_power.R)  # 0.1-20 Hz on a log axis of whole decades
    f = views["f"]
    decades = np.ceil(np.log10(f[-1])) - np.floor(np.log10(f[0]))
    assert abs(width - np.log10(20 / 0.1) / decades) < 0.002
    out = tmp_path / "out"
    build(site, out, scenario=scenario)
    page = browser.open_page(out / "report.html")
    assert page.errors == []
    head, fig = page.box("#power-and-thermal-twin"), page.box("#fig-power-whole")
    assert head and fig and fig["y"] > head["y"] and fig["width"] > 300 and fig["height"] > 150


def test_campaign_pictures_in_the_campaign_section(lab_limits):
    """The reliability twin's pictures sit in its section: ETTR against the checkpoint interval with a P50
    point per swept interval, the interval used marked where it falls on the log axis and the inputs it
    rests on (restart, checkpoint write and restore) under the title; ETTR against
    spares with a point per pool size; the first run's interruptions, one tick per stop of the job, per
    cause as many as the run's events have."""
    import math

    from twin.emit import pic_campaign

    _site, _scenario, _d, runs, md, pics = lab_limits
    c = runs.scenario[1]["campaign"]
    section = section_of(md, "## Training campaign")
    for name in ("campaign-ettr-interval.svg", "campaign-ettr-spares.svg", "campaign-interruptions.svg"):
        assert f"(report/{name})" in section and f"report/{name}" in pics
    rows = c["sweeps"]["interval"]["rows"]
    root = ET.fromstring(pics["report/campaign-ettr-interval.svg"])
    assert len(list(root.iter(f"{NS}circle"))) == len(rows) >= 5
    assert f"restart {c['restart_s']:g} s" in texts(root)[1] and "checkpoint write 20 s / restore 60 s" in texts(root)[1]  # lab-twins.yaml's
    used = next(e for e in root.iter(f"{NS}line") if (e.find(f"{NS}title") is not None and e.find(f"{NS}title").text.startswith("used ")))
    xs = [r["interval_s"] / 60 for r in rows] + [c["checkpoint"]["interval_s"] / 60, c["sweeps"]["interval"]["young_daly_s"] / 60]
    lo, hi = math.log10(min(xs)), math.log10(max(xs))
    want = pic_campaign.L + (math.log10(c["checkpoint"]["interval_s"] / 60) - lo) / (hi - lo) * (pic_campaign.W - pic_campaign.L - pic_campaign.R)
    assert abs(float(used.get("x1")) - want) <= 0.06
    spares = ET.fromstring(pics["report/campaign-ettr-spares.svg"])
    assert len(list(spares.iter(f"{NS}circle"))) == len(c["sweeps"]["spares"]["rows"])
    stops = Counter(e["detail"] for e in c["events_run0"] if e["kind"] == "stop")
    ticks = Counter(e.find(f"{NS}title").text.split(" at day ")[0] for e in ET.fromstring(pics["report/campaign-interruptions.svg"]).iter(f"{NS}rect")
                    if e.find(f"{NS}title") is not None)
    assert ticks == stops and sum(stops.values()) >= 5


def test_scenario_job_says_what_differs_from_the_default_run(lab_limits):
    """The default run's step chart is titled as the default run's, the scenario's as the scenario's, and
    the scenario's job names each input it sets differently (lab-twins runs the site's own job with the
    same inputs, so it says so; the same job with 4 virtual stages and ZeRO 1 names exactly those two)."""
    import copy

    from twin.emit.pic_twin import job_svg
    from twin.emit.report_twins import differences

    _site, _scenario, _d, runs, md, pics = lab_limits
    default, job = runs.default["job"], runs.scenario[1]["cases"][0]["jobs"][0]
    assert default["workload"] == job["workload"] and differences(default, job) == []
    assert "Against the default run" in md and "the same inputs as the default run's job" in md
    assert ET.fromstring(pics["report/twin-job-step.svg"]).find(f"{NS}title").text.startswith("default run: ")
    assert ET.fromstring(pics["report/scenario-c1-job1.svg"]).find(f"{NS}title").text.startswith("scenario lab-twins: ")
    other = copy.deepcopy(job)
    other["virtual_stages"] = job["virtual_stages"] + 3
    other["recipe"]["zero"] = 1 if job["recipe"]["zero"] != 1 else 2
    diff = differences(default, other)
    assert diff == [f"virtual_stages {default['virtual_stages']} -> {other['virtual_stages']}",
                    f"recipe.zero {default['recipe']['zero']} -> {other['recipe']['zero']}"]
    note = "differs from the default run's job in " + ", ".join(diff)
    assert note in texts(ET.fromstring(job_svg(other, "scenario x", note)))


def test_a_line_under_another_is_drawn_dashed_and_named(lab_limits):
    """On lab-2zone, at least one routing scheme's busbw equals an earlier one's at every size (spraying
    and E-ECMP with 16 QPs), so its line would hide under the other: it is dashed and its legend says
    which line it equals; a scheme that differs stays solid."""
    from twin.emit.svg import same_as

    _site, _scenario, _d, runs, _md, pics = lab_limits
    r = runs.default
    series = [(e["name"], "", list(zip(r["sizes"], e["busbw_GBps"]))) for e in r["schemes"]]
    root = ET.fromstring(pics["report/twin-busbw.svg"])
    lines = {e.find(f"{NS}title").text: e for e in root.iter(f"{NS}polyline")}
    legend = texts(root)
    equal = 0
    for k, (name, _c, pts) in enumerate(series):
        same = same_as(series[:k], pts)
        assert (lines[name].get("stroke-dasharray") is not None) == (same is not None)
        assert (f"{name} (= {same})" if same else name) in legend
        equal += same is not None
    assert equal >= 1 and len(series) - equal >= 2


def test_campus_spine_is_drawn_in_its_building(tmp_path, root):
    """lab-campus with a campus spine of 2 Minipack2 in b2 instead of the full mesh: the routes drawn are
    the pairs the spine's links cross (b1-b2 and b2-b3, none between b1 and b3), with the graph's
    atsw-cssw link counts, and b2's box names the spine."""
    from twin.build import compile_design

    text = (root / "sites" / "lab-campus.yaml").read_text(encoding="utf-8")
    spine = text.replace("    topology: full-mesh\n", "    topology: spine\n    spine: {model: minipack2, count: 2, building: b2}\n")
    assert spine != text
    (tmp_path / "spine.yaml").write_text(spine, encoding="utf-8")
    d = compile_design(tmp_path / "spine.yaml")
    g = d.fabric.graph
    names = {b.index: b.name for b in d.spec.campus.buildings}
    crossing: Counter = Counter()
    for _u, _v, a in g.edges(data=True):
        if a.get("tier") == "atsw-cssw":
            ends = sorted({names[g.nodes[a["a"]]["building"]], names[g.nodes[a["b"]]["building"]]})
            if len(ends) == 2:
                crossing[tuple(ends)] += 1
    root_svg = ET.fromstring(pic_fabric.diagram_svg(d))
    routes = {(e.get("data-a"), e.get("data-b")): int(e.get("data-links")) for e in root_svg.iter(f"{NS}g") if e.get("class") == "route"}
    assert routes == dict(crossing) and set(routes) == {("b1", "b2"), ("b2", "b3")}
    b2 = next(e for e in root_svg.iter(f"{NS}g") if e.get("data-building") == "b2")
    assert texts(b2)[0] == "b2  campus spine: 2 x minipack2"
