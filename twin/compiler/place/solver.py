"""HiGHS (``highspy``) for every placement model: a MILP written as arrays, solved with fixed settings.

A placement model is built block by block with numpy (:class:`Milp`: columns with bounds and
integrality, rows as sparse coefficient lists in bulk), with no per-constraint Python object: a hall
model of tens of thousands of rows is built in milliseconds. HiGHS runs single-threaded with a fixed
seed, so the same model gives the same solution (byte-identical builds). HiGHS numbers the columns in
the order they first appear in the rows (then those only in the objective), which is the order the
models had when they were built through Pyomo: the same model, bit for bit, and the same solutions.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass

import highspy
import numpy as np

MIP_GAP = 1e-4
OPTIONS = {"threads": 1, "random_seed": 0, "mip_rel_gap": MIP_GAP, "presolve": "on", "output_flag": False}

_S = highspy.HighsModelStatus
# HiGHS's model status as the termination names the placement figures and messages carry
STATUS = {_S.kOptimal: "optimal", _S.kInfeasible: "infeasible", _S.kUnboundedOrInfeasible: "infeasibleOrUnbounded",
          _S.kUnbounded: "unbounded", _S.kTimeLimit: "maxTimeLimit", _S.kIterationLimit: "maxIterations",
          _S.kObjectiveBound: "objectiveLimit", _S.kObjectiveTarget: "objectiveLimit",
          _S.kLoadError: "error", _S.kModelError: "error", _S.kPresolveError: "error", _S.kSolveError: "error",
          _S.kPostsolveError: "error"}
if hasattr(_S, "kSolutionLimit"):
    STATUS[_S.kSolutionLimit] = "maxIterations"
_LIMITS = {"maxTimeLimit", "maxIterations", "objectiveLimit"}  # stopped early: a solution only if one was found


@dataclass(frozen=True)
class Result:
    status: str  # optimal | infeasible | maxTimeLimit | ...
    objective: float | None  # of the best solution found; None without one
    bound: float | None  # proven bound on the objective (the objective itself for an LP)
    x: np.ndarray | None  # column values by the Milp's own column index


class Milp:
    """A MILP as arrays: ``add_cols`` hands out column indices, ``add_rows`` appends rows given as
    (row lengths, column indices, coefficients) in one call, ``cost`` sets objective coefficients."""

    def __init__(self) -> None:
        self.n = 0
        self._cols: list[tuple[np.ndarray, np.ndarray, bool]] = []
        self._rows: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.c: np.ndarray = np.zeros(0)

    def add_cols(self, n: int, lower, upper, integer: bool = False) -> np.ndarray:
        """``n`` new columns with bounds (scalars or arrays); their indices."""
        idx = np.arange(self.n, self.n + n)
        self._cols.append((np.broadcast_to(np.asarray(lower, float), (n,)), np.broadcast_to(np.asarray(upper, float), (n,)), integer))
        self.n += n
        return idx

    def add_rows(self, lengths, cols, vals, lower, upper) -> None:
        """Rows ``lower <= sum(vals * x[cols]) <= upper``: row k has the next ``lengths[k]`` entries
        of ``cols`` / ``vals``, in the order written (which decides the column numbering, above).
        A zero coefficient numbers its column but is left out of the matrix; bounds are scalars or
        one per row (``None``: unbounded)."""
        lengths = np.asarray(lengths, np.int64)
        m = len(lengths)
        if m == 0:
            return
        cols = np.asarray(cols, np.int64)
        vals = np.broadcast_to(np.asarray(vals, float), cols.shape)
        row = np.repeat(np.arange(m), lengths)
        lo = np.broadcast_to(np.asarray(-np.inf if lower is None else lower, float), (m,))
        hi = np.broadcast_to(np.asarray(np.inf if upper is None else upper, float), (m,))
        self._rows.append((row, cols, vals, lo, hi))

    def cost(self, cols, vals) -> None:
        """Objective coefficients (added to what the columns already have)."""
        if len(self.c) < self.n:
            self.c = np.concatenate([self.c, np.zeros(self.n - len(self.c))])
        np.add.at(self.c, np.asarray(cols, np.int64), np.asarray(vals, float))

    def solve(self, time_limit: float, maximize: bool = False) -> Result:
        lower = np.concatenate([c[0] for c in self._cols]) if self._cols else np.zeros(0)
        upper = np.concatenate([c[1] for c in self._cols]) if self._cols else np.zeros(0)
        integer = np.concatenate([np.full(len(c[0]), c[2]) for c in self._cols]) if self._cols else np.zeros(0, bool)
        cost = np.concatenate([self.c, np.zeros(self.n - len(self.c))])
        rows, cols, vals, lo, hi, offset = [], [], [], [], [], 0
        for r, c, v, a, b in self._rows:
            rows.append(r + offset)
            cols.append(c)
            vals.append(v)
            lo.append(a)
            hi.append(b)
            offset += len(a)
        row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        col = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        val = np.concatenate(vals) if vals else np.zeros(0)
        # columns numbered by first appearance in the rows, then the objective's, the rest left out
        seen, first = np.unique(col, return_index=True)
        order = seen[np.argsort(first, kind="stable")]
        in_obj = np.flatnonzero(cost != 0)
        order = np.concatenate([order, in_obj[~np.isin(in_obj, order)]]).astype(np.int64)
        rank = np.full(self.n, -1, np.int64)
        rank[order] = np.arange(len(order))
        # column-wise, each column's entries by row
        keep = val != 0
        row, val, newcol = row[keep], val[keep], rank[col[keep]]
        by = np.lexsort((row, newcol))
        start = np.searchsorted(newcol[by], np.arange(len(order) + 1)).astype(np.int32)
        lp = highspy.HighsLp()
        lp.num_col_ = len(order)
        lp.num_row_ = offset
        lp.col_cost_ = cost[order]
        lp.col_lower_ = lower[order]
        lp.col_upper_ = upper[order]
        lp.row_lower_ = np.concatenate(lo) if lo else np.zeros(0)
        lp.row_upper_ = np.concatenate(hi) if hi else np.zeros(0)
        lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_ = len(order)
        lp.a_matrix_.num_row_ = offset
        lp.a_matrix_.start_ = start
        lp.a_matrix_.index_ = row[by].astype(np.int32)
        lp.a_matrix_.value_ = val[by]
        if integer[order].any():
            kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
            lp.integrality_ = [kinds[i] for i in integer[order].tolist()]  # Python bools: no numpy scalar per column
        h = _highs()
        h.setOptionValue("time_limit", float(time_limit))
        for key, value in OPTIONS.items():
            h.setOptionValue(key, value)
        h.passModel(lp)
        h.run()
        status = STATUS.get(h.getModelStatus(), "unknown")
        sol = h.getSolution()
        feasible = status == "optimal" or (status in _LIMITS and sol.value_valid)
        if not feasible:
            info = h.getInfo()
            return Result(status, None, info.mip_dual_bound if info.mip_node_count != -1 else None, None)
        info = h.getInfo()
        x = lower.copy()  # a column in no row and not in the objective: at its lower bound
        x[order] = np.asarray(sol.col_value)
        bound = info.objective_function_value if info.mip_node_count == -1 else info.mip_dual_bound
        return Result(status, float(info.objective_function_value), float(bound), x)


def _highs() -> highspy.Highs:
    """A fresh solver; its version banner (printed on stdout when the first one is made) goes nowhere:
    stdout may be carrying ``--json`` output."""
    with _stdout_to_devnull():
        return highspy.Highs()


@contextmanager
def _stdout_to_devnull():
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
