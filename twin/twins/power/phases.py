"""Per-GPU power by phase at the configured cap, and the one adapter from the job twin's result.

A training GPU is in one of five states: computing, waiting on an exposed collective, waiting on a
pipeline peer (bubble), stalled on a checkpoint write or restore, or idle with no job. The catalog
gives each figure at TDP (``phase_power`` on the chassis); the power cap clips them; the power floor
(GB200/GB300 power smoothing) and a software fill workload raise the waiting states.

>>> from twin.lang.site.power import PhasePower
>>> pp = PhasePower(compute="700 W", communication="250 W", waiting="200 W", checkpoint="150 W", idle="90 W")
>>> g = gpu_phases(pp, tdp=700.0, cap=600.0, server_max=10200.0, gpus_per_server=8, floor=400.0)
>>> g.compute, g.communication, g.waiting, g.checkpoint, g.idle
(600.0, 400.0, 400.0, 400.0, 90.0)
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.lang.site.power import PhasePower
from twin.twins.workload.timeline import StepProfile

# Fallback when a chassis has no phase_power: the built-in H100 figures as fractions of TDP (assumed).
DEFAULT_FRACTIONS = {"compute": 1.0, "communication": 250 / 700, "waiting": 200 / 700, "checkpoint": 150 / 700, "idle": 90 / 700}


@dataclass(frozen=True)
class GpuPhases:
    """Watts per GPU in each state, and per server for the rest of the server."""

    compute: float
    communication: float
    waiting: float
    checkpoint: float
    idle: float
    rest: float  # W per server while a job runs
    rest_idle: float  # W per server with no job
    cap: float
    tdp: float

    def step_average(self, p: StepProfile) -> float:
        """Mean GPU power over one step (compute, bubble at waiting power, exposed comm, slack waiting)."""
        slack = max(0.0, p.step_s - p.compute_s - p.bubble_s - p.exposed_comm_s)
        e = p.compute_s * self.compute + (p.bubble_s + slack) * self.waiting + p.exposed_comm_s * self.communication
        return e / p.step_s


def gpu_phases(pp: PhasePower | None, tdp: float, cap: float, server_max: float, gpus_per_server: int,
               floor: float | None = None, fill: float | None = None) -> GpuPhases:
    """Phase watts clipped to ``cap``; ``floor`` raises every job state, ``fill`` the waiting states."""
    if pp is None:
        pp = PhasePower(**{k: f"{v * tdp} W" for k, v in DEFAULT_FRACTIONS.items()}, source="assumed")
    rest = pp.rest_of_server if pp.rest_of_server is not None else max(0.0, server_max - gpus_per_server * tdp)
    rest_idle = pp.rest_of_server_idle if pp.rest_of_server_idle is not None else rest / 2
    lo = min(floor, cap) if floor is not None else 0.0
    fl = min(fill, cap) if fill is not None else 0.0

    def job(w: float, filled: bool) -> float:
        return max(min(w, cap), lo, fl if filled else 0.0)

    return GpuPhases(
        compute=job(pp.compute, False),
        communication=job(pp.communication, True),
        waiting=job(pp.waiting, True),
        checkpoint=job(pp.checkpoint, True),
        idle=min(pp.idle, cap),
        rest=rest,
        rest_idle=rest_idle,
        cap=cap,
        tdp=tdp,
    )


