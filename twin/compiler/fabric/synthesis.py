"""Fabric synthesis: the pass that turns a placed design into the fabric graph.

``synthesize(spec, placement) -> Fabric`` builds one networkx MultiGraph (the contract in
ARCHITECTURE.md) for the spec's family (its layout's module in ``SYNTHESIS``), then proves that it is exactly the spec's
:class:`~twin.compiler.resolve.shape.FabricShape`: every consumer that read the shape before the graph existed
(checks, feasibility, placement) saw the fabric that was built.
"""

from __future__ import annotations

from collections import Counter
from operator import attrgetter, methodcaller

from twin.compiler.fabric import ai_zone, campus, trees, units
from twin.compiler.fabric.graph import Fabric
from twin.compiler.fabric.ports import PortsExhausted
from twin.compiler.place.model import Placement
from twin.compiler.resolve.shape import FabricShape
from twin.compiler.resolve.spec import Spec
from twin.lang.diagnostics import InfeasibleError
from twin.lang.site.families import AI_ZONE_LAYOUT, CLOS_LAYOUT, UNIT_LAYOUT


class ShapeMismatch(AssertionError):
    """The graph differs from the shape every earlier pass read: a bug in a family, never a user error."""


# The module that builds each layout (twin/lang/site/families.py): ``synthesize(spec, placement) -> Fabric``
SYNTHESIS = {AI_ZONE_LAYOUT: ai_zone, CLOS_LAYOUT: trees, UNIT_LAYOUT: units}


def synthesize(spec: Spec, placement: Placement) -> Fabric:
    builder = SYNTHESIS[spec.family.layout]
    if spec.campus is not None:  # buildings joined at their ATSW layers (twin.compiler.fabric.campus)
        builder = campus
    try:
        fabric = builder.synthesize(spec, placement)
    except PortsExhausted as e:
        raise InfeasibleError([f"fabric: {e}; the spec's port budget does not fit this switch"]) from None
    wrong = mismatches(spec.shape, fabric)
    if wrong:
        raise ShapeMismatch("; ".join(wrong))
    return fabric


# ---------------------------------------------------------------- the contract with the graph


def mismatches(shape: FabricShape, fabric: Fabric) -> list[str]:
    """Where the built graph differs from the shape (empty when the graph is exactly the shape)."""
    out = []
    # counted in C (map over the attribute dicts, zip over the link fields): 120K nodes, 340K links at 100K GPUs
    counts = Counter(map(methodcaller("get", "role"), fabric.graph._node.values()))
    for t in shape.tiers:
        if counts.get(t.role, 0) != t.count:
            out.append(f"{t.role}: the graph has {counts.get(t.role, 0)} switches, the shape {t.count}")
    by_kind = Counter(zip(map(attrgetter("kind"), fabric.links), map(attrgetter("tier"), fabric.links)))
    links = {tier: n for (kind, tier), n in by_kind.items() if kind == "link"}
    for b in shape.boundaries:
        if links.get(b.name, 0) != b.links:
            out.append(f"{b.name}: the graph has {links.get(b.name, 0)} links, the shape {b.links}")
    extra = sorted(set(links) - set(shape.boundary_names))
    if extra:
        out.append(f"the graph has link tiers the shape does not: {', '.join(extra)}")
    return out
