"""The campus language: buildings with their halls, routes between them, the campus tier. Bad input is a
located error (exit 2); zones go to buildings within their halls and feeds; single-building sites are
untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import Severity

ROOT = Path(__file__).resolve().parents[1]
LAB = (ROOT / "sites" / "lab-campus.yaml").read_text()
META = (ROOT / "sites" / "meta-campus-100k.yaml").read_text()


def check(text):
    spec, diags = validate_text(text, "c.yaml")
    return spec, [d for d in diags if d.severity is Severity.ERROR]


def only_error(text: str):
    """The one error ``text`` gives (the test fails if there are none or several)."""
    _, errs = check(text)
    assert len(errs) == 1, [e.message for e in errs]
    return errs[0]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_lab_campus_resolves_buildings_zones_and_routes():
    spec, errs = check(LAB)
    assert errs == []
    cp = spec.campus
    assert [b.name for b in cp.buildings] == ["b1", "b2", "b3"]
    assert [b.halls for b in cp.buildings] == [("b1-lab",), ("b2-lab",), ("b3-lab",)]
    assert [b.zones for b in cp.buildings] == [(0,), (1,), (2,)]
    assert [h.name for h in spec.site.halls] == ["b1-lab", "b2-lab", "b3-lab"]  # the halls are ordinary halls
    # 0.3 km surveyed; 1.2 km straight x 1.25; 12 km surveyed
    assert {k: (r.length, r.how) for k, r in cp.routes.items()} == {
        (0, 1): (300.0, "surveyed"), (0, 2): (1500.0, "locations x 1.25"), (1, 2): (12000.0, "surveyed")}
    assert cp.buildings[2].entrance == (10.0, 0.0)


def test_meta_campus_shape():
    """98,304 GPUs; CTSW: 192 down, ceil(192/2.8) = 69 up over the 2 ATSWs of its plane; an ATSW takes
    8 zones x 69 / 2 = 276 links; the mesh gives each ATSW pair ceil(276 / (2.8 x 3)) = 33 links, 99 per ATSW."""
    spec, errs = check(META)
    assert errs == []
    s = spec.shape
    assert spec.gpus == 98_304 and [len(b.zones) for b in spec.campus.buildings] == [8, 8, 8, 8]
    assert s.ctsw_up == (69,) * 16
    at = s.tier("atsw")
    assert (at.count, at.down, at.up) == (128, 276, 99)
    assert set(s.campus.pair_links.values()) == {33} and len(s.campus.pair_links) == 6
    assert s.links("atsw-atsw") == 6 * 32 * 33 == 6336
    assert s.links("ctsw-atsw") == 32 * 16 * 69
    b = s.boundaries[-1]
    assert b.requested == 2.8 and b.built == pytest.approx(276 / 99)


def test_hall_error_under_a_building_names_the_written_path():
    text = LAB.replace("      - {name: b2-lab, type: lab-hall}", "      - {name: b2-lab, type: lab-hall, rows: 0}")
    _, errs = check(text)
    e = next(e for e in errs if "rows" in e.dotted)
    assert e.dotted == "buildings[1].halls[0].rows" and e.line == line_of(text, "rows: 0")


def test_building_without_halls_is_located():
    text = LAB.replace("    halls:\n      - {name: b2-lab, type: lab-hall}\n", "    halls: []\n")
    e = only_error(text)
    assert e.dotted == "buildings[1].halls" and e.line == line_of(text, "halls: []")
    assert "building b2 has no halls" in e.message


def test_route_shorter_than_the_straight_line():
    """b1 at (0, 0), b3 at (0, 1.2 km): a surveyed 1 km route cannot be."""
    text = LAB.replace("{between: [b1, b3], route_factor: 1.25}", "{between: [b1, b3], length: 1 km}")
    e = only_error(text)
    assert e.dotted == "campus.routes[1].length" and e.line == line_of(text, "length: 1 km}")
    assert "shorter than the straight line" in e.message and "1.200 km" in e.expected


def test_optic_shorter_than_its_route():
    """FR4 reaches 2 km; the b2-b3 route is 12 km."""
    text = LAB.replace("{between: [b2, b3], length: 12 km}", "{between: [b2, b3], length: 12 km, medium: fr4-400g}")
    e = only_error(text)
    assert e.dotted == "campus.routes[2].medium" and e.line == line_of(text, "medium: fr4-400g")
    assert "12.000 km" in e.message and "fr4-400g reaches 2 km" in e.message


def test_allowed_media_shorter_than_a_route():
    text = LAB.replace('    oversubscription: "1:1"\n', '    oversubscription: "1:1"\n    media: [dr4-400g, lr4-400g]\n')
    _, errs = check(text)
    assert [e.dotted for e in errs] == ["campus.fabric.media"]
    assert "b2-b3 is 12.000 km" in errs[0].message and "10 km" in errs[0].message


def test_unknown_building_and_missing_route():
    text = LAB.replace("between: [b1, b2]", "between: [b1, b9]").replace("    location: [0.3 km, 0 km]\n", "")
    _, errs = check(text)
    msgs = {e.dotted: e.message for e in errs}
    assert "unknown building 'b9'" in msgs["campus.routes[0].between[1]"]
    assert "no route between buildings b1 and b2" in msgs["campus.routes"]


def test_atsw_ports_with_the_campus_links():
    """16 ATSWs per building cannot take 552 zone links + the campus links on 576 ports."""
    text = META.replace("    count: 32                    # per building", "    count: 16                    # per building")
    _, errs = check(text)
    e = next(e for e in errs if e.dotted == "campus.fabric.oversubscription")
    assert "552 links from its zones" in e.message


def test_zones_fill_buildings_within_their_feed():
    """b1's feed holds 3 zones: 3 x (192 x 22.2 kW + 16 x 14 kW) + 32 x 14 kW = 13.9 MW IT x 1.25 = 17.4 MW <= 18 MW,
    4 zones would need 23.0 MW; b5 (5 halls) takes 5, and the rest of the 32 zones go to b2, b3, b4 in order."""
    text = META.replace("    power: {utility: 60 MW}        # assumed: meta-24k-roce's site feed, one per building\n    halls:\n      - {name: b1-dh1",
                        "    power: {utility: 18 MW}\n    halls:\n      - {name: b1-dh1", 1)
    text = text.replace("  - name: b4\n", "  - name: b5\n    location: [3 km, 0 km]\n    power: {utility: 60 MW}\n    halls:\n"
                        "      - {name: b5-dh1, type: meta-hall}\n      - {name: b5-dh2, type: meta-hall, origin: [20 m, 0 m]}\n"
                        "      - {name: b5-dh3, type: meta-hall, origin: [40 m, 0 m]}\n      - {name: b5-dh4, type: meta-hall, origin: [60 m, 0 m]}\n"
                        "      - {name: b5-dh5, type: meta-hall, origin: [0 m, 60 m]}\n  - name: b4\n")
    spec, errs = check(text)
    assert errs == []
    assert [len(b.zones) for b in spec.campus.buildings] == [3, 8, 8, 5, 8]
    assert spec.campus.buildings[3].name == "b5" and spec.campus.zone_building[3] == 1


def test_spine_topology_and_its_asn_pool():
    text = LAB.replace("    topology: full-mesh\n", "    topology: spine\n    spine: {model: minipack2, count: 2}\n")
    spec, errs = check(text)
    assert errs == []
    s = spec.shape
    assert s.tier("cssw").count == 2 and s.links("atsw-cssw") == 3 * 2 * 8  # every ATSW: ceil(8 / 1) uplinks
    assert spec.fabric.routing.asn_pools["level4"].first == 4_201_002_000


def test_single_building_sites_are_untouched():
    """A site of one building serialises as before: no buildings or campus keys, no campus optics."""
    from twin.compiler.resolve.validate import load_spec

    spec = load_spec(ROOT / "sites" / "lab-2zone.yaml")
    dumped = spec.site.model_dump(mode="json")
    assert "buildings" not in dumped and "campus" not in dumped and spec.campus is None
    assert "lr4-400g" not in spec.catalog.media and "lr4-400g" in check(LAB)[0].catalog.media


def test_cli_exit_code_2_with_a_located_error(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(LAB.replace("{between: [b1, b3], route_factor: 1.25}", "{between: [b1, b3], length: 1 km}"))
    r = subprocess.run([sys.executable, "-m", "twin", "validate", str(p)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert f"c.yaml:{line_of(p.read_text(), 'length: 1 km}')}:" in r.stdout + r.stderr
