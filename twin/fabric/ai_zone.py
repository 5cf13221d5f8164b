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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

from ..spec.diagnostics import InfeasibleError
from ..spec.resolve import Spec
from .graph import Builder, Fabric
from .hosts import add_hosts
from .mount import Mounter, rtsw_u

if TYPE_CHECKING:
    from ..design import Design

TIERS = ("nic-rtsw", "rtsw-ctsw", "ctsw-atsw")
ROLES = ("rtsw", "ctsw", "atsw")


def rtsw_shape(spec: Spec) -> tuple[int, int]:
    """(down, up) ports of one RTSW."""
    f = spec.fabric
    down = spec.rack.nics // max(1, spec.rack_type.rtsw_count)
    up = f.rtsw.uplinks if f.rtsw and f.rtsw.uplinks is not None else down
    return down, up


def cross_zone_ratio(spec: Spec) -> float | None:
    """The stated CTSW down:up factor, or None when there is no ATSW tier."""
    f = spec.fabric
    if not f.atsw or not f.atsw.count or spec.zones < 2:
        return None
    return f.atsw.oversubscription or 1.0


def ctsw_downlinks(spec: Spec) -> list[int]:
    """Downlinks of each CTSW of a zone: the zone's RTSW uplinks as one run around its CTSWs, so the
    first ``total mod c`` CTSWs take one more than the rest.

    The fabric pass wires the run link by link; this is the same count before a graph exists.
    """
    c = spec.fabric.ctsw.count
    total = spec.racks_per_zone * spec.rack_type.rtsw_count * rtsw_shape(spec)[1]
    return [total // c + (1 if j < total % c else 0) for j in range(c)]


def ctsw_uplinks(downlinks: int, over: float) -> int:
    """ATSW uplinks of a CTSW with ``downlinks`` below it: the stated down:up ratio is a ceiling.

    >>> ctsw_uplinks(192, 7.0), ctsw_uplinks(16, 2.0)
    (28, 8)
    """
    return math.ceil(downlinks / over - 1e-9)


def _mount_tier(b: Builder, mounter: Mounter, ids: list[str], model_name: str, role: str, level: int, zone: int | None, spec: Spec) -> list[str]:
    """Add and mount the switches of one network-rack tier (a zone's CTSWs, the ATSWs) in order."""
    model = spec.switch(model_name)
    for sid in ids:
        rack, u = mounter.mount(sid, model)
        b.switch(sid, model_name, model, role=role, level=level, hall=rack.position.hall, zone=zone, rack=rack.id, u=u)
    return ids


def synthesize(design: Design) -> Fabric:
    spec = design.spec
    f = spec.fabric
    placement = design.get("placement")
    b = Builder()
    rtsw_model = spec.rtsw_model
    ctsw_model = spec.switch(f.ctsw.model)
    c = f.ctsw.count
    n_rtsw = spec.rack_type.rtsw_count
    if n_rtsw < 1 or spec.rack.nics % n_rtsw:
        raise InfeasibleError([
            f"fabric: rack type '{spec.rack_type_name}' has {spec.rack.nics} NICs and {n_rtsw} RTSWs; an AI-zone Clos"
            " needs at least one RTSW and the same number of NICs on each (rtsw_count must divide the NIC count)"
        ])
    down, up = rtsw_shape(spec)
    nic_speed = min(spec.nic_speed, rtsw_model.port_speed)
    up_speed = min(rtsw_model.port_speed, ctsw_model.port_speed)

    racks = sorted(placement.gpu_racks(), key=lambda r: (r.zone, r.index))
    ctsws = {
        z: _mount_tier(b, Mounter(placement, "ctsw", z), [f"z{z + 1}-ctsw-{j + 1:02d}" for j in range(c)], f.ctsw.model, "ctsw", 2, z, spec)
        for z in range(spec.zones)
    }

    in_zone = {z: 0 for z in ctsws}  # RTSWs wired so far per zone: where the next one's uplinks start
    for rack in racks:
        nics = add_hosts(b, spec, rack, nic_speed)
        zone_ctsws = ctsws[rack.zone]
        for r in range(n_rtsw):
            rid = f"{rack.id}-rtsw" if n_rtsw == 1 else f"{rack.id}-rtsw{r + 1}"
            b.switch(rid, spec.rack_type.rtsw, rtsw_model, role="rtsw", level=1, hall=rack.position.hall, zone=rack.zone, rack=rack.id, u=rtsw_u(spec.rack_type.height_u, rtsw_model, r))
            for nic in nics[r * down:(r + 1) * down]:
                b.link(nic, "port1", rid, b.port(rid), nic_speed, "nic-rtsw")
            start = in_zone[rack.zone] * up
            for t in range(up):
                b.uplink(rid, zone_ctsws[(start + t) % c], up_speed, "rtsw-ctsw")
            in_zone[rack.zone] += 1

    over = cross_zone_ratio(spec)
    if over is None:
        return b.build(f.family.value, f.technology.value, TIERS[:2], ROLES[:2])
    atsw_model = spec.switch(f.atsw.model)
    a_count = f.atsw.count
    atsws = _mount_tier(b, Mounter(placement, "atsw", None), [f"atsw-{k + 1:02d}" for k in range(a_count)], f.atsw.model, "atsw", 3, None, spec)
    planes = math.gcd(c, a_count)
    per_plane = a_count // planes
    a_speed = min(ctsw_model.port_speed, atsw_model.port_speed)
    for z in range(spec.zones):
        for j, cid in enumerate(ctsws[z]):
            cup = ctsw_uplinks(b.books[cid].used, over)
            plane = j % planes
            start = (j // planes + z) * cup  # rotate so every ATSW of a plane gets the same share
            for t in range(cup):
                b.uplink(cid, atsws[plane * per_plane + (start + t) % per_plane], a_speed, "ctsw-atsw")
    return b.build(f.family.value, f.technology.value, TIERS, ROLES)
