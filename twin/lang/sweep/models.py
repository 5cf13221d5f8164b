"""The sweep language: a base site, a scenario, axes of overrides, the figures to collect.

Example::

    name: lab-oversubscription
    site: ../sites/lab-2zone.yaml              # relative to this file (outside its folder: twin sweep --root)
    scenario: ../scenarios/lab-job.yaml        # or an inline mapping; optional
    placement: naive                           # spec (default), naive or optimize: sets placement.method
    axes:                                      # variants = the product of the axes, first axis slowest
      - path: fabric.atsw.oversubscription     # any site path; scenario paths start with "scenario."
        values: ["1:1", "2:1", "4:1"]
      - path: rack_types.gt-rack.gpu_power_cap
        range: {from: 500 W, to: 700 W, step: 100 W}
      - zip:                                   # lists taken together, item by item
          fabric.ctsw.count: [2, 4]
          fabric.rtsw.uplinks: [8, 16]
        labels: [2-ctsw, 4-ctsw]
    figures: [capex, step_time_s, tokens_per_day_per_dollar]   # default: cost and what the twins give
    job: 1                                     # the scenario's job that gives job figures
    scheme: e-ecmp-16qp                        # its routing scheme (default: the first)

The files it names are YAML files relative to the sweep file, inside its folder unless the user widens
it (``twin sweep --root DIR``). Every problem is reported at its place in the sweep file (``FILE:LINE:COL``): an unknown path (with
"did you mean"), an entry the base site lacks, a value its field refuses (a wrong unit, out of range),
a figure that does not exist or needs a twin the scenario does not run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from twin.lang.base import Model, Slug, Text
from twin.lang.versions import VERSION_FIELD

Target = Literal["site", "scenario"]


class Range(Model):
    # an infinite or NaN bound is refused where the range is expanded, in one message at the range
    # (twin/sweep/load.py), not once per member of the union below
    model_config = {**Model.model_config, "allow_inf_nan": True}

    from_: int | float | str = Field(alias="from", description="first value: a number or a quantity such as '500 W'")
    to: int | float | str = Field(description="last value (included when the steps reach it)")
    step: int | float | str = Field(description="increment, in any unit of the same dimension")


class Axis(Model):
    path: str | None = Field(None, description="the path this axis sets (with values or range)")
    values: list[Any] | None = None
    range: Range | None = None
    zip: dict[str, list[Any]] | None = Field(None, description="paths to lists of equal length, taken item by item")
    labels: list[Text] | None = Field(None, description="zip: a short name per item for the variant labels")

    @model_validator(mode="after")
    def _one_form(self) -> "Axis":
        forms = [k for k in ("values", "range", "zip") if getattr(self, k) is not None]
        if len(forms) != 1:
            raise ValueError("give one of values, range or zip")
        if (self.zip is None) != (self.path is not None):
            raise ValueError("values and range need a path; zip names its paths itself")
        if self.zip is not None:
            sizes = {len(v) for v in self.zip.values()}
            if not self.zip or len(sizes) != 1 or 0 in sizes:
                raise ValueError("zip needs lists of one non-zero length")
            if self.labels is not None and len(self.labels) != sizes.pop():
                raise ValueError("labels need one name per zip item")
        if self.values is not None and not self.values:
            raise ValueError("values is empty")
        return self


class SweepFile(Model):
    version: int | None = Field(None, ge=1, description=VERSION_FIELD)
    name: Slug
    description: Text = ""
    site: str = Field(description="the base site spec (YAML), relative to the sweep file and inside its folder")
    scenario: str | dict[str, Any] | None = Field(None, description="a scenario file (the same rule) or an inline scenario")
    placement: Literal["spec", "naive", "optimize"] = "spec"
    axes: list[Axis] = Field(default_factory=list)
    figures: list[str] | None = None
    job: int = Field(1, ge=1, le=10_000, description="which of the scenario's jobs gives the job figures (at most the scenario's jobs)")
    scheme: str | None = Field(None, description="its routing scheme (default: the first)")


@dataclass(frozen=True)
class Setting:
    target: Target
    path: tuple
    value: Any

    @property
    def column(self) -> str:
        from twin.lang.diagnostics import dotted

        return ("scenario." if self.target == "scenario" else "") + dotted(self.path)


@dataclass(frozen=True)
class Sweep:
    file: SweepFile
    path: Path
    site_path: Path
    site: dict
    scenario: dict | None
    scenario_name: str | None
    axes: list[list[tuple[str, list[Setting]]]]  # per axis, its items: (label, settings)
    columns: list[str]  # one per path an axis sets
    figures: list[str]
    has: frozenset[str] = field(default_factory=frozenset)  # "jobs", "campaign", "power"

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def count(self) -> int:
        return math.prod(len(a) for a in self.axes)
