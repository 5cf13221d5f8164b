"""Small fabric graphs that follow the fabric-graph contract (ARCHITECTURE.md), built without a spec.

Why: the twin's known-answer tests need fabrics whose answer can be worked out by hand (a 1:1
two-tier Clos, a 1:7 ATSW tier, three racks of two servers) and must not depend on the fabric pass'
sizing choices. The graphs carry exactly the node and edge attributes the fabric pass promises, so
the engine cannot tell them apart from a compiled design.

>>> g = clos(zones=1, racks_per_zone=2, servers_per_rack=1, gpus_per_server=2, ctsw_per_zone=2)
>>> sorted(d["tier"] for *_, d in g.edges(data=True) if d["kind"] == "link")[:2]
['nic-rtsw', 'nic-rtsw']
"""

from __future__ import annotations

import networkx as nx


def clos(
    zones: int = 1,
    racks_per_zone: int = 4,
    servers_per_rack: int = 2,
    gpus_per_server: int = 8,
    ctsw_per_zone: int = 4,
    rtsw_uplinks: int | None = None,
    atsw: int = 0,
    ctsw_uplinks: int = 0,
    nic_speed: float = 400e9,
    fabric_speed: float | None = None,
    rtsw_model: str = "minipack2",
    ctsw_model: str = "minipack2",
    atsw_model: str = "minipack2",
) -> nx.MultiGraph:
    """An AI-zone Clos: RTSW per rack, ``ctsw_per_zone`` CTSWs per zone, ``atsw`` ATSWs across zones.

    ``rtsw_uplinks`` (default: as many as NICs in the rack, i.e. 1:1) are spread round-robin over the
    zone's CTSWs, ``ctsw_uplinks`` per CTSW round-robin over the ATSWs. Oversubscription at the ATSW
    tier is therefore ``(racks_per_zone * rtsw_uplinks / ctsw_per_zone) / ctsw_uplinks``.
    """
    g = nx.MultiGraph()
    fabric_speed = fabric_speed or nic_speed
    nics_per_rack = servers_per_rack * gpus_per_server
    up = nics_per_rack if rtsw_uplinks is None else rtsw_uplinks
    link_no = [0]
    ports: dict[str, int] = {}

    def port(node: str) -> str:
        ports[node] = ports.get(node, 0) + 1
        return f"Ethernet{ports[node]}"

    def link(a: str, b: str, speed: float, tier: str, kind: str = "link") -> None:
        link_no[0] += 1
        key = f"L{link_no[0]:06d}"
        pa = port(a) if kind == "link" else ""
        pb = port(b) if kind == "link" else ""
        g.add_edge(a, b, key=key, kind=kind, a=a, a_port=pa, b=b, b_port=pb, speed=speed, tier=tier)

    for z in range(zones):
        ctsws = [f"z{z + 1}-ctsw-{c + 1:02d}" for c in range(ctsw_per_zone)]
        for name in ctsws:
            g.add_node(name, role="ctsw", level=2, model=ctsw_model, hall="dh1", zone=z, rack=f"net-z{z + 1}")
        for r in range(racks_per_zone):
            rack = f"dh1-z{z + 1}-r{r + 1:03d}"
            rtsw = f"{rack}-rtsw"
            g.add_node(rtsw, role="rtsw", level=1, model=rtsw_model, hall="dh1", zone=z, rack=rack, rail=None)
            for s in range(servers_per_rack):
                srv = f"{rack}-s{s + 1}"
                g.add_node(srv, role="server", level=-1, hall="dh1", zone=z, rack=rack, gpus=gpus_per_server, model="test-server")
                for k in range(gpus_per_server):
                    nic = f"{srv}-nic{k}"
                    g.add_node(nic, role="nic", level=0, hall="dh1", zone=z, rack=rack, server=srv, gpu=k, rail=k)
                    link(srv, nic, nic_speed, "host", kind="host")
                    link(nic, rtsw, nic_speed, "nic-rtsw")
            for u in range(up):
                link(rtsw, ctsws[u % ctsw_per_zone], fabric_speed, "rtsw-ctsw")
    atsws = [f"atsw-{a + 1:02d}" for a in range(atsw)]
    for name in atsws:
        g.add_node(name, role="atsw", level=3, model=atsw_model, hall="dh1", zone=None, rack="net-core")
    if atsw:
        for z in range(zones):
            for c in range(ctsw_per_zone):
                for u in range(ctsw_uplinks):
                    link(f"z{z + 1}-ctsw-{c + 1:02d}", atsws[(c * ctsw_uplinks + u) % atsw], fabric_speed, "ctsw-atsw")
    return g
