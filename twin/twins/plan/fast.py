"""The fast stage: every plan of a space scored at once, in numpy, from the tables.

The step is the job twin's (:mod:`twin.twins.workload.jobs`, :mod:`twin.twins.workload.comm`):
m micro-batches of the slowest stage's compute plus the optimizer, the interleaved bubble
``(PP - 1) / v`` micro-batches, and the exposed communication: TP exchanges per layer (``rounds = m +
(PP - 1) / v`` times), CP's K/V exchange, EP's four all-to-alls per MoE layer, the pipeline's fill and
drain transfers, and the data-parallel traffic of the ZeRO stage less what hides behind the backward
(gradients) and forward (weights) passes. Every collective comes from the layout tables
(:class:`twin.twins.plan.tables.Collectives`); the full job twin re-times the leaders on the same fabric.
"""

from __future__ import annotations

import numpy as np

from twin.lang.site.workload_models import RECOMPUTE_POLICIES
from twin.twins.plan import tables
from twin.twins.plan.space import RECOMPUTE
from twin.twins.workload import compute, moe, stragglers
from twin.twins.workload.compute import BF16
from twin.twins.workload.recipe import EXPANDS, Recipe

PARTS = ("compute_s", "bubble_s", "tp_s", "cp_s", "ep_s", "pp_s", "dp_s", "recompute_s")


def _exchanges(cols: dict, parallel_block: bool, is_moe: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(all-gathers, reduce-scatters, all-reduces) of TP per layer and micro-batch, per plan."""
    lut = np.zeros((len(RECOMPUTE), 2, 3))
    for rc in range(len(RECOMPUTE)):
        for sp in (0, 1):
            x = Recipe(tp=2, sequence_parallel=bool(sp), recompute=RECOMPUTE_POLICIES[RECOMPUTE[rc]]).tp_exchanges(is_moe, parallel_block)
            lut[rc, sp] = (x["allgather"], x["reducescatter"], x["allreduce"])
    pick = lut[cols["rc"], cols["sp"]]
    return pick[:, 0], pick[:, 1], pick[:, 2]


def _redo(name: str) -> np.ndarray:
    """Per recomputation policy, whether ``name`` runs again."""
    return np.array([name in {m for r in RECOMPUTE_POLICIES[x] for m in EXPANDS[r]} for x in RECOMPUTE])


def evaluate(p, cols: dict[str, np.ndarray], coll: tables.Collectives, comp: dict | None = None,
             data_parallel: bool = True) -> dict[str, np.ndarray]:
    """Step time and its parts (seconds) for every plan of ``cols``; without ``data_parallel`` the
    data-parallel traffic counts as free, so the step is a lower bound on the plan's (the search's second
    bound: the model-parallel collectives are timed before the data-parallel ones)."""
    s, b = p.shape, p.base
    c = comp if comp is not None else tables.compute_table(p, cols)
    st = tables.strides(cols)
    tp, cp, pp, dp = (cols[k] for k in ("tp", "cp", "pp", "dp"))
    n = len(tp)
    m = cols["m"].astype(float)
    v = cols["v"].astype(float)
    rounds = m + (pp - 1) / v
    tokens = cols["mb"] * b.seq / cp
    act = tokens * s.hidden * BF16
    layers, moe_layers = c["layers"], c["moe_layers"]
    out = {k: np.zeros(n) for k in ("tp_s", "cp_s", "ep_s", "pp_s", "dp_s", "dp_total_s")}
    has_tp = tp > 1
    if has_tp.any():
        intra = coll.tp_intra(cols, st, has_tp)
        per = np.zeros(n)
        can = p.tp_overlaps(tp, cols["sp"])  # userbuffers: sequence parallelism inside one NVLink domain
        ov = {"allgather": ("allgather" in b.overlap_tp) & can, "reducescatter": ("reducescatter" in b.overlap_tp) & can}
        for is_moe, nl in ((False, layers - moe_layers), (True, moe_layers)):
            n_ag, n_rs, n_ar = _exchanges(cols, s.parallel_block, is_moe)
            live = has_tp & (nl > 0)
            t_ag, t_ar = np.zeros(n), np.zeros(n)
            for flag in (True, False):
                keys = ("tp",) if flag else ("tp", "s_tp")
                t_ag += coll.times("tp-allgather", cols, st, keys, act, live & (n_ag > 0) & (intra == flag))
                t_ar += coll.times("tp-allreduce", cols, st, keys, act, live & (n_ar > 0) & (intra == flag))
            # overlapped (userbuffers) as comm.time_comm: all but one TP chunk hides behind the layer's GEMMs
            budget = c["layer_gemm_s"] / np.maximum(1, n_ag + n_rs)
            hidden = np.maximum(t_ag / tp, t_ag - budget)
            per += nl * (n_ag * np.where(ov["allgather"], hidden, t_ag) + n_rs * np.where(ov["reducescatter"], hidden, t_ag) + n_ar * t_ar)
        out["tp_s"] = rounds * per
    redo_core = _redo("core-attention")[cols["rc"]].astype(float)
    has_cp = cp > 1
    if has_cp.any():
        kv = cols["mb"] * 2 * b.seq * s.kv_dim / np.minimum(tp, s.kv_heads) * BF16
        if b.cp_comm == "ring":
            t1 = coll.times("cp-ring", cols, st, ("cp", "s_cp"), kv / cp, has_cp)
            hide_f, hide_b = (c["attention_forward_s"], c["attention_backward_s"]) if b.overlap_cp else (0.0, 0.0)
            fwd = np.maximum(0.0, (cp - 1) * t1 - hide_f)
            bwd = np.maximum(0.0, 2 * (cp - 1) * t1 - hide_b)
            out["cp_s"] = np.where(has_cp, rounds * layers * ((1 + redo_core) * fwd + bwd), 0.0)
        else:
            t1 = coll.times("cp-allgather", cols, st, ("cp", "s_cp"), kv, has_cp)
            out["cp_s"] = rounds * layers * (2 + redo_core) * t1
    has_ep = (cols["ep"] > 1) & (moe_layers > 0)
    if s.moe and has_ep.any():
        t1 = coll.times("ep", cols, st, ("cp", "s_cp", "dp", "s_dp", "ep"), moe.alltoall_bytes(s, tokens, tp), has_ep)
        t_n = (4 + 2 * _redo("experts")[cols["rc"]]) * t1
        each = np.maximum(0.0, t_n - c["layer_forward_s"] - c["layer_backward_s"]) if b.overlap_ep else t_n
        out["ep_s"] = rounds * moe_layers * each  # as comm.time_comm, overlapped or not
    has_pp = pp > 1
    if has_pp.any():
        t1 = coll.times("pp", cols, st, ("pp", "s_pp"), act / tp, has_pp)
        out["pp_s"] = 2 * (pp - 1) * t1 + (0.0 if b.overlap_pp else 2 * m * v * t1)
    if data_parallel:
        _data_parallel(p, cols, st, coll, c, out)
    zero_opt = _optimizer(p, cols, c)
    out["compute_s"] = m * c["microbatch_s"] + zero_opt
    one_f1b = (v <= 1) & (c["other_stages_s"] > 0)
    out["bubble_s"] = _bubble(p, pp, v, one_f1b, c)
    slow = stragglers.expected_max(b.stragglers[0], b.stragglers[1], p.gpus) if b.stragglers else 0.0
    out["straggler_s"] = slow * (out["compute_s"] + out["bubble_s"])
    out["recompute_s"] = m * c["recompute_s"]
    out["exposed_s"] = out["tp_s"] + out["cp_s"] + out["ep_s"] + out["pp_s"] + out["dp_s"]
    out["step_s"] = out["compute_s"] + out["bubble_s"] + out["straggler_s"] + out["exposed_s"]
    return out


def lower_bound(p, cols: dict[str, np.ndarray], c: dict) -> np.ndarray:
    """A step no plan beats: its compute, bubble and stragglers with every collective free (the bound of
    the search's branch and bound; :func:`evaluate` adds only non-negative communication to it)."""
    b = p.base
    pp, v, m = cols["pp"], cols["v"].astype(float), cols["m"].astype(float)
    zero_opt = _optimizer(p, cols, c)
    one_f1b = (v <= 1) & (c["other_stages_s"] > 0)
    bubble = _bubble(p, pp, v, one_f1b, c)
    slow = stragglers.expected_max(b.stragglers[0], b.stragglers[1], p.gpus) if b.stragglers else 0.0
    return (1 + slow) * (m * c["microbatch_s"] + zero_opt + bubble)


def _bubble(p, pp, v, one_f1b, c) -> np.ndarray:
    """The pipeline bubble as :meth:`twin.twins.workload.compute.TrainingCompute.bubble_s` times it."""
    if p.base.pipeline_schedule == "dualpipe":
        return np.where(pp > 1, compute.dualpipe_bubble(pp, c["forward_s"], c["backward_s"] + c["recompute_s"]), 0.0)
    return np.where(pp > 1, (pp - 1) * np.where(one_f1b, c["other_stages_s"], c["microbatch_s"] / v), 0.0)


def _optimizer(p, cols, c) -> np.ndarray:
    """The optimizer step's time: the table's (no ZeRO) over the DP x CP ranks at ZeRO >= 1, the routed experts
    over the ranks that hold the same ones (EP fewer), as :func:`twin.twins.workload.compute.training` times it."""
    s = p.shape
    rep, routed = s.replicated_params / cols["tp"], s.routed_params / cols["ep"]
    f = routed / (rep + routed)
    shard = np.where(cols["shard"] > 0, cols["shard"], cols["dp"] * cols["cp"]).astype(float)  # hybrid sharding: a shard group
    return np.where(cols["zero"] >= 1, c["optimizer0_s"] / shard * (1 - f + f * cols["ep"]), c["optimizer0_s"])


def _data_parallel(p, cols, st, coll, c, out) -> None:
    """Data-parallel time (``dp_total_s``) and its exposed part (``dp_s``) by ZeRO stage, as
    :func:`twin.twins.workload.comm._data_parallel` times it."""
    s, b = p.shape, p.base
    tp, cp, pp, dp, zero = (cols[k] for k in ("tp", "cp", "pp", "dp", "zero"))
    has = cp * dp > 1
    if not has.any():
        return
    m = cols["m"].astype(float)
    ep = cols["ep"]
    rep_b = s.replicated_params / (tp * pp) * BF16
    routed_b = s.routed_params / (ep * pp) * BF16
    grads = rep_b + routed_b
    keys = ("cp", "s_cp", "dp", "s_dp")
    split = (ep > 1) & (routed_b > 0)  # routed experts reduced apart, over the ranks holding the same ones
    edp = split & (ep < dp * cp)
    w_f = b.dp_overlap * c["forward_s"]
    w_b = b.dp_overlap * (c["backward_s"] + c["recompute_s"])
    k = b.grad_bytes / BF16  # as comm._data_parallel: FP32 gradients reduce twice a weight's bytes
    tail = np.minimum(1.0, b.grad_bucket / (k * grads))

    shard = cols["shard"]
    hyb = has & (zero >= 1) & (shard > 0)  # hybrid sharding: inside shard groups, then across the replicas
    hkeys = (*keys, "shard")
    eds = split & (ep < shard)

    def both(op: str, mask, rep, routed, part: int = 0):
        """As comm._data_parallel: one collective when EP is 1, else the replicated and the routed parts; under
        hybrid sharding each over the shard groups (``part`` 1: their latency)."""
        flat = mask & ~hyb
        t = coll.times(f"dp-{op}", cols, st, keys, np.where(split, rep, rep + routed), flat, part)
        t += coll.times(f"edp-{op}", cols, st, (*keys, "ep"), routed, flat & edp, part)
        if op == "allgather" and hyb.any():
            t += coll.times("dps-allgather", cols, st, hkeys, np.where(split, rep, rep + routed), mask & hyb, part)
            t += coll.times("edps-allgather", cols, st, (*hkeys, "ep"), routed, mask & hyb & eds, part)
        return t

    def across(mask, rep, routed):
        """As comm._data_parallel: the replicas' all-reduce of each rank's reduced shard."""
        return coll.times("dpr-allreduce", cols, st, hkeys, (rep + routed * ep) / np.maximum(shard, 1), mask & hyb) if hyb.any() else 0.0

    def reduce_exposed(t):
        return np.maximum(t * tail, t - w_b) if b.overlap_grad_reduce else t

    def gather_exposed(t):
        return np.maximum(t * tail, t - w_f) if b.overlap_param_gather else t

    z0 = has & (zero == 0)
    t = both("allreduce", z0, k * rep_b, k * routed_b)
    total, exposed = np.where(z0, t, 0.0), np.where(z0, reduce_exposed(t), 0.0)
    z12 = has & ((zero == 1) | (zero == 2))
    t_g = both("allgather", z12, rep_b, routed_b)
    t_r = t_g if k == 1 else both("allgather", z12, k * rep_b, k * routed_b)  # BF16 gradients: the gather's bytes
    t_r = t_r + across(z12, k * rep_b, k * routed_b)
    n_rs = np.where(zero == 2, m, 1.0)
    total += np.where(z12, n_rs * t_r + t_g, 0.0)
    exposed += np.where(z12, n_rs * reduce_exposed(t_r) + gather_exposed(t_g), 0.0)
    z3 = has & (zero == 3)
    if z3.any():
        a, e = s.zero3_mean_layer(1, 1)  # per layer, shares of TP (replicated) and EP (routed)
        l_rep, l_routed = a / tp * BF16, e / ep * BF16
        layer = l_rep + l_routed
        t_l = both("allgather", z3, l_rep, l_routed)
        t_s = t_l if k == 1 else both("allgather", z3, k * l_rep, k * l_routed)  # the layer's reduce-scatter
        t_s = t_s + across(z3, k * l_rep, k * l_routed)
        if b.zero3_collectives == "tensor":  # as comm._data_parallel: each tensor's collective pays the layer gather's latency
            u = np.unique(ep)
            per = np.array([s.zero3_tensors(int(e)) for e in u])[np.searchsorted(u, ep)]
            one = (per - 1) * both("allgather", z3, l_rep, l_routed, part=1)
            t_l, t_s = t_l + one, t_s + one
        else:
            per = 1.0
        t_l = t_l + per * b.zero3_host_s  # as comm._data_parallel: the host's time before each gather
        gathers = 2 + (_redo("attention") | _redo("mlp"))[cols["rc"]]
        layers = c["layers"]
        tot3 = m * layers * (gathers * t_l + t_s)
        # prefetch as comm._data_parallel: at most the bucket's share of a layer runs ahead of need
        share = np.minimum(1.0, b.zero3_bucket / layer) if b.zero3_bucket else 1.0
        og, orr = float(b.overlap_param_gather), float(b.overlap_grad_reduce)
        fwd = (gathers - 1) * t_l - np.minimum(og * share * (gathers - 1) * t_l, c["layer_forward_s"])
        bwd = t_l + t_s - np.minimum(share * (og * t_l + orr * t_s), c["layer_backward_s"])
        exp3 = m * ((layers - 1) * (fwd + bwd) + (t_l if og else gathers * t_l) + t_s)
        total += np.where(z3, tot3, 0.0)
        exposed += np.where(z3, exp3, 0.0)
    out["dp_total_s"], out["dp_s"] = total, exposed
