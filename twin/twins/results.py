"""What the twins hand to the renderers and the analysis, and the documents they publish.

The build (:mod:`twin.build`) runs the twins once and passes a :class:`Runs` down; the report, its
pictures and review.json read it and never run a twin themselves. Every result document carries
``schema_version`` = :data:`SCHEMA_VERSION`; ``schemas/twin-results.schema.json`` (written by
``twin schema`` from the models below) describes review.json and ``twin simulate --json``. A reader
checks the version before it reads anything else; a change that renames or removes a field bumps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1"


@dataclass(frozen=True)
class Runs:
    """The twins' results for one build: ``default`` (:func:`twin.twins.default.design_results`, None
    where the design has no routed GPUs) and ``scenario`` ((scenario file, result data) of a scenario run
    with the build, or None)."""

    default: dict | None = None
    scenario: tuple[str, dict] | None = None
    power_views: dict | None = None  # the power twin's arrays (traces, spectrum) of the scenario run, for the report's pictures


class _Doc(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Figure(BaseModel):
    """One figure of a design review."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    group: str = Field(description="compute, fabric, cabling, power, placement, cost, twin, job, campaign, power twin")
    key: str = Field(description="stable key a diff or a sweep compares by, named in twin/analysis/registry.py, e.g. switches or switches.atsw")
    label: str = Field(description="what the figure is, in words")
    value: Any = Field(description="a number, or a word (solver status)")
    unit: str = Field(description="the unit of value ('' for counts)")


class ReviewDocument(_Doc):
    """review.json: every figure a design review compares (written by every build)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="review.json")
    schema_version: Literal["1"] = Field(description="version of this document's schema")
    figures: list[Figure]


class SimulateDocument(_Doc):
    """``twin simulate --json``: a scenario run on a compiled design (and the scenario section of a
    build run with ``--scenario``). Cases hold collectives (nccl-tests-shaped tables per routing
    scheme), jobs (step breakdowns) and serving; ``campaign`` and ``power`` hold the reliability and
    power twins' results when the scenario runs them."""

    model_config = ConfigDict(extra="allow", frozen=True, title="twin simulate --json")
    schema_version: Literal["1"] = Field(description="version of this document's schema")
    scenario: str = Field(description="the scenario's name")
    site: str = Field(description="the site's name")
    gpus: int = Field(description="GPUs of the compiled design")
    schemes: list[dict] = Field(description="routing schemes: name, kind, QPs")
    cases: list[dict] = Field(description="per case: collectives, jobs, serving")
    notes: list[str] = Field(description="what the run assumed")
    campaign: dict | None = Field(None, description="the reliability twin's results (scenario campaign:)")
    power: dict | None = Field(None, description="the power and thermal twin's results (scenario power:)")


def versioned(data: dict) -> dict:
    """``data`` with the schema version first (every result document goes out through here)."""
    return {"schema_version": SCHEMA_VERSION, **{k: v for k, v in data.items() if k != "schema_version"}}
