"""A sweep's results: one row per variant as Parquet and CSV, Pareto plots, and a short summary.

Columns: ``variant`` (1-based), ``label``, ``spec_hash``, ``status`` (ok, invalid, infeasible, error,
or pending for a variant an interrupted run did not reach), ``error``, one column per axis path (the
value as written; empty where the path was removed), then one column per figure; NaN (an empty CSV
cell) where a variant has none. A CSV header names each figure's unit from the figure registry
(``capex [USD]``, ``gpus [1]`` for a dimensionless figure); Parquet keeps the plain name with the
unit in the field's metadata. A figure whose every value is a whole number is written as integers
(``128``, not ``128.0``). Nothing timed or machine-dependent goes into these files, so they are
byte-identical whatever the number of workers.

A winner is named only when it leads by more than the job twin's stated error (its mean absolute
error on the open validation set, :data:`twin.twins.workload.validation.STATED_ERROR`); otherwise the
summary names the variants within that error of the best. The Pareto plots name each point by its
axis values and keep an axis at least :data:`MIN_SPAN` of its mean wide, so a 1.5% spread looks like one.

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
MIN_SPAN = 0.10  # a Pareto plot's axis spans at least this share of its mean: small spreads look small


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


def unit(name: str) -> str | None:
    """A figure's unit from the registry ('1' when dimensionless); None for a path figure (design:PATH)."""
    from twin.analysis.registry import lookup

    f = lookup(name) if ":" not in name else None
    return None if f is None else (f.unit or "1")


def header(sw: Sweep, name: str) -> str:
    """The CSV header of a column: a figure with its unit in brackets, any other column as it is."""
    u = unit(name) if name in sw.figures else None
    return f"{name} [{u}]" if u else name


def _integral(table: list[dict], name: str) -> bool:
    """Every value of the figure is a whole number (NaN aside) that a float holds exactly."""
    vals = [r[name] for r in table if isinstance(r[name], (int, float)) and not (isinstance(r[name], float) and math.isnan(r[name]))]
    return bool(vals) and _numeric(table, name) and all(float(v).is_integer() and abs(v) < 2**53 for v in vals)


def axis_columns(sw: Sweep, variants: list) -> list[tuple[str, list[str]]]:
    """One column per axis, for people: its header (the last field names of its paths, or the axis'
    number when it has labels) and each variant's value of it, from the axis items it took.

    The variants are the product of the axes, first axis slowest, so variant k (1-based) took item
    ``(k - 1) // prod(later axes' lengths) % len(axis)`` of each axis."""
    out = []
    sizes = [len(a) for a in sw.axes]
    for i, items in enumerate(sw.axes):
        stride = math.prod(sizes[i + 1:])
        first = items[0][1] if items and items[0][1] else []
        labelled = sw.file.axes[i].labels is not None if i < len(sw.file.axes) else True
        head = " ".join(_last(s.path) for s in first) if first and not labelled else f"axis {i + 1}"
        cells = []
        for v in variants:
            lbl, settings = items[(v.index - 1) // stride % len(items)]
            cells.append(lbl if labelled or not settings else " ".join(_value(s.value) for s in settings))
        out.append((head, cells))
    return out


def _last(path: tuple) -> str:
    names = [p for p in path if isinstance(p, str)]
    return names[-1] if names else ".".join(map(str, path))


def _value(v: Any) -> str:
    return "default" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


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
    whole = {c for c in sw.figures if _integral(table, c)}
    w.writerow([cell(header(sw, c)) for c in cols])
    for r in table:
        w.writerow(["" if isinstance(r[c], float) and math.isnan(r[c]) else (int(r[c]) if c in whole else repr(r[c])
                    if isinstance(r[c], float) else cell(r[c]) if isinstance(r[c], str) else r[c]) for c in cols])
    return buf.getvalue().encode("utf-8")


def to_parquet(sw: Sweep, table: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays, fields = [], []
    for c in columns(sw):
        vals = [r[c] for r in table]
        meta = None
        if c == "variant":
            typ = pa.int64()
        elif c in sw.figures and _integral(table, c):
            typ, vals = pa.int64(), [None if isinstance(v, float) and math.isnan(v) else int(v) for v in vals]
        elif c in sw.figures and _numeric(table, c):
            typ, vals = pa.float64(), [float(v) for v in vals]
        else:
            typ, vals = pa.string(), ["" if isinstance(v, float) and math.isnan(v) else str(v) for v in vals]
        if c in sw.figures and (u := unit(c)):
            meta = {b"unit": u.encode()}
        arrays.append(pa.array(vals, type=typ))
        fields.append(pa.field(c, typ, metadata=meta))
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


def pareto_plot(table: list[dict], x: str, xlabel: str, scale: float, title: str, names: dict[int, str] | None = None) -> bytes | None:
    """A PNG: delivered tokens per day against ``x``, each point named by its variant number and axis
    values (``names``), the Pareto front joined, each axis at least :data:`MIN_SPAN` of its mean wide."""
    names = names or {}
    pts = _ok(table, x, Y)
    if not pts:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["_all"][x] / scale for r in pts]
    ys = [r["_all"][Y] / 1e9 for r in pts]
    front = sorted(pareto(list(zip(xs, ys))), key=lambda i: xs[i])
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    ax.scatter(xs, ys, color="#7a8ca5", zorder=2, label="variant")
    ax.plot([xs[i] for i in front], [ys[i] for i in front], "-o", color="#c0392b", zorder=3, label="Pareto front")
    same: dict[tuple[float, float], list[int]] = {}  # variants at one point share one number label
    def spot(px: float, py: float) -> tuple[float, float]:  # points that one label would cover are one point
        return float(f"{px:.4g}"), float(f"{py:.4g}")

    for r, px, py in zip(pts, xs, ys):
        same.setdefault(spot(px, py), []).append(r["variant"])
    on_front = {spot(xs[i], ys[i]) for i in front}
    for (px, py), who in sorted(same.items()):
        ax.annotate(",".join(map(str, who)), (px, py), textcoords="offset points", xytext=(6, -3),
                    fontsize=8, color="#c0392b" if (px, py) in on_front else "#333333")
    keyed = [r for r in pts if len(pts) <= 20 or spot(r["_all"][x] / scale, r["_all"][Y] / 1e9) in on_front]
    key = "\n".join(f"{r['variant']}: {names.get(r['variant'], r['label'])}" for r in keyed)
    fig.text(0.80, 0.88, key, fontsize=7, va="top", family="monospace")  # the key: each number's axis values
    fig.subplots_adjust(right=0.78)
    ax.set_xlim(*axis_limits(xs))
    ax.set_ylim(*axis_limits(ys))
    ax.ticklabel_format(useOffset=False, style="plain")
    spread = 100 * (max(ys) - min(ys)) / (sum(ys) / len(ys)) if sum(ys) else 0.0
    ax.set_xlabel(xlabel + (f" (every variant: {xs[0]:,.4g})" if max(xs) == min(xs) else ""))
    ax.set_ylabel("delivered tokens per day (billions)")
    ax.set_title(f"{title}\nspread of delivered tokens per day: {spread:.1f}%", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout(rect=(0, 0, 0.78, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def axis_limits(vals: list[float]) -> tuple[float, float]:
    """A plot axis around ``vals``: their range, widened to at least :data:`MIN_SPAN` of their middle
    (a 1.5% spread fills a tenth of the axis, not all of it), plus a margin of a tenth each side.

    >>> axis_limits([99.0, 101.0])
    (94.0, 106.0)
    """
    lo, hi = min(vals), max(vals)
    mid = (lo + hi) / 2
    span = max(hi - lo, MIN_SPAN * abs(mid)) or 1.0
    return mid - 0.6 * span, mid + 0.6 * span


def fmt_figure(name: str, v: Any) -> str:
    if not isinstance(v, float):
        return str(v)
    if math.isnan(v):
        return "-"
    if v == int(v) and abs(v) < 1e6 and not name.startswith("capex"):
        return f"{int(v):,}"
    if name.startswith("capex") or name.startswith("energy_cost"):
        return f"${v / 1e6:,.3f} M" if abs(v) >= 1e6 else f"${v:,.0f}"
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
        lines += ["", winner(per, "tokens_per_day_per_dollar", "delivered tokens per day per dollar of capex", "tokens/day/$")]
    return "\n".join(lines) + "\n"


def winner(rows: list[dict], name: str, what: str, unit_text: str) -> str:
    """The best variant on a job figure, named only when it leads the next by more than the job twin's
    stated error; else the variants within that error of the best.

    >>> rows = [{"variant": i, "label": f"v{i}", "_all": {"f": v}} for i, v in ((1, 100.0), (2, 98.0), (3, 90.0))]
    >>> winner(rows, "f", "f", "u")
    "No variant leads on f by more than the job twin's stated error (2.3%): variants 1 (v1), 2 (v2) are within it of the best (100.0 u)."
    >>> winner(rows[:1] + rows[2:], "f", "f", "u")
    "Most f: variant 1 (v1), 100.0 u, 11.1% ahead of variant 3, more than the job twin's stated error (2.3%)."
    """
    from twin.twins.workload.validation import STATED_ERROR

    ranked = sorted(rows, key=lambda r: (-r["_all"][name], r["variant"]))
    best, b = ranked[0], ranked[0]["_all"][name]
    close = [r for r in ranked[1:] if r["_all"][name] >= b * (1 - STATED_ERROR)]
    err = f"the job twin's stated error ({100 * STATED_ERROR:.1f}%)"
    if len(ranked) == 1:
        return f"Most {what}: variant {best['variant']} ({best['label']}), {b:,.1f} {unit_text} (the only variant with it)."
    if close:
        within = ", ".join(f"{r['variant']} ({r['label']})" for r in [best, *close])
        return f"No variant leads on {what} by more than {err}: variants {within} are within it of the best ({b:,.1f} {unit_text})."
    nxt = ranked[1]
    return (f"Most {what}: variant {best['variant']} ({best['label']}), {b:,.1f} {unit_text}, "
            f"{100 * (b / nxt['_all'][name] - 1):.1f}% ahead of variant {nxt['variant']}, more than {err}.")


def write(sw: Sweep, oc: Outcome, out: Path) -> dict[str, bytes]:
    """Every output file of the sweep, written into ``out``; returns them by name."""
    table = rows(sw, oc)
    axes = axis_columns(sw, oc.variants)
    names = {v.index: " ".join(cells[k] for _, cells in axes) for k, v in enumerate(oc.variants)}
    files = {"results.csv": to_csv(sw, table), "results.parquet": to_parquet(sw, table),
             "summary.md": summary(sw, table, oc.interrupted).encode("utf-8")}
    for name, x, label, scale in (("pareto-capex.png", "capex", "capex (million USD)", 1e6),
                                  ("pareto-mw.png", "draw_mw", "grid draw (MW)", 1.0)):
        png = pareto_plot(table, x, label, scale, f"{sw.name}: delivered tokens per day against {label}", names)
        if png:
            files[name] = png
    import twin.owned as owned

    owned.write(out, files)  # run_sweep has asked owned.problem for OUTPUTS before the sweep ran
    return files


OUTPUTS = ["results.csv", "results.parquet", "summary.md", "pareto-capex.png", "pareto-mw.png"]
