"""The results of ``twin as-built`` as a terminal summary, a work order and a JSON document.

The work order (``work-order.csv``) has one row per finding in the order a technician walks the
room (hall, row, position in the row, rack, U): where to go, what is wrong, the move that fixes it,
both planned ends' labels, and the reports it rests on. Correct cables are not work; the JSON lists
their ids.
"""

from __future__ import annotations

import csv
import io
from collections import Counter

from twin.asbuilt.findings import FAULTS, Result
from twin.sweep.output import cell

WORK_COLUMNS = ["step", "hall", "row", "rack", "u", "device", "port", "finding", "cables", "action", "now_at", "belongs_at",
                "a_label", "b_label", "evidence", "sources"]
SHOWN = 25  # findings printed in the terminal (the work order has them all)


def coverage(res: Result) -> dict:
    plan, col = res.plan, res.col
    planned = Counter(d.role for d in plan.devices.values())
    reported = Counter(plan.devices[d].role for d in col.reported if d in plan.devices)
    never = sorted(d for d in plan.devices if d not in col.reported)
    return {
        "devices_planned": len(plan.devices), "devices_reported": sum(reported.values()),
        "by_role": {r: {"planned": n, "reported": reported.get(r, 0)} for r, n in sorted(planned.items())},
        "never_reported": never,
        "cables_planned": len(plan.ids), "cables_checked": len(plan.ids) - res.uncovered, "cables_not_covered": res.uncovered,
        "entries": len(col.claims), "entries_not_fabric_ports": col.ignored,
    }


def counts(res: Result) -> dict:
    both = sum(1 for _, s in res.correct if s.evidence == "both ends")
    return {"correct": len(res.correct), "correct_both_ends": both, "correct_one_end": len(res.correct) - both, **res.counts()}


def status(res: Result | None, errors: int, complete: bool = False) -> tuple[str, int]:
    """(status, exit code): ok 0, differs 1 (a finding; with ``complete``, also a device never
    reported), invalid 2 (a file could not be read: what was readable is still checked)."""
    if res is None or errors:
        return "invalid", 2
    if not res.ok or (complete and len(res.col.reported & set(res.plan.devices)) < len(res.plan.devices)):
        return "differs", 1
    return "ok", 0


def document(res: Result | None, generated: str, diagnostics: list, errors: int, complete: bool = False, files: list[str] = ()) -> dict:
    st, code = status(res, errors, complete)
    doc = {"status": st, "ok": st == "ok", "exit": code, "generated": generated, "diagnostics": [d.to_json() for d in diagnostics],
           "files": list(files)}
    if res is not None:
        doc.update(site=res.plan.site, inputs=res.col.files, coverage=coverage(res), counts=counts(res),
                   findings=[f.to_json(res.plan) for f in res.ordered()], correct=sorted(res.plan.ids[i] for i, _ in res.correct))
    return doc


def work_order(res: Result) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(WORK_COLUMNS)
    for n, f in enumerate(res.ordered(), start=1):
        hall, row, _slot, rack, u, dev, port = res.plan.place(f.work)
        placed = dev in res.plan.devices
        a, b = (" | ".join(e[k] for e in f.ends) for k in (0, 1))  # a swap names both cables' ends
        # every text cell may carry a name a neighbour sent: never a formula to a spreadsheet
        w.writerow([n] + [cell(v) for v in (hall if placed else "", row if placed else "", rack, u if placed else "", dev, port, f.kind,
                                            " ".join(f.cables), f.action, f.now, f.belongs, a, b, f.evidence, " ".join(f.sources))])
    return buf.getvalue().encode("utf-8")


def terminal(res: Result, out) -> None:
    plan, col = res.plan, res.col
    cov, cnt = coverage(res), counts(res)
    fmts = Counter(f["format"] for f in col.files)
    out.print(f"as-built {plan.site}: {len(col.files)} file(s) read ({', '.join(f'{n} {k}' for k, n in sorted(fmts.items())) or 'none'}), "
              f"{len(col.claims):,} neighbour entries", markup=False)
    roles = ", ".join(f"{r} {v['reported']:,}/{v['planned']:,}" for r, v in cov["by_role"].items())
    out.print(f"  devices reported: {cov['devices_reported']:,} of {cov['devices_planned']:,} ({roles})", markup=False)
    if cov["never_reported"]:
        names = cov["never_reported"]
        out.print(f"  never reported ({len(names):,}, coverage, not a fault): {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}", markup=False)
    out.print(f"  cables: {cov['cables_planned']:,} planned, {cov['cables_checked']:,} checked, {cov['cables_not_covered']:,} not covered "
              f"(neither end reported)", markup=False)
    out.print(f"  correct {cnt['correct']:,} ({cnt['correct_both_ends']:,} seen from both ends, {cnt['correct_one_end']:,} from one); "
              + ", ".join(f"{k} {cnt[k]}" for k in FAULTS), markup=False)
    ordered = res.ordered()
    for f in ordered[:SHOWN]:
        hall, row, _slot, rack, u, dev, port = plan.place(f.work)
        where = f"{hall}/R{row:02d}/{rack}" if dev in plan.devices else "not in plan"
        out.print(f"  {where:<24} {f.kind:<10} {' '.join(f.cables) or '-':<17} {f.action}", markup=False)
        out.print(f"  {'':<24} {'':<10} {'':<17} ({f.evidence})", markup=False)
    if len(ordered) > SHOWN:
        out.print(f"  ... {len(ordered) - SHOWN:,} more findings: write the work order with -o DIR", markup=False)
