"""``as-built.html``: the review page's as-built section, findings on the floor plan.

One self-contained page in the review page's style (:func:`twin.emit.html.page`, the renderer of
report.html): the counts and coverage, each hall's floor plan from ``placement/floor.csv`` with every
rack coloured by what was found there (a finding's rack is where its work is, as in the work order)
and the findings of each rack in its tooltip, then the work order itself. Deterministic bytes: the same
plan and reports give the same page.
"""

from __future__ import annotations

from collections import defaultdict

from twin.asbuilt.findings import FAULTS, Result
from twin.asbuilt.report import counts, coverage
from twin.emit.html import page as html_page
from twin.emit.svg import GRID, MUTED, OK, OVER, WARN, Canvas

CELL_W, CELL_H, GAP = 16.0, 24.0, 2.0
ROWS_SHOWN = 400  # work-order rows in the page; work-order.csv has them all
UNSEEN, EMPTY = "#bab0ac", "#ffffff"


def rack_status(res: Result) -> dict[str, tuple[str, list[str]]]:
    """rack -> (colour, lines for its tooltip): red with findings, amber when some of its devices never
    reported, grey when none did, green when everything it reported is correct."""
    plan = res.plan
    found: dict[str, list[str]] = defaultdict(list)
    for f in res.ordered():
        d = plan.devices.get(f.work[0])
        if d is not None:
            found[d.rack].append(f"{f.kind} {' '.join(f.cables)}: {f.action}".strip())
    devices: dict[str, list[str]] = defaultdict(list)
    for dev, d in plan.devices.items():
        devices[d.rack].append(dev)
    out = {}
    for rack, devs in devices.items():
        seen = sum(1 for x in devs if x in res.col.reported)
        if found.get(rack):
            colour = OVER
        elif seen == 0:
            colour = UNSEEN
        elif seen < len(devs):
            colour = WARN
        else:
            colour = OK
        tip = [f"{rack}: {seen} of {len(devs)} devices reported"] + found.get(rack, [])[:12]
        if len(found.get(rack, [])) > 12:
            tip.append(f"... {len(found[rack]) - 12} more")
        out[rack] = (colour, tip)
    return out


def floor_svg(res: Result, hall: str, cells: dict[tuple[int, int], str], status: dict) -> bytes:
    rows = max(r for r, _ in cells)
    slots = max(s for _, s in cells)
    w, h = max(60 + slots * (CELL_W + GAP), 640.0), 50 + rows * (CELL_H + GAP) + 24  # wide enough for the title and legend
    c = Canvas(w, h, f"{res.plan.site} {hall}: cabling as built")
    c.text(8, 16, f"{hall}: cabling as built, rack by rack", bold=True)
    for r in range(1, rows + 1):
        y = 30 + (r - 1) * (CELL_H + GAP)
        c.text(8, y + CELL_H / 2 + 4, f"R{r:02d}", fill=MUTED)
        for s in range(1, slots + 1):
            x = 44 + (s - 1) * (CELL_W + GAP)
            rack = cells.get((r, s))
            if rack is None:
                c.rect(x, y, CELL_W, CELL_H, EMPTY, stroke=GRID)
                continue
            colour, tip = status.get(rack, (EMPTY, [f"{rack}: no cabled device"]))
            c.rect(x, y, CELL_W, CELL_H, colour, stroke=GRID if colour == EMPTY else None, tip="\n".join(tip))
    c.legend(8, h - 8, [(OK, "all reported cables correct"), (OVER, "findings"), (WARN, "partly reported"), (UNSEEN, "not reported")])
    return c.svg()


def _cell(s: object) -> str:
    return str(s).replace("|", "\\|")


def page(res: Result) -> bytes:
    plan = res.plan
    cov, cnt = coverage(res), counts(res)
    status = rack_status(res)
    halls: dict[str, dict[tuple[int, int], str]] = defaultdict(dict)
    for rack, (hall, row, slot) in sorted(plan.floor.items()):
        halls[hall][(row, slot)] = rack
    md = [f"# As built: {plan.site}", "", "## As built", "",
          f"{cov['entries']:,} neighbour entries from {len(res.col.files)} file(s); {cov['devices_reported']:,} of "
          f"{cov['devices_planned']:,} devices reported; {cov['cables_checked']:,} of {cov['cables_planned']:,} cables checked "
          f"({cov['cables_not_covered']:,} not covered: neither end reported).", "",
          "| correct | both ends | one end | " + " | ".join(FAULTS) + " |", "|" + "---:|" * (3 + len(FAULTS)),
          f"| {cnt['correct']:,} | {cnt['correct_both_ends']:,} | {cnt['correct_one_end']:,} | " + " | ".join(f"{cnt[k]:,}" for k in FAULTS) + " |", ""]
    pictures = {}
    for hall, cells in sorted(halls.items()):
        name = f"as-built-{hall}.svg"
        pictures[name] = floor_svg(res, hall, cells, status)
        md.append(f"![{hall}: each rack coloured by what was found there; its tooltip lists the findings]({name})")
    md += ["", "### Work order", "", "In the order a technician walks the room (hall, row, position in the row, rack, U).", "",
           "| step | rack | finding | cables | action | evidence |", "|---:|---|---|---|---|---|"]
    ordered = res.ordered()
    for n, f in enumerate(ordered[:ROWS_SHOWN], start=1):
        d = plan.devices.get(f.work[0])
        md.append(f"| {n} | {_cell(d.rack if d else 'not in plan')} | {f.kind} | {_cell(' '.join(f.cables) or '-')} | {_cell(f.action)} | {_cell(f.evidence)} |")
    if len(ordered) > ROWS_SHOWN:
        md += ["", f"{len(ordered) - ROWS_SHOWN:,} more findings are in work-order.csv."]
    if not ordered:
        md += ["", "Every checked cable is where the plan puts it."]
    if cov["never_reported"]:
        names = cov["never_reported"]
        md += ["", f"Never reported ({len(names):,}, coverage, not a fault): " + ", ".join(f"`{x}`" for x in names[:40]) + (" ..." if len(names) > 40 else "")]
    return html_page(f"{plan.site}: as built", "\n".join(md) + "\n", pictures)
