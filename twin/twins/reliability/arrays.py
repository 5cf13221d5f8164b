"""The fabric graph as integer arrays, made once per graph, for the reliability twin's footprint.

A job's footprint on a million-GPU campus is a million NICs, their switches and 2.3 M cables. Walked node by
node through networkx's dictionaries it took 24 CPU seconds, more than the campaign's Monte Carlo. Here every
node is a row (role, tier level, GPUs) and every edge a pair of rows with its tier and kind, so the footprint
is a few passes of numpy masks over the edges, and the blast radius of a failure one connected-components
call on the footprint's rows.

The arrays are read from the design's own link list when the caller has it (``links``: a tuple per edge in id
order, what the fabric pass made the graph from), else from the graph's edges. They are kept per graph (a
weak reference: a failure case's copy of the graph gets its own), so the job-size sweep's footprints reuse them.

>>> from twin.twins.net import synthetic
>>> g = synthetic.clos(zones=1, racks_per_zone=2, servers_per_rack=1, gpus_per_server=8, ctsw_per_zone=2, rtsw_uplinks=2)
>>> a = of(g)
>>> len(a.names) == g.number_of_nodes(), len(a.eu) == g.number_of_edges()
(True, True)
>>> sorted(a.roles)[:3]
['ctsw', 'nic', 'rtsw']
"""

from __future__ import annotations

import weakref
from itertools import compress
from operator import itemgetter

import networkx as nx
import numpy as np

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class GraphArrays:
    """Rows per node and per edge of one fabric graph (node rows in the graph's insertion order)."""

    def __init__(self, g: nx.MultiGraph, links=None):
        nodes = g._node
        self.names: list[str] = list(nodes)
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        index = self.index
        attrs = list(nodes.values())
        n = len(attrs)
        role_of = [d.get("role") or "" for d in attrs]
        self.roles: list[str] = sorted(set(role_of))
        code = {r: i for i, r in enumerate(self.roles)}
        self.role = np.fromiter(map(code.__getitem__, role_of), np.int16, n)
        self.level = np.fromiter((-1 if (lv := d.get("level")) is None else int(lv) for d in attrs), np.int16, n)
        if links is None:  # (id, a, _, b, _, _, tier, kind) rows, as the fabric pass's Link tuples
            links = [(k, u, None, v, None, None, d.get("tier"), d.get("kind")) for u, v, k, d in g.edges(keys=True, data=True)]
        m = len(links)
        self.keys: list[str] = list(map(itemgetter(0), links))
        self.eu = np.fromiter(map(index.__getitem__, map(itemgetter(1), links)), np.int32, m)
        self.ev = np.fromiter(map(index.__getitem__, map(itemgetter(3), links)), np.int32, m)
        tiers = list(map(itemgetter(6), links))
        self.tiers: list[str] = sorted({str(t) for t in set(tiers)})
        tcode = {t: i for i, t in enumerate(self.tiers)}
        self.etier = np.fromiter((tcode[str(t)] for t in tiers), np.int16, m)
        self.elink = np.fromiter((k == "link" for k in map(itemgetter(7), links)), bool, m)

    def is_role(self, role: str) -> np.ndarray:
        """Mask of the nodes of one role."""
        return self.role == self.roles.index(role) if role in self.roles else np.zeros(len(self.names), bool)

    def neighbours(self, mask: np.ndarray, edges: np.ndarray | None = None) -> np.ndarray:
        """Mask of the nodes joined to a node of ``mask`` by an edge (of ``edges``, a mask over the edges)."""
        u, v = (self.eu, self.ev) if edges is None else (self.eu[edges], self.ev[edges])
        out = np.zeros(len(self.names), bool)
        out[v[mask[u]]] = True
        out[u[mask[v]]] = True
        return out

    def up_closure(self, start: np.ndarray) -> np.ndarray:
        """``start`` and every node reached from it by edges going up a tier level (a switch's uplinks)."""
        seen = start.copy()
        frontier = start
        lu, lv = self.level[self.eu], self.level[self.ev]
        while frontier.any():
            new = np.zeros_like(seen)
            new[self.ev[frontier[self.eu] & (lv > lu)]] = True
            new[self.eu[frontier[self.ev] & (lu > lv)]] = True
            frontier = new & ~seen
            seen |= frontier
        return seen

    def names_of(self, mask: np.ndarray) -> list[str]:
        return list(compress(self.names, mask))

    def keys_of(self, mask: np.ndarray) -> list[str]:
        return list(compress(self.keys, mask))


def of(g: nx.MultiGraph, links=None) -> GraphArrays:
    """The arrays of ``g``, made on first use (from ``links`` when given: the design's link list of this graph)."""
    a = _CACHE.get(g)
    if a is None:
        a = _CACHE[g] = GraphArrays(g, links)
    return a
