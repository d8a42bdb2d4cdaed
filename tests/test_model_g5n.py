"""GLM-5.3-Flash (model_type glm5_next, text model glm5_next_text; transformers 5.24's modular_glm5_next.py): KDA
layers and MLA layers without RoPE whose DSA indexer pools its keys (IndexPool), mHC hyper-connections around every
layer, DeepSeek-V3's MoE. Read by llm_roofline/model/glm5_next.py (grouped by hybrid.py).

Every expected count is hand arithmetic in the comment beside it; the reference it is checked against is named.
"transformers meta count" = Glm5NextForConditionalGeneration of transformers 5.24 built from the config on the meta
device (torch 2.14 CPU, a separate virtualenv; not a dependency of this project), the parameters of the language model
and the LM head summed (the vision tower left out); its router's e_score_correction_bias is a buffer, which the reader
counts (+ n_routed_experts a MoE layer), as for Kimi-Linear, GLM-5 and Hy4.

Fixture tests/fixtures/configs/glm5_3_flash.json: zai-org/GLM-5.3-Flash's text_config as a public serving project's
test transcribes it ("the served checkpoint's text config, read off ... config.json": every key its architecture check
reads: hidden 4096, 45 layers, vocab 154,880, 1,048,576 positions, MLA 64 heads, q_lora_rank 1536, kv_lora_rank 512,
qk_nope 256, qk_rope 0, v 256, mla_use_nope, index 32 heads x 128, index_topk 2048, index_kpool 4, compress and
always-select-tail on, 288 experts of 2048 + 1 shared, top 8, first_k_dense_replace 3, intermediate 12,288, hc_mult 4,
mhc, swiglu_limit 10, linear_attn_config with 64 KDA heads of 128, conv 4, gate_lower_bound -5, full_attn_layers 3, 7,
..., 43 and the other 34 as kda_layers, 0-based), num_nextn_predict_layers 1 as other public transcriptions of the
file give it, under the Glm5NextForConditionalGeneration wrapper with the vision_config a public MLX port's test
gives (24 layers of 1024, MLP 4096, patch 14, out 4096). Assembled into JSON here, not a verbatim copy of the file; no
quantization_config (the hub repository holds block-FP8 weights, public notes say: the fixture is the bf16 form, as
zai-org/GLM-5.3-Flash-BF16). Z.ai's launch post (2026-08-26): "320B total parameters and just 18B active", "45
layers", IndexPool "compresses four indexer key vectors into one through weighted pooling".
"""

import copy
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import llm_roofline as lr
from llm_roofline.errors import ModelConfigError, RooflineError, UnsupportedArchitectureError
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import kv_bytes_per_token, kv_cache_bytes, state_bytes_per_sequence

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"
RAW = json.loads((FIX / "glm5_3_flash.json").read_text())


def text(**change) -> dict:
    """The fixture under its wrapper, its text_config changed (None: the key stated as null)."""
    cfg = copy.deepcopy(RAW)
    cfg["text_config"].update(change)
    return cfg


def group_ops(m, name: str, phase) -> dict:
    g = next(g for g in m.layer_groups if g.name == name)
    return {o.name: o for o in build_ops(replace(m, layer_groups=(replace(g, count=1),)), phase) if o.group == name}


# d 4096. KDA (64 heads x 128 = 8192): q, k, v 3 x 4096 x 8192 = 100,663,296; conv 24,576 x 4 = 98,304; dt_bias 8192;
#   A_log 64; f_a, g_a 2 x 4096 x 128 = 1,048,576; f_b, g_b 2 x 128 x 8192 = 2,097,152; beta 4096 x 64 = 262,144;
#   o_norm 128; o_proj 8192 x 4096 = 33,554,432 -> 137,732,288
KDA = 137_732_288
# MLA, no RoPE: q_a 4096 x 1536 = 6,291,456 + norm 1536; q_b 1536 x 64 x 256 = 25,165,824; kv_a 4096 x 512 = 2,097,152
#   + norm 512; kv_b 512 x 64 x (256 + 256) = 16,777,216; o 64 x 256 x 4096 = 67,108,864 -> 117,442,560
MLA = 117_442_560
# indexer: wq_b 1536 x 32 x 128 = 6,291,456; wk 4096 x 128 = 524,288; weights_proj 4096 x 32 = 131,072; k_norm
#   LayerNorm 2 x 128; IndexPool gate 128 x 4096 = 524,288 and position bias 4 x 128 = 512 -> 7,471,872
INDEXER = 7_471_872
# mHC, every layer, two: fn (2 + 4) x 4 = 24 x 4 x 4096 = 393,216 + base 24 + scale 3 -> 786,486; 2 norms 8192
HC_NORMS = 786_486 + 8192
# layers 0-2 dense 3 x 4096 x 12,288 = 150,994,944; 42 MoE layers: 288 experts + 1 shared of 3 x 4096 x 2048 =
#   25,165,824 each + router 288 x 4096 = 1,179,648 + bias 288 -> 7,274,103,072
DENSE, MOE = 150_994_944, 7_274_103_072
# untied embedding + LM head 2 x 154,880 x 4096 = 1,268,776,960; final norm 4096; the head collapses the streams by
#   an unweighted mean (no weights)
GLM53_FLASH = (34 * KDA + 11 * (MLA + INDEXER) + 45 * HC_NORMS + 3 * DENSE + 42 * MOE + 1_268_776_960 + 4096)


def test_glm5_3_flash_kda_nope_mla_pooled_indexer_mhc_moe():
    m = lr.load_model(FIX / "glm5_3_flash.json")
    assert m.params_total == GLM53_FLASH == 313_326_811_966
    # transformers meta count 313,326,799,870: its e_score_correction_bias is a buffer (42 x 288 = 12,096 fewer)
    assert m.params_total - 313_326_799_870 == 42 * 288
    # active: 8 of 288 experts, 280 x 25,165,824 = 7,046,430,720 fewer a MoE layer
    assert m.params_active == GLM53_FLASH - 42 * 7_046_430_720 == 17_376_721_726
    # Z.ai: 320B total, 18B active, with the MTP layer the reader leaves out (num_nextn_predict_layers 1: a MoE layer
    # 7,274,103,072 + MLA and indexer 124,914,432 + mHC and norms 794,678 + eh_proj 8192 x 4096 = 33,554,432 + enorm,
    # hnorm 8192 -> 7,433,374,806, its active part 7,433,374,806 - 7,046,430,720 = 386,944,086; the shape a public
    # port's notes give) and the vision tower (about 0.3B in its attention and MLP matrices)
    assert abs((m.params_total + 7_433_374_806) / 320e9 - 1) < 0.005
    assert 17.5e9 < m.params_active + 386_944_086 < 18e9
    # layers 3, 7, ..., 43 MLA (linear_attn_config.full_attn_layers, 0-based), the rest KDA; layers 0-2 dense
    assert [(g.name, g.count, g.hc_mult, g.hc_independent) for g in m.layer_groups] == [
        ("kda.dense", 3, 4, False), ("attention.moe", 11, 4, False), ("kda.moe", 31, 4, False)]
    attn = m.layer_groups[1].attention
    assert (attn.kind, attn.rope, attn.qk_rope_head_dim, attn.index_kpool, attn.index_tail) == \
        ("mla", False, 0, 4, True)
    assert m.attention_kind == "kda/mla+dsa" and m.head_params == 0
    # KV per token: the latent 512 on 11 MLA layers + one pooled index key of 128 per 4 tokens: 11 x (512 + 32) x 2 B
    assert kv_bytes_per_token(m) == 11 * (512 + 128 / 4) * 2 == 11_968
    assert kv_cache_bytes(m, 1_048_576) == 11_968 * 1_048_576
    # state per sequence: 34 KDA layers x (64 x 128 x 128 x 4 B (float32, as vLLM keeps KDA's) + 3 taps x 24,576
    #   conv channels x 2 B) = 34 x (4,194,304 + 147,456)
    assert state_bytes_per_sequence(m, "bf16") == 34 * 4_341_760 == 147_619_840
    assert any("one pooled key (index_head_dim) per 4 tokens" in a for a in m.assumptions)
    assert any("num_nextn_predict_layers=1" in a for a in m.assumptions)


# Glm5NextTextConfig(): the fixture's shape with index_kpool 16: the position bias 11 x (16 - 4) x 128 = 16,896 more
DEFAULT = GLM53_FLASH + 11 * 12 * 128


def _default_text() -> dict:
    """Glm5NextConfig().to_dict()'s text_config, its per-layer lists as the config class writes them."""
    return {"model_type": "glm5_next_text", "vocab_size": 154880, "hidden_size": 4096, "num_hidden_layers": 45,
            "layer_types": (["linear_attention"] * 3 + ["indexed_attention"]) * 11 + ["linear_attention"],
            "indexer_types": ["full"] * 45, "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 42, "head_dim": 0,
            "qk_head_dim": 256, "qk_rope_head_dim": 0, "index_kpool": 16, "index_kpool_always_select_tail": True,
            "linear_num_heads": 64, "linear_head_dim": 128, "linear_conv_kernel_dim": 4, "linear_lower_bound": -5.0,
            "hc_mult": 4, "hc_eps": 1e-06, "hc_sinkhorn_iters": 20, "swiglu_limit": 10.0, "pad_token_id": 154820}


@pytest.mark.parametrize("cfg", [{"model_type": "glm5_next"}, {"model_type": "glm5_next_text"},
                                 {"model_type": "glm5_next", "text_config": {}},
                                 {"model_type": "glm5_next", "text_config": _default_text(),
                                  "vision_config": {"depth": 24, "hidden_size": 1024}}])
def test_glm5_next_config_class_defaults(cfg):
    m = lr.load_model(cfg)
    # transformers meta count of Glm5NextConfig() 313,326,816,766 + the 42 x 288 router-bias buffers
    assert m.params_total == DEFAULT == 313_326_816_766 + 42 * 288
    # one pooled index key per 16 tokens: 11 x (512 + 8) x 2 B
    assert kv_bytes_per_token(m) == 11 * (512 + 128 / 16) * 2 == 11_440
    assert m.layer_groups[1].attention.index_keys == 2048 + 15


def test_glm5_3_flash_graph_prices_the_pooled_indexer_and_the_mhc_around_kda():
    m = lr.load_model(FIX / "glm5_3_flash.json")
    ops = group_ops(m, "attention.moe", Phase.decode(1, 65_536))
    # the indexer scores 65,536 / 4 = 16,384 pools with 32 heads of 128: 2 x 32 x 16,384 x 128
    assert float(ops["attn.indexer.score"].flops) == 2 * 32 * 16_384 * 128 == 134_217_728
    assert float(ops["attn.indexer.topk"].flops) == 16_384  # one pass over the pool scores
    # k, the pool gate and the head weights from x: (1, 4096) @ (4096, 128 + 128 + 32)
    assert float(ops["attn.indexer.k_proj"].flops) == 2 * 4096 * 288
    assert float(ops["attn.indexer.pool"].flops) == 6 * 128
    # the pooled key cache: 128 elements per 4 tokens, a quarter of a token's 128 x 2 B written per step
    assert float(ops["attn.indexer.kv_write"].kv_bytes) == 128 * 2 / 4
    # the absorbed core: 64 heads over 2048 selected + 3 tail keys of the 512 latent (scores and values)
    assert float(ops["attn.core"].flops) == 2 * 64 * 2051 * (512 + 512) == 268_828_672
    assert float(ops["attn.kv_write"].kv_bytes) == 512 * 2  # the latent; the index key is pooled
    assert float(ops["hc.attn.mix_proj"].flops) == 2 * 4 * 4096 * 24  # (1, hc x d) @ (hc x d, (2 + hc) x hc)
    pre = group_ops(m, "attention.moe", Phase.prefill(1, 8192))
    # prefill: causal query-pool pairs 8192 x 8193 / 2 / 4 = 8,389,632; the core sees at most 2051 keys: 2051 x 2052
    #   / 2 + (8192 - 2051) x 2051 = 14,699,517 pairs
    assert float(pre["attn.indexer.score"].flops) == 2 * 32 * 8_389_632 * 128
    assert float(pre["attn.core"].flops) == 2 * 64 * 14_699_517 * (256 + 256)
    kda = group_ops(m, "kda.moe", Phase.decode(1, 4096))
    assert {"hc.attn.mix_proj", "mixer.in_proj", "mixer.scan", "mixer.out_proj", "hc.ffn.expand_mix"} <= set(kda)
    assert not [n for n in kda if n.startswith("attn.")]
    # in_proj: q, k, v 3 x 8192, beta 64, the two low-rank gate inputs 2 x 128
    assert float(kda["mixer.in_proj"].flops) == 2 * 4096 * (3 * 8192 + 64 + 256)


def test_glm5_3_flash_estimate_and_serve_run():
    path = FIX / "glm5_3_flash.json"
    for kw in (dict(tp=8), dict(tp=4, pp=2), dict(tp=8, ep=8)):
        est = lr.estimate(path, chip="h200", batch=8, prompt_len=1024, gen_len=128, **kw)
        assert est.memory.fits and all(math.isfinite(x) and x > 0 for x in (est.ttft_s, est.tpot_s))
    # 313B in bf16 (627 GB) do not fit one H100
    assert lr.estimate(path, chip="h100-sxm", batch=8, prompt_len=1024, gen_len=128).memory.fits is False
    served = lr.serve(path, "h200", prompt_len=1024, gen_len=128, concurrency=8, tp=8)
    assert math.isfinite(served.tpot_s) and served.tpot_s > 0


# A small config (every count a transformers meta count, + 5 MoE layers x 8 router-bias buffers = 40) and its variants.
# d 256, 8 layers (MLA at 3 and 7 by default), dense 512 on layers 0-2. KDA (4 heads x 32 = 128): q, k, v 98,304; conv
#   384 x 4 = 1536; dt_bias 128; A_log 4; f_a, g_a 16,384; f_b, g_b 8192; beta 1024; o_norm 32; o 32,768 -> 158,372.
#   MLA: q_a 24,576 + 96; q_b 96 x 4 x 32 = 12,288; kv_a 16,384 + 64; kv_b 64 x 4 x 80 = 20,480; o 192 x 256 = 49,152
#   -> 123,040. Indexer: wq_b 96 x 32 = 3072; wk 4096; weights 512; k_norm 32; gate 4096; bias 4 x 16 = 64 -> 11,872.
#   mHC 2 x (24 x 1024 + 27) = 49,206 + norms 512 a layer; dense 3 x 256 x 512 = 393,216; MoE 9 x 49,152 + router
#   2048 + bias 8 = 444,424; embed + head 2 x 1000 x 256 = 512,000; final norm 256
SMALL = dict(model_type="glm5_next_text", hidden_size=256, num_hidden_layers=8, vocab_size=1000, pad_token_id=0,
             intermediate_size=512, moe_intermediate_size=64, num_attention_heads=4, num_key_value_heads=4,
             q_lora_rank=96, kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=0, v_head_dim=48, index_n_heads=2,
             index_head_dim=16, index_topk=64, index_kpool=4, n_routed_experts=8, num_experts_per_tok=2,
             n_shared_experts=1, hc_mult=4, linear_num_heads=4, linear_head_dim=32, linear_conv_kernel_dim=4)
SMALL_COUNT = 6 * 158_372 + 2 * (123_040 + 11_872) + 8 * (49_206 + 512) + 3 * 393_216 + 5 * 444_424 + 512_000 + 256
_MLA_FOR_KDA = 123_040 - 158_372  # a KDA layer made MLA


@pytest.mark.parametrize("change, expected", [
    ({}, SMALL_COUNT),  # 5,531,784 + 40
    # layers 1, 2, 3, 6 MLA as the hub names them (deepseek_sparse_attention, full_attention, indexed_attention), the
    # one after layer 1 reusing its top-k (the 'shared' on KDA layers 5 and 7 is not read): 2 MLA more, 1 indexer more
    ({"layer_types": ["linear_attention", "deepseek_sparse_attention", "full_attention", "indexed_attention",
                      "linear_attention", "linear_attention", "deepseek_sparse_attention", "linear_attention"],
      "indexer_types": ["full", "full", "shared", "full", "full", "shared", "full", "shared"]},
     SMALL_COUNT + 2 * _MLA_FOR_KDA + 11_872),  # 5,472,992 + 40
    # index_topk_pattern FFSFFSFF over MLA layers 1, 2, 4, 5: layers 2 and 5 share: 2 indexers as before
    ({"layer_types": ["linear_attention", "full_attention", "full_attention"] * 2 + ["linear_attention"] * 2,
      "index_topk_pattern": "FFSFFSFF"}, SMALL_COUNT + 2 * _MLA_FOR_KDA),  # 5,461,120 + 40
    # every layer MLA, an indexer on every second from layer 0 (index_topk_freq 2, index_skip_topk_offset 1)
    ({"layer_types": ["full_attention"] * 8, "index_topk_freq": 2, "index_skip_topk_offset": 1},
     SMALL_COUNT + 6 * _MLA_FOR_KDA + 2 * 11_872),  # 5,343,536 + 40
    # the checkpoint's linear_attn_config wins over linear_*: 2 heads of 48, conv 3: q, k, v 3 x 256 x 96 = 73,728;
    #   conv 288 x 3 = 864; dt_bias 96; A_log 2; f_a, g_a 24,576; f_b, g_b 9216; beta 512; o_norm 48; o 24,576
    ({"linear_attn_config": {"num_heads": 2, "head_dim": 48, "short_conv_kernel_size": 3}},
     SMALL_COUNT + 6 * (133_618 - 158_372)),  # 5,383,260 + 40
    ({"n_shared_experts": 2}, SMALL_COUNT + 5 * 49_152),  # 5,777,544 + 40
    # pools of one token, no tail: the position bias 1 x 16
    ({"index_kpool": 1, "index_kpool_always_select_tail": False}, SMALL_COUNT - 2 * 3 * 16),  # 5,531,688 + 40
    ({"mlp_layer_types": ["sparse", "dense", "sparse", "dense", "sparse", "sparse", "sparse", "dense"]},
     SMALL_COUNT),  # 5,531,784 + 40
])
def test_glm5_next_layer_keys_match_transformers(change, expected):
    cfg = {"model_type": "glm5_next", "tie_word_embeddings": False, "text_config": {**SMALL, **change}}
    assert lr.load_model(cfg).params_total == expected
    tied = lr.load_model({**cfg, "tie_word_embeddings": True})  # the wrapper's setting: one 1000 x 256 table
    assert tied.params_total == expected - 256_000


def test_glm5_next_tail_and_shared_layers_in_the_spec():
    shared = lr.load_model({"model_type": "glm5_next", "text_config": {
        **SMALL, "layer_types": ["linear_attention"] * 2 + ["full_attention"] * 2 + ["linear_attention"] * 4,
        "indexer_types": ["full", "full", "full", "shared"] + ["full"] * 4}})
    a, b = (g.attention for g in shared.layer_groups if g.attention.kind == "mla")
    # the shared layer attends to the same 64 + 3 keys, with no indexer of its own (no weights, no pooled cache)
    assert (a.index_n_heads, b.index_n_heads, a.index_keys, b.index_keys) == (2, 0, 67, 67)
    assert (a.compressed_elements_per_token(), b.compressed_elements_per_token()) == (16 / 4, 0)
    assert any("1 of 2 MLA layers reuse" in s for s in shared.assumptions)
    no_tail = lr.load_model({"model_type": "glm5_next", "text_config": {**SMALL,
                                                                         "index_kpool_always_select_tail": False}})
    assert next(g for g in no_tail.layer_groups if g.attention.kind == "mla").attention.index_keys == 64


@pytest.mark.parametrize("change, error", [
    ({"mhc": False}, "mhc=false"),
    ({"index_kpool_compress": False}, "index_kpool_compress=false"),
    ({"attention_bias": True}, "attention_bias=true"),
    # Kimi-Linear's 1-based lists: layers 4, 8, ... would not be the MLA layers transformers builds
    ({"linear_attn_config": {**RAW["text_config"]["linear_attn_config"],
                             "full_attn_layers": list(range(4, 45, 4))}}, "full_attn_layers differs"),
    ({"linear_attn_config": {**RAW["text_config"]["linear_attn_config"], "kda_layers": list(range(34))}},
     "kda_layers differs"),
    ({"linear_attn_config": {"use_full_rank_gate": True}}, "use_full_rank_gate is set"),
    ({"first_k_dense_replace": 1}, r"first_k_dense_replace \(1\) differs"),
    ({"moe_layer_freq": 2}, r"moe_layer_freq \(2\) differs"),
])
def test_glm5_next_refuses_what_transformers_would_not_build(change, error):
    with pytest.raises(UnsupportedArchitectureError, match=error):
        lr.load_model(text(**change))


@pytest.mark.parametrize("change, error", [
    ({"qk_rope_head_dim": 64}, "qk_rope_head_dim must be 0"),
    ({"num_key_value_heads": 8}, "must equal num_attention_heads"),
    ({"index_topk": 2050}, r"index_topk \(2050\) must be divisible by index_kpool \(4\)"),
    ({"index_kpool": 0}, "index_kpool must be positive"),
    # MLA layer 7 after KDA layer 6: no top-k handed on (a 'shared' KDA layer, as 4, is not read)
    ({"indexer_types": ["full"] * 4 + ["shared"] + ["full"] * 2 + ["shared"] + ["full"] * 37},
     r"indexer_types\[7\] is 'shared' but layer 6 is not an MLA layer"),
    ({"indexer_types": ["full"] * 44 + ["half"]}, "indexer_types must be 'full' or 'shared'"),
    ({"layer_types": ["sliding_attention"] * 45}, "layer_types entry 'sliding_attention' is not one of"),
    ({"mlp_layer_types": ["moe"] * 45}, "mlp_layer_types entry 'moe' is not one of"),
    ({"linear_attn_config": {"full_attn_layers": [3, 99]}}, "full_attn_layers must list layer indices from 0 to 44"),
    ({"linear_attn_config": {"num_heads": -1}}, "linear_attn_config.num_heads must be positive"),
    ({"q_lora_rank": None}, "the config has no q_lora_rank"),  # null, not absent (absent: the class default)
    ({"hidden_size": "4096"}, "hidden_size must be an integer"),
    ({"index_kpool": math.nan}, "index_kpool must be an integer"),
    ({"index_topk": 10**30}, "index_topk = .* exceeds the physical bound"),
    ({"hc_mult": -4}, "hc_mult must be positive"),
    ({"index_n_heads": None}, "the config has no index_n_heads"),
    ({"layer_types": ["linear_attention"] * 44}, r"layer_types must list one entry per layer \(45\)"),
    ({"index_kpool_always_select_tail": "yes"}, "index_kpool_always_select_tail must be true or false"),
    ({"linear_attn_config": [64]}, "linear_attn_config must be an object"),
])
def test_glm5_next_malformed_configs_name_the_key(change, error):
    with pytest.raises(ModelConfigError, match=error) as e:
        lr.load_model(text(**change))
    assert "\n" not in str(e.value)


_HOSTILE = ["x", "", -1, -4096, math.nan, math.inf, 10**30, 2**63, None, [4], [], {"v": 4}, True, 1.5]
_KEYS = ("hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads", "num_key_value_heads", "q_lora_rank",
         "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "index_n_heads", "index_head_dim",
         "index_topk", "index_kpool", "index_kpool_compress", "index_kpool_always_select_tail", "n_routed_experts",
         "num_experts_per_tok", "moe_intermediate_size", "intermediate_size", "n_shared_experts", "hc_mult", "mhc",
         "first_k_dense_replace", "moe_layer_freq", "linear_attn_config", "layer_types", "mlp_layer_types",
         "indexer_types", "index_topk_pattern", "index_topk_freq", "index_skip_topk_offset", "linear_num_heads",
         "attention_bias", "tie_word_embeddings", "max_position_embeddings", "mamba_ssm_cache_dtype")


def _behaves(cfg) -> str | None:
    """None when the config loads to finite, non-negative counts or raises a one-line RooflineError."""
    try:
        m = lr.load_model(cfg)
    except RooflineError as e:
        return None if str(e) and "\n" not in str(e) else f"message {str(e)[:80]!r}"
    except Exception as e:  # noqa: BLE001 - what the test looks for
        return f"{type(e).__name__}: {str(e)[:120]}"
    values = (m.params_total, m.params_active, kv_bytes_per_token(m), state_bytes_per_sequence(m, "bf16"))
    return None if all(math.isfinite(v) and v >= 0 for v in values) and m.params_total > 0 else f"values {values}"


@pytest.mark.parametrize("key", _KEYS)
def test_glm5_next_hostile_values_raise_the_projects_error(key):
    for value in _HOSTILE:
        assert _behaves(text(**{key: value})) is None, (key, value)


@pytest.mark.parametrize("key", ["num_heads", "head_dim", "short_conv_kernel_size", "full_attn_layers", "kda_layers",
                                 "use_full_rank_gate", "gate_lower_bound"])
def test_glm5_next_hostile_linear_attn_config_values_raise_the_projects_error(key):
    for value in _HOSTILE:
        cfg = copy.deepcopy(RAW)
        cfg["text_config"]["linear_attn_config"][key] = value
        assert _behaves(cfg) is None, (key, value)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(sorted(set(RAW["text_config"]) | set(_KEYS))),
                          st.one_of(st.sampled_from(_HOSTILE), st.integers(-10, 5000),
                                    st.lists(st.sampled_from(["linear_attention", "full_attention", "dense", "sparse",
                                                              "full", "shared", 0, 3, 44]), max_size=46))),
                min_size=1, max_size=3))
def test_glm5_next_mutated_fixture_loads_or_raises_the_projects_error(changes):
    cfg = copy.deepcopy(RAW)
    for key, value in changes:
        cfg["text_config"][key] = value
    assert _behaves(cfg) is None
