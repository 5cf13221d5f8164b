"""Bad training recipes and plans that do not fit are located errors (exit 2), never tracebacks.

Known answers and their sources:
- A 175B GPT-3 (Brown et al. 2020: 96 layers, hidden 12,288, 96 heads) holds 16 bytes of model state per
  parameter under mixed-precision Adam ([zero-sc20] s3.1): 2.8 TB at TP1 PP1, 35 times an 80 GB GPU.
- Llama 3 405B trains 8K-token sequences without activation checkpointing on 80 GB H100s at TP8 PP16
  ([llama3] s3.3.2): the memory model fits all three Table 4 plans.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from twin.cli.app import app
from twin.compiler.resolve.validate import validate_text

LAB = "sites/lab-2zone.yaml"
GPT3 = """workloads:
  - name: gpt3-175b
    parameters: 175B
    family: gpt
    layers: 96
    hidden_size: 12288
    heads: 96
    vocab_size: 51200
    sequence_length: 2048
    global_batch: 64
    tp: 1
    pp: 1
    dp: 8
    stack: megatron-lm-2021
"""


def lab_with(root, workloads: str) -> str:
    text = (root / LAB).read_text()
    return text[: text.index("workloads:")] + workloads


def errors(text: str) -> list:
    spec, diags = validate_text(text, "w.yaml")
    assert spec is None
    return [d for d in diags if d.severity.value == "error"]


def _line(text: str, needle: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if needle in t)


@pytest.mark.parametrize("extra, field, needle, words", [
    ("    recompute: [core-attention, experts]\n", "workloads[0].recompute[1]", "recompute:", "no MoE layer"),
    ("    moe: {experts: 10, top_k: 2}\n    ep: 4\n", "workloads[0].ep", "ep: 4", "10 experts do not divide over EP4"),
    ("    micro_batch: 16\n", "workloads[0].micro_batch", "micro_batch", "larger than the batch of each data-parallel replica (64 / DP8 = 8)"),
    ("    virtual_stages: 17\n", "workloads[0].virtual_stages", "virtual_stages", "a stage holds at most 16 layer(s)"),
    ("    stack: pytorch-2030\n", "workloads[0].stack", "stack:", "unknown software stack 'pytorch-2030'"),
    ("    ep: 2\n", "workloads[0].ep", "ep: 2", "expert parallelism needs moe:"),
    ("    sequence_parallel: false\n    overlap_tp: [allgather]\n", "workloads[0].overlap_tp", "overlap_tp", "userbuffers do not split"),
    # a stack that cannot overlap: Megatron-LM 2021 ran no sequence parallelism ([megatron-sc21] s3; it came in 2022)
    ("    stack: megatron-lm-2021\n    overlap_tp: [allgather]\n", "workloads[0].overlap_tp", "overlap_tp",
     "stack megatron-lm-2021 runs no sequence parallelism"),
    ("    overlap_ep: true\n", "workloads[0].overlap_ep", "overlap_ep", "expert all-to-alls, but this workload has none"),
    ("    pipeline_schedule: dualpipe\n    virtual_stages: 2\n", "workloads[0].pipeline_schedule", "pipeline_schedule",
     "DualPipe runs two stages per GPU"),
])
def test_bad_recipe_is_a_located_error(root, extra, field, needle, words):
    text = (root / LAB).read_text().rstrip("\n") + "\n" + extra
    errs = errors(text)
    assert [d.dotted for d in errs] == [field], [d.format() for d in errs]
    assert words in errs[0].message and errs[0].line == _line(text, needle) and errs[0].file == "w.yaml"


def test_tp_overlap_across_nvlink_domains_is_a_located_error(root):
    """A GPU that cannot overlap: TP16 over two 8-GPU servers, whose exchanges userbuffers cannot reach (they share NVLink
    peer memory inside one domain); TP over the network alone stays a warning."""
    text = (root / LAB).read_text().replace("    tp: 8\n    pp: 2\n    dp: 8", "    tp: 16\n    pp: 2\n    dp: 4").rstrip("\n")
    errs = errors(text + "\n    overlap_tp: [allgather]\n")
    assert [d.dotted for d in errs] == ["workloads[0].overlap_tp"] and "TP16 spans NVLink domains of 8" in errs[0].message
    assert errs[0].line == _line(text + "\n    overlap_tp: [allgather]\n", "overlap_tp") and "tp <= 8" in errs[0].expected
    spec, _ = validate_text(text + "\n", "w.yaml")
    assert spec is not None


def test_overlap_and_bucket_inputs_are_accepted_where_they_apply(root):
    text = (root / LAB).read_text().rstrip("\n") + "\n    overlap_tp: [reducescatter]\n    overlap_pp: false\n    zero3_bucket: 1 GB\n"
    spec, diags = validate_text(text, "w.yaml")
    assert spec is not None, [d.format() for d in diags]
    w = spec.site.workloads[0]
    assert (w.overlap_tp, w.overlap_pp, w.zero3_bucket) == (["reducescatter"], False, 1e9)


def test_unknown_stack_exits_2_with_the_stacks_it_knows(root, tmp_path):
    path = tmp_path / "lab.yaml"
    path.write_text((root / LAB).read_text().rstrip("\n") + "\n    stack: pytorch-2030\n")
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 2
    assert f"{path}:{_line(path.read_text(), 'pytorch-2030')}:" in res.output
    assert "megatron-lm-2021" in res.output and "meta-production-2024" in res.output


def test_175b_at_tp1_pp1_is_refused_with_the_bytes_it_needs(root, tmp_path):
    text = lab_with(root, GPT3)
    (err,) = errors(text)
    assert err.dotted == "workloads[0]" and err.line == _line(text, "name: gpt3-175b")
    # 20 bytes per parameter of 174.6B (tied embeddings) = 3.49 TB before any activation: Megatron-LM 2021 keeps an FP32
    # copy of every gradient beside the 12 bytes of master weights and Adam moments ([megatron-lm-2021-optimizer])
    assert "weights 349.2 + gradients 349.2 + optimizer 2,793.2" in err.message
    # the H100's 80 GB are 81,559 MiB as CUDA reports them ([gpu-capacity])
    assert "more than the H100-SXM's 85.5 GB HBM" in err.message and "no micro-batch fits: the model state alone exceeds it" in err.message
    needed = int(err.message.split("(")[1].split(" bytes")[0].replace(",", ""))
    assert needed > 35 * 80e9
    path = tmp_path / "gpt3.yaml"
    path.write_text(text)
    res = CliRunner().invoke(app, ["validate", str(path)])
    assert res.exit_code == 2 and "the plan needs" in res.output


def test_a_plan_that_fits_only_smaller_names_the_largest_micro_batch(root):
    # Llama 3 8B at TP8 PP2: 32 sequences of 8K per micro-batch, two micro-batches in flight on the first
    # stage, hold 16 layers x 2 x 32 x 8,192 tokens x 17.4 KB = 146 GB of activations besides 8 GB of state
    lab = (root / LAB).read_text().replace("global_batch: 64", "global_batch: 512").rstrip("\n")
    (err,) = errors(lab + "\n    micro_batch: 32\n")
    assert "the largest micro-batch that fits is " in err.message
    best = int(err.message.split("the largest micro-batch that fits is ")[1].split(";")[0])
    assert 8 <= best < 32 and f"micro_batch: {best}" in err.expected
    ok = lab + f"\n    micro_batch: {best}\n"
    spec, diags = validate_text(ok, "w.yaml")
    assert spec is not None


def test_llama3_table4_plans_fit_without_recomputation(meta24k):
    from twin.compiler.resolve import memory
    from twin.compiler.resolve.transformer import Shape

    hbm = 81559 * 2**20  # what CUDA reports for an H100's 80 GB ([gpu-capacity], the catalog's H100-SXM)
    fp32 = memory.grad_bytes(True)  # [llama3] s3.3.2: gradients accumulated and reduce-scattered in FP32
    for w in meta24k.spec.site.workloads:
        assert w.recompute == "none"
        m = memory.training(Shape.of(w), memory.Plan.of(w, grad_bytes=fp32), hbm)
        assert m.fits and 40e9 < m.total < hbm - memory.RESERVE_BYTES, (w.name, m.total)
        # without ZeRO the FP32 optimizer states alone (12 B x 3.2B parameters per GPU) would not leave room
        assert not memory.training(Shape.of(w), memory.Plan.of(w.model_copy(update={"zero": 0}), grad_bytes=fp32), hbm).fits


def test_more_stages_than_layers_is_a_located_error(root):
    """A pipeline of more stages than the model has layers leaves stages empty: refused where PP is written (the
    memory model would otherwise hold a first stage of no layers)."""
    text = lab_with(root, GPT3.replace("layers: 96", "layers: 3").replace("    pp: 1\n    dp: 8", "    pp: 4\n    dp: 2"))
    (e,) = errors(text)
    assert e.line == _line(text, "pp: 4") and "PP4 over 3 layers" in e.message and "pp <= 3" in e.expected


@pytest.mark.parametrize("stack, layers, warned", [
    ("meta-production-2024", 126, False),  # [llama3] s3.3.2: 126 layers on 16 stages, the first and the last one short
    ("meta-production-2024", 125, True),   # three layers short: a stage more than the ends is short
    ("megatron-lm-2021", 126, True),       # a stack without uneven stages: 126 over 16 is unbalanced
])
def test_uneven_stages_warn_only_where_the_stack_does_not_balance_them(root, stack, layers, warned):
    text = lab_with(root, GPT3.replace("layers: 96", f"layers: {layers}").replace("    pp: 1\n    dp: 8", "    pp: 16\n    dp: 1")
                    .replace("global_batch: 64", "global_batch: 16").replace("stack: megatron-lm-2021", f"stack: {stack}")
                    .replace("    tp: 1\n", "    tp: 8\n"))
    spec, diags = validate_text(text, "w.yaml")
    found = [d for d in diags if "do not split evenly over PP16" in d.message]
    assert [d.line for d in found] == ([_line(text, "pp: 16")] if warned else []), [d.message for d in diags]


def test_fp8_on_a_stack_that_trains_in_bf16_warns_where_it_is_written(root):
    """Meta's 2024 stack trains in BF16 ([llama3] s3.3.2: BF16 MFU; its catalog plans: fp8: false): a workload that
    writes FP8 on it is timed as written, with a warning at its fp8; on Megatron-Core (FP8 recipes) it is not."""
    base = GPT3.replace("    tp: 1\n    pp: 1\n    dp: 8", "    tp: 8\n    pp: 1\n    dp: 1").replace("global_batch: 64", "global_batch: 8") + "    fp8: linear\n"
    for stack, warned in (("meta-production-2024", True), ("megatron-core-2025", False)):
        text = lab_with(root, base.replace("stack: megatron-lm-2021", f"stack: {stack}"))
        spec, diags = validate_text(text, "w.yaml")
        found = [d for d in diags if "trains in BF16" in d.message]
        assert [(d.line, d.severity.value) for d in found] == ([(_line(text, "fp8: linear"), "warning")] if warned else []), \
            [d.message for d in diags]
