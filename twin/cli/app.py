"""The ``twin`` command: one sub-command per verb.

Exit codes: 0 success, 1 a valid design that cannot be built as stated (infeasible), 2 invalid input.
Errors are printed as ``FILE:LINE:COL: field.path: message (expected ...)`` and never as tracebacks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from twin.lang.diagnostics import Diagnostic, InfeasibleError, Severity, SpecError
from twin.version import __version__

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="twin: a declarative design compiler and digital twin for AI training clusters.",
)
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)

EXIT_INFEASIBLE = 1
EXIT_INVALID = 2


def _print_diags(diags: list[Diagnostic]) -> None:
    for d in diags:
        style = "red" if d.severity is Severity.ERROR else "yellow"
        err.print(d.format(), style=style, markup=False)


def _emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=1, sort_keys=True) + "\n")


@app.callback(invoke_without_command=True)
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        out.print(f"twin {__version__}")
        raise typer.Exit(0)


@app.command()
def validate(
    specs: list[Path] = typer.Argument(..., help="Site spec files (YAML)."),
    as_json: bool = typer.Option(False, "--json", help="Print diagnostics as JSON."),
) -> None:
    """Check site specs and report every error and warning with FILE:LINE:COL.

    Example: twin validate sites/meta-24k-roce.yaml sites/lab-2zone.yaml
    """
    from twin.compiler.pipeline import check

    worst = 0
    results = []
    for path in specs:
        checked = check(path)  # the build's own front: validation, the GPU power cap, the budget
        spec, diags = checked.spec, list(checked.diagnostics)
        problems = checked.budget.problems if checked.budget else []
        status = checked.status
        worst = max(worst, {"ok": 0, "infeasible": EXIT_INFEASIBLE, "invalid": EXIT_INVALID}[status])
        results.append({"spec": str(path), "status": status, "diagnostics": [d.to_json() for d in diags], "infeasible": problems,
                        "shape": spec.shape.to_json() if spec is not None else None})
        if not as_json:
            _print_diags(diags)
            for p in problems:
                err.print(f"{path}: infeasible: {p}", style="red", markup=False)
            if spec is not None:
                nerr = sum(d.severity is Severity.ERROR for d in diags)
                nwarn = len(diags) - nerr
                tag = "[green]ok[/green]" if not problems else "[red]infeasible[/red]"
                out.print(f"{path}: {tag}: {spec.gpus:,} GPUs in {spec.racks:,} racks, {nwarn} warning(s)")
            else:
                nerr = sum(d.severity is Severity.ERROR for d in diags)
                err.print(f"{path}: {nerr} error(s)", style="red", markup=False)
    if as_json:
        _emit_json({"results": results})
    raise typer.Exit(worst)


@app.command()
def build(
    spec: Path = typer.Argument(..., help="Site spec file (YAML)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Output folder (default: generated/<site>)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result (artifacts and hashes) as JSON."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress or warnings."),
    scenario: Optional[Path] = typer.Option(None, "--scenario", "-s", help="Also run this scenario's twins (collectives, jobs, "
                                            "campaign, power) and put their sections in the report."),
) -> None:
    """Compile a site spec into generated/<site>/ (design.json, report.md, report.html, manifest.json, ...).

    The previous output is replaced only when the whole build succeeds.

    Example: twin build sites/meta-24k-roce.yaml -o /tmp/out

    Example: twin build sites/lab-2zone.yaml -o /tmp/lab --scenario scenarios/lab-twins.yaml
    """
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from twin.build import OutputError
    from twin.build import build as do_build

    show = not (as_json or quiet)
    try:
        if show:
            with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err, transient=True) as prog:
                task = prog.add_task("validate", total=None)
                result = do_build(spec, output, progress=lambda name: prog.update(task, description=name), scenario=scenario)
        else:
            result = do_build(spec, output, scenario=scenario)
    except SpecError as e:
        if as_json:
            _emit_json({"status": "invalid", "diagnostics": [d.to_json() for d in e.diagnostics]})
        else:
            _print_diags(e.diagnostics)
            err.print(f"{spec}: build failed: {sum(d.severity is Severity.ERROR for d in e.diagnostics)} error(s); output left untouched", style="red", markup=False)
        raise typer.Exit(EXIT_INVALID) from None
    except InfeasibleError as e:
        if as_json:
            _emit_json({"status": "infeasible", "diagnosis": e.diagnosis})
        else:
            err.print(f"{spec}: the design does not fit:", style="red", markup=False)
            for line in e.diagnosis:
                err.print(f"  - {line}", markup=False)
            err.print("output left untouched", markup=False)
        raise typer.Exit(EXIT_INFEASIBLE) from None
    except OutputError as e:
        err.print(f"{spec}: {e}", style="red", markup=False)
        raise typer.Exit(EXIT_INVALID) from None
    d = result.design
    placement = d.placement
    solver = placement.figures.get("solver") if placement is not None else None
    if as_json:
        _emit_json({
            "placement": solver or {},
            "status": "ok",
            "site": d.name,
            "output": str(result.out_dir),
            "gpus": d.spec.gpus,
            "racks": d.spec.racks,
            "shape": d.spec.shape.to_json(),
            "warnings": [w.to_json() for w in d.warnings],
            "artifacts": result.files,
        })
        return
    if not quiet:
        _print_diags(list(d.warnings))
        if solver:
            out.print(
                f"placement: {solver['status']}, fiber {placement.figures['fiber_m']['total']:,.0f} m,"
                f" gap {100 * solver['gap']:.3f}%, {solver['seconds']:.1f} s"
            )
        out.print(
            f"[green]built[/green] {d.name}: {d.spec.gpus:,} GPUs, {d.spec.racks:,} racks, "
            f"{len(result.files)} artifacts -> {result.out_dir}"
        )


@app.command()
def schema(
    output: Optional[Path] = typer.Option(
        None, "-o", "--output",
        help="Where to write the schema (reference.md goes beside it). Default: schemas/ of the source checkout"
        " twin runs from; required when twin is installed from a wheel.",
    ),
    check: bool = typer.Option(
        False, "--check",
        help="Exit 1 if the files are stale instead of writing them (default: the checkout's schemas/, or the"
        " copy installed with the package).",
    ),
    print_schema: bool = typer.Option(False, "--print", help="Print the JSON Schema to standard output; write nothing."),
    as_json: bool = typer.Option(False, "--json", help="Report the files written or checked as JSON."),
) -> None:
    """Write the JSON Schema of the site language and its Markdown reference (reference.md beside it).

    Example: twin schema            # in a checkout: writes schemas/twin-site.schema.json and schemas/reference.md

    Example: twin schema -o my-sites/twin-site.schema.json   # installed from a wheel: say where
    """
    from twin.schema import default_schema_path, schema_files, schema_text, stale_files

    if print_schema:
        sys.stdout.write(schema_text())
        return
    target = output or default_schema_path(for_check=check)
    if target is None:
        err.print("twin is installed, not run from a source checkout: give -o PATH to write the schema there,"
                  " or --print to print it", style="red", markup=False)
        raise typer.Exit(EXIT_INVALID)
    files = schema_files(target)
    if check:
        stale = stale_files(files)
        if as_json:
            _emit_json({"status": "stale" if stale else "ok",
                        "files": {str(p): "stale" if p in stale else "current" for p in files}})
        else:
            again = "twin schema" + (f" -o {output}" if output else "")
            for p in stale:
                err.print(f"{p} is stale; run `{again}`", style="red", markup=False)
            if not stale:
                out.print(f"schema and reference are up to date ({target.parent})", markup=False)
        if stale:
            raise typer.Exit(1)
        return
    for p, text in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        if not as_json:
            out.print(f"wrote {p}", markup=False)
    if as_json:
        _emit_json({"status": "written", "files": {str(p): "written" for p in files}})


@app.command()
def diff(
    old: Path = typer.Argument(..., help="OLD: a site spec (YAML) or a built folder. Alone (or with --against), the edited spec."),
    new: Optional[Path] = typer.Argument(None, help="NEW: a site spec or a built folder."),
    against: Optional[Path] = typer.Option(None, "--against", help="With one SPEC: the build folder it would replace (default: generated/<site>)."),
    as_json: bool = typer.Option(False, "--json", help="Print the review as JSON."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the review as a self-contained page to this file."),
    scenario: Optional[Path] = typer.Option(None, "--scenario", "-s", help="Run this scenario with every spec side, like `twin build --scenario`."),
) -> None:
    """Review what a change does: figures that moved (GPUs, switches per tier, optics and cable km, power
    and headroom per level, placement objective and gap, ECMP widths, cost, twin figures), configs changed
    per role with one representative diff each, and the artifacts that change. Nothing is written (but --html).

    Exit 0 when nothing changes, 1 when something does (like `diff`), 2 on invalid input.

    Example: twin diff sites/lab-2zone.yaml edited/lab-2zone.yaml --html /tmp/review.html

    Example: twin diff generated/lab-2zone sites/lab-2zone.yaml      (a built folder against a spec)

    Example: twin diff sites/lab-2zone.yaml --against generated/lab-2zone
    """
    from twin.compiler.resolve.validate import validate_file
    from twin.diff.compare import compare, side
    from twin.diff.report import page, terminal

    if new is not None and against is not None:
        err.print("give OLD NEW, or SPEC --against DIR, not both", style="red", markup=False)
        raise typer.Exit(EXIT_INVALID)
    if new is None:  # the original form: the spec against the folder it would replace
        spec, new = old, old
        if against is None:
            parsed, diags = validate_file(spec)
            if parsed is None:
                _print_diags(diags)
                raise typer.Exit(EXIT_INVALID)
            against = Path("generated") / parsed.name
        old = against
    for t in (old, new):
        if t.is_dir() and not (t / "manifest.json").is_file():
            err.print(f"{t}: no manifest.json (build it first with `twin build`)", style="red", markup=False)
            raise typer.Exit(EXIT_INVALID)
        if not t.exists():
            err.print(f"{t}: no such spec file or build folder", style="red", markup=False)
            raise typer.Exit(EXIT_INVALID)
    try:
        res = compare(side(old, scenario), side(new, scenario))
    except SpecError as e:
        _print_diags(e.diagnostics)
        raise typer.Exit(EXIT_INVALID) from None
    except InfeasibleError as e:
        for line in e.diagnosis:
            err.print(f"infeasible: {line}", markup=False)
        raise typer.Exit(EXIT_INVALID) from None
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        html.write_bytes(page(res))
    if as_json:
        _emit_json(res.to_json())
    else:
        terminal(res, out)
        if html is not None:
            out.print(f"wrote {html}", markup=False)
    raise typer.Exit(0 if res.empty else 1)


@app.command()
def verify(
    folder: Path = typer.Argument(..., help="A generated site folder (output of twin build)."),
    slice_: Optional[str] = typer.Option(None, "--slice", help="Verify part of a big site: zone:1 (one AI zone with its ATSW uplinks), "
                                         "or on a campus building:1,2 (in each, 4 racks and 2 CTSWs of its first zone, the ATSWs they reach and the campus tier between them)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait for convergence."),
    bfd: Optional[bool] = typer.Option(None, "--bfd/--no-bfd", help="Run bfdd too (default: when the configs use BFD)."),
) -> None:
    """Run the generated configs in real FRR (RoCE) or OpenSM on ibsim (InfiniBand) and check them.

    RoCE (needs root): one namespace per switch, every BGP session established, every rack subnet
    at the predicted ECMP width on every switch, host pings, one CTSW link down. InfiniBand: every HCA
    pair routed, loop-free, by the configured engine. Only what the run created is removed.
    Exit 0 verified, 1 a check failed, 2 a program or privilege the run needs is missing (named with
    its Debian package, checked before anything starts) or the folder is not a build.

    Example: sudo twin verify generated/lab-2zone --json

    Example: sudo twin verify generated/lab-campus --slice building:1,2
    """
    import signal

    from twin.verify import ib, preflight, roce

    def _term(*_a):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    try:
        zone, buildings = preflight.parse_slice(slice_)
    except ValueError as e:
        err.print(f"--slice {slice_!r}: {e}", style="red", markup=False)
        raise typer.Exit(EXIT_INVALID) from None
    # before anything starts: every program and privilege the run needs (exit 2: this machine, not the design)
    if roce.is_roce(folder):
        why = preflight.check_roce(roce.Topology.load(folder).bfd if bfd is None else bfd)
    elif (folder / "configs" / "opensm" / "opensm.conf").is_file():
        why = preflight.check_ib()
    else:
        err.print(f"{folder}: no configs/frr/topology.json or configs/opensm/opensm.conf; run twin build first", style="red", markup=False)
        raise typer.Exit(EXIT_INVALID)
    if why:
        if as_json:
            _emit_json({"site": folder.name, "ok": False, "status": "cannot run here", "problems": [why]})
        err.print(f"twin verify: {why}", style="red", markup=False)
        raise typer.Exit(EXIT_INVALID)
    log = (lambda m: None) if as_json else (lambda m: err.print(f"  {m}", markup=False))
    if roce.is_roce(folder):
        try:
            result = roce.verify(folder, zone=zone, timeout=timeout, bfd=bfd, log=log, buildings=buildings).to_json()
        except ValueError as e:
            err.print(f"{folder}: {e}", style="red", markup=False)
            raise typer.Exit(EXIT_INVALID) from None
    else:
        result = {"site": folder.name, **ib.route_fabric(folder / "configs" / "opensm", folder / "model" / "topology.net").to_json()}
    if as_json:
        _emit_json(result)
    else:
        for p in result.get("problems", []):
            err.print(f"  - {p}", style="red", markup=False)
        figures = {k: v for k, v in result.items() if k not in ("problems", "ok", "site")}
        for k, v in figures.items():
            out.print(f"  {k}: {v}", markup=False)
        tag = "[green]verified[/green]" if result["ok"] else "[red]FAILED[/red]"
        out.print(f"{tag} {result['site']}")
    raise typer.Exit(0 if result["ok"] else EXIT_INFEASIBLE)


@app.command()
def simulate(
    target: Path = typer.Argument(..., help="Site spec (YAML) or a generated/<site> folder."),
    scenario: Path = typer.Option(..., "--scenario", "-s", help="Scenario file (YAML)."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    plot_dir: Optional[Path] = typer.Option(None, "--plot-dir", help="Write PNG plots here."),
) -> None:
    """Simulate collectives and training jobs on the compiled fabric (flow level, ECMP hashing, failures),
    and the site's power over time (a scenario's power: section: swings, utility limits, busways, thermal).

    Example: twin simulate sites/lab-2zone.yaml --scenario scenarios/server5.yaml --plot-dir /tmp/plots

    A scenario's campaign: section runs the reliability twin (interruptions, checkpoints, spares, ETTR):
    twin simulate sites/meta-24k-roce.yaml --scenario scenarios/llama3-405b-campaign.yaml --json
    Example: twin simulate sites/meta-24k-roce.yaml --scenario scenarios/llama3-405b-power.yaml --json
    """
    from twin.cli.simulate import run_simulate

    code = run_simulate(target, scenario, as_json, plot_dir, out, err, _print_diags, _emit_json)
    raise typer.Exit(code)


def _register_subcommands() -> None:
    from twin.cli.netbox import app as netbox_app
    from twin.cli.sweep import register as register_sweep
    from twin.cli.validate_jobs import register as register_validate_jobs

    register_sweep(app, out, err, _print_diags, _emit_json)
    register_validate_jobs(app, out, err, _emit_json)

    app.add_typer(netbox_app, name="netbox")


_register_subcommands()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted", style="red")
        sys.exit(130)


if __name__ == "__main__":
    main()
