"""``twin calibrate``: a software stack's constants fitted on the user's measured runs (twin/twins/workload/calibrate.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from twin.exits import INVALID as EXIT_INVALID
from twin.lang.diagnostics import InfeasibleError, Severity, SpecError


def run_calibrate(site: Path, runs_csv: Path | None, base: str, name: str, constants: str, holdout: str, routing: str, out_file: Path | None,
                  as_json: bool, out, err, print_diags, emit_json, nccl_file: Path | None = None) -> int:
    import dataclasses
    import re

    from twin.cli.progress import steps
    from twin.lang.base import SLUG

    def fail(message: str) -> int:
        from twin.cli.envelope import invalid

        return invalid(message, as_json, emit_json, err)

    if not re.match(SLUG, name):
        return fail(f"--name '{name}': a stack name is a slug (lower-case letters, digits and '-'), it becomes catalog text")
    if runs_csv is None and nccl_file is None:
        return fail("nothing to calibrate on: give --runs (measured steps), --nccl-tests (nccl-tests output) or both")
    if holdout not in ("none", "smallest"):
        return fail(f"--holdout '{holdout}': expected none or smallest")
    try:
        with steps(err, not as_json, "load the compiler") as say:
            from twin.compiler.pipeline import compile_design
            from twin.lang.files import FileRefused, read_bytes
            from twin.twins.net import nccl_tests, topology
            from twin.twins.net import routing as rt
            from twin.twins.net.nccl import Library
            from twin.twins.workload import calibrate

            if routing not in (*rt.SCHEMES, "site"):
                return fail(f"--routing '{routing}': expected site or one of {', '.join(rt.SCHEMES)}")
            texts = {}
            for path, what in ((runs_csv, "calibration CSV"), (nccl_file, "nccl-tests output")):
                if path is None:
                    continue
                try:
                    texts[what] = read_bytes(path, "input_bytes", what).decode("utf-8")
                except (FileRefused, UnicodeDecodeError) as e:
                    return fail(f"{path}: {e}")
            table = nccl_tests.parse(texts["nccl-tests output"], str(nccl_file)) if nccl_file is not None else None
            say(f"compile {site}")
            design = compile_design(site, until="bom")  # as far as the job and network twins read
            runs = calibrate.read_runs(texts["calibration CSV"], str(runs_csv), {w.name: w for w in design.spec.site.workloads}) \
                if runs_csv is not None else None
            say("the site's fabric")
            net = topology.from_design(design)
            if routing == "site":  # what the site's spec says its switches run (InfiniBand's routing engine, Ethernet's hash)
                scheme = rt.site_scheme(design.spec.fabric)
            else:
                qps = design.spec.fabric.routing.qps_per_gpu_pair if routing == "e-ecmp" else 1
                scheme = rt.Scheme(f"{routing}, {qps} QP", routing, qps)
            lib = Library(nic_latency=design.spec.chassis.nic_latency)
            coll_fit = None
            if table is not None:
                say(f"fit the collective model on {len(table.rows)} size(s) of {nccl_file}")
                coll_fit = nccl_tests.fit(net, table, nccl_tests.place(net, table, str(nccl_file)), scheme, lib)
                c = coll_fit["constants"]
                lib = dataclasses.replace(lib, eta=c["protocol_efficiency"], step_overhead=c["step_overhead"])
            res = None
            if runs is not None:
                say(f"fit {constants} on {len(runs)} run(s)")
                res = calibrate.fit(design, net, runs, base, name, tuple(c.strip() for c in constants.split(",") if c.strip()), scheme,
                                    str(runs_csv), holdout, lib=lib)
    except SpecError as e:
        if as_json:
            emit_json({"status": "invalid", "diagnostics": [d.to_json() for d in e.diagnostics]})
        else:
            print_diags(e.diagnostics)
            err.print(f"{sum(d.severity is Severity.ERROR for d in e.diagnostics)} error(s)", style="red", markup=False)
        return EXIT_INVALID
    except InfeasibleError as e:
        return fail(f"{site}: the design does not fit: " + "; ".join(e.diagnosis))
    except (FileNotFoundError, ValueError) as e:
        return fail(str(e))
    if out_file is not None and res is not None:
        out_file.write_text(res["catalog"])
    if as_json:
        emit_json({**(res or {"scheme": scheme.name}), "nccl_tests": coll_fit, "written": str(out_file) if out_file and res else None})
        return 0
    if coll_fit is not None:
        _print_collective(out, coll_fit, nccl_file)
    if res is None:
        return 0
    out.print(f"stack {name} (from {base}), routing {res['scheme']}: " + ", ".join(f"{k} {v}" for k, v in res["constants"].items()),
              markup=False)
    out.print(f"{'line':>5} {'workload':<24} {'GPUs':>7} {'measured s':>11} {'twin s':>9} {'error':>7}", markup=False)
    for r in res["runs"]:
        tag = "fitted" if r["fitted"] else "held out"
        out.print(f"{r['line']:>5} {r['workload'][:24]:<24} {r['gpus']:>7,} {r['measured_step_s']:>11.3f} {r['predicted_step_s']:>9.3f} "
                  f"{100 * r['error']:>+6.1f}%  {tag}", markup=False)
    out.print(f"fit: rms error {100 * res['fit_rms_error']:.1f}% on the fitted runs", markup=False)
    if res["held_out"]:
        h = res["held_out"]
        out.print(f"held out: {h['runs']} run(s), mean |error| {100 * h['mean_abs_error']:.1f}%, largest {100 * h['max_abs_error']:.1f}%",
                  markup=False)
    out.print(f"catalog entry ({out_file or 'paste under the site catalog:'}):\n" + res["catalog"], markup=False)
    return 0


def _print_collective(out, f: dict, path: Path) -> None:
    c = f["constants"]
    out.print(f"nccl-tests {f['test']}, {f['ranks']} ranks on {f['hosts']} servers ({path}), routing {f['scheme']}: protocol_efficiency "
              f"{c['protocol_efficiency']}, step_overhead {c['step_overhead'] * 1e6:.2f} us", markup=False)
    out.print(f"{'line':>5} {'size B':>14} {'measured us':>12} {'twin us':>10} {'error':>7}", markup=False)
    for r in f["rows"]:
        out.print(f"{r['line']:>5} {r['size']:>14,} {r['measured_us']:>12.1f} {r['predicted_us']:>10.1f} {100 * r['error']:>+6.1f}%", markup=False)
    out.print(f"fit: rms error {100 * f['rms_error']:.1f}% over {len(f['rows'])} sizes", markup=False)
    out.print("scenario fields (paste at the top level of your scenarios):\n" + f["scenario"], markup=False)


def register(app, out, err, print_diags, emit_json) -> None:
    """Add ``twin calibrate`` to the ``twin`` command."""

    @app.command("calibrate")
    def calibrate_cmd(
        site: Path = typer.Argument(..., help="The site spec whose workloads the runs are plans of (its fabric times them)."),
        runs: Path | None = typer.Option(None, "--runs", help="CSV of measured runs: workload,gpus,step_s and plan columns (tp cp pp dp ...)."),
        nccl: Path | None = typer.Option(None, "--nccl-tests", help="nccl-tests output (all_reduce_perf, all_gather_perf or reduce_scatter_perf "
                                         "across servers): fits the collective model's protocol_efficiency and step_overhead, which the "
                                         "--runs fit then uses."),
        stack: str = typer.Option("megatron-core-2025", "--stack", help="The catalog stack to start from."),
        name: str = typer.Option("calibrated", "--name", help="Name of the calibrated stack (a slug)."),
        fit: str = typer.Option("kernel_share", "--fit", help="Constants to fit, comma-separated: kernel_share, straggler_mean, zero3_host (runs at ZeRO 3)."),
        holdout: str = typer.Option("none", "--holdout", help="none: fit on every run; smallest: fit on the run with the fewest GPUs "
                                    "and report the error on the rest."),
        routing: str = typer.Option("site", "--routing", help="Routing scheme the runs are timed under: site (what the site's spec "
                                    "states: InfiniBand's routing_engine, ar_* adaptive; Ethernet's hash fields), ecmp, e-ecmp, static, "
                                    "spray, adaptive, te."),
        out_file: Path | None = typer.Option(None, "--out", help="Write the calibrated stack here as a catalog entry (YAML)."),
        as_json: bool = typer.Option(False, "--json", help="Print the fit, every run's residual and the catalog entry as JSON."),
    ) -> None:
        """Fit a software stack's constants (kernel_share; with runs at several scales, the straggler mean) on your
        own measured runs, show every run's residual, and write the calibrated stack as a catalog entry your site
        can name in stack:.

        Example: twin calibrate sites/meta-24k-roce.yaml --runs runs.csv --stack meta-production-2024 --name my-cluster --holdout smallest

        Example: twin calibrate site.yaml --runs runs.csv --fit kernel_share,straggler_mean --out my-stack.yaml --json

        Example: twin calibrate sites/lab-ib.yaml --nccl-tests all_reduce_perf.txt
        """
        raise typer.Exit(run_calibrate(site, runs, stack, name, fit, holdout, routing, out_file, as_json, out, err, print_diags, emit_json,
                                       nccl))
