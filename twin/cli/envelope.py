"""One JSON envelope for every command's ``--json``: ``{tool, version, command, status, units, risks, result}``.

``status`` is the command's one word (ok, fail, invalid, infeasible, changed, ...), ``risks`` the
verdicts (:mod:`twin.analysis.verdicts`; empty where a command makes none), ``result`` the command's own
document, and ``units`` says once what unit a bare number is in: SI throughout, unless its field names
another (``peak_W``, ``step_s``, ``speed_bps``) or its figure carries a ``unit``. The schema is
``schemas/twin-output.schema.json`` (:class:`twin.twins.results.Envelope`).
"""

from __future__ import annotations

import json
import sys

from twin.exits import INVALID
from twin.version import __version__

CURRENT = {"command": ""}  # the sub-command this process runs, set by the root callback (twin/cli/app.py)


def command_name() -> str:
    """The sub-command being run, as typed after ``twin`` (``build``, ``netbox``)."""
    return CURRENT["command"]


def wrap(result: dict, status: str | None = None, risks: list[dict] | None = None, command: str | None = None) -> dict:
    """The envelope round ``result``: its ``status`` and ``risks`` (when it has them) lifted to the top."""
    from twin.twins.results import UNITS  # pydantic: loaded when a document is printed, not for --help

    result = dict(result)
    st = status or result.pop("status", None) or "ok"
    result.pop("status", None)
    rs = risks if risks is not None else result.pop("risks", None) or []
    result.pop("risks", None)
    return {"tool": "twin", "version": __version__, "command": command or command_name(), "status": st, "units": UNITS,
            "risks": rs, "result": result}


def emit(result: dict, status: str | None = None, risks: list[dict] | None = None, command: str | None = None) -> None:
    sys.stdout.write(json.dumps(wrap(result, status, risks, command), indent=1, sort_keys=True) + "\n")


def invalid(message: str, as_json: bool, emit_json, err) -> int:
    """Bad input said once: in the envelope (``status: invalid``) with ``--json``, else one red line on
    stderr; the exit code (2) to return."""
    if as_json:
        emit_json({"status": "invalid", "error": message})
    else:
        err.print(message, style="red", markup=False)
    return INVALID
