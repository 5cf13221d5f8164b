"""The physics of distance on a compiled design: propagation, PFC headroom against buffers, latency.

Everything here reads the Design (the fabric graph, the cable plan's lengths, the catalog's buffers and
latencies) and is cheap enough for ``twin build``'s report:

- **Propagation** of every cable from its ordered length (patch cords + trunk between buildings) at
  :data:`twin.physics.FIBER_DELAY_S_PER_M`; the twin's simulator uses the same lengths.
- **PFC headroom**, from the buffers the switches are configured with (:mod:`twin.compiler.config.buffers`,
  which the SONiC buffer profiles read too): every port reserves its link's xoff (line rate x round trip
  over its cable + response + two MTUs) from the switch's shared headroom pool, at most
  :data:`twin.physics.HEADROOM_SHARE` of its buffer. A link **fits** when the pool at each end holds
  every port's xoff at once. For a route between buildings, the room per port is what the tightest end
  switch's other ports leave of its pool, and lossless stops fitting at the length whose xoff fills it
  (:func:`twin.physics.lossless_reach`).
- **Latency ladder**: one-way NIC-to-NIC latency (propagation + switch forwarding) on the fastest path
  to a rack in the same zone, another zone of the building, and each other building (on the first plane
  of a multi-plane fabric: every plane is the same).

Worked example (400G, 9216-byte MTU): xoff at 3 km is 50 GB/s x (2 x 3 km x 4.9 us/km + 1.5 us) +
18,432 B = 1.56 MB per port. A Minipack2 (64 MiB buffer, a 16 MiB pool) whose other ports reserve
12 MiB leaves 1 MiB per port to 4 links of a route, which lossless fills at 1.95 km:
``lossless_reach(400e9, 2**20, 9216)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.compiler.config import buffers
from twin.memo import last_call
from twin.physics import DEFAULT_SWITCH_LATENCY_S, FIBER_DELAY_S_PER_M, lossless_reach


@dataclass(frozen=True)
class PairHeadroom:
    """The links between two buildings and their lossless verdict."""

    a: str
    b: str
    links: int
    length_m: float  # longest link (patch + trunk + patch, as ordered)
    one_way_us: float  # its propagation delay
    xoff_bytes: int  # headroom one of its ports reserves (the SONiC profile's xoff)
    switch: str  # the end switch whose pool leaves this route the least room
    room_bytes: float  # per port of this route on that switch: what its other ports leave of the pool
    fits: bool  # every link of the pair holds lossless at both ends
    reach_m: float  # the length at which this route's links would fill that room


def _switch_ends(design):
    """(switch index per cable end a/b, -1 for NICs; switch names) over the cable plan's order."""
    names = design.fabric.switches()
    index = {n: i for i, n in enumerate(names)}
    cables = design.fabric.cables()
    a = np.fromiter((index.get(c.a, -1) for c in cables), np.int64, len(cables))
    b = np.fromiter((index.get(c.b, -1) for c in cables), np.int64, len(cables))
    assert len(cables) == len(design.cabling.ids)
    return a, b, names


@last_call
def headroom(design) -> dict:
    """Lossless headroom of every cable and switch, from the buffers the switches are configured with
    (:func:`twin.compiler.config.buffers.plan`).

    Returns arrays over the cable plan (``xoff`` bytes per port, ``fits``), per switch (``names``,
    ``pool``: the cap of its shared headroom pool, ``ports``, ``need``: every used port's xoff) and, on a
    campus, a :class:`PairHeadroom` per building pair. Computed once per design (the report, its campus
    picture and the verdicts read the same): read the result, never change it."""
    spec, plan = design.spec, design.cabling
    hr = buffers.plan(spec, design.fabric, plan)
    out = {"names": list(hr.names), "pool": hr.pool, "ports": hr.ports, "need": hr.need, "xoff": hr.xoff,
           "fits": hr.fits, "pairs": []}
    cp = spec.campus
    if cp is None or plan.campus is None:
        return out
    cc = plan.campus
    mtu = spec.fabric.qos.mtu
    length = plan.stock
    pairs = []
    fits = hr.fits  # a property over every cable: computed once, not once per pair
    by_pair: dict = {}  # the campus cables of each building pair, in cable order (one pass: 28 pairs x 60K cables at a gigawatt)
    for i, q in enumerate(cc.pair):
        by_pair.setdefault(q, []).append(i)
    for p in sorted(by_pair):
        sel = cc.index[np.array(by_pair[p], np.int64)]
        longest = int(sel[np.argmax(length[sel])])
        ends = [k for k in np.unique(np.r_[hr.a[sel], hr.b[sel]]).tolist() if k >= 0]
        room = {}  # end switch -> bytes per port of this route left by its other ports
        for k in ends:
            if np.isfinite(hr.pool[k]):
                mine = sel[(hr.a[sel] == k) | (hr.b[sel] == k)]
                room[k] = (hr.pool[k] - (hr.need[k] - hr.xoff[mine].sum())) / len(mine)
        k = min(room, key=lambda x: (room[x], hr.names[x])) if room else ends[0]
        r = room.get(k, float("nan"))
        pairs.append(PairHeadroom(
            cp.buildings[p[0]].name, cp.buildings[p[1]].name, len(sel), float(length[longest]),
            float(length[longest] * FIBER_DELAY_S_PER_M * 1e6), int(hr.xoff[longest]), hr.names[k], float(r),
            bool(fits[sel].all()), float(lossless_reach(hr.speed[longest], r, mtu)) if np.isfinite(r) else float("nan"),
        ))
    out["pairs"] = pairs
    return out


def latency_ladder(design) -> list[dict]:
    """One-way latency (us) from the first rack's NIC to a rack at each distance class, on the fastest path."""
    # scipy.sparse (~0.3 s to import) loads here: the verdicts read only headroom(), and `twin validate` nothing else
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    fabric, plan, spec = design.fabric, design.cabling, design.spec
    g = fabric.graph
    a, b, names = _switch_ends(design)
    index = {s: i for i, s in enumerate(names)}
    prop = plan.stock * FIBER_DELAY_S_PER_M
    fwd = np.array([spec.switch(g.nodes[s]["model"]).latency or DEFAULT_SWITCH_LATENCY_S for s in names])
    sw = (a >= 0) & (b >= 0)
    n = len(names)
    # arc weight: the cable, then forwarding in the switch it enters
    rows = np.r_[a[sw], b[sw]]
    cols = np.r_[b[sw], a[sw]]
    w = np.r_[prop[sw] + fwd[b[sw]], prop[sw] + fwd[a[sw]]]
    order = np.lexsort((w, cols, rows))
    rows, cols, w = rows[order], cols[order], w[order]
    keep = np.r_[True, (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])]  # the fastest of parallel links
    m = csr_matrix((w[keep], (rows[keep], cols[keep])), shape=(n, n))
    leaves = [s for s in names if g.nodes[s]["level"] == 1]
    leaves = [s for s in leaves if g.nodes[s].get("plane") == g.nodes[leaves[0]].get("plane")]  # a flow stays in the first plane
    nic_cable = {}
    for i, c in enumerate(fabric.cables()):
        if c.b in index and g.nodes[c.b]["level"] == 1 and c.b not in nic_cable and c.a not in index:
            nic_cable[c.b] = prop[i]
    src = leaves[0]
    zone0 = g.nodes[src]["zone"]
    bld = g.nodes[src].get("building")
    targets = [("another rack of the zone", next((x for x in leaves if g.nodes[x]["zone"] == zone0 and x != src), None))]
    targets.append(("another zone of the building", next((x for x in leaves if g.nodes[x]["zone"] != zone0 and g.nodes[x].get("building") == bld), None)))
    if spec.campus is not None:
        for bp in spec.campus.buildings[1:]:
            targets.append((f"building {bp.name}", next((x for x in leaves if g.nodes[x].get("building") == bp.index), None)))
    dist, pred = dijkstra(m, indices=index[src], return_predecessors=True)
    out = []
    for label, t in targets:
        if t is None:
            continue
        forwarding, x = fwd[index[src]], index[t]
        while x != index[src] and x >= 0:  # walk the fastest path back: the switches it crosses
            forwarding += fwd[x]
            x = pred[x]
        one_way = nic_cable.get(src, 0.0) + fwd[index[src]] + dist[index[t]] + nic_cable.get(t, 0.0)
        out.append({"to": label, "rack": g.nodes[t]["rack"], "one_way_us": float(one_way * 1e6),
                    "propagation_us": float((one_way - forwarding) * 1e6), "forwarding_us": float(forwarding * 1e6)})
    return out


REPORT_RACKS = 2  # racks per building in the report's cross-building collective (cheap by construction)
REPORT_SIZES = (2.0**20, 2.0**26, 2.0**30)  # 1 MiB, 64 MiB, 1 GiB


def campus_nodes(g, racks: int = REPORT_RACKS) -> set[str]:
    """The first ``racks`` racks of the first zone of every building, their zones' CTSWs, every ATSW and
    any campus spine: enough fabric for a ring that crosses every building (the nodes, for
    :func:`twin.twins.net.topology.from_design`'s ``within``: no copy of the graph)."""
    data = g.nodes(data=True)
    servers = [(n, d) for n, d in data if d.get("role") == "server"]
    first: dict[int, int] = {}
    for _n, d in servers:
        b = d.get("building", 0)
        first[b] = min(first.get(b, d["zone"]), d["zone"])
    zones = set(first.values())
    chosen: dict[int, list[str]] = {}
    for _n, d in sorted(servers, key=lambda x: (str(x[1].get("rack")), x[0])):
        if d["zone"] in zones:
            mine = chosen.setdefault(d["zone"], [])
            if d["rack"] not in mine and len(mine) < racks:
                mine.append(d["rack"])
    keep_racks = {r for rs in chosen.values() for r in rs}
    return {n for n, d in data
            if (d.get("rack") in keep_racks and d.get("level", -1) <= 1) or (d.get("level") == 2 and d.get("zone") in zones) or d.get("level", -1) >= 3}


def cross_building_rings(design, racks: int = REPORT_RACKS) -> list[dict]:
    """Ring AllReduce on the first racks of one building, then on the same number of racks in every
    building (one ring crossing each route): time, bus bandwidth and latency share per message size,
    with the site's QP count under E-ECMP (flow-level, :mod:`twin.twins.net.collectives`)."""
    from twin.twins.net import collectives as coll
    from twin.twins.net import routing, topology

    g = design.fabric.graph
    net = topology.from_design(design, within=campus_nodes(g, racks))
    qps = design.spec.fabric.routing.qps_per_gpu_pair
    scheme = routing.Scheme(f"e-ecmp, {qps} QPs", "e-ecmp", qps)
    srv_bld = np.array([g.nodes[s].get("building", 0) for s in net.server_ids])
    gpus = np.arange(net.n_gpus)
    in_first = gpus[srv_bld[net.gpu_server] == 0]
    by_building = gpus[np.argsort(srv_bld[net.gpu_server], kind="stable")]
    out = []
    for label, ranks in (("one building", in_first[: max(2, len(by_building) // max(1, len(set(srv_bld.tolist()))))]),
                         ("every building", by_building)):
        tm = coll.time_collective(net, "allreduce", "ring", ranks, scheme)
        out.append({"ring": label, "gpus": int(len(ranks)), "steps": tm.steps,
                    "latency_us": float(max(p.latency for p in tm.phases) * 1e6),
                    "sizes": [{"bytes": int(s), "time_us": tm.time(s) * 1e6, "busbw_GBps": tm.busbw(s) / 1e9,
                               "latency_share": tm.latency(s) / tm.time(s)} for s in REPORT_SIZES]})
    return out
