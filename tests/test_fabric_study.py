"""A fabric-only study (issue 36): a site with a fabric and rack types but no halls builds the fabric, its links
without lengths, the BOM, the configs that need no length and the default twin, and says what it skipped.

Known answers: NVIDIA's DGX SuperPOD B300 with Spectrum-X [dgx-b300-ra] Table 3, one SU: 16 leaves, 8 spines, 512
node-leaf and 512 leaf-spine cables per 800G port, the same counts as the site with its floor
(sites/dgx-b300-twin-plane.yaml), with nothing measured on a floor that has not been drawn.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path

import pytest
import yaml

from twin.build import build
from twin.compiler.pipeline import compile_design
from twin.compiler.resolve.validate import validate_file
from twin.compiler.study import SKIPPED

ROOT = Path(__file__).resolve().parent.parent
B300 = ROOT / "sites" / "dgx-b300-twin-plane.yaml"


def without_floor(tmp_path: Path, site: Path, **fabric) -> Path:
    """The site with its halls and power taken out (a fabric-only study); ``fabric`` updates fabric:."""
    doc = yaml.safe_load(site.read_text())
    for key in ("halls", "power"):
        doc.pop(key)
    doc["fabric"].update(fabric)
    p = tmp_path / f"{site.stem}-study.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.fixture(scope="module")
def b300_study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    return build(without_floor(tmp, B300), tmp / "out")


def test_the_b300_su_without_its_floor_counts_as_the_vendor_table(b300_study):
    r = b300_study
    files = set(r.files)
    # the artifacts that need no floor, and none that does (no report, placement, pull list, NetBox set, SONiC config)
    assert files == {"bom.csv", "cabling/breakouts.csv", "cabling/links.csv", "model/fabric.graphml", "model/fabric.json", "study.md",
                     "manifest.json"}
    g = r.design.fabric.graph
    roles = Counter(d for _, d in g.nodes(data="role"))
    assert (roles["server"], roles["leaf"], roles["spine"]) == (64, 16, 8)
    assert all(d["rack"] is None and d["hall"] is None for _, d in g.nodes(data=True) if d.get("level", -1) >= 1)
    links = list(csv.DictReader(io.StringIO((r.out_dir / "cabling" / "links.csv").read_text())))
    assert Counter((x["tier"], x["speed_gbps"], x["medium"]) for x in links) == {
        ("nic-leaf", "400", "2xdr4-800g"): 1024, ("leaf-spine", "800", "dr8-800g"): 512}
    assert not any("length" in c or "hall" in c or "rack" in c for c in links[0])
    bom = list(csv.reader(io.StringIO((r.out_dir / "bom.csv").read_text())))
    xcvr = {row[1]: int(row[4]) for row in bom if row[0] == "transceiver"}
    assert xcvr == {"2xdr4-800g": 512 + 16 * 32, "dr8-800g": 16 * 32 + 8 * 64}
    cables = [row for row in bom if row[0] == "cable"]
    assert sum(int(row[4]) for row in cables if "dr8-800g" in row[2]) == 512 and all(row[3] == "" for row in cables)
    vendor = {row[1]: int(row[4]) for row in bom if row[0] == "vendor count"}
    assert vendor == {"leaf-spine cables per 800G port": 512, "nic-leaf cables per 800G port": 512}
    study = (r.out_dir / "study.md").read_text()
    assert all(what in study and why in study for what, why in SKIPPED)


def test_the_study_and_the_site_with_its_floor_build_the_same_fabric(b300_study):
    full = compile_design(B300, until="bom", placement_method="naive")
    study = b300_study.design
    assert [(lk.id, lk.a, lk.a_port, lk.b, lk.b_port, lk.speed) for lk in study.fabric.cables()] == [
        (lk.id, lk.a.removeprefix("bh1-"), lk.a_port, lk.b, lk.b_port, lk.speed) for lk in full.fabric.cables()]
    assert {(ln.item, ln.quantity) for ln in study.bom if ln.category == "transceiver"} == {
        (ln.item, ln.quantity) for ln in full.bom if ln.category == "transceiver"}


def test_an_infiniband_study_writes_its_subnet_manager_and_runs_the_job(tmp_path):
    """The GB200 NVL72 SuperPOD's 2 SU without a floor [dgx-gb200-ra]: 64 leaves, 48 spines, 18 cores, the
    OpenSM files (no cable length needed) and the default twin's first job."""
    p = without_floor(tmp_path, ROOT / "sites" / "gb200-nvl72-superpod.yaml",
                      media={"nic-leaf": ["dr4-400g"], "leaf-spine": ["dr4-400g"], "spine-core": ["dr4-400g"]})
    r = build(p, tmp_path / "out")
    roles = Counter(d for _, d in r.design.fabric.graph.nodes(data="role"))
    assert (roles["leaf"], roles["spine"], roles["core"]) == (64, 48, 18)
    assert {"configs/opensm/opensm.conf", "model/topology.net"} <= set(r.files)
    study = (r.out_dir / "study.md").read_text()
    assert "RoCE switch configs" not in study and "| spine-core | 1,152 | 400G | dr4-400g |" in study
    assert r.runs.default["job"]["schemes"][0]["step_s"] > 0 and "the step by routing scheme" in study


def test_what_a_study_needs_and_a_floor_needs_are_located(tmp_path):
    doc = yaml.safe_load(without_floor(tmp_path, B300).read_text())
    doc["fabric"]["media"].pop("leaf-spine")
    p = tmp_path / "nomedia.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    spec, diags = validate_file(p)
    assert spec is None
    (d,) = [d for d in diags if d.path == ("fabric", "media")]
    assert "no cable lengths to choose the leaf-spine tier's medium by" in d.message and "fabric.media.leaf-spine: [dr8-800g" in d.expected
    assert d.line > 0
    doc = yaml.safe_load(B300.read_text())
    doc.pop("power")
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    spec, diags = validate_file(p)
    assert spec is None and any(d.path == ("power",) and "a site with halls needs its power" in d.message for d in diags)
    doc = yaml.safe_load(B300.read_text())
    doc.pop("halls")
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    spec, diags = validate_file(p)
    assert spec is not None and any(d.path == ("power",) and "reads no power" in d.message for d in diags)


def test_what_needs_the_floor_refuses_a_study_at_its_file(b300_study):
    """A study has no design verdicts and runs a scenario's network twins; the power, reliability and cluster
    twins and every artifact of a build at once (twin diff) need the floor, and say so at its file (exit 2)."""
    from twin.analysis.verdicts_twins import verdicts
    from twin.emit import emit_all
    from twin.lang.diagnostics import SpecError
    from twin.lang.scenario.models import load_scenario
    from twin.twins.run import simulate

    d = b300_study.design
    assert verdicts(d) == []
    for run, words in ((lambda: emit_all(d), "no floor for every artifact of a build at once"),
                       (lambda: simulate(d, *load_scenario(ROOT / "scenarios" / "gb200-nvl72.yaml")), "no floor for the scenario's power")):
        with pytest.raises(SpecError) as e:
            run()
        (diag,) = e.value.diagnostics
        assert (diag.line, diag.path) == (1, ("halls",)) and words in diag.message


def test_a_study_runs_a_scenarios_network_twins_and_a_bad_one_is_located(tmp_path):
    """A build's scenario twins run in a forked process: a SpecError they raise comes back whole (its
    diagnostics pickled), located in the scenario, not as a traceback."""
    from twin.lang.diagnostics import SpecError

    site = without_floor(tmp_path, B300)
    scn = tmp_path / "ring.yaml"
    scn.write_text("name: ring\nrouting:\n  - {name: ecmp, scheme: ecmp, qps: 1}\ncollectives:\n"
                   "  - {name: ring, op: allreduce, algorithm: ring, ranks: {gpus: all}, sweep: {min: 1 MiB, max: 8 MiB, factor: 8}}\n")
    r = build(site, tmp_path / "out", scenario=scn)
    assert "report/scenario-c1-1-busbw.svg" in r.files and "## Scenario `ring` (twin)" in (r.out_dir / "study.md").read_text()
    scn.write_text(scn.read_text() + "cases:\n  - {name: cut, failures: [{tier: spine-core, capacity: 0.5}]}\n")
    with pytest.raises(SpecError) as e:
        build(site, tmp_path / "bad", scenario=scn)
    assert any("spine-core" in d.message and d.file.endswith("ring.yaml") for d in e.value.diagnostics)
