"""A site power cap on the cluster twin's clock: the GPU watts a power manager allows, and how much it slows the jobs.

Every ``interval`` the manager reads the GPUs jobs hold and sets the one GPU power cap ``p`` (W) that keeps
the site's facility draw (:mod:`twin.twins.cluster.power`'s model: held GPUs at ``(1 - w) p + w P_comm``,
the others idle, the servers' rest, the fixed IT, times the PUE) at the cap ``F``::

    F / PUE = fixed + r ((1 - w) p + w P_comm) + (G - r) P_idle + (r rest + (G - r) rest_idle) / g
    p = min(P_compute, max(P_min, solved p))

(``r`` GPUs held of ``G``, ``g`` per server, ``w`` the shared fabric's stated ``comm_share`` or 0). ``p``
never goes below the chassis' lowest settable cap ``P_min`` (the draw then stays over ``F``, reported per
hour by :mod:`twin.twins.cluster.power`). A held GPU computes at the chassis' throughput-at-cap curve (``perf_vs_power``, the curve the
power twin and the placement's GPU cap use: :func:`twin.compiler.place.powercap.perf`), ``k = perf(p) /
perf(P_compute)``, and a job whose step is a share ``b`` compute (and bubble) and ``1 - b`` communication
stretches by the inverse of the power twin's throughput factor at a cap (``rate`` in
:mod:`twin.twins.power.model`: compute and bubble slow with the clock, communication does not)::

    s = 1 - b + b / k

``b`` is ``1 - w`` for the stated jobs (all of the run computing when the fabric is not shared: an upper
bound) and ``(compute_s + bubble_s) / step_s`` of the job twin's step for a workload's jobs
(:mod:`twin.twins.cluster.profiles`). The time the stretch adds is its own bucket, slowed by a power cap.

>>> k = 0.94                      # H100 at 550 W of 700 (the builtin curve's point 0.786 -> 0.94)
>>> round(stretch(1.0, k), 6), round(stretch(0.5, k), 6)
(1.06383, 1.031915)
"""

from __future__ import annotations

import math

import numpy as np


def stretch(busy: float, k: float) -> float:
    """The step's stretch at throughput ``k`` when ``busy`` of it computes (the rest does not slow)."""
    return 1.0 - busy + busy / k


class SiteCap:
    """The manager's cap ``p`` for the GPUs held, the throughput at it, and the held GPUs' watts per bin."""

    def __init__(self, design, cap_w: float, interval: float, comm_share: float, horizon: float, bin_s: float):
        from twin.compiler.place.powercap import perf
        from twin.twins.power.phases import gpu_phases

        spec = design.spec
        ch = spec.chassis
        self.ph = ph = gpu_phases(ch.phase_power, ch.gpu_tdp, spec.rack.gpu_power_cap, ch.max_power, ch.gpus)
        self.chassis, self.perf = ch, perf
        self.gps = ch.gpus
        self.G = spec.gpus
        self.fixed = float(design.budget.it_power) - self.G / self.gps * float(ch.max_power)
        self.pue = float(spec.site.power.pue)
        self.F = float(cap_w)
        self.interval = float(interval)
        self.w = float(comm_share)
        self.p_min = min(float(ch.gpu_min_power or 0.5 * ch.gpu_tdp), ph.compute)
        self.full = perf(ch, ph.compute)
        self.p = ph.compute  # in force now
        self.k = 1.0
        self.t = 0.0
        self.bin = bin_s
        nb = max(1, math.ceil(horizon / bin_s))
        self.held_w = np.zeros(nb)  # held GPUs x their compute watts x seconds, per bin
        self.held_s = np.zeros(nb)
        self.levels = 0

    def watts(self, held: float, p: float) -> float:
        """The facility draw with ``held`` GPUs at compute cap ``p``."""
        idle = self.G - held
        it = self.fixed + held * ((1 - self.w) * p + self.w * self.ph.communication) + idle * self.ph.idle \
            + (held * self.ph.rest + idle * self.ph.rest_idle) / self.gps
        return it * self.pue

    def solve(self, held: float) -> float:
        """The cap ``p`` that holds the draw with ``held`` GPUs at ``F`` (within ``[P_min, P_compute]``)."""
        if held <= 0 or self.watts(held, self.ph.compute) <= self.F:
            return self.ph.compute
        room = self.F - self.watts(held, 0.0)  # what the held GPUs' compute watts may take, at the facility
        p = room / (self.pue * held * (1 - self.w)) if self.w < 1 else self.ph.compute
        return min(self.ph.compute, max(self.p_min, p))

    def control(self, t: float, held: float) -> bool:
        """The manager acts at ``t``: True when the throughput in force changed."""
        p = self.solve(held)
        if p == self.p:
            return False
        self.p = p
        self.k = min(1.0, self.perf(self.chassis, p) / self.full)
        self.levels += 1
        return True

    def account(self, t0: float, t1: float, held: float) -> None:
        """``held`` GPUs at the cap in force from ``t0`` to ``t1``, into the bins."""
        b = self.bin
        k = int(t0 // b)
        while t0 < t1 and k < len(self.held_s):
            e = min(t1, (k + 1) * b)
            self.held_s[k] += held * (e - t0)
            self.held_w[k] += held * self.p * (e - t0)
            t0, k = e, k + 1

    def compute_w(self) -> np.ndarray:
        """Mean compute watts of a held GPU per bin (uncapped where no GPU was held)."""
        return np.where(self.held_s > 0, self.held_w / np.maximum(self.held_s, 1e-300), self.ph.compute)
