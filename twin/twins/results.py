"""What the twins hand to the renderers and the analysis: the build's default run and a scenario run.

The build (:mod:`twin.build`) runs the twins once and passes a :class:`Runs` down; the report, its
pictures and review.json read it and never run a twin themselves. Every result document carries
``SCHEMA_VERSION`` (``schemas/twin-results.schema.json`` describes them).
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = "1"  # of review.json and the twins' JSON (twin simulate --json, the default run)


@dataclass(frozen=True)
class Runs:
    """The twins' results for one build: ``default`` (:func:`twin.twins.default.design_results`, None
    where the design has no routed GPUs) and ``scenario`` ((scenario file, result data) of a scenario run
    with the build, or None)."""

    default: dict | None = None
    scenario: tuple[str, dict] | None = None
