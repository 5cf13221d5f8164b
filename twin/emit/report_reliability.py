"""The campaign's answers as terminal tables (``twin simulate``) and as a Markdown report section.

Both read only the JSON-ready dict :func:`twin.twins.reliability.campaign.run_campaign` returns, so
the report of a saved ``--json`` result is the same as the live one.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from twin.emit.markdown import table

BUCKET_NAMES = {
    "useful": "useful training", "checkpoint": "checkpoint writes", "lost": "lost work (recomputed)",
    "detection": "detection (hung job)", "spare_wait": "waiting for spares", "maintenance": "planned maintenance",
    "restart": "restarts (incl. swaps)", "restore": "checkpoint restores", "straggling": "straggling",
    "degraded": "degraded fabric",
}


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _q(q: dict, f=_pct) -> str:
    return f"{f(q['p50'])} ({f(q['p10'])} to {f(q['p90'])})"


def headline(c: dict) -> str:
    j, e, i = c["job"], c["ettr"], c["interruptions"]
    return (f"{j['gpus']:,} GPUs ({j['workload'] or 'no workload'}, {j['servers']:,} servers), {c['days']:g} days, "
            f"{c['runs']:,} runs (seed {c['seed']}); step {j['step_s']:.3f} s from the {j['step_source']}. "
            f"ETTR P50 {_pct(e['p50'])} (P10 {_pct(e['p10'])}, P90 {_pct(e['p90'])}); "
            f"{i['total']['mean']:.1f} interruptions ({i['unexpected']['mean']:.1f} unexpected, {i['planned']['mean']:.1f} planned); "
            f"MTTI {c['mtti_h']:.2f} h")


def time_rows(c: dict) -> list[list]:
    return [[BUCKET_NAMES[b], f"{c['time_h'][b]:,.1f}", _pct(c["time_fraction"][b])] for b in BUCKET_NAMES]


def cause_rows(c: dict) -> list[list]:
    return [[r["cause"], f"{r['expected']:.1f}", f"{r['simulated_mean']:.1f}", f"{r['simulated_p10']:.0f}-{r['simulated_p90']:.0f}",
             "" if r["table5"] is None else str(r["table5"])] for r in c["by_cause"]]


def checkpoint_rows(c: dict) -> list[list]:
    k = c["checkpoint"]
    yd = k["young_daly_s"]
    return [
        ["size", f"{k['bytes'] / 1e12:,.2f} TB ({k['per_gpu_bytes'] / 1e6:,.0f} MB per GPU)"],
        ["bandwidth", f"{k['bandwidth_Bps'] / 1e9:,.0f} GB/s (limited by {k['limit']})" if k["bandwidth_Bps"] else "given times"],
        ["write / restore", f"{k['write_s']:.2f} s / {k['restore_s']:.2f} s ({k['mode']}; the job stalls {k['stall_s']:.2f} s)"],
        ["interval", f"{k['interval_s'] / 60:.2f} min = {k['interval_steps']} steps ({k['interval_source']})"],
        ["Young/Daly sqrt(2 x write x MTTI)", "-" if yd is None else f"{yd / 60:.2f} min"],
        ["overhead without failures", _pct(k["overhead_without_failures"])],
    ]


def input_rows(c: dict) -> list[list]:
    """The inputs the result rests on (restart, swap, spares, checkpoint times, ...) and where each came from."""
    return [[r["input"], r["value"], r["source"]] for r in c.get("inputs", [])]


def sweep_rows(c: dict) -> dict[str, list[list]]:
    s = c.get("sweeps", {})
    out = {}
    if "interval" in s:
        out["interval"] = [[f"{r['interval_s'] / 60:.2f}", _pct(r["ettr"]["mean"]), _pct(r["ettr"]["p10"]), _pct(r["ettr"]["p90"])] for r in s["interval"]["rows"]]
    if "spares" in s:
        out["spares"] = [[str(r["spares"]), _pct(r["ettr"]["mean"])] for r in s["spares"]["rows"]] + [["unlimited", _pct(s["spares"]["unlimited"]["mean"])]]
    if "gpus" in s:
        out["gpus"] = [[f"{r['gpus']:,}" + (" *" if r["extrapolated"] else ""), f"{r['mtti_h']:.2f}" if r["mtti_h"] else "-",
                        f"{r['interval_s'] / 60:.1f}", _pct(r["ettr"]["p50"]), f"{_pct(r['ettr']['p10'])}-{_pct(r['ettr']['p90'])}"] for r in s["gpus"]["rows"]]
    return out


def findings(c: dict) -> list[str]:
    """One sentence per answer a person can act on."""
    s = c.get("sweeps", {})
    out = []
    if "interval" in s:
        iv = s["interval"]
        yd = iv["young_daly_s"]
        out.append(f"Best checkpoint interval (swept): {iv['best_s'] / 60:.1f} min" + (f"; Young/Daly says {yd / 60:.1f} min." if yd else "."))
    if "spares" in s:
        sp = s["spares"]
        best = sp["smallest_within_tolerance"]
        out.append(f"Smallest hot-spare pool within {100 * sp['tolerance']:g}% of an unlimited pool's ETTR: "
                   + (f"{best} servers." if best is not None else "none of the pools tried."))
    if "gpus" in s and s["gpus"]["rows"]:
        r0, r1 = s["gpus"]["rows"][0], s["gpus"]["rows"][-1]
        out.append(f"ETTR falls from {_pct(r0['ettr']['p50'])} at {r0['gpus']:,} GPUs to {_pct(r1['ettr']['p50'])} at {r1['gpus']:,} GPUs.")
    return out


def render(c: dict, console: Console) -> None:
    console.print("[bold]campaign[/bold] " + headline(c), markup=True, highlight=False)
    for title, head, rows, just in (
        ("inputs and assumptions", ["input", "value", "from"], input_rows(c), "lll"),
        ("where the time went (mean per run)", ["bucket", "hours", "share"], time_rows(c), "lrr"),
        ("interruptions by cause", ["cause", "expected", "simulated mean", "P10-P90", "Llama 3 Table 5 (16K GPUs, 54 d)"], cause_rows(c), "lrrrr"),
        ("checkpoints", ["", ""], checkpoint_rows(c), "ll"),
    ):
        _table(console, title, head, rows, just)
    sw = sweep_rows(c)
    if "interval" in sw:
        _table(console, "ETTR vs checkpoint interval (same seed)", ["interval min", "ETTR mean", "P10", "P90"], sw["interval"], "rrrr")
    if "spares" in sw:
        _table(console, "ETTR vs hot spare servers", ["spares", "ETTR mean"], sw["spares"], "rr")
    if "gpus" in sw:
        _table(console, "ETTR vs job size (* extrapolated per GPU beyond the site)", ["GPUs", "MTTI h", "interval min", "ETTR P50", "P10-P90"], sw["gpus"], "rrrrr")
    for f in findings(c):
        console.print(f, markup=False, highlight=False)
    for n in c["notes"]:
        console.print(f"note: {n}", markup=False, highlight=False)


def _table(console: Console, title: str, head: list[str], rows: list[list], just: str) -> None:
    t = Table(title=title, title_justify="left")
    for h, j in zip(head, just):
        t.add_column(h, justify="left" if j == "l" else "right")
    for r in rows:
        t.add_row(*[str(x) for x in r])
    console.print(t)


def markdown(c: dict) -> str:
    """The report section "Training campaign (reliability twin)" for report.md."""
    parts = ["## Training campaign (reliability twin)\n", headline(c) + ".\n", "\n".join(f"- {f}" for f in findings(c)) + "\n",
             "### Inputs and assumptions\n", table(["input", "value", "from"], input_rows(c), "lll"),
             "### Where the time went\n", table(["bucket", "hours", "share"], time_rows(c), "lrr"),
             "### Interruptions by cause\n",
             table(["cause", "expected", "simulated mean", "P10-P90", "Llama 3 Table 5 (16K GPUs, 54 d)"], cause_rows(c), "lrrrr"),
             "### Checkpoints\n", table(["", ""], checkpoint_rows(c), "ll")]
    sw = sweep_rows(c)
    if "interval" in sw:
        parts += ["### ETTR vs checkpoint interval\n", table(["interval min", "ETTR mean", "P10", "P90"], sw["interval"], "rrrr")]
    if "spares" in sw:
        parts += ["### ETTR vs hot spare servers\n", table(["spares", "ETTR mean"], sw["spares"], "rr")]
    if "gpus" in sw:
        parts += ["### ETTR vs job size\n", table(["GPUs", "MTTI h", "interval min", "ETTR P50", "P10-P90"], sw["gpus"], "rrrrr"),
                  "\\* extrapolated: component counts per GPU of the whole site.\n"]
    return "\n".join(p if p.endswith("\n") else p + "\n" for p in parts)
