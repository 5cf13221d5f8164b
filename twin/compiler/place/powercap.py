"""The GPU power cap as a decision: more GPUs at lower power, or fewer at full power?

The chassis ``perf_vs_power`` curve (catalog) gives throughput per GPU as a fraction of its TDP
throughput at a power cap given as a fraction of TDP. It is concave: DVFS lowers voltage with
frequency, so power falls roughly with f x V^2 while throughput of compute-bound training kernels
falls at most linearly with f (and less when memory-bound phases do not scale with the clock). With a
fixed site, a lower cap shrinks every rack's power, so more racks fit under the same busways,
cooling and utility; total throughput = GPUs(cap) x perf(cap) decides which wins.

``placement.gpu_power_cap: auto`` picks the highest cap at which every rack of the spec fits (for a
fixed GPU count throughput only grows with the cap); :func:`tradeoff` shows, for every cap, how many
GPUs the facility could power and what they would deliver, so the count is a decision too.
"""

from __future__ import annotations

import math
from dataclasses import replace

from twin.compiler.resolve.liquid import liquid_share
from twin.compiler.resolve.spec import rack_figures

STEP = 25.0  # W between candidate caps


def perf(chassis, cap: float) -> float:
    """Throughput at ``cap`` W as a fraction of throughput at TDP (piecewise linear on the curve)."""
    pts = sorted(chassis.perf_vs_power) or [(1.0, 1.0)]
    x = cap / chassis.gpu_tdp
    if x >= pts[-1][0]:
        return pts[-1][1]
    if x <= pts[0][0]:
        return pts[0][1] * x / pts[0][0]  # below the curve: proportional (no data; conservative)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


def caps(chassis) -> list[float]:
    lo = chassis.gpu_min_power or 0.5 * chassis.gpu_tdp
    out = []
    c = chassis.gpu_tdp
    while c >= lo - 1e-9:
        out.append(round(c, 6))
        c -= STEP
    return sorted(out)


def spec_at(spec, cap: float):
    """The spec with every GPU capped at ``cap`` W (rack power recomputed the same way as resolve)."""
    rt = spec.rack_type.model_copy(update={"gpu_power_cap": cap})
    site = spec.site.model_copy(update={"rack_types": {**spec.site.rack_types, spec.rack_type_name: rt}})
    return replace(spec, site=site, rack_type=rt, rack=rack_figures(rt, spec.chassis, spec.rtsw_model, spec.fabric.planes))


def fits(spec) -> bool:
    """Every GPU rack of ``spec`` fits the halls' power and cooling (placement stage 1)."""
    from twin.compiler.place.assign import assign  # the solver loads when a cap is chosen, not for `twin validate`

    return assign(spec).placed_racks >= spec.racks


def highest_fitting_cap(spec) -> float | None:
    for c in reversed(caps(spec.chassis)):
        if fits(spec_at(spec, c)):
            return c
    return None


def resolve(spec):
    """``placement.gpu_power_cap: auto``: the spec at the highest cap at which all racks fit (or
    unchanged when none does, so the placement pass diagnoses it)."""
    if spec.site.placement.gpu_power_cap != "auto" or spec.chassis.gpus == 0:
        return spec
    for c in reversed(caps(spec.chassis)):
        s = spec_at(spec, c)
        if fits(s):
            return s
    return spec


def tradeoff(spec, asg) -> dict:
    """For every cap: GPU racks the halls could power and cool (next to the same network racks),
    capped by the site utility, and the cluster throughput they would deliver."""
    from twin.compiler.place.assign import hall_capacity, hall_networks

    pue = spec.site.power.pue
    halls = spec.site.halls
    net_w = sum(nr.power for nr in asg.plan)
    rows = []
    for c in caps(spec.chassis):
        s = spec_at(spec, c)
        P = s.rack.power
        racks = 0
        for i, h in enumerate(halls):
            cap, _ = hall_capacity(h, pue, P, hall_networks(asg.plan, i), share=liquid_share(spec.site))
            racks += max(0, int(cap))
        site_racks = max(0, math.floor((spec.site.power.utility_capacity / pue - net_w) / P))
        racks = min(racks, site_racks)
        gpus = racks * s.rack.gpus
        pf = perf(spec.chassis, c)
        rows.append({
            "cap_w": c,
            "rack_kw": P / 1e3,
            "perf": pf,
            "racks": racks,
            "gpus": gpus,
            "pflops": gpus * pf * spec.chassis.gpu_peak_tflops / 1e3,
            "spec_fits": racks >= spec.racks,
            "spec_pflops": spec.gpus * pf * spec.chassis.gpu_peak_tflops / 1e3 if racks >= spec.racks else 0.0,
        })
    full = rows[-1]
    best = max(rows, key=lambda r: (round(r["pflops"], 6), r["cap_w"]))
    if best["cap_w"] < full["cap_w"] and best["pflops"] > full["pflops"] * (1 + 1e-9):
        verdict = (
            f"more GPUs at lower power win: {best['gpus']:,} GPUs at {best['cap_w']:g} W deliver"
            f" {best['pflops']:,.0f} PFLOP/s peak-equivalent vs {full['gpus']:,} GPUs at {full['cap_w']:g} W with"
            f" {full['pflops']:,.0f} PFLOP/s (+{100 * (best['pflops'] / full['pflops'] - 1):.1f}%)"
            if full["pflops"] > 0 else
            f"only a lower cap fits: {best['gpus']:,} GPUs at {best['cap_w']:g} W"
        )
    else:
        limited = "floor positions" if all(r["racks"] == full["racks"] for r in rows) else "power"
        verdict = (
            f"full power wins: {full['gpus']:,} GPUs at {full['cap_w']:g} W deliver {full['pflops']:,.0f} PFLOP/s;"
            f" the site is limited by {limited}, so a lower cap adds "
            + ("no GPUs" if limited == "floor positions" else "too few GPUs to pay for the lost clock")
        )
    chosen = spec.rack.gpu_power_cap
    return {"rows": rows, "best_cap_w": best["cap_w"], "verdict": verdict, "chosen_cap_w": chosen,
            "mode": spec.site.placement.gpu_power_cap}
