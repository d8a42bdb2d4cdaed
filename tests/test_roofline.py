"""The roofline core against the seeds ("How to Scale Your Model", Part 1) and hand arithmetic."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from llm_roofline.roofline import Efficiency, attainable_flops_per_s, matmul_intensity, score

V5E_BF16 = 1.97e14  # seeds: TPU v5e bf16 FLOP/s
V5E_INT8 = 3.94e14  # seeds, Part 1 problem 1
V5E_HBM = 8.1e11    # seeds, Part 1 problem 1 (the text also uses 8.2e11)


def test_matmul_intensity_formula_and_limit():
    # B=1, D=F=2: 2*1*2*2 / (2*1*2 + 2*2*2 + 2*1*2) = 8/16 = 0.5
    assert matmul_intensity(1, 2, 2) == pytest.approx(0.5)
    # BDF/(BD+DF+BF) -> B for B << D, F: B=16, D=F=65536: 16*65536^2/(16*65536*2 + 65536^2) = 15.99...
    assert matmul_intensity(16, 65536, 65536) == pytest.approx(16, rel=1e-3)


def test_critical_batch_bf16_int8_weights_and_int8_int8():
    d = f = 1 << 16
    # bf16 x bf16: intensity ~ B, so critical B = C / W = 1.97e14 / 8.1e11 = 243 (~240 in the seeds)
    b = V5E_BF16 / V5E_HBM
    assert matmul_intensity(b, d, f) == pytest.approx(V5E_BF16 / V5E_HBM, rel=0.01)
    # int8 weights, bf16 activations and compute: bytes ~ DF, intensity ~ 2B, critical B ~ 243/2 ~ 120 (seeds)
    bs = np.arange(1, 1000)
    t = score(2 * bs * d * f, 2 * bs * d + d * f + 2 * bs * f, peak_flops_per_s=V5E_BF16, hbm_bytes_per_s=V5E_HBM)
    assert bs[t.bound == "compute"][0] == pytest.approx(120, rel=0.03)
    # int8 x int8 on the int8 peak: intensity ~2B vs 3.94e14/8.1e11 = 486 -> critical B = 243 (seeds)
    t = score(2 * bs * d * f, bs * d + d * f + bs * f, peak_flops_per_s=V5E_INT8, hbm_bytes_per_s=V5E_HBM)
    assert bs[t.bound == "compute"][0] == pytest.approx(243, rel=0.02)
    # bf16 x bf16: critical B = 243 on these numbers (240 with the text's 8.2e11)
    t = score(2 * bs * d * f, 2 * (bs * d + d * f + bs * f), peak_flops_per_s=V5E_BF16, hbm_bytes_per_s=V5E_HBM)
    assert bs[t.bound == "compute"][0] == pytest.approx(240, rel=0.03)  # 246: BD, BF terms shift it


def test_dot_product_intensity_tends_to_half():
    n = np.array([1.0, 10.0, 1e6])
    # seeds: (2N-1)/(4N+2): N=1 -> 1/6, N=10 -> 19/42, N=1e6 -> ~0.5
    s = score(2 * n - 1, 4 * n + 2, peak_flops_per_s=V5E_BF16, hbm_bytes_per_s=V5E_HBM)
    np.testing.assert_allclose(s.intensity, [1 / 6, 19 / 42, 0.5], rtol=1e-5)
    assert (s.bound == "memory").all()


@pytest.mark.parametrize("bm,expected", [(128, 64), (256, 128)])
def test_tile_intensity(bm, expected):
    # seeds: one (bm, bk) x (bk, bn) tile: 2*bm*bk*bn FLOPs over 2*(bm*bk + bk*bn) bytes -> bm*bn/(bm+bn)
    bk = 512
    s = score(2 * bm * bk * bm, 2 * (bm * bk + bk * bm), peak_flops_per_s=1, hbm_bytes_per_s=1)
    assert float(s.intensity) == pytest.approx(expected)


def test_lower_is_max_upper_is_sum():
    # 2e12 FLOP at 1e15 FLOP/s = 2 ms; 1e9 B at 1e12 B/s = 1 ms
    s = score(2e12, 1e9, peak_flops_per_s=1e15, hbm_bytes_per_s=1e12)
    assert float(s.t_lower_s) == pytest.approx(2e-3)
    assert float(s.t_upper_s) == pytest.approx(3e-3)
    assert float(s.t_s) == pytest.approx(2e-3)
    assert s.bound == "compute"


@given(st.floats(1e3, 1e18), st.floats(1e3, 1e15), st.floats(0, 1e12), st.floats(0, 64))
def test_bounds_order(flops, nbytes, comm_bytes, hops):
    s = score(flops, nbytes, comm_bytes=comm_bytes, comm_hops=hops, peak_flops_per_s=1e15,
              hbm_bytes_per_s=3e12, link_bytes_per_s=4.5e11, link_latency_s=1e-6)
    assert s.t_lower_s <= s.t_s * (1 + 1e-12)
    assert s.t_s <= s.t_upper_s * (1 + 1e-12)
    assert s.t_upper_s <= 3 * s.t_lower_s * (1 + 1e-12)
    if comm_bytes == 0 and hops == 0:  # two terms: upper <= 2 x lower (seeds)
        assert s.t_upper_s <= 2 * s.t_lower_s * (1 + 1e-12)


@given(st.floats(1e3, 1e18), st.floats(1e3, 1e15), st.floats(1.01, 10))
def test_more_bandwidth_never_slower(flops, nbytes, factor):
    a = score(flops, nbytes, peak_flops_per_s=1e15, hbm_bytes_per_s=3e12)
    b = score(flops, nbytes, peak_flops_per_s=1e15, hbm_bytes_per_s=3e12 * factor)
    assert b.t_s <= a.t_s


def test_efficiency_slows_down():
    s = score(1e12, 1e9, peak_flops_per_s=1e15, hbm_bytes_per_s=1e12,
              efficiency=Efficiency(compute=0.5, memory=0.8, overhead_s=5e-6))
    # compute 1e12 / (1e15 * 0.5) = 2 ms; memory 1e9 / (1e12 * 0.8) = 1.25 ms; + 5 us
    assert float(s.t_s) == pytest.approx(2e-3 + 5e-6)


def test_seed_plot_v6e_one_call_equals_closed_form():
    """Seeds section 6.2: D = F = 4096 on TPU v6e (9.2e14 FLOP/s, 1.6e12 B/s), batch 1..1023."""
    bs = np.arange(1, 1024)
    d = f = 4096
    total_flops = 2 * bs * d * f
    closed = total_flops / np.maximum(total_flops / 9.2e14, (2 * bs * d + d * f + 2 * bs * f) / 1.6e12)
    s = score(total_flops, 2 * bs * d + d * f + 2 * bs * f, peak_flops_per_s=9.2e14, hbm_bytes_per_s=1.6e12)
    np.testing.assert_allclose(total_flops / s.t_s, closed, rtol=1e-12)
    np.testing.assert_allclose(total_flops / s.t_s, attainable_flops_per_s(s.intensity, 9.2e14, 1.6e12), rtol=1e-12)
    assert s.t_s.shape == bs.shape


def test_a_stack_of_ops_scores_each_op_as_it_would_alone():
    # roofline.score_stack (one roofline.score over every op of a step) holds, row by row, score_op's numbers to the
    # bit: GEMMs, attention over two context lengths, a collective, norms; ideal and calibrated
    import llm_roofline as lr
    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.roofline import score_op, score_stack
    from llm_roofline.sharding import Sharding

    spec, chip = lr.load_model("meta-llama/Llama-3.2-1B"), lr.load_chip("h100-sxm")
    ops = build_ops(spec, Phase.decode(np.float64(4.0), np.array([300.0, 900.0])), Sharding(tp=2))
    assert {op.kind for op in ops} >= {"gemm", "attention", "collective", "norm"}
    for model in (None, calibrated_model(chip)):
        stack = score_stack(ops, chip, model)
        for op, row in zip(ops, stack.rows()):
            alone = score_op(op, chip, model.for_op(op, chip) if model else Efficiency())
            for k in ("t_compute_s", "t_memory_s", "t_comm_s", "overhead_s", "t_s", "t_lower_s", "t_upper_s"):
                assert np.array_equal(getattr(row, k), np.broadcast_to(getattr(alone, k), (2,))), (op.name, k)


def test_gemms_priced_together_over_a_grid_keep_each_ops_numbers():
    # CalibratedModel.for_ops prices the GEMMs of a stack over an array of batches in one call per family (their
    # N, K and walked rows stacked): each row holds score_op's numbers to the bit. A MoE model with expert
    # parallelism (walked rows vary with the batch), batches 1 .. 512 and two contexts; an empty batch (0 rows:
    # no expert touched) gets 0 rows per expert, finite times, no 0/0
    import warnings

    import llm_roofline as lr
    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.roofline import score_op, score_stack
    from llm_roofline.sharding import Sharding

    spec, chip = lr.load_model("Qwen/Qwen3-30B-A3B"), lr.load_chip("h100-sxm")
    batch = np.array([0.0, 1.0, 8.0, 512.0])[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0/0 warned before
        ops = build_ops(spec, Phase.decode(batch, np.array([[300.0, 4000.0]])), Sharding(tp=2, ep=2))
    experts = [op for op in ops if op.style == "expert"]
    assert len(experts) == 2 and all(np.ndim(op.tokens) == 2 for op in experts)
    assert np.all(experts[0].tokens[0] == 0.0)  # batch 0: 0 rows per expert (was NaN)
    model = calibrated_model(chip)
    stack = score_stack(ops, chip, model)
    for op, row in zip(ops, stack.rows()):
        alone = score_op(op, chip, model.for_op(op, chip))
        for k in ("t_compute_s", "t_memory_s", "t_comm_s", "overhead_s", "t_s"):
            assert np.array_equal(getattr(row, k), np.broadcast_to(getattr(alone, k), (4, 2))), (op.name, k)
    assert np.all(np.isfinite(stack.t_s)) and np.all(stack.t_s >= 0)


def test_stack_t_s_is_the_stacked_scores_t_s_to_the_bit():
    # roofline.stack_t_s (each op's efficiency applied at its own shape, no stacked Score: the serving step tables
    # and the planners) against score_stack(...).t_s: a mixed step of Llama-3.1-70B on 8 H100s over a grid (GEMMs
    # priced together, decode and chunk attention, all-reduces through the switch and one-shot, norms), ideal, one
    # Efficiency for every op and calibrated, with and without a memo (its stacks kept per pricing key)
    import llm_roofline as lr
    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.roofline import score_stack, stack_t_s
    from llm_roofline.sharding import Sharding

    spec, chip = lr.load_model("meta-llama/Llama-3.1-70B"), lr.load_chip("h100-sxm")
    chunk = np.array([[0.0], [1.0], [64.0], [2048.0]])
    ops = build_ops(spec, Phase.mixed(np.array([1.0, 8.0, 256.0]), 3000.0, chunk, chunk + 500.0), Sharding(tp=8))
    assert {op.kind for op in ops} >= {"gemm", "attention", "collective", "norm"}
    grid = (4, 3)
    for model in (None, Efficiency(compute=0.5, memory=0.7, comm=0.8, overhead_s=1e-6), calibrated_model(chip)):
        for memo in (None, {}):
            want = score_stack(ops, chip, model, grid, shared=memo).t_s
            assert np.array_equal(stack_t_s(ops, chip, model, grid, memo), want), model


def test_a_cached_efficiency_stack_is_never_read_for_another_model():
    # step_time_s(graphs=...) keeps each graph's efficiency stacks under the ids of the fits that priced them
    # (efficiency.pricing_keys); the memo keeps those fits alive, so a later model's fit cannot take a freed fit's
    # id and read its stack: twelve models one after another, each freed (and the scalar-fit memo cleared) before
    # the next, give through the shared memo the times they give without it
    import gc
    import weakref

    from llm_roofline.efficiency import CalibratedModel, FamilyFit, _efficiency_at
    from llm_roofline.estimate import step_time_s

    graphs, kw = {}, dict(decode_batch=np.array([1.0, 8.0, 64.0]), decode_kv_len=1000)
    for c in [0.2 + 0.07 * j for j in range(12)]:
        fit = FamilyFit(compute_max=c, memory_max=c)
        model = CalibratedModel("h100-sxm", "test", {"gemm": fit})
        shared = step_time_s("meta-llama/Llama-3.1-8B", "h100-sxm", efficiency=model, graphs=graphs, **kw)
        fresh = step_time_s("meta-llama/Llama-3.1-8B", "h100-sxm", efficiency=model, **kw)
        assert np.array_equal(shared, fresh), c
        kept = weakref.ref(fit)
        del model, fit
        _efficiency_at.cache_clear()
        gc.collect()
        assert kept() is not None  # held by the memo while its stacks are


def test_a_stacked_all_reduce_keeps_each_buffer_s_algorithm():
    # an all-reduce over a grid of buffers on 8 H100s: 8 KB runs one-shot (1 step), 64 MiB through the switch's own
    # reduction (2 steps, V, at comm_switch_max): the stack holds score_op's numbers, ideal and calibrated
    import llm_roofline as lr
    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.ops import collective, gemm
    from llm_roofline.roofline import score_op, score_stack

    chip = lr.load_chip("h100-sxm")
    v = np.array([8192.0, 64 * 2.0**20])
    ops = [gemm("ffn.up", "dense", 1, tokens=np.array([1.0, 4096.0]), k=4096, n=4096, bits_per_weight=16,
                act_bytes_per_elem=2),
           collective("comm.all_reduce.ffn", "dense", 1, kind="all_reduce", buffer_bytes=v, chips=8)]
    for model in (None, calibrated_model(chip)):
        stack = score_stack(ops, chip, model)
        for op, row in zip(ops, stack.rows()):
            alone = score_op(op, chip, model.for_op(op, chip) if model else Efficiency())
            for k in ("t_comm_s", "overhead_s", "t_s"):
                assert np.array_equal(getattr(row, k), np.broadcast_to(getattr(alone, k), (2,))), (op.name, k)
    # ideal by hand: 2 us + 7 x 8,192 / 450e9 = 2.127431e-6 s; 2 x 2 us + 67,108,864 / 450e9 = 1.531308e-4 s
    np.testing.assert_allclose(score_stack(ops, chip).rows()[1].t_comm_s, [2.127431e-6, 1.531308e-4], rtol=1e-6)


def test_a_callers_efficiency_applies_its_comm_to_switch_reduced_bytes_and_is_checked():
    # 64 MiB all-reduce on 8 H100s runs the switch reduction (V = 67,108,864 B out and in at 450e9 B/s: 149.13 us
    # + 2 steps x 2 us = 153.13 us); a caller's Efficiency(comm=0.5) halves the bandwidth of those bytes too:
    # 67,108,864 / (450e9 x 0.5) = 298.26 us + 4 us = 302.26 us (comm_switch None means comm's)
    import math

    import llm_roofline as lr
    from llm_roofline.errors import RooflineError
    from llm_roofline.ops import collective
    from llm_roofline.roofline import Efficiency, score_ops

    chip = lr.load_chip("h100-sxm")
    op = collective("comm.all_reduce", "dense", 1, kind="all_reduce", buffer_bytes=64 * 2**20, chips=8)
    (full,) = score_ops([op], chip, Efficiency())
    (half,) = score_ops([op], chip, Efficiency(comm=0.5))
    assert float(full.t_comm_s) == pytest.approx(67108864 / 450e9 + 4e-6)
    assert float(half.t_comm_s) == pytest.approx(67108864 / 225e9 + 4e-6)
    # a hand-built Efficiency outside its ranges is one ScenarioError naming the field (was: negative, NaN or inf
    # times, or a bare ValueError); so is an array (it cannot line up with the ops; was a bare ValueError)
    for bad in (dict(comm_hop_s=-1.0), dict(comm_hop_s=math.nan), dict(comm_switch=0.0), dict(comm_switch="x"),
                dict(compute=1.5), dict(overhead_s=math.inf), dict(compute=np.array([0.5, 0.6]))):
        with pytest.raises(RooflineError, match=next(iter(bad))):
            lr.estimate("meta-llama/Llama-3.1-8B", "h100-sxm", tp=8, batch=4, efficiency=Efficiency(**bad))


def test_a_calibrated_model_subclass_that_prices_ops_its_own_way_is_asked_for_every_op():
    # for_ops groups GEMMs and pricing_keys reuses stacks only for CalibratedModel's own for_op: a subclass's for_op
    # prices every op, GEMMs over a grid of batches included, exactly as Efficiency(compute=0.5, memory=0.5) does,
    # also through a graphs memo where the base model (the same fits) left its stacks
    import llm_roofline as lr
    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.efficiency import CalibratedModel
    from llm_roofline.estimate import step_time_s

    class Half(CalibratedModel):
        def for_op(self, op, chip):
            return Efficiency(compute=0.5, memory=0.5)

    base = calibrated_model(lr.load_chip("h100-sxm"))
    half = Half(base.chip, "half", base.families, base.sources)
    kw = dict(decode_batch=np.array([1.0, 8.0, 64.0]), decode_kv_len=1000.0, tp=2)
    shared = {}
    step_time_s("meta-llama/Llama-3.1-8B", "h100-sxm", efficiency=base, graphs=shared, **kw)
    for graphs in (None, shared):
        got = step_time_s("meta-llama/Llama-3.1-8B", "h100-sxm", efficiency=half, graphs=graphs, **kw)
        want = step_time_s("meta-llama/Llama-3.1-8B", "h100-sxm", efficiency=Efficiency(compute=0.5, memory=0.5), **kw)
        assert np.array_equal(got, want)
