"""``twin sweep``: load the sweep, run it on Dask with a progress bar, write and show the results."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console
from typer.core import TyperCommand

from twin.exits import INTERRUPTED as EXIT_INTERRUPTED
from twin.exits import INVALID as EXIT_INVALID
from twin.exits import WRITE
from twin.lang.diagnostics import SpecError

if TYPE_CHECKING:
    from twin.sweep.engine import Outcome

HELP = """Build and simulate every variant of a design space on Dask; results as Parquet, CSV, Pareto plots.

Each variant (the product of the sweep's axes) is one task on a LocalCluster of worker processes, or
on --scheduler (tls:// with --tls-ca-file, --tls-cert and --tls-key; plain tcp:// only with --insecure).
Results are cached by the variant's spec hash: a rerun computes only new variants, and an interrupted sweep keeps what it finished. A variant that is invalid or does not fit is a row
with its error. Exit 0 when done, 2 on a bad sweep file or an unreachable scheduler, 130 if interrupted.
The local cluster speaks TLS with a certificate made for this run (no other user can join it) and
serves no HTTP unless --dashboard. The site: and scenario: files are YAML files named relative to
the sweep file, inside its folder unless --root widens it.

Example: twin sweep sweeps/lab-oversubscription.yaml --root . --workers 2 -o /tmp/lab-sweep

Figures (the registry, twin/analysis/registry.py): {figures}; any other as design:PATH
(design.json), sim:PATH (the simulation's JSON) or cost:PATH.
"""


class _SweepCommand(TyperCommand):
    """``twin sweep``, whose help lists the figure registry: read when the help is shown, so that
    `twin --help` and every other command do not load the registry (and the compiler behind it)."""

    def format_help(self, ctx, formatter) -> None:
        from twin.analysis import figures as figs

        self.help = HELP.format(figures=figs.help_text())
        super().format_help(ctx, formatter)


def run_sweep(path: Path, output: Path | None, workers: int | None, scheduler, fresh: bool, timeout: float,
              as_json: bool, out: Console, err: Console, print_diags, emit_json, root: Path | None = None,
              dashboard: str | None = None) -> int:
    from twin.cli.progress import steps

    try:
        with steps(err, not as_json, "load the sweep engine") as say:
            # Dask and the twins load here, when a sweep runs: `twin --help` and the other commands skip them
            from twin.sweep.cluster import root_warning
            from twin.sweep.engine import SchedulerError, run
            from twin.sweep.load import load_sweep
            from twin.sweep.output import write

            say(f"read the sweep {path.name}")
            sw = load_sweep(path, root)
    except SpecError as e:
        if as_json:
            emit_json({"status": "invalid", "diagnostics": [d.to_json() for d in e.diagnostics]})
        else:
            print_diags(e.diagnostics)
        return EXIT_INVALID
    if workers is not None and workers < 1:
        err.print(f"--workers {workers}: expected 1 or more worker processes", style="red", markup=False)
        return EXIT_INVALID
    folder = output or Path("generated") / f"sweep-{sw.name}"
    import twin.owned as owned
    from twin.sweep.output import OUTPUTS

    if why := owned.problem(folder, OUTPUTS):  # before a worker starts: a file of the user's is never overwritten
        if as_json:
            emit_json({"status": "not written", "error": f"-o {folder}: {why}", "exit": WRITE})
        else:
            err.print(f"-o {folder}: {why}", style="red", markup=False)
        return WRITE
    if scheduler is None and (warning := root_warning()):
        err.print(warning, style="yellow", markup=False)
    try:
        if as_json:
            oc = run(sw, folder, workers, scheduler, fresh, timeout=timeout, dashboard=dashboard)
        else:
            oc = _with_progress(sw, folder, workers, scheduler, fresh, timeout, err, dashboard)
    except SchedulerError as e:
        if as_json:
            emit_json({"status": "invalid", "error": str(e)})
        else:
            err.print(str(e), style="red", markup=False)
        return EXIT_INVALID
    with steps(err, not as_json, f"write the results into {folder}"):
        files = write(sw, oc, folder)
    statuses = {}
    for v in oc.variants:
        r = oc.results.get(v.hash)
        s = r["status"] if r else "pending"
        statuses[s] = statuses.get(s, 0) + 1
    if as_json:
        emit_json({"status": "interrupted" if oc.interrupted else "done", "sweep": sw.name, "output": str(folder),
                   "variants": len(oc.variants), "computed": oc.computed, "cached": oc.cached, "statuses": statuses,
                   "files": sorted(files), "worker_peak_rss_bytes": oc.worker_peak_rss,
                   "rows": [_json_row(sw, oc, v) for v in oc.variants]})
    else:
        _show(sw, oc, folder, files, out)
    return EXIT_INTERRUPTED if oc.interrupted else 0


def _json_row(sw, oc: Outcome, v) -> dict:
    r = oc.results.get(v.hash) or {}
    figs = {k: (None if isinstance(x, float) and math.isnan(x) else x) for k, x in (r.get("figures") or {}).items() if k in sw.figures}
    return {"variant": v.index, "label": v.label, "spec_hash": v.hash, "status": r.get("status", "pending"),
            "error": v.message(r.get("error", "")), "values": v.values, "figures": figs, "seconds": oc.seconds.get(v.hash)}


def _with_progress(sw, folder, workers, scheduler, fresh, timeout, err: Console, dashboard: str | None) -> Outcome:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from twin.sweep.engine import run

    with Progress(TextColumn("sweep {task.fields[name]}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=err, transient=False) as prog:
        task = prog.add_task("starting workers", total=sw.count, name=sw.name)

        def step(done: int, total: int, label: str) -> None:
            prog.update(task, completed=done, total=total, description=label)

        return run(sw, folder, workers, scheduler, fresh, step, timeout, dashboard)


def _show(sw, oc: Outcome, folder: Path, files: dict, out: Console) -> None:
    from rich.table import Table

    from twin.sweep.output import axis_columns, fmt_figure, unit

    t = Table(title=f"sweep {sw.name}: {len(oc.variants)} variants ({oc.computed} computed, {oc.cached} from the cache)", title_justify="left")
    axes = axis_columns(sw, oc.variants)
    t.add_column("#", justify="right")
    for head, _ in axes:  # each axis its own column, its values whole (a label is never cut)
        t.add_column(head, no_wrap=True)
    t.add_column("status")
    t.add_column("s", justify="right")
    for f in sw.figures:
        u = unit(f)
        t.add_column(f + (f" [{u}]" if u and u != "1" else ""), justify="right")
    for k, v in enumerate(oc.variants):
        r = oc.results.get(v.hash) or {}
        figs = r.get("figures") or {}
        sec = oc.seconds.get(v.hash)
        t.add_row(str(v.index), *(cells[k] for _, cells in axes), r.get("status", "pending"), "-" if sec is None else f"{sec:.1f}",
                  *(fmt_figure(f, figs.get(f, math.nan)) for f in sw.figures))
    out.width = max(out.width, 160)
    out.print(t)
    for v in oc.variants:
        r = oc.results.get(v.hash) or {}
        if r.get("error"):
            out.print(f"  {v.index} ({v.label}): {r['status']}: {v.message(r['error'])}", markup=False)
    if oc.worker_peak_rss:
        out.print("peak memory per worker: " + ", ".join(f"{b / 2**30:.2f} GiB" for b in oc.worker_peak_rss.values()), markup=False)
    if oc.interrupted:
        out.print(f"[red]interrupted[/red]: finished variants are cached in {folder}/cache; rerun to compute the rest")
    out.print(f"results -> {folder}/ ({', '.join(sorted(files))})", markup=False)


def register(app, out, err, print_diags, emit_json) -> None:
    """Add ``twin sweep`` to the ``twin`` command (kept here so twin/cli/app.py stays a table of verbs)."""
    _print_diags, _emit_json = print_diags, emit_json

    @app.command(help=HELP.format(figures="see `twin sweep --help`"), cls=_SweepCommand)
    def sweep(
        sweep_file: Path = typer.Argument(..., metavar="SWEEP", help="Sweep file (YAML): a base site, axes of overrides, figures."),
        output: Optional[Path] = typer.Option(None, "-o", "--output", help="Results folder (default: generated/sweep-<name>)."),
        workers: Optional[int] = typer.Option(None, "--workers", "-w", help="Worker processes of the local Dask cluster (default: one per core)."),
        scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Address of an existing Dask scheduler, e.g. "
                                                "tls://10.0.0.5:8786 with the three --tls options (its workers need twin installed)."),
        tls_ca: Optional[Path] = typer.Option(None, "--tls-ca-file", help="PEM certificate authority the scheduler's certificate is checked against."),
        tls_cert: Optional[Path] = typer.Option(None, "--tls-cert", help="PEM client certificate issued by the scheduler's operator."),
        tls_key: Optional[Path] = typer.Option(None, "--tls-key", help="PEM private key of --tls-cert."),
        insecure: bool = typer.Option(False, "--insecure", help="Allow a plain tcp:// scheduler (anyone on its network can run code "
                                      "as you; only for a network you alone use)."),
        fresh: bool = typer.Option(False, "--fresh", help="Ignore cached results and compute every variant again."),
        timeout: float = typer.Option(10.0, "--connect-timeout", help="Seconds to wait for --scheduler."),
        root: Optional[Path] = typer.Option(None, "--root", help="Folder the sweep's site: and scenario: files must lie in "
                                            "(default: the sweep file's folder), e.g. --root . for ../sites/x.yaml."),
        dashboard: Optional[str] = typer.Option(None, "--dashboard", help="Serve Dask's dashboard at this address, e.g. "
                                                "127.0.0.1:8787 (default: no HTTP at all; any local user can read it)."),
        as_json: bool = typer.Option(False, "--json", help="Print the results as JSON (no progress bar)."),
    ) -> None:
        from twin.sweep.cluster import Remote

        remote = Remote(scheduler, tls_ca, tls_cert, tls_key, insecure) if scheduler else None
        code = run_sweep(sweep_file, output, workers, remote, fresh, timeout, as_json, out, err, _print_diags, _emit_json,
                         root, dashboard)
        raise typer.Exit(code)
