"""A switch model names its config target in the catalog (``config``); the targets are the registry
twin/lang/site/config_targets.py. Nothing is guessed from the vendor: a missing or misfitting target is a
located error, and the files a switch gets follow the target it names."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

from conftest import ROOT, SITES

from twin.compiler import pipeline
from twin.compiler.resolve.validate import validate_text
from twin.emit import configs, configs_ib
from twin.lang.catalog import builtin
from twin.lang.diagnostics import Severity
from twin.lang.site.config_targets import TARGETS, config_target

LAB = (SITES / "lab-2zone.yaml").read_text().replace("    rtsw: minipack2\n", "    rtsw: tor\n")


def tor(vendor: str, config: str | None, technology: str = "ethernet") -> str:
    """lab-2zone with its rack switch a site catalog model ``tor`` (the CTSWs and ATSWs stay Minipack2)."""
    lines = ["catalog:", "  switches:", "    tor:", f"      vendor: {vendor}", f"      technology: {technology}"]
    lines += [f"      config: {config}"] if config is not None else []
    name = "Ethernet{n}" if config == "sonic" else "Ethernet{n}/1"  # SONiC's ports are Linux interfaces: no '/'
    lines += ["      ports: 64", "      port_speed: 400 Gbit/s", f'      port_name: "{name}"', "      power: 1 kW",
              "      latency: 1 us", "      height_u: 2", "      weight: 15 kg", "      source: assumed"]
    return LAB + "\n".join(lines) + "\n"


def errors(text: str):
    _, diags = validate_text(text, "s.yaml")
    return [d for d in diags if d.severity is Severity.ERROR]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def config_files(text: str, tmp_path) -> Counter:
    """Config files per folder of configs/ (frr, sonic, eos, opensm) for the site ``text``."""
    p = tmp_path / "s.yaml"
    p.write_text(text)
    d = pipeline.compile_design(p, until="intent", placement_method="naive")
    files = {**configs.emit(d), **configs_ib.emit(d)}
    return Counter(f.split("/")[1] for f in files if f != "configs/frr/topology.json")


def test_a_switch_model_without_a_config_target_is_a_located_error(tmp_path):
    """In a file of the current site language (version 2); a file without a version was written before
    config: was required and is read as version 1 read it (tests/test_versions.py)."""
    text = "version: 2\n" + tor("Cisco", None)
    (e,) = errors(text)
    assert (e.line, e.col) == (line_of(text, "vendor: Cisco"), 7)  # the model's mapping, where the field is missing
    assert e.dotted == "catalog.switches.tor.config" and e.message == "missing required field 'config'"
    assert e.expected == "one of: sonic, eos, opensm, none"
    p = tmp_path / "s.yaml"
    p.write_text(text)
    r = subprocess.run([sys.executable, "-m", "twin", "validate", str(p)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and f"{p}:{e.line}:" in r.stderr and "Traceback" not in r.stderr


def test_a_target_for_another_technology_is_a_located_error():
    text = tor("NVIDIA", "eos", technology="infiniband")
    e = next(e for e in errors(text) if e.dotted == "catalog.switches.tor.config")
    assert e.line == line_of(text, "config: eos")
    assert "configures ethernet switches, not infiniband ones" in e.message and "opensm, none" in e.message


def test_the_vendor_is_never_read(tmp_path):
    """lab-2zone: 8 RTSWs (the model ``tor``), 8 CTSWs and 2 ATSWs (Minipack2: SONiC). An Arista-made tor
    that names no target gets FRR only (and needs no port map); a Cisco-made tor that names eos gets
    EOS; nothing changes with the vendor."""
    none = config_files(tor("Arista", "none"), tmp_path)
    assert none == {"frr": 18, "sonic": 10}
    eos = config_files(tor("Cisco", "eos"), tmp_path)
    assert eos == {"frr": 18, "eos": 8, "sonic": 10}
    # a SONiC tor without a port map: everything builds but its SONiC configs, with a located warning at the
    # rack type's rtsw (issue 27: a capacity plan is not refused for a config it does not need yet)
    text = tor("Arista", "sonic")
    assert not [e for e in errors(text) if "port_map" in e.message]
    _, diags = validate_text(text, "s.yaml")
    w = next(d for d in diags if d.severity is Severity.WARNING and "port_map" in d.message)
    assert w.line == line_of(text, "rtsw: tor") and "its SONiC config_db.json needs each port's lanes" in w.message


def test_the_registry_and_its_writers_agree():
    """Each target is written by exactly one means: a template folder with a template per routed role
    (and its shared snippets), a builder, or the subnet manager; every built-in switch names one."""
    roles = {"rtsw", "ctsw", "atsw", "cssw"}
    assert set(configs.FRR_TEMPLATE) == roles
    for t in TARGETS:
        means = [t.template is not None, t.name in configs.BUILDERS, t.subnet]
        assert sum(means) == (t.folder is not None), t.name
        if t.template is not None:
            folder = ROOT / "templates" / t.folder
            assert {p.name for p in folder.glob(f"*.{t.template}.j2")} == {f"{r}.{t.template}.j2" for r in roles}
            assert all((folder / f"{s}.j2").is_file() for s in t.shared)
    assert config_target(configs_ib.TARGET).subnet
    assert {m: s.config for m, s in builtin().switches.items()} == {
        "minipack2": "sonic", "wedge400": "sonic", "arista-7800r3": "eos", "qm9700": "opensm", "qm8700": "opensm",
        "q3400": "opensm", "sn5600": "sonic", "sn5600-2x400g": "sonic"}
    assert all(s.technology in config_target(s.config).technologies for s in builtin().switches.values())
