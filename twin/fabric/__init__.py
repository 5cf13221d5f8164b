"""Fabric synthesis: the pass that turns a placed design into the fabric graph.

``synthesize(design) -> Fabric`` builds one networkx MultiGraph (the contract in ARCHITECTURE.md)
for the spec's family; every emitter and the twin read who-connects-to-whom from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..spec.diagnostics import InfeasibleError
from ..spec.models import Family
from . import ai_zone, trees
from .graph import Fabric, Link
from .ports import PortsExhausted

if TYPE_CHECKING:
    from ..design import Design

__all__ = ["Fabric", "Link", "synthesize"]


def synthesize(design: Design) -> Fabric:
    family = ai_zone if design.spec.fabric.family == Family.AI_ZONE else trees
    try:
        return family.synthesize(design)
    except PortsExhausted as e:
        raise InfeasibleError([f"fabric: {e}; the spec's port budget does not fit this switch"]) from None
