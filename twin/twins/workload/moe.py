"""Mixture of experts: the expert block's kernels on one GPU and the expert-parallel groups whose
all-to-all (token dispatch and combine) the network twin times on the compiled fabric.

Layout (Megatron-Core with expert tensor parallelism 1): each GPU dispatches its sequence-parallel shard
of ``T / TP`` tokens, ``top_k`` copies each, to the experts of its EP group (``experts / EP`` per GPU);
balanced routing gives every GPU back as many tokens as it sent, so a local expert processes
``(T / TP) x top_k x EP / experts`` tokens (times the capacity factor, which pads every expert to its
capacity). Shared experts run on every token like a dense MLP split over TP. Per MoE layer and
micro-batch the block all-to-alls the tokens there and back forward (dispatch, combine) and again
backward: four all-to-alls of ``(T / TP) x top_k x h x 2`` bytes per GPU. EP groups are consecutive
data-parallel ranks (DP x CP, rank order), so with TP x CP x PP filling a server EP spans servers.

>>> import numpy as np
>>> [g.tolist() for g in ep_groups([np.arange(8)], 4)]
[[0, 1, 2, 3], [4, 5, 6, 7]]
"""

from __future__ import annotations

import numpy as np

from twin.twins.net import dispatch
from twin.twins.workload.compute import BF16, Work, _gemm


def routed_tokens(s, tokens: float, tp: int) -> float:
    """Token copies one GPU dispatches (and its local experts process) per MoE layer and micro-batch."""
    m = s.moe
    return tokens / tp * m.top_k * (m.capacity or 1.0)


def alltoall_bytes(s, tokens: float, tp: int) -> float:
    """Bytes one GPU sends in one all-to-all (dispatch or combine)."""
    return routed_tokens(s, tokens, tp) * s.hidden * BF16


def ep_algorithm(net, group: np.ndarray, s) -> str:
    """How an EP group's all-to-all runs: ``direct`` (one copy per expert), or with node-limited routing
    (``moe.max_nodes``) across NVLink domains, one copy per chosen domain forwarded inside it
    (:mod:`twin.twins.net.dispatch`)."""
    m = s.moe
    domains = len(np.unique(net.domain[np.asarray(group)]))
    if not m.max_nodes or domains < 2:
        return "direct"
    return dispatch.algorithm(min(1.0, dispatch.distinct_domains(domains, m.top_k, m.max_nodes) / m.top_k))


def expert_work(r, fp8: bool = False):
    """The expert block's kernels as a function ``(gpu, shape, tokens, backward) -> Work`` for
    :func:`twin.twins.workload.compute.training`."""

    def work(gpu, s, tokens: float, backward: bool) -> Work:
        m = s.moe
        h = s.hidden
        local = m.experts / r.ep
        routed = routed_tokens(s, tokens, r.tp)
        per_expert = routed / local
        w = _gemm(gpu, tokens, m.experts, h, backward, False)  # router (replicated over TP)
        up = (s.mlp_mats - 1) * m.ffn
        for n_, k_ in ((up, h), (h, m.ffn)):
            w = w + _gemm(gpu, per_expert, n_, k_, backward, fp8).scaled(local)
        if m.shared:
            f = m.shared * m.ffn
            w = w + _gemm(gpu, tokens, (s.mlp_mats - 1) * f / r.tp, h, backward, fp8) + _gemm(gpu, tokens, h, f / r.tp, backward, fp8)
        mult = 2 if backward else 1
        act = (3 if s.mlp == "swiglu" else 2) * m.ffn * (routed + (tokens * m.shared / r.tp if m.shared else 0.0))
        permute = 2 * 2 * routed * h  # gather into expert order and back, read and write
        return w + Work(memory_s=gpu.memory(mult * BF16 * (act + permute)))

    return work


def ep_groups(grad_groups: list[np.ndarray], ep: int) -> list[np.ndarray]:
    """Expert-parallel groups: each data-parallel group (DP x CP ranks, rank order) cut into runs of ``ep``."""
    out = []
    for g in grad_groups:
        out.extend(np.asarray(g)[i:i + ep] for i in range(0, len(g), ep))
    return out
