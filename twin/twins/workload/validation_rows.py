"""Published end-to-end rows the project added to its validation table beyond the shared open set, each
from a stack's own published tables, stated as variants of an example site's workload (the site's
fabric and GPUs, the workload's model family and conventions, these fields changed).

Megatron-LM SC'21 Table 2 ([megatron-sc21] s5.2): GPT-3 175B (174.6B: 96 layers, hidden 12,288, 96 heads,
sequence 2,048, vocabulary 51,200) at a fixed global batch of 1,536 on Selene, in hardware FLOPs with
recomputation (Eq. 3):

- ZeRO-3 without model parallelism (DeepSpeed integrated into Megatron-LM: the ``megatron-deepspeed-2021``
  stack): 384 GPUs at micro-batch 4, 144 TFLOPs/GPU (the stack's ``kernel_share`` is set on this row);
  768 at 2, 88; 1,536 at 1, 44 (predictions).
- PTD-P, model-parallel size 96 ((t, p) = (8, 12), micro-batch 1, interleaved at two layers per chunk: the
  authors' configuration of this model at this (t, p) in [megatron-sc21-scripts] run_figure_12.sh, Table 2 having
  no script): 384 GPUs 153, 768 149, 1,536 141 (predictions of ``megatron-lm-2021``, set on Table 1).

>>> [v.name for v in TABLE2][:3]
['zero3-175b-384', 'zero3-175b-768', 'zero3-175b-1536']
"""

from __future__ import annotations

from dataclasses import dataclass, field

GPT3 = {"parameters": 174.6e9, "layers": 96, "hidden_size": 12288, "heads": 96, "global_batch": 1536, "sequence_length": 2048}


@dataclass(frozen=True)
class Variant:
    name: str
    base: str  # the site workload it changes
    measured: float  # TFLOPs/GPU in the group's convention
    source: str
    fields: dict = field(default_factory=dict)


def _zero3(n: int, mb: int, measured: float, row: int) -> Variant:
    return Variant(f"zero3-175b-{n}", "gpt-145p6b", measured, f"[megatron-sc21] Table 2 row {row} (ZeRO-3, 174.6B, {n:,} GPUs)",
                   {**GPT3, "tp": 1, "pp": 1, "dp": n, "zero": 3, "micro_batch": mb, "virtual_stages": 1, "overlap_grad_reduce": None,
                    "stack": "megatron-deepspeed-2021"})


def _ptdp(n: int, measured: float, row: int) -> Variant:
    return Variant(f"ptdp-175b-{n}", "gpt-145p6b", measured, f"[megatron-sc21] Table 2 row {row} (PTD-P, 174.6B, {n:,} GPUs)",
                   {**GPT3, "tp": 8, "pp": 12, "dp": n // 96, "micro_batch": 1, "virtual_stages": 4, "stack": "megatron-lm-2021"})


TABLE2 = (_zero3(384, 4, 144, 1), _zero3(768, 2, 88, 2), _zero3(1536, 1, 44, 3),
          _ptdp(384, 153, 7), _ptdp(768, 149, 8), _ptdp(1536, 141, 9))


def design_with(design, variants) -> object:
    """The design with its workloads replaced by ``variants`` (each its base workload with the fields changed)."""
    import dataclasses

    by_name = {w.name: w for w in design.spec.site.workloads}
    ws = [by_name[v.base].model_copy(update={**v.fields, "name": v.name, "measured_tflops_per_gpu": v.measured, "source": v.source})
          for v in variants]
    site = design.spec.site.model_copy(update={"workloads": ws})
    return dataclasses.replace(design, spec=dataclasses.replace(design.spec, site=site))
