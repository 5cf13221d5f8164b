"""A training step's communication, timed on the compiled fabric, and the part of it the GPUs wait for.

Per micro-batch (on the slowest stage, ``L`` layers, ``act = T x h x 2`` bytes):

- TP (:meth:`twin.twins.workload.recipe.Recipe.tp_exchanges`): all-gathers and reduce-scatters of
  ``act`` (sequence parallelism) or all-reduces of it, exposed; NCCL's choice per size between a ring, a
  tree across servers and NVLink SHARP (NVLS) inside one NVLink domain (:mod:`twin.twins.net.collectives`).
- CP: all-gather (Llama 3 s3.3.2) of this GPU's K and V heads for the whole sequence before attention and
  a reduce-scatter of their gradients after it, exposed; or a ring passing K/V chunks to the next CP rank
  ``CP - 1`` times, hidden behind the attention kernel where it is long enough.
- EP: four all-to-alls per MoE layer (:mod:`twin.twins.workload.moe`), exposed; with ``overlap_ep`` (DualPipe)
  beside another micro-batch's forward and backward of a layer, exposed only where they outlast it.

These run ``m + (PP - 1) / v`` times per step: m micro-batches plus the pipeline fill and drain, when
the stage also waits for them. PP: ``act / TP`` to the next stage per micro-batch, each way; the steady
state overlaps it, the ``2 (PP - 1)`` transfers of the fill and drain do not.

Data parallelism over the DP x CP ranks of a stage (G = its gradients, 2 bytes per parameter after TP):

- ZeRO 0: an all-reduce of G. ZeRO 1: a reduce-scatter of G and an all-gather of the updated weights.
  ZeRO 2: the reduce-scatter after every micro-batch. Gradient reduction overlapping the backward pass
  (``overlap_grad_reduce``) hides behind the last micro-batch's backward (every micro-batch's, ZeRO 2)
  except the last bucket (``grad_bucket``); the all-gather overlapping the forward pass
  (``overlap_param_gather``) hides behind the first micro-batch's forward.
- Hybrid sharding (``dp_shard``, PyTorch's HSDP, Megatron-Core's distributed optimizer instances): ZeRO's
  collectives run inside shard groups of ``dp_shard`` consecutive ranks, and each reduce-scatter is followed
  by an all-reduce of the rank's reduced shard (1/``dp_shard`` of G) across the replicas holding the same
  shard (ring or tree, NCCL's pick).
- ZeRO 3 (FSDP full shard): per layer and micro-batch, an all-gather of the layer's weights before its
  forward and again before its backward, and a reduce-scatter of its gradients after it; with prefetch
  (``overlap_param_gather``, and ``overlap_grad_reduce`` for the reduce-scatter) each hides behind the
  previous layer's compute where it is shorter, at most the ``zero3_bucket`` share of a layer running
  ahead (DeepSpeed's prefetch bucket; FSDP: the whole layer), except the first gather and the last
  reduce-scatter of every micro-batch. A stack that runs one collective per parameter tensor
  (``zero3_collectives: tensor``, DeepSpeed 2021) pays the collective's latency once per tensor, and a
  stack whose host works before each gather while the GPU waits (``zero3_host``: DeepSpeed 2021 synchronises
  the device first) pays that time once per gathered collective.
  The per-step count grows with micro-batches and layers, and each collective's latency with DP:
  ZeRO 3 loses throughput as data parallelism grows at a fixed micro-batch.

Latency share: the part of the communication time that does not shrink with the message (launch, step
latencies, NIC and path: :meth:`twin.twins.net.collectives.Timing.latency`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.lang.limits import CostError
from twin.twins.net import collectives as coll
from twin.twins.workload import moe as moe_mod
from twin.twins.workload.compute import BF16

KIND_OF = {"tp": "TP", "nvlink": "TP (NVLink)", "cp": "CP", "cp-ring": "CP ring", "ep": "EP all-to-all", "pp": "PP send/receive",
           "dp": "data-parallel", "edp": "expert data-parallel",
           "dp-replicas": "data-parallel replicas"}
KINDS = ("tp_allgather", "tp_reducescatter", "tp_allreduce", "cp_exchange", "ep_alltoall", "pp_sendrecv", "dp")


@dataclass
class Groups:
    """The job's communicators on placed GPUs."""

    tp: list[np.ndarray]
    cp: list[np.ndarray]
    pp: list[np.ndarray]  # each row: one pipeline, stage order
    grad: list[np.ndarray]  # DP x CP ranks of each stage
    ep: list[np.ndarray]
    intra_tp: bool  # every TP group inside one server (NVLink)


class Timed:
    """A collective timed once per (op, communicator, scheme): ``(time, latency)`` at any size, the
    fastest of the algorithms NCCL would consider."""

    def __init__(self, timings):
        self.timings = timings
        self.refused: list[str] = []  # algorithms refused for their cost while another was timed (said in the job's notes)

    def at(self, size: float) -> tuple[float, float]:
        if size <= 0 or not self.timings:
            return 0.0, 0.0
        t = min(self.timings, key=lambda x: x.time(size))
        return t.time(size), t.latency(size)


class Refused(Timed):
    """A collective the network twin refused to time (its cost past a limit, or no algorithm applies): any plan
    that needs it takes forever, so a search ranks it last and says why, instead of stopping."""

    def __init__(self, reason: str):
        super().__init__([])
        self.reason = reason

    def at(self, size: float) -> tuple[float, float]:
        return (float("inf"), float("inf")) if size > 0 else (0.0, 0.0)


def time_fastest(net, op: str, algs: list[str], groups, scheme, lib, peers=None) -> Timed:
    """The collective timed under each algorithm that applies to it; an algorithm that does not apply
    (``ValueError``: a recursive halving over ranks that are not a power of two) is skipped, and one
    refused for its cost (:class:`twin.lang.limits.CostError`) is left out and named in ``refused``; when
    none is timed, the error is raised: a collective is never timed as 0 s because it could not be timed."""
    out, errors, refused = [], [], []
    for a in algs:
        try:
            out.append(coll.time_collective(net, op, a, None, scheme, groups=groups, group_peers=peers, lib=lib))
        except CostError as e:
            refused.append((a, e))
        except ValueError as e:
            errors.append(f"{a}: {e}")
    if refused and not out:
        raise refused[0][1]
    if not out:
        raise ValueError(f"{op} over {len(groups):,} group(s) of {len(groups[0]):,} ranks cannot be timed: " + "; ".join(errors))
    t = Timed(out)
    t.refused = [f"{op}/{a} over {len(groups):,} group(s) of {len(groups[0]):,} ranks not timed ({e}); the fastest of the others taken"
                 for a, e in refused]
    return t


def _allreduce_algorithms(net, group: np.ndarray, nvls: bool) -> list[str]:
    multi = len(set(net.gpu_server[group].tolist())) > 1
    return ["ring", "tree"] if multi else (["ring", "nvls"] if nvls else ["ring"])


def time_comm(net, g: Groups, r, s, c, scheme, lib, nvls: bool, cache: dict) -> dict:
    """Exposed communication of one step under ``scheme`` (module docstring); ``cache`` keeps timings that
    do not depend on the routing scheme (NVLink-only TP) across schemes."""

    refusals: list[str] = []

    def timed(key, op, algs, groups, peers=None) -> Timed:
        k = (key, op) if key == "nvlink" else (scheme.name, key, op)
        if k not in cache:
            try:
                cache[k] = time_fastest(net, op, algs, groups, scheme, lib, peers)
            except CostError:
                raise
            except ValueError as e:
                raise ValueError(f"{KIND_OF.get(key, key)}: {e}") from None
        for x in cache[k].refused:
            if (said := f"{KIND_OF.get(key, key)}: {x}") not in refusals:
                refusals.append(said)
        return cache[k]

    m = r.microbatches
    v = r.virtual_stages
    rounds = m + (r.pp - 1) / v  # micro-batches plus the pipeline fill and drain
    act = r.tokens * s.hidden * BF16
    layers = c.layers
    out = {"tp_s": 0.0, "cp_s": 0.0, "ep_s": 0.0, "pp_exposed_s": 0.0, "dp_s": 0.0, "dp_exposed_s": 0.0}
    lat = 0.0
    kinds = {k: [0.0, 0.0] for k in KINDS}  # kind: [communication time, exposed time]
    if r.tp > 1:
        key = "nvlink" if g.intra_tp else "tp"
        ov = r.overlaps()
        for is_moe, n in ((False, layers - c.moe_layers), (True, c.moe_layers)):
            x = r.tp_exchanges(is_moe, s.parallel_block)
            t_ag, l_ag = timed(key, "allgather", ["ring"], g.tp).at(act) if x["allgather"] and n else (0.0, 0.0)
            t_ar, l_ar = timed(key, "allreduce", _allreduce_algorithms(net, g.tp[0], nvls), g.tp).at(act) \
                if x["allreduce"] and n else (0.0, 0.0)
            # overlapped (userbuffers): each collective runs in TP chunks beside its GEMM, which hides all but
            # the first chunk, as long as the GEMM is longer; the layer's GEMMs shared among its collectives
            budget = c.layer_gemm_s / max(1, x["allgather"] + x["reducescatter"])
            for kind, count, t in (("tp_allgather", x["allgather"], t_ag), ("tp_reducescatter", x["reducescatter"], t_ag),
                                   ("tp_allreduce", x["allreduce"], t_ar)):
                each = max(t / r.tp, t - budget) if ov.get(kind) else t
                kinds[kind][0] += rounds * n * count * t
                kinds[kind][1] += rounds * n * count * each
            lat += rounds * n * ((x["allgather"] + x["reducescatter"]) * l_ag + x["allreduce"] * l_ar)
        out["tp_s"] = sum(kinds[k][1] for k in ("tp_allgather", "tp_reducescatter", "tp_allreduce"))
    if r.cp > 1:
        kv = r.micro_batch * 2 * r.seq * s.kv_dim / min(r.tp, s.kv_heads) * BF16  # this GPU's K and V heads, whole sequence
        redo = r.recompute_share if {"core-attention"} & r.recomputed() else 0.0
        if r.cp_comm == "ring":
            p2p = timed("cp-ring", "sendrecv", ["direct"], [np.concatenate(g.cp)], [np.concatenate([np.roll(x, -1) for x in g.cp])])
            t1, l1 = p2p.at(kv / r.cp)
            hide_f, hide_b = (c.attention_forward_s, c.attention_backward_s) if r.overlap_cp else (0.0, 0.0)
            fwd = max(0.0, (r.cp - 1) * t1 - hide_f)
            bwd = max(0.0, 2 * (r.cp - 1) * t1 - hide_b)
            out["cp_s"] = rounds * layers * ((1 + redo) * fwd + bwd)
            kinds["cp_exchange"] = [rounds * layers * (3 + redo) * (r.cp - 1) * t1, out["cp_s"]]
            lat += rounds * layers * (3 + redo) * (r.cp - 1) * l1
        else:
            ag = timed("cp", "allgather", ["ring"], g.cp)
            t1, l1 = ag.at(kv)
            out["cp_s"] = rounds * layers * (2 + redo) * t1
            kinds["cp_exchange"] = [out["cp_s"], out["cp_s"]]
            lat += rounds * layers * (2 + redo) * l1
    if g.ep and c.moe_layers:
        a2a = timed("ep", "alltoall", [moe_mod.ep_algorithm(net, g.ep[0], s)], g.ep)
        t1, l1 = a2a.at(moe_mod.alltoall_bytes(s, r.tokens, r.tp))
        n = 4 + (2 * r.recompute_share if "experts" in r.recomputed() else 0)
        # overlapped (DualPipe): a layer's all-to-alls run beside another micro-batch's forward and backward of a
        # layer, exposed only where they outlast that compute
        each = max(0.0, n * t1 - c.layer_forward_s - c.layer_backward_s) if r.overlap_ep else n * t1
        out["ep_s"] = rounds * c.moe_layers * each
        kinds["ep_alltoall"] = [rounds * c.moe_layers * n * t1, out["ep_s"]]
        lat += rounds * c.moe_layers * n * l1
    if r.pp > 1:
        stages = g.pp
        p2p = timed("pp", "sendrecv", ["direct"], [np.concatenate([x[:-1] for x in stages])], [np.concatenate([x[1:] for x in stages])])
        t1, l1 = p2p.at(act / r.tp)
        steady = 2 * m * v * t1  # each micro-batch crosses each GPU v times, forward and backward
        out["pp_exposed_s"] = 2 * (r.pp - 1) * t1 + (0.0 if r.overlap_pp else steady)
        kinds["pp_sendrecv"] = [2 * (r.pp - 1) * t1 + steady, out["pp_exposed_s"]]
        lat += 2 * (r.pp - 1) * l1 + (0.0 if r.overlap_pp else 2 * m * v * l1)
    if g.grad:
        d_t, d_exp, d_lat = _data_parallel(timed, g, r, s, c)
        out["dp_s"], out["dp_exposed_s"] = d_t, d_exp
        kinds["dp"] = [d_t, d_exp]
        lat += d_lat
    exposed = out["tp_s"] + out["cp_s"] + out["ep_s"] + out["pp_exposed_s"] + out["dp_exposed_s"]
    comm = out["tp_s"] + out["cp_s"] + out["ep_s"] + out["pp_exposed_s"] + out["dp_s"]
    if refusals:
        out["algorithms_not_timed"] = refusals
    out.update(exposed_comm_s=exposed, comm_latency_s=lat, latency_share=lat / comm if comm else 0.0,
               comm_by_kind={k: {"total_s": t, "exposed_s": e, "hidden_s": t - e} for k, (t, e) in kinds.items() if t > 0})
    return out


def shard_groups(grad: list[np.ndarray], size: int) -> list[np.ndarray]:
    """Hybrid sharding's shard groups: each data-parallel group cut into runs of ``size`` consecutive ranks (the
    nearest ones under the rank order: PyTorch's HSDP mesh (replicate, shard), shard inner)."""
    return [np.asarray(x)[i:i + size] for x in grad for i in range(0, len(x), size)]


def replica_groups(grad: list[np.ndarray], size: int) -> list[np.ndarray]:
    """Hybrid sharding's replica groups: the ranks of each data-parallel group that hold the same shard, one
    per shard group (every ``size``-th rank)."""
    return [np.asarray(x)[i::size] for x in grad for i in range(size)]


def expert_dp_groups(grad: list[np.ndarray], ep: int) -> list[np.ndarray]:
    """The ranks of each data-parallel group that hold the same routed experts (EP groups are runs of ``ep``
    in it, :func:`twin.twins.workload.moe.ep_groups`): every ``ep``-th rank. Empty when each rank's experts
    are its own."""
    if ep >= min((len(x) for x in grad), default=0):
        return []
    return [np.asarray(x)[i::ep] for x in grad for i in range(ep)]


def _data_parallel(timed, g: Groups, r, s, c) -> tuple[float, float, float]:
    """(communication time, exposed time, latency part) of the step's data-parallel traffic: the replicated
    parameters' collectives over the DP x CP ranks and, for MoE, the routed experts' over the ranks that hold
    the same experts (:func:`expert_dp_groups`), one after the other."""
    rep_b = s.replicated_params / (r.tp * r.pp) * BF16
    routed_b = s.routed_params / (r.ep * r.pp) * BF16
    hybrid = r.zero >= 1 and 0 < r.dp_shard < len(g.grad[0])
    shard = shard_groups(g.grad, r.dp_shard) if hybrid else g.grad  # the ranks one ZeRO shard spans
    edp = expert_dp_groups(shard, r.ep) if routed_b else []
    grads = rep_b + routed_b

    def both(op: str, algs: list[str], rep: float, routed: float) -> tuple[float, float]:
        if len(shard[0]) < 2:  # a shard group of one rank: nothing to gather or scatter, the replicas reduce it all
            return 0.0, 0.0
        if r.ep == 1:  # the experts are replicated like the rest: one collective over the same ranks
            return timed("dp", op, algs, shard).at(rep + routed)
        t, lat = timed("dp", op, algs, shard).at(rep)
        if routed and edp:
            t2, l2 = timed("edp", op, algs, edp).at(routed)
            t, lat = t + t2, lat + l2
        return t, lat

    def across(rep: float, routed: float) -> tuple[float, float]:
        """Hybrid sharding: each rank's reduced shard (its 1/dp_shard of the replicated gradients, its EP group's
        share of the experts') all-reduced with the same shard of every other replica."""
        if not hybrid:
            return 0.0, 0.0
        return timed("dp-replicas", "allreduce", ["ring", "tree"], replica_groups(g.grad, r.dp_shard)).at((rep + routed * r.ep) / r.dp_shard)

    m = r.microbatches
    w_f = r.dp_overlap * c.forward.seconds
    w_b = r.dp_overlap * (c.backward.seconds + c.recompute.seconds)
    k = r.grad_bytes / BF16  # a gradient's bytes in the reduction against a weight's in the gather (2: FP32 gradients)
    tail = min(1.0, r.grad_bucket / (k * grads)) if grads else 0.0  # the last bucket's share of the gradients

    def reduce_exposed(t: float) -> float:
        return max(t * tail, t - w_b) if r.overlap_grad_reduce else t

    def gather_exposed(t: float) -> float:
        return max(t * tail, t - w_f) if r.overlap_param_gather else t

    if r.zero == 0:
        t, lat = both("allreduce", ["ring", "tree"], k * rep_b, k * routed_b)
        return t, reduce_exposed(t), lat
    if r.zero in (1, 2):
        t_g, l_g = both("allgather", ["ring"], rep_b, routed_b)
        t_r, l_r = both("allgather", ["ring"], k * rep_b, k * routed_b)  # a reduce-scatter moves what an all-gather of its bytes does
        t_x, l_x = across(k * rep_b, k * routed_b)
        t_r, l_r = t_r + t_x, l_r + l_x  # the replicas' all-reduce follows each reduce-scatter
        n_rs = m if r.zero == 2 else 1
        return n_rs * t_r + t_g, n_rs * reduce_exposed(t_r) + gather_exposed(t_g), n_rs * l_r + l_g
    l_rep, l_routed = s.zero3_mean_layer(r.tp, r.ep)
    layer = (l_rep + l_routed) * BF16
    t_l, l_l = both("allgather", ["ring"], l_rep * BF16, l_routed * BF16)
    t_s, _ = both("allgather", ["ring"], k * l_rep * BF16, k * l_routed * BF16)  # the layer's reduce-scatter
    t_s += across(k * l_rep * BF16, k * l_routed * BF16)[0]  # and the replicas' all-reduce of its shard (HSDP: every layer)
    per = s.zero3_tensors(r.ep) if r.zero3_collectives == "tensor" else 1.0
    if r.zero3_collectives == "tensor":  # the same bytes in one collective per tensor: each pays the latency again
        t_l, t_s, l_l = t_l + (per - 1) * l_l, t_s + (per - 1) * l_l, per * l_l
    t_l += per * r.zero3_host_s  # the host's time before each gather, which the GPU waits out (the stack's zero3_host)
    gathers = 2 + (r.recompute_share if {"attention", "mlp"} & r.recomputed() else 0)
    n = m * c.layers
    total = n * (gathers * t_l + t_s)
    # prefetch: the next layer's collectives behind this layer's compute, as far as the bucket lets them run ahead
    # (DeepSpeed's stage3_prefetch_bucket_size; FSDP: a whole layer); the first gather of each micro-batch and its
    # last reduce-scatter have nothing to hide behind
    share = min(1.0, r.zero3_bucket / layer) if r.zero3_bucket else 1.0
    og, orr = r.overlap_param_gather, r.overlap_grad_reduce
    fwd = (gathers - 1) * t_l - min(og * share * (gathers - 1) * t_l, c.layer_forward_s)
    bwd = t_l + t_s - min(share * (og * t_l + orr * t_s), c.layer_backward_s)
    # the micro-batch's first layer: its first gather has nothing to hide behind (the others neither, unprefetched),
    # nor has its last reduce-scatter
    exposed = m * ((c.layers - 1) * (fwd + bwd) + (t_l if og else gathers * t_l) + t_s)
    return total, exposed, n * (gathers + 1) * l_l
