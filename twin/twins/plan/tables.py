"""What the fast stage looks up instead of recomputing: compute per distinct compute plan, memory by
part, and collective costs tabulated once per group layout on the compiled fabric.

- **Compute**: :func:`twin.twins.workload.compute.training` (the job twin's own model) once per distinct
  (TP, CP, PP, EP, micro-batch, SP, FP8, recomputation); the optimizer's time at ZeRO >= 1 is that of
  ZeRO 0 over DP x CP (it owns that share of the stage's parameters).
- **Memory**: :mod:`twin.compiler.resolve.memory`'s parts (a stage's parameters, a layer's bytes per
  token, the layers per stage) per distinct key, combined over every plan at once as
  :func:`twin.compiler.resolve.memory.training` combines them for one (a test holds the two equal).
- **Collectives**: a group layout is the size and rank stride of each dimension a communicator spans;
  the groups of a layout, placed in topology order, are timed once by the network twin
  (:func:`twin.twins.net.collectives.time_collective`, every group at once, so the fabric's sharing and
  oversubscription count) and then evaluated at each distinct message size.
"""

from __future__ import annotations

import time

import numpy as np

from twin.compiler.resolve import memory
from twin.lang.limits import CostError
from twin.lang.site.workload_models import RECOMPUTE_POLICIES
from twin.twins.plan.space import DIMS, ORDERS, RECOMPUTE
from twin.twins.workload import compute, moe
from twin.twins.workload.comm import Refused, Timed, _allreduce_algorithms, expert_dp_groups, replica_groups, shard_groups, time_fastest
from twin.twins.workload.jobs import rank_groups

DENSE = 1 << 22  # integer keys spanning at most this many values are factored by table, not by sorting


def _factor(x: np.ndarray) -> tuple[int, np.ndarray]:
    """(distinct values, each row's index among them in ascending order): ``np.unique``'s inverse, by a lookup
    table for integers of a small range (the plan axes) and by sorting otherwise (message sizes)."""
    if x.dtype.kind in "iub" and len(x):
        lo, hi = int(x.min()), int(x.max())
        if hi - lo < DENSE:
            present = np.zeros(hi - lo + 1, bool)
            present[x - lo] = True
            lut = np.cumsum(present) - 1
            return int(present.sum()), lut[x - lo]
    vals, inv = np.unique(x, return_inverse=True)
    return len(vals), inv.reshape(-1)


def codes(cols: dict[str, np.ndarray], names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct key, each row's key index) over the columns ``names``, keys in ascending
    order (as ``np.unique(..., return_index=True, return_inverse=True)`` gives them, without its sorts where
    the keys span a small range: most of the fast stage's time was those sorts)."""
    n = len(cols[names[0]])
    code, span = np.zeros(n, np.int64), 1
    for k in names:
        card, inv = _factor(cols[k])
        code, span = code * card + inv, span * card
    if span <= max(DENSE, 4 * n):
        first = np.full(span, n, np.int64)
        np.minimum.at(first, code, np.arange(n))
        uniq = np.flatnonzero(first < n)
        lut = np.zeros(span, np.int64)
        lut[uniq] = np.arange(len(uniq))
        return first[uniq], lut[code]
    uniq, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


COMPUTE_KEY = ("tp", "cp", "pp", "ep", "mb", "sp", "fp8", "rc")
COMPUTE_FIELDS = ("microbatch_s", "forward_s", "backward_s", "recompute_s", "optimizer0_s", "layers", "moe_layers",
                  "layer_forward_s", "layer_backward_s", "attention_forward_s", "attention_backward_s",
                  "gemm_s", "attention_s", "memory_s", "layer_gemm_s", "other_stages_s")


def compute_table(p, cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per plan, the job twin's compute of one micro-batch on the slowest stage (:data:`COMPUTE_FIELDS`)."""
    first, inv = codes(cols, COMPUTE_KEY)
    out = np.zeros((len(first), len(COMPUTE_FIELDS)))
    for j, i in enumerate(first):
        r = p.recipe({k: int(cols[k][i]) for k in (*COMPUTE_KEY, "dp", "v", "zero")} | {"dp": 1, "zero": 0, "v": 1})
        c = compute.training(p.gpu, p.shape, r, moe.expert_work(r, "experts" in r.fp8) if p.shape.moe else None)
        parts = c.forward + c.backward + c.recompute
        out[j] = (c.microbatch_s, c.forward.seconds, c.backward.seconds, c.recompute.seconds, c.optimizer_s, c.layers,
                  c.moe_layers, c.layer_forward_s, c.layer_backward_s, c.attention_forward_s, c.attention_backward_s,
                  parts.gemm_s, parts.attention_s, parts.memory_s, c.layer_gemm_s, c.other_stages_s)
    return {k: out[inv, i] for i, k in enumerate(COMPUTE_FIELDS)}


def _plan(p, c: dict, mb: int = 1, m: int = 1) -> memory.Plan:
    return memory.Plan(p.base.seq, mb, m, c.get("tp", 1), c.get("cp", 1), c.get("pp", 1), c.get("dp", 1), c.get("ep", 1),
                       c.get("v", 1), c.get("zero", 0), bool(c.get("sp", 1)), RECOMPUTE_POLICIES[RECOMPUTE[c.get("rc", 0)]],
                       p.base.fused_attention, p.base.grad_bucket, p.base.pipeline_schedule == "dualpipe" and c.get("pp", 1) > 1,
                       p.base.optimizer_bytes, p.base.grad_bytes, c.get("shard", 0))


def _per_key(p, cols, names, fn) -> np.ndarray:
    first, inv = codes(cols, names)
    vals = np.array([fn({k: int(cols[k][i]) for k in names}) for i in first], dtype=float).reshape(len(first), -1)
    return vals[inv]


def memory_table(p, cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bytes per GPU by part for every plan: :func:`twin.compiler.resolve.memory.training`, vectorised."""
    s = p.shape
    tp, cp, pp, dp, ep = (cols[k].astype(float) for k in ("tp", "cp", "pp", "dp", "ep"))
    zero = cols["zero"]
    params = _per_key(p, cols, ("tp", "pp", "ep"), lambda c: memory.stage_params(s, _plan(p, c)))
    dense, experts = params[:, 0], params[:, 1]
    if p.base.pipeline_schedule == "dualpipe":  # two stages per GPU where there is a pipeline
        two = np.where(cols["pp"] > 1, 2.0, 1.0)
        dense, experts = dense * two, experts * two
    ranks = cols["dp"] * cols["cp"]
    shard_i = np.where(cols["shard"] > 0, cols["shard"], ranks)  # hybrid sharding: the states over a shard group
    shard = shard_i.astype(float)
    eshard = np.maximum(1, shard_i // cols["ep"])
    n = dense + experts
    sharded = dense / shard + experts / eshard
    weights = memory.BF16 * n
    grads = p.base.grad_bytes * n
    opt = p.base.optimizer_bytes * np.where(zero >= 1, sharded, n)
    grads = np.where(zero >= 2, p.base.grad_bytes * sharded + np.minimum(p.base.grad_bucket, grads), grads)
    l_rep, l_routed = _per_key(p, cols, ("tp", "ep"), lambda c: s.zero3_layer(c["tp"], c["ep"])).T
    weights = np.where(zero >= 3, memory.BF16 * sharded + 2 * memory.BF16 * (l_rep + l_routed), weights)
    tokens = cols["mb"] * p.base.seq / cp
    kw = _per_key(p, cols, ("tp", "sp", "rc"), lambda c: memory.layer_bytes_per_token(s, _plan(p, c)))
    kept, work = kw[:, 0], kw[:, 1]
    layers = _per_key(p, cols, ("pp",), lambda c: memory.stage_layers(s.layers, c["pp"]))
    last_layers = layers[:, 2]
    dual = p.base.pipeline_schedule == "dualpipe"
    held = _per_key(p, cols, ("m", "pp", "v"), lambda c: memory.held_layers(memory.Plan(p.base.seq, 1, c["m"], pp=c["pp"], virtual_stages=c["v"],
                                                                                         dualpipe=dual and c["pp"] > 1), s.layers))[:, 0]
    acts = tokens * (kept * held + np.where(kept < work, work - kept, 0.0))
    logits = tokens * 4 * s.vocab / tp * 2
    last = tokens * (kept * last_layers + work) + logits
    multi = cols["pp"] > 1
    use_last = multi & (last > acts)
    acts = np.where(use_last, last - logits, acts)
    logits = np.where(multi & ~use_last, 0.0, logits)
    total = weights + grads + opt + acts + logits
    return {"weights": weights, "grads": grads, "optimizer": opt, "activations": acts, "logits": logits, "total": total}


def strides(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each dimension's rank stride under the plan's rank order (the product of the faster dimensions)."""
    perm = np.array([[DIMS.index(d) for d in o.split("-")] for o in ORDERS])[cols["order"]]  # (n, 4) dims fastest first
    sizes = np.stack([cols[d] for d in DIMS], axis=1).astype(np.int64)
    ordered = np.take_along_axis(sizes, perm, axis=1)
    excl = np.cumprod(np.concatenate([np.ones((len(perm), 1), np.int64), ordered[:, :-1]], axis=1), axis=1)
    out = np.empty_like(excl)
    np.put_along_axis(out, perm, excl, axis=1)
    out[sizes == 1] = 0  # a dimension of size 1 spans nothing: its stride names no layout
    return {d: out[:, i] for i, d in enumerate(DIMS)}


def signature(net, groups: list[np.ndarray], peers: list[np.ndarray] | None = None) -> tuple:
    """What a collective's time on the fabric depends on, read off its first group: its size, and how many
    NVLink domains, rails, leaves, zones and buildings it spans; for point-to-point transfers (``peers``: a CP
    ring's next rank, a pipeline's next stage), how many of its pairs cross each of those. Layouts with one
    signature are timed once (the fast stage's approximation; the full twin re-times the leaders on their own
    groups). Without the pairs, every layout's transfers over the same ranks (a CP ring over all of a job's
    GPUs, whatever its size or stride) would share one timing.

    >>> from types import SimpleNamespace as NS
    >>> net = NS(gpu_server=np.arange(8) // 4, gpu_local=np.arange(8) % 4, gpu_rail=None, domain=np.arange(8) // 4,
    ...          nic_leaf=np.zeros(8, int), gpu_nic=np.arange(8), server_zone=np.zeros(2, int), server_building=np.zeros(2, int))
    >>> ranks = np.arange(8)
    >>> near, far = [np.roll(ranks.reshape(2, 4), -1, axis=1).ravel()], [np.roll(ranks.reshape(4, 2).T, -1, axis=1).T.ravel()]
    >>> signature(net, [ranks], near) == signature(net, [ranks], far), signature(net, [ranks]) == signature(net, [ranks])
    (False, True)
    """
    g = np.asarray(groups[0])
    srv = net.gpu_server[g]
    rail = net.gpu_local[g] if net.gpu_rail is None else net.gpu_rail[g]
    out = (len(g), len(groups), *(len(np.unique(x)) for x in (net.domain[g], rail, net.nic_leaf[net.gpu_nic[g]],
                                                              net.server_zone[srv], net.server_building[srv])))
    if peers is None:
        return out
    q = np.asarray(peers[0])
    qsrv = net.gpu_server[q]
    qrail = net.gpu_local[q] if net.gpu_rail is None else net.gpu_rail[q]
    return out + tuple(int((a != b).sum()) for a, b in ((net.domain[g], net.domain[q]), (rail, qrail),
                                                         (net.nic_leaf[net.gpu_nic[g]], net.nic_leaf[net.gpu_nic[q]]),
                                                         (net.server_zone[srv], net.server_zone[qsrv]),
                                                         (net.server_building[srv], net.server_building[qsrv])))


class Collectives:
    """Collectives timed once per (what, fabric signature) on the problem's fabric (module docstring)."""

    def __init__(self, p):
        self.p = p
        self.timed: dict[tuple, Timed] = {}
        self.by_sig: dict[tuple, Timed] = {}
        self.intra: dict[tuple, bool] = {}
        self.calls = 0
        self.seconds: dict[str, float] = {}  # time spent tabulating, by collective (summed over the cores that timed)
        self.pending: dict | None = None  # while recording: signature -> what to time
        self.refused: dict[str, str] = {}  # collectives the network twin refused to time: what -> why
        self.alone: dict[tuple, Timed] = {}  # signature -> its first group timed on an otherwise idle fabric
        self.optimistic = False  # while set: a collective not timed yet answers with its first group alone (a bound)

    def groups(self, over: tuple[str, ...], rep: dict) -> list[np.ndarray]:
        sizes = {d: rep[d] for d in DIMS}
        return rank_groups(self.p.ranks, sizes, ORDERS[rep["order"]].split("-"), over)

    def _time(self, what: str, op: str, algs: list[str], groups, peers=None) -> Timed | None:
        sig = (what, *signature(self.p.net, groups, peers))
        if sig in self.by_sig:
            return self.by_sig[sig]
        if self.optimistic:  # a lower bound: every other group's traffic only slows it; transfers of pairs: free
            if sig not in self.alone:
                self.alone[sig] = Timed([]) if peers is not None else self.timed_now(op, algs, groups[:1])[0]
            return self.alone[sig]
        if self.pending is not None:  # recording what a chunk needs (twin.twins.plan.parallel): timed later, on every core
            self.pending.setdefault(sig, (what, op, algs, groups, peers))
            return None
        self.fill([(sig, what, *self.timed_now(op, algs, groups, peers))])
        return self.by_sig[sig]

    def timed_now(self, op: str, algs: list[str], groups, peers=None) -> tuple[Timed, float]:
        """One collective timed by the network twin, with the seconds it took."""
        t0 = time.perf_counter()
        try:
            t = time_fastest(self.p.net, op, algs, groups, self.p.scheme, self.p.lib, peers)
        except (CostError, ValueError) as e:  # the plans that need it cannot run as timed: ranked last, with the reason
            t = Refused(str(e))
        return t, time.perf_counter() - t0

    def fill(self, results) -> None:
        """Record timed collectives: ``(signature, what, Timed, seconds)`` each."""
        for sig, what, t, sec in results:
            self.calls += 1
            self.seconds[what] = self.seconds.get(what, 0.0) + sec
            self.by_sig[sig] = t
            if isinstance(t, Refused):
                self.refused.setdefault(what, t.reason)

    def get(self, what: str, key: tuple, rep: dict) -> Timed:
        """The Timed collective ``what`` (tp-allgather, tp-allreduce, cp-allgather, cp-ring, ep, pp, dp-allgather,
        dp-allreduce, edp-allgather, edp-allreduce: the routed experts' ranks) of the layout ``key``, built from the representative plan ``rep`` on first use."""
        k = (what, key)
        if k in self.timed:
            return self.timed[k]
        net = self.p.net
        if what.startswith("tp"):
            g = self.groups(("tp",), rep)
            if self._tp_intra(key, g):
                g = g[:1]  # groups inside one server each share nothing with another server's: one group is timed for all
            algs = ["ring"] if what == "tp-allgather" else _allreduce_algorithms(net, g[0], self.p.nvls)
            t = self._time(what, "allgather" if what == "tp-allgather" else "allreduce", algs, g)
        elif what == "cp-allgather":
            t = self._time(what, "allgather", ["ring"], self.groups(("cp",), rep))
        elif what == "cp-ring":
            g = self.groups(("cp",), rep)
            t = self._time(what, "sendrecv", ["direct"], [np.concatenate(g)], [np.concatenate([np.roll(x, -1) for x in g])])
        elif what == "pp":
            g = self.groups(("pp",), rep)
            t = self._time(what, "sendrecv", ["direct"], [np.concatenate([x[:-1] for x in g])], [np.concatenate([x[1:] for x in g])])
        elif what == "ep":
            g = moe.ep_groups(self.groups(("cp", "dp"), rep), rep["ep"])
            t = self._time(what, "alltoall", [moe.ep_algorithm(self.p.net, g[0], self.p.shape)], g)
        elif what in ("edp-allgather", "edp-allreduce"):
            op = what.split("-")[1]
            t = self._time(what, op, ["ring"] if op == "allgather" else ["ring", "tree"],
                           expert_dp_groups(self.groups(("cp", "dp"), rep), rep["ep"]))
        elif what in ("dps-allgather", "edps-allgather", "dpr-allreduce"):  # hybrid sharding: inside shard groups, across replicas
            g = self.groups(("cp", "dp"), rep)
            if what == "dpr-allreduce":
                t = self._time(what, "allreduce", ["ring", "tree"], replica_groups(g, rep["shard"]))
            else:
                g = shard_groups(g, rep["shard"])
                t = self._time(what, "allgather", ["ring"], expert_dp_groups(g, rep["ep"]) if what[0] == "e" else g)
        elif what == "dp-allgather":
            t = self._time(what, "allgather", ["ring"], self.groups(("cp", "dp"), rep))
        elif what == "dp-allreduce":
            t = self._time(what, "allreduce", ["ring", "tree"], self.groups(("cp", "dp"), rep))
        else:
            raise KeyError(what)
        if t is None:  # recorded, not timed yet: zero for now, never kept
            return Timed([])
        if self.optimistic:  # possibly a bound: never kept
            return t
        self.timed[k] = t
        return t

    def times(self, what: str, cols: dict, st: dict, key_names: tuple[str, ...], sizes: np.ndarray,
              mask: np.ndarray, part: int = 0) -> np.ndarray:
        """Seconds of collective ``what`` for every plan under ``mask`` at its message size (0 elsewhere);
        ``part`` 1: the part of them that does not shrink with the message (its latency)."""
        out = np.zeros(len(sizes))
        idx = np.flatnonzero(mask)
        if not len(idx):
            return out
        kcols = {}
        for name in key_names:
            kcols[name] = cols[name][idx] if not name.startswith("s_") else st[name[2:]][idx]
        kcols["size"] = np.round(sizes[idx], 3)
        first, inv = codes(kcols, (*key_names, "size"))
        vals = np.empty(len(first))
        for j, i in enumerate(first):
            r = idx[i]
            rep = {k: int(cols[k][r]) for k in (*DIMS, "order", "ep", "shard")}
            key = tuple(int(kcols[n][i]) for n in key_names)
            vals[j] = self.get(what, key, rep).at(float(sizes[r]))[part]
        out[idx] = vals[inv]
        return out

    def _tp_intra(self, key: tuple, groups: list[np.ndarray]) -> bool:
        """Whether every TP group of the layout ``key`` sits inside one server (kept per layout)."""
        if key not in self.intra:
            srv = self.p.net.gpu_server[np.asarray(groups)]
            self.intra[key] = bool((srv == srv[:, :1]).all())
        return self.intra[key]

    def tp_intra(self, cols: dict, st: dict, mask: np.ndarray) -> np.ndarray:
        """Whether each plan's TP groups sit inside one server (NVLink only)."""
        out = np.zeros(len(mask), bool)
        idx = np.flatnonzero(mask)
        if not len(idx):
            return out
        first, inv = codes({"tp": cols["tp"][idx], "s": st["tp"][idx]}, ("tp", "s"))
        vals = np.empty(len(first), bool)
        for j, i in enumerate(first):
            r = idx[i]
            key = (int(cols["tp"][r]), int(st["tp"][r]))
            if key not in self.intra:  # read off the groups: nothing is timed to learn it
                self._tp_intra(key, self.groups(("tp",), {k: int(cols[k][r]) for k in (*DIMS, "order", "ep")}))
            vals[j] = self.intra[key]
        out[idx] = vals[inv]
        return out
