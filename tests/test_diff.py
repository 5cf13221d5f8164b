"""`twin diff` names exactly the artifacts and design fields a spec edit changes."""

from pathlib import Path

from twin.build import build
from twin.diff.compare import diff

ROOT = Path(__file__).resolve().parents[1]


def test_diff_reports_changed_fields(tmp_path, built):
    site = ROOT / "sites" / "lab-2zone.yaml"
    out = built("lab-2zone")  # the session's build (diff only reads it)
    assert diff(site, out).empty
    edited = tmp_path / "lab-2zone.yaml"
    edited.write_text(site.read_text().replace("  pue: 1.3 ", "  pue: 1.4 "))
    res = diff(edited, out)
    assert "design.json" in res.changed and "report.md" in res.changed
    assert "site.power.pue" in res.design_fields and "derived.power.facility" in res.design_fields
    assert "site.fabric.zones" not in res.design_fields
    assert not res.added and not res.removed


# ---------------------------------------------------------------- the review (issue 13)

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402
from conftest import built_with_scenario, compiled, twin_in_process, unwrap  # noqa: E402

from twin.analysis.registry import lookup  # noqa: E402
from twin.diff.compare import compare, folder_side, spec_side  # noqa: E402


def twin_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "twin", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def atsw_change(tmp_path_factory):
    """lab-2zone with 4 ATSWs instead of 2 and PUE 1.4 instead of 1.3, reviewed against the original spec."""
    site = ROOT / "sites" / "lab-2zone.yaml"
    edited = tmp_path_factory.mktemp("edit") / "lab-2zone.yaml"
    text = site.read_text()
    assert text.count("    count: 2\n") == 1 and text.count("  pue: 1.3 ") == 1
    edited.write_text(text.replace("    count: 2\n", "    count: 4\n").replace("  pue: 1.3 ", "  pue: 1.4 "))
    return site, edited, compare(spec_side(site), spec_side(edited))


def test_review_says_what_the_change_does(atsw_change):
    """Two more ATSWs: +2 switches of their tier, their power in the IT load, facility power = IT x the new
    PUE, the utility headroom shrinks by the facility growth, each ATSW's ECMP width halves (the same
    links into a zone spread over twice the ATSWs: 8 CTSW uplinks per zone / 4 ATSWs x 4 CTSWs)."""
    _site, _edited, res = atsw_change
    moved = {r["key"]: r for r in res.figures}
    old = compiled("lab-2zone")
    atsw_w = old.spec.switch(old.spec.fabric.atsw.model).power
    assert (moved["switches.atsw"]["old"], moved["switches.atsw"]["new"], moved["switches.atsw"]["delta"]) == (2, 4, 2)
    assert moved["switches"]["delta"] == 2 and "switches.rtsw" not in moved and "switches.ctsw" not in moved
    assert moved["it_power_mw"]["delta"] == pytest.approx(2 * atsw_w / 1e6, abs=0.15e-3)
    assert moved["facility_power_mw"]["new"] == pytest.approx(moved["it_power_mw"]["new"] * 1.4, abs=1e-4)
    assert moved["power.utility_headroom_kw"]["delta"] == pytest.approx(-1e3 * moved["facility_power_mw"]["delta"], abs=0.1)
    assert (moved["ecmp.atsw"]["old"], moved["ecmp.atsw"]["new"]) == (16, 8)
    assert "links.ctsw-atsw" not in moved and "gpus" not in moved  # the same uplinks, the same GPUs
    assert res.unchanged_figures > 20


def test_review_names_configs_per_role(atsw_change):
    """The two new ATSWs add one config per target each; the two old ATSWs lose half their links; CTSW
    configs change only where an uplink moved to a new ATSW; RTSW configs do not change."""
    site, _edited, res = atsw_change
    targets = {p.split("/")[1] for p in spec_side(site).hashes if p.startswith("configs/") and "atsw-01" in p}
    atsw, ctsw = res.configs["atsw"], res.configs["ctsw"]
    assert atsw["added"] == 2 * len(targets) and atsw["changed"] == 2 * len(targets) and atsw["removed"] == 0
    assert "rtsw" not in res.configs
    assert ctsw["changed"] > 0 and ctsw["example"].startswith("configs/")
    assert any(x in ctsw["diff"] for x in ("atsw-03", "atsw-04")) and ctsw["diff"].startswith("--- old/")
    assert sorted(p for p in res.added if p.startswith("configs/")) == sorted(
        p.replace("atsw-01", a) for p in spec_side(site).hashes if "atsw-01" in p and p.startswith("configs/") for a in ("atsw-03", "atsw-04"))


def test_diff_cli_two_folders_and_html(atsw_change, tmp_path, browser):
    """`twin diff OLD NEW` on two built folders: exit 1 with the review in JSON; the same folder twice: exit 0;
    --html writes a page the browser opens without errors, with the moved figures in a table."""
    site, edited, _res = atsw_change
    build(site, tmp_path / "a")
    build(edited, tmp_path / "b")
    r = twin_cli("diff", tmp_path / "a", tmp_path / "b", "--json", "--html", tmp_path / "review.html")
    assert r.returncode == 1, r.stderr
    data = unwrap(r.stdout)
    assert {f["key"] for f in data["figures"]} >= {"switches.atsw", "ecmp.atsw", "facility_power_mw"}
    assert data["configs"]["atsw"]["added"] > 0
    same = twin_cli("diff", tmp_path / "a", tmp_path / "a", "--json")
    assert same.returncode == 0 and unwrap(same.stdout)["figures"] == []
    page = browser.open_page(tmp_path / "review.html")
    assert page.errors == [] and page.requests == [page.url] and page.load_ms < 2000
    cells = page.evaluate("Array.from(document.querySelectorAll('td')).map(td => td.textContent)")
    i = cells.index("atsw switches")
    assert cells[i:i + 4] == ["atsw switches", "2", "4", "+2 (+100.0%)"]
    assert page.evaluate("document.querySelectorAll('pre .add').length") > 0


def test_diff_cli_input_errors(tmp_path):
    """In this process (tests/conftest.twin_in_process: an escaped exception fails it); the tests above and
    below run `twin diff` as a real process."""
    assert twin_in_process("diff", tmp_path / "missing.yaml", tmp_path / "also-missing").returncode == 2
    site = ROOT / "sites" / "lab-2zone.yaml"
    both = twin_in_process("diff", site, site, "--against", tmp_path)
    assert both.returncode == 2 and "not both" in both.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(site.read_text().replace("  pue: 1.3 ", "  pue: -1 "))
    r = twin_in_process("diff", site, bad)
    assert r.returncode == 2 and "bad.yaml:" in r.stderr and "Traceback" not in r.stderr


def test_folder_without_review_json_is_named(tmp_path):
    """A folder an older twin built (no review.json in its manifest) is compared by artifacts, and said so;
    review.json listed but missing is a broken folder (tests/test_diff_tamper.py)."""
    site = ROOT / "sites" / "lab-2zone.yaml"
    build(site, tmp_path / "out")
    (tmp_path / "out" / "review.json").unlink()
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    man["artifacts"] = [a for a in man["artifacts"] if a["path"] != "review.json"]
    (tmp_path / "out" / "manifest.json").write_text(json.dumps(man))
    res = compare(folder_side(tmp_path / "out"), spec_side(site))
    assert res.figures == [] and any("no review.json" in n for n in res.notes)


def test_diff_names_a_scenario_difference(tmp_path):
    """A folder built with a scenario against the same spec without one: the review says why the report
    moved; with --scenario on the spec side nothing changes (exit 0)."""
    site, scenario = ROOT / "sites" / "lab-2zone.yaml", ROOT / "scenarios" / "lab-twins.yaml"
    out = built_with_scenario("lab-2zone", "lab-twins")  # the session's build, read only
    res = compare(folder_side(out), spec_side(site))
    assert "report.md" in res.changed and any("different scenarios" in n for n in res.notes)
    # the scenario's figures (job, campaign, power twin: named in the registry) and energy, priced at the
    # power twin's mean draw where it ran
    scenario_keys = {r["key"] for r in json.loads((out / "review.json").read_text())["figures"]
                     if lookup(r["key"]).needs in ("jobs", "campaign", "power")}
    assert {f["key"] for f in res.figures} == scenario_keys | {"draw_mw", "energy_cost_per_year"}
    assert scenario_keys >= {"step_time_s", "ettr_p50", "mtti_h", "grid_peak_mw", "distribution_limits_failing"}
    r = twin_cli("diff", out, site, "--scenario", scenario, "--json")
    assert r.returncode == 0, r.stdout[-2000:]


def test_review_shows_the_input_changes_first_with_old_and_new(atsw_change):
    """The two edits of the spec are the review's first lines, each path old -> new (from design.json's
    site, the spec as validated); the line-number noise of design.json (warnings, the file's hash) is not
    among the design fields."""
    import io

    from rich.console import Console

    from twin.diff import report

    _site, _edited, res = atsw_change
    assert res.inputs == [{"path": "fabric.atsw.count", "old": 2, "new": 4}, {"path": "power.pue", "old": 1.3, "new": 1.4}]
    buf = io.StringIO()
    report.terminal(res, Console(file=buf, width=200, highlight=False))
    first = buf.getvalue().splitlines()[:2]
    assert first == ["input fabric.atsw.count: 2 -> 4", "input power.pue: 1.3 -> 1.4"]
    md = report.markdown(res)
    assert md.index("## What changed in the inputs") < md.index("## Figures that moved")
    assert "| `power.pue` | 1.3 | 1.4 |" in md
    assert not [f for f in res.design_fields if f.startswith(("warnings", "spec_sha256"))]
    assert res.to_json()["inputs"] == res.inputs


def test_identical_halls_are_one_line(tmp_path):
    """lab-campus's three identical halls under a PUE change: each per-hall figure that moved alike in all
    three is one line naming them, with the old and new value once."""
    import io

    from rich.console import Console

    from twin.diff import report

    site = ROOT / "sites" / "lab-campus.yaml"
    edited = tmp_path / "lab-campus.yaml"
    edited.write_text(site.read_text().replace("  pue: 1.3 ", "  pue: 1.4 "))
    res = compare(spec_side(site), spec_side(edited))
    per_hall = [r for r in res.figures if r["key"] == "power.b1-lab.utility.normal"]
    assert per_hall and all(any(r["key"] == f"power.{h}.utility.normal" for r in res.figures) for h in ("b2-lab", "b3-lab"))
    buf = io.StringIO()
    report.terminal(res, Console(file=buf, width=200, highlight=False))
    lines = [ln for ln in buf.getvalue().splitlines() if "worst utility, normal" in ln]
    # facility power is IT x PUE: the utility's share grows by 1.4 / 1.3, 32.76% -> 35.28%
    assert round(32.76 * 1.4 / 1.3, 2) == 35.28
    assert lines == ["  worst utility, normal, each of 3: b1-lab, b2-lab, b3-lab: 32.76% -> 35.28% (+2.52 pp (+7.7%))"]


def test_oversubscription_change_shows_cross_zone_bandwidth_and_bisection(tmp_path):
    """lab-2zone's ATSW tier from 2:1 to 4:1: each zone's 4 racks x 16 GPUs x 400 Gbit/s = 25.6 Tbit/s reach
    the ATSWs through 12.8 Tbit/s at 2:1 and 6.4 Tbit/s at 4:1; with two zones the max-flow between them
    (the bisection) is that same zone's uplink capacity. The review shows both, not just the links."""
    site = ROOT / "sites" / "lab-2zone.yaml"
    edited = tmp_path / "lab-2zone.yaml"
    text = site.read_text()
    assert text.count('    oversubscription: "2:1"') == 1
    edited.write_text(text.replace('    oversubscription: "2:1"', '    oversubscription: "4:1"'))
    res = compare(spec_side(site), spec_side(edited))
    moved = {r["key"]: (r["old"], r["new"]) for r in res.figures}
    assert moved["cross_zone_tbps"] == (12.8, 6.4) and moved["bisection_tbps"] == (12.8, 6.4)
    assert res.inputs == [{"path": "fabric.atsw.oversubscription", "old": 2.0, "new": 4.0}]
    # the same racks on the floor (the ATSW count is pinned), some at another position: counted, named
    r = res.racks
    assert (r["added"], r["removed"], r["unreadable_rows"]) == (0, 0, 0) and r["moved"] == len(r["examples"]) >= 1
    assert r["examples"][0].split(":")[0] in spec_side(site).read("placement/floor.csv").decode()


@pytest.mark.parametrize("target", ["/dev/full", "/proc/twin-cannot-make-this/review.html"])
def test_html_that_cannot_be_written_is_one_line_exit_3(target):
    """Issue 38: `twin diff --html` onto /dev/full or into a folder that cannot be made was two tracebacks."""
    import subprocess
    import sys

    lab = str(Path(__file__).resolve().parents[1] / "generated" / "lab-2zone")
    res = subprocess.run([sys.executable, "-m", "twin", "diff", lab, lab, "--html", target], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 3 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [next(ln for ln in res.stderr.splitlines() if ln.startswith(f"--html {target}: not written ("))]
