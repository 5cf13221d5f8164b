"""Spec language for the time-domain power twin: GPU power by phase and the utility's limits.

Two small models that :mod:`twin.lang.site.models` hangs on existing entries, kept here so the main model
file stays readable:

- :class:`PhasePower` on a catalog chassis: what one GPU draws in each phase of a training step
  (compute, communication-bound, idle-waiting, checkpoint) and with no job, plus the rest of the server.
  A phase figure above the configured GPU power cap is clipped to the cap (the cap clamps the peaks).
- :class:`UtilityLimits` in the site's ``power`` section: the interconnection limits a utility puts on
  a large load (Choukse et al., "Power Stabilization for AI Training Datacenters", arXiv 2508.14318:
  ramp-up/ramp-down rate in MW/s, dynamic power range, and oscillation magnitude in a critical
  frequency range of roughly 0.1-20 Hz).

>>> UtilityLimits.model_validate({"max_ramp": "5 MW/s", "oscillation": [{"band": ["0.1 Hz", "20 Hz"],
...     "max_amplitude": "1 MW"}]}).oscillation[0].band
(0.1, 20.0)
"""

from __future__ import annotations

from pydantic import Field, model_validator

from twin.lang.base import Model, Text
from twin.lang.units import POWER, Frequency, Power, PowerRate, Time, bounded

PhaseWatts = bounded(POWER, at_least=0, at_most=10e3)  # one GPU in a phase (the chassis' gpu_tdp has the same ceiling)
RestWatts = bounded(POWER, at_least=0, at_most=2e6)  # the rest of a server or rack-scale system


class PhasePower(Model):
    """Per-GPU power in each phase of a training step (W at TDP; clipped to the GPU power cap)."""

    compute: PhaseWatts = Field(description="math-bound phase (GEMMs); near TDP")
    communication: PhaseWatts = Field(description="waiting on exposed collectives (NCCL kernels on a few SMs)")
    waiting: PhaseWatts = Field(description="idle-waiting: pipeline bubble, a peer stage not ready")
    checkpoint: PhaseWatts = Field(description="synchronous checkpoint write or restore: GPUs stalled on I/O")
    idle: PhaseWatts = Field(description="no job on the GPU (after a failure, before a restart)")
    rest_of_server: RestWatts | None = Field(None, description="CPUs, memory, NICs, fans, PSU loss while a job runs; default max_power - gpus x gpu_tdp")
    rest_of_server_idle: RestWatts | None = Field(None, description="the rest of the server with no job; default half of rest_of_server")
    source: Text = Field("assumed", min_length=1)

    @model_validator(mode="after")
    def _ordered(self) -> "PhasePower":
        for name in ("communication", "waiting", "checkpoint", "idle"):
            if getattr(self, name) > self.compute:
                raise ValueError(f"{name} power ({getattr(self, name):g} W) above compute power ({self.compute:g} W)")
        return self


class OscillationLimit(Model):
    """At most ``max_amplitude`` (the amplitude of a sinusoid with the same energy) or ``max_share`` of
    the load's fluctuation energy inside ``band``, in any ``window`` of the grid-side draw."""

    name: Text = ""
    band: tuple[Frequency, Frequency] = Field(description="frequency band, e.g. ['0.1 Hz', '20 Hz']")
    max_amplitude: Power | None = Field(None, description="equivalent sinusoid amplitude in the band")
    max_share: float | None = Field(None, gt=0, le=1, description="share of all fluctuation energy (DC excluded)")
    window: Time = Field(60.0, gt=0, description="analysis window (must hold a few periods of the lowest frequency)")

    @model_validator(mode="after")
    def _check(self) -> "OscillationLimit":
        lo, hi = self.band
        if not 0 <= lo < hi:
            raise ValueError(f"band [{lo:g} Hz, {hi:g} Hz] must be increasing and non-negative")
        if self.max_amplitude is None and self.max_share is None:
            raise ValueError("give max_amplitude or max_share")
        return self


class UtilityLimits(Model):
    """What the utility allows at the point of interconnection (arXiv 2508.14318 lists these kinds)."""

    max_ramp: PowerRate | None = Field(None, description="largest rate of change of the draw, e.g. '5 MW/s'")
    ramp_window: Time = Field(1.0, gt=0, description="the ramp is the change of the draw over this interval (assumed 1 s)")
    max_swing: Power | None = Field(None, description="largest peak-to-trough change within swing_window")
    swing_window: Time = Field(60.0, gt=0)
    oscillation: list[OscillationLimit] = Field(default_factory=list)
    source: Text = ""
