"""Report sections of a scenario run with the build (``twin build --scenario FILE``).

A build always runs its default twin (``twin.twins.default.design_results``). With a scenario it also
runs that scenario's collectives and jobs, its ``campaign:`` (the reliability twin) and its ``power:``
(the power and thermal twin), and the report carries their sections: the scenario's busbw against size
per routing scheme, the job step breakdowns, and the twins' own Markdown sections
(:func:`twin.emit.report_reliability.markdown`, :func:`twin.emit.report_power.markdown_section`). A twin
that did not run says so, with the command that runs it; the report never shows a figure it did not
compute.
"""

from __future__ import annotations

from pathlib import Path

from twin.emit.markdown import table
from twin.emit.pic_campaign import pictures as campaign_pictures
from twin.emit.pic_power import pictures as power_pictures
from twin.emit.pic_twin import differences, job_svg, size_label
from twin.emit.report_net import job_setup
from twin.emit.svg import PALETTE, line_chart

Picture = tuple[str, str, bytes]


def collective_svg(case: str, c: dict, schemes: list[str]) -> bytes:
    series = [(n, PALETTE[k % len(PALETTE)], [(row["size"], row[n]["busbw_GBps"]) for row in c["table"]]) for k, n in enumerate(schemes)]
    sizes = [row["size"] for row in c["table"]]
    ticks = [(z, size_label(z) if z >= 2**20 else f"{z:g} B") for z in sizes]
    return line_chart(f"{case}: {c['name']} ({c['op']}/{c['algorithm']}, {c['ranks']} ranks) busbw by message size",
                      "message size (log scale)", "busbw (GB/s)", series, ticks, log_x=len(sizes) > 1)


def scenario_section(data: dict, scenario_file: str, default_job: dict | None = None) -> tuple[str, list[Picture]]:
    """The scenario's collectives and jobs (cases x routing schemes), with their pictures; a job of the
    default run's workload says what it sets differently (``default_job``: the default run's job)."""
    from twin.emit.report_net import markdown as collectives_table

    pics: list[Picture] = []
    names = [s["name"] for s in data["schemes"]]
    out = [f"## Scenario `{data['scenario']}` (twin)\n",
           f"Run with the build from `{Path(scenario_file).name}` on {data['gpus']:,} GPUs: protocol efficiency "
           f"{data['protocol_efficiency']:g}, step overhead {data['step_overhead_us']:g} us; routing schemes {', '.join(names) or '-'}.\n"]
    out += [f"- note: {n}" for n in data["notes"]]
    if any(case["collectives"] for case in data["cases"]):
        out.append("\n" + collectives_table(data))
        for ci, case in enumerate(data["cases"]):
            for k, c in enumerate(case["collectives"]):
                name = f"scenario-c{ci + 1}-{k + 1}-busbw.svg"
                pics.append((name, f"{case['case']}: {c['name']} busbw against message size per routing scheme", collective_svg(case["case"], c, names)))
                out.append(f"\n![{pics[-1][1]}](report/{name})\n")
    for ci, case in enumerate(data["cases"]):
        for k, j in enumerate(case["jobs"]):
            out.append(f"\n### {case['case']}: job `{j['workload']}` ({j['order']} order)\n\n{j['parallelism']} on {j['gpus']:,} GPUs: "
                       f"compute {j['compute_s']:.3f} s, bubble {j['bubble_s']:.3f} s per step; {job_setup(j)}.\n\n")
            out.append(table(["routing", "step s", "exposed comm s", "exposed %", "eff. TFLOPs/GPU"],
                             [[s["scheme"], f"{s['step_s']:.3f}", f"{s['exposed_comm_s']:.3f}", f"{100 * s['exposed_fraction']:.1f}",
                               f"{s['predicted_tflops_per_gpu']:.0f}"] for s in j["schemes"]], "lrrrr"))
            out += [f"\n- note ({s['scheme']}): {x}" for s in j["schemes"] for x in s.get("algorithms_not_timed", [])]
            diff = differences(default_job, j)
            note = ""
            if default_job and default_job.get("workload") == j["workload"]:
                note = ("differs from the default run's job in " + ", ".join(diff)) if diff else "the same inputs as the default run's job"
                out.append(f"\nAgainst the default run (section \"Collective performance (twin)\"): {note}.\n")
            name = f"scenario-c{ci + 1}-job{k + 1}.svg"
            pics.append((name, f"{case['case']}: step breakdown of {j['workload']} per routing scheme",
                         job_svg(j, f"scenario {data['scenario']}", note)))
            out.append(f"\n![{pics[-1][1]}](report/{name})\n")
    return "\n".join(out), pics


def twin_sections(spec_file: str, data: dict | None, scenario_file: str | None,
                  power_views: dict | None = None, default_job: dict | None = None) -> tuple[list[str], list[Picture]]:
    """The scenario, reliability and power sections of a build (``data``: the scenario's result, or None;
    ``power_views``: the power twin's arrays, drawn as its traces at three zooms)."""
    from twin.emit.report_power import markdown_section
    from twin.emit.report_reliability import markdown as campaign_markdown

    parts: list[str] = []
    pics: list[Picture] = []
    if data is not None and data.get("cases"):
        text, pics = scenario_section(data, scenario_file or "", default_job)
        parts.append(text)
    missing = []
    if data is not None and "campaign" in data:
        figures = campaign_pictures(data["campaign"])
        pics = pics + figures
        parts.append(campaign_markdown(data["campaign"]) + "".join(f"\n\n![{c}](report/{n})" for n, c, _s in figures))
    else:
        missing.append("the reliability twin (a scenario's `campaign:`: interruptions, checkpoints, spares, ETTR)")
    if data is not None and "cluster" in data:
        from twin.emit.pic_cluster import pictures as cluster_pictures
        from twin.emit.report_cluster import markdown as cluster_markdown

        figures = cluster_pictures(data["cluster"])
        pics = pics + figures
        parts.append(cluster_markdown(data["cluster"]) + "".join(f"\n\n![{c}](report/{n})" for n, c, _s in figures))
    if data is not None and "power" in data:
        traces = power_pictures(data["power"], power_views)
        pics = pics + traces
        parts.append(markdown_section(data["power"]) + "".join(f"\n\n![{c}](report/{n})" for n, c, _s in traces))
    else:
        missing.append("the power and thermal twin (a scenario's `power:`: swings, utility limits, busways over time)")
    if missing:
        what = " or ".join(missing)
        ran = f"the scenario `{Path(scenario_file).name}`" if scenario_file else "no scenario"
        parts.append(f"## Twins not run\n\nThis build ran {ran}, so it did not run {what}; this report has no figures of theirs. "
                     "Run them with a scenario that has those sections, with the build or alone (the repository's "
                     "`scenarios/lab-twins.yaml` fits lab-2zone; `scenarios/llama3-405b-campaign.yaml` and "
                     "`scenarios/llama3-405b-power.yaml` fit meta-24k-roce):\n\n"
                     f"```\ntwin build {spec_file} --scenario SCENARIO.yaml\ntwin simulate {spec_file} --scenario SCENARIO.yaml\n```\n")
    return parts, pics

