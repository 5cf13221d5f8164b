"""The bill of materials, counted from the fabric graph and the cable plan (never from formulas).

Counting convention (also printed in the report):

- switches: one line per model, every switch node of the graph (rack switches included);
- pluggable optics (``kind: optic``): two transceivers per link, one per end, plus one fiber cable of
  the link's stock length;
- DAC, AEC and AOC are cable assemblies with their ends built in: one item per link, no transceivers;
- host edges (server to NIC, inside the server) are not cables and are not counted; NICs are part of
  the server;
- power: switch typical power from the catalog plus every powered cable end (optic, AEC, AOC).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..design import Design



@dataclass(frozen=True)
class BomLine:
    category: str  # "switch", "transceiver", "cable"
    item: str  # catalog name
    description: str
    length_m: float | None
    quantity: int
    unit_power_w: float
    source: str

    @property
    def total_power_w(self) -> float:
        return self.quantity * self.unit_power_w


def bill(design: Design) -> list[BomLine]:
    spec = design.spec
    fabric = design.get("fabric")
    plan = design.get("cabling")
    lines: list[BomLine] = []
    roles = set(fabric.roles)
    models = Counter(d["model"] for _, d in fabric.graph.nodes(data=True) if d["role"] in roles)
    for name in sorted(models):
        m = spec.switch(name)
        desc = m.description or f"{m.vendor} {name}"
        lines.append(BomLine("switch", name, desc, None, models[name], m.power, m.source))
    for i, name in enumerate(plan.media):
        sel = plan.medium == i
        n = int(sel.sum())
        if not n:
            continue
        med = spec.catalog.media[name]
        lengths, counts = np.unique(plan.stock[sel], return_counts=True)
        if med.pluggable:
            lines.append(BomLine("transceiver", name, med.description or f"{name} ({med.connector})", None, 2 * n, med.power_per_end, med.source))
            for length, c in zip(lengths.tolist(), counts.tolist()):
                lines.append(BomLine("cable", f"{med.fiber}-{med.connector or 'fiber'}".lower().replace(" ", "-"), f"{med.fiber.upper()} fiber {med.connector} for {name}", length, c, 0.0, med.source))
        else:
            for length, c in zip(lengths.tolist(), counts.tolist()):
                lines.append(BomLine("cable", name, med.description or name, length, c, 2 * med.power_per_end, med.source))
    return _merge(lines)


def _merge(lines: list[BomLine]) -> list[BomLine]:
    """Fiber of the same type and length ordered for two optic types is one line."""
    out: dict[tuple, BomLine] = {}
    for ln in lines:
        key = (ln.category, ln.item, ln.length_m)
        if key in out:
            o = out[key]
            desc = o.description if ln.description == o.description else o.description.split(" for ")[0]
            out[key] = BomLine(o.category, o.item, desc, o.length_m, o.quantity + ln.quantity, o.unit_power_w, o.source)
        else:
            out[key] = ln
    order = {"switch": 0, "transceiver": 1, "cable": 2}
    return sorted(out.values(), key=lambda ln: (order[ln.category], ln.item, ln.length_m or 0.0))


def network_power(lines: list[BomLine]) -> dict[str, float]:
    """Watts by category and in total (switches + powered cable ends)."""
    out = {c: sum(ln.total_power_w for ln in lines if ln.category == c) for c in ("switch", "transceiver", "cable")}
    out["total"] = sum(out.values())
    return out
