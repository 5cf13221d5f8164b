"""The fabric graph compiled once into flat arrays the twin can vectorise over.

Why arrays: a 24K-GPU fabric has ~100K links and a collective has ~400K queue-pair flows; walking
networkx per flow would take minutes. We turn every cable into two directed *arcs* (parallel cables
stay separate arcs, since ECMP hashes over them), index switches and NICs, and precompute for every
switch ``u`` and every destination *leaf* ``t`` the ECMP group: the arcs out of ``u`` whose head is
one BFS hop closer to ``t``. Groups are per destination switch, not per GPU, and identical groups are
stored once, so a 1,680-switch fabric with 1,536 leaves needs ~10 MB.

Worked example (2 racks, 2 CTSWs, 1 GPU per rack, 1:1): the leaf of rack 1 has a group of 2 up-arcs
towards the leaf of rack 2 (one per CTSW); each CTSW has a group of 1 down-arc.

NVLink is modelled as two virtual arcs per GPU (out of and into the NVSwitch) at the chassis' per-GPU,
per-direction NVLink bandwidth, so intra-server traffic shares the same fluid model as the network.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from twin.lang.site.families import family_traits
from twin.physics import DEFAULT_SWITCH_LATENCY_S, FIBER_DELAY_S_PER_M
from twin.twins.net.planes import plane_ports, port_table
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
    dist: np.ndarray  # (destinations, switches) hop count, -1 unreachable
    group_of: np.ndarray  # (switches, destinations) group id; -1 at the destination, -2 unreachable
    group_ptr: np.ndarray
    group_arcs: np.ndarray
    notes: list[str] = field(default_factory=list)
    gpu_ports: np.ndarray | None = None  # (GPUs, ports) NIC indices of each GPU's NIC ports, -1 padded; None: one port

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

    def group(self, u: int, t: int) -> np.ndarray:
        g = self.group_of[u, t]
        return self.group_arcs[self.group_ptr[g]:self.group_ptr[g + 1]]


def compile_graph(
    g: nx.MultiGraph,
    switch_latency: dict[str, float] | None = None,
    nvlink_bandwidth: float | None = None,
    cable_length: dict[str, float] | None = None,
    within: set[str] | None = None,
) -> Net:
    """Compile a contract-conforming fabric graph.

    ``switch_latency`` maps a switch model to its forwarding latency (s); ``nvlink_bandwidth`` is per
    GPU and direction in bit/s (None: intra-server traffic goes through the leaf); ``cable_length``
    maps link ids to metres (missing links get :data:`DEFAULT_LENGTH_M` of their tier). ``within``:
    compile the subgraph of these nodes only (what ``g.subgraph(within)`` would give, without copying
    the graph: every list below is sorted, so the result does not depend on the graph's order).
    """
    switch_latency = switch_latency or {}
    cable_length = cable_length or {}
    notes: list[str] = []
    nodes = g.nodes
    node_data = list(nodes(data=True) if within is None else ((n, d) for n, d in nodes(data=True) if n in within))
    switches = sorted((n for n, d in node_data if d.get("level", -1) >= 1), key=lambda n: (nodes[n]["level"], n))
    sidx = {n: i for i, n in enumerate(switches)}
    servers = sorted((n for n, d in node_data if d.get("role") == "server"),
                     key=lambda n: (nodes[n].get("zone") or 0, str(nodes[n].get("rack")), n))
    srv_idx = {n: i for i, n in enumerate(servers)}
    nics = sorted((n for n, d in node_data if d.get("role") == "nic"),
                  key=lambda n: (srv_idx.get(nodes[n].get("server"), 1 << 30), nodes[n].get("gpu", 0), n))
    nidx = {n: i for i, n in enumerate(nics)}
    S = len(switches)

    def node_index(n: str) -> int:
        return sidx[n] if n in sidx else S + nidx[n]

    tails, heads, caps, lats, links, tiers = [], [], [], [], [], []
    nic_up = np.full(len(nics), -1, np.int64)
    nic_down = np.full(len(nics), -1, np.int64)
    nic_leaf = np.full(len(nics), -1, np.int64)
    defaulted = 0
    inside = sidx.keys() | nidx.keys()
    cables = [e for e in g.edges(keys=True, data=True) if e[3].get("kind") == "link" and e[0] in inside and e[1] in inside]
    for u, v, key, d in sorted(cables, key=lambda e: str(e[2])):
        if key in cable_length:
            length = float(cable_length[key])
        elif "length" in d:
            length = float(d["length"])
        else:
            length = DEFAULT_LENGTH_M.get(d.get("tier", ""), 30.0)
            defaulted += 1
        prop = length * FIBER_DELAY_S_PER_M
        cap = float(d["speed"]) / 8.0
        for a, b in ((u, v), (v, u)):
            arc = len(tails)
            tails.append(node_index(a))
            heads.append(node_index(b))
            caps.append(cap)
            fwd = switch_latency.get(nodes[b].get("model"), DEFAULT_SWITCH_LATENCY_S) if b in sidx else 0.0
            lats.append(prop + fwd)
            links.append(str(key))
            tiers.append(d.get("tier", ""))
            if a in nidx and b in sidx and nic_up[nidx[a]] < 0:
                nic_up[nidx[a]] = arc
                nic_leaf[nidx[a]] = sidx[b]
            if b in nidx and a in sidx and nic_down[nidx[b]] < 0:
                nic_down[nidx[b]] = arc
    if defaulted:
        notes.append(f"{defaulted // 1} cable(s) without a length from the cabling pass: default lengths per tier {DEFAULT_LENGTH_M}")
    n_link_arcs = len(tails)

    # GPUs, in server order; GPU k of a server uses the NIC with gpu == k (or shares one: k * nics // gpus)
    nic_by_server: dict[str, list[int]] = {}
    for i, n in enumerate(nics):
        nic_by_server.setdefault(nodes[n].get("server"), []).append(i)
    # a multi-port NIC (plane_ports) is one node per port with the NIC's id in ``nic``: a GPU gets all its ports
    gpu_server, gpu_local, gpu_nic, gpu_ports = [], [], [], []
    for si, s in enumerate(servers):
        own: dict[str, list[int]] = {}
        for i in nic_by_server.get(s, []):
            own.setdefault(nodes[nics[i]].get("nic", nics[i]), []).append(i)
        cards = list(own.values())
        ng = int(nodes[s].get("gpus", len(cards)))
        if not cards or ng == 0:
            continue
        for k in range(ng):
            ports = cards[k * len(cards) // ng]
            gpu_server.append(si)
            gpu_local.append(k)
            gpu_nic.append(ports[0])
            gpu_ports.append(ports)
    G = len(gpu_server)
    nvl_out = np.full(G, -1, np.int64)
    nvl_in = np.full(G, -1, np.int64)
    if nvlink_bandwidth:
        for k in range(G):
            for arr, tag in ((nvl_out, "out"), (nvl_in, "in")):
                arr[k] = len(tails)
                tails.append(-1)
                heads.append(-1)
                caps.append(nvlink_bandwidth / 8.0)
                lats.append(0.0)
                links.append(f"nvl-{k}-{tag}")
                tiers.append("nvlink")

    # host index of each NIC among its leaf's NICs, in (server, gpu) order: static pinning reads it
    nic_host = np.zeros(len(nics), np.int64)
    seen: dict[int, int] = {}
    for i in range(len(nics)):
        leaf = int(nic_leaf[i])
        nic_host[i] = seen.get(leaf, 0)
        seen[leaf] = nic_host[i] + 1

    tails_a = np.asarray(tails, np.int64)
    heads_a = np.asarray(heads, np.int64)
    leaves = np.unique(nic_leaf[nic_leaf >= 0])
    dest_of_switch = np.full(S, -1, np.int64)
    dest_of_switch[leaves] = np.arange(len(leaves))
    dist, group_of, gptr, garcs = ecmp_groups(S, tails_a[:n_link_arcs], heads_a[:n_link_arcs], leaves)

    return Net(
        switch_ids=switches,
        switch_level=np.array([nodes[n]["level"] for n in switches], np.int64),
        nic_ids=nics,
        nic_leaf=nic_leaf,
        nic_up=nic_up,
        nic_down=nic_down,
        nic_host=nic_host,
        server_ids=servers,
        server_zone=np.array([nodes[s].get("zone") or 0 for s in servers], np.int64),
        server_rack=[str(nodes[s].get("rack")) for s in servers],
        server_building=np.array([nodes[s].get("building") or 0 for s in servers], np.int64),
        gpu_server=np.asarray(gpu_server, np.int64),
        gpu_local=np.asarray(gpu_local, np.int64),
        gpu_nic=np.asarray(gpu_nic, np.int64),
        gpu_nvl_out=nvl_out,
        gpu_nvl_in=nvl_in,
        arc_tail=tails_a,
        arc_head=heads_a,
        arc_cap=np.asarray(caps, float),
        arc_latency=np.asarray(lats, float),
        arc_link=links,
        arc_tier=tiers,
        n_link_arcs=n_link_arcs,
        leaf_of_dest=leaves,
        dest_of_switch=dest_of_switch,
        dist=dist,
        group_of=group_of,
        group_ptr=gptr,
        group_arcs=garcs,
        notes=notes,
        gpu_ports=port_table(gpu_ports),
    )


def ecmp_groups(S: int, tails: np.ndarray, heads: np.ndarray, leaves: np.ndarray):
    """BFS distances from every leaf and the deduplicated next-hop groups of every (switch, leaf)."""
    sw = (tails < S) & (heads < S) & (tails >= 0) & (heads >= 0)
    arcs = np.flatnonzero(sw)
    T = len(leaves)
    if S == 0 or T == 0:
        return (np.zeros((T, S), np.int64), np.full((S, T), -2, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64))
    adj = csr_matrix((np.ones(len(arcs)), (tails[arcs], heads[arcs])), shape=(S, S))
    adj.data[:] = 1.0  # parallel cables: one hop
    d = shortest_path(adj, method="D", directed=True, unweighted=True, indices=leaves)
    # d[t, u] is the distance from leaf t to u; links are symmetric, so it is also u -> t
    dist = np.where(np.isfinite(d), d, -1).astype(np.int64)
    order = np.lexsort((heads[arcs], tails[arcs]))
    arcs = arcs[order]
    out_ptr = np.searchsorted(tails[arcs], np.arange(S + 1))
    group_of = np.full((S, T), -2, np.int64)
    ptr = [0]
    members: list[np.ndarray] = []
    for u in range(S):
        out = arcs[out_ptr[u]:out_ptr[u + 1]]
        du = dist[:, u]  # (T,)
        group_of[u, du == 0] = -1
        if len(out) == 0:
            continue
        dh = dist[:, heads[out]].T  # (deg, T)
        mask = (dh == (du - 1)[None, :]) & (du > 0)[None, :] & (dh >= 0)
        has = mask.any(axis=0)
        if not has.any():
            continue
        packed = np.packbits(mask[:, has], axis=0).T.copy()  # (T', bytes)
        uniq, inv = _unique_rows(packed)
        base = len(members)
        for row in uniq:
            bits = np.unpackbits(row)[: len(out)].astype(bool)
            m = out[bits]
            members.append(m)
            ptr.append(ptr[-1] + len(m))
        group_of[u, np.flatnonzero(has)] = base + inv
    garcs = np.concatenate(members) if members else np.zeros(0, np.int64)
    return dist, group_of, np.asarray(ptr, np.int64), garcs.astype(np.int64)


_ROW_WEIGHTS = np.random.default_rng(12345).integers(1, 2**63, size=4096, dtype=np.uint64) | np.uint64(1)


def _unique_rows(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of a small uint8 matrix and the inverse index. Sorting void rows is slow, so rows are
    keyed by a 64-bit weighted sum first and the grouping is checked exactly afterwards (falling back
    to the exact sort if two different rows ever shared a key)."""
    nb = packed.shape[1]
    if nb > len(_ROW_WEIGHTS):
        uniq, inv = np.unique(packed, axis=0, return_inverse=True)
        return uniq, np.asarray(inv).reshape(-1)
    with np.errstate(over="ignore"):
        key = (packed.astype(np.uint64) * _ROW_WEIGHTS[:nb]).sum(axis=1, dtype=np.uint64)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    uniq = packed[first]
    if not np.array_equal(uniq[inv], packed):
        uniq, inv = np.unique(packed, axis=0, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
    return uniq, inv


def from_design(design, graph: nx.MultiGraph | None = None, within: set[str] | None = None) -> Net:
    """Compile the fabric of a compiled :class:`~twin.compiler.design.Design` with its catalog figures
    (``within``: only the subgraph of these nodes, e.g. :func:`first_gpus`)."""
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
    if fabric is not None and spec.chassis.nic_ports > 1:
        if within is not None:
            graph, within = graph.subgraph(within), None
        graph = plane_ports(graph)
    return compile_graph(graph, latency, spec.chassis.nvlink_bandwidth, cable_lengths(design), within)


def cable_lengths(design) -> dict[str, float]:
    """Cable length by link id from the cabling pass: the ordered stock length (the signal runs the
    whole cable, coiled slack included). Accepts a CablePlan (``ids`` + arrays) or a mapping."""
    cab = design.cabling
    if cab is None:
        return {}
    ids = getattr(cab, "ids", None)
    if ids is not None:
        arr = getattr(cab, "stock", None)
        if arr is None:
            arr = cab.length
        return {str(k): float(v) for k, v in zip(ids, np.asarray(arr, float))}
    cables = getattr(cab, "cables", cab)
    out: dict[str, float] = {}
    for key, c in cables.items():
        length = c.get("length") if isinstance(c, dict) else getattr(c, "length", None)
        if length is not None:
            out[str(key)] = float(length)
    return out


def first_gpus_subgraph(g: nx.MultiGraph, gpus: int) -> nx.MultiGraph:
    """The subgraph of :func:`first_gpus`, as a graph of its own."""
    return g.subgraph(first_gpus(g, gpus)).copy()


def first_gpus(g: nx.MultiGraph, gpus: int) -> set[str]:
    """The nodes of the fabric serving the first ``gpus`` GPUs in topology order: their servers, NICs
    and leaves, the spine switches of the zones they touch, and the core only when they span zones.
    Used to keep report-time and benchmark simulations small on big sites (``from_design(d,
    within=...)`` compiles them without copying the graph)."""
    nodes = g.nodes
    servers = sorted((n for n, d in nodes(data=True) if d.get("role") == "server"),
                     key=lambda n: (nodes[n].get("zone") or 0, str(nodes[n].get("rack")), n))
    keep_srv, total = [], 0
    for s in servers:
        if total >= gpus:
            break
        keep_srv.append(s)
        total += int(nodes[s].get("gpus", 0))
    racks = {nodes[s].get("rack") for s in keep_srv} | {nodes[s].get("pair") for s in keep_srv if nodes[s].get("pair")}
    zones = {nodes[s].get("zone") for s in keep_srv}
    keep = set(keep_srv)
    for n, d in nodes(data=True):
        level = d.get("level", -1)
        if d.get("role") == "nic" and d.get("server") in keep:
            keep.add(n)
        elif level == 1 and d.get("rack") in racks:
            keep.add(n)
        elif level == 2 and d.get("zone") in zones:
            keep.add(n)
        elif level >= 3 and len(zones) > 1:
            keep.add(n)
    # tree families (fat-tree, rail): leaves without a zone, mounted on network racks; keep the kept NICs'
    # leaves and every switch above them
    up = {nb for n in list(keep) if nodes[n].get("role") == "nic" for nb in g.neighbors(n)
          if nodes[nb].get("level", -1) == 1 and nodes[nb].get("zone") is None}
    while up - keep:
        new = up - keep
        keep |= new
        up = {nb for sw in new for nb in g.neighbors(sw) if nodes[nb].get("level", -1) > nodes[sw]["level"]}
    return keep
