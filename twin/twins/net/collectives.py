"""Collectives as phases of concurrent transfers, timed by the fluid model and NCCL's cost model,
reported like nccl-tests.

A collective of message size S is a list of *phases*; a phase is a set of transfers that run together
(every rank sending to its ring neighbour, say), repeated ``repeat`` times in sequence. Transfer sizes
are fractions of S, so a phase's fluid time is linear in S: we solve each phase once per routing scheme
and get the whole message-size sweep for free. The latency side (how many sequential steps, over NVLink
or the network, and what each costs per protocol) is :mod:`twin.twins.net.nccl`:

    t(S) = min over protocols [ base + sum of per-step latencies + S x sum(repeat x T1_phase) / (eta x bw) ]

nccl-tests definitions: algbw = S / t; busbw = algbw x 2(n-1)/n (AllReduce), x (n-1)/n (AllGather,
ReduceScatter, AllToAll), x 1 (send/recv). Worked example: a ring AllReduce over n servers with one
400 Gbit/s NIC each, no contention: each of 2(n-1) steps moves S/n at 50 GB/s x 0.94, so
busbw = 2(n-1)/n x S / (2(n-1) S/n / 47 GB/s) = 47 GB/s: the line rate times eta.

Multi-GPU servers use NCCL's channel structure: one ring per GPU of a server (rail c enters each
server at its GPU c, crosses the server over NVLink and leaves from GPU c-1, whose data PXN hands
over NVLink to GPU c so that the network hop stays on rail c, NIC c to NIC c, as NCCL's rail-aligned
ring graph does); each rail ring runs over ``conns`` channels (NCCL: 2 per NIC), each its own
connection with the scheme's QPs. With 8 x 400G NICs per server the ring busbw is 8 x 47 = 376 GB/s,
as nccl-tests reports on H100.
"""

from __future__ import annotations

import numpy as np

from twin.lang import limits
from twin.twins.net import blocks, dispatch, fluid, relays, routing
from twin.twins.net.nccl import PROTOCOL_EFFICIENCY, Cost, Library, PhaseCost
from twin.twins.net.phases import Phase, _by_server, _channels, _channels_of, _net_peers, _ring_phase, job_layout
from twin.twins.net.timing import BUSBW_FACTOR, PhaseTiming, Timing
from twin.twins.net.topology import Net
from twin.twins.net.trees import dtree_parents, tree_depth, tree_groups

STEP_OVERHEAD_S = 0.0  # extra per-step overhead beyond NCCL's model (a what-if knob)

ALGORITHMS = {
    "allreduce": ("ring", "tree", "hierarchical", "nvls"),
    "reducescatter": ("ring", "halving", "direct"),
    "allgather": ("ring", "doubling", "direct"),
    "alltoall": ("direct",),
    "sendrecv": ("direct",),
}
MAX_ALLTOALL_PAIRS = 4_000_000
# sprayed phases of this many network transfers or more are solved as exact classes of transfers
# (twin/twins/net/sprayclasses.py ``lumped``: the same max-min rates, one column per class)
LUMP_TRANSFERS = 100_000
REDUCE_BLOCKS = True  # concurrent groups timed one block per class of equal blocks (twin/twins/net/blocks.py)


def plan(net: Net, op: str, algorithm: str, ranks: np.ndarray, peers: np.ndarray | None = None,
         lib: Library | None = None) -> tuple[list[Phase], str]:
    """Phases of a collective and the family of NCCL constants that times its steps (ring or tree)."""
    lib = lib or Library()
    ranks = np.asarray(ranks, np.int64)
    n = len(ranks)
    if n < 2:
        raise ValueError("a collective needs at least 2 ranks")
    multi = len(np.unique(net.gpu_server[ranks])) > 1
    if op == "allreduce" and algorithm == "ring":
        return [_ring_phase(net, ranks, 2 * (n - 1), "ring", lib, 2)], "ring"
    if op in ("reducescatter", "allgather") and algorithm == "ring":
        return [_ring_phase(net, ranks, n - 1, "ring", lib, 1)], "ring"
    if op in ("reducescatter", "allgather") and algorithm in ("halving", "doubling"):
        if n & (n - 1):
            raise ValueError(f"recursive {algorithm} needs a power-of-two number of ranks, got {n}")
        steps = int(np.log2(n))
        dists = [n >> (k + 1) for k in range(steps)]
        if op == "allgather":
            dists = dists[::-1]
        idx = np.arange(n)
        phases = []
        for d in dists:
            cross = bool((net.gpu_server[ranks[idx]] != net.gpu_server[ranks[idx ^ d]]).any())
            phases.append(Phase(ranks[idx], ranks[idx ^ d], np.full(n, d / n), 1, f"distance {d}", 1, int(cross),
                                conns=lib.p2p_channels))
        return phases, "ring"
    if op in ("reducescatter", "allgather") and algorithm == "direct":
        if n * (n - 1) > MAX_ALLTOALL_PAIRS:
            raise ValueError(f"a direct {op} over {n} ranks has {n * (n - 1):,} pairs; at most {MAX_ALLTOALL_PAIRS:,} are simulated")
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        off = i != j
        posts = max(0, _net_peers(net, ranks) - 1)
        return [Phase(ranks[i[off]], ranks[j[off]], np.full(int(off.sum()), 1.0 / n), 1, "full mesh", 1, int(multi), posts,
                      conns=lib.p2p_channels, pxn=True)], "ring"
    if op == "allreduce" and algorithm == "tree":
        return _tree(net, ranks, lib)
    if op == "allreduce" and algorithm == "hierarchical":
        return _hierarchical(net, ranks, lib), "ring"
    if op == "alltoall" and dispatch.share_of(algorithm) is not None and len(np.unique(net.domain[ranks])) > 1:
        phases = dispatch.phases(net, ranks, dispatch.share_of(algorithm), lambda s, d, f, label: _merge(net, s, d, f, label))
        phases[0].steps, phases[1].steps = 1, 1
        phases[0].net_steps, phases[0].posts, phases[0].conns = 1, max(0, _net_peers(net, ranks) - 1), lib.p2p_channels
        # DeepSeek-V3 s3.2.2: IB sending, IB-to-NVLink forwarding and NVLink receiving run on their own warps at once,
        # so the forwarding runs pipelined beside the network phase rather than after it
        phases[1].beside = True
        return phases, "ring"
    if op == "alltoall":
        if n * (n - 1) > MAX_ALLTOALL_PAIRS:
            raise ValueError(f"alltoall over {n} ranks has {n * (n - 1):,} pairs; at most {MAX_ALLTOALL_PAIRS:,} are simulated")
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        off = i != j
        src, dst = ranks[i[off]], ranks[j[off]]
        frac = np.full(len(src), 1.0 / n)
        rel = relays.relays(net, src, dst)
        rel[net.domain[src] == net.domain[dst]] = -1  # inside an NVLink domain: NVLink, no relay
        posts = max(0, _net_peers(net, ranks) - 1)
        if (rel >= 0).any():
            return _forwarded_alltoall(net, src, dst, frac, rel, posts, lib), "ring"
        return [Phase(src, dst, frac, 1, "pairwise", 1, int(multi), posts, conns=lib.p2p_channels, pxn=True)], "ring"
    if op == "sendrecv":
        if peers is None or len(peers) != n:
            raise ValueError("sendrecv needs as many peers as ranks")
        peers = np.asarray(peers, np.int64)
        cross = bool((net.gpu_server[ranks] != net.gpu_server[peers]).any())
        return [Phase(ranks, peers, np.ones(n), 1, "p2p", 1, int(cross), conns=lib.p2p_channels)], "ring"
    raise ValueError(f"unknown collective {op}/{algorithm}; expected one of {ALGORITHMS}")


def plan_groups(net: Net, op: str, algorithm: str, groups: list[np.ndarray], peers: list[np.ndarray] | None = None,
                lib: Library | None = None) -> tuple[list[Phase], str]:
    """Phases of the same collective running concurrently in equal-sized groups (every DP group of a
    job at once, say): phase k of every group runs together, so they share the fabric."""
    if algorithm == "ring" and op in ("allreduce", "reducescatter", "allgather") and peers is None:
        merged = _ring_groups(net, op, groups, lib or Library())
        if merged is not None:
            return [merged], "ring"
    if algorithm == "tree" and op == "allreduce" and peers is None:
        layout = job_layout(net, groups)
        if layout is not None and layout[2] > 1:  # every group's trees at once (one server: a ring, group by group)
            R, g, m = layout
            return [tree_groups(R.reshape(len(R), m, g), _channels_of(net, R[0], np.full(m, g), lib or Library()))], "tree"
    plans = [plan(net, op, algorithm, g, None if peers is None else peers[i], lib) for i, g in enumerate(groups)]
    first, family = max(plans, key=lambda p: len(p[0]))  # a group inside one NVLink domain may plan fewer phases
    merged = []
    for k, ph in enumerate(first):
        parts = [p[0][k] for p in plans if len(p[0]) > k]
        merged.append(Phase(np.concatenate([x.src for x in parts]), np.concatenate([x.dst for x in parts]),
                            np.concatenate([x.frac for x in parts]), ph.repeat, ph.label, ph.steps,
                            max(x.net_steps for x in parts), max(x.posts for x in parts), ph.conns, ph.pxn, ph.ring, ph.beside))
    return merged, family


def _ring_groups(net: Net, op: str, groups: list[np.ndarray], lib: Library) -> Phase | None:
    """:func:`plan_groups`' ring phase for groups laid out as jobs lay them out (each group: the same
    number of ranks, ``g`` consecutive ones per server, on distinct servers), built for all groups at
    once: the phase :func:`_ring_phase` gives each group, concatenated. None for any other layout."""
    layout = job_layout(net, groups)
    if layout is None:
        return None
    R, g, m = layout
    G, n = R.shape
    per = 2 if op == "allreduce" else 1
    conns = _channels_of(net, R[0], np.full(m, g), lib)
    folded = blocks.folded_ring(net, R.reshape(G, m, g)) if G * n * g >= blocks.FOLD_RING else None
    if folded is not None:
        return Phase(*folded, np.full(len(folded[0]), 1.0 / (n * g)), per * (n - 1), "ring", per * (n - 1), per * (m - 1), 0, conns,
                     False, True)
    limits.check("collective_transfers", G * n * (g if m > 1 else 1), f"transfers in a phase of {op}/ring over {G:,} group(s) of {n:,} ranks")
    if m == 1:  # inside one server: one ring in rank order
        rings = R[:, None, :]
    else:  # _rings: ring c enters even servers at their rank c, odd ones crossed the other way
        S3 = R.reshape(G, m, g)
        odd = (np.arange(m) % 2 == 1)[None, :, None]
        i = np.arange(g)
        rings = np.stack([np.where(odd, S3[:, :, g - 1 - (i + (g - c) % g) % g], S3[:, :, (i + c) % g]).reshape(G, n)
                          for c in range(g)], axis=1)
    repeat = per * (n - 1)
    src = rings.reshape(-1)
    dst = np.roll(rings, -1, axis=2).reshape(-1)
    return Phase(src, dst, np.full(len(src), 1.0 / (n * rings.shape[1])), repeat, "ring", repeat,
                 per * (m - 1) if m > 1 else 0, 0, conns, False, True)


def _merge(net: Net, src: np.ndarray, dst: np.ndarray, frac: np.ndarray, label: str) -> Phase:
    """One transfer per (source, destination) GPU pair, summing what several logical transfers
    between them carry (a relay sends everything for one destination over one connection)."""
    key = src * net.n_gpus + dst
    u, inv = np.unique(key, return_inverse=True)
    return Phase(u // net.n_gpus, u % net.n_gpus, np.bincount(inv.reshape(-1), weights=frac), 1, label)


def _forwarded_alltoall(net: Net, src, dst, frac, rel, posts: int, lib: Library) -> list[Phase]:
    """AllToAll on a fabric where some pairs have no network path (rail-only), as the rail-only
    paper (arXiv 2307.12169) runs it: first every GPU hands, over NVLink, the data for each rail to
    its server's GPU on that rail (and delivers its intra-server data), then each rail carries an
    all-to-all among its GPUs. The two steps are sequential (store and forward), so the forwarding
    costs the NVLink step's time on top of the network step; with 450 GB/s NVLink and 50 GB/s NICs
    that is ~10%, inside the paper's 8.2-11.2% overhead for all-to-all traffic."""
    fw = rel >= 0
    local = net.domain[src] == net.domain[dst]
    direct = ~fw & ~local
    p1 = _merge(net, np.concatenate([src[fw], src[local]]), np.concatenate([rel[fw], dst[local]]),
                np.concatenate([frac[fw], frac[local]]), "forward to the destination's rail (NVLink)")
    p2 = _merge(net, np.concatenate([rel[fw], src[direct]]), np.concatenate([dst[fw], dst[direct]]),
                np.concatenate([frac[fw], frac[direct]]), "rail all-to-all")
    p1.steps, p2.steps, p2.net_steps, p2.posts, p2.conns = 1, 1, 1, posts, lib.p2p_channels
    return [p1, p2]


def _tree(net: Net, ranks: np.ndarray, lib: Library) -> tuple[list[Phase], str]:
    groups = _by_server(net, ranks)
    m = len(groups)
    if m == 1 or len({len(g) for g in groups}) != 1:
        return plan(net, "allreduce", "ring", ranks, lib=lib)
    C = len(groups[0])
    ta, tb = dtree_parents(m)
    src, dst, frac = [], [], []
    for par in (ta, tb):
        child = np.flatnonzero(par >= 0)
        for c in range(C):
            a = np.array([groups[k][c] for k in child])
            b = np.array([groups[p][c] for p in par[child]])
            # reduce goes up, broadcast comes down; pipelined, so both directions run together
            src += [a, b]
            dst += [b, a]
            frac += [np.full(len(a), 1.0 / (2 * C))] * 2
    if C > 1:  # intra-server chain per channel, both directions, over NVLink
        for grp in groups:
            for c in range(C):
                ch = np.roll(grp, -c)
                src += [ch[1:], ch[:-1]]
                dst += [ch[:-1], ch[1:]]
                frac += [np.full(C - 1, 1.0 / C)] * 2
    inter = max(tree_depth(ta), tree_depth(tb))
    intra = C - 1 if C > 1 else 0
    ph = Phase(np.concatenate(src), np.concatenate(dst), np.concatenate(frac), 1, "double binary tree", 2 * (inter + intra),
               2 * inter, conns=_channels(net, ranks, lib))
    return [ph], "tree"


def _hierarchical(net: Net, ranks: np.ndarray, lib: Library) -> list[Phase]:
    """ReduceScatter in each server (NVLink), AllReduce of S/g along each rail (its own communicator of
    one GPU per server: NCCL's channels for a partly used server), AllGather in each server."""
    groups = _by_server(net, ranks)
    g = len(groups[0])
    if len({len(x) for x in groups}) != 1:
        raise ValueError("hierarchical AllReduce needs the same number of ranks on every server")
    m = len(groups)
    phases: list[Phase] = []
    if g > 1:
        src = np.concatenate(groups)
        dst = np.concatenate([np.roll(x, -1) for x in groups])
        phases.append(Phase(src, dst, np.full(len(src), 1.0 / g), g - 1, "intra-server reduce-scatter", g - 1, ring=True))
    if m > 1:
        rails = [np.array([grp[c] for grp in groups]) for c in range(g)]
        src = np.concatenate(rails)
        dst = np.concatenate([np.roll(r, -1) for r in rails])
        phases.append(Phase(src, dst, np.full(len(src), 1.0 / (g * m)), 2 * (m - 1), "inter-server rail rings", 2 * (m - 1),
                            2 * (m - 1), conns=_channels(net, rails[0], lib), ring=True))
    if g > 1:
        phases.append(Phase(phases[0].src, phases[0].dst, phases[0].frac, g - 1, "intra-server all-gather", g - 1, ring=True))
    return phases


def effective_capacity(net: Net, lib: Library, cap: np.ndarray) -> np.ndarray:
    """Arc capacities the fluid model runs on: NVLink arcs scaled so that, after the protocol
    efficiency ``eta`` divides every phase, NVLink moves ``nvlink_eta`` of its rate."""
    if net.n_arcs == net.n_link_arcs or lib.nvlink_eta == lib.eta:
        return cap
    out = np.array(cap, float)
    out[net.n_link_arcs:] *= lib.nvlink_eta / lib.eta
    return out


def time_collective(
    net: Net,
    op: str,
    algorithm: str,
    ranks: np.ndarray,
    scheme: routing.Scheme,
    peers: np.ndarray | None = None,
    eta: float = PROTOCOL_EFFICIENCY,
    step_overhead: float = STEP_OVERHEAD_S,
    cap: np.ndarray | None = None,
    keep_load: bool = False,
    groups: list[np.ndarray] | None = None,
    group_peers: list[np.ndarray] | None = None,
    lib: Library | None = None,
) -> Timing:
    """Solve each phase of the collective once (for S = 1 byte) under ``scheme``; with ``groups``,
    the collective runs in every group at once (``ranks`` is then ignored). ``lib`` (the library's
    knobs) wins over ``eta`` and ``step_overhead``."""
    from twin.twins.net import te

    lib = lib or Library(eta=eta, step_overhead=step_overhead)
    if algorithm == "nvls":  # the switch reduces: closed form, no fluid phases (twin/twins/net/nvls.py)
        from twin.twins.net import nvls
        return nvls.time_nvls(net, groups if groups is not None else [np.asarray(ranks)], scheme, lib)
    reduced = None
    if groups is not None:
        if REDUCE_BLOCKS and group_peers is None and not keep_load and cap is None:  # blocks compare the net's own arcs
            groups, reduced = blocks.representatives(net, groups, scheme) or (groups, None)
        blocks.check_cost(net, op, algorithm, groups)
        phases, family = plan_groups(net, op, algorithm, groups, group_peers, lib)
        ranks = groups[0]
    else:
        blocks.check_cost(net, op, algorithm, [np.asarray(ranks)])
        phases, family = plan(net, op, algorithm, ranks, peers, lib)
    cap = effective_capacity(net, lib, net.arc_cap if cap is None else cap)
    out = []
    for ph in phases:
        steps = ph.steps or ph.repeat
        if scheme.kind == "te":
            t1, lat, r = te.phase_time(net, ph.src, ph.dst, ph.frac, cap)
            out.append(PhaseTiming(ph.label, ph.repeat, t1, lat, steps, r.n_flows, r.A.shape[1], 0,
                                   routing.link_load(net, r) if keep_load else None, ph.net_steps, ph.posts))
            continue
        r = routing.route(net, ph.src, ph.dst, ph.frac, scheme, ph.conns, ph.pxn, LUMP_TRANSFERS)
        res = fluid.complete(r.A, routing.capacity(r, cap), r.size)
        lat = float(r.latency.max()) if len(r.latency) else 0.0
        out.append(PhaseTiming(ph.label, ph.repeat, res.makespan, lat, steps, r.n_flows, r.A.shape[1], res.events,
                               routing.link_load(net, r) if keep_load else None, ph.net_steps, ph.posts))
    n = len(ranks)
    nodes = len(np.unique(net.gpu_server[ranks]))
    cost = Cost(family, nodes, max(ph.conns for ph in phases), BUSBW_FACTOR[op](n),
                [PhaseCost(p.repeat, p.t_per_byte, p.steps - p.net_steps, p.net_steps, p.posts, p.latency,
                           float(ph.frac.max()) / max(1, ph.conns) if len(ph.frac) else 0.0, ph.ring, ph.beside)
                 for p, ph in zip(out, phases)], lib)
    return Timing(op, algorithm, scheme.name, n, out, cost, blocks=reduced)
