"""``twin as-built``: the cluster's neighbour tables against the plan of a generated folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from twin.exits import INVALID as EXIT_INVALID


def run_as_built(generated: Path, neighbours: list[Path], output: Path | None, as_json: bool, ignore_speed: bool, complete: bool,
                 out, err, print_diags, emit_json) -> int:
    import twin.owned as owned
    from twin.asbuilt import check
    from twin.asbuilt.page import page
    from twin.asbuilt.report import document, status, terminal, work_order
    from twin.output import EXIT_WRITE  # here, not at the top: every command registers this one at start-up

    names = ["work-order.csv", "as-built.html", "as-built.json"]
    if output is not None:
        if why := owned.problem(output, names):  # a loop, not a folder, a file of the user's: one line, nothing written
            if as_json:
                emit_json({"status": "not written", "error": f"-o {output}: {why}", "exit": EXIT_WRITE})
            else:
                err.print(f"-o {output}: {why}", style="red", markup=False)
            return EXIT_WRITE
        if generated.is_dir() and output.resolve().is_relative_to(generated.resolve()):
            err.print(f"-o {output}: is inside the generated folder (its manifest would no longer describe it)", style="red", markup=False)
            return EXIT_INVALID
    res, diags, errors = check(generated, neighbours, check_speed=not ignore_speed)
    st, code = status(res, errors, complete)
    doc = document(res, str(generated), diags, errors, complete) if (as_json or output is not None) and res is not None else None
    files: list[str] = []
    if res is not None and output is not None:
        files = [str(output / n) for n in names]
        doc["files"] = files
        try:
            owned.write(output, {"work-order.csv": work_order(res), "as-built.html": page(res),
                                 "as-built.json": (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode("utf-8")})
        except OSError as e:  # disk full, read-only, no permission: one line, as twin build says it
            why = f"-o {output}: cannot write ({e.strerror or e})"
            if as_json:
                emit_json({"status": "not written", "error": why, "exit": EXIT_WRITE})
            else:
                err.print(why, style="red", markup=False)
            return EXIT_WRITE
    if as_json:
        emit_json(doc if doc is not None else document(res, str(generated), diags, errors, complete))
        return code
    print_diags(diags)
    if res is None:
        err.print(f"{generated}: the plan cannot be read; nothing was checked", style="red", markup=False)
        return code
    terminal(res, out)
    for f in files:
        out.print(f"wrote {f}", markup=False)
    verdict = {"ok": "[green]matches the plan[/green]", "differs": f"[red]differs from the plan[/red]: {len(res.findings)} finding(s)",
               "invalid": f"[red]{errors} input error(s)[/red]: the readable files were checked"}[st]
    if st == "ok" and complete is False and res.col.reported < set(res.plan.devices):
        verdict += " for what was reported"
    out.print(f"{res.plan.site}: {verdict}")
    return code


def register(app, out, err, print_diags, emit_json) -> None:
    """Add ``twin as-built`` to the ``twin`` command."""

    @app.command("as-built")
    def as_built(
        generated: Path = typer.Argument(..., metavar="GENERATED_DIR", help="A folder written by twin build (the plan)."),
        neighbours: list[Path] = typer.Argument(..., metavar="NEIGHBOURS...", help="Neighbour files or folders of them: lldpd JSON, "
                                                "EOS JSON, ibnetdiscover output; per device, merged, or a mix."),
        output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write work-order.csv, as-built.json and as-built.html (the "
                                              "findings on the floor plan) into this folder (created; nothing else is written)."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
        ignore_speed: bool = typer.Option(False, "--ignore-speed", help="InfiniBand: compare link widths only (ibsim trains every link at SDR)."),
        complete: bool = typer.Option(False, "--complete", help="Also exit 1 when a planned device never reported."),
    ) -> None:
        """Read the cluster's own neighbour tables back and name every cable that differs from the plan.

        Each file's format is found from its content. A per-device file is named after its device
        (leaf-0001.json); a merged file is a JSON object keyed by device. Findings: missing, miscabled
        (where the plug is, where it belongs), swapped (two cables crossed, one finding), unexpected,
        degraded (InfiniBand width or speed), disagree (the two ends report different things), conflict
        (one port, two neighbours); each with its cable id, both ends' labels and the move that fixes it.
        A partial collection is checked for what it covers. Exit 0 when every checked cable is correct,
        1 when something differs, 2 when the plan or a neighbour file cannot be read (the rest is still checked),
        3 when -o cannot be written.

        Example: lldpcli show neighbors -f json > lldp/$(hostname).json   # on every switch and server

        Example: twin as-built generated/meta-24k-roce lldp/ -o /tmp/work-order

        Example: twin as-built generated/lab-ib fabric.ibnetdiscover --json
        """
        code = run_as_built(generated, neighbours, output, as_json, ignore_speed, complete, out, err, print_diags, emit_json)
        raise typer.Exit(code)
