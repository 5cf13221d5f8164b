"""The fabric graph and the builder every family uses to make one.

One :class:`Builder` collects nodes and links as plain tuples and makes the networkx graph in a single
bulk call at the end: adding 300K edges one by one through networkx would dominate the build time of a
100K-GPU site. The builder is also where "no port is used twice" is enforced, for every family at once.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import networkx as nx

from twin.compiler.fabric.ports import PortBook

HOST_TIER = "host"


def spine_group(attrs: dict):
    """The group a level-2 switch shares its ASN and its top-tier ECMP group with: its AI zone, or the
    pod (and rail) of a tree of three or more tiers; None for a 2-tier tree's top.

    >>> spine_group({"zone": 2}), spine_group({"zone": None, "pod": 3, "rail": 1}), spine_group({"zone": None})
    (2, (1, 3), None)
    """
    if attrs.get("zone") is not None:
        return attrs["zone"]
    if "pod" in attrs:
        return (attrs.get("rail"), attrs["pod"])
    return None


class Link(NamedTuple):
    """One edge of the graph: ``a`` is the lower-level end (NIC before leaf before spine)."""

    id: str
    a: str
    a_port: str
    b: str
    b_port: str
    speed: float  # bit/s
    tier: str
    kind: str  # "link" (a cable) or "host" (server to its NIC, not a cable)


class PortReuse(AssertionError):
    """Raised when two links claim the same (device, port); a bug in a family, never a user error."""


@dataclass(frozen=True)
class Fabric:
    """The synthesized fabric: the graph (the contract in ARCHITECTURE.md) plus indexes into it.

    ``links`` holds every edge in id order (host edges after cables) so that emitters and the cabling
    pass can stream them without walking networkx dictionaries; the graph is frozen, so the switch and
    cable lists every pass asks for are worked out once (``_memo``) and the id index on first use.
    """

    graph: nx.MultiGraph
    family: str
    technology: str
    links: tuple[Link, ...]
    tiers: tuple[str, ...]  # cable tiers bottom-up, e.g. ("nic-rtsw", "rtsw-ctsw", "ctsw-atsw")
    roles: tuple[str, ...]  # switch roles bottom-up, e.g. ("rtsw", "ctsw", "atsw")
    _by_id: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    _memo: dict[str, tuple] = field(default_factory=dict, repr=False, compare=False)

    def nodes(self, role: str) -> list[str]:
        """Node ids of one role in insertion (= name) order."""
        return [n for n, r in self.graph.nodes(data="role") if r == role]

    def server_count(self) -> int:
        """GPU servers: the server nodes (a tree family's last rack may be part-filled, so not always
        racks x servers per rack). The one server count: cost, review.json, the sweeps and the report read it."""
        if "servers" not in self._memo:
            self._memo["servers"] = sum(1 for d in self.graph._node.values() if d.get("role") == "server")
        return self._memo["servers"]

    def switches(self) -> list[str]:
        """Switch node ids in insertion (= name) order."""
        if "switches" not in self._memo:
            roles = set(self.roles)
            self._memo["switches"] = tuple(n for n, d in self.graph._node.items() if d.get("role") in roles)
        return list(self._memo["switches"])

    def cables(self) -> list[Link]:
        """The links that are physical cables (``kind == "link"``), in id order."""
        if "cables" not in self._memo:
            self._memo["cables"] = tuple(lk for lk in self.links if lk.kind == "link")
        return list(self._memo["cables"])

    def link(self, link_id: str) -> Link:
        if not self._by_id and self.links:
            self._by_id.update((lk.id, i) for i, lk in enumerate(self.links))
        return self.links[self._by_id[link_id]]

    def ports(self, device: str) -> dict[str, tuple[str, str, str]]:
        """{port: (link id, peer device, peer port)} of one device, sorted by link id."""
        out = {}
        for _, peer, key, d in sorted(self.graph.edges(device, keys=True, data=True), key=lambda e: e[2]):
            mine, theirs = ("a_port", "b_port") if d["a"] == device else ("b_port", "a_port")
            out[d[mine]] = (key, peer, d[theirs])
        return out

    def port_table(self, devices: Container[str] | None = None) -> dict[str, dict[str, tuple[str, str, str]]]:
        """:meth:`ports` of every device that has a link (or of those in ``devices``), from one pass over
        ``links`` in id order (the graph's edges are exactly these): an emitter asking device by device
        walks networkx's edge views thousands of times."""
        out: dict[str, dict[str, tuple[str, str, str]]] = {}
        for lid, a, a_port, b, b_port, *_ in sorted(self.links):  # ids are unique: sorted by id
            if devices is None or a in devices:
                out.setdefault(a, {})[a_port] = (lid, b, b_port)
            if devices is None or b in devices:
                out.setdefault(b, {})[b_port] = (lid, a, a_port)
        return out


class Builder:
    """Collects nodes and links in a deterministic order; ``build`` makes the frozen Fabric.

    "No port is used twice" is checked once over every cable end when the graph is built (one set of
    ``(device, port)`` pairs made in C), not per link: the link calls are the fabric pass's hot loop."""

    def __init__(self) -> None:
        self.nodes: list[tuple[str, dict[str, Any]]] = []
        self.links: list[Link] = []
        self.hosts: list[Link] = []
        self.books: dict[str, PortBook] = {}

    def node(self, node_id: str, **attrs: Any) -> str:
        self.nodes.append((node_id, attrs))
        return node_id

    def switch(self, node_id: str, model_name: str, model, **attrs: Any) -> str:
        self.books[node_id] = PortBook(node_id, model)
        return self.node(node_id, model=model_name, **attrs)

    def port(self, device: str) -> str:
        """The next free port of a switch."""
        return self.books[device].take()

    def link(self, a: str, a_port: str, b: str, b_port: str, speed: float, tier: str) -> str:
        lid = f"L{len(self.links) + 1:06d}"
        self.links.append(_new(Link, (lid, a, a_port, b, b_port, speed, tier, "link")))
        return lid

    def uplink(self, a: str, b: str, speed: float, tier: str, a_port: str | None = None) -> str:
        """A link between two switches (or a NIC and a switch) on their next free ports."""
        books = self.books
        return self.link(a, a_port if a_port is not None else books[a].take(), b, books[b].take(), speed, tier)

    def whole(self, a: str, b: str, speed: float, tier: str, r: int) -> str:
        """A link between two switches on ``r`` logical ports at each end run as one port (``fabric.cages``)."""
        books = self.books
        return self.link(a, books[a].take_whole(r), b, books[b].take_whole(r), speed, tier)

    def host(self, server: str, server_port: str, nic: str, speed: float) -> None:
        hid = f"H{len(self.hosts) + 1:06d}"
        self.hosts.append(_new(Link, (hid, server, server_port, nic, "pcie", speed, HOST_TIER, "host")))

    def build(self, family: str, technology: str, tiers: tuple[str, ...], roles: tuple[str, ...]) -> Fabric:
        _check_ports(self.links)
        g = nx.MultiGraph()
        add_nodes(g, self.nodes)
        self.nodes = []  # the graph owns the attribute dicts now
        every = self.links + self.hosts
        add_edges(g, ((a, b, lid, {"kind": kind, "a": a, "a_port": a_port, "b": b, "b_port": b_port, "speed": speed, "tier": tier})
                      for lid, a, a_port, b, b_port, speed, tier, kind in every))
        return Fabric(nx.freeze(g), family, technology, tuple(every), tiers, roles)


_new = tuple.__new__  # a NamedTuple from its fields in order, without the keyword parsing of its __new__


def _check_ports(links: list[Link]) -> None:
    """Raise :class:`PortReuse` naming the first (device, port) two cables share.

    The ports in use are gathered per device, a set of port names each, not as one set of (device,
    port) pairs: no tuple per cable end (105K on a 24K-GPU site), half the time. Only when two ends
    coincide are the links walked in order for the first of them."""
    used: dict[str, set[str]] = {}
    get = used.get
    for lk in links:
        a, b = lk[1], lk[3]
        ports = get(a)
        if ports is None:
            ports = used[a] = set()
        ports.add(lk[2])
        ports = get(b)
        if ports is None:
            ports = used[b] = set()
        ports.add(lk[4])
    if sum(map(len, used.values())) == 2 * len(links):
        return
    seen: set[tuple[str, str]] = set()
    for lk in links:
        for end in ((lk.a, lk.a_port), (lk.b, lk.b_port)):
            if end in seen:
                raise PortReuse(f"{end[0]} port {end[1]} used twice")
            seen.add(end)


def add_nodes(g: nx.MultiGraph, nodes: list[tuple[str, dict[str, Any]]]) -> None:
    """``g.add_nodes_from(nodes)`` into an empty graph, the attribute dicts taken over instead of copied
    (the caller hands fresh dicts and lets go of them); a repeated id is an error here."""
    node, adj = g._node, g._adj
    for n, attrs in nodes:
        if n in node:
            raise AssertionError("two devices share an id")
        adj[n] = {}
        node[n] = attrs
    nx._clear_cache(g)


def add_edges(g: nx.MultiGraph, edges) -> None:
    """``g.add_edges_from(edges)`` for ``(u, v, key, data)`` edges between nodes already in ``g``, each
    key new: the same adjacency in the same order (networkx's keeps one dict per pair of nodes, shared
    by both ends, and a data dict per key), without networkx's view and cache clearing per edge (a
    third of the fabric pass on a 24K-GPU site). Each data dict is taken over, not copied (the caller
    hands fresh dicts and lets go of them). A link naming an unknown device is an error here."""
    adj = g._adj
    for u, v, key, data in edges:
        if u not in adj or v not in adj:
            raise AssertionError(f"link {key} names a device that was never added")
        nbrs = adj[u]
        keydict = nbrs.get(v)
        if keydict is None:
            keydict = nbrs[v] = {}
            adj[v][u] = keydict
        elif key in keydict:
            raise AssertionError(f"two links share the id {key}")
        keydict[key] = data
    nx._clear_cache(g)
