"""Fabric link load: how evenly a collective's traffic spreads over the links it could use.

The figure is max/mean of the bytes on the **fabric links a shortest path may take** between the
collective's endpoints: the switch-to-switch arcs that spraying the same transfers over every shortest
path loads (NIC links are left out: every scheme loads them alike). The mean is over those links, loaded
or not, so a hash that leaves some of them idle shows as imbalance: on lab-2zone a ring AllReduce over
all 128 GPUs with 1-QP ECMP leaves 168 of the 384 links it could use idle, max/mean 6.0 (3.375 over the
loaded links alone), where spraying spreads it at 1.2. Both the build's default run (:mod:`twin.twins.default`) and a scenario run
(:mod:`twin.twins.run`) read the figure from :func:`collective`; nothing else defines it.

The collective's load is that of its main phase, the one that moves the most bytes at full rate
(``repeat x t_per_byte``; a flat ring has one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.twins.net import routing
from twin.twins.net.phases import Phase
from twin.twins.net.timing import Timing
from twin.twins.net.topology import Net

SPRAY = routing.Scheme("spray", "spray", 1)


@dataclass(frozen=True)
class LinkLoad:
    """The main phase's bytes per arc (for S = 1 byte) and the fabric arcs it could use."""

    load: np.ndarray  # bytes per arc of the net
    support: np.ndarray  # bool per arc: a fabric link a shortest path of the phase may take
    cap: np.ndarray  # bit/s per arc (the net's capacities)

    @property
    def links(self) -> int:
        return int(self.support.sum())

    @property
    def max_over_mean(self) -> float | None:
        """max/mean of the bytes over the support; None where the phase crosses no fabric link."""
        x = self.load[self.support]
        return float(x.max() / x.mean()) if len(x) and x.mean() > 0 else None

    def relative(self) -> np.ndarray:
        """Bytes on each link of the support over their mean (the histogram's x)."""
        x = self.load[self.support]
        return x / x.mean() if len(x) and x.mean() > 0 else x

    def utilisation(self) -> np.ndarray:
        """Bytes over capacity on each link of the support (per byte of S)."""
        return self.load[self.support] / self.cap[self.support]

    def as_dict(self) -> dict:
        """``max_over_mean``, ``max_util`` (max/mean of the utilisation: capacities may differ), ``links``."""
        u = self.utilisation()
        mm = self.max_over_mean
        return {"max_over_mean": mm, "max_util": float(u.max() / u.mean()) if mm is not None else None, "links": self.links}


def fabric_arcs(net: Net) -> np.ndarray:
    """Arcs between two switches (the links hashing spreads over)."""
    t, h = net.arc_tail, net.arc_head
    return (t >= 0) & (t < net.n_switches) & (h >= 0) & (h < net.n_switches)


def support(net: Net, phase: Phase) -> np.ndarray:
    """The fabric arcs a shortest path of ``phase`` may take: those spraying its transfers loads."""
    sprayed = routing.link_load(net, routing.route(net, phase.src, phase.dst, phase.frac, SPRAY, phase.conns, phase.pxn))
    return fabric_arcs(net) & (sprayed > 0)


def main_phase(timing: Timing) -> int:
    """Index of the phase that moves the most bytes at full rate."""
    return max(range(len(timing.phases)), key=lambda i: timing.phases[i].repeat * timing.phases[i].t_per_byte)


def collective(net: Net, timing: Timing, phases: list[Phase]) -> LinkLoad:
    """The link load of a collective timed with ``keep_load=True`` (``phases``: its plan, in order)."""
    i = main_phase(timing)
    load = timing.phases[i].load
    if load is None:
        raise ValueError("time the collective with keep_load=True")
    return LinkLoad(load, support(net, phases[i]), net.arc_cap)
