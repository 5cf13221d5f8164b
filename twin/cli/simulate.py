"""``twin simulate``: the command behind the CLI entry (kept here so twin/cli/app.py stays a thin list)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from twin.exits import FAILED, INVALID
from twin.lang.diagnostics import InfeasibleError, Severity, SpecError

NOTHING_TO_PLOT = ("the plots are of collectives, training jobs, a campaign's sweeps and a power: section; "
                   "this scenario has none of them")


def one_scenario(scenarios: list[Path] | None, as_json: bool, err, emit_json) -> Path | None:
    """The one ``--scenario`` given, or None; a second is refused (ValueError, exit 2 by the caller, said
    on stderr or as the --json envelope) rather than silently replacing the first."""
    if scenarios and len(scenarios) > 1:
        names = ", ".join(str(p) for p in scenarios)
        message = f"--scenario given {len(scenarios)} times ({names}): give one; run the command once per scenario"
        if as_json:
            emit_json({"status": "invalid", "error": message})
        else:
            err.print(message, style="red", markup=False)
        raise ValueError(message)
    return scenarios[0] if scenarios else None


def resolve_spec(target: Path) -> Path:
    """A spec path for ``target``: the file itself, or the spec a generated folder was built from
    (found next to the repository's sites/ and checked against the manifest's sha256)."""
    if target.is_file():
        return target
    man = target / "manifest.json"
    if not man.is_file():
        raise FileNotFoundError(f"{target}: neither a spec file nor a generated folder with manifest.json")
    m = json.loads(man.read_text(encoding="utf-8"))
    name, sha = m.get("spec"), m.get("spec_sha256")
    for cand in (target / name, target.parent.parent / "sites" / name, Path.cwd() / "sites" / name):
        if cand.is_file() and hashlib.sha256(cand.read_bytes()).hexdigest() == sha:
            return cand
    raise FileNotFoundError(f"{target}: cannot find the spec '{name}' it was built from (sha256 {sha[:12]}); pass the spec path")


def simulate_steps(target, scenario, say):
    """Read the scenario, compile the design, run the twins and the verdicts, each step under its own
    label (``say``): (design, result, risks). Raises what the CLI turns into exit codes."""
    say(f"read the scenario {Path(scenario).name}")
    from twin.lang.scenario.models import load_scenario

    scn, src = load_scenario(scenario)
    spec_path = resolve_spec(Path(target))
    say(f"compile {spec_path.name}")
    from twin.compiler.pipeline import compile_design
    # as far as the twins and the verdicts read: the twins stop at the BOM and budget, the design's verdicts
    # read the addressing (its pools' use); no one here reads the config intent, the largest pass left
    # (5 CPU s and a GiB at a million GPUs)
    design = compile_design(spec_path, progress=lambda n: say(f"compile: {n}"), until="addressing")
    from twin.twins.run import simulate

    say(f"simulate {scn.name}")
    result = simulate(design, scn, src, progress=say)
    say("verdicts")
    from twin.analysis.verdicts_twins import verdicts

    return design, result, verdicts(design, (str(scenario), result.data))


def run_simulate(target, scenario, as_json, plot_dir, out, err, print_diags, emit_json, accept_risks: bool = False) -> int:
    from twin.cli.progress import steps

    try:
        with steps(err, not as_json, "load the twins") as say:
            design, result, risks = simulate_steps(target, scenario, say)
            files = []
            if plot_dir:
                say(f"plots into {plot_dir}")
                from twin.emit.plots import write_plots

                files = write_plots(result, plot_dir)
    except SpecError as e:
        if as_json:
            emit_json({"status": "invalid", "diagnostics": [d.to_json() for d in e.diagnostics]})
        else:
            print_diags(e.diagnostics)
            err.print(f"{scenario}: {sum(d.severity is Severity.ERROR for d in e.diagnostics)} error(s)", style="red", markup=False)
        return INVALID
    except InfeasibleError as e:
        err.print(f"{target}: the design does not fit: " + "; ".join(e.diagnosis), style="red", markup=False)
        return FAILED
    except (FileNotFoundError, ValueError) as e:
        err.print(str(e), style="red", markup=False)
        return INVALID
    from twin.cli.app import print_risks, risks_exit, risks_status
    from twin.emit import report_net as report

    if as_json:
        data = dict(result.data)
        data["plots"] = [str(f) for f in files]
        if plot_dir and not files:
            data["notes"] = [*data.get("notes", []), f"nothing to plot ({NOTHING_TO_PLOT})"]
        emit_json({**data, "status": risks_status(risks, accept_risks), "risks": [v.to_json() for v in risks]})
    else:
        report.render(result.data, out)
        for f in files:
            out.print(f"wrote {f}", markup=False)
        if plot_dir and not files:
            out.print(f"{scenario}: nothing to plot ({NOTHING_TO_PLOT}); wrote nothing to {plot_dir}", markup=False)
        print_risks(risks, out)
    return risks_exit(risks, accept_risks)
