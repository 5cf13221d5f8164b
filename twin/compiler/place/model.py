"""What the placement pass produces: every rack (GPU and network) at a position on a hall grid.

The fabric pass hangs switches on these racks, the cabling pass routes cables between their
positions, and the report reads the per-row loads. Positions count from 1 (row 1, slot 1), like the
labels on a data-hall floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from twin.lang.site.models import Hall

NETWORK_RACK_U = 42  # usable U in a network rack (assumed; 48U racks minus patch panels)


@dataclass(frozen=True, order=True)
class Position:
    hall: str
    row: int
    slot: int


@dataclass(frozen=True)
class PlacedRack:
    """A rack at a position. ``kind`` is "gpu" or "network"; network racks carry a ``role``
    ("ctsw", "atsw", or "fabric" for the fat-tree/rail families) and the zone they serve (None for
    racks shared by all zones)."""

    id: str
    kind: str
    position: Position | None  # None: a fabric-only study's rack (twin.compiler.study)
    zone: int | None  # 0-based zone index
    index: int  # 0-based index of the rack within its zone (GPU racks) or its role (network racks)
    power: float  # W at full load (network racks: filled in by the fabric pass' switch count)
    role: str = "gpu"
    switches: int = 0  # network racks: switches the placement planned (and powered) for this rack

    @property
    def hall(self) -> str | None:
        """The rack's hall; None for a rack of a fabric-only study, which stands nowhere (``position`` None)."""
        return None if self.position is None else self.position.hall


@dataclass(frozen=True)
class Placement:
    racks: tuple[PlacedRack, ...]
    method: str
    figures: dict = field(default_factory=dict)

    def gpu_racks(self) -> list[PlacedRack]:
        return [r for r in self.racks if r.kind == "gpu"]

    def network_racks(self, role: str | None = None, zone: int | None = None) -> list[PlacedRack]:
        return [
            r for r in self.racks
            if r.kind == "network" and (role is None or r.role == role) and (zone is None or r.zone == zone)
        ]


@dataclass(frozen=True)
class HallGrid:
    """Geometry of a hall for cable routing: slot centres along x, row centres along y (metres).

    Cables run in an overhead tray above each row and cross between rows only at cross-aisles (and at
    both row ends), so a route between rows goes along the row to the nearest crossing point.
    """

    hall: Hall

    def x(self, slot: int) -> float:
        h = self.hall
        aisles = (slot - 1) // h.cross_aisle_every if h.cross_aisle_every else 0
        return h.origin[0] + (slot - 0.5) * h.slot_width + aisles * h.cross_aisle_width

    def y(self, row: int) -> float:
        return self.hall.origin[1] + (row - 1) * self.hall.row_pitch

    def crossings(self) -> list[float]:
        """x of every place where the tray crosses between rows: both row ends and each cross-aisle."""
        h = self.hall
        xs = [h.origin[0]]
        if h.cross_aisle_every:
            for k in range(1, math.ceil(h.positions_per_row / h.cross_aisle_every)):
                first_after = k * h.cross_aisle_every + 1
                xs.append(self.x(first_after) - h.slot_width / 2 - h.cross_aisle_width / 2)
        xs.append(self.x(h.positions_per_row) + h.slot_width / 2)
        return xs

    def door(self) -> tuple[float, float]:
        """Where trays leave the hall towards other halls: the row-1 end at the hall origin."""
        return self.hall.origin[0], self.hall.origin[1]

    def distance(self, a: tuple[int, int], b: tuple[int, int]) -> float:
        """Tray metres between (row, slot) ``a`` and ``b``: along the row, and between rows through
        the crossing point that makes the route shortest (Manhattan along rows and cross-aisles)."""
        xa, xb = self.x(a[1]), self.x(b[1])
        if a[0] == b[0]:
            return abs(xa - xb)
        return abs(self.y(a[0]) - self.y(b[0])) + min(abs(xa - c) + abs(xb - c) for c in self.crossings())

    def distances(self, a: list[tuple[int, int]], b: list[tuple[int, int]]) -> np.ndarray:
        """:meth:`distance` between every position of ``a`` (rows of the result) and of ``b`` (columns),
        with the same floating-point operations in the same order, so every entry is bit for bit
        ``distance(a[i], b[j])``."""
        x = {s: self.x(s) for s in {p[1] for p in a} | {p[1] for p in b}}
        y = {r: self.y(r) for r in {p[0] for p in a} | {p[0] for p in b}}
        xa = np.array([x[p[1]] for p in a], float)[:, None]
        xb = np.array([x[p[1]] for p in b], float)[None, :]
        ya = np.array([y[p[0]] for p in a], float)[:, None]
        yb = np.array([y[p[0]] for p in b], float)[None, :]
        via = None
        for c in self.crossings():
            leg = np.abs(xa - c) + np.abs(xb - c)
            via = leg if via is None else np.minimum(via, leg)
        same_row = np.array([p[0] for p in a])[:, None] == np.array([p[0] for p in b])[None, :]
        return np.where(same_row, np.abs(xa - xb), np.abs(ya - yb) + via)

    def to_door(self, a: tuple[int, int]) -> float:
        """Tray metres from (row, slot) ``a`` to the hall door (first crossing of row 1)."""
        return abs(self.x(a[1]) - self.hall.origin[0]) + abs(self.y(a[0]) - self.hall.origin[1])


def site_distance(grids: dict[str, HallGrid], a: Position, b: Position) -> float:
    """Tray metres between two positions anywhere on the site: inside one hall along its trays;
    between halls out through one door, Manhattan between the doors, in through the other."""
    if a.hall == b.hall:
        return grids[a.hall].distance((a.row, a.slot), (b.row, b.slot))
    ga, gb = grids[a.hall], grids[b.hall]
    (xa, ya), (xb, yb) = ga.door(), gb.door()
    return ga.to_door((a.row, a.slot)) + abs(xa - xb) + abs(ya - yb) + gb.to_door((b.row, b.slot))


def site_distances(grids: dict[str, HallGrid], a: list[Position], ia: np.ndarray, b: list[Position],
                   ib: np.ndarray) -> np.ndarray:
    """:func:`site_distance` between ``a[ia[k]]`` and ``b[ib[k]]`` for every k, as one array: the
    coordinates of each position are worked out once, the pairs in bulk, with the same floating-point
    operations in the same order, so every entry is bit for bit the scalar function's (figures of a
    100K-GPU site measure ~100K rack pairs; one Python call per pair was most of the placement pass)."""
    ca, cb = _coords(grids, a), _coords(grids, b)
    ha, hb = ca["hall"][ia], cb["hall"][ib]
    xa, xb, ya, yb = ca["x"][ia], cb["x"][ib], ca["y"][ia], cb["y"][ib]
    out = np.empty(len(ia))
    same = ha == hb
    same_row = same & (ca["row"][ia] == cb["row"][ib])
    out[same_row] = np.abs(xa[same_row] - xb[same_row])
    names = list(grids)
    for h in np.unique(ha[same & ~same_row]):
        k = same & ~same_row & (ha == h)
        via = None
        for c in grids[names[h]].crossings():
            leg = np.abs(xa[k] - c) + np.abs(xb[k] - c)
            via = leg if via is None else np.minimum(via, leg)
        out[k] = np.abs(ya[k] - yb[k]) + via
    k = ~same
    if k.any():
        oxa, oya, oxb, oyb = ca["ox"][ia][k], ca["oy"][ia][k], cb["ox"][ib][k], cb["oy"][ib][k]
        out[k] = ca["door"][ia][k] + np.abs(oxa - oxb) + np.abs(oya - oyb) + cb["door"][ib][k]
    return out


def _coords(grids: dict[str, HallGrid], ps: list[Position]) -> dict[str, np.ndarray]:
    """Per position: hall index (in ``grids`` order), row, x, y, tray metres to its hall door and the door."""
    index = {name: i for i, name in enumerate(grids)}
    xs = {(h, s): grids[h].x(s) for h, s in {(p.hall, p.slot) for p in ps}}
    ys = {(h, r): grids[h].y(r) for h, r in {(p.hall, p.row) for p in ps}}
    doors = [g.door() for g in grids.values()]
    hall = np.array([index[p.hall] for p in ps], np.int64)
    return {"hall": hall, "row": np.array([p.row for p in ps], np.int64),
            "x": np.array([xs[p.hall, p.slot] for p in ps], float), "y": np.array([ys[p.hall, p.row] for p in ps], float),
            "door": np.array([grids[p.hall].to_door((p.row, p.slot)) for p in ps], float),
            "ox": np.array([doors[h][0] for h in hall], float).reshape(-1), "oy": np.array([doors[h][1] for h in hall], float).reshape(-1)}


def switches_per_rack(height_u: int, power: float, shelf: float) -> int:
    """Switches one network rack holds: limited by its usable height and by its power shelf (a rack
    of 42 1U switches at 1.7 kW would draw 71 kW, more than any rack power shelf delivers)."""
    by_u = max(1, NETWORK_RACK_U // height_u)
    by_power = max(1, int(shelf // power)) if power > 0 else by_u
    return min(by_u, by_power)


def rack_fill(switch_count: int, per_rack: int) -> list[int]:
    """Switches in each network rack of a role: full racks, the remainder in the last."""
    out = []
    left = switch_count
    while left > 0:
        out.append(min(per_rack, left))
        left -= out[-1]
    return out
