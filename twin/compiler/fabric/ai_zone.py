"""Meta's AI-zone Clos: RTSW per rack, a CTSW tier per zone, an ATSW tier joining the zones.

Wiring rules ([meta-roce] Topology, [llama3] s3.3.1):

- RTSW: NICs on ports 1..down, uplinks on the next ports. A rack type with ``rtsw_count`` R > 1
  splits its NICs into R equal runs in (server, GPU) order (servers that fill whole RTSWs keep all
  their NICs on one switch); an uneven split is refused rather than leaving NICs unlinked.
- RTSW uplinks: the zone's RTSWs take their uplinks as one run around the zone's CTSWs: RTSW n (in
  zone order) sends uplink t to CTSW ``(n * up + t) mod c``. With 16 uplinks over 16 CTSWs that is
  one link each, 18 over 18 likewise; when c does not divide ``up`` (two RTSWs of 8 uplinks over 16
  CTSWs, 18 over 16) starting where the previous RTSW stopped keeps every CTSW's downlink count
  within one of the others, where starting every RTSW at CTSW 1 would leave the last CTSWs unused.
- CTSW: ``up = ceil(down / oversubscription)`` uplinks (the stated ratio is a ceiling on down:up);
  they go to the ATSWs of the CTSW's *plane*. With ``P = gcd(c, A)`` planes, CTSW j of every zone
  uses plane ``j mod P`` of ``A / P`` ATSWs and spreads over them round-robin. For Meta's 16 CTSWs
  and 16 ATSWs that is 16 planes of one ATSW each: CTSW j of every zone meets at ATSW j, so a
  cross-zone flow leaves on CTSW j and arrives on CTSW j of the other zone.
- Network planes (``fabric.planes`` P > 1): the zones' fabric once per plane, each its own RTSWs in every
  rack (stacked below the previous plane's), CTSWs, ATSWs, prefixed ``plane<p>-`` and tagged ``plane``
  (0-based); a NIC's ports ``(p - 1) * ports / P + 1``... go to plane p's RTSW of its rack.
"""

from __future__ import annotations

from twin.compiler.fabric.attach import add_attachments
from twin.compiler.fabric.graph import Builder, Fabric
from twin.compiler.fabric.hosts import add_hosts
from twin.compiler.fabric.mount import Mounter, rtsw_u
from twin.compiler.fabric.trees import plane_endpoints
from twin.compiler.place.model import Placement
from twin.compiler.resolve.planes import plane_attr, plane_prefix, spec_plane_ports
from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.zone_links import ctsw_uplink_targets
from twin.lang.diagnostics import InfeasibleError


def mount_tier(b: Builder, mounter: Mounter, ids: list[str], model_name: str, role: str, level: int, zone: int | None, spec: Spec,
               **attrs) -> list[str]:
    """Add and mount the switches of one network-rack tier (a zone's CTSWs, the ATSWs) in order;
    ``attrs`` are extra node attributes (a campus's ``building``)."""
    model = spec.switch(model_name)
    for sid in ids:
        rack, u = mounter.mount(sid, model)
        b.switch(sid, model_name, model, role=role, level=level, hall=rack.hall, zone=zone, rack=rack.id, u=u, **attrs)
    return ids


def wire_zones(b: Builder, spec: Spec, placement: Placement) -> dict[tuple[int, int], list[str]]:
    """Every zone's racks (hosts, RTSWs) and CTSWs, wired, once per plane; the CTSW ids of each (plane, zone)."""
    f = spec.fabric
    shape = spec.shape
    rtsw_model = spec.rtsw_model
    c = f.ctsw.count
    P, pp = shape.planes, spec_plane_ports(spec)
    n_rtsw = spec.rack_type.rtsw_count
    if n_rtsw < 1 or spec.rack.nics * pp % n_rtsw:
        raise InfeasibleError([
            f"fabric: rack type '{spec.rack_type_name}' has {spec.rack.nics} NICs and {n_rtsw} RTSWs; an AI-zone Clos"
            " needs at least one RTSW and the same number of NICs on each (rtsw_count must divide the NIC count)"
        ])
    down, up = shape.tier("rtsw").down, shape.tier("rtsw").up
    nic_speed = shape.boundaries[0].speed
    up_speed = shape.boundaries[1].speed

    racks = sorted(placement.gpu_racks(), key=lambda r: (r.zone, r.index))
    mounters = {z: Mounter(placement, "ctsw", z) for z in range(spec.zones)}  # a zone's planes share its CTSW racks
    ctsws = {
        (p, z): mount_tier(b, mounters[z], [f"{plane_prefix(p, P)}z{z + 1}-ctsw-{j + 1:02d}" for j in range(c)], f.ctsw.model,
                           "ctsw", 2, z, spec, **plane_attr(p, P))
        for p in range(P) for z in range(spec.zones)
    }
    in_zone = {key: 0 for key in ctsws}  # RTSWs wired so far per (plane, zone): where the next one's uplinks start
    for rack in racks:
        nics = add_hosts(b, spec, rack, spec.nic_speed)
        for p in range(P):
            ends = plane_endpoints(nics, p, pp)
            zone_ctsws = ctsws[p, rack.zone]
            for r in range(n_rtsw):
                name = "rtsw" if n_rtsw == 1 else f"rtsw{r + 1}"
                rid = f"{plane_prefix(p, P)}{rack.id}-{name}"
                b.switch(rid, spec.rack_type.rtsw, rtsw_model, role="rtsw", level=1, hall=rack.hall, zone=rack.zone, rack=rack.id,
                         u=rtsw_u(spec.rack_type.height_u, rtsw_model, p * n_rtsw + r), **plane_attr(p, P))
                for nic, port in ends[r * down:(r + 1) * down]:
                    b.link(nic, port, rid, b.port(rid), nic_speed, "nic-rtsw")
                start = in_zone[p, rack.zone] * up
                for t in range(up):
                    b.uplink(rid, zone_ctsws[(start + t) % c], up_speed, "rtsw-ctsw")
                in_zone[p, rack.zone] += 1
    return ctsws


def synthesize(spec: Spec, placement: Placement) -> Fabric:
    f = spec.fabric
    shape = spec.shape
    b = Builder()
    ctsws = wire_zones(b, spec, placement)
    c = f.ctsw.count
    if shape.tier("atsw") is None:
        add_attachments(b, spec, placement)
        return b.build(f.family.value, f.technology.value, shape.boundary_names, shape.roles)
    a_count = f.atsw.count
    a_speed = shape.boundaries[2].speed
    mounter = Mounter(placement, "atsw", None)
    for p in range(shape.planes):
        atsws = mount_tier(b, mounter, [f"{plane_prefix(p, shape.planes)}atsw-{k + 1:02d}" for k in range(a_count)], f.atsw.model,
                           "atsw", 3, None, spec, **plane_attr(p, shape.planes))
        for z in range(spec.zones):
            for j, cid in enumerate(ctsws[p, z]):
                for k in ctsw_uplink_targets(z, j, shape.ctsw_up[j], c, a_count):
                    b.uplink(cid, atsws[k], a_speed, "ctsw-atsw")
    add_attachments(b, spec, placement)
    return b.build(f.family.value, f.technology.value, shape.boundary_names, shape.roles)
