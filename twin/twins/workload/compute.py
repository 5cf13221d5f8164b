"""Compute from first principles: the FLOPs and bytes of every kernel of a transformer layer, timed on
one GPU against a roofline with size-dependent efficiencies.

Why not ``6 x parameters x tokens / rate``: the rule leaves out attention (4% of a 405B model's work at
8K tokens, 40% at 131K), and a measured end-to-end rate already contains the pipeline bubble and the
exposed communication the twin adds on top, so using it as the rate of the math counts them twice.

The kernels of one layer and micro-batch of T tokens on one GPU after tensor parallelism (TP) t, by
module (the unit of recomputation, :mod:`twin.twins.workload.recipe`):

- ``attention``: the QKV GEMM ``T x h -> (h + 2 kv)/t`` and the output GEMM ``T x h/t -> h``, RoPE on Q
  and K, the residual add (with dropout: its mask). ``mlp``: the up GEMM(s) ``T x h -> f/t`` (SwiGLU: gate
  and up, ``2f/t``) and the down GEMM ``T x f/t -> h``, the residual add. ``activation``: GELU (read and
  write ``f/t``) or SwiGLU (read ``2f/t``, write ``f/t``). ``norm``: two norms (one in a parallel block) on
  the sequence-parallel shard. ``experts``: the router and the visited experts' MLPs (MoE layers,
  :mod:`twin.twins.workload.moe`).
- ``core-attention``, fused (FlashAttention): ``4 x T x c x h/t`` forward FLOPs over an average context
  of c keys (half the sequence when causal); backward executes 2.5x that (it recomputes QK^T: five
  matmuls against two) at ``attention_backward`` of the forward efficiency. Unfused (Megatron-LM 2021):
  QK^T and AV as batched GEMMs over the full ``s x s`` square with ``k`` = the head dimension, and a
  softmax (and dropout) kernel reading and writing the materialised scores.
- GEMM time: ``max(FLOPs / (peak x e(m,n,k)), bytes / (HBM x e_hbm))`` with ``e = gemm_efficiency x
  f(m) f(n) f(k)``, ``f(d) = d / (d + gemm_half_dim)``; the backward pass runs two GEMMs of the same FLOPs
  per forward GEMM (data and weight gradients). FP8 GEMMs (the recipe's ``fp8``) run against the FP8
  peak at ``fp8_gemm_efficiency`` and cast their BF16 input first (read 2, write 1 byte per element).
- Memory-bound kernels run backward at twice their forward bytes. The output layer (vocabulary-parallel)
  and its FP32 loss run on the last stage. The optimizer (Adam, FP32 master weights and moments) reads and
  writes 28 bytes per parameter it owns (1 / (DP x CP) of the stage's with ZeRO >= 1).

A pipeline runs at its slowest stage (:func:`twin.compiler.resolve.memory.stage_layers`: the end stages
hold one layer fewer when the layers do not divide, and the last one the output layer). Everything runs
at the GPU's clock at its power cap (``perf_vs_power``) times the hardware's ``sustained`` share times the
stack's ``kernel_share`` (what the framework loses).

Worked example (Llama 3 405B, TP8 PP16, 8K sequence, one sequence per micro-batch, 8 layers on the
slowest stage):

>>> g = Gpu(989e12, 3.35e12, 0.7, 128, 0.6, 256, 0.75, 0.9)
>>> s = Shape(layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256)
>>> from twin.twins.workload.recipe import Recipe
>>> c = training(g, s, Recipe(tp=8, pp=16, dp=128, seq=8192, global_batch=2048))
>>> round(c.forward.seconds * 1e3), round(c.backward.seconds / c.forward.seconds, 2)
(85, 2.06)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twin.compiler.resolve.memory import stage_layers
from twin.compiler.resolve.transformer import Shape, megatron_core_flops, megatron_eq3_flops
from twin.twins.workload.recipe import tp_overlap_applies

BF16 = 2  # bytes per element of activations and weights
ADAM_BYTES_PER_PARAM = 28  # read FP32 master, m, v and the BF16 gradient; write master, m, v, BF16 weight
# cuBLAS's usual CTA tiles (m x n) and their rate against the largest ([nvidia-gemm] s2.3: larger tiles reuse
# more data; the rates are assumed, scaled by the tile's arithmetic intensity mn / (m + n) against 256 x 128's)
TILES = ((256, 128, 1.0), (128, 256, 1.0), (128, 128, 0.9), (128, 64, 0.75), (64, 128, 0.75))
MODULES = ("norm", "attention", "core-attention", "mlp", "activation", "experts")
__all__ = ["Gpu", "Shape", "Work", "TrainingCompute", "training", "layer_work", "head_work", "total", "BF16"]


@dataclass(frozen=True)
class Gpu:
    """The roofline of one GPU: dense BF16 peak (FLOP/s), HBM bandwidth (bytes/s), kernel constants."""

    peak: float
    hbm: float
    gemm_efficiency: float
    gemm_half_dim: float
    attention_efficiency: float
    attention_half_context: float
    attention_backward: float
    hbm_efficiency: float
    clock: float = 1.0  # throughput at the power cap relative to TDP x the hardware's sustained share x the stack's kernel share
    fp8_peak: float = 0.0
    fp8_efficiency: float = 0.0
    sms: int = 0  # streaming multiprocessors: GEMM output tiles run in waves of this many (0: the smooth size factor for m and n)

    @classmethod
    def of(cls, chassis, clock: float = 1.0) -> Gpu:
        """The GPU of a catalog chassis; raises ValueError when the catalog lacks the figures."""
        k = chassis.kernels
        if k is None or not chassis.hbm_bandwidth:
            raise ValueError(f"chassis {chassis.gpu_model}: the compute model needs hbm_bandwidth and kernels in the catalog")
        fp8 = (chassis.gpu_peak_fp8_tflops or 0.0) * 1e12
        return cls(chassis.gpu_peak_tflops * 1e12, chassis.hbm_bandwidth / 8, k.gemm_efficiency, k.gemm_half_dim,
                   k.attention_efficiency, k.attention_half_context, k.attention_backward, k.hbm_efficiency, clock * k.sustained,
                   fp8, k.fp8_gemm_efficiency or k.gemm_efficiency, k.sms or 0)

    def size_factor(self, d: float) -> float:
        return d / (d + self.gemm_half_dim)

    def shape_factor(self, m: float, n: float, batch: float = 1.0) -> float:
        """Share of the tensor cores an (m x n) output (``batch`` of them) keeps busy: the output is cut into
        tiles, one per SM at a time, and the last wave of tiles runs on part of the GPU ([nvidia-gemm] s3:
        tile and wave quantization). The best of cuBLAS's usual tiles, each at its own rate; below one wave
        the library splits K across the idle SMs instead (the smooth factor). Without an SM count: the
        smooth factor ``f(m) f(n)``."""
        if not self.sms:
            return self.size_factor(m) * self.size_factor(n)
        best = 0.0
        for tm, tn, rate in TILES:
            tiles = batch * -(-m // tm) * -(-n // tn)
            waves = tiles / self.sms
            if waves < 1.0:  # split-K over the idle SMs: the smooth factor alone (padding the tile again counted it twice)
                eff = rate * self.size_factor(m) * self.size_factor(n)
            else:
                eff = rate * (m * n * batch) / (-(-waves // 1) * self.sms * tm * tn)
            best = max(best, eff)
        return best

    def gemm(self, m: float, n: float, k: float, fp8: bool = False, batch: float = 1.0) -> float:
        """Seconds for ``batch`` (m x k) @ (k x n) GEMMs, BF16 (or FP8 inputs): the roofline of the FLOPs at the
        shape's rate and the bytes at the HBM's.

        >>> g = Gpu(1e15, 3e12, 0.8, 128, 0.6, 256, 0.75, 0.9)
        >>> round(g.gemm(8192, 8192, 8192) * 1e3, 3)  # compute-bound: 1.1e12 FLOPs at ~76% of 1 PFLOP/s
        1.44
        >>> round(g.gemm(1, 8192, 8192) * 1e6, 1)     # a decode GEMV reads the weights: 134 MB at 2.7 TB/s
        49.7
        >>> h = Gpu(1e15, 3e12, 0.8, 64, 0.6, 256, 0.75, 0.9, sms=132)
        >>> [round(h.shape_factor(2048, n), 3) for n in (4096, 3840)]  # 256 tiles of 256 x 128: 1.94 waves; 240: 1.82
        [0.97, 0.909]
        """
        flops = 2.0 * m * n * k * batch
        sizes = self.shape_factor(m, n, batch) * self.size_factor(k)
        if fp8 and self.fp8_peak:
            rate = self.fp8_peak * self.fp8_efficiency * sizes
            nbytes = m * k + k * n + BF16 * m * n
        else:
            rate = self.peak * self.gemm_efficiency * sizes
            nbytes = BF16 * (m * k + k * n + m * n)
        return max(flops / (rate * self.clock), batch * nbytes / (self.hbm * self.hbm_efficiency * self.clock))

    def attention(self, flops: float, context: float, nbytes: float, backward: bool = False) -> float:
        eff = self.attention_efficiency * context / (context + self.attention_half_context)
        if backward:
            eff *= self.attention_backward
        return max(flops / (self.peak * self.clock * eff), nbytes / (self.hbm * self.hbm_efficiency * self.clock))

    def memory(self, nbytes: float) -> float:
        return nbytes / (self.hbm * self.hbm_efficiency * self.clock)


@dataclass
class Work:
    """Time (s) and executed FLOPs of a group of kernels, by kind."""

    gemm_s: float = 0.0
    attention_s: float = 0.0
    memory_s: float = 0.0
    flops: float = 0.0

    @property
    def seconds(self) -> float:
        return self.gemm_s + self.attention_s + self.memory_s

    def __add__(self, o: Work) -> Work:
        return Work(self.gemm_s + o.gemm_s, self.attention_s + o.attention_s, self.memory_s + o.memory_s, self.flops + o.flops)

    def scaled(self, x: float) -> Work:
        return Work(self.gemm_s * x, self.attention_s * x, self.memory_s * x, self.flops * x)


def total(works) -> Work:
    out = Work()
    for w in works:
        out = out + w
    return out


def _gemm(gpu: Gpu, m: float, n: float, k: float, backward: bool, fp8: bool, chunks: int = 1) -> Work:
    """A GEMM forward, or its data- and weight-gradient GEMMs backward; ``chunks`` > 1 runs the forward GEMM (the
    data-gradient one, backward) as that many GEMMs of m / chunks rows, as a TP collective overlapped with it by
    ring exchange does (each chunk's tiles quantized on their own)."""
    cast = gpu.memory(3 * m * k) * (2 if backward else 1) if fp8 and gpu.fp8_peak else 0.0
    if backward:  # data gradient (m x n) @ (n x k) and weight gradient (k x m) @ (m x n)
        return Work(chunks * gpu.gemm(m / chunks, k, n, fp8) + gpu.gemm(k, n, m, fp8), 0.0, cast, 4 * m * n * k)
    return Work(chunks * gpu.gemm(m / chunks, n, k, fp8), 0.0, cast, 2 * m * n * k)


def layer_gemms(s: Shape, tokens: float, tp: int) -> dict[str, tuple[float, float, float]]:
    """The forward (m, n, k) of a dense layer's GEMMs on one GPU after TP, by name."""
    h = s.hidden
    return {"qkv": (tokens, (h + 2 * s.kv_dim) / tp, h), "proj": (tokens, h, h / tp),
            "fc1": (tokens, (s.mlp_mats - 1) * s.ffn / tp, h), "fc2": (tokens, h, s.ffn / tp)}


def core_attention(gpu: Gpu, s: Shape, tokens: float, context: float, kv_tokens: float, tp: int, backward: bool,
                   sequences: float = 1, fused: bool = True) -> Work:
    """The attention kernel(s) for ``tokens`` queries of ``sequences`` sequences over ``kv_tokens`` keys each."""
    heads = s.heads / tp
    if not fused:  # QK^T and AV over the full square, softmax (and dropout) over the materialised scores
        q = tokens / sequences
        batch = sequences * heads
        scores = batch * q * kv_tokens
        per_score = (11.0 if s.dropout else 6.0) if backward else (9.0 if s.dropout else 4.0)
        mult = 2 if backward else 1
        t = mult * (gpu.gemm(q, kv_tokens, s.head_dim, batch=batch) + gpu.gemm(q, s.head_dim, kv_tokens, batch=batch))
        return Work(t, 0.0, gpu.memory(per_score * scores), mult * 4 * scores * s.head_dim)
    fwd = 4 * tokens * context * s.head_dim * heads
    kv_bytes = sequences * 2 * kv_tokens * s.kv_dim / min(tp, s.kv_heads) * BF16  # K and V this GPU's heads read
    io = kv_bytes + 2 * tokens * heads * s.head_dim * BF16  # plus Q in and O out
    if backward:
        return Work(0.0, gpu.attention(2.5 * fwd, kv_tokens, 2 * io, backward=True), 0.0, 2.5 * fwd)
    return Work(0.0, gpu.attention(fwd, kv_tokens, io), 0.0, fwd)


def layer_work(gpu: Gpu, s: Shape, tokens: float, context: float, tp: int, backward: bool, kv_tokens: float | None = None,
               sequences: float = 1, fused: bool = True, sp: bool = True, fp8: tuple[str, ...] = (),
               ring: frozenset[str] = frozenset()) -> dict[str, Work]:
    """One dense layer for ``tokens`` query tokens (of ``sequences`` sequences) on one GPU, by module; the GEMMs
    named in ``ring`` run in TP chunks (:func:`ring_gemms`).

    ``context`` is the average number of keys each query attends to (half the sequence when causal);
    the kernel runs over ``kv_tokens`` keys per sequence (default 2 x context) and reads them from HBM
    (a decode step: one query per sequence against its whole KV cache, memory-bound)."""
    kv_tokens = 2 * context if kv_tokens is None else kv_tokens
    mult = 2 if backward else 1
    g = layer_gemms(s, tokens, tp)
    h = s.hidden
    shard = tokens / tp if sp else tokens  # norms, residual adds and dropout run on the sequence-parallel shard
    drop = 1.0 if s.dropout else 0.0  # the dropout mask: one byte per element written forward, read backward
    rope = 2 * tokens * (h + s.kv_dim) / tp * BF16 if s.positions == "rope" else 0.0
    def gemm(name: str) -> Work:
        return _gemm(gpu, *g[name], backward, name in fp8, tp if name in ring else 1)

    out = {
        "attention": gemm("qkv") + gemm("proj") + Work(memory_s=gpu.memory(mult * (rope + (3 * BF16 + drop) * h * shard))),
        "core-attention": core_attention(gpu, s, tokens, context, kv_tokens, tp, backward, sequences, fused),
        "mlp": gemm("fc1") + gemm("fc2")
        + Work(memory_s=gpu.memory(mult * (0.0 if s.parallel_block else (3 * BF16 + drop) * h * shard))),
        "activation": Work(memory_s=gpu.memory(mult * BF16 * (3 if s.mlp == "swiglu" else 2) * tokens * s.ffn / tp)),
        "norm": Work(memory_s=gpu.memory(mult * BF16 * 2 * h * shard * (1 if s.parallel_block else 2))),
    }
    return out


def ring_gemms(overlap_tp, tp: int, sp: bool, backward: bool) -> frozenset[str]:
    """The GEMMs a pass runs in TP chunks: those whose TP collective (sequence parallelism) is overlapped with them.
    Transformer Engine's userbuffers overlap each all-gather or reduce-scatter by ring exchange, as Megatron-Bridge's
    H100 configurations run every one ([megatron-bridge-perf-scripts]): a GEMM of m rows runs as TP GEMMs of m / TP
    rows, one per step of the ring, each with its own wave quantization ([megatron-bridge-perf-guide]: splits "may
    degrade performance due to aggregated GEMM wave quantization"). Forward, the all-gather feeds the QKV and the
    first MLP GEMM and the reduce-scatter follows the projection and the second; backward, the gradient's all-gather
    feeds the projection's and the second MLP GEMM's data gradient (the weight gradients and the other data
    gradients overlap theirs in bulk, unsplit).

    >>> sorted(ring_gemms(("allgather", "reducescatter"), 8, True, False)), sorted(ring_gemms(("allgather",), 8, True, True))
    (['fc1', 'fc2', 'proj', 'qkv'], ['fc2', 'proj'])
    """
    if not tp_overlap_applies(tp, sp, 0):
        return frozenset()
    ag, rs = "allgather" in overlap_tp, "reducescatter" in overlap_tp
    if backward:
        return frozenset({"proj", "fc2"} if ag else ())
    return frozenset(({"qkv", "fc1"} if ag else set()) | ({"proj", "fc2"} if rs else set()))


def head_work(gpu: Gpu, s: Shape, tokens: float, tp: int, backward: bool, fp8: bool = False) -> Work:
    """The output layer (vocabulary-parallel) and its loss for ``tokens`` tokens on one GPU."""
    if not s.vocab:
        return Work()
    m, n, k = tokens, s.vocab / tp, s.hidden
    if backward:
        return Work(gpu.gemm(m, k, n, fp8) + gpu.gemm(k, n, m, fp8), 0.0, gpu.memory(2 * 4 * m * n), 4 * m * n * k)
    return Work(gpu.gemm(m, n, k, fp8), 0.0, gpu.memory(3 * 4 * m * n), 2 * m * n * k)  # FP32 logits: write, max, sum


@dataclass
class TrainingCompute:
    """Per-GPU compute of one micro-batch on the slowest pipeline stage, and the step's FLOPs."""

    forward: Work
    backward: Work
    recompute: Work
    optimizer_s: float
    model_flops_per_step: float
    tokens_per_microbatch: float
    layers: float  # layers on the slowest stage
    moe_layers: float = 0.0  # of those, MoE layers
    layer_forward_s: float = 0.0  # one layer's forward (and recomputation), backward: ZeRO-3 prefetch windows
    layer_backward_s: float = 0.0
    attention_forward_s: float = 0.0  # the attention kernel per layer and micro-batch (CP rings hide behind it)
    attention_backward_s: float = 0.0
    convention_flops_per_step: float = 0.0  # the step's FLOPs in the workload's measured convention
    notes: list[str] = field(default_factory=list)
    other_stages_s: float = 0.0  # one micro-batch on the other stages, their mean (the 1F1B fill and drain)
    layer_gemm_s: float = 0.0  # one layer's GEMMs per micro-batch, forward, recomputation and backward (TP overlap hides behind them)

    @property
    def microbatch_s(self) -> float:
        return self.forward.seconds + self.backward.seconds + self.recompute.seconds

    def bubble_s(self, pp: int, v: int, schedule: str = "1f1b") -> float:
        """The pipeline bubble of one step on the slowest stage. 1F1B (``v`` = 1): it waits while one
        micro-batch passes every other stage forward (fill) and backward (drain): the sum of their times,
        not ``PP - 1`` of its own. Interleaved: the slowest stage sets every one of the ``(PP - 1) / v``
        chunk slots ([megatron-sc21] s2.2.2). DualPipe (DeepSeek-V3 s3.2.1, Table 2):
        ``(PP/2 - 1) (F&B + B - 3W)`` with F&B = F + B (the overlap hides communication, not compute) and
        the weight gradients W half the backward (:func:`dualpipe_bubble`)."""
        if pp <= 1:
            return 0.0
        if schedule == "dualpipe":
            return dualpipe_bubble(pp, self.forward.seconds, self.backward.seconds + self.recompute.seconds)
        return (pp - 1) * (self.other_stages_s if v <= 1 and self.other_stages_s else self.microbatch_s / v)


def dualpipe_bubble(pp, forward_s, backward_s):
    """DualPipe's bubble (DeepSeek-V3 Table 2) from a stage's forward and full backward per micro-batch:
    ``(PP/2 - 1)(F + B + B - 3 B/2)``, the weight-gradient GEMMs taken as half the backward (each GEMM's
    backward is a data-gradient and a weight-gradient GEMM of the same size). Works on arrays.

    >>> dualpipe_bubble(16, 1.0, 2.0)  # against 1F1B's (PP - 1)(F + B) = 45
    14.0
    """
    return (pp / 2 - 1) * (forward_s + backward_s / 2)


def training(gpu: Gpu, s: Shape, r, moe_work=None) -> TrainingCompute:
    """Compute of one micro-batch (``r.micro_batch`` sequences, their 1/CP share of tokens) on the
    slowest stage of the pipeline. ``moe_work(gpu, s, tokens, backward)`` times an MoE layer's expert
    block (:func:`twin.twins.workload.moe.expert_work`)."""
    tokens = r.tokens
    seq = r.seq
    context = s.context(seq)  # causal: half the sequence on average (CP chunks balanced)
    kv = min(seq, s.window) if s.window else seq
    fp8 = r.fp8
    redo = r.recomputed()
    fwd_mod = layer_work(gpu, s, tokens, context, r.tp, False, kv, r.micro_batch, r.fused_attention, r.sequence_parallel, fp8,
                         ring_gemms(r.overlap_tp, r.tp, r.sequence_parallel, False))
    bwd_mod = layer_work(gpu, s, tokens, context, r.tp, True, kv, r.micro_batch, r.fused_attention, r.sequence_parallel, fp8,
                         ring_gemms(r.overlap_tp, r.tp, r.sequence_parallel, True))
    dense_f, dense_b = total(fwd_mod.values()), total(bwd_mod.values())
    dense_r = total(w for k, w in fwd_mod.items() if k in redo)
    frac = s.moe_layers / s.layers if s.layers else 0.0
    if s.moe and moe_work is not None:
        ef, eb = moe_work(gpu, s, tokens, False), moe_work(gpu, s, tokens, True)
        moe_f = total(w for k, w in fwd_mod.items() if k not in ("mlp", "activation")) + ef
        moe_b = total(w for k, w in bwd_mod.items() if k not in ("mlp", "activation")) + eb
        moe_r = total(w for k, w in fwd_mod.items() if k in redo and k not in ("mlp", "activation")) + (ef if "experts" in redo else Work())
        layer_f = dense_f.scaled(1 - frac) + moe_f.scaled(frac)
        layer_b = dense_b.scaled(1 - frac) + moe_b.scaled(frac)
        layer_r = dense_r.scaled(1 - frac) + moe_r.scaled(frac)
    else:
        layer_f, layer_b, layer_r = dense_f, dense_b, dense_r
    layer_r = layer_r.scaled(r.recompute_share)  # recompute_layers: the first layers of each chunk only
    first, mid, last = stage_layers(s.layers, r.pp)
    hf = head_work(gpu, s, tokens, r.tp, False, "output" in fp8)
    hb = head_work(gpu, s, tokens, r.tp, True, "output" in fp8)
    per_layer = layer_f.seconds + layer_b.seconds + layer_r.seconds
    if r.pp == 1:
        n_layers, head = s.layers, 1.0
        others = 0.0
    else:  # the slowest stage: a full middle one, or the last with the output layer
        layers = [first] + [mid] * (r.pp - 2) + [last]
        heads = [0.0] * (r.pp - 1) + [1.0]
        if r.pipeline_schedule == "dualpipe":  # GPU i runs stage i one way and stage PP - 1 - i the other ([deepseek-v3]
            # s3.2.1: two copies of the parameters), half the micro-batches each: it carries the mean of the pair
            layers = [(layers[i] + layers[-1 - i]) / 2 for i in range(r.pp)]
            heads = [(heads[i] + heads[-1 - i]) / 2 for i in range(r.pp)]
        stages = [n * per_layer + h * (hf.seconds + hb.seconds) for n, h in zip(layers, heads)]
        slowest = max(range(r.pp), key=lambda i: stages[i])
        n_layers, head = layers[slowest], heads[slowest]
        others = (sum(stages) - stages[slowest]) / (r.pp - 1)
    fwd = layer_f.scaled(n_layers) + hf.scaled(head)
    bwd = layer_b.scaled(n_layers) + hb.scaled(head)
    rc = layer_r.scaled(n_layers)
    shard = (r.dp_shard or r.dp * r.cp) if r.zero >= 1 else 1  # the optimizer updates every parameter this GPU owns, all experts
    owned = s.replicated_params / (r.pp * r.tp * shard) + s.routed_params / (r.pp * r.ep * max(1, shard // r.ep))
    opt = gpu.memory(ADAM_BYTES_PER_PARAM * owned)
    flops = s.model_flops_per_token(seq) * seq * r.global_batch
    conv = {"megatron-eq3": megatron_eq3_flops, "megatron-core": megatron_core_flops}.get(r.flops_convention)
    conv = conv(s, seq, r.global_batch) if conv else flops
    return TrainingCompute(fwd, bwd, rc, opt, flops, tokens, n_layers, n_layers * frac,
                           layer_f.seconds + layer_r.seconds, layer_b.seconds,
                           fwd_mod["core-attention"].seconds, bwd_mod["core-attention"].seconds, conv,
                           other_stages_s=others, layer_gemm_s=layer_f.gemm_s + layer_b.gemm_s + layer_r.gemm_s)
