"""The ``campaign:`` section of a scenario: what to ask the reliability twin, validated with positions.

Example (scenarios/llama3-405b-campaign.yaml)::

    campaign:
      days: 54
      runs: 1000
      seed: 1
      checkpoint: {interval: auto, mode: sync}
      spares: unlimited
      restart: 5 min

Every time is a quantity with a unit (``"5 min"``); rates are per component (``"0.06 / year"``).
Class names in ``detection``, ``repair`` and ``rates`` are catalog failure classes (checked against
the merged catalog when the campaign runs on a design).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, field_validator

from twin.lang.base import Model, Slug
from twin.lang.site.reliability_models import Duration, Rate
from twin.lang.units import TIME, DataRate, DataSize, QuantityError, Time, parse

MAX_DAYS = 3652.5  # ten years
DEFAULT_GPU_SWEEP = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 100_000)


class CheckpointPolicy(Model):
    interval: Literal["auto"] | Annotated[Time, Field(gt=0)] = Field(
        "auto", description="compute time between checkpoints, or auto: the best of the swept intervals")
    mode: Literal["sync", "async"] = Field("sync", description="sync: the job stalls for the write; async: only for a copy to host memory")
    bandwidth: Literal["sustained", "peak"] = Field("sustained", description="which storage bandwidth a checkpoint gets")
    bytes_per_param: float = Field(16.0, gt=0, le=64, description="training state per parameter (BF16 weights and grads, FP32 master and two Adam moments)")
    size: Annotated[DataSize, Field(gt=0)] | None = Field(None, description="checkpoint size (default: parameters x bytes_per_param)")
    write_time: Duration | None = Field(None, description="override the write time computed from the storage")
    restore_time: Duration | None = Field(None, description="override the restore time computed from the storage")
    snapshot_bandwidth: Annotated[DataRate, Field(gt=0)] = Field(
        400e9, description="async: GPU-to-host copy per GPU (assumed 50 GB/s, PCIe Gen5 x16)")


class Sweeps(Model):
    enabled: bool = True
    runs: int = Field(200, ge=10, le=100_000, description="runs per sweep point (same seed: common random numbers)")
    intervals: list[Annotated[Time, Field(gt=0)]] | None = Field(None, description="checkpoint intervals (default: 1/4x to 4x Young/Daly)")
    spares: list[Annotated[int, Field(ge=0, le=1_000_000)]] | None = Field(None, description="spare pools (default: searched)")
    gpus: list[Annotated[int, Field(ge=1, le=10_000_000)]] = Field(default_factory=lambda: list(DEFAULT_GPU_SWEEP))


def _days(v):
    """A campaign's length: a bare number is days (as the field always read); a string is a duration (its
    error names what a campaign's length looks like, not a time of microseconds)."""
    if not isinstance(v, str):
        return v
    try:
        return parse(v, TIME) / 86400.0
    except QuantityError as e:
        what = re.split(r"[;,] expected", str(e))[0]  # the units' diagnosis, without their example of a time
        raise QuantityError(f"{what}; expected a campaign length: days as a number (54) or a duration such as '54 d' or '8 week'") from None


Days = Annotated[float, BeforeValidator(_days), WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                                                                          {"type": "string", "description": "a duration such as '30 d'"}]})]


class Campaign(Model):
    """One training job over ``days`` of wall time, ``runs`` Monte Carlo runs with a fixed seed."""

    days: Days = Field(gt=0, description="campaign length: days as a number (30) or a duration with its unit ('30 d', '6 week'); at most ten years")
    runs: int = Field(1000, ge=1, le=100_000)
    seed: int = Field(1, ge=0, le=2**32 - 1)
    job: int = Field(1, ge=1, description="which of the scenario's jobs (1 = first) gives the step time")
    routing: Slug | None = Field(None, description="routing scheme whose step time is used (default: the first)")
    workload: Slug | None = Field(None, description="without jobs: the site workload (checkpoint size, GPUs)")
    gpus: int | None = Field(None, ge=1, le=10_000_000, description="without jobs: job size (default: the workload's)")
    step_time: Annotated[Time, Field(gt=0)] | None = Field(None, description="without jobs: the step time")
    checkpoint: CheckpointPolicy = Field(default_factory=CheckpointPolicy)
    spares: Literal["unlimited"] | Annotated[int, Field(ge=0, le=1_000_000)] = Field(
        "unlimited", description="hot spare servers; a failed server is swapped for one, or the job waits for a repair")
    restart: Duration = Field(300.0, description="relaunch after a stop: scheduling, process start, NCCL init (assumed 5 min)")
    swap: Duration = Field(120.0, description="extra to swap failed servers for spares (assumed 2 min)")
    detection: dict[Slug, Duration] = Field(default_factory=dict, description="per failure class, overrides the catalog")
    repair: dict[Slug, Duration] = Field(default_factory=dict, description="per failure class, overrides the catalog")
    rates: dict[Slug, Annotated[Rate, Field(ge=0)]] = Field(default_factory=dict, description="per failure class, overrides the catalog")
    sweep: Sweeps = Field(default_factory=Sweeps)
    min_ettr: float | None = Field(None, gt=0, le=1, description="the effective training time ratio the campaign must reach "
                                   "(a fraction, e.g. 0.9): a verdict fails when the mean falls short, warns when the P10 does")

    @field_validator("days")
    @classmethod
    def _at_most_ten_years(cls, v: float) -> float:
        if v > MAX_DAYS:
            raise ValueError(f"a campaign of {v:g} days is longer than ten years ({MAX_DAYS:g} days)")
        return v
