"""The site as the cluster twin schedules it: servers in topology order with their AI zone and rack.

From a compiled design the servers come in the order the job twin fills a topology job (zone, rack,
server: :func:`twin.twins.reliability.components.server_order`); a job's servers inside one zone do not
cross the zones' shared tier (the ATSW layer, a fat tree's spines). ``uniform`` makes the same shape
without a design, for tests and benches.

>>> s = uniform(zones=2, racks_per_zone=3, servers_per_rack=2, gpus_per_server=8)
>>> s.servers, s.gpus, s.zone.tolist(), s.rack.tolist()[:4]
(12, 96, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ClusterSite:
    name: str
    gpus_per_server: int
    zone: np.ndarray  # per server: its AI zone (0-based; 0 everywhere when the fabric has no zones)
    rack: np.ndarray  # per server: its rack (0-based, global)
    ids: tuple[str, ...] = ()  # the servers' node ids on the fabric graph (empty: a synthetic site)
    trays: int = 0  # compute trays per server (a rack-scale system's NVLink domain is one server), else 0

    @property
    def servers(self) -> int:
        return int(len(self.zone))

    @property
    def gpus(self) -> int:
        return self.servers * self.gpus_per_server

    @property
    def zones(self) -> int:
        return int(self.zone.max()) + 1 if len(self.zone) else 0


def uniform(zones: int, racks_per_zone: int, servers_per_rack: int, gpus_per_server: int, name: str = "synthetic") -> ClusterSite:
    per_zone = racks_per_zone * servers_per_rack
    n = zones * per_zone
    idx = np.arange(n)
    return ClusterSite(name, gpus_per_server, (idx // per_zone).astype(np.int64), (idx // servers_per_rack).astype(np.int64))


def from_design(design) -> ClusterSite:
    """The compiled design's GPU servers (every server must hold the same GPUs: the scheduler's unit)."""
    from twin.twins.reliability.components import server_order

    g = design.fabric.graph
    order = server_order(g)
    nodes = g.nodes
    gpus = {int(nodes[s].get("gpus", 0)) for s in order}
    if len(gpus) != 1 or 0 in gpus:
        raise ValueError(f"the cluster twin needs servers of one size; the design has servers of {sorted(gpus)} GPUs")
    zones = np.array([int(nodes[s].get("zone") or 0) for s in order], np.int64)
    zones = np.unique(zones, return_inverse=True)[1].astype(np.int64)
    racks_named = [str(nodes[s].get("rack")) for s in order]
    rack_ids: dict[str, int] = {}
    racks = np.array([rack_ids.setdefault(r, len(rack_ids)) for r in racks_named], np.int64)
    return ClusterSite(design.name, gpus.pop(), zones, racks, tuple(order), int(nodes[order[0]].get("trays", 0) or 0))
