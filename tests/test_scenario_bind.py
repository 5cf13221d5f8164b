"""A scenario's references are resolved once, at load, against the design: every bad one is reported at
once, at its line, before any twin has run (twin/twins/bind.py)."""

from __future__ import annotations

import pytest

import twin
from twin.lang.diagnostics import SpecError
from twin.lang.scenario.models import load_scenario
from twin.twins.run import simulate

SCENARIO = """\
name: bad-refs
routing:
  - {name: ecmp, scheme: ecmp, qps: 1}
collectives:
  - name: ring
    op: allreduce
    ranks: {servers: [1, 99]}
    sizes: [1 MiB]
jobs:
  - {workload: lab-llama-8x}
cases:
  - name: healthy
  - name: broken
    failures:
      - {link: L999999}
campaign:
  days: 1
  runs: 10
  routing: ecmp-16qp
"""


@pytest.fixture(scope="module")
def lab():
    return twin.load("sites/lab-2zone.yaml")


def test_every_bad_reference_at_once_before_anything_runs(lab, tmp_path):
    f = tmp_path / "bad-refs.yaml"
    f.write_text(SCENARIO)
    scn, src = load_scenario(f)
    ran: list[str] = []
    with pytest.raises(SpecError) as e:
        simulate(lab, scn, src, progress=ran.append)
    got = {(d.line, d.path[-1] if d.path else None, d.message) for d in e.value.diagnostics}
    # only the preparation ran (compiling the fabric the references are checked against), no twin
    assert ran == ["the fabric's paths and links for the network twin", "check the scenario's references against the design"], ran
    assert any(m == "servers 99 does not exist" and line == 7 for line, _p, m in got), got
    assert any(m == "unknown workload 'lab-llama-8x'" and line == 10 for line, _p, m in got), got
    assert any(m == "unknown link 'L999999'" and line == 15 for line, _p, m in got), got
    assert any(m == "unknown routing scheme 'ecmp-16qp'" and line == 19 for line, _p, m in got), got
    assert len(got) == 4, got
    assert all(d.file.endswith("bad-refs.yaml") for d in e.value.diagnostics)


def test_a_scenario_whose_references_resolve_runs(lab, tmp_path):
    uplink = next(lk.id for lk in lab.fabric.links if lk.tier == "rtsw-ctsw")
    good = (SCENARIO.replace("[1, 99]", "[1, 2]").replace("lab-llama-8x", "lab-llama-8b").replace("L999999", uplink)
            .replace("ecmp-16qp", "ecmp").split("campaign:")[0])
    f = tmp_path / "good.yaml"
    f.write_text(good)
    scn, src = load_scenario(f)
    r = simulate(lab, scn, src)
    assert [c["case"] for c in r.data["cases"]] == ["healthy", "broken"]
    assert r.data["cases"][0]["collectives"][0]["ranks"] == 16  # two servers of 8 GPUs
