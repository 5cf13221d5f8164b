"""Training jobs: parallel groups on placed GPUs, per-step compute from first principles, per-step
traffic timed on the fabric, and the exposed part of it.

Rank layout. A job of TP x CP x PP x DP GPUs numbers its ranks with the dimensions in ``dims`` order,
fastest first (Llama 3: [TP, CP, PP, DP], so TP stays inside a server and DP, which overlaps best, is
spread widest). ``order: topology`` gives ranks to GPUs in topology order (zone, rack, server, GPU);
``order: naive`` gives them to servers in a seeded random order, as a scheduler that ignores the
network would (TP still stays inside a server, since servers are allocated whole).

One optimizer step, m = global_batch / DP micro-batches of one sequence per pipeline, T = sequence / CP
tokens per micro-batch, act = T x hidden x 2 bytes:

- Compute: :mod:`twin.twins.workload.compute` times one micro-batch forward (t_f) and backward (t_b) on one
  stage from the GEMM shapes after TP, attention over the context, and memory-bound kernels; the
  step computes m x (t_f + t_b) plus the optimizer.
- Pipeline bubble (interleaved 1F1B, v model chunks per GPU): (PP - 1) / v x (t_f + t_b).
- TP (Megatron sequence parallelism): all-gather and reduce-scatter of ``act`` around attention and
  MLP, forward and backward: 4 all-gathers + 4 reduce-scatters per layer and micro-batch, exposed.
- CP (Llama 3 s3.3.2, all-gather based): all-gather of K and V (2 x sequence x KV width / TP x 2 B)
  before attention, reduce-scatter of their gradients after it; exposed.
- PP: ``act / TP`` to the next stage per micro-batch, each way; the steady state overlaps it, the
  pipeline fill and drain (2 x (PP - 1) transfers) are on the critical path.
- DP (FSDP, Llama 3: weights kept after the forward): one all-gather of the stage's weights and one
  reduce-scatter of its gradients per step over the DP x CP ranks; the first overlaps the first
  micro-batch's forward, the second the last micro-batch's backward (``dp_overlap`` of those
  windows), the rest is exposed.
- Latency share: the part of the communication time that does not shrink with the message (launch,
  step latencies, NIC and path, :meth:`twin.twins.net.collectives.Timing.latency`); across buildings,
  kilometres of fiber make it large.

Every collective is timed by :mod:`twin.twins.net.collectives` (fluid model + NCCL's latency model), so a
crowded or long fabric shows up in the exposed time. Predicted TFLOPs/GPU = model FLOPs of the step /
(step time x GPUs); the workload's ``measured_tflops_per_gpu`` is shown beside it, never used.
"""

from __future__ import annotations

import numpy as np

from twin.compiler.place.powercap import perf
from twin.lang.diagnostics import SpecError
from twin.lang.validator import error
from twin.twins.net import collectives as coll
from twin.twins.net.nccl import Library
from twin.twins.workload import compute
from twin.twins.workload.timeline import StepProfile


def rank_layout(gpus: np.ndarray, sizes: dict[str, int], dims: list[str]) -> dict[str, list[np.ndarray]]:
    """Groups of each dimension: the GPU arrays whose ranks differ only in that dimension.

    >>> g = rank_layout(np.arange(8), {"tp": 2, "cp": 1, "pp": 2, "dp": 2}, ["tp", "cp", "pp", "dp"])
    >>> [x.tolist() for x in g["tp"]][:2], [x.tolist() for x in g["dp"]][:2]
    ([[0, 1], [2, 3]], [[0, 4], [1, 5]])
    """
    return {d: rank_groups(gpus, sizes, dims, (d,)) for d in dims}


def rank_groups(gpus: np.ndarray, sizes: dict[str, int], dims: list[str], over: tuple[str, ...]) -> list[np.ndarray]:
    """Groups of ranks that differ only in the dimensions ``over`` (rank order inside a group follows
    ``dims``, fastest first).

    >>> [x.tolist() for x in rank_groups(np.arange(8), {"tp": 2, "cp": 2, "pp": 1, "dp": 2}, ["tp", "cp", "pp", "dp"], ("cp", "dp"))]
    [[0, 2, 4, 6], [1, 3, 5, 7]]
    """
    shape = [sizes[d] for d in reversed(dims)]  # C order: slowest first
    arr = np.asarray(gpus).reshape(shape)
    axes = [len(dims) - 1 - dims.index(d) for d in over]
    keep = [a for a in range(len(dims)) if a not in axes]
    moved = np.transpose(arr, keep + sorted(axes)).reshape(-1, int(np.prod([sizes[d] for d in over])))
    return [row for row in moved]


def place_job(net, n: int, order: str, seed: int, down: set[int]) -> np.ndarray | None:
    servers = [s for s in range(len(net.server_ids)) if s not in down]
    up = net.nic_leaf[net.gpu_nic] >= 0
    if order == "naive":
        rng = np.random.default_rng(seed)
        servers = list(rng.permutation(servers))
    by_server: dict[int, list[int]] = {}
    for gi in np.flatnonzero(up):
        by_server.setdefault(int(net.gpu_server[gi]), []).append(int(gi))
    gpus = [gi for s in servers for gi in by_server.get(int(s), [])]
    if len(gpus) < n:
        return None
    return np.array(gpus[:n], np.int64)


def gpu_of(design) -> compute.Gpu:
    """The design's GPU at its rack's power cap."""
    ch = design.spec.chassis
    return compute.Gpu.of(ch, perf(ch, design.spec.rack.gpu_power_cap))


def step_profile(job: dict, scheme: str | None = None) -> StepProfile:
    """The shared :class:`StepProfile` of a job result (``simulate_job``'s output) under one routing
    scheme (default: the first)."""
    s = next((x for x in job["schemes"] if scheme is None or x["scheme"] == scheme), None)
    if s is None:
        raise KeyError(f"job {job['workload']} has no scheme {scheme!r}")
    return StepProfile(step_s=s["step_s"], compute_s=job["compute_s"], exposed_comm_s=s["exposed_comm_s"],
                       bubble_s=job["bubble_s"], tokens_per_step=job["tokens_per_step"], gpus=job["gpus"])


def simulate_job(design, net, cfg, schemes, lib: Library, case, down: set[int], src, path) -> dict:
    if design is None:
        raise SpecError([error(src, path, "jobs need a site design (its workloads)")])
    wl = {w.name: w for w in design.spec.site.workloads}
    if cfg.workload not in wl:
        raise SpecError([error(src, path + ("workload",), f"unknown workload '{cfg.workload}'", ", ".join(sorted(wl)) or "a workload of the site")])
    w = wl[cfg.workload]
    try:
        gpu = gpu_of(design)
    except ValueError as e:
        raise SpecError([error(src, path + ("workload",), str(e), "chassis hbm_bandwidth and kernels in the catalog")]) from None
    n = w.gpus
    gpus = place_job(net, n, cfg.order, cfg.seed, down)
    if gpus is None:
        raise SpecError([error(src, path + ("workload",), f"job needs {n:,} GPUs, the case leaves {int((net.nic_leaf[net.gpu_nic] >= 0).sum()):,}")])
    dims = cfg.dims.split("-")
    sizes = {"tp": w.tp, "cp": w.cp, "pp": w.pp, "dp": w.dp}
    groups = rank_layout(gpus, sizes, dims)
    shape = compute.Shape.of(w, cfg.kv_heads)
    m = max(1, w.global_batch // w.dp)
    v = cfg.virtual_stages or w.virtual_stages
    c = compute.training(gpu, shape, w.sequence_length, w.global_batch, w.tp, w.cp, w.pp, w.dp)
    t_f, t_b = c.forward.seconds, c.backward.seconds
    t_compute = m * (t_f + t_b) + c.optimizer_s
    bubble = (w.pp - 1) / v * (t_f + t_b)
    b = w.bytes_per_param
    act = c.tokens_per_microbatch * shape.hidden * 2
    kv = 2 * w.sequence_length * shape.kv_dim / min(w.tp, shape.kv_heads) * 2  # this GPU's K and V heads
    layers = shape.layers / w.pp
    shard = (shape.matmul_params + shape.hidden * shape.vocab) / (w.tp * w.pp) * b
    grad_groups = rank_groups(gpus, sizes, dims, ("cp", "dp")) if w.cp * w.dp > 1 else []
    tokens = w.global_batch * w.sequence_length

    def timed(op, alg, grp, scheme):
        return coll.time_collective(net, op, alg, None, scheme, groups=grp, lib=lib)

    intra_tp = w.tp > 1 and all(len(set(net.gpu_server[g].tolist())) == 1 for g in groups["tp"][:64])
    tp_cache: dict[str, float] = {}
    per_scheme = []
    for s in schemes:
        t_tp = t_cp = t_pp = t_dp_ag = t_dp_rs = 0.0
        lat = 0.0  # the part of the communication time that does not shrink with the message
        if w.tp > 1:
            key = "nvlink" if intra_tp else s.name
            if key not in tp_cache:  # a ring reduce-scatter runs the same phases as a ring all-gather
                ag = timed("allgather", "ring", groups["tp"], s)
                tp_cache[key] = (8 * ag.time(act), 8 * ag.latency(act))
            t_tp, lat = layers * m * tp_cache[key][0], lat + layers * m * tp_cache[key][1]
        if w.cp > 1:
            ag = timed("allgather", "ring", groups["cp"], s)
            t_cp, lat = layers * m * 2 * ag.time(kv), lat + layers * m * 2 * ag.latency(kv)
        if w.pp > 1:
            stages = groups["pp"]  # each row: one pipeline, stage order
            p2p = coll.time_collective(net, "sendrecv", "direct", None, s, groups=[np.concatenate([r[:-1] for r in stages])],
                                       group_peers=[np.concatenate([r[1:] for r in stages])], lib=lib)
            t_pp, lat = 2 * (w.pp - 1) * p2p.time(act / w.tp), lat + 2 * (w.pp - 1) * p2p.latency(act / w.tp)
        if grad_groups:
            dp = timed("allgather", "ring", grad_groups, s)
            t_dp_ag = t_dp_rs = dp.time(shard)
            lat += 2 * dp.latency(shard)
        exposed_dp = max(0.0, t_dp_ag - cfg.dp_overlap * t_f) + max(0.0, t_dp_rs - cfg.dp_overlap * t_b)
        exposed = t_tp + t_cp + t_pp + exposed_dp
        step = t_compute + bubble + exposed
        tflops = c.model_flops_per_step / step / n / 1e12
        per_scheme.append({
            "scheme": s.name,
            "step_s": step,
            "exposed_comm_s": exposed,
            "exposed_fraction": exposed / step,
            "tp_s": t_tp, "cp_s": t_cp, "pp_exposed_s": t_pp, "dp_s": t_dp_ag + t_dp_rs, "dp_exposed_s": exposed_dp,
            "predicted_tflops_per_gpu": tflops,
            "predicted_mfu": tflops / (gpu.peak / 1e12),
            "comm_latency_s": lat,
            "latency_share": lat / comm if (comm := t_tp + t_cp + t_pp + t_dp_ag + t_dp_rs) else 0.0,
            "tokens_per_s": tokens / step,
        })
    zones = sorted({int(net.server_zone[net.gpu_server[g]]) for g in gpus[:: max(1, len(gpus) // 512)]})
    buildings = sorted({int(net.server_building[net.gpu_server[g]]) for g in gpus[:: max(1, len(gpus) // 512)]})
    measured = w.measured if w.measured is not None else (w.mfu * design.spec.chassis.gpu_peak_tflops if w.mfu else None)
    return {
        "workload": w.name, "order": cfg.order, "dims": cfg.dims, "gpus": n,
        "parallelism": f"TP{w.tp} CP{w.cp} PP{w.pp} DP{w.dp}", "sequence_length": w.sequence_length,
        "microbatches": m, "virtual_stages": v, "compute_s": t_compute, "bubble_s": bubble,
        "microbatch_forward_s": t_f, "microbatch_backward_s": t_b, "optimizer_s": c.optimizer_s,
        "compute_breakdown_s": {k: m * (getattr(c.forward, k) + getattr(c.backward, k)) for k in ("gemm_s", "attention_s", "memory_s")},
        "model_flops_per_step": c.model_flops_per_step, "tokens_per_step": tokens,
        "measured_tflops_per_gpu": measured,
        "dp_shard_bytes": shard, "tp_message_bytes": act, "cp_kv_bytes": kv if w.cp > 1 else 0.0, "zones_used": len(zones), "buildings_used": len(buildings),
        "schemes": per_scheme,
    }
