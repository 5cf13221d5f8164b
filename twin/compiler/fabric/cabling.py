"""The cabling pass: every cable of the fabric gets a route length, a medium and a stock length.

Route rule (stated in the report and the cabling README):

- both ends in the same rack: the vertical distance between the two devices, plus 0.5 m of slack;
- otherwise: rise from each device to the overhead tray (tray height minus the device's height in
  its rack, taken at the middle of the device), plus the Manhattan run in the tray: along the row, and
  between rows only at a crossing (both row ends and every cross-aisle, ``HallGrid.crossings``), plus a
  service loop of 10 % + 1.5 m (0.75 m coiled at each end);
- ends in different halls: each end runs to its hall's origin corner, and the halls are joined by a
  straight Manhattan run between their origins (assumed: an inter-hall tray between origin corners);
- ends in different buildings (a campus): patch cords to each building's fiber entrance and a trunk
  between the entrances (:mod:`twin.compiler.fabric.campus_cabling`).

The medium is the first catalog medium, in the order DAC, AEC, AOC, then pluggable optics by reach,
whose reach covers the length (and whose minimum length is below it) at the link's speed; the ordered
length is the next stock length of that medium (beyond the longest stock length: whole metres).
A cable longer than every medium's reach is an error naming the link.

Everything is computed on numpy arrays over all cables at once, so a 100K-GPU site costs well under a
second here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.compiler.fabric import campus_cabling
from twin.compiler.fabric.campus_cabling import CampusCabling
from twin.compiler.fabric.graph import Fabric
from twin.compiler.place.model import HallGrid, Placement
from twin.compiler.resolve.spec import Spec
from twin.lang.diagnostics import InfeasibleError
from twin.lang.site.catalog_models import Medium
from twin.physics import FIBER_DELAY_S_PER_M, U_METRES

RACK_SLACK = 0.5  # m, inside one rack
LOOP_FACTOR = 0.10  # tray routes: 10 % ...
LOOP_FIXED = 1.5  # ... + 1.5 m (0.75 m at each end)
KIND_ORDER = {"dac": 0, "aec": 1, "aoc": 2, "optic": 3}


def media_order(media: dict[str, Medium]) -> list[str]:
    """Preference order: cheaper, lower-power kinds first, then shorter reach."""
    return sorted(media, key=lambda n: (KIND_ORDER[media[n].kind], media[n].reach, n))


def select_media(
    length: np.ndarray,
    speed: np.ndarray,
    media: dict[str, Medium],
    tiers: np.ndarray | None = None,
    allowed: dict[str, list[str]] | None = None,
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(medium index into the returned names, names, ordered stock length) per cable; index -1 where
    nothing reaches. Media of exactly the link's speed are preferred; faster ones are a fallback.
    ``allowed`` (the spec's ``fabric.media``) restricts the cables of a tier to the listed media, tried
    in the listed order: a designer who wants single-mode optics between racks and spines (as Meta
    uses) says so, and the cheapest-by-length rule applies only where nothing is stated.

    >>> from twin.lang.catalog import builtin
    >>> idx, names, stock = select_media(np.array([2.9, 3.1]), np.array([400e9, 400e9]), builtin().media)
    >>> [names[i] for i in idx], stock.tolist()
    (['dac-400g', 'aec-400g'], [3.0, 4.0])
    """
    names = media_order(media)
    idx = np.full(len(length), -1, dtype=np.int32)
    allowed = allowed or {}
    free = np.ones(len(length), dtype=bool)  # cables of tiers without a stated list
    if tiers is not None:
        for tier in allowed:
            free &= tiers != tier
    for exact in (True, False):
        # a twin-port module (module_ports > 1) is used only where fabric.media lists it
        for tier, listed in [(None, [n for n in names if media[n].module_ports == 1])] + sorted(allowed.items()):
            scope = free if tier is None else (tiers == tier)
            for n in listed:
                m = media[n]
                ok_speed = (speed == m.speed) if exact else (speed <= m.speed)
                pick = scope & (idx < 0) & ok_speed & (length <= m.reach + 1e-9) & (length >= m.min_length - 1e-9)
                idx[pick] = names.index(n)
    stock = np.zeros(len(length))
    for i, n in enumerate(names):
        sel = idx == i
        if not sel.any():
            continue
        lengths = np.array(sorted(media[n].stock_lengths))
        pos = np.searchsorted(lengths, length[sel] - 1e-9, side="left")
        beyond = pos >= len(lengths)
        out = lengths[np.minimum(pos, len(lengths) - 1)]
        out[beyond] = np.ceil(length[sel][beyond])
        stock[sel] = out
    return idx, names, stock


@dataclass(frozen=True)
class CablePlan:
    """One row per cable, in link-id order; arrays so that the BOM and the simulator can sum fast."""

    ids: tuple[str, ...]
    tiers: tuple[str, ...]
    route: np.ndarray  # m, tray route without slack
    length: np.ndarray  # m, route with service loop
    stock: np.ndarray  # m, ordered stock length
    medium: np.ndarray  # index into ``media``
    media: tuple[str, ...]
    a_row: np.ndarray  # row of the a (lower-level) end
    a_hall: tuple[str, ...]
    campus: CampusCabling | None = None  # links between buildings: legs and trunks (a campus)
    _index: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)

    def _at(self, link_id: str) -> int:
        """A link's row; the id index is made on first use (a build reads the arrays, not single links)."""
        if not self._index and self.ids:
            self._index.update((c, i) for i, c in enumerate(self.ids))
        return self._index[link_id]

    def length_of(self, link_id: str) -> float:
        """Ordered (stock) length in metres of a link's cable."""
        return float(self.stock[self._at(link_id)])

    def medium_of(self, link_id: str) -> str:
        return self.media[self.medium[self._at(link_id)]]

    def delay(self, link_id: str) -> float:
        """Propagation delay in seconds along the cable (:data:`twin.physics.FIBER_DELAY_S_PER_M`)."""
        return float(self.stock[self._at(link_id)]) * FIBER_DELAY_S_PER_M


def device_table(spec: Spec, placement: Placement, fabric: Fabric, nodes: list[str]):
    """Per device: hall index, x, y, height of its middle above the floor, tray height, rack index."""
    attrs = fabric.graph._node  # node -> its attribute dict (plain lookups, not the view's)
    racks = {r.id: r for r in placement.racks}
    halls = {h.name: i for i, h in enumerate(spec.site.halls)}
    grids = [HallGrid(h) for h in spec.site.halls]
    heights = {name: m.height_u for name, m in spec.catalog.switches.items()}
    heights[spec.rack_type.chassis] = spec.chassis.height_u
    endpoint_u = {a.name: a.height_u for a in spec.fabric.attachments}
    at_rack: dict[str, tuple] = {}  # rack id -> (hall index, row, x, y, rack number): racks hold many devices
    cols: list[tuple] = []
    for node in nodes:
        d = attrs[node]
        where = at_rack.get(d["rack"])
        if where is None:
            r = racks[d["rack"]]
            hi = halls[r.position.hall]
            where = at_rack[d["rack"]] = (hi, r.position.row, grids[hi].x(r.position.slot), grids[hi].y(r.position.row), len(at_rack))
        if d["role"] == "endpoint":
            hu = endpoint_u[d["model"]]
        else:
            hu = heights[d["model"]] if "model" in d and d["role"] != "nic" else spec.chassis.height_u
        cols.append((*where, (d["u"] - 1 + hu / 2) * U_METRES))
    hall, row, x, y, rk, z = zip(*cols, strict=True) if cols else ((),) * 6
    return (np.array(hall, np.int32), np.array(row, np.int32), np.array(x, float), np.array(y, float), np.array(z, float),
            np.array(rk, np.int64), grids)


def route_lengths(spec: Spec, placement: Placement, fabric: Fabric, a_nodes: list[str], b_nodes: list[str]):
    """(route without slack, length with slack, a-end row, a-end hall index) for cables a -> b."""
    pos: dict[str, int] = {}  # every end once, in order of first appearance (only the indices matter)
    for n in a_nodes + b_nodes:
        pos.setdefault(n, len(pos))
    hall, row, x, y, z, rk, grids = device_table(spec, placement, fabric, list(pos))
    ai = np.fromiter((pos[n] for n in a_nodes), np.int64, len(a_nodes))
    bi = np.fromiter((pos[n] for n in b_nodes), np.int64, len(b_nodes))
    tray = np.array([h.tray_height for h in spec.site.halls])
    ox = np.array([h.origin[0] for h in spec.site.halls])
    oy = np.array([h.origin[1] for h in spec.site.halls])
    ha, hb = hall[ai], hall[bi]
    xa, xb, ya, yb = x[ai], x[bi], y[ai], y[bi]
    rise = (tray[ha] - z[ai]) + (tray[hb] - z[bi])
    run = np.abs(xa - xb)  # same row
    other_row = (ha == hb) & (row[ai] != row[bi])
    between = np.flatnonzero(other_row)  # hall by hall: one sort, not a pass over every cable per hall (192 halls)
    between = between[np.argsort(ha[between], kind="stable")]
    for sel in np.split(between, np.flatnonzero(np.diff(ha[between])) + 1) if len(between) else ():
        c = np.array(grids[ha[sel[0]]].crossings())
        along = np.min(np.abs(xa[sel, None] - c) + np.abs(xb[sel, None] - c), axis=1)
        run[sel] = along + np.abs(ya[sel] - yb[sel])
    cross = ha != hb
    if cross.any():
        run[cross] = (
            np.abs(xa[cross] - ox[ha[cross]]) + np.abs(ya[cross] - oy[ha[cross]])
            + np.abs(ox[ha[cross]] - ox[hb[cross]]) + np.abs(oy[ha[cross]] - oy[hb[cross]])
            + np.abs(xb[cross] - ox[hb[cross]]) + np.abs(yb[cross] - oy[hb[cross]])
        )
    route = rise + run
    length = route * (1 + LOOP_FACTOR) + LOOP_FIXED
    same_rack = rk[ai] == rk[bi]
    route[same_rack] = np.abs(z[ai[same_rack]] - z[bi[same_rack]])
    length[same_rack] = route[same_rack] + RACK_SLACK
    return route, length, row[ai], ha


def plan(spec: Spec, placement: Placement, fabric: Fabric) -> CablePlan:
    """The cabling pass: every cable's route, length with slack, medium and stock length."""
    cables = fabric.cables()
    a_nodes = [c.a for c in cables]
    b_nodes = [c.b for c in cables]
    route, length, a_row, a_hall = route_lengths(spec, placement, fabric, a_nodes, b_nodes)
    speed = np.fromiter((c.speed for c in cables), float, len(cables))
    tiers = np.array([c.tier for c in cables])
    allowed = dict(spec.fabric.media)
    idx, names, stock = select_media(length, speed, spec.catalog.media, tiers, allowed)
    campus = None
    if spec.campus is not None:  # links between buildings: patch cords, trunk, optics by reach (twin.compiler.fabric.campus_cabling)
        found = campus_cabling.plan(spec, placement, fabric, cables, names, device_table)
        if found is not None:
            campus, arrays = found
            for key, arr in (("route", route), ("length", length), ("stock", stock), ("medium", idx)):
                arr[campus.index] = arrays[key]
    bad = np.flatnonzero(idx < 0)
    if len(bad):
        media = spec.catalog.media

        def why(i: int) -> str:
            listed = allowed.get(cables[i].tier)
            pool = listed if listed else list(media)
            longest = max(media[n].reach for n in pool)
            what = f"none of fabric.media.{cables[i].tier} ({', '.join(listed)})" if listed else f"no medium at {speed[i] / 1e9:g}G"
            return f"{what} reaches that far (longest reach {longest:g} m)"

        lines = [
            f"cable {cables[i].id} ({cables[i].a}:{cables[i].a_port} -> {cables[i].b}:{cables[i].b_port}, {cables[i].tier})"
            f" needs {length[i]:.1f} m; {why(i)}"
            for i in bad[:20]
        ]
        if len(bad) > 20:
            lines.append(f"... and {len(bad) - 20} more cables too long")
        raise InfeasibleError(lines)
    hall_names = [h.name for h in spec.site.halls]
    return CablePlan(
        ids=tuple(c.id for c in cables),
        tiers=tuple(c.tier for c in cables),
        route=route,
        length=length,
        stock=stock,
        medium=idx,
        media=tuple(names),
        a_row=a_row,
        a_hall=tuple(hall_names[h] for h in a_hall),
        campus=campus,
    )
