"""The per-family efficiency model (llm_roofline/efficiency.py) with fixed parameters: hand arithmetic only."""

from dataclasses import replace
from pathlib import Path
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import llm_roofline as lr
from llm_roofline.chip_fits import calibrated_model
from llm_roofline.attention_shapes import attention_shape
from llm_roofline.dequant import marlin_compute_max, weight_bits_of, weight_only_quantized
from llm_roofline.efficiency import FamilyFit, family_of
from llm_roofline.uncertainty import BORROWED_FAMILY_BAND, UNCALIBRATED_BAND, band_of, family_band, op_band
from llm_roofline.uncertainty import phase_band, serving_band_at, serving_band_from, widened_band
from llm_roofline.ops import attention, elementwise, gemm
from llm_roofline.roofline import score, score_op
from llm_roofline.units import weight_format
from test_calibrate import ROUND_CHIP as _round_chip_text

# test_calibrate's round chip (100 TFLOP/s fp16, 10 TFLOP/s fp32 = the 'vector' peak, 1 TB/s HBM) with its gemm fit
# only: compute_max 0.8, compute_tokens_half 64, memory_max 0.5, overhead_s 5 us
ROUND_CHIP = _round_chip_text[: _round_chip_text.index("[efficiency.norm]")]


@pytest.fixture()
def round_chip(tmp_path):
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP)
    return lr.load_chip(str(p))


def _t(op, chip):
    eff = calibrated_model(chip).for_op(op, chip)
    return score(op.flops, op.hbm_bytes, peak_flops_per_s=100e12, hbm_bytes_per_s=1e12, efficiency=eff)


# ------------------------------------------------------------------------------ weight-only quantization
def test_a_gemm_of_4_bit_weights_is_weight_only_quantized_and_one_of_16_bit_weights_is_not():
    op4 = gemm("ffn.up", "dense", 1, tokens=3, k=4096, n=1024, bits_per_weight=4, act_bytes_per_elem=2)
    op16 = gemm("ffn.up", "dense", 1, tokens=3, k=4096, n=1024, bits_per_weight=16, act_bytes_per_elem=2)
    # weight bytes 4096 * 1024 * 4 / 8 = 2,097,152; 4 bits < 0.75 x 16 (bf16 compute) < 16 bits
    assert float(op4.weight_bytes) == 2_097_152 and weight_bits_of(op4) == 4.0
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


def test_a_dequantizing_gemm_with_no_tokens_at_a_point_prices_quietly(round_chip):
    # a step grid where the GEMM has 0 tokens at some points (a serving step table's empty chunk): there its compute
    # efficiency is the ceiling (0.8), at 1 token the dequant share of the test above (0.0380952); no 0 / 0 warning
    op = gemm("ffn.up", "dense", 1, tokens=np.array([0.0, 1.0]), k=4096, n=4096, act_bytes_per_elem=2,
              compute_dtype="fp16", bits_per_weight=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eff = calibrated_model(round_chip).for_op(op, round_chip)
    assert np.allclose(eff.compute, [0.8, 0.8 * 2 / 42])


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


def test_dequantizing_kernel_is_marlin_off_hopper_where_a_chip_of_the_family_measured_it():
    # vLLM's mixed-precision linears: Machete on compute capability 9.0 (Hopper), Marlin on every other NVIDIA GPU
    marlin = FamilyFit(compute_max=0.15)
    b200, b300, h100, a100, mi300x = (lr.load_chip(c) for c in ("b200", "b300", "h100-sxm", "a100-80gb", "mi300x"))
    assert marlin_compute_max(b200, marlin, b200) == 0.15  # its own Marlin MoE rows
    assert marlin_compute_max(b300, marlin, b200) == 0.15  # borrowed from a Blackwell sibling
    assert marlin_compute_max(h100, marlin, h100) == marlin_compute_max(h100, marlin, h100, "int4") == 1.0  # Machete:
    #   integer weights at the bf16 GEMM fit's ceiling
    assert marlin_compute_max(h100, marlin, h100, "fp4") == marlin_compute_max(h100, marlin, h100, "fp8") == 0.15
    #   float weights with 16-bit activations: MarlinNvFp4 / MarlinFP8 on Hopper too
    assert marlin_compute_max(a100, marlin, h100) == 1.0  # measured on another architecture: not Ampere's Marlin
    assert marlin_compute_max(mi300x, marlin, h100) == 1.0  # not NVIDIA's kernels
    assert marlin_compute_max(b200, None, None) == marlin_compute_max(b200, marlin, None) == 1.0  # nothing measured


def test_a_recurrent_scan_carries_a_borrowed_familys_band():
    """A Gated DeltaNet / Mamba-2 / KDA scan is priced with the attention fit, which timed FlashAttention alone:
    its band is a borrowed family's (0.7, 2.5), not attention's own (H100: 0.8-1.2); flash-linear-attention's
    kernels measured 1.7-14x that price on an H100 (benchmarks/data/gpu_linear_attention_h100-sxm.csv)."""
    from llm_roofline.ops import recurrent_scan

    h100 = lr.load_chip("h100-sxm")
    model = calibrated_model(h100)
    scan = recurrent_scan("mixer.scan", "gated_deltanet", 36, batch=1, q_len=8192, n_heads=8, head_dim=128,
                          state_dim=128, flops_per_state_elem=7, chunk_tokens=64, state_bytes_per_elem=2,
                          act_in_elems_per_token=6144, act_out_elems_per_token=1024, act_bytes_per_elem=2)
    assert family_of(scan) == "attention"  # priced by FlashAttention's fit ...
    assert op_band(model, scan, h100) == BORROWED_FAMILY_BAND == (0.7, 2.5)  # ... so banded as borrowed
    assert family_band(model, "attention")[1] < 1.3  # the attention fit's own band is far narrower


def test_b200_int4_prefill_gemm_runs_at_marlins_ceiling_and_h100_at_its_gemm_fit():
    op = gemm("ffn.up", "dense", 1, tokens=2048, k=8192, n=28672, bits_per_weight=4.25, act_bytes_per_elem=2)
    one = gemm("ffn.up", "dense", 1, tokens=1, k=8192, n=28672, bits_per_weight=4.25, act_bytes_per_elem=2)
    b200 = lr.load_chip("b200")
    model = calibrated_model(b200)
    s = score_op(op, b200, model.for_op(op, b200))
    # shipped b200.toml: moe_int4 (vLLM's Marlin MoE) compute_max 0.1462, gemm compute_max 0.7289; bf16 peak
    # 2.25e15, fp32 vector 75e12. Tensor cores: 2*2048*8192*28672 = 9.6207e11 FLOP at 0.1462 * 2.25e15 = 3.2895e14
    # -> 2.9247 ms; dequant: 4 * 8192*28672 = 9.3953e8 vector ops at 0.7289 * 75e12 = 5.4668e13 -> 17.19 us.
    # Before (the bf16 GEMM fit's ceiling, 0.7289): 9.6207e11 / 1.6400e15 + 17.19 us = 0.604 ms
    assert float(s.t_compute_s) == pytest.approx(2.9419e-3, rel=1e-4)  # 2.9247 ms + 17.19 us
    assert s.bound == "compute" and op_band(model, op, b200) == BORROWED_FAMILY_BAND  # no dense Marlin GEMM timed
    # one row: packed weights 8192*28672*4.25/8 = 124.8 MB are the time; the ceiling does not bind, the GEMM band
    s1 = score_op(one, b200, model.for_op(one, b200))
    assert s1.bound == "memory" and op_band(model, one, b200) == family_band(model, "gemm")
    h100 = lr.load_chip("h100-sxm")  # Machete: an int4 GEMM of 2048 rows prices within 5 % of the bf16 one
    bf16 = gemm("ffn.up", "dense", 1, tokens=2048, k=8192, n=28672, bits_per_weight=16, act_bytes_per_elem=2)
    h = calibrated_model(h100)
    t4, t16 = (float(score_op(o, h100, h.for_op(o, h100)).t_s) for o in (op, bf16))
    assert abs(t4 / t16 - 1) < 0.05
    # the estimate says so where it applies (and nowhere else)
    said = {(c, wd): any("Marlin" in a for a in lr.estimate("meta-llama/Llama-3.2-1B", c, weight_dtype=wd,
                                                             prompt_len=256, gen_len=4).assumptions)
            for c, wd in (("b200", "int4"), ("b200", None), ("h100-sxm", "int4"), ("h100-sxm", "fp4"),
                          ("l40s", "int4"))}
    # (L40S: Marlin's 0.6508 of the peak in its moe_int4 fit is above its bf16 GEMM fit's 0.6254: nothing binds)
    assert said == {("b200", "int4"): True, ("b200", None): False, ("h100-sxm", "int4"): False,
                    ("h100-sxm", "fp4"): True, ("l40s", "int4"): False}
    # and so does its critical batch: B200 2.25e15 / 8e12 = 281.25 FLOP/B; int4 g128 with 16-bit scales and 4-bit
    # zeros: 4 + 20/128 = 4.15625 bits -> 281.25 * 4.15625 / 16 = 73.06 tokens; at Marlin's ceiling 0.1462 and the
    # b200 gemm fit's memory_max 0.722: 73.06 * 0.1462 / 0.722 = 14.79 tokens
    crit = {c: lr.estimate("meta-llama/Llama-3.2-1B", c, weight_dtype="int4", prompt_len=256, gen_len=4).critical
            for c in ("b200", "h100-sxm", "l40s")}
    assert weight_format("int4").label == "int4 (g128, 16-bit scales, 4-bit zeros)"  # the label says all 4.15625
    assert crit["b200"]["batch_tokens"] == pytest.approx(73.06, rel=1e-3)
    assert crit["b200"]["marlin_batch_tokens"] == pytest.approx(14.79, rel=1e-3)
    assert "marlin_batch_tokens" not in crit["h100-sxm"] and "marlin_batch_tokens" not in crit["l40s"]


# ------------------------------------------------------------------------------ attention families
ATTN_CHIP = ROUND_CHIP + """
[efficiency.attention]
compute_max = 0.5
compute_keys_half = 100
compute_elems_half = 1e6
overhead_s = 2e-6
err_p10 = 0.8
err_p90 = 1.3

[efficiency.attention_decode]
memory_max = 0.8
overhead_s = 10e-6
overhead_per_kv_row_byte_s = 1e-10
err_p10 = 0.8
err_p90 = 1.3
"""


@pytest.fixture()
def attn_chip(tmp_path):
    return attn_chip_of(tmp_path)


def _attn(batch, q, kv):
    # 8 heads, 2 KV heads, head_dim 64 (dqk = dv = 64), fp16: K+V per token 2 * 128 = 256 elements
    return attention("attn.core", "dense", 1, batch=batch, q_len=q, kv_len=kv, n_heads=8, n_kv_heads=2, qk_dim=64,
                     v_dim=64, kv_elems_per_token=256, kv_bytes_per_elem=2, act_bytes_per_elem=2, compute_dtype="fp16")


def test_prefill_attention_efficiency_by_hand(attn_chip):
    op = _attn(1, 1024, 1024)
    assert family_of(op) == "attention"  # KV 524,288 B < Q+O 2,097,152 B
    s = _t(op, attn_chip)
    # pairs 1024*1025/2 = 524,800; flops 524,800 * 2*8*128 = 1,074,790,400; Q+O elements 1024*8*128 = 1,048,576
    # keys per query 512.5; eff = 0.5 * 512.5/612.5 * 1,048,576/2,048,576 = 0.5 * 0.836735 * 0.511860 = 0.2141439
    # t_compute = 1,074,790,400 / (100e12 * 0.2141439) = 50.1901 us; + 2 us overhead = 52.1901 us
    assert float(s.t_s) == pytest.approx(52.1901e-6, rel=1e-5)


def test_prefill_attention_adds_the_loads_its_math_does_not_hide_by_hand(tmp_path):
    # memory_serial 1 (the attention family's fits): t_compute + t_memory, the roofline's no-overlap bound
    p = tmp_path / "serial-gpu.toml"
    p.write_text(ATTN_CHIP.replace("round-gpu", "serial-gpu").replace(
        "[efficiency.attention]\ncompute_max = 0.5\n", "[efficiency.attention]\ncompute_max = 0.5\nmemory_max = 0.8\n"
        "memory_serial = 1\n"))
    chip = lr.load_chip(str(p))
    op = _attn(1, 1024, 1024)
    # compute 50.1901 us (test_prefill_attention_efficiency_by_hand); memory: Q+O 1024*8*128*2 = 2,097,152 B + K,V
    # 1024*256*2 = 524,288 B = 2,621,440 B at 0.8e12 = 3.2768 us, not hidden: 50.1901 + 3.2768 + 2 us = 55.4669 us
    assert float(_t(op, chip).t_s) == pytest.approx(55.4669e-6, rel=1e-5)
    # where the loads are hidden (memory_serial 0, the fixture's fit): the larger of the two, 50.1901 + 2 us
    assert float(_t(op, attn_chip_of(tmp_path)).t_s) == pytest.approx(52.1901e-6, rel=1e-5)


def attn_chip_of(tmp_path):
    p = tmp_path / "attn-gpu.toml"
    p.write_text(ATTN_CHIP.replace("round-gpu", "attn-gpu"))
    return lr.load_chip(str(p))


def test_decode_attention_floor_and_bandwidth_by_hand(attn_chip):
    op = _attn(4, 1, 4096)
    assert family_of(op) == "attention_decode"
    s = _t(op, attn_chip)
    # KV 4*4096*256*2 = 8,388,608 B + Q/O 4*8*128*2 = 8,192 B at 0.8e12 -> 10.4960 us (compute 0.34 us)
    # floor 10 us + 1e-10 s/B * (4 sequences * 256 elements * 2 B = 2,048 B per context position) = 10.2048 us
    assert float(s.t_s) == pytest.approx(20.7008e-6, rel=1e-6)
    # twice the context: only the KV stream grows (16,785,408 B -> 20.98176 us), the floor does not
    assert float(_t(_attn(4, 1, 8192), attn_chip).t_s) == pytest.approx(31.18656e-6, rel=1e-6)


def test_a_one_token_query_is_a_decode():
    # batch 4, q = kv = 1: KV 4*256*2 = 2,048 B < Q/O 4*8*128*2 = 8,192 B, yet vLLM runs it with its decode kernel
    assert family_of(_attn(4, 1, 1)) == "attention_decode" and family_of(_attn(4, 2, 2)) == "attention"


def test_a_chunk_after_a_long_prefix_is_a_prefill_when_its_queries_fill_a_tile():
    # G = 8 / 2 = 4 query heads per KV head; Q_TILE 128 query rows; K+V 512 B per token, Q+O 2048 B per query.
    # A 16-token chunk after 100,000 tokens: KV 100,016 * 512 B = 51.2 MB > Q+O 16 * 2048 B = 32.8 kB, and 16 * 4 = 64
    # rows per KV head fill half a tile: decode-like (it streams the cache). A 4000-token chunk: after 8000 tokens KV
    # 12,000 * 512 B = 6.1 MB < Q+O 4000 * 2048 B = 8.2 MB, a prefill; after 60,000 tokens KV 32.8 MB > 8.2 MB, and it
    # was a decode, priced with the decode fit (whose compute side one-token rows set), though its 4000 * 4 = 16,000
    # rows per KV head fill 125 tiles: the prefill kernel runs it
    assert family_of(_attn(1, 16, 100_016)) == "attention_decode"
    assert family_of(_attn(1, 4000, 12_000)) == "attention"
    assert family_of(_attn(1, 4000, 64_000)) == "attention"
    assert family_of(_attn(1, 32, 100_032)) == "attention_decode"  # 32 * 4 = 128 rows: one tile, still decode-like
    assert family_of(_attn(1, 33, 100_033)) == "attention"  # 132 rows: two tiles


def test_prefill_query_tiles_by_hand():
    fit = FamilyFit(overhead_s=2e-6, overhead_per_head_tile_s=1e-8, overhead_per_group_tile_s=3e-8)
    op = _attn(16, 200, 200)  # 16 sequences of 200 tokens, 8 heads, 2 KV heads (G = 4)
    shape = attention_shape(op, decode=False)
    # per head: 16 * 8 * ceil(200/128) = 256 tiles; per group: 16 * 2 * ceil(800/128) = 16 * 2 * 7 = 224 tiles
    assert (float(shape["head_tiles"]), float(shape["group_tiles"])) == (256.0, 224.0)
    # overhead 2 us + 256 * 10 ns + 224 * 30 ns = 2 + 2.56 + 6.72 = 11.28 us
    assert float(fit.efficiency(0.0, **shape).overhead_s) == pytest.approx(11.28e-6, rel=1e-12)
    # one token per sequence still fills a tile per head: 16 * 8 * 1 = 128 and per group 16 * 2 * ceil(4/128) = 32
    short = attention_shape(_attn(16, 1, 1), decode=False)
    assert (float(short["head_tiles"]), float(short["group_tiles"])) == (128.0, 32.0)


def test_decode_compute_factors_and_windowed_heads_by_hand():
    fit = FamilyFit(compute_max=0.05, compute_keys_half=1024, compute_group_half=4, memory_max=0.8, overhead_s=10e-6,
                    overhead_per_windowed_head_s=1e-7)
    op = attention("attn.core", "dense", 1, batch=4, q_len=1, kv_len=4096, n_heads=8, n_kv_heads=2, qk_dim=64,
                   v_dim=64, kv_elems_per_token=256, kv_bytes_per_elem=2, act_bytes_per_elem=2, compute_dtype="fp16",
                   window=1024)
    shape = attention_shape(op, decode=True)
    # window 1024: pairs = keys = 1024; Q+O elements 4*8*128 = 4096 -> query heads 4096 / 128 = 32 (= B*H), of
    # which B*n_kv = 8 would share a tile with their group without a window: windowed heads 32 - 8 = 24
    assert (float(shape["keys"]), float(shape["windowed_heads"])) == (1024.0, 24.0)
    s = score(op.flops, op.hbm_bytes, peak_flops_per_s=100e12, hbm_bytes_per_s=1e12,
              efficiency=fit.efficiency(op.tokens, dim=op.head_dim, group=op.q_per_kv, **shape))
    # compute 0.05 * 1024/(1024+1024) * G/(G+4) (G = 4) = 0.0125: flops 4*1024*2*8*128 = 8,388,608 -> 6.7108864 us
    # (memory: 8,192 + 4*1024*256*2 = 2,105,344 B at 0.8e12 = 2.63168 us); overhead 10 us + 1e-7 * 24 = 12.4 us
    assert float(s.t_s) == pytest.approx(19.1108864e-6, rel=1e-9)
    # MHA (8 KV heads, G = 1) runs one head a tile with or without a window: no windowed heads
    mha = attention("attn.core", "dense", 1, batch=4, q_len=1, kv_len=4096, n_heads=8, n_kv_heads=8, qk_dim=64,
                    v_dim=64, kv_elems_per_token=1024, kv_bytes_per_elem=2, act_bytes_per_elem=2, compute_dtype="fp16",
                    window=1024)
    assert float(attention_shape(mha, decode=True)["windowed_heads"]) == 0.0
    # no window: no per-head term (and 4096 keys: compute 0.05 * 4096/5120 * 0.5 = 0.02, 33,554,432 FLOPs = 16.777 us)
    full = attention("attn.core", "dense", 1, batch=4, q_len=1, kv_len=4096, n_heads=8, n_kv_heads=2, qk_dim=64,
                     v_dim=64, kv_elems_per_token=256, kv_bytes_per_elem=2, act_bytes_per_elem=2, compute_dtype="fp16")
    eff = fit.efficiency(full.tokens, dim=full.head_dim, group=full.q_per_kv, **attention_shape(full, decode=True))
    assert (float(eff.overhead_s), float(eff.compute)) == (pytest.approx(10e-6), pytest.approx(0.02))


def test_flashinfer_decode_pads_a_gqa_group_to_its_cta_tile_by_hand():
    from llm_roofline.attention_shapes import query_tile_rows, wide_tile_weight

    # FlashInfer's FA2DetermineCtaTileQ for G packed rows (one query row per sequence): 16 up to 16, 64 up to 64 (or
    # beyond at head_dim 256), else 128; a group past one tile fills whole tiles
    groups = [1, 8, 16, 17, 32, 64, 65, 96, 200, 65]
    dims = [128] * 9 + [256]
    assert list(query_tile_rows(np.array(groups), np.array(dims))) == [16, 16, 16, 64, 64, 64, 128, 128, 256, 128]
    # the wide tile's weight: (head_dim / 128)^2 past 16 rows
    assert list(wide_tile_weight(np.array([16, 17, 32, 32]), np.array([128, 128, 64, 256]))) == [0.0, 1.0, 0.25, 4.0]

    def decode(heads):  # 4 sequences over 4096 keys, one fp8 KV head of head_dim 128: K+V 256 elements a position
        return attention("attn.core", "dense", 1, batch=4, q_len=1, kv_len=4096, n_heads=heads, n_kv_heads=1,
                         qk_dim=128, v_dim=128, kv_elems_per_token=256, kv_bytes_per_elem=1, act_bytes_per_elem=2,
                         compute_dtype="fp16")

    fit = FamilyFit(compute_max=0.05, compute_keys_half=1024, compute_group_half=4, memory_max=0.8, overhead_s=10e-6,
                    compute_q_tile_rule=1, overhead_wide_tile_s=6e-6)

    def time_s(f, op):
        eff = f.efficiency(op.tokens, dim=op.head_dim, group=op.q_per_kv, **attention_shape(op, decode=True))
        return float(score(op.flops, op.hbm_bytes, peak_flops_per_s=1e15, hbm_bytes_per_s=1e12, efficiency=eff).t_s)

    # G = 32 in a 64-row tile: compute 0.05 * 4096/(4096+1024) * 32/(64+4) = 0.04 * 32/68; flops 4*4096*2*32*256 =
    # 268,435,456 -> 268,435,456 * 68 / (32 * 0.04e15) = 14.2606336 us (memory: 4*4096*256*1 + 4*32*256*2 B =
    # 4,259,840 B at 0.8e12 = 5.3248 us); overhead 10 us + 6 us x (128/128)^2 -> 30.2606336 us
    assert time_s(fit, decode(32)) == pytest.approx(30.2606336e-6, rel=1e-9)
    # G = 16 fills the 16-row tile: compute 0.04 * 16/20 = 0.032, 134,217,728 FLOPs = 4.194304 us, below the memory's
    # (4,194,304 + 32,768 B) / 0.8e12 = 5.28384 us; no wide tile: 10 us -> 15.28384 us
    assert time_s(fit, decode(16)) == pytest.approx(15.28384e-6, rel=1e-9)
    # without the rule G = 32 keeps G / (G + 4): 0.04 * 32/36 -> 7.5497472 us, and no wide tile: 17.5497472 us
    assert time_s(replace(fit, compute_q_tile_rule=0.0), decode(32)) == pytest.approx(17.5497472e-6, rel=1e-9)
    # head_dim 64: a quarter of the wide tile's time, 10 + 1.5 us
    assert float(fit.efficiency(1.0, group=32.0, dim=64.0).overhead_s) == pytest.approx(11.5e-6, rel=1e-12)
    # the padding holds without any half-saturation factor: G = 8 in a 16-row tile, 0.5 * 8 / 16
    assert float(FamilyFit(compute_max=0.5, compute_q_tile_rule=1).compute(1.0, group=8.0, dim=128.0)) == 0.25
    # an unknown group (0) stays unknown: no tile, no group factor (0.5, not 0.5 * 16 / (16 + 4) = 0.4)
    unknown = FamilyFit(compute_max=0.5, compute_q_tile_rule=1, compute_group_half=4).compute(1.0, group=0.0, dim=128.0)
    assert float(unknown) == 0.5


def test_a_chip_file_names_an_unknown_q_tile_rule(tmp_path):
    p = tmp_path / "round-gpu.toml"
    for bad in ("0.5", "2", "-1", "nan"):
        p.write_text(ROUND_CHIP + "\n[efficiency.attention_decode_fp8]\ncompute_max = 0.4\ncompute_q_tile_rule = " + bad
                     + "\n")
        with pytest.raises(lr.ChipError, match="compute_q_tile_rule"):
            calibrated_model(lr.load_chip(str(p)))


def test_decode_kv_streams_by_hand():
    fit = FamilyFit(memory_max=0.8, memory_streams_half=6.0, overhead_s=10e-6, overhead_per_kv_stream_s=1e-7)
    op = _attn(4, 1, 4096)
    shape = attention_shape(op, decode=True)
    # KV streams: 4 sequences x 2 KV heads = 8 (2,048 B per context position / (128 elements * 2 B))
    assert float(shape["kv_streams"]) == 8.0
    s = score(op.flops, op.hbm_bytes, peak_flops_per_s=100e12, hbm_bytes_per_s=1e12,
              efficiency=fit.efficiency(op.tokens, dim=op.head_dim, group=op.q_per_kv, **shape))
    # memory 0.8 * 8 / hypot(8, 6) = 0.64: 8,396,800 B / 0.64e12 = 13.12 us (compute 0.34 us);
    # overhead 10 us + 8 * 0.1 us = 10.8 us -> 23.92 us
    assert float(s.t_s) == pytest.approx(23.92e-6, rel=1e-9)


def test_an_mha_decode_streams_and_floors_as_its_own_unsplit_kernel_by_hand():
    # FlashAttention-2 (vLLM on A100 / L40S) gives an MHA decode stream (one query head per KV head) one CTA walking all
    # its keys, with no split-KV combine: its own stream half and floor, where memory_unsplit_half is set
    fit = FamilyFit(memory_max=0.8, memory_streams_half=6.0, memory_unsplit_half=64.0, overhead_s=10e-6,
                    overhead_unsplit_s=7e-6)
    gqa, mha = _attn(4, 1, 4096), attention("attn.core", "dense", 1, batch=4, q_len=1, kv_len=4096, n_heads=2,
                                             n_kv_heads=2, qk_dim=64, v_dim=64, kv_elems_per_token=256,
                                             kv_bytes_per_elem=2, act_bytes_per_elem=2)
    assert (gqa.q_per_kv, mha.q_per_kv) == (4.0, 1.0)
    e_gqa, e_mha = (fit.efficiency(op.tokens, dim=op.head_dim, group=op.q_per_kv, **attention_shape(op, decode=True))
                    for op in (gqa, mha))
    # both: 4 sequences x 2 KV heads = 8 streams. GQA: 0.8 * 8 / hypot(8, 6) = 0.64, floor 10 us; MHA: 0.8 * 8 /
    # hypot(8, 64) = 0.8 * 8 / 64.498 = 0.099228, floor 7 us
    assert (float(e_gqa.memory), float(e_gqa.overhead_s)) == (pytest.approx(0.64, rel=1e-12), pytest.approx(10e-6))
    assert float(e_mha.memory) == pytest.approx(0.8 * 8 / 64.49806198, rel=1e-9)
    assert float(e_mha.overhead_s) == pytest.approx(7e-6, rel=1e-12)
    # unset (0): an MHA decode is priced as any other, each term on its own
    e = replace(fit, memory_unsplit_half=0.0, overhead_unsplit_s=0.0).efficiency(
        mha.tokens, dim=mha.head_dim, group=mha.q_per_kv, **attention_shape(mha, decode=True))
    assert (float(e.memory), float(e.overhead_s)) == (pytest.approx(0.64, rel=1e-12), pytest.approx(10e-6))
    e = replace(fit, memory_unsplit_half=0.0).efficiency(mha.tokens, dim=mha.head_dim, group=mha.q_per_kv,
                                                         **attention_shape(mha, decode=True))
    assert (float(e.memory), float(e.overhead_s)) == (pytest.approx(0.64, rel=1e-12), pytest.approx(7e-6))


def test_a_decode_past_its_window_streams_as_an_unsplit_kernel_by_hand():
    # FlashAttention-2 (vLLM on L40S, bf16 KV) past a sliding window: one CTA walks a stream's window of keys, as for
    # MHA (L40S, kv 32k, window 8192, head_dim 128: 167 us at 1 to 16 sequences). GQA op _attn-like, 4 sequences x
    # 2 KV heads = 8 streams, window 1024 of kv 4096: memory 0.8 * 8 / hypot(8, 64) = 0.099228, floor 7 us
    fit = FamilyFit(memory_max=0.8, memory_streams_half=6.0, memory_unsplit_half=64.0, overhead_s=10e-6,
                    overhead_unsplit_s=7e-6)

    def windowed(kv_len):
        return attention("attn.core", "dense", 1, batch=4, q_len=1, kv_len=kv_len, n_heads=8, n_kv_heads=2,
                         qk_dim=64, v_dim=64, kv_elems_per_token=256, kv_bytes_per_elem=2, act_bytes_per_elem=2,
                         window=1024)
    past, within = (fit.efficiency(op.tokens, dim=op.head_dim, group=op.q_per_kv, **attention_shape(op, decode=True))
                    for op in (windowed(4096), windowed(1024)))
    assert float(past.memory) == pytest.approx(0.8 * 8 / 64.49806198, rel=1e-9)
    assert float(past.overhead_s) == pytest.approx(7e-6, rel=1e-12)
    # within the window the kernel splits the keys as without one: 0.8 * 8 / hypot(8, 6) = 0.64, floor 10 us
    assert (float(within.memory), float(within.overhead_s)) == (pytest.approx(0.64, rel=1e-12), pytest.approx(10e-6))
    # an fp8 KV cache (8 bits: another kernel) splits a window's keys as any others
    fp8 = attention("attn.core", "dense", 1, batch=4, q_len=1, kv_len=4096, n_heads=8, n_kv_heads=2, qk_dim=64,
                    v_dim=64, kv_elems_per_token=256, kv_bytes_per_elem=1, act_bytes_per_elem=2, window=1024)
    assert (fp8.kv_bits, float(attention_shape(fp8, decode=True)["unsplit"])) == (8.0, 0.0)


def test_a_flash_attention_2_decode_pays_its_combine_past_one_kv_block_and_its_regroup_copies_by_hand():
    # A100 (vLLM's FlashAttention-2, head_dim 128): a GQA decode over <= 128 keys measures ~12.5 us, over 256 keys
    # ~18 us (split-KV: a combine kernel); with B >= 2 and n_kv >= 2, ~18.3 us already at one block (Q and O copied to
    # fold each KV head's G query heads into its tile). Floors here: 10 us + 4 us (split) + 5 us (regroup)
    from llm_roofline.attention_shapes import decode_kernels, kv_block_keys

    assert [float(kv_block_keys(d)) for d in (64, 80, 128, 192, 576)] == [256.0, 128.0, 128.0, 64.0, 64.0]
    fit = FamilyFit(memory_max=0.8, overhead_s=10e-6, overhead_split_s=4e-6, overhead_regroup_s=5e-6)

    def floor_us(batch, kv, n_heads=8, n_kv=2, window=None):
        op = attention("attn.core", "dense", 1, batch=batch, q_len=1, kv_len=kv, n_heads=n_heads, n_kv_heads=n_kv,
                       qk_dim=128, v_dim=128, kv_elems_per_token=2 * 128 * n_kv, kv_bytes_per_elem=2,
                       act_bytes_per_elem=2, window=window)
        eff = fit.efficiency(op.tokens, dim=op.head_dim, group=op.q_per_kv, **attention_shape(op, decode=True))
        return round(float(eff.overhead_s) * 1e6, 9)

    assert floor_us(1, 128) == 10.0  # one sequence, one block: neither
    assert floor_us(1, 129) == 14.0  # past the block: + the combine
    assert floor_us(2, 128) == 15.0  # 2 sequences x 2 KV heads: + the two copies
    assert floor_us(2, 4096) == 19.0  # both
    assert floor_us(8, 4096, n_heads=8, n_kv=1) == 14.0  # one KV head: the reshape is a view
    assert floor_us(8, 100, window=64) == 10.0  # a window: keys = 64, one block; no regrouping with a window
    assert floor_us(8, 4096, n_heads=2, n_kv=2) == 10.0  # MHA (G = 1): neither
    # the same indicators as arrays over a grid: B = (1, 2, 4), streams B x n_kv, keys (128, 129, 300), head_dim 64
    b = np.array([1.0, 2.0, 4.0])
    split, regrouped = decode_kernels(b, b, np.array([2.0, 4.0, 4.0]), np.array([128.0, 257.0, 300.0]), 64.0, 4.0, 0.0)
    assert split.tolist() == [0.0, 1.0, 1.0] and regrouped.tolist() == [0.0, 1.0, 0.0]  # 4 x 1 KV head: a view
    # a chunk of 16 query rows per sequence (a prefill's decode-like points) is not regrouped: FA2 swaps 1-row queries
    assert decode_kernels(2.0, 32.0, 4.0, 300.0, 128.0, 4.0, 0.0) == (1.0, 0.0)


def test_fp8_kv_decode_past_its_window_reads_whole_blocks_by_hand():
    from llm_roofline.efficiency import CalibratedModel

    # 8 heads, 2 KV heads, head_dim 256 (dqk = dv = 256), fp8 KV cache (K+V per token 2 * 2 * 256 = 1024 elements)
    op = attention("attn.core", "dense", 1, batch=1, q_len=1, kv_len=4096, n_heads=8, n_kv_heads=2, qk_dim=256,
                   v_dim=256, kv_elems_per_token=1024, kv_bytes_per_elem=1, act_bytes_per_elem=2)
    assert family_of(op) == "attention_decode_fp8" and op.head_dim == 256.0
    fit = FamilyFit(memory_max=0.8, memory_window_half=200.0, overhead_s=10e-6, overhead_window_s=3e-6)
    model, chip = CalibratedModel("x", "t", {"attention_decode_fp8": fit}), lr.load_chip("h100-sxm")
    eff = model.for_op(op, chip)
    # no window: memory 0.8, floor 10 us
    assert float(eff.overhead_s) == pytest.approx(10e-6, rel=1e-12) and float(eff.memory) == pytest.approx(0.8)

    def windowed(kv):
        return attention("attn.core", "dense", 1, batch=1, q_len=1, kv_len=kv, n_heads=8, n_kv_heads=2, qk_dim=256,
                         v_dim=256, kv_elems_per_token=1024, kv_bytes_per_elem=1, act_bytes_per_elem=2, window=56)
    # window 56, context 4096 (past it): 56 keys read as 56 + 200: memory 0.8 * 56 / 256 = 0.175, overhead 10 us
    # + 3 us = 13 us; context 56 (the window from the first key: no block more) and 40 (inside it): 0.8, 10 us
    past = model.for_op(windowed(4096), chip)
    assert (float(past.memory), float(past.overhead_s)) == (pytest.approx(0.175, rel=1e-12), pytest.approx(13e-6))
    for kv in (56, 40):
        e = model.for_op(windowed(kv), chip)
        assert (float(e.memory), float(e.overhead_s)) == (0.8, pytest.approx(10e-6, rel=1e-12))


def test_decode_kv_streams_of_a_grid_with_an_empty_batch_are_counted_point_by_point():
    # MLA decode (16 query heads on one latent KV head of 576 cached elements, dqk 192, dv 128), batches 0, 1, 4:
    # 0, 1, 4 streams; the empty point made the whole grid fall back to KV row bytes / ((dqk+dv) x e_kv) =
    # B x 576 x 2 / (320 x 2) = 1.8 B streams
    import numpy as np

    op = attention("attn.core", "mla", 1, batch=np.array([0.0, 1.0, 4.0]), q_len=1, kv_len=4096, n_heads=16,
                   n_kv_heads=1, qk_dim=192, v_dim=128, kv_elems_per_token=576, kv_bytes_per_elem=2,
                   act_bytes_per_elem=2)
    assert np.array_equal(attention_shape(op, decode=True)["kv_streams"], [0.0, 1.0, 4.0])


def test_the_plain_formulas_of_a_grid_with_no_empty_point_agree_with_the_guarded_ones_to_the_bit():
    # efficiency.py and attention_shapes.py guard points of 0 tokens, sequences or streams (np.where) and take the
    # plain form when a grid has none (units.everywhere): every fit of a calibrated chip, pricing a GEMM, elementwise and
    # decode / prefill attention ops on [1, 3, 200.5] (plain) and on [0, 1, 3, 200.5] (guarded), must give the
    # same numbers at the three shared points
    chip = lr.load_chip("h100-sxm")
    model = calibrated_model(chip)
    plain, guarded = np.array([1.0, 3.0, 200.5]), np.array([0.0, 1.0, 3.0, 200.5])

    def ops(b):
        return [gemm("ffn.up", "dense", 1, tokens=b, k=4096, n=1024, bits_per_weight=16, act_bytes_per_elem=2),
                elementwise("residual", "dense", 1, tokens=b, elems=4096, flops_per_elem=1, reads=2, writes=1,
                            act_bytes_per_elem=2),
                attention("attn.core", "dense", 1, batch=b, q_len=1, kv_len=4096, n_heads=32, n_kv_heads=8,
                          qk_dim=128, v_dim=128, kv_elems_per_token=2048, kv_bytes_per_elem=2, act_bytes_per_elem=2),
                attention("attn.core", "dense", 1, batch=b, q_len=512, kv_len=512, n_heads=32, n_kv_heads=32,
                          qk_dim=128, v_dim=128, kv_elems_per_token=8192, kv_bytes_per_elem=2, act_bytes_per_elem=2)]
    for a, b in zip(ops(plain), ops(guarded)):
        for fam in sorted(set(model.families)):
            p = model.fit_for(fam)
            kw = {}
            if a.kind == "attention":
                kw = {k: v for k, v in attention_shape(a, decode=fam.startswith("attention_decode")).items()}
            ea = p.efficiency(a.tokens, label="x", dim=a.head_dim, group=a.q_per_kv, cols=a.gemm_n, **kw)
            kw = {k: v for k, v in attention_shape(b, decode=fam.startswith("attention_decode")).items()} \
                if b.kind == "attention" else {}
            eb = p.efficiency(b.tokens, label="x", dim=b.head_dim, group=b.q_per_kv, cols=b.gemm_n, **kw)
            for k in ("compute", "memory", "overhead_s"):
                x, y = np.broadcast_to(getattr(ea, k), (3,)), np.broadcast_to(getattr(eb, k), (4,))[1:]
                assert np.array_equal(x, y), (a.name, fam, k, x, y)


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 64), q=st.integers(1, 4096), prefix=st.integers(0, 8192),
       cm=st.floats(0.05, 1.0), kh=st.floats(0, 5000), eh=st.floats(0, 1e8), mm=st.floats(0.05, 1.0),
       oh=st.floats(0, 1e-4), orow=st.floats(0, 1e-9), gh=st.floats(0, 100), owin=st.floats(0, 1e-7),
       window=st.sampled_from([None, 128, 4096]), sh=st.floats(0, 64), ost=st.floats(0, 1e-7),
       otile=st.floats(0, 1e-7), wh=st.floats(0, 1e4), ow=st.floats(0, 1e-4), kv_heads=st.sampled_from([2, 8]))
def test_attention_never_below_ideal(batch, q, prefix, cm, kh, eh, mm, oh, orow, gh, owin, window, sh, ost, otile,
                                     wh, ow, kv_heads):
    fit = FamilyFit(compute_max=cm, compute_keys_half=kh, compute_elems_half=eh, memory_max=mm, overhead_s=oh,
                    overhead_per_kv_row_byte_s=orow, compute_group_half=gh, overhead_per_windowed_head_s=owin,
                    memory_streams_half=sh, overhead_per_kv_stream_s=ost, overhead_per_head_tile_s=otile,
                    overhead_per_group_tile_s=otile, memory_window_half=wh, overhead_window_s=ow,
                    memory_unsplit_half=sh * 10, overhead_unsplit_s=oh / 2)  # kv_heads 8 of 8 heads: MHA
    op = attention("attn.core", "dense", 1, batch=batch, q_len=q, kv_len=q + prefix, n_heads=8, n_kv_heads=kv_heads,
                   qk_dim=64, v_dim=64, kv_elems_per_token=256, kv_bytes_per_elem=2, act_bytes_per_elem=2,
                   compute_dtype="fp16", window=window)
    shape = attention_shape(op, decode=family_of(op) == "attention_decode")
    cal = score(op.flops, op.hbm_bytes, peak_flops_per_s=100e12, hbm_bytes_per_s=1e12,
                efficiency=fit.efficiency(0.0, group=op.q_per_kv, dim=op.head_dim, **shape))
    ideal = score(op.flops, op.hbm_bytes, peak_flops_per_s=100e12, hbm_bytes_per_s=1e12)
    assert float(cal.t_s) >= float(ideal.t_s) * (1 - 1e-12)


def test_fp8_gemms_use_their_own_family_or_borrow_bf16(round_chip, attn_chip):
    op = gemm("ffn.up", "dense", 1, tokens=64, k=4096, n=4096, bits_per_weight=8, act_bytes_per_elem=1,
              compute_dtype="fp8")
    assert family_of(op) == "gemm_fp8"
    m = calibrated_model(round_chip)
    assert m.fit_for("gemm_fp8") is m.fit_for("gemm") and m.sources["gemm_fp8"] == "borrowed: gemm"
    assert calibrated_model("h100-sxm").sources["gemm_fp8"] == "h100-sxm fit"


def test_fp8_gemm_rows_past_one_m_tile_run_whole_tiles():
    from llm_roofline.efficiency import CalibratedModel

    p = FamilyFit(compute_max=0.8, compute_m_tile=256.0)
    # up to one tile the kernel is sized to M: 0.8 at M = 1, 200, 256; past it whole 256-row tiles: M = 257 runs 512
    # rows (0.8 * 257 / 512 = 0.4015625), M = 512 two full tiles (0.8), M = 513 three (0.8 * 513 / 768 = 0.534375)
    got = [float(p.compute(t)) for t in (1.0, 200.0, 256.0, 257.0, 512.0, 513.0)]
    assert got == pytest.approx([0.8, 0.8, 0.8, 0.4015625, 0.8, 0.534375], rel=1e-12)
    assert float(p.compute(0.0)) == 0.8  # tokens unknown: compute_max
    # an fp8 GEMM op of 257 tokens through the calibrated model: the same factor
    op = gemm("ffn.up", "dense", 1, tokens=257, k=4096, n=4096, bits_per_weight=8, act_bytes_per_elem=1,
              compute_dtype="fp8")
    eff = CalibratedModel("x", "t", {"gemm_fp8": p}).for_op(op, lr.load_chip("h100-sxm"))
    assert float(eff.compute) == pytest.approx(0.4015625, rel=1e-12)


def test_split_k_caps_a_skinny_gemms_serial_k_walk():
    # outs half 1000, K split in chunks of 2048: T*N = 100 outputs at K = 8192 count 100 * 8192 / 2048 = 400 work
    # units -> factor 400 / (400 + 1000) = 2/7; at K = 1024 (< one chunk) 100 / 1100 = 1/11; without split-K 1/11
    p = FamilyFit(compute_outs_half=1000.0, compute_k_split=2048.0)
    assert float(p.compute(1.0, outs=100.0, depth=8192.0)) == pytest.approx(2 / 7)
    assert float(p.compute(1.0, outs=100.0, depth=1024.0)) == pytest.approx(1 / 11)
    assert float(FamilyFit(compute_outs_half=1000.0).compute(1.0, outs=100.0, depth=8192.0)) == pytest.approx(1 / 11)
    # the op's K reaches it: gemm_n = 100, tokens 1, gemm_k = 8192
    op = gemm("ffn.up", "dense", 1, tokens=1, k=8192, n=100, bits_per_weight=16, act_bytes_per_elem=2)
    from llm_roofline.efficiency import CalibratedModel

    assert float(CalibratedModel("x", "t", {"gemm": p}).for_op(op, lr.load_chip("h100-sxm")).compute) == pytest.approx(2 / 7)


def test_a_gemms_compute_efficiency_grows_with_its_depth_by_hand():
    # depth half 64: each output tile's fill and epilogue worth 64 steps of K. compute_max 0.8 at K = 192:
    # 0.8 * 192 / (192 + 64) = 0.6; at K = 8192: 0.8 * 8192 / 8256 = 0.79380; unknown K (0): 0.8
    p = FamilyFit(compute_max=0.8, compute_depth_half=64.0)
    assert float(p.compute(1.0, depth=192.0)) == pytest.approx(0.6)
    assert float(p.compute(1.0, depth=8192.0)) == pytest.approx(0.8 * 8192 / 8256)
    assert float(p.compute(1.0)) == pytest.approx(0.8)
    # the op's K reaches it (for_op and for_ops: a GEMM over a grid of tokens priced with its family's others)
    from llm_roofline.efficiency import CalibratedModel

    model, chip = CalibratedModel("x", "t", {"gemm": p}), lr.load_chip("h100-sxm")
    op = gemm("attn.o_proj", "dense", 1, tokens=np.array([1.0, 8.0]), k=192, n=4096, bits_per_weight=16,
              act_bytes_per_elem=2)
    assert np.allclose(model.for_op(op, chip).compute, 0.6)
    (rows, eff), = model.for_ops([op, op], chip, (2,))
    assert rows == [0, 1] and np.allclose(eff.compute, 0.6)


def test_block_scaled_fp8_gemms_route_to_their_family(round_chip):
    from llm_roofline.units import weight_format

    # DeepSeek-V3's quantization_config weight_block_size [128, 128]: one fp32 scale per 128 * 128 = 16384 weights,
    # 8 + 32 / 16384 = 8.001953125 bits per weight; per-channel fp8 and int4 groups are no scale blocks
    fmt = weight_format("fp8", 128 * 128)
    assert fmt.scale_block == 16384 and weight_format("fp8").scale_block == 0 and weight_format("int4").scale_block == 0
    kw = dict(tokens=64, k=4096, n=4096, act_bytes_per_elem=1, **fmt.gemm_storage(4096))
    op = gemm("attn.o_proj", "dense", 1, compute_dtype="fp8", **kw)
    assert (op.weight_bits, op.weight_block, family_of(op)) == (8.001953125, 16384, "gemm_fp8_block")
    assert family_of(gemm("ffn.up", "dense", 1, compute_dtype="bf16", **kw)) == "gemm"  # weight-only: dequantized
    # 8-bit experts run the fused-MoE kernels (moe_fp8), block-scaled or not
    assert family_of(gemm("ffn.experts.up", "moe", 1, compute_dtype="fp8", style="expert", **kw)) == "moe_fp8"
    # no fit of its own: the chip's gemm_fp8, else (this chip has none either) gemm, and the source says so
    m = calibrated_model(round_chip)
    assert m.fit_for("gemm_fp8_block") is m.fit_for("gemm") and m.sources["gemm_fp8_block"] == "borrowed: gemm"


def test_fp4_gemms_route_to_their_family_and_borrow_the_chips_fp8_fit(round_chip):
    # NVFP4 weights (4 bits + one fp8 scale per 16: 4.5 bits) computing in fp4 (W4A4): the gemm_fp4 fit, with or
    # without a scale block; fp4 experts computing in fp4 take the W4A4 fused-MoE kernels' fit (moe_fp4); fp8 gemm_fp8
    kw = dict(tokens=8, k=8192, n=8192, act_bytes_per_elem=0.5, bits_per_weight=4.5, weight_dtype="fp4")
    assert family_of(gemm("attn.o_proj", "dense", 1, compute_dtype="fp4", **kw)) == "gemm_fp4"
    assert family_of(gemm("attn.o_proj", "dense", 1, compute_dtype="fp4", weight_block=16, **kw)) == "gemm_fp4"
    assert family_of(gemm("ffn.experts.up", "moe", 1, compute_dtype="fp4", style="expert", **kw)) == "moe_fp4"
    assert family_of(gemm("attn.o_proj", "dense", 1, compute_dtype="fp8", tokens=8, k=8192, n=8192,
                            bits_per_weight=8, act_bytes_per_elem=1)) == "gemm_fp8"
    # a chip with no fp4 fit prices them with its own fp8 fit (as before gemm_fp4 existed), and says so; without
    # that either, its bf16 one
    h100 = calibrated_model("h100-sxm")
    assert h100.fit_for("gemm_fp4") is h100.fit_for("gemm_fp8") and h100.sources["gemm_fp4"] == "borrowed: gemm_fp8"
    m = calibrated_model(round_chip)
    assert m.fit_for("gemm_fp4") is m.fit_for("gemm") and m.sources["gemm_fp4"] == "borrowed: gemm"
    # the Blackwell chips measured NVFP4 GEMMs (aic-vllm gemm_perf nvfp4) and carry their own fit; B300, without
    # measurements, takes B200's
    for chip in ("b200", "gb200"):
        assert calibrated_model(chip).sources["gemm_fp4"] == f"{chip} fit"
    assert calibrated_model("b300").sources["gemm_fp4"] == "borrowed: b200"


def test_deepseek_v3_block_fp8_checkpoint_marks_its_gemms():
    from llm_roofline.graph import Dtypes, Phase, build_ops
    from llm_roofline.model.hf import load_model

    # config.json quantization_config {"quant_method": "fp8", "weight_block_size": [128, 128]}: the quantized
    # matrices carry 128 * 128 = 16384 weights per scale; the LM head stays bf16 (no block)
    ops = {o.name: o for o in build_ops(load_model("deepseek-ai/DeepSeek-V3"), Phase.decode(1, 100), dtypes=Dtypes(act="fp8"))}
    assert ops["attn.o_proj"].weight_block == 16384 and family_of(ops["attn.o_proj"]) == "gemm_fp8_block"
    assert ops["lm_head"].weight_block == 0 and family_of(ops["lm_head"]) == "gemm_fp8"


# ------------------------------------------------------------------------------ uncertainty band
def test_band_of_own_and_borrowed_fits():
    p = FamilyFit(err_p10=0.8, err_p90=1.3, fitted_on="x")
    assert band_of(p, "h100-sxm fit") == (0.8, 1.3)
    # borrowed from another chip: (0.8 * 0.85, 1.3 * 1.25) = (0.68, 1.625)
    assert band_of(p, "borrowed: h100-sxm") == pytest.approx((0.68, 1.625))
    assert band_of(p, "borrowed: gemm") == BORROWED_FAMILY_BAND
    assert band_of(p, "uncalibrated") == UNCALIBRATED_BAND


def test_phase_band_weights_families_by_time(attn_chip):
    m = calibrated_model(attn_chip)
    pre, dec = _attn(1, 1024, 1024), _attn(4, 1, 4096)
    # both families (0.8, 1.3): any mix is (0.8, 1.3)
    assert phase_band(m, [(pre, 1.0), (dec, 3.0)], attn_chip) == pytest.approx((0.8, 1.3))
    # a norm (not measured here: the hopper default h100-sxm's norm, borrowed) takes 1/4 of the time:
    # 0.75 * 0.8 + 0.25 * lo_norm, with lo_norm = h100's err_p10 * 0.85
    norm = calibrated_model("h100-sxm").fit_for("norm")
    lo, hi = phase_band(m, [(dec, 3.0), (_norm(), 1.0)], attn_chip)
    assert lo == pytest.approx(0.75 * 0.8 + 0.25 * min(norm.err_p10, 1) * 0.85)
    assert hi == pytest.approx(0.75 * 1.3 + 0.25 * max(norm.err_p90, 1) * 1.25)



def test_serving_band_from_is_the_band_that_leaves_a_tenth_out_on_each_side():
    # ten rows at nominal 1, kernels' band (0.8, 1.25) on each. Above: 1.5 needs sqrt(ln 1.5^2 - ln 1.25^2) =
    # sqrt(0.16440 - 0.04979) = 0.33854, 2.0 needs sqrt(0.48045 - 0.04979) = 0.65625, 1.1 nothing (ln 1.1 < ln 1.25);
    # one row in ten may stay out, so the band is exp(0.33854) = 1.40290 (2.0 left out, 1.5 on the edge). Below: 0.5
    # needs 0.65625, 0.9 nothing, so with 0.5 left out the band needs nothing: 1.0
    measured = np.array([0.5, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.1, 1.5, 2.0])
    one = np.ones(10)
    assert serving_band_from(measured, one, 0.8 * one, 1.25 * one, one) == pytest.approx((1.0, 1.40290), rel=1e-5)
    # the same rows with the 2.0 row weighted 2 of 11: it may not stay out alone (2/11 > 10 %), so it sets the band
    # exp(0.65625) = 1.92756; the 0.5 row (1/11 < 10 %) still may
    w = np.array([1.0] * 9 + [2.0])
    assert serving_band_from(measured, one, 0.8 * one, 1.25 * one, w) == pytest.approx((1.0, 1.92756), rel=1e-5)
    # and widened_band with that band puts 1.5 exactly on its p90: exp(hypot(ln 1.25, ln 1.40290)) = 1.5
    assert widened_band(1.0, 0.8, 1.25, (1.0, 1.40290))[1] == pytest.approx(1.5, rel=1e-5)


def test_serving_band_at_interpolates_the_logs_between_load_anchors():
    # anchors at utilization 0.1 and 0.5 with bands (0.8, 1.25) and (0.9, 1.0). Halfway (0.3) the logs average:
    # p10 sqrt(0.8 x 0.9) = sqrt(0.72) = 0.848528, p90 sqrt(1.25 x 1.0) = 1.118034; a quarter of the way (0.2):
    # p10 0.8^0.75 x 0.9^0.25 = 0.845897 x 0.974004 = 0.823907, p90 1.25^0.75 = 1.182177; below 0.1 and above 0.5
    # the ends hold; NaN (no utilization) takes the last
    anchors, bands = (0.1, 0.5), ((0.8, 1.25), (0.9, 1.0))
    lo, hi = serving_band_at(anchors, bands, [0.3, 0.2, 0.0, 0.9, float("nan")])
    assert lo == pytest.approx([0.848528, 0.823907, 0.8, 0.9, 0.9], rel=1e-6)
    assert hi == pytest.approx([1.118034, 1.182177, 1.25, 1.0, 1.0], rel=1e-6)


def _norm():
    return elementwise("norm.attn", "dense", 1, tokens=8, elems=8 * 4096, flops_per_elem=4, reads=1, writes=1,
                       act_bytes_per_elem=2, kind="norm")


def test_estimate_uncertainty_is_wider_for_a_borrowed_fit(tmp_path):
    spec = lr.load_model("meta-llama/Llama-3.1-8B")
    h200 = Path(lr.load_chip("h200").path).read_text()
    clone = tmp_path / "hopper-clone.toml"  # the H200 datasheet without its fits: borrows h100-sxm's
    clone.write_text(h200[: h200.index("# ---- calibrated")].replace('name = "h200"', 'name = "hopper-clone"')
                     .replace('aliases = ["h200-sxm", "h200-sxm5", "h200-141gb"]', "aliases = []"))
    kw = dict(batch=8, prompt_len=1024, gen_len=64, efficiency="calibrated")
    own, lent = lr.estimate(spec, "h200", **kw), lr.estimate(spec, str(clone), **kw)
    assert lent.efficiency == "family default: hopper from h100-sxm fit"
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        u_own, u_lent = own.uncertainty[key], lent.uncertainty[key]
        assert u_own["p10"] <= getattr(own, key) <= u_own["p90"]
        ratio = lambda u, v: u["p90"] / u["p10"]  # noqa: E731
        assert ratio(u_lent, lent) > ratio(u_own, own)
    thr = own.uncertainty["throughput_tokens_per_s"]
    assert thr["p10"] <= own.throughput_tokens_per_s <= thr["p90"]
    assert own.to_dict()["uncertainty"] == own.uncertainty
    assert lr.estimate(spec, "h200", batch=8, prompt_len=1024, gen_len=64, efficiency="ideal").uncertainty is None


def test_expert_gemms_use_the_moe_family():
    op = gemm("ffn.experts.up", "moe", 1, tokens=16, k=4096, n=2048, bits_per_weight=16, act_bytes_per_elem=2,
              n_matrices=2, style="expert")
    assert family_of(op) == "moe"
    h100 = calibrated_model("h100-sxm")
    assert h100.sources["moe"] == "h100-sxm fit" and h100.fit_for("moe") is not h100.fit_for("gemm")


def test_fits_of_a_chip_built_by_hand_follow_its_table():
    # the fits read from a catalog chip's read-only table are parsed once; a table the caller built (a plain dict,
    # which it may change) is read on every call
    import dataclasses

    h100 = lr.load_chip("h100-sxm")
    gemm = dict(h100.calibration["gemm"])
    table = {"gemm": gemm}
    mine = dataclasses.replace(h100, name="mine", calibration=table)
    before = calibrated_model(mine).families["gemm"].compute_max
    gemm["compute_max"] = before / 2
    assert calibrated_model(mine).families["gemm"].compute_max == before / 2
    assert calibrated_model(h100).families["gemm"] is calibrated_model(h100).families["gemm"]  # parsed once


# ------------------------------------------------------------------------------ quantized fused-MoE experts
_MOE_FITS = """
[efficiency.moe]
compute_max = 0.5
memory_max = 0.4
overhead_s = 20e-6

[efficiency.moe_quant]
compute_max = 0.5
compute_tokens_half = 2
memory_max = 0.8
overhead_s = 10e-6
"""


def _experts(bits, compute="bf16"):
    # gpt-oss-like up_gate: 2 rows per touched expert, k 2880, n 5760, 4 assignments, 4 experts read
    return gemm("ffn.experts.up_gate", "moe", 1, tokens=2, k=2880, n=5760, bits_per_weight=bits,
                act_bytes_per_elem=2, n_matrices=4, matrices_read=4, style="expert", compute_dtype=compute)


def test_quantized_expert_decode_uses_the_moe_quant_fit_by_hand(tmp_path):
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP + _MOE_FITS)
    chip = lr.load_chip(str(p))
    op = _experts(4.25)  # MXFP4: 4-bit weights + one 8-bit scale per 32
    assert family_of(op) == "moe_quant" and family_of(_experts(16)) == "moe"
    # weights 4 * 2880*5760 * 4.25/8 = 35,251,200 B; activations 2 * (2880+5760) * 2 * 4 = 138,240 B
    # -> memory 35,389,440 / (1e12 * 0.8) = 44.2368 us; flops 2*2*2880*5760*4 = 265,420,800 at
    # 100e12 * 0.5 * 2/(2+2) = 25e12 -> 10.6168 us; t = max + overhead 10 us = 54.2368 us
    assert op.hbm_bytes == pytest.approx(35_389_440) and op.flops == pytest.approx(265_420_800)
    s = _t(op, chip)
    assert float(s.t_s) == pytest.approx(54.2368e-6, rel=1e-6)
    assert calibrated_model(chip).sources["moe_quant"] == "round-gpu fit"


def test_a_chip_without_a_quantized_moe_fit_borrows_its_bf16_moe_fit_and_says_so(tmp_path):
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP + _MOE_FITS[:_MOE_FITS.index("[efficiency.moe_quant]")])
    chip = lr.load_chip(str(p))
    m = calibrated_model(chip)
    assert m.sources["moe_quant"] == "borrowed: moe" and m.fit_for("moe_quant") is m.fit_for("moe")
    # the bf16 moe fit: memory 35,389,440 / (1e12 * 0.4) = 88.4736 us, compute 265,420,800 / 50e12 = 5.3084 us,
    # + 20 us
    assert float(_t(_experts(4.25), chip).t_s) == pytest.approx(108.4736e-6, rel=1e-6)


def test_fp4_experts_computing_in_fp4_use_the_moe_fp4_fit_by_hand(tmp_path):
    # NVFP4 experts (W4A4: TRT-LLM's nvfp4 kernel) and MXFP4 experts computing in bf16 (W4A16: GPT-OSS's) are two
    # kernels: the first is priced by its own fit at the fp4 peak, the second by moe_quant's at the bf16 peak
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP + _MOE_FITS + "\n[efficiency.moe_fp4]\ncompute_max = 0.25\nmemory_max = 0.5\n"
                 "overhead_s = 4e-6\n")
    chip = lr.load_chip(str(p))
    w4a4, w4a16 = _experts(4.5, "fp4"), _experts(4.25)
    assert (family_of(w4a4), family_of(w4a16)) == ("moe_fp4", "moe_quant")
    # weights 4 * 2880*5760 * 4.5/8 = 37,324,800 B + activations 138,240 B = 37,463,040 B -> memory
    # 37,463,040 / (1e12 * 0.5) = 74.92608 us; flops 265,420,800 / (100e12 * 0.25) = 10.616832 us; + 4 us
    # = 78.92608 us (_t prices at one peak, 100 TFLOP/s: the fit alone differs)
    assert float(_t(w4a4, chip).t_s) == pytest.approx(78.92608e-6, rel=1e-6)
    assert float(_t(w4a16, chip).t_s) == pytest.approx(54.2368e-6, rel=1e-6)  # moe_quant: as in the test above
    m = calibrated_model(chip)
    assert m.sources["moe_fp4"] == "round-gpu fit"
    # without it: the chip's moe_quant (W4A16) fit, and the source says so; a Hopper chip (no fp4 units, no nvfp4
    # rows) has none; the Blackwell chips measured the nvfp4 kernel; B300, unmeasured, takes B200's
    p.write_text(ROUND_CHIP + _MOE_FITS)
    m = calibrated_model(lr.load_chip(str(p)))
    assert m.sources["moe_fp4"] == "borrowed: moe_quant" and m.fit_for("moe_fp4") is m.fit_for("moe_quant")
    assert calibrated_model("h100-sxm").sources["moe_fp4"] == "borrowed: moe_quant"
    for name in ("b200", "gb200"):
        assert calibrated_model(name).sources["moe_fp4"] == f"{name} fit"
    assert calibrated_model("b300").sources["moe_fp4"] == "borrowed: b200"


def _int4_experts():
    # the same expert GEMM with GPTQ / AWQ int4 weights as the model reader stores them: int4 in groups of 128 with a
    # 16-bit scale and a 4-bit zero point, 4 + 20/128 = 4.15625 bits (units.weight_format)
    return gemm("ffn.experts.up_gate", "moe", 1, tokens=2, k=2880, n=5760, act_bytes_per_elem=2, n_matrices=4,
                matrices_read=4, style="expert", **weight_format("int4").gemm_storage(2880))


def test_int4_experts_use_the_moe_int4_fit_by_hand(tmp_path):
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP + _MOE_FITS + "\n[efficiency.moe_int4]\ncompute_max = 0.25\nmemory_max = 0.5\n"
                 "overhead_s = 30e-6\n")
    chip = lr.load_chip(str(p))
    op = _int4_experts()
    assert (op.weight_dtype, op.weight_bits) == ("int4", 4.15625)
    # int4 experts run vLLM's Marlin MoE kernel (moe_int4); fp4 experts of about the same width the fp4 kernels
    assert family_of(op) == "moe_int4" and family_of(_experts(4.25)) == "moe_quant"
    # weights 4 * 2880*5760 * 4.15625/8 = 34,473,600 B + activations 138,240 B = 34,611,840 B
    # -> memory 34,611,840 / (1e12 * 0.5) = 69.22368 us; flops 265,420,800 / (100e12 * 0.25) = 10.616832 us;
    # t = 69.22368 + 30 = 99.22368 us
    assert float(_t(op, chip).t_s) == pytest.approx(99.22368e-6, rel=1e-6)
    assert calibrated_model(chip).sources["moe_int4"] == "round-gpu fit"


def test_a_chip_without_an_int4_moe_fit_borrows_its_fp4_moe_fit_then_its_bf16_one(tmp_path):
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP + _MOE_FITS)
    m = calibrated_model(lr.load_chip(str(p)))
    assert m.sources["moe_int4"] == "borrowed: moe_quant" and m.fit_for("moe_int4") is m.fit_for("moe_quant")
    # moe_quant: memory 34,611,840 / 0.8e12 = 43.2648 us, compute 265,420,800 / (100e12 * 0.5 * 2/(2+2))
    # = 10.616832 us; + 10 us = 53.2648 us
    assert float(_t(_int4_experts(), lr.load_chip(str(p))).t_s) == pytest.approx(53.2648e-6, rel=1e-6)
    p.write_text(ROUND_CHIP + _MOE_FITS[:_MOE_FITS.index("[efficiency.moe_quant]")])
    m = calibrated_model(lr.load_chip(str(p)))
    assert m.sources["moe_int4"] == "borrowed: moe" and m.fit_for("moe_int4") is m.fit_for("moe")


def test_eight_bit_experts_use_the_moe_fp8_fit_by_hand(tmp_path):
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP + _MOE_FITS + "\n[efficiency.moe_fp8]\ncompute_max = 0.5\nmemory_max = 0.5\n"
                 "overhead_s = 5e-6\n")
    chip = lr.load_chip(str(p))
    op = _experts(8.002, "fp8")  # block-scaled fp8 (DeepSeek-V3), W8A8: 8 bits + a 32-bit scale per 128 x 128
    assert family_of(op) == "moe_fp8" and family_of(_experts(4.25)) == "moe_quant"
    assert family_of(_experts(12)) == "moe"  # 12 bits and up: not an 8-bit format
    # weight-only 8-bit experts (bf16 compute: no fp8 units, or a weight dtype override) run the bf16 kernel path
    assert family_of(_experts(8.002)) == "moe"
    # weights 4 * 2880*5760 * 8.002/8 = 66,355,200 * 1.00025 = 66,371,788.8 B + activations 138,240 B
    # = 66,510,028.8 B -> memory / (1e12 * 0.5) = 133.020058 us (compute 265,420,800 / 50e12 = 5.3 us);
    # t = 133.020058 + 5 = 138.020058 us
    assert float(_t(op, chip).t_s) == pytest.approx(138.020058e-6, rel=1e-6)
    assert calibrated_model(chip).sources["moe_fp8"] == "round-gpu fit"
    # without it: the chip's own bf16 moe fit (66,510,028.8 / 0.4e12 = 166.275072 us, + 20 us)
    p.write_text(ROUND_CHIP + _MOE_FITS)
    m = calibrated_model(lr.load_chip(str(p)))
    assert m.sources["moe_fp8"] == "borrowed: moe" and m.fit_for("moe_fp8") is m.fit_for("moe")
    assert float(_t(op, lr.load_chip(str(p))).t_s) == pytest.approx(186.275072e-6, rel=1e-6)


def test_fit_parameters_beyond_their_ceiling_are_refused():
    # a fuzzed chip file with overhead_per_output_elem_s = 1e300 passed "finite and >= 0" and gave TTFT = inf
    from llm_roofline.errors import ChipError

    for name, v in (("overhead_per_output_elem_s", 1e300), ("compute_tokens_half", 1e300), ("overhead_s", 2.0),
                    ("memory_tokens_half", 1e16), ("err_p90", 1e9), ("comm_step_s", 2.0),
                    ("comm_step_per_doubling_s", -1e-6), ("comm_switch_max", 1.5), ("comm_switch_max", 0.0)):
        with pytest.raises(ChipError, match=name):
            FamilyFit(**{name: v})
    FamilyFit(overhead_s=1.0, compute_tokens_half=1e9, memory_tokens_half=1e9, err_p90=1e3, compute_keys_half=1e15)
    # the ceilings: the tokens halves at the chip file's range (CHIP_RANGES: 1e9 tokens), so a fit always loads back
    for name in ("compute_tokens_half", "memory_tokens_half"):
        with pytest.raises(ChipError, match=rf"{name} must be a number in \[0, 1e\+09\]"):
            FamilyFit(**{name: 2e9})


def test_mla_decode_streams_are_sequences_times_its_one_latent_head():
    # DeepSeek-V3 at tp 8: 128 / 8 = 16 query heads sharing one latent KV head (q_per_kv 16), so 4 decoding
    # sequences are 4 x 1 = 4 KV streams; the latent cache holds 512 + 64 = 576 elements per token, not the
    # (dqk + dv) = 576 + 512 = 1088 of the absorbed core, so KV bytes per position / (1088 x 2 B) would say
    # 4 x 576 / 1088 = 2.12. Llama-3.1-8B at tp 2: 32 / 2 = 16 heads over 8 / 2 = 4 KV heads: 4 x 4 = 16 streams
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.sharding import Sharding

    for model, tp, streams in (("deepseek-ai/DeepSeek-V3", 8, 4.0), ("meta-llama/Llama-3.1-8B", 2, 16.0)):
        core = next(op for op in build_ops(lr.load_model(model), Phase.decode(4, 1000), Sharding(tp=tp))
                    if op.kind == "attention")
        assert float(attention_shape(core, decode=True)["kv_streams"]) == pytest.approx(streams)


def test_a_fit_built_in_code_refuses_booleans():
    # the chip-file reader refused True already; FamilyFit itself took it as 1 (compute_k_split=True: K / 1)
    from llm_roofline.errors import ChipError

    for name in ("compute_max", "compute_k_split", "overhead_s", "comm_switch_max"):
        with pytest.raises(ChipError, match=name):
            FamilyFit(**{name: True})


@pytest.mark.parametrize("bad", [np.array([0.5, 0.6]), 3, ["ideal"]])
def test_an_efficiency_that_is_neither_a_mode_nor_a_model_is_one_error(bad):
    # an array was compared elementwise with 'ideal' and ended in "truth value of an array is ambiguous"
    with pytest.raises(lr.RooflineError, match="efficiency must be 'ideal' or 'calibrated'"):
        lr.estimate("meta-llama/Llama-3.1-8B", "h100-sxm", efficiency=bad)


def test_an_attention_grid_is_priced_point_by_point(attn_chip):
    # the two hand cases above on one grid: point 0 the prefill (batch 1, q = kv = 1024: 52.1901 us), point 1 the
    # decode (batch 4, q = 1, kv 4096: 20.7008 us); each point is priced by its own family, not the grid's majority
    op = _attn(np.array([1.0, 4.0]), np.array([1024.0, 1.0]), np.array([1024.0, 4096.0]))
    assert family_of(op) == "attention"  # the op's family (and band): decode only where every point is
    assert _t(op, attn_chip).t_s == pytest.approx([52.1901e-6, 20.7008e-6], rel=1e-5)


def test_where_positive_guards_the_points_that_are_not_positive_by_hand():
    # fn(x) where x > 0, the default elsewhere, and fn never given a non-positive x (1 / 0 raises here)
    from llm_roofline.units import where_positive

    with np.errstate(divide="raise"):
        assert list(where_positive(np.array([0.0, 2.0, -1.0]), lambda v: 1.0 / v, 7.0)) == [7.0, 0.5, 7.0]
        assert list(where_positive(np.array([4.0, 0.5]), lambda v: 1.0 / v, 7.0)) == [0.25, 2.0]
        assert where_positive(np.float64(0.0), lambda v: 1.0 / v, 7.0) == 7.0
        assert where_positive(4.0, lambda v: 1.0 / v, 7.0) == 0.25


# ------------------------------------------------------------------------------ Marlin MoE blocks, expert width
def test_moe_kernels_pad_each_experts_rows_to_the_block_their_rule_picks():
    from llm_roofline.expert_kernels import m_block_padding

    # rule 1, vLLM's fused_marlin_moe: block = the smallest of 8, 16, 32, 48, 64 with R / block < 0.9, R = tokens x
    # top-k / local experts, else 64; an expert's T rows run ceil(T / block) blocks. Kimi-K2 int4 (top-8 of 384) on
    # H100: at ep 16 (24 local experts) 128 tokens give R = 42.7 (block 48) and 160 give R = 53.3 (block 64), where the
    # measured block time steps from 400 to 524 us; at T = 160 * 8 / 384 = 3.33 rows that is 3.33 / 64
    assert m_block_padding(128 * 8 / 384, 128 * 8 / 24, 1) == pytest.approx((128 * 8 / 384) / 48)
    assert m_block_padding(160 * 8 / 384, 160 * 8 / 24, 1) == pytest.approx((160 * 8 / 384) / 64)
    # tp 1, ep 1: R = T; T = 16 -> 16 / 0.9 = 17.8 > 16, so block 32: 0.5; T = 85.3 -> two blocks of 64: 85.3 / 128;
    # T = 341.3 -> six: 341.3 / 384; T = 1 -> block 8: 1 / 8
    t = np.array([16.0, 4096 * 8 / 384, 16384 * 8 / 384, 1.0])
    assert np.allclose(m_block_padding(t, t, 1), [0.5, (4096 * 8 / 384) / 128, (16384 * 8 / 384) / 384, 0.125])
    # rule 2, OpenAI triton_kernels (GPT-OSS, top-4 of 32 on H100): block = next power of two of floor(R) in 16 ... 128.
    # 128 tokens: R = 16 -> 16; 160: R = 20 -> 32 (measured 222 -> 233 us); 1,536: R = 192 -> two blocks of 128
    # (763 us against 397 at 768 tokens); T = 1 -> 16: 1 / 16
    t = np.array([128, 160, 1536, 8]) * 4 / 32
    assert np.allclose(m_block_padding(t, t, 2), [1.0, 20 / 32, 192 / 256, 1 / 16])
    # rows varying about T (spread 1, a model's routing): the last block half full on average, max(1, T / b + 1/2)
    # blocks. Rule 1 at T = 16 (block 32): 1 block, 0.5; 85.33 (64): 1.8333 -> 85.33 / 117.33; 341.33: 5.8333 ->
    # 341.33 / 373.33; 1 (block 8): 1 / 8. T = 64 (Kimi-K2 int4 on B200 at tp 8, 3,072 tokens): 1.5 blocks against
    # the balanced 1, where the collector's power_law_1.01 rows take 1.45x the balanced (2.092 / 1.443 ms)
    t = np.array([16.0, 4096 * 8 / 384, 16384 * 8 / 384, 1.0])
    assert np.allclose(m_block_padding(t, t, 1, 1.0), [0.5, 85.3333 / 117.3333, 341.3333 / 373.3333, 0.125])
    assert m_block_padding(64.0, 64.0, 1, 1.0) / m_block_padding(64.0, 64.0, 1) == pytest.approx(1 / 1.5)
    # unknown rows (0) or no rule: factor 1
    assert m_block_padding(5.0, 0.0, 1) == 1.0 and m_block_padding(0.0, 5.0, 2) == 1.0
    assert m_block_padding(5.0, 5.0, 0) == 1.0


def _kimi_like_int4_up(tokens, rows, walked, expert_chips=1):
    # an int4 expert up_gate of i / tp = 1440 (n = 2 * 1440), 16 local experts, 4 read
    return gemm("ffn.experts.up_gate", "moe", 1, tokens=tokens, k=2880, n=2880, act_bytes_per_elem=2, n_matrices=4,
                matrices_read=4, n_stored=16, rows_per_matrix=rows, walked_rows=walked, style="expert",
                expert_width=1440, expert_chips=expert_chips, **weight_format("int4").gemm_storage(2880))


def test_int4_experts_pay_marlin_blocks_and_the_width_factor_by_hand(tmp_path):
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP + _MOE_FITS + "\n[efficiency.moe_int4]\ncompute_max = 0.4\nmemory_max = 0.5\n"
                 "compute_m_block_rule = 1\ncompute_width_half = 160\n")
    chip = lr.load_chip(str(p))
    op = _kimi_like_int4_up(64, 20, 256)
    assert (op.expert_width, op.local_experts) == (1440, 16)
    # routed rows per local expert 256 / 16 = 16 -> block 32 (16 >= 0.9 * 16); a model's 20 rows per expert vary
    # about 20 (spread): 20 / 32 + 1/2 = 1.125 blocks, 20 / 36 = 0.5556;
    # width 1440 / (1440 + 160) = 0.9: compute 0.4 * 0.5556 * 0.9 = 0.2 of 100 TFLOP/s;
    # flops 2 * 64 * 2880 * 2880 * 4 = 4,246,732,800 -> 212.33664 us; memory: weights 4 * 2880 * 2880 * 4.15625 / 8
    # = 17,236,800 B + activations 64 * 5760 * 2 * 4 = 2,949,120 B at 0.5 TB/s = 40.37184 us; compute-bound
    assert float(_t(op, chip).t_s) == pytest.approx(212.33664e-6, rel=1e-9)
    # the same op over a grid (for_ops: the GEMMs of a family stacked) at 20 and 70 rows per expert (block 64 from
    # R = 1024 / 16 = 64: 70 / 64 + 1/2 = 1.59375 blocks, 70 / 102)
    grid = _kimi_like_int4_up(np.array([64.0, 224.0]), np.array([20.0, 70.0]), np.array([256.0, 1024.0]))
    (rows, eff), = calibrated_model(chip).for_ops([grid], chip, (2,))
    assert np.allclose(eff.compute, [0.2, 0.4 * 70 / 102 * 0.9])
    # a non-expert GEMM carries none of the features
    dense = gemm("ffn.up", "dense", 1, tokens=4, k=8, n=8, bits_per_weight=16, act_bytes_per_elem=2)
    assert (dense.expert_width, dense.local_experts, dense.expert_chips) == (0.0, 0.0, 0.0)


def test_experts_split_over_chips_pay_the_expert_parallel_floor_by_hand(tmp_path):
    # fitted for fp4 experts (fit._FREE); any MoE fit that carries overhead_ep_s prices it, here an int4 one
    p = tmp_path / "round-gpu.toml"
    p.write_text(ROUND_CHIP + _MOE_FITS + "\n[efficiency.moe_int4]\ncompute_max = 0.4\nmemory_max = 0.5\n"
                 "overhead_s = 10e-6\noverhead_ep_s = 17e-6\n")
    chip = lr.load_chip(str(p))
    one, split = _kimi_like_int4_up(64, 20, 256), _kimi_like_int4_up(64, 20, 256, expert_chips=4)
    assert (one.expert_chips, split.expert_chips) == (1.0, 4.0)
    # compute-bound at 0.4 of 100 TFLOP/s: 4,246,732,800 FLOPs -> 106.16832 us; one kernel's floor 10 us, under expert
    # parallelism (4 chips) 10 + 17 = 27 us: 116.16832 and 133.16832 us
    assert float(_t(one, chip).t_s) == pytest.approx(116.16832e-6, rel=1e-9)
    assert float(_t(split, chip).t_s) == pytest.approx(133.16832e-6, rel=1e-9)
    # over a grid (for_ops stacks the family's GEMMs: ep 1 and 4 side by side)
    grid = _kimi_like_int4_up(np.array([64.0, 224.0]), np.array([20.0, 70.0]), np.array([256.0, 1024.0]))
    parts = calibrated_model(chip).for_ops([grid, replace(grid, expert_chips=4.0)], chip, (2,))
    (rows, eff), = parts
    assert rows == [0, 1] and np.allclose(np.broadcast_to(eff.overhead_s, (2, 2)), [[10e-6] * 2, [27e-6] * 2])
    # moe_ep unknown (0) or 1: no floor of its own
    for ep in (0.0, 1.0):
        assert FamilyFit(overhead_s=10e-6, overhead_ep_s=17e-6).efficiency(20.0, expert_chips=ep).overhead_s == 10e-6


def test_a_chip_file_names_an_unknown_m_block_rule(tmp_path):
    p = tmp_path / "round-gpu.toml"
    for bad in ("1.5", "3", "-1"):
        p.write_text(ROUND_CHIP + "\n[efficiency.moe_int4]\ncompute_max = 0.4\ncompute_m_block_rule = " + bad + "\n")
        with pytest.raises(lr.ChipError, match="compute_m_block_rule"):
            calibrated_model(lr.load_chip(str(p)))
    # a tile of half a row priced Mixtral's 8k-token prefill on B200 at 34 s: a tile of rows is none (0) or >= 1 row
    for name, family in (("memory_token_tile", "moe"), ("compute_m_tile", "gemm_fp8")):
        p.write_text(ROUND_CHIP + f"\n[efficiency.{family}]\ncompute_max = 0.4\n{name} = 0.5\n")
        with pytest.raises(lr.ChipError, match=rf"{name} must be 0 \(none\) or at least 1 row, got 0.5"):
            calibrated_model(lr.load_chip(str(p)))


def test_blackwell_moe_kernels_reread_an_experts_weights_past_the_l2_by_hand():
    from llm_roofline.expert_kernels import restreamed_weight_bytes

    # Mixtral-8x7B, one expert's fused block: gate, up and down, 3 x 4096 x 14336 x 2 B = 352,321,536 B; B200's L2
    # 126e6 B: every token tile after the first re-reads 1 - 126e6 / 352,321,536 = 0.642372 of the weights. An
    # 8192-token prefill routes 2 x 8192 rows to 8 experts: 2048 rows each, in 64-row tiles: 31 more tiles. The
    # up_gate GEMM's weights: 8 x 4096 x 28672 x 2 B = 1,879,048,192 B -> 3.7418e10 B more
    extra = 1_879_048_192 * 31 * (1 - 126e6 / 352_321_536)
    assert restreamed_weight_bytes(1_879_048_192, 2048, 352_321_536, 126e6, 64.0) == pytest.approx(extra, rel=1e-12)
    for args in ((1e9, 2048, 100e6, 126e6, 64.0), (1e9, 64, 352e6, 126e6, 64.0), (1e9, 2048, 352e6, 126e6, 0.0)):
        assert restreamed_weight_bytes(*args) == 0.0  # within the L2, one tile, no tile
    # the estimate: B200's moe fit carries TRT-LLM's 64-token tile, so that GEMM reads its 2,952,790,016 B (weights
    # + 8192 x 2 x (4096 + 28672) x 2 B of activations) plus the re-reads at the fit's memory fraction
    fit = lr.load_chip("b200").calibration["moe"]
    assert fit["memory_token_tile"] == 64.0 and "memory_token_tile" not in lr.load_chip("h100-sxm").calibration["moe"]
    ops = lr.estimate("mistralai/Mixtral-8x7B-v0.1", "b200", batch=1, prompt_len=8192, gen_len=1).ops
    up = ops[(ops.phase == "prefill") & (ops.name == "ffn.experts.up_gate")].iloc[0]
    assert (up.weight_bytes, up.bytes) == (1_879_048_192, 2_952_790_016)
    assert up.t_memory_s == pytest.approx((2_952_790_016 + extra) / (8e12 * fit["memory_max"]), rel=1e-9)
    # a grid prices its GEMMs stacked (CalibratedModel.for_ops): the same TTFT as one point
    one = lr.estimate("mistralai/Mixtral-8x7B-v0.1", "b200", batch=1, prompt_len=8192, gen_len=1).ttft_s
    grid = lr.sweep("mistralai/Mixtral-8x7B-v0.1", "b200", batch=[1, 2], prompt_len=[1024, 8192], gen_len=1)
    assert grid[(grid.batch == 1) & (grid.prompt_len == 8192)].ttft_s.iloc[0] == pytest.approx(one, rel=1e-9)
    # Triton's fused MoE on H100 shows no such step: its time is the weights' once
    ops = lr.estimate("mistralai/Mixtral-8x7B-v0.1", "h100-sxm", batch=1, prompt_len=8192, gen_len=1).ops
    up = ops[(ops.phase == "prefill") & (ops.name == "ffn.experts.up_gate")].iloc[0]
    moe = lr.load_chip("h100-sxm").calibration["moe"]
    assert up.t_memory_s == pytest.approx(2_952_790_016 / (3.35e12 * moe["memory_max"]), rel=1e-9)
