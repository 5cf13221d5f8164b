"""The design: the compiler's intermediate representation, frozen once the passes have run.

Emitters and the twin read a :class:`Design` and never the YAML. Each pass adds one field; a field is
``None`` when its pass does not apply (for example no addressing for an InfiniBand fabric).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .feasibility import Budget
from .spec.diagnostics import Diagnostic
from .spec.resolve import Spec


@dataclass(frozen=True)
class Design:
    spec: Spec
    budget: Budget
    warnings: tuple[Diagnostic, ...] = ()
    passes: dict[str, Any] = field(default_factory=dict)  # later passes: placement, fabric, addressing

    @property
    def name(self) -> str:
        return self.spec.name

    def get(self, name: str) -> Any:
        return self.passes.get(name)

    # the passes every caller uses, as attributes: ``twin.load(path).fabric.graph``
    @property
    def placement(self) -> Any:
        return self.passes.get("placement")

    @property
    def fabric(self) -> Any:
        return self.passes.get("fabric")

    @property
    def cabling(self) -> Any:
        return self.passes.get("cabling")

    @property
    def addressing(self) -> Any:
        return self.passes.get("addressing")
