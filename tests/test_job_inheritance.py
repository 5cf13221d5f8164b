"""Workloads that inherit from a named base (twin/lang/site/workload_bases.py): the derived workload is its
base with the fields it sets, measured figures stay with their run, and a missing base or a loop of bases
is a located error."""

from __future__ import annotations

from pathlib import Path

from twin.compiler.resolve.validate import validate_text
from twin.lang.diagnostics import Severity

ROOT = Path(__file__).resolve().parents[1]
LAB = (ROOT / "sites" / "lab-2zone.yaml").read_text()
BASE = "  - name: lab-llama-8b "
DERIVED = ("  - {name: mb2, base: lab-llama-8b, micro_batch: 2, stragglers: {mean: 0.02}}\n"
           "  - {name: pp4, base: mb2, pp: 4, dp: 4, recompute: [mlp]}\n")


def site(extra: str, base_extra: str = "    measured_tflops_per_gpu: 400\n    stragglers: {distribution: exponential, mean: 0.01}\n"):
    text = LAB.rstrip("\n") + "\n" + base_extra + extra
    spec, diags = validate_text(text, "s.yaml")
    return text, spec, [d for d in diags if d.severity is Severity.ERROR]


def line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


def test_a_workload_is_its_base_with_what_it_sets():
    _, spec, errs = site(DERIVED)
    assert not errs, [e.format() for e in errs]
    base, mb2, pp4 = spec.site.workloads
    assert (mb2.base, pp4.base) == ("lab-llama-8b", "mb2")
    same = base.model_dump(exclude={"name", "base", "micro_batch", "stragglers", "measured_tflops_per_gpu", "pp", "dp", "recompute"})
    assert mb2.model_dump(include=set(same)) == same and pp4.model_dump(include=set(same)) == same
    assert (mb2.micro_batch, pp4.micro_batch, pp4.pp, pp4.dp, base.pp) == (2, 2, 4, 4, 2)
    # nested sections merge key by key (the distribution from the base, the mean from the workload); lists are replaced
    assert (mb2.stragglers.distribution, mb2.stragglers.mean, pp4.stragglers.mean) == ("exponential", 0.02, 0.02)
    assert base.recompute == "none" and pp4.recompute == ["mlp"]
    # a measurement belongs to the run it was taken on
    assert base.measured == 400 and mb2.measured is None and pp4.measured is None


def test_unknown_base_is_located_with_did_you_mean():
    text, spec, errs = site("  - {name: mb2, base: lab-lama-8b, micro_batch: 2}\n")
    assert spec is None and len(errs) == 1
    e = errs[0]
    assert (e.line, e.dotted) == (line_of(text, "base: lab-lama"), "workloads[1].base")
    assert "unknown base workload 'lab-lama-8b'" in e.message and "did you mean 'lab-llama-8b'" in e.expected


def test_a_loop_of_bases_is_located():
    text, spec, errs = site("  - {name: a, base: b}\n  - {name: b, base: a}\n  - {name: c, base: c}\n")
    assert spec is None and len(errs) == 2, [e.format() for e in errs]
    assert [(e.line, e.dotted) for e in errs] == [(line_of(text, "{name: b, base: a}"), "workloads[2].base"),
                                                  (line_of(text, "{name: c, base: c}"), "workloads[3].base")]
    assert "a -> b -> a" in errs[0].message and "c -> c" in errs[1].message


def test_an_error_in_an_inherited_value_points_at_the_base_and_names_the_workload():
    text, _, errs = site("  - {name: wide, base: mb2, hidden_size: 4100}\n" + DERIVED)
    assert len(errs) == 1, [e.format() for e in errs]
    e = errs[0]  # tp 8 comes from lab-llama-8b through mb2
    assert (e.line, e.dotted) == (line_of(text, "    tp: 8"), "workloads[0].tp")
    assert e.message.startswith("workload wide (base mb2): hidden size 4100 does not split over TP8")
