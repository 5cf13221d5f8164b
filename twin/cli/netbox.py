"""``twin netbox``: the design in a running NetBox (``push``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Write a design into NetBox (the generated netbox/ folder holds the same objects as bulk-import files).")
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


@app.command()
def push(
    spec: Path = typer.Argument(..., help="Site spec file (YAML)."),
    url: str = typer.Option(..., "--url", help="NetBox address, e.g. http://127.0.0.1:8000"),
    token: str = typer.Option(..., "--token", envvar="NETBOX_TOKEN", help="NetBox API token with write permission (or $NETBOX_TOKEN)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was created, updated and deleted as JSON."),
) -> None:
    """Create or update the site's design in NetBox, idempotently: a second push changes nothing.

    Objects twin writes carry the tag 'twin'; only those are ever changed or deleted. Exit 0 on
    success, 1 when the design is infeasible, 2 on invalid input, an unreachable NetBox or a refused token.

    Example: twin netbox push sites/lab-2zone.yaml --url http://127.0.0.1:8000 --token nbt_abc.def
    """
    from twin.compiler.pipeline import compile_design
    from twin.lang.diagnostics import InfeasibleError, SpecError
    from twin.netbox.push import Pusher, PushError, url_problem

    try:
        import pynetbox  # noqa: F401
    except ImportError:
        err.print("twin netbox push needs pynetbox: pip install 'twin[netbox]' (or pip install pynetbox)", style="red", markup=False)
        raise typer.Exit(2) from None
    if why := url_problem(url):
        err.print(why, style="red", markup=False)
        raise typer.Exit(2)
    try:
        design = compile_design(spec)
    except SpecError as e:
        for d in e.diagnostics:
            err.print(d.format(), markup=False)
        raise typer.Exit(2) from None
    except InfeasibleError as e:
        for line in e.diagnosis:
            err.print(f"{spec}: infeasible: {line}", markup=False)
        raise typer.Exit(1) from None
    log = (lambda _m: None) if as_json else (lambda m: err.print(f"  {m}", markup=False))
    try:
        result = Pusher(design, url, token, log).run()
    except PushError as e:
        if as_json:
            sys.stdout.write(json.dumps({"status": "error", "site": design.name, "url": url, "error": str(e)}, indent=1, sort_keys=True) + "\n")
        else:
            err.print(f"{spec}: {e}", style="red", markup=False)
        raise typer.Exit(2) from None
    if as_json:
        sys.stdout.write(json.dumps({"status": "ok", **result.to_json()}, indent=1, sort_keys=True) + "\n")
        return
    if result.changes:
        out.print(f"pushed {design.name} to {result.url}: {result.written()}", markup=False)
    else:
        out.print(f"{design.name} is up to date in {result.url} ({sum(result.unchanged.values())} objects unchanged)", markup=False)
