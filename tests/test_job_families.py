"""Model families: dense GPT (GELU, learned or ALiBi positions, parallel attention + MLP), Llama (SwiGLU,
GQA, RoPE), sliding-window attention and mixture of experts, each reaching parameters, FLOPs, kernels,
TP exchanges and memory.

Known answers and their sources:
- GPT-3 175B (Brown et al. 2020, Table 2.1: 96 layers, d_model 12,288, 96 heads): 12 h^2 per layer, 174.6B
  parameters with a tied 50K-token embedding.
- Llama 3 405B ([llama3] Table 3): 126 layers, 16,384 hidden, 53,248 FFN (SwiGLU), 8 KV heads: 405B.
- Mixtral 8x7B (Jiang et al. 2024, arXiv 2401.04088): 32 layers, hidden 4,096, FFN 14,336, 8 experts, top-2,
  8 KV heads, 32K vocabulary: 46.7B parameters, 12.9B active per token.
- A sliding window of w keys over a causal sequence of s tokens: each query attends to w - w^2 / (2 s) keys
  on average (exact sum of min(i, w) over i = 1..s, divided by s, for large s).
"""

from __future__ import annotations

import pytest

from twin.compiler.resolve import memory
from twin.compiler.resolve.transformer import Shape
from twin.lang.site.workload_models import Moe, TrainingJob
from twin.twins.workload import compute
from twin.twins.workload.recipe import Recipe

GPU = compute.Gpu(989e12, 3.35e12, 0.83, 64, 0.66, 207, 0.87, 0.9)


def job(**kw) -> TrainingJob:
    base = dict(name="j", parameters=1e9, layers=32, hidden_size=4096, sequence_length=4096, global_batch=8, heads=32)
    return TrainingJob(**{**base, **kw})


def test_family_defaults_and_overrides():
    gpt = Shape.of(job(family="gpt", vocab_size=50257))
    assert (gpt.mlp, gpt.positions, gpt.dropout, gpt.tied, gpt.ffn) == ("gelu", "learned", True, True, 4 * 4096)
    assert gpt.layer_params == 12 * 4096**2
    llama = Shape.of(job(ffn_hidden_size=14336, kv_heads=8))
    assert (llama.mlp, llama.positions, llama.dropout, llama.kv_dim) == ("swiglu", "rope", False, 1024)
    assert llama.layer_params == 4096 * (4096 + 2 * 1024) + 4096**2 + 3 * 4096 * 14336
    alibi = Shape.of(job(family="gpt", positions="alibi", mlp="swiglu", ffn_hidden_size=11008))
    assert (alibi.positions, alibi.mlp, alibi.mlp_mats) == ("alibi", "swiglu", 3)


def test_published_parameter_counts():
    g3 = Shape.of(job(family="gpt", parameters=175e9, layers=96, hidden_size=12288, heads=96, vocab_size=50257))
    assert g3.total_params == pytest.approx(174.6e9, rel=0.005)
    l3 = Shape.of(job(parameters=405e9, layers=126, hidden_size=16384, ffn_hidden_size=53248, heads=128, kv_heads=8, vocab_size=128256))
    assert l3.total_params == pytest.approx(405e9, rel=0.01)
    mix = Shape.of(job(parameters=46.7e9, layers=32, hidden_size=4096, ffn_hidden_size=14336, kv_heads=8, vocab_size=32000,
                       moe=Moe(experts=8, top_k=2)))
    assert mix.total_params == pytest.approx(46.7e9, rel=0.01)
    assert mix.matmul_params + 4096 * 32000 == pytest.approx(12.9e9, rel=0.02)  # active: two experts (and the embedding)


def test_sliding_window_cuts_attention_work():
    full = Shape.of(job(sequence_length=32768))
    swa = Shape.of(job(sequence_length=32768, attention_window=4096))
    s, w = 32768, 4096
    assert swa.context(s) == pytest.approx(sum(min(i, w) for i in range(1, s + 1)) / s, rel=1e-3)
    assert full.context(s) == s / 2
    r = Recipe(seq=s, global_batch=1)
    a_full = compute.training(GPU, full, r).forward.attention_s
    a_swa = compute.training(GPU, swa, r).forward.attention_s
    assert a_swa == pytest.approx(a_full * swa.context(s) / full.context(s), rel=0.1)
    assert full.model_flops_per_token(s) - swa.model_flops_per_token(s) == pytest.approx(3 * 32 * 4 * (s / 2 - swa.context(s)) * 4096)


def test_parallel_block_exchanges_once_per_layer_and_keeps_one_norm():
    r = Recipe(tp=8, seq=4096, global_batch=1)
    assert r.tp_exchanges(moe=False, parallel_block=True) == {"allgather": 2, "reducescatter": 2, "allreduce": 0}
    assert r.tp_exchanges(moe=False, parallel_block=False) == {"allgather": 4, "reducescatter": 4, "allreduce": 0}
    seq = Shape.of(job(family="gpt"))
    par = Shape.of(job(family="gpt", parallel_block=True))
    f_seq = compute.layer_work(GPU, seq, 4096, 2048, 8, False)
    f_par = compute.layer_work(GPU, par, 4096, 2048, 8, False)
    assert f_par["norm"].memory_s == pytest.approx(f_seq["norm"].memory_s / 2)
    assert f_par["attention"].flops == f_seq["attention"].flops and f_par["mlp"].memory_s < f_seq["mlp"].memory_s


def test_positions_and_mlp_reach_the_memory_bound_kernels():
    rope = compute.layer_work(GPU, Shape.of(job()), 4096, 2048, 1, False)
    learned = compute.layer_work(GPU, Shape.of(job(positions="learned")), 4096, 2048, 1, False)
    assert rope["attention"].memory_s > learned["attention"].memory_s  # RoPE reads and writes Q and K
    gelu = compute.layer_work(GPU, Shape.of(job(family="gpt")), 4096, 2048, 1, False)
    assert gelu["mlp"].flops == 2 * 2 * 4096 * 4096 * 16384  # two matrices of h x 4h
    assert gelu["mlp"].memory_s > rope["mlp"].memory_s  # dropout masks beside the residual add


def test_moe_shards_experts_over_ep_in_memory_and_counts_visited_experts_in_flops():
    m = Moe(experts=64, top_k=4, expert_ffn_hidden_size=1408, shared_experts=2)
    s = Shape.of(job(ffn_hidden_size=10944, moe=m, vocab_size=102400))
    assert s.moe_layers == 32 and s.dense_layers == 0
    e = s.expert_params
    assert s.matmul_params == pytest.approx(32 * (s.attn_params + 4096 * 64 + 6 * e) + 4096 * 102400)
    p1 = memory.Plan(seq=4096, dp=64, ep=1)
    p8 = memory.Plan(seq=4096, dp=64, ep=8)
    d1, x1 = memory.stage_params(s, p1)
    d8, x8 = memory.stage_params(s, p8)
    assert d1 == d8 and x1 == pytest.approx(8 * x8) and x1 == pytest.approx(32 * 64 * e)
    every2 = Shape.of(job(moe=Moe(experts=8, every=2)))
    assert (every2.moe_layers, every2.dense_layers) == (16, 16)
