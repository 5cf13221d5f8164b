"""Memory per GPU of a training plan, and the KV cache of a serving deployment.

Training, on the pipeline stage that holds the most (the first: the embedding and the most micro-batches
in flight; the last: the output layer and its FP32 logits):

- **Model state**, 16 bytes per parameter (BF16 weights and gradients, FP32 master weights and two Adam
  moments; Rajbhandari et al., ZeRO, SC'20, s3.1) of the stage's parameters after TP and EP; a stack that
  keeps more optimizer state says so (``optimizer_bytes``: Megatron-LM 2021 also held an FP32 copy of every
  gradient between steps, 16 optimizer bytes, 20 in all); a stack that holds and reduces its gradients in FP32
  says so too (``grad_reduce_fp32``: Megatron-Core's grad_reduce_in_fp32, 4 bytes a gradient, 18 in all). ZeRO 1
  shards the optimizer bytes over the data-parallel ranks (DP x CP), ZeRO 2 the gradients too (plus one
  bucket being reduced), ZeRO 3 the weights too (plus two layers gathered: the one computing and the one
  prefetched). Experts are sharded over EP and replicated over DP x CP / EP. Hybrid sharding (``dp_shard``,
  PyTorch's HSDP) shards each of these over a shard group of ``dp_shard`` ranks instead of all DP x CP.
- **Activations** kept for the backward pass, per token and layer, following Korthikanti et al. ("Reducing
  Activation Recomputation in Large Transformer Models", MLSys 2023, s4: ``34 s b h + 5 a s^2 b`` bytes for
  a GPT layer without parallelism) tensor by tensor, so the same count serves SwiGLU, grouped-query and
  fused (FlashAttention: Q, K, V, the output and its log-sum-exp instead of the ``5 a s`` bytes of scores,
  mask and dropped probabilities) attention. Tensor parallelism divides what is split by heads or FFN
  columns; sequence parallelism also the norms' and dropouts' inputs; CP divides the tokens. Recomputed
  modules keep only their input; full recomputation keeps each layer's input (plus one layer's working
  set while it is recomputed).
- **In flight**: 1F1B holds ``min(m, PP)`` micro-batches of the first stage's layers; the interleaved
  schedule holds ``min(m v, 2 (PP - 1) + (v - 1) PP + 1)`` chunks of ``layers / (PP v)`` layers each
  (Megatron-LM's warm-up on rank 0), i.e. about ``PP + (PP - 1) / v`` micro-batches' worth; where the first
  stage is a layer short, the short chunk is its first, which the warm-up visits most (:func:`held_layers`).

A plan fits when the total stays within the GPU's HBM less :data:`RESERVE_BYTES` (CUDA context, NCCL
buffers, allocator fragmentation). Worked example (GPT-3 175B, 96 layers, h 12,288, at TP1 PP1 on 80 GB:
the 2.8 TB of model state alone is 35 GPUs' worth):

>>> from twin.compiler.resolve.transformer import Shape
>>> s = Shape(96, 12288, 49152, 96, 96, 51200, "gelu", "learned", True, True)
>>> m = training(s, Plan(seq=2048, micro_batch=1, microbatches=8), 80e9)
>>> round(m.state / 1e12, 2), m.fits
(2.79, False)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

RESERVE_BYTES = 3e9  # assumed: CUDA context (~0.5 GB), NCCL buffers (~1-2 GB) and allocator fragmentation
BF16 = 2
OPTIMIZER_BYTES = 12.0  # FP32 master weights and Adam's two moments (ZeRO, SC'20, s3.1)
FP32 = 4  # bytes of a gradient held and reduced in FP32 (a stack's grad_reduce_fp32: Megatron-Core's grad_reduce_in_fp32)


def grad_bytes(fp32: bool) -> float:
    """Bytes per gradient a stack holds and reduces: BF16 (2), or FP32 (4) with ``grad_reduce_fp32``."""
    return FP32 if fp32 else BF16


@dataclass(frozen=True)
class Plan:
    """The recipe fields the memory depends on (a :class:`TrainingJob`'s, or a what-if's)."""

    seq: int
    micro_batch: int = 1
    microbatches: int = 1
    tp: int = 1
    cp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    virtual_stages: int = 1
    zero: int = 0
    sequence_parallel: bool = True
    recompute: tuple[str, ...] = ()
    fused_attention: bool = True
    grad_bucket: float = 160e6
    dualpipe: bool = False  # DeepSeek-V3's schedule: two stages per GPU, PP + 1 micro-batches in flight
    optimizer_bytes: float = OPTIMIZER_BYTES  # the stack's optimizer state per parameter (catalog stacks: optimizer_bytes)
    grad_bytes: float = BF16  # bytes per gradient held (4: FP32, the stack's grad_reduce_fp32)
    dp_shard: int = 0  # ranks of DP x CP one ZeRO shard spans (hybrid sharding); 0: all of them
    recompute_share: float = 1.0  # the share of the stage's layers under ``recompute`` (recompute_layers); the rest keep all

    @classmethod
    def of(cls, w, fused_attention: bool = True, micro_batch: int | None = None, dualpipe: bool = False,
           optimizer_bytes: float = OPTIMIZER_BYTES, grad_bytes: float = BF16) -> Plan:
        mb = micro_batch or w.micro_batch
        return cls(w.sequence_length, mb, max(1, w.global_batch // (w.dp * mb)), w.tp, w.cp, w.pp, w.dp, w.ep,
                   w.virtual_stages, w.zero, w.sequence_parallel, w.recompute_modules, fused_attention, w.grad_bucket,
                   dualpipe and w.pp > 1, optimizer_bytes, grad_bytes, getattr(w, "dp_shard", None) or 0,
                   getattr(w, "recompute_share", 1.0))


@dataclass(frozen=True)
class TrainingMemory:
    """Bytes per GPU on the fullest stage."""

    weights: float
    grads: float
    optimizer: float
    activations: float
    logits: float
    inflight: float  # micro-batches' worth of the stage's layers held at once
    hbm: float

    @property
    def state(self) -> float:
        return self.weights + self.grads + self.optimizer

    @property
    def total(self) -> float:
        return self.state + self.activations + self.logits

    @property
    def fits(self) -> bool:
        return not self.hbm or self.total <= self.hbm - RESERVE_BYTES

    def as_dict(self) -> dict:
        return {"weights_bytes": self.weights, "grads_bytes": self.grads, "optimizer_bytes": self.optimizer,
                "activations_bytes": self.activations, "logits_bytes": self.logits, "total_bytes": self.total,
                "hbm_bytes": self.hbm, "reserve_bytes": RESERVE_BYTES, "microbatches_in_flight": self.inflight, "fits": self.fits}


def layer_bytes_per_token(s, p: Plan) -> tuple[float, float]:
    """(kept, working set) activation bytes per token of one layer on one GPU: what the backward pass
    needs kept under the plan's recomputation, and what the layer holds while it runs (or is recomputed)."""
    h, t = s.hidden, p.tp
    spd = t if p.sequence_parallel else 1  # norms, residuals and dropout masks: split only under SP
    kv = s.kv_dim
    drop = 1.0 if s.dropout else 0.0
    ctx = min(s.window or p.seq, p.seq)
    norm_in = BF16 * h / spd
    core = 4 * s.heads / t if p.fused_attention else 5 * s.heads * ctx / t  # log-sum-exp, or scores, mask and dropped probabilities
    attn = {"norm": norm_in, "qkv_in": BF16 * h / spd, "qkv": BF16 * (h + 2 * kv) / t, "core": core, "ctx": BF16 * h / t,
            "drop": drop * h / spd}
    width = 2 * s.ffn if s.mlp == "swiglu" else s.ffn
    if s.moe:  # per token: the visited experts' activations (expert TP 1: not split by TP)
        m = s.moe
        e_width = (2 * m.ffn if s.mlp == "swiglu" else m.ffn) * (m.top_k + m.shared) * (m.capacity or 1.0)
        frac = s.moe_layers / s.layers
        mlp_act = BF16 * ((1 - frac) * width / t + frac * e_width / t)
        mlp_out = BF16 * ((1 - frac) * s.ffn / t + frac * m.ffn * (m.top_k + m.shared) / t)
    else:
        mlp_act, mlp_out = BF16 * width / t, BF16 * s.ffn / t
    mlp = {"norm": 0.0 if s.parallel_block else norm_in, "fc1_in": BF16 * h / spd, "act_in": mlp_act, "act_out": mlp_out,
           "drop": drop * h / spd}
    full = sum(attn.values()) + sum(mlp.values())
    r = set(p.recompute)
    if {"attention", "mlp"} <= r or (s.moe and {"attention", "experts"} <= r and not s.dense_layers):
        return norm_in, full  # the layer's input only
    kept = dict(attn)
    if "attention" in r:
        kept = {"norm": norm_in}
    elif "core-attention" in r:
        kept["core"] = 0.0
    if "norm" in r:
        kept["qkv_in"] = 0.0
    keep_mlp = dict(mlp)
    if "mlp" in r or ("experts" in r and s.moe and not s.dense_layers):
        keep_mlp = {"norm": mlp["norm"]}
    else:
        if "activation" in r:
            keep_mlp["act_out"] = 0.0
        if "norm" in r:
            keep_mlp["fc1_in"] = 0.0
    return sum(kept.values()) + sum(keep_mlp.values()), full


def held_layers(p: Plan, layers: int) -> float:
    """Layer-micro-batches of activations the first stage holds at its peak: 1F1B holds ``min(m, PP)``
    micro-batches of its layers, DualPipe ``PP + 1`` (DeepSeek-V3 Table 2). The interleaved schedule's rank 0
    runs ``W = min(m v, 2 (PP - 1) + (v - 1) PP + 1)`` forwards before its first backward (Megatron-LM's
    warm-up), PP micro-batches on each of its model chunks in turn; after that each forward is paired with a
    backward. Where the first stage is a layer short (Llama 3 s3.3.2: "the first model chunk on the first
    stage has only the embedding"), the short chunk is its first, which the warm-up visits most.

    >>> held_layers(Plan(8192, 1, 16, pp=16, virtual_stages=8), 126)  # Llama 3 405B at 16K GPUs: 7 layers, chunk 0 empty
    112.0
    >>> held_layers(Plan(8192, 1, 32, pp=16, virtual_stages=8), 128)  # 8 even stages: 143 chunks of one layer
    143.0
    """
    first, full, _ = stage_layers(layers, p.pp)
    m, pp, v = p.microbatches, p.pp, p.virtual_stages
    if pp == 1:
        return float(first)
    if p.dualpipe:
        return float(min(m, pp + 1) * first)
    if v == 1:
        return float(min(m, pp) * first)
    w = min(m * v, 2 * (pp - 1) + (v - 1) * pp + 1)
    on_first = sum(min(pp, w - g * pp) for g in range(0, -(-w // pp), v))  # forwards of chunk 0 among the W
    return w * full / v - on_first * (full - first)


def stage_layers(layers: int, pp: int) -> tuple[int, int, int]:
    """Layers on the (first, middle, last) pipeline stages: ``ceil(layers / PP)`` each, the shortfall
    taken from the end stages first, which also hold the embedding and the output layer (Llama 3 s3.3.2:
    126 layers on 16 stages, the first and the last one layer fewer).

    >>> stage_layers(126, 16), stage_layers(105, 35), stage_layers(24, 1)
    ((7, 8, 7), (3, 3, 3), (24, 24, 24))
    """
    full = math.ceil(layers / pp)
    if pp == 1:
        return layers, layers, layers
    short = full * pp - layers
    first = full - (1 if short >= 1 else 0)
    last = full - (1 if short >= 2 else 0)
    return first, full, last


def stage_params(s, p: Plan) -> tuple[float, float]:
    """(dense, expert) parameters per GPU on the first stage (its layers and the embedding; with one
    stage also the output layer unless it is tied)."""
    per_stage = stage_layers(s.layers, p.pp)[0]
    moe_frac = s.moe_layers / s.layers if s.layers else 0.0
    dense_layer = s.layer_params / p.tp
    moe_layer = (s.attn_params + s.hidden * s.moe.experts + s.moe.shared * s.expert_params) / p.tp if s.moe else 0.0
    experts = per_stage * moe_frac * s.moe.experts * s.expert_params / p.ep if s.moe else 0.0
    dense = per_stage * ((1 - moe_frac) * dense_layer + moe_frac * moe_layer)
    emb = s.hidden * s.vocab / p.tp
    ends = emb * (2 if p.pp == 1 and not s.tied else 1)
    return dense + ends, experts


def training(s, p: Plan, hbm: float) -> TrainingMemory:
    dense, experts = stage_params(s, p)
    if p.dualpipe:  # a GPU holds stage i and stage PP - 1 - i (DeepSeek-V3 s3.2.1: "two copies of the parameters")
        dense, experts = 2 * dense, 2 * experts
    shard = p.dp_shard or p.dp * p.cp  # hybrid sharding: the states are sharded over a shard group, replicated across them
    eshard = max(1, shard // p.ep)
    n = dense + experts
    weights = BF16 * n
    grads = p.grad_bytes * n
    opt = p.optimizer_bytes * (dense / shard + experts / eshard) if p.zero >= 1 else p.optimizer_bytes * n
    if p.zero >= 2:
        grads = p.grad_bytes * (dense / shard + experts / eshard) + min(p.grad_bucket, grads)
    if p.zero >= 3:
        layer = BF16 * sum(s.zero3_layer(p.tp, p.ep))
        weights = BF16 * (dense / shard + experts / eshard) + 2 * layer
    tokens = p.micro_batch * p.seq / p.cp
    kept, work = layer_bytes_per_token(s, p)
    if p.recompute_share < 1.0:  # recompute_layers: the other layers keep everything
        kept = p.recompute_share * kept + (1 - p.recompute_share) * layer_bytes_per_token(s, dataclasses.replace(p, recompute=()))[0]
    first, _, last_layers = stage_layers(s.layers, p.pp)
    layer_mbs = held_layers(p, s.layers)
    held = layer_mbs / first if first else 0.0  # micro-batches' worth of the stage's layers (none: more stages than layers, refused)
    acts = tokens * (kept * layer_mbs + (work - kept if kept < work else 0.0))
    logits = tokens * 4 * s.vocab / p.tp * 2  # FP32 logits and their gradient on the last stage
    last = tokens * (kept * last_layers + work) + logits  # the last stage holds one micro-batch
    if p.pp > 1 and last > acts:
        acts, logits = last - logits, logits
    elif p.pp > 1:
        logits = 0.0
    return TrainingMemory(weights, grads, opt, acts, logits, held, hbm)


def largest_micro_batch(s, w, hbm: float, fused_attention: bool = True, dualpipe: bool = False,
                        optimizer_bytes: float = OPTIMIZER_BYTES, grad_bytes: float = BF16) -> int:
    """The largest micro-batch (sequences dividing the batch per DP rank) whose plan fits, 0 if none.
    Memory is not monotonic in the micro-batch (fewer micro-batches, fewer in flight), so every divisor
    is tried, largest first (trial division: at most a million steps)."""
    n = max(1, w.global_batch // w.dp)
    small = [d for d in range(1, min(math.isqrt(n), 1_000_000) + 1) if n % d == 0]
    for mb in sorted({*small, *(n // d for d in small)}, reverse=True):
        if training(s, Plan.of(w, fused_attention, mb, dualpipe, optimizer_bytes, grad_bytes), hbm).fits:
            return mb
    return 0


def kv_cache_bytes(s, batch: int, tokens: int, layers: float, tp: int, bytes_per_value: int = BF16) -> float:
    """Serving: the K and V of ``tokens`` tokens of ``batch`` sequences over ``layers`` layers on one GPU
    (a GPU holds its share of the KV heads; with fewer KV heads than TP they are replicated)."""
    return batch * tokens * layers * 2 * s.kv_dim / min(tp, s.kv_heads) * bytes_per_value
