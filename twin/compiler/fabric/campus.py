"""A campus: AI-zone buildings joined at their ATSW layers, by a full mesh or by a campus spine tier.

Every building is a Meta building of its own ([llama3] s3.3.1): its zones' CTSWs go up to the
building's ATSW layer (``fabric.atsw.count`` ATSWs per building, the same plane rule as in one
building, with zones counted within the building). The campus tier then joins the ATSW layers
([meta-ncclx]: the Llama 4 generation joins the ATSW layers of several buildings in a full mesh):

- **full mesh** (``atsw-atsw`` links): ATSW k of building a meets ATSW k of every other building b
  (plane by plane, so a flow between buildings stays in its CTSW plane) with ``m_ab`` parallel links,
  ``m_ab = ceil(max(D_a, D_b) / (ratio x (B - 1)))`` where ``D`` is the most links any ATSW of the
  building takes from its zones: each ATSW's campus links are at least ``1/ratio`` of its zone links,
  split evenly over the other ``B - 1`` buildings.
- **spine** (``atsw-cssw`` links, a level-4 tier ``cssw``): ATSW k of building a has
  ``ceil(D_a / ratio)`` uplinks spread over the spines of its plane exactly as CTSW uplinks spread over
  ATSWs (:func:`twin.compiler.resolve.zone_links.ctsw_uplink_targets`, the building in the zone's place).

:func:`synthesize` builds the graph. Node names: ATSWs ``<building>-atsw-NN``, spines ``cssw-NN``; every node of a campus has a
``building`` attribute (0-based).

The counts are :mod:`twin.compiler.resolve.campus_shape` (``spec.shape.campus``); the graph is proven equal
to them like every fabric (:func:`twin.compiler.fabric.synthesis.mismatches`).
"""

from __future__ import annotations

from twin.compiler.fabric.ai_zone import mount_tier, wire_zones
from twin.compiler.fabric.attach import add_attachments
from twin.compiler.fabric.graph import Builder, Fabric
from twin.compiler.fabric.mount import Mounter
from twin.compiler.place.model import Placement
from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.zone_links import ctsw_uplink_targets


def synthesize(spec: Spec, placement: Placement) -> Fabric:
    """The campus graph: every building's zones and ATSW layer, then the campus tier."""
    f = spec.fabric
    shape = spec.shape
    cp = spec.campus
    info = shape.campus
    b = Builder()
    ctsws = wire_zones(b, spec, placement)
    for _node, attrs in b.nodes:  # everything wired so far belongs to its zone's building
        attrs["building"] = cp.zone_building[attrs["zone"]]
    c, a = f.ctsw.count, f.atsw.count
    a_speed = shape.boundaries[2].speed
    atsws: list[list[str]] = []
    for bp in cp.buildings:
        ids = [f"{bp.name}-atsw-{k + 1:02d}" for k in range(a)]
        atsws.append(mount_tier(b, Mounter(placement, "atsw", None, bp.halls), ids, f.atsw.model, "atsw", 3, None, spec, building=bp.index))
        for local, z in enumerate(bp.zones):
            for j, cid in enumerate(ctsws[0, z]):  # one plane (planes on a campus are refused)
                for k in ctsw_uplink_targets(local, j, shape.ctsw_up[j], c, a):
                    b.uplink(cid, atsws[-1][k], a_speed, "ctsw-atsw")
    speed = shape.boundary(cp.tier).speed
    if cp.topology == "full-mesh":
        for (x, y), m in sorted(info.pair_links.items()):
            for k in range(a):
                for _ in range(m):
                    b.uplink(atsws[x][k], atsws[y][k], speed, cp.tier)
        attach_in_buildings(b, spec, placement)
        return b.build(f.family.value, f.technology.value, shape.boundary_names, shape.roles)
    sb = cp.buildings[cp.spine_building]
    spines = mount_tier(b, Mounter(placement, "cssw", None, sb.halls), [f"cssw-{k + 1:02d}" for k in range(cp.spine_count)],
                        cp.spine_model, "cssw", 4, None, spec, building=sb.index)
    for x in range(len(cp.buildings)):
        for k in range(a):
            for t in ctsw_uplink_targets(x, k, info.atsw_up[x], a, cp.spine_count):
                b.uplink(atsws[x][k], spines[t], speed, cp.tier)
    attach_in_buildings(b, spec, placement)
    return b.build(f.family.value, f.technology.value, shape.boundary_names, shape.roles)


def attach_in_buildings(b: Builder, spec: Spec, placement: Placement) -> None:
    """The site's attachments (:func:`twin.compiler.fabric.attach.add_attachments`), each in the building of its hall."""
    first = len(b.nodes)
    add_attachments(b, spec, placement)
    building = {h: bp.index for bp in spec.campus.buildings for h in bp.halls}
    for _node, attrs in b.nodes[first:]:
        attrs["building"] = building[attrs["hall"]]
