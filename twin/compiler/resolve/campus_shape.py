"""The campus tier's counts: the AI-zone shape extended with one ATSW layer per building and the tier
that joins them (the rules are in :mod:`twin.compiler.fabric.campus`). A fabric of ``P`` planes
(:mod:`twin.compiler.resolve.planes`) has all of it once per plane: ``P x buildings x fabric.atsw.count``
ATSWs, ``P`` times the campus links (and ``P x spine.count`` campus spines); the per-ATSW and per-pair
counts of :class:`CampusShape` are one plane's, the same on every plane.

``spec.shape`` of a campus site is :func:`campus_shape` applied to the AI-zone shape when the spec is
resolved (:mod:`twin.compiler.resolve.validate`), so the checks, the feasibility budget, the placement and the
address pools read the campus's counts from the same object as every other sizing fact.

>>> mesh_links(downs=[276, 276, 276, 276], ratio=2.8)[(0, 1)]   # the meta-campus-100k example
33
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from twin.compiler.resolve.attach_shape import attach_ports
from twin.compiler.resolve.shape import Boundary, FabricShape, Tier
from twin.compiler.resolve.zone_links import atsw_downlinks, ctsw_uplink_targets

if TYPE_CHECKING:
    from twin.compiler.resolve.spec import Spec


@dataclass(frozen=True)
class CampusShape:
    """The campus tier's counts (the rest of the fabric is the AI-zone shape)."""

    buildings: int
    atsw_per_building: int
    atsw_down: tuple[tuple[int, ...], ...]  # per building, per ATSW: links from its zones' CTSWs
    atsw_up: tuple[int, ...]  # per building: campus links of one of its ATSWs
    pair_links: dict[tuple[int, int], int]  # full mesh: links between ATSW k of a and ATSW k of b
    spine_down: tuple[int, ...] = ()  # spine: links into each campus spine switch
    tier: str = "atsw-atsw"


def mesh_links(downs: list[int], ratio: float) -> dict[tuple[int, int], int]:
    """Links between ATSW k of building a and ATSW k of building b (a < b) in a full mesh."""
    n = len(downs)
    return {(a, b): math.ceil(max(downs[a], downs[b]) / (ratio * (n - 1)) - 1e-9)
            for a in range(n) for b in range(a + 1, n)}


def campus_shape(spec: Spec, base: FabricShape) -> FabricShape:
    """``base`` (the AI-zone shape) with the ATSW tier per building and the campus tier added."""
    f = spec.fabric
    cp = spec.campus
    nb, a, P = len(cp.buildings), f.atsw.count, base.planes
    downs = tuple(atsw_downlinks(len(b.zones), base.ctsw_up, a) for b in cp.buildings)
    top = [max(d) for d in downs]
    atsw_model = spec.switch(f.atsw.model)
    tiers = [t for t in base.tiers if t.role != "atsw"]
    bounds = list(base.boundaries)
    if cp.topology == "full-mesh":
        pairs = mesh_links(top, cp.ratio)
        up = tuple(sum(pairs[(min(x, y), max(x, y))] for y in range(nb) if y != x) for x in range(nb))
        links = a * sum(pairs.values()) * P
        speed = atsw_model.port_speed
        spine_down: tuple[int, ...] = ()
        extra: list[Tier] = []
        ports_up = 2 * links  # a mesh link takes a campus port at both ends
    else:
        spine = spec.switch(cp.spine_model)
        s = cp.spine_count
        up = tuple(math.ceil(d / cp.ratio - 1e-9) for d in top)
        per = [0] * s
        for x in range(nb):
            for k in range(a):
                for t in ctsw_uplink_targets(x, k, up[x], a, s):
                    per[t] += 1
        spine_down = tuple(per)
        pairs = {}
        links = a * sum(up) * P
        speed = min(atsw_model.port_speed, spine.port_speed)
        extra = [Tier("cssw", 4, cp.spine_model, s * P, max(per), 0, spine.ports)]
        ports_up = links
    on_atsw = sum(x.links for x in base.attachments if x.role == "atsw")  # spread over every building's ATSWs
    n_atsw = nb * a * P
    tiers.append(Tier("atsw", 3, f.atsw.model, n_atsw, max(top), max(up), atsw_model.ports, attach_ports(on_atsw, n_atsw, 0)))
    total_down = sum(sum(d) for d in downs) * P
    n_att = len(base.attachments)  # attachments' boundaries stay last
    core, att = bounds[:len(bounds) - n_att], bounds[len(bounds) - n_att:]
    bounds = core + [Boundary(cp.tier, links, speed, cp.ratio, total_down / ports_up if ports_up else None)] + att
    info = CampusShape(nb, a, downs, up, pairs, spine_down, cp.tier)
    return replace(base, tiers=tuple(tiers + extra), boundaries=tuple(bounds), campus=info)
