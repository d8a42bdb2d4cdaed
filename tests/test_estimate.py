"""Estimate: phase semantics, the book's worked examples, exact decode sums, and properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import llm_roofline as lr
from llm_roofline.estimate import estimate, evaluate
from llm_roofline.headlines import evaluate_headline
from llm_roofline.sweep import sweep
from llm_roofline.roofline import score_ops, sum_max_affine
from llm_roofline.graph import Dtypes, Phase, build_ops
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec
from llm_roofline.sharding import Sharding
from llm_roofline.memory import kv_bytes_per_token


def dense(layers=4, d=512, h=8, kv=2, hd=64, f=1536, vocab=1000, window=None, max_context=None):
    attn = AttentionSpec("gqa", h, kv, hd, hd, sliding_window=window)
    return ModelSpec("dense", d, vocab, (LayerGroup("dense", layers, attn, FfnSpec("dense", f, True, "silu")),),
                     max_context=max_context)


def test_sum_max_affine_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a0, a1, b0, b1 = rng.normal(size=4)
        n = int(rng.integers(1, 30))
        j = np.arange(n)
        frac = j / max(n - 1, 1)
        brute = np.maximum(a0 + (a1 - a0) * frac, b0 + (b1 - b0) * frac).sum()
        assert float(sum_max_affine(a0, a1, b0, b1, n)) == pytest.approx(brute, abs=1e-9)


@pytest.mark.parametrize("window", [None, 40])
def test_decode_sum_is_exact_against_step_by_step(window):
    """e2e - TTFT must equal the sum over every decode step j = 1..gen-1 at kv_len = prompt + j."""
    spec = dense(window=window)
    chip = lr.load_chip("h100")
    prompt, gen, batch = 30, 25, 64  # the window (40) is crossed mid-generation
    est = estimate(spec, chip, batch=batch, prompt_len=prompt, gen_len=gen, efficiency="ideal")
    steps = _decode_step_by_step(spec, chip, batch, prompt, gen)
    assert est.e2e_s - est.ttft_s == pytest.approx(steps, rel=1e-12)
    assert est.tpot_s == pytest.approx(steps / (gen - 1), rel=1e-12)


def _decode_step_by_step(spec, chip, batch, prompt, gen, model=None) -> float:
    """Every decode step j = 1..gen-1 at kv_len = prompt + j, built and scored one by one (the reference the
    closed-form sum must equal): per op max(compute, memory) + comm (+ overhead), times its count."""
    steps = 0.0
    for j in range(1, gen):
        for s in score_ops(build_ops(spec, Phase.decode(batch, prompt + j)), chip, model):
            steps += float(np.maximum(s.t_compute_s, s.t_memory_s) + s.t_comm_s + s.overhead_s) * s.op.count
    return steps


@pytest.mark.parametrize("window", [None, 40])
@pytest.mark.parametrize("cm", [0.02, 1.0])  # the attention compute-bound or memory-bound (its window step shows)
def test_calibrated_decode_sum_is_exact_with_the_decode_compute_factors(window, cm):
    """A decode attention fit whose compute efficiency has a keys factor (cm * kv / (kv + h): compute time affine
    in the context), a GQA group factor, a windowed-head floor and the KV blocks read past the window (a step at the
    window, crossed mid-generation): the closed-form sum still equals the steps."""
    from llm_roofline.efficiency import CalibratedModel, FamilyFit

    fit = FamilyFit(compute_max=cm, compute_keys_half=300.0, compute_group_half=8.0, memory_max=0.8,
                    overhead_s=5e-6, overhead_per_kv_row_byte_s=1e-11, overhead_per_windowed_head_s=1e-8,
                    memory_window_half=100.0, overhead_window_s=3e-6)
    model = CalibratedModel("h100-sxm", "test", {"attention_decode": fit})
    chip = lr.load_chip("h100")
    prompt, gen, batch = 30, 25, 64
    est = estimate(dense(window=window), chip, batch=batch, prompt_len=prompt, gen_len=gen, efficiency=model)
    steps = _decode_step_by_step(dense(window=window), chip, batch, prompt, gen, model)
    assert est.e2e_s - est.ttft_s == pytest.approx(steps, rel=1e-12)


def test_calibrated_decode_sum_is_exact_across_a_kv_block_and_drops_breakpoints_it_does_not_cross():
    """FlashAttention-2's combine kernel starts past one KV block (head_dim 64: 256 keys; kv_block_keys): a step in
    the decode floor at context 256, crossed mid-generation (201..299), so the sum splits there and still equals the
    steps; a cut no step crosses adds no segment."""
    from llm_roofline.efficiency import CalibratedModel, FamilyFit
    from llm_roofline.attention_shapes import KV_BLOCKS
    from llm_roofline.phases import decode_segments

    spec = dense()
    assert spec.context_breakpoints() == []  # the model's own: none; the kernels' (64, 128, 256) come with decode_ops
    fit = FamilyFit(memory_max=0.8, overhead_s=10e-6, overhead_split_s=5e-6, overhead_regroup_s=3e-6)
    model = CalibratedModel("a100-80gb", "test", {"attention_decode": fit})
    chip = lr.load_chip("a100")
    prompt, gen, batch = 200, 100, 4
    est = estimate(spec, chip, batch=batch, prompt_len=prompt, gen_len=gen, efficiency=model)
    steps = _decode_step_by_step(spec, chip, batch, prompt, gen, model)
    assert est.e2e_s - est.ttft_s == pytest.approx(steps, rel=1e-12)
    # the KV blocks cut the decode only under a model that prices the combine: this one and A100's shipped fits (FA2),
    # not H100's (FA3) nor the ideal roofline, whose decode has no step there
    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.estimate import kernel_breakpoints

    assert kernel_breakpoints(model) == kernel_breakpoints(calibrated_model(chip)) == KV_BLOCKS
    assert kernel_breakpoints(calibrated_model(lr.load_chip("h100-sxm"))) == kernel_breakpoints(None) == ()
    # contexts 201..299: 64 and 128 are below every step, so one cut (256) and two segments: 201..256 (56 steps) and
    # 257..299 (43 steps)
    segs = decode_segments(prompt, gen, KV_BLOCKS)
    assert [(float(lo), float(hi), float(n)) for lo, hi, n in segs] == [(201, 256, 56), (257, 299, 43)]
    # over a grid, a cut inside the grid's whole span (201..1099) is kept: 256 (crossed by prompt 200; an empty
    # segment for 1000), not 4096
    segs = decode_segments(np.array([200.0, 1000.0]), gen, [256, 4096])
    assert len(segs) == 2 and [float(n) for n in segs[0][2]] == [56.0, 0.0]


def test_phase_semantics_gen_len_one_is_prefill_only():
    est = estimate(dense(), "h100", batch=2, prompt_len=64, gen_len=1, efficiency="ideal")
    assert est.tpot_s is None and est.decode is None
    assert est.e2e_s == est.ttft_s
    # throughput = batch * gen_len / e2e = 2 / ttft
    assert est.throughput_tokens_per_s == pytest.approx(2 / est.ttft_s)


def test_book_part7_30b_int8_on_16_v5e():
    """How to Scale Your Model, Part 7 pop quiz: 30e9 params in int8, bf16 FLOPs, 100 kB/token KV,
    8,192 context, 16 TPU v5e: step >= (4*819e6 + 30e9)/(16*8.1e11) = 2.5 ms at batch 4 and
    256*819e6/(16*8.1e11) + 2*256*30e9/(16*1.97e14) = 21 ms at batch 256 (communication left out).
    Our model: 25 layers, d = 8000 (64 heads x 125), 16 KV heads, F = 43,200, tied vocab 10,000:
    25*(2*8000*8000 + 2*8000*2000 + 3*8000*43200) + 10000*8000 = 30.0e9 params;
    KV int8 per token: 25 * 2 * 16 * 125 * 1 = 100,000 bytes."""
    attn = AttentionSpec("gqa", 64, 16, 125, 125)
    spec = ModelSpec("30b", 8000, 10000, (LayerGroup("dense", 25, attn, FfnSpec("dense", 43200, True, "silu")),),
                     tie_embeddings=True)
    assert spec.params_total == pytest.approx(30e9, rel=0.01)
    assert kv_bytes_per_token(spec, "int8") == 100_000
    chip = lr.load_chip("tpu-v5e")
    for batch, expected in [(4, 2.5e-3), (256, 21e-3)]:
        ops = build_ops(spec, Phase.decode(batch, 8192), Sharding(tp=16), Dtypes(weight="int8", kv="int8"))
        # the book sums matmuls and attention ("everything else ... dominated by, or fused into, the above")
        local = [op for op in ops if op.kind in ("gemm", "attention")]
        step = sum(float(np.maximum(s.t_compute_s, s.t_memory_s)) * s.op.count for s in score_ops(local, chip))
        assert step == pytest.approx(expected, rel=0.05)


@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-7B", "mistralai/Mistral-7B-v0.1"])
def test_forward_flops_are_2_params_tokens_plus_attention(model_id):
    spec = lr.load_model(model_id)
    b, p = 1, 1024
    est = estimate(spec, "h100", batch=b, prompt_len=p, gen_len=1, efficiency="ideal")
    # matmul FLOPs of the blocks = 2 * (block params) * tokens; the LM head runs on 1 position only
    emb = spec.vocab_size * spec.d_model * (1 if spec.tie_embeddings else 2)
    block_params = spec.params_total - emb
    lm_head = 2 * spec.d_model * spec.vocab_size * b
    expected = 2 * block_params * b * p + lm_head + est.prefill.attention_flops
    assert est.prefill.flops == pytest.approx(expected, rel=0.002)  # norms and activations: < 0.2%


def test_bad_input_raises_value_errors():
    with pytest.raises(ValueError, match="batch"):
        estimate(dense(), "h100", batch=0, efficiency="ideal")
    with pytest.raises(ValueError, match="prompt_len"):
        estimate(dense(), "h100", prompt_len=-5, efficiency="ideal")
    with pytest.raises(ValueError, match="dtype"):
        estimate(dense(), "h100", kv_dtype="int3", efficiency="ideal")
    with pytest.raises(lr.ChipError, match="Did you mean"):
        estimate(dense(), "h10", efficiency="ideal")
    est = estimate(dense(max_context=100), "h100", prompt_len=90, gen_len=20, efficiency="ideal")
    assert any("exceeds" in w for w in est.warnings)


def test_to_dict_is_json_ready_with_contract_names():
    import json

    est = estimate(dense(), "h100", batch=2, prompt_len=128, gen_len=16, efficiency="ideal")
    d = json.loads(json.dumps(est.to_dict()))
    for k in ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s", "prefill", "decode", "memory", "critical",
              "assumptions", "ops"):
        assert k in d
    for k in ("flops", "bytes", "weight_bytes", "kv_read_bytes", "comm_bytes", "intensity", "t_compute_s",
              "t_memory_s", "t_comm_s", "t_lower_s", "t_upper_s", "t_s", "bound", "attention_flops", "mlp_flops",
              "attention_mlp_flop_ratio", "gqa_intensity"):
        assert k in d["prefill"] and k in d["decode"]
    for k in ("weight_bytes", "kv_cache_bytes", "activation_bytes", "per_chip_bytes", "capacity_bytes", "fits",
              "max_batch"):
        assert k in d["memory"]
    assert list(est.ops.columns[:17]) == ["phase", "group", "name", "kind", "count", "flops", "bytes", "weight_bytes",
                                          "act_bytes", "kv_bytes", "comm_bytes", "intensity", "t_compute_s",
                                          "t_memory_s", "t_comm_s", "t_s", "bound"]


def test_memory_llama8b_by_hand():
    est = estimate("meta-llama/Llama-3.1-8B", "h100", batch=8, prompt_len=2048, gen_len=256, efficiency="ideal")
    # weights 8,030,261,248 params * 2 bytes; KV 131,072 B/token * 2,304 tokens * 8 sequences
    assert est.memory.weight_bytes == pytest.approx(2 * 8_030_261_248)
    assert est.memory.kv_cache_bytes == pytest.approx(131072 * 2304 * 8)
    assert est.memory.fits
    big = estimate("meta-llama/Llama-3.1-8B", "h100", batch=est.memory.max_batch + 1, prompt_len=2048, gen_len=256, efficiency="ideal")
    ok = estimate("meta-llama/Llama-3.1-8B", "h100", batch=est.memory.max_batch, prompt_len=2048, gen_len=256, efficiency="ideal")
    assert ok.memory.fits and not big.memory.fits


@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 512), p=st.integers(1, 8192), g=st.integers(1, 512))
def test_properties_bounds_and_monotonicity(b, p, g):
    spec = dense()
    r = evaluate(spec, "h100", batch=[b, b + 1, b], prompt_len=[p, p, p + 7], gen_len=g, efficiency="ideal")
    tot, t = r.prefill.totals, r.prefill.totals.times
    for v in (t.t_lower_s, t.t_s, t.t_upper_s, tot.flops, tot.bytes):
        assert np.all(np.asarray(v) >= 0)
    assert np.all(t.t_lower_s <= t.t_s * (1 + 1e-12)) and np.all(t.t_s <= t.t_upper_s * (1 + 1e-12))
    # more batch or more context never means fewer FLOPs, bytes or time
    for v in (tot.flops, tot.bytes, t.t_s):
        v = np.asarray(v)
        assert v[1] >= v[0] * (1 - 1e-12) and v[2] >= v[0] * (1 - 1e-12)
    assert r.e2e_s[1] >= r.e2e_s[0] * (1 - 1e-12) and r.e2e_s[2] >= r.e2e_s[0] * (1 - 1e-12)


def test_doubling_hbm_bandwidth_never_slower():
    import dataclasses

    chip = lr.load_chip("h100")
    fast = dataclasses.replace(chip, hbm_bytes_per_s=2 * chip.hbm_bytes_per_s)
    for b in (1, 64, 1024):
        a = estimate(dense(), chip, batch=b, prompt_len=512, gen_len=64, efficiency="ideal")
        f = estimate(dense(), fast, batch=b, prompt_len=512, gen_len=64, efficiency="ideal")
        assert f.ttft_s <= a.ttft_s and f.tpot_s <= a.tpot_s
        fast_ops = f.ops.set_index(["phase", "name", "group"])["t_s"]
        slow_ops = a.ops.set_index(["phase", "name", "group"])["t_s"]
        assert (fast_ops <= slow_ops * (1 + 1e-12)).all()


def test_sweep_equals_estimate_point_by_point():
    spec = dense()
    df = sweep(spec, "h100", batch=[1, 8, 64], prompt_len=[128, 1024], gen_len=[1, 32], tp=[1, 2], efficiency="ideal")
    assert len(df) == 3 * 2 * 2 * 2
    for _, row in df.sample(8, random_state=0).iterrows():
        e = estimate(spec, "h100", batch=int(row.batch), prompt_len=int(row.prompt_len), gen_len=int(row.gen_len),
                     tp=int(row.tp), efficiency="ideal")
        assert row.ttft_s == pytest.approx(e.ttft_s, rel=1e-12)
        assert row.e2e_s == pytest.approx(e.e2e_s, rel=1e-12)
        if e.tpot_s is None:
            assert math.isnan(row.tpot_s)
        else:
            assert row.tpot_s == pytest.approx(e.tpot_s, rel=1e-12)


def test_a_calibrated_sweep_point_does_not_depend_on_the_other_points():
    # a 1-token prompt runs the decode-attention kernel, a 1024-token one the prefill kernel: on one grid each point
    # keeps its own family (judging the whole grid at once priced the 1-token prompts as prefill: TTFT 142 us, 4 %
    # above the estimate of that point alone, 136 us)
    spec = dense()
    df = sweep(spec, "h100", batch=[1, 8], prompt_len=[1, 1024], gen_len=[1, 4])
    for _, row in df.iterrows():
        e = estimate(spec, "h100", batch=int(row.batch), prompt_len=int(row.prompt_len), gen_len=int(row.gen_len))
        assert (row.ttft_s, row.e2e_s) == pytest.approx((e.ttft_s, e.e2e_s), rel=1e-12)


def test_a_calibrated_sweep_carries_the_band_of_its_middle_point():
    # the rows share one combination's multipliers, est.uncertainty's at the grid's middle point (batch 8, prompt
    # 1024, gen 32: each axis's median): equal there, the same p10 / TTFT ratio at every row; an ideal sweep has no
    # band, a sweep of both has NaN on its ideal rows
    spec = dense()
    df = sweep(spec, "h100", batch=[1, 8, 64], prompt_len=[128, 1024, 4096], gen_len=[1, 32, 256])
    u = estimate(spec, "h100", batch=8, prompt_len=1024, gen_len=32).uncertainty
    mid = df[(df.batch == 8) & (df.prompt_len == 1024) & (df.gen_len == 32)].iloc[0]
    for k in ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s"):
        assert (mid[f"{k}_p10"], mid[f"{k}_p90"]) == pytest.approx((u[k]["p10"], u[k]["p90"]), rel=1e-12)
    assert np.allclose(df.ttft_s_p10 / df.ttft_s, u["multipliers"]["prefill"][0], rtol=1e-12)
    assert (df.e2e_s_p10 <= df.e2e_s).all() and (df.e2e_s <= df.e2e_s_p90).all()
    assert "ttft_s_p10" not in sweep(spec, "h100", batch=[1, 8], efficiency="ideal")
    both = sweep(spec, "h100", batch=[1, 8], efficiency=["ideal", "calibrated"])
    assert both.ttft_s_p10.isna().tolist() == [True, True, False, False]


def test_decode_sum_is_exact_across_the_dsa_top_k():
    # DeepSeek-V3.2's sparse attention reads min(context, index_topk = 2048) keys: the decode sum must split there
    # too (a plain trapezoid over 2030..2069 would be off), so it equals the step-by-step sum
    from pathlib import Path

    from llm_roofline.model.hf import load_model

    spec = load_model(Path(__file__).parent / "fixtures" / "configs" / "deepseek_v32_exp.json")
    assert 2048 in spec.context_breakpoints()
    chip = lr.load_chip("h200")
    prompt, gen, batch = 2030, 40, 2
    est = estimate(spec, chip, batch=batch, prompt_len=prompt, gen_len=gen, efficiency="ideal")
    assert est.e2e_s - est.ttft_s == pytest.approx(_decode_step_by_step(spec, chip, batch, prompt, gen), rel=1e-12)


def test_a_sweep_chunk_is_freed_without_the_garbage_collector():
    # the lazily summed totals hold no reference cycle: a sweep frees each chunk's evaluation as soon as its
    # columns are taken (a cycle kept every chunk alive until a GC pass: 0.7 kB per point at 1e6 points)
    import gc
    import weakref

    from llm_roofline.estimate import evaluate

    gc.disable()
    try:
        r = evaluate("meta-llama/Llama-3.1-8B", "h100-sxm", batch=np.arange(1.0, 9.0), prompt_len=512, gen_len=64)
        assert np.all(r.ttft_s > 0) and np.all(r.tpot_s > 0)
        refs = [weakref.ref(x) for x in (r, r.prefill.totals, r.decode.totals)]
        del r
        assert all(ref() is None for ref in refs)
    finally:
        gc.enable()


# ------------------------------------------------------------------------------ issue 17: speed without new numbers
def test_the_op_table_is_built_on_first_read_without_importing_pandas_before():
    # estimate() itself never needs pandas (the CLI's default output reads no op table); est.ops builds the table
    code = ("import sys, llm_roofline as lr; est = lr.estimate('meta-llama/Llama-3.2-1B', 'h100-sxm', batch=2, "
            "prompt_len=64, gen_len=4); assert 'pandas' not in sys.modules, 'pandas imported by estimate()'; "
            "df = est.ops; assert 'pandas' in sys.modules and df is est.ops; "
            "assert list(df.phase.unique()) == ['prefill', 'decode'] and len(est.to_dict()['ops']) == len(df)")
    import subprocess
    import sys
    from pathlib import Path

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_lazy_op_table_pickles_as_the_table_and_threads_share_one():
    import pickle
    import threading

    spec = dense()
    est = estimate(spec, "h100", batch=4, prompt_len=100, gen_len=9, efficiency="ideal")
    copy = pickle.loads(pickle.dumps(est))  # before anyone read est.ops: the table is built for the pickle
    assert copy.ops.equals(est.ops) and copy.ttft_s == est.ttft_s
    fresh = estimate(spec, "h100", batch=4, prompt_len=100, gen_len=9, efficiency="ideal")
    seen, barrier = [], threading.Barrier(4)

    def read():
        barrier.wait()
        seen.append(fresh.ops)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and all(df is seen[0] for df in seen)
    assert seen[0].equals(est.ops)


def test_large_grids_one_op_at_a_time_give_the_same_numbers(monkeypatch):
    # roofline.op_blocks stacks every op of a small grid together and scores a large grid one op at a time (on the
    # op's own grid); the sums run op by op either way, so the numbers are the same to the last bit
    from llm_roofline import roofline

    batch, prompt, gen = [1, 2, 8, 32], [100, 600, 3000, 5000], [1, 2, 300, 2500]
    spec = dense(window=512)  # two decode segments
    together = evaluate(spec, "h100", batch=batch, prompt_len=prompt, gen_len=gen)
    monkeypatch.setattr(roofline, "STACKED_ELEMENTS", 1)  # every op alone
    alone = evaluate(spec, "h100", batch=batch, prompt_len=prompt, gen_len=gen)
    for k in ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s"):
        assert np.array_equal(getattr(together, k), getattr(alone, k), equal_nan=True), k
    for k in ("flops", "bytes", "weight_bytes", "kv_read_bytes", "attention_flops", "mlp_flops"):
        assert np.array_equal(np.broadcast_to(getattr(together.decode.totals, k), (4,)),
                              np.broadcast_to(getattr(alone.decode.totals, k), (4,))), k


def test_the_wall_clock_alone_equals_the_full_decode_sum(monkeypatch):
    # sweeps and planners read t_s alone (DecodeSums.t_s): the closed-form max-sum per segment, and for a lone op that
    # does not read the context (one row on the segment-ends axis) the step count x its step. Both must give the
    # full sum's t_s: stacked ops (small grid) and one op at a time (large grid), with two segments (a window)
    from llm_roofline import roofline

    batch, prompt, gen = [1, 2, 8, 32], [100, 600, 3000, 5000], [2, 3, 300, 2500]
    for stacked_elements in (roofline.STACKED_ELEMENTS, 1):
        monkeypatch.setattr(roofline, "STACKED_ELEMENTS", stacked_elements)
        r = evaluate(dense(window=512), "h100", batch=batch, prompt_len=prompt, gen_len=gen)
        constant = 0
        for b in r.decode.blocks:
            constant += all(getattr(b.score, k).shape[1] == 1 for k in ("t_compute_s", "t_memory_s"))
            np.testing.assert_allclose(r.decode.sums.t_s(b.score), b.times.t_s, rtol=1e-13, atol=0)
        assert constant > 0 if stacked_elements == 1 else constant == 0  # both branches are checked
        headline = evaluate_headline(dense(window=512), "h100", batch=batch, prompt_len=prompt, gen_len=gen)
        np.testing.assert_allclose(headline.tpot_s, r.tpot_s, rtol=1e-13)
        np.testing.assert_allclose(headline.ttft_s, r.ttft_s, rtol=1e-13)


def test_step_time_and_headlines_refuse_bad_sizes_with_the_projects_error():
    # the memoized step path keyed on decode_batch before checking it (a bare ValueError for 'x'); one efficiency
    # per chip, or the extra chips were dropped silently
    from llm_roofline.errors import ScenarioError
    from llm_roofline.estimate import step_time_s
    from llm_roofline.headlines import evaluate_headlines

    for graphs in (None, {}):
        with pytest.raises(ScenarioError, match="decode_batch"):
            step_time_s("meta-llama/Llama-3.1-8B", "h100-sxm", decode_batch="x", decode_kv_len=100, graphs=graphs)
    with pytest.raises(ScenarioError, match="one efficiency per chip"):
        evaluate_headlines("meta-llama/Llama-3.1-8B", ["h100-sxm", "h200"], efficiencies=["ideal"])


def test_a_step_of_a_fraction_of_a_sequence_costs_no_more_than_one_sequence():
    # serving steps take mean batch sizes, and pp splits a decode node into micro-batches (node 1 at pp 2: half a
    # sequence each): a kernel still reads its weights for one row at least, so the memory efficiency of a fraction
    # of a row is that of one row; before, T / hypot(T, h) -> 0 made 1e-6 sequences cost 82 s against 7 ms for one
    from llm_roofline.estimate import step_time_s

    for model, kw in (("meta-llama/Llama-3.1-8B", {}), ("Qwen/Qwen3-30B-A3B", dict(tp=2, ep=2))):
        t = step_time_s(model, "h100-sxm", decode_batch=np.array([1e-6, 1e-3, 0.5, 1.0]), decode_kv_len=1000.0, **kw)
        assert np.all(np.diff(t) >= 0) and np.all(np.isfinite(t)), (model, t)


def test_pipelines_of_several_eps_score_an_op_once_with_the_numbers_of_fresh_calls(monkeypatch):
    # the static planner's shardings of one tp in one call: each (ep, pp)'s headlines must equal a call of its own
    # bit for bit (the stages share each op's times under its value key: an expert GEMM's tokens per expert differ
    # with ep, and a key without them would hand ep 8 the times of ep 1), and the ops the stages share are scored once
    import importlib

    from llm_roofline.headlines import evaluate_pipelines

    phases = importlib.import_module("llm_roofline.phases")
    scored, real = [], phases._op_t_s

    def counting(ops, *a, **kw):  # the ops each call scores
        scored.append(len(ops))
        return real(ops, *a, **kw)

    monkeypatch.setattr(phases, "_op_t_s", counting)
    micro, eps, pps = np.array([1.0, 8.0, 64.0]), [1, 8, 2, 8], [1, 1, 1, 2]
    kw = dict(efficiencies=["calibrated", "ideal"], prompt_len=1024, gen_len=64, tp=8)
    rows = evaluate_pipelines("mistralai/Mixtral-8x7B-v0.1", ["h100-sxm", "mi300x"], batches=[micro * p for p in pps],
                              pps=pps, eps=eps, **kw)
    together, scored[:] = sum(scored), []
    for ep, pp, row in zip(eps, pps, rows):
        fresh = evaluate_pipelines("mistralai/Mixtral-8x7B-v0.1", ["h100-sxm", "mi300x"], batches=[micro * pp],
                                   pps=[pp], ep=ep, **kw)[0]
        for a, b in zip(fresh, row):
            assert (a.sharding.ep, a.sharding.pp) == (b.sharding.ep, b.sharding.pp) == (ep, pp)
            np.testing.assert_array_equal(a.ttft_s, b.ttft_s)
            np.testing.assert_array_equal(a.tpot_s, b.tpot_s)
    ops = build_ops(lr.load_model("mistralai/Mixtral-8x7B-v0.1"), Phase.prefill(micro, np.full(3, 1024.0)),
                    Sharding(tp=8), Dtypes(act="bf16"), "fused")
    # separately: 4 scenarios x (prefill + decode) x all their ops (+ the pp 2 hand-off); together: the ep 1 stage's
    # ops once, the other two stages' expert ops only (the hand-off as before)
    assert sum(scored) > 8 * len(ops) and together < 3 * len(ops)


def test_pipelines_score_one_stage_for_every_pp_with_each_pps_numbers_and_errors():
    # evaluate_pipelines (the static planner's scoring) against evaluate(), which builds every pp's own graph and
    # applies the pipeline factor op by op: the same TTFT, TPOT and memory at every pp, to rounding
    from llm_roofline.errors import ScenarioError, ShardingError
    from llm_roofline.headlines import evaluate_pipelines

    micro = np.array([1.0, 3.0, 16.0])
    # the stage is derived from the first scenario: a pp > 1 first. 10 stages at tp 1: the hand-off spans 10 chips,
    # not a whole number of 8-GPU domains
    pps = [2, 1, 4, 10]
    rows = evaluate_pipelines("meta-llama/Llama-3.1-70B", ["h100-sxm", "mi300x"],
                              efficiencies=["calibrated", "ideal"], batches=[micro * pp for pp in pps], pps=pps,
                              prompt_len=[512, 2048, 700], gen_len=[1, 64, 300])
    for pp, row in zip(pps[:3], rows):  # 2, 1, 4
        for chip, eff, h in zip(["h100-sxm", "mi300x"], ["calibrated", "ideal"], row):
            r = evaluate("meta-llama/Llama-3.1-70B", chip, batch=micro * pp, prompt_len=[512, 2048, 700],
                         gen_len=[1, 64, 300], pp=pp, efficiency=eff)
            np.testing.assert_allclose(h.ttft_s, r.ttft_s, rtol=1e-13)
            np.testing.assert_allclose(h.tpot_s, r.tpot_s, rtol=1e-13)  # nan at gen_len 1 in both
            np.testing.assert_array_equal(h.memory.bytes_per_chip, r.memory.bytes_per_chip)
            assert h.sharding.pp == pp and list(h.batch) == list(micro * pp)
    assert all(isinstance(h, ShardingError) and "whole number of domains" in str(h) for h in rows[3])
    # a pp whose batch grid is refused (3 sequences in 2 micro-batches) gets its error on every chip; the others
    # their numbers (it raised a TypeError)
    rows = evaluate_pipelines("meta-llama/Llama-3.1-70B", ["h100-sxm", "h200"], efficiencies=["ideal"] * 2,
                              batches=[[3.0], [3.0]], pps=[1, 2], tp=2)
    assert all(isinstance(h, ScenarioError) and "multiple of pp" in str(h) for h in rows[1])
    assert [h.sharding.pp for h in rows[0]] == [1, 1]
    with pytest.raises(ScenarioError, match="same length"):
        evaluate_pipelines("meta-llama/Llama-3.1-70B", ["h100-sxm"], efficiencies=["ideal"], batches=[[2]], pps=[1, 2])
    with pytest.raises(ScenarioError, match="micro-batches"):
        evaluate_pipelines("meta-llama/Llama-3.1-70B", ["h100-sxm"], efficiencies=["ideal"], batches=[[2], [2]],
                           pps=[1, 2])
