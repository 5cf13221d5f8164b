"""Pictures of the build's default twin run (:func:`twin.twins.default.design_results`): busbw against
message size per routing scheme, the histogram of fabric link loads, and the job's step breakdown."""

from __future__ import annotations

from twin.emit.svg import INK, PALETTE, Canvas, line_chart, nice_ticks

PARTS = [("compute_s", "compute", "#4e79a7"), ("bubble_s", "pipeline bubble", "#bab0ac"), ("tp_s", "TP", "#f28e2b"),
         ("cp_s", "CP", "#b07aa1"), ("pp_exposed_s", "PP (exposed)", "#76b7b2"), ("dp_exposed_s", "DP (exposed)", "#e15759")]


def size_label(b: float) -> str:
    """1 MiB, 64 MiB, 1 GiB.

    >>> size_label(2**20), size_label(2**30)
    ('1 MiB', '1 GiB')
    """
    return f"{b / 2**30:g} GiB" if b >= 2**30 else f"{b / 2**20:g} MiB"


def busbw_svg(r: dict) -> bytes:
    series = [(e["name"], PALETTE[k], list(zip(r["sizes"], e["busbw_GBps"]))) for k, e in enumerate(r["schemes"])]
    return line_chart(f"Ring AllReduce busbw over {r['gpus']} GPUs by message size", "message size (log scale)", "busbw (GB/s)",
                      series, [(z, size_label(z)) for z in r["sizes"]], log_x=True)


def load_svg(r: dict) -> bytes:
    """Frequency polygons: fabric links per load bin (x the mean load), one line per scheme."""
    b = r["load_bin"]
    series = [(e["name"], PALETTE[k], [((i + 0.5) * b, n) for i, n in enumerate(e["load_hist"])]) for k, e in enumerate(r["schemes"])]
    top = max(len(e["load_hist"]) for e in r["schemes"]) * b
    ticks = [(t, f"{t:g}") for t in nice_ticks(top, 6)]
    return line_chart("Fabric link load during the AllReduce (links per bin; 1 = the mean load)", "link load / mean load", "links",
                      series, ticks)


def job_svg(j: dict, run: str = "", note: str = "") -> bytes:
    """One stacked bar per routing scheme: compute, bubble and each exposed communication part of a step;
    ``run`` names the run in the title (the default run, a scenario), ``note`` (a line under it) what
    differs from the other."""
    L, R, T, bar = 150, 40, 40 + (14 if note else 0), 22
    W = 760
    H = T + len(j["schemes"]) * (bar + 12) + 60
    top = nice_ticks(max(s["step_s"] for s in j["schemes"]) * 1.05, 5)[-1] or 1
    pw = W - L - R
    prefix = f"{run}: " if run else ""
    c = Canvas(W, H, f"{prefix}Training step of {j['workload']}")
    c.text(12, 18, f"{prefix}Training step of {j['workload']} ({j['parallelism']}, {j['gpus']:,} GPUs): where the time goes", bold=True)
    if note:
        c.text(12, 34, note, size=10, fill="#777777")
    for t in nice_ticks(top, 5):
        x = L + t / top * pw
        c.line(x, T - 4, x, H - 46, "#eeeeee")
        c.text(x, H - 34, f"{t:g} s", anchor="middle", size=9)
    y = T
    for s in j["schemes"]:
        c.text(L - 8, y + bar / 2 + 4, s["scheme"], anchor="end", size=10)
        x = L
        for key, label, colour in PARTS:
            v = s[key] if key != "compute_s" and key != "bubble_s" else j[key]
            if v <= 0:
                continue
            w = v / top * pw
            c.rect(x, y, w, bar, colour, tip=f"{s['scheme']}: {label} {v:.3f} s")
            x += w
        c.text(x + 4, y + bar / 2 + 4, f"{s['step_s']:.3f} s", size=9, fill=INK)
        y += bar + 12
    c.legend(L, H - 10, [(col, label) for _, label, col in PARTS])
    return c.svg()


JOB_INPUTS = ("gpus", "parallelism", "dims", "order", "sequence_length", "stack", "microbatches", "virtual_stages")


def differences(default: dict | None, j: dict) -> list[str]:
    """What a scenario's job sets differently from the default run's job of the same workload
    (``name old -> new``, the recipe's fields as ``recipe.name``); empty when the workloads differ.

    >>> differences({"workload": "w", "virtual_stages": 8, "recipe": {"zero": 1}}, {"workload": "w", "virtual_stages": 4, "recipe": {"zero": 1}})
    ['virtual_stages 8 -> 4']
    """
    if not default or default.get("workload") != j.get("workload"):
        return []
    out = [f"{k} {default.get(k)} -> {j.get(k)}" for k in JOB_INPUTS if default.get(k) != j.get(k)]
    a, b = default.get("recipe") or {}, j.get("recipe") or {}
    out += [f"recipe.{k} {a.get(k)} -> {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return out


def versus_scenario(default_job: dict | None, scenario: dict | None) -> str:
    """What the default run's job is against the scenario's run of the same workload (empty when the
    scenario runs no job of that workload): the default run takes the site's workload as written.

    >>> versus_scenario({"workload": "w", "virtual_stages": 8}, {"scenario": "s", "cases": [{"jobs": [{"workload": "w", "virtual_stages": 4}]}]})
    "the site's workload as written; scenario s runs it with virtual_stages 8 -> 4"
    """
    if not default_job or not scenario:
        return ""
    for case in scenario.get("cases", []):
        for j in case.get("jobs", []):
            if j.get("workload") == default_job.get("workload"):
                diff = differences(default_job, j)
                name = scenario.get("scenario")
                return ("the site's workload as written; " + (f"scenario {name} runs it with " + ", ".join(diff) if diff
                                                             else f"the same inputs as scenario {name}'s run"))
    return ""


def pictures(r: dict | None, note: str = "") -> list[tuple[str, str, str, bytes]]:
    """(role, file name, caption, svg) for the report's twin section; ``note``: what the default run's job
    is against a scenario's run of it (:func:`versus_scenario`)."""
    if not r:
        return []
    out = [("busbw", "twin-busbw.svg", "Ring AllReduce bus bandwidth against message size, per routing scheme", busbw_svg(r)),
           ("load", "twin-link-load.svg", "Histogram of fabric link loads during the AllReduce, per routing scheme", load_svg(r))]
    j = r.get("job")
    if j and "schemes" in j:
        out.append(("job", "twin-job-step.svg", f"Default run: step breakdown of {j['workload']} per routing scheme", job_svg(j, "default run", note)))
    return out
