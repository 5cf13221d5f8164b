"""report.html in a real browser (headless Chromium over the DevTools protocol, tests/browser.py), and
the page's self-containment and pictures checked against the design they are drawn from."""

from __future__ import annotations

import io
import re
from collections import Counter

import pytest
from conftest import built_with_scenario, compiled, tiered

from twin.emit import pic_fabric, pic_floor

SITES = tiered(["lab-2zone", "meta-24k-roce"])
ROOT_GENERATED = __import__("pathlib").Path(__file__).resolve().parents[1] / "generated" / "lab-2zone"


def colours(png: bytes) -> Counter:
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    return Counter({f"#{r:02x}{g:02x}{b:02x}": n for n, (r, g, b) in img.getcolors(maxcolors=1 << 24)})


def pictures_of(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in (folder / "report").glob("*.svg"))


@pytest.mark.parametrize("site", SITES)
def test_report_is_self_contained(site, built):
    """No script, no external font, stylesheet or image: every picture of report/ is inlined, every
    picture report.md embeds exists, the contents list every section, and printing has its own rules."""
    out = built(site)
    page = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    pics = pictures_of(out)
    assert not re.search(r"<script|<link|<img|@import|url\(|https?://(?!www\.w3\.org/2000/svg)", page)
    assert "@media print" in page and "break-inside: avoid" in page
    embedded = re.findall(r"!\[[^\]]*\]\((report/[^)]+\.svg)\)", md)
    assert embedded == sorted(set(embedded), key=embedded.index) and sorted(embedded) == pics
    assert page.count("<svg ") == len(pics) >= 9
    for svg in pics:  # the inlined text is the file, byte for byte
        assert (out / svg).read_text(encoding="utf-8").strip() in page
    sections = re.findall(r"^## (.+)$", md, re.M)
    toc = page[page.index('<nav class="toc"'):page.index("</nav>")]
    assert len(re.findall(r'<li><a href="#[^"]+">', toc)) >= len(sections) >= 10
    halls = [h.name for h in compiled(site).spec.site.halls]
    assert [p for p in pics if "floor-" in p] == sorted(f"report/floor-{h}.svg" for h in halls)


@pytest.mark.parametrize("site", SITES)
def test_report_opens_in_chromium(site, built, browser):
    """Loads in under 2 s with no console error and no request but the file itself; every picture
    renders at a non-zero size; meta-24k-roce's page stays under 5 MB; it prints to a multi-page PDF."""
    out = built(site)
    size = (out / "report.html").stat().st_size
    assert size < 5e6, f"report.html is {size / 1e6:.1f} MB"
    page = browser.open_page(out / "report.html")
    assert page.errors == []
    assert page.requests == [page.url]
    assert page.load_ms < 2000, f"load took {page.load_ms:.0f} ms"
    boxes = page.evaluate("Array.from(document.querySelectorAll('figure svg, img')).map(e => {"
                          " const r = e.getBoundingClientRect(); return [e.closest('figure').id, r.width, r.height]; })")
    assert len(boxes) == len(pictures_of(out))
    assert all(w > 50 and h > 50 for _, w, h in boxes), [b for b in boxes if b[1] <= 50 or b[2] <= 50]
    broken = page.evaluate("Array.from(document.querySelectorAll('a[href^=\"#\"]')).filter(a => !document.getElementById(a.getAttribute('href').slice(1))).length")
    assert broken == 0
    pdf = page.pdf()
    assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page[^s]", pdf)) >= 5


def test_floor_plan_screenshot_shows_racks_by_zone(built, browser):
    """The floor plan as the browser paints it (its rack names taken out): each zone's colour covers exactly
    its racks' footprint (racks x slot width x rack depth at the picture's scale), network racks are dark,
    and the cross-aisle is drawn."""
    d = compiled("lab-2zone")
    hall = d.spec.site.halls[0]
    page = browser.open_page(built("lab-2zone") / "report.html")
    labels = page.evaluate(f"(() => {{ const ts = document.querySelectorAll('#fig-floor-{hall.name} text.rack-label');"
                           " ts.forEach(t => t.remove()); return ts.length; })()")  # the rack names cut into the colours
    assert labels == sum(r.position.hall == hall.name for r in d.placement.racks)
    seen = colours(page.screenshot(f"#fig-floor-{hall.name}"))
    s = pic_floor.scale(hall)
    rack_px = round(hall.slot_width * s - 1) * round(hall.rack_depth * s - 1)
    racks = [r for r in d.placement.racks if r.position.hall == hall.name]
    per_zone = Counter(r.zone for r in racks if r.kind == "gpu")
    assert len(per_zone) == 2
    for zone, n in per_zone.items():
        got = seen[pic_floor.zone_colour(zone)] - 100  # minus the legend swatch (10 x 10)
        assert abs(got - n * rack_px) <= 0.1 * n * rack_px, (zone, got, n * rack_px)
    n_net = sum(r.kind == "network" for r in racks)
    assert n_net * rack_px * 0.9 <= seen[pic_floor.NETWORK] - 100 <= n_net * rack_px * 1.1
    assert seen["#e8eef5"] > hall.cross_aisle_width * s * hall.rack_depth * s  # the cross-aisle band


def test_fabric_diagram_screenshot_shows_every_tier(built, browser):
    """Every switch tier's colour is painted (overview box plus one box per switch of the zone detail)
    and the NIC tier is there; the boxes of the detail panel match the first zone's switches."""
    d = compiled("lab-2zone")
    page = browser.open_page(built("lab-2zone") / "report.html")
    seen = colours(page.screenshot("#fig-fabric"))
    assert seen[pic_fabric.NIC_COLOUR] >= 430 * 40 * 0.8  # less the text on it
    rows = pic_fabric.detail_nodes(d.fabric)
    assert [len(r) for r in rows] == [4, 4, 2]  # zone 1: 4 RTSWs, its 4 CTSWs, the 2 ATSWs
    for level, nodes in enumerate(rows, start=1):
        colour = pic_fabric.TIER_COLOURS[level]
        overview, detail = 430 * 40, len(nodes) * 100 * 30
        assert 0.8 * (overview + detail) <= seen[colour] <= 1.05 * (overview + detail) + 200, (level, seen[colour])


@pytest.mark.slow
def test_fabric_diagram_states_oversubscription_asked_and_built(built):
    """meta-24k-roce asks 7:1 below the ATSW tier; the diagram shows it next to what the built links give
    (spec.shape), with every boundary's link count and each warning of the spec at its file:line:col."""
    d = compiled("meta-24k-roce")
    out = built("meta-24k-roce")
    svg = (out / "report" / "fabric.svg").read_text(encoding="utf-8")
    asked = [b for b in d.spec.shape.boundaries if b.requested is not None]
    assert [b.name for b in asked] == ["ctsw-atsw"]
    for b in d.spec.shape.boundaries:
        assert f"{b.name}: {b.links:,} links" in svg
        if b.requested is not None:
            assert f"{b.requested:g}:1 asked, {b.built:.2f}:1 built" in svg
    assert "+184 more" in svg  # zone 1's 192 RTSWs: 8 drawn, the rest folded
    page = (out / "report.html").read_text(encoding="utf-8")
    assert d.warnings
    for w in d.warnings:
        assert f"<code>{w.file.rsplit('/', 1)[-1]}:{w.line}:{w.col}</code>" in page


def test_build_with_a_scenario_carries_every_twin(browser, built):
    """`twin build --scenario`: the report has the scenario's job, the reliability twin's and the power
    twin's sections exactly as those twins write them for the same run, review.json their figures, the
    manifest the scenario's sha256; without a scenario the report says which twins did not run."""
    import hashlib
    import json

    from twin.emit.report import normalise_blank_lines
    from twin.emit.report_power import markdown_section
    from twin.emit.report_reliability import markdown as campaign_markdown
    from twin.lang.scenario.models import load_scenario
    from twin.twins.run import simulate

    root = compiled("lab-2zone").spec.source_path.rsplit("/sites/", 1)[0]
    scenario = f"{root}/scenarios/lab-twins.yaml"
    out = built_with_scenario("lab-2zone", "lab-twins")  # the session's build with the scenario, read only
    md = (out / "report.md").read_text(encoding="utf-8")
    data = simulate(compiled("lab-2zone"), *load_scenario(scenario)).data
    assert normalise_blank_lines(campaign_markdown(data["campaign"])) in md  # as the report joins sections
    assert normalise_blank_lines(markdown_section(data["power"])) in md
    assert "## Scenario `lab-twins` (twin)" in md and "## Twins not run" not in md
    review = {r["key"]: r["value"] for r in json.loads((out / "review.json").read_text())["figures"]}
    assert review["ettr_p50"] == round(data["campaign"]["ettr"]["p50"], 4)
    assert review["grid_peak_mw"] == round(data["power"]["grid"]["peak_W"] / 1e6, 4)
    man = json.loads((out / "manifest.json").read_text())
    assert man["scenario"] == "lab-twins.yaml"
    assert man["scenario_sha256"] == hashlib.sha256(open(scenario, "rb").read()).hexdigest()
    page = browser.open_page(out / "report.html")
    assert page.errors == [] and page.load_ms < 2000
    assert page.evaluate("document.querySelectorAll('figure svg').length") == len(list((out / "report").glob("*.svg")))
    plain = (built("lab-2zone") / "report.md").read_text(encoding="utf-8")
    assert "## Twins not run" in plain and "## Training campaign" not in plain and "## Power and thermal" not in plain


def test_build_with_a_bad_scenario_is_located(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nrouting:\n  - {name: x, scheme: warp}\njobs:\n  - {workload: lab-llama-8b}\n")
    root = ROOT_GENERATED.parents[1]
    r = subprocess.run([sys.executable, "-m", "twin", "build", "sites/lab-2zone.yaml", "-o", str(tmp_path / "out"), "--scenario", str(bad)],
                       cwd=root, capture_output=True, text=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2 and f"{bad}:3:" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()
