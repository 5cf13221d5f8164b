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

Network planes (``fabric.planes`` P > 1, :mod:`twin.compiler.resolve.planes`): the zones are built once per plane
(:func:`twin.compiler.fabric.ai_zone.wire_zones`), and so is everything above them: plane p has in every building its
own ``fabric.atsw.count`` ATSWs, fed by plane p's CTSWs of the building's zones, and its own mesh (ATSW k of
building a to ATSW k of building b of the same plane) or its own ``spine.count`` campus spines. The names take
the plane prefix (``plane2-b1-atsw-01``, ``plane2-cssw-01``) and the switches the ``plane`` attribute; a
building's planes share its ATSW racks, stacked plane after plane. No link joins two planes.

The counts are :mod:`twin.compiler.resolve.campus_shape` (``spec.shape.campus``); the graph is proven equal
to them like every fabric (:func:`twin.compiler.fabric.synthesis.mismatches`).
"""

from __future__ import annotations

from twin.compiler.fabric.ai_zone import mount_tier, wire_zones
from twin.compiler.fabric.attach import add_attachments
from twin.compiler.fabric.graph import Builder, Fabric
from twin.compiler.fabric.mount import Mounter
from twin.compiler.place.model import Placement
from twin.compiler.resolve.planes import plane_attr, plane_prefix
from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.zone_links import ctsw_uplink_targets


def synthesize(spec: Spec, placement: Placement) -> Fabric:
    """The campus graph: every building's zones and, plane by plane, its ATSW layer and the campus tier."""
    f = spec.fabric
    shape = spec.shape
    cp = spec.campus
    b = Builder()
    ctsws = wire_zones(b, spec, placement)
    for _node, attrs in b.nodes:  # everything wired so far belongs to its zone's building
        attrs["building"] = cp.zone_building[attrs["zone"]]
    mounters = [Mounter(placement, "atsw", None, bp.halls) for bp in cp.buildings]  # a building's planes share its ATSW racks
    sb = cp.buildings[cp.spine_building]
    spine_mounter = Mounter(placement, "cssw", None, sb.halls) if cp.topology != "full-mesh" else None
    for p in range(shape.planes):
        atsws = _atsw_layers(b, spec, mounters, ctsws, p)
        if spine_mounter is None:
            _mesh(b, spec, atsws)
        else:
            _spine(b, spec, spine_mounter, atsws, p)
    attach_in_buildings(b, spec, placement)
    return b.build(f.family.value, f.technology.value, shape.boundary_names, shape.roles)


def _atsw_layers(b: Builder, spec: Spec, mounters: list[Mounter], ctsws: dict[tuple[int, int], list[str]], p: int) -> list[list[str]]:
    """Plane ``p``'s ATSW layer of every building, fed by the plane's CTSWs of the building's zones; the ATSW ids per building."""
    f, shape, cp = spec.fabric, spec.shape, spec.campus
    c, a, P = f.ctsw.count, f.atsw.count, shape.planes
    a_speed = shape.boundaries[2].speed
    atsws: list[list[str]] = []
    for bp in cp.buildings:
        ids = [f"{plane_prefix(p, P)}{bp.name}-atsw-{k + 1:02d}" for k in range(a)]
        atsws.append(mount_tier(b, mounters[bp.index], ids, f.atsw.model, "atsw", 3, None, spec, building=bp.index, **plane_attr(p, P)))
        for local, z in enumerate(bp.zones):
            for j, cid in enumerate(ctsws[p, z]):
                for k in ctsw_uplink_targets(local, j, shape.ctsw_up[j], c, a):
                    b.uplink(cid, atsws[-1][k], a_speed, "ctsw-atsw")
    return atsws


def _mesh(b: Builder, spec: Spec, atsws: list[list[str]]) -> None:
    """One plane's full mesh (``atsws``: its ATSW ids per building): ATSW k of building x to ATSW k of building y,
    ``pair_links`` times."""
    cp = spec.campus
    speed = spec.shape.boundary(cp.tier).speed
    for (x, y), m in sorted(spec.shape.campus.pair_links.items()):
        for k in range(spec.fabric.atsw.count):
            for _ in range(m):
                b.uplink(atsws[x][k], atsws[y][k], speed, cp.tier)


def _spine(b: Builder, spec: Spec, mounter: Mounter, atsws: list[list[str]], p: int) -> None:
    """Plane ``p``'s campus spines, in the spine building, and every ATSW's uplinks to them."""
    cp, P = spec.campus, spec.shape.planes
    speed = spec.shape.boundary(cp.tier).speed
    sb = cp.buildings[cp.spine_building]
    ids = [f"{plane_prefix(p, P)}cssw-{k + 1:02d}" for k in range(cp.spine_count)]
    spines = mount_tier(b, mounter, ids, cp.spine_model, "cssw", 4, None, spec, building=sb.index, **plane_attr(p, P))
    for x in range(len(cp.buildings)):
        for k in range(spec.fabric.atsw.count):
            for t in ctsw_uplink_targets(x, k, spec.shape.campus.atsw_up[x], spec.fabric.atsw.count, cp.spine_count):
                b.uplink(atsws[x][k], spines[t], speed, cp.tier)


def attach_in_buildings(b: Builder, spec: Spec, placement: Placement) -> None:
    """The site's attachments (:func:`twin.compiler.fabric.attach.add_attachments`), each in the building of its hall."""
    first = len(b.nodes)
    add_attachments(b, spec, placement)
    building = {h: bp.index for bp in spec.campus.buildings for h in bp.halls}
    for _node, attrs in b.nodes[first:]:
        attrs["building"] = building[attrs["hall"]]
