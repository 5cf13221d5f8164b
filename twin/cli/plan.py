"""``twin plan``: the best parallel plan for a workload on a site (twin/twins/plan/)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer

from twin.exits import INVALID as EXIT_INVALID

AXES = {"tp": int, "cp": int, "pp": int, "dp": int, "ep": int, "v": int, "micro_batch": int, "recompute": str, "zero": int,
        "sequence_parallel": int, "fp8": int, "order": str, "dp_shard": int}
FIX_HELP = "Pin a plan axis to a value or values (repeatable): " + ", ".join(AXES) + "."


def parse_pins(pins: list[str]) -> dict:
    """``--fix tp=8 --fix recompute=none,full`` -> the search's pins (a value or a list of values)."""
    from twin.twins.plan.space import ORDERS, RECOMPUTE

    out = {}
    for p in pins:
        k, sep, v = p.partition("=")
        k = k.strip()
        if not sep or k not in AXES:
            raise ValueError(f"--fix '{p}': expected AXIS=VALUE with AXIS one of {', '.join(AXES)}")
        vals = []
        for x in v.split(","):
            x = x.strip().lower()
            if AXES[k] is int:
                x = {"true": "1", "false": "0", "yes": "1", "no": "0", "linear": "1", "none": "0"}.get(x, x) if k in ("sequence_parallel", "fp8") else x
                if not x.isdigit() or len(x) > 7:
                    raise ValueError(f"--fix '{p}': {k} takes whole numbers (up to 7 digits)")
                if k in ("sequence_parallel", "fp8") and x not in ("0", "1"):
                    raise ValueError(f"--fix '{p}': {k} is on or off (1 or 0, true or false" + (", linear or none)" if k == "fp8" else ")"))
                vals.append(int(x))
            elif k == "recompute" and x not in RECOMPUTE:
                raise ValueError(f"--fix '{p}': recompute is one of {', '.join(RECOMPUTE)}")
            elif k == "order" and x not in ORDERS:
                raise ValueError(f"--fix '{p}': order is tp, cp, pp and dp joined by '-', fastest first (e.g. tp-cp-pp-dp)")
            else:
                vals.append(x)
        out[k] = vals if len(vals) > 1 else vals[0]
    return out


def with_sets(design, w, sets: list[str], gpus: int | None = None):
    """The workload with ``--set FIELD=VALUE`` laid over it, validated as a site's workload is; with no workload
    (a site without any), the model the sets give on ``gpus`` GPUs (named ``model``)."""
    import yaml
    from pydantic import ValidationError

    from twin.lang.site.workload_models import TrainingJob

    upd = {}
    for s in sets:
        k, sep, v = s.partition("=")
        k = k.strip()
        if not sep or k not in TrainingJob.model_fields or k in ("name", "kind"):
            raise ValueError(f"--set '{s}': expected FIELD=VALUE with FIELD a training workload field (layers, hidden_size, heads, "
                             "global_batch, sequence_length, parameters, ...)")
        try:
            upd[k] = yaml.safe_load(v) if len(v) < 200 else v
        except yaml.YAMLError:
            upd[k] = v
    if not upd:
        return w
    base = w.model_dump(exclude_defaults=True) if w is not None else {"name": "model", "dp": gpus}
    try:
        return TrainingJob.model_validate({**base, **upd})
    except ValidationError as e:
        x = e.errors()[0]
        raise ValueError(f"--set {'.'.join(str(p) for p in x['loc'])}: {x['msg']}") from None


def register(app, out, err, print_diags, emit_json) -> None:
    """Add ``twin plan`` to the ``twin`` command."""

    @app.command("plan")
    def plan_cmd(
        target: Path = typer.Argument(..., help="Site spec (YAML) or a generated/<site> folder."),
        workload: Optional[str] = typer.Option(None, "--workload", "-w", help="A training workload of the site (default: its first)."),
        gpus: Optional[int] = typer.Option(None, "--gpus", min=1, max=10_000_000, help="GPUs for the job (default: the workload's)."),
        sets: List[str] = typer.Option([], "--set", metavar="FIELD=VALUE", help="Change the workload's model or batch (repeatable)."),
        pins: List[str] = typer.Option([], "--fix", metavar="AXIS=VALUE[,VALUE]", help=FIX_HELP),
        top: int = typer.Option(10, "--top", min=2, max=50, help="Leaders re-timed by the full job twin."),
        plot: Optional[Path] = typer.Option(None, "--plot", help="Write the picture (step time against memory per GPU) as PNG here."),
        write: Optional[Path] = typer.Option(None, "--write", help="Write a scenario that runs the pick (twin simulate --scenario)."),
        write_spec: Optional[Path] = typer.Option(None, "--write-spec", help="Write a copy of the site spec with the pick added as a "
                                                  "workload of its own (named WORKLOAD-plan, inheriting the searched one)."),
        placement: str = typer.Option("reading-order", "--placement", help="reading-order (default: racks filled in reading order, "
                                      "seconds) or spec (the spec's placement, optimised with HiGHS; it moves only cable lengths, "
                                      "which the plans' steps see as nanoseconds of propagation)."),
        measured: Optional[Path] = typer.Option(None, "--measured", help="A CSV of plans you ran and their measured step_s: twin "
                                                "ranks them and reports its regret, rank correlation and the plans it predicts do not fit."),
        as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
    ) -> None:
        """Search every parallel plan of a workload on the site's compiled fabric and say which is fastest and why.

        Enumerates TP, CP, PP, DP, EP, virtual stages, micro-batch, recomputation, ZeRO stage, sequence parallelism,
        FP8 and the rank order with the global batch held; prunes plans that break a rule or do not fit in memory
        (counted by reason); scores the rest with a vectorised fast stage (branch and bound) and re-times the
        leaders with the full job twin. Prints the leaders, why the pick wins, the best plan of each class, which
        leaders the model cannot tell apart, and where the spec's own plan stands against the pick.

        Example: twin plan sites/selene-a100.yaml --workload gpt-18p4b

        Example: twin plan sites/meta-24k-roce.yaml -w llama3-405b-8k --gpus 2048 --set global_batch=256 --fix tp=8 --json

        Example: twin plan sites/lab-2zone.yaml --write-spec /tmp/lab-planned.yaml

        Example: twin plan sites/selene-a100.yaml -w gpt-145p6b --gpus 384 --set layers=96 --set parameters=174.6e9 --set global_batch=1536 --measured scenarios/megatron-sc21-table2-384.csv
        """
        if placement not in ("reading-order", "spec"):
            from twin.cli.envelope import invalid

            raise typer.Exit(invalid(f"--placement '{placement}': expected reading-order or spec", as_json, emit_json, err))
        code = run_plan(target, workload, gpus, sets, pins, top, plot, write, as_json, out, err, print_diags, emit_json,
                        None if placement == "spec" else "naive", measured, write_spec)
        raise typer.Exit(code)


def run_plan(target, workload, gpus, sets, pins, top, plot, write, as_json, out, err, print_diags, emit_json,
             placement_method: str | None = "naive", measured: Path | None = None, write_spec: Path | None = None) -> int:
    from twin.cli.envelope import invalid
    from twin.cli.progress import steps
    from twin.lang.diagnostics import InfeasibleError, Severity, SpecError

    def fail(message: str) -> int:
        return invalid(message, as_json, emit_json, err)

    for f in (plot, write, write_spec):
        if f is not None and (f.is_dir() or not f.parent.is_dir()):
            return fail(f"{f}: expected a file in an existing folder")
    try:
        fixed = parse_pins(pins)
    except ValueError as e:
        return fail(str(e))
    runs = None
    if measured is not None and (plot is not None or write is not None or write_spec is not None):
        return fail("--measured: --plot, --write and --write-spec are the search's; run them without --measured")
    if measured is not None:  # the CSV's shape and size checked before any work
        from twin.twins.plan import measured as held

        try:
            runs = held.read(measured)
        except ValueError as e:
            return fail(str(e))
    t0 = time.perf_counter()
    try:
        with steps(err, not as_json, "load the compiler") as say:
            from twin.cli.simulate import resolve_spec
            from twin.compiler.pipeline import check, compile_design
            from twin.lang import limits
            from twin.twins.plan import answer, problem, render

            spec = resolve_spec(Path(target))
            if write_spec is not None and write_spec.resolve() == spec.resolve():  # before any work
                return fail(f"--write-spec {write_spec}: that is the spec searched; write the copy to another file")
            say(f"validate {spec.name}")
            checked = check(spec)  # the workload chosen and the search's size checked before the site is compiled
            if checked.spec is not None:
                ws = [x for x in checked.spec.site.workloads if getattr(x, "kind", "training") == "training"]
                if not ws and not (sets and gpus):
                    return fail(f"{spec}: the site has no training workload to plan: name one under workloads:, or give the model with "
                                "--set (layers, hidden_size, heads, sequence_length, global_batch, ...) and the GPU count with --gpus")
                w = (next((x for x in ws if x.name == workload), None) if workload else ws[0]) if ws else None
                if w is None and ws:
                    return fail(f"--workload '{workload}': not a training workload of the site (one of: {', '.join(x.name for x in ws)})")
                limits.check("plan_gpus", gpus or w.gpus)  # Problem.of checks it again once --set has laid its fields over
            say(f"compile {spec.name}")
            # as far as the job twin reads (placement, fabric, cable lengths): no addresses or config intent (a spec
            # that did not validate raises its diagnostics here)
            design = compile_design(spec, progress=lambda n: say(f"compile: {n}"), placement_method=placement_method, until="bom",
                                    checked=checked)
            w = with_sets(design, w, sets, gpus)
            say(f"compile the fabric of {gpus or w.gpus:,} GPUs")
            p = problem.Problem.of(design, w, gpus)
            started = time.perf_counter()
            if runs is not None:
                res = held.hold(p, measured, runs, fixed, lambda n, total: say(f"full job twin: measured plan {n + 1} of {total}"))
                emit_json(res) if as_json else out.print(held.text(res), markup=False, emoji=False)
                return 0

            def progress(stage, done, total, best, c, considered=None, of=None, left=None, eta_s=None):
                if stage == "full twin":
                    el = time.perf_counter() - started
                    eta = f", about {el / max(done, 1) * (total - done):.0f} s left" if done else ""
                    say(f"full job twin: plan {done + 1} of {total}{eta}")
                else:
                    b = f"; best so far {best:.3f} s, {answer.label(c)}" if best is not None else ""
                    say(f"fast stage ({stage}): {considered:,}/{of:,} plans considered, {done:,} scored, {left:,} could still win, "
                        f"about {eta_s:.0f} s left{b}")
            from twin.twins.plan.measured import stated_plan

            res = answer.answer(p, fixed, top, progress, stated_plan(p) if ws else None)  # a model from --set alone states no plan
    except (SpecError, InfeasibleError) as e:
        diags = getattr(e, "diagnostics", None)
        if diags is None:
            return fail("; ".join(getattr(e, "diagnosis", [str(e)])))
        if as_json:
            emit_json({"status": "invalid", "diagnostics": [d.to_json() for d in diags]})
        else:
            print_diags(diags)
            err.print(f"{sum(d.severity is Severity.ERROR for d in diags)} error(s)", style="red", markup=False)
        return EXIT_INVALID
    except (ValueError, FileNotFoundError) as e:
        return fail(str(e))
    res["seconds"]["total_s"] = time.perf_counter() - t0
    scatter = res.pop("scatter")
    if plot is not None:
        render.picture(res, scatter, plot)
    if write is not None:
        write.write_text(render.scenario(res), encoding="utf-8")
    if write_spec is not None:
        if not ws:
            return fail("--write-spec: the model came from --set alone; there is no site workload for the pick to inherit")
        try:
            text, name = render.spec_with_pick(spec.read_text(encoding="utf-8"), res, {x.name for x in design.spec.site.workloads})
        except ValueError as e:
            return fail(str(e))
        write_spec.write_text(text, encoding="utf-8")
        res["written_workload"] = name
    if as_json:
        emit_json(res)
    else:
        out.print(render.text(res), markup=False, emoji=False)
    return 0
