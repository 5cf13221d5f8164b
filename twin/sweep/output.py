"""A sweep's results: one row per variant as Parquet and CSV, Pareto plots, and a short summary.

Columns: ``variant`` (1-based), ``label``, ``spec_hash``, ``status`` (ok, invalid, infeasible, error,
or pending for a variant an interrupted run did not reach), ``error``, one column per axis path (the
value as written; empty where the path was removed), then one column per figure (floats; NaN where a
variant has none). Nothing timed or machine-dependent goes into these files, so they are
byte-identical whatever the number of workers.

The Pareto front keeps the variants no other variant beats on both axes: lower capex (or draw) and
more delivered tokens per day.

>>> pareto([(1.0, 5.0), (2.0, 4.0), (2.0, 6.0), (3.0, 6.0)])
[0, 2]
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

from twin.lang.sweep.models import Sweep
from twin.sweep.engine import Outcome

BASE = ["variant", "label", "spec_hash", "status", "error"]
Y = "delivered_tokens_per_day"


def rows(sw: Sweep, oc: Outcome) -> list[dict[str, Any]]:
    """One row per variant, in variant order."""
    out = []
    for v in oc.variants:
        r = oc.results.get(v.hash)
        row: dict[str, Any] = {"variant": v.index, "label": v.label, "spec_hash": v.hash,
                               "status": r["status"] if r else "pending", "error": v.message(r["error"]) if r else ""}
        for col in sw.columns:
            val = v.values.get(col)
            row[col] = "" if val is None else (f"{val:g}" if isinstance(val, float) else str(val))
        figs = (r or {}).get("figures", {})
        for name in sw.figures:
            row[name] = figs.get(name, math.nan)
        row["_all"] = figs  # every figure the variant has (plots and the summary read it), not a column
        out.append(row)
    return out


def columns(sw: Sweep) -> list[str]:
    return BASE + sw.columns + sw.figures


def _numeric(table: list[dict], name: str) -> bool:
    return all(isinstance(r[name], (int, float)) for r in table)


_QUANTITY = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?( ?[A-Za-z%/^.0-9 ]*)?$")


def cell(v: Any) -> str:
    """A text cell a spreadsheet shows as text: one that would start a formula (``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return) gets a leading apostrophe, unless it is a number or a quantity
    (``-5 degC``). Labels, axis values and error messages are user text (OWASP, CSV injection).

    >>> cell("=1+2"), cell("-5 degC"), cell("@SUM(A1)"), cell("2:1")
    ("'=1+2", '-5 degC', "'@SUM(A1)", '2:1')
    """
    s = str(v)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") and not _QUANTITY.match(s) else s


def to_csv(sw: Sweep, table: list[dict]) -> bytes:
    """CSV with floats in their shortest round-trip form; NaN as an empty cell; text never a formula."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = columns(sw)
    w.writerow([cell(c) for c in cols])
    for r in table:
        w.writerow(["" if isinstance(r[c], float) and math.isnan(r[c]) else (repr(r[c]) if isinstance(r[c], float) else
                    cell(r[c]) if isinstance(r[c], str) else r[c]) for c in cols])
    return buf.getvalue().encode("utf-8")


def to_parquet(sw: Sweep, table: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays, fields = [], []
    for c in columns(sw):
        vals = [r[c] for r in table]
        if c == "variant":
            typ = pa.int64()
        elif c in sw.figures and _numeric(table, c):
            typ, vals = pa.float64(), [float(v) for v in vals]
        else:
            typ, vals = pa.string(), ["" if isinstance(v, float) and math.isnan(v) else str(v) for v in vals]
        arrays.append(pa.array(vals, type=typ))
        fields.append(pa.field(c, typ))
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), buf, compression="zstd")
    return buf.getvalue()


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates (x no larger and y no smaller, one strictly)."""
    keep = []
    for i, (x, y) in enumerate(points):
        if not any((x2 <= x and y2 >= y) and (x2 < x or y2 > y) for j, (x2, y2) in enumerate(points) if j != i):
            keep.append(i)
    return keep


def _ok(table: list[dict], x: str, y: str) -> list[dict]:
    """Rows of ok variants that have both figures, finite."""
    good = []
    for r in table:
        vx, vy = r["_all"].get(x), r["_all"].get(y)
        if r["status"] == "ok" and isinstance(vx, float) and isinstance(vy, float) and math.isfinite(vx) and math.isfinite(vy):
            good.append(r)
    return good


def pareto_plot(table: list[dict], x: str, xlabel: str, scale: float, title: str) -> bytes | None:
    """A PNG: delivered tokens per day against ``x``, variants numbered, the Pareto front joined."""
    pts = _ok(table, x, Y)
    if not pts:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["_all"][x] / scale for r in pts]
    ys = [r["_all"][Y] / 1e9 for r in pts]
    front = sorted(pareto(list(zip(xs, ys))), key=lambda i: xs[i])
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    ax.scatter(xs, ys, color="#7a8ca5", zorder=2, label="variant")
    ax.plot([xs[i] for i in front], [ys[i] for i in front], "-o", color="#c0392b", zorder=3, label="Pareto front")
    same: dict[tuple[float, float], list[str]] = {}  # variants at one point share one label
    for r, px, py in zip(pts, xs, ys):
        same.setdefault((px, py), []).append(str(r["variant"]))
    for (px, py), names in same.items():
        ax.annotate(",".join(names), (px, py), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("delivered tokens per day (billions)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def fmt_figure(name: str, v: Any) -> str:
    if not isinstance(v, float):
        return str(v)
    if math.isnan(v):
        return "-"
    if v == int(v) and abs(v) < 1e6 and not name.startswith("capex"):
        return f"{int(v):,}"
    if name.startswith("capex") or name.startswith("energy_cost"):
        return f"${v / 1e6:,.1f} M" if abs(v) >= 1e6 else f"${v:,.0f}"
    if name == "network_share" or name.startswith("ettr"):
        return f"{100 * v:.1f}%"
    if "tokens_per_day" in name and abs(v) >= 1e6:
        return f"{v / 1e9:,.2f} B" if "per" not in name.replace("tokens_per_day", "") else f"{v:,.4g}"
    return f"{v:,.4g}"


def summary(sw: Sweep, table: list[dict], interrupted: bool) -> str:
    """summary.md: what ran, the results table, the Pareto fronts and the best variant per dollar."""
    ok = [r for r in table if r["status"] == "ok"]
    lines = [f"# Sweep {sw.name}", ""]
    if sw.file.description:
        lines += [sw.file.description, ""]
    scn = ""
    if sw.scenario is not None:
        scn = f", scenario `{Path(sw.scenario_name).name}`" if sw.file.scenario and isinstance(sw.file.scenario, str) else f", inline scenario `{sw.scenario.get('name')}`"
    lines += [f"Base site `{sw.site_path.name}`" + scn
              + f"; {len(table)} variants, {len(ok)} ok" + (f", {len(table) - len(ok)} not" if len(ok) < len(table) else "") + ".", ""]
    if interrupted:
        lines += ["**Interrupted**: rows marked `pending` were not computed; rerun the sweep to finish them.", ""]
    figs = sw.figures
    lines.append("| # | variant | status | " + " | ".join(figs) + " |")
    lines.append("|---:|:---|:---|" + "---:|" * len(figs))
    for r in table:
        lines.append(f"| {r['variant']} | {r['label']} | {r['status']} | " + " | ".join(fmt_figure(f, r[f]) for f in figs) + " |")
    bad = [r for r in table if r["status"] not in ("ok", "pending")]
    if bad:
        lines += ["", "Variants that did not build or run:", ""] + [f"- {r['variant']} ({r['label']}): {r['status']}: {r['error']}" for r in bad]
    for x, what in (("capex", "capex"), ("draw_mw", "grid draw (MW)")):
        pts = _ok(table, x, Y)
        if pts:
            front = pareto([(r["_all"][x], r["_all"][Y]) for r in pts])
            lines += ["", f"Pareto front, {what} against delivered tokens per day: variants "
                      + ", ".join(str(pts[i]["variant"]) for i in sorted(front, key=lambda i: pts[i]["_all"][x])) + "."]
    per = _ok(table, "capex", "tokens_per_day_per_dollar")
    if per:
        best = max(per, key=lambda r: r["_all"]["tokens_per_day_per_dollar"])
        lines += ["", f"Most delivered tokens per day per dollar of capex: variant {best['variant']} ({best['label']}), "
                  f"{best['_all']['tokens_per_day_per_dollar']:,.1f} tokens/day/$."]
    return "\n".join(lines) + "\n"


def write(sw: Sweep, oc: Outcome, out: Path) -> dict[str, bytes]:
    """Every output file of the sweep, written into ``out``; returns them by name."""
    table = rows(sw, oc)
    files = {"results.csv": to_csv(sw, table), "results.parquet": to_parquet(sw, table),
             "summary.md": summary(sw, table, oc.interrupted).encode("utf-8")}
    for name, x, label, scale in (("pareto-capex.png", "capex", "capex (million USD)", 1e6),
                                  ("pareto-mw.png", "draw_mw", "grid draw (MW)", 1.0)):
        png = pareto_plot(table, x, label, scale, f"{sw.name}: delivered tokens per day against {label}")
        if png:
            files[name] = png
    for name, data in files.items():
        tmp = out / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(out / name)
    return files
