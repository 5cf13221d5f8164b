"""Training jobs: parallel groups on placed GPUs, per-step compute from first principles, per-step
traffic timed on the fabric, and the exposed part of it.

Rank layout. A job of TP x CP x PP x DP GPUs numbers its ranks with the dimensions in ``dims`` order,
fastest first (Llama 3: [TP, CP, PP, DP], so TP stays inside a server and DP, which overlaps best, is
spread widest); expert-parallel groups are runs of EP consecutive data-parallel ranks. ``order: topology``
gives ranks to GPUs in topology order (zone, rack, server, GPU); ``order: naive`` gives them to servers in
a seeded random order, as a scheduler that ignores the network would (TP still stays inside a server,
since servers are allocated whole).

One optimizer step, m = global_batch / (DP x micro_batch) micro-batches per pipeline, v interleaved
chunks per GPU:

- Compute (:mod:`twin.twins.workload.compute`): m x (forward + recomputation + backward) of one
  micro-batch on the slowest stage, plus the optimizer; the recipe and the software stack
  (:mod:`twin.twins.workload.recipe`) say what runs and how well.
- Stragglers (:mod:`twin.twins.workload.stragglers`): with a stated per-rank slowdown, the compute and
  bubble wait ``E[max of N]`` longer for the slowest of the job's N ranks (``straggler_s``).
- Pipeline bubble (:meth:`compute.TrainingCompute.bubble_s`): 1F1B waits for one micro-batch through
  every other stage, forward and backward; interleaved, (PP - 1) / v x the slowest stage's micro-batch.
- Communication (:mod:`twin.twins.workload.comm`): TP, CP, EP, PP and DP by ZeRO stage, every collective
  timed on the fabric by :mod:`twin.twins.net.collectives` (fluid model + NCCL's latency model), so a
  crowded or long fabric shows up in the exposed time.
- Memory (:mod:`twin.compiler.resolve.memory`): bytes per GPU on the fullest stage; validation refuses
  a plan that does not fit, and the result carries the figures.

Predicted TFLOPs/GPU = model FLOPs of the step / (step time x GPUs); beside it, the same in the
workload's measured convention (``flops_convention``) and the measurement (never an input).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from twin.compiler.place.powercap import perf
from twin.compiler.resolve import memory, workload_checks
from twin.lang.diagnostics import SpecError
from twin.lang.site.workload_models import DEFAULT_STACK
from twin.lang.validator import error
from twin.twins.net.nccl import Library
from twin.twins.workload import comm, compute, moe, stragglers
from twin.twins.workload.recipe import Recipe, tp_overlap_applies
from twin.twins.workload.timeline import StepProfile


def rank_layout(gpus: np.ndarray, sizes: dict[str, int], dims: list[str]) -> dict[str, list[np.ndarray]]:
    """Groups of each dimension: the GPU arrays whose ranks differ only in that dimension.

    >>> g = rank_layout(np.arange(8), {"tp": 2, "cp": 1, "pp": 2, "dp": 2}, ["tp", "cp", "pp", "dp"])
    >>> [x.tolist() for x in g["tp"]][:2], [x.tolist() for x in g["dp"]][:2]
    ([[0, 1], [2, 3]], [[0, 4], [1, 5]])
    """
    return {d: rank_groups(gpus, sizes, dims, (d,)) for d in dims}


def rank_groups(gpus: np.ndarray, sizes: dict[str, int], dims: list[str], over: tuple[str, ...]) -> list[np.ndarray]:
    """Groups of ranks that differ only in the dimensions ``over`` (rank order inside a group follows
    ``dims``, fastest first).

    >>> [x.tolist() for x in rank_groups(np.arange(8), {"tp": 2, "cp": 2, "pp": 1, "dp": 2}, ["tp", "cp", "pp", "dp"], ("cp", "dp"))]
    [[0, 2, 4, 6], [1, 3, 5, 7]]
    """
    shape = [sizes[d] for d in reversed(dims)]  # C order: slowest first
    arr = np.asarray(gpus).reshape(shape)
    axes = [len(dims) - 1 - dims.index(d) for d in over]
    keep = [a for a in range(len(dims)) if a not in axes]
    moved = np.transpose(arr, keep + sorted(axes)).reshape(-1, int(np.prod([sizes[d] for d in over])))
    return [row for row in moved]


def place_job(net, n: int, order: str, seed: int, down: set[int]) -> np.ndarray | None:
    servers = [s for s in range(len(net.server_ids)) if s not in down]
    up = net.nic_leaf[net.gpu_nic] >= 0
    if order == "naive":
        rng = np.random.default_rng(seed)
        servers = list(rng.permutation(servers))
    by_server: dict[int, list[int]] = {}
    for gi in np.flatnonzero(up):
        by_server.setdefault(int(net.gpu_server[gi]), []).append(int(gi))
    gpus = [gi for s in servers for gi in by_server.get(int(s), [])]
    if len(gpus) < n:
        return None
    return np.array(gpus[:n], np.int64)


def gpu_of(design, kernel_share: float | None = None) -> compute.Gpu:
    """The design's GPU at its rack's power cap, keeping ``kernel_share`` of its benchmark kernel speed
    (a software stack's; default: the default stack's)."""
    ch = design.spec.chassis
    if kernel_share is None:
        st = design.spec.catalog.stacks.get(DEFAULT_STACK)
        kernel_share = st.kernel_share if st is not None else 1.0
    return compute.Gpu.of(ch, perf(ch, design.spec.rack.gpu_power_cap) * kernel_share)


def step_profile(job: dict, scheme: str | None = None) -> StepProfile:
    """The shared :class:`StepProfile` of a job result (``simulate_job``'s output) under one routing
    scheme (default: the first)."""
    s = next((x for x in job["schemes"] if scheme is None or x["scheme"] == scheme), None)
    if s is None:
        raise KeyError(f"job {job['workload']} has no scheme {scheme!r}")
    return StepProfile(step_s=s["step_s"], compute_s=job["compute_s"], exposed_comm_s=s["exposed_comm_s"],
                       bubble_s=job["bubble_s"], tokens_per_step=job["tokens_per_step"], gpus=job["gpus"])


def with_recipe(design, w, recipe: dict, src, path, checked: bool = True):
    """The workload with a scenario job's recipe fields laid over it, validated and checked as a site's workload is
    (``checked=False``: each field's type and bounds only; the plan search checks the plan's rules itself)."""
    from typing import Annotated

    from pydantic import TypeAdapter, ValidationError

    from twin.lang.site.workload_models import TrainingJob

    upd = {}
    for k, v in recipe.items():  # each field validated by the workload's own type and bounds
        f = TrainingJob.model_fields[k]
        try:
            upd[k] = TypeAdapter(Annotated[f.annotation, *f.metadata] if f.metadata else f.annotation).validate_python(v)
        except ValidationError as e:
            x = e.errors()[0]
            raise SpecError([error(src, path + (k, *x["loc"]), x["msg"], f.description or "a valid value")]) from None
    w2 = w.model_copy(update=upd)
    if not checked:
        return w2
    errs = [error(src, path + tuple(f[1][2:]), f[2], f[3]) for f in workload_checks.one(design.spec, w2, ("workloads", 0))
            if f[0].value == "error"]
    if errs:
        raise SpecError(errs)
    return w2


def _with_workload(design, w):
    import dataclasses

    site = design.spec.site.model_copy(update={"workloads": [w if x.name == w.name else x for x in design.spec.site.workloads]})
    return dataclasses.replace(design, spec=dataclasses.replace(design.spec, site=site))


def _resolved(design, cfg, src, path, workload=None):
    """The job's design (with its recipe's workload), workload and recipe; a located error for a job that
    names what the site does not have."""
    if design is None:
        raise SpecError([error(src, path, "jobs need a site design (its workloads)")])
    wl = {w.name: w for w in design.spec.site.workloads}
    if workload is not None:  # a what-if plan of a site workload (twin plan): not looked up by name
        wl[cfg.workload] = workload
    if cfg.workload not in wl:
        raise SpecError([error(src, path + ("workload",), f"unknown workload '{cfg.workload}'", ", ".join(sorted(wl)) or "a workload of the site")])
    w = wl[cfg.workload]
    if getattr(cfg, "recipe", None):
        w = with_recipe(design, w, cfg.recipe, src, path + ("recipe",))
        design = _with_workload(design, w)
    stacks = design.spec.catalog.stacks
    if (w.stack or DEFAULT_STACK) not in stacks:
        raise SpecError([error(src, path + ("workload",), f"workload {w.name}: unknown software stack '{w.stack or DEFAULT_STACK}'",
                               "one of: " + ", ".join(sorted(stacks)))])
    r = Recipe.of(w, stacks, cfg)
    if r.overlap_tp and not tp_overlap_applies(r.tp, r.sequence_parallel, workload_checks.domain_of(design.spec)):
        # the stack's TP overlap (userbuffers) splits sequence parallelism's exchanges inside one NVLink domain only;
        # a workload that states it beyond is refused by its checks, a stack's default simply does not apply
        r = dataclasses.replace(r, overlap_tp=())
    return design, w, r


def refuse_before_fabric(design, cfg, schemes, src, path) -> None:
    """Refuse a job whose expert all-to-all a hashed scheme in ``schemes`` could not time, before the fabric
    is compiled for it: n(n - 1) transfers in each of its GPUs / EP groups, past ``collective_transfers``
    for any scheme that does not fold equal blocks (:mod:`twin.twins.net.blocks`), whatever the route.
    :func:`simulate_job` would refuse it too, once the whole fabric was compiled (gigawatt-campus: the
    build's default twin said so after ~17 CPU seconds of compiling a million GPUs' paths)."""
    from twin.lang import limits
    from twin.twins.net import blocks

    _, w, _ = _resolved(design, cfg, src, path)
    if not (compute.Shape.of(w, cfg.kv_heads).moe and w.ep > 1):
        return
    groups = w.gpus // w.ep
    for s in schemes:
        if s.kind in blocks.SPRAYED:
            continue
        try:
            limits.check("collective_transfers", blocks.transfers_estimate("alltoall", "direct", w.ep, 1, groups),
                         f"transfers in a phase of the expert all-to-all over {groups:,} group(s) of {w.ep:,} ranks")
        except ValueError as e:
            raise SpecError([error(src, path + ("workload",), f"job {w.name} ({w.gpus:,} GPUs), scheme {s.name}: {e}",
                                   "a smaller job or EP group, or raise the limit it names")]) from None


def simulate_job(design, net, cfg, schemes, lib: Library, case, down: set[int], src, path, workload=None) -> dict:
    design, w, r = _resolved(design, cfg, src, path, workload)
    if "dp_overlap" in getattr(cfg, "model_fields_set", ()) and not (r.overlap_grad_reduce or r.overlap_param_gather):
        raise SpecError([error(src, path + ("dp_overlap",), f"dp_overlap {cfg.dp_overlap:g} is the share of a micro-batch that hides the "
                               f"data-parallel collectives, but this job overlaps neither (overlap_grad_reduce and overlap_param_gather "
                               f"are off for it; stack {r.stack})", "overlap_grad_reduce or overlap_param_gather true in the job or its workload, or no dp_overlap")])
    per_stage = -(-w.layers // w.pp)
    if r.virtual_stages > per_stage:
        raise SpecError([error(src, path + ("virtual_stages",), f"{r.virtual_stages} interleaved chunks per GPU, but a stage holds at "
                               f"most {per_stage} layer(s)", f"at most {per_stage}")])
    try:
        gpu = gpu_of(design, r.kernel_share)
    except ValueError as e:
        raise SpecError([error(src, path + ("workload",), str(e), "chassis hbm_bandwidth and kernels in the catalog")]) from None
    n = w.gpus
    gpus = place_job(net, n, cfg.order, cfg.seed, down)
    if gpus is None:
        raise SpecError([error(src, path + ("workload",), f"job needs {n:,} GPUs, the case leaves {int((net.nic_leaf[net.gpu_nic] >= 0).sum()):,}")])
    dims = r.dims.split("-")
    sizes = {"tp": w.tp, "cp": w.cp, "pp": w.pp, "dp": w.dp}
    groups = rank_layout(gpus, sizes, dims)
    shape = compute.Shape.of(w, cfg.kv_heads)
    c = compute.training(gpu, shape, r, moe.expert_work(r, "experts" in r.fp8) if shape.moe else None)
    m = r.microbatches
    v = r.virtual_stages
    t_f, t_b, t_r = c.forward.seconds, c.backward.seconds, c.recompute.seconds
    t_compute = m * c.microbatch_s + c.optimizer_s
    bubble = c.bubble_s(w.pp, v, r.pipeline_schedule)
    # the slowest of the job's ranks sets every synchronous step (stragglers.py); none stated: every rank at its nominal rate
    slow = stragglers.expected_max(r.stragglers[0], r.stragglers[1], w.gpus) if r.stragglers else 0.0
    straggle = slow * (t_compute + bubble)
    grad_groups = rank_groups(gpus, sizes, dims, ("cp", "dp")) if w.cp * w.dp > 1 else []
    g = comm.Groups(groups["tp"], groups["cp"], groups["pp"], grad_groups,
                    moe.ep_groups(grad_groups, w.ep) if shape.moe and w.ep > 1 else [],
                    w.tp > 1 and all(len(set(net.gpu_server[x].tolist())) == 1 for x in groups["tp"][:64]))
    mem = memory.training(shape, memory.Plan.of(w, r.fused_attention, dualpipe=r.pipeline_schedule == "dualpipe",
                                                   optimizer_bytes=r.optimizer_bytes, grad_bytes=r.grad_bytes),
                          design.spec.chassis.gpu_memory or 0.0)
    tokens = w.global_batch * w.sequence_length
    nvls = bool(design.spec.chassis.nvls)
    cache: dict = {}
    per_scheme = []
    for s in schemes:
        try:
            x = comm.time_comm(net, g, r, shape, c, s, lib, nvls, cache)
        except ValueError as e:  # a collective the network twin refuses (its cost) or cannot time: never 0 s
            raise SpecError([error(src, path + ("workload",), f"job {w.name} ({n:,} GPUs), scheme {s.name}: {e}",
                                   "a smaller job or EP group, or raise the limit it names")]) from None
        step = t_compute + bubble + straggle + x["exposed_comm_s"]
        tflops = c.model_flops_per_step / step / n / 1e12
        per_scheme.append({
            "scheme": s.name, "step_s": step, "exposed_fraction": x["exposed_comm_s"] / step, **x,
            "predicted_tflops_per_gpu": tflops,
            "predicted_mfu": tflops / (gpu.peak / 1e12),
            "predicted_convention_tflops_per_gpu": c.convention_flops_per_step / step / n / 1e12,
            "tokens_per_s": tokens / step,
        })
    zones = sorted({int(net.server_zone[net.gpu_server[x]]) for x in gpus[:: max(1, len(gpus) // 512)]})
    buildings = sorted({int(net.server_building[net.gpu_server[x]]) for x in gpus[:: max(1, len(gpus) // 512)]})
    measured = w.measured if w.measured is not None else (w.mfu * design.spec.chassis.gpu_peak_tflops if w.mfu else None)
    act = c.tokens_per_microbatch * shape.hidden * 2
    return {
        "workload": w.name, "order": cfg.order, "dims": r.dims, "gpus": n,
        "parallelism": f"TP{w.tp} CP{w.cp} PP{w.pp} DP{w.dp}" + (f" EP{w.ep}" if w.ep > 1 else "")
        + (f", ZeRO shards of {r.dp_shard} x {w.dp * w.cp // r.dp_shard} replicas" if r.zero and 0 < r.dp_shard < w.dp * w.cp else ""),
        "sequence_length": w.sequence_length, "stack": r.stack, "stack_defaulted": r.stack_defaulted,
        "recipe": {"micro_batch": r.micro_batch, "recompute": list(r.recompute), "zero": r.zero, "dp_shard": r.dp_shard or None,
                   "sequence_parallel": r.sequence_parallel,
                   "overlap_grad_reduce": r.overlap_grad_reduce, "overlap_param_gather": r.overlap_param_gather, "fp8": list(r.fp8),
                   "cp_comm": r.cp_comm, "kernel_share": r.kernel_share, "attention": "fused" if r.fused_attention else "unfused"},
        "microbatches": m, "virtual_stages": v, "compute_s": t_compute, "bubble_s": bubble,
        "straggler_s": straggle, "stragglers": {"distribution": r.stragglers[0], "mean": r.stragglers[1], "expected_max": slow}
        if r.stragglers else None,
        "microbatch_forward_s": t_f, "microbatch_backward_s": t_b, "microbatch_recompute_s": t_r, "optimizer_s": c.optimizer_s,
        "layers_on_slowest_stage": c.layers,
        "compute_breakdown_s": {k: m * (getattr(c.forward, k) + getattr(c.backward, k) + getattr(c.recompute, k))
                                for k in ("gemm_s", "attention_s", "memory_s")},
        "model_flops_per_step": c.model_flops_per_step, "tokens_per_step": tokens,
        "flops_convention": w.flops_convention, "convention_flops_per_step": c.convention_flops_per_step,
        "measured_tflops_per_gpu": measured, "memory": mem.as_dict(),
        "dp_shard_bytes": (shape.replicated_params / w.tp + shape.routed_params / w.ep) / w.pp * w.bytes_per_param,
        "tp_message_bytes": act, "cp_kv_bytes": 2 * w.sequence_length * shape.kv_dim / min(w.tp, shape.kv_heads) * 2 if w.cp > 1 else 0.0,
        "zones_used": len(zones), "buildings_used": len(buildings),
        "schemes": per_scheme,
    }
