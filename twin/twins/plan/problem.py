"""A plan search's problem: the model, its batch and sequence, the software stack and the GPU of a compiled
design, and the fabric serving the job's GPUs, compiled once.

The search reads the design (never the YAML); the workload is a site's (``workloads:``) or a model given
on the command line, and its recipe fields other than the plan's (the stack, ``cp_comm``, the gradient
bucket, the FLOP convention, ``bytes_per_param``) carry over to every plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.compiler.resolve.transformer import Shape
from twin.lang.site.workload_models import DEFAULT_STACK, RECOMPUTE_POLICIES
from twin.twins.plan.space import ORDERS, RECOMPUTE, Axes
from twin.twins.workload import jobs
from twin.twins.workload.recipe import Recipe


@dataclass
class Problem:
    design: object
    workload: object  # TrainingJob: the model, batch and sequence; its plan fields are what the search varies
    gpus: int
    shape: Shape
    base: Recipe  # the workload's recipe under its stack: overlaps, attention, kernel share, cp_comm, bucket
    gpu: object  # compute.Gpu at the rack's power cap and the stack's kernel share
    hbm: float
    nvls: bool
    net: object = None
    ranks: np.ndarray | None = None  # the job's GPUs in topology order (rank r runs on ranks[r])
    scheme: object = None
    lib: object = None

    @classmethod
    def of(cls, design, workload, gpus: int | None = None, fabric: bool = True) -> Problem:
        """The problem of ``workload`` on ``gpus`` GPUs of ``design`` (default: the workload's own count);
        ``fabric=False`` skips compiling the fabric (the space and memory only)."""
        n = gpus or workload.gpus
        stacks = design.spec.catalog.stacks
        if (workload.stack or DEFAULT_STACK) not in stacks:
            raise ValueError(f"unknown software stack '{workload.stack}' (the catalog has {', '.join(sorted(stacks))})")
        base = Recipe.of(workload, stacks)
        gpu = jobs.gpu_of(design, base.kernel_share)
        ch = design.spec.chassis
        p = cls(design, workload, n, Shape.of(workload), base, gpu, ch.gpu_memory or 0.0, bool(ch.nvls))
        if fabric:
            p.compile_fabric()
        return p

    def compile_fabric(self) -> None:
        from twin.twins.net import routing, topology
        from twin.twins.net.nccl import Library

        d = self.design
        self.net = topology.from_design(d, within=topology.first_gpus(d.fabric.graph, self.gpus))
        self.ranks = jobs.place_job(self.net, self.gpus, "topology", 7, set())
        if self.ranks is None:
            raise ValueError(f"the site has {int((self.net.nic_leaf[self.net.gpu_nic] >= 0).sum()):,} GPUs, fewer than {self.gpus:,}")
        qps = d.spec.fabric.routing.qps_per_gpu_pair
        self.scheme = routing.Scheme(f"e-ecmp, {qps} QPs", "e-ecmp", qps)
        self.lib = Library(nic_latency=d.spec.chassis.nic_latency)

    def axes(self, fixed: dict | None = None) -> Axes:
        s, w = self.shape, self.workload
        return Axes(gpus=self.gpus, layers=s.layers, heads=s.heads, kv_heads=s.kv_heads, ffn=s.ffn, seq=w.sequence_length,
                    batch=w.global_batch, experts=s.moe.experts if s.moe else 0, fp8=bool(self.gpu.fp8_peak), fixed=fixed or {})

    def recipe(self, c: dict) -> Recipe:
        """The :class:`Recipe` of one plan (a row of the space's columns, as Python ints)."""
        b = self.base
        return Recipe(tp=c["tp"], cp=c["cp"], pp=c["pp"], dp=c["dp"], ep=c["ep"], seq=b.seq, global_batch=b.global_batch,
                      micro_batch=c["mb"], virtual_stages=c["v"], recompute=RECOMPUTE_POLICIES[RECOMPUTE[c["rc"]]],
                      sequence_parallel=bool(c["sp"]), zero=c["zero"], overlap_grad_reduce=b.overlap_grad_reduce,
                      overlap_param_gather=b.overlap_param_gather, grad_bucket=b.grad_bucket,
                      fp8=("qkv", "proj", "fc1", "fc2", "experts") if c["fp8"] else (), cp_comm=b.cp_comm,
                      fused_attention=b.fused_attention, kernel_share=b.kernel_share, stack=b.stack, stack_defaulted=b.stack_defaulted,
                      dp_overlap=b.dp_overlap, flops_convention=b.flops_convention)

    def workload_of(self, c: dict):
        """The site workload with one plan's fields (for the full job twin and for writing into a spec)."""
        upd = {"tp": c["tp"], "cp": c["cp"], "pp": c["pp"], "dp": c["dp"], "ep": c["ep"], "micro_batch": c["mb"],
               "virtual_stages": c["v"], "recompute": RECOMPUTE[c["rc"]], "sequence_parallel": bool(c["sp"]), "zero": c["zero"],
               "fp8": "linear" if c["fp8"] else "none"}
        return self.workload.model_copy(update=upd)


def row(cols: dict[str, np.ndarray], i: int) -> dict:
    """One plan of the columns as plain ints, with its rank order's name."""
    out = {k: int(v[i]) for k, v in cols.items() if v.dtype.kind in "iu"}
    out["dims"] = ORDERS[out["order"]]
    return out
