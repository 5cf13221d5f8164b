"""The compiler passes in order: validate -> feasibility -> (placement, fabric, addressing) -> Design.

Each pass is a function of the previous stages returning a new value; nothing is mutated. Passes added
by later work register in :data:`PASSES` with the name under which the Design exposes their result.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import address, fabric, feasibility
from .design import Design
from .fabric import cabling
from .place import optimize, powercap
from .spec.diagnostics import InfeasibleError, Severity, SpecError
from .spec.validate import validate_file

# (name, function(design_so_far) -> result). Order matters: later passes read earlier results.
PASSES: list[tuple[str, Callable[[Design], Any]]] = [("placement", optimize.place), ("fabric", fabric.synthesize), ("cabling", cabling.plan), ("addressing", address.plan)]


def compile_design(path: str | Path, progress: Callable[[str], None] | None = None) -> Design:
    """Run every pass on the spec at ``path``; raise SpecError / InfeasibleError on failure."""
    spec, diags = validate_file(path)
    if spec is None:
        raise SpecError(diags)
    warnings = tuple(d for d in diags if d.severity is Severity.WARNING)
    spec = powercap.resolve(spec)  # placement.gpu_power_cap: auto fixes the cap before any sums
    if progress:
        progress("feasibility")
    budget = feasibility.check(spec)
    if not budget.feasible:
        largest = budget.largest_fit_racks
        raise InfeasibleError(
            budget.problems
            + [
                f"largest configuration that fits: {largest:,} GPU racks = {largest * spec.rack.gpus:,} GPUs"
                f" (asked for {spec.racks:,} racks = {spec.gpus:,} GPUs)"
            ]
        )
    design = Design(spec=spec, budget=budget, warnings=warnings)
    for name, fn in PASSES:
        if progress:
            progress(name)
        result = fn(design)
        design = Design(spec=spec, budget=budget, warnings=warnings, passes={**design.passes, name: result})
    return design
