"""What the twins share: a job's step structure and a list of timed campaign events.

The network/job twin computes a :class:`StepProfile`; the reliability twin turns a campaign into
:class:`Event` lists on the same time base (seconds from the job's start); the power and thermal twin
reads both to draw the site's power over time. No twin reads another's internals, only these values.

>>> p = StepProfile(step_s=10.0, compute_s=7.0, exposed_comm_s=1.0, bubble_s=2.0)
>>> round(p.busy_fraction, 2)
0.7
>>> Event(t=3600.0, kind="checkpoint", duration=30.0).end
3630.0
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepProfile:
    """One optimizer step of a training job, as the job twin computes it (seconds).

    ``step_s = compute_s + bubble_s + exposed_comm_s`` (up to the job model's overheads); during
    ``compute_s`` the GPUs run math, during ``exposed_comm_s`` they wait on the network and during
    ``bubble_s`` (pipeline fill and drain) a stage idles.
    """

    step_s: float
    compute_s: float
    exposed_comm_s: float
    bubble_s: float = 0.0
    tokens_per_step: float = 0.0
    gpus: int = 0

    @property
    def busy_fraction(self) -> float:
        """Share of the step the GPUs compute."""
        return self.compute_s / self.step_s if self.step_s > 0 else 0.0


@dataclass(frozen=True)
class Event:
    """Something that happens to the job at time ``t`` (seconds from the campaign start)."""

    t: float
    kind: str  # start, stop, checkpoint, restore, failure, straggler, repair (a twin ignores kinds it has no model for)
    duration: float = 0.0
    detail: str = ""
    servers: int = 0  # servers affected (a failure's blast radius)

    @property
    def end(self) -> float:
        return self.t + self.duration
