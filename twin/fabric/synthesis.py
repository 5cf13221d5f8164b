"""Fabric synthesis: the pass that turns a placed design into the fabric graph.

``synthesize(spec, placement) -> Fabric`` builds one networkx MultiGraph (the contract in
ARCHITECTURE.md) for the spec's family, then proves that it is exactly the spec's
:class:`~twin.fabric.shape.FabricShape`: every consumer that read the shape before the graph existed
(checks, feasibility, placement) saw the fabric that was built.
"""

from __future__ import annotations

from ..place.model import Placement
from ..spec.diagnostics import InfeasibleError
from ..spec.models import Family
from ..spec.resolve import Spec
from . import ai_zone, campus, trees
from .graph import Fabric
from .ports import PortsExhausted
from .shape import mismatches


class ShapeMismatch(AssertionError):
    """The graph differs from the shape every earlier pass read: a bug in a family, never a user error."""


def synthesize(spec: Spec, placement: Placement) -> Fabric:
    family = ai_zone if spec.fabric.family == Family.AI_ZONE else trees
    if spec.campus is not None:  # buildings joined at their ATSW layers (twin.fabric.campus)
        family = campus
    try:
        fabric = family.synthesize(spec, placement)
    except PortsExhausted as e:
        raise InfeasibleError([f"fabric: {e}; the spec's port budget does not fit this switch"]) from None
    wrong = mismatches(spec.shape, fabric)
    if wrong:
        raise ShapeMismatch("; ".join(wrong))
    return fabric
