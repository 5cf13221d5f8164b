"""The cluster twin's jobs that run a scenario's workload (twin/twins/cluster/profiles.py): their step and their
collective's share come from the job twin. A job alone on the site has the job twin's step to the float (the
issue's known answer); its share is the job twin's DP time over its step; two jobs with their own shares forced
across one uplink that each fills alone stretch each other by the closed form ``1 + w_a w_b``; a class that names
a workload the scenario does not run, or runs it on other GPUs, is a located error."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import twin_in_process, unwrap
from test_cluster_fabric import TWO, Forced, W, fabric_site

from twin.twins.cluster import failures as fail
from twin.twins.cluster import profiles
from twin.twins.cluster.engine import Policy, Run
from twin.twins.cluster.fabric import SharedFabric
from twin.twins.cluster.jobset import JobSet

SCENARIO = """\
name: lab-llama-cluster
routing:
  - {name: spray, scheme: spray}
jobs:
  - {workload: lab-llama-8b}
cluster:
  days: 2
  jobs:
    mix:
      rate: 4 / day
      sizes:
        - {gpus: 128, share: 1, duration: {median: 2 h, sigma: 0.5}, workload: lab-llama-8b}
  fabric: {comm_share: 0.3}
"""


def two(works) -> JobSet:
    n = len(works)
    return JobSet(np.zeros(n), np.full(n, 2, np.int64), np.array(works, float), np.zeros(n, np.int64), np.zeros(n, bool),
                  ("training",), (True,), (0,), (), np.arange(n, dtype=np.int64), tuple(f"w{i}" for i in range(n)))


@pytest.mark.parametrize("wa, wb", [(0.5, 0.25), (0.048, 1.0), (0.0, 1.0)])
def test_two_jobs_with_their_own_shares_across_one_uplink_stretch_each_other_by_the_product(wa, wb):
    """On the uplink each job alone fills (u = 1), job a sees C_a = u_a (1 - w_a) + w_a u_a + w_b u_b = 1 + w_b and its
    step stretches by 1 + w_a (C_a - 1) = 1 + w_a w_b; b by the same. The shorter one (work W) ends at W s; the other
    (2 W) has W left then and ends alone at W s + W. A job with no collective (w = 0) neither slows nor is slowed."""
    site, net = fabric_site(**TWO)
    s = 1.0 + wa * wb
    js = two([W, 2 * W])
    horizon = 2 * 86400.0
    arr = fail.arrivals([], site.servers, int(site.rack.max()) + 1, np.zeros(site.servers, bool), 1.0, horizon, 1)
    # the stated share (0.3) is every other job's; these two carry their own
    R = Run(site, js, [], arr, np.zeros(site.servers, bool), Policy(interval=1e9, restart=0.0), horizon,
            SharedFabric(net, site.ids, 0.3), np.array([wa, wb]))
    R.A = Forced(site, [(0, 2), (1, 3)])
    out = R.go()
    assert out.jobs_end.tolist() == pytest.approx([W * s, W * s + W], rel=1e-12)
    assert out.jobs_slowed.tolist() == pytest.approx([W * (s - 1), W * (s - 1)], rel=1e-12, abs=1e-9)
    assert abs(sum(out.buckets.values()) - site.gpus * horizon) < 1.0
    # the cluster twin's step of each: the job twin's step times its running time over its unstretched running time
    prof = {f"w{i}": profiles.Profile(f"w{i}", 2, "spray", 2.0, 2.0 * w, 0.0) for i, w in enumerate((wa, wb))}
    rows = profiles.summary(js, out, prof)
    assert rows[0]["cluster_step_s"] == pytest.approx(2.0 * s, rel=1e-12)
    assert rows[1]["cluster_step_s"] == pytest.approx(2.0 * (W * s + W) / (2 * W), rel=1e-12)
    assert [r["comm_share"] for r in rows] == pytest.approx([wa, wb])


def test_a_job_alone_on_the_site_has_the_job_twins_step_and_its_dp_share(root, tmp_path, lab):
    """The issue's known answer: the cluster twin's step of a job alone on the empty site equals the job twin's for the
    same inputs (lab-llama-8b takes all of lab-2zone's 128 GPUs, so its jobs never share a link)."""
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO, encoding="utf-8")
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", p, "--json")
    assert r.returncode == 0, r.stderr
    doc = unwrap(r.stdout)
    job = doc["cases"][0]["jobs"][0]["schemes"][0]
    (row,) = doc["cluster"]["workloads"]
    assert row["workload"] == "lab-llama-8b" and row["scheme"] == "spray" and row["gpus"] == 128
    assert row["jobs"] == doc["cluster"]["jobs"] > 0 and row["running_h"] > 0
    assert row["step_s"] == job["step_s"] and row["cluster_step_s"] == job["step_s"] and row["slowed_h"] == 0.0
    assert row["comm_share"] == job["dp_s"] / job["step_s"] and 0.0 < row["comm_share"] < 0.3  # not the stated 0.3
    res = doc["cases"][0]["jobs"][0]  # what slows under a power cap: compute and bubble (the power twin's rate)
    assert row["compute_share"] == (res["compute_s"] + res["bubble_s"]) / job["step_s"] and 0.5 < row["compute_share"] < 1.0
    # its GPUs draw the power twin's mean over its step (not the compute watts): an hour it holds every GPU draws
    # (the design's IT budget less its 16 servers, + 128 GPUs at step_average + 16 servers' rest) x PUE
    from twin.twins.power.phases import gpu_phases
    from twin.twins.workload.jobs import step_profile

    ch = lab.spec.chassis
    ph = gpu_phases(ch.phase_power, ch.gpu_tdp, lab.spec.rack.gpu_power_cap, ch.max_power, ch.gpus)
    avg = ph.step_average(step_profile(res))
    assert 250.0 < avg < 0.95 * ph.compute
    it = float(lab.budget.it_power) - 16 * float(ch.max_power) + 128 * avg + 16 * ph.rest
    running = doc["cluster"]["series"]["gpu_states"]["running"]
    full = [i for i, r in enumerate(running) if r == 128]
    assert full, "an hour the job held every GPU"
    assert doc["cluster"]["power"]["series_kw"][full[0]] == pytest.approx(it * float(lab.spec.site.power.pue) / 1e3, abs=0.05)


@pytest.mark.parametrize("change, to, words", [
    ("workload: lab-llama-8b}\n  fabric", "workload: lab-llama-70b}\n  fabric", "'lab-llama-70b' is not among this scenario's jobs"),
    ("gpus: 128, share", "gpus: 64, share", "the job twin's lab-llama-8b runs on 128"),
])
def test_a_class_that_names_a_workload_the_scenario_does_not_run_as_stated_is_located(root, tmp_path, change, to, words):
    text = SCENARIO.replace(change, to)
    assert text != SCENARIO
    p = tmp_path / "s.yaml"
    p.write_text(text, encoding="utf-8")
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", p)
    assert r.returncode == 2
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "duration: {median: 2 h" in x)
    assert f"{p}:{line}:" in r.stderr + r.stdout and words in r.stderr + r.stdout
