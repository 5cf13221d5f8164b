"""A site power cap on the cluster twin's clock: the GPU watts a power manager allows, and how much it slows the jobs.

Every ``interval`` the manager reads the GPUs jobs hold and sets the one GPU power cap ``p`` (W) that keeps
the site's facility draw (:mod:`twin.twins.cluster.power`'s model: a held GPU of kind ``i`` at
``a_i p + c_i``, the others idle, the servers' rest, the fixed IT, times the PUE) at the cap ``F``::

    F / PUE = fixed + sum_i r_i (a_i p + c_i) + (G - r) P_idle + (r rest + (G - r) rest_idle) / g
    p = min(P_compute, max(P_min, solved p))

(``r_i`` GPUs held of kind ``i``, ``r`` in all of ``G``, ``g`` per server; a stated job's ``a = 1 - w``,
``c = w P_comm`` with ``w`` the shared fabric's ``comm_share`` or 0; a workload's job its step's shares:
:func:`twin.twins.cluster.profiles.draws_of`). ``p``
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

from twin.twins.cluster.power import SiteDraw


def stretch(busy: float, k: float) -> float:
    """The step's stretch at throughput ``k`` when ``busy`` of it computes (the rest does not slow)."""
    return 1.0 - busy + busy / k


class SiteCap(SiteDraw):
    """The manager's cap ``p`` for the GPUs held, and the throughput at it."""

    controls = True

    def __init__(self, design, draws: list[tuple[float, float]], horizon: float, bin_s: float, cap_w: float, interval: float):
        from twin.compiler.place.powercap import perf

        super().__init__(design, draws, horizon, bin_s)
        ch = design.spec.chassis
        self.chassis, self.perf = ch, perf
        self.F = float(cap_w)
        self.interval = float(interval)
        self.p_min = min(float(ch.gpu_min_power or 0.5 * ch.gpu_tdp), self.ph.compute)
        self.full = perf(ch, self.ph.compute)
        self.k = 1.0
        self.lowest = self.ph.compute  # the lowest cap set
        self.levels = 0

    def solve(self, held_by: list[int]) -> float:
        """The cap ``p`` that holds the draw at ``F`` (within ``[P_min, P_compute]``): the draw is linear in ``p``."""
        top = self.ph.compute
        slope = sum(h * a for h, a in zip(held_by, self.a)) * self.pue
        if slope <= 0 or self.facility(held_by, top) <= self.F:
            return top
        return min(top, max(self.p_min, (self.F - self.facility(held_by, 0.0)) / slope))

    def control(self, t: float) -> bool:
        """The manager acts at ``t`` for the GPUs held then: True when the throughput in force changed."""
        p = self.solve(self.held_by)
        if p == self.p:
            return False
        self.set_p(p)
        self.lowest = min(self.lowest, p)
        self.k = min(1.0, self.perf(self.chassis, p) / self.full)
        self.levels += 1
        return True
