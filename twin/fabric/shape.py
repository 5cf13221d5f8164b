"""The fabric's shape: every derived sizing fact of the fabric, computed once from the spec.

Before any rack is placed or any graph is built, the spec already fixes how many switches each tier
has, how many ports each switch uses down and up, how many links cross each tier boundary and what
oversubscription that gives. :func:`fabric_shape` computes these once, when the spec is resolved
(``spec.shape``); the design checks, the feasibility budget, the placement (which network racks to
place, how much fiber joins them), the fabric pass (which builds exactly this shape and proves it with
:func:`mismatches`) and the report all read it. Nothing else recomputes a port or link count.

Rules (the reasons are in ARCHITECTURE.md):

- AI-zone Clos (Meta): an RTSW has ``down = NICs per rack / RTSWs per rack`` ports to NICs and
  ``fabric.rtsw.uplinks`` (default ``down``) up. A zone's RTSW uplinks go round the zone's ``c`` CTSWs
  as one run, so CTSW j has ``L // c + (j < L mod c)`` downlinks for the zone's ``L`` uplinks (every
  RTSW of a rack counts). CTSW j then has ``ceil(down_j / ratio)`` uplinks to the ATSW tier (the stated
  ratio is a ceiling on down:up), spread over the ATSWs of its plane (:func:`ctsw_uplink_targets`).
- A campus (buildings joined at their ATSW layers): the AI-zone shape with one ATSW layer per
  building and the campus tier, extended by :func:`twin.fabric.campus_shape.campus_shape` when the
  spec is resolved; ``FabricShape.campus`` then holds the campus tier's counts.
- Tree families (fat-tree, rail-optimized, rail-only): the textbook folded Clos of
  :mod:`twin.fabric.fat_tree`; every switch below the top has k/2 ports down and k/2 up, so each
  boundary carries ``switches below x k/2`` links.

>>> from twin.fabric.shape import ctsw_downlinks
>>> ctsw_downlinks(zone_uplinks=192 * 18, ctsws=16)[:3]   # 18 uplinks per rack over 16 CTSWs
(216, 216, 216)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..spec.models import Family
from . import fat_tree

if TYPE_CHECKING:
    from ..spec.resolve import Spec
    from .graph import Fabric


@dataclass(frozen=True)
class Tier:
    """One switch tier of the whole site."""

    role: str  # rtsw / ctsw / atsw, or leaf / spine / super / core
    level: int  # 1 = the tier the NICs attach to
    model: str
    count: int  # switches in the site
    down: int  # ports a switch of this tier uses towards the tier below (the most any one uses)
    up: int  # ports it uses towards the tier above
    radix: int  # ports the model has

    @property
    def free(self) -> int:
        """Ports left unused on the busiest switch of the tier."""
        return self.radix - self.down - self.up


@dataclass(frozen=True)
class Boundary:
    """The links between two adjacent tiers (or NICs and the first tier), site-wide."""

    name: str  # "nic-rtsw", "rtsw-ctsw", ..., the graph's edge ``tier`` attribute
    links: int
    speed: float  # bit/s per link
    requested: float | None  # oversubscription the spec asks for below this boundary (down:up), if any
    built: float | None  # the down:up the built links give


@dataclass(frozen=True)
class FabricShape:
    family: str
    endpoints: int  # NICs on the fabric
    tiers: tuple[Tier, ...]  # bottom-up
    boundaries: tuple[Boundary, ...]  # bottom-up, ``boundaries[0]`` is the NIC tier
    rack_uplinks: int = 0  # AI zone: uplinks of one GPU rack (all its RTSWs) to its zone's CTSWs
    ctsw_down: tuple[int, ...] = ()  # AI zone: downlinks of CTSW j (the same in every zone)
    ctsw_up: tuple[int, ...] = ()  # AI zone: uplinks of CTSW j to the ATSW tier
    tree: fat_tree.TreeShape | None = None  # tree families: one tree (one rail of rail-only)
    trees: int = 1  # rail-only: one tree per rail
    campus: Any = None  # a campus: twin.fabric.campus_shape.CampusShape

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(t.role for t in self.tiers)

    @property
    def boundary_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.boundaries)

    @property
    def switches(self) -> int:
        return sum(t.count for t in self.tiers)

    def tier(self, role: str) -> Tier | None:
        return next((t for t in self.tiers if t.role == role), None)

    def links(self, boundary: str) -> int:
        return next((b.links for b in self.boundaries if b.name == boundary), 0)

    def network_switches(self) -> dict[str, int]:
        """Switches that live in network racks (not in GPU racks), by role."""
        in_racks = {"rtsw"}
        return {t.role: t.count for t in self.tiers if t.role not in in_racks}


def fabric_shape(spec: Spec) -> FabricShape:
    """The shape of ``spec``'s fabric (the spec has passed its reference checks)."""
    if spec.fabric.family == Family.AI_ZONE:
        return _ai_zone(spec)
    return _tree(spec)


# ---------------------------------------------------------------- AI-zone Clos


def ctsw_downlinks(zone_uplinks: int, ctsws: int) -> tuple[int, ...]:
    """Downlinks of each CTSW when a zone's ``zone_uplinks`` RTSW uplinks go round ``ctsws`` CTSWs."""
    q, r = divmod(zone_uplinks, ctsws)
    return tuple(q + (1 if j < r else 0) for j in range(ctsws))


def cross_zone_ratio(spec: Spec) -> float | None:
    """The CTSW down:up factor the spec asks for, or None when there is no ATSW tier."""
    f = spec.fabric
    if not f.atsw or not f.atsw.count or spec.zones < 2:
        return None
    return f.atsw.oversubscription or 1.0


def ctsw_uplink_targets(zone: int, j: int, uplinks: int, ctsws: int, atsws: int) -> list[int]:
    """ATSW index of each uplink of CTSW ``j`` of ``zone``.

    With ``P = gcd(ctsws, atsws)`` planes, CTSW j uses plane ``j mod P`` of ``atsws / P`` ATSWs,
    starting where CTSW j of the previous zone stopped, so every ATSW of a plane gets the same share.

    >>> ctsw_uplink_targets(0, 3, 2, 16, 16), ctsw_uplink_targets(1, 0, 3, 4, 2)
    ([3, 3], [0, 0, 0])
    """
    planes = math.gcd(ctsws, atsws)
    per_plane = atsws // planes
    start = (j // planes + zone) * uplinks
    return [(j % planes) * per_plane + (start + t) % per_plane for t in range(uplinks)]


def _ai_zone(spec: Spec) -> FabricShape:
    f = spec.fabric
    per_rack = max(1, spec.rack_type.rtsw_count)
    down = spec.rack.nics // per_rack
    up = f.rtsw.uplinks if f.rtsw and f.rtsw.uplinks is not None else down
    rtsw = spec.rtsw_model
    ctsw = spec.switch(f.ctsw.model)
    c = f.ctsw.count
    rack_up = up * per_rack
    cdown = ctsw_downlinks(spec.racks_per_zone * rack_up, c)
    ratio = cross_zone_ratio(spec)
    cup = tuple(math.ceil(d / ratio - 1e-9) for d in cdown) if ratio else (0,) * c
    nic_speed = min(spec.nic_speed, rtsw.port_speed)
    up_speed = min(rtsw.port_speed, ctsw.port_speed)
    tiers = [
        Tier("rtsw", 1, spec.rack_type.rtsw or "", spec.racks * per_rack, down, up, rtsw.ports),
        Tier("ctsw", 2, f.ctsw.model, spec.zones * c, max(cdown), max(cup), ctsw.ports),
    ]
    bounds = [
        Boundary("nic-rtsw", spec.racks * spec.rack.nics, nic_speed, None, None),
        Boundary("rtsw-ctsw", spec.zones * sum(cdown), up_speed, None, down / up if up else None),
    ]
    if ratio:
        atsw = spec.switch(f.atsw.model)
        a = f.atsw.count
        per_atsw = [0] * a
        for z in range(spec.zones):
            for j in range(c):
                for k in ctsw_uplink_targets(z, j, cup[j], c, a):
                    per_atsw[k] += 1
        tiers.append(Tier("atsw", 3, f.atsw.model, a, max(per_atsw), 0, atsw.ports))
        built = sum(cdown) / sum(cup) if sum(cup) else None
        bounds.append(Boundary("ctsw-atsw", spec.zones * sum(cup), min(ctsw.port_speed, atsw.port_speed), ratio, built))
    return FabricShape(Family.AI_ZONE.value, spec.racks * spec.rack.nics, tuple(tiers), tuple(bounds),
                       rack_uplinks=rack_up, ctsw_down=cdown, ctsw_up=cup)


# ---------------------------------------------------------------- tree families


def tree_endpoints(spec: Spec) -> int:
    """NICs on a tree fabric: the GPUs asked for times NICs per GPU (the last rack may be part-filled)."""
    return spec.gpus * spec.chassis.nics // max(1, spec.chassis.gpus)


def _tree(spec: Spec) -> FabricShape:
    f = spec.fabric
    sw = spec.switch(f.switch)
    k = sw.ports
    h = max(1, k // 2)
    n = tree_endpoints(spec)
    trees = 1
    if f.family == Family.RAIL_ONLY:
        trees = f.hb_domain
        ts = fat_tree.shape(n // trees, k, f.tiers)
    elif f.family == Family.RAIL_OPTIMIZED:
        g = spec.chassis.nics
        groups = math.ceil((n // max(1, g)) / h)
        ts = fat_tree.shape(n, k, f.tiers, leaves=groups * g)
    else:
        ts = fat_tree.shape(n, k, f.tiers)
    roles = fat_tree.role_names(ts.tiers)
    nic_speed = min(spec.nic_speed, sw.port_speed)
    tiers = []
    bounds = [Boundary(f"nic-{roles[0]}", n, nic_speed, None, None)]
    for t, count in enumerate(ts.switches):
        top = t == ts.tiers - 1
        if ts.tiers == 1:
            down, up = math.ceil(n / trees / count) if count else 0, 0
        elif t == 0:
            down, up = min(h, ts.endpoints), h
        else:
            down, up = (k, 0) if top else (h, h)
        tiers.append(Tier(roles[t], t + 1, f.switch, count * trees, down, up, k))
        if t > 0:
            links = ts.switches[0] * h * trees
            bounds.append(Boundary(f"{roles[t - 1]}-{roles[t]}", links, sw.port_speed, None, 1.0))
    return FabricShape(f.family.value, n, tuple(tiers), tuple(bounds), tree=ts, trees=trees)


# ---------------------------------------------------------------- the contract with the graph


def mismatches(shape: FabricShape, fabric: Fabric) -> list[str]:
    """Where the built graph differs from the shape (empty when the graph is exactly the shape)."""
    out = []
    counts = {role: 0 for role in fabric.roles}
    for _n, role in fabric.graph.nodes(data="role"):
        if role in counts:
            counts[role] += 1
    for t in shape.tiers:
        if counts.get(t.role, 0) != t.count:
            out.append(f"{t.role}: the graph has {counts.get(t.role, 0)} switches, the shape {t.count}")
    links: dict[str, int] = {}
    for lk in fabric.links:
        if lk.kind == "link":
            links[lk.tier] = links.get(lk.tier, 0) + 1
    for b in shape.boundaries:
        if links.get(b.name, 0) != b.links:
            out.append(f"{b.name}: the graph has {links.get(b.name, 0)} links, the shape {b.links}")
    extra = sorted(set(links) - set(shape.boundary_names))
    if extra:
        out.append(f"the graph has link tiers the shape does not: {', '.join(extra)}")
    return out
