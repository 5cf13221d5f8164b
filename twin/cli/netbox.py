"""``twin netbox``: the design in a running NetBox (``push``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from twin.exits import FAILED, INVALID

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Write a design into NetBox (the generated netbox/ folder holds the same objects as bulk-import files).")
err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


@app.command()
def push(
    spec: Path = typer.Argument(..., help="Site spec file (YAML)."),
    url: str = typer.Option(..., "--url", help="NetBox address, e.g. http://127.0.0.1:8000"),
    token_file: Optional[Path] = typer.Option(None, "--token-file", help="A file holding the NetBox API token (one line, "
                                              "mode 600). Without it the token is read from $TWIN_NETBOX_TOKEN (or $NETBOX_TOKEN)."),
    token: Optional[str] = typer.Option(None, "--token", hidden=True, help="Refused: a token on the command line is visible to every user."),
    as_json: bool = typer.Option(False, "--json", help="Print what was created, updated and deleted as JSON."),
) -> None:
    """Create or update the site's design in NetBox, idempotently: a second push changes nothing.

    Objects twin writes carry the tag 'twin'; only those are ever changed or deleted. The API token
    (write permission) comes from $TWIN_NETBOX_TOKEN or --token-file, never the command line; it is never
    printed, nor a password in --url, nor a server's answer with either in it. Exit 0 on success, 1 when
    the design is infeasible, 2 on invalid input, a missing token, an unreachable NetBox, a refused token
    or an answer that is not NetBox's.

    Example: TWIN_NETBOX_TOKEN=$(cat ~/.netbox-token) twin netbox push sites/lab-2zone.yaml --url http://127.0.0.1:8000

    Example: twin netbox push sites/lab-2zone.yaml --url https://netbox.example --token-file ~/.netbox-token --json
    """
    from twin.compiler.pipeline import compile_design
    from twin.compiler.study import floor_needed
    from twin.lang.diagnostics import InfeasibleError, SpecError
    from twin.netbox.access import shown_url
    from twin.netbox.push import Pusher, PushError, load_token, url_problem

    def fail(message: str, code: int = 2) -> None:
        if as_json:
            from twin.cli.envelope import emit

            emit({"status": "error", "url": shown_url(url), "error": message}, command="netbox push")
        else:
            err.print(f"{spec}: {message}", style="red", markup=False)
        raise typer.Exit(code)

    if token is not None:
        fail("--token on the command line is visible to every user of this machine (ps, shell history); put the token in "
             "$TWIN_NETBOX_TOKEN or in a file given with --token-file")
    try:
        import pynetbox  # noqa: F401
    except ImportError:
        fail("twin netbox push needs pynetbox: pip install 'twin[netbox]' (or pip install pynetbox)")
    if why := url_problem(url):
        fail(why)
    try:
        secret, warnings = load_token(token_file)
    except PushError as e:
        fail(str(e))
    for w in warnings:
        err.print(f"warning: {w}", style="yellow", markup=False)
    try:
        design = compile_design(spec)
        floor_needed(design.spec, "twin netbox")  # sites, locations, racks and cable lengths are the floor
    except SpecError as e:
        for d in e.diagnostics:
            err.print(d.format(), markup=False)
        raise typer.Exit(INVALID) from None
    except InfeasibleError as e:
        for line in e.diagnosis:
            err.print(f"{spec}: infeasible: {line}", markup=False)
        raise typer.Exit(FAILED) from None
    log = (lambda _m: None) if as_json else (lambda m: err.print(f"  {m}", markup=False))
    try:
        result = Pusher(design, url, secret, log).run()
    except PushError as e:
        fail(str(e))
    if as_json:
        from twin.cli.envelope import emit

        emit({"status": "ok", **result.to_json()}, command="netbox push")
        return
    if result.changes:
        out.print(f"pushed {design.name} to {result.url}: {result.written()}", markup=False)
    else:
        out.print(f"{design.name} is up to date in {result.url} ({sum(result.unchanged.values())} objects unchanged)", markup=False)
