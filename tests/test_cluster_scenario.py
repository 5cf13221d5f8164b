"""The ``cluster:`` section of a scenario end to end on lab-2zone (128 GPUs, 2 AI zones): `twin simulate`
with its terminal report and --json, a trace named by the scenario, the report section with its pictures,
and every bad input as a located error with exit 2."""

from __future__ import annotations

import textwrap

import pytest
from conftest import twin_in_process, unwrap

from twin.lang.diagnostics import SpecError
from twin.lang.scenario.models import parse_scenario
from twin.twins.cluster.engine import BUCKETS
from twin.twins.cluster.run import simulate_cluster

MIX = """\
name: lab-week
cluster:
  days: 7
  jobs:
    mix:
      rate: 300 / day
      sizes:
        - {gpus: 1, share: 0.8, duration: {median: 20 min, sigma: 1.0}}
        - {gpus: 8, share: 0.15, duration: {median: 1 h, sigma: 1.0}, kind: train}
        - {gpus: 32, share: 0.05, duration: {median: 4 h, sigma: 0.5}, kind: train}
      kinds:
        - {name: train, share: 0.5}
        - {name: eval, share: 0.5, checkpoint: false}
      cancel: 0.1
  scheduler: {policy: easy, preemption: {guard: 2 h}}
  spares: 1
  failures:
    streams:
      - {name: node, rate: 20 / 1000 node-day, causes: infrastructure, detection: 5 min, repair: 1 d}
      - {name: user, rate: 30 / 1000 node-day, causes: all, repair: 0 s}
    catalog: true
    lemons: {share: 0.125, factor: 10}
"""


def write(tmp_path, text: str, name: str = "cluster.yaml"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_a_week_of_the_lab_site_every_gpu_second_in_one_bucket(root, tmp_path):
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", write(tmp_path, MIX), "--json")
    assert r.returncode == 0, r.stderr
    c = unwrap(r.stdout)["cluster"]
    assert c["gpus"] == 128 and c["zones"] == 2 and c["days"] == 7
    assert abs(c["conservation_gpu_s"]) < 1.0 and sum(c["shares"].values()) == pytest.approx(1.0, abs=1e-12)
    assert set(c["buckets_gpu_h"]) == set(BUCKETS) and c["buckets_gpu_h"]["spare"] > 0
    assert c["failures_by_causes"]["all"] > 0 and c["failures_by_causes"]["infrastructure"] > 0
    assert {s["name"] for s in c["sources"]} >= {"node", "user", "faulty-gpu", "rack-switch"}
    assert not any(s["name"] == "compute-tray" for s in c["sources"])  # not a rack-scale system
    assert sum(r["jobs"] for r in c["by_size"]) == c["jobs"] and c["counts"]["cancelled"] > 0
    assert c["lemons"]["servers"] == 2 and len(c["series"]["gpu_states"]["running"]) == 7 * 24
    text = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", write(tmp_path, MIX))
    assert "where the GPU-time went" in text.stdout and "by job size" in text.stdout


def test_the_report_section_has_its_tables_and_pictures(lab, tmp_path):
    from twin.emit.report_twins import twin_sections

    scn, src = parse_scenario(MIX)
    doc, _ = simulate_cluster(lab, scn.cluster, src)
    parts, pics = twin_sections("lab-2zone.yaml", {"cluster": doc}, "cluster.yaml")
    text = "\n".join(parts)
    assert "## The site over time (cluster twin)" in text and "### By job size" in text
    names = [n for n, _c, _s in pics]
    assert names == ["cluster-gpu-states.svg", "cluster-by-size.svg"]
    assert all(s.startswith(b"<svg") and b"polygon" in s or b"rect" in s for _n, _c, s in pics)


def test_a_trace_named_by_the_scenario_is_loaded_and_its_statistics_printed(root, tmp_path):
    (tmp_path / "venus.csv").write_text(textwrap.dedent("""\
        job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
        1,u1,vc1,8,16,1,COMPLETED,2020-06-09 00:00:00,2020-06-09 00:00:00,2020-06-09 02:00:00,7200,0
        2,u1,vc1,16,32,2,FAILED,2020-06-09 01:00:00,2020-06-09 01:00:00,2020-06-09 01:30:00,1800,0
        3,u2,vc1,0,4,1,COMPLETED,2020-06-09 01:00:00,2020-06-09 01:00:00,2020-06-09 01:30:00,1800,0
        """), encoding="utf-8")
    scn = write(tmp_path, "name: venus\ncluster:\n  days: 1\n  jobs:\n    trace: {file: venus.csv, format: helios}\n")
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", scn, "--json")
    assert r.returncode == 0, r.stderr
    c = unwrap(r.stdout)["cluster"]
    assert c["jobs"] == 2 and c["counts"]["completions"] == 2
    assert c["trace"]["states"] == {"COMPLETED": 1, "FAILED": 1} and c["trace"]["skipped"] == {"no GPU": 1}
    assert c["buckets_gpu_h"]["productive"] == pytest.approx((8 * 7200 + 16 * 1800) / 3600)
    text = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", scn)
    assert "trace venus.csv (helios): 2 jobs" in text.stdout


@pytest.mark.parametrize("change,where,words", [
    ("rate: 20 / 1000 node-day", "rate: 20 / 1000 day", "not a rate per node-day"),
    ("policy: easy", "policy: sjf", "'fifo' or 'easy'"),
    ("rate: 300 / day", "rate: 300 / parsec", "not a time unit"),
    ("{gpus: 32, share: 0.05", "{gpus: 256, share: 0.05", "more than the site's 128"),
    ("kind: train}", "kind: pretrain}", "not among the mix's kinds"),
    ("days: 7", "days: 400", "longer than a year"),
])
def test_bad_input_is_a_located_error(root, tmp_path, change, where, words):
    text = MIX.replace(change, where, 1)
    assert text != MIX
    p = write(tmp_path, text)
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", p)
    assert r.returncode == 2
    line = next(i for i, x in enumerate(text.splitlines(), 1) if where.split(":")[0] in x and where.split(":")[-1].strip() in x)
    assert f"{p}:{line}:" in r.stderr + r.stdout and words in r.stderr + r.stdout


def test_a_missing_trace_file_and_a_trace_row_are_located(root, tmp_path):
    scn = write(tmp_path, "name: t\ncluster:\n  days: 1\n  jobs:\n    trace: {file: none.csv, format: acme}\n")
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", scn)
    assert r.returncode == 2 and f"{scn}:5:" in r.stderr + r.stdout
    (tmp_path / "bad.csv").write_text("job_id,gpu_num,state,submit_time,start_time,end_time\n1,9999,COMPLETED,2023-03-01 00:00:00,"
                                      "2023-03-01 00:00:00,2023-03-01 01:00:00\n", encoding="utf-8")
    scn = write(tmp_path, "name: t\ncluster:\n  days: 1\n  jobs:\n    trace: {file: bad.csv, format: acme}\n")
    r = twin_in_process("simulate", root / "sites/lab-2zone.yaml", "--scenario", scn)
    assert r.returncode == 2 and "bad.csv:2:" in r.stderr + r.stdout and "more than the site's 128" in r.stderr + r.stdout


def test_a_mix_too_large_is_refused_before_it_is_drawn(lab):
    scn, src = parse_scenario(MIX.replace("rate: 300 / day", "rate: 1e9 / day"))
    with pytest.raises(SpecError) as e:
        simulate_cluster(lab, scn.cluster, src)
    assert "limit cluster_jobs" in e.value.diagnostics[0].message and e.value.diagnostics[0].line == 6


def test_a_sweep_varies_the_cluster_knobs_and_collects_site_goodput(root):
    """twin sweep's variants run the cluster twin and report its figures; a shorter guard preempts more."""
    from twin.sweep.engine import payload, variants
    from twin.sweep.load import load_sweep
    from twin.sweep.worker import evaluate

    sw = load_sweep(root / "sweeps/lab-cluster.yaml", root)
    assert "cluster" in sw.has
    vs = variants(sw)
    assert len(vs) == 12
    rows = [evaluate(payload(sw, v)) for v in (vs[1], vs[9])]  # guard 30 min and 8 h; no spares; hourly checkpoints
    assert all(r["status"] == "ok" for r in rows), rows
    short, long_ = (r["figures"] for r in rows)
    assert 0 < short["site_goodput"] < short["site_utilization"] <= 1
    assert short["site_preemptions"] > long_["site_preemptions"] == 0
    assert 0.102 < short["site_power_peak_mw"] <= 0.5  # above lab-2zone's empty-site draw (101 kW), within its 500 kW supply
