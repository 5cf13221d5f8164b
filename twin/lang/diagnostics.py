"""Errors and warnings as values with a location, collected and shown together.

Every check returns diagnostics instead of raising, so a user sees all problems of a spec in one run,
each as ``FILE:LINE:COL: field.path: message (expected ...)``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Diagnostic:
    severity: Severity
    file: str
    line: int
    col: int
    path: tuple
    message: str
    expected: str = ""

    @property
    def dotted(self) -> str:
        return dotted(self.path)

    def format(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}"
        field = f" {self.dotted}:" if self.path else ""
        tag = "" if self.severity is Severity.ERROR else " warning:"
        exp = ""
        if self.expected.startswith("did you mean"):  # a suggestion reads as one: "unknown field 'x'; did you mean 'y'?"
            exp = f"; {self.expected}"
        elif self.expected:
            exp = f" (expected {self.expected})"
        return f"{where}:{tag}{field} {self.message}{exp}"

    def to_json(self) -> dict:
        return {
            "severity": self.severity.value,
            "file": self.file,
            "line": self.line,
            "column": self.col,
            "path": self.dotted,
            "message": self.message,
            "expected": self.expected,
        }


def dotted(path: tuple) -> str:
    """``('halls', 0, 'rows')`` -> ``halls[0].rows``."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


class SpecError(Exception):
    """Raised by the API when a spec has errors; carries every diagnostic (warnings included)."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        errs = [d for d in diagnostics if d.severity is Severity.ERROR]
        super().__init__("\n".join(d.format() for d in errs[:20]))

    def __reduce__(self):
        """Pickled with its diagnostics (the build's forked twins hand their exception back as a pickle)."""
        return SpecError, (self.diagnostics,)


class InfeasibleError(Exception):
    """A valid spec that cannot be built as stated (e.g. not enough power); ``diagnosis`` says why."""

    def __init__(self, diagnosis: list[str]):
        self.diagnosis = diagnosis
        super().__init__("\n".join(diagnosis))

    def __reduce__(self):
        return InfeasibleError, (self.diagnosis,)
