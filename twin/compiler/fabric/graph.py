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
    pass can stream them without walking networkx dictionaries; the graph is frozen.
    """

    graph: nx.MultiGraph
    family: str
    technology: str
    links: tuple[Link, ...]
    tiers: tuple[str, ...]  # cable tiers bottom-up, e.g. ("nic-rtsw", "rtsw-ctsw", "ctsw-atsw")
    roles: tuple[str, ...]  # switch roles bottom-up, e.g. ("rtsw", "ctsw", "atsw")
    _by_id: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {lk.id: i for i, lk in enumerate(self.links)})

    def nodes(self, role: str) -> list[str]:
        """Node ids of one role in insertion (= name) order."""
        return [n for n, r in self.graph.nodes(data="role") if r == role]

    def server_count(self) -> int:
        """GPU servers: the server nodes (a tree family's last rack may be part-filled, so not always
        racks x servers per rack). The one server count: cost, review.json, the sweeps and the report read it."""
        return sum(1 for _, r in self.graph.nodes(data="role") if r == "server")

    def switches(self) -> list[str]:
        roles = set(self.roles)
        return [n for n, r in self.graph.nodes(data="role") if r in roles]

    def cables(self) -> list[Link]:
        """The links that are physical cables (``kind == "link"``), in id order."""
        return [lk for lk in self.links if lk.kind == "link"]

    def link(self, link_id: str) -> Link:
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
    """Collects nodes and links in a deterministic order; ``build`` makes the frozen Fabric."""

    def __init__(self) -> None:
        self.nodes: list[tuple[str, dict[str, Any]]] = []
        self.links: list[Link] = []
        self.hosts: list[Link] = []
        self.books: dict[str, PortBook] = {}
        self._ports: set[tuple[str, str]] = set()

    def node(self, node_id: str, **attrs: Any) -> str:
        self.nodes.append((node_id, attrs))
        return node_id

    def switch(self, node_id: str, model_name: str, model, **attrs: Any) -> str:
        self.books[node_id] = PortBook(node_id, model)
        return self.node(node_id, model=model_name, **attrs)

    def port(self, device: str) -> str:
        """The next free port of a switch."""
        return self.books[device].take()

    def _claim(self, device: str, port: str) -> None:
        key = (device, port)
        if key in self._ports:
            raise PortReuse(f"{device} port {port} used twice")
        self._ports.add(key)

    def link(self, a: str, a_port: str, b: str, b_port: str, speed: float, tier: str) -> str:
        self._claim(a, a_port)
        self._claim(b, b_port)
        lid = f"L{len(self.links) + 1:06d}"
        self.links.append(Link(lid, a, a_port, b, b_port, speed, tier, "link"))
        return lid

    def uplink(self, a: str, b: str, speed: float, tier: str, a_port: str | None = None) -> str:
        """A link between two switches (or a NIC and a switch) on their next free ports."""
        return self.link(a, a_port if a_port is not None else self.port(a), b, self.port(b), speed, tier)

    def host(self, server: str, server_port: str, nic: str, speed: float) -> None:
        hid = f"H{len(self.hosts) + 1:06d}"
        self.hosts.append(Link(hid, server, server_port, nic, "pcie", speed, HOST_TIER, "host"))

    def build(self, family: str, technology: str, tiers: tuple[str, ...], roles: tuple[str, ...]) -> Fabric:
        g = nx.MultiGraph()
        g.add_nodes_from(self.nodes)
        if g.number_of_nodes() != len(self.nodes):
            raise AssertionError("two devices share an id")
        every = self.links + self.hosts
        add_edges(g, (
            (lk.a, lk.b, lk.id, {"kind": lk.kind, "a": lk.a, "a_port": lk.a_port, "b": lk.b, "b_port": lk.b_port, "speed": lk.speed, "tier": lk.tier})
            for lk in every
        ))
        self._ports.clear()
        return Fabric(nx.freeze(g), family, technology, tuple(every), tiers, roles)


def add_edges(g: nx.MultiGraph, edges) -> None:
    """``g.add_edges_from(edges)`` for ``(u, v, key, data)`` edges between nodes already in ``g``, each
    key new: the same adjacency in the same order (networkx's keeps one dict per pair of nodes, shared
    by both ends, and a data dict per key), without networkx's view and cache clearing per edge (a
    third of the fabric pass on a 24K-GPU site). A link naming an unknown device is an error here."""
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
        keydict[key] = dict(data)
    nx._clear_cache(g)
