"""The review ``twin diff`` prints: as terminal lines, as Markdown, and as a self-contained page
(the Markdown through :func:`twin.emit.html.page`, like report.html)."""

from __future__ import annotations

import json
import re

from rich.markup import escape

from twin.analysis.registry import lookup
from twin.diff.compare import DiffResult
from twin.diff.groups import artifact_groups, per_building, verdict_groups, verdict_line
from twin.emit import html
from twin.emit.markdown import table
from twin.folder import printable

ARTIFACT_ROWS = 200  # changed artifacts listed one by one (the rest are counted)
FIELD_ROWS = 100


def value(v, unit: str = "") -> str:
    """A figure for people: thousands separators, at most 3 decimals, its unit.

    >>> value(24576), value(2.2719999, "km"), value(None), value(1.0, ":1"), value(-3.5, "%")
    ('24,576', '2.272 km', '-', '1:1', '-3.5%')
    """
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"{v}"
    s = f"{v:,}" if isinstance(v, int) else f"{v:,.3f}".rstrip("0").rstrip(".")
    if unit in (":1", "%"):
        return s + unit
    return f"{s} {unit}" if unit else s


def delta(r: dict) -> str:
    if r["delta"] is None:
        return "new" if r["old"] is None else ("gone" if r["new"] is None else "changed")
    sign = "+" if r["delta"] > 0 else ""
    if r["unit"] == "%":  # a change of a percentage is in percentage points
        return f"{sign}{value(r['delta'])} pp" + ("" if r["delta_pct"] is None else f" ({sign}{r['delta_pct']:.1f}%)")
    pct = "" if r["delta_pct"] is None else f" ({sign}{r['delta_pct']:.1f}%)"
    return f"{sign}{value(r['delta'], '' if r['unit'] == ':1' else r['unit'])}{pct}"


def lines(added: int | None, removed: int | None) -> str:
    """Lines added and removed, or why they were not counted.

    >>> lines(3, 1), lines(None, None)
    ('+3 -1', 'too large to count lines')
    """
    return "too large to count lines" if added is None else f"+{added} -{removed}"


def summary(res: DiffResult) -> str:
    cfg = sum(r["changed"] + r["added"] + r["removed"] for r in res.configs.values())
    return (f"{len(res.figures)} figure(s) moved ({res.unchanged_figures} unchanged); {len(res.changed)} artifact(s) changed, "
            f"{len(res.added)} added, {len(res.removed)} removed; {cfg} config file(s) touched in {len(res.configs)} role(s).")


def grouped(figures: list[dict]) -> list[dict]:
    """Members of a per-hall (or per-building) family that moved alike, one row: the same figure, the same
    other parts, the same old and new values. Its label names how many and which: "dh1 IT load" x 8 ->
    "IT load, each of 8: dh1, ..., dh8".

    >>> rows = [{"key": f"power.h{i}.it_kw", "label": f"h{i} IT load", "old": 1.0, "new": 2.0, "group": "power"} for i in (1, 2)]
    >>> [r["label"] for r in grouped(rows)]
    ['IT load, each of 2: h1, h2']
    """
    out: list[dict] = []
    at: dict[tuple, int] = {}
    members: dict[int, list[str]] = {}
    for r in figures:
        f = lookup(r["key"])
        m = re.match("^" + re.escape(f.name).replace(r"\{\}", "([^.]+)") + "$", r["key"]) if f is not None and f.family else None
        if m is None or not r["label"].startswith(m.group(1)):
            out.append(r)
            continue
        k = (f.name, m.groups()[1:], repr(r.get("old")), repr(r.get("new")))
        if k in at:
            members[at[k]].append(m.group(1))
            continue
        at[k] = len(out)
        members[len(out)] = [m.group(1)]
        out.append(dict(r))
    for i, names in members.items():
        if len(names) > 1:
            shown = ", ".join(names) if len(names) <= 3 else f"{names[0]}, ..., {names[-1]}"
            rest = out[i]["label"][len(names[0]):].strip()
            out[i] = dict(out[i], label=f"{rest}, each of {len(names)}: {shown}")
    return out


def racks_line(r: dict) -> str:
    """Racks moved on the floor, in one line (with up to three examples)."""
    ex = f" (e.g. {'; '.join(r['examples'])})" if r["examples"] else ""
    bad = f"; {r['unreadable_rows']} unreadable row(s)" if r["unreadable_rows"] else ""
    return f"racks: {r['moved']:,} moved, {r['added']:,} added, {r['removed']:,} removed{ex}{bad}"


def _input(v) -> str:
    """An input's value as written in a diff: absent, a word, a number, or compact JSON (at most 80 characters).

    >>> _input(None), _input(4.0), _input("2:1"), _input({"a": 1})
    ('(absent)', '4', '2:1', '{"a":1}')
    """
    if v is None:
        return "(absent)"
    if isinstance(v, float) and v.is_integer():
        return f"{int(v)}"
    if isinstance(v, (dict, list)):
        return printable(json.dumps(v, separators=(",", ":"), sort_keys=True), 80)
    return printable(str(v), 80)


def verdict_lines(res: DiffResult) -> list[str]:
    """The new side's fails and warnings, and every check whose status changed, worst first; a check made
    per hall or per route is one line per outcome (:func:`twin.diff.groups.verdict_groups`)."""
    return [verdict_line(g) for g in verdict_groups(res.risks)]


def groups_of(res: DiffResult) -> list[dict]:
    return artifact_groups(res.changed, res.added, res.removed, res.buildings)


def group_lines(g: dict) -> str:
    return "" if g["change"] != "changed" else lines(g["added_lines"], g["removed_lines"])


def markdown(res: DiffResult) -> str:
    out = [f"# Design review: `{res.old}` -> `{res.new}`\n"]
    if res.inputs:
        out.append("\n## What changed in the inputs\n")
        out.append(table(["path", "old", "new"], [[f"`{r['path']}`", _input(r["old"]), _input(r["new"])] for r in res.inputs[:FIELD_ROWS]], "lll"))
        if len(res.inputs) > FIELD_ROWS:
            out.append(f"\n... and {len(res.inputs) - FIELD_ROWS} more.\n")
    out += ["\n" + summary(res) + "\n"] + [f"- note: {n}" for n in res.notes]
    if res.racks:
        out.append(f"\n{racks_line(res.racks)}\n")
    if res.risks:
        out.append("\n## Verdicts of the new side\n")
        out += [f"- {v}" for v in verdict_lines(res)] or ["Every check passes, as before.\n"]
    if res.empty:
        out.append("\nNothing changes: every artifact is byte-identical.\n")
    out.append("\n## Figures that moved\n")
    if res.figures:
        groups: dict[str, list] = {}
        for r in grouped(res.figures):
            groups.setdefault(r["group"], []).append(r)
        for g, rows in groups.items():
            out.append(f"\n### {g}\n")
            out.append(table(["figure", "old", "new", "delta"], [[r["label"], value(r["old"], r["unit"]), value(r["new"], r["unit"]), delta(r)]
                                                                for r in rows], "lrrr"))
    else:
        out.append("No review figure moved.\n")
    out.append("\n## Configs\n")
    if res.configs:
        out.append(table(["role", "changed", "added", "removed", "representative"],
                         [[role, r["changed"], r["added"], r["removed"], f"`{r['example']}`" if r["example"] else "-"]
                          for role, r in res.configs.items()], "lrrrl"))
        for role, r in res.configs.items():
            if r["diff"]:
                out.append(f"\n### {role}: `{r['example']}`\n\n```diff\n{r['diff']}\n```\n")
    else:
        out.append("No config changed.\n")
    out.append("\n## Artifacts\n")
    gs = groups_of(res)
    if gs:
        out.append("Grouped by kind (the path with every number as N) and by building; `--json` lists every path.\n")
        out.append(table(["artifacts", "", "files", "per building", "lines", "e.g."],
                         [[f"`{g['kind']}`", g["change"], f"{g['files']:,}", per_building(g), group_lines(g),
                           ", ".join(f"`{p}`" for p in g["sample"]) + (" ..." if g["files"] > len(g["sample"]) else "")]
                          for g in gs[:ARTIFACT_ROWS]], "llrlrl"))
        if len(gs) > ARTIFACT_ROWS:
            out.append(f"\n... and {len(gs) - ARTIFACT_ROWS:,} more kinds.\n")
    else:
        out.append("No artifact changed.\n")
    if res.design_fields:
        out.append("\n### design.json fields\n")
        out += [f"- `{f}`" for f in res.design_fields[:FIELD_ROWS]]
        if len(res.design_fields) > FIELD_ROWS:
            out.append(f"- ... and {len(res.design_fields) - FIELD_ROWS} more fields")
    return "\n".join(x if x.endswith("\n") else x + "\n" for x in out)


def page(res: DiffResult) -> bytes:
    return html.page(f"twin diff: {res.old} -> {res.new}", markdown(res), {})


def terminal(res: DiffResult, out) -> None:
    """The review as plain lines on a rich console (figures, configs, then the artifact list). Every
    name and value comes from the folders: control characters are escaped and rich markup is not
    interpreted in them."""
    def t(x) -> str:
        return escape(printable(str(x), 400))

    for r in res.inputs[:FIELD_ROWS]:  # what changed first, then what it does
        out.print(printable(f"input {r['path']}: {_input(r['old'])} -> {_input(r['new'])}", 1000), markup=False)
    if len(res.inputs) > FIELD_ROWS:
        out.print(f"... and {len(res.inputs) - FIELD_ROWS} more input changes", markup=False)
    out.print(summary(res), markup=False)
    for n in res.notes:
        out.print(f"note: {printable(n, 1000)}", markup=False)
    if res.racks:
        out.print(printable(racks_line(res.racks), 1000), markup=False)
    for v in verdict_lines(res):
        out.print(printable(v, 1000), markup=False, style="red" if v.startswith("FAIL") else "yellow" if v.startswith("WARN") else "green")
    group = None
    for r in grouped(res.figures):
        if r["group"] != group:
            group = r["group"]
            out.print(f"[bold]{t(group)}[/bold]")
        out.print(printable(f"  {r['label']}: {value(r['old'], r['unit'])} -> {value(r['new'], r['unit'])} ({delta(r)})", 1000), markup=False)
    for role, r in res.configs.items():
        out.print(f"[bold]configs {t(role)}[/bold]: {r['changed']} changed, {r['added']} added, {r['removed']} removed"
                  + (f" (e.g. {t(r['example'])})" if r["example"] else ""))
    mark = {"added": ("green", "+"), "removed": ("red", "-"), "changed": ("yellow", "~")}
    for g in groups_of(res):
        colour, sign = mark[g["change"]]
        if g["files"] == 1:
            p = g["sample"][0]
            out.print(f"[{colour}]{sign} {t(p)}[/{colour}]" + (f" ({lines(*res.changed[p])}{' lines' if res.changed[p][0] is not None else ''})"
                                                               if g["change"] == "changed" else ""))
            continue
        where = f"; per building: {t(per_building(g))}" if g["buildings"] else ""
        counted = f"; {group_lines(g)}{' lines' if g['added_lines'] is not None else ''}" if g["change"] == "changed" else ""
        out.print(f"[{colour}]{sign} {t(g['kind'])}[/{colour}]: {g['files']:,} {g['change']}{where}{counted} (e.g. {t(', '.join(g['sample']))})")
    for f in res.design_fields[:50]:
        out.print(f"    design.json: {printable(f, 400)}", markup=False)
    if len(res.design_fields) > 50:
        out.print(f"    ... and {len(res.design_fields) - 50} more fields")
    if res.empty:
        out.print("no change")
