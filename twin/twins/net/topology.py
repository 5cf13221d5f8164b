"""The fabric graph compiled once into flat arrays the twin can vectorise over.

Why arrays: a 24K-GPU fabric has ~100K links and a collective has ~400K queue-pair flows; walking
networkx per flow would take minutes. We turn every cable into two directed *arcs* (parallel cables
stay separate arcs, since ECMP hashes over them), index switches and NICs, and precompute for every
switch ``u`` and every destination *leaf* ``t`` the ECMP group: the arcs out of ``u`` whose head is
one BFS hop closer to ``t`` (:mod:`twin.twins.net.ecmp`). Groups are per destination switch, not per
GPU, and identical groups are stored once, so a 1,680-switch fabric with 1,536 leaves needs ~10 MB.
The graph is read once, from its node and adjacency dicts; everything after that is numpy.

Worked example (2 racks, 2 CTSWs, 1 GPU per rack, 1:1): the leaf of rack 1 has a group of 2 up-arcs
towards the leaf of rack 2 (one per CTSW); each CTSW has a group of 1 down-arc.

NVLink is modelled as two virtual arcs per GPU (out of and into the NVSwitch) at the chassis' per-GPU,
per-direction NVLink bandwidth, so intra-server traffic shares the same fluid model as the network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from operator import itemgetter

import networkx as nx
import numpy as np

from twin.compiler.fabric.ports import port_names
from twin.heap import collector_paused
from twin.lang.site.families import family_traits
from twin.physics import DEFAULT_SWITCH_LATENCY_S, FIBER_DELAY_S_PER_M
from twin.twins.net.leafclass import Routes, class_routes
from twin.twins.net.lengths import cable_lengths
from twin.twins.net.planes import port_table
from twin.twins.net.rail_graph import rail_partitions

DEFAULT_LENGTH_M = {  # used only when no cabling pass gave a length (assumed, stated in results)
    "nic-rtsw": 2.0, "nic-leaf": 2.0,
    "rtsw-ctsw": 30.0, "leaf-spine": 30.0,
    "ctsw-atsw": 100.0, "spine-core": 100.0,
}


@dataclass
class Net:
    """A compiled fabric. Arcs ``0..n_link_arcs-1`` are cables; NVLink arcs follow."""

    switch_ids: list[str]
    switch_level: np.ndarray
    nic_ids: list[str]
    nic_leaf: np.ndarray  # switch index of the NIC's leaf
    nic_up: np.ndarray  # arc NIC -> leaf
    nic_down: np.ndarray  # arc leaf -> NIC
    nic_host: np.ndarray  # index of the NIC among its leaf's NICs (static pinning uses it)
    server_ids: list[str]
    server_zone: np.ndarray
    server_rack: list[str]
    server_building: np.ndarray  # a campus's building of each server (0 elsewhere)
    gpu_server: np.ndarray  # GPU -> server index
    gpu_local: np.ndarray  # GPU index inside its server
    gpu_nic: np.ndarray  # GPU -> NIC index (a multi-port NIC: its first live port)
    gpu_nvl_out: np.ndarray  # arc GPU -> NVSwitch, -1 without NVLink
    gpu_nvl_in: np.ndarray
    arc_tail: np.ndarray  # node index: switches 0..S-1, NICs S.., -1 for NVLink arcs
    arc_head: np.ndarray
    arc_cap: np.ndarray  # bytes/s
    arc_latency: np.ndarray  # s: propagation + forwarding latency of the head switch
    arc_link: list[str]  # link id (edge key) of each cable arc; "nvl-<gpu>-out/in" for NVLink
    arc_tier: list[str]
    n_link_arcs: int
    leaf_of_dest: np.ndarray  # destination index -> switch index
    dest_of_switch: np.ndarray  # switch index -> destination index, -1 if not a leaf
    routes: Routes  # hop counts and group ids of every (switch, destination), per class of leaves
    group_ptr: np.ndarray
    group_arcs: np.ndarray
    notes: list[str] = field(default_factory=list)
    gpu_ports: np.ndarray | None = None  # (GPUs, ports) NIC indices of each GPU's NIC ports, -1 padded; None: one port
    # an NVLink domain of several servers (rail-only, hb_domain above the server's GPUs): GPU -> domain
    # and GPU -> rail (its rank in the domain); None where the domain is the server
    gpu_domain: np.ndarray | None = None
    gpu_rail: np.ndarray | None = None
    # InfiniBand only (OpenSM's ftree orders by them): each cable arc's port number at its tail switch
    # (-1 at a NIC), and each switch's place in node-GUID order
    arc_port: np.ndarray | None = None
    switch_guid_order: np.ndarray | None = None

    @property
    def domain(self) -> np.ndarray:
        """GPU -> NVLink domain: the GPUs one NVLink reaches without the network (the server by default)."""
        return self.gpu_server if self.gpu_domain is None else self.gpu_domain

    @property
    def planes(self) -> int:
        """Ports of a GPU's NIC, each on its own plane of a multi-plane fabric (1 otherwise)."""
        return 1 if self.gpu_ports is None else int(self.gpu_ports.shape[1])

    @property
    def n_switches(self) -> int:
        return len(self.switch_ids)

    @property
    def n_gpus(self) -> int:
        return len(self.gpu_server)

    @property
    def n_arcs(self) -> int:
        return len(self.arc_cap)

    @cached_property
    def dist(self) -> np.ndarray:
        """(destinations, switches) hop counts, -1 unreachable, as one table (small fabrics and tests)."""
        return self.routes.dense_dist()

    @cached_property
    def group_of(self) -> np.ndarray:
        """(switches, destinations) group ids, -1 at the destination, -2 unreachable, as one table (small fabrics)."""
        return self.routes.dense_group_of()

    def group(self, u: int, t: int) -> np.ndarray:
        g = int(self.routes.group_at(u, t))
        return self.group_arcs[self.group_ptr[g]:self.group_ptr[g + 1]]


def compile_graph(
    g: nx.MultiGraph,
    switch_latency: dict[str, float] | None = None,
    nvlink_bandwidth: float | None = None,
    cable_length: dict[str, float] | None = None,
    within: set[str] | None = None,
    port_index: dict[str, dict[str, int]] | None = None,
    split_ports: bool = False,
) -> Net:
    """Compile a contract-conforming fabric graph.

    ``switch_latency`` maps a switch model to its forwarding latency (s); ``nvlink_bandwidth`` is per
    GPU and direction in bit/s (None: intra-server traffic goes through the leaf); ``cable_length``
    maps link ids to metres (missing links get :data:`DEFAULT_LENGTH_M` of their tier). ``within``:
    compile the subgraph of these nodes only (what ``g.subgraph(within)`` would give, without copying
    the graph: every list below is sorted, so the result does not depend on the graph's order).
    ``port_index`` (switch -> port name -> number): record each arc's port, for OpenSM's ftree order.
    ``split_ports``: a NIC with several ports (node attribute ``ports`` > 1, one per plane) is compiled as
    one NIC per port, ``<nic>/port<j>`` (reading the NIC's attributes, its id kept beside it), each with its own up- and down-arc
    and its plane's leaf (:mod:`twin.twins.net.planes`), read off the graph as it is: no copy of it.
    """
    switch_latency = switch_latency or {}
    cable_length = cable_length or {}
    notes: list[str] = []
    raw = g._node.items()  # the raw node dicts, in the order the NodeView gives them
    nodes = raw if within is None else ((n, d) for n, d in raw if n in within)
    split = {}  # a multi-port NIC -> its ports' nodes, each in the NIC's place
    attrs = {}
    nic_of = {}  # a split port's node -> its NIC (its attributes are the NIC's, read only; a graph's own port nodes say `nic`)
    if split_ports:
        for n, d in nodes:
            k = d.get("ports") or 1
            if k > 1 and d.get("role") == "nic":
                split[n] = ps = [f"{n}/port{j}" for j in range(1, k + 1)]
                for p in ps:
                    attrs[p] = d
                    nic_of[p] = n
            else:
                attrs[n] = d
    else:
        attrs.update(nodes)
    switches = sorted((n for n, d in attrs.items() if d.get("level", -1) >= 1), key=lambda n: (attrs[n]["level"], n))
    servers = sorted((n for n, d in attrs.items() if d.get("role") == "server"),
                     key=lambda n: (attrs[n].get("zone") or 0, str(attrs[n].get("rack")), n))
    srv_idx = {n: i for i, n in enumerate(servers)}
    nics = sorted((n for n, d in attrs.items() if d.get("role") == "nic"),
                  key=lambda n: (srv_idx.get(attrs[n].get("server"), 1 << 30), attrs[n].get("gpu", 0), n))
    S = len(switches)
    index = {n: i for i, n in enumerate(switches)}  # node index: switches 0..S-1, NICs S..
    index.update((n, S + i) for i, n in enumerate(nics))
    cables = _cables(g, index, split)
    keys = [k if type(k) is str else str(k) for _, _, k, _ in cables]
    order = sorted(range(len(cables)), key=keys.__getitem__)  # by link id, stable
    cables = [cables[i] for i in order]
    keys = [keys[i] for i in order]

    # every cable is two arcs, u -> v then v -> u (u: the end the graph's edge iteration meets first)
    lengths, defaulted = [], 0
    for _, _, key, d in cables:
        if key in cable_length:
            lengths.append(float(cable_length[key]))
        elif "length" in d:
            lengths.append(float(d["length"]))
        else:
            lengths.append(DEFAULT_LENGTH_M.get(d.get("tier", ""), 30.0))
            defaulted += 1
    if defaulted:
        notes.append(f"{defaulted // 1} cable(s) without a length from the cabling pass: default lengths per tier {DEFAULT_LENGTH_M}")
    ends = np.empty((len(cables), 2), np.int64)
    for j in (0, 1):
        ends[:, j] = np.fromiter(map(index.__getitem__, map(itemgetter(j), cables)), np.int64, len(cables))
    tails_a = ends.reshape(-1)
    heads_a = ends[:, ::-1].reshape(-1)
    n_link_arcs = len(tails_a)
    fwd = np.zeros(S + len(nics))  # forwarding latency of an arc's head: its switch model's, 0 at a NIC
    fwd[:S] = [switch_latency.get(attrs[n].get("model"), DEFAULT_SWITCH_LATENCY_S) for n in switches]
    caps = np.repeat(np.array([float(d["speed"]) for _, _, _, d in cables]) / 8.0, 2)
    lats = np.repeat(np.asarray(lengths, float) * FIBER_DELAY_S_PER_M, 2) + fwd[heads_a]
    links = list(chain.from_iterable(zip(keys, keys)))
    tier = [d.get("tier", "") for _, _, _, d in cables]
    tiers = list(chain.from_iterable(zip(tier, tier)))
    nic_up, nic_down = _first_arcs(tails_a, heads_a, S, len(nics)), _first_arcs(heads_a, tails_a, S, len(nics))
    nic_leaf = np.where(nic_up >= 0, heads_a[np.maximum(nic_up, 0)] if n_link_arcs else -1, -1)

    # GPUs, in server order; GPU k of a server uses the NIC with gpu == k (or shares one: k * nics // gpus)
    nic_by_server: dict[str, list[int]] = {}
    for i, n in enumerate(nics):
        nic_by_server.setdefault(attrs[n].get("server"), []).append(i)
    # a multi-port NIC (split_ports) is one node per port with the NIC's id in ``nic``: a GPU gets all its ports
    gpu_server, gpu_local, gpu_ports = [], [], []
    for si, s in enumerate(servers):
        own: dict[str, list[int]] = {}
        for i in nic_by_server.get(s, []):
            own.setdefault(nic_of.get(nics[i]) or attrs[nics[i]].get("nic", nics[i]), []).append(i)  # a port's NIC
        cards = list(own.values())
        ng = int(attrs[s].get("gpus", len(cards)))
        if not cards or ng == 0:
            continue
        gpu_server += [si] * ng
        gpu_local += range(ng)
        gpu_ports += [cards[k * len(cards) // ng] for k in range(ng)]
    gpu_nic = [p[0] for p in gpu_ports]
    G = len(gpu_server)
    gpu_domain = gpu_rail = None
    if any(attrs[s].get("domain") is not None for s in servers):  # an NVLink domain of several servers
        ids = {d: i for i, d in enumerate(sorted({attrs[s].get("domain", -1) for s in servers}))}
        by_server = np.array([ids[attrs[s].get("domain", -1)] for s in servers], np.int64)
        gpu_domain = by_server[np.asarray(gpu_server, np.int64)] if G else np.zeros(0, np.int64)
        gpu_rail = np.array([attrs[nics[i]].get("rail", 0) for i in gpu_nic], np.int64)
    nvl_out = np.full(G, -1, np.int64)
    nvl_in = np.full(G, -1, np.int64)
    if nvlink_bandwidth:  # two virtual arcs per GPU after the cables: out of it, then into it
        nvl_out[:] = n_link_arcs + 2 * np.arange(G)
        nvl_in[:] = nvl_out + 1
        tails_a = np.concatenate([tails_a, np.full(2 * G, -1, np.int64)])
        heads_a = np.concatenate([heads_a, np.full(2 * G, -1, np.int64)])
        caps = np.concatenate([caps, np.full(2 * G, nvlink_bandwidth / 8.0)])
        lats = np.concatenate([lats, np.zeros(2 * G)])
        links += [f"nvl-{k}-{tag}" for k in range(G) for tag in ("out", "in")]
        tiers += ["nvlink"] * (2 * G)

    # host index of each NIC among its leaf's NICs, in (server, gpu) order: static pinning reads it
    by_leaf = np.argsort(nic_leaf, kind="stable")
    first = np.searchsorted(nic_leaf[by_leaf], nic_leaf[by_leaf])
    nic_host = np.zeros(len(nics), np.int64)
    nic_host[by_leaf] = np.arange(len(nics)) - first

    leaves = np.unique(nic_leaf[nic_leaf >= 0])
    dest_of_switch = np.full(S, -1, np.int64)
    dest_of_switch[leaves] = np.arange(len(leaves))
    routes, gptr, garcs = class_routes(S, tails_a[:n_link_arcs], heads_a[:n_link_arcs], leaves)

    return Net(
        switch_ids=switches,
        switch_level=np.array([attrs[n]["level"] for n in switches], np.int64),
        nic_ids=nics,
        nic_leaf=nic_leaf,
        nic_up=nic_up,
        nic_down=nic_down,
        nic_host=nic_host,
        arc_port=None if port_index is None else _arc_ports(cables, port_index),
        switch_guid_order=None if port_index is None else _guid_order(attrs, switches),
        server_ids=servers,
        server_zone=np.array([attrs[s].get("zone") or 0 for s in servers], np.int64),
        server_rack=[str(attrs[s].get("rack")) for s in servers],
        server_building=np.array([attrs[s].get("building") or 0 for s in servers], np.int64),
        gpu_server=np.asarray(gpu_server, np.int64),
        gpu_local=np.asarray(gpu_local, np.int64),
        gpu_nic=np.asarray(gpu_nic, np.int64),
        gpu_nvl_out=nvl_out,
        gpu_nvl_in=nvl_in,
        arc_tail=tails_a,
        arc_head=heads_a,
        arc_cap=caps,
        arc_latency=lats,
        arc_link=links,
        arc_tier=tiers,
        n_link_arcs=n_link_arcs,
        leaf_of_dest=leaves,
        dest_of_switch=dest_of_switch,
        routes=routes,
        group_ptr=gptr,
        group_arcs=garcs,
        notes=notes,
        gpu_ports=port_table(gpu_ports),
        gpu_domain=gpu_domain,
        gpu_rail=gpu_rail,
    )


def _cables(g: nx.MultiGraph, inside: dict[str, int], split: dict[str, list[str]] | None = None) -> list[tuple]:
    """The cables (edges of kind ``link``) between nodes of ``inside``, as ``g.edges(keys=True,
    data=True)`` yields them (each once, from the end met first in node order), read from the
    adjacency dicts of the inside nodes only. An end in ``split`` (a multi-port NIC) is the node of the
    port the cable leaves it from (``<nic>/<its a_port or b_port>``), as if each port were a node in the
    NIC's place."""
    out, seen = [], set()
    add = out.append
    split = split or {}

    def end(x: str, d: dict) -> str:
        return f"{x}/{d['a_port'] if d.get('a') == x else d.get('b_port')}" if x in split else x

    for n, nbrs in g._adj.items():  # the raw dicts: the public views wrap every level
        n_split = n in split
        if not n_split and n not in inside:
            continue
        for nbr, kd in nbrs.items():
            if nbr in seen:
                continue
            nbr_split = nbr in split
            if nbr_split or nbr in inside:
                for k, d in kd.items():
                    if d.get("kind") == "link":
                        add((end(n, d) if n_split else n, end(nbr, d) if nbr_split else nbr, k, d))
        seen.add(n)
    return out


def _arc_ports(cables: list[tuple], port_index: dict[str, dict[str, int]]) -> np.ndarray:
    """Port number of each arc (u -> v, then v -> u per cable) at its tail, -1 where the tail is not a switch."""
    out = np.full(2 * len(cables), -1, np.int64)
    for i, (u, v, _, d) in enumerate(cables):
        for j, (n, other) in enumerate(((u, v), (v, u))):
            if n in port_index:
                out[2 * i + j] = port_index[n][d["a_port"] if d.get("a") == n and d.get("b") == other else d["b_port"]]
    return out


def _guid_order(attrs: dict, switches: list[str]) -> np.ndarray:
    """Each switch's place in graph order, the order twin numbers node GUIDs in (OpenSM keys switches by GUID)."""
    rank = {n: i for i, n in enumerate(n for n in attrs if attrs[n].get("level", -1) >= 1)}
    return np.array([rank[n] for n in switches], np.int64)


def _first_arcs(tails: np.ndarray, heads: np.ndarray, S: int, n_nics: int) -> np.ndarray:
    """Each NIC's first arc (in arc order) from it to a switch (``tails``, ``heads``; swap them for the
    arcs into it), -1 without one."""
    cand = np.flatnonzero((tails >= S) & (heads < S))
    nic = tails[cand] - S
    out = np.full(n_nics, -1, np.int64)
    _, first = np.unique(nic, return_index=True)
    out[nic[first]] = cand[first]
    return out


SUBFABRIC_NODES = 100_000  # below this many nodes a compile looks its cables' lengths up one by one


def from_design(design, graph: nx.MultiGraph | None = None, within: set[str] | None = None) -> Net:
    """Compile the fabric of a compiled :class:`~twin.compiler.design.Design` with its catalog figures
    (``within``: only the subgraph of these nodes, e.g. :func:`twin.twins.net.subfabric.first_gpus`)."""
    fabric = design.fabric
    if graph is None:
        if fabric is None or getattr(fabric, "graph", None) is None:
            raise ValueError("the design has no fabric graph (the fabric pass did not run)")
        graph = fabric.graph
    spec = design.spec
    latency = {name: m.latency for name, m in spec.catalog.switches.items()}
    if fabric is not None and family_traits(fabric.family).rails_apart:
        if within is not None:
            graph, within = graph.subgraph(within), None
        graph = rail_partitions(graph)
    ports = None
    if fabric is not None and getattr(fabric.technology, "value", fabric.technology) == "infiniband":
        by_model = {m: {p: i + 1 for i, p in enumerate(port_names(spec.switch(m)))}
                    for m in {d.get("model") for _, d in graph.nodes(data=True) if d.get("level", -1) >= 1}}
        ports = {n: by_model[d["model"]] for n, d in graph.nodes(data=True) if d.get("level", -1) >= 1}
    few = within is not None and len(within) < SUBFABRIC_NODES  # a subfabric reads few lengths: looked up, not tabled
    with collector_paused():  # millions of tuples, lists and strings, none cyclic (a million GPUs: 26 s collected, 16 s not)
        return compile_graph(graph, latency, spec.chassis.nvlink_bandwidth, cable_lengths(design, few), within, ports,
                             split_ports=fabric is not None and spec.chassis.nic_ports > 1)
