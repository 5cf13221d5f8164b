"""One owner per figure (issue 23): the review, the report and the sweeps read each figure from its owner,
so they cannot disagree with what the switches are configured with or what the BOM buys."""

from __future__ import annotations

import re

from conftest import emitted

from twin.analysis.review import figures


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
