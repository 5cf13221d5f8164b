"""model/fabric.graphml and model/fabric.json: the fabric graph for other tools.

GraphML cannot hold None, so attributes that are None (a spine's zone) are left out of that node;
the JSON model is columnar (field names once, then rows) to stay compact for 100K-GPU sites. Both
keep the graph's insertion order, so the bytes are the same for the same spec.
"""

from __future__ import annotations

import io
import json

import networkx as nx

from ..design import Design

NODE_FIELDS = ["id", "role", "level", "model", "hall", "zone", "rack", "u", "server", "gpu", "rail", "gpus"]
LINK_FIELDS = ["id", "kind", "tier", "a", "a_port", "b", "b_port", "speed"]


def graphml_safe(g: nx.MultiGraph) -> nx.MultiGraph:
    """A copy without None-valued attributes (GraphML has no null)."""
    h = nx.MultiGraph()
    h.add_nodes_from((n, {k: v for k, v in d.items() if v is not None}) for n, d in g.nodes(data=True))
    h.add_edges_from((u, v, k, {a: x for a, x in d.items() if x is not None}) for u, v, k, d in g.edges(keys=True, data=True))
    return h


def graphml(g: nx.MultiGraph) -> bytes:
    buf = io.BytesIO()
    nx.write_graphml_xml(graphml_safe(g), buf, encoding="utf-8", prettyprint=True)
    return buf.getvalue()


def document(design: Design) -> dict:
    fabric = design.get("fabric")
    g = fabric.graph
    return {
        "format": "twin-fabric/1",
        "site": design.name,
        "family": fabric.family,
        "technology": fabric.technology,
        "tiers": list(fabric.tiers),
        "roles": list(fabric.roles),
        "node_fields": NODE_FIELDS,
        "nodes": [[n] + [d.get(f) for f in NODE_FIELDS[1:]] for n, d in g.nodes(data=True)],
        "link_fields": LINK_FIELDS,
        "links": [[lk.id, lk.kind, lk.tier, lk.a, lk.a_port, lk.b, lk.b_port, lk.speed] for lk in fabric.links],
    }


def emit(design: Design) -> dict[str, bytes]:
    fabric = design.get("fabric")
    if fabric is None:
        return {}
    js = json.dumps(document(design), separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"
    return {"model/fabric.graphml": graphml(fabric.graph), "model/fabric.json": js.encode("utf-8")}
