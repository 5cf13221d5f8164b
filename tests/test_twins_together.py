"""The twins share a time base: the power twin draws the reliability twin's representative campaign run."""

from __future__ import annotations

import pytest
from conftest import compiled

from twin.lang.diagnostics import SpecError
from twin.lang.scenario.models import parse_scenario
from twin.twins.run import simulate

SCENARIO = """\
name: lab-both
routing:
  - {name: e-ecmp-16qp, scheme: e-ecmp, qps: 16}
jobs:
  - {workload: lab-llama-8b, order: topology}
campaign:
  days: 2
  runs: 20
  seed: 3
  checkpoint: {interval: 30 min, mode: sync, write_time: 20 s, restore_time: 60 s}
  rates: {software-bug: 20 / day}
power:
  duration: 6 h
  resolution: 100 ms
  job: {workload: lab-llama-8b, scheme: e-ecmp-16qp}
  campaign_events: true
"""


def test_power_draws_the_campaign_run():
    scn, src = parse_scenario(SCENARIO, "<both>")
    res = simulate(compiled("lab-2zone"), scn, src)
    window = [e for e in res.events if e.t < 6 * 3600]
    drawn = res.data["power"]["events"]
    # every campaign event of the first 6 hours, in order, is what the power trace was drawn from
    assert [(round(e["t"], 6), e["kind"]) for e in drawn] == [(round(e.t, 6), e.kind) for e in window]
    assert any(e["kind"] == "stop" for e in drawn) and any(e["kind"] == "checkpoint" for e in drawn)


def test_campaign_events_without_a_campaign_is_a_located_error():
    text = SCENARIO.split("campaign:")[0] + "power:" + SCENARIO.split("power:")[1]
    scn, src = parse_scenario(text, "<power-only>")
    with pytest.raises(SpecError) as e:
        simulate(compiled("lab-2zone"), scn, src)
    assert "no campaign ran" in e.value.diagnostics[0].message and e.value.diagnostics[0].line > 1
