"""The campaign Monte Carlo against closed forms (no design needed).

Known answers:
- no failures: ETTR = interval / (interval + checkpoint stall), exactly, over whole cycles;
- a zero spare pool with one server failure mode and no other overheads: the job runs only while no
  server is in repair; failures arrive in wall time (Poisson, rate lambda) and each repair takes r, so
  the servers in repair are an M/G/inf queue and ETTR = P(none in repair) = exp(-lambda r)
  (e.g. Ross, Introduction to Probability Models, the M/G/inf occupancy is Poisson(lambda r));
- Young (1974) / Daly (2006): the best checkpoint interval ~ sqrt(2 x write time x MTTI) when the write
  is short next to the MTTI and restarts are cheap.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.twins.reliability import answers
from twin.twins.reliability.checkpoint import cost, young_daly
from twin.twins.reliability.components import Mode
from twin.twins.reliability.engine import BUCKETS, Plan, simulate, split_segment, timeline

DAY = 86400.0


def mode(per_day: float, kind: str = "swap", servers: int = 1, detection: float = 0.0, repair: float = 0.0,
         slowdown: float = 1.0, name: str = "m") -> Mode:
    return Mode(name, name, name, "server", "", 1, per_day / DAY, kind, servers if kind in ("swap", "straggle") else 0,
                detection, repair, slowdown)


def test_no_failures_leaves_exactly_the_checkpoint_overhead():
    tau, s = 600.0, 6.0
    plan = Plan(horizon=1000 * (tau + s), runs=3, seed=1, interval=tau, stall=s)
    o = simulate([mode(0.0)], plan)
    assert o.counts.sum() == 0
    assert o.ettr == pytest.approx(np.full(3, tau / (tau + s)), rel=1e-12)
    assert o.buckets["checkpoint"] == pytest.approx(np.full(3, 1000 * s), rel=1e-12)


def test_buckets_partition_the_horizon_exactly():
    modes = [mode(8.0, detection=120.0, repair=3 * DAY), mode(1.0, kind="restart", detection=60.0, name="sw"),
             mode(0.9, kind="planned", repair=600.0, name="pl"), mode(0.2, kind="straggle", detection=7200.0, slowdown=1.2, name="st"),
             mode(0.5, kind="degrade", repair=4 * 3600.0, slowdown=1.1, name="dg")]
    plan = Plan(54 * DAY, 200, 3, interval=265.0, stall=3.24, restore=3.24, restart=300.0, swap=120.0, final_write=3.24, spares=20)
    o = simulate(modes, plan)
    total = sum(o.buckets[b] for b in BUCKETS)
    assert np.abs(total - plan.horizon).max() < 1e-6 * plan.horizon
    assert all((o.buckets[b] >= -1e-9).all() for b in BUCKETS)
    assert o.buckets["straggling"].sum() > 0 and o.buckets["degraded"].sum() > 0 and o.buckets["spare_wait"].sum() > 0


@pytest.mark.parametrize("repair_h", [2.0, 6.0, 12.0])
def test_zero_spare_pool_follows_the_closed_form_for_one_server_down(repair_h):
    lam = 1.0 / DAY  # one server failure a day in the job
    r = repair_h * 3600.0
    o = simulate([mode(1.0, repair=r)], Plan(365 * DAY, 2000, 7, interval=1.0, stall=0.0, spares=0))
    e = o.ettr
    se = e.std(ddof=1) / math.sqrt(len(e))
    closed = math.exp(-lam * r)
    assert abs(e.mean() - closed) < 4 * se + 1e-4
    if repair_h >= 6:  # the serial answer 1/(1 + lambda r) (failures only while running) is a different model
        assert abs(e.mean() - 1 / (1 + lam * r)) > 10 * se
    # an unlimited pool never waits
    o2 = simulate([mode(1.0, repair=r)], Plan(365 * DAY, 50, 7, interval=1.0, stall=0.0, spares=None))
    assert o2.buckets["spare_wait"].max() == 0.0 and o2.ettr.min() > 0.999


def test_swept_interval_is_close_to_young_daly_where_its_assumptions_hold():
    write, mtti = 60.0, 4 * 3600.0  # write << MTTI, no detection or restart cost, exponential failures
    modes = [mode(DAY / mtti, kind="restart")]
    yd = young_daly(write, mtti)
    plan = Plan(365 * DAY, 200, 11, interval=yd, stall=write)
    rows, best = answers.interval_sweep(modes, plan, [yd * f for f in answers.INTERVAL_FACTORS])
    assert abs(best / yd - 1) < 0.10
    # and the curve really has its top inside the grid: both ends are worse
    ettr = [r["ettr"]["mean"] for r in rows]
    assert max(ettr) > ettr[0] + 0.01 and max(ettr) > ettr[-1] + 0.01


def test_async_checkpoint_is_durable_only_after_its_background_write():
    # cycle: 10 s compute, 1 s stall, then 4 s background write
    done, kept, ck = split_segment(np.array([11.0 + 3.0, 11.0 + 5.0, 11.0 + 10.5]), tau=10.0, stall=1.0, lag=4.0)
    assert done.tolist() == [13.0, 15.0, 20.0]
    assert kept.tolist() == [0.0, 10.0, 10.0]  # 3 s after the stall the first checkpoint is not yet durable
    assert ck.tolist() == [1.0, 1.0, 1.5]


def test_same_seed_same_numbers_other_seed_other_numbers():
    modes = [mode(8.0, detection=120.0, repair=DAY), mode(1.0, kind="restart", name="sw")]
    p = Plan(54 * DAY, 100, 5, interval=265.0, stall=3.24, restart=300.0, spares=10)
    a, b = simulate(modes, p), simulate(modes, p)
    assert all(np.array_equal(a.buckets[k], b.buckets[k]) for k in BUCKETS) and np.array_equal(a.counts, b.counts)
    assert a.events == b.events
    c = simulate(modes, Plan(54 * DAY, 100, 6, interval=265.0, stall=3.24, restart=300.0, spares=10))
    assert not np.array_equal(a.counts, c.counts)


def test_run0_timeline_has_every_stop_and_the_checkpoints_between():
    modes = [mode(4.0, detection=60.0, repair=DAY)]
    p = Plan(10 * DAY, 5, 2, interval=600.0, stall=10.0, restore=30.0, restart=300.0, swap=60.0)
    o = simulate(modes, p)
    ev = timeline(o)
    assert [e.t for e in ev] == sorted(e.t for e in ev)
    stops = [e for e in ev if e.kind == "stop"]
    assert len(stops) == o.counts[0].sum()
    n_ck = sum(e.kind == "checkpoint" for e in ev)
    running = o.buckets["useful"][0] + o.buckets["lost"][0] + o.buckets["checkpoint"][0]
    assert abs(n_ck - running / 610.0) <= len(stops) + 1  # one write per 610 s of running, cut short at each stop
    starts = [e for e in ev if e.kind == "start"]
    assert all(s.t > f.t for s, f in zip(starts, stops))


def test_checkpoint_size_and_time_of_llama3_405b_on_tectonic():
    # Llama 3 s3.3.1: Tectonic 2 TB/s sustained; 405B x 16 B of training state = 6.48 TB, written once
    c = cost(405e9 * 16, gpus=16384, servers=2048, replicas=1, storage_Bps=2e12, frontend_Bps=25e9, mode="sync", snapshot_Bps=50e9)
    assert c.bytes == 6.48e12 and c.write_s == pytest.approx(3.24) and c.limit == "storage"
    assert c.per_gpu_bytes == pytest.approx(6.48e12 / 16384)  # 396 MB: inside Llama 3's 1 MB-4 GB per GPU
    # 8 servers behind 25 GB/s each cannot reach 2 TB/s: the front-end NICs limit the write
    small = cost(405e9 * 16, gpus=64, servers=8, replicas=1, storage_Bps=2e12, frontend_Bps=25e9, mode="sync", snapshot_Bps=50e9)
    assert small.limit == "front-end NICs" and small.write_s == pytest.approx(6.48e12 / 200e9)
    a = cost(405e9 * 16, gpus=16384, servers=2048, replicas=1, storage_Bps=2e12, frontend_Bps=None, mode="async", snapshot_Bps=50e9)
    assert a.stall_s == pytest.approx(6.48e12 / 16384 / 50e9) and a.lag_s == pytest.approx(3.24)
