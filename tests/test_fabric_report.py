"""report.md layout: sections joined with exactly one blank line between blocks."""

from __future__ import annotations

from twin.emit import report


def test_report_has_no_double_blank_lines(lab):
    text = report.render(lab)
    assert "\n\n\n" not in text
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert "\n\n## Fabric\n\n" in text and "\n\n## Cabling\n\n" in text
    assert [ln for ln in text.splitlines() if ln.strip()] == [ln for ln in text.splitlines() if ln]


def test_render_collapses_padding_but_keeps_code_blocks(lab, monkeypatch):
    """Sections may pad freely; blank lines inside a fenced block are content and stay."""
    def padded(_d):
        return "## A\n\n\n\n| x |\n|---|\n| 1 |\n\n  \n\n```\nline 1\n\n\nline 2\n```\n\n\n"

    def other(_d):
        return "\n\n## B\n\ntext\n"

    monkeypatch.setattr(report, "SECTIONS", [padded, other])
    monkeypatch.setattr(report, "TRAILING", [])
    assert report.render(lab) == "## A\n\n| x |\n|---|\n| 1 |\n\n```\nline 1\n\n\nline 2\n```\n\n## B\n\ntext\n"


def test_fabric_section_explains_parallel_links(tmp_path):
    """A 2-tier tree of 40 leaves with 20 spines pinned (the fewest) for 32 up-ports: the report says
    so; a 3-tier tree of whole pods has no parallel links and no note. Unpinned, the sizing takes 32
    spines (the smallest count >= 20 that divides 32): one link from every leaf to every spine, no note."""
    from fabric_helpers import compile_naive, variant

    from twin.emit.fabric_report import fabric_section

    even = fabric_section(compile_naive(variant(tmp_path, "meta-24k-ib", "ib-1280-even", gpus=1280)))
    assert "| 32 links / 32 switches |" in even and "parallel links" not in even
    small = fabric_section(compile_naive(variant(tmp_path, "meta-24k-ib", "ib-1280", gpus=1280, atsw={"count": 20})))
    assert "| 32 links / 20 switches |" in small
    assert "- leaf: 32 up-links reach 20 distinct spines (parallel links): each tree's spine tier has 20 switches" in small
    whole = fabric_section(compile_naive(variant(tmp_path, "meta-24k-ib", "ib-4096", gpus=4096)))
    assert "| 32 links / 32 switches |" in whole and "parallel links" not in whole
