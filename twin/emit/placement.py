"""placement/: the floor as CSV and SVG, row and limit tables, the power-cap trade-off; and the
report section that compares the optimised placement with the naive fill."""

from __future__ import annotations

import csv
import io

from twin.compiler.design import Design
from twin.compiler.place import floorplan
from twin.emit.markdown import fold, pct, table
from twin.lang.units import kw


def _csv(header: list[str], rows: list[list]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue().encode()


def emit(d: Design) -> dict[str, bytes]:
    p = d.placement
    if p is None:
        return {}
    f = p.figures
    site = d.spec.site
    out = {
        "placement/floor.csv": _csv(
            ["hall", "row", "slot", "rack", "kind", "role", "zone", "power_w"],
            [[r.position.hall, r.position.row, r.position.slot, r.id, r.kind, r.role,
              "" if r.zone is None else r.zone + 1, f"{r.power:.0f}"] for r in p.racks],
        ),
        "placement/floor.svg": floorplan.floor_svg(site, p.racks, site.power.pue),
    }
    if "rows" in f:
        out["placement/rows.csv"] = _csv(
            ["hall", "row", "load_w", "row_limit_w", "stranded_w"],
            [[r["hall"], r["row"], f"{r['load_w']:.0f}", f"{r['limit_w']:.0f}", f"{r['stranded_w']:.0f}"] for r in f["rows"]],
        )
        out["placement/limits.csv"] = _csv(
            ["hall", "kind", "limit", "state", "load_w", "capacity_w", "utilisation"],
            [[u["hall"], u["kind"], u["name"], u["state"], f"{u['load_w']:.0f}", f"{u['capacity_w']:.0f}",
              f"{u['utilisation']:.4f}"] for u in f["usage"]],
        )
    pc = f.get("powercap")
    if pc:
        out["placement/powercap.csv"] = _csv(
            ["gpu_cap_w", "rack_kw", "perf_fraction", "gpu_racks_fit", "gpus_fit", "pflops"],
            [[f"{r['cap_w']:g}", f"{r['rack_kw']:.2f}", f"{r['perf']:.4f}", r["racks"], r["gpus"], f"{r['pflops']:.1f}"]
             for r in pc["rows"]],
        )
        out["placement/powercap.svg"] = floorplan.tradeoff_svg(pc["rows"], pc.get("chosen_cap_w"))
    return out


def _worst(usage: list[dict], kind: str, state_pred) -> tuple[float, str]:
    us = [u for u in usage if u["kind"] == kind and state_pred(u["state"])]
    if not us:
        return 0.0, "-"
    u = max(us, key=lambda u: (u["utilisation"], u["hall"], u["name"]))
    return u["utilisation"], f"{pct(u['utilisation'])} ({u['hall']} {u['name']})"


def section(d: Design) -> str | None:
    p = d.placement
    if p is None or "rows" not in p.figures:
        return None
    f = p.figures
    s = d.spec
    nv = f.get("naive")
    out = ["## Placement\n"]
    sol = f.get("solver")
    if sol:
        out.append(
            f"Method: {sol['method']}. Status **{sol['status']}**, fiber {f['fiber_m']['total']:,.0f} m"
            f" against a proven lower bound of {sol['fiber_bound_m']:,.0f} m (gap {100 * sol['gap']:.3f}%)"
            f" (solver time is printed by `twin build`, not recorded here: artifacts are byte-stable). Rack-to-spine runs limited to the reach of `{sol['uplink_medium']}`"
            f" ({sol['uplink_reach_m']:g} m). Objective in order: GPUs placed, fiber metres (tray run), peak row load.\n"
        )
    else:
        out.append(f"Method: {p.method}.\n")
    cap = f.get("capacity", {})
    states = sorted({u["state"] for u in f["usage"]}, key=lambda x: (x != "normal", x))
    pstates = [st for st in states if any(u["kind"] in ("busway", "block") and u["state"] == st for u in f["usage"])]

    def col(fig: dict | None) -> list[str]:
        if not fig or "fiber_m" not in fig:
            return ["-"] * (7 + len(pstates))
        stranded = sum(r["stranded_w"] for r in fig["rows"] if r["load_w"] > 0)
        vals = [
            f"{fig['gpus']:,}",
            f"{fig['fiber_m']['rack_spine']:,.0f} m",
            f"{fig['fiber_m']['spine_core']:,.0f} m",
            f"**{fig['fiber_m']['total']:,.0f} m**",
            f"{fig['fiber_m']['longest_rack_spine_m']:,.1f} m",
        ]
        for st in pstates:
            vals.append(_worst(fig["usage"], "busway", lambda x, st=st: x == st)[1] if any(
                u["kind"] == "busway" and u["state"] == st for u in fig["usage"]) else _worst(fig["usage"], "block", lambda x, st=st: x == st)[1])
        vals.append(kw(stranded))
        vals.append(str(len(fig["violations"])) if fig["violations"] else "0")
        return vals

    labels = ["GPUs placed", "fiber rack-spine", "fiber spine-core", "fiber total", "longest rack-spine run"]
    labels += [f"worst busway/block, {st}" for st in pstates]
    labels += ["stranded power (rows in use)", "limits exceeded"]
    a, b = col(f), col(nv if isinstance(nv, dict) else None)
    rows = [[lab, x, y] for lab, x, y in zip(labels, a, b)]
    if isinstance(nv, dict) and "fiber_m" in nv and nv["fiber_m"]["total"] > 0:
        rows.append(["fiber vs naive", f"{f['fiber_m']['total'] / nv['fiber_m']['total']:.3f}x", "1x"])
    if isinstance(nv, dict) and "error" in nv:
        rows.append(["naive fill", "", "; ".join(nv["error"])])
    out.append(table(["", "optimised", "naive fill"], rows, "lrr"))
    if cap:
        out.append(
            f"\nGPUs placed {cap['gpu_racks_placed'] * s.rack.gpus:,} of {cap['gpu_racks_requested'] * s.rack.gpus:,} asked;"
            f" power/cooling/space upper bound of the halls {cap['gpu_rack_upper_bound'] * s.rack.gpus:,} GPUs"
            f" (LP relaxation of the row limits in every failure state, capped by site utility).\n"
        )
    # utilisation per kind and state
    urows = []
    kinds = [("busway", "busway"), ("block", "UPS block"), ("cooling-row", "row cooling"),
             ("cooling-zone", "cooling zone"), ("utility", "hall utility"), ("cdu", "row CDUs"), ("facility-water", "facility water")]
    for k, label in kinds:
        for st in states:
            us = [u for u in f["usage"] if u["kind"] == k and u["state"] == st]
            if not us:
                continue
            mean = sum(u["utilisation"] for u in us) / len(us)
            urows.append([label, st, len(us), pct(mean), _worst(f["usage"], k, lambda x, st=st: x == st)[1]])
    out.append("\nUtilisation of every limit, normal operation and each failure state (all: `placement/limits.csv`):\n")
    out.append(table(["limit", "state", "count", "mean", "worst"], urows, "llrrl"))
    # stranded power per row
    out.append("\nStranded power per row: row limit (tightest of busway after a failure and row cooling) minus load."
               " Per hall (per row: `placement/rows.csv`):\n")
    srows = []
    for h in s.site.halls:
        rr = [r for r in f["rows"] if r["hall"] == h.name]
        used = [r for r in rr if r["load_w"] > 0]
        if not used:
            continue
        srows.append([h.name, len(used), kw(sum(r["load_w"] for r in used)), kw(sum(r["stranded_w"] for r in used)),
                      kw(min(r["stranded_w"] for r in used)), kw(max(r["stranded_w"] for r in used))])
    out.append(table(["hall", "rows in use", "load", "stranded", "least per row", "most per row"], fold(srows), "lrrrrr"))
    if len(f["rows"]) <= 24:
        out.append("\n" + table(["hall", "row", "load", "limit", "stranded"],
                                [[r["hall"], r["row"], kw(r["load_w"]), kw(r["limit_w"]), kw(r["stranded_w"])] for r in f["rows"]], "lrrrr"))
    pc = f.get("powercap")
    if pc:
        out.append(
            f"\n### GPU power cap\n\nThroughput per GPU from the chassis `perf_vs_power` curve; GPUs that fit = racks the"
            f" halls can power and cool at that cap next to the same network racks (capped by the site utility)."
            f" Mode `{pc['mode']}`, cap in use {pc['chosen_cap_w']:g} W. **Verdict: {pc['verdict']}.**"
            f" Curve: `placement/powercap.svg`.\n"
        )
        out.append(table(
            ["GPU cap", "rack power", "perf / GPU", "GPUs that fit", "PFLOP/s", "spec fits"],
            [[f"{r['cap_w']:g} W", f"{r['rack_kw']:.1f} kW", pct(r["perf"]), f"{r['gpus']:,}", f"{r['pflops']:,.0f}",
              "yes" if r["spec_fits"] else "no"] for r in pc["rows"]],
            "rrrrrl",
        ))
    out.append("\nFloor plan: `placement/floor.svg` (racks coloured by zone, busway heat per row); positions: `placement/floor.csv`.\n")
    return "\n".join(out)
