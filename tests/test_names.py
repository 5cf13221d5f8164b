"""Names and free text are data, never syntax: a catalog's port_name, hall names and free text are
checked at validation against what their targets accept, with a located error.

What a wrong implementation gets wrong: a newline in port_name that reaches the FRR and EOS templates
(the issue: 96 `router bgp` blocks in one file, exit 0), a NUL that ends in a traceback, a '/' that
SONiC and Linux refuse as an interface name, a 16-byte name Linux truncates (IFNAMSIZ), hostnames
beyond one DNS label, a description a spreadsheet runs as a formula.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from twin.compiler.resolve.targets import IFNAMSIZ, port_name_problem
from twin.compiler.resolve.validate import validate_text
from twin.lang.catalog import builtin
from twin.lang.site.catalog_models import SwitchModel

ROOT = Path(__file__).resolve().parents[1]
LAB = (ROOT / "sites" / "lab-2zone.yaml").read_text()
MINIPACK2 = yaml.safe_load((ROOT / "twin" / "lang" / "catalog" / "builtin.yaml").read_text())["switches"]["minipack2"]


def with_port_name(port_name: str) -> str:
    """lab-2zone with the built-in minipack2 overridden by a copy whose port_name is ``port_name``."""
    entry = dict(MINIPACK2, port_name=port_name)
    return LAB + yaml.safe_dump({"catalog": {"switches": {"minipack2": entry}}}, sort_keys=False, width=4096)


def errors(text: str) -> list[str]:
    spec, diags = validate_text(text, "s.yaml")
    return [d.format() for d in diags if d.severity.value == "error"]


def port_name_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith("port_name:"))


@pytest.mark.parametrize("port_name, words", [
    ("Ethernet{n0_step}\n router bgp 65000", "'\\n', ' ' not allowed"),  # the injection
    ("Ethernet{n0_step}\x00", "'\\x00' not allowed"),  # the traceback
    ("Ethernet{n0_step};reboot", "';' not allowed"),
    ("Eth{n0_step}/1", "is not a Linux interface name (SONiC ports are): no '/'"),
    ("EthernetPorts{n0_step}", "port 64 is 'EthernetPorts504', 16 bytes; Linux interface names (FRR, SONiC) hold at most 15"),
    ("=Ethernet{n0_step}", "'=' not allowed"),
    ("x" * 41 + "{n}", "44 characters; at most 40"),
])
def test_port_names_that_break_a_config_are_located(port_name, words):
    text = with_port_name(port_name)
    errs = errors(text)
    assert len(errs) == 1 and words in errs[0], errs
    assert errs[0].startswith(f"s.yaml:{port_name_line(text)}:") and "catalog.switches.minipack2.port_name" in errs[0]


def test_a_newline_in_port_name_builds_nothing(tmp_path):
    """The issue's known answer through the CLI: exit 2 at the line, no config written (not one gains a line)."""
    site = tmp_path / "inject.yaml"
    text = with_port_name("Ethernet{n0_step}\n router bgp 65000\n")
    site.write_text(text)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "twin", "build", str(site), "-o", str(out)], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 2 and f"{site}:{port_name_line(text)}:" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_every_builtin_switch_names_its_ports_as_its_targets_allow():
    """EOS takes 'Ethernet576/1' (FRR's Linux name 'Ethernet576_1' is 13 bytes); SONiC 'Ethernet504'."""
    for name, sw in builtin().switches.items():
        assert port_name_problem(sw) is None, name
    arista = builtin().switches["arista-7800r3"]
    assert arista.port_name == "Ethernet{cage}/1" and len("Ethernet576_1") < IFNAMSIZ


def test_a_port_name_that_names_two_ports_alike_is_refused_where_it_is_written():
    with pytest.raises(ValueError, match="gives two ports the same name"):
        SwitchModel.model_validate({**{k: v for k, v in MINIPACK2.items() if k != "port_map"}, "port_name": "eth"})


@pytest.mark.parametrize("key, value, where, words", [
    ("description", '=HYPERLINK("http://x") Lab', "description", "text starting with '=' is a formula to a spreadsheet"),
    ("description", "@SUM(A1)", "description", "text starting with '@'"),
    ("description", "Lab\u202e AI-zone Clos", "description", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ("description", "Lab\n router bgp 1\n", "description", "U+000A"),
    ("  - name", "a" * 44, "halls[0].name", "its switches' names (hostnames) would pass 63"),
])
def test_free_text_and_names_are_data(key, value, where, words):
    lines = LAB.splitlines()
    line = next(i for i, x in enumerate(lines, 1) if x.startswith(key + ":"))
    lines[line - 1] = f"{key}: {json.dumps(value)}"
    errs = errors("\n".join(lines) + "\n")
    assert len(errs) == 1 and f" {where}:" in errs[0] and words in errs[0], errs
    assert errs[0].startswith(f"s.yaml:{line}:")
