"""The job's footprint on the fabric graph, and the failure modes a campaign exposes it to.

The footprint of a job of N GPUs is what it depends on: the first servers in topology order (zone,
rack, server, as the job twin places a topology-ordered job) until they hold N GPUs, their backend
NICs, the switches those NICs reach going up the tiers, and every cable between them. A failure class
of the catalog is counted on it (per GPU, server, NIC, rack switch, fabric switch, cable or job), so
the same class gives a different interruption rate on a different design.

What a switch or cable failure does is read off the graph, once per class and role (or tier): remove a
representative from the footprint and count the job's servers whose NICs fall out of the job's
connected component. An RTSW of the AI-zone fabric takes its rack (2 servers); a cable from a NIC takes
one server; a CTSW, ATSW or fabric cable takes none, so it does not stop the job, only narrows ECMP
(the network twin times the job on the degraded graph).

>>> from twin.twins.net import synthetic
>>> g = synthetic.clos(zones=1, racks_per_zone=3, servers_per_rack=2, gpus_per_server=8, ctsw_per_zone=4, rtsw_uplinks=4)
>>> fp = footprint(g, 32)
>>> len(fp.servers), fp.count("nic"), fp.count("rack-switch", "rtsw"), fp.count("fabric-switch", "ctsw")
(4, 32, 2, 4)
>>> r = Reach(g, fp)
>>> r.servers_cut(node=fp.switches["rtsw"][0]), r.servers_cut(node=fp.switches["ctsw"][0])
(2, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from twin.lang.site.reliability_models import FailureClass

SERVER_PARTS = ("gpu", "server", "nic")  # a failure of one of these takes its server
# A rack-scale system's trays: the server is the whole NVLink domain. A compute tray takes its GPUs, a switch
# tray a share of every GPU's NVLink links; either way a job laid out on whole domains (TP, EP, CP inside the
# domain) stops and swaps the domain (one server) for a spare until the tray is repaired.
TRAY_PARTS = ("compute-tray", "switch-tray")
# A whole network plane of a multi-plane fabric: every switch of it at once. Each GPU's NIC keeps its ports on
# the other planes, so the job loses no server (found on the graph, as for any switch) and runs on the
# surviving planes' bandwidth; the network twin times it with the plane down.
PLANE = "plane"


@dataclass(frozen=True)
class Footprint:
    """The parts of the design one job depends on (ids sorted, so every run sees the same footprint)."""

    gpus: int
    servers: tuple[str, ...]
    nics: tuple[str, ...]
    switches: dict[str, tuple[str, ...]]  # role -> switch ids
    levels: dict[str, int]  # role -> tier level (1 = rack / leaf)
    links: dict[str, tuple[str, ...]]  # tier -> link ids
    scale: float = 1.0  # >1: counts extrapolated from a smaller design
    trays: tuple[int, int] = (0, 0)  # compute and NVLink switch trays of the job's rack-scale systems (0: none)
    domain: tuple[int, int] = (0, 0)  # GPUs and racks of one rack-scale system (72, 1: NVL72; 72, 2: NVL36x2)
    planes: tuple[tuple[str, ...], ...] = ()  # the job's switches of each plane, on a multi-plane fabric (else empty)

    def count(self, per: str, group: str = "") -> int:
        """Components of kind ``per`` (and role / tier ``group``) the job depends on."""
        if per == "job":
            return 1
        if per == PLANE:  # a bigger job spans the same planes
            return len(self.planes)
        n = {"gpu": self.gpus, "server": len(self.servers), "nic": len(self.nics),
             "compute-tray": self.trays[0], "switch-tray": self.trays[1]}.get(per)
        if n is None:
            source = self.links if per == "link" else self.switches
            n = len(source.get(group, ()))
        return round(n * self.scale) if per != "gpu" else n

    def groups(self, per: str) -> list[str]:
        """Roles (switches) or tiers (links) of a kind present in the footprint, bottom-up."""
        if per == "rack-switch":
            return sorted((r for r, lv in self.levels.items() if lv == 1), key=lambda r: r)
        if per == "fabric-switch":
            return sorted((r for r, lv in self.levels.items() if lv >= 2), key=lambda r: (self.levels[r], r))
        if per == "link":
            return sorted(self.links)
        if per in TRAY_PARTS or per == PLANE:
            return [""] if self.count(per) else []
        return [""]


def server_order(g: nx.MultiGraph) -> list[str]:
    """GPU servers in topology order (zone, rack, id), the order the job twin fills a topology job."""
    nodes = g.nodes
    return sorted((n for n, d in nodes(data=True) if d.get("role") == "server"),
                  key=lambda n: (nodes[n].get("zone") or 0, str(nodes[n].get("rack")), n))


def footprint(g: nx.MultiGraph, gpus: int, order: list[str] | None = None) -> Footprint:
    """The footprint of a job of ``gpus`` GPUs on the first servers of ``g`` in topology order."""
    nodes = g.nodes
    order = server_order(g) if order is None else order
    servers, total = [], 0
    for s in order:
        if total >= gpus:
            break
        servers.append(s)
        total += int(nodes[s].get("gpus", 0))
    if total < gpus:
        raise ValueError(f"the design has {total:,} GPUs, the job needs {gpus:,}")
    nics = [n for s in servers for n in sorted(g.neighbors(s)) if nodes[n].get("role") == "nic"]

    def level(n: str) -> int:
        return int(nodes[n].get("level", -1))

    frontier = {nb for n in nics for nb in g.neighbors(n) if level(nb) >= 1}
    switches: set[str] = set()
    while frontier:
        switches |= frontier
        frontier = {nb for sw in frontier for nb in g.neighbors(sw) if level(nb) > level(sw) and nb not in switches}
    inside = set(nics) | switches
    links: dict[str, set[str]] = {}
    adj = g._adj  # neighbour -> {key: data}, networkx's own dicts: no view per node or edge (a million NICs on a campus)
    for u in inside:
        for v, keyed in adj[u].items():
            if v in inside:
                for key, d in keyed.items():
                    if d.get("kind") == "link":
                        links.setdefault(str(d.get("tier")), set()).add(str(key))
    by_role: dict[str, list[str]] = {}
    for sw in switches:
        by_role.setdefault(str(nodes[sw]["role"]), []).append(sw)
    return Footprint(
        gpus=int(gpus), servers=tuple(servers), nics=tuple(nics),
        switches={r: tuple(sorted(v)) for r, v in sorted(by_role.items())},
        levels={r: level(v[0]) for r, v in sorted(by_role.items())},
        links={t: tuple(sorted(v)) for t, v in sorted(links.items())},
        trays=(sum(int(nodes[s].get("trays", 0)) for s in servers), sum(int(nodes[s].get("switch_trays", 0)) for s in servers)),
        domain=(int(nodes[servers[0]].get("gpus", 0)), 2 if nodes[servers[0]].get("pair") else 1) if servers and nodes[servers[0]].get("trays") else (0, 0),
        planes=_planes(g, switches),
    )


def _planes(g: nx.MultiGraph, switches: set[str]) -> tuple[tuple[str, ...], ...]:
    """The switches of each plane (plane 1 first), when they span more than one plane."""
    by: dict[int, list[str]] = {}
    for sw in switches:
        by.setdefault(int(g.nodes[sw].get("plane") or 0), []).append(sw)
    return tuple(tuple(sorted(by[p])) for p in sorted(by)) if len(by) > 1 else ()


def scaled(fp: Footprint, gpus: int) -> Footprint:
    """``fp`` extrapolated to a job of ``gpus`` GPUs (every count per GPU, for jobs beyond the design)."""
    return Footprint(gpus, fp.servers, fp.nics, fp.switches, fp.levels, fp.links, scale=gpus / fp.gpus, trays=fp.trays, domain=fp.domain,
                     planes=fp.planes)


class Reach:
    """Connectivity of the job's NICs on its footprint, to find what a switch or cable failure cuts off."""

    def __init__(self, g: nx.MultiGraph, fp: Footprint):
        names = list(fp.nics) + [s for r in fp.switches for s in fp.switches[r]]
        self.index = {n: i for i, n in enumerate(names)}
        self.n = len(names)
        server_of = {n: g.nodes[n].get("server") for n in fp.nics}
        servers = sorted(set(server_of.values()))
        sidx = {s: i for i, s in enumerate(servers)}
        self.nic_server = np.array([sidx[server_of[n]] for n in fp.nics], np.int64)
        wanted = {key for tier in fp.links for key in fp.links[tier]}
        found: dict[str, tuple[int, int]] = {}
        adj = g._adj
        for n in names:
            for b, keyed in adj[n].items():
                for key in keyed:
                    if key in wanted and key not in found:
                        found[key] = (self.index[n], self.index[b])
        self.keys = sorted(found)
        self.key_index = {k: i for i, k in enumerate(self.keys)}
        us = np.array([found[k][0] for k in self.keys], np.int64)
        vs = np.array([found[k][1] for k in self.keys], np.int64)
        self.us, self.vs = us, vs

    def servers_cut(self, node: str | None = None, link: str | None = None, nodes: tuple[str, ...] = ()) -> int:
        """Servers of the job left without a path to the rest of the job when ``node`` (or all of ``nodes``,
        a plane) or ``link`` fails. A server is cut when one of its NICs is: the GPU behind it has no other NIC."""
        keep = np.ones(len(self.us), bool)
        for n in ((node,) if node is not None else ()) + tuple(nodes):
            i = self.index[n]
            keep &= (self.us != i) & (self.vs != i)
        if link is not None:
            keep[self.key_index[link]] = False
        m = coo_matrix((np.ones(int(keep.sum())), (self.us[keep], self.vs[keep])), shape=(self.n, self.n)).tocsr()
        _, labels = connected_components(m, directed=False)
        nic_labels = labels[: len(self.nic_server)]
        main = np.bincount(nic_labels).argmax()
        return len(np.unique(self.nic_server[nic_labels != main]))


@dataclass(frozen=True)
class Mode:
    """One way the job can be interrupted or slowed: a failure class on one role or tier of the footprint.

    ``kind``: restart (software: restart in place), swap (stop, swap ``servers`` for spares), straggle
    (slow by ``slowdown`` for ``detection``, then swap), planned (stop at a checkpoint for ``repair``),
    degrade (no stop: the job runs ``slowdown`` x slower for ``repair``).
    """

    name: str
    cls: str
    cause: str
    per: str
    group: str
    count: int
    rate: float  # per component and second
    kind: str
    servers: int
    detection: float
    repair: float
    slowdown: float = 1.0
    component: str = ""  # the representative switch or link whose failure was analysed
    notes: tuple[str, ...] = field(default=())

    @property
    def job_rate(self) -> float:
        """Occurrences per second for the whole job."""
        return self.rate * self.count


def failure_modes(classes: dict[str, FailureClass], fp: Footprint, reach: Reach | None) -> list[Mode]:
    """Every (class, role or tier) the job is exposed to, with its blast radius found on the graph."""
    out: list[Mode] = []
    for name in sorted(classes):
        c = classes[name]
        groups = fp.groups(c.per)
        for grp in groups:
            count = fp.count(c.per, grp)
            rep, servers = "", 0
            if c.per in SERVER_PARTS or c.per in TRAY_PARTS:
                servers = 1
            elif c.per == PLANE:
                rep = "plane1"
                if reach is not None:
                    servers = reach.servers_cut(nodes=fp.planes[0])
            elif c.per != "job":
                ids = (fp.links if c.per == "link" else fp.switches).get(grp, ())
                rep = ids[0] if ids else ""
                if rep and reach is not None:
                    servers = reach.servers_cut(link=rep) if c.per == "link" else reach.servers_cut(node=rep)
            if c.effect == "planned":
                kind = "planned"
            elif c.per == "job":
                kind = "restart"
            elif c.per in SERVER_PARTS or c.per in TRAY_PARTS or servers:
                kind = "straggle" if c.effect == "straggle" else "swap"
            else:
                kind = "degrade"
            notes = ()
            if c.per in TRAY_PARTS and fp.domain[0]:
                gpus, racks = fp.domain
                notes = (f"blast radius: the NVLink domain of {gpus} GPUs" + (f" over a pair of {racks} racks" if racks > 1 else " (one rack)"),)
            if c.per == PLANE:
                notes = (f"plane 1 down (its {len(fp.planes[0])} switches in the job's footprint) cuts {servers} server(s) off the job"
                         + (f"; every GPU keeps its NIC's ports on the other {len(fp.planes) - 1} plane(s)" if not servers else ""),)
            out.append(Mode(
                name=name if len(groups) == 1 and c.per not in ("link", "fabric-switch") else f"{name}/{grp}",
                cls=name, cause=c.cause, per=c.per, group=grp, count=count, rate=c.rate, kind=kind,
                servers=servers if kind in ("swap", "straggle") else 0, detection=c.detection, repair=c.repair,
                slowdown=c.slowdown, component=rep, notes=notes))
    return out

