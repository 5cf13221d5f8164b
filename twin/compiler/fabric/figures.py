"""Figures of a fabric computed from its graph: counts, capacities, max-flow bisection, ECMP, hops.

Nothing here restates a sizing formula: capacities are sums over link edges, bisection is a max-flow
between two halves of the leaves (scipy's Dinic on the switch-level graph, parallel links merged),
hops are breadth-first distances. So a wiring bug shows up in the report as a wrong number.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from operator import attrgetter
from typing import NamedTuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow, shortest_path

from twin.compiler.fabric.graph import Fabric
from twin.compiler.resolve.cage_modes import factors
from twin.lang.site.families import family_traits
from twin.memo import last_call

GB = 1e9
MAX_FLOW_SAMPLES = 8  # zones whose inner bisection is computed (evenly spread; zones are alike)


@dataclass
class TierFigures:
    role: str
    count: int
    models: dict[str, int]
    down_bps: float  # summed over the tier
    up_bps: float
    uplinks: tuple[int, int]  # (min, max) uplinks per switch: ECMP members
    next_hops: tuple[int, int]  # (min, max) distinct upper neighbours per switch
    ports_used: int
    ports_total: int

    @property
    def oversubscription(self) -> float | None:
        return self.down_bps / self.up_bps if self.up_bps else None


@dataclass
class Figures:
    tiers: list[TierFigures]
    links: dict[str, tuple[int, float]]  # tier -> (count, capacity bit/s)
    injection_bps: float
    zone_bisection: tuple[float, float] | None  # (min max-flow between zone halves, half injection)
    zones_sampled: int
    cross_bisection: tuple[float, float] | None  # (max-flow between halves of the zones / of the site, half injection)
    cross_zone_per_zone: float | None  # capacity from one zone to the tier above (min over zones)
    worst_hops: int  # links on the longest shortest NIC-to-NIC path (reachable pairs)
    unreachable_leaf_pairs: bool  # True for rail-only: other rails only via NVLink
    extra: dict = field(default_factory=dict)


class LinkEnds(NamedTuple):
    """Every link of a fabric as arrays (one index per link end, nodes in graph order): what the
    figures count with numpy instead of a Python loop over a 100K-GPU fabric's ~500K links."""

    nodes: list[str]
    role: list[str]
    a: np.ndarray  # node index of each link's lower end
    b: np.ndarray  # and of its upper end
    cable: np.ndarray  # bool: a cable (kind "link"), not a host edge
    speed: np.ndarray  # bit/s


@last_call
def link_ends(fabric: Fabric) -> LinkEnds:
    index = {n: i for i, n in enumerate(fabric.graph)}
    links = fabric.links
    m = len(links)  # read through attrgetter and map, C loops over the ~3.4M links of the 2-plane gigawatt site
    return LinkEnds(list(index), [r for _, r in fabric.graph.nodes(data="role")],
                    np.fromiter(map(index.__getitem__, map(attrgetter("a"), links)), np.int64, m),
                    np.fromiter(map(index.__getitem__, map(attrgetter("b"), links)), np.int64, m),
                    np.fromiter(map("link".__eq__, map(attrgetter("kind"), links)), bool, m),
                    np.fromiter(map(attrgetter("speed"), links), float, m))


class SwitchGraph:
    """Switch-level view: indices, per-leaf injection, and merged capacities (Gbit/s, integers)."""

    def __init__(self, fabric: Fabric):
        g = fabric.graph
        roles = set(fabric.roles)
        e = link_ends(fabric)
        mine = [i for i, r in enumerate(e.role) if r in roles]
        self.names = [e.nodes[i] for i in mine]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.leaves = [n for n in self.names if g.nodes[n]["level"] == 1]
        switch_of = np.full(len(e.nodes), -1, np.int64)
        switch_of[mine] = np.arange(len(mine))
        a, b = switch_of[e.a[e.cable]], switch_of[e.b[e.cable]]
        gbit = np.rint(e.speed[e.cable] / GB).astype(np.int64)
        up = a >= 0  # switch to switch
        nic = ~up & np.array([r == "nic" for r in e.role], bool)[e.a[e.cable]]  # fabric attachments are not GPU injection
        if (b[up | nic] < 0).any():
            raise ValueError("a link from a switch or NIC ends at a node that is not a switch")
        self.inj = np.bincount(b[nic], weights=gbit[nic], minlength=len(self.names)).astype(np.int64)
        self.u = a[up]
        self.v = b[up]
        self.cap = gbit[up]
        n = len(self.names)
        self.adj = csr_matrix((np.ones(2 * len(self.u)), (np.r_[self.u, self.v], np.r_[self.v, self.u])), shape=(n, n))

    def max_flow(self, sources: list[str], sinks: list[str]) -> float:
        """Max flow (bit/s) from the NICs of ``sources`` leaves to the NICs of ``sinks`` leaves."""
        n = len(self.names)
        s, t = n, n + 1
        si = np.array([self.index[x] for x in sources], dtype=np.int64)
        ti = np.array([self.index[x] for x in sinks], dtype=np.int64)
        rows = np.r_[self.u, self.v, np.full(len(si), s), ti]
        cols = np.r_[self.v, self.u, si, np.full(len(ti), t)]
        data = np.r_[self.cap, self.cap, self.inj[si], self.inj[ti]].astype(np.int32)
        m = csr_matrix((data, (rows, cols)), shape=(n + 2, n + 2))
        m.sum_duplicates()
        return float(maximum_flow(m, s, t).flow_value) * GB

    def worst_hops(self, samples: int = 16) -> tuple[int, bool]:
        """(links on the longest leaf-to-leaf shortest path + 2 NIC links, some leaves unreachable)."""
        leaves = np.array([self.index[x] for x in self.leaves])
        src = leaves[np.linspace(0, len(leaves) - 1, min(samples, len(leaves))).astype(int)]
        d = shortest_path(self.adj, unweighted=True, indices=np.unique(src))[:, leaves]
        finite = d[np.isfinite(d)]
        return int(finite.max()) + 2, bool(np.isinf(d).any())


def _tier_figures(fabric: Fabric, spec) -> list[TierFigures]:
    """Per switch role: count, models, capacity down and up, uplinks and distinct upper switches per
    switch, ports used against ports owned. Counted with numpy over the links (one index per link end):
    a 100K-GPU fabric has ~500K links. Per-switch sums add in link order and per-role sums in node
    order, as a loop over the links would."""
    g = fabric.graph
    e = link_ends(fabric)
    nodes, role, n = e.nodes, e.role, len(e.nodes)
    ends = np.bincount(e.a, minlength=n) + np.bincount(e.b, minlength=n)  # ports in use: every edge is one of the links
    wide = factors(spec)
    if wide:  # a link of a tier in a wider breakout mode (fabric.cages) takes r logical ports at each end
        r = np.fromiter((wide.get(lk.tier, 1) for lk in fabric.links), np.int64, len(fabric.links))
        ends = np.bincount(e.a, weights=r, minlength=n).astype(np.int64) + np.bincount(e.b, weights=r, minlength=n).astype(np.int64)
    endpoint = np.array([r == "endpoint" for r in role], bool)
    keep = e.cable & ~endpoint[e.a]  # attachments use ports, not down:up
    a, b, speed = e.a[keep], e.b[keep], e.speed[keep]
    down = np.bincount(b, weights=speed, minlength=n)
    up = np.bincount(a, weights=speed, minlength=n)
    ups = np.bincount(a, minlength=n)  # uplinks per switch
    pairs = np.sort(a * n + b)  # np.unique's, by a sort: its hash table ran at a fifth of the speed past 3M links
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
    hops_of = np.bincount(pairs // n, minlength=n)  # the distinct switches above it that they reach
    out = []
    for r in fabric.roles:
        members = np.array([i for i, x in enumerate(role) if x == r], np.int64)
        models = Counter(g.nodes[nodes[i]]["model"] for i in members.tolist())
        total = sum(spec.switch(m).ports * c for m, c in models.items())
        out.append(TierFigures(
            r, len(members), dict(sorted(models.items())),
            sum(down[members].tolist()), sum(up[members].tolist()),
            (int(ups[members].min()), int(ups[members].max())), (int(hops_of[members].min()), int(hops_of[members].max())),
            int(ends[members].sum()), total,
        ))
    return out


@last_call
def compute(fabric: Fabric, spec) -> Figures:
    """The fabric's figures (max-flow bisection, tiers, hops). Computed once per fabric and spec: a second
    call with the same two objects returns the same Figures (read them, never change them)."""
    return _compute(fabric, spec)


def _compute(fabric: Fabric, spec) -> Figures:
    g = fabric.graph
    family = family_traits(fabric.family)
    sg = SwitchGraph(fabric)
    links: dict[str, list] = {}
    for lk in fabric.links:
        if lk.kind == "link":
            c = links.setdefault(lk.tier, [0, 0.0])
            c[0] += 1
            c[1] += lk.speed
    injection = float(sg.inj.sum()) * GB
    zone_of = {n: g.nodes[n].get("zone") for n in sg.leaves}
    zones = sorted({z for z in zone_of.values() if z is not None})
    zone_bis = None
    sampled = 0
    if zones:
        groups: dict = {z: [] for z in zones}  # each zone's leaves in leaf order, one pass (192 zones x 27,648 leaves at a gigawatt)
        for n in sg.leaves:
            if zone_of[n] is not None:
                groups[zone_of[n]].append(n)
        picks = [zones[i] for i in sorted(set(np.linspace(0, len(zones) - 1, min(MAX_FLOW_SAMPLES, len(zones))).astype(int)))]
        flows = []
        for z in picks:
            members = groups[z]
            half = len(members) // 2
            flows.append((sg.max_flow(members[:half], members[half:]), sum(sg.inj[sg.index[x]] for x in members[:half]) * GB))
        zone_bis = min(flows, key=lambda fl: fl[0] / fl[1] if fl[1] else 0)
        sampled = len(picks)
    cross = None
    per_zone = None
    if len(zones) > 1:
        half = len(zones) // 2
        a = [n for n in sg.leaves if zone_of[n] in zones[:half]]
        b = [n for n in sg.leaves if zone_of[n] in zones[half:]]
        cross = (sg.max_flow(a, b), float(sum(sg.inj[sg.index[x]] for x in a)) * GB)
        out_cap: dict[int, float] = defaultdict(float)
        zone = dict(g.nodes(data="zone"))
        level = dict(g.nodes(data="level", default=-1))
        for lk in fabric.links:
            if lk.kind == "link" and zone[lk.b] is None and zone[lk.a] is not None and level[lk.a] >= 1:
                out_cap[zone[lk.a]] += lk.speed
        per_zone = min(out_cap.values()) if out_cap else 0.0
    elif not zones or not family.zoned:
        leaves = [n for n in sg.leaves if g.nodes[n].get("rail") == 0] if family.rails_apart else sg.leaves
        half = len(leaves) // 2
        if half:
            cross = (sg.max_flow(leaves[:half], leaves[half:]), float(sum(sg.inj[sg.index[x]] for x in leaves[:half])) * GB)
    hops, unreachable = sg.worst_hops()
    return Figures(_tier_figures(fabric, spec), {k: (v[0], v[1]) for k, v in links.items()}, injection,
                   zone_bis, sampled, cross, per_zone, hops, unreachable)
