"""The part of a fabric a small simulation compiles: the first GPUs in topology order and the switches that
serve them (report-time twins, the plan search's problem, benchmarks on big sites).
"""

from __future__ import annotations

import networkx as nx


def first_gpus_subgraph(g: nx.MultiGraph, gpus: int) -> nx.MultiGraph:
    """The subgraph of :func:`first_gpus`, as a graph of its own."""
    return g.subgraph(first_gpus(g, gpus)).copy()


def first_gpus(g: nx.MultiGraph, gpus: int) -> set[str]:
    """The nodes of the fabric serving the first ``gpus`` GPUs in topology order: their servers, NICs
    and leaves, the spine switches of the zones they touch, and the core only when they span zones.
    Used to keep report-time and benchmark simulations small on big sites (``from_design(d,
    within=...)`` compiles them without copying the graph)."""
    attrs = g._node  # the raw node dicts: plain lookups, not NodeView calls
    adj = g._adj  # the raw adjacency dicts
    servers = sorted((n for n, d in attrs.items() if d.get("role") == "server"),
                     key=lambda n: (attrs[n].get("zone") or 0, str(attrs[n].get("rack")), n))
    keep_srv, total = [], 0
    for s in servers:
        if total >= gpus:
            break
        keep_srv.append(s)
        total += int(attrs[s].get("gpus", 0))
    racks = {attrs[s].get("rack") for s in keep_srv} | {attrs[s].get("pair") for s in keep_srv if attrs[s].get("pair")}
    zones = {attrs[s].get("zone") for s in keep_srv}
    keep = set(keep_srv)
    nics = []
    for n, d in attrs.items():
        level = d.get("level", -1)
        if d.get("role") == "nic" and d.get("server") in keep:
            nics.append(n)
        elif level == 1 and d.get("rack") in racks:
            keep.add(n)
        elif level == 2 and d.get("zone") in zones:
            keep.add(n)
        elif level >= 3 and len(zones) > 1:
            keep.add(n)
    keep.update(nics)
    # tree families (fat-tree, rail): leaves without a zone, mounted on network racks; keep the kept NICs'
    # leaves and every switch above them
    up = {nb for n in nics for nb in adj[n] if attrs[nb].get("level", -1) == 1 and attrs[nb].get("zone") is None}
    while up - keep:
        new = up - keep
        keep |= new
        up = {nb for sw in new for nb in adj[sw] if attrs[nb].get("level", -1) > attrs[sw]["level"]}
    return keep
