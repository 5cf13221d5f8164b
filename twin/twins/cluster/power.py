"""The site's power on the cluster twin's clock: what the jobs running draw, hour by hour, against the site's supply.

Per bin of the GPU-state series, a GPU that a job holds draws the power twin's compute watts at the
rack's GPU power cap (:func:`twin.twins.power.phases.gpu_phases`: the catalog's phase power, clipped to
the cap), an upper bound that counts every held second as computing; with a shared fabric's
``comm_share`` stated, that share of it draws the communication watts instead. A job that runs a
scenario's workload (:mod:`twin.twins.cluster.profiles`) draws the power twin's mean over its step
instead (:meth:`twin.twins.power.phases.GpuPhases.step_average`: compute, exposed communication, bubble
and slack at their watts): :class:`SiteDraw` keeps the GPUs held by each kind of job on the clock. Every other GPU (idle,
waiting, drained, spare) draws the idle watts. The rest of a server draws its running figure in
proportion to its GPUs held, its idle figure for the others. Everything else the design powers (switches,
optics, the racks' other equipment) is the design's IT budget less its servers at full load, constant.
The site's facility power is the IT power times the site's PUE, held against its utility supply.

At full load (every GPU held, computing at TDP with no cap) this is the design's own facility budget, and
the test holds it to that. Under a site power cap (:mod:`twin.twins.cluster.sitecap`) a held GPU's compute
watts are, per bin, the mean of the caps the manager set; the bins whose mean draw is over the cap are
counted, with the most they exceed it by (the manager acts at intervals: jobs started between two of its
settings draw at the cap in force until the next).
"""

from __future__ import annotations

import math

import numpy as np


class SiteDraw:
    """The GPUs jobs hold by kind on the cluster clock, and what they draw per bin.

    Kind ``i`` of held GPU draws ``a_i p + c_i`` W, ``p`` the compute watts in force (the rack's cap, or a
    site cap's setting: :class:`twin.twins.cluster.sitecap.SiteCap`)."""

    controls = False  # a SiteCap sets p; this only counts

    def __init__(self, design, draws: list[tuple[float, float]], horizon: float, bin_s: float):
        spec = design.spec
        ch = spec.chassis
        self.ph = phases_of(design)
        self.gps = ch.gpus
        self.G = spec.gpus
        self.fixed = float(design.budget.it_power) - self.G / self.gps * float(ch.max_power)
        self.pue = float(spec.site.power.pue)
        self.a = [float(a) for a, _ in draws]
        self.c = [float(c) for _, c in draws]
        self.p = self.ph.compute
        self.held_by = [0] * len(draws)  # GPUs held now, by kind
        self.w_now = 0.0  # their watts at p
        self.bin = bin_s
        nb = max(1, math.ceil(horizon / bin_s))
        self.held_j = np.zeros(nb)  # held GPUs' energy per bin (J)

    def hold(self, kind: int, gpus: int) -> None:
        """``gpus`` more (or, negative, fewer) GPUs of ``kind`` held from now."""
        self.held_by[kind] += gpus
        self.w_now += gpus * (self.a[kind] * self.p + self.c[kind])

    def set_p(self, p: float) -> None:
        self.p = p
        self.w_now = self.held_watts(self.held_by, p)

    def held_watts(self, held_by: list[int], p: float) -> float:
        return sum(h * (a * p + c) for h, a, c in zip(held_by, self.a, self.c))

    def facility(self, held_by: list[int], p: float) -> float:
        """The facility draw with ``held_by`` GPUs of each kind held at compute watts ``p``."""
        held = sum(held_by)
        idle = self.G - held
        it = self.fixed + self.held_watts(held_by, p) + idle * self.ph.idle + (held * self.ph.rest + idle * self.ph.rest_idle) / self.gps
        return it * self.pue

    def account(self, t0: float, t1: float) -> None:
        """The GPUs held from ``t0`` to ``t1`` at the watts in force, into the bins."""
        w = self.w_now
        b = self.bin
        k = int(t0 // b)
        while t0 < t1 and k < len(self.held_j):
            e = min(t1, (k + 1) * b)
            self.held_j[k] += w * (e - t0)
            t0, k = e, k + 1


def phases_of(design):
    """The design's GPU watts by phase at its rack's GPU cap (the power twin's)."""
    from twin.twins.power.phases import gpu_phases

    ch = design.spec.chassis
    return gpu_phases(ch.phase_power, ch.gpu_tdp, design.spec.rack.gpu_power_cap, ch.max_power, ch.gpus)


def site_power(design, running: np.ndarray, gpus: int, gpus_per_server: int, bin_s: float, comm_share: float | None = None,
               held_w: np.ndarray | None = None, cap_w: float | None = None) -> dict:
    """``running``: GPUs held per bin (the mean over the bin); ``held_w``: their watts per bin (the mean; default: each
    at compute watts, ``comm_share`` of it at communication watts); ``cap_w``: a site power cap
    (:mod:`twin.twins.cluster.sitecap`). Watts per bin and the figures against the supply."""
    spec = design.spec
    ch = spec.chassis
    ph = phases_of(design)
    w = comm_share or 0.0
    r = np.asarray(running, float)
    held = r * ((1.0 - w) * ph.compute + w * ph.communication) if held_w is None else np.asarray(held_w, float)
    per_gpu = held / np.maximum(r, 1e-300)
    n_servers = gpus / gpus_per_server
    fixed = float(design.budget.it_power) - n_servers * float(ch.max_power)
    idle = gpus - r
    it = fixed + held + idle * ph.idle + (r * ph.rest + idle * ph.rest_idle) / gpus_per_server
    pue = float(spec.site.power.pue)
    fac = it * pue
    cap = float(spec.site.power.utility_capacity)
    over = fac > cap
    out = {
        "gpu_w": {"held": float(per_gpu[r > 0].max()) if (r > 0).any() else (1.0 - w) * ph.compute + w * ph.communication,
                  "idle": ph.idle, "cap": ph.cap},
        "fixed_it_kw": fixed / 1e3, "pue": pue, "supply_kw": cap / 1e3,
        "facility_kw": {"peak": float(fac.max()) / 1e3 if len(fac) else 0.0, "mean": float(fac.mean()) / 1e3 if len(fac) else 0.0,
                        "min": float(fac.min()) / 1e3 if len(fac) else 0.0},
        "hours_over_supply": float(over.sum()) * bin_s / 3600.0,
        "series_kw": (fac / 1e3).round(1).tolist(),
    }
    if cap_w is not None:
        out["hours_over_cap"] = float((fac > cap_w * (1 + 1e-9)).sum()) * bin_s / 3600.0
        out["most_over_cap_kw"] = max(float(fac.max()) - cap_w, 0.0) / 1e3 if len(fac) else 0.0
    return out

