"""A workload's transformer resolved: the family's choices filled in, the shape, parameters and FLOPs.

The families (:mod:`twin.lang.site.workload_models`): ``llama`` (RMSNorm, SwiGLU MLP of three matrices,
rotary positions, no dropout, grouped-query attention) and ``gpt`` (LayerNorm, GELU MLP of two matrices
with FFN = 4 x hidden, learned positions, dropout, tied input and output embeddings: Megatron-LM's GPT).
Every layer has attention (QKV ``h -> h + 2 kv``, output ``h -> h``) and an MLP; with ``moe:`` every
``every``-th layer's MLP is ``experts`` expert MLPs of which a token visits ``top_k`` (plus the shared
ones) behind a router ``h -> experts``.

Model FLOPs (what MFU counts): 3 x forward, forward = 2 x the matmul parameters a token passes through
(MoE: only the experts it visits) + 4 x c x h per layer for attention, with c the average number of keys
a query attends to (causal: half the sequence; a sliding window of w tokens: w - w^2 / (2 s)).

Worked example (Llama 3 405B, Table 3; the GPT-3 175B shape of Brown et al. 2020):

>>> s = Shape(layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256)
>>> round(s.matmul_params / 1e9, 1), round(s.model_flops_per_token(8192) / 1e12, 2)
(403.7, 2.52)
>>> g = Shape(layers=96, hidden=12288, ffn=49152, heads=96, kv_heads=96, vocab=51200, mlp="gelu", tied=True)
>>> round(g.total_params / 1e9, 1)
174.6
"""

from __future__ import annotations

from dataclasses import dataclass

FAMILY = {  # mlp, positions, dropout, tied embeddings
    "llama": ("swiglu", "rope", False, False),
    "gpt": ("gelu", "learned", True, True),
}


@dataclass(frozen=True)
class MoeShape:
    experts: int
    top_k: int
    ffn: int
    shared: int = 0
    capacity: float | None = None
    every: int = 1
    max_nodes: int | None = None  # node-limited routing (twin.twins.net.dispatch)


@dataclass(frozen=True)
class Shape:
    """A decoder-only transformer's shape (what the FLOPs, bytes and parameters depend on)."""

    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int = 0
    mlp: str = "swiglu"
    positions: str = "rope"
    dropout: bool = False
    tied: bool = False
    parallel_block: bool = False
    window: int | None = None
    moe: MoeShape | None = None

    @classmethod
    def of(cls, w, kv_heads: int | None = None) -> Shape:
        """From a workload (or a served model); without ``ffn_hidden_size`` a GPT's FFN is 4 x hidden
        and a Llama's is sized so the layers hold the stated parameters (SwiGLU: 3 x h x f per layer)."""
        arch = getattr(w, "family", "llama")  # the model family (gpt, llama), not the fabric's
        mlp, positions, dropout, tied = FAMILY[arch]
        mlp = getattr(w, "mlp", None) or mlp
        positions = getattr(w, "positions", None) or positions
        dropout = dropout if getattr(w, "dropout", None) is None else w.dropout
        heads = w.heads or max(1, w.hidden_size // 128)
        kv = kv_heads or w.kv_heads or heads
        h = w.hidden_size
        vocab = w.vocab_size or 0
        ffn = w.ffn_hidden_size
        mats = 3 if mlp == "swiglu" else 2
        if ffn is None and arch == "gpt":
            ffn = 4 * h
        elif ffn is None:
            attn = h * (h + 2 * h * kv // heads) + h * h
            per_layer = (w.parameters - 2 * vocab * h) / w.layers
            ffn = max(1, round((per_layer - attn) / (mats * h)))
        m = getattr(w, "moe", None)
        moe = None if m is None else MoeShape(m.experts, m.top_k, m.expert_ffn_hidden_size or ffn, m.shared_experts,
                                              m.capacity_factor, m.every, m.max_nodes)
        return cls(w.layers, h, ffn, heads, kv, vocab, mlp, positions, dropout, tied, bool(getattr(w, "parallel_block", False)),
                   getattr(w, "attention_window", None), moe)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def mlp_mats(self) -> int:
        return 3 if self.mlp == "swiglu" else 2

    @property
    def attn_params(self) -> float:
        h = self.hidden
        return h * (h + 2 * self.kv_dim) + h * h

    @property
    def mlp_params(self) -> float:
        return self.mlp_mats * self.hidden * self.ffn

    @property
    def expert_params(self) -> float:
        """One expert MLP (MoE), 0 for a dense model."""
        return self.mlp_mats * self.hidden * self.moe.ffn if self.moe else 0.0

    @property
    def moe_layers(self) -> int:
        return self.layers // self.moe.every if self.moe else 0

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    @property
    def layer_params(self) -> float:
        """A dense layer's matmul parameters."""
        return self.attn_params + self.mlp_params

    @property
    def moe_layer_active(self) -> float:
        """Matmul parameters a token passes through in an MoE layer (router, visited and shared experts)."""
        m = self.moe
        return self.attn_params + self.hidden * m.experts + (m.top_k + m.shared) * self.expert_params if m else 0.0

    @property
    def moe_layer_total(self) -> float:
        m = self.moe
        return self.attn_params + self.hidden * m.experts + (m.experts + m.shared) * self.expert_params if m else 0.0

    @property
    def matmul_params(self) -> float:
        """Parameters a token passes through in matmuls (every layer and the output layer; not the embedding)."""
        return self.dense_layers * self.layer_params + self.moe_layers * self.moe_layer_active + self.hidden * self.vocab

    @property
    def routed_params(self) -> float:
        """Every routed expert of every MoE layer (0 for a dense model): held by EP ranks, each expert's
        gradients reduced only over the ranks that hold the same experts."""
        return self.moe_layers * self.moe.experts * self.expert_params if self.moe else 0.0

    @property
    def replicated_params(self) -> float:
        """The parameters every data-parallel rank holds (a TP share of): all but the routed experts, with
        the output layer and the input embedding once each. Data parallelism reduces their gradients over all
        its ranks.

        >>> m = Shape(4, 1024, 4096, 8, 8, 1000, moe=MoeShape(experts=16, top_k=2, ffn=512, shared=1))
        >>> m.replicated_params + m.routed_params == m.total_params + (1000 * 1024 if m.tied else 0)
        True
        """
        routed_visited = self.moe_layers * self.moe.top_k * self.expert_params if self.moe else 0.0
        return self.matmul_params - routed_visited + self.hidden * self.vocab

    def zero3_layer(self, tp: int, ep: int) -> tuple[float, float]:
        """(replicated, routed) parameters per GPU of the largest layer ZeRO-3 gathers whole before using it:
        a dense layer's share of TP, or an MoE layer's attention, router and shared experts (TP share) and
        its routed experts (EP share)."""
        dense = self.layer_params / tp if self.dense_layers else 0.0
        if not self.moe:
            return dense, 0.0
        rep = (self.attn_params + self.hidden * self.moe.experts + self.moe.shared * self.expert_params) / tp
        routed = self.moe.experts * self.expert_params / ep
        return (dense, 0.0) if dense > rep + routed else (rep, routed)

    def zero3_mean_layer(self, tp: int, ep: int) -> tuple[float, float]:
        """(replicated, routed) parameters per GPU ZeRO-3 gathers per layer, on average over the layers."""
        if not self.moe:
            return self.layer_params / tp, 0.0
        f = self.moe_layers / self.layers
        rep = (self.attn_params + self.hidden * self.moe.experts + self.moe.shared * self.expert_params) / tp
        return (1 - f) * self.layer_params / tp + f * rep, f * self.moe.experts * self.expert_params / ep

    def zero3_tensors(self, ep: int) -> float:
        """Parameter tensors per layer (mean over the layers) as Megatron builds them, for a stack that gathers
        each with its own collective: two norms, the fused QKV and the output projection, the MLP's two
        matrices (SwiGLU's gate and up fused), each with a bias in a GELU (GPT) layer (LayerNorm: weight and
        bias); an MoE layer: the router and its experts' two matrices instead of the MLP's."""
        b = 1 if self.mlp == "swiglu" else 2
        dense = 2 * b + 2 * b + 2 * b
        if not self.moe:
            return float(dense)
        f = self.moe_layers / self.layers
        moe = 2 * b + 2 * b + 1 + 2 * (self.moe.experts / ep + self.moe.shared)
        return (1 - f) * dense + f * moe

    @property
    def total_params(self) -> float:
        """Every parameter: layers (all experts), the output layer and the input embedding (once if tied)."""
        emb = self.hidden * self.vocab * (1 if self.tied else 2)
        return self.dense_layers * self.layer_params + self.moe_layers * self.moe_layer_total + emb

    def context(self, seq: float) -> float:
        """Average keys a query attends to: half the sequence when causal, less under a sliding window."""
        w = self.window
        if w is None or w >= seq:
            return seq / 2
        return w - w * w / (2 * seq)

    def forward_flops_per_token(self, seq: float) -> float:
        """Forward FLOPs per token with causal attention over a sequence of ``seq`` tokens."""
        return 2 * self.matmul_params + self.layers * 4 * self.context(seq) * self.hidden

    def model_flops_per_token(self, seq: float) -> float:
        """Training FLOPs per token (forward + backward = 3 x forward): the numerator of MFU."""
        return 3 * self.forward_flops_per_token(seq)


def megatron_eq3_flops(s: Shape, seq: int, batch: int) -> float:
    """Hardware FLOPs of one iteration with full recomputation, Narayanan et al. (SC'21) Eq. 3, the
    convention of their Table 1: ``96 B s l h^2 (1 + s / (6 h) + V / (16 l h))``.

    >>> round(megatron_eq3_flops(Shape(24, 2304, 9216, 24, 24, 51200, "gelu"), 2048, 512) / 1e15, 1)  # Table 1, row 1
    15.5
    """
    h, ll = s.hidden, s.layers
    return 96 * batch * seq * ll * h * h * (1 + seq / (6 * h) + s.vocab / (16 * ll * h))


def megatron_core_flops(s: Shape, seq: int, batch: int) -> float:
    """Model FLOPs of one iteration as Megatron-LM counts them (``num_floating_point_operations``, NeMo's
    "Model TFLOP/sec/GPU"): 3 x (2 x matmul parameters + 4 x s x h per layer) per token, attention over the
    full ``s x s`` square rather than the causal half (so above :meth:`Shape.model_flops_per_token`).

    >>> s = Shape(layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256)
    >>> round(megatron_core_flops(s, 8192, 1) / (s.model_flops_per_token(8192) * 8192), 3)
    1.04
    """
    return 3 * (2 * s.matmul_params + s.layers * 4 * seq * s.hidden) * seq * batch
