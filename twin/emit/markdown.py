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
