"""twin plan --write-spec: the site spec with the pick added as a workload of its own, inheriting the searched one
(``base:``), every byte of the original kept; the written spec validates and times the pick as the search did."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import ROOT, twin_in_process, unwrap
from twin.twins.plan import render

PLAN = {"tp": 8, "cp": 1, "pp": 16, "dp": 128, "ep": 1, "virtual_stages": 8, "micro_batch": 1, "recompute": "none", "zero": 1,
        "sequence_parallel": True, "fp8": "none", "dp_shard": None, "dims": "tp-cp-dp-pp"}


def res_of(workload: str, plan: dict) -> dict:
    return {"workload": workload, "gpus": 16384, "plans": [{"plan": plan, "label": "TP8 ...", "step_s": 6.3}]}


def inserted(before: str, after: str) -> list[str]:
    """The lines ``after`` adds to ``before``, checking that every line of ``before`` is kept in order."""
    a, b = before.splitlines(), after.splitlines()
    i = next(k for k in range(len(a) + 1) if k == len(a) or a[k] != b[k])
    added = len(b) - len(a)
    assert b[:i] == a[:i] and b[i + added:] == a[i:]
    return b[i:i + added]


def test_the_pick_is_appended_to_the_workloads_before_the_next_section():
    text = (ROOT / "sites" / "meta-24k-roce.yaml").read_text(encoding="utf-8")
    out, name = render.spec_with_pick(text, res_of("llama3-405b-16k", PLAN), {"llama3-405b-16k", "llama3-405b-8k", "llama3-405b-131k"})
    assert name == "llama3-405b-16k-plan"
    new = inserted(text, out)
    assert new[0].startswith("  # twin plan's pick") and "tp-cp-dp-pp" in new[1] and new[2] == "  - name: llama3-405b-16k-plan"
    doc = yaml.safe_load(out)
    w = doc["workloads"][-1]
    assert w == {"name": name, "base": "llama3-405b-16k", **{k: v for k, v in PLAN.items() if k not in ("dp_shard", "dims")}}
    assert "storage" in doc and doc["storage"] == yaml.safe_load(text)["storage"]  # the next section untouched
    # a name taken gets a number
    assert render.spec_with_pick(text, res_of("llama3-405b-16k", PLAN), {"llama3-405b-16k", name})[1] == "llama3-405b-16k-plan2"


def test_a_spec_without_a_block_list_of_workloads_is_refused():
    with pytest.raises(ValueError, match="no block list under workloads"):
        render.spec_with_pick("name: x\nworkloads: [{name: a}]\n", res_of("a", PLAN), {"a"})
    with pytest.raises(ValueError, match="no block list under workloads"):
        render.spec_with_pick("name: x\n", res_of("a", PLAN), {"a"})


def test_the_written_spec_times_the_pick_as_the_search_did(tmp_path):
    out = tmp_path / "lab-planned.yaml"
    r = twin_in_process("plan", ROOT / "sites" / "lab-2zone.yaml", "--top", "2", "--write-spec", out, "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    res = unwrap(r.stdout)
    name, pick = res["written_workload"], res["plans"][0]
    assert name == "lab-llama-8b-plan"
    new = inserted((ROOT / "sites" / "lab-2zone.yaml").read_text(encoding="utf-8"), out.read_text(encoding="utf-8"))
    assert pick["plan"]["dims"] == "tp-cp-pp-dp"  # the lab's pick keeps the default rank order a workload runs in
    assert len(new) == 1 + 2 + len(render.PLAN_FIELDS)  # the comment, name and base, the plan's fields
    sc = tmp_path / "s.yaml"
    sc.write_text(f"name: check\nrouting:\n  - {{name: site, scheme: site}}\njobs:\n  - {{workload: {name}}}\n")
    s = twin_in_process("simulate", out, "--scenario", sc, "--json")
    assert s.returncode == 0, s.stderr[-2000:]
    job = unwrap(s.stdout)["cases"][0]["jobs"][0]
    assert job["schemes"][0]["step_s"] == pytest.approx(pick["step_s"], rel=1e-6)
    assert job["parallelism"] == f"TP{pick['plan']['tp']} CP{pick['plan']['cp']} PP{pick['plan']['pp']} DP{pick['plan']['dp']}"


def test_write_spec_is_the_searchs_not_the_measured_checks(tmp_path):
    r = twin_in_process("plan", ROOT / "sites" / "lab-2zone.yaml", "--write-spec", tmp_path / "x.yaml", "--measured",
                        ROOT / "scenarios" / "megatron-sc21-table2-384.csv")
    assert r.returncode == 2 and "--write-spec" in r.stderr and "Traceback" not in r.stderr


def test_write_spec_never_overwrites_the_spec_it_searched(tmp_path):
    spec = tmp_path / "lab.yaml"
    text = (ROOT / "sites" / "lab-2zone.yaml").read_text(encoding="utf-8")
    spec.write_text(text, encoding="utf-8")
    r = twin_in_process("plan", spec, "--top", "2", "--write-spec", spec)
    assert r.returncode == 2 and "that is the spec searched" in r.stderr and "Traceback" not in r.stderr
    assert spec.read_text(encoding="utf-8") == text
