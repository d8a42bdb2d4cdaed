"""GEMM kernels' tile grids (llm_roofline/gemm_tiles.py): vLLM's SM89 CUTLASS fp8 tile table, the waves of tiles
over a chip's SMs, and how the efficiency model and its fit use them. Hand arithmetic; the table is read from
vllm-project/vllm csrc/quantization/cutlass_w8a8/scaled_mm_c2x_sm89_fp8_dispatch.cuh."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import llm_roofline as lr
from llm_roofline.calibrate import fit as fitting
from llm_roofline.calibrate import measurements
from llm_roofline.chip_fits import calibrated_model
from llm_roofline.efficiency import CalibratedModel, FamilyFit
from llm_roofline.gemm_tiles import SM89_FP8, sm89_fp8_tile, tile_grid, tiled
from llm_roofline.ops import gemm
from llm_roofline.roofline import Efficiency


@pytest.mark.parametrize("m, n, tile", [
    (1, 4096, (32, 64)),        # mp2 = max(32, 1) = 32: sm89_fp8_config_M32, np2 4096 <= 8192: 32 x 64 x 128
    (17, 12288, (32, 128)),     # M32, np2 16384: 32 x 128 x 128
    (32, 28672, (32, 64)),      # M32, np2 32768 > 16384: 32 x 64 x 128
    (48, 4096, (64, 64)),       # sm89_fp8_config_M64, np2 <= 8196: 64 x 64 x 128
    (48, 16384, (64, 128)),     # M64, np2 16384: 64 x 128 x 128
    (100, 8192, (64, 128)),     # sm89_fp8_config_M128, np2 <= 8192: 64 x 128 x 128
    (100, 14336, (128, 128)),   # M128, np2 16384: 128 x 128 x 64
    (100, 28672, (128, 64)),    # M128, np2 32768: 128 x 64 x 128
    (200, 4096, (64, 128)),     # sm89_fp8_config_M256, np2 <= 4096: 64 x 128 x 128
    (200, 6144, (128, 128)),    # M256, np2 8192: 128 x 128 x 64
    (4097, 4096, (128, 128)),   # sm89_fp8_config_default, np2 <= 4096: 128 x 128 x 64
    (4097, 6144, (256, 128)),   # default, np2 8192: 256 x 128 x 64, 3 stages
    (4097, 10240, (128, 128)),  # default, np2 16384: 128 x 128 x 64
])
def test_sm89_fp8_tiles_follow_vllms_dispatch_table(m, n, tile):
    tm, tn = sm89_fp8_tile(m, n)
    assert (float(tm), float(tn)) == tile


def test_tile_waves_by_hand():
    # L40S, 142 SMs. M 4097, N 6144: 256 x 128 tiles, ceil(4097 / 256) = 17 x 48 = 816 tiles, ceil(816 / 142) = 6
    # waves; useful share 4097 * 6144 / (6 * 142 * 256 * 128) = 25,171,968 / 27,918,336 = 0.901628...; a tall tile
    waves, factor, tall = tile_grid(4097, 6144, 142, SM89_FP8)
    assert (float(waves), float(tall)) == (6.0, 1.0)
    assert float(factor) == pytest.approx(25_171_968 / 27_918_336, rel=1e-12)
    # M 1, N 4096: 32 x 64 tiles, 64 of them in one wave: 4096 / (142 * 32 * 64) = 4096 / 290,816
    waves, factor, tall = tile_grid(1, 4096, 142, SM89_FP8)
    assert (float(waves), float(tall)) == (1.0, 0.0) and float(factor) == pytest.approx(4096 / 290_816, rel=1e-12)
    # M 1280, N 1024: 128 x 128 tiles (M > 256, np2 1024 <= 4096), 10 x 8 = 80 in one wave: 1280 x 1024 /
    # (142 x 16,384) = 1,310,720 / 2,326,528
    waves, factor, _ = tile_grid(1280, 1024, 142, SM89_FP8)
    assert float(waves) == 1.0 and float(factor) == pytest.approx(1_310_720 / 2_326_528, rel=1e-12)
    # a grid: each point its own waves (M 256 -> 128 x 128 at N 6144: 2 x 48 = 96 tiles, one wave)
    waves, _, tall = tile_grid(np.array([256.0, 4097.0]), 6144, 142, SM89_FP8)
    assert waves.tolist() == [1.0, 6.0] and tall.tolist() == [0.0, 1.0]
    # a fraction of a row runs one row's tiles (underflowing to a 0 share priced a 1e-266-row GEMM at infinite time)
    assert [float(x) for x in tile_grid(0.5, 4096, 142, SM89_FP8)] == [float(x) for x in tile_grid(1, 4096, 142, 1.0)]
    # unknown M, no rule, no SMs: nothing priced
    for args in ((0, 6144, 142, SM89_FP8), (4097, 6144, 142, 0.0), (4097, 6144, 0, SM89_FP8)):
        assert tuple(map(float, tile_grid(*args))) == (0.0, 1.0, 0.0)


@settings(max_examples=300, deadline=None)
@given(m=st.floats(0, 1e6), n=st.floats(0, 1e6), units=st.integers(0, 1000), rule=st.sampled_from([0.0, SM89_FP8]),
       wave=st.floats(0, 1e-3), tall=st.floats(0, 1e-9))
def test_tile_waves_never_make_a_gemm_faster(m, n, units, rule, wave, tall):
    # the tile grid's factor is a useful share (<= 1) and its times are >= 0: never below the ideal roofline
    p = FamilyFit(compute_max=0.7, compute_tile_rule=rule, overhead_per_wave_s=wave, overhead_per_tall_output_s=tall)
    e = tiled(Efficiency(compute=0.7, overhead_s=1e-6), p, m, n, units)
    assert 0.0 < float(e.compute) <= 0.7 and float(e.overhead_s) >= 1e-6
    waves, factor, _ = tile_grid(m, n, units, rule)
    assert float(waves) >= (1.0 if m >= 1 and n >= 1 and units and rule else 0.0)


def _fp8_op(tokens):
    return gemm("attn.qkv_proj", "dense", 1, tokens=tokens, k=4096, n=6144, bits_per_weight=8, act_bytes_per_elem=1,
                compute_dtype="fp8")


def test_an_fp8_gemm_on_an_ada_chip_runs_its_tile_waves():
    p = FamilyFit(compute_max=0.6, overhead_s=2e-6, compute_tile_rule=SM89_FP8, overhead_per_wave_s=3e-6,
                  overhead_per_tall_output_s=5e-12)
    model = CalibratedModel("x", "t", {"gemm_fp8": p})
    l40s = lr.load_chip("l40s")
    assert l40s.onchip_units == 142 and lr.load_chip("rtx-4090").onchip_units == 128
    eff = model.for_op(_fp8_op(4097), l40s)
    # compute 0.6 x 0.901628 (test_tile_waves_by_hand); overhead 2 us + 6 waves x 3 us + 5e-12 x 25,171,968 outputs
    # of a 256-row tile = 2 + 18 + 125.85984 = 145.85984 us
    assert float(eff.compute) == pytest.approx(0.6 * 25_171_968 / 27_918_336, rel=1e-12)
    assert float(eff.overhead_s) == pytest.approx(145.85984e-6, rel=1e-12)
    # an RTX 4090 (128 SMs): 816 tiles in ceil(816 / 128) = 7 waves: 25,171,968 / (7 * 128 * 32,768) = 0.857422;
    # overhead 2 + 21 + 125.85984 us
    eff = model.for_op(_fp8_op(4097), lr.load_chip("rtx-4090"))
    assert float(eff.compute) == pytest.approx(0.6 * 25_171_968 / 29_360_128, rel=1e-12)
    assert float(eff.overhead_s) == pytest.approx(148.85984e-6, rel=1e-12)
    # a chip whose file gives no SMs: the fit's compute_max and floor, no waves
    eff = model.for_op(_fp8_op(4097), lr.load_chip("h100-sxm"))
    assert (float(eff.compute), float(eff.overhead_s)) == (0.6, 2e-6)


def test_the_shipped_l40s_fp8_fit_prices_llama_8b_qkv_by_its_waves():
    # Llama-3.1-8B's QKV projection at a 4096-token prompt: M 4096, N 4096 + 2 x 1024 = 6144, K 4096: 256 x 128
    # tiles, 16 x 48 = 768 of them in ceil(768 / 142) = 6 waves, useful share 4096 x 6144 / (6 x 142 x 32,768) =
    # 25,165,824 / 27,918,336; flops 2 x 4096 x 6144 x 4096 = 206,158,430,208 at the fp8 peak 733e12 x compute_max
    fit = lr.load_chip("l40s").calibration["gemm_fp8"]
    assert fit["compute_tile_rule"] == 1.0 and "compute_tokens_half" not in fit and "compute_m_tile" not in fit
    share = 25_165_824 / 27_918_336
    ops = lr.estimate("meta-llama/Llama-3.1-8B", "l40s", batch=1, prompt_len=4096, gen_len=1, weight_dtype="fp8",
                      act_dtype="fp8").ops
    qkv = ops[(ops.phase == "prefill") & (ops.name == "attn.qkv_proj")].iloc[0]
    assert qkv.flops == 206_158_430_208
    assert qkv.t_compute_s == pytest.approx(206_158_430_208 / (733e12 * fit["compute_max"] * share), rel=1e-9)
    over = (fit["overhead_s"] + 6 * fit["overhead_per_wave_s"] + 4096 * fit["overhead_per_token_s"]
            + 4096 * 6144 * (fit["overhead_per_output_elem_s"] + fit["overhead_per_tall_output_s"]))
    assert qkv.t_s == pytest.approx(max(qkv.t_compute_s, qkv.t_memory_s) + over, rel=1e-9)
    # a grid prices its GEMMs stacked (CalibratedModel.for_ops): the same TTFT as one point
    one = lr.estimate("meta-llama/Llama-3.1-8B", "l40s", batch=1, prompt_len=4096, gen_len=1, weight_dtype="fp8",
                      act_dtype="fp8").ttft_s
    grid = lr.sweep("meta-llama/Llama-3.1-8B", "l40s", batch=[1, 2], prompt_len=[1024, 4096], gen_len=1,
                    weight_dtype="fp8", act_dtype="fp8")
    assert grid[(grid.batch == 1) & (grid.prompt_len == 4096)].ttft_s.iloc[0] == pytest.approx(one, rel=1e-9)


def _fp8_rows(chip, truth: FamilyFit) -> pd.DataFrame:
    """fp8 GEMM rows over M 1-8192 and three (N, K), timed by `truth` on `chip`."""
    m = np.repeat([1, 16, 33, 64, 100, 200, 300, 1024, 2049, 4097, 8192], 4).astype(float)
    n = np.tile([4096, 6144, 14336, 28672], 11).astype(float)
    df = measurements.normalize(pd.DataFrame(dict(family="gemm", op="x", model="a", dtype="fp8", m=m, k=4096.0, n=n,
                                                  measured_s=1.0)))
    df["measured_s"] = fitting.predict(df, chip, {"gemm_fp8": truth})
    return df


def test_an_ada_fp8_gemm_fit_runs_the_tile_rule_and_finds_its_wave_time():
    # rows timed by a tile-wave law on the L40S: the fit pins the rule (fit._TILE_RULE: Ada, a chip file with SMs),
    # fits the time per wave and per tall-tile output in place of the tokens and columns halves and the M tile
    chip = lr.load_chip("l40s")
    truth = FamilyFit(compute_max=0.65, memory_max=0.75, overhead_s=2e-6, compute_tile_rule=SM89_FP8,
                      overhead_per_wave_s=3e-6, overhead_per_tall_output_s=5e-12)
    df = _fp8_rows(chip, truth)
    got = fitting.fit(df, chip, date="x").fits["gemm_fp8"]
    assert got.compute_tile_rule == SM89_FP8
    assert (got.compute_tokens_half, got.compute_cols_half, got.compute_m_tile) == (0.0, 0.0, 0.0)
    assert got.overhead_per_wave_s == pytest.approx(3e-6, rel=0.1)
    assert got.overhead_per_tall_output_s == pytest.approx(5e-12, rel=0.1)
    assert fitting.predict(df, chip, {"gemm_fp8": got}) == pytest.approx(df["measured_s"].to_numpy(), rel=0.02)
    # on Hopper (no tile rule) the same kind of rows keep the smooth factors and no wave time
    h100 = lr.load_chip("h100-sxm")
    got = fitting.fit(_fp8_rows(h100, FamilyFit(compute_max=0.65, memory_max=0.75, overhead_s=2e-6)), h100,
                      date="x").fits["gemm_fp8"]
    assert (got.compute_tile_rule, got.overhead_per_wave_s, got.overhead_per_tall_output_s) == (0.0, 0.0, 0.0)


def test_a_chip_files_sms_must_be_a_whole_positive_number(tmp_path):
    text = Path(lr.load_chip("l40s").path).read_text()
    for bad, why in (("1.5", "whole number"), ("0", r"\[1, 100000\]"), ("1e9", r"\[1, 100000\]"), ('"142"', "number"),
                     ("true", "number"), ("nan", r"\[1, 100000\]")):
        p = tmp_path / "ada.toml"
        p.write_text(text.replace("units = 142 ", f"units = {bad} ", 1))
        with pytest.raises(lr.ChipError, match=why):
            lr.load_chip(str(p))
    for bad in ("2", "0.5"):  # a tile rule is 0 or 1
        p.write_text(text.replace("compute_tile_rule = 1.0", f"compute_tile_rule = {bad}", 1))
        with pytest.raises(lr.ChipError, match="compute_tile_rule must be 0 or 1"):
            calibrated_model(lr.load_chip(str(p)))
