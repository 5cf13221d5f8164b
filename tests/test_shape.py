"""One owner per derived fact: the fabric's shape is what placement models, what the graph is, what checks read.

For every example site and for variants that exercise the rules (two RTSWs per rack, a plain
fat-tree, the rail families), the links the placement MILP weighs between rack pairs add up to the
links of each tier boundary in the built graph, and the graph matches the shape tier by tier.
"""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import compiled, tiered
from fabric_helpers import compile_naive, variant

import twin
from twin.compiler.fabric.synthesis import mismatches
from twin.compiler.place.figures import links_of
from twin.compiler.resolve.zone_links import ctsw_downlinks, ctsw_uplink_targets

EXAMPLES = ["lab-2zone", "lab-ib", "lab-powercap", "meta-24k-roce", "meta-24k-ib", "meta-32k-roce", "gb200-nvl72-superpod"]


def graph_links(design) -> Counter:
    return Counter(lk.tier for lk in design.fabric.cables())


def modeled_links(design) -> dict[str, float]:
    """The links the placement's fiber objective weighs, summed over the rack pairs it weighs them on."""
    spec = design.spec
    w = links_of(spec)
    gpu_racks = len(design.placement.gpu_racks())
    if w.spine_role == "ctsw":
        ctsws = spec.zones * spec.fabric.ctsw.count
        atsws = spec.fabric.atsw.count if spec.shape.tier("atsw") else 0
        # per GPU rack, per CTSW switch of its zone; per (CTSW, ATSW) switch pair of the site
        return {"rtsw-ctsw": w.gpu_to_spine["per_rack"] * spec.fabric.ctsw.count * gpu_racks,
                "ctsw-atsw": w.spine_to_core * ctsws * atsws}
    # trees: a GPU rack's NICs to the fabric racks of its hall, rack by rack (the last may be part-filled)
    return {spec.shape.boundaries[0].name: w.gpu_to_spine["per_rack"] * gpu_racks}


def check_design(design) -> None:
    assert mismatches(design.spec.shape, design.fabric) == []
    got = graph_links(design)
    for tier, n in modeled_links(design).items():
        if design.spec.fabric.family != "ai-zone-clos" and design.spec.gpus % design.spec.rack.gpus:
            continue  # a part-filled last rack has fewer NICs than the per-rack weight
        assert n == pytest.approx(got.get(tier, 0)), tier


@pytest.mark.parametrize("site", tiered(EXAMPLES))
def test_examples_placement_graph_and_shape_agree(site):
    check_design(compiled(site) if site.startswith("lab") else compile_naive_site(site))


def compile_naive_site(site):
    from fabric_helpers import SITES

    return compile_naive(SITES / f"{site}.yaml")


def test_two_rtsws_per_rack(tmp_path):
    # lab-2zone with two RTSWs per rack: 16 NICs / 2 = 8 down and 8 up each, so a rack sends 16 uplinks
    # to its zone's 4 CTSWs (4 each). A zone's 4 racks x 16 = 64 uplinks -> 16 per CTSW; at 2:1 each
    # CTSW has 8 ATSW uplinks: 2 zones x 4 CTSWs x 8 = 64 CTSW-ATSW links, 64 / (8 CTSWs x 2 ATSWs) = 4
    # per pair. Counting one RTSW's uplinks instead of the rack's would model 2 per pair (half).
    p = variant(tmp_path, "lab-2zone", "lab-2rtsw", rack_fields={"rtsw_count": 2}, rtsw={"uplinks": 8})
    d = twin.load(p)
    shape = d.spec.shape
    assert shape.rack_uplinks == 16 and shape.ctsw_down == (16, 16, 16, 16) and shape.ctsw_up == (8, 8, 8, 8)
    assert links_of(d.spec).spine_to_core == 4
    assert links_of(d.spec).gpu_to_spine["per_rack"] == 4
    assert shape.tier("rtsw").count == 16 and (shape.tier("rtsw").down, shape.tier("rtsw").up) == (8, 8)
    check_design(d)
    assert graph_links(d) == {"nic-rtsw": 128, "rtsw-ctsw": 128, "ctsw-atsw": 64}


@pytest.mark.parametrize("family, rails, switches, links", [
    # 128 GPUs = 128 NICs on 64-port QM9700s (h = 32): a 2-tier tree of ceil(128 / 32) = 4 leaves and
    # 2 spines; each leaf has 32 uplinks -> 128 leaf-spine links.
    ("fat-tree", None, {"leaf": 4, "spine": 2}, {"nic-leaf": 128, "leaf-spine": 128}),
    # rail-optimized, one rail per leaf: 16 servers, groups of 32 servers -> 1 group x 8 rails = 8
    # leaves, ceil(8 / 2) = 4 spines; 8 leaves x 32 uplinks = 256 leaf-spine links.
    ("rail-optimized", 1, {"leaf": 8, "spine": 4}, {"nic-leaf": 128, "leaf-spine": 256}),
    # auto: a rail fills 16 of a leaf's 32 down-ports (at most half), so 2 rails share a leaf: groups
    # of 32 / 2 = 16 servers, 1 group x 8 / 2 = 4 leaves of 32 NICs, ceil(4 / 2) = 2 spines, 128 links.
    ("rail-optimized", None, {"leaf": 4, "spine": 2}, {"nic-leaf": 128, "leaf-spine": 128}),
    # rail-only, HB domain 8, one rail per switch: 8 rails of 16 NICs, each one 1-tier tree: 8 leaves.
    ("rail-only", 1, {"leaf": 8}, {"nic-leaf": 128}),
    # auto: a rail takes 16 of 64 ports, so 4 rails share a switch (4 x 16 = 64): 8 / 4 = 2 leaves.
    ("rail-only", None, {"leaf": 2}, {"nic-leaf": 128}),
])
def test_tree_families(tmp_path, family, rails, switches, links):
    extra = {"rails_per_switch": rails} if rails else {}
    p = variant(tmp_path, "lab-ib", f"lab-{family}", family=family, tiers=None, **extra)
    d = twin.load(p)
    assert {t.role: t.count for t in d.spec.shape.tiers} == switches
    assert graph_links(d) == links
    check_design(d)


def test_ctsw_wiring_rule():
    # 18 uplinks per rack x 252 racks over 18 CTSWs (meta-32k-roce): 252 each; 16 x 3 over 5: 10,10,10,9,9
    assert set(ctsw_downlinks(252 * 18, 18)) == {252}
    assert ctsw_downlinks(48, 5) == (10, 10, 10, 9, 9)
    # 16 CTSWs and 16 ATSWs: 16 planes of one ATSW: CTSW j of every zone meets at ATSW j
    assert {k for z in range(8) for k in ctsw_uplink_targets(z, 5, 28, 16, 16)} == {5}
    # 4 CTSWs over 2 ATSWs: 2 planes of 1 ATSW
    assert ctsw_uplink_targets(0, 1, 3, 4, 2) == [1, 1, 1]


def test_meta_cross_zone_requested_and_built():
    # meta-24k-roce asks for 1:7; a CTSW has 192 downlinks -> ceil(192 / 7) = 28 uplinks -> 6.86:1 built
    b = {x.name: x for x in compiled_spec("meta-24k-roce").shape.boundaries}["ctsw-atsw"]
    assert b.requested == 7 and b.built == pytest.approx(192 / 28)
    assert b.links == 8 * 16 * 28


def compiled_spec(site):
    from fabric_helpers import SITES

    from twin.compiler.pipeline import check

    return check(SITES / f"{site}.yaml").spec
