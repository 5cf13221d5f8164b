"""``twin schema``: the site language's JSON Schema and its Markdown reference, written, checked or printed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from twin.cli.app import EXIT_INVALID
from twin.exits import FAILED


def register(app, out, err, print_diags, emit_json) -> None:
    """Add ``twin schema`` to the ``twin`` command."""

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
        if target.is_dir():
            err.print(f"-o {target}: a folder; give the schema file's path (expected -o {target / 'twin-site.schema.json'})",
                      style="red", markup=False)
            raise typer.Exit(EXIT_INVALID)
        files = schema_files(target)
        if check:
            stale = stale_files(files)
            if as_json:
                emit_json({"status": "stale" if stale else "ok",
                            "files": {str(p): "stale" if p in stale else "current" for p in files}})
            else:
                again = "twin schema" + (f" -o {output}" if output else "")
                for p in stale:
                    err.print(f"{p} is stale; run `{again}`", style="red", markup=False)
                if not stale:
                    out.print(f"schema and reference are up to date ({target.parent})", markup=False)
            if stale:
                raise typer.Exit(FAILED)
            return
        for p, text in files.items():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
            if not as_json:
                out.print(f"wrote {p}", markup=False)
        if as_json:
            emit_json({"status": "written", "files": {str(p): "written" for p in files}})
