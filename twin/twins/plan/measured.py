"""``twin plan --measured runs.csv``: the plan search held to the user's own measurements.

The CSV (untrusted) holds plans the user ran, one a row, and the step time each measured. twin times every
plan with the full job twin on the same problem (:func:`twin.twins.plan.answer.full_twin`), orders them as
it would choose among them (the plans it predicts fit in memory first, then by predicted step), and reports:

- **regret**: the measured step of the plan twin ranks first over the measured best, minus one (0 when
  twin's pick is the measured best);
- **rank correlation**: Spearman's, of the predicted steps against the measured ones;
- **the measured best's place**: in twin's order of the measured plans, and in the whole space the search
  sees (1 + the feasible plans the fast stage predicts faster than it; every plan whose lower bound is
  below its predicted step is scored, the rest cannot be faster);
- **the plans twin predicts do not fit** in HBM less the reserve, each with its shortfall.

Columns (header row, any order; a blank cell takes the default): ``step_s`` (required, seconds, > 0);
the plan axes ``tp cp pp dp ep virtual_stages micro_batch recompute zero sequence_parallel fp8`` and
``order`` (or ``dims``), defaulting to the workload's plan (``dp`` to what the GPUs leave); ``stack`` (a
catalog stack the run used; default the workload's); ``gpus`` and ``global_batch``, which must equal the
job's (a CSV of runs at another count is a run of ``twin plan --gpus N`` or ``--set global_batch=B``);
``name`` (a label). Lines that start with ``#`` are comments. Every error is ``FILE:LINE: column: message (expected ...)``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from twin.compiler.resolve import memory
from twin.twins.plan import answer, fast, search, tables
from twin.twins.plan.problem import Problem
from twin.twins.plan.space import DIMS, MAX_CP, MAX_MICRO_BATCH, MAX_TP, ORDERS, RECOMPUTE, RULES, Axes, Space

MAX_ROWS = 256  # each row is one full job twin run
MAX_BYTES = 256 * 1024
MAX_SCORED = 4_000_000  # plans the fast stage may score to place the measured best in the whole space
INTS = ("tp", "cp", "pp", "dp", "ep", "virtual_stages", "micro_batch", "zero", "gpus", "global_batch", "dp_shard")
FLAGS = ("sequence_parallel", "fp8")
COLUMNS = ("step_s", *INTS[:7], "recompute", "zero", "sequence_parallel", "fp8", "order", "dims", "stack", "gpus", "global_batch",
           "dp_shard", "name")
TRUE, FALSE = ("1", "true", "yes", "on", "linear"), ("0", "false", "no", "off", "none")


class MeasuredError(ValueError):
    """A located error in the CSV: ``FILE:LINE: column: message (expected ...)``."""


@dataclass
class Run:
    line: int
    cells: dict[str, str]  # column -> stripped text ('' where blank)
    step_s: float


def _err(path, line: int, col: str, msg: str, expected: str) -> MeasuredError:
    return MeasuredError(f"{path}:{line}: {col}: {msg} (expected {expected})")


def read(path: Path) -> list[Run]:
    """The CSV's rows, checked for shape before any work: size, header, row count, a positive number in
    ``step_s``. The plans themselves are checked against the problem by :func:`plans`."""
    path = Path(path)
    if not path.is_file():
        raise MeasuredError(f"{path}: not a file (expected a CSV of measured runs)")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise _err(path, 1, "file", f"{size:,} bytes", f"at most {MAX_BYTES:,} bytes, {MAX_ROWS} runs")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _err(path, text_line(path.read_bytes()[:e.start]), "file", "not UTF-8 text", "a CSV file") from None
    if "\x00" in text:
        raise _err(path, text[:text.index("\x00")].count("\n") + 1, "file", "a NUL byte", "a CSV text file")
    text = "\n".join("" if ln.lstrip().startswith("#") else ln for ln in text.split("\n"))  # comments, lines kept
    rows = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(rows, None)
        while header is not None and not any(h.strip() for h in header):
            header = next(rows, None)
        if header is None:
            raise _err(path, 1, "header", "the file is empty", "a header row naming step_s and the plan's columns, then one run a row")
        head_line = rows.line_num
        names = [h.strip().lower() for h in header]
        for i, h in enumerate(names):
            if h not in COLUMNS:
                shown = "".join(ch for ch in h if ch.isprintable())[:40]
                raise _err(path, head_line, shown or f"column {i + 1}", "unknown column", "one of " + ", ".join(COLUMNS))
            if h in names[:i]:
                raise _err(path, head_line, h, "named twice", "each column once")
        if "order" in names and "dims" in names:
            raise _err(path, head_line, "dims", "order and dims both given", "one of them: the rank order")
        if "step_s" not in names:
            raise _err(path, head_line, "step_s", "missing", "a column step_s: the measured step time in seconds")
        out = []
        for cells in rows:
            if not any(c.strip() for c in cells):
                continue
            line = rows.line_num
            if len(out) >= MAX_ROWS:
                raise _err(path, line, "file", f"more than {MAX_ROWS} runs", f"at most {MAX_ROWS} rows (each is a full job twin run)")
            if len(cells) != len(names):
                raise _err(path, line, "row", f"{len(cells)} cells", f"{len(names)}, one per column of the header")
            d = {k: v.strip() for k, v in zip(names, cells)}
            d["order"] = d.pop("dims", d.get("order", ""))
            out.append(Run(line, d, _step(path, line, d["step_s"])))
    except csv.Error as e:
        raise _err(path, rows.line_num, "file", str(e), "a CSV file") from None
    if not out:
        raise _err(path, head_line, "file", "no runs under the header", "one measured run a row")
    return out


def text_line(b: bytes) -> int:
    return b.count(b"\n") + 1


def _step(path, line: int, v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise _err(path, line, "step_s", f"'{v[:30]}' is not a number", "the measured step time in seconds, > 0") from None
    if not np.isfinite(x) or x <= 0:
        raise _err(path, line, "step_s", f"{v[:30]}", "a measured step time in seconds, > 0")
    return x


def _int(path, r: Run, col: str, default: int) -> int:
    v = r.cells.get(col, "")
    if v == "":
        return default
    if not v.isdigit() or len(v) > 7 or int(v) < 1 and col not in ("zero", "dp_shard"):
        raise _err(path, r.line, col, f"'{v[:30]}'", "a whole number of at least 1" if col != "zero" else "0, 1, 2 or 3")
    return int(v)


def _flag(path, r: Run, col: str, default: bool) -> int:
    v = r.cells.get(col, "").lower()
    if v == "":
        return int(default)
    if v not in TRUE + FALSE:
        raise _err(path, r.line, col, f"'{v[:30]}'", "true or false (1 or 0)" + (", or linear or none" if col == "fp8" else ""))
    return int(v in TRUE)


def _order(path, r: Run, sizes: dict[str, int], default: str) -> str:
    """The rank order of the row, as the space names it: its dimensions above 1 in the row's order, those
    of size 1 in their place of ``tp-cp-pp-dp``."""
    v = r.cells.get("order", "").lower() or default
    parts = v.split("-")
    if sorted(parts) != sorted(DIMS):
        raise _err(path, r.line, "order", f"'{v[:40]}'", "tp, cp, pp and dp joined by '-', fastest first (e.g. tp-cp-pp-dp)")
    it = iter([d for d in parts if sizes[d] > 1])
    return "-".join(next(it) if sizes[d] > 1 else d for d in DIMS)


def plan_of(p: Problem, path, r: Run) -> dict:
    """One row as a plan of the problem (space columns' names), checked against the rules of the space."""
    w, n = p.workload, p.gpus
    for col, want in (("gpus", n), ("global_batch", w.global_batch)):
        if r.cells.get(col, "") not in ("", str(want)):
            flag = "--gpus N" if col == "gpus" else "--set global_batch=B"
            raise _err(path, r.line, col, f"'{r.cells[col][:30]}', the job's is {want:,}", f"{want} (runs at another count: twin plan {flag})")
    c = {k: _int(path, r, col, getattr(w, col) if col != "dp" else 0) for k, col in
         (("tp", "tp"), ("cp", "cp"), ("pp", "pp"), ("dp", "dp"), ("ep", "ep"), ("v", "virtual_stages"), ("mb", "micro_batch"))}
    c["zero"] = _int(path, r, "zero", w.zero)
    if c["zero"] > 3:
        raise _err(path, r.line, "zero", f"{c['zero']}", "0, 1, 2 or 3")
    rc = r.cells.get("recompute", "").lower() or w.recompute
    if not isinstance(rc, str) or rc not in RECOMPUTE:
        raise _err(path, r.line, "recompute", f"'{str(rc)[:40]}'" + (" (the workload names modules)" if not isinstance(rc, str) else ""),
                   "none, selective or full")
    c["rc"] = RECOMPUTE.index(rc)
    c["sp"] = _flag(path, r, "sequence_parallel", w.sequence_parallel)
    c["fp8"] = _flag(path, r, "fp8", w.fp8 != "none")
    rest = c["tp"] * c["cp"] * c["pp"]
    if c["dp"] == 0:
        if n % rest:
            raise _err(path, r.line, "tp", f"TP x CP x PP = {rest:,} does not divide the {n:,} GPUs", f"a divisor of {n:,}")
        c["dp"] = n // rest
    if rest * c["dp"] != n:
        raise _err(path, r.line, "dp", f"TP x CP x PP x DP = {rest * c['dp']:,}", f"the job's {n:,} GPUs")
    c["sp"] = c["sp"] if c["tp"] > 1 else 0  # the same plan: SP with TP 1 splits nothing
    c["zero"] = c["zero"] if c["dp"] * c["cp"] > 1 else 0  # ZeRO over one data-parallel rank shards nothing
    c["shard"] = _int(path, r, "dp_shard", 0)  # hybrid sharding (0: one shard over every data-parallel rank)
    c["dims"] = _order(path, r, c, p.base.dims)
    c["order"] = ORDERS.index(c["dims"])
    c["m"] = w.global_batch // (c["dp"] * c["mb"]) if w.global_batch % (c["dp"] * c["mb"]) == 0 else 0
    why = rule_broken(p.axes(), c)
    if why:
        col, msg, expected = why
        blank = col in ("tp", "cp", "pp", "ep", "virtual_stages", "micro_batch", "zero", "fp8") and r.cells.get(col, "") == ""
        raise _err(path, r.line, col, msg + (" (the workload's value: the cell is blank)" if blank else ""), expected)
    return c


def stated_plan(p: Problem) -> dict | str:
    """The workload's own plan as a plan of the space (DP from the GPU count), or why it is not one: the rule
    it breaks, as a measured row with every cell blank would be refused."""
    if p.workload.recompute_layers:
        return (f"it recomputes {p.workload.recompute_layers} layer(s) of each model chunk (recompute_layers), and the search "
                "recomputes every layer or none")
    try:
        return plan_of(p, "plan", Run(0, {}, 0.0))
    except MeasuredError as e:
        return str(e).split(": ", 1)[1].replace(" (the workload's value: the cell is blank)", "")


def rule_broken(ax: Axes, c: dict) -> tuple[str, str, str] | None:
    """(column, what, expected) when plan ``c`` breaks a rule of the space, else None: the space enumerated
    with every axis pinned to the row's value keeps exactly it, or says by which rule it went."""
    pins = {"tp": c["tp"], "cp": c["cp"], "pp": c["pp"], "dp": c["dp"], "ep": c["ep"], "v": c["v"], "micro_batch": c["mb"],
            "recompute": RECOMPUTE[c["rc"]], "zero": c["zero"], "sequence_parallel": c["sp"], "fp8": c["fp8"], "order": c["dims"],
            **({"dp_shard": c["shard"]} if c.get("shard") else {})}
    sp = Space.of(Axes(**{**ax.__dict__, "fixed": pins}))
    if sp.size == 1:
        return None
    col = {"tp": "tp", "cp": "cp", "batch": "micro_batch", "ep": "ep", "interleave": "virtual_stages", "zero-pp": "zero", "shard": "dp_shard"}
    for reason, k in sp.pruned.items():
        if k:
            return col[reason], RULES[reason], _expected(reason, ax, c)
    # the axes the space bounds before its rules
    tp, cp, pp, dp = c["tp"], c["cp"], c["pp"], c["dp"]
    checks = (("tp", tp <= MAX_TP, f"TP {tp}", f"at most {MAX_TP}"),
              ("cp", cp <= MAX_CP and cp & (cp - 1) == 0, f"CP {cp}", f"a power of two up to {MAX_CP}"),
              ("pp", pp <= ax.layers, f"PP {pp} over {ax.layers} layers", f"at most {ax.layers}"),
              ("ep", not ax.experts and c["ep"] == 1 or ax.experts and ax.experts % c["ep"] == 0 and c["ep"] <= dp * cp,
               f"EP {c['ep']}", "1 for a dense model; for MoE a divisor of the experts and of DP x CP"),
              ("virtual_stages", c["v"] == 1 or pp >= 2 and (ax.layers // pp) % c["v"] == 0, f"{c['v']} chunks per GPU",
               f"1, or with PP >= 2 a divisor of the {ax.layers // pp} layers per stage"),
              ("micro_batch", c["mb"] <= MAX_MICRO_BATCH and ax.batch % (dp * c["mb"]) == 0, f"micro-batch {c['mb']}",
               f"at most {MAX_MICRO_BATCH}, DP x micro-batch dividing the global batch {ax.batch:,}"),
              ("fp8", ax.fp8 or not c["fp8"], "FP8 on a GPU without an FP8 peak", "false"))
    for col_name, ok, what, expected in checks:
        if not ok:
            return col_name, what, expected
    return "row", "the plan space does not hold this plan", "a plan twin plan enumerates"


def _expected(reason: str, ax: Axes, c: dict) -> str:
    return {"tp": f"TP dividing {ax.heads} heads, {ax.kv_heads} KV heads and FFN {ax.ffn}",
            "cp": f"the sequence ({ax.seq:,}) divisible by 2 x CP",
            "batch": f"DP x micro-batch dividing the global batch {ax.batch:,}",
            "ep": f"EP dividing {ax.experts} experts and DP x CP",
            "interleave": f"PP >= 2, {ax.layers} layers divisible by PP x v, micro-batches divisible by PP",
            "zero-pp": f"zero {' or '.join(str(z) for z in ax.zero_with_pp)} with PP > 1 under this stack",
            "shard": "a dp_shard of at least 2 dividing DP x CP, below it, a multiple of EP, with zero >= 1"}[reason]


def _problem_for(p: Problem, stack: str, cache: dict) -> Problem:
    """The problem under another software stack, on the same compiled fabric."""
    if stack not in cache:
        q = Problem.of(p.design, p.workload.model_copy(update={"stack": stack}), p.gpus, fabric=False, job=p.job)
        q.net, q.ranks, q.scheme, q.lib = p.net, p.ranks, p.scheme, p.lib
        cache[stack] = q
    return cache[stack]


def plans(p: Problem, path, runs: list[Run]) -> list[tuple[Run, Problem, dict]]:
    """Every row checked against the problem (stack, plan, rules) before any is timed."""
    stacks = p.design.spec.catalog.stacks
    cache = {p.base.stack: p}
    out = []
    for r in runs:
        st = r.cells.get("stack", "") or p.base.stack
        if st not in stacks:
            raise _err(path, r.line, "stack", f"'{st[:40]}'", "a stack of the catalog: " + ", ".join(sorted(stacks)))
        q = _problem_for(p, st, cache)
        out.append((r, q, plan_of(q, path, r)))
    return out


def _memory(q: Problem, c: dict) -> dict[str, float]:
    cols = {k: np.array([c[k]], np.int64) for k in ("tp", "cp", "pp", "dp", "ep", "v", "mb", "shard", "rc", "zero", "sp", "fp8", "order", "m")}
    return {k: float(v[0]) for k, v in tables.memory_table(q, cols).items()}


def place_in_space(p: Problem, target: float, fixed: dict | None = None) -> dict:
    """1 + the feasible plans of the workload's space (under its stack) the fast stage predicts faster than
    ``target``; only plans whose lower bound is below it are scored (no other can be faster)."""
    space = Space.of(p.axes(fixed))
    if not space.size:
        return {"place": None, "why": "no plan of the space passes the rules"}
    mem = tables.memory_table(p, space.cols)
    fit = mem["total"] <= p.hbm - memory.RESERVE_BYTES
    cols = {k: v[fit] for k, v in space.cols.items()}
    comp = tables.compute_table(p, cols)
    bound = fast.lower_bound(p, cols, comp)
    cand = np.flatnonzero(bound < target)
    out = {"feasible": int(fit.sum()), "scored": int(len(cand))}
    if len(cand) > MAX_SCORED:
        return {**out, "place": None, "why": f"{len(cand):,} plans could be faster; at most {MAX_SCORED:,} are scored"}
    if not len(cand):
        return {**out, "place": 1, "faster": 0}
    ev = fast.evaluate(p, {k: v[cand] for k, v in cols.items()}, tables.Collectives(p), {k: v[cand] for k, v in comp.items()})
    step = ev["step_s"]
    faster = step < target * (1 - 1e-9)
    out.update(place=int(faster.sum()) + 1, faster=int(faster.sum()))
    if faster.any():
        i = int(np.argmin(step))
        c = {k: int(v[cand[i]]) for k, v in cols.items()}
        c["dims"] = ORDERS[c["order"]]
        out["best"] = {"label": answer.label(c), "predicted_step_s": float(step[i])}
    return out


def compare(pred: np.ndarray, meas: np.ndarray, fits: np.ndarray) -> dict:
    """twin's order of measured plans (those it predicts fit first, then by predicted step), the measured
    order, the regret (measured step of twin's first over the measured best, minus one) and Spearman's rank
    correlation of the predicted steps against the measured ones.

    >>> r = compare(np.array([1.0, 2.0, 3.0]), np.array([2.0, 1.0, 3.0]), np.array([True, True, True]))
    >>> round(r["regret"], 3), round(r["rank_correlation"], 3), r["best_place"]
    (1.0, 0.5, 2)
    """
    twin_order = np.lexsort((np.arange(len(pred)), pred, ~fits))
    meas_order = np.lexsort((np.arange(len(meas)), meas))
    return {"predicted": pred, "measured": meas, "twin_order": twin_order, "measured_order": meas_order,
            "regret": float(meas[twin_order[0]] / meas[meas_order[0]] - 1), "rank_correlation": search.spearman(pred, meas),
            "best_place": int(np.flatnonzero(twin_order == meas_order[0])[0]) + 1}


def hold(p: Problem, path, runs: list[Run], fixed: dict | None = None, progress=None) -> dict:
    """Time every measured plan with the full job twin and compare (module docstring); ``fixed``: the
    search's pins, which narrow the space the measured best is placed in."""
    checked = plans(p, path, runs)
    budget = p.hbm - memory.RESERVE_BYTES
    rows = []
    for n, (r, q, c) in enumerate(checked):
        if progress is not None:
            progress(n, len(checked))
        full = answer.full_twin(q, c)["schemes"][0]
        mem = _memory(q, c)
        rows.append({"line": r.line, "name": "".join(ch for ch in r.cells.get("name", "") if ch.isprintable())[:60], "stack": q.base.stack, "plan": answer.describe(c),
                     "label": answer.label(c), "measured_step_s": r.step_s, "predicted_step_s": full["step_s"],
                     "error": full["step_s"] / r.step_s - 1, "memory_GB": mem["total"] / 1e9, "fits": mem["total"] <= budget,
                     "shortfall_GB": max(0.0, mem["total"] - budget) / 1e9})
    cmp = compare(np.array([x["predicted_step_s"] for x in rows]), np.array([x["measured_step_s"] for x in rows]),
                  np.array([x["fits"] for x in rows]))
    for k, i in enumerate(cmp["twin_order"]):
        rows[i]["twin_rank"] = k + 1
    for k, i in enumerate(cmp["measured_order"]):
        rows[i]["measured_rank"] = k + 1
    twin_order = cmp["twin_order"]
    pred, meas = cmp["predicted"], cmp["measured"]
    pick, best = rows[twin_order[0]], rows[cmp["measured_order"][0]]
    out = {"site": p.design.spec.site.name, "workload": p.workload.name, "gpus": p.gpus, "stack": p.base.stack,
           "global_batch": p.workload.global_batch, "sequence_length": p.workload.sequence_length, "hbm_GB": p.hbm / 1e9,
           "file": str(path), "runs": [rows[i] for i in twin_order],
           "pick": pick["label"], "measured_best": best["label"],
           "regret": cmp["regret"], "rank_correlation": cmp["rank_correlation"],
           "mean_abs_error": float(np.mean(np.abs(pred / meas - 1))),
           "measured_best_place": {"among_measured": best["twin_rank"], "of": len(rows)},
           "not_fitting": [{"line": x["line"], "label": x["label"], "memory_GB": x["memory_GB"], "budget_GB": budget / 1e9,
                            "shortfall_GB": x["shortfall_GB"]} for x in rows if not x["fits"]]}
    if best["stack"] != p.base.stack:
        out["measured_best_place"]["in_space"] = {"place": None, "why": f"it ran stack {best['stack']}; the space is {p.base.stack}'s"}
    else:
        out["measured_best_place"]["in_space"] = place_in_space(p, best["predicted_step_s"], fixed)
    return out


def text(res: dict) -> str:
    """The comparison for a person."""
    def s(x):
        return f"{x * 1e3:,.0f} ms" if x < 10 else f"{x:,.2f} s"

    lines = [f"{res['workload']} on {res['gpus']:,} GPUs of {res['site']} (stack {res['stack']}, global batch {res['global_batch']:,} "
             f"x {res['sequence_length']:,} tokens): {len(res['runs'])} measured plans from {res['file']}",
             "", f"{'twin':>4} {'meas':>4}  {'measured':>9}  {'predicted':>9}  {'error':>7}  {'memory':>7}  plan"]
    for x in res["runs"]:
        lines.append(f"{x['twin_rank']:>4} {x['measured_rank']:>4}  {s(x['measured_step_s']):>9}  {s(x['predicted_step_s']):>9}  "
                     f"{x['error']:>+7.1%}  {x['memory_GB']:>5.1f}GB  {x['label']}" + (f" [{x['stack']}]" if x["stack"] != res["stack"] else "")
                     + (f"  (line {x['line']}" + (f", {x['name']}" if x["name"] else "") + ")"))
    pl = res["measured_best_place"]
    lines += ["", f"twin's pick: {res['pick']}", f"measured best: {res['measured_best']}",
              f"regret (measured step of twin's pick over the measured best, minus one): {res['regret']:.1%}",
              f"rank correlation (Spearman, predicted against measured): {res['rank_correlation']:.2f}; "
              f"mean absolute error of the predicted steps: {res['mean_abs_error']:.1%}",
              f"the measured best is #{pl['among_measured']} of the {pl['of']} measured plans in twin's order"]
    sp = pl["in_space"]
    if sp.get("place") is None:
        lines.append(f"its place in the whole space: not known ({sp['why']})")
    else:
        lines.append(f"in the whole space it is #{sp['place']:,} of {sp['feasible']:,} feasible plans "
                     f"({sp['scored']:,} could be faster by their lower bound and were scored)"
                     + (f"; twin's best there: {sp['best']['label']}, predicted {s(sp['best']['predicted_step_s'])}" if "best" in sp else ""))
    for x in res["not_fitting"]:
        lines.append(f"predicted not to fit: line {x['line']}: {x['label']} needs {x['memory_GB']:.1f} GB per GPU, "
                     f"{x['shortfall_GB']:.1f} GB over the {x['budget_GB']:.0f} GB left after the reserve")
    if not res["not_fitting"]:
        lines.append("every measured plan is predicted to fit in memory")
    return "\n".join(lines)
