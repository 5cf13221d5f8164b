"""A training job's recipe resolved against its software stack and a scenario's overrides: everything the
step model reads besides the model's shape and the GPU.

The stack (catalog ``stacks:``) supplies what the framework loses (``kernel_share``), how it runs attention
(fused or unfused) and its default overlaps; the workload's recipe fields win where given, and a
scenario's job (``virtual_stages``, ``kv_heads``, ``dp_overlap``) wins over both.

Recomputation, by module (:data:`twin.lang.site.workload_models.RECOMPUTE_POLICIES` names the policies):
``attention`` recomputes the whole attention block (QKV, the attention kernel, the output projection and
their TP exchanges), ``mlp`` the MLP block (both GEMMs, the activation and their TP exchanges), ``experts``
the expert MLPs, ``core-attention`` only the attention kernel (selective recomputation, Korthikanti et al.
2022), ``activation`` the GELU/SwiGLU, ``norm`` the norms. Recomputed work runs again before the backward
pass of its layer.

TP exchanges per layer and micro-batch (Megatron-LM): with sequence parallelism an all-gather before and a
reduce-scatter after each block, forward, and the reverse backward (a dense layer: 4 all-gathers + 4
reduce-scatters); without it one all-reduce per block forward and one backward (4 all-reduces). A
parallel block (attention and MLP off one norm) exchanges once per layer and direction.

>>> r = Recipe(tp=8, sequence_parallel=True, recompute=("attention",))
>>> r.tp_exchanges(moe=False)
{'allgather': 5, 'reducescatter': 5, 'allreduce': 0}
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.compiler.resolve import memory
from twin.lang.site.workload_models import DEFAULT_ORDER, DEFAULT_STACK

EXPANDS = {"attention": ("attention", "core-attention"), "mlp": ("mlp", "activation"), "experts": ("experts",),
           "core-attention": ("core-attention",), "activation": ("activation",), "norm": ("norm",)}



def tp_overlap_applies(tp, sp, domain: int):
    """Whether TP communication overlap (userbuffers) can split a plan's TP exchanges: sequence parallelism's
    all-gathers and reduce-scatters, inside one NVLink domain of ``domain`` GPUs (0: unbounded), as the workload
    checks hold a stated overlap to. Works on arrays.

    >>> tp_overlap_applies(8, True, 8), tp_overlap_applies(16, True, 8), tp_overlap_applies(8, False, 8), tp_overlap_applies(1, True, 0)
    (True, False, False, False)
    """
    tp = np.asarray(tp)
    out = (tp > 1) & (np.asarray(sp) > 0) & ((tp <= domain) if domain else True)
    return bool(out) if out.ndim == 0 else out

@dataclass(frozen=True)
class Recipe:
    tp: int = 1
    cp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    seq: int = 2048
    global_batch: int = 1
    micro_batch: int = 1
    virtual_stages: int = 1
    recompute: tuple[str, ...] = ()
    recompute_share: float = 1.0  # of a stage's layers, those recomputed (recompute_layers of each chunk; 1: every one)
    sequence_parallel: bool = True
    zero: int = 0
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True
    grad_bucket: float = 160e6
    fp8: tuple[str, ...] = ()
    cp_comm: str = "all-gather"
    fused_attention: bool = True
    kernel_share: float = 1.0
    stack: str = DEFAULT_STACK
    stack_defaulted: bool = False
    dp_overlap: float = 1.0
    flops_convention: str = "model"
    notes: list[str] = field(default_factory=list)
    # added after the original fields (callers may construct a Recipe positionally)
    overlap_tp: tuple[str, ...] = ()
    overlap_pp: bool = True
    overlap_cp: bool = True
    stragglers: tuple[str, float] | None = None  # (distribution, mean per-rank slowdown): the slowest rank sets each step
    overlap_ep: bool = False
    pipeline_schedule: str = "1f1b"
    zero3_bucket: float = 0.0  # bytes of a ZeRO-3 layer's gather / reduce-scatter that run ahead of need (0: the whole layer)
    zero3_collectives: str = "layer"  # ZeRO-3: one collective per layer, or one per parameter tensor (DeepSpeed 2021)
    zero3_host_s: float = 0.0  # ZeRO-3: host time per parameter all-gather that the GPU waits out (the stack's zero3_host)
    optimizer_bytes: float = 12.0  # the stack's optimizer state per parameter (memory.OPTIMIZER_BYTES unless the stack says more)
    grad_bytes: float = memory.BF16  # bytes of a gradient held and reduced over the data-parallel ranks (4: FP32, grad_reduce_fp32)
    dp_shard: int = 0  # hybrid sharding: ranks of DP x CP one ZeRO shard spans, replicated over the rest (0: one shard over all)
    dims: str = DEFAULT_ORDER  # the rank order, fastest first: the job's, else the first its stack lays out (plans.orders)

    @classmethod
    def of(cls, w, stacks: dict, job=None) -> Recipe:
        """From a site workload, the catalog's stacks and (optionally) a scenario's job; raises KeyError for an
        unknown stack (validation reports it first)."""
        name = w.stack or DEFAULT_STACK
        st = stacks[name]
        v = (job.virtual_stages if job is not None and job.virtual_stages else None) or w.virtual_stages
        dims = (getattr(job, "dims", None) if job is not None else None) or (st.plans.orders or [DEFAULT_ORDER])[0]

        def pick(name: str):  # the scenario job's, else the workload's, else the stack's: one order for every overlap
            for x in (job, w):
                got = getattr(x, name, None) if x is not None else None
                if got is not None:
                    return got
            return getattr(st, name)

        return cls(
            tp=w.tp, cp=w.cp, pp=w.pp, dp=w.dp, ep=w.ep, seq=w.sequence_length, global_batch=w.global_batch,
            micro_batch=w.micro_batch, virtual_stages=v, recompute=w.recompute_modules, recompute_share=w.recompute_share,
            sequence_parallel=w.sequence_parallel,
            zero=w.zero, grad_bucket=w.grad_bucket, fp8=w.fp8_gemms, cp_comm=w.cp_comm, dims=dims,
            overlap_grad_reduce=pick("overlap_grad_reduce"), overlap_param_gather=pick("overlap_param_gather"),
            overlap_tp=tuple(pick("overlap_tp")) if w.tp > 1 else (), overlap_pp=pick("overlap_pp"), overlap_cp=pick("overlap_cp"),
            overlap_ep=pick("overlap_ep"), pipeline_schedule=pick("pipeline_schedule"),
            zero3_bucket=pick("zero3_bucket") or 0.0, zero3_collectives=pick("zero3_collectives"), zero3_host_s=float(st.zero3_host),
            stragglers=(lambda x: (x.distribution, x.mean) if x is not None else None)(pick("stragglers")),
            fused_attention=st.attention == "fused", kernel_share=st.kernel_share, stack=name, stack_defaulted=w.stack is None,
            optimizer_bytes=st.optimizer_bytes, grad_bytes=memory.grad_bytes(pick("grad_reduce_fp32")),
            dp_overlap=job.dp_overlap if job is not None else 1.0, flops_convention=w.flops_convention,
            dp_shard=w.dp_shard or 0)

    def overlaps(self) -> dict[str, bool]:
        """Every overlap the step times, by kind, as the recipe resolved it (stack, then workload, then job)."""
        return {"tp_allgather": "allgather" in self.overlap_tp, "tp_reducescatter": "reducescatter" in self.overlap_tp,
                "pp_sendrecv": self.overlap_pp, "cp_exchange": self.overlap_cp, "ep_alltoall": self.overlap_ep,
                "dp_reduce": self.overlap_grad_reduce, "dp_gather": self.overlap_param_gather}

    @property
    def microbatches(self) -> int:
        return max(1, self.global_batch // (self.dp * self.micro_batch))

    @property
    def tokens(self) -> float:
        """Tokens of one micro-batch on one GPU (its 1/CP share)."""
        return self.micro_batch * self.seq / self.cp

    def recomputed(self) -> set[str]:
        """The kernel modules run again before the backward pass."""
        return {m for r in self.recompute for m in EXPANDS[r]}

    def tp_exchanges(self, moe: bool, parallel_block: bool = False) -> dict[str, int]:
        """TP collectives per layer and micro-batch, forward, backward and recomputation together."""
        blocks = 1 if parallel_block else 2
        redo = self.recomputed()
        again = (("attention" in redo) + (("mlp" in redo) if not moe else ("experts" in redo))) if not parallel_block else \
            int(bool({"attention", "mlp"} & redo))
        if self.recompute_share < 1.0:  # recompute_layers: the first layers of each chunk run their exchanges again
            again = self.recompute_share * again
        if self.tp == 1:
            return {"allgather": 0, "reducescatter": 0, "allreduce": 0}
        if self.sequence_parallel:
            n = 2 * blocks + again
            return {"allgather": n, "reducescatter": n, "allreduce": 0}
        return {"allgather": 0, "reducescatter": 0, "allreduce": 2 * blocks + again}
