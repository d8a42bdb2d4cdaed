"""Architectures beyond the shipped configs: real configs under tests/fixtures/configs/ and tiny hand-made ones.

Every expected parameter count is hand arithmetic in the comment beside it; the relation to the published figure
is stated (and checked where the published figure is precise). Fixture sources:

- llama4_scout.json: meta-llama/Llama-4-Scout-17B-16E config.json text values as quoted in vLLM issue "Llama4 always
  go OOM when using LLama4ForCausalLM" (a text-only Scout copy: hidden 5120, intermediate 8192 / 16384, moe_layers
  0..47, no_rope_layers [1,1,1,0]x12) and vLLM's test _text_config (heads 40, kv 8, 16 experts, top-1, vocab 202048,
  max_position_embeddings 10,485,760); vision_config from the same test and TensorRT-LLM's Maverick copy.
- llama4_maverick.json: TensorRT-LLM tests/unittest/_torch/modeling/test_modeling_llama_min_latency.py
  LLAMA_4_MAVERICK_TWO_LAYER_CONFIG ("Llama4 Maverick config but with only 2 layers", restored to its 48 layers and
  without the no_rope_layer_interval the test added); 128 experts, interleave_moe_layer_step 2.
- ernie4_5_21b_a3b.json: transformers Ernie4_5_MoeConfig defaults (documented checkpoint baidu/ERNIE-4.5-21B-A3B-PT).
- ernie4_5_300b_a47b.json: the ERNIE-4.5-300B-A47B config as copied in Ascend MindIE's atb_llm test
  (test_router_ernie_moe.py FAKE_CONFIG_DICT: hidden 8192, 54 layers, 64 experts top-8, MoE layers 3..53).
- glm45_air.json: zai-org/GLM-4.5-Air config.json as printed (Glm4MoeConfig) in ms-swift's model documentation.
- dbrx_base.json: databricks/dbrx-base config.json (d_model 6144, 40 layers, 48 heads, kv_n_heads 8, 16 experts
  top-4 of ffn_hidden_size 10752, vocab 100352). mpt_7b.json: mosaicml/mpt-7b config.json. command_r_v01.json:
  CohereForAI/c4ai-command-r-v01 config.json. bloom_560m.json, gpt_neo_125m.json, codegen_350m_mono.json,
  santacoder.json: bigscience/bloom-560m, EleutherAI/gpt-neo-125m, Salesforce/codegen-350M-mono,
  bigcode/gpt_bigcode-santacoder config.json (the keys the reader uses).
"""

from pathlib import Path

import pytest

from llm_roofline.errors import ModelConfigError, UnsupportedArchitectureError
from llm_roofline.model.hf import load_model

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"


def fixture(name: str):
    return load_model(FIX / f"{name}.json")


# ------------------------------------------------------------------------------ Llama-4
def test_llama4_scout_text_tower():
    m = fixture("llama4_scout")
    # per layer: attn q 5120·5120 + k,v 2·5120·1024 + o 5120·5120 = 62,914,560; router 5120·16 = 81,920;
    # experts 16·3·5120·8192 = 2,013,265,920; shared expert 3·5120·8192 = 125,829,120; norms 2·5120
    # -> 2,202,101,760 · 48 = 105,700,884,480; embed + untied head 2·202048·5120 = 2,068,971,520; final norm 5120
    assert m.params_total == 107_769_861_120
    # Published "109B total" (model card) counts the vision tower too: 107.77B + the ViT's ~0.81B of matrices
    # (34·(4·1408² + 2·1408·5632) = 808,845,312) + projector = 108.6B, which the card rounds to 109B.
    assert m.params_total + 808_845_312 == pytest.approx(109e9, rel=0.005)
    # active: attn 62,914,560 + router 81,920 + 1 expert 125,829,120 + shared 125,829,120 + norms 10,240
    #   = 314,664,960 · 48 = 15,103,918,080 + 2,068,971,520 + 5,120 = 17,172,894,720 (card: "17B active")
    assert m.params_active == 17_172_894_720
    # chunked attention on the 36 RoPE layers (no_rope_layers 1), read as a window of 8192; 12 NoPE global layers
    assert [(g.name, g.count, g.attention.sliding_window, g.attention.rope) for g in m.layer_groups] == \
        [("sliding.moe", 36, 8192, True), ("full.moe", 12, None, False)]
    assert any("attention_chunk_size" in a and "upper bound" in a for a in m.assumptions)
    assert any("vision_config not counted" in a and "0.81B" in a for a in m.assumptions)
    assert not m.tie_embeddings  # top-level tie_word_embeddings false applies to the text tower


def test_llama4_maverick_interleaved_moe():
    m = fixture("llama4_maverick")
    # MoE layers (1, 3, ..., 47: 24): attn 62,914,560 + router 5120·128 = 655,360 + experts 128·3·5120·8192 =
    #   16,106,127,360 + shared 125,829,120 + norms 10,240 = 16,295,536,640 · 24 = 391,092,879,360
    # dense layers (24): attn 62,914,560 + mlp 3·5120·16384 = 251,658,240 + norms 10,240 = 314,583,040 · 24
    #   = 7,549,992,960; embed + head 2,068,971,520; final norm 5,120
    assert m.params_total == 400_711_848_960  # published: "400B total" / Hub 401.6B with the vision tower
    assert sum(g.count for g in m.layer_groups if g.ffn.kind == "moe") == 24
    assert {g.ffn.d_ff for g in m.layer_groups if g.ffn.kind == "dense"} == {16384}  # intermediate_size_mlp
    moe = next(g for g in m.layer_groups if g.ffn.kind == "moe").ffn
    assert (moe.n_experts, moe.top_k, moe.d_expert, moe.d_shared) == (128, 1, 8192, 8192)


# ------------------------------------------------------------------------------ ERNIE-4.5-MoE
def test_ernie45_21b_a3b():
    m = fixture("ernie4_5_21b_a3b")
    # attn: q 2560·2560 + k,v 2·2560·512 + o 2560·2560 = 15,728,640; norms 2·2560 = 5,120
    # layer 0 dense: + mlp 3·2560·12288 = 94,371,840 -> 110,105,600
    # layers 1..27 MoE: + router 2560·64 + 64 (e_score_correction_bias) = 163,904; experts 64·3·2560·1536 =
    #   754,974,720; 2 shared of 1536: 3·2560·3072 = 23,592,960 -> 794,465,344 · 27 = 21,450,564,288
    # tied embedding 103424·2560 = 264,765,440; final norm 2,560
    assert m.params_total == 21_825_437_888  # published "21B total" (the Hub shows 21.8B)
    assert [(g.name, g.count) for g in m.layer_groups] == [("dense", 1), ("moe", 27)]
    # active: 27·(15,728,640 + 163,904 + 6·11,796,480 + 23,592,960 + 5,120) + 110,105,600 + 264,765,440 + 2,560
    assert m.params_active == 3_352_150_208  # published "3B active"


def test_ernie45_300b_a47b():
    m = fixture("ernie4_5_300b_a47b")
    # attn 8192·8192·2 + 2·8192·1024 = 150,994,944; norms 16,384
    # layers 0..2 dense: + 3·8192·28672 = 704,643,072 -> 855,654,400 · 3 = 2,566,963,200
    # layers 3..53 MoE: + router 8192·64 + 64 = 524,352 + experts 64·3·8192·3584 = 5,637,144,576, no shared
    #   -> 5,788,680,256 · 51 = 295,222,693,056; tied embedding 103424·8192 = 847,249,408; final norm 8,192
    assert m.params_total == 298_636_913_856
    assert m.params_total == pytest.approx(300e9, rel=0.005)  # published "300B total"
    assert m.params_active == pytest.approx(47e9, rel=0.005)  # published "47B active"


def test_glm45_air():
    m = fixture("glm45_air")
    # attn: q 4096·12288 + 12288 (bias) + k,v 2·(4096·1024 + 1024) + o 12288·4096 (no bias) = 109,066,240
    # layer 0 dense: + 3·4096·10944 = 134,479,872 + norms 8,192 -> 243,554,304
    # layers 1..45: + router 4096·128 + 128 = 524,416 + experts 128·3·4096·1408 = 2,214,592,512
    #   + 1 shared 3·4096·1408 = 17,301,504 + norms 8,192 -> 2,341,492,864 · 45 = 105,367,178,880
    # embed + head 2·151552·4096 = 1,241,513,984; final norm 4,096; the MTP layer (num_nextn_predict_layers) is not
    assert m.params_total == 106_852_251_264  # published "106B total" (GLM-4.5 release; the Hub adds the MTP layer)
    # published "12B active": the active count without the input embedding and the LM head (2·151552·4096) is 12.18B
    assert 12e9 <= m.params_active - 2 * 151552 * 4096 < 12.5e9
    assert m.layer_groups[0].attention.qkv_bias and not m.layer_groups[0].attention.o_bias


# ------------------------------------------------------------------------------ key names and implicit widths
def test_dbrx_nested_attn_and_ffn_config():
    m = fixture("dbrx_base")
    # attn Wqkv 6144·(6144 + 2·1024) + out 6144·6144 = 88,080,384; router 6144·16 = 98,304;
    # experts 16·3·6144·10752 = 3,170,893,824; 2 bias-free LayerNorms 2·6144 -> 3,259,084,800 · 40
    # = 130,363,392,000 + embed + head 2·100352·6144 = 1,233,125,376 + final 6,144
    assert m.params_total == 131_596_523_520  # published "132B total parameters"
    assert m.params_active == pytest.approx(36e9, rel=0.015)  # published "36B active" (36.47B: 4 of 16 experts)
    assert m.layer_groups[0].attention.n_kv_heads == 8  # attn_config.kv_n_heads


def test_mpt_expansion_ratio_alibi_and_bias_free_norms():
    m = fixture("mpt_7b")
    # per layer: Wqkv + out 4·4096² = 67,108,864; up/down 2·4096·16384 = 134,217,728; norms 2·4096
    # -> 201,334,784 · 32 = 6,442,713,088 + tied embedding 50432·4096 = 206,569,472 + final 4,096
    assert m.params_total == 6_649_286_656  # model card n_parameters "6.7B"
    assert not m.layer_groups[0].attention.rope  # ALiBi


def test_cohere_one_norm_parallel_block():
    m = fixture("command_r_v01")
    g = m.layer_groups[0]
    assert (g.parallel_block, g.norms) == (True, 1)
    # 40·(4·8192² + 3·8192·22528 + 8192) = 32,883,671,040 + tied 256000·8192 = 2,097,152,000 + final 8,192
    assert m.params_total == 34_980_831_232  # published "35 billion parameters"


@pytest.mark.parametrize("name, expected", [
    # wte 250880·1024 + 24·(2 LN 4096 + qkv 1024·3072+3072 + dense 1024²+1024 + 1024·4096+4096 + 4096·1024+1024)
    #   + ln_f 2048 = 256,901,120 + 302,309,376 + 2,048; the Hub's 559,214,592 adds the embedding LayerNorm (2,048)
    ("bloom_560m", 559_214_592 - 2_048),
    # wte 50257·768 + wpe 2048·768 + 12·(LN 3072 + q,k,v 3·768² + out 768²+768 + 768·3072+3072 + 3072·768+768)
    #   + ln_f 1536 = 38,597,376 + 1,572,864 + 85,026,816 + 1,536 (= the model card's 125M)
    ("gpt_neo_125m", 125_198_592),
    # 20·(ln 2048 + qkv 1024·3072 + out 1024² + 1024·4096+4096 + 4096·1024+1024) = 251,801,600
    #   + wte 51200·1024 + lm_head 51200·1024 + 51200 (bias) + ln_f 2048
    ("codegen_350m_mono", 356_712_448),
    # 24·(LN 8192 + c_attn 2048·2304+2304 + c_proj 2048²+2048 + 2048·8192+8192 + 8192·2048+2048) = 1,019,762,688
    #   + wte 49280·2048 + wpe 2048·2048 + ln_f 4096 (model card: 1.1B)
    ("santacoder", 1_124_886_528),
])
def test_gpt_style_models_with_implicit_4x_mlp(name, expected):
    m = fixture(name)
    assert m.params_total == expected
    assert m.layer_groups[0].ffn.d_ff == 4 * m.d_model and not m.layer_groups[0].ffn.gated


def test_gpt_neo_local_layers_and_santacoder_multi_query():
    neo = fixture("gpt_neo_125m")  # attention_types [[["global", "local"], 6]], window_size 256
    assert [(g.name, g.count, g.attention.sliding_window) for g in neo.layer_groups] == \
        [("full", 6, None), ("sliding", 6, 256)]
    assert fixture("santacoder").attention_kind == "mqa"


# ------------------------------------------------------------------------------ tiny hand-made configs
def tiny(**over):
    cfg = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 100,
           "max_position_embeddings": 512, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    cfg.update(over)
    return {k: v for k, v in cfg.items() if v is not None}


# Llama block: attn q 64·64 + k,v 2·64·32 + o 64·64 = 12,288; gated MLP 3·64·128 = 24,576; norms 128 -> 36,992
LLAMA_TINY = 2 * 36_992 + 2 * 100 * 64 + 64  # 86,848


@pytest.mark.parametrize("over, gated, expected", [
    ({}, True, LLAMA_TINY),
    # Gemma: gate_proj + up_proj with gelu_pytorch_tanh is gated whatever the activation name says
    ({"model_type": "gemma", "hidden_activation": "gelu_pytorch_tanh"}, True, LLAMA_TINY),
    # BitNet: relu² with gate_proj (gated); 4 norms per block (+2·64 per layer)
    ({"model_type": "bitnet", "hidden_act": "relu2"}, True, LLAMA_TINY + 2 * 2 * 64),
    # Nemotron: up_proj -> relu² -> down_proj (2 matrices, 2·64·128 = 16,384) and LayerNorm1P with bias:
    # 2·(12,288 + 16,384 + 2·128) + 12,800 + 128
    ({"model_type": "nemotron", "hidden_act": "relu2"}, False, 2 * (12_288 + 16_384 + 256) + 12_800 + 128),
    # StarCoder2: LayerNorm, biases everywhere, plain MLP: qkv 64·128+128 + o 64·64+64 + 64·128+128 + 128·64+64
    #   + norms 2·128 = 29,312 per layer; 2·29,312 + untied 12,800 + final 128
    ({"model_type": "starcoder2", "norm_type": "layer_norm", "use_bias": True, "hidden_act": "gelu_pytorch_tanh"},
     False, 2 * 29_312 + 12_800 + 128),
])
def test_gating_is_decided_per_architecture(over, gated, expected):
    m = load_model(tiny(**over))
    assert m.layer_groups[0].ffn.gated is gated
    assert m.params_total == expected


def test_xglm_attention_heads_key():
    cfg = {"model_type": "xglm", "d_model": 64, "num_layers": 2, "attention_heads": 4, "ffn_dim": 128,
           "vocab_size": 100, "max_position_embeddings": 2048}
    m = load_model(cfg)
    # MHA with biases: qkv 64·192+192 + o 64·64+64 + fc1 64·128+128 + fc2 128·64+64 + 2 LN 256 = 33,472 per layer;
    # sinusoidal positions (no weights), tied embedding 6,400, final LN 128
    assert m.params_total == 2 * 33_472 + 6_400 + 128
    assert m.layer_groups[0].attention.n_heads == 4


def test_hunyuan_moe_topk_and_shared_mlp():
    m = load_model(tiny(model_type="hunyuan_v1_moe", num_experts=4, moe_topk=[2, 2]))
    f = m.layer_groups[0].ffn
    # experts and the shared MLP are intermediate_size wide; moe_topk given per layer, all equal
    assert (f.n_experts, f.top_k, f.d_expert, f.d_shared) == (4, 2, 128, 128)
    assert m.layer_groups[0].attention.qk_norm


def test_per_layer_lists():
    # moe_layer_freq as a 0/1 list (MiniMax-M3 / MiMo-V2-Flash style): layer 0 dense, layers 1-3 MoE
    m = load_model(tiny(num_hidden_layers=4, num_local_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                        moe_layer_freq=[0, 1, 1, 1]))
    assert [(g.name, g.count) for g in m.layer_groups] == [("dense", 1), ("moe", 3)]
    # a per-layer intermediate_size list: one group per width
    m = load_model(tiny(num_hidden_layers=3, intermediate_size=[128, 256, 128]))
    assert [(g.count, g.ffn.d_ff) for g in m.layer_groups] == [(2, 128), (1, 256)]
    with pytest.raises(ModelConfigError, match="moe_layer_freq"):
        load_model(tiny(num_local_experts=4, num_experts_per_tok=2, moe_layer_freq=[0, 1, 1]))


def test_multimodal_wrapper_tie_applies_to_the_text_tower():
    text = {k: v for k, v in tiny(model_type="qwen3_vl_text").items() if k != "tie_word_embeddings"}
    wrapper = {"model_type": "qwen3_vl", "tie_word_embeddings": False, "text_config": text,
               "vision_config": {"depth": 2, "hidden_size": 32, "intermediate_size": 64}}
    m = load_model(wrapper)
    assert not m.tie_embeddings
    # the wrapper owns the LM head: its setting wins over a text_config that says otherwise, and that is noted
    both = load_model({**wrapper, "text_config": {**text, "tie_word_embeddings": True}})
    assert not both.tie_embeddings and any("wrapper" in a for a in both.assumptions)
    # Qwen3 block + q/k norms 2·16: 2·(36,992 + 32) + untied 12,800 + 64
    assert m.params_total == 2 * 37_024 + 12_800 + 64
    # vision tower: 2·(4·32² + 2·32·64) = 16,384 parameters in its matrices, named and not counted
    assert any("vision_config not counted" in a and "2 layers of width 32" in a for a in m.assumptions)


def test_unknown_model_type_understood_parses_with_a_note():
    m = load_model(tiny(model_type="brand_new_moe", num_experts=4, top_k_experts=2, moe_intermediate_size=32))
    f = m.layer_groups[0].ffn
    assert (f.kind, f.n_experts, f.top_k) == ("moe", 4, 2)  # gemma4's top_k_experts key
    assert any("brand_new_moe" in a for a in m.assumptions)


def test_unread_structural_keys_are_named_or_refused():
    with pytest.raises(UnsupportedArchitectureError, match="expert_layer_period"):
        load_model(tiny(model_type="brand_new_moe", expert_layer_period=2))
    m = load_model(tiny(expert_layer_period=2))  # a known model_type: noted, named
    assert any("expert_layer_period" in a for a in m.assumptions)


# ------------------------------------------------------------------------------ refused, with a reason
@pytest.mark.parametrize("cfg, words", [
    (tiny(model_type="some_ssm", mamba_d_state=16), ["mamba_d_state"]),
    (tiny(model_type="deepseek_v3", index_topk=2048, index_n_heads=64), ["index_topk", "deepseek_v3"]),
    # DeepSeek-V4-Flash's keys under another model_type (deepseek_v4 itself is read: test_deepseek_v4.py) (its hub config: compress_ratios per layer)
    (tiny(model_type="some_v4_fork", compress_ratios=[0, 0, 4, 128]), ["compress_ratios"]),
    # MiniMax-M3's block-sparse keys (minimax_m3_vl_text itself is read: test_model_current.py) under another type
    (tiny(model_type="some_m3_fork", index_topk_blocks=16, index_block_size=128), ["index_topk_blocks",
                                                                                 "block-sparse"]),
    (tiny(model_type="deci", block_configs=[{"attention": {"replace_with_linear": True}, "ffn": {"ffn_mult": 2.0}}]),
     ["block_configs[0].attention.replace_with_linear"]),
    (tiny(model_type="jetmoe"), ["jetmoe"]),
])
def test_unrepresentable_architectures_are_refused_naming_key_and_architecture(cfg, words):
    with pytest.raises(UnsupportedArchitectureError) as e:
        load_model(cfg)
    message = str(e.value)
    assert "\n" not in message
    for w in words:
        assert w in message


def test_nemotron_nas_block_configs_per_layer_heads_and_widths():
    blocks = [{"attention": {"n_heads_in_group": 2, "no_op": False}, "ffn": {"ffn_mult": 1.0}},
              {"attention": {"n_heads_in_group": 4, "no_op": False}, "ffn": {"ffn_mult": 2.625}}]
    cfg = tiny(model_type="nemotron-nas", hidden_size=768, num_attention_heads=4, head_dim=None,
               num_key_value_heads=None, intermediate_size=None, block_configs=blocks)
    m = load_model(cfg)
    # intermediate = int(2·ffn_mult·768/3) rounded up to a multiple of 256: 512 -> 512; 1344 -> 1536
    # kv heads = 4 heads / n_heads_in_group: 2, then 1
    assert [(g.count, g.attention.n_kv_heads, g.ffn.d_ff) for g in m.layer_groups] == [(1, 2, 512), (1, 1, 1536)]
