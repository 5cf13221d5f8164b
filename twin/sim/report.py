"""Terminal tables and Markdown for simulation results, shaped like nccl-tests output.

Why nccl-tests' shape: it is what people compare against on real clusters, so a twin number can be
put next to a measured one column by column (size, count, type, time, algbw, busbw).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def _schemes(data: dict) -> list[str]:
    return [s["name"] for s in data["schemes"]]


def render(data: dict, console: Console) -> None:
    console.width = max(console.width, 132)  # nccl-tests-shaped tables are wide; never squeeze them
    console.print(f"[bold]{data['scenario']}[/bold] on {data['site']} ({data['gpus']:,} GPUs); protocol efficiency "
                  f"{data['protocol_efficiency']:g}, step overhead {data['step_overhead_us']:g} us")
    for n in data["notes"]:
        console.print(f"note: {n}", markup=False)
    names = _schemes(data)
    for case in data["cases"]:
        for c in case["collectives"]:
            t = Table(title=f"{case['case']}: {c['name']} ({c['op']}/{c['algorithm']}, {c['ranks']} ranks)", title_justify="left")
            for col in ("size (B)", "count", "type", "routing", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
                t.add_column(col, justify="left" if col in ("type", "routing") else "right")
            for row in c["table"]:
                for k, n in enumerate(names):
                    r = row[n]
                    head = [f"{row['size']:,}", f"{row['count']:,}", row["type"]] if k == 0 else ["", "", ""]
                    t.add_row(*head, n, f"{r['time_us']:,.1f}", f"{r['algbw_GBps']:.2f}", f"{r['busbw_GBps']:.2f}",
                              end_section=k == len(names) - 1)
            console.print(t)
            lt = Table(title="link load on the fabric (dominant phase)", title_justify="left")
            for col in ("scheme", "max/mean load", "flows", "flow classes", "rate events"):
                lt.add_column(col, justify="right")
            for e in c["schemes"]:
                ph = max(e["phases"], key=lambda p: p["repeat"] * p["us_per_MiB"])
                lt.add_row(e["scheme"], f"{e['link_load']['max_over_mean']:.2f}", f"{ph['flows']:,}", f"{ph['classes']:,}", str(ph["events"]))
            console.print(lt)
        for j in case["jobs"]:
            t = Table(title=f"{case['case']}: job {j['workload']} ({j['parallelism']}, {j['gpus']:,} GPUs, {j['order']} order, "
                            f"compute {j['compute_s']:.2f} s, bubble {j['bubble_s']:.2f} s)", title_justify="left")
            for col in ("scheme", "step s", "exposed comm s", "exposed %", "TP s", "PP s", "DP s (exposed)", "eff. TFLOPs/GPU"):
                t.add_column(col, justify="right")
            for s in j["schemes"]:
                t.add_row(s["scheme"], f"{s['step_s']:.3f}", f"{s['exposed_comm_s']:.3f}", f"{100 * s['exposed_fraction']:.1f}",
                          f"{s['tp_s']:.3f}", f"{s['pp_exposed_s']:.3f}", f"{s['dp_s']:.3f} ({s['dp_exposed_s']:.3f})",
                          f"{s['effective_tflops_per_gpu']:.0f}")
            console.print(t)


def markdown(data: dict) -> str:
    """A compact Markdown summary: busbw at the largest size and max/mean link load per scheme."""
    from ..emit.markdown import table

    rows = []
    for case in data["cases"]:
        for c in case["collectives"]:
            for e in c["schemes"]:
                rows.append([case["case"], c["name"], f"{c['op']}/{c['algorithm']}", c["ranks"], e["scheme"],
                             f"{e['busbw_GBps_at_max_size']:.1f}", f"{e['link_load']['max_over_mean']:.2f}"])
    return table(["case", "collective", "algorithm", "ranks", "routing", "busbw GB/s (largest size)", "max/mean link load"], rows, "lllrlrr")
