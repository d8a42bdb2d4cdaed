"""Operator graph: byte accounting and the seeds' attention rules, with hand arithmetic in comments."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from llm_roofline import load_chip
from llm_roofline.roofline import score_ops
from llm_roofline.graph import Dtypes, Phase, build_ops
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec
from llm_roofline.ops import causal_pairs, expected_distinct_experts, gemm
from llm_roofline.sharding import Sharding


def tiny(h=4, kv=2, hd=8, d=32, f=64, layers=2, vocab=100, window=None, gated=True, tie=False):
    attn = AttentionSpec("gqa" if kv < h else "mha", h, kv, hd, hd, sliding_window=window)
    ffn = FfnSpec("dense", f, gated, "silu")
    return ModelSpec("tiny", d, vocab, (LayerGroup("dense", layers, attn, ffn),), tie_embeddings=tie)


def by_name(ops):
    return {op.name: op for op in ops}


def test_decode_byte_accounting():
    spec = tiny()
    ops = by_name(build_ops(spec, Phase.decode(batch=3, kv_len=10)))
    # KV cache read once per step: B * L * KV * (hd + hd) * 2 bytes = 3 * 10 * 2 * 16 * 2 = 1,920
    assert float(ops["attn.core"].kv_bytes) == 1920
    # embedding is a gather: no FLOPs, reads T rows of d: 3 * 32 * 2 = 192 bytes
    assert float(ops["embed"].flops) == 0 and ops["embed"].kind == "embedding"
    assert float(ops["embed"].weight_bytes) == 192
    # SwiGLU: up_gate is (d, 2F) and down (F, d): weights 32*128*2 + 64*32*2 = 3 x (32*64*2) bytes
    assert float(ops["ffn.up_gate"].weight_bytes + ops["ffn.down"].weight_bytes) == 3 * 32 * 64 * 2
    # LM head in decode: 2 * b * d * V = 2 * 3 * 32 * 100 = 19,200 FLOPs
    assert float(ops["lm_head"].flops) == 19200
    # FlashAttention writes only its output (b, H, s, hd) and reads Q: 2 * 3*1*4*8*2 bytes = 384
    assert float(ops["attn.core"].act_bytes) == 384


def test_prefill_lm_head_last_position_only_and_swiglu_flops():
    spec = tiny()
    ops = by_name(build_ops(spec, Phase.prefill(batch=2, prompt_len=16)))
    # LM head on the last position of each of the 2 sequences: 2 * 2 * 32 * 100 = 12,800
    assert float(ops["lm_head"].flops) == 12800
    # three (d, F) matrices over T = 32 tokens: 3 * 2 * 32 * 32 * 64 = 393,216 FLOPs
    assert float(ops["ffn.up_gate"].flops + ops["ffn.down"].flops) == 393216
    # causal attention: pairs = 16*17/2 = 136 per head; 2 * b * H * pairs * (hd + hd) = 2*2*4*136*16 = 34,816
    assert float(ops["attn.core"].flops) == 34816


def test_causal_pairs_closed_form_against_brute_force():
    for q, kv, w in [(5, 5, None), (3, 10, None), (7, 12, 4), (1, 100, 30), (16, 16, 5)]:
        prefix = kv - q
        brute = sum(min(prefix + i + 1, w or 10**9) for i in range(q))
        assert float(causal_pairs(q, kv, w)) == brute


def test_sliding_window_caps_decode_attention():
    spec = tiny(window=8)
    ops = by_name(build_ops(spec, Phase.decode(batch=1, kv_len=np.array([4.0, 8.0, 100.0]))))
    # KV read = min(L, 8) tokens * 2 heads * 16 elems * 2 bytes: 4*64, 8*64, 8*64
    np.testing.assert_array_equal(ops["attn.core"].kv_bytes, [256, 512, 512])


def test_unfused_adds_score_round_trips():
    spec = tiny()
    fused = by_name(build_ops(spec, Phase.prefill(1, 16)))["attn.core"]
    unfused = by_name(build_ops(spec, Phase.prefill(1, 16), attention="unfused"))["attn.core"]
    # 4 round trips of the (H, q, kv) bf16 score matrix: 4 * 4 * 16 * 16 * 2 = 8,192 extra bytes
    assert float(unfused.act_bytes - fused.act_bytes) == 8192


def test_decode_attention_intensity_tends_to_G():
    chip = load_chip("h100")
    for h, kv, g in [(32, 8, 4.0), (32, 32, 1.0), (32, 1, 32.0)]:
        spec = tiny(h=h, kv=kv, hd=128, d=4096)
        op = by_name(build_ops(spec, Phase.decode(batch=1, kv_len=1e7)))["attn.core"]
        # FLOPs 2*H*L*(2hd) over KV bytes 2*KV*L*(2hd) -> H / KV
        assert float(op.flops / op.hbm_bytes) == pytest.approx(g, rel=1e-3)
        assert score_ops([op], chip)[0].t_memory_s > score_ops([op], chip)[0].t_compute_s


def test_prefill_attention_intensity_is_T_over_2_for_mha():
    # seeds: one MHA head, S = T: 4*S*T*D FLOPs over 4*S*D + 4*T*D bytes = ST/(S+T) = T/2
    spec = tiny(h=1, kv=1, hd=128, d=128)
    for t in (512, 4096):
        phase = Phase("prefill", np.float64(1), np.float64(t), np.float64(t), causal=False)
        op = by_name(build_ops(spec, phase))["attn.core"]
        assert float(op.flops / op.hbm_bytes) == pytest.approx(t / 2)


def test_attention_vs_matmul_flops_is_T_over_8D():
    # the book's setup: MHA, gated MLP with F = 4D, no causal discount: 4T^2D / (8TD^2 + 24TD^2) = T/(8D)
    d = 8192
    spec = tiny(h=64, kv=64, hd=128, d=d, f=4 * d, layers=1)
    for t in (8192, 65536):
        ops = build_ops(spec, Phase("prefill", np.float64(1), np.float64(t), np.float64(t), causal=False))
        attn = sum(float(o.flops) for o in ops if o.kind == "attention")
        mm = sum(float(o.flops) for o in ops if o.kind == "gemm" and o.group != "model")
        assert attn / mm == pytest.approx(t / (8 * d))
    assert 65536 / (8 * d) == 1.0  # attention dominates past T = 8D = 65,536


def test_decode_small_batch_memory_bound_large_batch_matmuls_compute_bound():
    chip = load_chip("h100")
    spec = tiny(h=32, kv=8, hd=128, d=4096, f=14336, layers=1, vocab=32000)
    small = score_ops(build_ops(spec, Phase.decode(batch=1, kv_len=512)), chip)
    assert all(s.t_memory_s >= s.t_compute_s for s in small)
    # H100 critical batch ~295 tokens: batch 4096 >> 295 makes the big matmuls compute-bound
    big = {s.op.name: s for s in score_ops(build_ops(spec, Phase.decode(batch=4096, kv_len=512)), chip)}
    for name in ("ffn.up_gate", "ffn.down", "attn.qkv_proj", "attn.o_proj"):
        assert big[name].t_compute_s > big[name].t_memory_s


def test_moe_expected_distinct_experts():
    # one token touches k experts; E*(1-(1-k/E)^T): E=8, k=2, T=2 -> 8*(1-0.5625) = 3.5; many tokens -> all 8
    np.testing.assert_allclose(expected_distinct_experts(8, 2, np.array([1.0, 2.0, 1e4])), [2.0, 3.5, 8.0])


def test_moe_expert_bytes_use_distinct_experts_and_flops_top_k():
    attn = AttentionSpec("gqa", 4, 2, 8, 8)
    ffn = FfnSpec("moe", 0, True, "silu", n_experts=8, top_k=2, d_expert=16)
    spec = ModelSpec("moe", 32, 100, (LayerGroup("moe", 1, attn, ffn),))
    ops = by_name(build_ops(spec, Phase.decode(batch=2, kv_len=4)))
    up = ops["ffn.experts.up_gate"]
    # FLOPs: T * k * 2 * d * 2F = 2 * 2 * 2 * 32 * 32 = 8,192
    assert float(up.flops) == 8192
    # bytes: 3.5 distinct experts * (32 * 32) * 2 bytes = 7,168
    assert float(up.weight_bytes) == pytest.approx(7168)
    # resident: all 8 experts
    assert up.stored_bytes == 8 * 32 * 32 * 2
    # the fused block's shape (expert_kernels.m_block_padding, the width factor, the expert-parallel floor): each
    # expert's intermediate 16 on one chip, 8 experts held, no expert parallelism; tp 2 x attention_dp 4 = 8 FFN chips
    # as moe_tp 2 x moe_ep 4: 16 / 2 = 8 wide, 8 / 4 = 2 held, experts split over 4 chips
    assert (up.expert_width, up.local_experts, up.expert_chips) == (16, 8, 1)
    sh = Sharding(tp=2, attention_dp=4, moe_tp=2, moe_ep=4)
    split_ops = by_name(build_ops(spec, Phase.decode(batch=2, kv_len=4), sh))
    for name in ("ffn.experts.up_gate", "ffn.experts.down"):
        assert (split_ops[name].expert_width, split_ops[name].local_experts, split_ops[name].expert_chips) == (8, 2, 4)
    assert (ops["attn.qkv_proj"].expert_width, ops["attn.qkv_proj"].local_experts) == (0, 0)


def test_int8_weights_bf16_compute_are_independent():
    spec = tiny()
    ops = by_name(build_ops(spec, Phase.decode(1, 4), dtypes=Dtypes(weight="int8", kv="fp8")))
    # int8: 1 byte per weight + one fp32 scale per output column: 32*64*2 + 128*4 bytes
    assert float(ops["ffn.up_gate"].weight_bytes) == 32 * 128 + 128 * 4
    assert ops["ffn.up_gate"].compute_dtype == "bf16"
    # fp8 KV: 4 tokens * 2 heads * 16 * 1 byte = 128
    assert float(ops["attn.core"].kv_bytes) == 128


def test_tp_splits_heads_and_replicates_few_kv_heads():
    spec = tiny(h=8, kv=2, hd=8, d=64, f=64)
    one = by_name(build_ops(spec, Phase.decode(1, 10)))
    four = by_name(build_ops(spec, Phase.decode(1, 10), Sharding(tp=4)))
    # 2 KV heads over 4 chips: each chip keeps 1 (replicated twice): KV read 10 * 1 * 16 * 2 = 320 per chip
    assert float(four["attn.core"].kv_bytes) == 320
    assert float(one["attn.core"].kv_bytes) == 640
    # o_proj (row-parallel) weights: 1/4 per chip
    assert float(four["attn.o_proj"].weight_bytes) == float(one["attn.o_proj"].weight_bytes) / 4


# ------------------------------------------------------------------------------ mixed (chunked-prefill) steps
def test_mixed_step_is_a_decode_step_plus_a_prefill_chunk():
    # A continuous-batching step: 6 sequences decode at context 300 while one request prefills a 64-token chunk
    # after 128 cached tokens. FLOPs are additive (the same matmuls over 6 + 64 rows; the LM head runs on the
    # 6 decode rows plus the chunk's last position, as the prefill's last-only head does), while weights are
    # read once: the mixed step moves the decode step's weight bytes, not the sum (plus the 64 gathered
    # embedding rows of the chunk: 64 x 4096 x 2 B = 524,288 B).
    from llm_roofline.estimate import evaluate_step
    from llm_roofline.model.hf import load_model

    spec = load_model("meta-llama/Llama-3.1-8B")
    mixed = evaluate_step(spec, "h100", decode_batch=6, decode_kv_len=300, chunk_tokens=64, chunk_kv_len=192, efficiency="ideal")
    decode = evaluate_step(spec, "h100", decode_batch=6, decode_kv_len=300, chunk_tokens=0, chunk_kv_len=0, efficiency="ideal")
    pre_ops = build_ops(spec, Phase.prefill(1, 64, cached_len=128))
    dec_ops = build_ops(spec, Phase.decode(6, 300))
    flops = lambda ops: sum(float(o.flops) * o.count * o.shards for o in ops)  # noqa: E731
    assert float(mixed.flops) == pytest.approx(flops(pre_ops) + flops(dec_ops), rel=1e-12)
    assert float(decode.flops) == pytest.approx(flops(dec_ops), rel=1e-12)
    assert float(mixed.weight_bytes) == pytest.approx(float(decode.weight_bytes) + 524_288, rel=1e-12)
    assert float(mixed.times.t_s) > float(decode.times.t_s)


def test_with_attention_dp_a_mixed_steps_chunk_rides_in_one_group_for_its_time_and_is_spread_for_its_work():
    # tiny(): d 32, 4 heads of 8 (q 32, k 16, v 16: qkv n = 64), MLP F 64; tp 1 x attention_dp 2. A step of 4 decode
    # rows (2 per group) and one request's 100-token chunk. The chunk lives in one group: its qkv projection runs
    # over 2 + 100 = 102 rows (in_group: the step's time), not (4 + 100) / 2 = 52 (spread: each op's chip x its 2
    # shards is the step's work); the dense MLP spans both groups' chips either way: all 104 rows (all-gathered).
    # The chunk's attention core: one sequence of 100 queries in the busiest group, half of one spread.
    from llm_roofline.estimate import evaluate_step

    spec, sh = tiny(), Sharding(tp=1, attention_dp=2)
    busy = by_name(build_ops(spec, Phase.mixed(4, 300, 100, 100, in_group=True), sh))
    spread = by_name(build_ops(spec, Phase.mixed(4, 300, 100, 100), sh))
    assert float(busy["attn.qkv_proj"].tokens) == 102 and float(spread["attn.qkv_proj"].tokens) == 52
    assert float(busy["ffn.up_gate"].tokens) == float(spread["ffn.up_gate"].tokens) == 104
    # the chunk's core FLOPs: 100 x 101 / 2 causal pairs x 4 heads x 2 (QK and PV) x 2 x 8 = 646,400 per sequence
    assert float(busy["attn.core.chunk"].flops) == pytest.approx(646_400)
    assert float(spread["attn.core.chunk"].flops) == pytest.approx(646_400 / 2)
    one = dict(decode_batch=4, decode_kv_len=300, chunk_tokens=100, chunk_kv_len=100, efficiency="ideal")
    step = evaluate_step(spec, "h100", attention_dp=2, **one)
    flat = evaluate_step(spec, "h100", attention_dp=1, **one)
    assert float(step.flops) == pytest.approx(float(flat.flops), rel=1e-12)  # the work does not move
    from llm_roofline.estimate import step_time_s
    from llm_roofline.model.hf import load_model
    from llm_roofline.phases import phase_t_s

    assert float(step.times.t_s) == pytest.approx(float(step_time_s(spec, "h100", attention_dp=2, **one)), rel=1e-12)
    # Llama-3.1-8B at tp 1 x attention_dp 2, 4 decode rows beside a 2048-token chunk, ideal H100: per token the
    # attention side's matrices are 2 x (4096 x 6144 + 4096 x 4096) = 83.9 MFLOP, the MLP's 2 x 3 x 4096 x 14336 =
    # 352.3 MFLOP. Busiest group: 2 + 2048 rows x 83.9M + (2052 / 2 chips) x 352.3M = 533 GFLOP a layer on its chip;
    # spread: 1026 x 83.9M + 1026 x 352.3M = 448 GFLOP (plus each one's attention core): 1.19x the time at least.
    llama = load_model("meta-llama/Llama-3.1-8B")
    big = dict(decode_batch=4, decode_kv_len=300, chunk_tokens=2048, chunk_kv_len=2048, efficiency="ideal")
    spread_ops = build_ops(llama, Phase.mixed(4, 300, 2048, 2048), Sharding(tp=1, attention_dp=2))
    spread_s = float(phase_t_s(spread_ops, load_chip("h100"), None, 1.0))
    busiest_s = float(step_time_s(llama, "h100", attention_dp=2, **big))
    assert 1.19 <= busiest_s / spread_s <= 1.5, busiest_s / spread_s


def test_an_mla_mixed_step_materializes_its_chunk_as_a_prefill_does():
    # DeepSeek-V3 (MLA): decodes run absorbed (scores against the 576-wide latent), prompt tokens run vLLM's prefill
    # path: K, V materialized from the cached latents by kv_b_proj over the chunk's context, scores per head over 192
    # dims. Its FLOPs are then the prefill chunk's plus the decode step's, as for Llama above. Before, the chunk ran
    # absorbed too: a 120,000-token prompt served in chunks cost 1.76x its one-shot prefill on 8 H200 (1.14x now)
    from llm_roofline.estimate import evaluate_step
    from llm_roofline.model.hf import load_model

    spec = load_model("deepseek-ai/DeepSeek-V3")
    mixed = evaluate_step(spec, "h200", decode_batch=6, decode_kv_len=300, chunk_tokens=64, chunk_kv_len=192,
                          efficiency="ideal")
    pre_ops = build_ops(spec, Phase.prefill(1, 64, cached_len=128))
    dec_ops = build_ops(spec, Phase.decode(6, 300))
    flops = lambda ops: sum(float(o.flops) * o.count * o.shards for o in ops)  # noqa: E731
    assert float(mixed.flops) == pytest.approx(flops(pre_ops) + flops(dec_ops), rel=1e-12)
    ops = {o.name: o for o in build_ops(spec, Phase.mixed(6, 300, 64, 192)) if o.group == "moe"}
    # kv_b: (r 512) -> 128 heads x (nope 128 + v 128) = 32,768, over the 192 positions of the chunk's context
    assert float(ops["attn.kv_b_proj.chunk"].flops) == 2 * 192 * 512 * 32_768
    assert ops["attn.core.chunk"].q_per_kv == 1.0 and ops["attn.core"].q_per_kv == 128.0


def test_an_ops_formula_is_written_when_read_and_pickles_as_text():
    # build_ops leaves each formula to a function (issue 17: most estimates never show one); op.formula writes it,
    # and a pickled or copied op carries the text
    import copy
    import pickle

    op = gemm("ffn.up", "dense", 1, tokens=np.float64(3), k=4096, n=1024, bits_per_weight=4, act_bytes_per_elem=2)
    assert callable(op.text) and op.formula == "2*T*k*n*1 with T=3, k=4096, n=1024"
    for other in (pickle.loads(pickle.dumps(op)), copy.deepcopy(op)):
        assert other.text == op.formula and other == op


def test_op_init_takes_the_dataclass_fields_in_order_with_their_defaults():
    """Op's hand-written __init__ (set at once, for speed) must stay the dataclass's: every field, in order, with its
    default; replace() and repr keep working through it."""
    import dataclasses
    import inspect

    from llm_roofline.ops import Op

    params = list(inspect.signature(Op.__init__).parameters.values())[1:]
    fields = dataclasses.fields(Op)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields):
        want = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert p.default is want or p.default == want, f.name
    op = Op("x", "g", "gemm", 2.0, 1.0, shards=4)
    assert dataclasses.replace(op, shards=8).shards == 8 and op.weight_bytes == 0.0 and op.style == "replicated"


def test_routed_experts_have_no_separate_activation_op():
    # the fused-MoE block measured by the moe fits (aic-vllm moe_perf: both grouped GEMMs, the act(up) * gate pass
    # and the top-k sum) is priced on the expert GEMMs (their walked rows): a separate ffn.experts.act op would count
    # the activation pass twice; a dense MLP (and a shared expert) keeps its own activation op
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.model.hf import load_model

    names = {op.name for op in build_ops(load_model("mistralai/Mixtral-8x7B-v0.1"), Phase.prefill(1, 128))}
    assert {"ffn.experts.up_gate", "ffn.experts.down"} <= names and not any("experts.act" in n for n in names)
    dense = {op.name for op in build_ops(load_model("meta-llama/Llama-3.1-8B"), Phase.prefill(1, 128))}
    assert "ffn.act" in dense


def _same_ops(a, b):
    import dataclasses

    assert [op.name for op in a] == [op.name for op in b]
    for x, y in zip(a, b):
        assert x.formula == y.formula
        for f in (f for f in dataclasses.fields(x) if f.compare):
            u, v = getattr(x, f.name), getattr(y, f.name)
            assert np.array_equal(u, v) if isinstance(u, np.ndarray) or isinstance(v, np.ndarray) else u == v, \
                (x.name, f.name)


def test_a_pipeline_stage_is_the_pp_1_graph_at_the_micro_batch_plus_the_hand_off():
    # headlines.evaluate_pipelines scores one stage for every pp: build_ops at pp and batch B must be build_ops at
    # pp = 1 and batch B / pp, op for op and field for field, plus the hand-off (graph.handoff_ops)
    from llm_roofline import load_model
    from llm_roofline.graph import handoff_ops

    l70 = load_model("meta-llama/Llama-3.1-70B")
    for spec, sh in ((l70, Sharding(tp=2, pp=4)), (load_model("Qwen/Qwen3-30B-A3B"), Sharding(tp=2, pp=2, ep=2)),
                     (load_model("google/gemma-2-9b"), Sharding(tp=1, pp=2))):
        stage = Sharding(tp=sh.tp, pp=1, ep=sh.ep)
        batch = np.array([4.0, 8.0, 24.0])
        for phase, micro in ((Phase.prefill(batch, 1024.0), Phase.prefill(batch / sh.pp, 1024.0)),
                             (Phase.decode(batch, np.array([[1100.0], [1300.0]])),
                              Phase.decode(batch / sh.pp, np.array([[1100.0], [1300.0]])))):
            full, hand = build_ops(spec, phase, sh), handoff_ops(spec, phase, sh)
            _same_ops(full, build_ops(spec, micro, stage) + hand)
            assert [op.name for op in hand] == ["comm.p2p.stage"] and hand[0].count == sh.pp - 1
    # the hand-off of Llama-3.1-70B at tp 2, pp 4, batch 8, prompt 1024: micro-batch 8 / 4 = 2 sequences, (T, d) =
    # (2 * 1024, 8192) bf16 activations = 2048 * 8192 * 2 = 33,554,432 bytes per hop, pp - 1 = 3 hops, over the
    # replica's tp * pp = 8 chips; at pp = 1 there is none
    (p2p,) = handoff_ops(l70, Phase.prefill(8.0, 1024.0), Sharding(tp=2, pp=4))
    assert float(p2p.comm_bytes) == 33_554_432 and p2p.count == 3 and p2p.group_chips == 8
    assert handoff_ops(l70, Phase.prefill(8.0, 1024.0), Sharding(tp=2)) == []
    # 80 layers over 3 stages: 27 + 27 + 26, as vLLM splits them (2 hops); over 81 stages one would hold none
    assert handoff_ops(l70, Phase.prefill(9.0, 1024.0), Sharding(tp=2, pp=3))[0].count == 2
    with pytest.raises(ValueError, match="pp = 81 exceeds the number of layers"):
        handoff_ops(l70, Phase.prefill(81.0, 1024.0), Sharding(tp=2, pp=81))


def test_an_ops_value_key_holds_every_field_a_score_reads_and_not_count_or_text():
    # phases.phase_t_s_chips keeps op times under Op.value_key: ops equal but for count, formula and layer group
    # (no score reads it) share it; a difference in any other field, or in an array's shape alone, gives another key
    import dataclasses

    from llm_roofline.ops import Op

    op = gemm("ffn.up", "dense", 1, tokens=np.array([3.0, 5.0]), k=4096, n=1024, bits_per_weight=4,
              act_bytes_per_elem=2)
    assert dataclasses.replace(op, count=61, text="other", group="moe").value_key() == op.value_key()
    for f in dataclasses.fields(Op):
        if f.name in ("count", "text", "group"):
            continue
        v = getattr(op, f.name)
        other = v + "x" if isinstance(v, str) else v + 1  # numbers and arrays: + 1
        assert dataclasses.replace(op, **{f.name: other}).value_key() != op.value_key(), f.name
    assert dataclasses.replace(op, tokens=op.tokens.reshape(2, 1)).value_key() != op.value_key()


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "configs"


@pytest.mark.parametrize("model", ["deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-30B-A3B", "openai/gpt-oss-20b",
                                   "meta-llama/Llama-3.1-8B", "jamba_v0_1", "qwen3_next_80b_a3b", "llama4_scout",
                                   "deepseek_v4_flash_reap160", "zamba2_2_7b", "command_r_v01"])
def test_graph_parts_kept_over_several_shardings_are_the_ops_built_afresh(model):
    # build_ops(parts=...) keeps each part of a graph (head, tail, a layer group or half of one) for the shardings
    # that read the same of it (graph.Ctx.kept: all but the routed experts' parts for shardings apart in ep alone).
    # Over shardings apart in tp, ep, moe_ep, attention_dp, sequence parallelism and routing skew, in any order, the
    # kept graph must be the graph built afresh, op for op and field for field (dense, MoE with dense layers,
    # sliding + MoE, hybrid Mamba / DeltaNet + MoE, DeepSeek-V4's hyper-connections, Zamba2's shared block,
    # Command-R's parallel block)
    from llm_roofline import load_model

    spec = load_model(FIXTURES / f"{model}.json" if "/" not in model else model)
    shardings = [Sharding(tp=2, ep=2), Sharding(tp=2), Sharding(tp=4, ep=4), Sharding(tp=4, ep=2, routing_skew=1.5),
                 Sharding(tp=4), Sharding(tp=2, attention_dp=2, moe_ep=4), Sharding(tp=2, attention_dp=2),
                 Sharding(tp=4, ep=4, sequence_parallel=True), Sharding(tp=4, sequence_parallel=True), Sharding()]
    batch = np.array([1.0, 8.0])
    for phase in (Phase.prefill(batch, 512.0), Phase.decode(batch, np.array([[600.0], [900.0]]))):
        parts, built = {}, 0
        for sh in shardings:
            try:
                fresh = build_ops(spec, phase, sh)
            except ValueError:  # a degree the model does not divide
                continue
            _same_ops(build_ops(spec, phase, sh, parts=parts), fresh)
            built += 1
        assert built >= 4, model


def test_what_a_graph_keeps_is_shared_by_the_shardings_that_read_the_same():
    # what is kept is shared: DeepSeek-V3's attention ops at ep 1 and ep 8 (tp 8) are the same objects, its experts not
    from llm_roofline import load_model

    ds, parts, phase = load_model("deepseek-ai/DeepSeek-V3"), {}, Phase.prefill(np.array([1.0, 8.0]), 512.0)
    one, eight = (by_name(build_ops(ds, phase, Sharding(tp=8, ep=e), parts=parts)) for e in (1, 8))
    assert one["attn.core"] is eight["attn.core"] and one["ffn.experts.down"] is not eight["ffn.experts.down"]
    assert Sharding(tp=8, ep=8, routing_skew=2.0).without_experts == Sharding(tp=8)


def test_a_parallel_blocks_mlp_under_attention_dp_gathers_the_other_groups_tokens():
    # tiny() as a parallel block (GPT-J / Falcon: attention and MLP read the same normed input), tp 1 x attention_dp 2,
    # 4 decode rows: the MLP spans both groups' chips and runs all 4 rows (2 its own), so the other group's rows are
    # all-gathered first, the same collective as a sequential block's
    base = tiny()
    g = base.layer_groups[0]
    spec = replace(base, layer_groups=(replace(g, parallel_block=True, norms=1),))
    sh = Sharding(tp=1, attention_dp=2)
    ops = by_name(build_ops(spec, Phase.decode(4, 300), sh))
    assert float(ops["ffn.up_gate"].tokens) == 4
    assert "comm.all_gather.ffn_in" in ops
    seq = by_name(build_ops(base, Phase.decode(4, 300), sh))
    gather, seq_gather = ops["comm.all_gather.ffn_in"], seq["comm.all_gather.ffn_in"]
    assert float(gather.comm_bytes) == float(seq_gather.comm_bytes) > 0


def test_an_indexers_top_k_over_an_empty_prompt_chunk_costs_nothing_and_stays_finite():
    # 4 new tokens ending a 10-token context see 7, 8, 9 and 10 keys: 8.5 on average (causal_pairs / q_len = 34 / 4)
    from llm_roofline.ops import causal_keys_per_query

    assert causal_keys_per_query(4, 10) == 8.5 == float(causal_pairs(4, 10)) / 4
    # a serving step with no prompt tokens beside 4 decodes (the engine's step tables hold such steps): DeepSeek-V3.2's
    # indexer top-k over the chunk divided 0 pairs by 0 queries, a NaN step time that crashed `serve` and `plan`
    import llm_roofline as lr

    spec = lr.load_model(Path(__file__).parent / "fixtures" / "configs" / "deepseek_v32_exp.json")
    ops = by_name(build_ops(spec, Phase.mixed(4, 300, 0, 0)))
    topk = ops["attn.indexer.topk.chunk"]
    assert float(topk.flops) == 0 and np.isfinite(float(topk.act_bytes))
