"""The graph a rail-only fabric routes on (compiled by :mod:`twin.twins.net.topology`)."""

from __future__ import annotations

import networkx as nx


def rail_partitions(g: nx.MultiGraph) -> nx.MultiGraph:
    """The graph a rail-only fabric routes on: a switch shared by several rails (node attribute
    ``rails`` > 1, :mod:`twin.compiler.resolve.tree_sizing`) is one partition per rail (``<switch>/rail<r>``),
    since the rails of a rail-only fabric never meet (a VLAN/VRF or partition key per rail on the
    switch). Link ids and attributes are kept, so cable lengths still apply. Unshared: ``g`` itself.

    >>> g = nx.MultiGraph(); g.add_node("s", role="leaf", level=1, rail=0, rails=2)
    >>> for r in (0, 1): _ = g.add_node(f"n{r}", role="nic", level=0, rail=r); _ = g.add_edge(f"n{r}", "s", key=f"L{r}")
    >>> p = rail_partitions(g); list(p["n0"]), list(p["n1"])
    (['s/rail1'], ['s/rail2'])
    """
    shared = {n: d for n, d in g.nodes(data=True) if d.get("level", -1) >= 1 and (d.get("rails") or 1) > 1}
    if not shared:
        return g
    out = nx.MultiGraph()
    for n, d in g.nodes(data=True):
        if n in shared:
            out.add_nodes_from((f"{n}/rail{r + 1}", {**d, "rail": r, "rails": 1}) for r in range(d["rail"], d["rail"] + d["rails"]))
        else:
            out.add_node(n, **d)

    def end(x: str, other: str) -> str:
        if x not in shared:
            return x
        r = g.nodes[other].get("rail")
        return f"{x}/rail{(shared[x]['rail'] if r is None else r) + 1}"

    out.add_edges_from((end(u, v), end(v, u), k, d) for u, v, k, d in g.edges(keys=True, data=True))
    return out
