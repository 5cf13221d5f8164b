"""The figures a design review compares: what a site change means in reviewers' terms.

:func:`figures` reads a Design (and the build's twin runs) and answers with one row per figure (group,
key, label, value, unit), every figure of the registry (:mod:`twin.analysis.registry`) the inputs give:
GPUs, servers, switches per tier, links and oversubscription per tier boundary, ECMP widths, cables,
optics and cable km, power per level and its headroom, placement objective and gap, capex and energy,
the build's default twin run (busbw, link load, the job's step) and a scenario run with the build (job,
campaign, power twin). Every build writes them as ``review.json``, so ``twin diff`` compares a spec with
a built folder, or two folders, figure by figure without recompiling what was built.
"""

from __future__ import annotations

import json

from twin.analysis.registry import Inputs, rows
from twin.compiler.design import Design
from twin.twins.results import SCHEMA_VERSION

Row = dict  # {"group", "key", "label", "value", "unit"}


def figures(d: Design, twin_results: dict | None = None, scenario: dict | None = None) -> list[Row]:
    """Every review figure of ``d`` in display order (``twin_results``: the build's default twin run,
    :func:`twin.twins.default.design_results`; ``scenario``: the data of a scenario run with the build)."""
    return rows(Inputs(d, twin_results, scenario))


def dumps(rows: list[Row], risks: list[dict] | None = None) -> bytes:
    """``review.json`` (written by the report emitter, which has the twin's results at hand): the figures
    and the verdicts (``risks``, :func:`twin.analysis.verdicts.Verdict.to_json`), which ``twin diff`` compares."""
    doc = {"schema_version": SCHEMA_VERSION, "figures": rows, **({"risks": risks} if risks is not None else {})}
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8")
