"""The figures a sweep collects per variant: named build, cost and twin figures, or a path into the results.

Named figures (every one is computed for every variant that gets that far, so asking for another
later reuses the cache): build and cost figures from the compiled design; job figures from the job
twin (the first case, the sweep's ``job`` and ``scheme``); ``ettr_*`` and ``mtti_h`` where the
scenario has a ``campaign:``; ``power_*`` and ``grid_*`` where it has ``power:``. Paths read any other
figure: ``design:derived.rack.power`` (design.json, a quantity as its number in the canonical unit),
``sim:cases[0].jobs[0].bubble_s`` (the simulation's JSON), ``cost:energy_price_usd_per_kwh``.

Delivered tokens per day are the job's tokens per day times its ETTR (P50) where the reliability twin
ran, else the job's tokens per day; energy per year is priced at the power twin's mean grid draw where
it ran, else at the budgeted full-load draw (IT x PUE).

>>> sorted(FIGURES)[:4]
['cables', 'capex', 'capex_cables', 'capex_facility']
>>> read_path({"a": [{"b": "22200 W"}]}, "a[0].b")
22200.0
"""

from __future__ import annotations

import math
import re
from typing import Any

from twin.compiler.cost import as_dict, cost
from twin.compiler.fabric.bom import network_power

MW = 1e6
DAY = 86400.0
BUILD = {
    "gpus": "GPUs of the site",
    "servers": "GPU servers (fabric graph)",
    "switches": "switches of every tier",
    "cables": "cables (links)",
    "it_power_mw": "critical IT load, MW (GPU racks at their cap + network)",
    "facility_power_mw": "budgeted facility draw, MW (IT x PUE)",
    "network_power_kw": "switches and powered cable ends, kW",
    "capex": "total capital cost, USD",
    "capex_servers": "GPU servers, USD", "capex_switches": "switches, USD", "capex_transceivers": "transceivers, USD",
    "capex_cables": "cables, USD", "capex_network": "switches + transceivers + cables, USD",
    "capex_facility": "power, cooling and building per MW of critical IT load, USD",
    "capex_per_gpu": "capex / GPUs, USD", "network_share": "network share of capex (0-1)",
    "unpriced_items": "catalog items without a price (counted as zero)",
    "draw_mw": "grid draw priced for energy, MW (simulated mean if the power twin ran, else budgeted)",
    "energy_cost_per_year": "energy per year at draw_mw and the site's energy price, USD",
}
JOB = {
    "job_gpus": "GPUs of the job", "step_time_s": "job step time, s", "compute_s": "compute per step, s",
    "exposed_comm_s": "exposed communication per step, s", "predicted_tflops_per_gpu": "predicted model TFLOPs per GPU (job twin)",
    "tokens_per_day": "job tokens per day at the twin's step time",
    "delivered_tokens_per_day": "tokens per day x ETTR P50 (where the campaign ran)",
    "tokens_per_day_per_dollar": "delivered tokens per day / capex", "tokens_per_day_per_mw": "delivered tokens per day / draw_mw",
}
CAMPAIGN = {"ettr_p10": "ETTR P10", "ettr_p50": "ETTR P50", "ettr_p90": "ETTR P90", "mtti_h": "mean time to interruption, h"}
POWER = {"power_limits_pass": "1 if every utility limit passes, else 0", "power_limits_failed": "utility limits failed",
         "grid_peak_mw": "peak grid draw, MW", "grid_mean_mw": "mean grid draw, MW", "grid_swing_mw": "grid range (peak - trough), MW"}
FIGURES = {**BUILD, **JOB, **CAMPAIGN, **POWER}
PREFIXES = ("design:", "sim:", "cost:")
DEFAULT = ("gpus", "capex", "capex_per_gpu", "network_share", "it_power_mw", "energy_cost_per_year")
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(\s+\S.*)?$")


def needs(name: str) -> str | None:
    """What a figure needs beyond the build: "jobs", "campaign", "power", or None."""
    if name in JOB:
        return "jobs"
    if name in CAMPAIGN:
        return "campaign"
    if name in POWER:
        return "power"
    return "sim" if name.startswith("sim:") else None


def known(name: str) -> bool:
    return name in FIGURES or (name.startswith(PREFIXES) and len(name.split(":", 1)[1]) > 0)


def defaults(has: set[str]) -> list[str]:
    """The figures a sweep collects when it names none: cost, and whatever the scenario's twins give."""
    out = list(DEFAULT)
    if "jobs" in has:
        out += ["step_time_s", "tokens_per_day", "delivered_tokens_per_day", "tokens_per_day_per_dollar"]
    if "campaign" in has:
        out += ["ettr_p50"]
    if "power" in has:
        out += ["power_limits_pass", "grid_mean_mw"]
    return out


def read_path(obj: Any, path: str) -> Any:
    """The value at a dotted path (``a.b[0].c``); a quantity string becomes its number; None if absent."""
    for part in path.split("."):
        m = re.fullmatch(r"([^\[\]]+)?((?:\[\d+\])*)", part)
        if not m:
            return None
        if m.group(1):
            if not isinstance(obj, dict) or m.group(1) not in obj:
                return None
            obj = obj[m.group(1)]
        for i in re.findall(r"\[(\d+)\]", m.group(2)):
            if not isinstance(obj, list) or int(i) >= len(obj):
                return None
            obj = obj[int(i)]
    if isinstance(obj, bool):
        return float(obj)
    if isinstance(obj, str):
        n = _NUMBER.match(obj)
        return float(n.group(1)) if n else obj
    if isinstance(obj, (int, float)):
        return float(obj)
    return None  # a section, not a value


def build_figures(design, wanted: list[str]) -> dict[str, Any]:
    """Every named build and cost figure, and the ``design:``/``cost:`` paths in ``wanted``."""
    c = cost(design)
    b = design.budget
    out: dict[str, Any] = {
        "gpus": design.spec.gpus, "servers": c.server_count,
        "switches": sum(ln.quantity for ln in design.bom if ln.category == "switch"),
        "cables": len(design.cabling) if design.cabling is not None else 0,
        "it_power_mw": b.it_power / MW, "facility_power_mw": b.facility_power / MW,
        "network_power_kw": network_power(design.bom)["total"] / 1e3,
        "capex": c.total, "capex_servers": c.servers, "capex_switches": c.switches, "capex_transceivers": c.transceivers,
        "capex_cables": c.cables, "capex_network": c.network, "capex_facility": c.facility, "capex_per_gpu": c.per_gpu,
        "network_share": c.network_share, "unpriced_items": len(c.unpriced),
        "draw_mw": b.facility_power / MW, "energy_cost_per_year": c.energy_per_year(),
    }
    doc = None
    for name in wanted:
        if name.startswith("design:"):
            if doc is None:
                from twin.compiler.document import document

                doc = document(design)
            out[name] = read_path(doc, name[len("design:"):])
        elif name.startswith("cost:"):
            out[name] = read_path(as_dict(c), name[len("cost:"):])
    return out


def sim_figures(data: dict, build: dict, wanted: list[str], job: int, scheme: str | None, energy_price: float) -> dict[str, Any]:
    """Job, campaign and power figures from a simulation's JSON, and what they change in the build's."""
    out: dict[str, Any] = {}
    cases = data.get("cases") or []
    jobs = cases[0]["jobs"] if cases else []
    if len(jobs) >= job:
        j = jobs[job - 1]
        rows = [s for s in j["schemes"] if scheme is None or s["scheme"] == scheme] or j["schemes"]
        s = rows[0]
        out.update(job_gpus=j["gpus"], step_time_s=s["step_s"], compute_s=j["compute_s"], exposed_comm_s=s["exposed_comm_s"],
                   predicted_tflops_per_gpu=s["predicted_tflops_per_gpu"], tokens_per_day=s["tokens_per_s"] * DAY)
    camp = data.get("campaign")
    if camp:
        e = camp["ettr"]
        out.update(ettr_p10=e["p10"], ettr_p50=e["p50"], ettr_p90=e["p90"], mtti_h=camp["mtti_h"])
    pw = data.get("power")
    if pw:
        limits = pw.get("limits") or []
        out.update(power_limits_pass=float(bool(pw.get("limits_pass"))), power_limits_failed=sum(not v["pass"] for v in limits),
                   grid_peak_mw=pw["grid"]["peak_W"] / MW, grid_mean_mw=pw["grid"]["mean_W"] / MW, grid_swing_mw=pw["grid"]["range_W"] / MW)
        out["draw_mw"] = out["grid_mean_mw"]
        out["energy_cost_per_year"] = pw["grid"]["mean_W"] / 1e3 * 365.25 * 24 * energy_price
    if "tokens_per_day" in out:
        delivered = out["tokens_per_day"] * out.get("ettr_p50", 1.0)
        draw = out.get("draw_mw", build.get("draw_mw"))
        out.update(delivered_tokens_per_day=delivered,
                   tokens_per_day_per_dollar=delivered / build["capex"] if build.get("capex") else math.nan,
                   tokens_per_day_per_mw=delivered / draw if draw else math.nan)
    for name in wanted:
        if name.startswith("sim:"):
            out[name] = read_path(data, name[len("sim:"):])
    return out
