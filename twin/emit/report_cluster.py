"""The cluster twin's answers as terminal tables (``twin simulate``) and as a Markdown report section.

Both read only the JSON-ready dict :func:`twin.twins.cluster.run.simulate_cluster` returns, so the
report of a saved ``--json`` result is the same as the live one.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from twin.emit.markdown import table

BUCKET_NAMES = {
    "productive": "productive training", "rework": "rework after a failure", "detection": "hung until detected",
    "restart": "restarts", "checkpoint": "checkpoint writes", "preempted": "preempted (lost work, relaunch)",
    "neighbours": "slowed by neighbours (shared links)", "powercap": "slowed by a power cap", "idle": "idle, no job waiting", "queued_idle": "idle while jobs wait", "fragmentation": "fragmentation",
    "repair": "drained for repair", "spare": "held as spares",
}


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _h(s) -> str:
    return "-" if s is None else f"{s / 3600:.2f}"


def headline(c: dict) -> str:
    k = c["counts"]
    return (f"{c['site']}: {c['gpus']:,} GPUs ({c['servers']:,} servers, {c['zones']} zones), {c['days']:g} days, {c['jobs']:,} jobs; "
            f"utilization {_pct(c['utilization'])}, goodput {_pct(c['goodput'])}; {k['completions']:,} completed, "
            f"{k['failures']:,} failures ({k['job_interruptions']:,} job interruptions), {k['preemptions']:,} preemptions "
            f"({k['preemptions_after_failure']:,} by a failed job's requeue)")


def bucket_rows(c: dict) -> list[list]:
    return [[BUCKET_NAMES[b], f"{c['buckets_gpu_h'][b]:,.0f}", _pct(c["shares"][b])] for b in BUCKET_NAMES if b in c["shares"]]


def size_rows(c: dict) -> list[list]:
    return [[r["size"], f"{r['jobs']:,}", f"{r['completions']:,}", f"{r['gpu_hours']:,.0f}", _pct(r["ettr"]), _h(r["wait_p50_s"]),
             _h(r["wait_p90_s"]), str(r["failures"]), "-" if r["mttf_h"] is None else f"{r['mttf_h']:,.1f}", str(r["preemptions"])]
            for r in c["by_size"]]


SIZE_HEAD = ["GPUs", "jobs", "completed", "GPU-hours", "ETTR", "wait P50 h", "wait P90 h", "failures", "MTTF h", "preemptions"]


def failure_rows(c: dict) -> list[list]:
    stopped = c["failures_by_source"]
    return [[s["name"], s["causes"], s["unit"], f"{s['per_1000_unit_days']:.3g}", f"{s['detection_s'] / 60:.1f}", f"{s['repair_s'] / 3600:.1f}",
             str(stopped.get(s["name"], 0))] for s in c["sources"]]


FAILURE_HEAD = ["source", "causes", "per", "per 1,000 days", "detection min", "repair h", "jobs stopped"]


def findings(c: dict) -> list[str]:
    m, lem = c["mix"], c["lemons"]
    out = [f"{_pct(m['jobs_under_8_gpus'])} of jobs ran on fewer than 8 GPUs; jobs of 256 GPUs or more held "
           f"{_pct(m['gpu_time_256_plus'])} of the GPU-time asked."]
    if lem["servers"]:
        out.append(f"{lem['servers']} lemon servers touched {_pct(lem['jobs_touched_share'])} of the jobs; "
                   f"{lem['drained']} servers drained as lemons ({lem['drained_true']} of them were).")
    if "fabric" in c:
        f = c["fabric"]
        own = ", a workload's jobs their own" if c.get("workloads") else ""
        out.append(f"shared fabric: jobs' steps were stretched by neighbours on shared links for {_pct(f['slowed_share_of_held'])} of "
                   f"the GPU-time jobs held (collective share of a step {f['comm_share']:g}{own}; {f['placements_routed']:,} placements routed).")
    for w in c.get("workloads", []):
        out.append(f"{w['workload']} ({w['gpus']:,} GPUs, {w['jobs']:,} jobs): step {w['step_s']:.4g} s from the job twin ({w['scheme']}), "
                   f"{w['cluster_step_s']:.4g} s on the shared site; its data-parallel collective {_pct(w['comm_share'])} of the step.")
    if "power" in c:
        pw = c["power"]
        out.append(f"site power (facility, x PUE {pw['pue']:g}): peak {pw['facility_kw']['peak']:,.0f} kW, mean {pw['facility_kw']['mean']:,.0f} kW "
                   f"against a supply of {pw['supply_kw']:,.0f} kW; {pw['hours_over_supply']:,.0f} h over it.")
        if "site_cap" in pw:
            sc = pw["site_cap"]
            out.append(f"site power cap {sc['cap_kw']:,.0f} kW (set every {sc['interval_s'] / 60:g} min): GPUs capped down to {sc['gpu_w_min']:,.0f} W "
                       f"of {sc['gpu_w_uncapped']:,.0f}; jobs' steps stretched for {_pct(sc['slowed_share_of_held'])} of the GPU-time they held; "
                       f"{pw['hours_over_cap']:,.0f} h over the cap (the hour's mean), by up to {pw['most_over_cap_kw']:,.1f} kW.")
    if "trace" in c:
        t = c["trace"]
        out.append(f"trace {t['file']} ({t['format']}): {t['jobs']:,} jobs over {t['span_days']:.1f} days, {t['gpu_hours']:,.0f} GPU-hours; "
                   f"states {', '.join(f'{k} {v:,}' for k, v in t['states'].items())}"
                   + (f"; skipped {', '.join(f'{k} {v:,}' for k, v in t['skipped'].items())}" if t["skipped"] else ""))
    return out


def render(c: dict, console: Console) -> None:
    console.print("[bold]cluster[/bold] " + headline(c), markup=True, highlight=False)
    for title, head, rows, just in (
        ("where the GPU-time went (every GPU-second in one bucket)", ["bucket", "GPU-hours", "share"], bucket_rows(c), "lrr"),
        ("by job size", SIZE_HEAD, size_rows(c), "lrrrrrrrrr"),
        ("failures", FAILURE_HEAD, failure_rows(c), "lllrrrr"),
    ):
        t = Table(title=title, title_justify="left")
        for h, j in zip(head, just):
            t.add_column(h, justify="left" if j == "l" else "right")
        for r in rows:
            t.add_row(*[str(x) for x in r])
        console.print(t)
    for f in findings(c):
        console.print(f, markup=False, highlight=False)
    for n in c["notes"]:
        console.print(f"note: {n}", markup=False, highlight=False)


def markdown(c: dict) -> str:
    """The report section "The site over time (cluster twin)" for report.md."""
    return "\n".join([
        "## The site over time (cluster twin)\n", headline(c) + ".\n", "\n".join(f"- {f}" for f in findings(c)) + "\n",
        "### Where the GPU-time went\n", table(["bucket", "GPU-hours", "share"], bucket_rows(c), "lrr"),
        "### By job size\n", table(SIZE_HEAD, size_rows(c), "lrrrrrrrrr"),
        "### Failures\n", table(FAILURE_HEAD, failure_rows(c), "lllrrrr"),
    ])
