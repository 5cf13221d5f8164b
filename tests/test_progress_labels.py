"""Progress that tells the truth: every long step of simulate, build --scenario, diff and a sweep is shown
under its own label (issue 27, part 3), in the order the work runs.

The labels are recorded from the real code paths (the CLI's ``simulate_steps``, the build's
``render_all`` with a scenario, the diff's sides and comparison): an implementation that shows one
generic label ("simulating") for the whole run, or lets the power twin run under the job's label, has
none of the twin-specific labels below and fails. Nothing here is timed.
"""

from __future__ import annotations

import pytest

from twin.build import render_all
from twin.cli.simulate import simulate_steps
from twin.diff.compare import compare, side
from twin.sweep.engine import running_label


def subsequence(labels: list[str], wanted: list[str]) -> list[str]:
    """The wanted prefixes not found in order in ``labels`` (empty: all found, in that order)."""
    it = iter(labels)
    return [w for w in wanted if not any(label.startswith(w) for label in it)]


def test_simulate_labels_each_twin_step(root):
    labels: list[str] = []
    _design, result, risks = simulate_steps(root / "sites" / "lab-2zone.yaml", root / "scenarios" / "lab-twins.yaml", labels.append)
    assert result.data["power"] and result.data["campaign"] and risks
    missing = subsequence(labels, [
        "read the scenario lab-twins.yaml", "compile lab-2zone.yaml", "compile: validate and budget", "compile: placement",
        "compile: fabric", "compile: cabling", "compile: bom", "compile: addressing", "simulate lab-twins",
        "the fabric's paths and links", "check the scenario's references", "baseline: job lab-llama-8b", "campaign: the job's step time", "campaign: 100 runs of 7 days",
        "power: the site's draw", "power: the trace", "power: busways and UPS blocks", "verdicts"])
    assert missing == [], labels
    assert "compile: intent" not in labels  # no one in simulate reads the config intent: it is never compiled
    # the power twin's steps are not shown under the job's label: after the job the labels move on
    job = labels.index("baseline: job lab-llama-8b")
    assert len(set(labels[job + 1:])) >= 8


def test_build_with_a_scenario_labels_the_scenario_twins_and_each_emitter(root):
    labels: list[str] = []
    r = render_all(root / "sites" / "lab-2zone.yaml", root / "scenarios" / "lab-power-smoothing.yaml", labels.append)
    assert "report.md" in r.files
    s = "scenario lab-power-smoothing.yaml: "
    missing = subsequence(labels, [
        "read the scenario lab-power-smoothing.yaml", "validate and budget", "placement", "intent", "default twin: AllReduce over", "default twin: job lab-llama-8b",
        s + "power: the site's draw", s + "power: the trace", s + "power: busways", s + "power: mitigation: GPU power floor",
        s + "power: mitigation: GPU ramp-rate limit", s + "power: mitigation: power-shelf storage", "verdicts",
        "emit: report", "emit: design.json", "emit: bill of materials", "emit: switch configs: FRR",
        "emit: switch configs: SONiC, EOS, first half of the switches", "emit: switch configs: SONiC, EOS, second half of the switches",
        "emit: NetBox set"])
    assert missing == [], labels


def test_diff_labels_each_side_and_the_comparison(root):
    labels: list[str] = []
    one = side(root / "sites" / "lab-2zone.yaml", None, lambda m: labels.append(f"new {m}"))
    res = compare(one, one, labels.append)
    assert res.empty
    missing = subsequence(labels, ["new lab-2zone.yaml: validate and budget", "new lab-2zone.yaml: placement",
                                   "new lab-2zone.yaml: default twin", "new lab-2zone.yaml: emit: report",
                                   "compare the artifacts", "compare the configs per role"])
    assert missing == [], labels


def test_sweep_label_names_the_variants_done_and_running():
    class V:
        def __init__(self, label):
            self.label = label

    todo = {"a": V("oversubscription=2"), "b": V("oversubscription=4"), "c": V("oversubscription=8")}
    assert running_label(todo, dict.fromkeys(todo)) == "running oversubscription=2 +2"
    assert running_label(todo, {"c": None}, "oversubscription=2") == "done oversubscription=2; running oversubscription=8"
    assert running_label(todo, {}, "oversubscription=8") == "done oversubscription=8"


@pytest.mark.parametrize("wrong", [["simulating"] * 5, ["case baseline", "baseline: job lab-llama-8b"]])
def test_the_check_fails_a_generic_label(wrong):
    assert subsequence(wrong, ["baseline: job lab-llama-8b", "power: the site's draw", "verdicts"]) != []
