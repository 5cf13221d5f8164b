"""Cost limits: what an input may ask twin to compute, checked before anything large is allocated.

A typo (``min: 0 B``, ``thermal_interval: 1 us``, a failure rate of ``1e9 / day``) must not turn into
hours of work or an out-of-memory kill. Every input that sets a cost (sizes of a collective, Monte
Carlo events of a campaign, samples and segments of a power trace, variants of a sweep, halls and
rack positions of a site) states it before the work starts and is refused with a located error when
it exceeds its limit. The defaults keep a run on a laptop within minutes and a few GiB; the error
names the limit, and ``TWIN_LIMITS`` raises it, for every command and for the sweep's workers::

    TWIN_LIMITS="power_segments=100000 campaign_event_steps=2e6" twin simulate ...

>>> message("halls", 20000, "halls")
'20,000 halls; at most 1,000 (limit halls; raise it with TWIN_LIMITS=halls=N)'
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

ENV = "TWIN_LIMITS"


@dataclass(frozen=True)
class Limit:
    name: str
    default: float
    counts: str  # what is counted ("samples")
    what: str  # one line for the README table


LIMITS: dict[str, Limit] = {x.name: x for x in (
    Limit("input_bytes", 1_048_576, "bytes", "size of a YAML input (site, scenario, sweep); the largest example is 22 KB"),
    Limit("yaml_values", 200_000, "values", "values of a YAML input, aliases expanded (about 40 us each to load)"),
    Limit("halls", 1_000, "halls", "halls of a site, campus buildings' halls included (1,000 validate in about 3 s)"),
    Limit("rack_positions", 1_000_000, "rack positions", "rows x positions over every hall (about 80 bytes each while validating)"),
    Limit("collective_sizes", 1_000, "message sizes", "sizes of one collective (its sizes: list, or what its sweep: expands to)"),
    Limit("collective_transfers", 8_000_000, "transfers",
          "transfers of one phase of a collective over all its concurrent groups, after equal blocks are folded "
          "(routing takes a few hundred bytes each)"),
    Limit("spray_entries", 60_000_000, "(arc, transfer) entries",
          "arcs crossed by the sprayed transfers of one phase that are not folded into classes, summed over the transfers "
          "(about 100 bytes each while routing)"),
    Limit("hashed_flows", 24_000_000, "hashed QP flows",
          "queue-pair flows of one phase under a hashed routing scheme (transfers x channels x QPs), each with its own "
          "path (170-450 bytes each while routing, the longer the paths the more)"),
    Limit("campaign_event_steps", 300_000, "Monte Carlo event steps",
          "a campaign's failure events per run, summed over the main run and every sweep point (about 0.3 ms each)"),
    Limit("campaign_cells", 20_000_000, "run x event cells",
          "runs x failure events per run of one Monte Carlo pass (about 24 bytes each)"),
    Limit("campaign_checkpoints", 100_000, "checkpoints", "checkpoint writes in a campaign's representative run (its timeline)"),
    Limit("power_samples", 50_000_000, "samples", "duration / resolution of a power trace (tens of bytes each)"),
    Limit("power_segments", 20_000, "segments",
          "thermal intervals plus job-state changes (checkpoints, failures) of a power trace (about 1.3 ms each)"),
    Limit("power_row_seconds", 50_000_000, "row-seconds", "rows of distinct load (and halls) x seconds of the per-second busway check"),
    Limit("cluster_jobs", 2_000_000, "jobs", "jobs of a cluster run: a mix's expected arrivals or a trace's rows (about 30 us and 200 bytes each)"),
    Limit("cluster_failures", 1_000_000, "failures", "failures a cluster run draws over its span (about 50 us each)"),
    Limit("trace_bytes", 2_000_000_000, "bytes", "size of a cluster trace file, read a block of lines at a time"),
    Limit("sweep_variants", 10_000, "variants", "variants of a sweep (the product of its axes) and values of one range"),
    Limit("plan_gpus", 32_768, "GPUs in one plan search (search a slice of the job with --gpus: its TP, CP, PP and EP carry over)",
          "GPUs of one plan search (twin plan, plan: best): every candidate's collectives are flow simulations over all of "
          "them (16,384 GPUs take about 1.3 minutes on 2 cores, 124,416 more than 10); search a slice with --gpus, whose TP, CP, "
          "PP and EP carry over"),
    Limit("plan_candidates", 40_000_000, "plans to lay out",
          "plans of one search that pass its structural rules, laid out before memory prunes them (about 60 bytes each: "
          "20.5 M take 1.2 GiB); pin axes with --fix"),
)}

_ITEM = re.compile(r"^([a-z_]+)=([0-9][0-9_.eE+]*)$")


class LimitsError(ValueError):
    """``TWIN_LIMITS`` is malformed: an unknown name or a value that is not a positive number."""


def overrides(text: str | None = None) -> dict[str, float]:
    """The limits ``TWIN_LIMITS`` (or ``text``) raises or lowers: ``name=N`` items, blank or comma separated."""
    text = os.environ.get(ENV, "") if text is None else text
    out: dict[str, float] = {}
    for item in re.split(r"[\s,]+", text.strip()):
        if not item:
            continue
        m = _ITEM.match(item)
        if not m:
            raise LimitsError(f"{ENV}: '{item[:60]}' is not name=N (e.g. power_segments=100000)")
        name, raw = m.groups()
        if name not in LIMITS:
            raise LimitsError(f"{ENV}: unknown limit '{name}' (known: {', '.join(LIMITS)})")
        try:
            value = float(raw)
        except ValueError:
            raise LimitsError(f"{ENV}: {name}={raw} is not a number") from None
        if not math.isfinite(value) or value <= 0:
            raise LimitsError(f"{ENV}: {name}={raw} must be a positive finite number")
        out[name] = value
    return out


def value(name: str) -> float:
    """The limit in force: the default, or what ``TWIN_LIMITS`` sets (read on every call)."""
    return overrides().get(name, LIMITS[name].default)


def message(name: str, count: float, counts: str | None = None) -> str:
    """``'N things; at most M (limit NAME; raise it with TWIN_LIMITS=NAME=N)'``."""
    return (f"{_num(count)} {counts or LIMITS[name].counts}; at most {_num(value(name))} "
            f"(limit {name}; raise it with {ENV}={name}=N)")


def exceeded(name: str, count: float, counts: str | None = None) -> str | None:
    """The message when ``count`` is over the limit ``name``, else None."""
    return message(name, count, counts) if not count <= value(name) else None


class CostError(ValueError):
    """A run that would cost more than a limit allows; raised before the allocation."""

    def __init__(self, name: str, count: float, counts: str | None = None):
        self.name, self.count, self.counts = name, count, counts
        super().__init__(message(name, count, counts))

    def __reduce__(self):  # as raised, across the plan search's worker processes
        return CostError, (self.name, self.count, self.counts)


def check(name: str, count: float, counts: str | None = None) -> None:
    """Raise :class:`CostError` when ``count`` is over the limit ``name``."""
    if not count <= value(name):
        raise CostError(name, count, counts)


def _num(x: float) -> str:
    if not math.isfinite(x):
        return "infinitely many" if x > 0 else str(x)
    return f"{x:,.0f}" if abs(x) >= 1 or x == 0 else f"{x:.3g}"
