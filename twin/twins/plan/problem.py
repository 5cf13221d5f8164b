"""A plan search's problem: the model, its batch and sequence, the software stack and the GPU of a compiled
design, and the fabric serving the job's GPUs, compiled once.

The search reads the design (never the YAML); the workload is a site's (``workloads:``) or a model given
on the command line, and its recipe fields other than the plan's (the stack, ``cp_comm``, the gradient
bucket, the FLOP convention, ``bytes_per_param``) carry over to every plan.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from twin.compiler.resolve.transformer import Shape
from twin.lang import limits
from twin.lang.site.workload_models import DEFAULT_STACK, RECOMPUTE_POLICIES
from twin.twins.plan.space import ORDERS, RECOMPUTE, Axes
from twin.twins.workload import jobs
from twin.twins.workload.recipe import Recipe, tp_overlap_applies

FP8_GEMMS = ("qkv", "proj", "fc1", "fc2", "experts")  # fp8: linear (the workload language's "every linear layer")


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
    job: object = None  # a scenario's job (plan: best): its overlaps and stragglers carry over to every plan

    def cfg(self, dims: str):
        """The scenario job that times one plan in the full twin: the problem's job (or a plain one) in rank order ``dims``."""
        from twin.lang.scenario.job import Job

        base = self.job or Job(workload=self.workload.name)
        return base.model_copy(update={"workload": self.workload.name, "dims": dims, "recipe": None, "virtual_stages": None})

    @classmethod
    def of(cls, design, workload, gpus: int | None = None, fabric: bool = True, job=None) -> Problem:
        """The problem of ``workload`` on ``gpus`` GPUs of ``design`` (default: the workload's own count);
        ``fabric=False`` skips compiling the fabric (the space and memory only); ``job``: a scenario's job whose
        overlaps and stragglers every plan keeps."""
        n = gpus or workload.gpus
        limits.check("plan_gpus", n)  # before the fabric of n GPUs is compiled, and the collectives timed on it
        workload = workload.model_copy(update={"dp_shard": None})  # a plan axis (pinned to search it): each plan says its own
        stacks = design.spec.catalog.stacks
        if (workload.stack or DEFAULT_STACK) not in stacks:
            raise ValueError(f"unknown software stack '{workload.stack}' (the catalog has {', '.join(sorted(stacks))})")
        base = Recipe.of(workload.model_copy(update={"tp": max(2, workload.tp)}), stacks,  # the stack's TP overlaps, whatever TP it had
                         job.model_copy(update={"virtual_stages": None}) if job is not None else None)
        gpu = jobs.gpu_of(design, base.kernel_share)
        ch = design.spec.chassis
        p = cls(design, workload, n, Shape.of(workload), base, gpu, ch.gpu_memory or 0.0, bool(ch.nvls), job=job)
        if fabric:
            p.compile_fabric()
        return p

    def compile_fabric(self) -> None:
        from twin.twins.net import routing, subfabric, topology
        from twin.twins.net.nccl import Library

        d = self.design
        self.net = topology.from_design(d, within=subfabric.first_gpus(d.fabric.graph, self.gpus))
        j = self.job
        self.ranks = jobs.place_job(self.net, self.gpus, j.order if j is not None else "topology", j.seed if j is not None else 7, set())
        if self.ranks is None:
            raise ValueError(f"the site has {int((self.net.nic_leaf[self.net.gpu_nic] >= 0).sum()):,} GPUs, fewer than {self.gpus:,}")
        self.scheme = routing.site_scheme(d.spec.fabric)  # what the site's switches run (a scenario's job: its first scheme)
        self.lib = Library(nic_latency=d.spec.chassis.nic_latency)

    def stack_limits(self) -> dict:
        """The axes the workload's software stack limits (catalog ``stacks: ... plans:``), as :class:`Axes` pins."""
        st = self.design.spec.catalog.stacks[self.base.stack].plans
        out = {"zero": list(st.zero), "recompute": list(st.recompute), "sequence_parallel": [int(x) for x in st.sequence_parallel]}
        for axis, ok in (("cp", st.context_parallel), ("v", st.interleaved), ("ep", st.expert_parallel), ("fp8", st.fp8)):
            if not ok:
                out[axis] = 0 if axis == "fp8" else 1
        if st.orders:  # the rank orders its framework lays groups out in
            out["order"] = list(st.orders)
        if self.base.pipeline_schedule == "dualpipe":  # its own bidirectional schedule: no interleaving, PP even
            from twin.twins.plan.space import divisors

            out["v"] = 1
            out["pp"] = [d for d in divisors(self.gpus) if d == 1 or d % 2 == 0]
        return out

    def axes(self, fixed: dict | None = None) -> Axes:
        """The space's axes: the model and batch, the stack's limits, and the user's pins (which win)."""
        s, w = self.shape, self.workload
        pins = {**self.stack_limits(), **(fixed or {})}
        return Axes(gpus=self.gpus, layers=s.layers, heads=s.heads, kv_heads=s.kv_heads, ffn=s.ffn, seq=w.sequence_length,
                    batch=w.global_batch, experts=s.moe.experts if s.moe else 0, fp8=bool(self.gpu.fp8_peak),
                    uneven=self.design.spec.catalog.stacks[self.base.stack].plans.uneven_stages,
                    zero_with_pp=tuple(self.design.spec.catalog.stacks[self.base.stack].plans.zero_with_pp), fixed=pins)

    def recipe(self, c: dict) -> Recipe:
        """The :class:`Recipe` of one plan (a row of the space's columns, as Python ints): the workload's
        recipe under its stack (overlaps, attention, bucket, stragglers) with the plan's fields."""
        return dataclasses.replace(
            self.base, tp=c["tp"], cp=c["cp"], pp=c["pp"], dp=c["dp"], ep=c["ep"], micro_batch=c["mb"], virtual_stages=c["v"],
            recompute=RECOMPUTE_POLICIES[RECOMPUTE[c["rc"]]], recompute_share=1.0, sequence_parallel=bool(c["sp"]), zero=c["zero"],
            fp8=FP8_GEMMS if c["fp8"] else (), overlap_tp=self.base.overlap_tp if self.tp_overlaps(c["tp"], c["sp"]) else (), notes=[],
            dp_shard=c.get("shard", 0))

    def tp_overlaps(self, tp, sp):
        """Whether the stack's TP overlap applies to plans of these TP and SP (:func:`recipe.tp_overlap_applies`).
        Works on arrays."""
        from twin.compiler.resolve.workload_checks import domain_of

        return bool(self.base.overlap_tp) & tp_overlap_applies(tp, sp, domain_of(self.design.spec))

    def workload_of(self, c: dict):
        """The site workload with one plan's fields (for the full job twin and for writing into a spec)."""
        upd = {"tp": c["tp"], "cp": c["cp"], "pp": c["pp"], "dp": c["dp"], "ep": c["ep"], "micro_batch": c["mb"],
               "virtual_stages": c["v"], "recompute": RECOMPUTE[c["rc"]], "recompute_layers": None, "sequence_parallel": bool(c["sp"]),
               "zero": c["zero"],
               "fp8": "linear" if c["fp8"] else "none", "dp_shard": c.get("shard") or None}
        return self.workload.model_copy(update=upd)


def row(cols: dict[str, np.ndarray], i: int) -> dict:
    """One plan of the columns as plain ints, with its rank order's name."""
    out = {k: int(v[i]) for k, v in cols.items() if v.dtype.kind in "iu"}
    out["dims"] = ORDERS[out["order"]]
    return out
