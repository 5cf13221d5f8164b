"""GPU servers and their NICs: the same in every family.

Every GPU rack holds ``servers`` servers of the rack type's chassis; each server has one backend NIC
per GPU (``nics`` of them). Names index from 1 (``s1``, ``nic1``), attributes from 0 (``gpu``, ``rail``)
as the graph contract says, so ``...-s1-nic3`` is GPU 2 of the first server.
"""

from __future__ import annotations

from twin.compiler.fabric.graph import HOST_TIER, Builder, Link
from twin.compiler.fabric.mount import server_u
from twin.compiler.place.model import PlacedRack
from twin.compiler.resolve.spec import Spec


def add_hosts(b: Builder, spec: Spec, rack: PlacedRack, speed: float, servers: int | None = None, first_server: int = 0,
              hb_domain: int | None = None, pair: tuple[PlacedRack, ...] = ()) -> list[str]:
    """Add the servers and NICs of one GPU rack (``servers`` of them when the last rack of a site is
    part-filled); return the NIC ids in (server, gpu) order.

    ``rail`` is the GPU's rank in its high-bandwidth (NVLink) domain of ``hb_domain`` GPUs, counted over
    the site's servers in order (``first_server`` is this rack's first); by default the GPU index.
    ``pair``: the other rack of a system over two racks (NVL36x2): the server (the NVLink domain) stands in
    ``rack`` with ``pair`` naming its partner, and the second half of its trays' NICs stand in the partner.

    A NIC's node and host edge go straight into the builder's lists (what ``b.node`` and ``b.host`` do,
    without two calls and a keyword dict per NIC: 100K NICs on a 100K-GPU site).
    """
    ch = spec.chassis
    hall = rack.hall
    racks = (rack, *pair)
    per_rack = ch.nics // len(racks)
    trays = {"trays": ch.rack_scale.compute_trays, "switch_trays": ch.rack_scale.switch_trays} if ch.rack_scale else {}
    if pair:
        trays["pair"] = pair[0].id
    ports = {"ports": ch.nic_ports} if ch.nic_ports > 1 else {}  # a multi-port NIC: port1..portN
    # where each GPU's NIC stands: (hall, zone, rack id), and its pcie port name
    at = [(r.hall, r.zone, r.id) for r in (racks[g // per_rack] for g in range(ch.nics))]
    pcie = [f"pcie{g + 1}" for g in range(ch.nics)]
    nodes, hosts = b.nodes, b.hosts
    new = tuple.__new__  # a Link from its fields in order (NamedTuple's own __new__ parses keywords)
    nics: list[str] = []
    for s in range(spec.rack_type.servers if servers is None else servers):
        sid = f"{rack.id}-s{s + 1}"
        u = server_u(ch.height_u, s)
        # a high-bandwidth domain of several servers (rail-only, hb_domain above the server's GPUs): which one
        domain = {"domain": (first_server + s) * ch.gpus // hb_domain} if hb_domain and hb_domain > ch.gpus else {}
        b.node(sid, role="server", level=-1, hall=hall, zone=rack.zone, rack=rack.id, gpus=ch.gpus, model=spec.rack_type.chassis, u=u,
               **trays, **domain)
        for g in range(ch.nics):
            nid = f"{sid}-nic{g + 1}"
            rail = ((first_server + s) * ch.gpus + g) % hb_domain if hb_domain else g
            h, z, rid = at[g]
            nodes.append((nid, {"role": "nic", "level": 0, "hall": h, "zone": z, "rack": rid, "server": sid, "gpu": g, "rail": rail,
                                "u": u, **ports}))
            hosts.append(new(Link, (f"H{len(hosts) + 1:06d}", sid, pcie[g], nid, "pcie", speed, HOST_TIER, "host")))
            nics.append(nid)
    return nics
