"""The cluster twin's event clock held to closed forms and to Kokolis et al.'s measurements
([meta-reliability]: "Revisiting Reliability in Large-Scale ML Research Clusters", arXiv 2410.21680):
ETTR of a large job alone on the site, job MTTF by size from one per-node rate, the scheduler's
policies on constructions whose answer is known, and conservation of GPU-time in every run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.twins.cluster import failures as fail
from twin.twins.cluster.answers import expected_ettr, optimal_interval, renewal_ettr, size_class
from twin.twins.cluster.engine import BUCKETS, Policy, Run
from twin.twins.cluster.jobset import JobSet
from twin.twins.cluster.site import uniform

DAY = 86400.0
RSC1 = 6.5 / 1000 / DAY  # [meta-reliability]: RSC-1's 6.5 failures per 1,000 node-days


def jobs(submit, gpus, work, prio=None, ckpt=True) -> JobSet:
    n = len(submit)
    prio = [0] * n if prio is None else prio
    names = tuple(f"p{p}" for p in sorted(set(prio)))
    kind = np.array([sorted(set(prio)).index(p) for p in prio], np.int64)
    return JobSet(np.array(submit, float), np.array(gpus, np.int64), np.array(work, float), kind, np.zeros(n, bool),
                  names, (ckpt,) * len(names), tuple(sorted(set(prio))))


def run(site, js, policy=None, sources=(), horizon=30 * DAY, seed=1, lemons=None, factor=1.0):
    lem = np.zeros(site.servers, bool) if lemons is None else lemons
    racks = int(site.rack.max()) + 1
    arr = fail.arrivals(list(sources), site.servers, racks, lem, factor, horizon, seed)
    out = Run(site, js, list(sources), arr, lem, policy or Policy(), horizon).go()
    total = sum(out.buckets.values())
    assert abs(total - site.gpus * horizon) < 1.0, "every GPU-second lands in exactly one bucket"
    return out


SITE24K = uniform(zones=8, racks_per_zone=192, servers_per_rack=2, gpus_per_server=8)  # meta-24k-roce's shape


@pytest.mark.parametrize("interval", [300.0, 3600.0])
def test_a_16k_gpu_job_alone_on_the_site_has_kokolis_ettr(interval):
    """[meta-reliability] s5: E[ETTR] = (1 - N r_f (u0 + dt/2)) / (1 + w/dt) for 2,048 nodes at RSC-1's rate:
    about 0.93 with 5-minute checkpoints and about 0.7 hourly. The formula is first order in N r_f dt; the
    Monte Carlo matches the exact renewal form within 2%, and Kokolis' within 5% where N r_f dt is small
    (at hourly checkpoints N r_f dt = 0.55 and the first order undercounts the kept work by 6%)."""
    src = [fail.Source("node", "infrastructure", "server", RSC1, 0.0, DAY)]
    D = 40 * DAY
    out = run(SITE24K, jobs([0.0], [16384], [1e9]), Policy(interval=interval, write=0.0, restart=300.0), src, D, seed=3)
    ettr = out.buckets["productive"] / (16384 * D)
    exact = renewal_ettr(2048, RSC1, 300.0, interval, 0.0)
    assert ettr == pytest.approx(exact, rel=0.02)
    if interval == 300.0:
        assert ettr == pytest.approx(expected_ettr(2048, RSC1, 300.0, interval, 0.0), rel=0.05)
        assert ettr == pytest.approx(0.93, abs=0.01)
    else:
        assert ettr == pytest.approx(0.7, abs=0.03)
    assert out.counts["job_interruptions"] == pytest.approx(2048 * RSC1 * D, rel=0.1)


def test_the_best_checkpoint_interval_is_kokolis_sqrt_2w_over_n_rf():
    """sqrt(2 w / (N r_f)) = 624 s for a 30 s write: the Monte Carlo (common failures) peaks there among
    intervals a factor of two apart."""
    src = [fail.Source("node", "infrastructure", "server", RSC1, 0.0, DAY)]
    best = optimal_interval(2048, RSC1, 30.0)
    assert best == pytest.approx(624, abs=1)
    got = {}
    for k in (0.5, 1.0, 2.0):
        out = run(SITE24K, jobs([0.0], [16384], [1e9]), Policy(interval=best * k, write=30.0, restart=300.0), src, 20 * DAY, seed=5)
        got[k] = out.buckets["productive"] / (16384 * 20 * DAY)
    assert max(got, key=got.get) == 1.0
    assert got[1.0] == pytest.approx(expected_ettr(2048, RSC1, 300.0, best, 30.0), rel=0.05)


@pytest.mark.parametrize("gpus,published_h", [(8, 47.7 * 24), (1024, 7.9)])
def test_job_mttf_by_size_from_one_per_node_rate(gpus, published_h):
    """[meta-reliability]: measured job MTTF of about 47.7 days for 8-GPU jobs and 7.9 hours for 1,024-GPU
    jobs (all causes). One rate, 22.5 failures per 1,000 node-days, gives 1/(N r) = 44.4 d and 8.3 h; the
    twin's measured MTTF (running time over the failures that stopped the jobs) holds 1/(N r) within 5%
    and the published figures within 10%."""
    rate = 22.5 / 1000 / DAY
    site = uniform(zones=9, racks_per_zone=128, servers_per_rack=2, gpus_per_server=8)  # 2,304 servers, 2,048 busy
    n = 16384 // gpus
    src = [fail.Source("all", "all", "server", rate, 0.0, 4 * 3600.0)]
    out = run(site, jobs([0.0] * n, [gpus] * n, [1e9] * n), Policy(restart=0.0), src, 30 * DAY, seed=7)
    c = int(size_class(np.array([gpus]))[0])
    mttf_h = out.tally.time[c] / out.tally.n[c]["failures"] / 3600.0
    assert mttf_h == pytest.approx(1 / (gpus / 8 * rate) / 3600.0, rel=0.05)
    assert mttf_h == pytest.approx(published_h, rel=0.10)
    assert out.by_causes == {"all": out.tally.n[c]["failures"], "infrastructure": 0}


def test_fifo_blocks_behind_the_head_and_easy_backfills_what_ends_before_its_reservation():
    site = uniform(zones=1, racks_per_zone=1, servers_per_rack=2, gpus_per_server=8)
    # A holds a server for 10 h; B needs both servers; C (4 GPUs, 1 h) fits now and ends before B's reservation;
    # D (4 GPUs, 20 h) would fit next to C but would delay B: EASY keeps it waiting.
    js = jobs([0.0, 1.0, 2.0, 3.0], [8, 16, 4, 4], [36000.0, 3600.0, 3600.0, 72000.0])
    fifo = run(site, js, Policy(policy="fifo"), horizon=2 * DAY)
    easy = run(site, js, Policy(policy="easy"), horizon=2 * DAY)
    assert fifo.jobs_first.tolist() == [0.0, 36000.0, 39600.0, 39600.0]
    assert easy.jobs_first.tolist() == [0.0, 36000.0, 2.0, 39600.0]
    assert easy.buckets["queued_idle"] < fifo.buckets["queued_idle"]
    # while B waits with 8 GPUs free on one server it cannot fit by count: queued idle, not fragmentation
    assert fifo.buckets["fragmentation"] == 0.0


def test_fragmentation_is_idle_gpus_the_head_fits_by_count_not_by_shape():
    site = uniform(zones=1, racks_per_zone=1, servers_per_rack=2, gpus_per_server=8)
    js = jobs([0.0, 0.0, 1.0], [4, 4, 8], [7200.0, 7200.0, 3600.0])  # best fit puts both 4s on one server...
    out = run(site, js, Policy(policy="fifo"), horizon=DAY)
    assert out.jobs_first.tolist() == [0.0, 0.0, 1.0]  # ...so the 8 fits on the other: no fragmentation
    spread = run(uniform(1, 1, 2, 8), jobs([0.0, 0.0, 1.0, 2.0], [6, 6, 8, 1], [7200.0, 7200.0, 3600.0, 60.0]), Policy(policy="fifo"), horizon=DAY)
    # two 6-GPU jobs take a server each; the 8-GPU head sees 4 free GPUs: fewer than it needs (queued idle)
    assert spread.buckets["fragmentation"] == 0.0 and spread.buckets["queued_idle"] == pytest.approx(4 * (7200.0 - 1.0))
    frag = run(uniform(1, 1, 2, 8), jobs([0.0, 0.0, 1.0], [4, 4, 8], [7200.0, 7200.0, 60.0]),
               Policy(policy="fifo", packing="first-fit"), horizon=DAY)
    assert frag.jobs_first[2] == 1.0  # best fit is the allocator's rule for small jobs under either packing


def test_topology_packing_keeps_a_job_in_one_zone_first_fit_spreads_it():
    site = uniform(zones=2, racks_per_zone=2, servers_per_rack=2, gpus_per_server=8)
    from twin.twins.cluster.alloc import Allocator

    for packing, zones in (("topology", 1), ("first-fit", 2)):
        a = Allocator(site, packing)
        a.allocate(16)
        assert a.zones_of(a.allocate(24)) == zones, packing


def test_preemption_after_the_guard_stops_jobs_behind_the_head_and_loses_their_work_since_the_checkpoint():
    site = uniform(zones=1, racks_per_zone=1, servers_per_rack=2, gpus_per_server=8)
    js = jobs([0.0, 0.0, 600.0], [8, 8, 16], [1e6, 1e6, 3600.0], prio=[0, 0, 1])
    out = run(site, js, Policy(preempt=True, guard=7200.0, interval=5000.0, restart=300.0), horizon=DAY)
    assert out.jobs_first.tolist()[2] == 7200.0  # the head waits out the guard, then preempts both
    assert out.counts["preemptions"] == 2
    assert out.buckets["preempted"] == pytest.approx(2 * 8 * (7200.0 - 5000.0) + 2 * 8 * 300.0)  # lost work + relaunch
    none = run(site, js, Policy(preempt=False), horizon=DAY)
    assert math.isnan(none.jobs_first[2]) and none.counts["preemptions"] == 0


def test_a_failed_jobs_requeue_preempts_others_second_order_loss():
    """The large job fails, small jobs take its servers, and once they pass the guard its requeue preempts them."""
    site = uniform(zones=1, racks_per_zone=1, servers_per_rack=4, gpus_per_server=8)
    big = [0.0], [32], [1e7]
    small_t = [3600.0 + 10 * k for k in range(6)]
    js = jobs(big[0] + small_t, big[1] + [8] * 6, big[2] + [1e6] * 6, prio=[1] + [0] * 6)
    src = [fail.Source("node", "infrastructure", "server", 0.0, 60.0, 3600.0)]
    arr = (np.array([5000.0]), np.array([0]), np.array([0]))
    out = Run(site, js, src, arr, np.zeros(4, bool), Policy(preempt=True, guard=7200.0, restart=0.0), 2 * DAY).go()
    assert out.counts["job_interruptions"] == 1
    assert out.counts["preemptions"] == out.counts["preemptions_after_failure"] == 3
    assert sum(out.buckets.values()) == pytest.approx(32 * 2 * DAY)


def test_causes_are_kept_apart_and_a_rack_switch_takes_its_rack():
    site = uniform(zones=1, racks_per_zone=4, servers_per_rack=2, gpus_per_server=8)
    js = jobs([0.0] * 8, [8] * 8, [1e9] * 8)
    src = [fail.Source("gpu", "infrastructure", "server", 0.0, 0.0, 3600.0), fail.Source("rtsw", "infrastructure", "rack", 0.0, 0.0, 3600.0),
           fail.Source("user", "all", "server", 0.0, 0.0, 0.0)]
    arr = (np.array([1000.0, 2000.0, 3000.0]), np.array([0, 1, 5]), np.array([0, 1, 2]))
    out = Run(site, js, src, arr, np.zeros(8, bool), Policy(restart=0.0), DAY).go()
    assert out.by_source == {"gpu": 1, "rtsw": 2, "user": 1}  # the rack's two servers each stop a job
    assert out.by_causes == {"infrastructure": 3, "all": 1}
    assert out.counts["failures"] == 4 and out.buckets["repair"] == pytest.approx(8 * 3600.0 * 3)


def test_detected_lemons_are_drained_and_spares_stand_in():
    site = uniform(zones=2, racks_per_zone=8, servers_per_rack=2, gpus_per_server=8)
    lem = fail.lemon_mask(site.servers, 0.125, 1)
    src = [fail.Source("node", "infrastructure", "server", 20 / 1000 / DAY, 300.0, DAY)]
    n = 28
    js = jobs([0.0] * n, [8] * n, [1e9] * n)
    kw = dict(sources=src, horizon=60 * DAY, lemons=lem, factor=40.0, seed=2)
    found = run(site, js, Policy(spares=2, lemon_after=3, lemon_window=7 * DAY, lemon_drain=60 * DAY), **kw)
    blind = run(site, js, Policy(spares=2), **kw)
    assert found.counts["lemons_drained"] >= 2 and found.counts["lemons_true"] == found.counts["lemons_drained"]
    assert found.counts["job_interruptions"] < 0.6 * blind.counts["job_interruptions"]
    assert found.buckets["spare"] > 0 and set(found.buckets) == set(BUCKETS)


def test_a_job_alone_matches_the_reliability_twins_campaign():
    """The same job, failures and recovery in the reliability twin's Monte Carlo (twin/twins/reliability,
    one server mode, unlimited spares) and in the cluster twin (the site's other servers stand in): the
    same ETTR and the same interruptions per day."""
    from twin.twins.reliability.components import Mode
    from twin.twins.reliability.engine import Plan, simulate

    nodes, rate, D = 512, 10 / 1000 / DAY, 60 * DAY
    mode = Mode("node", "node", "", "server", "", nodes, rate, "swap", 1, 0.0, DAY)
    camp = simulate([mode], Plan(D, runs=200, seed=1, interval=1800.0, stall=20.0, restart=300.0, spares=None, keep_events=False))
    site = uniform(zones=2, racks_per_zone=160, servers_per_rack=2, gpus_per_server=8)
    src = [fail.Source("node", "infrastructure", "server", rate, 0.0, DAY)]
    out = run(site, jobs([0.0], [nodes * 8], [1e9]), Policy(interval=1800.0, write=20.0, restart=300.0), src, D, seed=4)
    assert out.buckets["productive"] / (nodes * 8 * D) == pytest.approx(float(camp.ettr.mean()), rel=0.01)
    assert out.counts["job_interruptions"] == pytest.approx(float(camp.counts.sum(axis=1).mean()), rel=0.1)
