"""Concurrent groups of a collective as independent blocks, and the blocks timed one per class of equal ones.

Why: an MoE job's expert all-to-all runs in every EP group at once. At a million GPUs that is 15,552
groups of 64 and tens of millions of transfers, more than any machine routes at once. But on a fabric
of leaf classes (:mod:`twin.twins.net.leafclass`: leaves with the same neighbour set ``P``, a zone's
RTSWs under its CTSWs) traffic between two leaves of one class never leaves it: a shortest path from
leaf ``a`` to leaf ``b`` has two arcs, ``a -> x -> b``, with ``x`` adjacent to both, so ``x`` is in ``P``.

The reduction, exact by construction:

1. *Blocks.* A block is the servers whose NICs all hang off one leaf class, with the groups whose GPUs
   lie on those servers. Its transfers (NVLink arcs, PXN relays inside a server, the NIC arcs, the arcs
   between its leaves and ``P``) touch no arc of another block when the classes' ``P`` are disjoint
   and every group lies in one block; then the max-min rates of all groups at once are the rates of
   each block alone, and a phase's time is the slowest block's.
2. *Classes of blocks.* Two blocks are equal when, numbering each block's GPUs, NICs and switches in
   index order, their groups are the same local ranks and their arcs (local tail, local head,
   capacity, latency, in arc order) are the same arrays, and so are the GPUs' servers, domains, local
   indices and NVLink arcs. Sprayed routing reads only those (a group's members in (head, arc) order),
   so equal blocks have the same rates, times and latencies, relabelled. One block of each class is
   timed; the rest are not routed at all.

Hashed schemes (ECMP, E-ECMP, static) hash the ports' addresses, which differ between equal blocks: they
are not reduced. Multi-port NICs (planes, :mod:`twin.twins.net.planes`) put one GPU on a class per plane,
and a transfer runs port j to port j: a block is then the servers whose ports hang off one tuple of
classes (a class per plane), provided no class is in two tuples. A transfer between two of its GPUs goes
from a leaf of the tuple's plane-j class to another of the same class, so through that class's ``P``, and
the argument above holds plane by plane (:func:`_plane_blocks`). A port that is down (a failed plane) is
not reduced.

At 995,328 GPUs (gigawatt-campus, EP 64 over consecutive ranks): 192 blocks, one per zone, of 81 EP
groups each; all zones alike, one class.

>>> transfers_estimate("alltoall", "direct", 64, 1, 2)
8064
"""

from __future__ import annotations

import numpy as np

from twin.lang import limits
from twin.twins.net.rows import unique_rows

SPRAYED = ("spray", "adaptive")
FOLD_RING = 1_000_000  # ring phases of this many transfers or more keep the NVLink hops of one even and one odd server
RING_OPS = ("allreduce", "reducescatter", "allgather")


def transfers_estimate(op: str, algorithm: str, n: int, per_server: int, groups: int) -> int:
    """Transfers the largest phase of a collective plans over ``groups`` groups of ``n`` ranks, at most
    ``per_server`` of them on one server: n(n-1) for an all-to-all or a direct exchange, n per ring of
    a server's GPUs (NCCL's one ring per GPU, :func:`twin.twins.net.collectives._ring_groups`), a few
    per rank for trees, one for a send/receive."""
    if op == "alltoall" or algorithm == "direct" and op != "sendrecv":
        per = n * (n - 1)
    elif op == "sendrecv" or algorithm in ("halving", "doubling", "hierarchical"):
        per = n
    elif algorithm == "tree":
        per = 4 * n
    else:
        per = n * max(1, per_server)
    return groups * per


def check_cost(net, op: str, algorithm: str, groups: list[np.ndarray]) -> None:
    """Refuse (:class:`twin.lang.limits.CostError`, with the estimate and the limit) a collective whose
    phase would plan more transfers than ``collective_transfers``, before any is allocated."""
    g = np.asarray(groups[0])
    per_server = int(np.unique(net.gpu_server[g], return_counts=True)[1].max()) if len(g) else 1
    est = transfers_estimate(op, algorithm, len(g), per_server, len(groups))
    if op in RING_OPS and algorithm == "ring" and est >= FOLD_RING and net.gpu_domain is None and len(g) >= 3 * per_server:
        est = len(groups) * len(g) + 2 * per_server * (per_server - 1)  # NVLink hops folded (folded_ring)
    limits.check("collective_transfers", est, f"transfers in a phase of {op}/{algorithm} over {len(groups):,} group(s) of "
                 f"{len(g):,} ranks")


def representatives(net, groups: list[np.ndarray], scheme) -> tuple[list[np.ndarray], dict] | None:
    """The groups of one block per class of equal blocks (module docstring) and what was reduced
    (``blocks``, ``classes``, ``groups``, ``groups_timed``); None where the reduction does not hold or
    removes nothing."""
    if scheme.kind not in SPRAYED or len(groups) < 2 or len({len(x) for x in groups}) != 1:
        return None
    nb = _node_blocks(net)
    if nb is not None and net.gpu_ports is not None:
        nb = _plane_blocks(net, nb)
    if nb is None:
        return None
    S = net.n_switches
    gpu_blk = nb[S + net.gpu_nic]
    srv_lo = np.full(len(net.server_ids), np.iinfo(np.int64).max)
    srv_hi = np.full(len(net.server_ids), -1)
    np.minimum.at(srv_lo, net.gpu_server, gpu_blk)
    np.maximum.at(srv_hi, net.gpu_server, gpu_blk)
    srv_blk = np.where((srv_lo == srv_hi) & (srv_lo >= 0), srv_hi, -1)  # every NIC of the server on one class
    R = np.asarray(groups, np.int64)
    blk = srv_blk[net.gpu_server[R]]
    if (blk.min(axis=1) != blk.max(axis=1)).any() or (blk < 0).any():
        return None
    gb = blk[:, 0]
    used = np.unique(gb)
    if len(used) < 2:
        return None
    used = np.r_[gb[0], used[used != gb[0]]]  # the first group's block first: it stays the first group (the cost model reads it)
    L = net.n_link_arcs
    tb, hb = nb[net.arc_tail[:L]], nb[net.arc_head[:L]]
    arc_blk = np.where(tb == hb, tb, -1)
    arcs = np.argsort(arc_blk, kind="stable")  # arc order inside each block
    a_lo, a_hi = np.searchsorted(arc_blk[arcs], used), np.searchsorted(arc_blk[arcs], used + 1)
    gpu_srv_blk = srv_blk[net.gpu_server]
    gpus = np.argsort(gpu_srv_blk, kind="stable")
    g_lo, g_hi = np.searchsorted(gpu_srv_blk[gpus], used), np.searchsorted(gpu_srv_blk[gpus], used + 1)
    g_order = np.argsort(gb, kind="stable")
    r_lo, r_hi = np.searchsorted(gb[g_order], used), np.searchsorted(gb[g_order], used + 1)
    keys: dict[bytes, int] = {}
    reps: list[int] = []
    k = len(used)
    for i in range(k):
        members = g_order[r_lo[i]:r_hi[i]]
        key = _signature(net, nb, arcs[a_lo[i]:a_hi[i]], gpus[g_lo[i]:g_hi[i]], R[members])
        if key not in keys:
            keys[key] = int(used[i])
            reps.extend(members.tolist())
    if len(keys) == k:
        return None
    return [groups[i] for i in sorted(reps)], {"blocks": k, "classes": len(keys), "groups": len(groups), "groups_timed": len(reps)}


def _node_blocks(net) -> np.ndarray | None:
    """Each node's block (switches 0..S-1, then NICs): a leaf's class, a neighbour's class (one in its
    set ``P``), a NIC's leaf's class; -1 elsewhere. None when a switch neighbours two classes (their
    traffic could meet there) or a leaf neighbours a class (its own class's traffic and that one's meet)."""
    r = net.routes
    S = net.n_switches
    near = r.dP == 0  # (classes, switches): each class's neighbour set P
    count = near.sum(axis=0)
    if (count > 1).any() or (count[r.leaves] > 0).any():  # a switch near two classes, or a leaf some class passes through
        return None
    nb = np.full(S + len(net.nic_leaf), -1, np.int64)
    nb[:S] = np.where(count == 1, near.argmax(axis=0), -1)
    nb[r.leaves] = r.leaf_class
    ok = net.nic_leaf >= 0
    nb[S + np.flatnonzero(ok)] = nb[net.nic_leaf[ok]]
    return nb


def _plane_blocks(net, nb: np.ndarray) -> np.ndarray | None:
    """Each node's block on a multi-plane fabric (module docstring): the classes of :func:`_node_blocks`
    joined into one block per tuple of classes a GPU's ports hang off. None where a GPU has a port fewer
    or down, or a class is in two tuples (a transfer port j to port j could then leave its class)."""
    S, ports = net.n_switches, net.gpu_ports
    if (ports < 0).any() or (net.nic_leaf[ports] < 0).any():
        return None
    pc = nb[S + ports]  # (GPUs, ports): each port's class
    if (pc < 0).any():
        return None
    tuples, tb = unique_rows(pc, return_inverse=True)
    pairs = unique_rows(np.c_[pc.reshape(-1), np.repeat(tb, pc.shape[1])])  # (class, tuple) pairs
    if len(np.unique(pairs[:, 0])) != len(pairs):  # a class in two tuples
        return None
    blk = np.full(int(nb.max()) + 1, -1, np.int64)
    blk[pairs[:, 0]] = pairs[:, 1]
    return np.where(nb >= 0, blk[np.maximum(nb, 0)], -1)


def _signature(net, nb: np.ndarray, arcs: np.ndarray, gpus: np.ndarray, groups: np.ndarray) -> bytes:
    """A block's groups and fabric in its own numbering (module docstring): equal bytes, equal blocks.
    ``arcs``: its arcs in arc order; ``gpus``: its servers' GPUs, sorted."""
    S = net.n_switches
    ports = net.gpu_nic[gpus][:, None] if net.gpu_ports is None else net.gpu_ports[gpus]  # every port of a GPU (planes)
    nics = np.unique(ports)
    nodes = np.union1d(net.arc_tail[arcs], net.arc_head[arcs])
    nodes = np.union1d(nodes, np.r_[net.nic_leaf[nics], S + nics])

    def renumber(x: np.ndarray) -> np.ndarray:
        return np.unique(x, return_inverse=True)[1].reshape(-1)

    nvl = [net.gpu_nvl_out[gpus], net.gpu_nvl_in[gpus]]
    parts = [
        np.array([len(gpus), len(nics), len(nodes), *groups.shape]),
        np.searchsorted(nodes, net.arc_tail[arcs]), np.searchsorted(nodes, net.arc_head[arcs]),
        net.arc_cap[arcs], net.arc_latency[arcs],
        renumber(net.gpu_server[gpus]), renumber(net.domain[gpus]), net.gpu_local[gpus],
        np.array(ports.shape), np.searchsorted(nics, ports.reshape(-1)), np.searchsorted(nodes, net.nic_leaf[nics]),
        *[a >= 0 for a in nvl], *[net.arc_cap[a[a >= 0]] for a in nvl], *[net.arc_latency[a[a >= 0]] for a in nvl],
        net.arc_cap[net.nic_up[nics]], net.arc_cap[net.nic_down[nics]],
        net.arc_latency[net.nic_up[nics]], net.arc_latency[net.nic_down[nics]],
        np.searchsorted(gpus, groups.reshape(-1)),
    ]
    return b"|".join(np.ascontiguousarray(p).tobytes() + str(np.asarray(p).dtype).encode() for p in parts)


def folded_ring(net, S3: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """NCCL's rings over ``S3`` (groups, servers, ranks per server; :func:`twin.twins.net.phases._rings`:
    ring c enters even servers at their rank c, odd ones crossed the other way) as the transfers of one
    phase, their NVLink hops kept for one even and one odd server only; None where that is not exact.

    Why exact: a hop between two GPUs of one server (one NVLink domain) crosses only the sender's NVLink
    out-arc and the receiver's in-arc, which no network transfer of a ring crosses (no PXN). So the
    NVLink hops of each server are a max-min problem of their own, and servers whose ranks sit on the
    same local GPUs with the same NVLink arcs solve the same one: every even server as the first, every
    odd one as the second. The hops between servers, one per ring and server, are all kept."""
    G, m, g = S3.shape
    if net.gpu_domain is not None or m < 3 or g < 2:
        return None
    loc = net.gpu_local[S3]
    if not (loc == loc[:1, :1]).all():
        return None
    for arcs in (net.gpu_nvl_out[S3], net.gpu_nvl_in[S3]):
        if (arcs < 0).any() or len(np.unique(net.arc_cap[arcs])) != 1 or len(np.unique(net.arc_latency[arcs])) != 1:
            return None
    c = np.arange(g)[:, None]
    i = np.arange(g)[None, :]
    even, odd = (i + c) % g, g - 1 - (i + (g - c) % g) % g  # (ring, position) -> rank of the server
    pos = np.where((np.arange(m) % 2 == 1)[None, :, None], odd[:, None, :], even[:, None, :])  # (ring, server, position)
    j = np.arange(m)[None, :]
    jn = (j + 1) % m
    src = S3[:, j, pos[:, :, g - 1]]  # (groups, rings, servers): each server's last rank of ring c
    dst = S3[:, jn, pos[:, (np.arange(m) + 1) % m, 0]]  # the next server's first
    hop_src = np.concatenate([S3[0, k, pos[:, k, :-1]].reshape(-1) for k in (0, 1)])
    hop_dst = np.concatenate([S3[0, k, pos[:, k, 1:]].reshape(-1) for k in (0, 1)])
    return np.concatenate([src.reshape(-1), hop_src]), np.concatenate([dst.reshape(-1), hop_dst])
