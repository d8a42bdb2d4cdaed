"""serve(): the continuous-batching serving model end to end (queueing itself: test_serve_queueing.py)."""

import dataclasses
import math

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.errors import RooflineError
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec
from llm_roofline.engine import Engine, Speculative, decode_nodes, step_tables, vllm_batch_defaults, workload_of
from llm_roofline.queueing import solve_closed
from llm_roofline.serve import serve

PURE = dict(efficiency="ideal", step_overhead_s=0.0, seq_overhead_s=0.0, request_overhead_s=0.0,
            prompt_layer_overhead_s=0.0)
LLAMA = "meta-llama/Llama-3.1-8B"


def tiny() -> ModelSpec:
    """tests/test_memory.py's tiny model: d=8, V=10, 2 GQA layers (4 heads, 2 KV heads, head_dim 2), gated MLP
    d_ff 16; 1352 parameters = 2704 B in bf16; KV 2 layers x (K + V) x 2 heads x 2 dims x 2 B = 32 B/token."""
    group = LayerGroup("dense", 2, AttentionSpec("gqa", 4, 2, 2, 2), FfnSpec("dense", 16, True, "silu"))
    return ModelSpec("tiny", d_model=8, vocab_size=10, layer_groups=(group,))


def test_concurrency_one_is_the_static_estimate_at_batch_one():
    # One client: its prompt runs alone in one step (2048 <= the 8192-token budget) and every decode step
    # holds only its sequence, at the mean context 2048 + 256/2: the mean of estimate's exact decode sum.
    s = serve(LLAMA, "h100-sxm", prompt_len=2048, gen_len=256, concurrency=1, **PURE)
    e = lr.estimate(LLAMA, "h100-sxm", batch=1, prompt_len=2048, gen_len=256, efficiency="ideal")
    assert s.ttft_s == pytest.approx(e.ttft_s, rel=1e-9)
    assert s.tpot_s == pytest.approx(e.tpot_s, rel=1e-9)
    assert s.e2e_s == pytest.approx(e.e2e_s, rel=1e-9)
    assert s.requests_per_s == pytest.approx(1.0 / e.e2e_s, rel=1e-9)  # Little: C = X * e2e


@pytest.mark.parametrize("model, tp", [(LLAMA, 1), ("Qwen/Qwen3-30B-A3B", 1), ("google/gemma-2-9b", 1),
                                       ("meta-llama/Llama-3.1-70B", 2)])
def test_concurrency_one_is_the_calibrated_estimate_too(model, tp):
    # The same with calibrated kernels: a decode-only step carries no prompt chunk and a prompt-only step no decoding
    # sequence, and an attention core with nothing to do launches no kernel (roofline.launched_overhead_s). Before,
    # each layer's empty chunk core paid its kernel overhead: TPOT 3.7-10 % above the estimate's (e.g. Llama-3.1-8B
    # on H200: +6.5 %, 32 layers x ~11 us on a ~5.5 ms step)
    kw = dict(PURE, efficiency="calibrated")
    s = serve(model, "h200", prompt_len=2048, gen_len=256, concurrency=1, tp=tp, **kw)
    e = lr.estimate(model, "h200", batch=1, prompt_len=2048, gen_len=256, tp=tp, efficiency="calibrated")
    assert s.ttft_s == pytest.approx(e.ttft_s, rel=1e-9)
    assert s.tpot_s == pytest.approx(e.tpot_s, rel=1e-9)


# Measured vLLM serving of Llama-3.1-70B in fp8 on one B200 node, 4 clients, 1024 prompt / 1024 generated tokens, mean
# TPOT in ms by tp (NVIDIA AIConfigurator silicon samples, db dump 2026-04-27, rows
# 2026_04_06_llama_3_1_70b_b200_sxm_vllm_fp8_agg_1024x1024_c4_tp{1,2,4,8}_ep1_*): the rows whose steps match the kernel
# tables, on which the shipped host overheads are fitted (benchmarks/validate_serving.py)
LLAMA70_FP8_B200_C4_TPOT_MS = {1: 16.336672, 2: 10.637767, 4: 8.042217, 8: 6.318136}


def test_shipped_host_overheads_price_measured_fp8_decode_steps():
    # median |TPOT error| over tp 1-8 within 5 %. With the constants fitted on fp8 and fp4 rows alike (0.351 ms per
    # step: the fp4 runs' slower kernels taken as host time) the median was 5.9 % (errors 0.7, 7.3, 4.4, 12.6 %)
    errs = []
    for tp, measured_ms in LLAMA70_FP8_B200_C4_TPOT_MS.items():
        s = serve("meta-llama/Llama-3.1-70B", "b200", prompt_len=1024, gen_len=1024, concurrency=4, tp=tp,
                  weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")
        errs.append(abs(s.tpot_s * 1e3 / measured_ms - 1.0))
    assert float(np.median(errs)) <= 0.05


def _uniform_band_model(chip: str, p10: float, p90: float):
    """The chip's calibrated model with every fit's held-out band set to (p10, p90): a step's band is then exactly
    that, whatever its ops' shares (uncertainty.phase_band weighs equal bands)."""
    from llm_roofline.chip_fits import calibrated_model
    from llm_roofline.efficiency import CalibratedModel

    m = calibrated_model(chip)
    fits = {f: dataclasses.replace(p, err_p10=p10, err_p90=p90) for f, p in m.families.items()}
    return CalibratedModel(m.chip, m.label, fits, dict(m.sources))


def _with_serving_band(nominal, kernel, serving):
    """A number's p10 or p90 from its kernels' bound and the serving model's measured multiplier: the two log
    spreads in quadrature, on the kernels' side of the nominal (README "Calibration")."""
    side = 1.0 if kernel >= nominal else -1.0
    return nominal * math.exp(side * math.hypot(math.log(kernel / nominal), math.log(serving)))


def test_serving_band_scales_the_kernels_through_the_queue():
    # Llama-3.1-8B bf16 on one H100 (every family the chip's own fit), every band (0.8, 1.25). One client: TPOT is a
    # decode step's kernels (no per-step host time here), so its kernels' bound is 0.8 / 1.25 x TPOT, widened by the
    # serving model's band at the point's load: one client meets no other prompt in its steps (prefill utilization 0,
    # below SERVING_BAND's first anchor, 0.060), so the first band holds (as shipped TPOT (1.000, 1.097): 0.8 / 1.2733 x
    # TPOT). TTFT is the prompt step's kernels + 50 ms per request + 32 layers x 0.5 ms = 66 ms of host time, which
    # the kernels' bound leaves alone: 0.066 + 1.25 x (TTFT - 0.066), then widened by the serving model's TTFT band
    from llm_roofline.serve import SERVING_BAND

    model = _uniform_band_model("h100-sxm", 0.8, 1.25)
    host = dict(step_overhead_s=0.0, seq_overhead_s=0.0, request_overhead_s=0.05, prompt_layer_overhead_s=5e-4)
    s = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=1024, concurrency=1, efficiency=model, **host)
    assert s.prefill_utilization < SERVING_BAND["prefill_utilization"][0]
    u, (t10, t90), f90 = s.uncertainty, SERVING_BAND["tpot_s"][0], SERVING_BAND["ttft_s"][0][1]
    assert np.allclose([u["multipliers"]["prefill"], u["multipliers"]["decode"]], [[0.8, 1.25]] * 2, rtol=1e-12)
    assert u["tpot_s"]["p10"] == pytest.approx(_with_serving_band(s.tpot_s, 0.8 * s.tpot_s, t10), rel=1e-9)
    assert u["tpot_s"]["p90"] == pytest.approx(_with_serving_band(s.tpot_s, 1.25 * s.tpot_s, t90), rel=1e-9)
    assert u["ttft_s"]["p90"] == pytest.approx(_with_serving_band(s.ttft_s, 0.066 + 1.25 * (s.ttft_s - 0.066), f90),
                                               rel=1e-9)
    # one client: no queue, so the TTFT's p90 is its mean, and so is the p90's band (the same TTFT serving band)
    assert s.ttft_p90_s == s.ttft_s and u["ttft_p90_s"] == u["ttft_s"]
    assert u["requests_per_s"]["p10"] < s.requests_per_s < u["requests_per_s"]["p90"]  # a closed loop slows down
    assert serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=64, concurrency=1, efficiency="ideal").uncertainty is None


def test_serving_band_follows_the_load():
    # the serving model's own band is the one of each point's prefill utilization (SERVING_BAND): one client has no
    # other prompts in its steps (utilization 0: the first anchor's band), 64 clients of 4096-token prompts and 64
    # generated tokens spend most steps on prompts (> the last anchor, 0.548: its band, TPOT (0.802, 1.000), where the
    # modelled TPOT errs slow). The TPOT p10 is then at most 0.802 x TPOT whatever the kernels: the two log spreads
    # add in quadrature, exp(-hypot(k, ln(1 / 0.802))) <= 0.802
    from llm_roofline.serve import SERVING_BAND as SB

    one = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=1024, concurrency=1)
    busy = serve(LLAMA, "h100-sxm", prompt_len=4096, gen_len=64, concurrency=64)
    assert one.prefill_utilization < SB["prefill_utilization"][0] < SB["prefill_utilization"][-1] < \
        busy.prefill_utilization
    assert one.uncertainty["multipliers"]["serving"] == {"ttft_s": list(SB["ttft_s"][0]),
                                                         "tpot_s": list(SB["tpot_s"][0])}
    assert busy.uncertainty["multipliers"]["serving"] == {"ttft_s": list(SB["ttft_s"][-1]),
                                                          "tpot_s": list(SB["tpot_s"][-1])}
    assert SB["tpot_s"][-1] == (0.802, 1.0) and busy.uncertainty["tpot_s"]["p10"] <= 0.802 * busy.tpot_s


def test_serving_band_saturates_where_slower_kernels_cannot_keep_up():
    # Poisson load at 90 % of the saturation rate: 25 % slower kernels saturate the engine (p90 TTFT infinite), 20 %
    # faster ones leave it below the nominal TTFT
    model = _uniform_band_model("h100-sxm", 0.8, 1.25)
    sat = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=256, qps=1.0, efficiency=model).saturation_requests_per_s
    s = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=256, qps=0.9 * sat, efficiency=model)
    assert s.uncertainty["ttft_s"]["p90"] == float("inf")
    assert s.uncertainty["ttft_s"]["p10"] < s.ttft_s
    assert s.to_dict()["uncertainty"]["ttft_s"]["p90"] == "inf"  # JSON has no infinity


def test_serving_band_columns_of_a_sweep():
    # every point of a sweep carries the band (the deployment's multipliers, band (0.8, 1.25)): TPOT at one client
    # 0.8 / 1.25 x, widened by the serving band of its load as above; uncertainty=False leaves the columns out;
    # anything but a bool is refused
    from llm_roofline.serve import SERVING_BAND

    model = _uniform_band_model("h100-sxm", 0.8, 1.25)
    df = serve(LLAMA, "h100-sxm", prompt_len=[512, 2048], gen_len=1024, concurrency=[1, 16], efficiency=model)
    one, (t10, t90) = df[df.concurrency == 1], SERVING_BAND["tpot_s"][0]
    assert (one.prefill_utilization < SERVING_BAND["prefill_utilization"][0]).all()
    assert np.allclose(one.tpot_s_p10, _with_serving_band(1.0, 0.8, t10) * one.tpot_s, rtol=1e-9)
    assert np.allclose(one.tpot_s_p90, _with_serving_band(1.0, 1.25, t90) * one.tpot_s, rtol=1e-9)
    assert (df.ttft_s_p10 < df.ttft_s).all() and (df.ttft_s < df.ttft_s_p90).all()
    assert (df.output_tokens_per_s_p10 < df.output_tokens_per_s).all()
    bare = serve(LLAMA, "h100-sxm", prompt_len=[512, 2048], gen_len=64, concurrency=[1, 16], uncertainty=False)
    assert "ttft_s_p10" not in bare and np.allclose(bare.ttft_s, serve(LLAMA, "h100-sxm", prompt_len=[512, 2048],
                                                                         gen_len=64, concurrency=[1, 16]).ttft_s)
    assert "ttft_s_p10" not in serve(LLAMA, "h100-sxm", concurrency=[1, 16], efficiency="ideal")  # no band to give
    assert "ttft_s_p10" in serve(LLAMA, "h100-sxm", concurrency=[1, 16], uncertainty=np.bool_(True))  # a numpy bool
    with pytest.raises(RooflineError, match="uncertainty must be True or False"):
        serve(LLAMA, "h100-sxm", concurrency=1, uncertainty="yes")


@pytest.mark.parametrize("chip, model, load", [
    ("tpu-v5e", "meta-llama/Llama-3.2-1B", dict(concurrency=64)),  # uncalibrated: the (0.7, 2.0) band
    ("l40s", "Qwen/Qwen3-30B-A3B", dict(concurrency=512, gen_len=1)),  # no TPOT: NaN stays NaN
    ("b200", "mistralai/Mixtral-8x7B-v0.1", dict(qps=5.0, prompt_len=8192)),
    ("a100-80gb", "meta-llama/Llama-3.1-8B", dict(concurrency=4, prompt_len=1, gen_len=2))])
def test_serving_band_holds_the_number(chip, model, load):
    # p10 <= number <= p90 for every headline number, all finite and >= 0 but a saturated p90 (inf) and an undefined
    # number (NaN: one generated token has no TPOT)
    s = serve(model, chip, tp=2, **load)
    if chip == "tpu-v5e":  # every family uncalibrated: uncertainty.UNCALIBRATED_BAND in both steps
        m = s.uncertainty["multipliers"]
        assert np.allclose([m["prefill"], m["decode"]], [[0.7, 2.0]] * 2, rtol=1e-12)
    for k, b in ((k, v) for k, v in s.uncertainty.items() if k != "multipliers"):
        x = getattr(s, k)
        if math.isnan(x):
            assert math.isnan(b["p10"]) and math.isnan(b["p90"])
            continue
        assert 0.0 <= b["p10"] <= x <= b["p90"] and math.isfinite(b["p10"]), (k, b, x)


@pytest.mark.parametrize("prompt, eager_s", [(512, 0.0), (513, 0.016), (1024, 0.016)])
def test_host_overheads_add_to_the_concurrency_one_latencies(prompt, eager_s):
    # host: 1 ms per step, 0.1 ms per decoding sequence per step, 50 ms per request, 0.5 ms per layer of a step
    # carrying prompt tokens past vLLM's CUDA-graph sizes (Llama-3.1-8B: 32 layers -> 16 ms on the prompt's step, none
    # on decode steps). The graphs reach min(2 x 1024 seqs, 512, 8192 tokens) = 512 tokens on the H100 by default:
    # a 512-token prompt's step replays them, a 513-token one runs eagerly.
    # TTFT = prefill step + 1 ms (no decodes beside it) + (0 or 16 ms) + 50 ms; TPOT = decode step + 1 ms + 0.1 ms
    host = dict(efficiency="ideal", step_overhead_s=1e-3, seq_overhead_s=1e-4, request_overhead_s=0.05,
                prompt_layer_overhead_s=5e-4)
    s = serve(LLAMA, "h100-sxm", prompt_len=prompt, gen_len=64, concurrency=1, **host)
    e = lr.estimate(LLAMA, "h100-sxm", batch=1, prompt_len=prompt, gen_len=64, efficiency="ideal")
    assert s.ttft_s == pytest.approx(e.ttft_s + 0.001 + eager_s + 0.05, rel=1e-9)
    assert s.tpot_s == pytest.approx(e.tpot_s + 0.0011, rel=1e-9)


@pytest.mark.parametrize("prompt, eager_s", [(512, 0.0), (1024, 0.016)])
def test_a_pipelined_prompt_meets_every_stages_host_time(prompt, eager_s):
    # pp 2: a prompt's step passes both stages of 16 layers, each charging its 16 x 0.5 ms past the CUDA graphs:
    # 16 ms in all at 1024 tokens (as at pp 1), none at 512
    kw = dict(efficiency="ideal", step_overhead_s=0.0, seq_overhead_s=0.0, request_overhead_s=0.0, gen_len=8,
              concurrency=1, pp=2, prompt_len=prompt)
    ttft = [serve(LLAMA, "h100-sxm", prompt_layer_overhead_s=x, **kw).ttft_s for x in (5e-4, 0.0)]
    assert ttft[0] - ttft[1] == pytest.approx(eager_s, abs=1e-12)


def test_cuda_graph_sizes_follow_vllms_default():
    # vllm/config/vllm.py _set_cudagraph_sizes: at most 512 tokens, and at most max_num_batched_tokens: a 256-token
    # budget's graphs reach 256 tokens. Served with that budget, a 300-token prompt runs in two chunk steps of 150
    # tokens, each within the graphs: no prompt-step host time (0.5 ms x 32 layers would add 16 ms a step)
    from llm_roofline.engine import cuda_graph_max_tokens

    assert cuda_graph_max_tokens(8192) == 512 and cuda_graph_max_tokens(256) == 256
    kw = dict(efficiency="ideal", step_overhead_s=0.0, seq_overhead_s=0.0, request_overhead_s=0.0, gen_len=8,
              concurrency=1, max_num_seqs=256, max_num_batched_tokens=256)
    assert (serve(LLAMA, "h100-sxm", prompt_len=300, prompt_layer_overhead_s=5e-4, **kw).ttft_s
            == pytest.approx(serve(LLAMA, "h100-sxm", prompt_len=300, prompt_layer_overhead_s=0.0, **kw).ttft_s,
                             rel=1e-12))


def test_a_request_with_one_new_token_runs_as_a_decode():
    # a prompt cached but its last token (a prefix hit; a KV cache a prefill worker sent) has a query of one token,
    # which vLLM runs as a decode: no prompt-step host time, even in a step past the CUDA graphs. 600 clients of
    # Llama-3.1-8B (fp8 KV: 600 sequences fit on one H100) keep ~600 decode rows in every step, past the 512-token
    # graphs. One new token a request: 0.5 ms x 32 layers is never charged (same TPOT and TTFT as without it); two new
    # tokens: the steps carrying them pay 16 ms, the prompt's own step among them, so TTFT rises by at least 16 ms
    kw = dict(efficiency="ideal", step_overhead_s=0.0, seq_overhead_s=0.0, request_overhead_s=0.0, prompt_len=1024,
              gen_len=256, concurrency=600, kv_dtype="fp8")
    one, two = ({x: serve(LLAMA, "h100-sxm", prefix_hit_rate=p, prompt_layer_overhead_s=x, **kw) for x in (5e-4, 0.0)}
                for p in (1023 / 1024, 1022 / 1024))
    assert one[5e-4].decode_batch > 512
    assert (one[5e-4].tpot_s, one[5e-4].ttft_s) == (one[0.0].tpot_s, one[0.0].ttft_s)
    assert two[5e-4].ttft_s > two[0.0].ttft_s + 0.016


@pytest.mark.parametrize("seqs, spec_k, eager_s", [(64, 0, 0.016), (128, 0, 0.0), (64, 1, 0.0), (1, 0, 0.016)])
def test_cuda_graph_sizes_follow_max_num_seqs(seqs, spec_k, eager_s):
    # since vLLM 0.11 the graphs also stop at 2 x max_num_seqs x (1 + k draft tokens) tokens (_set_cudagraph_sizes):
    # 128 at 64 sequences, 256 at 128 or at 64 with one draft token, 2 at one sequence. One client's 256-token prompt
    # is one step of 256 tokens: eager (32 layers x 0.5 ms = 16 ms) past a 128- or 2-token graph, not past 256
    from llm_roofline.engine import cuda_graph_max_tokens

    assert cuda_graph_max_tokens(8192, 64, 1) == 128 and cuda_graph_max_tokens(8192, 64, 2) == 256
    assert cuda_graph_max_tokens(8192, 1024, 1) == 512 and cuda_graph_max_tokens(100, 64, 1) == 100
    kw = dict(efficiency="ideal", step_overhead_s=0.0, seq_overhead_s=0.0, request_overhead_s=0.0, gen_len=8,
              concurrency=1, max_num_seqs=seqs, max_num_batched_tokens=2048, prompt_len=256,
              speculative=dict(k=spec_k, acceptance=0.5) if spec_k else None)
    ttft = [serve(LLAMA, "h100-sxm", prompt_layer_overhead_s=x, **kw).ttft_s for x in (5e-4, 0.0)]
    assert ttft[0] - ttft[1] == pytest.approx(eager_s, abs=1e-12)


def test_latency_grows_and_throughput_saturates_with_concurrency():
    c = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    df = serve(LLAMA, "h100-sxm", prompt_len=2048, gen_len=256, concurrency=c)
    below = df.concurrency <= df.max_running
    assert np.all(np.diff(df.ttft_s) > 0) and np.all(np.diff(df.tpot_s[below]) > 0)
    assert np.all(np.diff(df.tpot_s) >= 0)  # beyond the capacity the running batch, hence TPOT, stays put
    assert np.all(np.diff(df.requests_per_s) >= -1e-9 * df.requests_per_s[1:])
    # beyond the running capacity the throughput stays at the saturation rate and clients only queue
    full = df[df.concurrency >= 2 * df.max_running]
    assert len(full) >= 2
    assert np.allclose(full.requests_per_s, full.requests_per_s.iloc[0], rtol=1e-9)
    # and the closed loop's ceiling is the open loop's saturation rate (two approximations, within 2 %)
    assert np.allclose(full.requests_per_s, full.saturation_requests_per_s, rtol=0.02)


def test_a_moe_with_m_blocked_experts_gains_throughput_with_every_client():
    # Kimi-K2.5's int4 experts run vLLM's fused_marlin_moe, whose M blocks (64 rows once R >= 43.2) an expert's rows fill
    # whole. Priced at exactly the mean rows, a step's cost jumps where the mean crosses a block (3,072 prompt tokens
    # + 128 decodes: 66.7 rows, 2 blocks against 1 at 64) and the closed loop lost throughput as clients were added
    # (5.53, 5.45, 5.62 req/s at 128, 192, 256 clients); a model's routing spreads the rows about the mean, so the
    # expected blocks grow smoothly (expert_kernels.m_block_padding) and so does the throughput
    df = serve("moonshotai/Kimi-K2.5", "b200", tp=8, prompt_len=2048, gen_len=256, concurrency=[128, 192, 256, 320],
               efficiency="calibrated")
    assert np.all(np.diff(df.requests_per_s) > 0) and np.all(np.diff(df.tpot_s) > 0)


def test_a_prompt_bound_closed_loop_levels_off_at_the_open_loop_saturation():
    # Falcon-7B on an A100 (vLLM's 2,048-token budget there): 2,048-token prompts fill the budget before the 256 slots
    # do, so past ~190 clients the engine runs prompt steps back to back and the closed loop's throughput is the
    # prompt rate they allow, the open loop's saturation (a separate solve); clients beyond it only wait (TTFT grows
    # by Little). The closed loop's fixed point did not see that limit: 5.43-5.57 req/s against 5.12 from 192
    # clients on, not converged at 224 and 256
    df = serve("tiiuae/falcon-7b", "a100", prompt_len=2048, gen_len=256, concurrency=[128, 192, 224, 256, 300],
               efficiency="calibrated")
    assert df.converged.all()
    assert np.all(df.requests_per_s <= 1.02 * df.saturation_requests_per_s)
    assert np.all(np.diff(df.requests_per_s) >= 0) and np.all(np.diff(df.ttft_s) > 0)
    assert df.requests_per_s.iloc[-1] == pytest.approx(df.saturation_requests_per_s.iloc[-1], rel=0.02)


def test_a_prompt_only_workload_saturates_where_its_prompts_fill_the_steps():
    # one generated token (a prefill worker, a classifier): no decode step, so the prompts alone bound the rate. By
    # hand, ideal, no host time: a 2,048-token prompt of Llama-3.1-8B is 2 x 7.5e9 x 2048 + 32 layers x 4 x 2048^2 / 2
    # x 4096 = 3.18e13 FLOP, 32 ms at 989 TFLOP/s: at most 31 requests/s. The search's bracket took a prompt-only
    # workload's decode bound as 1e9x the rate and returned 0 after its three rounds
    from llm_roofline.engine import NO_HOST

    s = serve(LLAMA, "h100-sxm", prompt_len=2048, gen_len=1, qps=1.0, efficiency="ideal", **NO_HOST)
    assert 15.0 < s.saturation_requests_per_s < 31.1
    assert serve(LLAMA, "h100-sxm", prompt_len=2048, gen_len=1, qps=0.95 * s.saturation_requests_per_s,
                 efficiency="ideal", **NO_HOST).ttft_s < 1.0


def test_a_prompt_split_in_two_chunks_waits_longer_as_the_load_grows():
    # Llama-2-13B on an L40S (vLLM's 2,048-token budget there): a 2,048-token prompt runs in one step when no other
    # sequence decodes and in two beside one or more. A prompt's chunk steps were the product of two interpolations
    # between those decode batches (the chunk count, the time of one chunk step), which dips between them: TTFT went
    # 371.5, 396.7, 392.1 ms at 5, 10, 20 % of the saturating rate; its steps in all are now interpolated as one
    df = serve("meta-llama/Llama-2-13b-hf", "l40s", prompt_len=2048, gen_len=256, qps=[0.025, 0.05, 0.1, 0.15, 0.2],
               efficiency="calibrated")
    assert np.all(np.diff(df.ttft_s) > 0) and np.all(np.diff(df.tpot_s) > 0)


def test_kv_capacity_by_hand():
    # A 1 MB chip at gpu_memory_utilization 0.9: 900,000 B - 2,704 B weights - workspace of a 2048-token step.
    # Workspace: the largest op's activations (SiLU*up reads 2 (T, 16) and writes 1: 3 x 16 x 2 B = 96 B per token)
    # + the residual stream (8 x 2 B = 16 B per token): 112 B x 2048 = 229,376 B -> 667,920 B for KV.
    # A running sequence holds 1000 + 200/2 = 1100 tokens x 32 B = 35,200 B: floor(667,920 / 35,200) = 18.
    chip = dataclasses.replace(lr.load_chip("h100-sxm"), hbm_bytes=1e6, driver_total_bytes=None)
    kw = dict(prompt_len=1000, gen_len=200, concurrency=4, max_num_batched_tokens=2048, **PURE)
    s = serve(tiny(), chip, **kw)
    assert s.max_running == 18 and s.limit == "kv_cache"
    s = serve(tiny(), chip, max_num_seqs=10, **kw)
    assert s.max_running == 10 and s.limit == "max_num_seqs"
    # 4 clients hold ~4 sequences (less the moments a prompt waits for its step): 4 x 35,200 / 667,920 = 21.1 %
    assert s.kv_cache_utilization == pytest.approx(4 * 35_200 / 667_920, rel=1e-2)


@pytest.mark.parametrize("chip, expected", [
    # vLLM's EngineArgs.get_batch_defaults (OpenAI API server): >= 70 GiB (75,161,927,680 B) and not an A100 ->
    # 1024 sequences, 8192 tokens; else 256 and 2048; TPUs set the tokens (v5e 512, v5p 256) and cap the sequences.
    ("h100-sxm", (1024, 8192)),  # 85.0e9 B, the driver's total (vLLM reads the device's total memory)
    ("b200", (1024, 8192)),
    ("a100-80gb", (256, 2048)),  # excluded by name (vLLM PR #17885)
    ("l40s", (256, 2048)),  # 47.7e9 B
    ("tpu-v5e", (256, 512)),
    ("tpu-v5p", (256, 256)),  # 95e9 B: 1024 sequences capped by its 256 tokens
])
def test_engine_defaults_are_vllms_per_device(chip, expected):
    assert vllm_batch_defaults(lr.load_chip(chip)) == expected


def test_serve_defaults_follow_the_chip_and_the_knob_given():
    kw = dict(prompt_len=1024, gen_len=128, **PURE)
    h100 = serve(tiny(), "h100-sxm", concurrency=[8], **kw)
    assert h100.max_num_seqs.tolist() == [1024] and h100.max_num_batched_tokens.tolist() == [8192]
    a100 = serve(tiny(), "a100-80gb", concurrency=8, **kw)
    assert a100.scenario["max_num_seqs"] == 256 and a100.scenario["max_num_batched_tokens"] == 2048
    # only the tokens given: vLLM caps its default sequences by them; only the sequences given: checked against the
    # chip's default tokens
    given = serve(tiny(), "h100-sxm", concurrency=[8], max_num_batched_tokens=512, **kw)
    assert given.max_num_seqs.tolist() == [512]
    with pytest.raises(RooflineError, match="max_num_batched_tokens must be >= max_num_seqs"):
        serve(tiny(), "a100-80gb", concurrency=8, max_num_seqs=4096, **kw)


def test_512_clients_run_at_once_on_a_large_device():
    # B200's default 1024 sequences admit all 512 clients: no client waits a whole request for a slot. With the old
    # fixed 256, half of them queued behind ~256 x (1024 + 128) tokens of work.
    kw = dict(prompt_len=1024, gen_len=128, concurrency=[512], **PURE)
    default = serve(tiny(), "b200", **kw)
    capped = serve(tiny(), "b200", max_num_seqs=256, **kw)
    assert default.max_running.iloc[0] >= 512 > capped.max_running.iloc[0]
    assert default.ttft_s.iloc[0] < capped.ttft_s.iloc[0] / 2


def toy_step_s(rows, kv_d=0.0, chunk=0.0, kv_c=0.0):
    """Every step below 500 tokens reads the weights in 10 ms; 20 us per token above."""
    return np.maximum(0.010, 2e-5 * (np.asarray(rows) + np.asarray(chunk))) + 0.0 * np.asarray(kv_d)


def test_closed_loop_saturates_at_the_slot_capacity_by_hand():
    # 8 slots, 1-token prompts, 101 tokens generated, every step 10 ms: a request holds a slot for its prompt
    # step + 100 decode steps = 1.01 s, so 8 slots serve 8 / 1.01 = 7.921 requests/s whatever the clients;
    # 100 clients: 92 wait for a slot, (100 - 8) / 7.921 = 11.615 s, on top of the 10 ms prompt step.
    wl = workload_of(np.array([1.0]), np.array([101.0]), np.array([0.0]))
    tab = step_tables(toy_step_s, wl, Engine(max_num_seqs=8, max_num_batched_tokens=2048), Speculative(),
                      decode_nodes(8))
    s = solve_closed(tab, wl, np.array([100.0]), np.array([8.0]))
    assert s.requests_per_s[0] == pytest.approx(8 / 1.01, rel=1e-6)
    assert s.tpot_s[0] == pytest.approx(0.010, rel=1e-9)
    assert s.ttft_s[0] == pytest.approx(0.010 + 92 / (8 / 1.01), rel=1e-6)


def test_open_loop_above_saturation_is_an_error_that_names_the_rate():
    with pytest.raises(RooflineError, match=r"saturation throughput of this deployment, ~[0-9.]+ requests/s"):
        serve(LLAMA, "h100-sxm", prompt_len=2048, gen_len=256, qps=500.0)
    # far past it the solve's decode batch overflowed the band's bound ("decode_batch must be a number in ...")
    with pytest.raises(RooflineError, match=r"qps 1e\+300 is above the saturation throughput"):
        serve(LLAMA, "h100-sxm", prompt_len=2048, gen_len=256, qps=1e300)
    ok = serve(LLAMA, "h100-sxm", prompt_len=2048, gen_len=256, qps=2.0)
    assert ok.requests_per_s == pytest.approx(2.0) and ok.ttft_p90_s >= ok.ttft_s


def test_a_sweep_past_saturation_reads_the_engine_at_capacity():
    # Poisson loads past the saturation rate: the queue grows without bound (TTFT inf) while the engine runs full.
    # Every other number is the steady state at the saturation rate, the same at 2x and at 1e6x: before, 1e6 req/s
    # printed 2.56e8 output tokens/s, a 6 us TPOT and the KV cache 249 % full at 20 req/s.
    df = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=256, qps=[5.0, 40.0, 1e6])
    low, past = df.iloc[0], df.iloc[1:]
    sat = low.saturation_requests_per_s
    assert not low.saturated and past.saturated.all() and np.isinf(past.ttft_s).all()
    for _, r in past.iterrows():
        # served: the saturation rate, x 256 tokens; running: at most the capacity, the KV cache at most full
        assert r.requests_per_s == sat and r.output_tokens_per_s == pytest.approx(256 * sat, rel=1e-12)
        assert r.running_batch <= r.max_running and 0.9 < r.kv_cache_utilization <= 1.0
        assert r.tpot_s == past.iloc[0].tpot_s and low.tpot_s < r.tpot_s < 1.0
        # the band: an open loop serves at most its arrivals, whatever its kernels
        assert r.requests_per_s_p10 <= r.requests_per_s <= r.requests_per_s_p90 <= r.qps
        assert r.tpot_s_p10 <= r.tpot_s <= r.tpot_s_p90 < 2 * r.tpot_s
    # just below the rate the same engine: TPOT, running batch and KV use within 1 % of the capacity's
    near = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=256, qps=0.999 * sat)
    assert near.tpot_s == pytest.approx(past.iloc[0].tpot_s, rel=0.01)
    assert near.running_batch == pytest.approx(past.iloc[0].running_batch, rel=0.01)
    # below saturation the p90 of the served rate is the offered rate (the slow kernels' p10 saturate)
    edge = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=256, qps=[0.999 * sat])
    assert edge.requests_per_s_p90.iloc[0] == pytest.approx(0.999 * sat, rel=1e-12)


@pytest.mark.parametrize("kw, match", [
    (dict(), "exactly one of concurrency"),
    (dict(concurrency=4, qps=1.0), "exactly one of concurrency"),
    (dict(concurrency=0), "concurrency must be a positive finite number"),
    (dict(qps=float("inf")), r"qps must be a positive finite number, got \[inf\]"),  # said 'positive' of inf
    (dict(concurrency=4, prefix_hit_rate=1.0), "prefix_hit_rate"),
    (dict(concurrency=4, max_num_seqs=512, max_num_batched_tokens=256), "max_num_batched_tokens must be >="),
    (dict(concurrency=4, speculative=dict(k=2, acceptance=1.5)), "speculative"),
    (dict(concurrency=4, scheduling="fifo"), "scheduling"),
    (dict(concurrency=4, prompt_len=9000, scheduling="prefill_first"), "prefill_first"),
])
def test_bad_inputs_raise_one_clear_error(kw, match):
    with pytest.raises(RooflineError, match=match):
        serve(LLAMA, "h100-sxm", **{"prompt_len": 2048, "gen_len": 64, **kw})


def test_prefix_hits_shorten_the_prefill_but_not_the_decode():
    # Cached tokens skip the prefill but stay in KV and are read by every decode step: at one client the
    # decode step is the same, the prompt step is shorter.
    base = serve(LLAMA, "h100-sxm", prompt_len=4096, gen_len=128, concurrency=1, **PURE)
    hit = serve(LLAMA, "h100-sxm", prompt_len=4096, gen_len=128, concurrency=1, prefix_hit_rate=0.75, **PURE)
    assert hit.tpot_s == base.tpot_s
    assert hit.ttft_s < 0.35 * base.ttft_s  # 1024 of 4096 tokens computed (attention to the prefix still counts)


def test_speculative_decoding_by_hand():
    # k = 3 drafts accepted with probability 0.5: 1 + 0.5 + 0.25 + 0.125 = 1.875 tokens per verify step
    assert Speculative.parse(dict(k=3, acceptance=0.5)).tokens_per_step == pytest.approx(1.875)
    # one client, k = 1 always accepted: 2 tokens per step whose verify (2 rows) costs about one memory-bound
    # decode step, plus one layer of the model as the MTP draft (1/32): TPOT ~ (1 + 1/32) / 2 of the plain one
    plain = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=256, concurrency=1, **PURE)
    spec = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=256, concurrency=1, speculative=dict(k=1, acceptance=1.0),
                 **PURE)
    assert spec.tpot_s == pytest.approx(plain.tpot_s * (1 + 1 / 32) / 2, rel=0.02)


def test_a_workload_of_one_class_is_the_scalar_case_and_a_mix_lies_between():
    one = serve(LLAMA, "h100-sxm", concurrency=8, workload=[(1024, 128)], **PURE)
    scalar = serve(LLAMA, "h100-sxm", prompt_len=1024, gen_len=128, concurrency=8, **PURE)
    assert one.ttft_s == scalar.ttft_s and one.tpot_s == scalar.tpot_s
    short = serve(LLAMA, "h100-sxm", prompt_len=256, gen_len=128, concurrency=1, **PURE)
    long = serve(LLAMA, "h100-sxm", prompt_len=4096, gen_len=128, concurrency=1, **PURE)
    mix = serve(LLAMA, "h100-sxm", concurrency=1, workload=[(256, 128, 3), (4096, 128, 1)], **PURE)
    assert short.ttft_s < mix.ttft_s < long.ttft_s
    assert mix.ttft_p90_s == pytest.approx(long.ttft_s, rel=1e-9)  # the long class is 25 % of the requests


def test_lists_give_a_frame_and_the_same_numbers_as_single_calls():
    df = serve(LLAMA, ["h100-sxm", "h200"], prompt_len=[512, 2048], gen_len=128, qps=[1.0, 4.0], tp=[1, 2])
    assert len(df) == 2 * 2 * 2 * 2
    row = df[(df.chip == "h200") & (df.tp == 2) & (df.prompt_len == 2048) & (df.qps == 4.0)].iloc[0]
    one = serve(LLAMA, "h200", prompt_len=2048, gen_len=128, qps=4.0, tp=2)
    assert row.ttft_s == pytest.approx(one.ttft_s, rel=1e-12) and row.tpot_s == pytest.approx(one.tpot_s, rel=1e-12)
    assert set(one.to_dict()) >= {"ttft_s", "ttft_p90_s", "tpot_s", "e2e_s", "requests_per_s", "output_tokens_per_s",
                                  "running_batch", "kv_cache_utilization"}


def test_cli_serve_prints_the_estimate_and_fails_in_one_line(capsys):
    from llm_roofline.cli import main

    assert main(["serve", LLAMA, "--chip", "h100", "--prompt", "1024", "--gen", "64", "--concurrency", "4",
                 "--format", "json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    s = serve(LLAMA, "h100", prompt_len=1024, gen_len=64, concurrency=4)
    assert d["ttft_s"] == pytest.approx(s.ttft_s, rel=1e-12) and d["scenario"]["concurrency"] == 4
    assert main(["serve", LLAMA, "--chip", "h100", "--qps", "900"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "saturation throughput" in err[0]


def test_a_sweep_point_with_no_room_for_one_sequence_runs_nothing(capsys):
    """By hand: Qwen3-32B's 32.8e9 bf16 weights are 65.5 GB, beyond an L40S's 0.9 x 47.667 GB = 42.9 GB at tp 1 (no
    room for one sequence's KV cache: the point runs nothing: NaN metrics, saturation 0, limit 'no room', where the
    queue used to be solved on a stand-in capacity of one, 0.07 req/s and KV '6.7e11 %'); at tp 2, 32.8 GB a chip,
    it fits. A sweep where no point fits is one error line."""
    from llm_roofline.cli import main

    df = serve("Qwen/Qwen3-32B", "l40s", tp=[1, 2], qps=0.5)
    no, yes = df.iloc[0], df.iloc[1]
    assert (no["fits"], no["limit"], no["saturation_requests_per_s"]) == (False, "no room", 0.0)
    assert all(math.isnan(no[k]) for k in ("ttft_s", "tpot_s", "requests_per_s", "running_batch",
                                           "kv_cache_utilization", "ttft_s_p90"))
    assert yes["fits"] and yes["saturation_requests_per_s"] > 0.5 and 0 < yes["kv_cache_utilization"] < 1
    assert main(["serve", "meta-llama/Llama-3.1-70B", "--chip", "h100-sxm", "--tp", "2", "--prompt", "2048,131072",
                 "--qps", "0.2"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("131072"))
    assert "no room" in row and "nan" not in row and "cap 'no room'" in out
    assert main(["serve", "meta-llama/Llama-3.1-70B", "--chip", "h100-sxm", "--qps", "0.5,2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not fit h100-sxm at tp=1" in err[0]


def test_knee_is_the_maximum_power_point(tmp_path):
    from llm_roofline.report.serving_plot import knee_index, plot_serving

    # power = requests/s / e2e: 1/1, 2/1, 3/2 -> the second point; a saturated (inf) point never wins
    assert knee_index([1.0, 2.0, 3.0], [1.0, 1.0, 2.0]) == 1
    assert knee_index([1.0, 9.0], [1.0, np.inf]) == 0
    r = plot_serving(LLAMA, "h100-sxm", tmp_path / "serving.png", concurrency=[1, 8, 64], prompt_len=1024, gen_len=64)
    assert (tmp_path / "serving.png").stat().st_size > 0 and list(r.data["load"]) == [1, 8, 64]
    r.close()
    # the title names a weight dtype override and fits the figure: wrapped, no line wider than the 11-inch figure
    #   holds at 10 pt (chart_base.suptitle: 11 * 72 / 6.2 = 127 characters)
    r = plot_serving(LLAMA, "b200", concurrency=[1, 8], prompt_len=1024, gen_len=64, weight_dtype="int4")
    title = r.figure._suptitle.get_text()
    assert "weights int4" in title and "borrowed from" in title and max(map(len, title.split("\n"))) <= 127
    r.close()


def test_a_benchmark_run_adds_its_first_burst_once_per_run():
    # all C clients start together: the first round's burst is one round in requests_per_client, so its share of
    # the mean TTFT halves from 5 to 10 requests per client; one client has no burst; TPOT is the steady state's
    kw = dict(prompt_len=2048, gen_len=256, **PURE)
    ttft = {r: serve(LLAMA, "h100-sxm", concurrency=16, requests_per_client=r, **kw).ttft_s for r in (5, 10, np.inf)}
    assert ttft[5] - ttft[np.inf] == pytest.approx(2 * (ttft[10] - ttft[np.inf]), rel=1e-9)
    assert ttft[10] > 1.1 * ttft[np.inf]
    one = [serve(LLAMA, "h100-sxm", concurrency=1, requests_per_client=r, **kw) for r in (1, np.inf)]
    assert one[0].ttft_s == one[1].ttft_s and one[0].tpot_s == one[1].tpot_s
    for bad in (dict(requests_per_client=0.5), dict(requests_per_client="ten"), dict(prompt_layer_overhead_s=-1e-3),
                dict(seq_overhead_s=float("inf")), dict(step_overhead_s=[1e-3]), dict(step_overhead_s=True),
                dict(request_overhead_s="0.001"), dict(requests_per_client=True)):  # bool, str: were 1 s, 1 ms, 1
        with pytest.raises(lr.errors.RooflineError):
            serve(LLAMA, "h100-sxm", concurrency=4, **bad)
    said = r"requests_per_client must be a number in \[1, .*\] \(or inf\)"
    for bad in (np.array([5.0, 10.0]), float("nan"), -np.inf):  # one number >= 1, or inf
        with pytest.raises(lr.errors.ScenarioError, match=said):
            serve(LLAMA, "h100-sxm", concurrency=4, requests_per_client=bad)
    # the engine's layout counts divide its rows and stages: 0 or NaN is one error, not a division
    for bad in (dict(attention_groups=0.0), dict(own_step_stages=float("nan"))):
        with pytest.raises(lr.errors.ScenarioError, match="own_step_stages and attention_groups must be >= 1"):
            Engine(**bad)
    # host time past a minute (bounds.BOUNDS["host_overhead_s"]) is a slip of units: 1e300 s a layer overflowed the
    # queue's step tables into an IndexError before the bound
    for bad in (dict(prompt_layer_overhead_s=1e300), dict(request_overhead_s=61.0)):
        with pytest.raises(lr.errors.ScenarioError, match=r"must be a number in \[0, 60\] s"):
            serve(LLAMA, "h100-sxm", concurrency=4, **bad)


@pytest.mark.parametrize("prompt", [4096, 100_000])
def test_a_prompt_crosses_every_pipeline_stage_with_each_of_its_chunks(prompt):
    # a prompt at 0.01 req/s, in one chunk (4096 tokens) or thirteen (100,000 over an 8192-token budget): under pp 2
    # each chunk rides whole in one micro-batch through stage 1, then stage 2, before the next is scheduled (vLLM
    # does not pipeline one request's chunks: vllm-project/vllm#41682), so its service (TTFT less the wait for the
    # engine: queue_s) is pp 1's on the same tp, the same layers' work, within the hand-offs (64 MiB of activations
    # per 4096-token chunk over NVLink) and the decode rows beside it (half as many per micro-batch). The wait itself
    # may differ: a pipelined engine takes the prompt one stage slot after it lands, not one step. Before, the
    # serving model spread each chunk over the pp micro-batches: 179 ms against 349 ms at pp 1 for 4096 tokens,
    # 6.9 s against 12.9 s for 100,000 (a capacity plan then took pp 2 for a TTFT it does not have)
    kw = dict(prompt_len=prompt, gen_len=256, qps=0.01, tp=4)
    runs = {pp: lr.serve("meta-llama/Llama-3.1-70B", "h100-sxm", pp=pp, **kw) for pp in (1, 2)}
    service = {pp: r.ttft_s - r.queue_s for pp, r in runs.items()}
    assert service[2] == pytest.approx(service[1], rel=0.02)


def test_a_long_prompt_served_in_chunks_costs_about_its_one_shot_prefill():
    # Llama-2-7B (MHA: one query head per KV head) at 0.01 req/s, a 12,000-token prompt in two chunks of the
    # 8192-token budget: the second attends to a prefix longer than itself, so its KV bytes exceed its Q/O bytes, and
    # it was priced with the decode fit (one-token rows): TTFT 4.28 s against estimate's one-shot prefill 325 ms.
    # Chunked, the same layers run in two steps (weights read twice, the second chunk's attention over the first):
    # between the one-shot prefill and 1.5x it
    one_shot = lr.estimate("meta-llama/Llama-2-7b-hf", "h100-sxm", prompt_len=12_000, gen_len=64).ttft_s
    served = lr.serve("meta-llama/Llama-2-7b-hf", "h100-sxm", prompt_len=12_000, gen_len=64, qps=0.01)
    assert one_shot <= served.ttft_s - served.queue_s <= 1.5 * one_shot


def test_a_lone_decoding_sequence_crosses_every_pipeline_stage_for_each_token():
    # 0.001 req/s, 32,768-token prompts: about one sequence decodes at a time. Under pp 2 its token crosses stage 1,
    # then stage 2, reading all its layers' weights and KV cache as at pp 1 on the same tp (plus an 8 kB hand-off);
    # the serving model priced it as a step of half a sequence per micro-batch: TPOT 17.9 ms against 18.9 ms at pp 1
    kw = dict(prompt_len=32_768, gen_len=256, qps=0.001, tp=4)
    tpot = {pp: lr.serve("meta-llama/Llama-3.1-70B", "h100-sxm", pp=pp, **kw).tpot_s for pp in (1, 2)}
    assert tpot[2] == pytest.approx(tpot[1], rel=0.01)


def test_a_sweep_over_max_num_seqs_prices_each_points_graphs():
    # the step tables are shared by the points of one workload and budget; the graphs' size splits them by
    # max_num_seqs: a swept row equals the same point served alone (64 sequences: the 256-token prompt step eager)
    kw = dict(efficiency="ideal", gen_len=8, concurrency=1, max_num_batched_tokens=2048, prompt_len=256)
    df = serve(LLAMA, "h100-sxm", max_num_seqs=[64, 128, 1], **kw)
    alone = [serve(LLAMA, "h100-sxm", max_num_seqs=n, **kw).ttft_s for n in (64, 128, 1)]
    assert df["ttft_s"].tolist() == pytest.approx(alone, rel=1e-12)
    assert alone[0] - alone[1] == pytest.approx(32 * 0.876e-3, rel=1e-9)  # the shipped 0.876 ms per layer


@pytest.mark.parametrize("seqs, eager_s", [(64, 0.016), (128, 0.0)])
def test_step_tables_price_the_engines_own_graph_size(seqs, eager_s):
    # step_tables called without a graph split reads the engine's max_num_seqs: 64 sequences stop the graphs at
    # 2 x 64 = 128 tokens, so a 256-token prompt's own step (no decode rows beside it, node 0) pays the 16 ms eager
    # host time on top of toy_step_s's 10 ms; 128 sequences reach 256 tokens and it pays none
    wl = workload_of(np.array([256.0]), np.array([8.0]), np.array([0.0]))
    eng = Engine(max_num_seqs=seqs, max_num_batched_tokens=2048, prompt_step_overhead_s=0.016)
    tab = step_tables(toy_step_s, wl, eng, Speculative(), decode_nodes(seqs))
    assert tab.own_s[0, 0, 0] == pytest.approx(0.010 + eager_s, rel=1e-12)


@pytest.mark.parametrize("groups", [1, 2])
def test_each_attention_dp_rank_runs_its_own_graphs(groups):
    # vLLM's attention-DP ranks each replay their own CUDA graphs (64 sequences: 2 x 64 = 128 tokens) over their share
    # of the decode rows; a step runs eagerly when its busiest rank does, the rank holding the prompt's chunk:
    # d / groups decode rows + the 60-token prompt. Whole step tokens d + 60 > 128 made every d > 68 eager at 2 ranks;
    # per rank d / 2 + 60 > 128 only d > 136. Own step: toy_step_s (10 ms up to 500 tokens) + 16 ms where eager
    wl = workload_of(np.array([60.0]), np.array([8.0]), np.array([0.0]))
    eng = Engine(max_num_seqs=64, max_num_batched_tokens=2048, prompt_step_overhead_s=0.016, attention_groups=groups)
    nodes = decode_nodes(128 * groups)
    tab = step_tables(toy_step_s, wl, eng, Speculative(), nodes)
    eager = nodes / groups + 60 > 128
    assert eager.any() and not eager.all()
    assert tab.own_s[0, 0] == pytest.approx(0.010 + 0.016 * eager, rel=1e-12)
