"""Serving one model replica: time to first token (prefill) and time per output token (decode), with
the share of each that is collective latency.

Why this shows decode is latency-bound: prefill pushes ``batch x prompt`` tokens through every GEMM
(compute-bound, megabytes per collective); decode pushes ``batch`` tokens, so each GEMM reads the
weights for a handful of rows (memory-bound) and each tensor-parallel AllReduce carries
``batch x hidden x 2`` bytes (tens of KB), whose cost is almost all per-step latency: NCCL's launch
and step costs, the NIC, the switches and cables. Two AllReduces per layer, every layer, every token.

Deployment: ``tp`` GPUs per pipeline stage (inside one server over NVLink when ``tp`` fits, else
spanning servers over the fabric), ``pp`` stages on consecutive servers. Per layer:

- prefill: layer kernels for ``batch x prompt`` tokens (causal attention over the prompt), two
  AllReduces of ``batch x prompt x hidden x 2`` bytes; the output layer for the last token;
- decode: layer kernels for ``batch`` tokens, attention reading each sequence's KV cache (average
  length ``prompt + output / 2``), two AllReduces of ``batch x hidden x 2`` bytes;
- between stages, one point-to-point transfer of the activations per stage boundary.

The AllReduce is timed under both NCCL algorithms (ring, tree) and the faster one counts, as NCCL's
tuner picks. Memory: weights / (tp x pp) plus the KV cache at the last token must fit in HBM with a
reserve (``RESERVE``: runtime, NCCL buffers, activations); otherwise the scenario is refused.
"""

from __future__ import annotations

import numpy as np

from twin.lang.diagnostics import SpecError
from twin.lang.validator import error
from twin.twins.net import collectives as coll
from twin.twins.net.nccl import Library
from twin.twins.workload import compute
from twin.twins.workload.jobs import gpu_of

RESERVE = 0.1  # assumed: share of HBM kept for the runtime, NCCL buffers and activations


def _best_allreduce(net, ranks: np.ndarray, scheme, lib: Library):
    algs = ["ring", "tree"] if len(set(net.gpu_server[ranks].tolist())) > 1 else ["ring"]
    return [coll.time_collective(net, "allreduce", a, ranks, scheme, lib=lib) for a in algs]


def _at(timings, size: float) -> tuple[float, float]:
    """(time, latency part) of the fastest timing at ``size``."""
    t = min(timings, key=lambda x: x.time(size))
    return t.time(size), t.latency(size)


def replica_gpus(net, cfg, gpus_per_server: int, down: set[int], src, path) -> list[np.ndarray]:
    """The GPUs of each pipeline stage of the replica."""
    per_stage = -(-cfg.tp // gpus_per_server)
    need = per_stage * cfg.pp
    if cfg.servers is not None:
        bad = [v for v in cfg.servers if not 1 <= v <= len(net.server_ids)]
        if bad:
            raise SpecError([error(src, path + ("servers",), f"server {bad[0]} does not exist", f"1..{len(net.server_ids)}")])
        servers = [v - 1 for v in cfg.servers]
    else:
        servers = [s for s in range(len(net.server_ids)) if s not in down][:need]
    if len(servers) < need or down & set(servers):
        raise SpecError([error(src, path, f"TP{cfg.tp} x PP{cfg.pp} needs {need} server(s) of {gpus_per_server} GPUs, "
                                          f"{len([s for s in servers if s not in down])} usable given", f"{need} servers")])
    stages = []
    for st in range(cfg.pp):
        srv = servers[st * per_stage:(st + 1) * per_stage]
        g = np.concatenate([np.flatnonzero(net.gpu_server == s) for s in srv])[: cfg.tp]
        stages.append(g)
    return stages


def simulate_serving(design, net, cfg, schemes, lib: Library, down: set[int], src, path) -> dict:
    if design is None:
        raise SpecError([error(src, path, "serving needs a site design (its GPUs)")])
    if cfg.workload is not None:
        wl = {w.name: w for w in design.spec.site.workloads}
        if cfg.workload not in wl:
            raise SpecError([error(src, path + ("workload",), f"unknown workload '{cfg.workload}'", ", ".join(sorted(wl)) or "a workload of the site")])
        m = wl[cfg.workload]
    else:
        m = cfg.model
    shape = compute.Shape.of(m)
    try:
        gpu = gpu_of(design)
    except ValueError as e:
        raise SpecError([error(src, path, str(e), "chassis hbm_bandwidth and kernels in the catalog")]) from None
    ch = design.spec.chassis
    if shape.heads % cfg.tp:
        raise SpecError([error(src, path + ("tp",), f"{shape.heads} heads do not split over TP{cfg.tp}", f"a divisor of {shape.heads}")])
    weights = (shape.matmul_params + shape.hidden * shape.vocab) * cfg.bytes_per_param / (cfg.tp * cfg.pp)
    seq = cfg.prompt_tokens + cfg.output_tokens
    kv = cfg.batch * seq * (shape.layers / cfg.pp) * 2 * shape.kv_dim / min(cfg.tp, shape.kv_heads) * compute.BF16
    hbm = ch.gpu_memory
    if hbm and weights + kv > hbm * (1 - RESERVE):
        raise SpecError([error(src, path, f"the deployment needs {(weights + kv) / 1e9:.1f} GB per GPU (weights {weights / 1e9:.1f} GB + "
                                          f"KV cache {kv / 1e9:.1f} GB), more than {(1 - RESERVE) * hbm / 1e9:.0f} GB of the GPU's "
                                          f"{hbm / 1e9:.0f} GB usable", "more tp or pp, a smaller batch or fewer tokens")])
    stages = replica_gpus(net, cfg, int(np.bincount(net.gpu_server).max()), down, src, path)
    L = shape.layers / cfg.pp
    # compute (scheme-independent)
    pre_tok = cfg.batch * cfg.prompt_tokens
    pre = compute.layer_work(gpu, shape, pre_tok, cfg.prompt_tokens / 2, cfg.tp, False, cfg.prompt_tokens, cfg.batch).scaled(shape.layers)
    pre += compute.head_work(gpu, shape, cfg.batch, cfg.tp, False)
    ctx = cfg.prompt_tokens + cfg.output_tokens / 2
    dec = compute.layer_work(gpu, shape, cfg.batch, ctx, cfg.tp, False, ctx, cfg.batch).scaled(shape.layers)
    dec += compute.head_work(gpu, shape, cfg.batch, cfg.tp, False)
    a_pre = pre_tok * shape.hidden * 2
    a_dec = cfg.batch * shape.hidden * 2
    out = []
    for s in schemes:
        ar = _best_allreduce(net, stages[0], s, lib) if cfg.tp > 1 else []
        p2p = None
        if cfg.pp > 1:
            p2p = coll.time_collective(net, "sendrecv", "direct", stages[0], s, stages[1], lib=lib)

        def comm(size_ar: float, size_p2p: float, ar=ar, p2p=p2p) -> tuple[float, float]:
            t = lat = 0.0
            if ar:
                ta, la = _at(ar, size_ar)
                t += 2 * shape.layers * ta
                lat += 2 * shape.layers * la
            if p2p is not None:
                t += (cfg.pp - 1) * p2p.time(size_p2p)
                lat += (cfg.pp - 1) * p2p.latency(size_p2p)
            return t, lat

        c_pre, l_pre = comm(a_pre, a_pre / cfg.tp)
        c_dec, l_dec = comm(a_dec, a_dec / cfg.tp)
        ttft = pre.seconds + c_pre
        tpot = dec.seconds + c_dec
        one = _at(ar, a_dec) if ar else (0.0, 0.0)
        out.append({
            "scheme": s.name, "ttft_s": ttft, "tpot_s": tpot,
            "prefill": {"compute_s": pre.seconds, "collectives_s": c_pre, "collective_latency_s": l_pre,
                        "collective_latency_share": l_pre / ttft},
            "decode": {"compute_s": dec.seconds, "collectives_s": c_dec, "collective_latency_s": l_dec,
                       "collective_latency_share": l_dec / tpot, "allreduce_us": one[0] * 1e6, "allreduce_latency_us": one[1] * 1e6,
                       "allreduce_protocol": (min(ar, key=lambda x: x.time(a_dec)).protocol(a_dec) if ar else "-")},
            "tokens_per_s": cfg.batch / tpot,
        })
    srv = sorted({net.server_ids[i] for g in stages for i in net.gpu_server[g]})
    return {
        "name": cfg.name, "model_params": shape.matmul_params + shape.hidden * shape.vocab, "tp": cfg.tp, "pp": cfg.pp,
        "servers": srv[:16], "spans_servers": len(srv) > 1, "batch": cfg.batch, "prompt_tokens": cfg.prompt_tokens,
        "output_tokens": cfg.output_tokens, "weights_per_gpu_bytes": weights, "kv_cache_per_gpu_bytes": kv,
        "prefill_allreduce_bytes": a_pre, "decode_allreduce_bytes": a_dec, "layers_per_stage": L, "schemes": out,
    }
