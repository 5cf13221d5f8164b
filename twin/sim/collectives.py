"""Collectives as phases of concurrent transfers, timed by the fluid model, reported like nccl-tests.

A collective of message size S is a list of *phases*; a phase is a set of transfers that run together
(every rank sending to its ring neighbour, say), repeated ``repeat`` times in sequence. Transfer sizes
are fractions of S, so a phase's fluid time is linear in S: we solve each phase once per routing scheme
and get the whole message-size sweep for free. Time of a collective:

    t(S) = sum over phases of repeat x (S x T1_phase / eta + alpha_phase)

with ``eta`` the protocol efficiency (default 0.94: NCCL's Simple protocol reaches 46-48 GB/s on a
50 GB/s NIC: assumed from NVIDIA's published nccl-tests results on 400G NICs) and ``alpha_phase`` = per-step software overhead (default 2 us, assumed: NCCL pipelines chunks, so
only a few us per ring step show) + the longest path latency (switch forwarding + 4.9 ns/m of cable).

nccl-tests definitions: algbw = S / t; busbw = algbw x 2(n-1)/n (AllReduce), x (n-1)/n (AllGather,
ReduceScatter, AllToAll), x 1 (send/recv). Worked example: a ring AllReduce over n servers with one
400 Gbit/s NIC each, no contention: each of 2(n-1) steps moves S/n at 50 GB/s x 0.94, so
busbw = 2(n-1)/n x S / (2(n-1) S/n / 47 GB/s) = 47 GB/s: the line rate times eta.

Multi-GPU servers use NCCL's channel structure: C channels (one per GPU of a server), channel c enters
each server at its GPU c and leaves from GPU c-1 over that GPU's NIC; the rest of the ring is NVLink.
With 8 x 400G NICs per server the ring busbw is then 8 x 47 = 376 GB/s, as nccl-tests reports on H100.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import fluid, routing
from .topology import Net

PROTOCOL_EFFICIENCY = 0.94
STEP_OVERHEAD_S = 2e-6

BUSBW_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1.0,
}
ALGORITHMS = {
    "allreduce": ("ring", "tree", "hierarchical"),
    "reducescatter": ("ring", "halving"),
    "allgather": ("ring", "doubling"),
    "alltoall": ("direct",),
    "sendrecv": ("direct",),
}
MAX_ALLTOALL_PAIRS = 4_000_000


@dataclass
class Phase:
    src: np.ndarray
    dst: np.ndarray
    frac: np.ndarray  # bytes of each transfer as a fraction of S
    repeat: int = 1
    label: str = ""
    steps: int | None = None  # sequential latency steps (default: repeat; a pipelined tree has more)


def _by_server(net: Net, ranks: np.ndarray) -> list[np.ndarray]:
    srv = net.gpu_server[ranks]
    order = list(dict.fromkeys(srv.tolist()))
    return [ranks[srv == s] for s in order]


def rings(net: Net, ranks: np.ndarray) -> list[np.ndarray]:
    """NCCL-style channel rings: one per GPU of a server when every server holds the same number of
    ranks (channel c enters each server at its c-th rank), else one ring in rank order."""
    groups = _by_server(net, ranks)
    sizes = {len(g) for g in groups}
    if len(sizes) != 1 or len(groups) == 1:
        return [ranks]
    g = sizes.pop()
    return [np.concatenate([np.roll(grp, -c) for grp in groups]) for c in range(g)]


def _ring_phase(net: Net, ranks: np.ndarray, repeat: int, label: str, per_rank: float = 1.0) -> Phase:
    n = len(ranks)
    rs = rings(net, ranks)
    src = np.concatenate([r for r in rs])
    dst = np.concatenate([np.roll(r, -1) for r in rs])
    frac = np.full(len(src), per_rank / (n * len(rs)))
    return Phase(src, dst, frac, repeat, label)


def btree_parents(n: int) -> np.ndarray:
    """Parent of each rank in NCCL's binary tree (root 0, parent by the lowest set bit), -1 at root."""
    par = np.full(n, -1, np.int64)
    for r in range(1, n):
        bit = r & -r
        up = (r ^ bit) | (bit << 1)
        if up >= n:
            up = r ^ bit
        par[r] = up
    return par


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The two trees of NCCL's double binary tree: the second mirrors (even n) or shifts (odd n) the
    first, so most nodes are a leaf in one tree and interior in the other."""
    a = btree_parents(n)
    if n % 2 == 0:
        m = lambda r: n - 1 - r  # noqa: E731
    else:
        m = lambda r: (r + 1) % n  # noqa: E731
        inv = lambda r: (r - 1) % n  # noqa: E731
    b = np.full(n, -1, np.int64)
    for r in range(n):
        pr = a[m(r)]
        if pr >= 0:
            b[r] = (n - 1 - pr) if n % 2 == 0 else inv(pr)
    return a, b


def _tree_depth(par: np.ndarray) -> int:
    depth = 0
    for r in range(len(par)):
        d, x = 0, r
        while par[x] >= 0:
            x = par[x]
            d += 1
        depth = max(depth, d)
    return depth


def plan(net: Net, op: str, algorithm: str, ranks: np.ndarray, peers: np.ndarray | None = None) -> tuple[list[Phase], int]:
    """Phases of a collective and the number of sequential latency steps it takes."""
    ranks = np.asarray(ranks, np.int64)
    n = len(ranks)
    if n < 2:
        raise ValueError("a collective needs at least 2 ranks")
    if op == "allreduce" and algorithm == "ring":
        return [_ring_phase(net, ranks, 2 * (n - 1), "ring")], 2 * (n - 1)
    if op in ("reducescatter", "allgather") and algorithm == "ring":
        return [_ring_phase(net, ranks, n - 1, "ring")], n - 1
    if op in ("reducescatter", "allgather") and algorithm in ("halving", "doubling"):
        if n & (n - 1):
            raise ValueError(f"recursive {algorithm} needs a power-of-two number of ranks, got {n}")
        steps = int(np.log2(n))
        dists = [n >> (k + 1) for k in range(steps)]
        if op == "allgather":
            dists = dists[::-1]
        idx = np.arange(n)
        phases = [Phase(ranks[idx], ranks[idx ^ d], np.full(n, d / n), 1, f"distance {d}") for d in dists]
        return phases, steps
    if op == "allreduce" and algorithm == "tree":
        return _tree(net, ranks)
    if op == "allreduce" and algorithm == "hierarchical":
        return _hierarchical(net, ranks)
    if op == "alltoall":
        if n * (n - 1) > MAX_ALLTOALL_PAIRS:
            raise ValueError(f"alltoall over {n} ranks has {n * (n - 1):,} pairs; at most {MAX_ALLTOALL_PAIRS:,} are simulated")
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        off = i != j
        src, dst = ranks[i[off]], ranks[j[off]]
        frac = np.full(len(src), 1.0 / n)
        rel = routing.relays(net, src, dst)
        rel[net.gpu_server[src] == net.gpu_server[dst]] = -1
        if (rel >= 0).any():
            return _forwarded_alltoall(net, src, dst, frac, rel), 2
        return [Phase(src, dst, frac, 1, "pairwise")], 1
    if op == "sendrecv":
        if peers is None or len(peers) != n:
            raise ValueError("sendrecv needs as many peers as ranks")
        return [Phase(ranks, np.asarray(peers, np.int64), np.ones(n), 1, "p2p")], 1
    raise ValueError(f"unknown collective {op}/{algorithm}; expected one of {ALGORITHMS}")


def plan_groups(net: Net, op: str, algorithm: str, groups: list[np.ndarray], peers: list[np.ndarray] | None = None) -> tuple[list[Phase], int]:
    """Phases of the same collective running concurrently in equal-sized groups (every DP group of a
    job at once, say): phase k of every group runs together, so they share the fabric."""
    plans = [plan(net, op, algorithm, g, None if peers is None else peers[i]) for i, g in enumerate(groups)]
    first, steps = plans[0]
    merged = []
    for k, ph in enumerate(first):
        parts = [p[0][k] for p in plans]
        merged.append(Phase(np.concatenate([x.src for x in parts]), np.concatenate([x.dst for x in parts]),
                            np.concatenate([x.frac for x in parts]), ph.repeat, ph.label, ph.steps))
    return merged, steps


def _merge(net: Net, src: np.ndarray, dst: np.ndarray, frac: np.ndarray, label: str) -> Phase:
    """One transfer per (source, destination) GPU pair, summing what several logical transfers
    between them carry (a relay sends everything for one destination over one connection)."""
    key = src * net.n_gpus + dst
    u, inv = np.unique(key, return_inverse=True)
    return Phase(u // net.n_gpus, u % net.n_gpus, np.bincount(inv.reshape(-1), weights=frac), 1, label)


def _forwarded_alltoall(net: Net, src: np.ndarray, dst: np.ndarray, frac: np.ndarray, rel: np.ndarray) -> list[Phase]:
    """AllToAll on a fabric where some pairs have no network path (rail-only), as the rail-only
    paper (arXiv 2307.12169) runs it: first every GPU hands, over NVLink, the data for each rail to
    its server's GPU on that rail (and delivers its intra-server data), then each rail carries an
    all-to-all among its GPUs. The two steps are sequential (store and forward), so the forwarding
    costs the NVLink step's time on top of the network step; with 450 GB/s NVLink and 50 GB/s NICs
    that is ~10%, inside the paper's 8.2-11.2% overhead for all-to-all traffic."""
    fw = rel >= 0
    local = net.gpu_server[src] == net.gpu_server[dst]
    direct = ~fw & ~local
    p1 = _merge(net, np.concatenate([src[fw], src[local]]), np.concatenate([rel[fw], dst[local]]),
                np.concatenate([frac[fw], frac[local]]), "forward to the destination's rail (NVLink)")
    p2 = _merge(net, np.concatenate([rel[fw], src[direct]]), np.concatenate([dst[fw], dst[direct]]),
                np.concatenate([frac[fw], frac[direct]]), "rail all-to-all")
    return [p1, p2]


def _tree(net: Net, ranks: np.ndarray) -> tuple[list[Phase], int]:
    groups = _by_server(net, ranks)
    m = len(groups)
    if m == 1 or len({len(g) for g in groups}) != 1:
        return plan(net, "allreduce", "ring", ranks)
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
    depth = max(_tree_depth(ta), _tree_depth(tb)) + (C - 1 if C > 1 else 0)
    ph = Phase(np.concatenate(src), np.concatenate(dst), np.concatenate(frac), 1, "double binary tree", 2 * depth)
    return [ph], 2 * depth


def _hierarchical(net: Net, ranks: np.ndarray) -> tuple[list[Phase], int]:
    """ReduceScatter inside each server (NVLink), AllReduce of S/g along each rail across servers,
    AllGather inside each server."""
    groups = _by_server(net, ranks)
    g = len(groups[0])
    if len({len(x) for x in groups}) != 1:
        raise ValueError("hierarchical AllReduce needs the same number of ranks on every server")
    m = len(groups)
    phases: list[Phase] = []
    steps = 0
    if g > 1:
        src = np.concatenate(groups)
        dst = np.concatenate([np.roll(x, -1) for x in groups])
        phases.append(Phase(src, dst, np.full(len(src), 1.0 / g), g - 1, "intra-server reduce-scatter"))
        steps += g - 1
    if m > 1:
        rails = [np.array([grp[c] for grp in groups]) for c in range(g)]
        src = np.concatenate(rails)
        dst = np.concatenate([np.roll(r, -1) for r in rails])
        phases.append(Phase(src, dst, np.full(len(src), 1.0 / (g * m)), 2 * (m - 1), "inter-server rail rings"))
        steps += 2 * (m - 1)
    if g > 1:
        phases.append(Phase(phases[0].src, phases[0].dst, phases[0].frac, g - 1, "intra-server all-gather"))
        steps += g - 1
    return phases, steps


@dataclass
class PhaseTiming:
    label: str
    repeat: int
    t_per_byte: float  # seconds per byte of S at full capacity (before eta)
    latency: float  # longest path latency (s)
    steps: int
    flows: int
    classes: int
    events: int
    load: np.ndarray | None = None  # offered bytes per arc for S = 1 (for plots and max/mean)


@dataclass
class Timing:
    """A collective timed under one scheme; ``time(S)`` and the nccl-tests bandwidths follow."""

    op: str
    algorithm: str
    scheme: str
    n: int
    phases: list[PhaseTiming]
    steps: int
    eta: float = PROTOCOL_EFFICIENCY
    step_overhead: float = STEP_OVERHEAD_S
    notes: list[str] = field(default_factory=list)

    def time(self, size: float) -> float:
        return sum(p.repeat * size * p.t_per_byte / self.eta + p.steps * (self.step_overhead + p.latency) for p in self.phases)

    def latency_time(self) -> float:
        """The part of ``time(S)`` that does not shrink with S: every sequential step's software overhead
        and path latency (propagation + forwarding). ``latency_time() / time(S)`` is the latency share."""
        return sum(p.steps * (self.step_overhead + p.latency) for p in self.phases)

    def algbw(self, size: float) -> float:
        return size / self.time(size)

    def busbw(self, size: float) -> float:
        return self.algbw(size) * BUSBW_FACTOR[self.op](self.n)


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
) -> Timing:
    """Solve each phase of the collective once (for S = 1 byte) under ``scheme``; with ``groups``,
    the collective runs in every group at once (``ranks`` is then ignored)."""
    from . import te

    if groups is not None:
        phases, steps = plan_groups(net, op, algorithm, groups, group_peers)
        ranks = groups[0]
    else:
        phases, steps = plan(net, op, algorithm, ranks, peers)
    cap = net.arc_cap if cap is None else cap
    out = []
    notes: list[str] = []
    for ph in phases:
        if scheme.kind == "te":
            t1, lat, r = te.phase_time(net, ph.src, ph.dst, ph.frac, cap)
            out.append(PhaseTiming(ph.label, ph.repeat, t1, lat, ph.steps or ph.repeat, r.n_flows, r.A.shape[1], 0,
                                   routing.link_load(net, r) if keep_load else None))
            continue
        r = routing.route(net, ph.src, ph.dst, ph.frac, scheme)
        res = fluid.complete(r.A, cap, r.size)
        lat = float(r.latency.max()) if len(r.latency) else 0.0
        out.append(PhaseTiming(ph.label, ph.repeat, res.makespan, lat, ph.steps or ph.repeat, r.n_flows, r.A.shape[1], res.events,
                               routing.link_load(net, r) if keep_load else None))
    return Timing(op, algorithm, scheme.name, len(ranks), out, steps, eta, step_overhead, notes)


def nccl_table(timings: list[Timing], sizes: list[float], dtype_bytes: int = 2, dtype: str = "bfloat16") -> list[dict]:
    """Rows shaped like nccl-tests output: size, count, type, then time/algbw/busbw per scheme."""
    rows = []
    for s in sizes:
        row = {"size": int(s), "count": int(s // dtype_bytes), "type": dtype}
        for t in timings:
            row[t.scheme] = {"time_us": t.time(s) * 1e6, "algbw_GBps": t.algbw(s) / 1e9, "busbw_GBps": t.busbw(s) / 1e9}
        rows.append(row)
    return rows
