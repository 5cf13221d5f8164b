"""Tiny Markdown helpers shared by the report sections (tables with aligned, escaped cells)."""

from __future__ import annotations


def table(headers: list[str], rows: list[list[object]], align: str | None = None) -> str:
    """A GitHub-flavoured Markdown table; ``align`` is one of 'l'/'r' per column (default: text left,
    numbers right)."""
    def cell(v: object) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    if align is None:
        align = "".join("r" if rows and isinstance(rows[0][i], (int, float)) else "l" for i in range(len(headers)))
    out = ["| " + " | ".join(cell(h) for h in headers) + " |"]
    out.append("|" + "|".join("---:" if a == "r" else ":---" for a in align) + "|")
    for r in rows:
        out.append("| " + " | ".join(cell(v) for v in r) + " |")
    return "\n".join(out) + "\n"


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


FOLD = 12  # a table of one row per hall longer than this shows each run of identical halls as one row


def fold(rows: list[list[object]], what: str = "halls", over: int = FOLD) -> list[list[object]]:
    """Each run of consecutive rows that are equal but for their first cell (the hall) as one row named by
    the run's first and last and how many, when there are more than ``over`` rows (a campus of 192 halls
    reads as the few kinds of hall it has); ``over`` rows or fewer are returned as they are. No figure is
    merged that differs: only rows whose every other cell is the same text fold.

    >>> fold([["h1", 1], ["h2", 1], ["h3", 1], ["h4", 2]], over=2)
    [['h1 .. h3 (3 halls)', 1], ['h4', 2]]
    >>> fold([["h1", 1], ["h2", 1]])
    [['h1', 1], ['h2', 1]]
    """
    if len(rows) <= over:
        return rows
    runs: list[tuple[list[object], object, int]] = []  # (row, last name, length)
    for r in rows:
        if runs and [str(c) for c in runs[-1][0][1:]] == [str(c) for c in r[1:]]:
            runs[-1] = (runs[-1][0], r[0], runs[-1][2] + 1)
        else:
            runs.append((list(r), r[0], 1))
    return [[f"{row[0]} .. {last} ({n} {what})", *row[1:]] if n > 1 else row for row, last, n in runs]
