"""Cables between buildings: patch cords to each building's fiber entrance, a trunk between entrances.

A link between two buildings runs (rules stated in the report):

- **patch cord** at each end: rise to the hall's tray, the tray run to the hall door (its origin), then
  to the building's fiber entrance (``entrance``, in the coordinates of the hall origins), Manhattan,
  with the tray rule's service loop (10 % + 1.5 m) and rounded up to the optic's next stock length;
- **trunk**: fibers of a trunk cable between the two entrances, the route's length (surveyed, or the
  straight line between the buildings' locations times the route factor).

The optic is chosen for the whole run (patch + trunk + patch): the route's pinned medium, else the first
of ``campus.fabric.media`` (or of every catalog optic) whose reach covers it, cheapest kind and shortest
reach first. Fibers per link are the optic connector's positions (MPO-12: 12, LC duplex: 2); per building
pair, the fibers in use plus the spare share make the trunk cables (``fibers_per_cable``) and the patch
panels at each end (``fibers_per_panel``).

>>> fibers_per_link("MPO-12"), fibers_per_link("LC duplex"), fibers_per_link("")
(12, 2, 2)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from twin.compiler.fabric.graph import Fabric, Link
from twin.compiler.place.model import Placement
from twin.compiler.resolve.spec import Spec
from twin.lang.diagnostics import InfeasibleError
from twin.physics import FIBER_DELAY_S_PER_M

LOOP_FACTOR, LOOP_FIXED = 0.10, 1.5  # the tray rule's service loop (twin.compiler.fabric.cabling)


def fibers_per_link(connector: str) -> int:
    """Trunk fibers a link occupies: an MPO connector's positions, else a duplex pair."""
    m = re.search(r"MPO-(\d+)", connector or "")
    return int(m.group(1)) if m else 2


@dataclass(frozen=True)
class TrunkPair:
    """The fibers between two buildings."""

    a: str  # building names
    b: str
    route_m: float
    how: str  # "surveyed" or "locations x 1.4"
    links: int
    media: dict[str, int]  # optic -> links
    fibers: int  # in use
    fibers_spare: int  # in use + spare
    cables: int  # trunk cables of fibers_per_cable
    panels: int  # patch panels at each end
    delay_s: float  # one way along the trunk


@dataclass(frozen=True)
class CampusCabling:
    """Per link between buildings (``index`` into the cable plan) its legs; per building pair its trunk."""

    index: np.ndarray  # cable indices in the plan
    pair: tuple[tuple[int, int], ...]
    patch: np.ndarray  # (n, 2) m: patch cord with slack at the a and b end
    patch_stock: np.ndarray  # (n, 2) m: ordered patch cord lengths
    trunk: np.ndarray  # m: the trunk route of each link's pair
    trunks: tuple[TrunkPair, ...]


def _stock(lengths: np.ndarray, stock_lengths: list[float]) -> np.ndarray:
    ladder = np.array(sorted(stock_lengths))
    pos = np.searchsorted(ladder, lengths - 1e-9, side="left")
    out = ladder[np.minimum(pos, len(ladder) - 1)]
    beyond = pos >= len(ladder)
    out[beyond] = np.ceil(lengths[beyond])
    return out


def plan(spec: Spec, placement: Placement, fabric: Fabric, cables: list[Link], names: list[str],
         device_table) -> tuple[CampusCabling, dict[str, np.ndarray]] | None:
    """The links between buildings: (their cabling, the plan's arrays for them: route, length, stock,
    medium index into ``names``). ``device_table`` is the cabling pass's (hall, row, x, y, z, rack) lookup."""
    cp = spec.campus
    building = {n: d.get("building") for n, d in fabric.graph._node.items()}
    sel = [i for i, c in enumerate(cables) if building[c.a] != building[c.b]]
    if not sel:
        return None
    idx = np.array(sel, np.int64)
    a_nodes, b_nodes = [cables[i].a for i in sel], [cables[i].b for i in sel]
    nodes = sorted(set(a_nodes) | set(b_nodes))
    pos = {n: i for i, n in enumerate(nodes)}
    hall, _row, x, y, z, _rk, grids = device_table(spec, placement, fabric, nodes)
    halls = spec.site.halls
    tray = np.array([h.tray_height for h in halls])
    ox = np.array([h.origin[0] for h in halls])
    oy = np.array([h.origin[1] for h in halls])
    bld = np.array([cp.hall_building[h.name] for h in halls])
    ex = np.array([cp.buildings[b].entrance[0] for b in bld])
    ey = np.array([cp.buildings[b].entrance[1] for b in bld])
    legs = []
    for ends in (a_nodes, b_nodes):
        k = np.fromiter((pos[n] for n in ends), np.int64, len(ends))
        h = hall[k]
        run = (tray[h] - z[k]) + np.abs(x[k] - ox[h]) + np.abs(y[k] - oy[h]) + np.abs(ox[h] - ex[h]) + np.abs(oy[h] - ey[h])
        legs.append(run)
    leg = np.stack(legs, axis=1)
    patch = leg * (1 + LOOP_FACTOR) + LOOP_FIXED
    pairs = tuple((min(ba, bb), max(ba, bb)) for ba, bb in ((building[a], building[b]) for a, b in zip(a_nodes, b_nodes)))
    trunk = np.array([cp.route(*p).length for p in pairs])
    total = patch.sum(axis=1) + trunk
    speed = np.array([cables[i].speed for i in sel])
    media = spec.catalog.media
    medium = np.full(len(sel), -1, np.int64)
    for p in sorted(set(pairs)):
        route = cp.route(*p)
        # by default every single-port optic: a twin-port module is used only where a media list names it
        allowed = [route.medium] if route.medium else list(cp.media) or [n for n in names if media[n].kind == "optic"
                                                                         and media[n].module_ports == 1]
        mine = np.array([q == p for q in pairs])
        for exact in (True, False):
            for n in allowed:  # as listed; by default every optic, cheapest kind and shortest reach first
                m = media[n]
                ok = (speed == m.speed) if exact else (speed <= m.speed)
                pick = mine & (medium < 0) & ok & (total <= m.reach + 1e-9)
                medium[pick] = names.index(n)
    bad = np.flatnonzero(medium < 0)
    if len(bad):
        lines = []
        for i in bad[:20]:
            c, (pa, pb) = cables[sel[i]], pairs[i]
            lines.append(f"cable {c.id} ({c.a} -> {c.b}) between buildings {cp.buildings[pa].name} and {cp.buildings[pb].name} "
                         f"needs {total[i] / 1000:.3f} km end to end; no allowed optic reaches it")
        raise InfeasibleError(lines)
    patch_stock = np.zeros_like(patch)
    for i in np.unique(medium):
        on = medium == i
        for e in (0, 1):
            patch_stock[on, e] = _stock(patch[on, e], media[names[i]].stock_lengths)
    trunks = []
    tr = cp.trunk
    for p in sorted(set(pairs)):
        mine = np.array([q == p for q in pairs])
        counts: dict[str, int] = {}
        fibers = 0
        for i in np.flatnonzero(mine):
            n = names[medium[i]]
            counts[n] = counts.get(n, 0) + 1
            fibers += fibers_per_link(media[n].connector)
        spare = math.ceil(fibers * (1 + tr.spare) - 1e-9)
        n_cables = math.ceil(spare / tr.fibers_per_cable)
        route = cp.route(*p)
        trunks.append(TrunkPair(cp.buildings[p[0]].name, cp.buildings[p[1]].name, route.length, route.how, int(mine.sum()),
                                dict(sorted(counts.items())), fibers, spare, n_cables,
                                math.ceil(n_cables * tr.fibers_per_cable / tr.fibers_per_panel), route.length * FIBER_DELAY_S_PER_M))
    arrays = {"route": leg.sum(axis=1) + trunk, "length": total, "stock": patch_stock.sum(axis=1) + trunk, "medium": medium}
    return CampusCabling(idx, pairs, patch, patch_stock, trunk, tuple(trunks)), arrays
