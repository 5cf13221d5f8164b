"""nccl-tests output as a calibration input: the collective model's constants for a site, fitted on the
kernel-level measurement of its own fabric (``twin calibrate --nccl-tests``).

Input: what ``all_reduce_perf``, ``all_gather_perf`` or ``reduce_scatter_perf`` print ([nccl-tests]): one
``#  Rank  r Group g Pid p on HOST device d ...`` line per GPU, the column header
(``#       size         count      type   redop    root     time   algbw   busbw #wrong ...``), then one row
per size; the out-of-place ``time`` (us) of each row is the measurement (``busbw`` checks the operation:
``busbw = algbw x 2 (n - 1) / n`` for AllReduce, ``x (n - 1) / n`` for AllGather and ReduceScatter). Any other
line (the command, ``# Avg bus bandwidth``) is skipped.

The run is placed on the site as nccl-tests ran it: as many servers as the output names hosts, in topology
order, with as many GPUs of each as ran there. Every size is timed by the network twin (the fastest of the
algorithms NCCL would consider, :mod:`twin.twins.net.collectives`) and the two constants of the network's
collective model are those that make the predicted times closest to the measured ones (least squares on the
log of predicted / measured):

- ``protocol_efficiency`` (the library's ``eta``: the share of line rate a NIC moves, which sets the large sizes);
- ``step_overhead`` (an extra latency on every step of the collective, which sets the small ones).

Both are scenario fields (``protocol_efficiency:``, ``step_overhead:``), so a user pastes them into their
scenarios, and ``twin calibrate`` fits a stack on measured runs under them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np

from twin.lang.diagnostics import Diagnostic, Severity, SpecError

MAX_ROWS = 256  # sizes timed per step of the fit: the cost is checked before any is timed
MAX_RANK_LINES = 65_536
OPS = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf", "reducescatter": "reduce_scatter_perf"}
BOUNDS = {"protocol_efficiency": (0.2, 1.0), "step_overhead": (0.0, 1e-3)}
_RANK = re.compile(r"^#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)")


@dataclass(frozen=True)
class Row:
    line: int
    size: int  # bytes
    time_s: float  # out of place
    algbw: float  # GB/s
    busbw: float  # GB/s


@dataclass(frozen=True)
class Table:
    op: str  # allreduce, allgather, reducescatter
    ranks: int
    hosts: int
    per_host: int
    rows: tuple[Row, ...]


def _error(file: str, line: int, col: int, what: str, expected: str) -> SpecError:
    return SpecError([Diagnostic(Severity.ERROR, file, line, col, (), what, expected)])


def _number(text: str, file: str, line: int, col: int, name: str, positive: bool) -> float:
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise _error(file, line, col, f"{name} '{text[:40]}' is not a {'positive' if positive else 'non-negative'} number",
                     f"{name} as nccl-tests prints it")
    return v


def parse(text: str, file: str = "nccl-tests.txt") -> Table:
    """The table of an nccl-tests run; a located :class:`SpecError` for anything that is not one.

    >>> t = parse('''#  Rank  0 Group  0 Pid 1 on a device  0 [0x1] H100
    ... #  Rank  1 Group  0 Pid 2 on b device  0 [0x1] H100
    ... #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    ... #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    ...    1048576        262144     float     sum      -1    100.0   10.49   10.49      0    99.0   10.59   10.59      0
    ...    2097152        524288     float     sum      -1    180.0   11.65   11.65      0   181.0   11.59   11.59      0''')
    >>> t.op, t.ranks, t.hosts, [r.time_s for r in t.rows]
    ('allreduce', 2, 2, [0.0001, 0.00018])
    """
    ranks: dict[int, tuple[str, int]] = {}
    cols: list[str] | None = None
    rows: list[Row] = []
    redops: set[str] = set()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if m := _RANK.match(line):
            if len(ranks) >= MAX_RANK_LINES:
                raise _error(file, n, 1, f"more than {MAX_RANK_LINES:,} rank lines", f"at most {MAX_RANK_LINES:,} GPUs")
            r = int(m.group(1))
            if r in ranks:
                raise _error(file, n, m.start(1) + 1, f"rank {r} appears twice", "one '#  Rank' line per GPU")
            ranks[r] = (m.group(2), int(m.group(3)))
            continue
        words = line.lstrip("#").split()
        if line.startswith("#") and words[:2] == ["size", "count"]:
            if cols is not None:
                raise _error(file, n, 1, "a second table header", "the output of one nccl-tests run")
            cols = words
            for need in ("time", "algbw", "busbw"):
                if need not in cols:
                    raise _error(file, n, 1, f"no '{need}' column", "the header all_reduce_perf prints (size count type ... time algbw busbw)")
            continue
        if line.startswith("#") or not words or not words[0].isdigit():
            continue  # comments, the command, summaries
        if cols is None:
            raise _error(file, n, 1, "a data row before the column header", "the '#  size  count  type ...' header first")
        if len(words) != len(cols):
            raise _error(file, n, 1, f"{len(words)} fields, the header names {len(cols)}", f"{len(cols)} fields per row")
        if len(rows) >= MAX_ROWS:
            raise _error(file, n, 1, f"more than {MAX_ROWS} sizes", f"at most {MAX_ROWS} rows")
        pos = [m.start() + 1 for m in re.finditer(r"\S+", line)]  # each field's column
        k = {c: cols.index(c) for c in ("time", "algbw", "busbw", "redop") if c in cols}  # the first: out of place
        size = int(_number(words[0], file, n, pos[0], "size", True))
        if size > 2**50:
            raise _error(file, n, pos[0], f"size {words[0]} bytes is beyond any GPU's memory", "at most 1 PiB")
        t = _number(words[k["time"]], file, n, pos[k["time"]], "time", True) / 1e6
        algbw = _number(words[k["algbw"]], file, n, pos[k["algbw"]], "algbw", False)
        busbw = _number(words[k["busbw"]], file, n, pos[k["busbw"]], "busbw", False)
        if "redop" in k and k["redop"] < len(words):
            redops.add(words[k["redop"]])
        rows.append(Row(n, size, t, algbw, busbw))
    if not ranks:
        raise _error(file, 1, 1, "no '#  Rank ... on HOST device ...' lines", "the whole nccl-tests output: it names every GPU and its host")
    if sorted(ranks) != list(range(len(ranks))):
        raise _error(file, 1, 1, f"ranks {sorted(ranks)[:8]}... are not 0..{len(ranks) - 1}", "one line per rank, every rank")
    if not rows:
        raise _error(file, 1, 1, "no data rows", "the rows nccl-tests prints under its header, one per size")
    if len({r.size for r in rows}) < 2:
        raise _error(file, rows[0].line, 1, f"one size ({rows[0].size:,} B) to fit two constants (protocol_efficiency, step_overhead)",
                     "a sweep of sizes (all_reduce_perf -b 8 -e 8G -f 2)")
    hosts: dict[str, int] = {}
    for host, _ in ranks.values():
        hosts[host] = hosts.get(host, 0) + 1
    if len(set(hosts.values())) != 1:
        raise _error(file, 1, 1, "hosts run different numbers of GPUs: " + ", ".join(f"{h} {k}" for h, k in list(hosts.items())[:4]),
                     "the same number of GPUs on every host")
    n_ranks = len(ranks)
    return Table(_op(rows, redops, n_ranks, file), n_ranks, len(hosts), n_ranks // len(hosts), tuple(rows))


def _op(rows: list[Row], redops: set[str], n: int, file: str) -> str:
    """The operation, from the bus-bandwidth factor of the largest row and whether it reduces."""
    big = max(rows, key=lambda r: r.algbw)
    if n < 2 or big.algbw < 1:
        raise _error(file, big.line, 1, "too few ranks or too small a bandwidth to tell the operation", "at least 2 ranks and a size above 1 GB/s")
    factor = big.busbw / big.algbw
    reduces = bool(redops - {"none"})
    for op, f in (("allreduce", 2 * (n - 1) / n), ("reducescatter" if reduces else "allgather", (n - 1) / n)):
        if abs(factor - f) <= 0.02 * f + 0.01 / big.algbw:
            return op
    raise _error(file, big.line, 1, f"busbw / algbw = {factor:.3f} on {n} ranks: not all_reduce_perf ({2 * (n - 1) / n:.3f}), "
                 f"all_gather_perf or reduce_scatter_perf ({(n - 1) / n:.3f})", "the output of one of " + ", ".join(OPS.values()))


def place(net, table: Table, file: str) -> np.ndarray:
    """The GPUs nccl-tests ran on, placed on the site: the first ``hosts`` servers, ``per_host`` GPUs of each."""
    servers = len(net.server_ids)
    width = np.bincount(net.gpu_server, minlength=servers)
    if table.hosts > servers or table.per_host > int(width.max(initial=0)):
        raise _error(file, 1, 1, f"{table.ranks} ranks on {table.hosts} hosts ({table.per_host} each); the site has {servers:,} servers of "
                     f"at most {int(width.max(initial=0))} GPUs", "a run the site can hold")
    if table.hosts < 2:
        raise _error(file, 1, 1, "every rank on one host: its bandwidth is NVLink's, and these are the network's constants",
                     "an nccl-tests run across two or more servers")
    return np.flatnonzero((net.gpu_server < table.hosts) & (net.gpu_local < table.per_host))


def _algorithms(op: str) -> list[str]:
    return ["ring", "tree"] if op == "allreduce" else ["ring"]  # across servers, as the job twin's DP traffic


def predict(net, table: Table, ranks: np.ndarray, scheme, lib) -> np.ndarray:
    """The network twin's time of every row (seconds), the fastest algorithm per size."""
    from twin.twins.net import collectives as coll

    timings = [coll.time_collective(net, table.op, a, ranks, scheme, lib=lib) for a in _algorithms(table.op)]
    return np.array([min(t.time(r.size) for t in timings) for r in table.rows])


def fit(net, table: Table, ranks: np.ndarray, scheme, lib) -> dict:
    """``protocol_efficiency`` and ``step_overhead`` of ``lib`` fitted on the table; the rows' residuals."""
    from scipy.optimize import least_squares

    meas = np.array([r.time_s for r in table.rows])

    def with_x(v) -> object:
        return replace(lib, eta=float(v[0]), step_overhead=float(v[1]))

    def residual(v) -> np.ndarray:
        return np.log(predict(net, table, ranks, scheme, with_x(v)) / meas)

    lo, hi = zip(*BOUNDS.values())
    start = [min(max(lib.eta, lo[0]), hi[0]), min(max(lib.step_overhead, lo[1]), hi[1])]
    res = least_squares(residual, start, bounds=(lo, hi), x_scale=[0.1, 1e-5], diff_step=1e-3, xtol=1e-8, ftol=1e-10)
    x = {"protocol_efficiency": float(round(res.x[0], 4)), "step_overhead": float(round(res.x[1], 8))}
    pred = predict(net, table, ranks, scheme, replace(lib, eta=x["protocol_efficiency"], step_overhead=x["step_overhead"]))
    rows = [{"line": r.line, "size": r.size, "measured_us": r.time_s * 1e6, "predicted_us": float(p) * 1e6, "error": float(p / r.time_s - 1)}
            for r, p in zip(table.rows, pred)]
    return {"op": table.op, "test": OPS[table.op], "ranks": table.ranks, "hosts": table.hosts, "constants": x, "rows": rows,
            "scheme": scheme.name, "rms_error": float(np.sqrt(np.mean([r["error"] ** 2 for r in rows]))),
            "scenario": f"protocol_efficiency: {x['protocol_efficiency']}\nstep_overhead: {x['step_overhead'] * 1e6:.2f} us\n"}
