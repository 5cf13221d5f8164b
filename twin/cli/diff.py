"""``twin diff``: the review of a change, between specs and built folders (folders read as untrusted input)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from twin.exits import INVALID as EXIT_INVALID
from twin.exits import WRITE as EXIT_WRITE
from twin.lang.diagnostics import InfeasibleError, SpecError


def run_diff(old: Path, new: Path | None, against: Path | None, as_json: bool, html: Path | None, scenario: Path | None,
             out, err, print_diags, emit_json) -> int:
    from twin.cli.progress import steps

    with steps(err, not as_json, "load the compiler"):  # the imports take a second or more: say so
        from twin.compiler.resolve.validate import validate_file
        from twin.diff.compare import compare, side
        from twin.diff.report import page, terminal
        from twin.folder import FolderError, printable

    def fail(message: str) -> int:
        from twin.cli.envelope import invalid

        return invalid(message, as_json, emit_json, err)

    if new is not None and against is not None:
        return fail("give OLD NEW, or SPEC --against DIR, not both")
    if new is None:  # the original form: the spec against the folder it would replace
        spec, new = old, old
        if against is None:
            parsed, diags = validate_file(spec)
            if parsed is None:
                print_diags(diags)
                return EXIT_INVALID
            against = Path("generated") / parsed.name
        old = against
    for t in (old, new):
        if not t.exists():
            return fail(f"{printable(str(t))}: no such spec file or build folder")
    try:
        with steps(err, not as_json, "old side") as say:
            res = compare(side(old, scenario, lambda m: say(f"old {m}")), side(new, scenario, lambda m: say(f"new {m}")), say)
    except FolderError as e:
        return fail(f"{printable(str(e), 1000)}")
    except SpecError as e:
        print_diags(e.diagnostics)
        return EXIT_INVALID
    except InfeasibleError as e:
        for line in e.diagnosis:
            err.print(f"infeasible: {line}", markup=False)
        return EXIT_INVALID
    if html is not None:
        try:
            html.parent.mkdir(parents=True, exist_ok=True)
            html.write_bytes(page(res))
        except OSError as e:  # /dev/full, a folder that cannot be made, a read-only disk
            why = f"--html {printable(str(html))}: not written ({e.strerror or e})"
            if as_json:
                emit_json({"status": "not written", "error": why, "exit": EXIT_WRITE})
            else:
                err.print(why, style="red", markup=False)
            return EXIT_WRITE
    if as_json:
        emit_json({**res.to_json(), "status": "same" if res.empty else "changed"})
    else:
        terminal(res, out)
        if html is not None:
            out.print(f"wrote {html}", markup=False)
    return 0 if res.empty else 1


def register(app, out, err, print_diags, emit_json) -> None:
    """Add ``twin diff`` to the ``twin`` command."""

    @app.command()
    def diff(
        old: Path = typer.Argument(..., help="OLD: a site spec (YAML) or a built folder. Alone (or with --against), the edited spec."),
        new: Optional[Path] = typer.Argument(None, help="NEW: a site spec or a built folder."),
        against: Optional[Path] = typer.Option(None, "--against", help="With one SPEC: the build folder it would replace (default: generated/<site>)."),
        as_json: bool = typer.Option(False, "--json", help="Print the review as JSON."),
        html: Optional[Path] = typer.Option(None, "--html", help="Also write the review as a self-contained page to this file."),
        scenarios: Optional[List[Path]] = typer.Option(None, "--scenario", "-s", metavar="FILE",
                                                       help="Run this scenario with every spec side, like `twin build --scenario` "
                                                       "(one; a second is refused, exit 2)."),
    ) -> None:
        """Review what a change does: figures that moved (GPUs, switches per tier, optics and cable km, power
        and headroom per level, placement objective and gap, ECMP widths, cost, twin figures), configs changed
        per role with one representative diff each, and the artifacts that change. Nothing is written (but --html).

        A built folder is read as untrusted input: its manifest must be twin's, every path in it stays inside
        the folder, every file it lists is there with the recorded size and sha256 when read, and review.json
        and design.json are strict JSON of the expected types; anything else is one located line, exit 2.

        Exit 0 when nothing changes, 1 when something does (like `diff`), 2 on invalid input.

        Example: twin diff sites/lab-2zone.yaml edited/lab-2zone.yaml --html /tmp/review.html

        Example: twin diff generated/lab-2zone sites/lab-2zone.yaml      (a built folder against a spec)

        Example: twin diff sites/lab-2zone.yaml --against generated/lab-2zone
        """
        from twin.cli.simulate import one_scenario

        try:
            scenario = one_scenario(scenarios, as_json, err, emit_json)
        except ValueError:
            raise typer.Exit(EXIT_INVALID) from None
        raise typer.Exit(run_diff(old, new, against, as_json, html, scenario, out, err, print_diags, emit_json))
