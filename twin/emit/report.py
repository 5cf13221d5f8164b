"""report.md and report.html: the design review a reviewer reads first.

The report is a list of sections; each is a function of the Design returning Markdown (or None to
skip it). Passes added later register their own sections in SECTIONS, so the report grows with the
pipeline without one module knowing every pass. PICTURES names, per section, the pictures drawn after
it (hand-written SVG, ``report/*.svg``); report.md embeds them as images, so it renders on a code
host, and report.html (:mod:`twin.emit.html`) is the same Markdown as one self-contained page with
the SVGs inlined.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from twin.analysis.review import dumps, figures
from twin.analysis.verdicts import Verdict
from twin.analysis.verdicts_twins import verdicts
from twin.compiler.design import Design
from twin.compiler.resolve import liquid
from twin.compiler.resolve.feasibility import hall_capacity
from twin.compiler.resolve.spec import rack_heat
from twin.emit import bom, campus_report, configs_report, cost_report, fabric_report, html, pic_budget, pic_buildings, pic_fabric, pic_floor, pic_twin, placement, report_twins, sizing_report, verdicts_report
from twin.emit.markdown import fold, pct, table
from twin.emit.report_net import design_section
from twin.lang.units import kw
from twin.twins.results import Runs
from twin.version import __version__

Picture = tuple[str, str, bytes]  # file name under report/, caption, SVG

Section = Callable[[Design], str | None]


def summary(d: Design) -> str:
    s = d.spec
    f = s.fabric
    rows = [
        ["GPUs", f"{s.gpus:,}"],
        ["GPU servers", f"{d.fabric.server_count():,} x {s.rack_type.chassis}"],
        ["GPU racks", f"{s.racks:,} x {s.rack_type_name} ({s.rack.gpus} GPUs each)"],
        ["Fabric", f"{f.technology.value}, {f.family.value}"],
        ["AI zones", f"{s.zones} x {s.racks_per_zone} racks" if s.family.zoned else "-"],
        ["NIC speed", f"{s.nic_speed / 1e9:g} Gbit/s x {s.rack.nics // s.rack_type.servers} per server"],
        ["IT power", kw(d.budget.it_power)],
        ["Facility power", f"{kw(d.budget.facility_power)} (PUE {s.site.power.pue:g})"],
        ["Halls", ", ".join(h.name for h in s.site.halls)],
    ]
    return "## Summary\n\n" + table(["", ""], rows, "ll")


def title(d: Design, runs: Runs | None = None) -> str:
    """The title, and what the report is of: every input by name and sha256, and the tool's version."""
    s = d.spec
    head = f"# {s.name}: design report\n\n"
    if s.site.description:
        head += s.site.description + "\n\n"
    inputs = f"Spec `{Path(s.source_path).name}` (sha256 `{s.source_sha256}`)"
    if runs is not None and runs.scenario is not None:
        inputs += f", scenario `{Path(runs.scenario[0]).name}`" + (f" (sha256 `{runs.scenario_sha256}`)" if runs.scenario_sha256 else "")
        inputs += "".join(f", `{name}` named by the scenario (sha256 `{sha}`)" for name, sha in runs.named_files)
    return head + inputs + f"; built by twin {__version__}.\n"


def verdicts_section(d: Design) -> str | None:
    """Placeholder in SECTIONS for the verdicts screen (composed from the build's verdicts)."""
    return None


def rack_section(d: Design) -> str:
    s = d.spec
    r = s.rack
    c = s.chassis
    rows = [
        [f"{s.rack_type.servers} x {s.rack_type.chassis}" + (f" (half of a {c.span}-rack system)" if c.span > 1 else ""),
         f"{c.gpus // c.span} x {c.gpu_model} at {r.gpu_power_cap:g} W cap (TDP {c.gpu_tdp:g} W)", kw(s.rack_type.servers * r.server_power / c.span)],
    ]
    if s.rtsw_model:
        planes = f" ({s.fabric.planes} planes)" if s.fabric.planes > 1 else ""
        rows.append([f"{s.rack_type.rtsw_count * s.fabric.planes} x {s.rack_type.rtsw}", f"rack switch{planes}", kw(r.rtsw_power)])
    if s.rack_type.other_power:
        rows.append(["other", "fans, management", kw(s.rack_type.other_power)])
    rows.append(["**rack total**", f"power shelf {kw(s.rack_type.power_shelf)} ({pct(r.power / s.rack_type.power_shelf)} used)", f"**{kw(r.power)}**"])
    out = "## Rack\n\n" + table(["contents", "notes", "power"], rows, "llr")
    rs = c.rack_scale
    if rs is not None:
        liquid, air = rack_heat(s.rack_type, c, r)
        pair = f" over a pair of adjacent racks ({rs.compute_trays // rs.racks} compute and {rs.switch_trays // rs.racks} switch trays in each)" if rs.racks > 1 else ""
        out += (f"\nA rack-scale system: one NVLink domain of {c.domain} GPUs on {rs.compute_trays} compute trays of "
                f"{rs.gpus_per_tray} GPUs and {rs.switch_trays} NVLink switch trays{pair}. Heat per rack: {kw(liquid)} to liquid "
                f"({pct(rs.liquid_fraction)} of the system), {kw(air)} to air.\n")
    return out


def power_section(d: Design) -> str:
    s = d.spec
    b = d.budget
    out = ["## Power and cooling budget\n"]
    out.append(
        "Racks fill halls zone by zone in order (the placement pass refines this per row and busway). "
        "Distribution capacity is what remains after the worst single failure: with 2N, one busway of "
        "each row carries the row; with N+1, one UPS block is lost. Every rating is derated.\n"
    )
    rows = []
    for h, hb in zip(s.site.halls, b.halls):
        rows.append([
            h.name,
            hb.gpu_racks,
            hb.positions,
            kw(hb.it_power),
            f"{kw(hb.distribution)} ({pct(hb.it_power / hb.distribution) if hb.distribution else '-'})",
            f"{kw(hb.facility_power)} / {kw(hb.utility)} ({pct(hb.facility_power / hb.utility)})",
            f"{kw(hb.cooling)} ({pct(hb.air_heat / hb.cooling) if hb.cooling else '-'})",
            h.power.redundancy.value,
        ])
    out.append(table(["hall", "GPU racks", "GPU positions", "IT load", "distribution (used)", "facility / utility", "cooling (used)", "redundancy"], fold(rows), "lrrrrrrl"))
    out.append("\n" + table(
        ["level", "load", "capacity", "used"],
        [
            ["rack", kw(b.rack_power), kw(s.rack_type.power_shelf), pct(b.rack_power / s.rack_type.power_shelf)],
            ["site IT (GPU racks + network outside them + optics)", kw(b.it_power), "", ""],
            *_network_rows(b),
            [f"site facility (x PUE {s.site.power.pue:g})", kw(b.facility_power), kw(b.utility), pct(b.facility_power / b.utility)],
        ],
        "lrrr",
    ))
    worst_row = []
    for h in s.site.halls:
        dist, cool = hall_capacity(h)
        per_row_cap = dist / h.rows
        per_row_cool = cool / h.rows
        gpu_slots = s.positions[h.name] / h.rows
        worst_row.append([h.name, f"{gpu_slots:g}", kw(gpu_slots * b.rack_power), kw(per_row_cap), kw(per_row_cool)])
    out.append("\nA full row (every GPU position filled) against its per-row limits:\n\n")
    out.append(table(["hall", "GPU positions / row", "full-row load", "row power limit", "row cooling"], fold(worst_row), "lrrrr"))
    out += liquid_table(d)
    return "\n".join(out)


def _network_rows(b) -> list[list[str]]:
    """The network's watts as the budget counts them; once the BOM exists they add up to its network power."""
    if not b.network_from_bom:
        return [["network switches outside the GPU racks (estimate from the shape)", kw(b.network_power), "", ""]]
    return [["network switches outside the GPU racks (and fabric endpoints)", kw(b.network_power), "", ""],
            ["rack switches (inside the GPU racks' power above)", kw(b.rack_switch_power), "", ""],
            ["optics and powered cables", kw(b.optics_power), "", ""],
            ["network total (= the bill of materials' network power)", kw(b.network_total), "", ""]]


def liquid_table(d: Design) -> list[str]:
    """Halls with CDUs: the liquid heat, what the CDUs carry per row (or rack) in every state, the facility water."""
    s, b = d.spec, d.budget
    rows = []
    for h in s.site.halls:
        c, fw = h.cooling.cdus, h.cooling.facility_water
        hb = next((x for x in b.halls if x.name == h.name), None)
        if c is None or fw is None or hb is None:
            continue
        per = "row" if c.kind == "in-row" else "GPU rack"
        states = "; ".join(f"{st} {kw(cap)}" for st, cap, _ in liquid.unit_states(c))
        rows.append([h.name, kw(hb.liquid), f"{kw(hb.air_heat)} ({pct(hb.air_heat / hb.cooling) if hb.cooling else '-'})", f"{c.count} {c.kind} x {kw(liquid.cdu_heat(c, c.pumps))}", f"per {per}: {states}",
                     f"{fw.supply_temperature:g} / {c.supply_temperature:g} degC", f"{kw(liquid.facility_heat(fw))} ({pct(hb.liquid / liquid.facility_heat(fw))})"])
    if not rows:
        return []
    return ["\nLiquid cooling: the GPU racks' liquid heat (liquid_share x rack power), what the CDUs carry in normal operation"
            " and after the loss of one CDU or pump (placement holds every row to it), and the facility water:\n\n",
            table(["hall", "liquid heat", "air heat (used)", "CDUs", "CDU capacity by state", "facility / coolant supply",
                   "facility water (used)"], fold(rows), "lrrllrr")]


def workloads_section(d: Design) -> str | None:
    jobs = d.spec.site.workloads
    if not jobs:
        return None
    rows = [[j.name, f"{j.parameters / 1e9:g}B", f"TP{j.tp} CP{j.cp} PP{j.pp} DP{j.dp}", f"{j.gpus:,}", j.sequence_length, j.global_batch,
             f"{j.measured:g}" if j.measured is not None else (f"MFU {j.mfu:g}" if j.mfu else "-")] for j in jobs]
    return ("## Workloads\n\n" + table(["job", "params", "parallelism", "GPUs", "seq len", "global batch", "measured TFLOPs/GPU"], rows, "llrrrrl")
            + "\nMeasured rates are for comparison; `twin simulate` predicts each job's rate from its shape and the fabric.\n")


def warnings_section(d: Design) -> str | None:
    if not d.warnings:
        return None
    return "## Warnings\n\n" + "".join(
        f"- `{Path(w.file).name}:{w.line}:{w.col}` `{w.dotted}`: {w.message}" + (f" (expected {w.expected})" if w.expected else "") + "\n"
        for w in d.warnings)


def sim_section(d: Design) -> str | None:
    """Placeholder in SECTIONS for the default twin run's section (composed from the build's Runs)."""
    return None


def twins_section(d: Design) -> str:
    """The scenario, reliability and power twins' sections; with no scenario, which twins did not run."""
    return "\n\n".join(report_twins.twin_sections(Path(d.spec.source_path).name, None, None)[0])


def floor_pictures(d: Design) -> list[str | Picture]:
    """Every hall's floor plan; on a campus of more halls than a page holds, the campus by building and the
    floor plan of each building's fullest hall (:mod:`twin.emit.pic_buildings`)."""
    campus = pic_buildings.picture(d)
    pics = pic_floor.floor_pictures(d, pic_buildings.floor_halls(d))
    if campus is None:
        return (["### Floor plans"] + pics) if pics else []
    return ["### The campus by building", campus, "### Floor plans: the fullest hall of each building"] + pics


def placement_pictures(d: Design) -> list[str | Picture]:
    pcs = [p for p in pic_budget.pictures(d) if p[0] == "powercap.svg"]
    return floor_pictures(d) + ((["### GPU power-cap curve"] + pcs) if pcs else [])


SECTIONS: list[Section] = [
    title,
    verdicts_section,
    summary,
    rack_section,
    power_section,
    placement.section,
    fabric_report.fabric_section,
    sizing_report.section,
    bom.section,
    cost_report.section,
    fabric_report.cabling_section,
    campus_report.section,
    configs_report.section,
    workloads_section,
    sim_section,
    twins_section,
]
TRAILING: list[Section] = [warnings_section]
PICTURES: dict[Section, Callable[[Design], list[str | Picture]]] = {
    power_section: lambda d: [p for p in pic_budget.pictures(d) if p[0] == "budget.svg"],
    placement.section: placement_pictures,
    fabric_report.fabric_section: pic_fabric.pictures,
    fabric_report.cabling_section: pic_budget.cable_pictures,
}


def image(name: str, caption: str) -> str:
    return f"![{caption}](report/{name})"


def compose(d: Design, runs: Runs | None = None, risks: list[Verdict] | None = None) -> tuple[str, dict[str, bytes]]:
    """The report's Markdown and its pictures (``report/<name>.svg`` -> SVG bytes) from the design and
    the twins' results the build ran (``runs``: the default run and a scenario run with the build) and
    its verdicts (``risks``, :func:`twin.analysis.verdicts.verdicts`; None: computed here, without the
    lines of the spec that state each limit, since an emitter reads no file)."""
    runs = runs or Runs()
    scenario = runs.scenario
    if risks is None:
        risks = verdicts(d, scenario, locate=False)
    pictures: dict[str, bytes] = {}
    parts = []
    for sec in SECTIONS + TRAILING:
        if sec is title:
            text = title(d, runs)
        elif sec is verdicts_section:
            text = verdicts_report.section(risks, scenario[1].get("scenario") if scenario else None)
        elif sec is sim_section:  # the default run feeds both its tables and its pictures
            results = runs.default
            note = pic_twin.versus_scenario((results or {}).get("job"), scenario[1] if scenario else None)
            pics = pic_twin.pictures(results, note)
            pictures.update({f"report/{n}": svg for _r, n, _c, svg in pics})
            text = design_section(results, {role: "\n" + image(n, c) + "\n" for role, n, c, _s in pics}, note, runs.default_error)
        elif sec is twins_section:
            texts, pics = report_twins.twin_sections(Path(d.spec.source_path).name, scenario[1] if scenario else None,
                                                     scenario[0] if scenario else None, runs.power_views,
                                                     (runs.default or {}).get("job"))
            pictures.update({f"report/{n}": svg for n, _c, svg in pics})
            text = "\n\n".join(texts)
        else:
            text = sec(d)
            if text and sec in PICTURES:
                for item in PICTURES[sec](d):
                    if isinstance(item, str):
                        text += f"\n\n{item}\n"
                    else:
                        name, caption, svg = item
                        pictures[f"report/{name}"] = svg
                        text += "\n\n" + image(name, caption)
        if text:
            parts.append(text)
    return normalise_blank_lines("\n\n".join(parts)), pictures


def render(d: Design, runs: Runs | None = None, risks: list[Verdict] | None = None) -> str:
    return compose(d, runs, risks)[0]


def normalise_blank_lines(text: str) -> str:
    r"""At most one blank line between blocks, none at the ends, one final newline.

    Sections are written independently and each pads its tables with newlines, so joining them piles
    up blank lines; collapsing them here keeps every section free to pad. Fenced code blocks are
    left as written (blank lines inside them are content).

    >>> normalise_blank_lines("# a\n\n\n| t |\n  \n\n```\nx\n\n\ny\n```\n\n")
    '# a\n\n| t |\n\n```\nx\n\n\ny\n```\n'
    """
    out: list[str] = []
    fence = None
    for line in text.splitlines():
        marker = line.lstrip()[:3]
        if fence is None and marker in ("```", "~~~"):
            fence = marker
        elif fence is not None and marker == fence:
            fence = None
        elif fence is None and not line.strip():
            if out and out[-1]:
                out.append("")
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n"


def emit(d: Design, runs: Runs | None = None, risks: list[Verdict] | None = None) -> dict[str, bytes]:
    """report.md, report.html, report/*.svg and review.json from the design, the twins' results the
    build ran (``runs``) and its verdicts (``risks``)."""
    runs = runs or Runs()
    if risks is None:
        risks = verdicts(d, runs.scenario, locate=False)
    markdown, pictures = compose(d, runs, risks)
    return {"report.md": markdown.encode("utf-8"), "report.html": html.page(f"{d.name}: design report", markdown, pictures),
            "review.json": dumps(figures(d, runs.default, scenario=runs.scenario[1] if runs.scenario else None), [v.to_json() for v in risks]),
            verdicts_report.CSV: verdicts_report.verdicts_csv(risks), **pictures}
