"""Job traces in the public formats, read row by row into the cluster twin's jobs.

Layouts, as their publishers document them:

* ``acme`` (Shanghai AI Lab, NSDI'24, Seren and Kalos; InternLM/AcmeTrace ``trace_seren.csv``,
  ``trace_kalos.csv``): a header row naming at least ``job_id, gpu_num, state, submit_time, start_time,
  end_time``; times ``2023-03-01 00:18:22+08:00``.
* ``helios`` (SenseTime, SC'21; S-Lab-System-Group/HeliosData ``cluster_log.csv``): the same columns
  with times ``2020-06-09 18:41:01``.
* ``philly`` (Microsoft, ATC'19; msr-fiddle/philly-traces ``cluster_job_log``): a JSON list of jobs,
  each with ``jobid``, ``status``, ``submitted_time`` and ``attempts`` (``start_time``, ``end_time`` and
  ``detail``: the servers and their ``gpus``); the first attempt's GPUs are the job's, its run time is
  the sum of its attempts'.
* ``pai`` (Alibaba PAI, NSDI'22; alibaba/clusterdata ``pai_task_table.csv``): no header, the columns
  ``job_name, task_name, inst_num, status, start_time, end_time, plan_cpu, plan_mem, plan_gpu,
  gpu_type``; times in seconds; ``plan_gpu`` in percent of one GPU per instance. A job is its tasks:
  GPUs ``sum(inst_num x plan_gpu / 100)`` rounded up, from its first task's start to its last's end.

A job that asked for no GPU or never ran is skipped (counted). A row with a time that does not parse, an
end before its start, GPUs that are not a positive whole number, or more GPUs than the site has, stops
the load with ``FILE:LINE:COL`` (Philly: the job's line in the file). The file is checked as a regular
file under ``trace_bytes`` before it is opened, and read a line at a time into typed arrays, its rows
counted against ``cluster_jobs`` as they come.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import stat
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from twin.lang import limits
from twin.lang.diagnostics import Diagnostic, Severity
from twin.lang.files import FileRefused, inside
from twin.twins.cluster.jobset import JobSet, whole_servers

NEEDED = ("job_id", "gpu_num", "state", "submit_time", "start_time", "end_time")
PAI_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
CANCELLED = {"CANCELLED", "Killed"}


class TraceError(ValueError):
    def __init__(self, diagnostic: Diagnostic):
        self.diagnostic = diagnostic
        super().__init__(diagnostic.format())


@dataclass
class Loaded:
    """The trace's jobs (times in s from its first submission) and what was skipped."""

    path: str
    format: str
    submit: array = field(default_factory=lambda: array("d"))
    work: array = field(default_factory=lambda: array("d"))
    gpus: array = field(default_factory=lambda: array("q"))
    cancelled: array = field(default_factory=lambda: array("b"))
    states: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    line: array = field(default_factory=lambda: array("q"))  # each job's line in the file

    def add(self, submit: float, work: float, gpus: int, state: str, line: int) -> None:
        self.submit.append(submit)
        self.work.append(work)
        self.gpus.append(gpus)
        self.cancelled.append(state in CANCELLED)
        self.states[state] = self.states.get(state, 0) + 1
        self.line.append(line)
        limits.check("cluster_jobs", len(self.submit), "jobs in the trace")

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _err(path: str, line: int, col: int, message: str, expected: str = "") -> TraceError:
    return TraceError(Diagnostic(Severity.ERROR, path, line, col, (), message, expected))


def open_checked(path: Path) -> io.TextIOBase:
    """The trace opened for reading: a regular file within ``trace_bytes`` (checked on the open descriptor)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileRefused("not a regular file")
    limits.check("trace_bytes", st.st_size, "bytes in the trace file")
    return io.open(fd, "r", encoding="utf-8", errors="strict", newline="")


def read(trace, src=None, base_dir: Path | None = None) -> Loaded:
    """Read the scenario's ``trace:`` (its file relative to the scenario)."""
    from twin.lang.validator import error

    base = base_dir or Path(".")
    try:
        path = inside(trace.file, base)
        f = open_checked(path)
    except FileRefused as e:
        raise TraceError(error(src, ("cluster", "jobs", "trace", "file"), f"{trace.file}: {e}")) from None
    except OSError as e:
        raise TraceError(error(src, ("cluster", "jobs", "trace", "file"), f"{trace.file}: {e.strerror or e}", "a trace file beside the scenario")) from None
    with f:
        return parse(f, str(path), trace.format)


def parse(f, path: str, fmt: str) -> Loaded:
    out = Loaded(path, fmt)
    try:
        if fmt == "philly":
            _philly(f, out)
        elif fmt == "pai":
            _pai(f, out)
        else:
            _slurm(f, out)
    except UnicodeDecodeError:
        raise _err(path, 0, 0, "the trace is not UTF-8 text") from None
    t0 = min(out.submit) if len(out.submit) else 0.0
    for i in range(len(out.submit)):
        out.submit[i] -= t0
    return out


def _time(text: str, path: str, line: int, col: int, what: str) -> float:
    try:
        d = datetime.fromisoformat(text.strip())
    except ValueError:
        raise _err(path, line, col, f"{what} '{text[:40]}' is not a time", "e.g. 2023-03-01 00:18:22+08:00 or 2020-06-09 18:41:01") from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return d.timestamp()


def _whole(text: str, path: str, line: int, col: int, what: str) -> int:
    try:
        v = float(text)
    except ValueError:
        raise _err(path, line, col, f"{what} '{text[:40]}' is not a number", "a whole number of GPUs") from None
    if not math.isfinite(v) or v < 0 or v != int(v):
        raise _err(path, line, col, f"{what} {text} is not a whole number of GPUs", "0, 1, 2, ...")
    return int(v)


def _column(row: list[str], i: int) -> int:
    """The 1-based column where field ``i`` of a CSV row starts (fields without quotes)."""
    return sum(len(x) + 1 for x in row[:i]) + 1


def _slurm(f, out: Loaded) -> None:
    """Acme and Helios: a header, one job per row."""
    rows = csv.reader(f)
    header = next(rows, None)
    if header is None:
        raise _err(out.path, 1, 1, "the trace is empty", "a header row: " + ", ".join(NEEDED))
    col = {name.strip(): i for i, name in enumerate(header)}
    missing = [c for c in NEEDED if c not in col]
    if missing:
        raise _err(out.path, 1, 1, f"the header lacks {', '.join(missing)}", f"the {out.format} layout's columns: " + ", ".join(NEEDED))
    width = len(header)
    for row in rows:
        line = rows.line_num
        if not row:
            continue
        if len(row) != width:
            raise _err(out.path, line, 1, f"{len(row)} fields, the header has {width}", "one value per column")
        pos = {c: _column(row, col[c]) for c in NEEDED}
        g = _whole(row[col["gpu_num"]], out.path, line, pos["gpu_num"], "gpu_num")
        if g == 0:
            out.skip("no GPU")
            continue
        if not row[col["start_time"]].strip() or not row[col["end_time"]].strip():
            out.skip("never ran")
            continue
        sub = _time(row[col["submit_time"]], out.path, line, pos["submit_time"], "submit_time")
        start = _time(row[col["start_time"]], out.path, line, pos["start_time"], "start_time")
        end = _time(row[col["end_time"]], out.path, line, pos["end_time"], "end_time")
        if end < start:
            raise _err(out.path, line, pos["end_time"], f"end_time is {start - end:g} s before start_time: a negative duration",
                       "end_time at or after start_time")
        out.add(sub, end - start, g, row[col["state"]].strip(), line)


def _philly(f, out: Loaded) -> None:
    """Philly's cluster_job_log: a JSON list of jobs (read whole, within the file's byte limit)."""
    text = f.read()
    try:
        jobs = json.loads(text)
    except json.JSONDecodeError as e:
        raise _err(out.path, e.lineno, e.colno, f"not JSON: {e.msg}", "Philly's cluster_job_log: a JSON list of jobs") from None
    if not isinstance(jobs, list):
        raise _err(out.path, 1, 1, "not a JSON list", "Philly's cluster_job_log: a JSON list of jobs")
    starts = _object_lines(text)
    for k, job in enumerate(jobs):
        line = starts[k] if k < len(starts) else 0
        if not isinstance(job, dict) or "submitted_time" not in job or "attempts" not in job:
            raise _err(out.path, line, 1, f"job {k + 1} lacks submitted_time or attempts", "a Philly job: jobid, status, submitted_time, attempts")
        att = [a for a in job.get("attempts") or [] if isinstance(a, dict) and a.get("start_time") and a.get("end_time")]
        if not att:
            out.skip("never ran")
            continue
        g = sum(len(d.get("gpus") or []) for d in att[0].get("detail") or [] if isinstance(d, dict))
        if g == 0:
            out.skip("no GPU")
            continue
        sub = _time(str(job["submitted_time"]), out.path, line, 1, f"job {k + 1}: submitted_time")
        run = 0.0
        for a in att:
            s = _time(str(a["start_time"]), out.path, line, 1, f"job {k + 1}: start_time")
            e = _time(str(a["end_time"]), out.path, line, 1, f"job {k + 1}: end_time")
            if e < s:
                raise _err(out.path, line, 1, f"job {k + 1} ({job.get('jobid', '?')}): an attempt ends {s - e:g} s before it starts",
                           "end_time at or after start_time")
            run += e - s
        out.add(sub, run, g, str(job.get("status", "")), line)


def _object_lines(text: str) -> list[int]:
    """The line of each top-level object of a JSON list (for located errors), by a scan of the braces."""
    out, depth, line, in_str, esc = [], 0, 1, False, False
    for ch in text:
        if ch == "\n":
            line += 1
        elif in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
            if ch == "{" and depth == 2:
                out.append(line)
        elif ch in "}]":
            depth -= 1
    return out


def _pai(f, out: Loaded) -> None:
    """Alibaba PAI's task table, no header; tasks grouped into jobs (rows of a job may be anywhere)."""
    jobs: dict[str, list] = {}
    rows = csv.reader(f)
    for row in rows:
        line = rows.line_num
        if not row:
            continue
        if len(row) != len(PAI_COLUMNS):
            raise _err(out.path, line, 1, f"{len(row)} fields", f"{len(PAI_COLUMNS)}: " + ", ".join(PAI_COLUMNS))
        starts = [_column(row, i) for i in range(len(row))]
        try:
            inst, plan = float(row[2] or 0), float(row[8] or 0)
        except ValueError:
            raise _err(out.path, line, starts[8], f"inst_num '{row[2][:20]}' or plan_gpu '{row[8][:20]}' is not a number") from None
        if not row[4] or not row[5]:
            out.skip("never ran")
            continue
        try:
            s, e = float(row[4]), float(row[5])
        except ValueError:
            raise _err(out.path, line, starts[4], "start_time or end_time is not a number of seconds") from None
        if e < s:
            raise _err(out.path, line, starts[5], f"end_time is {s - e:g} s before start_time: a negative duration", "end_time at or after start_time")
        j = jobs.setdefault(row[0], [math.inf, -math.inf, 0.0, row[3], line])
        j[0], j[1], j[2] = min(j[0], s), max(j[1], e), j[2] + inst * plan / 100.0
        limits.check("cluster_jobs", len(jobs), "jobs in the trace")
    for s, e, g, state, line in jobs.values():
        if g <= 0:
            out.skip("no GPU")
            continue
        out.add(s, e - s, math.ceil(g - 1e-9), state, line)


def jobset_of(tr: Loaded, site, kind: str, start: float, horizon: float) -> JobSet:
    """The loaded trace as the run's jobs: those submitted in [start, start + horizon), shifted to 0."""
    sub = np.frombuffer(tr.submit, np.float64) if len(tr.submit) else np.zeros(0)
    gpus = np.frombuffer(tr.gpus, np.int64) if len(tr.gpus) else np.zeros(0, np.int64)
    big = np.flatnonzero(gpus > site.gpus)
    if len(big):
        i = int(big[0])
        raise _err(tr.path, int(tr.line[i]), 1, f"a job of {int(gpus[i]):,} GPUs: more than the site's {site.gpus:,}", f"at most {site.gpus:,} GPUs")
    keep = (sub >= start) & (sub < start + horizon)
    o = np.argsort(sub[keep], kind="stable")
    notes = [f"trace {Path(tr.path).name} ({tr.format}): {int(keep.sum()):,} of {len(sub):,} jobs in the span"]
    return JobSet((sub[keep] - start)[o], whole_servers(gpus[keep], site.gpus_per_server)[o],
                  np.maximum(np.frombuffer(tr.work, np.float64)[keep][o], 1.0), np.zeros(int(keep.sum()), np.int64),
                  np.frombuffer(tr.cancelled, np.int8)[keep][o].astype(bool), (kind,), (True,), (0,), tuple(notes))


def statistics(tr: Loaded) -> dict:
    """What was read: jobs, GPU-time by size class, states, the span, what was skipped."""
    from twin.twins.cluster.answers import LABELS, size_class

    g = np.frombuffer(tr.gpus, np.int64) if len(tr.gpus) else np.zeros(0, np.int64)
    w = np.frombuffer(tr.work, np.float64) if len(tr.work) else np.zeros(0)
    s = np.frombuffer(tr.submit, np.float64) if len(tr.submit) else np.zeros(0)
    cls = size_class(g)
    gh = g * w / 3600.0
    total = float(gh.sum()) or 1.0
    return {"file": Path(tr.path).name, "format": tr.format, "jobs": int(len(g)), "skipped": dict(sorted(tr.skipped.items())),
            "span_days": float(s.max() / 86400.0) if len(s) else 0.0, "states": dict(sorted(tr.states.items())),
            "gpu_hours": float(gh.sum()),
            "by_size": {LABELS[c]: {"jobs": int((cls == c).sum()), "gpu_time_share": float(gh[cls == c].sum()) / total}
                        for c in range(len(LABELS)) if (cls == c).any()}}
