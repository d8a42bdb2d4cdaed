"""The AIConfigurator vLLM converter (calibrate/aic_vllm.py) on a small extract (tests/fixtures/aic_vllm,
provenance in its README): byte accounting by hand, and `llm-roofline calibrate` reading the csv.gz tables."""

from pathlib import Path

import numpy as np
import pytest

from llm_roofline.calibrate import aic_vllm, calibrate, measurements

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "aic_vllm" / "h100_sxm"


@pytest.fixture(scope="module")
def rows():
    return measurements.normalize(aic_vllm.convert_aic(FIXTURE))


def test_gemm_rows(rows):
    g = rows[rows.family == "gemm"].set_index(["dtype", "m"])
    # bf16, m = 1, n = k = 4096: flops 2*4096*4096 = 33,554,432; bytes (4096 + 4096*4096) * 2 + 4096 * 2
    #   = 33,570,816; latency 0.015045 ms (fixture row 12)
    r = g.loc[("bf16", 1.0)]
    assert (r.flops, r["bytes"], r.measured_s) == (33_554_432, 33_570_816, pytest.approx(15.045e-6, rel=1e-4))
    # fp8 in, bf16 out: (4096 + 16,777,216) * 1 + 4096 * 2 = 16,789,504 bytes; the gemm_fp8 family
    r = g.loc[("fp8", 1.0)]
    assert (r["bytes"], r.fam) == (16_789_504, "gemm_fp8")
    # the collector times six layers of their own weights on one input (collect_gemm.py outside_loop_count = 6), each
    # output dropped before the next layer allocates its own (one buffer): bf16 working set 4096 * 2 + 6 * 16,777,216
    # * 2 + 4096 * 2 = 8,192 + 201,326,592 + 8,192 = 201,342,976 B; fp8 4096 + 6 * 16,777,216 + 8,192 = 100,675,584 B
    assert g.loc[("bf16", 1.0)].working_set == 201_342_976 and r.working_set == 100_675_584
    assert set(rows[rows.family == "gemm"].gpu) == {"h100-sxm"}


def test_fp8_block_rows_keep_the_kernel_time_above_the_floor():
    import pandas as pd

    # one block kernel "K" whose smallest time (its floor) is 0.05 ms; a block row is kept where the per-tensor fp8
    # kernel of the same shape takes >= 2 x 0.05 = 0.1 ms: shape (128, 128, 256) (per-tensor 0.2 ms), not (1, ...)
    # (per-tensor 0.01 ms: its 0.05 ms is the floor); the bf16 and fp8 rows stay
    t = pd.DataFrame({"gemm_dtype": ["fp8_block", "fp8_block", "fp8", "fp8", "bfloat16"],
                      "kernel_source": ["K", "K", "P", "P", "B"], "m": [1, 128, 1, 128, 1], "n": [128] * 5,
                      "k": [256] * 5, "latency": [0.05, 0.3, 0.01, 0.2, 0.02]})
    r = measurements.normalize(pd.DataFrame(aic_vllm.gemm_rows(t)).assign(gpu="h100-sxm"))
    b = r[r.fam == "gemm_fp8_block"]
    assert list(b.m) == [128] and len(r) == 4
    # bytes: (128*256 + 256*128) * 1 + 128*128 * 2 = 98,304, plus fp32 scales (128*256/128 + 256*128/16384) * 4
    #   = (256 + 2) * 4 = 1,032 -> 99,336; flops 2*128*128*256 = 8,388,608
    assert (b["bytes"].iloc[0], b.flops.iloc[0], b.dtype.iloc[0]) == (99_336, 8_388_608, "fp8")
    assert b.working_set.iloc[0] == 99_336  # one layer timed (outside_loop_count 1 for fp8_block)


def test_nvfp4_gemm_rows_are_the_fp4_family_at_four_and_a_half_bits():
    import pandas as pd

    # vLLM's NVFP4 linear (W4A4): weights and activations 4 bits + one fp8 scale per 16 elements = 4.5 bits
    # (0.5625 bytes), output bf16. m = 2, n = 64, k = 128: bytes (2*128 + 128*64) * 0.5625 + 2*64*2
    # = 8,448 * 0.5625 + 256 = 4,752 + 256 = 5,008; flops 2*2*64*128 = 32,768; latency 0.008 ms
    t = pd.DataFrame({"gemm_dtype": ["nvfp4", "fp8"], "kernel_source": ["F", "P"], "m": [2, 2], "n": [64, 64],
                      "k": [128, 128], "latency": [0.008, 0.007]})
    r = measurements.normalize(pd.DataFrame(aic_vllm.gemm_rows(t)).assign(gpu="b200")).set_index("op")
    f = r.loc["gemm_nvfp4"]
    assert (f.fam, f["dtype"], f["bytes"], f.flops, f.measured_s) == ("gemm_fp4", "fp4", 5_008, 32_768,
                                                                    pytest.approx(8e-6))
    assert r.loc["gemm_fp8"].fam == "gemm_fp8"  # the per-tensor fp8 row keeps its family


def test_attention_rows(rows):
    c = rows[(rows.op == "context_attention") & (rows.m == 1024)]
    c = c[c.elems == 1024 * 32 * 256].iloc[0]  # batch 1, isl 1024, 32 heads
    # flops 1024*1025/2 pairs * 2*32 heads * 256 (dqk + dv) = 8,598,323,200; keys (1024 + 1)/2 = 512.5
    # bytes: Q+O 8,388,608 elements * 2 + K,V 1024 * 8 heads * 256 * 2 = 16,777,216 + 4,194,304 = 20,971,520
    assert (c.flops, c["keys"], c["bytes"], c.fam) == (8_598_323_200, 512.5, 20_971_520, "attention")
    d = rows[(rows.op == "generation_attention") & (rows.m == 16) & (rows["keys"] == 1024)]
    # decode, batch 16, KV 1 + 1023 = 1024: flops 16*1024 * 2*32 * 256 = 268,435,456; Q/O 16*32*256*2 = 262,144 B
    # KV bf16 16*1024*8*256*2 = 67,108,864 (-> 67,371,008), fp8 half of it (-> 33,816,576)
    assert set(d.flops) == {268_435_456} and sorted(d["bytes"]) == [33_816_576, 67_371_008]
    # the fp8 KV cache decodes with its own fit (attention_decode_fp8), the bf16 one with attention_decode
    assert dict(zip(d["bytes"], d.fam)) == {33_816_576: "attention_decode_fp8", 67_371_008: "attention_decode"}
    assert set(d.head_dim) == {128} and sorted(d.kv_bits) == [8, 16] and set(d.window) == {0}
    # sliding window 128, batch 64, KV 1 + 8191: only the window is read, keys 128 and the window kept (a windowed
    # decode's per-head term); bf16 KV 64*128*8*256*2 = 33,554,432 + Q/O 64*32*256*2 = 1,048,576 -> 34,603,008 B
    w = rows[(rows.op == "generation_attention") & (rows.m == 64) & (rows.window == 128) & (rows.kv_bits == 16)]
    assert sorted(w["keys"]) == [2, 128, 128] and set(w[w["keys"] == 128]["bytes"]) == {34_603_008}
    # the context: isl + step = 1 + 1 = 2 (inside the window), 1 + 1023 = 1024 and 1 + 8191 = 8192 (past it)
    assert sorted(w.kv_len) == [2, 1024, 8192]


def test_windowed_decode_rows_past_the_window(rows):
    from llm_roofline.calibrate.fit import _terms
    from llm_roofline.hardware import load_chip

    d = rows[(rows.fam == "attention_decode_fp8") & (rows.m == 64)].reset_index(drop=True)
    t = _terms(d, load_chip("h100-sxm"), "attention_decode_fp8")
    # window 128: the contexts 1024 and 8192 are past it (window_keys = its 128 keys), the context 2 is not (0),
    # nor is any row without a window
    past = dict(zip(zip(d.window, d.kv_len), t.window_keys))
    assert (past[(128.0, 1024.0)], past[(128.0, 8192.0)], past[(128.0, 2.0)]) == (128.0, 128.0, 0.0)
    assert all(v == 0.0 for (win, _), v in past.items() if win == 0)


def test_prefill_rows_query_tiles(rows):
    from llm_roofline.calibrate.fit import _terms
    from llm_roofline.hardware import load_chip

    c = rows[rows.op == "context_attention"].reset_index(drop=True)
    t = _terms(c, load_chip("h100-sxm"), "attention")
    i = c.index[(c.m == 4 * 1024) & (c["keys"] == 512.5) & (c.q_per_kv == 4)][0]  # batch 4, isl 1024, 32 heads, 8 KV heads (G = 4)
    # per head 4 * 32 * ceil(1024/128) = 1024 tiles; per group 4 * 8 * ceil(4096/128) = 1024 too; isl 128, batch 4:
    # per head 4 * 32 * 1 = 128, per group 4 * 8 * ceil(512/128) = 128
    assert (t.head_tiles[i], t.group_tiles[i]) == (1024.0, 1024.0)
    j = c.index[(c.m == 4 * 128) & (c["keys"] == 64.5) & (c.q_per_kv == 4)][0]
    assert (t.head_tiles[j], t.group_tiles[j]) == (128.0, 128.0)


def test_a_parameter_without_rows_to_price_stays_zero(rows):
    from llm_roofline.calibrate.fit import _terms, fit_family
    from llm_roofline.hardware import load_chip

    d = rows[(rows.fam == "attention_decode") & (rows.window == 0)].reset_index(drop=True)
    t = _terms(d, load_chip("h100-sxm"), "attention_decode")
    # no sliding-window row: the windowed-head time is not fitted (a free simplex coordinate would wander)
    assert fit_family(t, d.measured_s.to_numpy(), "attention_decode").overhead_per_windowed_head_s == 0.0


def test_allreduce_rows_keep_the_cuda_graph_backend(rows):
    a = rows[rows.family == "all_reduce"]
    # 65,536 bf16 elements = 131,072 bytes; 4 sizes x 3 GPU counts, the eager rows left out
    assert len(a) == 12 and 131_072 in set(a["bytes"]) and set(a.tp) == {2, 4, 8}


def test_calibrate_reads_the_tables(capsys):
    from llm_roofline.cli import main

    c = calibrate(FIXTURE, "h100-sxm", date="d")
    assert c.source.startswith("AIConfigurator vLLM kernel tables") and c.rows == len(measurements.normalize(
        aic_vllm.convert_aic(FIXTURE)))
    assert {"gemm", "gemm_fp8", "attention", "attention_decode", "collective"} <= set(c.result.fits)
    for p in c.result.fits.values():
        assert p.err_p10 <= 1 <= p.err_p90 and np.isfinite(p.overhead_s)
    assert main(["calibrate", str(FIXTURE / "gemm_perf.csv.gz"), "--chip", "h100-sxm"]) == 0
    assert "[efficiency.gemm_fp8]" in capsys.readouterr().out


def test_moe_block_rows(rows):
    m = rows[rows.family == "moe"].sort_values("measured_s")
    assert len(m) == 4 and set(m.fam) == {"moe"} and set(m.kernels) == {2.0}
    one = m.iloc[0]
    # 1 token, top-2 of 8 experts (Mixtral shape h = 4096, i = 14336): 2 assignments on 2 touched experts,
    # 1 row each; flops 6 * 2 * 4096 * 14336 = 704,643,072; bytes (2 * 3*4096*14336 + 2 * (2*4096 + 3*14336)) * 2
    # = (352,321,536 + 102,400) * 2 = 704,847,872; latency 0.258741 ms; no expert parallelism: the block's
    # passes outside the GEMMs walk its 2 rows: 2 * ((4096 + 2*14336) + (14336 + 4096)) = 102,400 elements; its
    # per-token passes the token's hidden vector once on each GEMM's side, whatever the top-k: 2 * 1 * 4096 = 8,192
    assert (one.m, one.flops, one["bytes"], one.walked, one.ep) == (1.0, 704_643_072, 704_847_872, 102_400, 1)
    assert one.token_elems == 8192
    assert one.measured_s == pytest.approx(0.258741e-3, rel=1e-5)
    # 256 tokens: 512 assignments over all 8 experts -> 64 rows per expert
    assert 64.0 in set(m.m)


def test_balanced_routing_counts_the_collectors_pattern_on_rank_0():
    """AIConfigurator's balanced routing, stride s = ceil(E/k): token i takes (i + j*s) mod E (T >= s), else
    (floor(i*s/T) + j*s) mod E; the measured GPU holds experts [0, E/ep)."""
    t, k, e, ep = (np.array(x, dtype=float) for x in ([1, 4, 20, 20, 4], [8] * 5, [256, 128, 128, 128, 128],
                                                       [64, 64, 1, 8, 16]))
    pairs, touched = aic_vllm.balanced_routing(t, k, e, ep)
    # 1 token, s 32: experts 0, 32, ..., 224; rank 0 holds 0..3 -> expert 0: 1 assignment (not T*k/ep = 1/8)
    # 4 tokens, s 16: 4i + 16j; rank 0 holds 0..1 -> expert 0 (i = 0, j = 0): 1 assignment (not 1/2)
    # 20 tokens, s 16, one GPU: 160 assignments over all 128 experts (j = 7 covers 112..131, wrapping to 0..3)
    # ep 8, experts 0..15: i < 16 at j = 0 and i = 16..19 at j = 7 (128..131 -> 0..3): 20 assignments, 16 experts
    # 4 tokens, ep 16, experts 0..7: 0 and 4 at j = 0: 2 assignments on 2 experts
    assert list(pairs) == [1, 1, 160, 20, 2] and list(touched) == [1, 1, 128, 16, 2]


def test_four_bit_moe_rows_are_their_compute_dtypes_family_with_packed_weight_bytes():
    import pandas as pd

    row = dict(num_tokens=4, hidden_size=2880, inter_size=2880, topk=4, num_experts=128, moe_tp_size=1,
               moe_ep_size=1, distribution="balanced", kernel_source="k", latency=0.0723)
    df = pd.DataFrame([dict(row, moe_dtype=d) for d in ("bfloat16", "w4a16_mxfp4", "nvfp4", "fp8", "fp8_block")])
    m = measurements.normalize(pd.DataFrame(aic_vllm.moe_rows(df)).assign(gpu="b200"))
    # per-tensor fp8 experts are left out; MXFP4 weights computing in bf16 (W4A16) and NVFP4 computing in fp4 (W4A4)
    # are two kernels with two fits
    assert sorted(zip(m.fam, m.op)) == [("moe", "moe"), ("moe_fp4", "moe_nvfp4"), ("moe_fp8", "moe_fp8_block"),
                                        ("moe_quant", "moe_w4a16_mxfp4")]
    f8 = m[m.fam == "moe_fp8"].iloc[0]
    # block-scaled fp8: 16 * 3 * 2880 * 2880 * (8 + 32/16384) / 8 = 398,131,200 * 1.000244140625 = 398,228,400 B
    # + activations 460,800 B; FLOPs at the fp8 peak (W8A8 kernels; the estimator's experts of such checkpoints
    # compute in fp8)
    assert (f8.op, f8["bytes"], f8["dtype"]) == ("moe_fp8_block", 398_689_200, "fp8")
    q = m[m.op == "moe_w4a16_mxfp4"].iloc[0]
    # 4 tokens x top-4 = 16 assignments on 16 experts, 1 row each; MXFP4 weights 4.25 bits:
    # 16 * 3 * 2880 * 2880 * 4.25 / 8 = 211,507,200 B + activations 16 * (2*2880 + 3*2880) * 2 = 460,800 B
    assert (q.m, q["bytes"], q["dtype"]) == (1.0, 211_968_000, "bf16")
    assert m[m.op == "moe_nvfp4"].iloc[0]["dtype"] == "fp4"  # w4a4: the fp4 peak
    # a user's measured CSV says moe_quant for both: its dtype column (the compute dtype) splits them the same way
    user = measurements.normalize(pd.DataFrame(dict(family="moe_quant", op="x", model="a", dtype=["fp4", "bf16"],
                                                    m=1.0, k=2880, n=2880, bytes=1e6, measured_s=1e-5)))
    assert list(user.fam) == ["moe_fp4", "moe_quant"]
    # the same block at moe_ep 4: 32 experts held, the expert-parallel path (column ep)
    ep4 = measurements.normalize(pd.DataFrame(aic_vllm.moe_rows(df.assign(moe_ep_size=4))).assign(gpu="b200"))
    assert set(zip(ep4.experts, ep4.ep)) == {(32.0, 4.0)}


def test_blackwell_bf16_moe_rows_of_the_cutlass_fallback_are_left_out_of_the_moe_family():
    import pandas as pd

    # vLLM's unquantized MoE on Blackwell: FlashInfer TRT-LLM's bf16 kernel, FlashInfer CUTLASS where it falls back;
    # the moe family is the first kernel's, the second's rows come back apart (validate.py prices them)
    row = dict(num_tokens=4, topk=4, num_experts=128, moe_tp_size=1, moe_ep_size=1, distribution="balanced",
               moe_dtype="bfloat16", latency=0.05)
    df = pd.DataFrame([dict(row, hidden_size=2880, inter_size=2880,
                            kernel_source="vllm_unquantizedfusedmoe_flashinfer_trtllm_trtllmbf16experts"),
                       dict(row, hidden_size=2816, inter_size=704,
                            kernel_source="vllm_unquantizedfusedmoe_flashinfer_cutlass_flashinferexperts")])
    m = measurements.normalize(pd.DataFrame(aic_vllm.moe_rows(df)).assign(gpu="b200"))
    assert (list(m.fam), list(m.k), list(m.n)) == (["moe"], [2880], [2880])
    f = measurements.normalize(pd.DataFrame(aic_vllm.moe_rows(df, fallback=True)).assign(gpu="b200"))
    assert (list(f.fam), list(f.k), list(f.n), list(f.op)) == (["moe"], [2816], [704], ["moe_fallback"])


def test_four_bit_moe_rows_keep_the_kernels_vllm_runs_by_default_int4_apart():
    import pandas as pd

    row = dict(num_tokens=4, hidden_size=2880, inter_size=2880, topk=4, num_experts=128, moe_tp_size=2,
               moe_ep_size=1, distribution="balanced", latency=0.05)
    kernels = (("int4_wo", "vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts"),
               ("w4a16_mxfp4", "vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic"),
               ("w4a16_mxfp4", "vllm_compressedtensorsw4a4mxfp4moe_marlin_marlinexperts_situ_as_silu"),
               ("w4a8_mxfp4_mxfp8", "vllm_mxfp4moe_flashinfer_trtllm_mxfp4_mxfp8_trtllmmxfp4expertsmodular"),
               ("nvfp4", "vllm_compressedtensorsw4a4nvfp4moe_flashinfer_cutlass_flashinferexperts"),
               ("nvfp4", "vllm_compressedtensorsw4a4nvfp4moe_flashinfer_trtllm_trtllmnvfp4expertsmonolithic"))
    df = pd.DataFrame([dict(row, moe_dtype=d, kernel_source=k, num_tokens=4 + j) for j, (d, k) in enumerate(kernels)])
    m = measurements.normalize(pd.DataFrame(aic_vllm.moe_rows(df)).assign(gpu="h100"))
    # GPT-OSS's default kernel (OAI Triton on Hopper) and nvfp4's (TRT-LLM) are kept; compressed-tensors MXFP4's
    # Marlin, the MXFP8-activation kernel (an environment variable's) and nvfp4's FlashInfer CUTLASS (after TRT-LLM
    # in vLLM's order) are left out; int4 weight-only Marlin is its own family
    assert sorted(zip(m.fam, m.op)) == [("moe_fp4", "moe_nvfp4"), ("moe_int4", "moe_int4_wo"),
                                        ("moe_quant", "moe_w4a16_mxfp4")]
    q = m[m.fam == "moe_int4"].iloc[0]
    # 4 tokens x top-4 = 16 assignments on 16 experts, 1 row each; int4 weights, a bf16 scale per 128: 4.125 bits;
    # i/tp = 1440: 16 * 3 * 2880 * 1440 * 4.125 / 8 = 102,643,200 B + activations 16 * (2*2880 + 3*1440) * 2
    # = 322,560 B; one model shape measured, so its shape group names the sharding too
    assert (q.m, q["bytes"], q["dtype"], q.model) == (1.0, 102_965_760, "bf16", "h2880_i2880_k4_e128_tp2_ep1")
    # the block's shape for the Marlin M blocks and the width factor: k = hidden 2880, n = i / tp = 1440, the 4 tokens'
    # 16 routed rows over the 128 experts held at ep 1
    assert (q.k, q.n, q.routed, q.experts, q.ep) == (2880, 1440, 16, 128, 1)
    # the fit reads them as the estimator's ops carry them: width 1440, 16 / 128 = 0.125 routed rows per local expert
    from llm_roofline.calibrate.fit import _terms
    from llm_roofline.hardware import load_chip

    terms = _terms(m[m.fam == "moe_int4"], load_chip("h100-sxm"), "moe_int4")
    assert (float(terms.width[0]), float(terms.block_rows[0]), float(terms.expert_chips[0])) == (1440.0, 0.125, 1.0)
    assert m[m.fam == "moe_quant"].iloc[0].model == "h2880_i2880_k4_e128"


def test_moe_all_to_all_rows_keep_the_faster_deepep_kernel_with_k_copies_of_bytes(rows):
    a = rows[rows.family == "all_to_all"].set_index(["op", "m"])
    # per (phase, tokens) the faster of DeepEP low-latency and high-throughput; v2 rows left out: 2 phases x
    # (1, 16, 512 tokens) = 6 rows, all of the all_to_all family, 8 GPUs, shape group h7168_k8_e256
    assert len(a) == 6 and set(a.fam) == {"all_to_all"} and set(a.tp) == {8} and set(a.model) == {"h7168_k8_e256"}
    # latency in microseconds: dispatch at 16 tokens: low-latency 63.084799 us beats high-throughput 330.1 us and
    # v2's 454 / 616 us; combine at 512 tokens: only high-throughput measured it, 271.334401 us
    assert a.loc[("moe_a2a_dispatch", 16.0)].measured_s == pytest.approx(63.084799e-6, rel=1e-6)
    assert a.loc[("moe_a2a_combine", 512.0)].measured_s == pytest.approx(271.334401e-6, rel=1e-6)
    # bytes: each rank's send buffer of k bf16 copies per token: 512 tokens x 8 x 7168 x 2 B = 58,720,256
    assert a.loc[("moe_a2a_combine", 512.0)]["bytes"] == 58_720_256
    assert a.loc[("moe_a2a_dispatch", 1.0)]["bytes"] == 8 * 7168 * 2  # 114,688


def test_a_moe_table_without_modelled_dtypes_gives_no_rows_not_a_pandas_error():
    # per-tensor fp8 experts are not converted (CALIBRATION.md): a table holding only them has no rows to fit
    import pandas as pd

    row = dict(moe_dtype="fp8", distribution="balanced", num_tokens=16, hidden_size=4096, inter_size=1024, topk=2,
               num_experts=8, moe_tp_size=1, moe_ep_size=1, latency=0.05, kernel_source="x")
    out = aic_vllm.moe_rows(pd.DataFrame([row]))
    assert len(out["measured_s"]) == 0


def test_a_family_whose_rows_all_beat_the_roofline_is_fitted_on_all_of_them():
    # moe rows are fitted on those measured no faster than ideal; when fewer than 3 are left (here none: ideal 2 s,
    # measured 1 s), every row is kept, as for collectives, instead of returning the starting guesses
    import numpy as np

    from llm_roofline.calibrate import fit as fitting

    class Terms:
        in_l2 = 0.0  # no row within L2

        def time_s(self, p):
            return np.full(4, 2.0)

    for fam in ("moe", "collective"):
        assert fitting._fittable(range(4), Terms(), np.ones(4), fam).all()


def test_moe_rows_within_l2_are_fitted_only_where_the_rows_show_l2_hits():
    # a MoE row beating the ideal roofline (measured 1 s against 2 s) within L2 is kept where >= 1 % of the rows
    # within L2 beat it (memory_l2_extra prices it: 1 of 100 = 1 %), set aside where fewer do (1 of 200 = 0.5 %)
    from llm_roofline.calibrate import fit as fitting

    class Terms:
        def __init__(self, n, in_l2):
            self.n, self.in_l2 = n, (np.arange(n) < in_l2).astype(float)

        def time_s(self, p):
            return np.full(self.n, 2.0)

    measured = np.full(400, 3.0)
    measured[0] = 1.0
    assert fitting._fittable(range(400), Terms(400, 100), measured, "moe").sum() == 400
    assert fitting._fittable(range(400), Terms(400, 200), measured, "moe").sum() == 399


@pytest.mark.parametrize("text", ["a,b\n1,2\n", "",
                                  "gemm_dtype,m,n,k,latency\nbfloat16,1,4096,4096,abc\n"])
def test_an_unreadable_table_is_one_error_naming_it(tmp_path, text):
    # wrong columns, an empty file, a latency that is not a number: each ended in an internal error (KeyError,
    # EmptyDataError, TypeError), exit code 1
    import gzip

    from llm_roofline.calibrate.aic_vllm import convert_table
    from llm_roofline.errors import RooflineError

    p = tmp_path / "gemm_perf.csv.gz"
    p.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(RooflineError, match="not a readable gemm_perf table"):
        convert_table(p, "h100-sxm")


def test_a_refit_of_some_families_keeps_every_other_table_as_shipped(tmp_path):
    # benchmarks/refit_chips.py --families collective on this extract's 12 all-reduce rows: the collective fit is
    # new, every other own fit of the shipped h100-sxm file is kept as is, its point count read back from its
    # fitted_on note (gemm: '35742 points (gemm_bf16)', the full table's rows, not the extract's 7)
    import importlib.util
    import shutil

    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.hardware import load_chip

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "refit_chips.py"
    spec = importlib.util.spec_from_file_location("refit_chips", script)
    refit_chips = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(refit_chips)

    shutil.copytree(FIXTURE, tmp_path / "aic-vllm" / "h100_sxm")
    chip, res, note = refit_chips.refit_chip(tmp_path, "h100_sxm", "h100-sxm", "d", None, ("collective",))
    shipped = calibrated_model(load_chip("h100-sxm"))
    kept = {f for f, src in shipped.sources.items() if src.endswith(" fit")} - {"collective"}
    assert kept and all(res.fits[f] == shipped.families[f] for f in kept)  # every parameter and note
    assert (res.points["gemm"], res.points["collective"]) == (35_742, 12)
    assert res.fits["collective"] != shipped.families["collective"]
    assert f"{sum(res.points.values())} points" in note
