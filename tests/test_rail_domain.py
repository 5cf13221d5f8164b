"""Rail-only at the rail-only paper's scale [rail-only]: an NVLink (high-bandwidth) domain of 256 GPUs
over 32 eight-GPU servers, 256 rails that never meet. The twin routes a cross-rail transfer as the paper
does: over NVLink inside the source's domain to its GPU on the destination's rail, then over that rail;
GPUs of one domain talk over NVLink alone, whichever server they are in. And a twin that cannot run
(a rail-only fabric without NVLink to forward over) is one line and a report section, never a traceback,
and the build writes the design all the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from fabric_helpers import variant

from twin.compiler import pipeline
from twin.twins.default import design_results
from twin.twins.net import relays, routing, topology

ROOT = Path(__file__).resolve().parents[1]


def paper_site(tmp: Path, name: str = "ro-4k-hb256", gpus: int = 4096, hb_domain: int = 256, nvlink: bool = True) -> Path:
    """meta-24k-roce's halls and Grand Teton servers as a rail-only fabric of Minipack2 switches:
    ``gpus`` GPUs in NVLink domains of ``hb_domain``, the Llama 3 405B job at TP8 PP16 on all of them (16
    sequences per DP rank, as Table 4's)
    (naive placement: the fabric and the twin do not depend on the rack order)."""
    doc = yaml.safe_load((ROOT / "sites" / "meta-24k-roce.yaml").read_text(encoding="utf-8"))
    doc["name"] = name
    fabric = {k: v for k, v in doc["fabric"].items() if k not in ("zones", "racks_per_zone", "rtsw", "ctsw", "atsw", "media")}
    doc["fabric"] = {**fabric, "family": "rail-only", "gpus": gpus, "hb_domain": hb_domain, "switch": "minipack2"}
    doc["rack_types"]["gt-rack"].pop("rtsw", None)
    # ZeRO 2: at DP 8 (1,024 GPUs) the optimizer states sharded 8 ways beside whole FP32 gradients need 82.6 GB
    job = {**doc["workloads"][0], "name": f"llama3-405b-{gpus // 1024}k", "dp": gpus // 128, "global_batch": 16 * (gpus // 128), "zero": 2}
    doc["workloads"] = [job]
    doc["placement"] = {"method": "naive"}
    if not nvlink:  # the same server without NVLink: nothing can forward between rails
        cat = yaml.safe_load((ROOT / "twin" / "lang" / "catalog" / "builtin.yaml").read_text(encoding="utf-8"))
        chassis = {k: v for k, v in cat["chassis"]["grand-teton-h100"].items() if k not in ("nvlink_bandwidth", "nvls")}
        doc.setdefault("catalog", {})["chassis"] = {"gt-no-nvlink": chassis}
        doc["rack_types"]["gt-rack"]["chassis"] = "gt-no-nvlink"
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    return pipeline.compile_design(paper_site(tmp_path_factory.mktemp("ro")), until="bom", placement_method="naive")


def test_domains_span_servers_and_rails_follow_the_domain(paper):
    net = topology.from_design(paper)
    # 4,096 GPUs / 256 per domain = 16 domains of 32 servers; each domain holds every rail once
    assert net.n_gpus == 4096 and len(set(net.gpu_server.tolist())) == 512
    assert np.bincount(net.gpu_domain).tolist() == [256] * 16
    for d in (0, 7, 15):
        assert sorted(net.gpu_rail[net.gpu_domain == d].tolist()) == list(range(256))
    assert (np.bincount(net.gpu_server, minlength=512) == 8).all()


def test_cross_rail_goes_through_the_nvlink_domain(paper):
    net = topology.from_design(paper)
    gpu = {(int(d), int(r)): g for g, (d, r) in enumerate(zip(net.gpu_domain, net.gpu_rail))}
    src, dst = gpu[(0, 3)], gpu[(1, 200)]  # another domain, another rail
    relay = relays.relays(net, np.array([src]), np.array([dst]))[0]
    assert (net.gpu_domain[relay], net.gpu_rail[relay]) == (0, 200)
    assert net.gpu_server[relay] != net.gpu_server[src]  # the relay is in another server of the same domain
    scheme = routing.Scheme("e-ecmp", "e-ecmp", 4)
    r = routing.route(net, np.array([src]), np.array([dst]), np.array([1e6]), scheme)
    arcs = set(r.A.nonzero()[0].tolist())
    assert {int(net.gpu_nvl_out[src]), int(net.gpu_nvl_in[relay])} <= arcs
    switches = {net.switch_ids[net.arc_head[a]] for a in arcs if a < net.n_link_arcs and net.arc_head[a] < net.n_switches}
    assert switches == {"rails201-204-leaf-0001/rail201"}  # rail 200 (1-based 201): its partition of a shared switch

    # two GPUs of one domain in different servers: NVLink only, no cable
    near = gpu[(0, 250)]
    assert net.gpu_server[near] != net.gpu_server[src]
    r = routing.route(net, np.array([src]), np.array([near]), np.array([1e6]), scheme)
    assert sorted(r.A.nonzero()[0].tolist()) == sorted([int(net.gpu_nvl_out[src]), int(net.gpu_nvl_in[near])])


# The rail-only rows of the sizing tests (tests/test_shape.py: lab-ib's 128 GPUs, one rail per switch
# and packed) and the paper's domains (64 and 256 GPUs): each runs the build's default twin, its job too.
ROWS = [("lab-ib", 128, 8, {"rails_per_switch": 1}), ("lab-ib", 128, 8, {}), ("paper", 2048, 64, {}), ("paper", 1024, 256, {})]


@pytest.mark.parametrize("base, gpus, hb, extra", ROWS)
def test_every_rail_only_row_runs_its_default_twin(tmp_path, base, gpus, hb, extra):
    if base == "paper":
        path = paper_site(tmp_path, f"ro-{gpus}-{hb}", gpus, hb)
    else:
        path = variant(tmp_path, base, f"ro-{gpus}-{hb}", family="rail-only", tiers=None, hb_domain=hb, **extra)
    d = pipeline.compile_design(path, until="bom", placement_method="naive")
    r = design_results(d)
    assert r["gpus"] == min(gpus, 256) and all(min(s["busbw_GBps"]) > 0 for s in r["schemes"])
    if base == "paper":
        assert r["job"]["workload"] == f"llama3-405b-{gpus // 1024}k" and all(s["step_s"] > 0 for s in r["job"]["schemes"])


@pytest.mark.slow
def test_paper_scale_builds_with_exit_0_and_reports_the_job(tmp_path):
    """The issue's reproducer: 4,096 GPUs, 256-GPU domains; before, a ValueError traceback from the twins."""
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "twin", "build", str(paper_site(tmp_path)), "-o", str(out), "-q"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "### Training step of `llama3-405b-4k` (job twin)" in report and "could not run" not in report
    steps = [f["value"] for f in json.loads((out / "review.json").read_text(encoding="utf-8"))["figures"] if f["key"].startswith("twin.step.")]
    assert len(steps) == 3 and all(s > 0 for s in steps)


def test_a_twin_that_cannot_run_is_one_line_and_the_design_is_written(tmp_path):
    """No NVLink on a rail-only fabric: nothing carries traffic between rails. The build exits 0, says
    why in one line, writes every design artifact, and the report's twin section says the same."""
    out = tmp_path / "out"
    spec = paper_site(tmp_path, "ro-nonvl", 1024, 256, nvlink=False)
    res = subprocess.run([sys.executable, "-m", "twin", "build", str(spec), "-o", str(out), "-q"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "Traceback" not in res.stderr + res.stdout, res.stderr[-2000:]
    said = [line for line in res.stderr.splitlines() if "default twin" in line]
    assert len(said) == 1 and "no NVLink to forward over" in said[0], res.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    written = {a["path"] for a in manifest["artifacts"]}
    assert {"design.json", "cabling/cables.csv", "bom.csv", "report.md"} <= written
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "The build's default twin could not run: GPU 1 is unreachable from GPU 0: no network path" in report
