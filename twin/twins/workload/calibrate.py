"""``twin calibrate``: a user's own measured runs fit a software stack's few constants for their cluster.

Input: a CSV of measured runs, one a row, each a plan of one of the site's workloads with its GPU count and
measured step time::

    workload,gpus,tp,pp,dp,micro_batch,step_s
    llama3-405b-8k,8192,8,16,64,1,20.9

Columns: ``workload``, ``gpus`` and ``step_s`` (seconds per optimizer step) are required; ``tp cp pp dp ep
micro_batch global_batch virtual_stages zero sequence_length`` change the workload's plan (``dp`` defaults
to ``gpus / (tp x cp x pp)``). Every run is timed by the job twin on the site's compiled fabric under the
base stack with the fitted constants, and the constants are those that make the predicted step times
closest to the measured ones (least squares on the log of predicted / measured):

- ``kernel_share``: the share of benchmark kernel speed the stack keeps through a step;
- ``straggler_mean``: the mean per-rank slowdown of an exponential straggler law (stragglers.py), which
  grows with the GPU count, so it needs runs at more than one scale;
- ``zero3_host``: the host's time before each ZeRO-3 parameter gather, which the GPU waits out (comm.py), so
  it needs runs at ZeRO 3.

The result: the fitted constants, each run's residual, the held-out error (``holdout="smallest"``: fit on
the run with the fewest GPUs and predict the rest of the series), and the calibrated stack as a catalog
entry (``catalog: stacks: NAME:``) a site can paste into its own ``catalog:`` and name in ``stack:``.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass

import numpy as np

from twin.compiler.resolve.workload_checks import shard_problem
from twin.lang.diagnostics import Diagnostic, Severity, SpecError

CONSTANTS = ("kernel_share", "straggler_mean", "zero3_host")
BOUNDS = {"kernel_share": (0.05, 1.0), "straggler_mean": (0.0, 1.0), "zero3_host": (0.0, 0.01)}
DIGITS = {"kernel_share": 4, "straggler_mean": 4, "zero3_host": 7}  # zero3_host in seconds: to 0.1 us
INT_COLUMNS = ("gpus", "tp", "cp", "pp", "dp", "ep", "micro_batch", "global_batch", "virtual_stages", "zero", "sequence_length",
               "dp_shard")
MAX_RUNS = 200  # each run is timed once per step of the fit: the cost is checked before any is timed


@dataclass(frozen=True)
class Run:
    line: int
    workload: str
    gpus: int
    step_s: float
    plan: dict


def _error(file: str, line: int, col: int, what: str, expected: str) -> SpecError:
    return SpecError([Diagnostic(Severity.ERROR, file, line, col, (), what, expected)])


def read_runs(text: str, file: str, workloads: dict) -> list[Run]:
    """The runs of a calibration CSV; a located :class:`SpecError` for anything that is not one."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not any(x.strip() for x in rows[0]):
        raise _error(file, 1, 1, "no header row", "a header such as workload,gpus,step_s")
    head = [x.strip() for x in rows[0]]
    allowed = ("workload", "step_s", *INT_COLUMNS)
    for c, name in enumerate(head, 1):
        if name not in allowed:
            raise _error(file, 1, c, f"unknown column '{name}'", "one of: " + ", ".join(allowed))
    if len(set(head)) < len(head):
        raise _error(file, 1, 1, "a column appears twice", "each column once")
    for need in ("workload", "gpus", "step_s"):
        if need not in head:
            raise _error(file, 1, 1, f"no '{need}' column", "workload, gpus and step_s columns")
    body = [(i, r) for i, r in enumerate(rows[1:], 2) if any(x.strip() for x in r)]
    if len(body) > MAX_RUNS:
        raise _error(file, body[MAX_RUNS][0], 1, f"{len(body)} runs, more than {MAX_RUNS}", f"at most {MAX_RUNS} runs")
    runs = []
    for line, r in body:
        if len(r) != len(head):
            raise _error(file, line, 1, f"{len(r)} fields, the header has {len(head)}", f"{len(head)} comma-separated fields")
        cell = {h: (c, v.strip()) for c, (h, v) in enumerate(zip(head, r), 1)}
        col, name = cell["workload"]
        if name not in workloads:
            raise _error(file, line, col, f"unknown workload '{name}'", "a workload of the site: " + ", ".join(sorted(workloads)))
        plan = {}
        for h in INT_COLUMNS:
            if h in cell:
                c, v = cell[h]
                if not v.isdigit() or int(v) < (0 if h == "zero" else 1) or (h == "zero" and int(v) > 3):
                    raise _error(file, line, c, f"{h} '{v}' is not a whole number in range", "0-3" if h == "zero" else "a whole number >= 1")
                plan[h] = int(v)
        c, v = cell["step_s"]
        try:
            step = float(v)
        except ValueError:
            step = math.nan
        if not math.isfinite(step) or step <= 0:
            raise _error(file, line, c, f"step_s '{v}' is not a positive time in seconds", "seconds per step, > 0")
        w = workloads[name]
        gpus = plan.pop("gpus")
        tp, cp, pp = (plan.get(k, getattr(w, k)) for k in ("tp", "cp", "pp"))
        if "dp" not in plan:
            if gpus % (tp * cp * pp):
                raise _error(file, line, cell["gpus"][0], f"{gpus} GPUs do not divide over TP{tp} x CP{cp} x PP{pp}",
                             f"a multiple of {tp * cp * pp}")
            plan["dp"] = gpus // (tp * cp * pp)
        elif tp * cp * pp * plan["dp"] != gpus:
            raise _error(file, line, cell["gpus"][0], f"{gpus} GPUs, but TP{tp} x CP{cp} x PP{pp} x DP{plan['dp']} = "
                         f"{tp * cp * pp * plan['dp']}", f"{tp * cp * pp * plan['dp']}")
        shard, ep, zero = plan.get("dp_shard", w.dp_shard), plan.get("ep", w.ep), plan.get("zero", w.zero)
        if shard_problem(shard, plan["dp"], cp, ep, zero) is not None:  # the run's shard group, or the workload's at the run's DP
            whose = "" if "dp_shard" in cell else f" (workload {name}'s)"
            raise _error(file, line, cell["dp_shard"][0] if "dp_shard" in cell else cell["gpus"][0],
                         f"a ZeRO shard group of {shard} ranks{whose} for DP{plan['dp']} x CP{cp} = {plan['dp'] * cp} data-parallel ranks, "
                         f"EP{ep}, ZeRO {zero}", "dp_shard dividing DP x CP, a multiple of EP, with zero >= 1")
        runs.append(Run(line, name, gpus, step, plan))
    if not runs:
        raise _error(file, 2, 1, "no runs", "at least one row of measurements")
    return runs


def with_stack(design, base: str, name: str, x: dict):
    """The design with a new stack ``name``: ``base`` with the constants ``x``."""
    from twin.lang.site.workload_models import Stragglers

    cat = design.spec.catalog
    upd = {"kernel_share": x.get("kernel_share", cat.stacks[base].kernel_share)}
    if "straggler_mean" in x:
        upd["stragglers"] = Stragglers(distribution="exponential", mean=x["straggler_mean"])
    if "zero3_host" in x:
        upd["zero3_host"] = x["zero3_host"]
    stacks = {**cat.stacks, name: cat.stacks[base].model_copy(update=upd)}
    return dataclasses.replace(design, spec=dataclasses.replace(design.spec, catalog=cat.model_copy(update={"stacks": stacks})))


def predict(design, net, runs: list[Run], stack: str, scheme, lib=None) -> np.ndarray:
    """The job twin's step time of every run under ``stack`` (seconds); ``lib``: the collective library's
    constants (default: the model's, with the chassis' NIC latency; ``twin calibrate --nccl-tests`` fits them)."""
    from twin.lang.scenario.job import Case, Job
    from twin.twins.net.nccl import Library
    from twin.twins.workload import jobs

    by_name = {w.name: w for w in design.spec.site.workloads}
    lib = lib or Library(nic_latency=design.spec.chassis.nic_latency)
    out = []
    for k, r in enumerate(runs):
        w = by_name[r.workload].model_copy(update={**r.plan, "name": f"run-{k}", "stack": stack})
        site = design.spec.site.model_copy(update={"workloads": [w]})
        d = dataclasses.replace(design, spec=dataclasses.replace(design.spec, site=site))
        j = jobs.simulate_job(d, net, Job(workload=w.name), [scheme], lib, Case(name="calibrate"), set(), None, ("runs", k))
        out.append(j["schemes"][0]["step_s"])
    return np.array(out)


def fit(design, net, runs: list[Run], base: str, name: str, constants: tuple[str, ...], scheme, file: str = "runs.csv",
        holdout: str = "none", lib=None) -> dict:
    """Fit ``constants`` of stack ``base`` on ``runs`` (all, or with ``holdout="smallest"`` only the run with the fewest
    GPUs); the result with residuals, held-out errors and the catalog entry."""
    from scipy.optimize import least_squares

    for c in constants:
        if c not in CONSTANTS:
            raise _error(file, 1, 1, f"unknown constant '{c}'", "one of: " + ", ".join(CONSTANTS))
    if base not in design.spec.catalog.stacks:
        raise _error(file, 1, 1, f"unknown base stack '{base}'", "one of: " + ", ".join(sorted(design.spec.catalog.stacks)))
    used = [min(range(len(runs)), key=lambda i: (runs[i].gpus, i))] if holdout == "smallest" else list(range(len(runs)))
    if len(used) < len(constants):
        raise _error(file, runs[-1].line, 1, f"{len(used)} run(s) to fit {len(constants)} constants ({', '.join(constants)})",
                     f"at least {len(constants)} runs, or fewer constants (--fit kernel_share)")
    if "straggler_mean" in constants and len({runs[i].gpus for i in used}) < 2:
        raise _error(file, runs[used[0]].line, 1, "straggler_mean grows with the GPU count: the runs fitted are all at one scale",
                     "runs at two or more GPU counts, or --fit kernel_share")
    fitted = [runs[i] for i in used]
    by_name = {w.name: w for w in design.spec.site.workloads}
    if "zero3_host" in constants and not any(r.plan.get("zero", by_name[r.workload].zero) == 3 for r in fitted):
        raise _error(file, fitted[0].line, 1, "zero3_host is the time before each ZeRO-3 gather: none of the runs fitted is at ZeRO 3",
                     "runs with zero 3, or --fit kernel_share")
    meas = np.array([r.step_s for r in fitted])
    base_x = {"kernel_share": design.spec.catalog.stacks[base].kernel_share, "straggler_mean": 0.01,
              "zero3_host": float(design.spec.catalog.stacks[base].zero3_host) or 1e-3}

    def residual(v) -> np.ndarray:
        x = dict(zip(constants, v))
        return np.log(predict(with_stack(design, base, name, x), net, fitted, name, scheme, lib) / meas)

    lo, hi = zip(*(BOUNDS[c] for c in constants))
    res = least_squares(residual, [base_x[c] for c in constants], bounds=(lo, hi), diff_step=1e-3, xtol=1e-6, ftol=1e-8)
    x = {c: float(round(v, DIGITS[c])) for c, v in zip(constants, res.x)}
    d = with_stack(design, base, name, x)
    pred = predict(d, net, runs, name, scheme, lib)
    rows = [{"line": r.line, "workload": r.workload, "gpus": r.gpus, "measured_step_s": r.step_s, "predicted_step_s": float(p),
             "error": float(p / r.step_s - 1), "fitted": i in used} for i, (r, p) in enumerate(zip(runs, pred))]
    held = [abs(r["error"]) for r in rows if not r["fitted"]]
    return {"stack": name, "base": base, "constants": x, "runs": rows, "scheme": scheme.name,
            "fit_rms_error": float(np.sqrt(np.mean([r["error"] ** 2 for r in rows if r["fitted"]]))),
            "held_out": {"runs": len(held), "mean_abs_error": float(np.mean(held)), "max_abs_error": float(max(held))} if held else None,
            "catalog": catalog_entry(d.spec.catalog.stacks[name], name, base, file, rows, x)}


def catalog_entry(stack, name: str, base: str, file: str, rows: list[dict], x: dict) -> str:
    """The calibrated stack as YAML a site pastes under its ``catalog:``."""
    import yaml

    fields = stack.model_dump(mode="json", exclude_none=True)
    n = sum(r["fitted"] for r in rows)
    fields["description"] = f"{base} calibrated on {n} measured run(s) of {file}"
    fields["source"] = (f"twin calibrate on {file} ({n} run(s) fitted, " + ", ".join(f"{k} {v}" for k, v in x.items()) + "); "
                        f"base stack {base}: {stack.source}")
    return yaml.safe_dump({"catalog": {"stacks": {name: fields}}}, sort_keys=False, width=120)
