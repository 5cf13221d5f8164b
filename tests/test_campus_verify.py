"""A campus in real FRR: a two-building slice converges to the predicted ECMP with routes crossing the
campus tier, and an ATSW that leaks another building's routes to the campus is caught. Needs root and FRR."""

from __future__ import annotations

import pytest
from conftest import SITES

from twin.build import build
from twin.verify import roce
from twin.verify.frr import binaries
from twin.verify.netns import leftover, require_root

WHY = require_root(binaries(bfd=True))
needs_frr = pytest.mark.skipif(WHY is not None, reason=WHY or "")


@pytest.fixture(scope="module")
def campus_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "lab-campus"
    build(SITES / "lab-campus.yaml", out)
    return out


def test_slice_prediction(campus_out):
    """Pure model: in the slice of buildings 1 and 3 an ATSW reaches the other building over its 4 mesh
    links and its own racks over 8 CTSW links; b2's racks are out of scope."""
    topo = roce.Topology.load(campus_out).slice_buildings([1, 3])
    w = roce.predict(topo)
    assert sorted(w["b1-atsw-01"].values()) == [4, 4, 8, 8]
    assert all(len(v) == 3 for n, v in w.items() if topo.switches[n]["level"] == 1)


@pytest.mark.root
@pytest.mark.slow
@needs_frr
def test_two_building_slice_verifies_in_frr(campus_out):
    res = roce.verify(campus_out, buildings=[1, 3], timeout=180)
    js = res.to_json()
    assert res.ok, js["problems"]
    assert js["scope"] == "buildings 1, 3" and js["frr_instances"] == 12
    # 2 buildings x (2 racks x 16 uplinks + 2 CTSWs x 8 uplinks) + 2 ATSW pairs x 4 mesh links = 104 links
    assert js["links"] == 104 and js["bgp_sessions_established"] == js["bgp_sessions_expected"] == 208
    assert js["pings"]["failed"] == 0 and js["pings"]["sent"] == 12
    assert js["atsws_leaking_other_buildings"] == 0 and js["bfd_sessions_down"] == 0
    assert not leftover(js["namespace_prefix"])


@pytest.mark.root
@pytest.mark.slow
@needs_frr
def test_an_atsw_leaking_to_the_campus_is_caught(campus_out):
    """Without its outbound campus policy b1-atsw-01 passes b2's and b3's routes on to the other: the
    ECMP widths and pings cannot see it (the direct routes stay shorter), the advertised routes do."""

    def breaking(configs: dict[str, str]) -> None:
        line = "  neighbor ATSW route-map TO-CAMPUS out\n"
        assert line in configs["b1-atsw-01"]
        configs["b1-atsw-01"] = configs["b1-atsw-01"].replace(line, "")

    res = roce.verify(campus_out, timeout=120, bfd=False, mutate=breaking)
    assert not res.ok and res.figures["atsws_leaking_other_buildings"] == 1
    assert any(p.startswith("b1-atsw-01 gives the campus tier routes of other buildings") for p in res.problems), res.problems
    assert res.figures["pings"]["failed"] == 0
    assert not leftover(res.figures["namespace_prefix"])
