"""The per-family efficiency model (llm_roofline/efficiency.py) with fixed parameters: hand arithmetic only."""

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.efficiency import calibrated_model, weight_bits_of, weight_only_quantized
from llm_roofline.ops import gemm
from llm_roofline.roofline import score

# 100 TFLOP/s fp16, 10 TFLOP/s fp32 (the 'vector' peak), 1 TB/s HBM; one GEMM fit.
ROUND_CHIP = """
name = "round-gpu"
family = "hopper"
[compute]
fp16 = 100e12
fp32 = 10e12
[memory]
hbm_bytes = 80e9
hbm_bytes_per_s = 1e12
[scaleup]
kind = "nvlink4"
topology = "switch"
bytes_per_s = 100e9
latency_s = 1e-6
domain_size = 8
[price]
usd_per_hour = 1.0

[efficiency.gemm]
compute_max = 0.8
compute_tokens_half = 64
memory_max = 0.5
overhead_s = 5e-6
"""


@pytest.fixture()
def round_chip(tmp_path):
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP)
    return lr.load_chip(str(p))


def _t(op, chip):
    eff = calibrated_model(chip).for_op(op, chip)
    return score(op.flops, op.hbm_bytes, peak_flops_per_s=100e12, hbm_bytes_per_s=1e12, efficiency=eff)


# ------------------------------------------------------------------------------ weight-only quantization
def test_weight_bits_are_read_back_from_a_dense_gemm():
    op4 = gemm("ffn.up", "dense", 1, tokens=3, k=4096, n=1024, bits_per_weight=4, act_bytes_per_elem=2)
    op16 = gemm("ffn.up", "dense", 1, tokens=3, k=4096, n=1024, bits_per_weight=16, act_bytes_per_elem=2)
    # weight bytes 4096*1024*4/8 = 2,097,152; flops / (2*3) = 4096*1024 -> 8 * 2,097,152 / 4,194,304 = 4 bits
    assert weight_bits_of(op4) == pytest.approx(4.0)
    assert weight_only_quantized(op4) and not weight_only_quantized(op16)


def test_int4_batch1_gemm_reads_packed_weights_and_is_not_compute_bound(round_chip):
    kw = dict(tokens=1, k=4096, n=4096, act_bytes_per_elem=2, compute_dtype="fp16")
    s16 = _t(gemm("ffn.up", "dense", 1, bits_per_weight=16, **kw), round_chip)
    s4 = _t(gemm("ffn.up", "dense", 1, bits_per_weight=4, **kw), round_chip)
    # fp16: flops 2*4096*4096 = 33,554,432 at 0.8 * 1/(1+64) = 0.0123077 of 100e12 -> 27.263 us;
    #   bytes 4096*4096*2 + (4096+4096)*2 = 33,570,816 at 0.5e12 -> 67.1416 us; t = 67.1416 + 5 = 72.1416 us
    assert float(s16.t_s) == pytest.approx(72.1416e-6, rel=1e-5)
    # int4: bytes 4096*4096/2 + 16,384 = 8,404,992 at 0.5e12 -> 16.80998 us; compute: no padded rows, the
    #   dequant share: 0.8 * 2 / (2 + 4 * 100e12/10e12) = 0.8 * 2/42 = 0.0380952 -> 33,554,432 / 3.80952e12
    #   = 8.808 us; memory-bound: t = 16.80998 + 5 = 21.80998 us (before the fix: 27.263 + 5, compute-bound)
    assert float(s4.t_compute_s) == pytest.approx(8.808e-6, rel=1e-4)
    assert float(s4.t_s) == pytest.approx(21.80998e-6, rel=1e-5)
    # without the fixed overhead the speedup is the byte ratio 33,570,816 / 8,404,992 = 3.994
    assert (float(s16.t_s) - 5e-6) / (float(s4.t_s) - 5e-6) == pytest.approx(3.994, rel=1e-3)


def test_llama8b_h100_weight_only_decode_is_faster_by_the_weight_bytes():
    spec = lr.load_model("meta-llama/Llama-3.1-8B")
    kw = dict(batch=1, prompt_len=128, gen_len=65, efficiency="calibrated")
    runs = {wd: lr.estimate(spec, "h100-sxm", weight_dtype=wd, **kw) for wd in (None, "int8", "int4")}
    gemm_mem = {}
    for wd, e in runs.items():
        d = e.ops[(e.ops.phase == "decode") & (e.ops.kind == "gemm")]
        assert set(d.bound) == {"memory"}  # batch 1: every GEMM streams its weights (int4 included)
        gemm_mem[wd] = float((d.t_memory_s * d["count"]).sum())
        assert e.decode.bound == "memory"
    # The GEMM memory time goes with the weight bytes: bf16 16 bits, int8 8 (+ a scale per group),
    # int4 4 (+ scales): ratios about 2 and 3.5-4 (the bf16 lm_head stays in every case, so a bit less).
    assert 1.7 < gemm_mem[None] / gemm_mem["int8"] < 2.05
    assert 2.6 < gemm_mem[None] / gemm_mem["int4"] < 4.05
    assert runs["int4"].tpot_s < runs["int8"].tpot_s < runs[None].tpot_s
