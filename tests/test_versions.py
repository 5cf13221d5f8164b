"""Versioned languages (twin/lang/versions.py, twin/lang/upgrade.py): a site written before a catalog
switch's ``config:`` was required (site language version 1) loads with a warning naming the target it took,
and builds; ``twin upgrade`` writes that target and ``version:`` into the file and nothing else; a file it
cannot read (no YAML, another language, a newer version) is a located error and is never rewritten."""

from __future__ import annotations

import os

from conftest import SITES, twin_in_process

from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import Severity
from twin.lang.versions import CHANGES, CURRENT

LAB = (SITES / "lab-2zone.yaml").read_text().replace("    rtsw: minipack2\n", "    rtsw: tor\n")
TOR = """catalog:
  switches:
    tor:   # bought before config: existed
      vendor: Arista
      ports: 64
      port_speed: 400 Gbit/s
      port_name: "Ethernet{n}/1"
      power: 1 kW
      latency: 1 us
      height_u: 2
      weight: 15 kg
      source: assumed
"""
OLD = LAB + TOR  # no version: written before the languages had one, read as site language version 1


def test_an_old_site_loads_with_a_warning_naming_the_target_it_took_and_builds(tmp_path):
    spec, diags = validate_text(OLD, "old.yaml")
    (w,) = [d for d in diags if d.severity is Severity.WARNING]
    line = OLD.splitlines().index("      vendor: Arista") + 1
    assert (w.line, w.col, w.dotted) == (line, 7, "catalog.switches.tor.config")
    assert "took 'eos', as site language version 1 did for an Arista Ethernet switch; version 2 requires it" in w.message
    assert spec.catalog.switches["tor"].config == "eos"
    p = tmp_path / "old.yaml"
    p.write_text(OLD)
    r = twin_in_process("build", p, "-o", tmp_path / "out", "-q")
    assert r.returncode == 0, r.stderr[-2000:]
    eos = sorted(f.name for f in (tmp_path / "out" / "configs" / "eos").iterdir())
    assert len(eos) == 8 and all(n.endswith("-rtsw.cfg") for n in eos)  # the 8 rack switches, as version 1 configured them
    # the current version states config: itself; without it the file is the located error it always was
    _, diags = validate_text(f"version: {CURRENT['site']}\n" + OLD, "new.yaml")
    assert [(d.severity, d.message) for d in diags if d.dotted == "catalog.switches.tor.config"] == [(Severity.ERROR, "missing required field 'config'")]


def test_upgrade_writes_the_target_and_the_version_and_keeps_the_rest(tmp_path):
    p = tmp_path / "old.yaml"
    flow = "    ib: {vendor: NVIDIA, technology: infiniband, ports: 64, port_speed: 400 Gbit/s, power: 1 kW, latency: 1 us, height_u: 1, weight: 10 kg, source: assumed}\n"
    cisco = "    c9k: {vendor: Cisco, ports: 32, port_speed: 400 Gbit/s, power: 1 kW, latency: 1 us, height_u: 1, weight: 10 kg, source: assumed}\n"
    p.write_text("version: 1\n" + OLD + flow + cisco)
    os.chmod(p, 0o640)
    check = twin_in_process("upgrade", "--check", p)
    assert check.returncode == 1 and p.read_text().startswith("version: 1\n")
    r = twin_in_process("upgrade", p)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == f"{p}: site language version 1 -> 2"
    new = p.read_text()
    added = [line for line in new.splitlines() if line not in ("version: 1\n" + OLD + flow + cisco).splitlines()]
    assert added == ["version: 2", "      config: eos",
                     flow.rstrip().replace("{vendor", "{config: opensm, vendor"), cisco.rstrip().replace("{vendor", "{config: sonic, vendor")]
    assert len(new.splitlines()) == len(("version: 1\n" + OLD + flow + cisco).splitlines()) + 1  # the comments and the rest kept
    assert "tor:   # bought before config: existed" in new and os.stat(p).st_mode & 0o777 == 0o640
    spec, diags = validate_text(new, "new.yaml")
    assert not [d for d in diags if d.severity is not Severity.INFO and "config" in d.dotted]
    assert {m: spec.catalog.switches[m].config for m in ("tor", "ib", "c9k")} == {"tor": "eos", "ib": "opensm", "c9k": "sonic"}
    again = twin_in_process("upgrade", p, "--json")
    assert again.returncode == 0 and '"status": "current"' in again.stdout and p.read_text() == new
    assert sorted(x.name for x in tmp_path.iterdir()) == ["old.yaml"]  # no temporary file left


def test_bad_input_is_a_located_error_and_never_rewritten(tmp_path):
    cases = {
        "broken.yaml": ("name: [\n", "broken.yaml:2:1: YAML syntax"),
        "compose.yaml": ("services:\n  web: {image: nginx}\n", "compose.yaml:1:1: not a twin site, scenario or sweep"),
        "newer.yaml": (f"version: {CURRENT['site'] + 1}\n" + OLD, "newer.yaml:1:10: version: written for version 3 of the site language; this twin reads versions 1 to 2"),
        "word.yaml": ("version: two\n" + OLD, "word.yaml:1:10: version: version 'two' is not a version of the site language"),
        "scenario.yaml": ("version: 5\nname: s\nrouting: [{name: e, scheme: ecmp}]\njobs: []\n", "scenario.yaml:1:10: version: written for version 5 of the scenario language"),
    }
    for name, (text, _) in cases.items():
        (tmp_path / name).write_text(text)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    r = twin_in_process("upgrade", *sorted(tmp_path.iterdir()), tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    for name, (_, message) in cases.items():
        assert f"{tmp_path}/{message}" in r.stderr, (name, r.stderr)
    assert f"{tmp_path}:0:0: a directory, not a regular YAML file" in r.stderr  # refused before a byte is read
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()} == before


def test_newer_scenarios_and_sweeps_are_refused_where_they_are_read(tmp_path):
    s = tmp_path / "s.yaml"
    s.write_text("version: 9\nname: s\nrouting: [{name: e, scheme: ecmp}]\ncollectives: [{op: allreduce, sizes: [1 MiB]}]\n")
    r = twin_in_process("simulate", "sites/lab-2zone.yaml", "--scenario", s)
    assert r.returncode == 2 and f"{s}:1:10: version: written for version 9 of the scenario language" in r.stderr
    w = tmp_path / "w.yaml"
    w.write_text("version: 2\nname: w\nsite: lab.yaml\naxes: []\n")
    r = twin_in_process("sweep", w)
    assert r.returncode == 2 and f"{w}:1:10: version: written for version 2 of the sweep language" in r.stderr


def test_the_changelog_has_every_version():
    for lang, newest in CURRENT.items():
        assert sorted(c.version for c in CHANGES if c.language == lang) == list(range(1, newest + 1))


def test_every_example_file_is_read_as_its_language_and_the_marks_are_the_models():
    """`twin upgrade` tells the languages apart by the top-level keys only one of them has: those are the
    models' own (a key two languages share marks neither), and every example site, scenario and sweep of
    the repository is read as the language of its folder (a scenario of `power:` or `cluster:` alone
    included: the docs' `twin upgrade --check sites/*.yaml scenarios/*.yaml sweeps/*.yaml` refused two)."""
    from conftest import ROOT

    from twin.lang.loader import load_file
    from twin.lang.upgrade import MARKS, language_of
    from twin.schema import LANGUAGES

    fields = {lang: set(LANGUAGES[lang][0].model_fields) for lang in MARKS}
    for lang, marks in MARKS.items():
        others = set().union(*(f for other, f in fields.items() if other != lang))
        assert marks == fields[lang] - others - {"version", "name", "description"}, lang
    files = {"site": sorted(SITES.glob("*.yaml")), "scenario": sorted((ROOT / "scenarios").glob("*.yaml")),
             "sweep": sorted((ROOT / "sweeps").glob("*.yaml"))}
    assert all(len(f) >= 3 for f in files.values())
    wrong = [f"{p.name}: {language_of(load_file(p))}" for lang, ps in files.items() for p in ps if language_of(load_file(p)) != lang]
    assert wrong == []
