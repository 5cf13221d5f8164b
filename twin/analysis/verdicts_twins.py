"""The twins' verdicts (:mod:`twin.analysis.verdicts`): a scenario run's results against what the site
and the scenario state.

- the power twin's utility limits (the site's ``power.limits``: ramp, swing, oscillation), each with its
  worst moment;
- its busways and UPS blocks over time in every failure state (peak against the rating, the hottest
  continuous window against the derated rating), the hall utilities and the racks' power shelves;
- each mitigation it evaluates (power floor, fill, battery): all limits met, or a warning naming what still
  fails and what it makes worse;
- thermal: the share of throughput the hottest hour loses to throttling (a warning when any);
- the campaign's ETTR against ``campaign.min_ettr`` (fail below the mean, warn below P10);
- each job of the scenario: its training state fits in HBM, and, where its workload states a measured
  TFLOPs per GPU, the twin's prediction is not below it by more than the job twin's stated error.

Every figure is the twin's own (``twin simulate --json``'s document); nothing is rerun here.
"""

from __future__ import annotations

from pathlib import Path

from twin.analysis.verdicts import Verdict, design_verdicts, grade, kw, nowhere, ranked
from twin.compiler.resolve.validate import locator
from twin.lang.loader import LoadError, load_file

POWER = "Power and thermal (twin)"
CAMPAIGN = "Training campaign (reliability twin)"


def _unit(v: float, unit: str) -> str:
    if unit == "W/s":
        return f"{v / 1e6:,.2f} MW/s"
    if unit == "W":
        return f"{v / 1e6:,.2f} MW" if abs(v) >= 1e6 else kw(v)
    return f"{v:.3g}"


def _scenario_at(path: str):
    try:
        src = load_file(path)
    except LoadError:
        return nowhere

    def at(*paths: tuple) -> str:
        chosen = next((tuple(p) for p in paths if src.anchor(tuple(p)) == tuple(p)), tuple(paths[0]) if paths else ())
        line, col = src.locate(chosen)
        return f"{Path(src.path).name}:{line}:{col}"

    return at


def _limit_paths(limits) -> list[tuple]:
    """The spec path of each utility limit, in the order the power twin checks them
    (:func:`twin.twins.power.verdicts.check`)."""
    if limits is None:
        return []
    out = [("power", "limits", "max_ramp")] if limits.max_ramp is not None else []
    out += [("power", "limits", "max_swing")] if limits.max_swing is not None else []
    for i, o in enumerate(limits.oscillation):
        out += [("power", "limits", "oscillation", i)] * ((o.max_amplitude is not None) + (o.max_share is not None))
    return out


def _mitigations(p: dict, sc_at) -> list[Verdict]:
    """Each mitigation the scenario evaluates (a GPU power floor, a fill workload, a battery): whether it
    brings the draw within every utility limit, and a warning when it makes a limit worse than without it."""
    base = {x["limit"]: x["value"] for x in p.get("limits", [])}
    mits = p.get("mitigations") or {}
    plain = (mits.get("baseline") or {}).get("effect")  # the grid side without any smoothing
    out = []
    for name, m in sorted(mits.items()):
        if name == "baseline":
            continue
        worse_effect = effect_worse(m.get("effect"), plain)
        if "limits" in m:
            worse = [x["limit"] for x in m["limits"] if x["limit"] in base and x["value"] > base[x["limit"]] * (1 + 1e-9)] + worse_effect
            failing = [x["limit"] for x in m["limits"] if not x["pass"]]
            st = "pass" if m.get("passes_all") and not worse else "warn"
            value = ("makes worse: " + ", ".join(worse) + "; " if worse else "") + (f"still failing: {', '.join(failing)}" if failing else "all limits met")
        elif "site" in m:
            st, value = ("pass", "the site's limits met") if m["site"].get("passes") else ("warn", "the site's limits not met")
        elif worse_effect:  # no utility limits stated: what it makes worse on the grid side is still a warning
            st, value = "warn", "makes worse: " + ", ".join(worse_effect)
        else:
            continue
        out.append(Verdict(f"mitigation.{name}", f"mitigation: {m.get('what', name)} against the utility limits", st, "low", value,
                           "every utility limit, no worse than without it", POWER, sc_at(("power", "mitigations"), ("power",)), twin=True))
    return out


EFFECTS = (("ramp_W_per_s", "fastest ramp", 1e6, "MW/s"), ("swing_60s_W", "60 s swing", 1e6, "MW"),
           ("step_swing_W", "swing within a step", 1e6, "MW"), ("oscillation_W", "critical-band oscillation", 1e6, "MW"))


def effect_worse(effect: dict | None, plain: dict | None, tolerance: float = 0.005) -> list[str]:
    """What a mitigation makes worse on the grid side than no smoothing (by more than ``tolerance``, half a
    percent: the traces' bin edges move a little): ramp, minute swing, step swing, oscillation; its peak and
    energy are its price and are reported apart.

    >>> effect_worse({"ramp_W_per_s": 11.86e6, "swing_60s_W": 5e6}, {"ramp_W_per_s": 9.04e6, "swing_60s_W": 6e6})
    ['fastest ramp 11.86 MW/s against 9.04 MW/s without it']
    """
    if not effect or not plain:
        return []
    return [f"{label} {effect[k] / scale:.2f} {unit} against {plain[k] / scale:.2f} {unit} without it"
            for k, label, scale, unit in EFFECTS if k in effect and k in plain and effect[k] > plain[k] * (1 + tolerance)]


def _throughput(s, case: str, job: dict, site_at, section: str) -> list[Verdict]:
    """A job whose workload states a measured TFLOPs per GPU: the twin's prediction (same FLOP convention)
    per routing scheme against it; a warning when it falls short by more than the job twin's stated error
    (:data:`twin.twins.workload.validation.STATED_ERROR`)."""
    measured = job.get("measured_tflops_per_gpu")
    if not measured:
        return []
    from twin.twins.workload.validation import STATED_ERROR

    names = [w.name for w in s.site.workloads]
    i = names.index(job["workload"]) if job["workload"] in names else 0
    out = []
    for sc in job.get("schemes", []):
        got = sc.get("predicted_convention_tflops_per_gpu") or sc.get("predicted_tflops_per_gpu")
        if got is None:
            continue
        st = "warn" if got < measured * (1 - STATED_ERROR) else "pass"
        out.append(Verdict(f"job.{case}.{job['workload']}.{sc['scheme']}.throughput",
                           f"job {job['workload']} ({case}, {sc['scheme']}): predicted throughput against the workload's measured",
                           st, "medium", f"{got:,.0f} TFLOPs/GPU ({100 * (got / measured - 1):+.1f}%)",
                           f"at least {measured * (1 - STATED_ERROR):,.0f} TFLOPs/GPU (the measured {measured:,.0f} less the "
                           f"twin's stated error, {STATED_ERROR:.1%})", section,
                           site_at(("workloads", i, "measured_tflops_per_gpu"), ("workloads", i, "tflops_per_gpu"), ("workloads", i)), twin=True))
    return out


def twin_verdicts(d, scenario_file: str, data: dict, locate: bool = True) -> list[Verdict]:
    """The verdicts of one scenario run (``data``: the document ``twin simulate --json`` prints);
    ``locate``: read the site and scenario files for the lines that state each limit."""
    s = d.spec
    site_at = (locator(s.source_path, s.source_sha256) if locate else None) or nowhere
    sc_at = _scenario_at(scenario_file) if locate and Path(scenario_file).is_file() else nowhere
    scenario_section = f"Scenario `{data.get('scenario', '')}` (twin)"
    out: list[Verdict] = []
    p = data.get("power")
    if p:
        for lim, path in zip(p.get("limits", []), _limit_paths(s.site.power.limits)):
            kind = lim["kind"]
            out.append(Verdict(f"utility.{kind}.{lim['limit']}", f"utility limit: {lim['limit']} (site draw)", "pass" if lim["pass"] else "fail",
                               "high", f"{_unit(lim['value'], lim['unit'])} at {lim['worst_at_s']:,.1f} s", _unit(lim["limit_value"], lim["unit"]),
                               POWER, site_at(path, ("power", "limits")), twin=True))
        dist = p.get("distribution") or {}
        halls = {h.name: i for i, h in enumerate(s.site.halls)}
        for r in dist.get("worst_by_state", []):
            ok = r["peak_ok"] and r["continuous_ok"]
            why = "peak" if not r["peak_ok"] else "continuous"
            st = "fail" if not ok else grade(r["utilisation"], 1.0)
            out.append(Verdict(f"power-twin.{r['hall']}.{r['state']}", f"{r['limit']} in {r['hall']} over time ({r['state']})", st, "high",
                               f"peak {kw(r['peak_W'])}, continuous {kw(r['continuous_W'])}" + ("" if ok else f" ({why} over)"),
                               f"rating {kw(r['rating_W'])}, derated {kw(r['derated_W'])}", POWER,
                               site_at(("halls", halls.get(r["hall"], 0), "power"), ("halls", halls.get(r["hall"], 0))), twin=True,
                               group=f"{r['limit']} per hall over time", instance=f"{r['hall']} ({r['state']})"))
        for h in dist.get("halls", []):
            out.append(Verdict(f"power-twin.{h['hall']}.utility", f"hall {h['hall']} facility peak against its utility",
                               "pass" if h["utility_ok"] else "fail", "high", kw(h["facility_peak_W"]), kw(h["utility_W"]), POWER,
                               site_at(("halls", halls.get(h["hall"], 0), "power", "utility"), ("halls", halls.get(h["hall"], 0))), twin=True,
                               group="hall facility peak against its utility, per hall", instance=h["hall"]))
        racks = dist.get("racks")
        if racks and racks.get("gpu_racks"):
            out.append(Verdict("power-twin.racks", "GPU racks' peak against the power shelf", "fail" if racks["over_shelf"] else
                               grade(racks["peak_W"], racks["power_shelf_W"]), "high",
                               f"peak {kw(racks['peak_W'])}; {racks['over_shelf']} of {racks['gpu_racks']} racks over",
                               kw(racks["power_shelf_W"]), POWER, site_at(("rack_types", s.rack_type_name, "power_shelf"), ("rack_types",)), twin=True))
        out += _mitigations(p, sc_at)
        th = p.get("thermal") or {}
        if "throughput_factor_min" in th:
            loss = 1.0 - th["throughput_factor_min"]
            out.append(Verdict("thermal.throttling", "throughput lost to thermal throttling at the hottest moment",
                               "warn" if loss > 1e-9 else "pass", "medium", f"{100 * loss:.1f}% (outdoor up to {th.get('outdoor_max_degC', 0):g} degC)",
                               "0%", POWER, sc_at(("power", "weather"), ("power",)), twin=True))
    c = data.get("campaign")
    want = c.get("min_ettr") if c else None  # the scenario's campaign.min_ettr, as the twin ran it
    if c and want is not None:
        e = c["ettr"]
        st = "fail" if e["mean"] < want else "warn" if e["p10"] < want else "pass"
        out.append(Verdict("campaign.ettr", f"ETTR of the {c['days']:g}-day campaign ({c['runs']:,} runs) against the scenario's minimum",
                           st, "medium", f"mean {e['mean']:.3f}, P10 {e['p10']:.3f}", f"{want:g}", CAMPAIGN,
                           sc_at(("campaign", "min_ettr"), ("campaign",)), twin=True))
    for case in data.get("cases", []):
        for j, job in enumerate(case.get("jobs", [])):
            mem = job.get("memory") or {}
            if "fits" not in mem:
                continue
            out += _throughput(s, case["case"], job, site_at, scenario_section)
            out.append(Verdict(f"job.{case['case']}.{job['workload']}.memory", f"job {job['workload']} ({case['case']}): training state in HBM",
                               "pass" if mem["fits"] else "fail", "medium", f"{mem['total_bytes'] / 1e9:,.1f} GB per GPU",
                               f"{mem['hbm_bytes'] / 1e9:,.1f} GB", scenario_section, sc_at(("jobs", j), ("jobs",)), twin=True))
    return out


def verdicts(d, scenario: tuple[str, dict] | None = None, locate: bool = True) -> list[Verdict]:
    """Every verdict of a build, ranked: the design's and, with ``scenario`` ((file, data) of a scenario
    run), the twins'. ``locate``: read the spec and scenario files for the lines that state each limit.
    A fabric-only study has no design verdicts (they hold the design to its floor, twin.compiler.study)."""
    out = [] if d.spec.site.fabric_only else design_verdicts(d, locate)
    if scenario is not None:
        out += twin_verdicts(d, *scenario, locate=locate)
    return ranked(out)
