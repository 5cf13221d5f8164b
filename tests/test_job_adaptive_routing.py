"""InfiniBand adaptive routing, as the site's OpenSM routing engine states it, reaching the job twin.

Known answers (closed forms of the fluid model, no constant set on them):
- A ring all-gather of G bytes over n GPUs whose every flow runs at its NIC's rate B takes
  ``(n - 1) / n x G / (B eta)`` ([nccl-tests] PERFORMANCE.md: busbw = algbw x (n - 1) / n), eta NCCL's
  protocol efficiency. Adaptive routing on a full-bisection fat tree whose links all run at the NIC's
  rate ([nvidia-ib-ar]: each switch sends to the least loaded of its minimal-hop ports) leaves no link
  with more than one ring transfer, so ZeRO-1's reduce-scatter and all-gather (BF16 gradients, the bytes of the
  weights) take twice that.
- Static tables (OpenSM's ftree, D-mod-K) route each transfer on one path; where the most loaded link
  carries k of the ring's transfers, max-min sharing runs them at B / k, every ring step waits for them,
  and the same data-parallel traffic takes k times the bandwidth time: the step is longer by
  ``(k - 1) x 2 (n - 1) / n x G / (B eta)``, k counted from the static routes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from twin.compiler.pipeline import compile_design
from twin.lang.diagnostics import SpecError
from twin.lang.scenario.models import Case, Job, parse_scenario
from twin.twins import run as run_mod
from twin.twins.net import routing, topology
from twin.twins.net.nccl import PROTOCOL_EFFICIENCY, Library
from twin.twins.workload import jobs

ROOT = Path(__file__).resolve().parents[1]
PLAN = {"tp": 8, "pp": 1, "dp": 16}


@pytest.fixture(scope="module")
def ib_sites(tmp_path_factory):
    """The lab InfiniBand fat tree (128 H100, 2-tier QM9700, full bisection) with the lab's 8B model as a ZeRO-1
    job whose data-parallel traffic is exposed, once under ftree and once under ar_ftree."""
    site = yaml.safe_load((ROOT / "sites/lab-ib.yaml").read_text())
    w = yaml.safe_load((ROOT / "sites/lab-2zone.yaml").read_text())["workloads"][0]
    w.update(PLAN, global_batch=16, zero=1, overlap_grad_reduce=False, overlap_param_gather=False, grad_reduce_fp32=False)
    site["workloads"] = [w]
    out = {}
    for engine in ("ftree", "ar_ftree"):
        site["fabric"]["infiniband"]["routing_engine"] = engine
        p = tmp_path_factory.mktemp(engine) / "lab-ib.yaml"
        p.write_text(yaml.safe_dump(site))
        d = compile_design(p, placement_method="naive")
        out[engine] = (d, topology.from_design(d))
    return out


def step(design, net, order: str) -> dict:
    s = routing.site_scheme(design.spec.fabric)
    w = design.spec.site.workloads[0]
    j = jobs.simulate_job(design, net, Job(workload=w.name, order=order), [s], Library(nic_latency=design.spec.chassis.nic_latency),
                          Case(name="ar"), set(), None, ("jobs", 0))
    return {**j["schemes"][0], "kind": s.kind, "dp_shard_bytes": j["dp_shard_bytes"]}


def test_the_routing_engine_names_the_scheme(ib_sites):
    assert routing.site_scheme(ib_sites["ftree"][0].spec.fabric).kind == "ftree"  # OpenSM's tables, replayed
    assert routing.site_scheme(ib_sites["ar_ftree"][0].spec.fabric).kind == "adaptive"


def test_adaptive_is_never_slower_and_gains_what_the_collisions_cost(ib_sites):
    d, net = ib_sites["ftree"]
    n, B = PLAN["dp"], 400e9 / 8  # lab-ib: 400 Gb/s NDR NICs and QM9700 ports [qm9700]
    res = {(e, o): step(*ib_sites[e], o) for e in ib_sites for o in ("topology", "naive")}
    for o in ("topology", "naive"):
        assert res[("ar_ftree", o)]["step_s"] <= res[("ftree", o)]["step_s"] * (1 + 1e-12)
    G = res[("ar_ftree", "naive")]["dp_shard_bytes"]
    ring = (n - 1) / n * G / (B * PROTOCOL_EFFICIENCY)  # one NIC-bound ring all-gather
    # adaptive: every data-parallel ring at its NICs' rate, wherever the scheduler put the servers
    for o in ("topology", "naive"):
        assert res[("ar_ftree", o)]["dp_s"] == pytest.approx(2 * ring, rel=2e-3)
    # static, servers in topology order: each rail's ring leaves a leaf once, nothing collides
    assert res[("ftree", "topology")]["step_s"] == pytest.approx(res[("ar_ftree", "topology")]["step_s"], rel=1e-9)
    # static, servers in a scheduler's random order: the D-mod-K tables put k ring transfers on one link
    gpus = jobs.place_job(net, n * PLAN["tp"], "naive", Job(workload="x").seed, set())
    grad = jobs.rank_groups(gpus, {**PLAN, "cp": 1}, ["tp", "cp", "pp", "dp"], ("cp", "dp"))
    src, dst = np.concatenate(grad), np.concatenate([np.roll(g, -1) for g in grad])
    per_link = routing.link_load(net, routing.route(net, src, dst, np.ones(len(src)), routing.Scheme("ftree", "static", 1)))
    links = slice(0, net.n_link_arcs)
    assert np.allclose(net.arc_cap[links], B)  # every link at the NIC's rate: the closed form's premise
    k = float(per_link[links].max())
    assert k == 2
    gain = res[("ftree", "naive")]["step_s"] - res[("ar_ftree", "naive")]["step_s"]
    assert gain == pytest.approx((k - 1) * 2 * ring, rel=2e-3)
    assert gain > 0.3 * res[("ar_ftree", "naive")]["step_s"]  # a third of the step lost to two collisions


def test_scheme_site_in_a_scenario(ib_sites):
    d, _ = ib_sites["ar_ftree"]
    scn, src = parse_scenario("name: ar\nrouting:\n  - {name: fabric, scheme: site}\n  - {name: dmodk, scheme: static}\n"
                              "jobs:\n  - {workload: lab-llama-8b}\n")
    got = run_mod.schemes_of(scn, 16, None, d.spec.fabric, src)
    assert [(s.name, s.kind, s.qps) for s in got] == [("fabric", "adaptive", 1), ("dmodk", "static", 16)]
    with pytest.raises(SpecError) as e:
        run_mod.schemes_of(scn, 16, None, None, src)
    msg = e.value.diagnostics[0].format()
    assert msg.startswith("<scenario>:3:") and "routing.0.scheme" in msg.replace("[", ".").replace("]", "") and "no site" in msg


def test_the_opensm_config_runs_the_adaptive_engine(ib_sites):
    from twin.emit import configs_ib

    conf = configs_ib.emit(ib_sites["ar_ftree"][0])["configs/opensm/opensm.conf"].decode()
    assert "routing_engine ar_ftree\n" in conf and "root_guid_file" in conf
