"""Fabric sizing as reference designs size it (issue 18): even uplink splits, pinned tier counts, free
ports, the limits validate checks, and the oversubscription asked for against the one built.

Every expected count is worked out by hand in a comment; a wrong rule (the fewest switches, an
ignored pin, a missing limit) gives a different number.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from conftest import ROOT, unwrap
from fabric_helpers import compile_naive, variant

from twin.compiler.design import Design
from twin.compiler.fabric.synthesis import mismatches
from twin.compiler.pipeline import check
from twin.emit import sizing_report
from twin.lang.diagnostics import Severity


def cli(*args):
    return subprocess.run([sys.executable, "-m", "twin", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def checked(path):
    c = check(path)
    assert c.spec is not None, [d.format() for d in c.diagnostics]
    return c


def diags(path, severity):
    return [d for d in check(path).diagnostics if d.severity is severity]


def leaf_spine_links(design) -> Counter:
    """Links from each leaf to each spine, counted on the graph."""
    return Counter((lk.a, lk.b) for lk in design.fabric.cables() if lk.tier == "leaf-spine")


# ---------------------------------------------------------------- rule 1: even splits, pins, free ports


def test_spine_count_splits_every_leaf_evenly(tmp_path):
    # 768 GPUs = 768 NICs on 64-port QM9700 (h = 32): 2 tiers, 768 / 32 = 24 leaves. The fewest spines
    # are 24 x 32 / 64 = 12, but 32 uplinks over 12 spines is 3 links to 8 of them and 2 to 4. The
    # smallest count >= 12 that divides 32 is 16: 2 links from every leaf to every spine, each spine
    # 24 x 2 = 48 links of 64 ports, 16 free.
    p = variant(tmp_path, "meta-24k-ib", "ft-768", gpus=768)
    d = compile_naive(p)
    shape = d.spec.shape
    assert {t.role: t.count for t in shape.tiers} == {"leaf": 24, "spine": 16}
    spine = shape.tier("spine")
    assert (spine.down, spine.up, spine.free) == (48, 0, 16)
    assert set(leaf_spine_links(d).values()) == {2} and len(leaf_spine_links(d)) == 24 * 16
    assert mismatches(shape, d.fabric) == []


def test_pinned_spine_count_is_used_and_its_imbalance_quantified(tmp_path):
    # the same 24 leaves with atsw.count: 12 pinned: used (12 spines in the graph), with a warning:
    # 32 = 2 x 12 + 8, so 8 spines get 3 links from each leaf and 4 get 2; 16 would split evenly
    p = variant(tmp_path, "meta-24k-ib", "ft-768-12", gpus=768, atsw={"count": 12})
    w = [x for x in diags(p, Severity.WARNING) if x.dotted == "fabric.atsw.count"]
    assert len(w) == 1 and "8 spines get 3 links, 4 get 2" in w[0].message and w[0].expected.startswith("16 ")
    d = compile_naive(p)
    assert d.spec.shape.tier("spine").count == 12
    per_leaf = Counter(n for (_leaf, _spine), n in leaf_spine_links(d).items())
    assert per_leaf == {3: 24 * 8, 2: 24 * 4}


def test_rail_optimized_pins_its_spine_count(tmp_path):
    # 256 GPUs = 32 servers: one group of 32 servers x 8 rails = 8 leaves (a rail fills all 32 down
    # ports of its leaf, so no packing); the fewest spines are 4. atsw.count: 8 pins 8 spines (it
    # was ignored with a warning): every leaf sends 32 / 8 = 4 links to each, a spine has 8 x 4 = 32
    # of 64 ports down, 32 free.
    p = variant(tmp_path, "meta-24k-ib", "ro-256", family="rail-optimized", gpus=256, atsw={"count": 8})
    d = compile_naive(p)
    assert {t.role: t.count for t in d.spec.shape.tiers} == {"leaf": 8, "spine": 8}
    assert set(leaf_spine_links(d).values()) == {4}
    assert d.spec.shape.tier("spine").free == 32
    assert not [x for x in d.warnings if "ignored" in x.message]


def test_free_ports_in_the_report_and_json(lab):
    # lab-2zone: an RTSW uses 16 down + 16 up of 64 (32 free); a CTSW 16 down (4 racks x 16 / 4) and
    # 8 up (2:1), 40 free; an ATSW 8 CTSWs x 8 / 2 ATSWs = 32 down, 32 free
    shape = lab.spec.shape
    assert [(t.role, t.free) for t in shape.tiers] == [("rtsw", 32), ("ctsw", 40), ("atsw", 32)]
    text = sizing_report.section(lab)
    assert "| ctsw | minipack2 | 8 | 16 | 8 | 0 | 40 | 64 |" in text
    r = cli("validate", "sites/lab-2zone.yaml", "--json")
    tiers = unwrap(r.stdout)["results"][0]["shape"]["tiers"]
    assert [t["ports"]["free"] for t in tiers] == [32, 40, 32]


def test_ai_zone_counts_when_left_out(tmp_path):
    # meta-24k-roce without ctsw.count and atsw.count: a zone has 192 x 16 = 3,072 RTSW uplinks. 6 CTSWs
    # of 576 ports would need 512 down + ceil(512 / 7) = 74 up = 586; 7 need 439 + 63 = 502: 7 is the
    # fewest, but 16 uplinks do not split over 7; 8 divides 16 (2 links from every RTSW to each CTSW).
    # A CTSW then has 3,072 / 8 = 384 down, ceil(384 / 7) = 55 up; 8 zones x 8 x 55 = 3,520 uplinks
    # need ceil(3,520 / 576) = 7 ATSWs, one plane of 7 (gcd(8, 7) = 1) over which 55 does not split;
    # 8 ATSWs give 8 planes of one: 55 links from CTSW j of every zone to ATSW j, 440 ports each.
    import yaml

    doc = yaml.safe_load((ROOT / "sites" / "meta-24k-roce.yaml").read_text())
    doc["name"] = "meta-counts"
    doc.pop("workloads")
    del doc["fabric"]["ctsw"]["count"], doc["fabric"]["atsw"]["count"]
    p = tmp_path / "meta-counts.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    spec = checked(p).spec
    assert (spec.fabric.ctsw.count, spec.fabric.atsw.count) == (8, 8)
    ct, at = spec.shape.tier("ctsw"), spec.shape.tier("atsw")
    assert (ct.count, ct.down, ct.up, at.count, at.down) == (64, 384, 55, 8, 440)


def test_ai_zone_uneven_atsw_plane_is_quantified(tmp_path):
    # lab-2zone with 3 ATSWs: gcd(4 CTSWs, 3) = 1 plane of 3 ATSWs; a CTSW's 8 uplinks (16 down at
    # 2:1) go 3, 3, 2 over them
    p = variant(tmp_path, "lab-2zone", "lab-3atsw", atsw={"model": "minipack2", "count": 3, "oversubscription": "2:1"})
    w = [x for x in diags(p, Severity.WARNING) if x.dotted == "fabric.atsw.count"]
    assert len(w) == 1 and "8 uplinks over the 3 ATSWs of its plane: 2 get 3 links, 1 get 2" in w[0].message


@pytest.mark.parametrize("fabric, where, words", [
    # 1 spine x 64 ports < 4 leaves x 32 uplinks = 128: cannot carry them
    (dict(atsw={"count": 1}), "fabric.atsw.count", "carry 64 links"),
    # 64 spines for 4 leaves of 32 uplinks: a leaf reaches 32 of them, two leaves might share none
    (dict(atsw={"count": 64}), "fabric.atsw.count", "reaches at most 32 of the 64 spines"),
    # leaves follow from the NICs (128 / 32 = 4)
    (dict(rtsw={"count": 6}), "fabric.rtsw.count", "the tree has 4"),
    # a tree is full bisection: an oversubscription would be ignored
    (dict(atsw={"oversubscription": "2:1"}), "fabric.atsw.oversubscription", "full bisection"),
])
def test_impossible_pins_and_unread_fields_are_located_errors(tmp_path, fabric, where, words):
    p = variant(tmp_path, "lab-ib", "lab-bad", **fabric)
    errs = diags(p, Severity.ERROR)
    assert any(e.dotted == where and words in e.message and e.line > 0 for e in errs), [e.format() for e in errs]
    r = cli("validate", str(p))
    assert r.returncode == 2 and "Traceback" not in r.stderr


# ---------------------------------------------------------------- rule 4: limits


@pytest.mark.slow
def test_infiniband_lids_per_subnet(tmp_path):
    # meta-24k-ib: 24,576 HCA ports + 1,920 switches (768 + 768 + 384) = 26,496 LIDs at LMC 0. LMC 1
    # gives every HCA port 2 LIDs: 49,152 + 1,920 = 51,072 > 49,151 (0x0001-0xBFFF): refused at lmc.
    spec = checked(ROOT / "sites" / "meta-24k-ib.yaml").spec
    assert spec.shape.lids(0) == 26_496
    p = variant(tmp_path, "meta-24k-ib", "ib-lmc1", infiniband={"routing_engine": "ftree", "lmc": 1})
    errs = [e for e in diags(p, Severity.ERROR) if e.dotted == "fabric.infiniband.lmc"]
    assert len(errs) == 1 and "51,072" in errs[0].message and errs[0].expected == "lmc: 0"
    # 65,536 GPUs: 65,536 + 2,048 leaves + 2,048 spines + 1,024 cores = 70,656 LIDs even at LMC 0
    p = variant(tmp_path, "meta-24k-ib", "ib-64k", gpus=65536, racks_per_zone=512)
    errs = [e for e in diags(p, Severity.ERROR) if "unicast LIDs" in e.message]
    assert len(errs) == 1 and "70,656" in errs[0].message and errs[0].dotted == "fabric.gpus"
    r = cli("validate", str(p))
    assert r.returncode == 2 and "49,151 unicast LIDs" in r.stderr


def test_switch_radix_with_attachments(tmp_path):
    # lab-ib's 2 spines use all 64 ports for 4 leaves x 32 uplinks; one more port does not fit
    p = variant(tmp_path, "lab-ib", "ib-full", attachments=[
        {"name": "ufm", "kind": "subnet-manager", "tier": "spine", "count": 1, "speed": "400 Gbit/s", "power": "600 W"}])
    errs = [e for e in diags(p, Severity.ERROR) if e.dotted == "fabric.attachments[0].count"]
    assert len(errs) == 1 and "64 down + 0 up + 1 attached = 65" in errs[0].message


# ---------------------------------------------------------------- rule 5: requested against built


def test_requested_against_built_with_the_reason(meta24k):
    # meta-24k-roce asks 1:7 between CTSW and ATSW; a CTSW has 192 downlinks (192 racks x 16 / 16),
    # ceil(192 / 7) = 28 uplinks: 192 / 28 = 6.86:1, below the 7:1 asked for because links are whole
    b = {x.name: x for x in meta24k.spec.shape.boundaries}["ctsw-atsw"]
    assert (b.requested, round(b.built, 4)) == (7.0, round(192 / 28, 4))
    assert "192 down, ceil(192 / 7) = 28 up" in b.reason
    assert "| ctsw-atsw | 3,584 | 400G | 7.00:1 | 6.86:1 | uplinks are whole links" in sizing_report.section(meta24k)


def test_rtsw_oversubscription_is_read(tmp_path):
    # lab-2zone asking the RTSWs for 3:1 instead of giving uplinks: 16 NICs, ceil(16 / 3) = 6 uplinks,
    # 16 / 6 = 2.67:1 built; 6 uplinks over 4 CTSWs: 2 CTSWs get 2 links, 2 get 1 (warned)
    p = variant(tmp_path, "lab-2zone", "lab-3to1", rtsw={"oversubscription": "3:1"})
    c = checked(p)
    b = {x.name: x for x in c.spec.shape.boundaries}["rtsw-ctsw"]
    assert c.spec.shape.tier("rtsw").up == 6 and b.requested == 3.0 and b.built == pytest.approx(16 / 6)
    assert "ceil(16 / 3) = 6 up" in b.reason
    assert any("2 CTSWs get 2 links, 2 get 1" in w.message for w in c.warnings)
    doc = Design(spec=c.spec, budget=c.budget)
    assert "| rtsw-ctsw | 48 | 400G | 3.00:1 | 2.67:1 |" in sizing_report.section(doc)
