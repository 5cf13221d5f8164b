"""The ``power:`` section of a scenario: what to draw, for how long, under which events and weather.

Example (scenarios/llama3-405b-power.yaml)::

    power:
      duration: 24 h
      resolution: 10 ms
      job: {workload: llama3-405b-16k, scheme: e-ecmp-16qp}   # the job twin's step for this job
      events:
        checkpoint: {every: 30 min, duration: 20 s}
        failures: [{at: 14 h, recovery: 10 min, restore: 60 s}]
      weather: {diurnal: {min: 25 degC, max: 40 degC, peak_at: 15 h}}
      mitigations: {floor: 450 W, fill: {power: 500 W}, battery: {level: both}}

Without a job twin run, ``job.step`` gives the step's figures directly (``step``, ``compute``,
``exposed_comm``, ``bubble``). The utility's limits are a property of the site, not of a scenario:
they live in the site spec (``power.limits``).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from twin.lang import limits
from twin.lang.base import Model, Slug
from twin.lang.units import Energy, Power, PowerRate, Temperature, Time

OUTDOOR_RANGE = (-100.0, 70.0)  # degC: beyond the coldest (-89.2, Vostok) and hottest (56.7, Death Valley) records
Outdoor = Annotated[Temperature, Field(ge=OUTDOOR_RANGE[0], le=OUTDOOR_RANGE[1], description="outdoor air, -100 to 70 degC")]


class StepFigures(Model):
    """One optimizer step given by hand (when the scenario runs no job twin)."""

    step: Time = Field(gt=0)
    compute: Time = Field(ge=0)
    exposed_comm: Time = Field(0.0, ge=0)
    bubble: Time = Field(0.0, ge=0)
    tokens: float = Field(0.0, ge=0, description="tokens per step (for throughput figures)")

    @model_validator(mode="after")
    def _sum(self) -> "StepFigures":
        if self.compute + self.exposed_comm + self.bubble > self.step * (1 + 1e-9):
            raise ValueError(f"compute + exposed_comm + bubble ({self.compute + self.exposed_comm + self.bubble:g} s) exceed step ({self.step:g} s)")
        return self


class PowerJob(Model):
    workload: Slug | None = Field(None, description="a job of this scenario's jobs: (its step comes from the job twin)")
    scheme: Slug | None = Field(None, description="routing scheme whose step time to use (default: the first)")
    step: StepFigures | None = None
    gpus: int | None = Field(None, ge=1, description="GPUs of the job (default: the workload's, or every GPU)")
    stages: int | None = Field(None, ge=1, le=1024, description="pipeline stages (default: the workload's pp, or 1)")
    stage_group: int | None = Field(None, ge=1, description="consecutive GPUs sharing a stage (default: tp x cp, or GPUs per server)")
    others: Literal["average", "idle"] = Field("average", description="GPUs outside the job: unsynchronised work at the job's average power, or idle")

    @model_validator(mode="after")
    def _one(self) -> "PowerJob":
        if (self.workload is None) == (self.step is None):
            raise ValueError("give either workload (a job of this scenario) or step figures")
        return self


class Checkpoints(Model):
    every: Time = Field(gt=0)
    duration: Time = Field(gt=0)


class FailureAt(Model):
    at: Time = Field(ge=0, description="time of the failure from the start of the trace")
    recovery: Time = Field(600.0, ge=0, description="detection, replacement and rescheduling: the job's GPUs idle")
    restore: Time = Field(60.0, ge=0, description="loading the last checkpoint before steps resume")


class Schedule(Model):
    checkpoint: Checkpoints | None = None
    failures: list[FailureAt] = Field(default_factory=list)
    start: Time = Field(0.0, ge=0, description="the job starts (from idle) at this time")


class Diurnal(Model):
    min: Outdoor
    max: Outdoor
    peak_at: Time = Field(15 * 3600.0, ge=0, le=86400.0, description="time of day of the maximum")

    @model_validator(mode="after")
    def _order(self) -> "Diurnal":
        if self.max < self.min:
            raise ValueError("max below min")
        return self


class Weather(Model):
    diurnal: Diurnal | None = None
    csv: str | None = Field(None, description="hourly CSV 'hour,temperature' (relative to the scenario file), e.g. 0,24 degC")
    constant: Outdoor | None = None

    @model_validator(mode="after")
    def _one(self) -> "Weather":
        given = [k for k in ("diurnal", "csv", "constant") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of diurnal, csv, constant")
        return self


class Fill(Model):
    power: Power = Field(ge=0, description="GPU power the fill workload holds while the job waits")
    slowdown: float = Field(0.01, ge=0, le=0.5, description="step-time cost of the fill kernels (assumed 1%)")


class Battery(Model):
    level: Literal["site", "rack", "both"] = "both"
    efficiency: float = Field(0.9, gt=0, le=1, description="round-trip efficiency (assumed 90%)")


class RampLimits(Model):
    """GPU power ramp-rate limits (NVML power smoothing: ramp-up and ramp-down rate in W/s, ramp-down
    hysteresis): a GPU's power rises at most ``up`` and, after holding ``hysteresis``, falls at most ``down``."""

    up: PowerRate | None = Field(None, gt=0, description="per GPU, e.g. '10 kW/s' (default: unlimited)")
    down: PowerRate | None = Field(None, gt=0, description="per GPU, e.g. '1 kW/s' (default: unlimited)")
    hysteresis: Time = Field(0.0, ge=0, description="the GPU holds its power this long before it ramps down")

    @model_validator(mode="after")
    def _one(self) -> "RampLimits":
        if self.up is None and self.down is None:
            raise ValueError("give up or down (W/s per GPU)")
        return self


class ShelfStorage(Model):
    """Energy stored in the GPU racks' power shelves (GB300 NVL72 power smoothing): the rack draws a
    smoothed version of its load and the shelf supplies or absorbs the rest within what it stores."""

    energy: Energy = Field(gt=0, description="usable energy per GPU of the rack, e.g. '5 kJ'")
    efficiency: float = Field(0.95, gt=0, le=1, description="round-trip efficiency (assumed 95%)")


class Mitigations(Model):
    floor: Power | None = Field(None, ge=0, description="GPU power floor while a job is on the GPU (GB200/GB300 power smoothing)")
    ramp: RampLimits | None = Field(None, description="GPU power ramp-rate limits (GB300 power smoothing)")
    shelf: ShelfStorage | None = Field(None, description="energy storage in the racks' power shelves (GB300 power smoothing)")
    fill: Fill | None = None
    battery: Battery | None = None


class PowerScenario(Model):
    duration: Time = Field(86400.0, gt=0, le=400 * 86400.0)
    resolution: Time = Field(0.01, gt=0, le=3600.0, description="sample interval of the fine trace")
    start_time: Time = Field(0.0, ge=0, le=86400.0, description="time of day at t = 0")
    job: PowerJob
    events: Schedule = Field(default_factory=Schedule)
    campaign_events: bool = Field(False, description="draw the reliability twin's representative campaign run "
                                  "(its failures, restarts and checkpoints in the first `duration`) instead of `events`")
    weather: Weather = Field(default_factory=lambda: Weather(constant="20 degC"))
    cooling_lag: Time = Field(300.0, gt=0, description="time constant of the cooling plant's response to IT load (assumed 5 min)")
    thermal_interval: Time = Field(300.0, gt=0, description="how often throttling is re-evaluated")
    zoom_steps: int = Field(3, ge=1, le=100, description="steps in the millisecond view")
    mitigations: Mitigations = Field(default_factory=Mitigations)

    @model_validator(mode="after")
    def _cost(self) -> "PowerScenario":
        """What the trace costs, before anything is drawn: samples, and segments (each thermal interval
        and each job-state change is one, about a millisecond of work)."""
        n = self.duration / self.resolution
        if msg := limits.exceeded("power_samples", n):
            raise ValueError(f"duration / resolution = {msg} (a coarser resolution for long traces)")
        if n < 16:
            raise ValueError("fewer than 16 samples: make the duration longer or the resolution finer")
        segments = self.segments
        if msg := limits.exceeded("power_segments", segments):
            raise ValueError(f"duration / thermal_interval ({math.ceil(self.duration / self.thermal_interval):,.0f}) plus "
                             f"checkpoints and failures = {msg} (a longer thermal_interval or fewer checkpoints)")
        return self

    @property
    def segments(self) -> float:
        """Segments of the trace from the scenario alone: thermal intervals, and two per checkpoint and
        three per failure of the simple schedule (a campaign's events are counted when they are drawn)."""
        n = math.ceil(self.duration / self.thermal_interval) + 3 * len(self.events.failures) + 1
        ck = self.events.checkpoint
        if ck is not None and not self.campaign_events:
            n += 2 * math.ceil(max(0.0, self.duration - self.events.start) / ck.every)
        return n
