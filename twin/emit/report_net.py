"""Terminal tables and Markdown for simulation results, shaped like nccl-tests output.

Why nccl-tests' shape: it is what people compare against on real clusters, so a twin number can be
put next to a measured one column by column (size, count, type, time, algbw, busbw).
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from twin.emit import report_reliability as campaign_report
from twin.emit.markdown import table


def job_setup(j: dict) -> str:
    """The software stack a job ran under and its memory per GPU, as a phrase."""
    mem = j.get("memory") or {}
    stack = f"stack {j['stack']}" + (" (default)" if j.get("stack_defaulted") else "") if j.get("stack") else ""
    fill = f"{mem['total_bytes'] / 1e9:.1f} of {mem['hbm_bytes'] / 1e9:.0f} GB HBM per GPU" if mem.get("hbm_bytes") else ""
    return ", ".join(x for x in (stack, fill) if x)


def _schemes(data: dict) -> list[str]:
    return [s["name"] for s in data["schemes"]]


def render(data: dict, console: Console) -> None:
    console.width = max(console.width, 132)  # nccl-tests-shaped tables are wide; never squeeze them
    nc = data.get("nccl", {})
    console.print(f"[bold]{data['scenario']}[/bold] on {data['site']} ({data['gpus']:,} GPUs); Simple protocol efficiency "
                  f"{data['protocol_efficiency']:g}; channels per NIC {nc.get('channels_per_nic', 'auto')}, NIC latency "
                  f"{nc.get('nic_latency_us', 0):g} us; extra step overhead {data['step_overhead_us']:g} us")
    for n in data["notes"]:
        console.print(f"note: {n}", markup=False)
    for pl in data.get("plans", []):  # plan: best (twin/twins/plan/best.py)
        sp, tied = pl["space"], pl["indistinguishable_from_pick"]
        console.print(f"plan: best for job {pl['job'] + 1} ({pl['workload']}, {pl['gpus']:,} GPUs): {pl['pick']}, predicted step "
                      f"{pl['predicted_step_s']:.3f} s; {sp['enumerated']:,} plans enumerated, {sp['feasible']:,} feasible, "
                      f"{sp['scored']:,} scored" + (f"; {len(tied)} within the model's {100 * pl['model_error']:.1f}% error, not told apart"
                                                     if tied else "; no other leader within the model's error"), markup=False)
    names = _schemes(data)
    for case in data["cases"]:
        for c in case["collectives"]:
            t = Table(title=f"{case['case']}: {c['name']} ({c['op']}/{c['algorithm']}, {c['ranks']} ranks)", title_justify="left")
            for col in ("size (B)", "count", "type", "routing", "proto", "time (us)", "latency (us)", "algbw (GB/s)", "busbw (GB/s)"):
                t.add_column(col, justify="left" if col in ("type", "routing", "proto") else "right")
            for row in c["table"]:
                for k, n in enumerate(names):
                    r = row[n]
                    head = [f"{row['size']:,}", f"{row['count']:,}", row["type"]] if k == 0 else ["", "", ""]
                    t.add_row(*head, n, r.get("protocol", ""), f"{r['time_us']:,.1f}", f"{r.get('latency_us', 0):,.1f}",
                              f"{r['algbw_GBps']:.2f}", f"{r['busbw_GBps']:.2f}", end_section=k == len(names) - 1)
            console.print(t)
            if c.get("comparison"):
                _comparison(console, c, [row["size"] for row in c["table"]])
            lt = Table(title="link load on the fabric (dominant phase)", title_justify="left")
            for col in ("scheme", "max/mean load", "flows", "flow classes", "rate events", "latency % (largest size)"):
                lt.add_column(col, justify="right")
            for e in c["schemes"]:
                ph = max(e["phases"], key=lambda p: p["repeat"] * p["us_per_MiB"])
                lt.add_row(e["scheme"], ratio(e['link_load']['max_over_mean']), f"{ph['flows']:,}", f"{ph['classes']:,}", str(ph["events"]),
                           f"{100 * e.get('latency_share_at_max_size', 0.0):.1f}")
            console.print(lt)
        for j in case["jobs"]:
            meas = j.get("measured_tflops_per_gpu")
            t = Table(title=f"{case['case']}: job {j['workload']} ({j['parallelism']}, {j['gpus']:,} GPUs, seq {j['sequence_length']:,}, "
                            f"{j['order']} order, ranks {j.get('dims', '?')}; compute {j['compute_s']:.2f} s, bubble {j['bubble_s']:.2f} s; {job_setup(j)}"
                            + (f"; measured {meas:g} TFLOPs/GPU" if meas else "") + ")", title_justify="left")
            for col in ("scheme", "step s", "exposed comm s", "exposed %", "TP s", "CP s", "PP s", "DP s (exposed)", "latency % of comm", "TFLOPs/GPU", "MFU"):
                t.add_column(col, justify="right")
            for s in j["schemes"]:
                t.add_row(s["scheme"], f"{s['step_s']:.3f}", f"{s['exposed_comm_s']:.3f}", f"{100 * s['exposed_fraction']:.1f}",
                          f"{s['tp_s']:.3f}", f"{s['cp_s']:.3f}", f"{s['pp_exposed_s']:.3f}", f"{s['dp_s']:.3f} ({s['dp_exposed_s']:.3f})",
                          f"{100 * s['latency_share']:.1f}", f"{s['predicted_tflops_per_gpu']:.0f}", f"{100 * s['predicted_mfu']:.1f}%")
            console.print(t)
            for s in j["schemes"]:
                for x in s.get("algorithms_not_timed", []):
                    console.print(f"note: {s['scheme']}: {x}", markup=False)
        for sv in case.get("serving", []):
            t = Table(title=f"{case['case']}: serving {sv['name']} (TP{sv['tp']} PP{sv['pp']}, batch {sv['batch']}, prompt {sv['prompt_tokens']:,}, "
                            f"{'across servers' if sv['spans_servers'] else 'one server'}; decode AllReduce {sv['decode_allreduce_bytes']:,} B)",
                      title_justify="left")
            for col in ("scheme", "TTFT ms", "latency share", "TPOT ms", "latency share", "AllReduce us", "proto", "tokens/s"):
                t.add_column(col, justify="right")
            for s in sv["schemes"]:
                p, d = s["prefill"], s["decode"]
                t.add_row(s["scheme"], f"{s['ttft_s'] * 1e3:.1f}", f"{100 * p['collective_latency_share']:.1f}%", f"{s['tpot_s'] * 1e3:.2f}",
                          f"{100 * d['collective_latency_share']:.1f}%", f"{d['allreduce_us']:.1f}", d["allreduce_protocol"], f"{s['tokens_per_s']:.0f}")
            console.print(t)
    if "campaign" in data:  # the reliability twin (twin/emit/report_reliability.py)
        campaign_report.render(data["campaign"], console)
    if "cluster" in data:  # the cluster twin (twin/emit/report_cluster.py)
        from twin.emit.report_cluster import render as render_cluster

        render_cluster(data["cluster"], console)
    if "power" in data:  # the power and thermal twin (twin/twins/power)
        from twin.emit.report_power import render as render_power

        render_power(data["power"], console)


def _comparison(console: Console, c: dict, sizes: list[int]) -> None:
    for scheme, cmp in c["comparison"].items():
        t = Table(title=f"fastest algorithm by size ({scheme})", title_justify="left")
        algs = list(cmp["time_us"][0])
        for col in ["size (B)"] + [f"{a} (us)" for a in algs] + ["fastest"]:
            t.add_column(col, justify="right")
        for size, times, best in zip(sizes, cmp["time_us"], cmp["fastest"]):
            t.add_row(f"{size:,}", *[f"{times[a]:,.1f}" for a in algs], best)
        console.print(t)
        for x in cmp["crossovers"]:
            console.print(f"crossover: {x['from']} -> {x['to']} between {x['between'][0]:,} and {x['between'][1]:,} bytes", markup=False)


def ratio(x: float | None) -> str:
    """max/mean link load for people: "-" where the collective crosses no fabric link."""
    return "-" if x is None else f"{x:.2f}"


def markdown(data: dict) -> str:
    """A compact Markdown summary: busbw at the largest size and max/mean link load per scheme."""
    rows = []
    for case in data["cases"]:
        for c in case["collectives"]:
            for e in c["schemes"]:
                rows.append([case["case"], c["name"], f"{c['op']}/{c['algorithm']}", c["ranks"], e["scheme"],
                             f"{e['busbw_GBps_at_max_size']:.1f}", ratio(e['link_load']['max_over_mean'])])
    return table(["case", "collective", "algorithm", "ranks", "routing", "busbw GB/s (largest size)", "max/mean link load"], rows, "lllrlrr")


def channels_note(ch: dict) -> str:
    """Why 1-QP ECMP costs the flat ring more than the hierarchical AllReduce, with this site's channels."""
    if "ring" not in ch or "hierarchical" not in ch:
        return ""
    return (f"\n\nThe flat ring runs {ch['ring']} channels per NIC, so 1 QP hashes {ch['ring']} flows per NIC and every channel "
            f"waits for its most loaded link. The hierarchical AllReduce (NVLink inside each server, then one ring per rail, "
            f"a communicator of one GPU per server: {ch['hierarchical']} channels per NIC) loses less to hashing; it is the "
            "case of Meta's \"up to 40%\" for E-ECMP with 16 QPs ([meta-roce], [meta-roce-blog]).")


def design_section(r: dict | None, pictures: dict[str, str] | None = None, note: str = "", error: str | None = None) -> str | None:
    """Report section "Collective performance (twin)" from the build's default twin run
    (:func:`twin.twins.default.design_results`); ``pictures`` maps a picture's role (busbw, load, job)
    to its Markdown image line; ``error``: why the run could not run (the section says so)."""
    if r is None:
        return None if error is None else (f"## Collective performance (twin)\n\nThe build's default twin could not run: {error}. "
                                           "The design's other artifacts are complete; this report has no twin figures.")

    pictures = pictures or {}
    big = len(r["sizes"]) - 1
    def gbps(v):
        return "-" if v is None else f"{v:.1f}"

    rows = [[e["name"], f"{e['busbw_GBps'][big]:.1f}", f"{e['time_ms'][big]:.2f}",
             ratio(e["max_over_mean"]), gbps(e.get("hierarchical_busbw_GBps"))]
            for e in r["schemes"]]
    out = [f"## Collective performance (twin)\n\nThe build's default twin run. Ring AllReduce over the first {r['gpus']} GPUs "
           f"({r['racks']} racks), flow-level max-min model, protocol efficiency {r['protocol_efficiency']:g}; the table is at "
           f"{r['sizes'][big] / 2**30:g} GiB; link load is max/mean over the fabric links a shortest path may take, loaded or not "
           f"(as `twin simulate` reports it). Run `twin simulate` with a scenario for the whole site, failures and jobs.\n\n"
           + table(["routing", "busbw GB/s", "time ms", "max/mean fabric link load", "hierarchical busbw GB/s"], rows, "lrrrr")
           + channels_note(r.get("channels_per_nic", {}))]
    out += [pictures[k] for k in ("busbw", "load") if k in pictures]
    j = r.get("job")
    if j and "error" in j:
        out.append(f"\nJob `{j['workload']}` was not timed: {j['error']}.\n")
    elif j:
        out.append(f"\n### Training step of `{j['workload']}` (job twin)\n\n{j['parallelism']} on {j['gpus']:,} GPUs in topology order, "
                   f"{j['microbatches']} micro-batches per pipeline: compute {j['compute_s']:.3f} s, pipeline bubble {j['bubble_s']:.3f} s per step; "
                   f"{job_setup(j)}." + (f" Default run: {note}.\n\n" if note else "\n\n")
                   + table(["routing", "step s", "TP s", "CP s", "PP exposed s", "DP s (exposed)", "exposed %", "predicted TFLOPs/GPU"],
                           [[s["scheme"], f"{s['step_s']:.3f}", f"{s['tp_s']:.3f}", f"{s['cp_s']:.3f}", f"{s['pp_exposed_s']:.3f}",
                             f"{s['dp_s']:.3f} ({s['dp_exposed_s']:.3f})", f"{100 * s['exposed_fraction']:.1f}",
                             f"{s['predicted_tflops_per_gpu']:.0f}"] for s in j["schemes"]], "lrrrrrrr"))
        if "job" in pictures:
            out.append(pictures["job"])
    return "\n".join(out)
