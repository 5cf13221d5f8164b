"""Running a sweep on Dask: the variants, their cache, the cluster, and the results in variant order.

Each variant is one task (:func:`twin.sweep.worker.evaluate`) on a ``dask.distributed`` cluster: a
``LocalCluster`` of worker processes (one thread each: the passes and twins are CPU-bound Python and
numpy, so processes, not threads, use the cores) or an existing scheduler. The client writes every
finished variant's result to ``cache/<spec hash>.json`` as it arrives, so an interrupted sweep keeps
what it finished and a rerun computes only variants it has no result for. The spec hash is the
SHA-256 of the variant's site and scenario (as data, key order kept), the path figures it collects
and the twin version; the named figures are always all computed, so asking for another one later
is answered from the cache.

Results do not depend on the number of workers or the order tasks finish in: rows are put in variant
order and every figure is a function of the variant alone (fixed seeds everywhere).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from twin.lang.sweep.models import Sweep
from twin.lang.sweep.paths import apply
from twin.sweep.cluster import Remote, private_cluster, remove_scratch
from twin.sweep.worker import evaluate, peak_rss_bytes
from twin.version import __version__


class SchedulerError(RuntimeError):
    """The Dask scheduler given with ``--scheduler`` cannot be reached (or the local cluster cannot start)."""


@dataclass(frozen=True)
class Variant:
    index: int  # 1-based, in product order (first axis slowest)
    label: str
    values: dict[str, Any]  # axis column -> the value set (None: removed, the field's default)
    site_text: str
    scenario_text: str | None
    hash: str

    @property
    def folder(self) -> str:
        return f"variants/{self.index:03d}"

    def message(self, text: str) -> str:
        """An error of this variant's result, naming this variant's files."""
        return text.replace(PLACE, self.folder)


@dataclass
class Outcome:
    variants: list[Variant]
    results: dict[str, dict]  # spec hash -> evaluate() result
    computed: int = 0
    cached: int = 0
    interrupted: bool = False
    worker_peak_rss: dict[str, int] = field(default_factory=dict)  # worker address -> bytes
    seconds: dict[str, float] = field(default_factory=dict)  # spec hash -> seconds (computed here)


def _dump(data: dict, header: str) -> str:
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=4096)


def variants(sw: Sweep) -> list[Variant]:
    """Every variant of the sweep: the product of its axes, first axis slowest."""
    out = []
    placement = [] if sw.file.placement == "spec" else [(("placement", "method"), sw.file.placement)]
    extra = sorted(f for f in sw.figures if ":" in f)
    for k, combo in enumerate(itertools.product(*sw.axes) if sw.axes else [()], start=1):
        # a section before the fields inside it, whatever order the axes name them in
        settings = sorted((s for _, ss in combo for s in ss), key=lambda s: len(s.path))
        label = ", ".join(lbl for lbl, _ in combo if lbl) or "base"
        site = apply(sw.site, placement + [(s.path, s.value) for s in settings if s.target == "site"])
        scen = apply(sw.scenario, [(s.path, s.value) for s in settings if s.target == "scenario"]) if sw.scenario is not None else None
        key = json.dumps({"site": site, "scenario": scen, "paths": extra, "twin": __version__}, sort_keys=False, default=str)
        head = f"# twin sweep {sw.name}, variant {k}: {label}\n# base: {sw.site_path.name}\n"
        out.append(Variant(k, label, {s.column: s.value for s in settings}, _dump(site, head),
                           _dump(scen, head) if scen is not None else None, hashlib.sha256(key.encode()).hexdigest()))
    return out


PLACE = "@variant@"  # the variant's folder in messages; rows put their own (equal variants share one result)


def payload(sw: Sweep, v: Variant) -> dict:
    return {"site_text": v.site_text, "site_name": f"{PLACE}/site.yaml", "scenario_text": v.scenario_text,
            "scenario_name": f"{PLACE}/scenario.yaml", "job": sw.file.job, "scheme": sw.file.scheme,
            "wanted": [f for f in sw.figures if ":" in f]}


def write_variants(out: Path, vs: list[Variant], mode: int = 0o666) -> None:
    """Each variant's site (and scenario) as a file a user can build or simulate on its own, readable by
    no more users than the files it was made from (``mode``, then the umask)."""
    for v in vs:
        d = out / v.folder
        d.mkdir(parents=True, exist_ok=True)
        _write(d / "site.yaml", v.site_text, mode)
        if v.scenario_text is not None:
            _write(d / "scenario.yaml", v.scenario_text, mode)


def source_mode(sw: Sweep) -> int:
    """The permission bits the variants may have: those every file they copy has in common."""
    mode = 0o666
    for p in (sw.path, sw.site_path, Path(sw.scenario_name) if sw.scenario_name and Path(sw.scenario_name).is_file() else None):
        if p is not None:
            mode &= os.stat(p).st_mode & 0o666
    return mode | 0o600  # the user reads and rewrites their own results


def _write(p: Path, text: str, mode: int = 0o666) -> None:
    data = text.encode("utf-8")
    if p.exists() and p.read_bytes() == data and (p.stat().st_mode & 0o777 & ~mode) == 0:
        return
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.unlink(missing_ok=True)  # created afresh, so ``mode`` and the umask decide who may read it
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, p)


def read_cache(out: Path, hashes: set[str]) -> dict[str, dict]:
    found = {}
    for h in sorted(hashes):
        p = out / "cache" / f"{h}.json"
        if p.is_file():
            try:
                found[h] = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a damaged entry is computed again
    return found


def write_cache(out: Path, h: str, result: dict) -> None:
    d = out / "cache"
    d.mkdir(parents=True, exist_ok=True)
    _write(d / f"{h}.json", json.dumps({k: v for k, v in result.items() if k != "seconds"}, sort_keys=True, indent=1) + "\n")


def connect(scheduler: Remote | str | None, workers: int | None, timeout: float = 10.0, dashboard: str | None = None):
    """A Dask client: on ``scheduler`` if given (:class:`twin.sweep.cluster.Remote`; a bare address is
    plain TCP on a network the caller vouches for), else on a new LocalCluster of ``workers`` processes
    that only this process can talk to (:func:`twin.sweep.cluster.private_cluster`)."""
    if scheduler:
        remote = scheduler if isinstance(scheduler, Remote) else Remote(scheduler, insecure=True)
        if why := remote.problem():
            raise SchedulerError(why)
        try:
            return remote.client(timeout)
        except (OSError, TimeoutError, ValueError, TypeError) as e:
            raise SchedulerError(f"cannot reach the Dask scheduler at {remote.address!r} within {timeout:g} s: {e}") from None
    n = workers or os.cpu_count() or 1
    try:
        return private_cluster(n, dashboard)
    except Exception as e:  # no sockets, no fork, no TLS: say so instead of a traceback
        raise SchedulerError(f"cannot start a local Dask cluster of {n} worker processes: {e}") from None


STATUSES = ("ok", "invalid", "infeasible", "error")
MAX_ANSWER_TEXT = 100_000  # characters of a result's error or figure text


def checked(r: Any) -> dict:
    """A worker's answer as a sweep result, or an error row saying why it is not one: a scheduler
    that is not ours may answer anything, and what goes to the cache and the CSV must be a result."""
    def scalar(v: Any) -> bool:
        if isinstance(v, bool) or v is None:
            return True
        if isinstance(v, (int, float)):
            return math.isfinite(v)
        return isinstance(v, str) and len(v) <= MAX_ANSWER_TEXT

    why = None
    if not isinstance(r, dict):
        why = f"a {type(r).__name__}, not a result"
    elif r.get("status") not in STATUSES:
        why = "no known status"
    elif not isinstance(r.get("error", ""), str) or len(r.get("error", "")) > MAX_ANSWER_TEXT:
        why = "an error that is not text"
    elif not isinstance(r.get("figures"), dict) or not all(isinstance(k, str) and len(k) <= 200 and scalar(v)
                                                            for k, v in r["figures"].items()):
        why = "figures that are not names and numbers"
    elif not isinstance(r.get("seconds", 0.0), (int, float)) or not math.isfinite(r.get("seconds", 0.0)) or r.get("seconds", 0.0) < 0:
        why = "a duration that is not a time"
    if why:
        return {"status": "error", "error": f"the worker's answer is not a sweep result: {why}", "figures": {}}
    return {"status": r["status"], "error": r.get("error", ""), "figures": dict(r["figures"]), "seconds": float(r.get("seconds", 0.0))}


def running_label(todo: dict, pending: dict, done: str | None = None) -> str:
    """The sweep's progress label: the variant that finished last and those still running, by their
    axis values (``done oversubscription=4; running oversubscription=8 +2``)."""
    parts = [f"done {done}"] if done else []
    if pending:
        first = todo[next(iter(pending))].label
        parts.append(f"running {first}" + (f" +{len(pending) - 1}" if len(pending) > 1 else ""))
    return "; ".join(parts)


def run(sw: Sweep, out: Path, workers: int | None = None, scheduler: Remote | str | None = None, fresh: bool = False,
        progress: Callable[[int, int, str], None] | None = None, timeout: float = 10.0, dashboard: str | None = None,
        client=None) -> Outcome:
    """Evaluate every variant not in the cache (all of them with ``fresh``); results in variant order. With
    ``client`` (a caller's own, e.g. :func:`twin.sweep.cluster.private_cluster` kept warm) the variants run
    there and the client is left open."""
    vs = variants(sw)
    out.mkdir(parents=True, exist_ok=True)
    write_variants(out, vs, source_mode(sw))
    results = {} if fresh else read_cache(out, {v.hash for v in vs})
    oc = Outcome(vs, results, cached=len({v.hash for v in vs} & set(results)))
    todo: dict[str, Variant] = {}
    for v in vs:
        if v.hash not in results:
            todo.setdefault(v.hash, v)
    if progress:
        progress(oc.cached, oc.cached + len(todo), "cached")
    if not todo:
        return oc
    from distributed import as_completed

    own = client is None
    client = connect(scheduler, workers, timeout, dashboard) if own else client
    futures = {}
    pending = dict.fromkeys(todo)  # in variant order: what the label says is still running
    try:
        for h, v in todo.items():
            futures[client.submit(evaluate, payload(sw, v), key=f"twin-sweep-{h[:24]}", pure=False)] = h
        if progress:
            progress(oc.cached, oc.cached + len(todo), running_label(todo, pending))
        for fut in as_completed(list(futures), loop=client.loop):
            h = futures[fut]
            try:
                r = checked(fut.result())
                if r["status"] != "error" or not r["error"].startswith("the worker's answer"):
                    write_cache(out, h, r)
            except Exception as e:  # the worker died (memory, a signal): a row, not cached, tried again next run
                r = {"status": "error", "error": f"worker lost: {type(e).__name__}: {e}", "figures": {}}
            results[h] = r
            oc.seconds[h] = float(r.get("seconds", 0.0))
            oc.computed += 1
            pending.pop(h, None)
            if progress:
                progress(oc.cached + oc.computed, oc.cached + len(todo), running_label(todo, pending, todo[h].label))
        try:
            oc.worker_peak_rss = dict(sorted(client.run(peak_rss_bytes).items()))
        except Exception:
            oc.worker_peak_rss = {}
    except KeyboardInterrupt:
        oc.interrupted = True
        for f in futures:
            f.cancel()
    finally:
        if own:
            close_client(client)
    return oc


def close_client(client) -> None:
    """Close the client, and its LocalCluster when it made one."""
    cluster = client.cluster if scheduler_is_local(client) else None
    try:
        client.close(timeout=10)
        if cluster is not None:
            cluster.close(timeout=10)
    except Exception:  # closing after an interrupt may race the workers' shutdown; nothing to keep
        pass
    remove_scratch(getattr(cluster, "twin_scratch", None))


def scheduler_is_local(client) -> bool:
    return getattr(client, "cluster", None) is not None
