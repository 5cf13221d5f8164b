"""The report's first screen: every verdict (:mod:`twin.analysis.verdicts`), fails first.

One table, ranked by status and severity: the outcome (FAIL, WARN, PASS; report.html colours them), the
check linked to the section that shows it, the measured figure, the limit, and the spec or scenario line
that states the limit. A headline counts them and says what a fail does to the exit code.
"""

from __future__ import annotations

from twin.analysis.verdicts import Verdict, counts, section_id
from twin.emit.markdown import table

TITLE = "Verdicts"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def section(verdicts: list[Verdict], scenario: str | None = None) -> str:
    n = counts(verdicts)
    head = (f"**{n['fail']} fail, {n['warn']} warning(s), {n['pass']} pass** of {len(verdicts)} checks of the design"
            + (f" and the scenario `{scenario}`" if scenario else " (no scenario ran: the twins' checks are not here)") + ".")
    if n["fail"]:
        head += " The build exits 4 on a fail unless `--accept-risks` is given."
    rows = [[v.status.upper(), v.severity, f"[{_cell(v.check)}](#{section_id(v.section)})", _cell(v.value), _cell(v.limit),
             f"`{v.where}`" if v.where else "-"] for v in verdicts]
    return f"## {TITLE}\n\n{head}\n\n" + table(["", "severity", "check", "value", "limit", "stated at"], rows, "llllll")
