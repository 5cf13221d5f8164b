"""Compute from first principles: the FLOPs and bytes of every kernel of a transformer layer, timed on
one GPU against a roofline with size-dependent efficiencies.

Why not ``6 x parameters x tokens / rate``: the rule leaves out attention (4% of a 405B model's work at
8K tokens, 40% at 131K), and a measured end-to-end rate already contains the pipeline bubble and the
exposed communication the twin adds on top, so using it as the rate of the math counts them twice.

The model (decoder-only, pre-norm, grouped-query attention, SwiGLU MLP; Llama 3 Table 3's shape):

- GEMMs per layer and micro-batch of T tokens on one GPU after tensor parallelism (TP) t: QKV
  ``T x h -> (h + 2 kv)/t``, output ``T x h/t -> h``, gate and up ``T x h -> 2f/t``, down
  ``T x f/t -> h``. The backward pass runs two GEMMs of the same FLOPs per forward GEMM (data and
  weight gradients) with the dimensions permuted. Time: ``max(FLOPs / (peak x e(m,n,k)), bytes /
  (HBM x e_hbm))`` with ``e = gemm_efficiency x f(m) f(n) f(k)``, ``f(d) = d / (d + gemm_half_dim)``:
  small dimensions (a decode step's batch, a TP-split width) cost efficiency, and skinny GEMMs hit
  the memory roof.
- Attention (FlashAttention-style fused kernel): ``4 x T x c x h/t`` forward FLOPs for T query tokens
  over an average causal context c (half the sequence); backward executes 2.5x that (it recomputes
  QK^T: five matmuls against two). Efficiency ``attention_efficiency x C / (C + attention_half_context)``
  for a kernel over C keys, times ``attention_backward`` backward.
- Memory-bound kernels: two RMSNorms and two residual adds (on T/t tokens: sequence parallelism),
  RoPE on Q and K, the SwiGLU product; twice those bytes backward. The optimizer (Adam, FP32 master
  weights and moments, sharded over DP x CP) reads and writes 28 bytes per parameter it owns.
- The output layer (``T x h -> V/t``, vocabulary-parallel) and its loss, spread over the pipeline
  stages (Llama 3 s3.3.2 balances stages by giving the first and last one fewer layer).

Model FLOPs (what MFU counts): 3 x forward, forward = 2 x matmul parameters + 4 x (s/2) x h per layer
and token (causal attention: each token attends to half the sequence on average).

The GPU runs at ``perf_vs_power(cap)`` of its TDP throughput (the chassis curve); the constants are in
the catalog (``chassis.kernels``) with their sources.

Worked example (Llama 3 405B: h = 16,384, f = 53,248, 126 layers, 128 heads, 8 KV heads, vocab
128,256): matmul parameters per layer 3.19e9, so 2.43e12 training FLOPs per token plus attention
6 x 126 x 8,192 x 16,384 = 1.0e11 at 8K tokens (+4%) and 1.6e12 at 131K (+67%):

>>> s = Shape(layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256)
>>> round(s.matmul_params / 1e9, 1), round(s.model_flops_per_token(8192) / 1e12, 2)
(403.7, 2.52)
>>> round(s.model_flops_per_token(131072) / s.model_flops_per_token(8192), 2)
1.6
"""

from __future__ import annotations

from dataclasses import dataclass, field

BF16 = 2  # bytes per element of activations and weights
ADAM_BYTES_PER_PARAM = 28  # read FP32 master, m, v and the BF16 gradient; write master, m, v, BF16 weight


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
    clock: float = 1.0  # throughput at the power cap relative to TDP (chassis perf_vs_power) x sustained share

    @classmethod
    def of(cls, chassis, clock: float = 1.0) -> Gpu:
        """The GPU of a catalog chassis; raises ValueError when the catalog lacks the figures."""
        k = chassis.kernels
        if k is None or not chassis.hbm_bandwidth:
            raise ValueError(f"chassis {chassis.gpu_model}: the compute model needs hbm_bandwidth and kernels in the catalog")
        return cls(chassis.gpu_peak_tflops * 1e12, chassis.hbm_bandwidth / 8, k.gemm_efficiency, k.gemm_half_dim,
                   k.attention_efficiency, k.attention_half_context, k.attention_backward, k.hbm_efficiency, clock * k.sustained)

    def size_factor(self, d: float) -> float:
        return d / (d + self.gemm_half_dim)

    def gemm(self, m: float, n: float, k: float) -> float:
        """Seconds for an (m x k) @ (k x n) BF16 GEMM.

        >>> g = Gpu(1e15, 3e12, 0.8, 128, 0.6, 256, 0.75, 0.9)
        >>> round(g.gemm(8192, 8192, 8192) * 1e3, 3)  # compute-bound: 1.1e12 FLOPs at ~76% of 1 PFLOP/s
        1.44
        >>> round(g.gemm(1, 8192, 8192) * 1e6, 1)     # a decode GEMV reads the weights: 134 MB at 2.7 TB/s
        49.7
        """
        flops = 2.0 * m * n * k
        eff = self.gemm_efficiency * self.size_factor(m) * self.size_factor(n) * self.size_factor(k)
        nbytes = BF16 * (m * k + k * n + m * n)
        return max(flops / (self.peak * self.clock * eff), nbytes / (self.hbm * self.hbm_efficiency * self.clock))

    def attention(self, flops: float, context: float, nbytes: float, backward: bool = False) -> float:
        eff = self.attention_efficiency * context / (context + self.attention_half_context)
        if backward:
            eff *= self.attention_backward
        return max(flops / (self.peak * self.clock * eff), nbytes / (self.hbm * self.hbm_efficiency * self.clock))

    def memory(self, nbytes: float) -> float:
        return nbytes / (self.hbm * self.hbm_efficiency * self.clock)


@dataclass(frozen=True)
class Shape:
    """A decoder-only transformer's shape (what the FLOPs depend on)."""

    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int = 0

    @classmethod
    def of(cls, w, kv_heads: int | None = None) -> Shape:
        """From a workload; without ``ffn_hidden_size`` the FFN is sized so the layers hold the stated
        parameters (SwiGLU: 3 x h x f per layer)."""
        heads = w.heads or max(1, w.hidden_size // 128)
        kv = kv_heads or w.kv_heads or heads
        h = w.hidden_size
        vocab = w.vocab_size or 0
        ffn = w.ffn_hidden_size
        if ffn is None:
            attn = h * (h + 2 * h * kv // heads) + h * h
            per_layer = (w.parameters - 2 * vocab * h) / w.layers
            ffn = max(1, round((per_layer - attn) / (3 * h)))
        return cls(w.layers, h, ffn, heads, kv, vocab)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def layer_params(self) -> float:
        h = self.hidden
        return h * (h + 2 * self.kv_dim) + h * h + 3 * h * self.ffn

    @property
    def matmul_params(self) -> float:
        """Parameters that take part in matmuls (every layer and the output layer; not the embedding)."""
        return self.layers * self.layer_params + self.hidden * self.vocab

    def forward_flops_per_token(self, seq: float) -> float:
        """Forward FLOPs per token with causal attention over a sequence of ``seq`` tokens."""
        return 2 * self.matmul_params + self.layers * 4 * (seq / 2) * self.hidden

    def model_flops_per_token(self, seq: float) -> float:
        """Training FLOPs per token (forward + backward = 3 x forward): the numerator of MFU."""
        return 3 * self.forward_flops_per_token(seq)


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


def layer_gemms(s: Shape, tokens: float, tp: int) -> list[tuple[float, float, float]]:
    """The forward (m, n, k) of one layer's GEMMs on one GPU after TP."""
    h = s.hidden
    return [(tokens, (h + 2 * s.kv_dim) / tp, h), (tokens, h, h / tp), (tokens, 2 * s.ffn / tp, h), (tokens, h, s.ffn / tp)]


def layer_work(gpu: Gpu, s: Shape, tokens: float, context: float, tp: int, backward: bool, kv_tokens: float | None = None,
               sequences: float = 1) -> Work:
    """One layer for ``tokens`` query tokens (of ``sequences`` sequences) on one GPU.

    ``context`` is the average number of keys each query attends to (half the sequence when causal);
    the kernel runs over ``kv_tokens`` keys per sequence (default 2 x context) and reads them from HBM
    (a decode step: one query per sequence against its whole KV cache, memory-bound)."""
    kv_tokens = 2 * context if kv_tokens is None else kv_tokens
    w = Work()
    for m, n, k in layer_gemms(s, tokens, tp):
        if backward:  # data gradient (m x n) @ (n x k) and weight gradient (k x m) @ (m x n)
            w.gemm_s += gpu.gemm(m, k, n) + gpu.gemm(k, n, m)
            w.flops += 4 * m * n * k
        else:
            w.gemm_s += gpu.gemm(m, n, k)
            w.flops += 2 * m * n * k
    heads = s.heads / tp
    fwd = 4 * tokens * context * s.head_dim * heads
    kv_bytes = sequences * 2 * kv_tokens * s.kv_dim / min(tp, s.kv_heads) * BF16  # K and V this GPU's heads read
    io = kv_bytes + 2 * tokens * heads * s.head_dim * BF16  # plus Q in and O out
    if backward:
        w.attention_s += gpu.attention(2.5 * fwd, kv_tokens, 2 * io, backward=True)
        w.flops += 2.5 * fwd
    else:
        w.attention_s += gpu.attention(fwd, kv_tokens, io)
        w.flops += fwd
    h, sp = s.hidden, tokens / tp  # norms and residuals run on the sequence-parallel shard
    elem = BF16 * (2 * 2 * h * sp + 2 * 3 * h * sp + 2 * tokens * (h + s.kv_dim) / tp + 3 * tokens * s.ffn / tp)
    w.memory_s += gpu.memory(elem * (2 if backward else 1))
    return w


def head_work(gpu: Gpu, s: Shape, tokens: float, tp: int, backward: bool) -> Work:
    """The output layer (vocabulary-parallel) and its loss for ``tokens`` tokens on one GPU."""
    if not s.vocab:
        return Work()
    m, n, k = tokens, s.vocab / tp, s.hidden
    if backward:
        return Work(gpu.gemm(m, k, n) + gpu.gemm(k, n, m), 0.0, gpu.memory(2 * 4 * m * n), 4 * m * n * k)
    return Work(gpu.gemm(m, n, k), 0.0, gpu.memory(3 * 4 * m * n), 2 * m * n * k)  # FP32 logits: write, max, sum


@dataclass
class TrainingCompute:
    """Per-GPU compute of one micro-batch on one pipeline stage, and the step's model FLOPs."""

    forward: Work
    backward: Work
    optimizer_s: float
    model_flops_per_step: float
    tokens_per_microbatch: float
    notes: list[str] = field(default_factory=list)

    @property
    def microbatch_s(self) -> float:
        return self.forward.seconds + self.backward.seconds


def training(gpu: Gpu, s: Shape, seq: int, global_batch: int, tp: int, cp: int, pp: int, dp: int) -> TrainingCompute:
    """Compute of one micro-batch (one sequence, its 1/CP share of tokens) on one stage (1/PP of the
    layers and of the output layer: balanced stages).

    >>> g = Gpu(989e12, 3.35e12, 0.7, 128, 0.6, 256, 0.75, 0.9)
    >>> s = Shape(layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256)
    >>> c = training(g, s, 8192, 2048, 8, 1, 16, 128)
    >>> round(c.forward.seconds * 1e3), round(c.backward.seconds / c.forward.seconds, 2)
    (84, 2.06)
    """
    tokens = seq / cp
    context = seq / 2  # causal: each query attends to half the sequence on average (CP chunks balanced)
    fwd = layer_work(gpu, s, tokens, context, tp, False, seq).scaled(s.layers / pp) + head_work(gpu, s, tokens, tp, False).scaled(1 / pp)
    bwd = layer_work(gpu, s, tokens, context, tp, True, seq).scaled(s.layers / pp) + head_work(gpu, s, tokens, tp, True).scaled(1 / pp)
    owned = (s.matmul_params + s.hidden * s.vocab) / (tp * pp * dp * cp)  # FSDP shards the optimizer over DP x CP
    opt = gpu.memory(ADAM_BYTES_PER_PARAM * owned)
    flops = s.model_flops_per_token(seq) * seq * global_batch
    return TrainingCompute(fwd, bwd, opt, flops, tokens)
