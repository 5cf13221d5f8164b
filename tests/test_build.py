"""`twin build`: every example builds; output is atomic, deterministic and indexed by the manifest."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import compiled, example_sites, tiered, twin_in_process, unwrap
from golden import differences, files_under

from twin.build import OutputError, build
from twin.emit import pic_buildings

ROOT = Path(__file__).resolve().parents[1]
SITES = example_sites()


def twin_cli(*args, cwd=ROOT, env=None):
    return subprocess.run([sys.executable, "-m", "twin", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def tree_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


# The lab sites (every fabric family, RoCE and InfiniBand, a campus, a power-limited hall) build in the
# fast tier; the Meta sites and the job twin's validation sites (selene-a100, dgx-h100-pod) are what the
# slow tier builds them for: the same emitters at full size.
EXAMPLES = tiered(s.stem for s in SITES)


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("site", EXAMPLES)
def test_every_example_builds(site, built):
    """Every artifact is in the manifest with its hash, and the build holds the whole design: the GPUs and
    the switches per tier of the spec's shape, one config per switch (RoCE: an FRR config, and SONiC or EOS
    by the model's target), every cable of the plan, every rack on the floor plan and in NetBox's import
    set, a floor picture per hall (on a campus of more than 12 halls, per building)."""
    out, d = built(site), compiled(site)
    spec, shape, g = d.spec, d.spec.shape, d.fabric.graph
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["site"] == site and manifest["tool"] == "twin"
    assert manifest["spec_sha256"] == hashlib.sha256((ROOT / "sites" / f"{site}.yaml").read_bytes()).hexdigest()
    on_disk = tree_hashes(out)
    listed = {a["path"]: a["sha256"] for a in manifest["artifacts"]}
    assert set(on_disk) - {"manifest.json"} == set(listed)
    assert all(on_disk[p] == h for p, h in listed.items())
    design = json.loads((out / "design.json").read_text())
    # every default is filled in: a field the YAML never mentions appears with its default
    assert design["site"]["fabric"]["qos"]["mtu"] == 9216
    assert "## Summary" in (out / "report.md").read_text()

    figures = {f["key"]: f["value"] for f in json.loads((out / "review.json").read_text())["figures"]}
    nics = sum(1 for n in g if g.nodes[n]["role"] == "nic")
    assert figures["gpus"] == design["derived"]["gpus"] == spec.gpus == nics > 0
    switches = set(d.fabric.switches())
    by_role = Counter(g.nodes[n]["role"] for n in switches)
    assert by_role == {t.role: t.count for t in shape.tiers} and len(switches) == shape.switches
    assert {k: v for k, v in figures.items() if k.startswith("switches.")} == {f"switches.{r}": n for r, n in by_role.items()}
    assert figures["switches"] == len(switches)

    files = set(on_disk)
    if spec.fabric.technology.value == "roce":
        frr = {p.split("/")[2].removesuffix(".conf") for p in files if p.startswith("configs/frr/") and p.endswith(".conf")}
        eos = {p.split("/")[2].removesuffix(".cfg") for p in files if p.startswith("configs/eos/")}
        sonic = {p.split("/")[2] for p in files if p.startswith("configs/sonic/")}
        assert frr == switches and eos | sonic == switches and not eos & sonic
    else:
        assert "configs/opensm/opensm.conf" in files and not any(p.startswith(("configs/frr/", "configs/sonic/")) for p in files)

    assert len(csv_rows(out / "cabling" / "cables.csv")) == len(d.cabling) == len(d.fabric.cables())
    placed = d.placement.gpu_racks() + d.placement.network_racks()
    assert len(csv_rows(out / "placement" / "floor.csv")) == len(placed) and len(d.placement.gpu_racks()) == spec.racks
    assert len(csv_rows(out / "netbox" / "04-racks.csv")) == len(placed)
    devices = {r["description"] for r in csv_rows(out / "netbox" / "08-devices.csv")}
    assert switches <= devices
    halls = [h.name for h in spec.site.halls]  # above 12 halls on a campus: the fullest hall of each building, the campus by building
    drawn = halls if len(halls) <= pic_buildings.FLOOR_HALLS or spec.campus is None else pic_buildings.floor_halls(d)
    assert sorted(p for p in files if p.startswith("report/floor-")) == sorted(f"report/floor-{h}.svg" for h in drawn)
    assert ("report/campus-buildings.svg" in files) == (drawn != halls) and len(drawn) == (len(halls) if drawn == halls else len(spec.campus.buildings))


def test_meta_24k_figures(meta24k):
    s = meta24k.spec
    assert (s.gpus, s.racks, s.zones, s.racks_per_zone) == (24_576, 1_536, 8, 192)
    assert s.rack.power == pytest.approx(2 * 10_200 + 1_500 + 300)
    b = meta24k.budget  # GPU racks (their rack switches inside), CTSWs and ATSWs outside them, and the BOM's optics
    assert b.network_power == 8 * 16 * 14_000 + 16 * 14_000 and b.rack_switch_power == 1_536 * 1_500
    assert b.it_power == pytest.approx(1_536 * 22_200 + 8 * 16 * 14_000 + 16 * 14_000 + b.optics_power)
    assert b.optics_power > 500e3  # 400G optics between the tiers: ~0.56 MW (issue 27: outside the budget before)


@pytest.mark.slow
def test_byte_identical_across_hash_seeds(tmp_path):
    outs = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = tmp_path / f"o{seed}"
        r = twin_cli("build", "sites/lab-2zone.yaml", "-o", str(out), "-q", env=env)
        assert r.returncode == 0, r.stderr
        outs.append(tree_hashes(out))
    assert outs[0] == outs[1]


def test_committed_lab_output_is_current(built):
    """generated/lab-2zone in git is the reviewable example: a rebuild must reproduce it byte for byte
    (on failure: which files differ and their first differing lines)."""
    diff = differences(files_under(built("lab-2zone")), files_under(ROOT / "generated" / "lab-2zone"))
    assert not diff, f"generated/lab-2zone is stale: run `twin build sites/lab-2zone.yaml`\n{diff}"


def test_failed_build_leaves_previous_output(tmp_path):
    out = tmp_path / "out"
    build(ROOT / "sites" / "lab-2zone.yaml", out)
    before = tree_hashes(out)
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "sites" / "lab-2zone.yaml").read_text().replace("pue: 1.3", "pue: lots"))
    r = twin_cli("build", str(bad), "-o", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "power.pue" in r.stderr and "output left untouched" in r.stderr
    infeasible = tmp_path / "infeasible.yaml"
    infeasible.write_text((ROOT / "sites" / "lab-2zone.yaml").read_text().replace("utility_capacity: 500 kW", "utility_capacity: 200 kW"))
    r = twin_cli("build", str(infeasible), "-o", str(out))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "site utility" in r.stderr and "short" in r.stderr and "largest configuration that fits" in r.stderr
    assert tree_hashes(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary folders left behind"


def test_refuses_to_replace_a_foreign_folder(tmp_path):
    foreign = tmp_path / "precious"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("do not delete")
    with pytest.raises(OutputError):
        build(ROOT / "sites" / "lab-2zone.yaml", foreign)
    assert (foreign / "thesis.tex").read_text() == "do not delete"


def test_infeasible_diagnosis_names_binding_limit(tmp_path):
    text = (ROOT / "sites" / "lab-2zone.yaml").read_text().replace("capacity_per_row: 180 kW", "capacity_per_row: 80 kW")
    p = tmp_path / "hot.yaml"
    p.write_text(text)
    r = twin_cli("build", str(p), "-o", str(tmp_path / "o"), "--json")
    assert r.returncode == 1
    doc = unwrap(r.stdout)
    assert doc["status"] == "infeasible"
    cooling = [line for line in doc["diagnosis"] if "cooling" in line]
    # 8 racks x 22.2 kW + 15 kW network = 192.6 kW of heat, have 2 rows x 80 kW
    assert cooling and "have 160.0 kW" in cooling[0] and "short" in cooling[0]
    # largest fit: 200 kW of cooling / (22.2 kW + network share per rack) -> 8 racks do not fit, 7 or fewer do
    largest = [line for line in doc["diagnosis"] if line.startswith("largest configuration")][0]
    n = int(largest.split(":")[1].split("GPU racks")[0].replace(",", ""))
    assert n == 6  # floor(160 kW / (22.2 kW + 15 kW / 8 racks))


@pytest.mark.slow
def test_every_example_validates_in_the_cli():
    """Every example through the CLI's spec checks (--fast: test_every_example_builds compiles each of
    them already); the lab sites also through the full validate, which compiles and runs the verdicts."""
    r = twin_cli("validate", "--fast", *[str(s) for s in SITES], "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [x["status"] for x in unwrap(r.stdout)["results"]] == ["ok"] * len(SITES)
    labs = [s for s in SITES if s.stem.startswith("lab-")]
    assert len(labs) >= 5, labs
    r = twin_cli("validate", *[str(s) for s in labs], "--json", "--accept-risks")
    assert r.returncode == 0, r.stdout + r.stderr
    results = unwrap(r.stdout)["results"]
    assert [x["status"] for x in results] == ["ok"] * len(labs)
    # lab-campus is the example that shows where lossless stops fitting: its verdicts fail, and without
    # --accept-risks validate says so in its exit code
    failing = sorted(Path(x["spec"]).stem for x in results if any(v["status"] == "fail" for v in x["risks"]))
    assert failing == ["lab-campus"], failing
    assert twin_cli("validate", str(ROOT / "sites" / "lab-campus.yaml")).returncode == 4


def test_validate_cli_exit_codes(tmp_path):
    """In this process (tests/conftest.twin_in_process: an escaped exception fails it); the validate of every
    example below, and tests/test_envelope.py, run `twin validate` as a real process."""
    r = twin_in_process("validate", str(ROOT / "sites" / "lab-2zone.yaml"), "--json")
    assert r.returncode == 0 and [x["status"] for x in unwrap(r.stdout)["results"]] == ["ok"], r.stdout + r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [\n")
    r = twin_in_process("validate", str(bad))
    assert r.returncode == 2 and "bad.yaml:" in r.stderr and "Traceback" not in r.stderr
    r = twin_in_process("validate", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_schema_is_current(root):
    from twin.schema import SCHEMA_FILE, schema_files, schema_text, stale_files

    files = schema_files(root / "schemas" / SCHEMA_FILE)
    assert {p.name for p in files} == {"twin-site.schema.json", "reference.md", "twin-scenario.schema.json", "scenario-reference.md",
                                       "twin-sweep.schema.json", "sweep-reference.md", "twin-results.schema.json", "twin-output.schema.json"}
    assert not stale_files(files), f"stale: {[p.name for p in stale_files(files)]}: run `twin schema`"
    schema = json.loads(schema_text())
    assert "fabric" in schema["required"] and schema["properties"]["name"]["pattern"]
    for site in SITES:
        assert site.read_text().startswith("# yaml-language-server: $schema=../schemas/twin-site.schema.json")


def test_examples_validate_against_json_schema(root):
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    schema = json.loads((root / "schemas" / "twin-site.schema.json").read_text())
    # the schema checked and its validator made once, not once per site as jsonschema.validate does
    # (5 s of the test's 6); each site is still validated against the whole schema
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    for site in SITES:
        validator.validate(yaml.safe_load(site.read_text()))


def test_python_api_exposes_passes(lab):
    g = lab.fabric.graph
    assert g.number_of_nodes() == 128 + 16 + 8 + 8 + 2  # NICs, servers, RTSWs, CTSWs, ATSWs
    assert len(lab.placement.gpu_racks()) == 8 and len(lab.cabling) == 128 + 8 * 16 + 8 * 8  # CTSW: 4 racks x 16 / 4 = 16 down, 1:2 -> 8 up
    assert {b.category for b in lab.bom} == {"switch", "cable"}  # DAC and AOC only: no pluggable optics
    assert len(lab.intent.switches) == 18 and lab.addressing.asn["atsw-01"] == lab.intent.switches["atsw-01"].asn
