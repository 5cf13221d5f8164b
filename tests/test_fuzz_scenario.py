"""Property: any mutation of a valid scenario is refused with located errors or simulates on the lab
design; nothing else escapes (a ValueError or a numpy error would reach the user as one unlocated
line or a traceback). The limits are lowered so that whatever passes them runs in well under a second
(what a limit is for: a scenario within it finishes, one beyond it is refused before it starts).
"""

from __future__ import annotations

import copy

import pytest
import yaml

pytest.importorskip("hypothesis", reason="hypothesis is not installed (a test extra: pip install -e '.[test]')")
from fuzz_helpers import SNIPPETS, assert_located, mutate, mutations, paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.lang.diagnostics import InfeasibleError, SpecError
from twin.lang.scenario.models import parse_scenario

NETWORK = """name: fuzz-net
description: collectives, a job, serving and cases on lab-2zone
routing:
  - {name: e-ecmp, scheme: e-ecmp, qps: 4}
  - {name: ecmp, scheme: ecmp, qps: 1, hash: {function: crc32, seed: 3}}
nccl: {channels_per_nic: 2, protocols: [LL128, Simple]}
collectives:
  - {name: ar, op: allreduce, algorithm: ring, ranks: {servers: "1-2"}, sweep: {min: 1 MiB, max: 16 MiB, factor: 4}}
  - {name: a2a, op: alltoall, ranks: {gpus: "1-16"}, sizes: [4 MiB]}
jobs:
  - {workload: lab-llama-8b, order: topology}
serving:
  - {name: chat, workload: lab-llama-8b, tp: 8, batch: 4, prompt_tokens: 512, output_tokens: 64}
cases:
  - name: base
  - name: degraded
    failures: [{tier: ctsw-atsw, capacity: 0.5}]
"""
TWINS = """name: fuzz-twins
routing:
  - {name: e-ecmp, scheme: e-ecmp, qps: 4}
campaign:
  days: 2
  runs: 20
  seed: 3
  step_time: 8 s
  workload: lab-llama-8b
  checkpoint: {interval: 30 min, write_time: 20 s, restore_time: 60 s}
  rates: {faulty-gpu: 0.1 / year}
  sweep: {enabled: false}
power:
  duration: 20 min
  resolution: 1 s
  thermal_interval: 60 s
  job: {step: {step: 8 s, compute: 6 s, exposed_comm: 1 s}}
  events:
    checkpoint: {every: 5 min, duration: 20 s}
    failures: [{at: 10 min, recovery: 2 min, restore: 30 s}]
  weather: {diurnal: {min: 20 degC, max: 35 degC}}
"""
BASES = {t: yaml.safe_load(t) for t in (NETWORK, TWINS)}
PATHS = {t: [p for p in paths(d) if p] for t, d in BASES.items()}
SMALL = ("collective_sizes=8 campaign_event_steps=3000 campaign_cells=200000 campaign_checkpoints=2000 "
         "power_samples=20000 power_segments=200 power_row_seconds=200000")


@pytest.fixture(autouse=True)
def small_limits(monkeypatch):
    monkeypatch.setenv("TWIN_LIMITS", SMALL)


def check(text: str, reraise: bool = False) -> None:
    from conftest import compiled

    from twin.twins.run import simulate

    lab = compiled("lab-2zone")

    try:
        scn, src = parse_scenario(text, "fuzz.yaml")
    except SpecError as e:
        assert_located(e.diagnostics, ("fuzz.yaml",))
        return
    try:
        simulate(lab, scn, src)
    except SpecError as e:
        assert_located(e.diagnostics, ("fuzz.yaml",))
        if reraise:
            raise
    except InfeasibleError as e:
        assert str(e)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_structural_mutations(data):
    base = data.draw(st.sampled_from(list(BASES)))
    ops = data.draw(mutations(PATHS[base]))
    doc = copy.deepcopy(BASES[base])
    mutate(doc, ops)
    check(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([NETWORK, TWINS]), st.integers(min_value=0, max_value=len(TWINS) - 1), st.integers(min_value=0, max_value=8),
       SNIPPETS)
def test_textual_mutations(base, at, cut, insert):
    at = at % len(base)
    check(base[:at] + insert + base[at + cut:])


@pytest.mark.parametrize("field, value", [
    ("sweep", "{min: 0 B, max: 4 GiB, factor: 2}"), ("sweep", "{min: -1 MiB, max: 4 GiB, factor: 2}"),
    ("sweep", "{min: 1 B, max: 4 GiB, factor: 1.000001}"), ("sweep", "{min: 1 MiB, max: 1 KiB, factor: 2}"),
])
def test_collective_sweeps_that_never_end_are_refused_at_once(field, value):
    """The issue's typos: a zero or negative minimum loops forever, a factor near 1 asks for 22 million
    sizes; each is one located error in well under a second (the loop used to run until memory ran out)."""
    import time

    text = NETWORK.replace("sweep: {min: 1 MiB, max: 16 MiB, factor: 4}", f"{field}: {value}")
    t0 = time.perf_counter()
    with pytest.raises(SpecError) as e:
        parse_scenario(text, "s.yaml")
    assert time.perf_counter() - t0 < 1.0
    assert_located(e.value.diagnostics, ("s.yaml",))
    assert e.value.diagnostics[0].line == 8 and "collectives[0].sweep" in e.value.diagnostics[0].format()


@pytest.mark.parametrize("ranks, words", [
    ("{gpus: []}", "the selection holds 0 GPU(s) (expected at least 2)"),  # what the fuzz found: a ValueError
    ("{gpus: [3]}", "the selection holds 1 GPU(s) (expected at least 2)"),
    ("{servers: 1, per_server: 1}", "the selection holds 1 GPU(s) (expected at least 2)"),
])
def test_a_collective_over_fewer_than_two_gpus_is_located(ranks, words):
    text = NETWORK.replace('ranks: {gpus: "1-16"}', f"ranks: {ranks}")
    with pytest.raises(SpecError) as e:
        check(text, reraise=True)
    assert e.value.diagnostics[0].format().startswith("fuzz.yaml:9:") and words in e.value.diagnostics[0].format()
