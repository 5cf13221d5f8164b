"""Per-row power and cooling limits of a hall, in normal operation and in each failure state.

Every limit is linear in the row loads (W of IT load per row): ``sum(coef * load[row]) <= capacity``.
Writing them all in one shape lets the optimiser, the diagnosis and the report share one definition,
so "fits" means the same thing everywhere.

Power chain model (assumed; the spec language names only the ratings):

- **2N**: every rack is dual-corded, half its load on the row's A busway and half on B. Losing feed A
  moves every row's load onto its B busway, so a row may carry at most one busway's derated rating.
- **N+1 block-redundant** (catcher): ``blocks`` UPS blocks incl. one reserve; rows are fed
  round-robin from the ``blocks - 1`` active blocks (both busways of a row from the same block). When
  an active block fails, the reserve picks up its whole load, so each active block carries at most one
  block rating; each busway carries half its row in every state.

Cooling is heat rejection for the whole IT load of a row (``capacity_per_row``) or of a set of rows
(``zones``); both apply when both are given. The utility limit of a hall covers IT load x PUE.

Liquid cooling (a hall with ``cdus``): the GPU racks give ``liquid_share`` of their power to the coolant,
so the air limits above carry the IT load less that share of the GPU racks' load, each row's in-row CDUs
carry that share in normal operation and after the loss of one CDU or pump (``cdu``), and the hall's
facility water carries it for all rows (``facility-water``); see :mod:`twin.compiler.resolve.liquid`.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.compiler.resolve.liquid import facility_heat, unit_states
from twin.lang.site.models import Hall, Redundancy


@dataclass(frozen=True)
class Limit:
    """One capacity: ``sum(coef * load[row] + gpu_coef * gpu_load[row] for row in rows) <= capacity``
    (loads in W of IT; ``gpu_load`` is the GPU racks' part of a row's load)."""

    kind: str  # busway | block | cooling-row | cooling-zone | utility | cdu | facility-water
    name: str  # e.g. "row 3 busway B", "block 2 (reserve)", "cooling zone cz1"
    state: str  # normal | feed A lost | feed B lost | block k lost
    rows: tuple[int, ...]
    coef: float
    capacity: float  # W
    rating: str  # how the capacity was derived, for messages
    gpu_coef: float = 0.0

    def load(self, row_load: dict[int, float], gpu_load: dict[int, float] | None = None) -> float:
        out = self.coef * sum(row_load.get(r, 0.0) for r in self.rows)
        if self.gpu_coef:
            out += self.gpu_coef * sum((gpu_load or row_load).get(r, 0.0) for r in self.rows)
        return out

    @property
    def per_gpu_watt(self) -> float:
        """What one W of GPU rack load counts against this limit."""
        return self.coef + self.gpu_coef


def states(h: Hall) -> list[str]:
    if h.power.redundancy == Redundancy.TWO_N:
        return ["normal", "feed A lost", "feed B lost"]
    return ["normal"] + [f"block {k} lost" for k in range(1, h.power.blocks)]


def row_block(h: Hall, row: int) -> int:
    """1-based active UPS block feeding ``row`` (N+1: round-robin over the active blocks)."""
    return (row - 1) % (h.power.blocks - 1) + 1


def hall_limits(h: Hall, pue: float, liquid_share: float = 0.0) -> list[Limit]:
    p = h.power
    bw = p.busway_rating * p.derating
    bw_txt = f"busway {p.busway_rating / 1e3:g} kW x {p.derating:g}"
    out: list[Limit] = []
    rows = range(1, h.rows + 1)
    if p.redundancy == Redundancy.TWO_N:
        for r in rows:
            for feed in "AB":
                out.append(Limit("busway", f"row {r} busway {feed}", "normal", (r,), 0.5, bw, bw_txt))
            for lost, alive in (("A", "B"), ("B", "A")):
                out.append(Limit("busway", f"row {r} busway {alive}", f"feed {lost} lost", (r,), 1.0, bw, bw_txt))
    else:
        blk = (p.block_rating or 0.0) * p.derating
        blk_txt = f"UPS block {(p.block_rating or 0.0) / 1e3:g} kW x {p.derating:g}"
        for r in rows:
            for feed in "AB":
                out.append(Limit("busway", f"row {r} busway {feed}", "normal", (r,), 0.5, bw, bw_txt))
        for k in range(1, p.blocks):
            fed = tuple(r for r in rows if row_block(h, r) == k)
            out.append(Limit("block", f"block {k}", "normal", fed, 1.0, blk, blk_txt))
            out.append(Limit("block", f"reserve block (for block {k})", f"block {k} lost", fed, 1.0, blk, blk_txt))
    c = h.cooling
    wet = liquid_share if c.cdus is not None else 0.0
    if c.capacity_per_row is not None:
        for r in rows:
            out.append(Limit("cooling-row", f"row {r} cooling", "normal", (r,), 1.0, c.capacity_per_row,
                             f"cooling {c.capacity_per_row / 1e3:g} kW per row", -wet))
    covered = {r for z in c.zones for r in z.rows}
    for z in c.zones:
        zr = tuple(r for r in z.rows if r <= h.rows)
        out.append(Limit("cooling-zone", f"cooling zone {z.name}", "normal", zr, 1.0, z.capacity,
                         f"cooling zone {z.name} {z.capacity / 1e3:g} kW", -wet))
    if wet > 0:
        out += liquid_limits(h, wet)
    if c.zones and c.capacity_per_row is None:
        for r in rows:
            if r not in covered:
                out.append(Limit("cooling-row", f"row {r} cooling", "normal", (r,), 1.0, 0.0, "no cooling zone covers it"))
    out.append(Limit("utility", "utility", "normal", tuple(rows), pue, p.utility,
                     f"utility {p.utility / 1e6:g} MW at PUE {pue:g}"))
    return out


def liquid_limits(h: Hall, share: float) -> list[Limit]:
    """Each row's in-row CDUs in every state, and the hall's facility water (GPU racks' liquid heat)."""
    c, fw = h.cooling.cdus, h.cooling.facility_water
    out = []
    if c.kind == "in-row":
        for r in range(1, h.rows + 1):
            for state, cap, what in unit_states(c):
                out.append(Limit("cdu", f"row {r} CDUs", state, (r,), 0.0, cap, what, share))
    cap = facility_heat(fw)
    out.append(Limit("facility-water", "facility water", "normal", tuple(range(1, h.rows + 1)), 0.0, cap,
                     f"facility water {fw.flow * 60e3:,.0f} L/min x {fw.delta_t:g} K = {cap / 1e3:,.0f} kW", share))
    return out


def row_power_limit(h: Hall, pue: float, liquid_share: float = 0.0) -> dict[int, float]:
    """The largest load each row could carry on its own (W, of GPU racks where that differs): the
    tightest single-row limit."""
    lim = {r: float("inf") for r in range(1, h.rows + 1)}
    for L in hall_limits(h, pue, liquid_share):
        if len(L.rows) == 1 and L.per_gpu_watt > 0:
            r = L.rows[0]
            lim[r] = min(lim[r], L.capacity / L.per_gpu_watt)
    return lim


@dataclass(frozen=True)
class Usage:
    limit: Limit
    load: float  # W through this limit

    @property
    def utilisation(self) -> float:
        return self.load / self.limit.capacity if self.limit.capacity > 0 else (0.0 if self.load <= 0 else float("inf"))


def usage(h: Hall, pue: float, row_load: dict[int, float], gpu_load: dict[int, float] | None = None,
          liquid_share: float = 0.0) -> list[Usage]:
    return [Usage(L, L.load(row_load, gpu_load)) for L in hall_limits(h, pue, liquid_share)]


def violations(h: Hall, pue: float, row_load: dict[int, float], tol: float = 1e-6, gpu_load: dict[int, float] | None = None,
               liquid_share: float = 0.0) -> list[Usage]:
    return [u for u in usage(h, pue, row_load, gpu_load, liquid_share) if u.load > u.limit.capacity * (1 + tol) + tol]


def floor_load(weight: float, h: Hall) -> float:
    """kg/m^2 a rack puts on its footprint (slot width x rack depth)."""
    return weight / (h.slot_width * h.rack_depth)


def family(L: Limit) -> str:
    """The limit family a diagnosis tests on its own: ``kind:normal`` or ``kind:failure``."""
    return f"{L.kind}:{'normal' if L.state == 'normal' else 'failure'}"
