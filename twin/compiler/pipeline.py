"""The compiler, top to bottom: one function per stage, each a function of what it reads.

``check(path)`` is the front every command shares (``validate`` stops there): the spec is validated,
an ``auto`` GPU power cap is fixed, and the site's space, power and cooling are summed.
``compile_design(path)`` continues with the passes that make the :class:`~twin.compiler.design.Design`::

    placement  = place(spec, budget)                      racks onto hall positions (HiGHS)
    fabric     = synthesize(spec, placement)              the graph, proven equal to spec.shape
    cabling    = cabling.plan(spec, placement, fabric)    route, medium and stock length per cable
    bom        = bom.bill(spec, fabric, cabling)          switches, optics, cables; the budget takes its network watts
    addressing = address.plan(spec, fabric)               ASNs and IPs (routed fabrics)
    intent     = build_intent(spec, fabric, addressing, cabling)   per-switch config intent (routed fabrics)

Emitters (``twin.emit``) and the twins (``twin.twins``) read the Design and nothing else.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from twin.compiler.design import Design
from twin.compiler.place import powercap
from twin.compiler.resolve import feasibility
from twin.compiler.resolve.feasibility import Budget
from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.validate import validate_file
from twin.lang.diagnostics import Diagnostic, InfeasibleError, Severity, SpecError


@dataclass(frozen=True)
class Checked:
    """The front of the pipeline: the spec (None when invalid), its diagnostics and its budget."""

    path: str
    spec: Spec | None
    diagnostics: tuple[Diagnostic, ...]
    budget: Budget | None

    @property
    def status(self) -> str:
        if self.spec is None:
            return "invalid"
        return "infeasible" if self.budget is not None and self.budget.problems else "ok"

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity is Severity.WARNING)

    def infeasible(self) -> InfeasibleError:
        spec, budget = self.spec, self.budget
        largest = budget.largest_fit_racks
        return InfeasibleError(budget.problems + [
            f"largest configuration that fits: {largest:,} GPU racks = {largest * spec.rack.gpus:,} GPUs"
            f" (asked for {spec.racks:,} racks = {spec.gpus:,} GPUs)"
        ])


def check(path: str | Path) -> Checked:
    """Validate, fix an ``auto`` GPU power cap, and budget space, power and cooling."""
    spec, diags = validate_file(path)
    if spec is None:
        return Checked(str(path), None, tuple(diags), None)
    if spec.site.fabric_only:  # a study of the fabric alone: no floor to budget (twin.compiler.study)
        return Checked(str(path), spec, tuple(diags), None)
    spec = powercap.resolve(spec)  # placement.gpu_power_cap: auto fixes the cap before any sums
    return Checked(str(path), spec, tuple(diags), feasibility.check(spec))


def bill_and_budget(spec, d: Design) -> dict:
    """The BOM, and the budget reconciled with it (:mod:`twin.compiler.fabric.power_budget`)."""
    from twin.compiler.fabric import bom
    from twin.compiler.fabric.power_budget import reconcile

    lines = bom.bill(spec, d.fabric, d.cabling)
    return {"bom": lines, "budget": reconcile(spec, d.budget, d.fabric, lines)}


def compile_design(path: str | Path, progress: Callable[[str], None] | None = None, until: str | None = None,
                   placement_method: str | None = None, on_pass: Callable[[str, Design], None] | None = None,
                   checked: Checked | None = None) -> Design:
    """Every pass on the spec at ``path`` (up to and including ``until``); raise SpecError or
    InfeasibleError on failure. ``placement_method`` overrides the spec's (``naive`` pins the
    reading-order fill, for tests and benchmarks about later passes). ``on_pass(name, design)`` is
    told of each pass as it ends, with the design so far (the build starts the twins once what they
    read is compiled). ``checked``: :func:`check` of ``path`` when the caller has it already (`twin
    validate` checks every spec first), so the file is read and validated once."""
    if progress:
        progress("validate and budget")
    checked = checked if checked is not None else check(path)
    if checked.spec is None:
        raise SpecError(list(checked.diagnostics))
    if checked.status == "infeasible":
        raise checked.infeasible()
    # the passes load here: `twin validate` stops at check() and needs none of them (networkx among them)
    from twin.compiler import address
    from twin.compiler.config.intent import build_intent
    from twin.compiler.fabric import cabling
    from twin.compiler.fabric.synthesis import synthesize
    from twin.compiler.place import naive, optimize

    spec, budget = checked.spec, checked.budget
    design = Design(spec=spec, budget=budget, warnings=checked.warnings)
    placer = naive.place if placement_method == "naive" else optimize.place
    steps: list[tuple[str, Callable[[Design], dict]]] = [
        ("placement", lambda d: {"placement": placer(spec, budget)}),
        ("fabric", lambda d: {"fabric": synthesize(spec, d.placement)}),
        ("cabling", lambda d: {"cabling": cabling.plan(spec, d.placement, d.fabric)}),
        ("bom", lambda d: bill_and_budget(spec, d)),  # the budget takes the bill's network watts, optics included
        ("addressing", lambda d: {"addressing": address.plan(spec, d.fabric)}),
        ("intent", lambda d: {"intent": build_intent(spec, d.fabric, d.addressing, d.cabling)}),
    ]
    if spec.site.fabric_only:  # the fabric alone: racks standing nowhere, links without lengths (twin.compiler.study)
        from twin.compiler import study
        from twin.compiler.fabric import bom

        steps[0] = ("placement", lambda d: {"placement": study.unplaced(spec)})
        steps[1] = ("fabric", lambda d: {"fabric": study.unmounted(synthesize(spec, d.placement))})
        steps[2] = ("cabling", lambda d: {"cabling": study.links(spec, d.fabric)})
        steps[3] = ("bom", lambda d: {"bom": bom.bill(spec, d.fabric, d.cabling)})
        if study.skipped_configs(spec):
            steps.pop()  # no config intent: a RoCE port's buffer headroom needs its cable's length
    for name, step in steps:
        if progress:
            progress(name)
        design = replace(design, **_paused_gc(step, design) if name in NO_CYCLES else step(design))
        if on_pass:
            on_pass(name, design)
        if name == until:
            break
    return design


# Passes that build hundreds of thousands of objects and no reference cycles (graph, plans, intent): the
# cyclic collector would only rescan everything built so far, again and again as it grows (half the
# fabric pass of meta-campus-100k). Placement keeps it: a Pyomo model is cyclic garbage once solved.
NO_CYCLES = frozenset({"fabric", "cabling", "addressing", "intent"})


def _paused_gc(step: Callable[[Design], dict], design: Design) -> dict:
    """``step`` with the cyclic collector paused; what it built then goes straight to the oldest
    generation (freeze, unfreeze), where the young collection that would follow it (0.3 s after the
    fabric of meta-campus-100k: every object of the graph, all alive) would have put it anyway.
    Skipped while something else holds objects frozen (:mod:`twin.forked`): unfreezing is theirs."""
    was = gc.isenabled()
    gc.disable()
    try:
        return step(design)
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was:
            gc.enable()
