"""The build's default twin run (report section "Collective performance (twin)" and review.json)."""

from __future__ import annotations

import pytest

from twin.analysis.review import figures
from twin.emit.report_net import design_section
from twin.twins.default import design_results


def test_report_compares_the_flat_ring_with_the_hierarchical_allreduce(lab):
    """NCCL's channels (twin/twins/net/nccl.py): 2 per NIC for a ring over whole servers, 4 for a rail
    communicator of one GPU per server. With 1 QP the flat ring's fewer, fatter flows lose more to
    hashing than the hierarchical AllReduce, whose NVLink stages do not hash ([meta-roce] Routing: up
    to 40% for E-ECMP with QP scaling); 16 QPs recover the spraying bound for both."""
    r = design_results(lab)
    by = {e["name"]: e for e in r["schemes"]}
    ecmp, e16, spray = by["ecmp, 1 QP"], by["e-ecmp, 16 QPs"], by["spray (upper bound)"]
    assert r["channels_per_nic"] == {"ring": 2, "hierarchical": 4}
    assert e16["busbw_GBps"][-1] == pytest.approx(spray["busbw_GBps"][-1], rel=0.01)
    assert e16["hierarchical_busbw_GBps"] == pytest.approx(spray["hierarchical_busbw_GBps"], rel=0.01)
    ring_loss = spray["busbw_GBps"][-1] / ecmp["busbw_GBps"][-1]
    hier_loss = spray["hierarchical_busbw_GBps"] / ecmp["hierarchical_busbw_GBps"]
    assert 1.05 < hier_loss < 1.5 < ring_loss
    # three collectives one after the other: below the pipelined flat ring when routing is ideal
    assert spray["hierarchical_busbw_GBps"] < spray["busbw_GBps"][-1]
    text = design_section(r)
    assert "| hierarchical busbw GB/s |" in text and "2 channels per NIC" in text and "4 channels per NIC" in text
    review = {row["key"]: row["value"] for row in figures(lab, r)}
    assert review["twin.hier_busbw.ecmp, 1 QP"] == round(ecmp["hierarchical_busbw_GBps"], 2)
