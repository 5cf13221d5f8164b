"""One variant, as a Dask worker runs it: compile the site, run the scenario's twins, collect figures.

The task is a plain function of plain data (the variant's site and scenario as YAML text), so any
worker can run it, on this machine or on a cluster that shares no files with the client: the texts
go to a private temporary folder and every message names the variant's file as the client wrote it
(``variants/003/site.yaml``). Nothing escapes as an exception: a variant that fails validation, does
not fit or breaks in a twin comes back as a result with its status and error.

>>> r = evaluate({"site_text": "name: x\\n", "site_name": "variants/001/site.yaml"})
>>> r["status"], r["error"].split(":")[0]
('invalid', 'variants/001/site.yaml')
"""

from __future__ import annotations

import math
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from twin.analysis.figures import build_figures, sim_figures
from twin.analysis.registry import Inputs
from twin.lang.diagnostics import InfeasibleError, Severity, SpecError

MAX_MESSAGES = 5


def peak_rss_bytes() -> int:
    """Peak resident memory of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _messages(diags, names: dict[str, str]) -> str:
    errors = [d for d in diags if d.severity is Severity.ERROR]
    out = []
    for d in errors[:MAX_MESSAGES]:
        text = d.format()
        for tmp, shown in names.items():
            text = text.replace(tmp, shown)
        out.append(text)
    if len(errors) > MAX_MESSAGES:
        out.append(f"... and {len(errors) - MAX_MESSAGES} more")
    return "; ".join(out)


def evaluate(payload: dict[str, Any]) -> dict[str, Any]:
    """Build one variant and run its twins; ``{"status", "error", "figures", "seconds"}``.

    ``payload``: ``site_text``, ``site_name``, and optionally ``scenario_text``, ``scenario_name``,
    ``job`` (1-based), ``scheme``, ``wanted`` (path figures). Status is ``ok``, ``invalid`` (the spec or
    the scenario), ``infeasible`` (a valid design that does not fit) or ``error`` (a twin failed).
    """
    from twin.compiler.pipeline import compile_design
    from twin.compiler.study import floor_needed
    from twin.lang.scenario.models import parse_scenario
    from twin.twins.run import simulate

    t0 = time.perf_counter()
    wanted = list(payload.get("wanted") or [])
    result: dict[str, Any] = {"status": "ok", "error": "", "figures": {}}
    with tempfile.TemporaryDirectory(prefix="twin-sweep-") as tmp:
        site = Path(tmp) / "site.yaml"
        site.write_text(payload["site_text"], encoding="utf-8")
        names = {str(site): payload.get("site_name", "site.yaml")}
        try:
            design = compile_design(site, until="bom")
            floor_needed(design.spec, "a sweep")  # its figures read the budget, the cost and the floor
            inputs = Inputs(design, job=int(payload.get("job") or 1), scheme=payload.get("scheme"))
            figs = build_figures(inputs, wanted)
            result["figures"] = figs
            text = payload.get("scenario_text")
            if text:
                shown = payload.get("scenario_name", "scenario.yaml")
                scn, src = parse_scenario(text, shown)
                inputs.sim = simulate(design, scn, src).data
                figs.update(sim_figures(inputs, wanted))
        except SpecError as e:
            result.update(status="invalid", error=_messages(e.diagnostics, names))
        except InfeasibleError as e:
            result.update(status="infeasible", error="does not fit: " + "; ".join(e.diagnosis[:MAX_MESSAGES]))
        except Exception as e:  # a twin's failure is this variant's row, never the end of the sweep
            msg = str(e)
            for tmp_name, shown in names.items():
                msg = msg.replace(tmp_name, shown)
            result.update(status="error", error=f"{type(e).__name__}: {msg}")
    result["figures"] = {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                         for k, v in result["figures"].items() if v is not None and not (isinstance(v, float) and math.isnan(v))}
    result["seconds"] = time.perf_counter() - t0
    return result
