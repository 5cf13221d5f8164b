"""`twin diff` names exactly the artifacts and design fields a spec edit changes."""

from pathlib import Path

from twin.build import build
from twin.diff import diff

ROOT = Path(__file__).resolve().parents[1]


def test_diff_reports_changed_fields(tmp_path):
    site = ROOT / "sites" / "lab-2zone.yaml"
    build(site, tmp_path / "out")
    assert diff(site, tmp_path / "out").empty
    edited = tmp_path / "lab-2zone.yaml"
    edited.write_text(site.read_text().replace("  pue: 1.3 ", "  pue: 1.4 "))
    res = diff(edited, tmp_path / "out")
    assert "design.json" in res.changed and "report.md" in res.changed
    assert "site.power.pue" in res.design_fields and "derived.power.facility" in res.design_fields
    assert "site.fabric.zones" not in res.design_fields
    assert not res.added and not res.removed
