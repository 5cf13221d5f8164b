"""A campus's figures per building, counted on the compiled design, and the report's table of them.

One row per building: GPUs and GPU servers (the fabric graph's server nodes), GPU and network racks
(the placement), IT load and facility power (the budget's halls), switches by role (the graph's switch
nodes, which carry their ``building``), the cables inside the building and the links that leave it (the
graph's links, by their ends' buildings), and the capex the building holds alone: its servers at the
chassis price, its switches at their models' prices and its halls' facility at the catalog's price
per W of critical IT load (:mod:`twin.compiler.cost` counts the same three the same way; optics and
cables are priced per medium and stock length in the bill of materials, which is not split by building).
A campus spine stands in one building and counts there.

The figures sum to the campus's: GPUs to ``spec.gpus``, switches to the graph's, cables inside plus the
links between buildings to its cables (a link between two buildings counts once in each building's
"links out" and once in the campus's links between buildings).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from twin.compiler.design import Design
from twin.emit.cost_report import usd
from twin.emit.markdown import table
from twin.lang.units import kw


@dataclass
class Building:
    name: str
    halls: int = 0
    zones: int = 0
    gpus: int = 0
    servers: int = 0
    gpu_racks: int = 0
    network_racks: int = 0
    it_w: float = 0.0
    facility_w: float = 0.0
    switches: Counter = field(default_factory=Counter)  # by role
    cables: int = 0  # both ends in the building
    links_out: int = 0  # one end in the building, the other in another
    capex: float = 0.0  # USD: servers, switches, facility


def figures(d: Design) -> tuple[list[Building], int]:
    """Each building's figures, in building order, and the number of links between buildings."""
    cp, s = d.spec.campus, d.spec
    out = [Building(bp.name, len(bp.halls), len(bp.zones)) for bp in cp.buildings]
    hall_at = {h: bp.index for bp in cp.buildings for h in bp.halls}
    for hb in d.budget.halls:
        b = out[hall_at[hb.name]]
        b.it_w += hb.it_power
        b.facility_w += hb.facility_power
    for hall, hb in zip(s.site.halls, d.budget.halls):
        entry = s.catalog.facility.get(hall.cooling.medium)
        out[hall_at[hall.name]].capex += hb.it_power * (entry.price if entry is not None else 0.0)
    for r in d.placement.racks if d.placement is not None else ():
        b = out[hall_at[r.position.hall]]
        if r.kind == "gpu":
            b.gpu_racks += 1
        else:
            b.network_racks += 1
    g = d.fabric.graph
    roles = set(d.fabric.roles)
    where: dict[str, int] = {}
    models: Counter = Counter()
    for n, a in g._node.items():
        role = a.get("role")
        k = a.get("building", 0)
        where[n] = k
        if role == "server":
            out[k].servers += 1
            out[k].gpus += a.get("gpus", 0)
        elif role in roles:
            out[k].switches[role] += 1
            models[(k, a.get("model"))] += 1
    between = 0
    for lk in d.fabric.cables():
        x, y = where[lk.a], where[lk.b]
        if x == y:
            out[x].cables += 1
        else:
            out[x].links_out += 1
            out[y].links_out += 1
            between += 1
    price = s.chassis.price or 0.0
    for b in out:
        b.capex += b.servers * price
    for (k, model), n in models.items():
        out[k].capex += n * (s.switch(model).price or 0.0)
    return out, between


def section(d: Design) -> str:
    """The table of figures per building (a campus only)."""
    rows, between = figures(d)
    roles = list(d.fabric.roles) + (["cssw"] if any(b.switches.get("cssw") for b in rows) else [])
    body = []
    for b in rows:
        body.append([b.name, b.halls, b.zones, f"{b.gpus:,}", f"{b.gpu_racks:,} / {b.network_racks:,}", kw(b.it_w), kw(b.facility_w),
                     " / ".join(f"{b.switches.get(r, 0):,}" for r in roles), f"{b.cables:,}", f"{b.links_out:,}", usd(b.capex)])
    total = Building("**campus**")
    for b in rows:
        for f in ("halls", "zones", "gpus", "gpu_racks", "network_racks", "it_w", "facility_w", "cables", "capex"):
            setattr(total, f, getattr(total, f) + getattr(b, f))
        total.switches.update(b.switches)
    body.append([total.name, total.halls, total.zones, f"{total.gpus:,}", f"{total.gpu_racks:,} / {total.network_racks:,}", kw(total.it_w),
                 kw(total.facility_w), " / ".join(f"{total.switches.get(r, 0):,}" for r in roles),
                 f"{total.cables:,} (+ {between:,} between buildings)", f"{between:,}", usd(total.capex)])
    return ("\nFigures per building, counted on the compiled design: servers and switches on the fabric graph, racks on the "
            "placement, power on the budget. Capex per building is its servers, switches and facility at the catalog's "
            "prices (optics and cables are in the Cost section for the campus). Cables: both ends in the building; links out: "
            "to other buildings.\n\n"
            + table(["building", "halls", "AI zones", "GPUs", "GPU / network racks", "IT load", "facility", f"switches ({' / '.join(roles)})",
                     "cables", "links out", "capex (servers, switches, facility)"], body, "lrrrrrrrrrr"))
