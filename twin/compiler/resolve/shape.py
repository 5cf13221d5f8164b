"""The fabric's shape: every derived sizing fact of the fabric, computed once from the spec.

Before any rack is placed or any graph is built, the spec already fixes how many switches each tier
has, how many ports each switch uses down and up, how many links cross each tier boundary and what
oversubscription that gives. :func:`fabric_shape` computes these once, when the spec is resolved
(``spec.shape``); the design checks, the feasibility budget, the placement (which network racks to
place, how much fiber joins them), the fabric pass (which builds exactly this shape and proves it with
:func:`twin.compiler.fabric.synthesis.mismatches`) and the report all read it. Nothing else recomputes a port or link count.

Rules (the reasons are in ARCHITECTURE.md):

- AI-zone Clos (Meta): an RTSW has ``down = NICs per rack / RTSWs per rack`` ports to NICs and
  ``fabric.rtsw.uplinks`` (default ``down``) up. A zone's RTSW uplinks go round the zone's ``c`` CTSWs
  as one run, so CTSW j has ``L // c + (j < L mod c)`` downlinks for the zone's ``L`` uplinks (every
  RTSW of a rack counts). CTSW j then has ``ceil(down_j / ratio)`` uplinks to the ATSW tier (the stated
  ratio is a ceiling on down:up), spread over the ATSWs of its plane (:func:`twin.compiler.resolve.zone_links.ctsw_uplink_targets`).
- AI-zone oversubscription: ``fabric.rtsw.oversubscription`` (when ``uplinks`` is not given) and
  ``fabric.atsw.oversubscription`` are ceilings on down:up by bandwidth; uplinks are whole links, so
  the built ratio is at or below the one asked for (meta-24k-roce asks 1:7, a CTSW gets
  ceil(192 / 7) = 28 uplinks: 6.86:1). Each boundary carries both and the reason they differ.
- A campus (buildings joined at their ATSW layers): the AI-zone shape with one ATSW layer per
  building and the campus tier, extended by :func:`twin.compiler.resolve.campus_shape.campus_shape` when the
  spec is resolved; ``FabricShape.campus`` then holds the campus tier's counts.
- Tree families (fat-tree, rail-optimized, rail-only): the textbook folded Clos of
  :mod:`twin.compiler.resolve.fat_tree`; every switch below the top has k/2 ports down and k/2 up, so each
  boundary carries ``switches below x k/2`` links. The top tier's count, pins and rails that share
  switches are :mod:`twin.compiler.resolve.tree_sizing`.
- Attachments (:mod:`twin.compiler.resolve.attach_shape`): non-GPU endpoints take ports of a tier's switches round
  the ring; ``Tier.attach`` counts them on the busiest switch, and each attachment is a boundary of
  its own (``ufm-spine``).
- Free ports: ``radix - down - up - attach`` of the busiest switch of a tier (:attr:`Tier.free`).

>>> from twin.compiler.resolve.zone_links import ctsw_downlinks
>>> ctsw_downlinks(zone_uplinks=192 * 18, ctsws=16)[:3]   # 18 uplinks per rack over 16 CTSWs
(216, 216, 216)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from twin.compiler.resolve import fat_tree
from twin.compiler.resolve.attach_shape import AttachShape, attach_ports, attach_shapes, free_slots
from twin.compiler.resolve.cage_modes import with_cages
from twin.compiler.resolve.planes import spec_plane_ports, spec_port_speed
from twin.compiler.resolve.pools import LEAF_NICS
from twin.compiler.resolve.tree_sizing import tree_sizing
from twin.compiler.resolve.unit_shape import host_count, unit_shape
from twin.compiler.resolve.zone_links import atsw_downlinks, ctsw_downlinks
from twin.lang.site.families import AI_ZONE_LAYOUT, CLOS_LAYOUT, UNIT_LAYOUT

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec


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
    attach: int = 0  # ports it uses for attachments (non-GPU endpoints), on the busiest switch

    @property
    def free(self) -> int:
        """Ports left unused on the busiest switch of the tier."""
        return self.radix - self.down - self.up - self.attach

    def to_json(self) -> dict:
        return {"role": self.role, "level": self.level, "model": self.model, "count": self.count,
                "ports": {"down": self.down, "up": self.up, "attached": self.attach, "free": self.free, "radix": self.radix}}


@dataclass(frozen=True)
class Boundary:
    """The links between two adjacent tiers (or NICs and the first tier), site-wide."""

    name: str  # "nic-rtsw", "rtsw-ctsw", ..., the graph's edge ``tier`` attribute
    links: int
    speed: float  # bit/s per link
    requested: float | None  # oversubscription the spec asks for below this boundary (down:up), if any
    built: float | None  # the down:up (bandwidth) of the tier below, as built
    reason: str = ""  # why ``built`` differs from ``requested``, when it does

    def to_json(self) -> dict:
        return {"name": self.name, "links": self.links, "speed": self.speed,
                "oversubscription": {"requested": self.requested, "built": self.built, "reason": self.reason}}


@dataclass(frozen=True)
class FabricShape:
    family: str
    endpoints: int  # NICs on the fabric (NIC ports on one plane of a multi-plane fabric)
    tiers: tuple[Tier, ...]  # bottom-up
    boundaries: tuple[Boundary, ...]  # bottom-up, ``boundaries[0]`` is the NIC tier
    rack_uplinks: int = 0  # AI zone: uplinks of one GPU rack (all its RTSWs) to its zone's CTSWs
    ctsw_down: tuple[int, ...] = ()  # AI zone: downlinks of CTSW j (the same in every zone)
    ctsw_up: tuple[int, ...] = ()  # AI zone: uplinks of CTSW j to the ATSW tier
    tree: fat_tree.TreeShape | None = None  # tree families: one tree (one rail, or rails sharing switches, of rail-only)
    trees: int = 1  # rail-only: one tree per rail (per group of rails sharing switches)
    rails_per_switch: int = 1  # rail families: rails that share one switch
    planes: int = 1  # network planes, each a copy of the tree or of the zones' fabric (twin.compiler.resolve.planes)
    attachments: tuple[AttachShape, ...] = ()  # non-GPU endpoints, in spec order
    campus: Any = None  # a campus: twin.compiler.resolve.campus_shape.CampusShape
    unit: Any = None  # a scalable-unit fabric: twin.compiler.resolve.unit_shape.UnitShape (one plane's counts)

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

    def boundary(self, name: str) -> Boundary | None:
        return next((b for b in self.boundaries if b.name == name), None)

    def links(self, boundary: str) -> int:
        return next((b.links for b in self.boundaries if b.name == boundary), 0)

    def network_switches(self) -> dict[str, int]:
        """Switches that live in network racks (not in GPU racks), by role."""
        in_racks = {"rtsw"}
        return {t.role: t.count for t in self.tiers if t.role not in in_racks}

    def attach_ports(self, role: str, index: int) -> int:
        """Attachment ports on switch ``index`` (graph order) of tier ``role``."""
        total = sum(a.links for a in self.attachments if a.role == role and not a.node_slot)
        t = self.tier(role)
        return attach_ports(total, t.count if t else 1, index) + sum(a.on_switch(index) for a in self.attachments if a.role == role)

    def lids(self, lmc: int) -> int:
        """InfiniBand LIDs the subnet needs: 2^LMC per HCA port (GPU NICs and attachment ports) and one
        per switch (base switch port 0 takes LMC 0, OpenSM's default) [ibta-vol1] ch. 4.

        >>> FabricShape("fat-tree", 24576, (Tier("leaf", 1, "m", 1920, 32, 32, 64),), ()).lids(1)
        51072
        """
        hca_ports = self.endpoints * self.planes + sum(a.links for a in self.attachments)
        return hca_ports * (1 << lmc) + self.switches

    def to_json(self) -> dict:
        out = {"family": self.family, "endpoints": self.endpoints, "rails_per_switch": self.rails_per_switch,
               "tiers": [t.to_json() for t in self.tiers], "boundaries": [b.to_json() for b in self.boundaries],
               "attachments": [{"name": a.name, "kind": a.kind, "tier": a.role, "count": a.count, "ports": a.ports,
                                "speed": f"{a.speed:g} bit/s", "links": a.links} for a in self.attachments]}
        if self.planes > 1:  # single-plane documents stay as they were
            out["planes"] = self.planes
        if self.unit is not None:
            u = self.unit
            out["unit"] = {"units": u.units, "rails": u.rails, "leaf_groups": u.groups, "leaves_per_group": u.leaves,
                           "spines_per_group": u.spines, "core_groups": u.core_groups, "cores_per_group": u.cores}
            if u.rails_meet != "core":  # a site that states nothing writes what it wrote before
                out["unit"] |= {"rails_meet": u.rails_meet} | ({"rail_group": u.rail_group} if u.rail_group < u.rails else {})
        return out


def fabric_shape(spec: Spec) -> FabricShape:
    """The shape of ``spec``'s fabric (the spec has passed its reference checks)."""
    shape = with_cages(spec, SHAPES[spec.family.layout](spec))  # a tier's own breakout mode (fabric.cages)
    return _with_attachments(spec, shape)


def _with_attachments(spec: Spec, shape: FabricShape) -> FabricShape:
    speeds = {t.role: spec.switch(t.model).port_speed for t in shape.tiers if t.model in spec.catalog.switches}
    free, nics = (), ()
    if any(a.node_slot for a in spec.fabric.attachments):  # the leaves' free node slots (twin.compiler.resolve.pools)
        nics = LEAF_NICS[spec.family.layout](replace(spec, shape=shape))
        free = free_slots(nics, node_slots(shape))
    att = attach_shapes(spec, {t.role: (t.count, speeds.get(t.role, 0.0)) for t in shape.tiers}, free)
    if not att:
        return shape
    leaf = shape.tiers[0]
    # a node slot beyond the fullest leaf's NICs (a one-group tree) is a port the leaf's down count does not hold
    in_slots = max((n + sum(a.on_switch(i) for a in att if a.role == leaf.role) for i, n in enumerate(nics)), default=0) - leaf.down
    tiers = tuple(replace(t, attach=attach_ports(sum(a.links for a in att if a.role == t.role and not a.node_slot), t.count, 0)
                          + (max(0, in_slots) if t is leaf else 0)) for t in shape.tiers)
    bounds = shape.boundaries + tuple(Boundary(a.tier, a.links, a.speed, None, None) for a in att)
    return replace(shape, tiers=tiers, boundaries=bounds, attachments=att)


def node_slots(shape: FabricShape) -> int:
    """Node slots of one leaf: the down-ports a full group's nodes take (k/2 on a tree of 2+ tiers, k on one
    tier; a rack's or a leaf group's NICs otherwise)."""
    ts = shape.tree
    if ts is None:
        return shape.tiers[0].down
    return ts.radix // 2 if ts.tiers > 1 else ts.radix


def oversubscription_reason(role: str, down: int, up: int, requested: float | None, built: float | None,
                            down_speed: float, up_speed: float, pinned: str | None = None) -> str:
    """Why the built down:up differs from the one asked for (empty when it does not).

    >>> oversubscription_reason("ctsw", 192, 28, 7.0, 192 / 28, 400e9, 400e9)
    'uplinks are whole links: a ctsw has 192 down, ceil(192 / 7) = 28 up, so 6.86:1'
    """
    if requested is None or built is None or abs(built - requested) <= 1e-9 * requested:
        return ""
    if pinned:
        return f"{pinned} pins {up} uplinks per {role}: {down} down / {up} up = {built:.2f}:1"
    if down_speed != up_speed:
        return (f"uplinks are whole links: a {role} has {down} x {down_speed / 1e9:g}G down, ceil({down} x {down_speed / 1e9:g}"
                f" / ({requested:g} x {up_speed / 1e9:g})) = {up} x {up_speed / 1e9:g}G up, so {built:.2f}:1")
    return f"uplinks are whole links: a {role} has {down} down, ceil({down} / {requested:g}) = {up} up, so {built:.2f}:1"


# ---------------------------------------------------------------- AI-zone Clos


def cross_zone_ratio(spec: Spec) -> float | None:
    """The CTSW down:up factor the spec asks for, or None when there is no ATSW tier."""
    f = spec.fabric
    if not f.atsw or not f.atsw.count or spec.zones < 2:
        return None
    return f.atsw.oversubscription or 1.0


def rtsw_uplinks(spec: Spec) -> int:
    """Uplinks of one RTSW: ``fabric.rtsw.uplinks``, else ceil(down / oversubscription) by bandwidth when
    ``fabric.rtsw.oversubscription`` is given, else as many as it has NICs (1:1)."""
    f = spec.fabric
    down = spec.rack.nics * spec_plane_ports(spec) // max(1, spec.rack_type.rtsw_count)
    if f.rtsw and f.rtsw.uplinks is not None:
        return f.rtsw.uplinks
    if f.rtsw and f.rtsw.oversubscription and spec.rtsw_model is not None:
        ctsw = spec.catalog.switches.get(f.ctsw.model) if f.ctsw and f.ctsw.model else None
        up_speed = min(spec.rtsw_model.port_speed, ctsw.port_speed if ctsw else spec.rtsw_model.port_speed)
        nic_speed = min(spec_port_speed(spec), spec.rtsw_model.port_speed)
        return max(1, math.ceil(down * nic_speed / (f.rtsw.oversubscription * up_speed) - 1e-9))
    return down


def _ai_zone(spec: Spec) -> FabricShape:
    """One plane's zone fabric, times the planes (``fabric.planes``): every plane has its own RTSWs in each
    rack, CTSWs in each zone and ATSWs, sized for the NIC ports on it (twin.compiler.resolve.planes)."""
    f = spec.fabric
    P = f.planes
    per_rack = max(1, spec.rack_type.rtsw_count)
    nics = spec.rack.nics * spec_plane_ports(spec)  # NIC ports of a rack on one plane
    down = nics // per_rack
    up = rtsw_uplinks(spec)
    rtsw = spec.rtsw_model
    ctsw = spec.switch(f.ctsw.model)
    c = f.ctsw.count
    rack_up = up * per_rack
    cdown = ctsw_downlinks(spec.racks_per_zone * rack_up, c)
    ratio = cross_zone_ratio(spec)
    nic_speed = min(spec_port_speed(spec), rtsw.port_speed)
    up_speed = min(rtsw.port_speed, ctsw.port_speed)
    a_speed = min(ctsw.port_speed, spec.switch(f.atsw.model).port_speed) if ratio else up_speed
    cup = tuple(math.ceil(d * up_speed / (ratio * a_speed) - 1e-9) for d in cdown) if ratio else (0,) * c
    tiers = [
        Tier("rtsw", 1, spec.rack_type.rtsw or "", spec.racks * per_rack * P, down, up, rtsw.ports),
        Tier("ctsw", 2, f.ctsw.model, spec.zones * c * P, max(cdown), max(cup), ctsw.ports),
    ]
    asked = f.rtsw.oversubscription if f.rtsw else None
    built = down * nic_speed / (up * up_speed) if up else None
    pinned = "fabric.rtsw.uplinks" if f.rtsw and f.rtsw.uplinks is not None else None
    bounds = [
        Boundary("nic-rtsw", spec.racks * nics * P, nic_speed, None, None),
        Boundary("rtsw-ctsw", spec.zones * sum(cdown) * P, up_speed, asked, built,
                 oversubscription_reason("rtsw", down, up, asked, built, nic_speed, up_speed, pinned)),
    ]
    if ratio:
        atsw = spec.switch(f.atsw.model)
        a = f.atsw.count
        per_atsw = atsw_downlinks(spec.zones, cup, a)
        tiers.append(Tier("atsw", 3, f.atsw.model, a * P, max(per_atsw), 0, atsw.ports))
        built = sum(cdown) * up_speed / (sum(cup) * a_speed) if sum(cup) else None
        busiest = max(range(c), key=lambda j: (cdown[j], -j))
        why = oversubscription_reason("ctsw", cdown[busiest], cup[busiest], ratio, built, up_speed, a_speed)
        if why and len(set(cdown)) > 1:
            why += f" over the tier (CTSW downlinks {min(cdown)}-{max(cdown)})"
        bounds.append(Boundary("ctsw-atsw", spec.zones * sum(cup) * P, a_speed, ratio, built, why))
    return FabricShape(f.family.value, spec.racks * nics, tuple(tiers), tuple(bounds),
                       rack_uplinks=rack_up, ctsw_down=cdown, ctsw_up=cup, planes=P)


# ---------------------------------------------------------------- tree families


def tree_endpoints(spec: Spec) -> int:
    """NICs on a tree fabric: the GPUs asked for times NICs per GPU (the last rack may be part-filled)."""
    return spec.gpus * spec.chassis.nics // max(1, spec.chassis.gpus)


def _tree(spec: Spec) -> FabricShape:
    """One plane's tree (the fat-tree families' shape), times the planes: each plane is sized like the
    single-plane fabric of the same NICs at the NIC port's speed (twin.compiler.resolve.planes)."""
    f = spec.fabric
    P = f.planes
    sw = spec.switch(f.switch)
    k = sw.ports
    h = max(1, k // 2)
    z = tree_sizing(spec)
    ts, trees = z.tree, z.trees
    n = z.nics
    roles = fat_tree.role_names(ts.tiers)
    nic_speed = min(spec_port_speed(spec), sw.port_speed)
    m = ts.switches[0]
    tiers = []
    bounds = [Boundary(f"nic-{roles[0]}", n * P, nic_speed, None, None)]
    for t, count in enumerate(ts.switches):
        top = t == ts.tiers - 1
        if ts.tiers == 1:
            down, up = z.leaf_down, 0
        elif t == 0:
            down, up = z.leaf_down, h
        elif top:
            down, up = math.ceil(m * h / max(1, count)), 0
        else:
            down, up = h, h
        tiers.append(Tier(roles[t], t + 1, f.switch, count * trees * P, down, up, k))
        if t > 0:
            links = m * h * trees
            below_down = n * nic_speed if t == 1 else links * sw.port_speed
            built = below_down / (links * sw.port_speed)
            why = ""
            if t == 1 and abs(built - 1.0) > 1e-9:
                why = (f"a {roles[0]} keeps k/2 = {h} uplinks at {sw.port_speed / 1e9:g}G for at most {z.leaf_down} NICs"
                       f" at {nic_speed / 1e9:g}G ({n:,} NICs on {m * trees:,} {roles[0]}s)")
            bounds.append(Boundary(f"{roles[t - 1]}-{roles[t]}", links * P, sw.port_speed, 1.0, built, why))
    return FabricShape(f.family.value, n, tuple(tiers), tuple(bounds), tree=ts, trees=trees, rails_per_switch=z.rails_per_switch,
                       planes=P)


# ---------------------------------------------------------------- scalable units


def _unit(spec: Spec) -> FabricShape:
    """Leaves per rack per rail, spines per SU leaf group, core groups (twin.compiler.resolve.unit_shape),
    times the planes."""
    f = spec.fabric
    P = f.planes
    sw = spec.switch(f.switch)
    us = unit_shape(spec)
    leaves, spines, cores = us.counts()
    nics = host_count(spec) * us.rails  # whole units: the checks refuse a part-filled one
    nic_speed = min(spec_port_speed(spec), sw.port_speed)
    up = sw.port_speed
    tiers = (Tier("leaf", 1, f.switch, leaves * P, us.leaf_hosts, us.leaf_up, sw.ports),
             Tier("spine", 2, f.switch, spines * P, us.spine_down, us.spine_up, sw.ports),
             Tier("core", 3, f.switch, cores * P, us.core_down, 0, sw.ports))
    leaf_built = us.leaf_hosts * nic_speed / (us.leaf_up * up)
    spine_built = us.spine_down / us.spine_up
    bounds = (Boundary("nic-leaf", nics * P, nic_speed, None, None),
              Boundary("leaf-spine", leaves * us.leaf_up * P, up, None, leaf_built),
              Boundary("spine-core", spines * us.spine_up * P, up, None, spine_built))
    return FabricShape(f.family.value, nics, tiers, bounds, planes=P, unit=us)


# the shape of each layout (twin/lang/site/families.py)
SHAPES = {AI_ZONE_LAYOUT: _ai_zone, CLOS_LAYOUT: _tree, UNIT_LAYOUT: _unit}
