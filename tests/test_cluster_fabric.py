"""The cluster twin's shared fabric (twin/twins/cluster/fabric.py) held to closed forms and to the flow model:
two identical jobs forced across one uplink that each alone fills get half of it each, so their collective
takes twice as long (max-min fairness on one bottleneck, the network twin's fluid model, gives the same
ratio); jobs in separate zones of a fabric non-blocking inside a zone slow each other by nothing; a stretch
that changes mid-run moves the job's end by its remaining work; topology-aware packing measures less
slowdown than a scheduler blind to the fabric; and every GPU-second stays in exactly one bucket."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from twin.twins.cluster import failures as fail
from twin.twins.cluster.alloc import Allocator
from twin.twins.cluster.engine import BUCKETS, Policy, Run
from twin.twins.cluster.fabric import SharedFabric
from twin.twins.cluster.jobset import JobSet
from twin.twins.cluster.site import from_design
from twin.twins.net import fluid, routing, synthetic, topology
from twin.twins.net.collectives import plan
from twin.twins.net.load import SPRAY

W = 3600.0


def fabric_site(**kw):
    g = synthetic.clos(**kw)
    site = from_design(SimpleNamespace(fabric=SimpleNamespace(graph=g), name="synthetic"))
    return site, topology.compile_graph(g, {}, None)


# 2 zones x 2 racks x 1 server x 1 GPU; 1 CTSW per zone with one uplink to the ATSW: 2:1 above the zone.
# Jobs (0, 2) and (1, 3) each put one server in each zone: each ring's hop between the zones fills the uplink.
TWO = dict(zones=2, racks_per_zone=2, servers_per_rack=1, gpus_per_server=1, ctsw_per_zone=1, atsw=1, ctsw_uplinks=1)


def jobs(submit, gpus, work) -> JobSet:
    n = len(submit)
    return JobSet(np.array(submit, float), np.array(gpus, np.int64), np.array(work, float), np.zeros(n, np.int64),
                  np.zeros(n, bool), ("training",), (True,), (0,))


class Forced(Allocator):
    """Places the multi-server jobs, in the order they start, on the servers given (the closed form's placement)."""

    def __init__(self, site, places):
        super().__init__(site, "first-fit")
        self.places = list(places)

    def allocate(self, g):
        servers = self.places.pop(0)
        for s in servers:
            self._set(s, 0)
        return [(s, self.G) for s in servers]


def run(site, net, js, share, policy=None, horizon=2 * 86400.0, places=None):
    p = policy or Policy(interval=1e9, restart=0.0)
    shared = SharedFabric(net, site.ids, share)
    arr = fail.arrivals([], site.servers, int(site.rack.max()) + 1, np.zeros(site.servers, bool), 1.0, horizon, 1)
    R = Run(site, js, [], arr, np.zeros(site.servers, bool), p, horizon, shared)
    if places is not None:
        R.A = Forced(site, places)
    out = R.go()
    assert abs(sum(out.buckets.values()) - site.gpus * horizon) < 1.0, "every GPU-second lands in exactly one bucket"
    return out, shared


def test_two_jobs_across_one_uplink_each_get_half_of_it_as_the_fluid_model_shares_it():
    site, net = fabric_site(**TWO)
    f = SharedFabric(net, site.ids, 1.0)
    assert f.add(0, (0, 2)) == {0: 1.0}
    assert f.add(1, (1, 3)) == {1: 2.0, 0: 2.0}  # closed form: half the uplink each, the collective twice as long
    assert f.remove(0) == {1: 1.0}
    # the flow model: both rings' flows max-min fair on the fabric finish in twice the time of one alone
    routed = []
    for servers in ((0, 2), (1, 3)):
        ranks = np.concatenate([f.gpus[s] for s in servers])
        (ph,), _ = plan(net, "allreduce", "ring", ranks)
        routed.append(routing.route(net, ph.src, ph.dst, ph.frac * 1e9, SPRAY, ph.conns, ph.pxn))
    alone = fluid.complete(routed[0].A, net.arc_cap / 8, routed[0].size).makespan
    both = routing._concat(net, routed)
    together = fluid.complete(both.A, net.arc_cap / 8, both.size).makespan
    assert together / alone == pytest.approx(2.0, rel=1e-6)


def test_the_step_stretches_by_its_share_of_the_collective_and_a_change_mid_run_moves_the_end():
    site, net = fabric_site(**TWO)
    both = [(0, 2), (1, 3)]
    # w = 1, both from 0: each runs at half speed to 2W; its 2 GPUs spend W of it slowed by its neighbour
    out, _ = run(site, net, jobs([0.0, 0.0], [2, 2], [W, W]), 1.0, places=both)
    assert out.jobs_end.tolist() == pytest.approx([2 * W, 2 * W])
    assert out.buckets["neighbours"] == pytest.approx(4 * W) and out.buckets["productive"] == pytest.approx(4 * W)
    # w = 1, the second job at W/2: A has W/2 left, done at 1.5 W; B did W/2 by then and ends alone at 2 W
    out, _ = run(site, net, jobs([0.0, W / 2], [2, 2], [W, W]), 1.0, places=both)
    assert out.jobs_end.tolist() == pytest.approx([1.5 * W, 2.0 * W])
    assert out.buckets["neighbours"] == pytest.approx(2 * (W / 2) * 2)  # each job's 2 GPUs slowed for W/2
    # w = 1/2: on the uplink U = 1/2 + 1/2, C = 1 - 1/2 + 1 = 3/2, the step 1 + (3/2 - 1)/2 = 5/4
    out, _ = run(site, net, jobs([0.0, 0.0], [2, 2], [W, W]), 0.5, places=both)
    assert out.jobs_end.tolist() == pytest.approx([1.25 * W, 1.25 * W])
    # each inside its own zone (servers 0, 1 and 2, 3) the same two jobs are not stretched at all
    out, _ = run(site, net, jobs([0.0, 0.0], [2, 2], [W, W]), 1.0, places=[(0, 1), (2, 3)])
    assert out.jobs_end.tolist() == pytest.approx([W, W]) and out.buckets["neighbours"] == 0.0


def test_jobs_in_separate_zones_slow_each_other_by_nothing():
    # 2 zones x 2 racks x 2 servers x 2 GPUs, 1:1 inside the zone, 8:1 above it
    site, net = fabric_site(zones=2, racks_per_zone=2, servers_per_rack=2, gpus_per_server=2, ctsw_per_zone=2, atsw=1, ctsw_uplinks=1)
    f = SharedFabric(net, site.ids, 1.0)
    for j, zone in enumerate(range(2)):
        servers = tuple(np.flatnonzero(site.zone == zone).tolist())
        assert f.add(j, servers) == {j: 1.0}
    assert f.R.max() <= 1.0 + 1e-9  # nothing stretched, nothing to recompute


def test_topology_packing_measures_less_slowdown_than_random_placement():
    site, net = fabric_site(zones=2, racks_per_zone=4, servers_per_rack=2, gpus_per_server=2, ctsw_per_zone=2, atsw=1, ctsw_uplinks=1)
    rng = np.random.default_rng(5)
    n = 60
    js = jobs(np.sort(rng.random(n) * 3 * 86400.0), [8] * n, rng.uniform(1, 4, n) * W)
    slowed = {}
    for packing in ("topology", "random"):
        out, _ = run(site, net, js, 0.5, Policy(interval=1e9, restart=0.0, packing=packing), horizon=4 * 86400.0)
        held = sum(out.buckets[k] for k in BUCKETS[:7])
        slowed[packing] = out.buckets["neighbours"] / held
        assert out.counts["completions"] == n
    assert slowed["topology"] == 0.0 < 0.05 < slowed["random"]


@pytest.mark.parametrize("servers", [(0, 8), (0, 1, 8), (3, 12, 5, 9), (0, 2, 4, 6, 8, 10, 12), tuple(range(16))])
def test_the_ring_read_off_the_spray_tables_is_the_routed_collectives_footprint(lab, servers):
    """The fast footprint (each ring hop's spray table) against routing the planned ring's every transfer."""
    site = from_design(lab)
    f = SharedFabric(topology.from_design(lab), site.ids, 1.0)
    assert f.direct
    fast, routed = f._ring(servers), f._route(servers)
    assert fast.arcs.tolist() == routed.arcs.tolist() and len(fast.arcs) > 0
    assert fast.u == pytest.approx(routed.u, rel=1e-9)


def test_a_scenario_with_a_shared_fabric_reports_the_slowed_share_and_keeps_every_gpu_second(lab):
    """lab-2zone (2:1 above the zones) with 32-GPU jobs placed at random: rings crossing the ATSW tier
    together stretch each other; packed inside the zones they do not."""
    from twin.emit.report_cluster import findings
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.cluster.run import simulate_cluster

    text = ("name: t\ncluster:\n  days: 3\n  jobs:\n    mix:\n      rate: 30 / day\n      sizes:\n"
            "        - {gpus: 32, share: 1, duration: {median: 2 h, sigma: 0.5}}\n"
            "  scheduler: {packing: PACKING}\n  fabric: {comm_share: 0.5}\n")
    slowed = {}
    for packing in ("topology", "random"):
        scn, src = parse_scenario(text.replace("PACKING", packing))
        doc, out = simulate_cluster(lab, scn.cluster, src)
        assert abs(doc["conservation_gpu_s"]) < 1.0 and "neighbours" in doc["buckets_gpu_h"]
        assert doc["fabric"]["placements_routed"] > 0
        slowed[packing] = doc["fabric"]["slowed_share_of_held"]
        assert any(f.startswith("shared fabric:") for f in findings(doc))
    assert slowed["topology"] == 0.0 < slowed["random"]


def test_the_sites_power_at_full_load_is_the_designs_facility_budget_and_idle_is_the_idle_draw(lab):
    """Power on the cluster clock (twin/twins/cluster/power.py): every GPU held and computing at TDP (lab-2zone
    has no cap) draws the design's own facility budget; an empty site draws its idle figures (closed form)."""
    from twin.twins.cluster.power import site_power
    from twin.twins.power.phases import gpu_phases

    ch = lab.spec.chassis
    full = site_power(lab, np.array([128.0, 0.0]), 128, 8, 3600.0)
    assert full["facility_kw"]["peak"] * 1e3 == pytest.approx(lab.budget.facility_power, rel=1e-9)
    ph = gpu_phases(ch.phase_power, ch.gpu_tdp, lab.spec.rack.gpu_power_cap, ch.max_power, ch.gpus)
    idle_it = lab.budget.it_power - 16 * ch.max_power + 128 * ph.idle + 16 * ph.rest_idle
    assert full["facility_kw"]["min"] * 1e3 == pytest.approx(idle_it * lab.spec.site.power.pue, rel=1e-9)
    assert full["hours_over_supply"] == 0.0 and full["facility_kw"]["mean"] == pytest.approx(
        (full["facility_kw"]["peak"] + full["facility_kw"]["min"]) / 2)
