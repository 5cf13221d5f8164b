"""An MoE layer's token dispatch (and combine) under node-limited routing, as phases of transfers.

DeepSeek-V3 (arXiv 2412.19437 s3.2.2) routes each token to experts on at most ``M`` nodes (M = 4 of its
8-GPU nodes) and sends the token once to each chosen node, to the GPU with the same index there (so the
network hop stays on that GPU's rail), which forwards it over NVLink to the node's experts it chose.
Here a node is an NVLink domain (a server, or a rack-scale domain).

The all-to-all of ``S`` bytes per GPU (every copy of its tokens, ``top_k`` per token, as
:func:`twin.twins.workload.moe.alltoall_bytes` counts them) becomes two phases, store and forward:

1. over the network, each GPU to its counterpart in every other domain of its EP group, ``S x share / D``
   to each (``D`` domains in the group; ``share`` the copies that cross per token over ``top_k``: the
   distinct domains a token's experts lie on, capped at ``M``, over ``top_k``); and inside its own domain
   to each of its EP peers directly, ``S / n`` each (``n`` GPUs in the group);
2. over NVLink, each counterpart to every EP peer in its domain, ``S / n`` for each remote sender, beside the
   first phase: DeepSeek's kernels run the network sends, the forwarding and the NVLink receives on warps of
   their own at once (s3.2.2), so the collective takes the longer of the two phases, not their sum.

With routing uniform over the group, a token's ``top_k`` experts lie on ``D (1 - (1 - 1/D)^top_k)``
distinct domains on average; node-limited routing caps that at ``M``:

>>> round(distinct_domains(8, 8, None), 2), distinct_domains(8, 8, 4)
(5.25, 4.0)
"""

from __future__ import annotations

import numpy as np

PREFIX = "node-limited:"


def distinct_domains(domains: int, top_k: int, limit: int | None) -> float:
    """Expected distinct domains holding a token's ``top_k`` experts, with routing uniform over
    ``domains`` domains, at most ``limit`` of them under node-limited routing."""
    d = domains * (1 - (1 - 1 / domains) ** top_k) if domains > 1 else 1.0
    return float(min(d, limit)) if limit else d


def algorithm(share: float) -> str:
    """The collective's algorithm name carrying the share of copies that cross per token (``share``)."""
    return f"{PREFIX}{share:.6g}"


def share_of(name: str) -> float | None:
    """The share an :func:`algorithm` name carries, None for another algorithm."""
    if not name.startswith(PREFIX):
        return None
    x = float(name[len(PREFIX):])
    if not 0 < x <= 1:
        raise ValueError(f"{name}: the share of copies crossing per token must be in (0, 1]")
    return x


def phases(net, ranks: np.ndarray, share: float, merge) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, str]]:
    """(src, dst, frac, label) of the two phases for one EP group (module docstring); ``merge`` folds
    transfers with the same ends into one (:func:`twin.twins.net.collectives._merge`)."""
    ranks = np.asarray(ranks, np.int64)
    n = len(ranks)
    dom = net.domain[ranks]
    doms, inv = np.unique(dom, return_inverse=True)
    D = len(doms)
    # each GPU's index among its domain's ranks in the group: its counterpart elsewhere has the same one
    order = np.argsort(inv, kind="stable")
    index = np.empty(n, np.int64)
    counts = np.bincount(inv, minlength=D)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    index[order] = np.arange(n) - np.repeat(starts, counts)
    slot = {(int(d), int(k)): int(r) for d, k, r in zip(inv.tolist(), index.tolist(), ranks.tolist(), strict=True)}

    def counterpart(i: int, d: int) -> int:
        return slot.get((d, int(index[i])), slot[(d, int(index[i]) % int(counts[d]))])

    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    local = (inv[i] == inv[j]) & (i != j)
    s1, d1, f1 = [ranks[i[local]]], [ranks[j[local]]], [np.full(int(local.sum()), 1.0 / n)]
    s2, d2, f2 = [], [], []
    for a in range(n):
        for d in range(D):
            if d == inv[a]:
                continue
            relay = counterpart(a, d)
            s1.append(np.array([ranks[a]]))
            d1.append(np.array([relay]))
            f1.append(np.array([share / D]))
            peers = ranks[inv == d]
            peers = peers[peers != relay]
            s2.append(np.full(len(peers), relay))
            d2.append(peers)
            f2.append(np.full(len(peers), 1.0 / n))
    p1 = merge(np.concatenate(s1), np.concatenate(d1), np.concatenate(f1), "dispatch to each chosen domain")
    p2 = merge(np.concatenate(s2), np.concatenate(d2), np.concatenate(f2), "forward inside the domain (NVLink)")
    return [p1, p2]
