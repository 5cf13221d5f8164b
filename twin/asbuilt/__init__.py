"""``twin as-built``: the cluster's own neighbour tables held against the plan of a generated folder.

``check(generated, inputs)`` reads the plan (:mod:`twin.asbuilt.plan`, untrusted: every file checked),
gathers the neighbour files into claims (:mod:`twin.asbuilt.collect`: lldpd and EOS JSON, ibnetdiscover)
and matches them (:mod:`twin.asbuilt.match`) into findings (:mod:`twin.asbuilt.findings`);
:mod:`twin.asbuilt.report` writes the terminal summary, the work order and the JSON document.
"""

from __future__ import annotations

from pathlib import Path


def check(generated: Path, inputs: list[Path], check_speed: bool = True):
    """(result or None, diagnostics, errors): None when the plan itself cannot be read (nothing is
    checked then); otherwise every readable neighbour file is checked even when others are bad."""
    from twin.asbuilt.collect import collect
    from twin.asbuilt.match import analyse
    from twin.asbuilt.plan import load

    plan, problems = load(generated)
    if plan is None:
        return None, problems.items, problems.errors
    col = collect(plan, inputs)
    diags = problems.items + col.problems.items
    return analyse(col, check_speed), diags, problems.errors + col.problems.errors
