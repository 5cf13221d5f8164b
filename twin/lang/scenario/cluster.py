"""The ``cluster:`` section of a scenario: a month of the whole site, every job, its scheduler and its failures.

Example (scenarios/meta-rsc-month.yaml)::

    cluster:
      days: 30
      jobs:
        mix:
          rate: 7200 / day
          sizes:
            - {gpus: 1, share: 0.55, duration: {median: 20 min, sigma: 1.6}}
            - {gpus: 256, share: 0.01, duration: {median: 12 h, sigma: 1.0}}
          kinds:
            - {name: pre-training, share: 0.1, checkpoint: true}
      scheduler: {policy: easy, packing: topology, preemption: {guard: 2 h, lifetime: 7 d}}
      checkpoint: {interval: 1 h, write: 30 s}
      failures:
        streams:
          - {name: node, rate: 6.5 / 1000 node-day, causes: infrastructure, detection: 5 min, repair: 1 d}
        lemons: {share: 0.01, factor: 10}

Rates of failure are stated per node-day (``"6.5 / 1000 node-day"``: a server fails on average 6.5 times
in 1,000 days), the unit Kokolis et al. publish them in; a rate in any other unit is refused with its
position. ``causes`` names which failures a rate counts: ``all`` (every job failure a measured MTTF
implies, user and software included) or ``infrastructure`` (hardware and the fabric only, as the paper's
projections use); the two are reported apart.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PlainSerializer, WithJsonSchema, model_validator

from twin.lang.base import Model, Slug, Text
from twin.lang.scenario.campaign import Days
from twin.lang.units import TIME, Power, QuantityError, Time, parse

MAX_DAYS = 366.0

_NODE_DAY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:/|per\b)\s*"
                       r"(?:((?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*)?node[- ]?days?\s*$")
_PER_DAY = re.compile(r"^\s*((?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?:/|per\b)\s*(.+?)\s*$")


def parse_node_day(value: Any) -> float:
    """``"6.5 / 1000 node-day"`` -> failures per node and second.

    >>> round(parse_node_day("6.5 / 1000 node-day") * 86400 * 1000, 9)
    6.5
    >>> round(parse_node_day("0.02 per node-day") * 86400, 9)
    0.02
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    m = _NODE_DAY.match(value) if isinstance(value, str) else None
    if not m:
        raise QuantityError(f"{value!r} is not a rate per node-day; expected e.g. '6.5 / 1000 node-day' (failures of one server per day)")
    per = float(m.group(2)) if m.group(2) else 1.0
    if per <= 0:
        raise QuantityError(f"'{value}' divides by a number of node-days that is not positive")
    return float(m.group(1)) / per / 86400.0


def parse_per_day(value: Any) -> float:
    """``"7200 / day"`` -> jobs per second (any time unit after the slash)."""
    m = _PER_DAY.match(value) if isinstance(value, str) else None
    if not m:
        raise QuantityError(f"{value!r} is not an arrival rate; expected e.g. '7200 / day' or '300 / h'")
    unit = m.group(2)
    try:
        per = parse(unit if unit[:1].isdigit() else f"1 {unit}", TIME)
    except QuantityError:
        raise QuantityError(f"'{unit}' in '{value}' is not a time unit; expected e.g. '7200 / day'") from None
    return float(m.group(1)) / per


NodeDayRate = Annotated[float, BeforeValidator(parse_node_day), Field(ge=0),
                        PlainSerializer(lambda v: f"{v * 86400 * 1000:.6g} / 1000 node-day", return_type=str, when_used="json"),
                        WithJsonSchema({"type": "string", "description": "failures per server and day, e.g. '6.5 / 1000 node-day'",
                                        "examples": ["6.5 / 1000 node-day"]})]
ArrivalRate = Annotated[float, BeforeValidator(parse_per_day), Field(gt=0),
                        PlainSerializer(lambda v: f"{v * 86400:.6g} / day", return_type=str, when_used="json"),
                        WithJsonSchema({"type": "string", "description": "jobs per unit of time, e.g. '7200 / day'", "examples": ["7200 / day"]})]
Duration = Annotated[Time, Field(ge=0)]


class LogNormal(Model):
    """Run time of a job (compute it needs, without failures): log-normal by its median and sigma."""

    median: Annotated[Time, Field(gt=0)]
    sigma: float = Field(1.0, ge=0, le=5, description="standard deviation of the log (0: every job runs the median)")
    max: Annotated[Time, Field(gt=0)] | None = Field(None, description="cut longer draws to this (default: none)")


class SizeClass(Model):
    gpus: int = Field(ge=1, le=10_000_000, description="GPUs of the job (above a server: whole servers)")
    share: float = Field(gt=0, le=1, description="share of the jobs (the shares are normalised)")
    duration: LogNormal
    kind: Slug | None = Field(None, description="every job of this size is of this kind (default: drawn by the kinds' shares)")
    workload: Slug | None = Field(None, description="the jobs of this size run this workload of the scenario's jobs: the job twin's step "
                                  "gives their step, and the share of it their data-parallel collective is on the wire their comm_share "
                                  "on a shared fabric (gpus must be the job's)")


class Kind(Model):
    """A kind of job: pre-training, fine-tuning, evaluation, interactive, ..."""

    name: Slug
    share: float = Field(gt=0, le=1, description="share of the jobs (normalised)")
    checkpoint: bool = Field(True, description="the job checkpoints at the interval (else a failure loses all of its run)")
    priority: int = Field(0, ge=0, le=9, description="a waiting job of a higher priority goes first and may preempt lower ones")


class Mix(Model):
    rate: ArrivalRate = Field(description="job arrivals (Poisson), e.g. '7200 / day'")
    sizes: Annotated[list[SizeClass], Field(min_length=1, max_length=64)]
    kinds: list[Kind] = Field(default_factory=lambda: [Kind(name="training", share=1.0)], min_length=1, max_length=16)
    cancel: float = Field(0.0, ge=0, le=1, description="share of jobs the user cancels, at a uniformly random point of their run")

    @model_validator(mode="after")
    def _kinds(self) -> "Mix":
        names = [k.name for k in self.kinds]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate kind name(s): {', '.join(dup)}")
        return self


class Trace(Model):
    file: Text = Field(description="a trace file, relative to the scenario")
    format: Literal["acme", "helios", "philly", "pai"] = Field(description="acme (Seren, Kalos), helios, philly or pai (Alibaba 2020)")
    kind: Slug = Field("training", description="what the trace's jobs are (they checkpoint)")
    start: Duration = Field(0.0, description="skip the trace's first part: start this long after its first submission")


class Jobs(Model):
    mix: Mix | None = None
    trace: Trace | None = None

    @model_validator(mode="after")
    def _one(self) -> "Jobs":
        if (self.mix is None) == (self.trace is None):
            raise ValueError("give either mix (a stated job mix) or trace (a trace file)")
        return self


class Preemption(Model):
    guard: Duration = Field(7200.0, description="a running job may be preempted once it has run this long (Meta RSC: 2 h)")
    lifetime: Annotated[Time, Field(gt=0)] | None = Field(604800.0, description="a job is stopped at a checkpoint and requeued "
                                                          "after running this long (Meta RSC: 7 days; null: never)")


class Scheduler(Model):
    policy: Literal["fifo", "easy"] = Field("easy", description="fifo: in queue order, the head blocks; easy: EASY backfill behind the head's reservation")
    backfill_depth: int = Field(64, ge=1, le=100_000, description="waiting jobs behind the head that backfill looks at")
    packing: Literal["topology", "first-fit", "random"] = Field("topology", description="topology: a job's servers inside one AI zone "
                                                                 "(the smallest that fits), small jobs on the fullest server; first-fit: in "
                                                                 "server order; random: a multi-server job's servers drawn at random")
    preemption: Preemption | None = Field(None, description="a blocked waiting job preempts jobs behind it in queue order that ran past the guard")


class Checkpoint(Model):
    interval: Annotated[Time, Field(gt=0)] = Field(3600.0, description="compute between checkpoints")
    write: Duration = Field(0.0, description="the job stalls this long per checkpoint")


class Stream(Model):
    """One kind of failure on every server (or every rack switch, taking its rack)."""

    name: Slug
    rate: NodeDayRate = Field(description="failures per server and day, e.g. '6.5 / 1000 node-day'")
    causes: Literal["all", "infrastructure"] = Field("infrastructure", description="all: every cause a measured job MTTF implies; "
                                                     "infrastructure: hardware and fabric only (the paper's projections)")
    blast: Literal["server", "rack"] = Field("server", description="what one failure takes down")
    detection: Duration = Field(0.0, description="the job hangs this long before the health check finds the failure")
    repair: Duration = Field(86400.0, description="the server is drained this long after detection (0: back at once, a software failure)")


class Lemons(Model):
    share: float = Field(ge=0, le=1, description="share of the servers that are lemons")
    factor: float = Field(10.0, ge=1, le=10_000, description="a lemon fails this many times as often")
    detect_after: int | None = Field(3, ge=1, le=1000, description="failures within window that mark a server a lemon (null: never detected)")
    window: Annotated[Time, Field(gt=0)] = 7 * 86400.0
    drain: Duration = Field(30 * 86400.0, description="a detected lemon is drained this long")


class Failures(Model):
    streams: list[Stream] = Field(default_factory=list, max_length=64)
    catalog: bool = Field(False, description="add the reliability twin's hardware failure classes of the site's catalog (per GPU, NIC, "
                          "server, rack switch), counted per server of the design")
    lemons: Lemons | None = None

    @model_validator(mode="after")
    def _unique(self) -> "Failures":
        names = [s.name for s in self.streams]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate stream name(s): {', '.join(dup)}")
        return self


class SharedFabric(Model):
    """Concurrent jobs whose collectives cross the same links of the compiled fabric slow each other."""

    comm_share: float = Field(ge=0, le=1, description="share of a multi-server job's step spent in its data-parallel "
                              "collective at full bandwidth (its step stretches by this share of the collective's slowdown)")


class SitePowerCap(Model):
    """A site power cap: a power manager holds the facility draw at ``cap`` by capping the GPUs, which slows the jobs."""

    cap: Annotated[Power, Field(gt=0)] = Field(description="the facility power the site may draw (at the utility, PUE included), e.g. '20 MW'")
    interval: Annotated[Time, Field(ge=60, le=86400)] = Field(900.0, description="the manager sets the GPUs' cap this often "
                                                               "(from 1 min to 1 d), for the GPUs held then")


class Cluster(Model):
    """The whole site over ``days``: every job, the scheduler and the failures on one event clock."""

    days: Days = Field(gt=0, description="time span: days as a number (30) or a duration ('30 d'); at most a year")
    seed: int = Field(1, ge=0, le=2**32 - 1)
    jobs: Jobs
    scheduler: Scheduler = Field(default_factory=Scheduler)
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    restart: Duration = Field(300.0, description="relaunch after a failure or a preemption (u0 in Kokolis et al.; assumed 5 min)")
    failures: Failures = Field(default_factory=Failures)
    spares: int = Field(0, ge=0, le=10_000_000, description="servers held back from the scheduler, each brought in when a server is drained")
    fabric: SharedFabric | None = Field(None, description="jobs sharing links slow each other by the flow model's shares "
                                        "(default: the fabric is not shared)")
    power: SitePowerCap | None = Field(None, description="a site power cap that slows the jobs by the chassis' throughput at the "
                                       "GPU cap it needs (default: none)")

    @model_validator(mode="after")
    def _span(self) -> "Cluster":
        if self.days > MAX_DAYS:
            raise ValueError(f"a cluster run of {self.days:g} days is longer than a year ({MAX_DAYS:g} days)")
        return self
