"""The site's power on the cluster twin's clock: what the jobs running draw, hour by hour, against the site's supply.

Per bin of the GPU-state series, a GPU that a job holds draws the power twin's compute watts at the
rack's GPU power cap (:func:`twin.twins.power.phases.gpu_phases`: the catalog's phase power, clipped to
the cap), an upper bound that counts every held second as computing; with a shared fabric's
``comm_share`` stated, that share of it draws the communication watts instead. Every other GPU (idle,
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

import numpy as np


def site_power(design, running: np.ndarray, gpus: int, gpus_per_server: int, bin_s: float, comm_share: float | None = None,
               compute_w: np.ndarray | None = None, cap_w: float | None = None) -> dict:
    """``running``: GPUs held per bin (the mean over the bin); ``compute_w``: a held GPU's compute watts per bin under a
    site power cap of ``cap_w`` (:mod:`twin.twins.cluster.sitecap`). Watts per bin and the figures against the supply."""
    from twin.twins.power.phases import gpu_phases

    spec = design.spec
    ch = spec.chassis
    ph = gpu_phases(ch.phase_power, ch.gpu_tdp, spec.rack.gpu_power_cap, ch.max_power, ch.gpus)
    w = comm_share or 0.0
    comp = ph.compute if compute_w is None else np.asarray(compute_w, float)
    busy = (1.0 - w) * comp + w * ph.communication
    n_servers = gpus / gpus_per_server
    fixed = float(design.budget.it_power) - n_servers * float(ch.max_power)
    r = np.asarray(running, float)
    idle = gpus - r
    it = fixed + r * busy + idle * ph.idle + (r * ph.rest + idle * ph.rest_idle) / gpus_per_server
    pue = float(spec.site.power.pue)
    fac = it * pue
    cap = float(spec.site.power.utility_capacity)
    over = fac > cap
    out = {
        "gpu_w": {"held": float(np.max(busy)), "idle": ph.idle, "cap": ph.cap},
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

