"""``twin upgrade``: rewrite site, scenario and sweep files written for an older language version
(twin/lang/upgrade.py) on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from twin.exits import FAILED as EXIT_STALE
from twin.exits import INVALID as EXIT_INVALID


def register(app, out, err, print_diags, emit_json) -> None:
    """Add ``twin upgrade`` to the ``twin`` command (kept here so twin/cli/app.py stays a table of verbs)."""

    @app.command("upgrade")
    def upgrade(
        files: List[Path] = typer.Argument(..., help="Site, scenario or sweep files (YAML), each rewritten in place.", metavar="FILE..."),
        check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 if a file is of an older version."),
        as_json: bool = typer.Option(False, "--json", help="Print what changed in each file as JSON."),
    ) -> None:
        """Rewrite site, scenario and sweep files written for an older version of their language as the
        current version reads them: the values the older version took in the file's place (a catalog switch's
        config: before site language version 2) and version: are written in; comments, order and layout stay
        as they are. A file already current is left alone.

        A file that does not parse, is of no twin language or states a version newer than this twin knows is
        a located error (exit 2) and is never rewritten; the other files are still upgraded. The languages'
        changelog is in the documentation (docs/reference/languages.md).

        Example: twin upgrade sites/my-site.yaml

        Example: twin upgrade --check sites/*.yaml scenarios/*.yaml
        """
        from twin.lang.diagnostics import SpecError
        from twin.lang.upgrade import describe, upgrade_file
        from twin.lang.versions import CURRENT

        rows, bad, stale = [], [], False
        for f in files:
            try:
                up = upgrade_file(f, write=not check)
            except SpecError as e:
                bad += e.diagnostics
                rows.append({"file": str(f), "status": "invalid", "errors": [d.format() for d in e.diagnostics]})
                continue
            stale |= up.changed
            rows.append({"file": str(f), "language": up.language, "version": up.version, "current": CURRENT[up.language],
                         "status": ("stale" if check else "upgraded") if up.changed else "current",
                         "edits": [{"path": ".".join(map(str, e.path)) + "." + e.field, "value": e.value, "why": e.why} for e in up.edits]})
            if not as_json:
                for line in describe(up, str(f)):
                    out.print(line, markup=False, emoji=False)
        code = EXIT_INVALID if bad else EXIT_STALE if check and stale else 0
        if as_json:
            emit_json({"files": rows}, "invalid" if bad else "stale" if check and stale else "upgraded" if stale else "current")
        else:
            print_diags(bad)
        raise typer.Exit(code)
