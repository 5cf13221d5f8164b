"""The GEMMs beside a ring-exchanged TP collective run in TP chunks (compute.ring_gemms).

Transformer Engine's userbuffers, as Megatron-Bridge's H100 configurations run them ([megatron-bridge-perf-scripts]),
overlap the all-gather before the QKV and first MLP GEMMs, the reduce-scatter after the projection and the second
MLP GEMM, and the gradient's all-gather before the projection's and second MLP GEMM's data gradients by ring
exchange: each of those GEMMs runs as TP GEMMs of 1/TP of its rows, each quantized into waves on its own
([megatron-bridge-perf-guide]: "aggregated GEMM wave quantization").
"""

from __future__ import annotations

import pytest

from tests.conftest import compiled
from twin.compiler.resolve.transformer import Shape
from twin.twins.workload import compute

LLAMA_405B = Shape(layers=126, hidden=16384, ffn=53248, heads=128, kv_heads=8, vocab=128256)


@pytest.fixture(scope="module")
def h100():
    d = compiled("lab-2zone")  # a lab H100 chassis: the DGX H100's kernels, 132 SMs
    return compute.Gpu.of(d.spec.chassis)


def test_a_chunk_of_512_rows_loses_its_last_wave(h100):
    """405B's first MLP GEMM at TP 8 and CP 2 (4,096 rows): 512-row chunks of 208 tiles of 256 x 128 fill 1.58 waves of
    132 SMs, the whole GEMM's 1,664 tiles 12.6 waves; 70B's at TP 4 (8,192 rows, 2,048-row chunks) keeps its rate."""
    m, n, k = 4096, 2 * 53248 / 8, 16384
    whole = h100.gemm(m, n, k, fp8=True)
    chunks = 8 * h100.gemm(m / 8, n, k, fp8=True)
    assert chunks / whole == pytest.approx((1664 / (13 * 132)) / (208 / (2 * 132)), rel=0.02)  # the two waves' fill
    assert chunks > 1.15 * whole
    m, n, k = 8192, 2 * 28672 / 4, 8192
    assert 4 * h100.gemm(m / 4, n, k, fp8=True) == pytest.approx(h100.gemm(m, n, k, fp8=True), rel=0.01)


def test_only_the_overlapped_gemms_are_chunked_and_only_with_tp(h100):
    """One layer of 405B at TP 8 and CP 2 (4,096 tokens), forward: only the GEMMs a ring exchange feeds or follows run
    in chunks; the FLOPs, the attention kernel and the memory-bound kernels are the same."""
    tokens, context = 4096, 4096 / 2
    fp8 = ("qkv", "proj", "fc1", "fc2")

    def layer(overlap, tp=8, backward=False):
        ring = compute.ring_gemms(overlap, tp, True, backward)
        return compute.total(compute.layer_work(h100, LLAMA_405B, tokens, context, tp, backward, 8192, 1, True, True, fp8, ring).values())

    plain, ag, both = layer(()), layer(("allgather",)), layer(("allgather", "reducescatter"))
    # the gather's GEMMs lose (the first MLP GEMM's chunk fills 1.58 waves); the reduce-scatter's, 256 tiles of 16,384
    # columns per chunk (1.94 waves), keep their rate
    assert ag.gemm_s > 1.05 * plain.gemm_s and both.gemm_s == pytest.approx(ag.gemm_s, rel=1e-3)
    assert (both.flops, both.attention_s, both.memory_s) == (plain.flops, plain.attention_s, plain.memory_s)
    # backward, the gradient's all-gather feeds two data-gradient GEMMs: those change, the weight gradients do not
    assert layer(("allgather",), backward=True).gemm_s != layer((), backward=True).gemm_s
    assert layer(("reducescatter",), backward=True).gemm_s == layer((), backward=True).gemm_s
    # without TP nothing is exchanged, so nothing is split
    assert layer(("allgather", "reducescatter"), tp=1).gemm_s == layer((), tp=1).gemm_s
