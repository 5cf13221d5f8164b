"""Catalog figures and job fields checked for physical sense (issue 38): each reproducer of the issue is a
located error with the field's range, never a traceback, a run without end or a figure of the wrong sign.
The ranges are the field reference's (schemas/reference.md, generated from the models)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import Severity, SpecError

ROOT = Path(__file__).resolve().parents[1]
LAB = yaml.safe_load((ROOT / "sites" / "lab-2zone.yaml").read_text(encoding="utf-8"))
BUILTIN = yaml.safe_load((ROOT / "twin" / "lang" / "catalog" / "builtin.yaml").read_text(encoding="utf-8"))


def lab(chassis: dict | None = None, kernels: dict | None = None, job: dict | None = None) -> str:
    """lab-2zone with its chassis as a catalog entry of its own (the built-in Grand Teton with
    ``chassis`` and ``kernels`` changed) and its job with ``job`` changed."""
    doc = copy.deepcopy(LAB)
    if chassis or kernels:
        entry = copy.deepcopy(BUILTIN["chassis"]["grand-teton-h100"])
        entry.update(chassis or {})
        entry["kernels"].update(kernels or {})
        doc["catalog"] = {"chassis": {"gt-test": entry}}
        doc["rack_types"][doc["fabric"]["rack_type"]]["chassis"] = "gt-test"
    doc["workloads"][0].update(job or {})
    return yaml.safe_dump(doc, sort_keys=False)


CASES = [  # (the issue's reproducer, the text, where, what the message says)
    ("gpu_tdp 0 W (an IndexError in validate, build and simulate)", lab({"gpu_tdp": "0 W"}), "gt-test.gpu_tdp", "> 0 W, <= 10 kW"),
    ("gpu_tdp 1e30 W (ran past 90 s)", lab({"gpu_tdp": "1e30 W"}), "gt-test.gpu_tdp", "'1e30 W' is out of range"),
    ("an infinite GEMM dimension (ZeroDivisionError)", lab(kernels={"gemm_half_dim": float("inf")}), "kernels.gemm_half_dim", "inf is not a finite number"),
    ("a negative HBM bandwidth (a negative step time, exit 0)", lab({"hbm_bandwidth": "-3.35 TB/s"}), "gt-test.hbm_bandwidth", "> 0 bit/s"),
    ("a negative NVLink bandwidth (NaN)", lab({"nvlink_bandwidth": "-3600 Gbit/s"}), "gt-test.nvlink_bandwidth", "> 0 bit/s"),
    ("gpu_memory 0 B (the memory check off)", lab({"gpu_memory": "0 B"}), "gt-test.gpu_memory", "> 0 B, <= 10 TB"),
    ("parameters .inf", lab(job={"parameters": float("inf")}), "workloads[0].parameters", "inf is not a finite number"),
    ("a negative grad_bucket", lab(job={"grad_bucket": "-1 MiB"}), "workloads[0].grad_bucket", "> 0 B"),
    ("true for an integer", lab(job={"layers": True}), "workloads[0].layers", "true is a yes/no, not a number"),
    ("a huge hidden size", lab(job={"hidden_size": 10**20}), "workloads[0].hidden_size", "1000000"),
    ("a throughput curve above TDP", lab({"perf_vs_power": [[0.5, 0.8], [1.0, 1e20]]}), "perf_vs_power[1][1]", "less than or equal to 1"),
]


@pytest.mark.parametrize("why, text, where, says", CASES, ids=[c[0] for c in CASES])
def test_nonsense_is_a_located_error(why, text, where, says):
    spec, diags = validate_text(text, "s.yaml")
    errors = [d for d in diags if d.severity is Severity.ERROR]
    assert spec is None and len(errors) == 1, [d.format() for d in diags]
    line = errors[0].format()
    assert line.startswith("s.yaml:") and errors[0].line >= 1 and where in line and (says in line or says in line.replace(",", "")), line


def test_validate_exits_2_with_one_line(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(lab({"gpu_tdp": "0 W"}), encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "twin", "validate", str(p)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[0].startswith(f"{p}:") and "gpu_tdp: '0 W' is out of range: expected a power > 0 W, <= 10 kW" in res.stderr


def test_every_shipped_site_is_inside_the_ranges():
    """The bounds have room for every real entry: the built-in catalog and every example site validate."""
    for site in sorted((ROOT / "sites").glob("*.yaml")):
        _spec, diags = validate_text(site.read_text(encoding="utf-8"), str(site))
        assert not [d.format() for d in diags if d.severity is Severity.ERROR], site


def test_reference_prints_the_ranges():
    ref = (ROOT / "schemas" / "reference.md").read_text(encoding="utf-8")
    for row in ("| `gpu_tdp` | power (`700 W`); > 0 W, <= 10 kW |", "| `gpu_memory` | data size (`64 MiB`) (optional); > 0 B, <= 10 TB |",
                "| `hidden_size` | int; >= 1, <= 1,000,000 |", "| `gemm_half_dim` | float; > 0, <= 1,000,000 |"):
        assert row in ref, row


def _sweep(tmp_path: Path, **changes) -> Path:
    doc = yaml.safe_load((ROOT / "sweeps" / "lab-oversubscription.yaml").read_text(encoding="utf-8"))
    doc["site"] = str(ROOT / "sites" / "lab-2zone.yaml")
    doc.update(changes)
    p = tmp_path / "sw.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return p


@pytest.mark.parametrize("changes, says", [
    ({"job": 10**19}, "job: '10000000000000000000' is out of range"),  # a job index of twenty digits, accepted silently
    ({"job": 2}, "job: job 2 of a scenario with 1 job(s)"),
    ({"axes": [{"path": "power.pue", "range": {"from": -1e308, "to": 1e308, "step": 1}}]}, "infinitely many values"),  # was an OverflowError
])
def test_sweep_values_out_of_their_domain(tmp_path, changes, says):
    from twin.sweep.load import load_sweep

    p = _sweep(tmp_path, **changes)
    with pytest.raises(SpecError) as e:
        load_sweep(p, root="/")
    lines = [d.format() for d in e.value.diagnostics]
    assert len(lines) == 1 and lines[0].startswith(f"{p}:") and says in lines[0], lines
