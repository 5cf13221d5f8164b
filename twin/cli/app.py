"""The ``twin`` command: one sub-command per verb.

Exit codes: 0 success, 1 a valid design that cannot be built as stated (infeasible), 2 invalid input,
3 (``twin build``) the output folder could not be written (disk full, read-only, no permission, another
build writing it), 4 (``build``, ``simulate``, ``validate``) the design or its twins fail a check
(:mod:`twin.analysis.verdicts`: a limit the spec, its catalog or the scenario states); the output is
written all the same, and ``--accept-risks`` makes it exit 0.
Errors are printed as ``FILE:LINE:COL: field.path: message (expected ...)`` and never as tracebacks.
"""

from __future__ import annotations

import atexit
import gc
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from twin.exits import FAILED as EXIT_INFEASIBLE
from twin.exits import INTERRUPTED
from twin.exits import INVALID as EXIT_INVALID
from twin.exits import RISKS as EXIT_RISKS
from twin.lang.diagnostics import Diagnostic, InfeasibleError, Severity, SpecError
from twin.version import __version__

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="twin: a declarative design compiler and digital twin for AI training clusters.\n\n"
         "Documentation: docs/index.md in the source repository (by task, concept and reference; "
         "`mkdocs serve` there builds the site); `twin COMMAND --help` for each command.",
)
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


ACCEPT_RISKS = "Exit 0 even when a check fails (the verdicts still list it); without it a fail exits 4."


def risks_exit(risks, accept: bool) -> int:
    """4 when a verdict fails and the user has not accepted the risks, else 0."""
    return EXIT_RISKS if not accept and any(v.status == "fail" for v in risks) else 0


def print_risks(risks, console=None, fails_only: bool = False, sample: int = 3) -> None:
    """The fails and warnings (``fails_only``: the fails), one line each, worst first, at most ``sample`` of
    a check made per hall or per route (then how many more: every one is in report/verdicts.csv); then the counts."""
    console = console or err
    seen: dict[tuple, int] = {}
    for v in risks:
        if v.status == "fail" or (v.status == "warn" and not fails_only):
            style = "red" if v.status == "fail" else "yellow"
            k = (v.status, v.severity, v.group or v.key)
            seen[k] = seen.get(k, 0) + 1
            if seen[k] > sample:
                continue
            where = f"{v.where}: " if v.where else ""
            console.print(f"{v.status.upper()} ({v.severity}) {where}{v.check}: {v.value} against {v.limit} [{v.section}]",
                          style=style, markup=False, emoji=False)
    for (status, severity, group), n in seen.items():
        if n > sample:
            console.print(f"{status.upper()} ({severity}) ... and {n - sample:,} more of {group} (every one in report/verdicts.csv)",
                          style="red" if status == "fail" else "yellow", markup=False, emoji=False)
    n = {s: sum(v.status == s for v in risks) for s in ("fail", "warn", "pass")}
    console.print(f"verdicts: {n['fail']} fail, {n['warn']} warning(s), {n['pass']} pass", markup=False,
                  style="red" if n["fail"] else "yellow" if n["warn"] else "green")


def _print_diags(diags: list[Diagnostic]) -> None:
    for d in diags:
        style = "red" if d.severity is Severity.ERROR else "yellow"
        err.print(d.format(), style=style, markup=False, emoji=False)


def _emit_json(obj, status: str | None = None, risks: list[dict] | None = None) -> None:
    """Every command's --json: the envelope (twin/cli/envelope.py) round its document."""
    from twin.cli.envelope import emit

    emit(obj, status, risks)


def risks_status(risks, accept: bool) -> str:
    """ok, fail (a verdict fails) or accepted (fails accepted with --accept-risks)."""
    failing = any(v.status == "fail" for v in risks)
    return "ok" if not failing else "accepted" if accept else "fail"


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context, version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    from twin.cli.envelope import CURRENT

    CURRENT["command"] = ctx.invoked_subcommand or ""
    if version:
        out.print(f"twin {__version__}")
        raise typer.Exit(0)
    from twin.lang.limits import LimitsError, overrides

    try:
        overrides()  # a malformed TWIN_LIMITS is one line before any command reads it
    except LimitsError as e:
        err.print(str(e), style="red", markup=False)
        raise typer.Exit(EXIT_INVALID) from None


@app.command()
def validate(
    specs: list[Path] = typer.Argument(..., help="Site spec files (YAML).", metavar="SPEC"),
    as_json: bool = typer.Option(False, "--json", help="Print diagnostics as JSON."),
    accept_risks: bool = typer.Option(False, "--accept-risks", help=ACCEPT_RISKS),
    fast: bool = typer.Option(False, "--fast", help="The spec alone (structure, references, sizing, the budget), in about "
                              "half a second: no placement (HiGHS proving a large hall's placement optimal can take tens of "
                              "seconds: sites/selene-a100.yaml ~30 s), fabric or verdicts, so a limit only the compiled design "
                              "shows (lossless reach, a busway after a failure) is not checked."),
) -> None:
    """Check site specs and report every error and warning with FILE:LINE:COL, then compile each valid
    one (placement, fabric, cabling; no twin) and hold it to every check of the design: the verdicts
    `twin build` opens its report with. The counts are the verdicts' (a spec warning is one of them).

    Example: twin validate sites/meta-24k-roce.yaml sites/lab-2zone.yaml

    Example: twin validate --fast sites/meta-24k-roce.yaml     # the spec alone, no compile
    """
    from twin.compiler.pipeline import check

    worst = 0
    results = []
    for path in specs:
        checked = check(path)  # the build's own front: validation, the GPU power cap, the budget
        spec, diags = checked.spec, list(checked.diagnostics)
        problems = checked.budget.problems if checked.budget else []
        status = checked.status
        risks = []
        if status == "ok" and not fast:
            from twin.analysis.verdicts import design_verdicts, ranked
            from twin.compiler.pipeline import compile_design

            try:
                # the checks read no config intent; the spec is the one checked above
                design = compile_design(path, until="addressing", checked=checked)
                # a fabric-only study has no floor to hold the design to (twin.compiler.study.SKIPPED)
                risks = [] if spec.site.fabric_only else ranked(design_verdicts(design))
            except InfeasibleError as e:
                status, problems = "infeasible", list(e.diagnosis)
        worst = max(worst, {"ok": 0, "infeasible": EXIT_INFEASIBLE, "invalid": EXIT_INVALID}[status])
        if status == "ok":
            worst = max(worst, risks_exit(risks, accept_risks))
        results.append({"spec": str(path), "status": status, "diagnostics": [d.to_json() for d in diags], "infeasible": problems,
                        "shape": spec.shape.to_json() if spec is not None else None, "risks": [v.to_json() for v in risks]})
        if not as_json:
            _print_diags([d for d in diags if d.severity is Severity.ERROR or status != "ok" or fast])
            for p in problems:
                err.print(f"{path}: infeasible: {p}", style="red", markup=False)
            if spec is not None:
                tag = "[green]ok[/green]" if status == "ok" else "[red]infeasible[/red]"
                if fast:
                    out.print(f"{path}: {tag}: {spec.gpus:,} GPUs in {spec.racks:,} racks, {len(checked.warnings)} spec warning(s)"
                              " (--fast: the design's checks did not run)")
                    continue
                if status == "ok" and not spec.site.fabric_only:
                    print_risks(risks)
                if status == "ok" and spec.site.fabric_only:
                    out.print(f"{path}: a fabric-only study (no halls): the fabric, its links and BOM compile; the floor's checks "
                              "do not apply (twin build writes study.md: what it built and skipped)", markup=False)
                n = {s_: sum(v.status == s_ for v in risks) for s_ in ("fail", "warn")}
                out.print(f"{path}: {tag}: {spec.gpus:,} GPUs in {spec.racks:,} racks, {n['fail']} fail, {n['warn']} warning(s)"
                          + (f" of {len(risks)} checks" if risks else ""))
            else:
                nerr = sum(d.severity is Severity.ERROR for d in diags)
                err.print(f"{path}: {nerr} error(s)", style="red", markup=False)
    if as_json:
        word = {0: "ok", EXIT_INFEASIBLE: "infeasible", EXIT_INVALID: "invalid", EXIT_RISKS: "fail"}[worst]
        if worst == 0 and any(v["status"] == "fail" for r in results for v in r["risks"]):
            word = "accepted"
        _emit_json({"results": results}, word, [dict(v, spec=r["spec"]) for r in results for v in r["risks"]])
    raise typer.Exit(worst)


@app.command()
def build(
    spec: Path = typer.Argument(..., help="Site spec file (YAML)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Output folder (default: generated/<site>)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result (artifacts and hashes) as JSON."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress or warnings."),
    scenarios: Optional[List[Path]] = typer.Option(None, "--scenario", "-s", metavar="FILE",
                                                   help="Also run this scenario's twins (collectives, jobs, campaign, power) "
                                                   "and put their sections in the report (one; a second is refused, exit 2)."),
    accept_risks: bool = typer.Option(False, "--accept-risks", help=ACCEPT_RISKS),
) -> None:
    """Compile a site spec into generated/<site>/ (design.json, report.md, report.html, manifest.json, ...).

    The report opens with the verdicts: every check of the design (and of the scenario's twins), fails
    first. A fail is written all the same and exits 4 unless --accept-risks is given.

    The previous output is replaced only when the whole build succeeds, in one atomic exchange, and only
    if twin wrote it (every file as its manifest.json lists it; otherwise exit 2, nothing touched). Disk
    full, a read-only folder or another build writing the same folder: one line, exit 3.

    Example: twin build sites/meta-24k-roce.yaml -o /tmp/out

    Example: twin build sites/lab-2zone.yaml -o /tmp/lab --scenario scenarios/lab-twins.yaml
    """
    from twin.cli.progress import steps
    from twin.cli.simulate import one_scenario
    from twin.output import OutputError

    try:
        scenario = one_scenario(scenarios, as_json, err, _emit_json)
    except ValueError:
        raise typer.Exit(EXIT_INVALID) from None
    show = not (as_json or quiet)
    try:
        with steps(err, show, "load the compiler") as say:
            from twin.build import build as do_build

            result = do_build(spec, output, progress=say if show else None, scenario=scenario)
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
        if as_json:
            _emit_json({"status": "not written", "error": str(e), "exit": e.code})
        else:
            err.print(f"{spec}: {e}", style="red", markup=False)
        raise typer.Exit(e.code) from None
    d = result.design
    placement = d.placement
    solver = placement.figures.get("solver") if placement is not None else None
    code = risks_exit(result.risks, accept_risks)
    if as_json:
        _emit_json({
            "risks": [v.to_json() for v in result.risks],
            "placement": solver or {},
            "status": risks_status(result.risks, accept_risks),
            "site": d.name,
            "output": str(result.out_dir),
            "gpus": d.spec.gpus,
            "racks": d.spec.racks,
            "shape": d.spec.shape.to_json(),
            "warnings": [w.to_json() for w in d.warnings],
            "artifacts": result.files,
            "leftovers_kept": list(result.left),
            "twins": {"default": result.runs.default if result.runs else None,
                      "default_error": result.runs.default_error if result.runs else None,
                      "scenario": result.runs.scenario[1] if result.runs and result.runs.scenario else None},
        })
        raise typer.Exit(code)
    if quiet and code:  # -q hides progress and warnings, not why the exit code is 4
        print_risks(result.risks, fails_only=True)
    for line in result.left:  # shown even with -q: a folder the user may have to remove
        err.print(f"{spec}: warning: {line}", style="yellow", markup=False)
    if result.runs and result.runs.default_error:
        err.print(f"{spec}: warning: the default twin could not run: {result.runs.default_error} (the design's artifacts are written)",
                  style="yellow", markup=False)
    if not quiet:
        if d.spec.site.fabric_only:  # no floor: no verdicts; study.md says what was built and skipped
            out.print(f"a fabric-only study (no halls): fabric, links without lengths, BOM and the default twin; "
                      f"what was skipped and why: {result.out_dir / 'study.md'}", markup=False)
        else:
            print_risks(result.risks)  # the spec's warnings are among the verdicts
        if solver:
            out.print(
                f"placement: {solver['status']}, fiber {placement.figures['fiber_m']['total']:,.0f} m,"
                f" gap {100 * solver['gap']:.3f}%, {solver['seconds']:.1f} s"
            )
        out.print(
            f"[green]built[/green] {d.name}: {d.spec.gpus:,} GPUs, {d.spec.racks:,} racks, "
            f"{len(result.files)} artifacts -> {result.out_dir}"
        )
    raise typer.Exit(code)


@app.command()
def simulate(
    target: Path = typer.Argument(..., help="Site spec (YAML) or a generated/<site> folder."),
    scenarios: List[Path] = typer.Option(..., "--scenario", "-s", metavar="FILE",
                                         help="Scenario file (YAML); one (a second is refused, exit 2)."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    plot_dir: Optional[Path] = typer.Option(None, "--plot-dir", help="Write PNG plots here."),
    accept_risks: bool = typer.Option(False, "--accept-risks", help=ACCEPT_RISKS),
) -> None:
    """Simulate collectives and training jobs on the compiled fabric (flow level, ECMP hashing, failures),
    and the site's power over time (a scenario's power: section: swings, utility limits, busways, thermal).

    A scenario's campaign: section runs the reliability twin (interruptions, checkpoints, spares, ETTR). The
    verdicts (utility limits, busways over time, thermal, each job's memory) follow the results; a fail
    exits 4 unless --accept-risks is given.

    Example: twin simulate sites/lab-2zone.yaml --scenario scenarios/server5.yaml --plot-dir /tmp/plots

    Example: twin simulate sites/meta-24k-roce.yaml --scenario scenarios/llama3-405b-campaign.yaml --json

    Example: twin simulate sites/meta-24k-roce.yaml --scenario scenarios/llama3-405b-power.yaml --json
    """
    from twin.cli.simulate import one_scenario, run_simulate

    try:
        scenario = one_scenario(scenarios, as_json, err, _emit_json)
    except ValueError:
        raise typer.Exit(EXIT_INVALID) from None
    code = run_simulate(target, scenario, as_json, plot_dir, out, err, _print_diags, _emit_json, accept_risks)
    raise typer.Exit(code)


def _register_subcommands() -> None:
    from twin.cli.asbuilt import register as register_as_built
    from twin.cli.calibrate import register as register_calibrate
    from twin.cli.diff import register as register_diff
    from twin.cli.netbox import app as netbox_app
    from twin.cli.plan import register as register_plan
    from twin.cli.schema import register as register_schema
    from twin.cli.sweep import register as register_sweep
    from twin.cli.upgrade import register as register_upgrade
    from twin.cli.validate_jobs import register as register_validate_jobs
    from twin.cli.verify import register as register_verify

    for register in (register_schema, register_diff, register_verify, register_sweep, register_as_built, register_calibrate, register_upgrade,
                     register_plan):
        register(app, out, err, _print_diags, _emit_json)
    register_validate_jobs(app, out, err, _emit_json)

    app.add_typer(netbox_app, name="netbox")


_register_subcommands()


def envelope_command() -> str:
    from twin.cli.envelope import command_name

    return command_name() or "command"


def main() -> None:
    # A command allocates millions of objects that live to its end (imported modules, pydantic
    # models, the fabric graph) and few cycles: a young-generation collection every 100,000
    # allocations instead of every 700 saves ~18% of the import time and rescans of the graph.
    gc.set_threshold(100_000, 50, 100)
    # At exit, what is alive goes to the permanent generation (atexit runs before the interpreter's
    # last full collection, which would traverse all of it: 0.3-0.8 s after a 24K-GPU build). Only
    # then: a caller that runs main() in its own process (the tests) keeps its collector as it was.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted", style="red")
        sys.exit(INTERRUPTED)
    except MemoryError as e:  # a cost no limit refused first (twin/lang/limits.py): said once, as a refused cost is, never a traceback
        from twin.cli.envelope import emit, invalid

        gc.collect()
        why = f": {str(e).splitlines()[0]}" if str(e).strip() else ""
        sys.exit(invalid(f"twin {envelope_command()}: ran out of memory{why} (the run needs more than this machine can give it); "
                         "a smaller job, site or scenario, or a machine with more memory", "--json" in sys.argv[1:], emit, err))


if __name__ == "__main__":
    main()
