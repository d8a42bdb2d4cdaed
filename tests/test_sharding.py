"""Sharding in the graph and the estimate: conservation of work, divisibility, KV replication, pp, dp."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import llm_roofline as lr
from llm_roofline.graph import Phase, build_ops
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec
from llm_roofline.estimate import prefill_time_factor, step_time_factor
from llm_roofline.sharding import Sharding, stage_layers, stage_note


def spec_for(h, kv, hd, d, f, layers=2, vocab=512):
    attn = AttentionSpec("gqa" if kv < h else "mha", h, kv, hd, hd)
    return ModelSpec("s", d, vocab, (LayerGroup("dense", layers, attn, FfnSpec("dense", f, True, "silu")),))


@settings(max_examples=40, deadline=None)
@given(tp_exp=st.integers(0, 3), kv_mult=st.integers(1, 4), g=st.sampled_from([1, 2, 4]), hd=st.sampled_from([16, 64]),
       f_mult=st.integers(1, 6), batch=st.integers(1, 16), q=st.integers(1, 64))
def test_flops_summed_over_shards_equal_unsharded(tp_exp, kv_mult, g, hd, f_mult, batch, q):
    tp = 2 ** tp_exp
    kv = tp * kv_mult  # KV heads divisible by tp
    h = kv * g
    f = 64 * tp * f_mult
    spec = spec_for(h, kv, hd, h * hd, f)
    phase = Phase.prefill(batch, q)
    one = {o.name: o for o in build_ops(spec, phase) if o.kind != "collective"}
    sharded = {o.name: o for o in build_ops(spec, phase, Sharding(tp=tp)) if o.kind != "collective"}
    for name in ("attn.qkv_proj", "attn.core", "attn.o_proj", "ffn.up_gate", "ffn.down", "lm_head"):
        assert float(sharded[name].flops) * tp == pytest.approx(float(one[name].flops), rel=1e-12)
        assert sharded[name].shards == tp
    # per-chip resident weights: 1/tp of every sharded matrix, all of each replicated one (norms)
    for name in ("attn.qkv_proj", "attn.o_proj", "ffn.up_gate", "ffn.down", "lm_head", "embed"):
        assert sharded[name].stored_bytes * tp == pytest.approx(one[name].stored_bytes, rel=1e-12)
    assert sharded["norm.attn"].stored_bytes == one["norm.attn"].stored_bytes == spec.d_model * 2


def test_llama70b_on_2_4_8_h100():
    runs = {tp: lr.estimate("meta-llama/Llama-3.1-70B", "h100", batch=8, prompt_len=2048, gen_len=128, tp=tp, efficiency="ideal")
            for tp in (2, 4, 8)}
    flops = {tp: e.prefill.flops for tp, e in runs.items()}
    assert flops[4] == pytest.approx(flops[2], rel=1e-12) and flops[8] == pytest.approx(flops[2], rel=1e-12)
    # weights per chip ~ 2 bytes x 70.6e9 params (Llama-3.1-70B model card) / tp: embedding, LM head and
    # attention are split too; only the norms (80 x 2 x 8192 params) are replicated
    for tp, e in runs.items():
        assert e.memory.per_chip_weight_bytes == pytest.approx(2 * 70.6e9 / tp, rel=0.01)
    tpot = {tp: e.tpot_s for tp, e in runs.items()}
    assert tpot[8] < tpot[4] < tpot[2]
    assert tpot[4] > tpot[2] / 2 and tpot[8] > tpot[4] / 2  # less than linear: all-reduces cost time
    assert 0 < runs[2].decode.comm_share < runs[4].decode.comm_share < runs[8].decode.comm_share
    names = set(runs[8].ops.name)
    assert {"comm.all_reduce.attn", "comm.all_reduce.ffn", "comm.all_gather.lm_head"} <= names


def test_divisibility_errors_are_clear():
    with pytest.raises(lr.ShardingError, match="attention heads = 64 is not divisible by 3"):
        lr.estimate("meta-llama/Llama-3.1-70B", "h100", tp=3, efficiency="ideal")
    with pytest.raises(lr.ShardingError, match="routed experts"):
        lr.estimate("mistralai/Mixtral-8x7B-v0.1", "h100", tp=16, ep=16, efficiency="ideal")
    with pytest.raises(lr.ShardingError, match=r"pp = 33 exceeds the number of layers \(32\)"):
        lr.estimate("meta-llama/Llama-3.1-8B", "h100", pp=33, batch=33, efficiency="ideal")
    with pytest.raises(lr.ShardingError, match=r"moe_ep=3 must divide the 4 chips an FFN layer spans \(tp=4"):
        lr.estimate("mistralai/Mixtral-8x7B-v0.1", "h100", tp=4, ep=3, efficiency="ideal")
    with pytest.raises(ValueError, match="tp must be a positive integer"):
        Sharding(tp=0)


def test_sequence_parallel_is_a_flag_and_anything_else_is_refused_in_one_line():
    # fuzz seed 79 found a sweep with sequence_parallel=[0, [True]] crash with a TypeError (a list in the Sharding,
    # hashed by the static planner's and the sweep's stage grouping): a flag, 0 / 1 (as bool) or one line
    from llm_roofline.errors import RooflineError, ShardingError

    assert Sharding(sequence_parallel=1).sequence_parallel is True and Sharding(sequence_parallel=0) == Sharding()
    for bad in ([True], "yes", 2, None, 0.5):
        with pytest.raises(ShardingError, match="sequence_parallel must be True or False"):
            Sharding(sequence_parallel=bad)
    with pytest.raises(RooflineError, match="sequence_parallel"):
        lr.sweep("meta-llama/Llama-3.2-1B", "h100", batch=4, prompt_len=256, gen_len=1, efficiency="ideal",
                 sequence_parallel=[0, [True]])


def test_kv_heads_fewer_than_tp_are_replicated_in_memory_and_bytes():
    # Llama-3.1-70B has 8 KV heads; at tp=16 every KV head lives on 2 chips:
    # per chip 1 head: 80 layers * 1 * 256 elems * 2 bytes = 40,960 B/token (vs 327,680 / 16 = 20,480 unreplicated)
    e16 = lr.estimate("meta-llama/Llama-3.1-70B", "h100", batch=1, prompt_len=1000, gen_len=24, tp=16, efficiency="ideal")
    e8 = lr.estimate("meta-llama/Llama-3.1-70B", "h100", batch=1, prompt_len=1000, gen_len=24, tp=8, efficiency="ideal")
    assert e16.memory.per_chip_kv_cache_bytes == pytest.approx(40960 * 1024)
    assert e8.memory.per_chip_kv_cache_bytes == pytest.approx(40960 * 1024)
    assert e16.memory.kv_cache_bytes == pytest.approx(2 * e8.memory.kv_cache_bytes)
    assert e16.decode.kv_read_bytes == pytest.approx(2 * e8.decode.kv_read_bytes)


def test_pipeline_and_data_parallel_semantics():
    base = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=8, prompt_len=1024, gen_len=64, efficiency="ideal")
    pp = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=8, prompt_len=1024, gen_len=64, pp=2, efficiency="ideal")
    dp = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=8, prompt_len=1024, gen_len=64, dp=4, efficiency="ideal")
    # data parallel: latency unchanged, throughput x4, per-chip throughput unchanged
    assert dp.ttft_s == base.ttft_s and dp.tpot_s == base.tpot_s
    assert dp.throughput_tokens_per_s == pytest.approx(4 * base.throughput_tokens_per_s)
    assert dp.scenario["chips"] == 4
    # pipeline: half the layers' weights per chip; p2p transfers appear; work is unchanged
    assert pp.memory.per_chip_weight_bytes < 0.6 * base.memory.per_chip_weight_bytes
    assert "comm.p2p.stage" in set(pp.ops.name)
    assert pp.prefill.flops == pytest.approx(base.prefill.flops, rel=1e-12)
    with pytest.raises(ValueError, match="multiple of pp"):
        lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=3, pp=2, efficiency="ideal")


def test_a_batch_below_pp_runs_one_micro_batch_per_sequence():
    """A batch below pp (single-stream latency on a pipeline) runs one micro-batch per sequence, as vLLM schedules
    each request into one virtual engine. By hand, Llama-3.1-8B (32 layers) over pp = 4 stages of 8: two prompts are
    two micro-batches of one; the first crosses the 4 stages (one pass), the second follows one stage later, so
    TTFT is (4 + 2 - 1) / 4 = 5 / 4 of one prompt's. A decode token of either crosses all 4 stages before its
    next, so TPOT is one pass, the same as for one sequence. The work is the batch's: the FLOPs of batch 2 at pp 1,
    and twice one micro-batch's weight reads. The sweep's fast path gives the same numbers."""
    from llm_roofline.headlines import evaluate_headline

    kw = dict(prompt_len=1024, gen_len=8, efficiency="ideal")
    one, two = (lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=b, pp=4, **kw) for b in (1, 2))
    flat = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=2, pp=1, **kw)
    assert two.ttft_s == pytest.approx(5 / 4 * one.ttft_s, rel=1e-12)
    assert two.tpot_s == pytest.approx(one.tpot_s, rel=1e-12)
    assert two.prefill.flops == pytest.approx(flat.prefill.flops, rel=1e-12)
    assert two.decode.weight_bytes == pytest.approx(2 * one.decode.weight_bytes, rel=1e-12)
    solo = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=1, pp=1, **kw)
    assert solo.ttft_s < one.ttft_s < 1.01 * solo.ttft_s  # one prompt's pass plus its 3 hand-offs
    assert any("below pp = 4" in a for a in one.assumptions)
    h = evaluate_headline("meta-llama/Llama-3.1-8B", "h100", batch=np.array([1.0, 2.0, 4.0, 8.0]), pp=4, **kw)
    for j, b in enumerate((1, 2, 4, 8)):
        r = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=b, pp=4, **kw)
        assert h.ttft_s[j] == pytest.approx(r.ttft_s, rel=1e-12) and h.tpot_s[j] == pytest.approx(r.tpot_s, rel=1e-12)
    with pytest.raises(ValueError, match="multiple of pp x attention_dp = 4"):  # 5 = 4 + 1: not whole micro-batches
        lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=5, pp=4, **kw)


def test_a_sweep_leaves_out_what_the_estimate_refuses_and_says_so(capsys):
    """sweep(pp=[1, 2], batch=[1, 2, 3]): pp 1 runs all three; pp 2 runs batch 1 (below pp) and 2 (one micro-batch
    each), not 3 (a micro-batch and a half): 5 rows, the sixth named in attrs['skipped'] and under the CLI table.
    A grid where no point splits raises the estimate's own error. So does a sharding the estimate refuses."""
    df = lr.sweep("meta-llama/Llama-3.1-8B", "h100", batch=[1, 2, 3], pp=[1, 2], prompt_len=512, gen_len=8,
                  efficiency="ideal")
    assert sorted(zip(df.pp, df.batch)) == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2)]
    assert df.attrs["skipped"] == ["pp 2: batch 3"]
    one = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=1, pp=2, prompt_len=512, gen_len=8, efficiency="ideal")
    assert df[(df.pp == 2) & (df.batch == 1)].ttft_s.iloc[0] == pytest.approx(one.ttft_s, rel=1e-12)
    with pytest.raises(lr.ScenarioError, match="multiple of pp x attention_dp = 2"):
        lr.sweep("meta-llama/Llama-3.1-8B", "h100", batch=[3, 5], pp=2, efficiency="ideal")
    from llm_roofline.cli import main

    assert main(["sweep", "meta-llama/Llama-3.1-8B", "--chip", "h100", "--pp", "1,2", "--batch", "1,2,3",
                 "--prompt", "512", "--gen", "8", "--efficiency", "ideal"]) == 0
    assert "left out: pp 2: batch 3." in capsys.readouterr().out
    # a combination the estimate refuses (tp 3 of 32 heads) is left out with its reason, the others kept
    df = lr.sweep("meta-llama/Llama-3.1-8B", "h100", tp=[1, 3], prompt_len=512, gen_len=8, efficiency="ideal")
    assert list(df.tp) == [1] and df.attrs["skipped"] == ["tp 3: attention heads = 32 is not divisible by 3"]
    with pytest.raises(lr.ShardingError, match="not divisible by 3"):  # nothing left: the first error
        lr.sweep("meta-llama/Llama-3.1-8B", "h100", tp=[3, 5], efficiency="ideal")
    # a sharding that refuses every batch is named once, by its batches; a malformed value is raised, not left out
    df = lr.sweep("meta-llama/Llama-3.1-8B", "h100", batch=[3], pp=[1, 2], prompt_len=512, gen_len=8,
                  efficiency="ideal")
    assert list(df.pp) == [1] and df.attrs["skipped"] == ["pp 2: batch 3"]
    with pytest.raises(lr.ScenarioError, match="efficiency must be 'ideal' or 'calibrated'"):
        lr.sweep("meta-llama/Llama-3.1-8B", "h100", efficiency=["ideal", "bogus"])
    # degrees are read as estimate() reads them (numpy integers, whole floats), before anything is left out
    df = lr.sweep("meta-llama/Llama-3.1-8B", "h100", tp=[np.int64(2)], pp=[2.0], batch=2, efficiency="ideal")
    assert list(df.tp) == [2] and list(df.pp) == [2]


def test_sequence_parallel_uses_reduce_scatter_and_all_gather():
    e = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=4, prompt_len=1024, gen_len=8, tp=4,
                    sequence_parallel=True, efficiency="ideal")
    names = set(e.ops.name)
    assert {"comm.reduce_scatter.attn", "comm.all_gather.attn", "comm.reduce_scatter.ffn"} <= names
    assert "comm.all_reduce.attn" not in names


def test_moe_expert_parallel_all_to_all_with_sequence_parallel():
    e = lr.estimate("mistralai/Mixtral-8x7B-v0.1", "h100", batch=4, prompt_len=512, gen_len=8, tp=8, ep=8,
                    sequence_parallel=True, efficiency="ideal")
    assert {"comm.all_to_all.dispatch", "comm.all_to_all.combine"} <= set(e.ops.name)
    # experts split whole over 8 chips: resident expert weights per chip = 1/8 of 8 experts
    one = lr.estimate("mistralai/Mixtral-8x7B-v0.1", "h100", batch=4, prompt_len=512, gen_len=8, efficiency="ideal")
    assert e.memory.per_chip_weight_bytes == pytest.approx(one.memory.per_chip_weight_bytes / 8, rel=0.01)


def test_cli_sharding_flags_show_comm_rows(capsys):
    from llm_roofline.cli import main

    assert main(["estimate", "meta-llama/Llama-3.1-70B", "--chip", "h100", "--tp", "4", "--gen", "16", "--ops"]) == 0
    out = capsys.readouterr().out
    assert "comm.all_reduce.attn" in out and "comm %" in out
    assert main(["estimate", "meta-llama/Llama-3.1-70B", "--chip", "h100", "--tp", "3"]) == 2
    err = capsys.readouterr().err
    assert "not divisible" in err and "Traceback" not in err


def test_layers_that_do_not_divide_are_split_as_vllm_splits_them_and_the_fullest_stage_sets_the_pace():
    # vLLM (distributed.utils.get_pp_indices) gives the remainder one layer each to the stages before the last:
    # DeepSeek-V3's 61 layers over 2 stages 31 + 30. Before, any pp that did not divide the layers was refused.
    assert (stage_layers(61, 2), stage_layers(80, 3), stage_layers(80, 4)) == (31, 27, 20)
    assert "61 layers 31 + 30" in stage_note(61, 2) and "80 layers 27 + 27 + 26" in stage_note(80, 3)
    assert stage_note(80, 4) == ""
    # prefill: the first micro-batch crosses all 61 layers, the second follows one 31-layer stage later: 61 + 31 = 92
    # layer passes of one micro-batch's 61; a decode step runs both micro-batches through the 31-layer stage: 62 / 61
    assert prefill_time_factor(Sharding(pp=2), 61) == pytest.approx(92 / 61, rel=1e-15)
    assert step_time_factor(Sharding(pp=2), 61) == pytest.approx(62 / 61, rel=1e-15)
    # the disaggregated planner's steady prefill: pp micro-batches a step's 62/61 passes, of TTFT's 92/61: 62/92
    from llm_roofline.plan.disaggregate import _steady_prefill_s

    assert _steady_prefill_s(1.0, 2, 61) == pytest.approx(62 / 92, rel=1e-15)
    assert _steady_prefill_s(1.0, 2, 80) == pytest.approx(2 / 3, rel=1e-15)
    # layers that divide: the factors as before, exactly ((2pp - 1) / pp and 1)
    assert prefill_time_factor(Sharding(pp=4), 80) == 7 / 4 and step_time_factor(Sharding(pp=4), 80) == 1.0
    # Llama-3.1-8B (32 layers) at pp 3: 11 + 11 + 10. Weights of the fullest chip: 11 layers of 218,112,000 bf16
    # parameters (q, o 4096^2; k, v 4096 x 1024; gate, up, down 4096 x 14336; two norms of 4096) = 11 x 436,224,000
    # bytes, plus the larger of embedding and LM head (128,256 x 4096 x 2 = 1,050,673,152 bytes each)
    e3 = lr.estimate("meta-llama/Llama-3.1-8B", "h100", pp=3, batch=3, gen_len=64, efficiency="ideal")
    assert e3.memory.per_chip_weight_bytes == pytest.approx(11 * 436_224_000 + 1_050_673_152, rel=1e-12)
    assert any("32 layers 11 + 11 + 10" in a for a in e3.assumptions)
    # times: a stage is the pp = 1 graph at the micro-batch (1 sequence) plus the 2 hand-offs; TTFT: the first
    # micro-batch crosses 32 layers and each of the other two follows one 11-layer stage later, 32 + 2 x 11 = 54 layer
    # passes of 32; a decode step: 3 micro-batches through the 11-layer stage, 33 of 32
    e1 = lr.estimate("meta-llama/Llama-3.1-8B", "h100", batch=1, gen_len=64, efficiency="ideal")
    hand = e3.ops[e3.ops.name == "comm.p2p.stage"].set_index("phase")
    hand_s = hand["t_s"] * hand["count"]
    assert e3.ttft_s == pytest.approx(54 / 32 * (e1.ttft_s + hand_s["prefill"]), rel=1e-9)
    assert e3.tpot_s == pytest.approx(33 / 32 * (e1.tpot_s + hand_s["decode"]), rel=1e-9)
