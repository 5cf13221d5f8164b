"""The campaign section end to end: located errors, the job twin's step time and degraded fabric,
fabric blast radii on the graph, --json and plots, and the shipped Llama 3 example."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import compiled, unwrap
from typer.testing import CliRunner

from twin.cli.app import app
from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import SpecError
from twin.lang.scenario.models import parse_scenario
from twin.twins.reliability.components import Reach, footprint
from twin.twins.run import simulate
from twin.twins.workload.timeline import Event

LAB_CAMPAIGN = """name: lab-campaign
campaign:
  days: 30
  runs: 200
  workload: lab-llama-8b
  step_time: 2 s
  checkpoint: {interval: 10 min, write_time: 20 s, restore_time: 30 s}
  sweep: {enabled: false}
"""


def _errors(text: str, design=None, path="c.yaml") -> list:
    with pytest.raises(SpecError) as e:
        scn, src = parse_scenario(text, path)
        simulate(design, scn, src)
    return e.value.diagnostics


def test_bad_campaign_input_is_located(lab):
    d = _errors(LAB_CAMPAIGN.replace("  days: 30", "  days: 4000"))[0]
    assert (d.line, d.dotted) == (3, "campaign.days") and "longer than ten years" in d.message
    d = _errors(LAB_CAMPAIGN + "  rates: {faulty-gpu: -0.1 / year}\n")[0]
    assert (d.line, d.dotted) == (9, "campaign.rates.faulty-gpu") and "out of range" in d.message and "greater than or equal to 0" in d.expected
    d = _errors(LAB_CAMPAIGN + "  rates: {faulty-gpu: 3 W}\n")[0]
    assert d.dotted == "campaign.rates.faulty-gpu" and "not a rate" in d.message
    d = _errors(LAB_CAMPAIGN + "  detection: {faulty-gpuu: 1 min}\n", lab)[0]
    assert (d.line, d.col, d.dotted) == (9, 28, "campaign.detection.faulty-gpuu") and "unknown failure class" in d.message
    assert "faulty-gpu" in d.expected
    d = _errors(LAB_CAMPAIGN.replace(", write_time: 20 s, restore_time: 30 s", ""), lab)[0]
    assert d.dotted == "campaign.checkpoint" and "no storage" in d.message
    d = _errors(LAB_CAMPAIGN.replace("  step_time: 2 s\n", ""), lab)[0]
    assert d.dotted == "campaign" and "step_time" in d.message
    d = _errors(LAB_CAMPAIGN.replace("  step_time: 2 s\n", "  step_time: 2 s\n  gpus: 100000\n"), lab)[0]
    assert d.dotted == "campaign.gpus" and "needs 100,000" in d.message


def test_bad_storage_and_failure_classes_in_a_site_are_located(root):
    text = (root / "sites" / "lab-2zone.yaml").read_text()
    spec, diags = validate_text(text + "storage: {sustained_bandwidth: 0 TB/s}\n", "s.yaml")
    assert spec is None and diags[0].dotted == "storage.sustained_bandwidth" and "greater than 0" in diags[0].expected
    assert diags[0].line == text.count("\n") + 1
    bad = text + "catalog:\n  reliability:\n    gpu: {per: gpu, rate: -1 / year, detection: 1 min, repair: 1 day, source: x}\n"
    spec, diags = validate_text(bad, "s.yaml")
    assert spec is None and any(d.dotted == "catalog.reliability.gpu.rate" for d in diags)


def test_a_site_overrides_a_failure_class_and_its_own_counts_apply(tmp_path, root):
    import twin

    site = tmp_path / "lab-override.yaml"
    site.write_text((root / "sites" / "lab-2zone.yaml").read_text() + """catalog:
  reliability:
    faulty-gpu: {per: gpu, cause: Faulty GPU, rate: 0.5 / year, detection: 2 min, repair: 3 day, source: fleet data}
""")
    design = twin.load(site)
    scn, src = parse_scenario(LAB_CAMPAIGN)
    c = simulate(design, scn, src).data["campaign"]
    by = {r["cause"]: r for r in c["by_cause"]}
    # 128 GPUs of the lab site (not the 16,384 of the calibration) at the site's own rate
    assert by["Faulty GPU"]["expected"] == pytest.approx(0.5 / 365.25 * 128 * 30)
    # the built-in HBM rate on the lab's 128 GPUs: 72 / 16,384 of Table 5's count per 54 days, here for 30
    assert by["GPU HBM3 Memory"]["expected"] == pytest.approx(72 * 128 / 16384 * 30 / 54, rel=1e-3)
    assert c["components"]["rack-switch/rtsw"] == 8 and c["components"]["fabric-switch/ctsw"] == 8


def test_cli_exit_2_with_a_located_message(tmp_path, root):
    bad = tmp_path / "bad.yaml"
    bad.write_text(LAB_CAMPAIGN + "  repair: {psuu: 1 day}\n")
    res = CliRunner().invoke(app, ["simulate", str(root / "sites" / "lab-2zone.yaml"), "--scenario", str(bad)])
    assert res.exit_code == 2 and "bad.yaml:9:" in res.output and "unknown failure class 'psuu'" in res.output
    assert "Traceback" not in res.output


def test_a_campaign_alone_is_a_scenario_but_jobs_still_need_routing():
    parse_scenario(LAB_CAMPAIGN)
    with pytest.raises(SpecError) as e:
        parse_scenario("name: x\njobs: [{workload: w}]\n")
    assert "need routing" in e.value.diagnostics[0].message


def test_no_failures_gives_exactly_one_minus_checkpoint_overhead(lab):
    zero = "".join(f"    {k}: 0 / year\n" for k in sorted(lab.spec.catalog.reliability))
    scn, src = parse_scenario(LAB_CAMPAIGN + "  rates:\n" + zero)
    c = simulate(lab, scn, src).data["campaign"]
    assert c["interruptions"]["total"]["mean"] == 0
    tau, stall, D = c["checkpoint"]["interval_s"], 20.0, 30 * 86400
    n = math.floor(D / (tau + stall))
    expected = (n * tau + min(D - n * (tau + stall), tau)) / D
    assert c["ettr"]["p10"] == c["ettr"]["p90"] == pytest.approx(expected, rel=1e-12)
    assert c["ettr"]["mean"] == pytest.approx(1 - c["time_fraction"]["checkpoint"], rel=1e-12)


def test_fabric_failures_take_the_servers_the_graph_disconnects(meta24k):
    g = meta24k.fabric.graph
    fp = footprint(g, 16384)
    r = Reach(g, fp)
    assert r.servers_cut(node=fp.switches["rtsw"][0]) == 2  # an RTSW takes its rack (2 Grand Tetons)
    assert r.servers_cut(node=fp.switches["ctsw"][0]) == 0  # a CTSW only narrows ECMP
    assert r.servers_cut(node=fp.switches["atsw"][0]) == 0
    assert r.servers_cut(link=fp.first_links["nic-rtsw"]) == 1
    assert r.servers_cut(link=fp.first_links["rtsw-ctsw"]) == 0
    ib = compiled("lab-ib")  # fat-tree leaf with 32 NICs: its failure cuts 4 servers, a spine none
    fi = footprint(ib.fabric.graph, 128)
    ri = Reach(ib.fabric.graph, fi)
    assert ri.servers_cut(node=fi.switches["leaf"][0]) == 4 and ri.servers_cut(node=fi.switches["spine"][0]) == 0


def test_step_time_and_degraded_fabric_come_from_the_job_twin(lab):
    scn, src = parse_scenario("""name: lab-job-campaign
routing: [{name: e16, scheme: e-ecmp, qps: 16}]
jobs: [{workload: lab-llama-8b}]
campaign:
  days: 30
  runs: 100
  checkpoint: {interval: 10 min, write_time: 20 s, restore_time: 30 s}
  sweep: {enabled: false}
""")
    res = simulate(lab, scn, src)
    c = res.data["campaign"]
    job = res.data["cases"][0]["jobs"][0]
    assert c["job"]["step_s"] == job["schemes"][0]["step_s"] and c["job"]["step_source"] == "job twin"
    degrade = [m for m in c["modes"] if m["kind"] == "degrade"]
    assert {m["mode"] for m in degrade} == {"fabric-switch/ctsw", "fabric-switch/atsw", "optic-cable/ctsw-atsw", "optic-cable/rtsw-ctsw"}
    assert all(m["slowdown"] >= 1.0 and m["notes"][0].startswith("network twin: step") for m in degrade)
    assert c["checkpoint"]["interval_steps"] == round(600 / job["schemes"][0]["step_s"])
    assert res.events and all(isinstance(e, Event) for e in res.events)
    assert sum(e.kind == "checkpoint" for e in res.events) == c["checkpoints_run0"] > 0


def test_cli_json_has_the_figures_and_plot_dir_gets_three_plots(tmp_path, root):
    f = tmp_path / "c.yaml"
    f.write_text(LAB_CAMPAIGN.replace("sweep: {enabled: false}", "sweep: {runs: 50, gpus: [64, 128, 1024]}"))
    res = CliRunner().invoke(app, ["simulate", str(root / "sites" / "lab-2zone.yaml"), "--scenario", str(f), "--json",
                                   "--plot-dir", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    c = unwrap(res.output)["campaign"]
    for key in ("ettr", "time_h", "by_cause", "mtti_h", "checkpoint", "sweeps", "events_run0", "modes"):
        assert key in c
    assert [r["gpus"] for r in c["sweeps"]["gpus"]["rows"]] == [64, 128, 1024]
    assert c["sweeps"]["gpus"]["rows"][-1]["extrapolated"] and not c["sweeps"]["gpus"]["rows"][1]["extrapolated"]
    names = sorted(Path(p).name for p in unwrap(res.output)["plots"])
    assert names == ["campaign-ettr-vs-gpus.png", "campaign-ettr-vs-interval.png", "campaign-ettr-vs-spares.png"]
    from twin.emit.report_reliability import markdown

    md = markdown(c)
    assert md.startswith("## Training campaign (reliability twin)") and "| Faulty GPU |" in md and "Llama 3 Table 5" in md
    again = CliRunner().invoke(app, ["simulate", str(root / "sites" / "lab-2zone.yaml"), "--scenario", str(f), "--json"])
    assert unwrap(again.output)["campaign"] == c  # fixed seed: the same figures


@pytest.mark.slow
def test_the_llama3_example_scenario(meta24k, root):
    from twin.lang.scenario.models import load_scenario

    scn, src = load_scenario(root / "scenarios" / "llama3-405b-campaign.yaml")
    c = simulate(meta24k, scn, src).data["campaign"]
    assert c["job"]["step_source"] == "job twin" and c["job"]["gpus"] == 16384
    assert abs(c["interruptions"]["total"]["mean"] - 466) <= 46.6 and c["ettr"]["p50"] > 0.90
    assert sum(m["notes"][0].startswith("network twin") for m in c["modes"] if m["kind"] == "degrade") == 4
