"""One definition of fabric link load (twin/twins/net/load.py): review.json (the build's default run) and
`twin simulate` report the same max/mean for the same collective on the same fabric."""

from __future__ import annotations

import numpy as np
import pytest

from twin.analysis.review import figures
from twin.lang.scenario.models import parse_scenario
from twin.twins.default import design_results
from twin.twins.net import collectives as coll
from twin.twins.net import load, routing, topology
from twin.twins.run import simulate

# The default run's collective (a ring AllReduce over the first 256 GPUs: all 128 of lab-2zone) as a scenario.
RING = """
name: ring
routing:
  - {name: ecmp-1qp, scheme: ecmp, qps: 1}
  - {name: spray, scheme: spray}
collectives:
  - {name: ring, op: allreduce, algorithm: ring, ranks: {gpus: all}, sizes: [1 GiB]}
"""


def test_review_json_link_load_equals_twin_simulate(lab):
    """lab-2zone, ring AllReduce over 128 GPUs: review.json's max/mean fabric link load is `twin simulate`'s,
    6.0 under 1-QP ECMP (issue 23's known answer; the old review said 3.375, the mean over loaded links
    only) and 1.2 under spraying."""
    review = {r["key"]: r["value"] for r in figures(lab, design_results(lab))}
    scn, src = parse_scenario(RING)
    sim = {e["scheme"]: e["link_load"] for e in simulate(lab, scn, src).data["cases"][0]["collectives"][0]["schemes"]}
    for name, scheme in (("ecmp, 1 QP", "ecmp-1qp"), ("spray (upper bound)", "spray")):
        assert review[f"twin.load.{name}"] == round(sim[scheme]["max_over_mean"], 3)
        assert sim[scheme]["links"] == 384  # every rtsw-ctsw and ctsw-atsw arc, both directions
    assert review["twin.load.ecmp, 1 QP"] == 6.0


def test_spray_link_load_closed_form(lab):
    """Spraying a ring over lab-2zone's 16 servers (2 per rack, 4 racks per zone): per rail ring, each RTSW
    sends one hop up and takes one down over its 16 uplinks (8 rings: 1/2 of a hop's bytes per arc);
    each zone sends one hop out and takes one in over its 32 CTSW-ATSW links (8 rings: 1/4). Mean over
    the 256 + 128 arcs = (256/2 + 128/4) / 384, so max/mean = 0.5 / (160/384) = 1.2; the support is every
    fabric arc, and 1-QP ECMP leaves some of them idle, which the mean counts."""
    net = topology.from_design(lab)
    ranks = np.arange(net.n_gpus)
    phases = coll.plan(net, "allreduce", "ring", ranks)[0]
    spray = coll.time_collective(net, "allreduce", "ring", ranks, routing.Scheme("s", "spray", 1), keep_load=True)
    ll = load.collective(net, spray, phases)
    assert ll.max_over_mean == pytest.approx(1.2)
    assert ll.links == int(load.fabric_arcs(net).sum()) == 2 * (128 + 64)
    ecmp = load.collective(net, coll.time_collective(net, "allreduce", "ring", ranks, routing.Scheme("e", "ecmp", 1), keep_load=True), phases)
    idle = int((ecmp.load[ecmp.support] == 0).sum())
    assert idle > 0 and ecmp.links == ll.links
    loaded = ecmp.load[ecmp.support & (ecmp.load > 0)]
    assert ecmp.max_over_mean == pytest.approx(loaded.max() / loaded.mean() * ecmp.links / (ecmp.links - idle))
