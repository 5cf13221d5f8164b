"""What a person can act on: ETTR and where the time went, interruptions by cause, and three sweeps.

- checkpoint interval: ETTR over intervals around Young/Daly, same seed at every point (common random
  numbers, so the differences are the interval's, not the dice's); the best is refined by a parabola
  through the top three points in log(interval);
- spare pool: the smallest number of hot spare servers whose ETTR is within 0.5% of an unlimited pool;
- job size: ETTR from 1K to 100K GPUs, each at its own Young/Daly interval.

Table 5 of the Llama 3 paper (arXiv 2407.21783, s3.3.4) is kept here as published, to print beside
the twin's counts for the Llama 3 case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from twin.twins.reliability.components import Mode
from twin.twins.reliability.engine import BUCKETS, Outcome, Plan, simulate

# Llama 3 (arXiv 2407.21783) Table 5: root causes of the 466 interruptions of 405B pre-training in a
# 54-day snapshot (419 unexpected, 47 planned).
TABLE5 = {
    "Faulty GPU": 148, "GPU HBM3 Memory": 72, "Software Bug": 54, "Network Switch/Cable": 35, "Host Maintenance": 32,
    "GPU SRAM Memory": 19, "GPU System Processor": 17, "NIC": 7, "NCCL Watchdog Timeouts": 7, "Silent Data Corruption": 6,
    "GPU Thermal Interface + Sensor": 6, "SSD": 3, "Power Supply": 3, "Server Chassis": 2, "IO Expansion Board": 2,
    "Dependency": 2, "CPU": 2, "System Memory": 2, "Planned": 47,
}
SPARE_TOLERANCE = 0.005  # "within 0.5% of an unlimited pool" (relative ETTR)
INTERVAL_FACTORS = (0.25, 0.35, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.4, 1.6, 2.0, 2.8, 4.0)


def quantiles(x: np.ndarray) -> dict:
    p10, p50, p90 = np.percentile(x, [10, 50, 90])
    return {"mean": float(x.mean()), "p10": float(p10), "p50": float(p50), "p90": float(p90)}


def interrupting(m: Mode) -> bool:
    return m.kind in ("restart", "swap", "straggle")


def summarize(o: Outcome) -> dict:
    """ETTR quantiles, the time buckets, interruptions (total and by cause and mode) and the MTTI."""
    D = o.plan.horizon
    unexpected = o.counts[:, [i for i, m in enumerate(o.modes) if interrupting(m)]].sum(axis=1)
    planned = o.counts[:, [i for i, m in enumerate(o.modes) if m.kind == "planned"]].sum(axis=1)
    lam_u = sum(m.job_rate for m in o.modes if interrupting(m))
    causes: dict[str, dict] = {}
    for i, m in enumerate(o.modes):
        if m.kind == "degrade":
            continue
        c = causes.setdefault(m.cause or m.cls, {"cause": m.cause or m.cls, "classes": [], "expected": 0.0, "_n": 0})
        c["classes"].append(m.name)
        c["expected"] += m.job_rate * D
        c["_n"] = c["_n"] + o.counts[:, i]
    by_cause = []
    for c in causes.values():
        n = np.asarray(c.pop("_n"), float) * np.ones(o.plan.runs)
        by_cause.append({**c, **{f"simulated_{k}": v for k, v in quantiles(n).items()}, "table5": TABLE5.get(c["cause"])})
    by_cause.sort(key=lambda r: (-r["expected"], r["cause"]))
    total = unexpected + planned
    return {
        "ettr": quantiles(o.ettr),
        "time_h": {b: float(o.buckets[b].mean() / 3600) for b in BUCKETS},
        "time_fraction": {b: float(o.buckets[b].mean() / D) for b in BUCKETS},
        "interruptions": {"total": quantiles(total.astype(float)), "unexpected": quantiles(unexpected.astype(float)),
                          "planned": quantiles(planned.astype(float)), "expected_total": float(sum(m.job_rate for m in o.modes if m.kind != "degrade") * D)},
        "mtti_h": float(D / max(unexpected.mean(), 1e-300) / 3600),
        "expected_mtti_h": float(1.0 / lam_u / 3600) if lam_u > 0 else None,
        "by_cause": by_cause,
        "modes": [{"mode": m.name, "class": m.cls, "kind": m.kind, "components": m.count, "servers_cut": m.servers,
                   "component": m.component, "rate_per_year": m.rate * 365.25 * 86400, "expected": m.job_rate * D,
                   "simulated_mean": float(o.counts[:, i].mean()), "slowdown": m.slowdown, "detection_s": m.detection,
                   "repair_s": m.repair, "notes": list(m.notes)} for i, m in enumerate(o.modes)],
    }


def unexpected_rate(modes: list[Mode]) -> float:
    return sum(m.job_rate for m in modes if interrupting(m))


def _refine(xs: list[float], ys: list[float]) -> float:
    """The maximum of the parabola through the best point and its neighbours, in log(x)."""
    k = int(np.argmax(ys))
    if k == 0 or k == len(xs) - 1:
        return xs[k]
    lx = np.log(xs[k - 1:k + 2])
    a, b, _ = np.polyfit(lx, ys[k - 1:k + 2], 2)
    if a >= 0:
        return xs[k]
    return float(np.exp(np.clip(-b / (2 * a), lx[0], lx[2])))


def interval_sweep(modes: list[Mode], plan: Plan, intervals: list[float]) -> tuple[list[dict], float]:
    """ETTR at each checkpoint interval (same seed everywhere) and the refined best interval."""
    rows = []
    for iv in intervals:
        o = simulate(modes, replace(plan, interval=iv, lag=min(plan.lag, iv), keep_events=False))
        rows.append({"interval_s": iv, "ettr": quantiles(o.ettr)})
    xs = [r["interval_s"] for r in rows]
    return rows, _refine(xs, [r["ettr"]["mean"] for r in rows])


def spare_sweep(modes: list[Mode], plan: Plan, given: list[int] | None, limit: int = 100_000) -> tuple[list[dict], dict, int | None]:
    """ETTR with an unlimited pool and with spare pools; the smallest pool within SPARE_TOLERANCE of unlimited.

    Without ``given`` pools: 0, 1, 2, 4, ... (up to ``limit``) until one is within tolerance, then
    bisection below it; None when even ``limit`` spares are not enough."""
    base = quantiles(simulate(modes, replace(plan, spares=None, keep_events=False)).ettr)
    goal = base["mean"] * (1 - SPARE_TOLERANCE)
    seen: dict[int, dict] = {}

    def at(s: int) -> float:
        if s not in seen:
            seen[s] = quantiles(simulate(modes, replace(plan, spares=s, keep_events=False)).ettr)
        return seen[s]["mean"]

    if given:
        for s in sorted(set(given)):
            at(s)
        ok = [s for s in sorted(seen) if seen[s]["mean"] >= goal]
        best = ok[0] if ok else None
    else:
        lo, hi = -1, 0
        while at(hi) < goal and hi < limit:
            lo, hi = hi, min(limit, max(1, 2 * hi))
        if at(hi) < goal:
            return [{"spares": s, "ettr": seen[s]} for s in sorted(seen)], base, None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if at(mid) >= goal:
                hi = mid
            else:
                lo = mid
        best = hi
    rows = [{"spares": s, "ettr": seen[s]} for s in sorted(seen)]
    return rows, base, best


def size_sweep(sizes: list[int], setup: Callable[[int], tuple[list[Mode], Plan, dict]]) -> list[dict]:
    """ETTR per job size; ``setup(gpus)`` gives the modes, the plan (its Young/Daly interval) and notes."""
    rows = []
    for n in sizes:
        modes, plan, info = setup(n)
        o = simulate(modes, replace(plan, keep_events=False))
        lam = unexpected_rate(modes)
        rows.append({"gpus": n, "ettr": quantiles(o.ettr), "mtti_h": (1 / lam / 3600) if lam > 0 else None,
                     "interval_s": plan.interval, **info})
    return rows
