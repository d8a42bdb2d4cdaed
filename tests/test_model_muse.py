"""Meta's Muse Glimmer (muse_glimmer_text) and Muse Spark (muse_spark_text), transformers 5.24's modular_muse_glimmer.py
and modular_muse_spark.py (read by llm_roofline/model/muse.py).

Muse Glimmer was read before as an unknown model_type, a plain Llama block: its attention output gate (gate_proj,
H x hd from x), two of its four norms and its NoPE full-attention layers were missed (26,436,413,952 parameters for
its default config, 1,418,366,976 short). Muse Spark was refused ("model_type 'muse_spark_text' is not in the
architecture table and its config sets moe_hidden_size"). Both are read now; Spark's experts run at moe_hidden_size
between a projection in and one out (FfnSpec.latent), its residual adds are gated (LayerGroup.residual_gates).

Every expected count is hand arithmetic in the comment beside it; "transformers meta count" = the model class of
transformers 5.24 (MuseGlimmerForConditionalGeneration / MuseSparkForConditionalGeneration) built from the config on
the meta device (torch 2.14, a separate virtualenv; not a dependency of this project), its parameters summed without
the vision tower, the audio tower and the projector (the text model and the LM head). transformers keeps Spark's router
e_score_correction_bias as a buffer (num_local_experts a MoE layer): the reader counts it as the router's bias.

Fixtures (tests/fixtures/configs): no verbatim config.json of meta-models/Muse-Glimmer-30B or
meta-models/Muse-Spark-Open-816B-A42B was found in the public sources searched (vLLM's Muse Glimmer config test copies
a trimmed "representative" config; public ports copy the keys they read). So these are transformers' own defaults:
- muse_glimmer_default.json: MuseGlimmerConfig().to_dict() of transformers 5.24 (its docstring checkpoint
  meta-models/Muse-Glimmer-30B), transformers' bookkeeping keys (id2label, return_dict, ...) left out. Its text shape
  is the one vLLM's test and a public hipfire port give of the release (hidden 6656, 52 layers, 32 heads, 2 KV heads of
  128, MLP 19,968, vocabulary 202,048, window 2048, qk_scale_factor 3.87); those give RoPE theta 500,000 where the
  config class defaults to 10,000 (no shape). Published: "a dense causal transformer of roughly 29.6 billion parameters
  across 52 layers, including a perception encoder" (Vercel's and Tenstorrent's model pages), "a ~1.8B ViT-G/14
  perception encoder" (Fireworks): 27.85B here for the text model and LM head, + about 1.85B for the vision tower.
- muse_spark_default.json: MuseSparkConfig().to_dict() (docstring checkpoint meta-models/Muse-Spark-Open-816B-A42B),
  the same keys left out. A public TPU port's Config "read from the checkpoint's config.json" states the same shape (62
  layers, hidden 8192, moe_hidden 4096, expert width 4096, 256 experts top-8, 128 / 16 heads of 64, vocabulary 202,048,
  window 2048, full-attention NoPE layers l % 4 == 1: 16 of them, num_shared_experts 0, router weight fp32 in the
  checkpoint). Published (Hugging Face's blog "Welcome Muse Spark Open", the model id): "approximately 816 billion
  parameters, around 42 billion active per token": the decoder layers' 816.68B and 42.78B here (with the embedding and
  LM head 819.99B and 46.09B).
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.errors import ModelConfigError, RooflineError, UnsupportedArchitectureError
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import kv_bytes_per_token, kv_cache_bytes, weight_bytes, weight_bytes_per_chip
from llm_roofline.sharding import Sharding

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"


def raw(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def text(name: str, drop: tuple[str, ...] = (), **change) -> dict:
    """The fixture with its text_config changed, the keys in `drop` left out."""
    cfg = raw(name)
    cfg["text_config"] = {k: v for k, v in {**cfg["text_config"], **change}.items() if k not in drop}
    return cfg


def groups(m) -> list[tuple]:
    return [(g.name, g.count, g.attention.sliding_window, g.attention.rope) for g in m.layer_groups]


def by_name(ops) -> dict:
    return {op.name: op for op in ops}


def runs(model, **kw) -> None:
    """estimate, its memory and serve run on the model: 8 sequences of 1024 + 128 tokens hold kv_cache_bytes (checked
    by hand in each test), bf16 weights take 2 bytes a parameter, the calibrated times are at or above the ideal
    bound and serving 4 clients decodes no faster than one sequence's ideal step."""
    chip = kw.pop("chip", "h100-sxm")
    est = lr.estimate(model, chip, batch=8, prompt_len=1024, gen_len=128, **kw)
    assert est.memory.kv_cache_bytes == kv_cache_bytes(model, 1152, batch=8)
    if "weight_dtype" not in kw:
        assert est.memory.weight_bytes == 2 * model.params_total
    ideal = lr.estimate(model, chip, batch=8, prompt_len=1024, gen_len=128, efficiency="ideal", **kw)
    assert est.ttft_s >= ideal.ttft_s > 0 and est.tpot_s >= ideal.tpot_s > 0
    one = lr.estimate(model, chip, batch=1, prompt_len=1024, gen_len=128, efficiency="ideal", **kw)
    served = lr.serve(model, chip, prompt_len=1024, gen_len=128, concurrency=4, **kw)
    assert math.isfinite(served.tpot_s) and served.tpot_s >= one.tpot_s


# ------------------------------------------------------------------------------ Muse Glimmer
# d 6656, 32 heads of 128, 2 KV heads: q, o, gate_proj 3 x 6656 x 4096 = 81,788,928; k, v 2 x 6656 x 256 = 3,407,872
#   -> attention 85,196,800; MLP 3 x 6656 x 19,968 = 398,721,024; 4 norms 26,624 -> 483,944,448 a layer
GLIMMER_LAYER = 85_196_800 + 398_721_024 + 26_624


def test_muse_glimmer_default_gated_attention_four_norms_nope_full_layers():
    m = lr.load_model(FIX / "muse_glimmer_default.json")
    # 52 layers 25,165,111,296; untied embedding and LM head 2 x 202,048 x 6656 = 2,689,662,976; final norm 6656
    assert m.params_total == 52 * GLIMMER_LAYER + 2_689_662_976 + 6656 == 27_854_780_928  # = transformers meta count
    assert m.params_active == m.params_total  # dense
    # layer_types: full attention where (51 - i) % 4 == 0 (layers 3, 7, ..., 51: 13), a window of 2048 on the 39 others;
    # layer_rope_theta 0 (NoPE) on exactly those full layers
    assert groups(m) == [("sliding", 39, 2048, True), ("full", 13, None, False)]
    a = m.layer_groups[0].attention
    assert (a.output_gate, a.bare_qk_norm, a.qk_norm, a.o_norm, m.layer_groups[0].norms) == (True, True, False, False, 4)
    # K and V: 2 heads x 128 x 2 x 2 B = 1024 B a token and layer, x 52 = 53,248
    assert kv_bytes_per_token(m, "bf16") == 53_248
    # 131,072 tokens: 13 full layers 13 x 131,072 x 1024 = 1,744,830,464 + 39 windows 39 x 2048 x 1024 = 81,788,928
    assert kv_cache_bytes(m, 131_072) == 1_826_619_392
    assert not any("not one the parser knows" in a or "not used by the reader" in a for a in m.assumptions)
    runs(m)


def test_muse_glimmer_graph_prices_the_gate_and_the_bare_qk_norms_and_no_rope_on_full_layers():
    m = lr.load_model(FIX / "muse_glimmer_default.json")
    ops = build_ops(m, Phase.decode(1, 4096))
    sliding = by_name(op for op in ops if op.group == "sliding")
    full = by_name(op for op in ops if op.group == "full")
    # q + gate 2 x 4096, k + v 2 x 256 columns: 6656 x 8704 x 2 B; the gate applied over H x hd = 4096 per token
    assert float(sliding["attn.qkv_proj"].weight_bytes) == 6656 * 8704 * 2
    assert float(sliding["attn.output_gate"].flops) == 5 * 4096
    # q/k RMSNorms without weights: (32 + 2) x 128 elements, 4 FLOP each, no weight bytes
    assert float(sliding["attn.qk_norm"].flops) == 4 * 34 * 128 and float(sliding["attn.qk_norm"].weight_bytes) == 0
    assert "attn.rope" in sliding and "attn.rope" not in full
    assert {"norm.attn_out", "norm.ffn_out"} <= set(full) and "attn.o_norm" not in full
    assert weight_bytes_per_chip(ops) == weight_bytes(m) == 2 * 27_854_780_928


def test_muse_glimmer_smaller_config_and_its_default_layer_rules():
    m = lr.load_model(text("muse_glimmer_default", hidden_size=512, num_hidden_layers=7, num_attention_heads=8,
                           num_key_value_heads=4, head_dim=64, intermediate_size=800, vocab_size=999,
                           drop=("layer_types", "layer_rope_theta")))
    # q, o, gate 3 x 512 x 512 = 786,432; k, v 2 x 512 x 256 = 262,144; MLP 3 x 512 x 800 = 1,228,800; 4 norms 2048
    #   -> 2,279,424 a layer; 7 layers 15,955,968 + embedding and LM head 2 x 999 x 512 = 1,022,976 + final norm 512
    assert m.params_total == 7 * 2_279_424 + 1_022_976 + 512 == 16_979_456  # = transformers meta count
    # without layer_types / layer_rope_theta, the config class's rule: full and NoPE where (6 - i) % 4 == 0: 2 and 6
    assert groups(m) == [("sliding", 5, 2048, True), ("full", 2, None, False)]
    assert any("layer_rope_theta absent" in a for a in m.assumptions)


# ------------------------------------------------------------------------------ Muse Spark
# d 8192, 128 heads of 64, 16 KV heads: q, o, gate 3 x 8192 x 8192 = 201,326,592; k, v 2 x 8192 x 1024 = 16,777,216
#   -> attention 218,103,808. MoE: router 256 x 8192 = 2,097,152 + its bias 256; pre_expert_proj and post_expert_proj
#   2 x 8192 x 4096 = 67,108,864; their two RMSNorms 2 x 4096 = 8192; 256 experts of 3 x 4096 x 4096 = 50,331,648 ->
#   12,884,901,888. Block: 3 norms with weights (input, pre-FFN, post-FFN; the post-attention one has none) + 2 residual
#   gates = 5 x 8192 = 40,960
SPARK_ATTN, SPARK_ROUTER, SPARK_LATENT, SPARK_BLOCK = 218_103_808, 2_097_152 + 256, 67_108_864 + 8192, 40_960
SPARK_LAYER = SPARK_ATTN + SPARK_ROUTER + SPARK_LATENT + 256 * 50_331_648 + SPARK_BLOCK  # 13,172,261,120
SPARK_ACTIVE_LAYER = SPARK_ATTN + SPARK_ROUTER + SPARK_LATENT + 8 * 50_331_648 + SPARK_BLOCK  # 690,012,416
SPARK_HEAD = 2 * 202_048 * 8192 + 8192  # untied embedding and LM head 3,310,354,432 + final norm


def test_muse_spark_default_latent_experts_and_gated_residuals():
    m = lr.load_model(FIX / "muse_spark_default.json")
    assert SPARK_LAYER == 13_172_261_120 and SPARK_ACTIVE_LAYER == 690_012_416
    assert m.params_total == 62 * SPARK_LAYER + SPARK_HEAD == 819_990_552_064
    assert m.params_total - 62 * 256 == 819_990_536_192  # transformers meta count (+ 62 x 256 router-bias buffers)
    # 8 of the 256 experts: 62 x 690,012,416 = 42,780,769,792 + embedding, LM head, final norm
    assert m.params_active == 62 * SPARK_ACTIVE_LAYER + SPARK_HEAD == 46_091_132_416
    # published "~816B total, ~42B active" are the decoder layers': 816,680,189,440 and 42,780,769,792
    assert round(62 * SPARK_LAYER / 1e9) == 817 and int(62 * SPARK_ACTIVE_LAYER / 1e9) == 42
    # full attention (NoPE) where (61 - i) % 4 == 0: layers 1, 5, ..., 61 (16); a window of 2048 on the 46 others
    assert groups(m) == [("sliding.moe", 46, 2048, True), ("full.moe", 16, None, False)]
    g = m.layer_groups[0]
    assert (g.ffn.latent, g.ffn.d_expert, g.ffn.n_experts, g.ffn.top_k, g.ffn.d_shared, g.ffn.router_bias) == \
        (4096, 4096, 256, 8, 0, True)
    assert (g.norms, g.weightless_norms, g.residual_gates, g.attention.o_norm) == (4, 1, True, True)
    # K and V: 16 heads x 64 x 2 x 2 B = 4096 B a token and layer, x 62 = 253,952
    assert kv_bytes_per_token(m, "bf16") == 253_952
    # 1,048,576 tokens: 16 full layers x 1,048,576 x 4096 = 68,719,476,736 + 46 windows x 2048 x 4096 = 385,875,968
    assert kv_cache_bytes(m, 1_048_576) == 69_105_352_704
    assert not any("not used by the reader" in a for a in m.assumptions)
    runs(m, chip="h200", tp=8, weight_dtype="fp8")  # 820 GB of fp8 weights over 8 x 141 GB


def test_muse_spark_graph_runs_the_experts_at_the_latent_width():
    m = lr.load_model(FIX / "muse_spark_default.json")
    ops = build_ops(m, Phase.decode(1, 4096))
    o = by_name(op for op in ops if op.group == "sliding.moe")
    # latent_in (1, 8192) @ (8192, 4096); the experts (1, 4096) @ (4096, 2 x 4096) and (1, 4096) @ (4096, 4096), 8 of
    # them; latent_out (1, 4096) @ (4096, 8192): 2 FLOP a multiply-add
    assert float(o["ffn.latent_in"].flops) == float(o["ffn.latent_out"].flops) == 2 * 8192 * 4096
    assert float(o["ffn.experts.up_gate"].flops) == 8 * 2 * 4096 * 8192
    assert float(o["ffn.experts.down"].flops) == 8 * 2 * 4096 * 4096
    # the two latent RMSNorms: 4096 weights each; each of the 8 expert outputs normed (4 FLOP an element)
    assert float(o["norm.latent_in"].weight_bytes) == float(o["norm.expert_out"].weight_bytes) == 4096 * 2
    assert float(o["norm.expert_out"].flops) == 8 * 4 * 4096
    # weightless: the per-head output norm (128 x 64 elements) and the post-attention norm; the gated residual adds read
    # their 8192-vector (3 FLOP an element: two multiplies, one add)
    assert float(o["attn.o_norm"].flops) == 4 * 8192 and float(o["attn.o_norm"].weight_bytes) == 0
    assert float(o["norm.attn_out"].weight_bytes) == 0 and float(o["norm.ffn_out"].weight_bytes) == 8192 * 2
    assert float(o["residual.gated"].flops) == 3 * 8192 and float(o["residual.gated"].weight_bytes) == 8192 * 2
    # every GEMM of a decoded token: 2 FLOP per matrix parameter it touches; not matrices: the embedding table, the
    # final norm, and a layer's 5 x 8192 block vectors, 2 x 4096 latent norm weights, 256 router biases
    gemm_flops = sum(float(op.flops) * op.count for op in ops if op.kind == "gemm")
    assert gemm_flops == 2 * (m.params_active - 202_048 * 8192 - 8192 - 62 * (5 * 8192 + 2 * 4096 + 256))
    assert weight_bytes_per_chip(ops) == weight_bytes(m) == 2 * 819_990_552_064


def test_muse_spark_latent_projections_split_over_the_ffn_chips():
    m = lr.load_model(FIX / "muse_spark_default.json")
    # tp 4 (every expert sliced over the 4 chips): latent_in's 4096 columns split, all-gathered; each expert's partial
    # output rows all-reduced before its norm; latent_out reads its 1024 rows of the latent
    tp = by_name(op for op in build_ops(m, Phase.decode(8, 4096), Sharding(tp=4)) if op.group == "sliding.moe")
    assert (tp["ffn.latent_in"].gemm_n, tp["ffn.latent_out"].gemm_k) == (1024, 1024)
    assert float(tp["ffn.latent_in"].weight_bytes) == float(tp["ffn.latent_out"].weight_bytes) == 8192 * 1024 * 2
    assert {"comm.all_gather.latent_in", "comm.all_reduce.expert_out"} <= set(tp)
    assert "comm.reduce_scatter.latent_out" not in tp
    # ep 4 (whole experts, 64 a chip): no all-reduce of an expert's rows; the chips' sums over their experts
    # reduce-scattered into each chip's 1024 latent columns
    ep = by_name(op for op in build_ops(m, Phase.decode(8, 4096), Sharding(tp=4, ep=4)) if op.group == "sliding.moe")
    assert "comm.reduce_scatter.latent_out" in ep and "comm.all_reduce.expert_out" not in ep
    # per chip at tp 4: a quarter of the weights + 3/4 of what every chip holds whole: router 62 x 2,097,408 x 2 B =
    # 260,078,592, the block's vectors 62 x (5 x 8192 + 2 x 4096) x 2 B = 6,094,848, the final norm 16,384
    whole = 260_078_592 + 6_094_848 + 16_384
    ops = build_ops(m, Phase.decode(8, 4096), Sharding(tp=4))
    assert weight_bytes_per_chip(ops) == 2 * 819_990_552_064 / 4 + whole * 3 / 4 == 410_194_918_400


def _same_ops(a, b):
    import dataclasses

    assert [op.name for op in a] == [op.name for op in b]
    for x, y in zip(a, b):
        for f in (f for f in dataclasses.fields(x) if f.compare):
            u, v = getattr(x, f.name), getattr(y, f.name)
            assert np.array_equal(u, v) if isinstance(np.asarray(u), np.ndarray) and np.ndim(u) else u == v, \
                (x.name, f.name)


def test_muse_spark_graph_parts_kept_over_several_shardings_are_the_ops_built_afresh():
    m = lr.load_model(FIX / "muse_spark_default.json")
    shardings = [Sharding(tp=2, ep=2), Sharding(tp=4), Sharding(tp=4, ep=4, routing_skew=1.5),
                 Sharding(tp=2, attention_dp=2, moe_ep=4), Sharding(tp=4, ep=4, sequence_parallel=True),
                 Sharding(tp=2, attention_dp=2, moe_ep=2, moe_dispatch="all_to_all"), Sharding()]
    batch = np.array([1.0, 8.0])
    for phase in (Phase.prefill(batch, 512.0), Phase.decode(batch, np.array([[600.0], [900.0]]))):
        parts = {}
        for sh in shardings:
            fresh = build_ops(m, phase, sh)
            _same_ops(build_ops(m, phase, sh, parts=parts), fresh)
            assert all(np.all(np.isfinite(op.flops)) and np.all(np.asarray(op.flops) >= 0) for op in fresh)


SMALL_SPARK = dict(hidden_size=1024, num_hidden_layers=6, num_attention_heads=16, num_key_value_heads=8, head_dim=64,
                   intermediate_size=2048, vocab_size=1000, moe_hidden_size=512, moe_intermediate_size=384,
                   num_local_experts=16, num_experts_per_tok=4, drop=("layer_types", "layer_rope_theta"),
                   mlp_layer_types=["dense", "sparse", "sparse", "dense", "sparse", "sparse"])


def test_muse_spark_dense_layers_beside_latent_experts():
    m = lr.load_model(text("muse_spark_default", **SMALL_SPARK))
    # d 1024, 16 heads of 64, 8 KV heads: q, o, gate 3 x 1024 x 1024 = 3,145,728; k, v 2 x 1024 x 512 = 1,048,576 ->
    # 4,194,304; block vectors 5 x 1024 = 5120. Dense layer: MLP 3 x 1024 x 2048 = 6,291,456 -> 10,490,880. MoE layer:
    # router 16 x 1024 + 16 = 16,400; latent in and out 2 x 1024 x 512 = 1,048,576; 2 latent norms 1024; 16 experts
    # of 3 x 512 x 384 = 589,824 -> 9,437,184; -> 14,702,608. Embedding and LM head 2 x 1000 x 1024, final norm 1024
    dense, moe = 4_194_304 + 5120 + 6_291_456, 4_194_304 + 5120 + 16_400 + 1_048_576 + 1024 + 16 * 589_824
    assert m.params_total == 2 * dense + 4 * moe + 2_048_000 + 1024 == 81_841_216
    assert m.params_total - 4 * 16 == 81_841_152  # transformers meta count
    # 4 of the 16 experts on the MoE layers: 14,702,608 - 12 x 589,824 = 7,624,720
    assert m.params_active == 2 * dense + 4 * (moe - 12 * 589_824) + 2_049_024 == 53_529_664
    # full and NoPE where (5 - i) % 4 == 0: layers 1 and 5, both sparse; dense layers 0 and 3 slide
    assert [(g.name, g.count, g.ffn.kind, g.ffn.latent) for g in m.layer_groups] == \
        [("sliding.dense", 2, "dense", 0), ("full.moe", 2, "moe", 512), ("sliding.moe", 2, "moe", 512)]
    runs(m)


def test_muse_spark_layer_lists_read_as_stated_and_a_latent_wider_than_the_model():
    types = ["full_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention"]
    m = lr.load_model(text("muse_spark_default", hidden_size=1024, num_hidden_layers=5, num_attention_heads=16,
                           num_key_value_heads=4, head_dim=32, intermediate_size=3000, vocab_size=1000,
                           moe_hidden_size=1536, moe_intermediate_size=256, num_local_experts=8, num_experts_per_tok=2,
                           layer_types=types, layer_rope_theta=[0, 10000, 10000, 0, 5], sliding_window=64,
                           drop=("mlp_layer_types",)))
    # q, o, gate 3 x 1024 x 512 = 1,572,864; k, v 2 x 1024 x 128 = 262,144; block 5120; router 8 x 1024 + 8; latent
    # in and out 2 x 1024 x 1536 = 3,145,728, their norms 3072; 8 experts of 3 x 1536 x 256 = 1,179,648 -> 14,434,312
    layer = 1_572_864 + 262_144 + 5120 + 8200 + 3_145_728 + 3072 + 8 * 1_179_648
    assert m.params_total == 5 * layer + 2_048_000 + 1024 == 74_220_584
    assert m.params_total - 5 * 8 == 74_220_544  # transformers meta count
    # each layer as its lists say: a full layer with RoPE (2), a sliding one without (3)
    assert groups(m) == [("full.moe", 1, None, False), ("sliding.moe", 2, 64, True), ("full.moe-2", 1, None, True),
                         ("sliding.moe-2", 1, 64, False)]
    assert kv_bytes_per_token(m, "bf16") == 5 * 4 * 32 * 2 * 2  # 2560


# ------------------------------------------------------------------------------ refusals and hostile values
@pytest.mark.parametrize("name, change, error, match", [
    ("muse_glimmer_default", {"attention_bias": True}, UnsupportedArchitectureError,
     "attention_bias=true \\(model_type=muse_glimmer_text\\): q/k/v/o with bias beside a bias-free gate_proj"),
    ("muse_glimmer_default", {"num_local_experts": 8, "num_experts_per_tok": 2}, UnsupportedArchitectureError,
     "num_local_experts is set \\(model_type=muse_glimmer_text\\) on a layer transformers builds a dense MLP on"),
    ("muse_spark_default", {"num_shared_experts": 1}, UnsupportedArchitectureError,
     "shared experts are set \\(model_type=muse_spark_text\\): MuseSparkMoE builds none"),
    ("muse_spark_default", {"mlp_layer_types": ["moe"] * 62}, ModelConfigError,
     "mlp_layer_types entry 'moe' is not one of 'dense', 'sparse'"),
    ("muse_spark_default", {"num_local_experts": None}, ModelConfigError,
     "num_local_experts must be set for the sparse layers"),
    ("muse_glimmer_default", {"layer_types": ["chunked_attention"] * 52, "attention_chunk_size": 512},
     ModelConfigError, "layer_types entry 'chunked_attention' is not one of 'full_attention', 'sliding_attention'"),
    ("muse_glimmer_default", {"sliding_window": None}, ModelConfigError, "sliding_window is not set"),
    ("muse_spark_default", {"hidden_size": 8000}, ModelConfigError,
     "hidden_size \\(8000\\) is not divisible by num_attention_heads \\(128\\)"),
    ("muse_spark_default", {"layer_rope_theta": [1e4] * 61}, ModelConfigError,
     "layer_rope_theta must list one entry per layer \\(62\\), got 61"),
    ("muse_spark_default", {"layer_rope_theta": [math.nan] * 62}, ModelConfigError,
     "layer_rope_theta\\[0\\] must be a non-negative number \\(0: no RoPE\\), got nan"),
])
def test_muse_refuses_what_transformers_would_not_build_as_read(name, change, error, match):
    with pytest.raises(error, match=match):
        lr.load_model(text(name, **change))


@pytest.mark.parametrize("name, count", [("muse_glimmer_default", 27_854_780_928),
                                         ("muse_spark_default", 819_990_552_064)])
def test_muse_text_config_without_its_model_type_is_the_wrappers_text_model(name, count):
    assert lr.load_model(text(name, drop=("model_type",))).params_total == count


def test_muse_spark_shared_experts_of_zero_as_a_released_config_states_them():
    # the TPU port requires num_shared_experts 0 of the checkpoint's config.json: none, the same count
    assert lr.load_model(text("muse_spark_default", num_shared_experts=0)).params_total == 819_990_552_064


_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
         "intermediate_size", "moe_hidden_size", "moe_intermediate_size", "num_local_experts", "num_experts_per_tok",
         "sliding_window", "layer_types", "layer_rope_theta", "mlp_layer_types", "attention_bias", "vocab_size",
         "num_shared_experts", "hidden_act")
_VALUES = ("x", -1, math.nan, 1e30, 10**30, None, [], [1, 2], {}, True, 0, ["sparse"] * 62, [math.nan] * 62,
           [-1] * 62, [10**400] * 62, ["full_attention"] * 62)


@pytest.mark.parametrize("name", ["muse_glimmer_default", "muse_spark_default"])
@pytest.mark.parametrize("key", _KEYS)
def test_muse_hostile_values_raise_the_projects_error(name, key):
    for value in _VALUES:
        cfg = raw(name)
        cfg["text_config"][key] = value
        try:
            m = lr.load_model(cfg)
        except RooflineError:
            continue
        assert math.isfinite(m.params_total) and m.params_total >= 0 and m.params_active <= m.params_total
