"""The plan space of one model on N GPUs: every parallel plan the model and the hardware allow, as numpy
columns, with the plans that break a rule counted by reason before anything is timed.

A plan is TP x CP x PP x DP = N with expert parallelism (EP, MoE only) inside the data-parallel ranks,
the interleaved chunks per GPU (``v``), the micro-batch, recomputation (none, selective, full), the ZeRO
stage, sequence parallelism (TP > 1 only), FP8 GEMMs (a GPU with an FP8 peak only) and the rank order,
fastest dimension first, that places the groups on the topology (``tp-cp-pp-dp`` keeps TP inside a
server, then CP, then the pipeline; ``dp-tp-cp-pp`` puts data-parallel peers side by side). Orders that
differ only in where a dimension of size 1 sits are one order, so a plan with k dimensions above 1 has
k! orders.

The rules, each a reason a plan is pruned (:data:`RULES`), are the frameworks' own (Megatron-LM's
argument checks; DeepSpeed's): heads, KV heads and the FFN split evenly over TP; a sequence splits into
2 x CP chunks (CP's load-balanced causal split); the global batch splits over DP x micro-batch; experts
split over EP, and EP divides the data-parallel ranks; the interleaved schedule needs PP >= 2, layers
divisible by PP x v (a stack with uneven stages: v divides the longest stage, ceil(layers / PP)) and
micro-batches divisible by PP; ZeRO stages 2 and 3 do not run with pipeline
parallelism (DeepSpeed refuses it; Megatron shards only the optimizer with PP).

Hybrid sharding (``dp_shard``: ZeRO's states sharded inside groups of that many data-parallel ranks,
replicated across them) is searched only when it is pinned (``--fix dp_shard=0,8,64``; 0 is one shard over
every data-parallel rank, the default): a shard group divides DP x CP, is a multiple of EP and below
DP x CP, and needs ZeRO >= 1.

>>> sp = Space.of(Axes(gpus=8, layers=4, heads=8, kv_heads=8, ffn=64, seq=64, batch=8))
>>> sp.size > 0 and bool((sp.cols["tp"] * sp.cols["cp"] * sp.cols["pp"] * sp.cols["dp"] == 8).all())
True
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from twin.lang import limits

DIMS = ("tp", "cp", "pp", "dp")
ORDERS = tuple("-".join(p) for p in itertools.permutations(DIMS))  # rank orders, fastest first
RECOMPUTE = ("none", "selective", "full")
MAX_TP = 64
MAX_CP = 32
MAX_MICRO_BATCH = 32
RULES = {
    "tp": "heads, KV heads or FFN width do not split evenly over TP",
    "cp": "the sequence does not split into 2 x CP chunks",
    "batch": "the global batch does not split over DP x micro-batch",
    "ep": "experts do not split over EP, or EP does not divide the data-parallel ranks",
    "interleave": "interleaving needs PP >= 2, layers divisible by PP x v (uneven stages: v divides the longest) and micro-batches divisible by PP",
    "zero-pp": "the stack does not run this ZeRO stage with pipeline parallelism (most run ZeRO 0 or 1 only)",
    "shard": "a hybrid shard group (dp_shard) must divide the data-parallel ranks, hold whole EP groups and shard something (ZeRO >= 1)",
    "memory": "does not fit in HBM less the reserve",
}


@dataclass(frozen=True)
class Axes:
    """What the space depends on: the GPUs, the model's shape and the batch."""

    gpus: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    seq: int
    batch: int  # sequences per optimizer step
    experts: int = 0  # routed experts (0: dense)
    fp8: bool = False  # the GPU has an FP8 peak
    uneven: bool = False  # the stack's stages may hold unequal layer counts (catalog stacks: plans: uneven_stages)
    zero_with_pp: tuple[int, ...] = (0, 1)  # ZeRO stages the stack runs beside pipeline parallelism (plans: zero_with_pp)
    fixed: dict = field(default_factory=dict)  # axes pinned to a value or a list of allowed values: {"tp": 8, "zero": [0, 1]}


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending.

    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def orders_of(sizes: dict[str, int]) -> list[int]:
    """Indices into :data:`ORDERS` of the distinct rank orders of a plan: permutations of its dimensions
    above 1, the dimensions of size 1 in their place of ``tp-cp-pp-dp``.

    >>> [ORDERS[i] for i in orders_of({"tp": 8, "cp": 1, "pp": 1, "dp": 4})]
    ['tp-cp-pp-dp', 'dp-cp-pp-tp']
    """
    live = [d for d in DIMS if sizes[d] > 1]
    out = []
    for perm in itertools.permutations(live):
        it = iter(perm)
        order = [next(it) if sizes[d] > 1 else d for d in DIMS]
        out.append(ORDERS.index("-".join(order)))
    return out


@dataclass
class Space:
    """Columns of the surviving plans (one numpy array per field) and the count of pruned plans by rule."""

    cols: dict[str, np.ndarray]
    pruned: dict[str, int]
    structures: int  # (TP, CP, PP, DP, EP, v, micro-batch) tuples before the rules

    @property
    def size(self) -> int:
        return len(self.cols["tp"])

    @property
    def enumerated(self) -> int:
        return self.size + sum(self.pruned.values())

    def take(self, idx) -> dict[str, np.ndarray]:
        return {k: v[idx] for k, v in self.cols.items()}

    @classmethod
    def of(cls, ax: Axes) -> Space:
        return enumerate_space(ax)


def _allowed(ax: Axes, name: str, values: list) -> list:
    if name in ax.fixed:
        want = ax.fixed[name]
        want = set(want) if isinstance(want, (list, tuple, set, frozenset)) else {want}
        return [x for x in values if x in want]
    return values


def order_allowed(ax: Axes, order: str, sizes: dict[str, int]) -> bool:
    """Whether the pinned rank orders (a user's ``--fix order``, a stack's ``plans.orders``) allow ``order`` for a
    plan of these sizes: the same layout when the dimensions above 1 come in the same sequence (a dimension of
    size 1 sits anywhere).

    >>> ax = Axes(gpus=16, layers=8, heads=8, kv_heads=8, ffn=64, seq=64, batch=8, fixed={"order": ["tp-cp-dp-pp"]})
    >>> [order_allowed(ax, o, {"tp": 8, "cp": 1, "pp": 1, "dp": 2}) for o in ("tp-cp-pp-dp", "dp-cp-pp-tp")]
    [True, False]
    >>> order_allowed(ax, "tp-cp-pp-dp", {"tp": 4, "cp": 1, "pp": 2, "dp": 2})
    False
    """
    if "order" not in ax.fixed:
        return True
    want = ax.fixed["order"]
    return any(same_layout(w, order, sizes) for w in ([want] if isinstance(want, str) else want))


def same_layout(a: str, b: str, sizes: dict[str, int]) -> bool:
    """Whether rank orders ``a`` and ``b`` lay out a plan of these sizes alike: its dimensions above 1 in the same
    sequence.

    >>> same_layout("tp-cp-pp-dp", "tp-cp-dp-pp", {"tp": 8, "cp": 1, "pp": 1, "dp": 4})
    True
    """
    return [d for d in a.split("-") if sizes[d] > 1] == [d for d in b.split("-") if sizes[d] > 1]


def _per_plan(ax: Axes, tp: int, cp: int, pp: int, dp: int) -> tuple[int, int]:
    """(plans, of which ZeRO 2/3 with PP) one structure and one order stand for: recompute x ZeRO x SP x FP8,
    without the duplicates (SP with TP 1, ZeRO with one data-parallel rank)."""
    rc = len(_allowed(ax, "recompute", list(RECOMPUTE)))
    zs = [z for z in _allowed(ax, "zero", [0, 1, 2, 3]) if dp * cp > 1 or z == 0]
    sp = len([s for s in _allowed(ax, "sequence_parallel", [0, 1]) if tp > 1 or s == 0])
    f8 = len(_allowed(ax, "fp8", [0, 1] if ax.fp8 else [0]))
    bad = len([z for z in zs if z >= 2 and pp > 1])
    return len(zs) * sp * rc * f8, bad * sp * rc * f8


def _structures(ax: Axes, pruned: dict[str, int]) -> tuple[list[tuple], int]:
    """(tp, cp, pp, dp, ep, v, mb, orders) tuples that pass the structural rules; each pruned tuple counted
    as the plans it stands for (its orders x the per-plan axes)."""
    n, out, seen = ax.gpus, [], 0
    for tp in _allowed(ax, "tp", [d for d in divisors(n) if d <= MAX_TP]):
        for cp in _allowed(ax, "cp", [d for d in divisors(n // tp) if d <= MAX_CP and d & (d - 1) == 0]):
            for pp in _allowed(ax, "pp", [d for d in divisors(n // (tp * cp)) if d <= ax.layers]):
                dp = n // (tp * cp * pp)
                if not _allowed(ax, "dp", [dp]):
                    continue
                eps = _allowed(ax, "ep", [e for e in divisors(ax.experts) if e <= dp * cp] if ax.experts else [1])
                longest = -(-ax.layers // pp) if ax.uneven else ax.layers // pp  # layers on the longest stage
                vs = _allowed(ax, "v", [1] + [v for v in divisors(longest) if v > 1] if pp >= 2 else [1])
                mbs = _allowed(ax, "micro_batch", [m for m in divisors(max(1, ax.batch // dp)) if m <= MAX_MICRO_BATCH])
                sizes = {"tp": tp, "cp": cp, "pp": pp, "dp": dp}
                orders = [o for o in orders_of(sizes) if order_allowed(ax, ORDERS[o], sizes)]
                plans, _ = _per_plan(ax, tp, cp, pp, dp)
                for ep, v, mb, shard in ((e, v, m, sh) for e, v, m in itertools.product(eps, vs, mbs) for sh in _shards(ax, dp * cp, e)):
                    seen += 1
                    reason = None
                    if ax.heads % tp or ax.ffn % tp or (ax.kv_heads % tp and tp % ax.kv_heads):
                        reason = "tp"
                    elif ax.seq % (2 * cp) and cp > 1:
                        reason = "cp"
                    elif ax.batch % (dp * mb):
                        reason = "batch"
                    elif ax.experts and (ax.experts % ep or (dp * cp) % ep):
                        reason = "ep"
                    elif v > 1 and ((longest % v if ax.uneven else ax.layers % (pp * v)) or (ax.batch // (dp * mb)) % pp):
                        reason = "interleave"
                    elif shard and ((dp * cp) % shard or shard % ep or shard >= dp * cp or shard < 2):
                        reason = "shard"
                    if reason:
                        pruned[reason] += len(orders) * plans
                        continue
                    out.append((tp, cp, pp, dp, ep, v, mb, shard, orders))
    return out, seen


def _shards(ax: Axes, ranks: int, ep: int) -> list[int]:
    """Hybrid shard groups to try: none (0, one shard over every data-parallel rank) unless the axis is pinned,
    then the pinned values (those that cannot be are pruned under the rule ``shard``)."""
    if "dp_shard" not in ax.fixed:
        return [0]
    want = ax.fixed["dp_shard"]
    return sorted(set(want) if isinstance(want, (list, tuple, set, frozenset)) else {want})


NAMES = ("tp", "cp", "pp", "dp", "ep", "v", "mb", "shard", "rc", "zero", "sp", "fp8", "order")
STRUCT = NAMES[:8]


def enumerate_space(ax: Axes) -> Space:
    """Every plan of ``ax`` as columns (see the module docstring), the rule-breaking ones counted: the
    structures in Python (thousands), their cross with the per-plan axes in numpy (millions)."""
    pruned = {k: 0 for k in RULES}
    structs, seen = _structures(ax, pruned)
    if not structs:
        return Space({k: np.zeros(0, np.int32) for k in (*NAMES, "m")}, pruned, seen)
    grid = np.array(list(itertools.product([RECOMPUTE.index(x) for x in _allowed(ax, "recompute", list(RECOMPUTE))],
                                           _allowed(ax, "zero", [0, 1, 2, 3]), _allowed(ax, "sequence_parallel", [0, 1]),
                                           _allowed(ax, "fp8", [0, 1] if ax.fp8 else [0]))), dtype=np.int32).reshape(-1, 4)
    n_orders = np.array([len(s[8]) for s in structs])
    limits.check("plan_candidates", int(n_orders.sum()) * len(grid))  # before the columns are laid out
    st = np.array([s[:8] for s in structs], dtype=np.int32)
    orders = np.fromiter((o for s in structs for o in s[8]), dtype=np.int32, count=int(n_orders.sum()))
    st = np.repeat(st, n_orders, axis=0)
    n, g = len(st), len(grid)
    cols = {k: np.repeat(st[:, i], g) for i, k in enumerate(STRUCT)}
    for i, k in enumerate(("rc", "zero", "sp", "fp8")):
        cols[k] = np.tile(grid[:, i], n)
    cols["order"] = np.repeat(orders, g)
    keep = ((cols["tp"] > 1) | (cols["sp"] == 0)) & ((cols["dp"] * cols["cp"] > 1) | (cols["zero"] == 0))
    zero_pp = keep & ~np.isin(cols["zero"], ax.zero_with_pp) & (cols["pp"] > 1)
    pruned["zero-pp"] += int(zero_pp.sum())
    keep &= ~zero_pp
    unsharded = keep & (cols["shard"] > 0) & (cols["zero"] == 0)  # a shard group with nothing sharded
    pruned["shard"] += int(unsharded.sum())
    keep &= ~unsharded
    cols = {k: v[keep] for k, v in cols.items()}
    cols["m"] = (ax.batch // (cols["dp"] * cols["mb"])).astype(np.int32)
    return Space(cols, pruned, seen)
