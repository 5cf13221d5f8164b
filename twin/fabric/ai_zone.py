"""Meta's AI-zone Clos: RTSW per rack, a CTSW tier per zone, an ATSW tier joining the zones.

Wiring rules (SIGCOMM 2024, Llama 3 s3.3):

- RTSW: NICs on ports 1..down, uplinks on the next ports; uplink t goes to CTSW ``t mod c`` of the
  zone, so 16 uplinks over 16 CTSWs is one link each and 18 over 18 likewise; uneven splits differ
  by at most one link per CTSW.
- CTSW: ``up = ceil(down / oversubscription)`` uplinks (the stated ratio is a ceiling on down:up);
  they go to the ATSWs of the CTSW's *plane*. With ``P = gcd(c, A)`` planes, CTSW j of every zone
  uses plane ``j mod P`` of ``A / P`` ATSWs and spreads over them round-robin. For Meta's 16 CTSWs
  and 16 ATSWs that is 16 planes of one ATSW each: CTSW j of every zone meets at ATSW j, so a
  cross-zone flow leaves on CTSW j and arrives on CTSW j of the other zone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

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


def synthesize(design: Design) -> Fabric:
    spec = design.spec
    f = spec.fabric
    placement = design.get("placement")
    b = Builder()
    rtsw_model = spec.rtsw_model
    ctsw_model = spec.switch(f.ctsw.model)
    c = f.ctsw.count
    down, up = rtsw_shape(spec)
    nic_speed = min(spec.nic_speed, rtsw_model.port_speed)
    up_speed = min(rtsw_model.port_speed, ctsw_model.port_speed)

    racks = sorted(placement.gpu_racks(), key=lambda r: (r.zone, r.index))
    ctsws: dict[int, list[str]] = {}
    for z in range(spec.zones):
        mounter = Mounter(placement, "ctsw", z)
        names = []
        for j in range(c):
            cid = f"z{z + 1}-ctsw-{j + 1:02d}"
            rack, u = mounter.mount(cid, ctsw_model)
            b.switch(cid, f.ctsw.model, ctsw_model, role="ctsw", level=2, hall=rack.position.hall, zone=z, rack=rack.id, u=u)
            names.append(cid)
        ctsws[z] = names

    n_rtsw = spec.rack_type.rtsw_count
    for rack in racks:
        nics = add_hosts(b, spec, rack, nic_speed)
        for r in range(n_rtsw):
            rid = f"{rack.id}-rtsw" if n_rtsw == 1 else f"{rack.id}-rtsw{r + 1}"
            b.switch(rid, spec.rack_type.rtsw, rtsw_model, role="rtsw", level=1, hall=rack.position.hall, zone=rack.zone, rack=rack.id, u=rtsw_u(spec.rack_type.height_u, rtsw_model, r))
            for nic in nics[r * down:(r + 1) * down]:
                b.link(nic, "port1", rid, b.port(rid), nic_speed, "nic-rtsw")
            zone_ctsws = ctsws[rack.zone]
            for t in range(up):
                b.uplink(rid, zone_ctsws[t % c], up_speed, "rtsw-ctsw")

    over = cross_zone_ratio(spec)
    if over is None:
        return b.build(f.family.value, f.technology.value, TIERS[:2], ROLES[:2])
    atsw_model = spec.switch(f.atsw.model)
    a_count = f.atsw.count
    mounter = Mounter(placement, "atsw", None)
    atsws = []
    for k in range(a_count):
        aid = f"atsw-{k + 1:02d}"
        rack, u = mounter.mount(aid, atsw_model)
        b.switch(aid, f.atsw.model, atsw_model, role="atsw", level=3, hall=rack.position.hall, zone=None, rack=rack.id, u=u)
        atsws.append(aid)
    planes = math.gcd(c, a_count)
    per_plane = a_count // planes
    a_speed = min(ctsw_model.port_speed, atsw_model.port_speed)
    for z in range(spec.zones):
        for j, cid in enumerate(ctsws[z]):
            cup = math.ceil(b.books[cid].used / over - 1e-9)
            plane = j % planes
            start = (j // planes + z) * cup  # rotate so every ATSW of a plane gets the same share
            for t in range(cup):
                b.uplink(cid, atsws[plane * per_plane + (start + t) % per_plane], a_speed, "ctsw-atsw")
    return b.build(f.family.value, f.technology.value, TIERS, ROLES)
