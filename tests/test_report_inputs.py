"""A result shown with what it rests on (issue 27, part 7): the campaign's assumed inputs beside its
result, the default run and a scenario's run of the same job each labelled with what differs, every
input file by name and sha256 in the report's head, and each power figure labelled with what it is per.
"""

from __future__ import annotations

import copy
import hashlib
import xml.etree.ElementTree as ET
from types import SimpleNamespace

from twin.emit.pic_twin import job_svg, versus_scenario
from twin.lang.scenario.campaign import Campaign
from twin.twins.reliability.campaign import assumed_inputs

CK = SimpleNamespace(write_s=20.0, restore_s=60.0, limit="given")


def rows(c):
    return {r["input"].split(" (")[0]: r for r in assumed_inputs(c, "job twin", 0.783, CK)}


def test_campaign_inputs_say_which_are_assumed_and_which_the_scenario_set():
    assumed = rows(Campaign(days=7))
    # restart 300 s and swap 120 s are the language's assumed defaults (twin/lang/scenario/campaign.py)
    assert assumed["restart after a stop"]["value"] == "5 min" and assumed["restart after a stop"]["source"] == "assumed (default)"
    assert assumed["extra to swap in spare servers"]["value"] == "2 min"
    assert assumed["checkpoint write / restore"]["source"] == "storage model (given)"
    assert assumed["step time"] == {"input": "step time", "value": "0.783 s", "source": "job twin"}
    given = rows(Campaign(days=7, restart="90 s", spares=4, checkpoint={"write_time": "20 s", "restore_time": "60 s"}))
    assert given["restart after a stop"]["value"] == "1.5 min" and given["restart after a stop"]["source"] == "scenario"
    assert given["hot spare servers"] == {"input": "hot spare servers", "value": "4", "source": "scenario"}
    assert given["checkpoint write / restore"]["source"] == "scenario"


def test_the_campaign_section_shows_its_inputs_beside_the_result():
    from twin.emit.report_reliability import input_rows

    c = {"inputs": assumed_inputs(Campaign(days=7), "job twin", 0.783, CK)}
    assert ["restart after a stop (scheduling, process start, NCCL init)", "5 min", "assumed (default)"] in input_rows(c)


def test_default_run_and_scenario_run_each_say_what_differs():
    default = {"workload": "w", "parallelism": "TP8 CP1 PP16 DP128", "gpus": 16384, "virtual_stages": 8, "recipe": {"zero": 1},
               "compute_s": 5.0, "bubble_s": 0.5,
               "schemes": [{"scheme": "e", "step_s": 6.4, "tp_s": 0.5, "cp_s": 0.0, "pp_exposed_s": 0.1, "dp_exposed_s": 0.3}]}
    job = copy.deepcopy(default)
    job["virtual_stages"] = 4
    scenario = {"scenario": "llama3-405b", "cases": [{"jobs": [job]}]}
    note = versus_scenario(default, scenario)
    # the 16K-GPU Llama job of issue 27: the site asks 8 virtual stages, the scenario 4
    assert note == "the site's workload as written; scenario llama3-405b runs it with virtual_stages 8 -> 4"
    svg = ET.fromstring(job_svg(default, "default run", note))
    assert note in ["".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert versus_scenario(default, {"scenario": "s", "cases": [{"jobs": [dict(default, workload="other")]}]}) == ""
    assert versus_scenario(default, {"scenario": "s", "cases": [{"jobs": [default]}]}).endswith("the same inputs as scenario s's run")


def test_report_names_every_input_file_by_sha256(root, tmp_path):
    from twin.build import render

    (tmp_path / "w.csv").write_text("hour,temperature\n0,20 degC\n1,22 degC\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text((root / "scenarios" / "lab-power-smoothing.yaml").read_text()
                        .replace("  weather: {constant: 20 degC}\n", "  weather: {csv: w.csv}\n").replace("duration: 30 min", "duration: 2 min"))
    _d, files = render(root / "sites" / "lab-2zone.yaml", scenario)
    head = files["report.md"].decode().split("## Verdicts")[0]
    for name, path in (("lab-2zone.yaml", root / "sites" / "lab-2zone.yaml"), ("s.yaml", scenario), ("w.csv", tmp_path / "w.csv")):
        assert f"`{name}`" in head and hashlib.sha256(path.read_bytes()).hexdigest() in head, name
    # per GPU and per server kept apart: the rest of the server is never listed among a GPU's watts
    md = files["report.md"].decode()
    per_gpu = md.split("Watts per GPU: ")[1].split(";")[0]
    assert "compute" in per_gpu and "running" not in per_gpu and "rest" not in per_gpu
    assert "watts per server for the rest of it (CPUs, memory, NICs, fans): running " in md


def test_a_power_floor_that_makes_the_ramp_worse_is_a_warning():
    """Issue 27: on meta-24k-roce a 450 W floor left the grid-side ramp at 11.86 MW/s against 9.04 without
    smoothing and passed without comment. Whether or not the site states utility limits, a mitigation
    that makes a grid-side figure worse than no smoothing is a warning naming both values."""
    from twin.analysis.verdicts_twins import _mitigations

    plain = {"ramp_W_per_s": 9.04e6, "swing_60s_W": 15e6, "step_swing_W": 7.7e6, "oscillation_W": 4.3e6}
    floor = dict(plain, ramp_W_per_s=11.86e6, step_swing_W=4.1e6)  # the floor halves the step swing, worsens the ramp
    shelf = dict(plain, ramp_W_per_s=9.0e6, step_swing_W=0.1e6)
    p = {"limits": [], "mitigations": {"baseline": {"what": "no smoothing", "effect": plain},
                                       "floor": {"what": "GPU power floor", "effect": floor},
                                       "shelf": {"what": "power-shelf storage", "effect": shelf}}}
    got = {v.key: v for v in _mitigations(p, lambda *a: "")}
    assert set(got) == {"mitigation.floor"}  # the shelf makes nothing worse: no verdict without limits to meet
    assert got["mitigation.floor"].status == "warn"
    assert got["mitigation.floor"].value == "makes worse: fastest ramp 11.86 MW/s against 9.04 MW/s without it"
    # with utility limits stated, the same comparison joins the limits' own
    p["limits"] = [{"limit": "ramp over 1 s", "value": 9.04e6, "pass": False}]
    p["mitigations"]["floor"]["limits"] = [{"limit": "ramp over 1 s", "value": 11.86e6, "pass": False}]
    v = {v.key: v for v in _mitigations(p, lambda *a: "")}["mitigation.floor"]
    assert v.status == "warn" and v.value.startswith("makes worse: ramp over 1 s, fastest ramp 11.86 MW/s against 9.04 MW/s")


def test_mitigation_labels_say_their_watts_are_per_gpu():
    from twin.emit.report_power import _label

    assert _label({"what": "GPU power floor", "floor_W": 450.0}) == "GPU power floor at 450 W per GPU"
    assert _label({"what": "GPU ramp-rate limits", "up_W_per_s": 500.0, "down_W_per_s": None, "hysteresis_s": 0.0}) == \
        "GPU ramp-rate limits (up 500 W/s per GPU)"
