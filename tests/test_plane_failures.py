"""The reliability twin's failure class for a whole network plane (issue 28): on a multi-plane fabric every
GPU's NIC keeps its ports on the other planes, so a plane down interrupts no job; the job runs degraded,
at its step time with the plane down, until the plane is back. Counted only on multi-plane fabrics."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from twin.compiler.pipeline import compile_design
from twin.twins.reliability.answers import summarize
from twin.twins.reliability.components import Reach, failure_modes, footprint
from twin.twins.reliability.engine import Plan, simulate
from twin.twins.workload.jobs import step_profile

ROOT = Path(__file__).resolve().parents[1]
YEAR = 365.25 * 86400


def _fabric(name: str):
    d = compile_design(ROOT / "sites" / f"{name}.yaml", until="fabric", placement_method="naive")
    return d, d.fabric.graph


@pytest.mark.parametrize("name,gpus,switches", [("lab-2plane", 64, 3), ("lab-2zone-2plane", 128, 18)])
def test_a_plane_down_cuts_no_server_and_both_planes_down_cut_all(name, gpus, switches):
    d, g = _fabric(name)
    fp = footprint(g, gpus)
    # lab-2plane: per plane 2 leaves + 1 spine; lab-2zone-2plane: per plane 8 RTSWs, 8 CTSWs, 2 ATSWs
    assert [len(p) for p in fp.planes] == [switches, switches]
    assert all(g.nodes[s]["plane"] == i for i, p in enumerate(fp.planes) for s in p)
    reach = Reach(g, fp)
    assert reach.servers_cut(nodes=fp.planes[0]) == reach.servers_cut(nodes=fp.planes[1]) == 0
    assert reach.servers_cut(nodes=fp.planes[0] + fp.planes[1]) == len(fp.servers)  # both planes: every NIC alone
    cls = d.spec.catalog.reliability["plane"]
    [m] = [m for m in failure_modes(d.spec.catalog.reliability, fp, reach) if m.cls == "plane"]
    assert (m.count, m.kind, m.servers, m.component) == (2, "degrade", 0, "plane1")
    assert m.job_rate == pytest.approx(2 * cls.rate)
    assert "cuts 0 server(s)" in m.notes[0]


def test_no_plane_class_on_a_single_plane_fabric():
    d, g = _fabric("lab-2zone")
    fp = footprint(g, 128)
    assert fp.planes == () and fp.count("plane") == 0
    assert not [m for m in failure_modes(d.spec.catalog.reliability, fp, Reach(g, fp)) if m.cls == "plane"]


def test_campaign_ettr_with_plane_failures_matches_the_closed_form():
    """Only plane failures, no checkpoint stall: nothing interrupts the job, and each of the P planes' outages
    (Poisson, rate lam, arrival uniform over the horizon D) slows it by s for min(R, D - t), so
    E[ETTR] = 1 - (1 - 1/s) x P x lam x (R - R^2 / (2 D)). s = 2 is a NIC-bound step on one of two planes: the
    surviving plane's half bandwidth (busbw 47.0 -> 23.5 GB/s on lab-2plane, tests/test_planes.py)."""
    d, g = _fabric("lab-2plane")
    fp = footprint(g, 64)
    lam, R, D, s = 20 / YEAR, 2 * 3600.0, 14 * 86400.0, 2.0
    classes = {"plane": d.spec.catalog.reliability["plane"].model_copy(update={"rate": lam, "repair": R})}
    [m] = failure_modes(classes, fp, Reach(g, fp))
    m = replace(m, slowdown=s)
    out = simulate([m], Plan(horizon=D, runs=20000, seed=3, interval=D, stall=0.0))
    summary = summarize(out)
    P = 2
    expected = 1 - (1 - 1 / s) * P * lam * (R - R * R / (2 * D))
    assert out.ettr.mean() == pytest.approx(expected, abs=1.5e-4)  # 4 standard errors of 20,000 runs
    assert 1 - expected == pytest.approx(0.00456, rel=0.01)
    assert out.counts.mean() == pytest.approx(P * lam * D, rel=0.03)  # degraded episodes: 1.53 per run
    assert summary["interruptions"]["expected_total"] == 0 and summary["interruptions"]["total"]["mean"] == 0
    assert summary["time_fraction"]["degraded"] == pytest.approx(1 - out.ettr.mean())


@pytest.mark.slow
def test_campaign_times_the_plane_down_with_the_network_twin(tmp_path):
    """A campaign on the two-plane zone lab: the plane mode's slowdown is the job twin's step with plane 1
    down over the intact step, the same job the scenario times in a case with {plane: 1} failed."""
    site = yaml.safe_load((ROOT / "sites" / "lab-2zone-2plane.yaml").read_text())
    builtin = yaml.safe_load((ROOT / "twin" / "lang" / "catalog" / "builtin.yaml").read_text())
    # the lab's two-port chassis with the Grand Teton compute model, so the job twin can time the lab job
    site["catalog"]["chassis"]["gt-h100-2port"] = {**builtin["chassis"]["grand-teton-h100"], "nic_ports": 2}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(site, sort_keys=False))
    (tmp_path / "c.yaml").write_text("""name: plane-campaign
routing:
  - {name: e-ecmp-16qp, scheme: e-ecmp, qps: 16}
jobs:
  - {workload: lab-llama-8b, order: topology}
cases:
  - {name: intact}
  - {name: plane1-down, failures: [{plane: 1}]}
campaign:
  days: 7
  runs: 50
  seed: 1
  checkpoint: {interval: auto, mode: sync, write_time: 20 s, restore_time: 60 s}
""")
    r = subprocess.run([sys.executable, "-m", "twin", "simulate", str(tmp_path / "s.yaml"), "--scenario", str(tmp_path / "c.yaml"), "--json"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)["result"]
    step = [step_profile(c["jobs"][0], None).step_s for c in res["cases"]]
    c = res["campaign"]
    assert c["components"]["plane"] == 2
    [m] = [m for m in c["modes"] if m["class"] == "plane"]
    assert (m["kind"], m["servers_cut"], m["components"]) == ("degrade", 0, 2)
    assert m["slowdown"] == pytest.approx(step[1] / step[0], rel=1e-9)
    assert m["slowdown"] > 1.0
    # one CTSW of a plane down slows the job less than the whole plane
    [ctsw] = [x for x in c["modes"] if x["mode"] == "fabric-switch/ctsw"]
    assert 1.0 < ctsw["slowdown"] < m["slowdown"]
