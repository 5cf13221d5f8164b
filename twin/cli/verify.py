"""``twin verify``: the generated configs in real FRR or OpenSM; ``twin verify --cleanup``: what dead runs left."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Optional

import typer

from twin.exits import FAILED as EXIT_FAILED
from twin.exits import INVALID as EXIT_INVALID


def run_cleanup(as_json: bool, out, err, emit_json) -> int:
    from twin.verify import runs

    try:
        reaped = runs.reap_dead()
    except (OSError, RuntimeError) as e:
        err.print(f"twin verify --cleanup: {e}", style="red", markup=False)
        return EXIT_INVALID
    if as_json:
        emit_json({"status": "ok", "removed": reaped})
    elif not reaped:
        out.print("nothing to clean up: no verify run died leaving something behind", markup=False)
    for r in [] if as_json else reaped:
        out.print(describe(r), markup=False)
    return 0


def describe(r: dict) -> str:
    sysctls = ", ".join(f"{Path(p).parent.parent.name}/{Path(p).name}={v}" for p, v in sorted(r["sysctls"].items()))
    return (f"removed what run {r['run']} left: {r['processes']} process(es), {r['namespaces']} namespace(s), "
            f"{r['workdirs']} work folder(s)" + (f"; sysctls set back: {sysctls}" if sysctls else ""))


def run_verify(folder: Path, slice_: str | None, as_json: bool, timeout: float, bfd: bool | None, out, err, emit_json) -> int:
    from twin.folder import FolderError, printable
    from twin.verify import ib, preflight, roce, runs
    from twin.verify.netns import LabError
    from twin.verify.topology import Topology

    def fail(message: str, code: int, status: str) -> int:
        if as_json:
            emit_json({"site": folder.name, "ok": False, "status": status, "problems": [message]})
        else:
            err.print(message, style="red", markup=False)
        return code

    try:
        zone, buildings = preflight.parse_slice(slice_)
    except ValueError as e:
        return fail(f"--slice {slice_!r}: {e}", EXIT_INVALID, "invalid")
    # the folder is read as untrusted input before anything starts: every name, address and path checked
    routed = roce.is_roce(folder)
    try:
        if routed:
            topo = Topology.load(folder)
            why = preflight.check_roce(topo.bfd if bfd is None else bfd)
        elif (folder / "configs" / "opensm" / "opensm.conf").is_file():
            why = preflight.check_ib()
        else:
            return fail(f"{printable(str(folder))}: no configs/frr/topology.json or configs/opensm/opensm.conf; run twin build first",
                        EXIT_INVALID, "invalid")
    except FolderError as e:
        return fail(printable(str(e), 1000), EXIT_INVALID, "invalid")
    # before anything starts: every program and privilege the run needs (exit 2: this machine, not the design)
    if why:
        return fail(f"twin verify: {why}", EXIT_INVALID, "cannot run here")
    log = (lambda m: None) if as_json else (lambda m: err.print(f"  {m}", markup=False))
    try:
        for r in runs.reap_dead():  # what runs killed before us left (their watchdog died with them)
            log(describe(r))
    except (OSError, RuntimeError) as e:
        return fail(f"twin verify: {e}", EXIT_INVALID, "cannot run here")
    try:
        if routed:
            result = roce.verify(folder, zone=zone, timeout=timeout, bfd=bfd, log=log, buildings=buildings).to_json()
        else:
            result = {"site": folder.name, **ib.route_fabric(folder / "configs" / "opensm", folder / "model" / "topology.net").to_json()}
    except FolderError as e:
        return fail(printable(str(e), 1000), EXIT_INVALID, "invalid")
    except ValueError as e:
        return fail(f"{printable(str(folder))}: {e}", EXIT_INVALID, "invalid")
    except ib.IbError as e:
        return fail(f"{printable(str(folder))}: {e}", EXIT_INVALID, "cannot run here")
    except LabError as e:
        return fail(f"{printable(str(folder))}: the lab did not come up: {printable(str(e), 2000)}", EXIT_FAILED, "failed")
    if as_json:
        emit_json(result)
    else:
        for p in result.get("problems", []):
            err.print(f"  - {p}", style="red", markup=False)
        for k, v in result.items():
            if k not in ("problems", "ok", "site"):
                out.print(f"  {k}: {v}", markup=False)
        tag = "[green]verified[/green]" if result["ok"] else "[red]FAILED[/red]"
        out.print(f"{tag} {result['site']}")
    return 0 if result["ok"] else EXIT_FAILED


def register(app, out, err, print_diags, emit_json) -> None:
    """Add ``twin verify`` to the ``twin`` command."""

    @app.command()
    def verify(
        folder: Optional[Path] = typer.Argument(None, help="A generated site folder (output of twin build)."),
        slice_: Optional[str] = typer.Option(None, "--slice", help="Verify part of a big site: zone:1 (one AI zone with its ATSW uplinks), "
                                             "or on a campus building:1,2 (in each, 4 racks and 2 CTSWs of its first zone, the ATSWs they reach and the campus tier between them)."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
        timeout: float = typer.Option(600.0, "--timeout", help="Seconds to wait for convergence."),
        bfd: Optional[bool] = typer.Option(None, "--bfd/--no-bfd", help="Run bfdd too (default: when the configs use BFD)."),
        cleanup: bool = typer.Option(False, "--cleanup", help="Verify nothing: remove what verify runs that died left behind "
                                     "(FRR daemons, ibsim, namespaces, work folders) and set raised sysctls back."),
    ) -> None:
        """Run the generated configs in real FRR (RoCE) or OpenSM on ibsim (InfiniBand) and check them.

        RoCE (needs root): one namespace per switch, every BGP session established, every rack subnet
        at the predicted ECMP width on every switch, host pings, one CTSW link down. InfiniBand: every HCA
        pair routed, loop-free, by the configured engine. The folder is read as untrusted input first (every
        name a hostname, interface name or address, every file inside the folder); only what the run created
        is removed. A run killed by any signal, SIGKILL included, is cleaned up by its watchdog; failing that,
        by the next run or `twin verify --cleanup`.
        Exit 0 verified, 1 a check failed, 2 a program or privilege the run needs is missing (named with
        its Debian package, checked before anything starts) or the folder is not a usable build.

        Example: sudo twin verify generated/lab-2zone --json

        Example: sudo twin verify generated/lab-campus --slice building:1,2

        Example: sudo twin verify --cleanup
        """
        if cleanup:
            if folder is not None or slice_ is not None:
                err.print("--cleanup takes no FOLDER or --slice: it removes what earlier runs left", style="red", markup=False)
                raise typer.Exit(EXIT_INVALID)
            raise typer.Exit(run_cleanup(as_json, out, err, emit_json))
        if folder is None:
            err.print("give the FOLDER to verify (or --cleanup)", style="red", markup=False)
            raise typer.Exit(EXIT_INVALID)

        def _term(*_a):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, _term)
        raise typer.Exit(run_verify(folder, slice_, as_json, timeout, bfd, out, err, emit_json))
