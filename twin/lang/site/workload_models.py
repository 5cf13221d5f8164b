"""The workload part of the site language: a training job as three separate inputs.

- **The model** (what is trained): its shape and family. ``family: llama`` (the default) is a
  pre-norm decoder with RMSNorm, a SwiGLU MLP, rotary positions, no dropout and grouped-query attention
  when ``kv_heads`` is given; ``family: gpt`` is the GPT-2/3 block Megatron-LM trains (LayerNorm, GELU MLP
  of 4 x hidden, learned positions, dropout). ``mlp``, ``positions``, ``dropout``, ``parallel_block``
  (attention and MLP side by side off one norm: GPT-J, PaLM) and ``attention_window`` (sliding-window
  attention) override the family's choice; ``moe:`` makes some layers mixtures of experts.
- **The recipe** (how it is trained): the parallel layout (``tp``, ``cp``, ``pp``, ``dp``, ``ep``),
  ``micro_batch``, ``virtual_stages``, ``recompute``, ``sequence_parallel``, ``zero``, the overlaps,
  ``fp8`` and ``cp_comm``.
- **The software stack** (``stack:``, a catalog entry): what the framework loses (launch gaps, unfused
  kernels, overlap it lacks), separate from the GPU (``twin/lang/site/catalog_models.py`` ``Stack``).

Structural rules live here; rules that read the catalog or relate several fields (experts over EP, the
interleaving depth against layers per stage, memory against HBM) are in
:mod:`twin.compiler.resolve.workload_checks`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from twin.lang.base import Count, Model, Slug, Text, pattern
from twin.lang.units import DATA_SIZE, bounded

RecomputeModule = Literal["core-attention", "attention", "mlp", "experts", "activation", "norm"]
RECOMPUTE_POLICIES = {"none": (), "selective": ("core-attention",), "full": ("attention", "mlp", "experts", "norm")}
# the fields of a workload's recipe and stack: what a scenario job may override (twin/lang/scenario/job.py ``recipe:``)
RECIPE_FIELDS = ("tp", "cp", "pp", "dp", "ep", "sequence_length", "global_batch", "micro_batch", "virtual_stages", "recompute", "recompute_layers",
                 "sequence_parallel", "zero", "overlap_grad_reduce", "overlap_param_gather", "overlap_tp", "overlap_pp", "overlap_cp", "overlap_ep", "pipeline_schedule",
                 "zero3_bucket", "zero3_collectives", "grad_bucket", "grad_reduce_fp32", "fp8", "cp_comm", "stack", "stragglers", "dp_shard")
DEFAULT_STACK = "meta-production-2024"  # the stack of a workload that names none (the twin says so in its result)
DEFAULT_ORDER = "tp-cp-pp-dp"  # the rank order of a job whose stack names none ([llama3] s3.3.2: [TP, CP, PP, DP])
RANK_DIMS = ("tp", "cp", "pp", "dp")
RankOrder = Annotated[str, Field(pattern=pattern(r"^(tp|cp|pp|dp)(-(tp|cp|pp|dp)){3}$",
                                                 "tp, cp, pp and dp, each once, joined by '-', fastest first, such as 'tp-cp-pp-dp'"),
                                 description="rank order: tp, cp, pp and dp joined by '-', fastest first")]


def check_order(order: str) -> str:
    """``order`` if it names each of tp, cp, pp and dp once (the pattern alone lets one repeat)."""
    if sorted(order.split("-")) != sorted(RANK_DIMS):
        raise ValueError(f"rank order '{order}' must name each of tp, cp, pp and dp once, fastest first, such as 'tp-cp-pp-dp'")
    return order


Fp8Gemm = Literal["qkv", "proj", "fc1", "fc2", "experts", "output"]


class Moe(Model):
    """Mixture of experts: which layers, how many experts, how many a token visits."""

    experts: int = Field(ge=1, le=4096, description="routed experts per MoE layer")
    top_k: int = Field(2, ge=1, le=64, description="experts each token is routed to")
    expert_ffn_hidden_size: int | None = Field(None, ge=1, le=10_000_000, description="FFN width of one expert (default: ffn_hidden_size)")
    shared_experts: int = Field(0, ge=0, le=64, description="experts every token visits (DeepSeek-style), beside the routed ones")
    capacity_factor: float | None = Field(None, gt=0, le=64, description="tokens an expert takes, as a multiple of the balanced "
                                          "share; the excess is dropped and short experts pad (default: dropless, balanced)")
    every: int = Field(1, ge=1, le=64, description="every n-th layer is an MoE layer (1: all; 2: alternate with dense)")
    max_nodes: int | None = Field(None, ge=1, le=4096, description="node-limited routing: a token's experts lie in at most this many "
                                  "NVLink domains, each sent one copy and forwarded inside it over NVLink (DeepSeek-V3: 4); default: "
                                  "one copy per expert over the network")

    @model_validator(mode="after")
    def _k(self) -> "Moe":
        if self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) must not exceed experts ({self.experts})")
        return self


class Stragglers(Model):
    """Per-rank slowdown of a synchronous step: each rank takes 1 + X times its nominal compute, X drawn afresh
    every step; the slowest rank sets the step (twin/twins/workload/stragglers.py)."""

    distribution: Literal["exponential", "uniform"] = Field(description="law of the per-rank slowdown X: exponential, or uniform on [0, 2 mean]")
    mean: float = Field(ge=0, le=10, description="mean per-rank slowdown, a fraction of the nominal time (0.01: 1%)")


class TrainingJob(Model):
    """A training job: the model, the recipe and the software stack (module docstring)."""

    name: Slug
    base: Slug | None = Field(None, exclude_if=lambda v: v is None, description="another workload of the site this one inherits from: every field it does not "
                              "set (nested moe and stragglers merge key by key; the measured figures are not inherited)")
    kind: Literal["training"] = "training"
    parameters: Count = Field(le=1e16, description="model parameters, e.g. 405B (at most 10 quadrillion)")
    layers: int = Field(ge=1, le=10_000)
    hidden_size: int = Field(ge=1, le=1_000_000)
    ffn_hidden_size: int | None = Field(None, ge=1, le=10_000_000)
    heads: int | None = Field(None, ge=1, le=100_000)
    sequence_length: int = Field(ge=1, le=100_000_000)
    global_batch: int = Field(ge=1, le=1_000_000_000, description="sequences per optimizer step")
    tp: int = Field(1, ge=1, le=1_000_000)
    cp: int = Field(1, ge=1, le=1_000_000)
    pp: int = Field(1, ge=1, le=1_000_000)
    dp: int = Field(1, ge=1, le=1_000_000)
    ep: int = Field(1, ge=1, le=1_000_000, description="expert parallelism: MoE experts split over this many data-parallel ranks")
    kv_heads: int | None = Field(None, ge=1, le=100_000, description="key/value heads (grouped-query attention); default: heads")
    vocab_size: int | None = Field(None, ge=1, le=100_000_000, description="vocabulary size (output layer); default 0: no output layer counted")
    # the model family
    family: Literal["llama", "gpt"] = Field("llama", description="llama: RMSNorm, SwiGLU, RoPE, no dropout; gpt: LayerNorm, "
                                            "GELU, learned positions, dropout (Megatron-LM's GPT)")
    mlp: Literal["swiglu", "gelu"] | None = Field(None, description="MLP: swiglu (3 matrices) or gelu (2); default: the family's")
    positions: Literal["rope", "learned", "alibi"] | None = Field(None, description="position encoding; default: the family's")
    dropout: bool | None = Field(None, description="dropout on attention probabilities and residuals; default: the family's")
    parallel_block: bool = Field(False, description="attention and MLP in parallel off one norm (GPT-J, PaLM): one TP exchange per layer")
    attention_window: int | None = Field(None, ge=1, le=100_000_000, description="sliding-window attention: each token attends to at most this many "
                                         "previous tokens (default: the whole causal context)")
    moe: Moe | None = Field(None, description="mixture of experts (default: dense)")
    # the recipe
    micro_batch: int = Field(1, ge=1, le=1_000_000, description="sequences per micro-batch")
    virtual_stages: int = Field(1, ge=1, le=64, description="interleaved pipeline: model chunks per GPU")
    recompute: Literal["none", "selective", "full"] | list[RecomputeModule] = Field(
        "none", description="activation recomputation: none, selective (core attention, Korthikanti et al. 2022), full (every "
        "layer), or the modules to recompute: core-attention, attention, mlp, experts, activation, norm")
    recompute_layers: int | None = Field(None, ge=1, le=100_000, exclude_if=lambda v: v is None, description="with recompute: "
                                         "full, only the first N layers of each model chunk are recomputed, the rest keep their "
                                         "activations (Megatron-Core's recompute_method: block, recompute_num_layers: N); default: "
                                         "every layer")
    sequence_parallel: bool = Field(True, description="Megatron sequence parallelism: norms and dropout on 1/TP of the tokens, "
                                    "TP exchanges as all-gather + reduce-scatter (false: all-reduce, Megatron-LM 2021)")
    zero: Literal[0, 1, 2, 3] = Field(0, description="data-parallel sharding: 0 DDP (all-reduce of gradients); 1 optimizer states "
                                      "(Megatron's distributed optimizer: reduce-scatter + all-gather per step); 2 also gradients "
                                      "(reduce-scatter every micro-batch); 3 also weights (FSDP full shard: per-layer all-gathers "
                                      "forward and backward, every micro-batch)")
    dp_shard: int | None = Field(None, ge=1, le=1_000_000, exclude_if=lambda v: v is None, description="hybrid sharding (HSDP; Megatron-Core's distributed "
                                 "optimizer instances): ZeRO's states sharded over this many consecutive data-parallel ranks (of DP x "
                                 "CP) and replicated over the rest; the reduction a reduce-scatter and an all-gather inside a shard "
                                 "group and an all-reduce of its 1/dp_shard across the replicas (default: one shard over all of them)")
    overlap_grad_reduce: bool | None = Field(None, description="gradient reduction overlaps the backward pass (default: the stack's)")
    overlap_param_gather: bool | None = Field(None, description="the weight all-gather overlaps the forward pass (default: the stack's)")
    overlap_tp: list[Literal["allgather", "reducescatter"]] | None = Field(
        None, description="TP collectives overlapped with their GEMMs, by kind (default: the stack's; [] for none)")
    overlap_pp: bool | None = Field(None, description="pipeline transfers overlap the steady state (default: the stack's)")
    overlap_cp: bool | None = Field(None, description="a CP ring's exchange hides behind attention (default: the stack's)")
    pipeline_schedule: Literal["1f1b", "dualpipe"] | None = Field(None, description="the pipeline schedule (default: the stack's)")
    overlap_ep: bool | None = Field(None, description="expert all-to-alls run beside another micro-batch's compute (default: the stack's)")
    zero3_bucket: bounded(DATA_SIZE, above=0, at_most=1e12) | None = Field(None, description="ZeRO-3 prefetch/reduce bucket (default: the stack's; none there: a whole layer)")
    zero3_collectives: Literal["layer", "tensor"] | None = Field(None, description="ZeRO-3 collectives per layer or per parameter tensor (default: the stack's)")
    stragglers: Stragglers | None = Field(None, description="per-rank slowdown whose slowest rank sets each step (default: the stack's; none: no stragglers)")
    grad_reduce_fp32: bool | None = Field(None, description="gradients held and reduced in FP32, 4 bytes each (default: the stack's)")
    grad_bucket: bounded(DATA_SIZE, above=0, at_most=1e12) = Field(40e6 * 4, description="gradient bucket: the last one reduces after the backward pass ends "
                                  "(default 160 MB: Megatron-LM's 40M FP32 elements)")
    fp8: Literal["none", "linear"] | list[Fp8Gemm] = Field("none", description="GEMMs run in FP8: none, linear (every linear layer "
                                                         "of the blocks), or a list of qkv, proj, fc1, fc2, experts, output")
    cp_comm: Literal["all-gather", "ring"] = Field("all-gather", description="context parallelism: all-gather of K and V before "
                                                   "attention (Llama 3) or a ring of K/V chunks overlapping the attention kernel")
    stack: Slug | None = Field(None, description="the software stack (catalog stacks:); default meta-production-2024")
    flops_convention: Literal["model", "megatron-eq3", "megatron-core"] = Field(
        "model", description="how measured_tflops_per_gpu counts FLOPs: model (6N + causal attention; Llama 3 Table 4), megatron-eq3 "
        "(hardware FLOPs with recomputation, Narayanan et al. SC'21 Eq. 3) or megatron-core (6N + attention over the full square: "
        "Megatron-LM's num_floating_point_operations, NeMo's Model TFLOP/s)")
    measured_tflops_per_gpu: float | None = Field(
        None, gt=0, le=1e5, description="a measured end-to-end BF16 TFLOPs per GPU to compare the twin's prediction with (never an input of the math)"
    )
    tflops_per_gpu: float | None = Field(None, gt=0, le=1e5, description="deprecated alias of measured_tflops_per_gpu")
    mfu: float | None = Field(None, gt=0, le=1, description="deprecated: a measured MFU (compare-only), as measured_tflops_per_gpu / peak")
    bytes_per_param: int = Field(2, ge=1, le=8)
    source: Text = ""

    @model_validator(mode="after")
    def _one_measured(self) -> "TrainingJob":
        if self.measured_tflops_per_gpu is not None and self.tflops_per_gpu is not None:
            raise ValueError("give measured_tflops_per_gpu or its deprecated alias tflops_per_gpu, not both")
        if self.heads is not None and self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        return self

    @property
    def chunk_layers(self) -> int:
        """Layers of a full stage's model chunk: ceil(ceil(layers / PP) / virtual stages)."""
        per_stage = -(-self.layers // self.pp)
        return -(-per_stage // self.virtual_stages)

    @property
    def recompute_share(self) -> float:
        """The share of a stage's layers recomputed: every one, or ``recompute_layers`` of each model chunk's
        :attr:`chunk_layers` (at most all of them)."""
        return min(1.0, self.recompute_layers / self.chunk_layers) if self.recompute_layers else 1.0

    @property
    def measured(self) -> float | None:
        """The measured TFLOPs/GPU this job is compared with (the deprecated alias included)."""
        return self.measured_tflops_per_gpu if self.measured_tflops_per_gpu is not None else self.tflops_per_gpu

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def recompute_modules(self) -> tuple[str, ...]:
        """The modules recomputed in the backward pass (a policy name expanded)."""
        if isinstance(self.recompute, str):
            return RECOMPUTE_POLICIES[self.recompute]
        return tuple(dict.fromkeys(self.recompute))

    @property
    def fp8_gemms(self) -> tuple[str, ...]:
        if self.fp8 == "none":
            return ()
        if self.fp8 == "linear":
            return ("qkv", "proj", "fc1", "fc2", "experts")
        return tuple(dict.fromkeys(self.fp8))

    @property
    def microbatches(self) -> int:
        """Micro-batches per pipeline and step."""
        return max(1, self.global_batch // (self.dp * self.micro_batch))
