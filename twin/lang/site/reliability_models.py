"""The reliability and storage parts of the site language: failure classes in the catalog, a site's storage.

A failure class says how often one component of a kind fails (``rate``, per component and unit of
time: ``"0.0611 / year"`` per GPU, ``"1 / day"`` per job for software), what the job does about it
(``effect``), how long until the failure is noticed (``detection``) and how long until the failed part
is back (``repair``, the MTTR). Which servers a switch or cable failure takes down is not written
here: the reliability twin finds it on the compiled fabric graph (an RTSW takes its rack, a spine only
narrows ECMP).

>>> parse_rate("1 / day") * 86400
1.0
>>> round(parse_rate("0.06 per year") * 365.25 * 86400, 6)
0.06
>>> round(parse_rate("47 / 54 day") * 54 * 86400, 9)
47.0

This module imports nothing from :mod:`twin.lang.site.models` (which imports it), so it keeps its own base.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    WithJsonSchema,
)

from twin.lang.base import Model, Text
from twin.lang.units import TIME, DataRate, QuantityError, Time, parse

_RATE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:/|per\b)\s*(.+?)\s*$")


def parse_rate(value: Any) -> float:
    """``"0.06 / year"``, ``"1 per day"`` or ``"47 / 54 day"`` -> events per second (per component)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError("expected a failure rate such as '0.06 / year' (per component) or '1 / day'")
    if isinstance(value, (int, float)):
        if value == 0:
            return 0.0
        raise QuantityError(f"a bare number {value!r} has no time unit; expected a rate such as '0.06 / year'")
    m = _RATE.match(value)
    if not m:
        raise QuantityError(f"'{value}' is not a rate; expected a number per time unit such as '0.06 / year' or '2 / day'")
    unit = m.group(2)
    try:
        per = parse(unit if unit[:1].isdigit() or unit[:1] == "." else f"1 {unit}", TIME)
    except QuantityError:
        raise QuantityError(f"'{unit}' in '{value}' is not a time unit; expected e.g. '0.06 / year', '1 / day', '1e-5 / h'") from None
    if per <= 0:
        raise QuantityError(f"'{value}' divides by a time that is not positive")
    return float(m.group(1)) / per


Rate = Annotated[
    float,
    BeforeValidator(parse_rate),
    PlainSerializer(lambda v: f"{v * 3600:.6g} / h", return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "pattern": r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*(/|per)\s*\S.*$",
                    "description": "events per component and time, e.g. '0.06 / year' or '1 / day' (stored per second)",
                    "examples": ["0.06 / year"]}),
]
Duration = Annotated[Time, Field(ge=0)]
Bandwidth = Annotated[DataRate, Field(gt=0)]

# What a rate is counted per. The reliability twin counts these on the compiled design for the job.
COMPONENTS = ("gpu", "server", "nic", "rack-switch", "fabric-switch", "link", "job", "compute-tray", "switch-tray", "plane")




class FailureClass(Model):
    """How often one component of a kind fails, and what that costs a training job."""

    description: Text = ""
    cause: Text = Field("", description="the root cause of Llama 3 Table 5 this class is counted under")
    per: Literal["gpu", "server", "nic", "rack-switch", "fabric-switch", "link", "job", "compute-tray", "switch-tray", "plane"] = Field(
        description="what the rate counts: a GPU, server, backend NIC, rack (leaf) switch, fabric switch (spine and "
        "above), cable (any fabric link), the job itself (software), a rack-scale system's compute tray or NVLink "
        "switch tray (counted only on rack-scale chassis), or a whole network plane, every switch of it at once "
        "(counted only on multi-plane fabrics)")
    rate: Annotated[Rate, Field(ge=0)] = Field(description="failures per component and time, e.g. '0.06 / year'")
    effect: Literal["stop", "straggle", "planned"] = Field(
        "stop", description="stop: the job stops (the parts the failure disconnects are swapped for spares); "
        "straggle: a degraded part slows every step until detected, then is swapped; planned: maintenance at a checkpoint")
    slowdown: float = Field(1.0, ge=1.0, le=100.0, description="straggle: step time multiplier until detected")
    detection: Duration = Field(description="time until the job notices (hang, watchdog) or the straggler is found")
    repair: Duration = Field(description="time until the failed part is back in the spare pool (MTTR); planned: the maintenance")
    source: Text = Field(min_length=1, description="where the rate comes from, or 'assumed'")


class Storage(Model):
    """The storage a site checkpoints to (e.g. Meta's Tectonic: 2 TB/s sustained, 7 TB/s peak)."""

    sustained_bandwidth: Bandwidth = Field(description="aggregate write bandwidth the storage sustains")
    peak_bandwidth: Bandwidth | None = Field(None, description="aggregate burst bandwidth (default: sustained)")
    frontend_per_server: Bandwidth | None = Field(None, description="front-end (storage) network bandwidth of one GPU server")
    source: Text = ""
