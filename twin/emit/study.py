"""A fabric-only study's own artifacts (:mod:`twin.compiler.study`): ``study.md`` (what was built, what was
skipped and why, the fabric's counts, the links by tier and medium, the vendor's count, the default twin's
AllReduce and first job) and ``cabling/links.csv`` (every link, its ports, speed and medium, no length).

The other artifacts of a study are the ones that need no floor: :data:`EMITTERS`.
"""

from __future__ import annotations

from collections import Counter

from twin.compiler.design import Design
from twin.compiler.fabric.bom import port_counts
from twin.compiler.study import skipped
from twin.csvfmt import table as csv_table
from twin.emit import bom, cabling, configs_ib, model_export
from twin.emit.markdown import table

# what a study writes besides study.md and links.csv: none of them reads the floor
EMITTERS = [bom.emit, model_export.emit, configs_ib.emit]

LINK_COLUMNS = ["cable_id", "tier", "speed_gbps", "medium", "kind", "a_device", "a_port", "b_device", "b_port"]


def links_csv(design: Design) -> dict[str, bytes]:
    """``cabling/links.csv`` (no length, hall, rack or U: nothing stands anywhere) and ``breakouts.csv``."""
    plan, media = design.cabling, design.spec.catalog.media
    rows = [(lk.id, lk.tier, f"{lk.speed / 1e9:g}", plan.media[m], media[plan.media[m]].kind, lk.a, lk.a_port, lk.b, lk.b_port)
            for lk, m in zip(design.fabric.cables(), plan.medium.tolist(), strict=True)]
    files = {"cabling/links.csv": csv_table(LINK_COLUMNS, rows)}
    breakouts = cabling.breakout_rows(design)
    if breakouts:
        files["cabling/breakouts.csv"] = csv_table(cabling.BREAKOUT_COLUMNS, breakouts)
    return files


def emit(design: Design, runs=None, written: list[str] | None = None) -> dict[str, bytes]:
    """``study.md``: ``written`` names the artifacts the study wrote beside it."""
    spec, fabric, plan = design.spec, design.fabric, design.cabling
    g = fabric.graph
    out = [f"# {spec.name}: a fabric-only study", "",
           *([spec.site.description, ""] if spec.site.description else []),
           f"A site without halls: twin built its fabric ({spec.fabric.family.value}, {spec.gpus:,} GPUs in {spec.racks:,} racks of "
           f"{spec.rack_type_name}), its links and their media, the bill of materials"
           + (", the subnet manager's configs" if spec.fabric.technology.value == "infiniband" else "")
           + " and the default twin. Racks stand nowhere and cables have no length: nothing below is measured on a floor.", ""]
    roles = Counter(r for _, r in g.nodes(data="role"))
    out += ["## Fabric", "", table(["tier", "switches", "down", "up", "radix"],
                                   [[t.role, f"{roles[t.role]:,}", str(t.down), str(t.up), str(t.radix)] for t in spec.shape.tiers], "lrrrr"), ""]
    by = Counter((lk.tier, lk.speed, plan.media[m]) for lk, m in zip(fabric.cables(), plan.medium.tolist(), strict=True))
    out += ["## Links", "", "Each link tier's medium is the first of `fabric.media` at the link's speed (no length chooses one).", "",
            table(["link tier", "links", "speed", "medium"], [[t, f"{n:,}", f"{s / 1e9:g}G", m] for (t, s, m), n in sorted(by.items())], "lrrl"), ""]
    counts = port_counts(spec, fabric, plan)
    if counts:
        out += ["In the vendor's unit (a twin-port module's links are one cable of its port):", "",
                table(["link tier", "cables per link", "cables per module port"],
                      [[c.tier, f"{c.links:,}", f"{c.per_port:,} ({c.port_speed / 1e9:g}G)"] for c in counts], "lrr"), ""]
    items = [[ln.category, ln.item, f"{ln.quantity:,}"] for ln in design.bom if ln.category in ("switch", "transceiver", "cable", "endpoint")]
    out += ["## Bill of materials", "", "Cables are counted by medium without a stock length, mass or per-metre price. Full list: `bom.csv`.", "",
            table(["category", "item", "quantity"], items, "llr"), ""]
    out += ["## Default twin", ""]
    res = runs.default if runs is not None else None
    if res:
        out.append(f"Ring AllReduce over the first {res['gpus']:,} GPUs, 1 GiB: "
                   + "; ".join(f"{s['name']} {s['busbw_GBps'][-1]:.1f} GB/s" for s in res["schemes"])
                   + ". No cable propagation delay is counted (no lengths).")
        job = res.get("job")
        if job and "error" not in job:
            out += ["", f"Job {job['workload']} ({job['parallelism']}, {job['gpus']:,} GPUs), the step by routing scheme:", "",
                    table(["scheme", "step", "exposed communication", "TFLOP/s per GPU"],
                          [[s["scheme"], f"{s['step_s']:.3f} s", f"{100 * s['exposed_fraction']:.1f}%", f"{s['predicted_tflops_per_gpu']:.0f}"]
                           for s in job["schemes"]], "lrrr")]
        elif job:
            out.append(f"Job {job['workload']}: {job['error']}")
    else:
        out.append(f"Not run: {runs.default_error}" if runs is not None and runs.default_error else "Not run.")
    files: dict[str, bytes] = {}
    if runs is not None and runs.scenario is not None:  # a scenario's network twins (its others need the floor)
        from twin.emit.report_twins import scenario_section

        text, pics = scenario_section(runs.scenario[1], runs.scenario[0], res.get("job") if res else None)
        out += ["", text]
        files.update({f"report/{name}": svg for name, _title, svg in pics})
    out += ["", "## Skipped, and why", "", table(["not built", "why"], [list(x) for x in skipped(spec)], "ll"), ""]
    if written:
        out += ["## Written", "", *(f"- `{p}`" for p in sorted([*written, *files]))]
    files["study.md"] = ("\n".join(out).replace("\n\n\n", "\n\n").rstrip() + "\n").encode()
    return files
