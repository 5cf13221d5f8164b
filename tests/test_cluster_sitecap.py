"""A site power cap on the cluster twin's clock (twin/twins/cluster/sitecap.py) held to closed forms on lab-2zone:
the manager caps the GPUs at the watts that hold the facility draw at the cap, a job computes at the chassis'
throughput-at-cap curve there (the builtin H100 curve's point: 0.786 of TDP -> 0.94 of the throughput) and its step
stretches by ``1 - b + b / k`` (``b`` the share of it that computes; the power twin's throughput factor); the time
it adds is the ``powercap`` bucket and every GPU-second stays in one bucket; a cap the site never reaches slows
nothing; the scenario's cap runs end to end, and a cap that is not a power is a located error."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import twin_in_process

from twin.twins.cluster import failures as fail
from twin.twins.cluster.engine import Policy, Run
from twin.twins.cluster.jobset import JobSet
from twin.twins.cluster.site import from_design
from twin.twins.cluster.sitecap import SiteCap

W = 4 * 3600.0
I = 900.0  # noqa: E741 - the manager's interval
P = 0.786 * 700.0  # W: the builtin grand-teton-h100 curve's point (0.786, 0.94)


def facility_at(lab, p: float) -> float:
    """lab-2zone's facility draw with all 128 GPUs held at compute cap ``p`` (closed form: the design's IT budget less
    its 16 servers at full load, plus 128 GPUs at p and 16 servers' rest at 4,600 W, times the PUE)."""
    ch = lab.spec.chassis
    it = float(lab.budget.it_power) - 16 * float(ch.max_power) + 128 * p + 16 * float(ch.phase_power.rest_of_server)
    return it * float(lab.spec.site.power.pue)


def one_job(lab, cap_w: float, busy: float | None = None, horizon: float = 86400.0):
    site = from_design(lab)
    js = JobSet(np.zeros(1), np.array([128], np.int64), np.array([W]), np.zeros(1, np.int64), np.zeros(1, bool),
                ("training",), (True,), (0,))
    arr = fail.arrivals([], site.servers, int(site.rack.max()) + 1, np.zeros(site.servers, bool), 1.0, horizon, 1)
    cap = SiteCap(lab, [(1.0, 0.0)], horizon, 3600.0, cap_w, I)  # a held GPU draws the compute watts in force
    out = Run(site, js, [], arr, np.zeros(site.servers, bool), Policy(interval=1e9, restart=0.0), horizon, power=cap,
              busy=None if busy is None else np.array([busy])).go()
    assert abs(sum(out.buckets.values()) - site.gpus * horizon) < 1.0, "every GPU-second lands in exactly one bucket"
    return out, cap


@pytest.mark.parametrize("busy", [None, 0.5])
def test_a_job_under_the_cap_computes_at_the_throughput_at_the_gpu_cap_the_site_needs(lab, busy):
    """The site's one job holds all 128 GPUs from 0; the manager first acts at 0 (nothing held: no cap) and next at I,
    when it caps the GPUs at P = 550.2 W, where the curve gives k = 0.94: the job ends at I + (W - I) s with
    s = 1 - b + b / 0.94, and the cap's bucket holds 128 (W - I)(s - 1) GPU-seconds."""
    out, cap = one_job(lab, facility_at(lab, P), busy)
    b = 1.0 if busy is None else busy
    s = 1 - b + b / 0.94
    assert cap.levels == 2 and cap.p == 700.0  # capped at I, released at the first control after the job ended
    assert out.jobs_end[0] == pytest.approx(I + (W - I) * s, rel=1e-9)
    assert out.buckets["powercap"] == pytest.approx(128 * (W - I) * (s - 1), rel=1e-6)
    assert out.buckets["productive"] == pytest.approx(128 * W, rel=1e-12) and out.buckets["neighbours"] == 0.0
    # the held GPUs' energy per hour: uncapped (700 W) for the first quarter hour, P after it, until the job ends
    assert cap.held_j[0] == pytest.approx(128 * (I * 700.0 + (3600 - I) * P), rel=1e-12)
    assert cap.held_j[2] == pytest.approx(128 * 3600 * P, rel=1e-12) and cap.lowest == pytest.approx(P, rel=1e-12)


def test_a_cap_the_site_never_reaches_slows_nothing(lab):
    out, cap = one_job(lab, facility_at(lab, 700.0) * 1.001)
    assert out.jobs_end[0] == W and out.buckets["powercap"] == 0.0 and cap.levels == 0


def test_below_the_chassis_lowest_cap_the_draw_stays_over_and_the_gpus_at_their_floor(lab):
    out, cap = one_job(lab, facility_at(lab, 400.0) * 0.99)  # lab's H100 cannot be capped below 400 W
    assert cap.lowest == 400.0
    k = 0.78 + (0.85 - 0.78) * (400 / 700 - 0.571) / (0.643 - 0.571)  # the curve between its points 0.571 and 0.643 of TDP
    assert out.jobs_end[0] == pytest.approx(I + (W - I) / k, rel=1e-9)


def test_a_scenario_with_a_site_power_cap_reports_it_and_keeps_every_gpu_second(root, tmp_path):
    from conftest import unwrap

    text = ("name: cap\ncluster:\n  days: 2\n  jobs:\n    mix:\n      rate: 300 / day\n      sizes:\n"
            "        - {gpus: 8, share: 0.8, duration: {median: 1 h, sigma: 1.0}}\n"
            "        - {gpus: 32, share: 0.2, duration: {median: 4 h, sigma: 0.5}}\n"
            "  power: {cap: 215 kW, interval: 5 min}\n")
    p = tmp_path / "cap.yaml"
    p.write_text(text, encoding="utf-8")
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", p, "--json")
    assert r.returncode == 0, r.stderr
    c = unwrap(r.stdout)["cluster"]
    assert abs(c["conservation_gpu_s"]) < 1.0 and c["shares"]["powercap"] > 0.0
    sc = c["power"]["site_cap"]
    assert sc["cap_kw"] == 215.0 and sc["interval_s"] == 300.0 and 400.0 <= sc["gpu_w_min"] < 700.0
    assert c["power"]["facility_kw"]["mean"] <= 215.0
    # the sweep's figure is the cap's bucket over GPUs x span
    from types import SimpleNamespace

    from twin.analysis.registry import FIGURES

    assert FIGURES["site_slowed_by_power_cap"].value(SimpleNamespace(sim={"cluster": c})) == c["shares"]["powercap"]
    p.write_text(text.replace("215 kW", "215 km"), encoding="utf-8")
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", p)
    assert r.returncode == 2 and f"{p}:10:" in r.stderr + r.stdout
