"""Scenarios end to end: the server-5 collision, failures, positioned errors, the CLI and jobs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import unwrap

from twin.lang.diagnostics import SpecError
from twin.lang.scenario.models import parse_scenario
from twin.twins.net import synthetic
from twin.twins.run import simulate
from twin.twins.workload import jobs

SERVER5 = """
name: server5
routing:
  - {name: static, scheme: static}
  - {name: e-ecmp-16qp, scheme: e-ecmp, qps: 16}
collectives:
  - {name: a2a, op: alltoall, ranks: {servers: "1-4"}, sizes: [1 GiB]}
cases:
  - name: servers-1-4
  - name: replaced
    failures: [{server: 4}]
    replace: [{server: 4, with: 5}]
"""


def _three_racks():
    # the talk's case: 3 racks x 2 servers, 16 NICs and 16 uplinks per RTSW, one to each CTSW
    return synthetic.clos(zones=1, racks_per_zone=3, servers_per_rack=2, gpus_per_server=8, ctsw_per_zone=16, rtsw_uplinks=16)


def _by_case(res):
    return {c["case"]: {e["scheme"]: e for e in c["collectives"][0]["schemes"]} for c in res.data["cases"]}


def test_server5_collides_under_static_routing_and_not_under_e_ecmp():
    scn, src = parse_scenario(SERVER5)
    r = _by_case(simulate(None, scn, src, graph=_three_racks()))
    before, after = r["servers-1-4"], r["replaced"]
    # static: servers 3 and 5 are both first in their rack -> traffic to them shares 8 of 16 uplinks
    assert after["static"]["busbw_GBps_at_max_size"] < 0.8 * before["static"]["busbw_GBps_at_max_size"]
    assert after["static"]["link_load"]["max_over_mean"] > 1.5
    assert before["static"]["link_load"]["max_over_mean"] == pytest.approx(1.0)
    # E-ECMP with 16 QPs spreads over all uplinks either way
    e0, e1 = before["e-ecmp-16qp"]["busbw_GBps_at_max_size"], after["e-ecmp-16qp"]["busbw_GBps_at_max_size"]
    assert e1 > 0.9 * e0
    assert e1 > after["static"]["busbw_GBps_at_max_size"]


def test_failed_link_leaves_ecmp_groups_and_degraded_link_slows_hashing():
    g = _three_racks()
    uplink = next(k for u, v, k, d in g.edges(keys=True, data=True) if d["tier"] == "rtsw-ctsw")
    text = f"""
name: fail
routing:
  - {{name: spray, scheme: spray}}
collectives:
  - {{name: ar, op: sendrecv, ranks: {{racks: [1]}}, peers: {{racks: [2]}}, sizes: [4 GiB]}}
cases:
  - {{name: ok}}
  - {{name: down, failures: [{{link: {uplink}}}]}}
  - {{name: slow, failures: [{{link: {uplink}, capacity: 0.1}}]}}
"""
    scn, src = parse_scenario(text)
    r = _by_case(simulate(None, scn, src, graph=g))
    ok, down, slow = (r[c]["spray"]["busbw_GBps_at_max_size"] for c in ("ok", "down", "slow"))
    assert down == pytest.approx(ok * 15 / 16, rel=1e-3)  # 15 uplinks left for the rack's 16 NICs
    assert slow == pytest.approx(ok * 0.1, rel=1e-3)  # spraying still sends 1/16 over the 10% link


def test_scenario_errors_are_positioned():
    bad = """name: x
routing:
  - {name: a, scheme: ecmpp}
collectives:
  - {name: c, op: allreduce, sizes: [64 MiB, 3 W], rnaks: {}}
"""
    with pytest.raises(SpecError) as e:
        parse_scenario(bad, "s.yaml")
    text = "\n".join(d.format() for d in e.value.diagnostics)
    assert "s.yaml:3:23: routing[0].scheme: 'ecmpp' is not allowed" in text
    assert "s.yaml:5:46: collectives[0].sizes[1]: '3 W' is a power, expected a data size" in text
    assert "did you mean 'ranks'?" in text


def test_unknown_link_in_a_case_is_reported_at_its_line():
    scn, src = parse_scenario("""name: x
routing: [{name: s, scheme: spray}]
collectives: [{name: c, op: allreduce, sizes: [1 MiB]}]
cases:
  - name: bad
    failures:
      - {link: L999999}
""", "f.yaml")
    with pytest.raises(SpecError) as e:
        simulate(None, scn, src, graph=_three_racks())
    d = e.value.diagnostics[0]
    assert (d.line, d.dotted) == (7, "cases[0].failures[0].link") and "unknown link" in d.message


def test_rank_layout_keeps_tp_inside_a_server():
    g = jobs.rank_layout(np.arange(64), {"tp": 8, "cp": 1, "pp": 2, "dp": 4}, ["tp", "cp", "pp", "dp"])
    assert all(len(set(x // 8)) == 1 for x in g["tp"])  # 8 GPUs per server
    assert [list(x) for x in g["pp"]][0] == [0, 8]
    assert [list(x) for x in g["dp"]][0] == [0, 16, 32, 48]


def test_cli_simulate_json_and_plots(tmp_path, root):
    from typer.testing import CliRunner

    from twin.cli.app import app

    res = CliRunner().invoke(app, ["simulate", str(root / "sites" / "lab-2zone.yaml"), "--scenario",
                                   str(root / "scenarios" / "server5.yaml"), "--json", "--plot-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = unwrap(res.stdout)
    cases = {c["case"]: c for c in data["cases"]}
    static = {c: {e["scheme"]: e for e in cases[c]["collectives"][0]["schemes"]}["static"]["busbw_GBps_at_max_size"] for c in cases}
    assert static["server-4-replaced-by-5"] < static["servers-1-4"]
    assert (tmp_path / "server-4-replaced-by-5-a2a-busbw.png").stat().st_size > 1000
    assert cases["servers-1-4"]["collectives"][0]["table"][0]["count"] == 2**20 // 2


def test_cli_reports_scenario_errors_with_exit_2(tmp_path, root):
    from typer.testing import CliRunner

    from twin.cli.app import app

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nrouting: []\ncollectives: []\n")
    res = CliRunner().invoke(app, ["simulate", str(root / "sites" / "lab-2zone.yaml"), "--scenario", str(bad)])
    assert res.exit_code == 2
    assert "bad.yaml:2:" in res.output
