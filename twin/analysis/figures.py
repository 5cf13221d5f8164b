"""The figures a sweep collects per variant: the registry's named figures, or a path into the results.

Named figures are the plain figures of :mod:`twin.analysis.registry` that a variant (compiled through its
BOM, its scenario's twins run) gives: build and cost figures from the compiled design; job figures from
the job twin (the first case, the sweep's ``job`` and ``scheme``); ``ettr_*`` and ``mtti_h`` where the
scenario has a ``campaign:``; ``power_*`` and ``grid_*`` where it has ``power:``. Every one is computed
for every variant that gets that far, so asking for another later reuses the cache. Paths read any
other figure: ``design:derived.rack.power`` (design.json, a quantity as its number in the canonical
unit), ``sim:cases[0].jobs[0].bubble_s`` (the simulation's JSON), ``cost:energy_price_usd_per_kwh``.

>>> sorted(FIGURES)[:4]
['bisection_tbps', 'cable_km', 'cables', 'capex']
>>> read_path({"a": [{"b": "22200 W"}]}, "a[0].b")
22200.0
"""

from __future__ import annotations

import re
from typing import Any

from twin.analysis import registry
from twin.compiler.cost import as_dict

FIGURES = {f.name: f.label for f in registry.sweepable()}
NEEDS = {f.name: f.needs for f in registry.sweepable()}
PREFIXES = ("design:", "sim:", "cost:")
DEFAULT = ("gpus", "capex", "capex_per_gpu", "network_share", "it_power_mw", "energy_cost_per_year")
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(\s+\S.*)?$")


def needs(name: str) -> str | None:
    """What a figure needs beyond the build: "jobs", "campaign", "power", "cluster", "sim", or None."""
    if name in NEEDS:
        return None if NEEDS[name] == "design" else NEEDS[name]
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
    if "cluster" in has:
        out += ["site_goodput", "site_utilization", "largest_jobs_ettr", "largest_jobs_wait_p90_h"]
    return out


def help_text() -> str:
    """The named figures for ``twin sweep --help``, grouped by what they need."""
    groups: dict[str, list[str]] = {}
    for name, need in NEEDS.items():
        groups.setdefault(need, []).append(name)
    say = {"design": "", "jobs": "with jobs: ", "campaign": "with a campaign: ", "power": "with power: ", "cluster": "with a cluster: "}
    return "; ".join(say[k] + " ".join(v) for k, v in groups.items())


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


def build_figures(inputs: registry.Inputs, wanted: list[str]) -> dict[str, Any]:
    """Every named build and cost figure, and the ``design:``/``cost:`` paths in ``wanted``."""
    out = registry.values(inputs, ("design",))
    doc = None
    for name in wanted:
        if name.startswith("design:"):
            if doc is None:
                from twin.compiler.document import document

                doc = document(inputs.design)
            out[name] = read_path(doc, name[len("design:"):])
        elif name.startswith("cost:"):
            out[name] = read_path(as_dict(inputs.cost), name[len("cost:"):])
    return out


def sim_figures(inputs: registry.Inputs, wanted: list[str]) -> dict[str, Any]:
    """Job, campaign and power figures of a scenario run (``inputs.sim``), the build figures it changes
    (energy is priced at the power twin's mean draw where it ran) and the ``sim:`` paths in ``wanted``."""
    out = registry.values(inputs, registry.SWEEPABLE_NEEDS)
    for name in wanted:
        if name.startswith("sim:"):
            out[name] = read_path(inputs.sim, name[len("sim:"):])
    return out
