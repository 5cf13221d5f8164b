"""The design: the compiler's intermediate representation, frozen once the passes have run.

Emitters and the twins read a :class:`Design` and never the YAML. Each pass of
:func:`twin.compiler.pipeline.compile_design` fills one typed field; a field is ``None`` when its pass does not
apply (no addressing or config intent for an InfiniBand fabric) or did not run (``until=``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from twin.compiler.resolve.feasibility import Budget
from twin.compiler.resolve.spec import Spec
from twin.lang.diagnostics import Diagnostic

if TYPE_CHECKING:
    from twin.compiler.address import Addressing
    from twin.compiler.config.intent import Intent
    from twin.compiler.fabric.bom import BomLine
    from twin.compiler.fabric.cabling import CablePlan
    from twin.compiler.fabric.graph import Fabric
    from twin.compiler.place.model import Placement


@dataclass(frozen=True)
class Design:
    spec: Spec  # the validated site, merged catalog, derived counts and the fabric's shape
    budget: Budget  # space, power and cooling per hall and site
    warnings: tuple[Diagnostic, ...] = ()
    placement: Placement | None = None  # every GPU and network rack at hall / row / slot
    fabric: Fabric | None = None  # the graph of NICs, servers, switches and links
    cabling: CablePlan | None = None  # medium and length of every cable
    bom: tuple[BomLine, ...] = ()  # switches, transceivers and cables to order
    addressing: Addressing | None = None  # ASNs and IPs (routed fabrics)
    intent: Intent | None = None  # per-switch configuration intent every config target renders

    @property
    def name(self) -> str:
        return self.spec.name
