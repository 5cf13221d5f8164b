"""Anything `validate` accepts, `build` builds: every family x technology pair, and what is refused up front."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fabric_helpers import variant

import twin
from twin.lang.diagnostics import SpecError

QM = {"model": "qm9700"}

CASES = {
    ("ai-zone-clos", "roce"): ("lab-2zone", {}, {}),
    ("ai-zone-clos", "infiniband"): ("lab-2zone", {"rtsw": "qm9700"}, dict(
        technology="infiniband", ctsw={**QM, "count": 4}, atsw={**QM, "count": 2, "oversubscription": "2:1"},
        routing=None, qos=None)),
    ("fat-tree", "roce"): ("lab-ib", {}, dict(technology="roce", switch="minipack2", infiniband=None)),
    ("fat-tree", "infiniband"): ("lab-ib", {}, {}),
    ("rail-optimized", "roce"): ("lab-ib", {}, dict(technology="roce", switch="minipack2", family="rail-optimized", tiers=None, infiniband=None)),
    ("rail-optimized", "infiniband"): ("lab-ib", {}, dict(family="rail-optimized", tiers=None)),
    ("rail-only", "roce"): ("lab-ib", {}, dict(technology="roce", switch="minipack2", family="rail-only", tiers=None, infiniband=None)),
    ("rail-only", "infiniband"): ("lab-ib", {}, dict(family="rail-only", tiers=None)),
    ("scalable-unit", "roce"): ("gb200-nvl72-superpod", {}, dict(technology="roce", switch="minipack2", infiniband=None)),
    ("scalable-unit", "infiniband"): ("gb200-nvl72-superpod", {}, {}),
}


@pytest.mark.parametrize("family, technology", sorted(CASES))
def test_every_family_and_technology_builds(tmp_path, family, technology):
    base, rack, fabric = CASES[(family, technology)]
    p = variant(tmp_path, base, f"x-{family}-{technology}", rack_fields=rack, **fabric)
    d = twin.load(p)  # raises on anything the passes cannot handle
    assert d.fabric.family == family and d.fabric.technology == technology
    assert (d.addressing is not None) == (technology == "roce") == (d.intent is not None)


def test_roce_tree_of_four_tiers_is_refused_by_validate(tmp_path):
    p = variant(tmp_path, "lab-ib", "x-ft4", technology="roce", switch="minipack2", tiers=4, infiniband=None)
    r = subprocess.run([sys.executable, "-m", "twin", "validate", str(p)], capture_output=True, text=True)
    assert r.returncode == 2
    line = next(ln for ln in r.stderr.splitlines() if "fabric.tiers" in ln)
    assert line.startswith(f"{p}:") and "4 switch tiers" in line and "infiniband" in line
    # the same fabric on InfiniBand (OpenSM, no ASNs) builds
    assert twin.load(variant(tmp_path, "lab-ib", "x-ft4-ib", tiers=4)).spec.shape.tiers[-1].role == "core"


def test_asn_pools_by_level_and_by_old_role_names(tmp_path):
    old = {"rtsw": {"first": 65100, "last": 65199}, "ctsw": {"first": 65200, "last": 65209}, "atsw": {"first": 65300, "last": 65300}}
    d = twin.load(variant(tmp_path, "lab-2zone", "x-oldpools", routing={"asn_pools": old}))
    assert sorted(d.spec.fabric.routing.asn_pools) == ["level1", "level2", "level3"]
    assert d.addressing.asn["atsw-01"] == 65300 and d.addressing.asn["z2-ctsw-01"] == 65201
    both = {"rtsw": old["rtsw"], "level1": {"first": 1, "last": 9}}
    with pytest.raises(SpecError, match="name the same ASN pool"):
        twin.load(variant(tmp_path, "lab-2zone", "x-both", routing={"asn_pools": both}))
    # 8 RTSWs need 8 level-1 ASNs: a pool of 5 is refused by validate, located at the pool (the levels
    # not given keep their default pools)
    small = {"level1": {"first": 65100, "last": 65104}}
    with pytest.raises(SpecError) as e:
        twin.load(variant(tmp_path, "lab-2zone", "x-small", routing={"asn_pools": small}))
    msg = "\n".join(d.format() for d in e.value.diagnostics)
    assert "asn_pools.level1: pool holds 5 ASNs; 8 rtsw ASNs are needed" in msg
