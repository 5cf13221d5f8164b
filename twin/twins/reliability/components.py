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

from dataclasses import dataclass, field, replace

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from twin.lang.site.reliability_models import FailureClass
from twin.twins.reliability import arrays

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
    """The parts of the design one job depends on: its servers and switches by id (sorted, so every run sees
    the same footprint), its NICs and cables counted, the lowest cable id of each tier as the tier's
    representative, and the rows of the graph's arrays it covers (for :class:`Reach`)."""

    gpus: int
    servers: tuple[str, ...]
    nics: int
    switches: dict[str, tuple[str, ...]]  # role -> switch ids
    levels: dict[str, int]  # role -> tier level (1 = rack / leaf)
    links: dict[str, int]  # tier -> cables of the tier
    first_links: dict[str, str] = field(default_factory=dict)  # tier -> its lowest cable id
    scale: float = 1.0  # >1: counts extrapolated from a smaller design
    trays: tuple[int, int] = (0, 0)  # compute and NVLink switch trays of the job's rack-scale systems (0: none)
    domain: tuple[int, int] = (0, 0)  # GPUs and racks of one rack-scale system (72, 1: NVL72; 72, 2: NVL36x2)
    planes: tuple[tuple[str, ...], ...] = ()  # the job's switches of each plane, on a multi-plane fabric (else empty)
    rows: tuple | None = field(default=None, compare=False, repr=False)  # (GraphArrays, NIC mask, switch mask)

    def count(self, per: str, group: str = "") -> int:
        """Components of kind ``per`` (and role / tier ``group``) the job depends on."""
        if per == "job":
            return 1
        if per == PLANE:  # a bigger job spans the same planes
            return len(self.planes)
        n = {"gpu": self.gpus, "server": len(self.servers), "nic": self.nics,
             "compute-tray": self.trays[0], "switch-tray": self.trays[1]}.get(per)
        if n is None:
            n = self.links.get(group, 0) if per == "link" else len(self.switches.get(group, ()))
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

    def representative(self, per: str, group: str) -> str:
        """The component whose failure stands for its role or tier: the lowest id."""
        if per == "link":
            return self.first_links.get(group, "")
        ids = self.switches.get(group, ())
        return ids[0] if ids else ""


def server_order(g: nx.MultiGraph) -> list[str]:
    """GPU servers in topology order (zone, rack, id), the order the job twin fills a topology job."""
    nodes = g.nodes
    return sorted((n for n, d in nodes(data=True) if d.get("role") == "server"),
                  key=lambda n: (nodes[n].get("zone") or 0, str(nodes[n].get("rack")), n))


def footprint(g: nx.MultiGraph, gpus: int, order: list[str] | None = None, links=None) -> Footprint:
    """The footprint of a job of ``gpus`` GPUs on the first servers of ``g`` in topology order (``links``:
    the design's link list of ``g``, read instead of the graph's edges when given)."""
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
    a = arrays.of(g, links)
    chosen = np.zeros(len(a.names), bool)
    chosen[[a.index[s] for s in servers]] = True
    nic = a.neighbours(chosen) & a.is_role("nic")
    switch = a.up_closure(a.neighbours(nic) & (a.level >= 1))
    inside = nic | switch
    cables = a.elink & inside[a.eu] & inside[a.ev]
    per_tier = np.bincount(a.etier[cables], minlength=len(a.tiers))
    first = {a.tiers[t]: min(a.keys_of(cables & (a.etier == t))) for t in np.flatnonzero(per_tier)}
    by_role: dict[str, list[str]] = {}
    for sw in a.names_of(switch):
        by_role.setdefault(str(nodes[sw]["role"]), []).append(sw)
    return Footprint(
        gpus=int(gpus), servers=tuple(servers), nics=int(nic.sum()),
        switches={r: tuple(sorted(v)) for r, v in sorted(by_role.items())},
        levels={r: int(nodes[v[0]].get("level", -1)) for r, v in sorted(by_role.items())},
        links={a.tiers[t]: int(per_tier[t]) for t in np.flatnonzero(per_tier)}, first_links=dict(sorted(first.items())),
        trays=(sum(int(nodes[s].get("trays", 0)) for s in servers), sum(int(nodes[s].get("switch_trays", 0)) for s in servers)),
        domain=(int(nodes[servers[0]].get("gpus", 0)), 2 if nodes[servers[0]].get("pair") else 1) if servers and nodes[servers[0]].get("trays") else (0, 0),
        planes=_planes(g, by_role),
        rows=(a, nic, switch),
    )


def _planes(g: nx.MultiGraph, by_role: dict[str, list[str]]) -> tuple[tuple[str, ...], ...]:
    """The switches of each plane (plane 1 first), when they span more than one plane."""
    by: dict[int, list[str]] = {}
    for sw in (s for v in by_role.values() for s in v):
        by.setdefault(int(g.nodes[sw].get("plane") or 0), []).append(sw)
    return tuple(tuple(sorted(by[p])) for p in sorted(by)) if len(by) > 1 else ()


def scaled(fp: Footprint, gpus: int) -> Footprint:
    """``fp`` extrapolated to a job of ``gpus`` GPUs (every count per GPU, for jobs beyond the design)."""
    return replace(fp, gpus=gpus, scale=gpus / fp.gpus)


class Reach:
    """Connectivity of the job's NICs on its footprint, to find what a switch or cable failure cuts off:
    the footprint's rows of the graph's arrays, renumbered, and one connected-components call per failure."""

    def __init__(self, g: nx.MultiGraph, fp: Footprint):
        a, nic, switch = fp.rows if fp.rows is not None else footprint(g, fp.gpus).rows
        self.a = a
        inside = nic | switch
        self.pos = np.full(len(a.names), -1, np.int64)
        self.n = int(inside.sum())
        self.pos[inside] = np.arange(self.n)
        host = ~a.elink  # a server's edge to each of its NICs
        server_of = np.full(len(a.names), -1, np.int64)
        to_v, to_u = host & nic[a.ev], host & nic[a.eu]
        server_of[a.ev[to_v]] = a.eu[to_v]
        server_of[a.eu[to_u]] = a.ev[to_u]
        nic_rows = np.flatnonzero(nic)
        self.nic_pos = self.pos[nic_rows]
        self.nic_server = np.unique(server_of[nic_rows], return_inverse=True)[1]
        self.cables = a.elink & inside[a.eu] & inside[a.ev]
        self.us, self.vs = self.pos[a.eu[self.cables]], self.pos[a.ev[self.cables]]
        self._keys: list[str] | None = None
        self._memo: dict[tuple, int] = {}

    def servers_cut(self, node: str | None = None, link: str | None = None, nodes: tuple[str, ...] = ()) -> int:
        """Servers of the job left without a path to the rest of the job when ``node`` (or all of ``nodes``,
        a plane) or ``link`` fails. A server is cut when one of its NICs is: the GPU behind it has no other NIC."""
        key = (node, link, nodes)
        if key not in self._memo:
            self._memo[key] = self._cut(node, link, nodes)
        return self._memo[key]

    def _cut(self, node, link, nodes) -> int:
        gone = np.zeros(self.n + 1, bool)  # the failed nodes' positions (a plane: ~15K switches), one mask over the cables
        gone[[self.pos[self.a.index[n]] for n in ((node,) if node is not None else ()) + tuple(nodes)]] = True
        keep = ~(gone[self.us] | gone[self.vs])
        if link is not None:
            if self._keys is None:
                self._keys = self.a.keys_of(self.cables)
            keep[self._keys.index(link)] = False
        m = coo_matrix((np.ones(int(keep.sum())), (self.us[keep], self.vs[keep])), shape=(self.n, self.n)).tocsr()
        _, labels = connected_components(m, directed=False)
        nic_labels = labels[self.nic_pos]
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
                rep = fp.representative(c.per, grp)
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

