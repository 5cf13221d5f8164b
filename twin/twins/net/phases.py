"""A collective's phases and NCCL's rings: a phase's transfers as fractions of the message, and the rail
rings NCCL builds over a group's servers (one per GPU of a server, odd servers crossed the other way), with
the channels each ring runs. :mod:`twin.twins.net.collectives` plans collectives out of these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.twins.net.nccl import INTRA_NODE_CHANNELS, Library, ring_channels
from twin.twins.net.topology import Net


@dataclass
class Phase:
    src: np.ndarray
    dst: np.ndarray
    frac: np.ndarray  # bytes of each transfer as a fraction of S
    repeat: int = 1
    label: str = ""
    steps: int | None = None  # sequential latency steps (default: repeat)
    net_steps: int = 0  # of those, steps whose critical hop crosses the network
    posts: int = 0  # extra network messages a rank posts in one step (one per peer, beyond the first)
    conns: int = 1  # connections (NCCL channels) per transfer; each gets the scheme's QPs
    pxn: bool = False  # hand cross-rail network hops over NVLink to the destination rail's GPU
    ring: bool = False  # every step reuses the same links with new data (latency hides behind chunks)
    beside: bool = False  # pipelined with the phase before it on other links: the collective takes the longer of the two


def _by_server(net: Net, ranks: np.ndarray) -> list[np.ndarray]:
    """``ranks`` split by server, servers in order of first appearance, ranks in their order."""
    grouped, counts = _grouped(net, ranks)
    return np.split(grouped, np.cumsum(counts)[:-1])


def _grouped(net: Net, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_by_server` as one array (server after server) and each server's count, sorted once
    rather than compared against every server."""
    srv = net.gpu_server[ranks]
    _, first, inv, counts = np.unique(srv, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(first, kind="stable")  # servers by first appearance
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    perm = np.argsort(place[np.asarray(inv).reshape(-1)], kind="stable")
    return ranks[perm], counts[order]


def job_layout(net: Net, groups: list[np.ndarray]) -> tuple[np.ndarray, int, int] | None:
    """Groups laid out as jobs lay them out, as ``(R, g, m)``: ``R`` the ranks (one row per group), each group
    ``m`` runs of ``g`` consecutive ranks on one server, its runs on distinct servers; None for any other
    layout (a collective's plan then goes group by group)."""
    R = np.asarray(groups, np.int64) if len({len(x) for x in groups}) == 1 else None
    if R is None or R.ndim != 2 or R.shape[1] < 2:
        return None
    G, n = R.shape
    srv = net.gpu_server[R]
    g = int(np.argmax(np.r_[srv[0] != srv[0, 0], True]))  # the first server's run
    if n % g:
        return None
    m = n // g
    heads = np.sort(srv[:, ::g], axis=1)
    if not (srv.reshape(G, m, g) == srv[:, ::g, None]).all() or (m > 1 and (heads[:, 1:] == heads[:, :-1]).any()):
        return None
    return R, g, m


def rings(net: Net, ranks: np.ndarray) -> list[np.ndarray]:
    """NCCL-style rail rings: one per GPU of a server when every server holds the same number of
    ranks, else one ring in rank order. Ring c enters an even server at its c-th rank and leaves from
    its (c-1)-th; odd servers are crossed the other way (enter at c-1, leave at c), as NCCL swaps the
    NICs of odd nodes (``connect.cc``, crossNic rings), so every network hop stays on one rail.

    >>> class N: gpu_server = np.repeat(np.arange(2), 4)
    >>> [r.tolist() for r in rings(N, np.arange(8))][1]
    [1, 2, 3, 0, 4, 7, 6, 5]
    """
    return _rings(ranks, *_grouped(net, ranks))


def _rings(ranks: np.ndarray, grouped: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    if len(counts) == 1 or (counts != counts[0]).any():
        return [ranks]
    g = int(counts[0])
    servers = grouped.reshape(len(counts), g)  # row k: server k's ranks in order
    odd = (np.arange(len(counts)) % 2 == 1)[:, None]
    i = np.arange(g)
    out = []
    for c in range(g):
        # even servers: the ranks rolled left by c; odd ones: reversed, then rolled left by (g - c) % g
        enter_even, enter_odd = (i + c) % g, g - 1 - (i + (g - c) % g) % g
        out.append(np.where(odd, servers[:, enter_odd], servers[:, enter_even]).reshape(-1))
    return out


def _channels(net: Net, ranks: np.ndarray, lib: Library) -> int:
    return _channels_of(net, *_grouped(net, ranks), lib)


def _channels_of(net: Net, grouped: np.ndarray, counts: np.ndarray, lib: Library) -> int:
    if len(counts) == 1:  # inside one server: NCCL's NVLink rings, each step a fraction of a buffer slot
        return INTRA_NODE_CHANNELS
    full = int(np.count_nonzero(net.gpu_server == net.gpu_server[grouped[0]]))  # GPUs of the first server
    return ring_channels(lib, int(counts.min()), full)


def _ring_phase(net: Net, ranks: np.ndarray, repeat: int, label: str, lib: Library, net_per_round: int) -> Phase:
    n = len(ranks)
    grouped, counts = _grouped(net, ranks)
    rs = _rings(ranks, grouped, counts)
    src = np.concatenate(rs)
    dst = np.concatenate([np.roll(r, -1) for r in rs])
    frac = np.full(len(src), 1.0 / (n * len(rs)))
    servers = len(counts)
    return Phase(src, dst, frac, repeat, label, repeat, net_per_round * (servers - 1) if servers > 1 else 0,
                 conns=_channels_of(net, grouped, counts, lib), ring=True)


def _net_peers(net: Net, ranks: np.ndarray) -> int:
    """Peers on other servers that one rank of ``ranks`` talks to in a full mesh (the most of any)."""
    srv = net.gpu_server[ranks]
    return int(len(ranks) - np.bincount(srv).max())
