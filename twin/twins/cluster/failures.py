"""Failures on every server of the site, on the cluster's clock.

A *source* is one kind of failure: a rate per unit (a server, or a rack switch taking its whole rack),
which causes it counts (``all``: every job failure a measured MTTF implies; ``infrastructure``: hardware
and fabric only), how long a job hangs before the health check finds it, and how long the part is then
drained for repair. Sources come from the scenario's stated streams and, when asked, from the reliability
twin's catalog classes (twin/twins/reliability): a class counted per GPU or NIC is multiplied by the
server's GPUs, per server once, per rack switch once per rack; a straggler is counted as a stop at its
detection, and the per-job software classes (stated for one large job) are left out, said in a note.

Lemon servers (a ``share`` of them, drawn once) fail ``factor`` times as often. Arrivals are Poisson per
unit over the span, drawn vectorised for all units at once; an arrival on a part already down is not a
new failure (hardware that is off does not fail again).

>>> src = [Source("node", "infrastructure", "server", 6.5 / 1000 / 86400, 0.0, 86400.0)]
>>> t, unit, which = arrivals(src, servers=2048, racks=1024, lemons=np.zeros(2048, bool), factor=1.0, horizon=30 * 86400, seed=1)
>>> 340 < len(t) < 460, bool((np.diff(t) >= 0).all())   # 2048 x 30 x 6.5e-3 = 399 expected
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PER_SERVER = {"gpu": "gpus", "nic": "gpus", "link": "gpus", "server": 1}


@dataclass(frozen=True)
class Source:
    name: str
    causes: str  # "all" or "infrastructure"
    unit: str  # "server" or "rack"
    rate: float  # per unit and second
    detection: float
    repair: float


def from_scenario(failures, classes: dict | None, gpus_per_server: int, trays: int = 0) -> tuple[list[Source], list[str]]:
    """The sources of a scenario's ``failures:`` (stated streams, then catalog classes when asked; a
    compute tray counts ``trays`` per server, only on rack-scale systems, as in the reliability twin)."""
    out = [Source(s.name, s.causes, s.blast, s.rate, s.detection, s.repair) for s in failures.streams]
    notes: list[str] = []
    if failures.catalog:
        skipped = []
        for name in sorted(classes or {}):
            c = classes[name]
            if c.per in PER_SERVER or (c.per == "compute-tray" and trays):
                k = trays if c.per == "compute-tray" else gpus_per_server if PER_SERVER[c.per] == "gpus" else 1
                out.append(Source(name, "infrastructure", "server", c.rate * k, c.detection, c.repair))
            elif c.per == "rack-switch":
                out.append(Source(name, "infrastructure", "rack", c.rate, c.detection, c.repair))
            else:
                skipped.append(f"{name} ({c.per})")
        if skipped:
            notes.append("catalog classes left out (not a server's or rack's failure): " + ", ".join(skipped))
        if any(c.effect == "straggle" for c in (classes or {}).values()):
            notes.append("a straggling part is counted as a stop when it is detected")
    return out, notes


def lemon_mask(servers: int, share: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 11])
    mask = np.zeros(servers, bool)
    n = int(round(servers * share))
    if n:
        mask[rng.choice(servers, n, replace=False)] = True
    return mask


def expected(sources: list[Source], servers: int, racks: int, lemons: np.ndarray, factor: float, horizon: float) -> float:
    boost = servers + (factor - 1.0) * float(lemons.sum())
    return sum(s.rate * horizon * (boost if s.unit == "server" else racks) for s in sources)


def arrivals(sources: list[Source], servers: int, racks: int, lemons: np.ndarray, factor: float, horizon: float,
             seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time, unit, source index) of every failure over the span, in time order."""
    rng = np.random.default_rng([seed, 23])
    ts, us, ks = [], [], []
    for k, s in enumerate(sources):
        if s.rate <= 0:
            continue
        if s.unit == "server":
            lam = np.full(servers, s.rate * horizon) * np.where(lemons, factor, 1.0)
        else:
            lam = np.full(racks, s.rate * horizon)
        n = rng.poisson(lam)
        unit = np.repeat(np.arange(len(lam)), n)
        ts.append(rng.random(len(unit)) * horizon)
        us.append(unit)
        ks.append(np.full(len(unit), k))
    if not ts:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
    t, u, k = np.concatenate(ts), np.concatenate(us), np.concatenate(ks)
    o = np.argsort(t, kind="stable")
    return t[o], u[o].astype(np.int64), k[o].astype(np.int64)
