"""The report's first screen: every verdict (:mod:`twin.analysis.verdicts`), fails first, grouped.

One table, ranked by status and severity: the outcome (FAIL, WARN, PASS; report.html colours them), the
check linked to the section that shows it, how many checks the row stands for, the measured figure, the
limit, and the spec or scenario line that states the limit. A headline counts them and says what a fail
does to the exit code.

A check made once per hall or per route between buildings (``Verdict.group``) is one row per outcome
and severity, not one per hall: its count, the first :data:`SAMPLE` instances by name and the worst
one's figure (the largest share of its limit), so a campus of 192 halls opens on a screen of rows, not 1,500. Every verdict, one line
each, is in ``report/verdicts.csv`` (:func:`verdicts_csv`, linked from the headline) and in
review.json's ``risks``.

>>> from twin.analysis.verdicts import Verdict
>>> vs = [Verdict(f"space.h{i}", f"racks in h{i}", "pass", "high", "1", "2", "Placement", group="racks, per hall", instance=f"h{i}")
...       for i in range(1, 6)]
>>> [(st, n, len(shown)) for st, _sev, _label, n, shown, _worst in groups(vs)]
[('pass', 5, 3)]
"""

from __future__ import annotations

from twin.analysis.verdicts import Verdict, counts, section_id
from twin.csvfmt import table as csv_table
from twin.emit.markdown import table

TITLE = "Verdicts"
SAMPLE = 3  # instances of a grouped check named in its row; the rest are counted (and listed in CSV)
CSV = "report/verdicts.csv"
CSV_COLUMNS = ["status", "severity", "key", "group", "check", "value", "limit", "section", "where", "source"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def groups(verdicts: list[Verdict]) -> list[tuple[str, str, str, int, list[Verdict], Verdict]]:
    """(status, severity, the group's words, how many, the first :data:`SAMPLE` of them, the worst of them)
    per group of verdicts with the same outcome, severity and group, in the rank order of each group's
    first member. The worst is the one whose figure is the largest share of its limit (``Verdict.share``;
    the first where none says). A verdict without a group is a group of its own."""
    at: dict[tuple, int] = {}
    out: list[list] = []
    for v in verdicts:
        k = (v.status, v.severity, v.group or f"\x00{v.key}")
        if k not in at:
            at[k] = len(out)
            out.append([v.status, v.severity, v.family, 0, [], v])
        g = out[at[k]]
        g[3] += 1
        if len(g[4]) < SAMPLE:
            g[4].append(v)
        if v.share is not None and (g[5].share is None or v.share > g[5].share):
            g[5] = v
    return [tuple(g) for g in out]


def _row(status: str, severity: str, label: str, n: int, shown: list[Verdict], worst: Verdict) -> list[str]:
    v = shown[0]
    link = f"#{section_id(v.section)}"
    where = f"`{worst.where}`" if worst.where else "-"
    if n == 1:  # a check of its own, or the one instance of its group (a site of one hall): in its own words
        return [status.upper(), severity, f"[{_cell(v.check)}]({link})", "1", _cell(v.value), _cell(v.limit), where]
    names = ", ".join(_cell(x.instance or x.key) for x in shown) + (f" and {n - len(shown):,} more" if n > len(shown) else "")
    value = f"{_cell(worst.instance or worst.key)}: {_cell(worst.value)}"
    return [status.upper(), severity, f"[{_cell(label)}]({link}): {names}", f"{n:,}", value, _cell(worst.limit), where]


def section(verdicts: list[Verdict], scenario: str | None = None) -> str:
    n = counts(verdicts)
    gs = groups(verdicts)
    head = (f"**{n['fail']} fail, {n['warn']} warning(s), {n['pass']} pass** of {len(verdicts):,} checks of the design"
            + (f" and the scenario `{scenario}`" if scenario else " (no scenario ran: the twins' checks are not here)") + ".")
    if n["fail"]:
        head += " The build exits 4 on a fail unless `--accept-risks` is given."
    head += (f" One row per check and outcome ({len(gs):,} rows): a check made per hall or per route counts its instances and"
             f" names the first {SAMPLE} and shows the worst; every check, one line each: [verdicts.csv]({CSV}).")
    rows = [_row(*g) for g in gs]
    return f"## {TITLE}\n\n{head}\n\n" + table(["", "severity", "check", "checks", "value (the worst)", "limit", "stated at"], rows, "lllrlll")


def verdicts_csv(verdicts: list[Verdict]) -> bytes:
    """Every verdict, one row each, in rank order: the table the report's grouped rows count."""
    rows = [[v.status, v.severity, v.key, v.group, v.check, v.value, v.limit, v.section, v.where, "twin" if v.twin else "design"]
            for v in verdicts]
    return csv_table(CSV_COLUMNS, rows)
