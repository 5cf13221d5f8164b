"""Every command's --json is one envelope ({tool, version, command, status, units, risks, result},
twin/cli/envelope.py), valid against the published schemas/twin-output.schema.json, with the units
declared once and the same in every command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from twin.twins.results import UNITS
from twin.version import __version__

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test extra (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parents[1]
LAB = "sites/lab-2zone.yaml"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "twin", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_quick_commands_print_the_envelope(tmp_path):
    """schema --check, a diff of a folder with itself and an invalid spec: the envelope, valid against the
    published schema, with the command's own status word."""
    v = jsonschema.Draft202012Validator(json.loads((ROOT / "schemas" / "twin-output.schema.json").read_text(encoding="utf-8")))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [\n")
    for args, code, status in ((("schema", "--check", "--json"), 0, "ok"), (("diff", "generated/lab-2zone", "generated/lab-2zone", "--json"), 0, "same"),
                               (("validate", str(bad), "--json"), 2, "invalid")):
        r = cli(*args)
        assert r.returncode == code, (args, r.stderr[-1500:])
        env = json.loads(r.stdout)
        assert not [e.message for e in v.iter_errors(env)], args
        assert (env["command"], env["status"], env["units"], env["version"]) == (args[0], status, UNITS, __version__)
    # an envelope that lacks a field, or a risk with a status twin does not write, is refused by the schema
    assert list(v.iter_errors({k: x for k, x in env.items() if k != "units"}))
    risk = {"key": "k", "check": "c", "status": "maybe", "severity": "high", "value": "", "limit": "", "section": "", "link": "",
            "where": "", "source": "design"}
    assert list(v.iter_errors({**env, "risks": [risk]})) and not list(v.iter_errors({**env, "risks": [{**risk, "status": "fail"}]}))


@pytest.mark.slow
def test_every_command_prints_the_envelope(tmp_path):
    """Slow for a build, a simulation and a validate that compiles: each command once, the same envelope."""
    schema = json.loads((ROOT / "schemas" / "twin-output.schema.json").read_text(encoding="utf-8"))
    v = jsonschema.Draft202012Validator(schema)
    runs = {
        "validate": (cli("validate", LAB, "--json"), 0, "ok"),
        "build": (cli("build", LAB, "-o", str(tmp_path / "b"), "--json"), 0, "ok"),
        "schema": (cli("schema", "--check", "--json"), 0, "ok"),
        "diff": (cli("diff", "generated/lab-2zone", str(tmp_path / "b"), "--json"), 0, "same"),
        "simulate": (cli("simulate", LAB, "-s", "scenarios/allreduce-sweep.yaml", "--json"), 0, "ok"),
    }
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [\n")
    runs["validate-bad"] = (cli("validate", str(bad), "--json"), 2, "invalid")
    for name, (r, code, status) in runs.items():
        assert r.returncode == code, (name, r.stderr[-1500:])
        env = json.loads(r.stdout)
        assert not [e.message for e in v.iter_errors(env)], name
        assert env["command"] == name.split("-")[0] and env["status"] == status and env["version"] == __version__, (name, env["status"])
        assert env["units"] == UNITS  # declared once, the same for every command
    build = json.loads(runs["build"][0].stdout)
    # the design's verdicts ride in the envelope, not in the result
    # (lab-2zone's 14 checks: the site's utility power counts the optics since the BOM's watts joined the
    # budget, so there is no separate "with optics" check)
    assert "risks" not in build["result"] and len(build["risks"]) == 14 and {x["status"] for x in build["risks"]} == {"pass"}
    assert not [x for x in build["risks"] if "optics" in x["key"]]
    # a link speed is a number in the declared unit (bit/s), not a string with a unit
    assert build["result"]["shape"]["boundaries"][0]["speed"] == 400e9
    # an envelope that lacks a field, or a risk with a status twin does not write, is refused by the schema
    assert list(v.iter_errors({k: x for k, x in build.items() if k != "units"}))
    assert list(v.iter_errors({**build, "risks": [{**build["risks"][0], "status": "maybe"}]}))


@pytest.mark.parametrize("as_json", [False, True])
def test_running_out_of_memory_is_one_line_and_exit_2_never_a_traceback(as_json):
    """A cost no limit refused first (the plan search at a million GPUs once ran out so, through its workers)
    is said once, as a refused cost is: exit 2, one line (or the envelope with --json), no traceback."""
    code = ("import sys\nimport twin.cli.plan as p\n"
            "def boom(*a, **k):\n    raise MemoryError('Unable to allocate 1.43 GiB')\n"
            "p.run_plan = boom\nfrom twin.cli.app import main\n"
            f"sys.argv = ['twin', 'plan', 'sites/lab-2zone.yaml'{', ' + repr('--json') if as_json else ''}]\nmain()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    if as_json:
        env = json.loads(r.stdout)
        assert env["status"] == "invalid" and env["command"] == "plan" and "ran out of memory" in env["result"]["error"]
    else:
        assert "twin plan: ran out of memory: Unable to allocate 1.43 GiB" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
