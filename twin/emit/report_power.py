"""The power twin's figures as terminal tables and as a Markdown report section.

``markdown_section(data)`` is the section for report.md (``data`` is ``result.data["power"]``);
``render(data, console)`` prints the same figures for ``twin simulate``.
"""

from __future__ import annotations

from twin.lang.units import kw


def _mw(w: float) -> str:
    return f"{w / 1e6:,.2f} MW"


def _hms(t: float) -> str:
    t = int(round(t))
    return f"{t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}"


def _value(v: dict) -> tuple[str, str]:
    if v["unit"] == "W/s":
        return f"{v['value'] / 1e6:,.2f} MW/s", f"{v['limit_value'] / 1e6:,.2f} MW/s"
    if v["unit"] == "W":
        return _mw(v["value"]), _mw(v["limit_value"])
    return f"{100 * v['value']:.1f}%", f"{100 * v['limit_value']:.1f}%"


def headline(p: dict) -> list[list[str]]:
    sw, g, it = p["swings"], p["grid"], p["it"]
    rows = [["grid peak / trough", f"{_mw(g['peak_W'])} at {_hms(g['peak_at_s'])} / {_mw(g['trough_W'])} at {_hms(g['trough_at_s'])}"],
            ["IT mean, energy", f"{_mw(it['mean_W'])}, {it['energy_J'] / 3.6e9:,.1f} MWh"]]
    if "step_swing_W" in sw:
        rows.append(["step swing (every step)", _mw(sw["step_swing_W"])])
    for k, label in (("checkpoint_swing_W", "drop at a checkpoint"), ("restart_swing_W", "job running vs stopped (failure, restart)")):
        if k in sw:
            rows.append([label, _mw(sw[k])])
    rows.append(["fastest ramp", f"{p['ramp']['max_W_per_s'] / 1e6:,.2f} MW/s at {_hms(p['ramp']['at_s'])}"])
    s = p["spectrum"]
    rows.append(["dominant frequency", f"{s['dominant_above_0.05Hz']:.4f} Hz (1 / step = {s['step_frequency_Hz']:.4f} Hz)"])
    th = p["thermal"]
    rows.append(["outdoor, throughput loss", f"{th['outdoor_min_degC']:.1f}-{th['outdoor_max_degC']:.1f} degC, "
                 f"{100 * th['throughput_loss_midday']:.2f}% at the hottest hour"])
    tp = p["throughput"]
    rows.append(["steps (lost to failures)", f"{tp['steps']:,.0f} ({tp['steps_lost_to_failures']:,.0f})"])
    return rows


def limit_rows(p: dict) -> list[list[str]]:
    out = []
    for v in p["limits"]:
        val, lim = _value(v)
        out.append([v["limit"], val, lim, _hms(v["worst_at_s"]), "pass" if v["pass"] else "FAIL"])
    return out


def _label(m: dict) -> str:
    if "floor_W" in m or "fill_W" in m:
        return f"{m['what']} at {m.get('floor_W', m.get('fill_W', 0)):g} W per GPU"
    if "up_W_per_s" in m:
        parts = [f"{d} {m[k]:g} W/s per GPU" for d, k in (("up", "up_W_per_s"), ("down", "down_W_per_s")) if m[k] is not None]
        if m["hysteresis_s"]:
            parts.append(f"hold {m['hysteresis_s']:g} s")
        return f"{m['what']} ({', '.join(parts)})"
    if "energy_per_gpu_J" in m:
        return f"{m['what']} ({m['energy_per_gpu_J'] / 1e3:g} kJ per GPU)"
    return m["what"]


SMOOTHING_COLUMNS = ["GPU power smoothing", "grid peak", "fastest ramp", "swing in a step (median)", "swing in 60 s", "oscillation 0.1-20 Hz", "energy cost"]


def smoothing_rows(p: dict) -> list[list[str]]:
    """Grid-side figures with no smoothing and with each of floor, ramp limits and shelf storage."""
    mit = p.get("mitigations", {})
    rows = []
    for key in ("baseline", "floor", "ramp", "shelf", "smoothing"):
        m = mit.get(key)
        if not m or "effect" not in m:
            continue
        e = m["effect"]
        cost = "-" if key == "baseline" else f"{m['wasted_MWh_per_day']:.3f} MWh/day" + (
            f", {100 * m['throughput_cost']:.2f}% throughput" if m.get("throughput_cost") else "")
        rows.append([_label(m), kw(e["peak_W"]), f"{kw(e['ramp_W_per_s'])}/s", kw(e["step_swing_W"]), kw(e["swing_60s_W"]),
                     kw(e["oscillation_W"]), cost])
    return rows


def mitigation_rows(p: dict) -> list[list[str]]:
    rows = []
    for key, m in p.get("mitigations", {}).items():
        if key == "baseline":
            continue
        if key == "battery":
            for lvl in ("site", "rack"):
                b = m.get(lvl)
                if not b:
                    continue
                if "note" in b:
                    rows.append([f"battery ({lvl})", b["note"], "", "", ""])
                    continue
                extra = ""
                if "passes_with_5pct_less_power" in b:
                    extra = f"; 5% less power {'passes' if b['passes_with_5pct_less_power'] else 'fails'}, 5% less energy {'passes' if b['passes_with_5pct_less_energy'] else 'fails'}"
                rows.append([f"battery ({lvl})", f"{b['power_MW']:.2f} MW, {b['energy_MWh'] * 1e3:,.1f} kWh (tau {b['tau_s']:.1f} s){extra}",
                             f"{b['wasted_MWh_per_day']:.2f}", "0", "all"])
            if "note" in m:
                rows.append(["battery", m["note"], "", "", ""])
            continue
        ok = [c["limit"] for c in m["limits"] if c["pass"]]
        rows.append([_label(m), f"60 s swing {_mw(m['swing_60s_W'])}, ramp {m['ramp_W_per_s'] / 1e6:.2f} MW/s",
                     f"{m['wasted_MWh_per_day']:.2f}", f"{100 * m['throughput_cost']:.1f}%",
                     "all" if m["passes_all"] else (", ".join(ok) or "none")])
    return rows


def distribution_rows(p: dict) -> list[list[str]]:
    rows = []
    for r in p["distribution"]["worst_by_state"]:
        rows.append([r["hall"], r["state"], r["limit"], f"{r['peak_W'] / 1e3:,.0f} / {r['rating_W'] / 1e3:,.0f} kW",
                     f"{r['continuous_W'] / 1e3:,.0f} / {r['derated_W'] / 1e3:,.0f} kW", "ok" if r["peak_ok"] and r["continuous_ok"] else "OVER"])
    return rows


def markdown_section(p: dict) -> str:
    """The report.md section for the power twin's result (``data["power"]``)."""
    from twin.emit.markdown import table

    j = p["job"]
    head = (f"## Power and thermal (twin)\n\n{j['gpus']:,} GPUs in lockstep ({j['stages']} pipeline stages, step {j['step_s']:.2f} s: "
            f"compute {j['compute_s']:.2f} s, bubble {j['bubble_s']:.2f} s, exposed communication {j['exposed_comm_s']:.2f} s), "
            f"{j['other_gpus']:,} other GPUs ({j['others']}); {p['duration_s'] / 3600:g} h at {p['resolution_s'] * 1e3:g} ms "
            f"({p['samples']:,} samples). Watts per GPU: " + ", ".join(f"{k} {v:g}" for k, v in p["phases_W"]["per_gpu"].items())
            + "; watts per server for the rest of it (CPUs, memory, NICs, fans): "
            + ", ".join(f"{k} {v:g}" for k, v in p["phases_W"]["per_server_rest"].items()) + ".\n\n")
    out = head + table(["figure", "value"], headline(p), "ll") + "\n\n"
    if p["limits"]:
        out += "Utility limits (grid-side draw):\n\n" + table(["limit", "worst", "allowed", "worst at", "verdict"], limit_rows(p), "lrrrl") + "\n\n"
    else:
        out += "The site spec states no utility limits (`power.limits`).\n\n"
    d = p["distribution"]
    wet = any(r["limit"].endswith("CDUs") or r["limit"] == "facility water" for r in d["limits"])
    what = "Busways, UPS blocks, row CDUs and facility water" if wet else "Busways and UPS blocks"
    out += (f"{what}: {d['limits_checked']} limits checked in every failure state, {d['limits_failing']} exceeded "
            f"(instantaneous peak against the rating, largest one-minute mean against the derated rating); racks peak at "
            f"{d['racks']['peak_W'] / 1e3:,.1f} kW (shelf {d['racks']['power_shelf_W'] / 1e3:g} kW, {d['racks']['over_shelf']} over).\n\n")
    out += table(["hall", "state", "worst limit", "peak / rating", "1-min mean / derated", ""], distribution_rows(p), "lllrrl") + "\n"
    mit = mitigation_rows(p)
    if mit:
        out += "\nMitigations and their price:\n\n" + table(["mitigation", "effect", "wasted MWh/day", "throughput cost", "limits met"], mit, "llrrl") + "\n"
    sm = smoothing_rows(p)
    if sm:
        out += "\nGPU power smoothing, each on its own, as the grid sees it:\n\n" + table(SMOOTHING_COLUMNS, sm, "lrrrrrl") + "\n"
    return out


def render(p: dict, console) -> None:
    from rich.table import Table

    def show(title, cols, rows):
        t = Table(title=title, title_justify="left")
        for c in cols:
            t.add_column(c)
        for r in rows:
            t.add_row(*[str(x) for x in r])
        console.print(t)

    show("power twin: site draw", ["figure", "value"], headline(p))
    if p["limits"]:
        show("utility limits", ["limit", "worst", "allowed", "worst at", "verdict"], limit_rows(p))
    show("busways and UPS blocks (worst per hall and state)", ["hall", "state", "limit", "peak / rating", "1-min / derated", ""], distribution_rows(p))
    if p.get("mitigations"):
        show("mitigations", ["mitigation", "effect", "wasted MWh/day", "throughput cost", "limits met"], mitigation_rows(p))
        if smoothing_rows(p):
            show("GPU power smoothing (grid side)", SMOOTHING_COLUMNS, smoothing_rows(p))
