"""Training jobs: parallel groups on placed GPUs, per-step traffic, compute, and exposed communication.

Rank layout. A job of TP x CP x PP x DP GPUs numbers its ranks with the dimensions in ``dims`` order,
fastest first (Llama 3: [TP, CP, PP, DP], so TP stays inside a server and DP, which overlaps best, is
spread widest). ``order: topology`` gives ranks to GPUs in topology order (zone, rack, server, GPU);
``order: naive`` gives them to servers in a seeded random order, as a scheduler that ignores the
network would (TP still stays inside a server, since servers are allocated whole).

Per optimizer step (micro-batch of one sequence, m = global_batch / DP micro-batches per pipeline;
act = sequence / CP x hidden x 2 bytes):

- TP (Megatron with sequence parallelism): 2 all-gathers + 2 reduce-scatters of ``act`` per layer
  forward and again backward = 4 AllReduce-equivalents per layer and micro-batch; counted as exposed.
- CP: all-gather of K and V (2 x sequence x hidden x kv_heads / heads x 2 bytes) forward and a
  reduce-scatter of their gradients backward, per layer and micro-batch; exposed.
- PP: ``act / TP`` bytes to the next stage per micro-batch, each way; only pipeline fill and drain
  (2 x (PP - 1) transfers) are on the critical path.
- DP (FSDP): reduce-scatter of the gradient shard and all-gather of the parameter shard
  (parameters / (TP x PP) x bytes per parameter) in every DP group at once; hidden behind
  ``dp_overlap`` of the backward compute, the rest is exposed.
- Compute: 6 x parameters x tokens FLOPs over the job's GPUs at ``tflops_per_gpu`` (or MFU x peak),
  plus the pipeline bubble (PP - 1) / (m x virtual stages).
- Latency share: the part of the communication time that does not shrink with the message (every
  sequential step's software overhead and path latency, :meth:`twin.sim.collectives.Timing.latency_time`);
  across buildings, kilometres of fiber make it large.

``tflops_per_gpu`` is used as the rate of the math. Llama 3's published TFLOPs/GPU are end to end, so
the predicted step is slower than the paper's by the bubble and exposed communication this model adds;
what the network changes is the exposed part, compared across routing schemes.

Worked example (llama3-405b-16k: 405B parameters, TP8 PP16 DP128, 2048 x 8192 tokens, 400 TFLOPs):
compute = 6 x 405e9 x 16.8e6 / (16384 x 400e12) = 6.2 s; m = 16, bubble = 15/16 x 6.2 s = 5.8 s with one
virtual stage (Llama 3 interleaves; set virtual_stages); DP shard = 405e9 / 128 x 2 B = 6.3 GB.
"""

from __future__ import annotations

import numpy as np

from ..spec.diagnostics import SpecError
from . import collectives as coll
from .scenario import error


def rank_layout(gpus: np.ndarray, sizes: dict[str, int], dims: list[str]) -> dict[str, list[np.ndarray]]:
    """Groups of each dimension: the GPU arrays whose ranks differ only in that dimension.

    >>> g = rank_layout(np.arange(8), {"tp": 2, "cp": 1, "pp": 2, "dp": 2}, ["tp", "cp", "pp", "dp"])
    >>> [x.tolist() for x in g["tp"]][:2], [x.tolist() for x in g["dp"]][:2]
    ([[0, 1], [2, 3]], [[0, 4], [1, 5]])
    """
    shape = [sizes[d] for d in reversed(dims)]  # C order: slowest first
    arr = gpus.reshape(shape)
    out = {}
    for d in dims:
        axis = len(dims) - 1 - dims.index(d)
        moved = np.moveaxis(arr, axis, -1).reshape(-1, sizes[d])
        out[d] = [row for row in moved]
    return out


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


def simulate_job(design, net, cfg, schemes, scn, case, down: set[int], src, path) -> dict:
    if design is None:
        raise SpecError([error(src, path, "jobs need a site design (its workloads)")])
    wl = {w.name: w for w in design.spec.site.workloads}
    if cfg.workload not in wl:
        raise SpecError([error(src, path + ("workload",), f"unknown workload '{cfg.workload}'", ", ".join(sorted(wl)) or "a workload of the site")])
    w = wl[cfg.workload]
    chassis = design.spec.chassis
    n = w.gpus
    gpus = place_job(net, n, cfg.order, cfg.seed, down)
    if gpus is None:
        raise SpecError([error(src, path + ("workload",), f"job needs {n:,} GPUs, the case leaves {int((net.nic_leaf[net.gpu_nic] >= 0).sum()):,}")])
    dims = cfg.dims.split("-")
    sizes = {"tp": w.tp, "cp": w.cp, "pp": w.pp, "dp": w.dp}
    groups = rank_layout(gpus, sizes, dims)
    b = w.bytes_per_param
    m = max(1, w.global_batch // w.dp)
    tokens = w.global_batch * w.sequence_length
    act = w.sequence_length / w.cp * w.hidden_size * b
    layers = w.layers / w.pp
    kv_heads = cfg.kv_heads or w.heads or 1
    kv = 2 * w.sequence_length * w.hidden_size * (kv_heads / (w.heads or kv_heads)) * b
    rate = (w.tflops_per_gpu or (w.mfu or 0.4) * chassis.gpu_peak_tflops) * 1e12
    flops = 6 * w.parameters * tokens / n
    t_compute = flops / rate
    bubble = (w.pp - 1) / (m * cfg.virtual_stages) * t_compute
    shard = w.parameters / (w.tp * w.pp) * b
    eta, ovh = scn.protocol_efficiency, scn.step_overhead

    def timed(op, alg, grp, scheme, peers=None):
        return coll.time_collective(net, op, alg, None, scheme, None, eta, ovh, groups=grp, group_peers=peers)

    per_scheme = []
    for s in schemes:
        t_tp = t_cp = t_pp = t_dp = 0.0
        lat = 0.0  # the part of the communication time that is per-step latency (software + path)
        if w.tp > 1:
            tp = timed("allreduce", "ring", groups["tp"], s)
            t_tp, lat = 4 * layers * m * tp.time(act), lat + 4 * layers * m * tp.latency_time()
        if w.cp > 1:
            ag = timed("allgather", "ring", groups["cp"], s)
            t_cp = layers * m * 2 * ag.time(kv)  # the reduce-scatter backward has the same ring phases
            lat += layers * m * 2 * ag.latency_time()
        if w.pp > 1:
            stages = groups["pp"]  # each row: one pipeline, stage order
            srcs = [row[:-1] for row in stages]
            dsts = [row[1:] for row in stages]
            p2p = coll.time_collective(net, "sendrecv", "direct", None, s, None, eta, ovh,
                                       groups=[np.concatenate(srcs)], group_peers=[np.concatenate(dsts)])
            t_pp, lat = 2 * (w.pp - 1) * p2p.time(act / w.tp), lat + 2 * (w.pp - 1) * p2p.latency_time()
        if w.dp > 1:
            rs = timed("reducescatter", "ring", groups["dp"], s)
            t_dp = 2 * rs.time(shard)  # RS of gradients + AG of parameters: identical ring phases
            lat += 2 * rs.latency_time()
        hidden = cfg.dp_overlap * t_compute * 2 / 3
        exposed_dp = max(0.0, t_dp - hidden)
        exposed = t_tp + t_cp + t_pp + exposed_dp
        step = t_compute + bubble + exposed
        per_scheme.append({
            "scheme": s.name,
            "step_s": step,
            "exposed_comm_s": exposed,
            "exposed_fraction": exposed / step,
            "tp_s": t_tp, "cp_s": t_cp, "pp_exposed_s": t_pp, "dp_s": t_dp, "dp_exposed_s": exposed_dp,
            "effective_tflops_per_gpu": flops / step / 1e12,
            "comm_latency_s": lat,
            "latency_share": lat / (t_tp + t_cp + t_pp + t_dp) if t_tp + t_cp + t_pp + t_dp else 0.0,
            "tokens_per_s": tokens / step,
        })
    zones = sorted({int(net.server_zone[net.gpu_server[g]]) for g in gpus[:: max(1, len(gpus) // 512)]})
    buildings = sorted({int(net.server_building[net.gpu_server[g]]) for g in gpus[:: max(1, len(gpus) // 512)]})
    return {
        "workload": w.name, "order": cfg.order, "dims": cfg.dims, "gpus": n,
        "parallelism": f"TP{w.tp} CP{w.cp} PP{w.pp} DP{w.dp}",
        "microbatches": m, "compute_s": t_compute, "bubble_s": bubble,
        "dp_shard_bytes": shard, "tp_message_bytes": act, "zones_used": len(zones), "buildings_used": len(buildings),
        "schemes": per_scheme,
    }
