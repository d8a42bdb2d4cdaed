"""Tables and worked examples of the seeds (../shared/seeds) and "How to Scale Your Model", reproduced."""

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.roofline import score_ops
from llm_roofline.graph import Phase, build_ops
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec
from llm_roofline.sharding import Sharding
from llm_roofline.memory import kv_bytes_per_token


def step_time_s(spec, chip, batch, context, sharding):
    """The book's theoretical step time: sum over matmuls and attention of max(compute, memory)."""
    ops = [o for o in build_ops(spec, Phase.decode(batch, context), sharding) if o.kind in ("gemm", "attention")]
    return sum(float(np.maximum(s.t_compute_s, s.t_memory_s)) * s.op.count for s in score_ops(ops, chip))


# How to Scale Your Model, Part 7 ("What about memory?"): LLaMA-2-13B generating at 8,192 context on
# 8 TPU v5e. Theoretical step time (ms) and KV-cache memory per batch size, as printed in the book.
BOOK_13B = [  # batch, KV cache "GiB" (really 1e9 B: 8192 * 819,200 B = 6.71e9), step ms
    (1, 6.7, 4.98), (8, 53.6, 12.13), (16, 107.2, 20.30), (32, 214.4, 36.65), (64, 428.8, 69.33),
    (240, 1608, 249.09),
]


@pytest.mark.parametrize("batch,kv_gb,step_ms", BOOK_13B)
def test_book_llama2_13b_on_8_v5e(batch, kv_gb, step_ms):
    spec = lr.load_model("meta-llama/Llama-2-13b-hf")
    # KV per token 2 * 40 layers * 40 heads * 128 * 2 bytes = 819,200 B
    assert kv_bytes_per_token(spec, "bf16") == 819_200
    chip = lr.load_chip("tpu-v5e")
    t = step_time_s(spec, chip, batch, 8192, Sharding(tp=8))
    assert t * 1e3 == pytest.approx(step_ms, rel=0.05)
    # tokens/s = batch / step time (book: 200.61 at batch 1 ... 963.53 at 240)
    assert batch / t == pytest.approx(batch / (step_ms * 1e-3), rel=0.05)
    est = lr.estimate(spec, chip, batch=batch, prompt_len=8191, gen_len=1, tp=8, efficiency="ideal")
    assert est.memory.kv_cache_bytes == pytest.approx(kv_gb * 1e9, rel=0.01)


def test_seed_llama13b_prefill_flops():
    """Seed 004 (roofline summary): LLaMA-13B, h=5120, b=8, s=1024, n=40, V=32000:
    total FLOPs = n*(24*b*s*h^2 + 4*b*s^2*h) + 2*b*s*h*V (MHA, 4h non-gated MLP, no causal discount,
    logits for every position) = 40*(5.154e12 + 1.718e11) + 2.684e12 = 2.157e14."""
    h, b, s, n, v = 5120, 8, 1024, 40, 32000
    attn = AttentionSpec("mha", 40, 40, 128, 128)
    spec = ModelSpec("llama13b-seed", h, v, (LayerGroup("dense", n, attn, FfnSpec("dense", 4 * h, False, "gelu")),))
    phase = Phase("prefill", np.float64(b), np.float64(s), np.float64(s), causal=False, lm_head_last_only=False)
    matmul = sum(float(o.flops) * o.count for o in build_ops(spec, phase) if o.kind in ("gemm", "attention"))
    expected = n * (24 * b * s * h**2 + 4 * b * s**2 * h) + 2 * b * s * h * v
    assert matmul == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(2.157e14, rel=1e-3)


def test_seed_prefill_attention_compute_bound_past_480_tokens_on_v5e():
    """Seeds 4.1: prefill attention intensity T/2 exceeds v5e's 240 once T > ~480."""
    chip = lr.load_chip("tpu-v5e")
    attn = AttentionSpec("mha", 1, 1, 128, 128)
    spec = ModelSpec("one-head", 128, 10, (LayerGroup("dense", 1, attn, FfnSpec("dense", 128, True, "silu")),))
    bounds = {}
    for t in (400, 470, 500, 600):
        phase = Phase("prefill", np.float64(1), np.float64(t), np.float64(t), causal=False)
        core = [o for o in build_ops(spec, phase) if o.name == "attn.core"]
        s = score_ops(core, chip)[0]
        bounds[t] = "compute" if s.t_compute_s > s.t_memory_s else "memory"
    assert bounds == {400: "memory", 470: "memory", 500: "compute", 600: "compute"}
