"""Serving-stack layouts: data-parallel attention (attention_dp), MoE tp x ep independent of attention tp,
routing skew, and the seeds' MoE critical batch. Hand arithmetic in the comments."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import llm_roofline as lr
from llm_roofline.estimate import estimate
from llm_roofline.memory import memory_footprint, weight_bytes
from llm_roofline.model.hf import load_model
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec

L70 = load_model("meta-llama/Llama-3.1-70B")  # the dims of the book's LLaMA-3-70B
DSV3 = load_model("deepseek-ai/DeepSeek-V3")
V5E = lr.load_chip("tpu-v5e")  # 16e9 B HBM


def test_book_llama3_70b_on_16_v5e_kv_replication_vs_attention_dp():
    # "How to Scale Your Model" Part 8: LLaMA-3-70B, bf16, 8k context on 16 TPU v5e.
    # KV per token 2 x 8 KV heads x 128 x 80 layers x 2 B = 327,680 B; per 8,192-token sequence 2.684e9 B.
    # tp = 16 with 8 KV heads: every chip keeps 1 head, each head on 2 chips (replicated):
    #   KV per sequence per chip 1 x 2 x 128 x 80 x 2 x 8192 = 335,544,320 B, and every chip holds all B sequences.
    #   weights per chip: 70,553,706,496 params x 2 B / 16 = 8,819,213,312, + the replicated half of each K/V
    #   projection (0.5 head x 2 x 128 x 8192 x 80 x 2 B = 167,772,160) + the norms every chip keeps whole
    #   (2,637,824 x 15/16 = 2,472,960) = 8,989,458,432; workspace of one 8,192-token chunk (residual add
    #   49,152 + stream 16,384 B per token) 536,870,912 -> free 6,473,670,656 -> B = floor(/335,544,320) = 19.
    fp, _ = memory_footprint(L70, V5E, batch=1, prompt_len=8191, gen_len=1, tp=16)
    assert float(fp.kv_bytes_per_sequence_per_chip) == 335_544_320
    assert float(fp.weight_bytes_per_chip) == 8_989_458_432
    assert int(fp.max_batch) == 19
    # attention_dp = 2 groups of tp = 8: each chip keeps 1 KV head, NOT replicated, for its group's B/2 sequences.
    # The book's 43 = 2 x floor((16e9 - 8.75e9) / 0.3355e9) ignores that each group holds all attention weights:
    #   attention 80 x (8192 x (8192 + 2 x 1024) + 8192 x 8192) x 2 B = 24.16e9, over 8 chips (not 16): +1.51e9;
    #   embedding + LM head 2 x 128,256 x 8192 x 2 B = 4.20e9 over 8: +0.26e9; the 0.54e9 chunk workspace.
    #   weights per chip: attention 12,079,595,520 params x 2 B / 8 = 3,019,898,880; MLP 80 x 3 x 8192 x 28672
    #   x 2 B / 16 = 7,046,430,720; embedding + LM head 2 x 262,668,288; norms (2 x 80 + 1) x 8192 x 2 B =
    #   2,637,824 -> 10,594,304,000. Workspace: the largest op per attention-group token is the residual add,
    #   (2 reads + 1 write) x 8192 x 2 B = 49,152 B (up_gate, whose rows are both groups' tokens, is 2 x (8192 +
    #   2 x 28672 / 16) x 2 B = 47,104 B), + the residual stream 16,384 B, x 8,192 tokens = 536,870,912.
    #   free 16e9 - 10,594,304,000 - 536,870,912 = 4,868,825,088 -> 14 per group (14.5) -> B = 28.
    fp2, _ = memory_footprint(L70, V5E, batch=2, prompt_len=8191, gen_len=1, tp=8, attention_dp=2)
    assert float(fp2.kv_bytes_per_sequence_per_chip) == 335_544_320
    assert float(fp2.weight_bytes_per_chip) == 10_594_304_000
    assert float(fp2.activation_workspace_bytes_per_chip) == 536_870_912
    assert int(fp2.max_batch) == 28
    # per chip at batch 28: the KV of 14 sequences, not 28
    est = estimate(L70, V5E, batch=28, prompt_len=8000, gen_len=192, tp=8, attention_dp=2, efficiency="ideal",
                   gpu_memory_utilization=1.0)  # the book's arithmetic fills all 16e9 B
    assert est.memory.per_chip_kv_cache_bytes == pytest.approx(14 * 335_544_320)
    assert est.memory.fits and est.memory.max_batch == 28


def test_a_calibrated_all_to_all_pays_deeps_floor_and_a_time_per_token_a_chip_sends():
    # DeepSeek-V3 on 8 H200 (one NVLink domain): attention_dp 8 x tp 1, experts over moe_ep 8. Decode at batch 64:
    # 8 sequences per GPU, so each GPU dispatches 8 tokens (8 x top-8 x 7168 x 2 B = 917,504 B). The h200 all_to_all
    # fit (DeepEP's kernels: aic_vllm.a2a_rows, T = tokens on each rank) prices the op at its link time plus
    # overhead_s + overhead_per_token_s x 8 (the tokens were the whole stage's 64 before, unpriced)
    est = estimate(DSV3, "h200", batch=64, prompt_len=2048, gen_len=256, tp=1, attention_dp=8, moe_ep=8,
                   moe_dispatch="all_to_all")
    op = est.ops[est.ops.phase == "decode"].set_index("name").loc["comm.all_to_all.dispatch"]
    fit = lr.load_chip("h200").calibration["all_to_all"]
    assert op["comm_bytes"] == 917_504 and fit["overhead_per_token_s"] > 0
    assert op["t_s"] - op["t_comm_s"] == pytest.approx(fit["overhead_s"] + 8 * fit["overhead_per_token_s"], rel=1e-9)


def test_deepseek_v3_attention_dp_16_moe_ep_16_all_to_all_by_hand():
    # DeepSeek-V3 on 16 H200: attention data-parallel 16 x tp 1, routed experts over moe_ep = 16 (16 per GPU), the
    # tokens exchanged by DeepEP's all-to-all. Decode at batch 64: 4 sequences per GPU, 1 token each. Dispatch sends
    # each token's top-8 copies of d = 7168 bf16 activations: 4 x 8 x 7168 x 2 B = 458,752 B per GPU; the combine
    # returns as much.
    est = estimate(DSV3, "h200", batch=64, prompt_len=2048, gen_len=256, tp=1, attention_dp=16, moe_ep=16,
                   moe_dispatch="all_to_all", efficiency="ideal")
    dec = est.ops[est.ops.phase == "decode"].set_index("name")
    assert dec.loc["comm.all_to_all.dispatch", "comm_bytes"] == 458_752
    assert dec.loc["comm.all_to_all.combine", "comm_bytes"] == 458_752
    assert "over 16 chips" in dec.loc["comm.all_to_all.dispatch", "formula"]
    assert est.scenario["chips"] == 16
    # KV per GPU: MLA latent (512 + 64) x 61 layers x 2 B = 70,272 B/token; 4 sequences x 2,304 tokens
    assert est.memory.per_chip_kv_cache_bytes == pytest.approx(4 * 2304 * 70_272)
    # weights per GPU: 16 of the 256 routed experts of each of the 58 MoE layers in fp8 (block scales):
    # 58 x 16 x 3 x 7168 x 2048 x (8 + 32/16384)/8 B = 40.87e9, plus everything else (MLA, shared experts and
    # dense MLPs split 16 ways, embedding + LM head whole at tp 1): about 56.5e9 in all
    assert 40.87e9 < est.memory.per_chip_weight_bytes < 60e9


def test_deepseek_v3_attention_dp_16_moe_ep_16_allgather_by_hand():
    # The same deployment with the default exchange (vLLM's allgather_reducescatter): every GPU all-gathers the 16
    # groups' 64 tokens of d = 7168 bf16 activations, 64 x 7168 x 2 B = 917,504 B over 16 chips, runs its 16 experts
    # over all of them (64 tokens x top-8 = 512 routed rows walked, 32 of them its own on average), and
    # reduce-scatters the 917,504 B of partial sums back; at tp 1 no all-reduce follows, and no all-to-all runs.
    est = estimate(DSV3, "h200", batch=64, prompt_len=2048, gen_len=256, tp=1, attention_dp=16, moe_ep=16,
                   efficiency="ideal")
    dec = est.ops[est.ops.phase == "decode"].set_index("name")
    moe = dec[dec.group == dec.loc["ffn.experts.up_gate", "group"]]  # the 58 MoE layers (3 dense ones gather too)
    assert moe.loc["ffn.experts.up_gate", "count"] == 58
    gather, scatter = moe.loc["comm.all_gather.ffn_in"], moe.loc["comm.reduce_scatter.ffn_out"]
    assert gather["comm_bytes"] == scatter["comm_bytes"] == 917_504
    assert "over 16 chips" in gather["formula"] and "over 16 chips" in scatter["formula"]
    assert not dec.index.str.contains("all_to_all").any() and "comm.all_reduce.ffn" not in moe.index
    assert est.scenario["moe_dispatch"] == "allgather"
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.sharding import Sharding

    ops = {o.name: o for o in build_ops(load_model(DSV3), Phase.decode(64, 2048), Sharding(tp=1, attention_dp=16,
                                                                                          moe_ep=16))}
    assert float(ops["ffn.experts.up_gate"].walked_rows) == 512


def _moe_tiny(experts=8, top_k=2) -> ModelSpec:
    group = LayerGroup("moe", 2, AttentionSpec("mha", 8, 8, 16, 16), FfnSpec("moe", 0, True, "silu", n_experts=experts,
                                                                             top_k=top_k, d_expert=64))
    return ModelSpec("tiny-moe", d_model=128, vocab_size=256, layer_groups=(group,))


def _dense_tiny() -> ModelSpec:
    group = LayerGroup("dense", 2, AttentionSpec("mha", 8, 8, 16, 16), FfnSpec("dense", 512, True, "silu"))
    return ModelSpec("tiny", d_model=128, vocab_size=256, layer_groups=(group,))


LAYOUTS = [dict(tp=1), dict(tp=2), dict(tp=8), dict(tp=2, attention_dp=4), dict(tp=1, attention_dp=8),
           dict(tp=4, ep=2), dict(tp=2, attention_dp=4, moe_ep=8), dict(tp=2, attention_dp=2, moe_ep=2, moe_tp=2),
           dict(tp=2, attention_dp=2, sequence_parallel=True), dict(tp=4, ep=4, sequence_parallel=True)]


@settings(max_examples=20, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), moe=st.booleans(), b=st.sampled_from([8, 16, 64]),
       p=st.integers(16, 512), g=st.integers(2, 64))
def test_flops_are_conserved_and_memory_covers_the_model_in_every_layout(layout, moe, b, p, g):
    spec = _moe_tiny() if moe else _dense_tiny()
    if not moe and ("moe_ep" in layout or "ep" in layout):
        return
    one = estimate(spec, "h100", batch=b, prompt_len=p, gen_len=g, efficiency="ideal")
    est = estimate(spec, "h100", batch=b, prompt_len=p, gen_len=g, **layout)
    # useful work does not depend on how it is split (MoE: balanced routing; decode: the exact step sum;
    # 8 KV heads, so no layout here replicates K/V projections, which would add redundant work)
    assert est.prefill.flops == pytest.approx(one.prefill.flops, rel=1e-9)
    assert est.decode.flops == pytest.approx(one.decode.flops, rel=1e-9)
    # every parameter lives somewhere: per-chip weights x chips >= the checkpoint
    chips = est.scenario["chips"]
    assert est.memory.per_chip_weight_bytes * chips >= weight_bytes(spec) * (1 - 1e-12)
    assert est.memory.per_chip_kv_cache_bytes * chips >= est.memory.kv_cache_bytes / layout.get("tp", 1) * 0.999


def test_routing_skew_slows_the_experts_not_the_rest():
    spec = _moe_tiny(experts=16, top_k=2)
    even = estimate(spec, "h100", batch=64, prompt_len=256, gen_len=8, tp=1, attention_dp=4, moe_ep=4,
                    moe_dispatch="all_to_all", efficiency="ideal")
    skew = estimate(spec, "h100", batch=64, prompt_len=256, gen_len=8, tp=1, attention_dp=4, moe_ep=4,
                    moe_dispatch="all_to_all",
                    routing_skew=1.5, efficiency="ideal")
    a = even.ops.set_index(["phase", "name"])
    b = skew.ops.set_index(["phase", "name"])
    # the busiest chip handles 1.5x the mean expert assignments and receives 1.5x the dispatched rows
    assert b.loc[("prefill", "ffn.experts.up_gate"), "flops"] == pytest.approx(
        1.5 * a.loc[("prefill", "ffn.experts.up_gate"), "flops"])
    assert b.loc[("prefill", "comm.all_to_all.dispatch"), "comm_bytes"] == pytest.approx(
        1.5 * a.loc[("prefill", "comm.all_to_all.dispatch"), "comm_bytes"])
    assert b.loc[("prefill", "attn.core"), "t_s"] == a.loc[("prefill", "attn.core"), "t_s"]
    with pytest.raises(lr.ShardingError, match="moe_dispatch must be one of allgather, all_to_all, got 'deepep'"):
        estimate(spec, "h100", tp=1, attention_dp=4, moe_ep=4, moe_dispatch="deepep", efficiency="ideal")
    with pytest.raises(lr.ShardingError, match="moe_dispatch must be one of"):
        estimate(spec, "h100", tp=1, attention_dp=4, moe_ep=4, moe_dispatch=["allgather"], efficiency="ideal")
    with pytest.raises(lr.ShardingError, match="routing_skew"):
        estimate(spec, "h100", tp=1, attention_dp=4, moe_ep=4, routing_skew=5.0, efficiency="ideal")  # more than moe_ep = 4


def test_layout_errors_name_the_numbers():
    with pytest.raises(lr.ShardingError, match=r"moe_tp x moe_ep = 3 x 2 must equal the 4 chips"):
        estimate(_moe_tiny(), "h100", tp=2, attention_dp=2, moe_ep=2, moe_tp=3, efficiency="ideal")
    with pytest.raises(lr.ShardingError, match="ep=2 and moe_ep=4 disagree"):
        estimate(_moe_tiny(), "h100", tp=4, ep=2, moe_ep=4, efficiency="ideal")
    with pytest.raises(lr.ScenarioError, match="multiple of pp x attention_dp = 4"):
        estimate(_dense_tiny(), "h100", batch=6, tp=1, attention_dp=4, efficiency="ideal")


def test_moe_critical_batch_scales_with_experts_over_top_k():
    # seeds: the weight-bound -> compute-bound batch is E/k times larger for MoE (each expert sees k/E of the
    # tokens). DeepSeek-V3: E/k = 256/8 = 32; fp8 (8 + 32/16384 bits) weights on H200 bf16 compute:
    # batch_tokens = 989e12/4.8e12 x (8.00195/8)/2 = 103.06 -> moe_batch_tokens = 32 x 103.06 = 3,298
    est = estimate(DSV3, "h200", batch=8, prompt_len=128, gen_len=2, tp=8, efficiency="ideal")
    c = est.critical
    assert c["moe_batch_tokens"] == pytest.approx(32 * c["batch_tokens"])
    assert c["moe_batch_tokens"] == pytest.approx(3298, rel=0.01)
    assert "moe_batch_tokens" not in estimate(L70, "h100", batch=1, prompt_len=8, gen_len=2, tp=8, efficiency="ideal").critical
    assert np.isfinite(c["batch_tokens"])


# ------------------------------------------------------------------------------ disaggregation
def test_kv_transfer_time_by_hand_and_in_ttft():
    from llm_roofline.plan import disaggregation
    from llm_roofline.plan.disaggregate import kv_transfer_s, worker_counts

    # Llama-3.1-70B, 2,048-token prompt, bf16 KV: 327,680 B/token x 2,048 = 671,088,640 B per request.
    # Four prefill chips each send a quarter, 167,772,160 B, over their own 400 Gb/s NIC (H100 DGX: 50e9 B/s
    # per GPU) after one 5 us hop: 167,772,160 / 50e9 + 5e-6 = 3.3604432e-3 s.
    h100 = lr.load_chip("h100-sxm")
    assert kv_transfer_s(L70, h100, 2048, "bf16", 4) == pytest.approx(3.3604432e-3, rel=1e-12)
    # inside the NVLink domain instead: 167,772,160 / 450e9 + 2 us (the link's hop latency) = 0.37483 ms
    assert kv_transfer_s(L70, h100, 2048, "bf16", 4, "scaleup") == pytest.approx(
        167_772_160 / 450e9 + h100.scaleup.latency_s, rel=1e-12)
    d = disaggregation(L70, h100, 2048, 256, decode_batch=64, ttft_s=1.0, tpot_s=0.05, efficiency="ideal")
    sender_chips = d.prefill_tp * d.prefill_pp
    assert d.kv_transfer_bytes == 671_088_640
    assert d.kv_transfer_s == pytest.approx(671_088_640 / sender_chips / 50e9 + 5e-6, rel=1e-12)
    assert d.ttft_s <= 1.0 and d.ttft_s > d.kv_transfer_s
    assert d.to_dict()["xpyd"] == f"{d.prefill_workers}P{d.decode_workers}D"
    # xPyD at a load: 10 req/s over instances of 2.5 (prefill) and 4 (decode) req/s -> 4P3D
    assert worker_counts(2.5, 4.0, qps=10) == (4, 3)
    # without a load: the smallest counts within 5 % of the balanced ratio 4 / 2.5 = 1.6 prefill per decode:
    # 1 decode -> 2/1 (25 % off), 2 -> 3/2 (6.3 %), 3 -> 5/3 = 1.667 (4.2 %) -> 5P3D
    assert worker_counts(2.5, 4.0) == (5, 3)


def test_cli_layout_flags(capsys):
    import json

    from llm_roofline.cli import main

    rc = main(["estimate", "deepseek-ai/DeepSeek-V3", "--chip", "h200", "--batch", "64", "--prompt", "2048", "--gen",
               "256", "--tp", "1", "--attention-dp", "16", "--moe-ep", "16", "--moe-dispatch", "all_to_all",
               "--efficiency", "ideal", "--format", "json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["scenario"]["attention_dp"] == 16 and d["scenario"]["chips"] == 16
    dispatch = [r for r in d["ops"] if r["phase"] == "decode" and r["name"] == "comm.all_to_all.dispatch"]
    assert dispatch[0]["comm_bytes"] == 458_752  # 4 tokens x 8 experts x 7168 x 2 B, as above
    assert main(["estimate", "deepseek-ai/DeepSeek-V3", "--chip", "h200", "--routing-skew", "0"]) == 2
    assert "routing_skew must be a number in [1, moe_ep=1]" in capsys.readouterr().err


def test_serve_with_data_parallel_attention_holds_more_sequences():
    # DeepSeek-V3's MLA latent is one 'KV head': at tp 8 every GPU caches every sequence's latent, while 8
    # attention groups of 1 GPU each cache 1/8 of the sequences. So the KV-bound running batch grows ~8x (a bit
    # less: each group also holds all of the MLA weights, which tp 8 split 8 ways)
    kw = dict(prompt_len=8192, gen_len=1024, concurrency=4096, max_num_seqs=8192, efficiency="ideal")
    tp8 = lr.serve(DSV3, "h200", tp=8, ep=8, **kw)
    adp = lr.serve(DSV3, "h200", tp=1, attention_dp=8, moe_ep=8, **kw)
    assert tp8.to_dict()["limit"] == adp.to_dict()["limit"] == "kv_cache"
    ratio = adp.to_dict()["max_running"] / tp8.to_dict()["max_running"]
    assert 5 < ratio <= 8
    assert adp.kv_cache_utilization <= 1 and adp.to_dict()["scenario"]["attention_dp"] == 8


def test_max_num_seqs_is_per_attention_group():
    # each of vLLM's data-parallel ranks runs its own scheduler with its own max_num_seqs: Llama-3.2-1B on 2 chips
    # (tp 1, attention_dp 2) with max_num_seqs 4 runs 2 x 4 = 8 sequences at most (it ran 4)
    s = lr.serve("meta-llama/Llama-3.2-1B", "h100-sxm", prompt_len=512, gen_len=64, concurrency=64, attention_dp=2,
                 max_num_seqs=4, efficiency="ideal")
    assert s.max_running == 8 and s.limit == "max_num_seqs"


@pytest.mark.parametrize("qps", [float("nan"), -1.0, "x", 1e400])
def test_disaggregation_load_is_checked(qps):
    from llm_roofline.plan import disaggregation

    with pytest.raises(lr.ScenarioError, match="qps must be a number in"):
        disaggregation("meta-llama/Llama-3.2-1B", "h100", 512, 64, decode_batch=8, qps=qps, efficiency="ideal")
