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

# What a bare number in a --json document is in (twin/cli/envelope.py declares it once per document)
UNITS = {"power": "W", "energy": "J", "time": "s", "data": "B", "rate": "bit/s", "length": "m", "money": "USD",
         "temperature": "degC", "share": "1 (a fraction, not a percentage)",
         "rule": "SI unless the field's name ends in another unit (peak_W, cable_km, busbw_GBps) or its row carries a unit field"}


@dataclass(frozen=True)
class Runs:
    """The twins' results for one build: ``default`` (:func:`twin.twins.default.design_results`, None
    where the design has no routed GPUs) and ``scenario`` ((scenario file, result data) of a scenario run
    with the build, or None)."""

    default: dict | None = None
    scenario: tuple[str, dict] | None = None
    scenario_sha256: str | None = None  # of the scenario file, as the manifest records it
    power_views: dict | None = None  # the power twin's arrays (traces, spectrum) of the scenario run, for the report's pictures
    named_files: tuple[tuple[str, str], ...] = ()  # (name, sha256) of each file the scenario names (a weather CSV)
    default_error: str | None = None  # why the default run could not run (one line; ``default`` is then None)


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


class Risk(BaseModel):
    """One verdict (twin/analysis/verdicts.py): a check of the design or its twins and its outcome."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str = Field(description="stable key of the check, e.g. lossless.route.b2-b3")
    check: str = Field(description="what is checked, in words")
    status: Literal["pass", "warn", "fail"] = Field(description="fail: over the limit; warn: at 90% of it or more, or a spec warning")
    severity: Literal["high", "medium", "low"] = Field(description="how much a failure of this check matters")
    value: str = Field(description="the measured figure, with its unit")
    limit: str = Field(description="what it is held against, with its unit")
    section: str = Field(description="the report section that shows it")
    link: str = Field(description="report.html#<id> of that section")
    where: str = Field(description="FILE:LINE:COL of the spec or scenario line that states the limit (file name only), or ''")
    source: Literal["design", "twin"] = Field(description="the design alone, or a twin run (a scenario)")
    group: str | None = Field(None, description="a check made per hall or per route: the check without its instance, the same for every instance (the report's grouped row)")
    instance: str | None = Field(None, description="with group: which hall or route this one is of")
    was: str | None = Field(None, description="twin diff only: the status on the old side (null: not checked there)")
    spec: str | None = Field(None, description="twin validate only: the spec file the verdict is of")


class ReviewDocument(_Doc):
    """review.json: every figure a design review compares (written by every build)."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="review.json")
    schema_version: Literal["1"] = Field(description="version of this document's schema")
    figures: list[Figure]
    risks: list[Risk] | None = Field(None, description="every verdict of the build, worst first (absent in folders built before them)")


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
    cluster: dict | None = Field(None, description="the cluster twin's results (scenario cluster:): GPU-time buckets, counts, per job size class")
    risks: list[Risk] | None = Field(None, description="every verdict of the design and this run, worst first")


class Envelope(BaseModel):
    """Every command's ``--json``: the same six fields round the command's own document."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="twin --json")
    tool: Literal["twin"] = Field(description="always twin")
    version: str = Field(description="the tool's version")
    command: str = Field(description="the sub-command, as typed after twin: build, simulate, netbox push, ...")
    status: str = Field(description="the command's outcome in one word: ok, fail (a verdict fails), accepted (fails accepted with "
                        "--accept-risks), invalid, infeasible, not written, changed, same, stale, written, done, interrupted, error, ...")
    units: dict[str, str] = Field(description="the unit of a bare number, declared once")
    risks: list[Risk] = Field(description="the verdicts, worst first (build, simulate, validate, diff); empty for other commands")
    result: dict[str, Any] = Field(description="the command's own document (for simulate: the document of twin-results.schema.json)")


def versioned(data: dict) -> dict:
    """``data`` with the schema version first (every result document goes out through here)."""
    return {"schema_version": SCHEMA_VERSION, **{k: v for k, v in data.items() if k != "schema_version"}}
