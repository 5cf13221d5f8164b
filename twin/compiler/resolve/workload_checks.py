"""Checks of the site's training jobs against the site and the catalog: the parallel layout, the recipe
(micro-batch, interleaving, recomputation, experts over EP, FP8), the software stack, and whether the plan
fits in the GPU's memory (:mod:`twin.compiler.resolve.memory`). Each finding is
``(severity, path, message, expected)``; :mod:`twin.compiler.resolve.validate` attaches positions.
"""

from __future__ import annotations

from collections.abc import Iterator

from twin.compiler.resolve import memory
from twin.compiler.resolve.spec import Spec
from twin.compiler.resolve.transformer import Shape
from twin.lang.diagnostics import Severity
from twin.lang.site.workload_models import DEFAULT_STACK

Finding = tuple[Severity, tuple, str, str]
E, W = Severity.ERROR, Severity.WARNING


def workloads(spec: Spec) -> Iterator[Finding]:
    for i, j in enumerate(spec.site.workloads):
        yield from one(spec, j, ("workloads", i))


def one(spec: Spec, j, base: tuple) -> Iterator[Finding]:
    """The checks of one training job (a site's workload, or a scenario job's recipe laid over it) at ``base``."""
    found = [*_layout(spec, j, base), *_recipe(spec, j, base), *_measured(spec, j, base)]
    yield from found
    if not any(f[0] is E for f in found):
        yield from _memory(spec, j, base)


def domain_of(spec: Spec) -> int:
    """GPUs of one NVLink domain (0: the chassis states none)."""
    return min(spec.chassis.domain, spec.chassis.gpus) if spec.chassis.gpus else 0


def _ends_short(spec: Spec, j) -> bool:
    """Whether the job's stack runs uneven stages (catalog ``plans: uneven_stages``) and its layers leave only the
    first and the last stage short, by one layer each at most: the stages balanced as [llama3] s3.3.2 balances
    126 layers over 16 (the embedding and the output layer in place of a layer), not unbalanced.

    >>> from types import SimpleNamespace as NS
    >>> spec = NS(catalog=NS(stacks={"s": NS(plans=NS(uneven_stages=True)), "t": NS(plans=NS(uneven_stages=False))}))
    >>> [_ends_short(spec, NS(stack=s, layers=n, pp=16)) for s, n in (("s", 126), ("s", 127), ("s", 125), ("t", 126))]
    [True, True, False, False]
    """
    st = spec.catalog.stacks.get(j.stack or DEFAULT_STACK)
    return bool(st is not None and st.plans.uneven_stages and j.pp * -(-j.layers // j.pp) - j.layers <= 2)


def _layout(spec: Spec, j, base: tuple) -> Iterator[Finding]:
    if j.gpus > spec.gpus:
        yield E, base, f"TP{j.tp} x CP{j.cp} x PP{j.pp} x DP{j.dp} = {j.gpus:,} GPUs, the site has {spec.gpus:,}", f"at most {spec.gpus:,} GPUs"
    domain = domain_of(spec)
    if domain and j.tp > domain:
        yield W, base + ("tp",), f"TP{j.tp} spans NVLink domains ({domain} GPUs each): tensor parallelism over the network", f"tp <= {domain}"
    if j.global_batch % j.dp:
        yield E, base + ("global_batch",), f"global batch {j.global_batch} does not divide over DP{j.dp}", f"a multiple of {j.dp}"
    if j.pp > j.layers:
        yield E, base + ("pp",), f"PP{j.pp} over {j.layers} layers: some stages would hold no layer", f"pp <= {j.layers}"
    elif j.layers % j.pp and not _ends_short(spec, j):
        yield W, base + ("pp",), f"{j.layers} layers do not split evenly over PP{j.pp}; stages are unbalanced", f"a divisor of {j.layers}"
    if j.hidden_size % j.tp:
        yield E, base + ("tp",), f"hidden size {j.hidden_size} does not split over TP{j.tp}", f"a divisor of {j.hidden_size}"
    if j.heads is not None and j.heads % j.tp:
        yield E, base + ("tp",), f"{j.heads} heads do not split over TP{j.tp}", f"a divisor of {j.heads}"
    if j.ffn_hidden_size is not None and j.ffn_hidden_size % j.tp:
        yield E, base + ("tp",), f"FFN size {j.ffn_hidden_size} does not split over TP{j.tp}", f"a divisor of {j.ffn_hidden_size}"
    if j.sequence_length % (2 * j.cp) and j.cp > 1:
        yield E, base + ("cp",), f"sequence {j.sequence_length} does not split into 2 x CP{j.cp} load-balanced chunks", f"a multiple of {2 * j.cp}"


def _recipe(spec: Spec, j, base: tuple) -> Iterator[Finding]:
    per_replica = j.global_batch // j.dp
    if j.micro_batch > per_replica:
        yield E, base + ("micro_batch",), f"a micro-batch of {j.micro_batch} sequences is larger than the batch of each data-parallel " \
            f"replica ({j.global_batch} / DP{j.dp} = {per_replica})", f"at most {per_replica}"
    elif per_replica % j.micro_batch:
        yield E, base + ("micro_batch",), f"the batch of each replica ({per_replica}) is not a whole number of micro-batches of {j.micro_batch}", \
            f"a divisor of {per_replica}"
    per_stage = -(-j.layers // j.pp)
    if j.virtual_stages > per_stage:
        yield E, base + ("virtual_stages",), f"{j.virtual_stages} interleaved chunks per GPU, but a stage holds at most {per_stage} " \
            f"layer(s) ({j.layers} layers over PP{j.pp})", f"at most {per_stage}"
    if j.virtual_stages > 1 and j.pp == 1:
        yield E, base + ("virtual_stages",), "interleaving needs pipeline parallelism (PP > 1)", "virtual_stages: 1 or pp > 1"
    chunk = j.chunk_layers
    if j.recompute_layers and j.recompute != "full":
        yield E, base + ("recompute_layers",), f"recompute_layers ({j.recompute_layers}) limits full recomputation to the first layers of " \
            f"each model chunk, but recompute is {j.recompute!r}", "recompute: full, or no recompute_layers"
    elif j.recompute_layers and j.recompute_layers > chunk:
        yield E, base + ("recompute_layers",), f"{j.recompute_layers} recomputed layers per model chunk, but a chunk holds at most " \
            f"{chunk} ({j.layers} layers over PP{j.pp} x {j.virtual_stages} virtual stages)", f"at most {chunk}"
    stacks = spec.catalog.stacks
    name = j.stack or DEFAULT_STACK
    if name not in stacks:
        yield E, base + ("stack",), f"unknown software stack '{name}'", "one of: " + ", ".join(sorted(stacks)) if stacks else "a catalog stacks: entry"
    dense = j.moe is None or j.moe.every > 1
    if isinstance(j.recompute, list):
        for k, mod in enumerate(j.recompute):
            if mod == "experts" and j.moe is None:
                yield E, base + ("recompute", k), "recompute 'experts', but the model has no MoE layer", "a module of the model: core-attention, attention, mlp, activation, norm"
            if mod == "mlp" and not dense:
                yield E, base + ("recompute", k), "recompute 'mlp', but every layer's MLP is a mixture of experts (moe.every: 1)", "experts"
    if j.ep > 1 and j.moe is None:
        yield E, base + ("ep",), f"EP{j.ep} without experts: expert parallelism needs moe:", "ep: 1, or a moe: section"
    if j.moe is not None:
        if j.moe.experts % j.ep:
            yield E, base + ("ep",), f"{j.moe.experts} experts do not divide over EP{j.ep}", f"a divisor of {j.moe.experts}"
        if (j.dp * j.cp) % j.ep:
            yield E, base + ("ep",), f"EP{j.ep} is taken from the DP{j.dp} x CP{j.cp} = {j.dp * j.cp} data-parallel ranks, which it does not divide", \
                f"a divisor of {j.dp * j.cp}"
    yield from _shard(j, base)
    fp8 = j.fp8_gemms
    if fp8 and not spec.chassis.gpu_peak_fp8_tflops:
        yield E, base + ("fp8",), f"FP8 GEMMs on {spec.chassis.gpu_model}, which has no FP8 peak in the catalog", "fp8: none, or a chassis with gpu_peak_fp8_tflops"
    elif fp8 and name in stacks and not stacks[name].plans.fp8:
        yield W, base + ("fp8",), f"FP8 GEMMs on stack {name}, which trains in BF16 (its plans: fp8: false): timed as stated, never searched", \
            "fp8: none, or a stack that runs FP8"
    if isinstance(j.fp8, list) and "experts" in j.fp8 and j.moe is None:
        yield E, base + ("fp8",), "FP8 'experts', but the model has no MoE layer", "qkv, proj, fc1, fc2, output"
    if j.overlap_tp and (j.tp == 1 or not j.sequence_parallel):
        why = "TP1 has no TP exchange" if j.tp == 1 else "without sequence parallelism TP exchanges are all-reduces, which userbuffers do not split"
        yield E, base + ("overlap_tp",), f"TP communication overlap ({', '.join(j.overlap_tp)}), but {why}", \
            "overlap_tp: [] or tp > 1 with sequence_parallel: true"
    elif j.overlap_tp and name in stacks and True not in stacks[name].plans.sequence_parallel:
        yield E, base + ("overlap_tp",), f"TP communication overlap ({', '.join(j.overlap_tp)}), but stack {name} runs no sequence "\
            "parallelism, whose all-gathers and reduce-scatters userbuffers overlap", "overlap_tp: [], or a stack that runs it (megatron-core-2025)"
    elif j.overlap_tp and domain_of(spec) and j.tp > domain_of(spec):
        yield E, base + ("overlap_tp",), f"TP communication overlap ({', '.join(j.overlap_tp)}), but TP{j.tp} spans NVLink domains of "\
            f"{domain_of(spec)} {spec.chassis.gpu_model} GPUs: userbuffers exchange through NVLink peer memory", f"overlap_tp: [], or tp <= {domain_of(spec)}"
    if j.pipeline_schedule == "dualpipe" and j.pp > 1 and (j.pp % 2 or j.virtual_stages > 1):
        yield E, base + ("pipeline_schedule",), f"DualPipe runs two stages per GPU from both ends of an even pipeline, without "\
            f"interleaving; this workload has PP{j.pp} and {j.virtual_stages} virtual stage(s)", "pp even and virtual_stages: 1, or pipeline_schedule: 1f1b"
    if j.overlap_ep is True and not (j.moe and j.ep > 1):
        yield E, base + ("overlap_ep",), "overlap_ep hides expert all-to-alls, but this workload has none (no moe, or ep 1)", \
            "moe with ep > 1, or no overlap_ep"
    if j.overlap_cp is True and j.cp > 1 and j.cp_comm == "all-gather":
        yield E, base + ("overlap_cp",), "overlap_cp hides a CP ring behind attention, but cp_comm is all-gather (gathered before attention)", \
            "cp_comm: ring, or no overlap_cp"
    if j.attention_window is not None and j.cp > 1 and j.cp_comm == "all-gather":
        yield W, base + ("attention_window",), "a sliding window with all-gather CP gathers keys no query needs", "cp_comm: ring"


def shard_problem(shard: int | None, dp: int, cp: int, ep: int, zero: int) -> tuple[str, str] | None:
    """(what, expected) when a hybrid shard group cannot be: ZeRO 0 shards nothing, and a shard group divides
    the data-parallel ranks and holds whole EP groups (each replica holds every expert); None when it can."""
    ranks = dp * cp
    if shard is None:
        return None
    if zero == 0:
        return f"dp_shard {shard} shards ZeRO's states, but ZeRO 0 shards none (every rank holds them all)", "zero: 1, 2 or 3, or no dp_shard"
    if ranks % shard:
        return f"a shard group of {shard} ranks does not divide the DP{dp} x CP{cp} = {ranks} data-parallel ranks", f"a divisor of {ranks}"
    if shard % ep:
        return f"a shard group of {shard} ranks holds no whole number of EP{ep} groups (each replica must hold every expert)", \
            f"a multiple of {ep} dividing {ranks}"
    return None


def _shard(j, base: tuple) -> Iterator[Finding]:
    if (bad := shard_problem(j.dp_shard, j.dp, j.cp, j.ep, j.zero)) is not None:
        yield E, base + ("dp_shard",), *bad


def _measured(spec: Spec, j, base: tuple) -> Iterator[Finding]:
    peak = spec.chassis.gpu_peak_tflops
    if j.measured is not None and j.measured > peak:
        key = "measured_tflops_per_gpu" if j.measured_tflops_per_gpu is not None else "tflops_per_gpu"
        yield E, base + (key,), f"a measured rate of {j.measured:g} TFLOPs/GPU is above the {spec.chassis.gpu_model} peak of {peak:g}", f"at most {peak:g}"
    if j.tflops_per_gpu is not None:
        yield W, base + ("tflops_per_gpu",), "tflops_per_gpu is deprecated: it is a measured figure the twin compares with, never the rate of its math", "measured_tflops_per_gpu"
    if j.mfu is not None:
        yield W, base + ("mfu",), "mfu is deprecated: the twin predicts MFU from its compute model; state a measurement as measured_tflops_per_gpu", "measured_tflops_per_gpu"


def _memory(spec: Spec, j, base: tuple) -> Iterator[Finding]:
    hbm = spec.chassis.gpu_memory
    if not hbm:
        return
    st = spec.catalog.stacks[j.stack or DEFAULT_STACK]
    fused, dual = st.attention == "fused", (j.pipeline_schedule or st.pipeline_schedule) == "dualpipe"
    shape = Shape.of(j)
    grad = memory.grad_bytes(st.grad_reduce_fp32 if j.grad_reduce_fp32 is None else j.grad_reduce_fp32)
    m = memory.training(shape, memory.Plan.of(j, fused, dualpipe=dual, optimizer_bytes=st.optimizer_bytes, grad_bytes=grad), hbm)
    if m.fits:
        return
    best = memory.largest_micro_batch(shape, j, hbm, fused, dual, st.optimizer_bytes, grad)
    gb = 1e9
    parts = (f"weights {m.weights / gb:,.1f} + gradients {m.grads / gb:,.1f} + optimizer {m.optimizer / gb:,.1f} + activations "
             f"{m.activations / gb:,.1f} GB for {m.inflight:g} micro-batch(es) in flight" + (f" + logits {m.logits / gb:,.1f} GB" if m.logits else ""))
    fit = (f"the largest micro-batch that fits is {best}" if best else
           "no micro-batch fits" + (": the model state alone exceeds it" if m.state > hbm - memory.RESERVE_BYTES else ""))
    yield E, base, (f"the plan needs {m.total / gb:,.1f} GB per GPU ({m.total:,.0f} bytes: {parts}), more than the {spec.chassis.gpu_model}'s "
                    f"{hbm / gb:,.1f} GB HBM less a {memory.RESERVE_BYTES / gb:g} GB reserve; {fit}"), \
        "more TP or PP, ZeRO sharding (zero:), activation recomputation (recompute:)" + (f", or micro_batch: {best}" if best and best < j.micro_batch else "")
