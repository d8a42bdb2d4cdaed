"""Hugging Face config -> ModelSpec: published parameter counts, KV bytes by hand, fallbacks, errors.

Published counts: model_configs/PUBLISHED.md (each model's SOURCE.md has the exact wording and URL).
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from llm_roofline import cli
from llm_roofline.errors import ModelConfigError, UnsupportedArchitectureError
from llm_roofline.model.hf import list_models, load_model, spec_from_config
from llm_roofline.memory import kv_bytes_per_token

REPO = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------ published parameter counts
# id -> (published total, source). Within 1%.
PUBLISHED_TOTAL = {
    "meta-llama/Llama-2-7b-hf": (6.74e9, "Hub count 6.74B, huggingface.co/meta-llama/Llama-2-7b-hf"),
    "meta-llama/Llama-2-13b-hf": (13.0e9, "Hub count 13,015,864,320"),
    "meta-llama/Llama-2-70b-hf": (69.0e9, "Hub count 68,976,648,192 (paper's '70B' is nominal)"),
    "meta-llama/Llama-3.1-8B": (8.03e9, "Hub count 8.03B, huggingface.co/meta-llama/Llama-3.1-8B"),
    "meta-llama/Llama-3.1-70B": (70.6e9, "Hub count 70.6B"),
    "meta-llama/Llama-3.1-405B": (405e9, "Llama 3 paper arXiv 2407.21783, '405B'"),
    "meta-llama/Llama-3.2-1B": (1.23e9, "llama-models MODEL_CARD.md '1B (1.23B)'"),
    "meta-llama/Llama-3.2-3B": (3.21e9, "llama-models MODEL_CARD.md '3B (3.21B)'"),
    "mistralai/Mistral-7B-v0.1": (7.24e9, "Hub count 7,241,732,096"),
    "mistralai/Mixtral-8x7B-v0.1": (46.7e9, "mistral.ai/news/mixtral-of-experts '46.7B total'"),
    "mistralai/Mixtral-8x22B-v0.1": (141e9, "mistral.ai/news/mixtral-8x22b '141B'"),
    "Qwen/Qwen2.5-7B": (7.61e9, "model card 'Number of Parameters: 7.61B'"),
    "Qwen/Qwen2.5-72B": (72.7e9, "model card 72.7B"),
    "Qwen/Qwen3-8B": (8.2e9, "model card 8.2B"),
    "Qwen/Qwen3-32B": (32.8e9, "model card 32.8B"),
    "Qwen/Qwen3-30B-A3B": (30.5e9, "model card '30.5B in total'"),
    "google/gemma-2-9b": (9.24e9, "Gemma 2 paper arXiv 2408.00118 Table 2: 917,504,000 + 8,324,201,984"),
    "google/gemma-2-27b": (27.2e9, "Gemma 2 paper Table 2: 1,179,648,000 + 26,047,480,320"),
    # Gemma 3 report arXiv 2503.19786 Table 1: 417M vision + 1,416M embedding + 25,600M non-embedding = 27.4B.
    # Only the text decoder is modelled (text_config): 1,416M + 25,600M.
    "google/gemma-3-27b-it": (1416e6 + 25600e6, "Gemma 3 report Table 1, text decoder only"),
    "deepseek-ai/DeepSeek-V3": (671e9, "model card '671B total'; the hub's 685B adds the 14B MTP module"),
    "microsoft/Phi-3-mini-4k-instruct": (3.82e9, "Hub count 3,821,079,552"),
    # falcon-7b: model card says nominal '7B'; the Hub's 7.22B stores the tied lm_head a second time, so the
    # unique count is 7.22B - vocab·d = 7.22e9 - 65024·4544 (= 295,469,056).
    "tiiuae/falcon-7b": (7.22e9 - 65024 * 4544, "Hub 7.22B minus the duplicated tied lm_head"),
    "openai-community/gpt2": (124e6, "model card '124M parameters'"),
    "facebook/opt-6.7b": (6.7e9, "OPT paper arXiv 2205.01068 Table 1 '6.7B'"),
    "openai/gpt-oss-20b": (20.91e9, "gpt-oss model card arXiv 2508.10925 Table 1: 20.91B"),
    "openai/gpt-oss-120b": (116.83e9, "gpt-oss model card arXiv 2508.10925 Table 1: 116.83B"),
    # MiniMax-M2 card '230 billion total parameters' is rounded; the hub's safetensors count, 228,703,644,928, less
    # the fp8 checkpoint's scale tensors and routing-bias buffers (13,895,936: SOURCE.md) is the exact figure.
    "MiniMaxAI/MiniMax-M2.5": (228_703_644_928 - 13_895_936, "Hub count less fp8 scales (SOURCE.md)"),
    # Kimi-K2.5: the card's '1T' is rounded; the text model's count from the checkpoint's tensor shapes (SOURCE.md).
    "moonshotai/Kimi-K2.5": (1_026_408_232_448, "checkpoint tensor table, text model"),
}

# id -> (published active, counts the input embedding table?). The vendors differ: Mistral and Qwen count
# every parameter a token touches including the embedding table; DeepSeek and OpenAI leave the input
# embedding (a gather, not a matmul) out but keep the output head.
PUBLISHED_ACTIVE = {
    "mistralai/Mixtral-8x7B-v0.1": (12.9e9, True),  # 'only uses 12.9B parameters per token'
    "mistralai/Mixtral-8x22B-v0.1": (39e9, True),  # '39B active parameters out of 141B'
    # DeepSeek-V3 README_WEIGHTS.md: 'Activation parameters: 36.6B (including 0.9B for the output Head)'
    # (the model card's headline '37B' is that figure rounded).
    "deepseek-ai/DeepSeek-V3": (36.6e9, False),
    "openai/gpt-oss-20b": (3.61e9, False),  # gpt-oss model card Table 1: 3.61B active (embedding excluded)
    "openai/gpt-oss-120b": (5.13e9, False),  # gpt-oss model card Table 1: 5.13B active (embedding excluded)
    "moonshotai/Kimi-K2.5": (32.86e9, True),  # NVIDIA's Kimi K2.5 blog: 'Active parameters 32.86B'
}


def test_every_shipped_config_has_a_published_count():
    assert sorted(PUBLISHED_TOTAL, key=str.lower) == list_models()


@pytest.mark.parametrize("ident", sorted(PUBLISHED_TOTAL))
def test_params_total_within_1pct_of_published(ident):
    published, _source = PUBLISHED_TOTAL[ident]
    assert load_model(ident).params_total == pytest.approx(published, rel=0.01)


@pytest.mark.parametrize("ident", sorted(PUBLISHED_ACTIVE))
def test_params_active_within_1pct_of_published(ident):
    published, with_embedding = PUBLISHED_ACTIVE[ident]
    m = load_model(ident)
    active = m.params_active - (0 if with_embedding else m.vocab_size * m.d_model)
    assert active == pytest.approx(published, rel=0.01)


def test_minimax_m2_counts_by_hand():
    # modeling_minimax_m2.py, per layer: q 3072·6144 = 18,874,368, k and v 3072·1024 = 3,145,728 each, o 6144·3072 =
    # 18,874,368 -> 44,040,192; q_norm / k_norm over all heads' elements 48·128 + 8·128 = 7,168 (not 2·128);
    # 2 norms 6,144; router 256·3072 = 786,432 + its e_score_correction_bias 256; 256 experts of 3·3072·1536 =
    # 14,155,776 -> 3,623,878,656. Per layer 3,668,718,848 · 62 = 227,460,568,576, + embedding and LM head
    # 2·200,064·3072 = 1,229,193,216 + final norm 3072 = 228,689,764,864.
    layer = 44_040_192 + 7_168 + 6_144 + 786_432 + 256 + 256 * 14_155_776
    total = 62 * layer + 2 * 200_064 * 3072 + 3072
    m = load_model("MiniMaxAI/MiniMax-M2.5")
    assert m.params_total == total == 228_689_764_864  # = the hub count less its fp8 scales (SOURCE.md)
    active = 62 * (layer - 248 * 14_155_776) + 2 * 200_064 * 3072 + 3072  # 8 of 256 experts
    assert m.params_active == active == 11_030_553_088
    assert kv_bytes_per_token(m) == 62 * 2 * 8 * 128 * 2  # 253,952 B in bf16: K and V, 8 KV heads of 128


def test_minimax_m2_qk_norm_spans_the_tp_shards():
    # vLLM's MiniMaxText01RMSNormTP.forward_qk: the q (and k) mean square runs over all heads, so under tp each
    # layer all-reduces two fp32 sums per token: 8 B x 16 decode rows = 128 B over 2 chips; none at tp 1, and none
    # for per-head norms (Qwen3). The norm's weights per chip: (48 + 8) / 2 heads x 128 x 2 B = 7,168 B.
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.sharding import Sharding
    m = load_model("MiniMaxAI/MiniMax-M2.5")
    ops = build_ops(m, Phase.decode(16, 1000), Sharding(tp=2))
    reduce = [o for o in ops if o.name == "comm.all_reduce.qk_norm"]
    assert len(reduce) == 1 and float(reduce[0].comm_bytes) == 16 * 8 and reduce[0].group_chips == 2
    norm = next(o for o in ops if o.name == "attn.qk_norm")
    assert float(norm.weight_bytes) == 28 * 128 * 2
    assert not [o for o in build_ops(m, Phase.decode(16, 1000)) if o.name == "comm.all_reduce.qk_norm"]
    qwen = build_ops(load_model("Qwen/Qwen3-8B"), Phase.decode(16, 1000), Sharding(tp=2))
    assert not [o for o in qwen if o.name == "comm.all_reduce.qk_norm"]


def test_minimax_m2_lightning_layers_are_refused_and_mtp_is_named():
    cfg = json.loads((REPO / "model_configs" / "MiniMaxAI" / "MiniMax-M2.5" / "config.json").read_text())
    assert any("num_mtp_modules=3" in a for a in load_model("MiniMaxAI/MiniMax-M2.5").assumptions)
    with pytest.raises(UnsupportedArchitectureError, match="attn_type_list"):
        spec_from_config({**cfg, "attn_type_list": [0] + [1] * 61})
    for bad, said in (([1] * 3, "one entry per layer"), ("abc", "a list of integers"), ([1.5] * 62, "an integer")):
        with pytest.raises(ModelConfigError, match=said):  # a short list was read as if whole
            spec_from_config({**cfg, "attn_type_list": bad})


def test_kimi_k25_by_hand_from_its_tensor_table():
    # Per layer MLA: q_a 1536·7168 + q_b 12288·1536 + kv_a 576·7168 + kv_b 16384·512 + o 7168·8192 = 101,122,048,
    # + q_a / kv_a norms 1536 + 512 and 2 norms 2·7168 -> 101,138,432 (x 61). Layer 0: dense 3·18432·7168 =
    # 396,361,728. Layers 1-60: 385 experts (384 routed + 1 shared) of 3·2048·7168 = 44,040,192, router 384·7168 +
    # its bias 384. Embedding + LM head 2·163840·7168; final norm 7168.
    expert = 3 * 2048 * 7168
    moe = 385 * expert + 384 * 7168 + 384
    total = 61 * 101_138_432 + 396_361_728 + 60 * moe + 2 * 163840 * 7168 + 7168
    m = load_model("moonshotai/Kimi-K2.5")
    assert m.params_total == total == 1_026_408_232_448
    assert m.params_active == total - 60 * 376 * expert == 32_861_500_928  # 8 of 384 routed experts: NVIDIA's 32.86B
    # routed experts in int4, groups of 32, symmetric (no zero points): 4 + 16/32 = 4.5 bits; the checkpoint's
    # packed weights and bf16 scales: 3 x (7168·2048·4/8 + 7168·64·2) B per expert = 24,772,608 B
    fmt = m.weight_format_for("experts", None)
    assert fmt.bits_per_weight(7168) == 4.5 and 3 * 7168 * 2048 * 4.5 / 8 == 24_772_608
    assert fmt.zero_bits == 0
    # MoonViT (vt_* keys): 27 x (4·1152² + 2·1152·4304) = 411,070,464 parameters, named and not counted
    assert any("27 layers of width 1152: about 0.41B" in a for a in m.assumptions)
    assert not any("not one the parser knows" in a for a in m.assumptions)  # text_config model_type kimi_k2


def test_qwen3_moe_active_matches_the_cards_truncated_figure():
    # Model card: '3.3B activated' (two significant figures, embeddings included). By hand:
    # per layer: attn 2048·(32+8)·128 + 4096·2048 + 2·128 = 18,874,624; router 2048·128 = 262,144;
    # 8 experts 8·3·2048·768 = 37,748,736; norms 2·2048 = 4,096 -> 56,889,600 · 48 = 2,730,700,800
    # + embedding and head 2·151936·2048 = 622,329,856 + final norm 2048 = 3,353,032,704.
    # The card's non-embedding total (29.9B) and total (30.5B) match within 0.1%, so '3.3B' is 3.35B truncated.
    m = load_model("Qwen/Qwen3-30B-A3B")
    assert m.params_active == 3_353_032_704
    assert 3.3e9 <= m.params_active < 3.4e9
    assert m.params_total - 2 * 151936 * 2048 == pytest.approx(29.9e9, rel=0.01)  # card: non-embedding 29.9B


def test_gpt2_exact_count():
    # wte 50257·768 + wpe 1024·768 + 12·(ln 2·768 + c_attn 768·2304+2304 + c_proj 768·768+768
    #   + ln 2·768 + c_fc 768·3072+3072 + c_proj 3072·768+768) + ln_f 2·768 = 124,439,808
    assert load_model("openai-community/gpt2").params_total == 124_439_808


def test_deepseek_v3_mtp_module_is_noted_and_not_counted():
    m = load_model("deepseek-ai/DeepSeek-V3")
    assert m.n_layers == 61  # num_hidden_layers; the num_nextn_predict_layers=1 MTP layer is not one of them
    assert any("num_nextn_predict_layers" in a for a in m.assumptions)


# ------------------------------------------------------------------------------ KV bytes per token, by hand
@pytest.mark.parametrize("ident, expected", [
    ("meta-llama/Llama-3.1-8B", 2 * 32 * 8 * 128 * 2),  # K,V · layers · kv heads · head_dim · bytes = 131,072
    ("meta-llama/Llama-3.1-70B", 2 * 80 * 8 * 128 * 2),  # 327,680
    ("meta-llama/Llama-2-7b-hf", 2 * 32 * 32 * 128 * 2),  # 524,288
    ("deepseek-ai/DeepSeek-V3", 61 * (512 + 64) * 2),  # layers · (kv_lora_rank + rope key) · bytes = 70,272
    ("google/gemma-2-9b", 2 * 42 * 8 * 256 * 2),  # own head_dim 256, not 3584/16 = 224: 344,064
    ("tiiuae/falcon-7b", 2 * 32 * 1 * 64 * 2),  # multi_query: one KV head of 4544/71 = 64: 8,192
])
def test_kv_bytes_per_token_bf16(ident, expected):
    assert kv_bytes_per_token(load_model(ident), "bf16") == expected


# ------------------------------------------------------------------------------ architecture details
def test_attention_kinds():
    assert load_model("meta-llama/Llama-2-7b-hf").attention_kind == "mha"
    assert load_model("meta-llama/Llama-3.1-8B").attention_kind == "gqa"
    assert load_model("tiiuae/falcon-7b").attention_kind == "mqa"
    m = load_model("deepseek-ai/DeepSeek-V3")
    a = m.layer_groups[0].attention
    assert (a.kind, a.head_dim, a.v_head_dim, a.n_kv_heads) == ("mla", 128 + 64, 128, 128)


def test_deepseek_v3_dense_then_moe_layers():
    m = load_model("deepseek-ai/DeepSeek-V3")
    dense, moe = m.layer_groups
    assert (dense.name, dense.count, dense.ffn.d_ff) == ("dense", 3, 18432)  # first_k_dense_replace = 3
    assert (moe.name, moe.count) == ("moe", 58)
    # one shared expert of moe_intermediate_size: d_shared = 1 · 2048
    assert (moe.ffn.n_experts, moe.ffn.top_k, moe.ffn.d_expert, moe.ffn.d_shared) == (256, 8, 2048, 2048)


def test_sliding_window_groups():
    mistral = load_model("mistralai/Mistral-7B-v0.1")
    assert [(g.name, g.count, g.attention.sliding_window) for g in mistral.layer_groups] == [("sliding", 32, 4096)]
    gemma2 = load_model("google/gemma-2-9b")  # alternating local/global, 42 layers
    assert [(g.name, g.count, g.attention.sliding_window) for g in gemma2.layer_groups] == \
        [("sliding", 21, 4096), ("full", 21, None)]
    assert all(g.norms == 4 for g in gemma2.layer_groups)
    gemma3 = load_model("google/gemma-3-27b-it")  # 5 local : 1 global over 62 layers -> 10 global
    assert [(g.name, g.count, g.attention.sliding_window) for g in gemma3.layer_groups] == \
        [("sliding", 52, 1024), ("full", 10, None)]
    assert gemma3.layer_groups[0].attention.qk_norm
    oss = load_model("openai/gpt-oss-20b")
    assert [(g.name, g.count, g.attention.sliding_window) for g in oss.layer_groups] == \
        [("sliding.moe", 12, 128), ("full.moe", 12, None)]
    for ident in ("Qwen/Qwen2.5-7B", "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B"):  # use_sliding_window false / none
        assert all(g.attention.sliding_window is None for g in load_model(ident).layer_groups)


def test_family_details():
    qwen2 = load_model("Qwen/Qwen2.5-7B").layer_groups[0].attention
    assert (qwen2.qkv_bias, qwen2.o_bias) == (True, False)
    assert load_model("Qwen/Qwen3-8B").layer_groups[0].attention.head_dim == 128
    gpt2 = load_model("openai-community/gpt2")
    g = gpt2.layer_groups[0]
    assert (gpt2.norm, gpt2.tie_embeddings, gpt2.learned_positions, g.ffn.d_ff, g.ffn.gated, g.ffn.bias) == \
        ("layernorm", True, 1024, 4 * 768, False, True)
    opt = load_model("facebook/opt-6.7b")
    assert (opt.learned_positions, opt.layer_groups[0].ffn.activation) == (2048 + 2, "relu")
    falcon = load_model("tiiuae/falcon-7b")
    g = falcon.layer_groups[0]
    assert (g.parallel_block, g.norms, g.ffn.d_ff, g.ffn.bias, g.attention.qkv_bias) == \
        (True, 1, 4 * 4544, False, False)
    oss = load_model("openai/gpt-oss-20b").layer_groups[0]
    assert (oss.attention.sinks, oss.ffn.router_bias, oss.ffn.bias) == (True, True, True)


def test_quantization_formats():
    ds = load_model("deepseek-ai/DeepSeek-V3")
    # fp8 with weight_block_size [128, 128]: one fp32 scale per 128·128 weights -> 8 + 32/16384 bits
    assert ds.quantization.dtype == "fp8"
    assert ds.quantization.bits_per_weight(7168) == 8 + 32 / (128 * 128)
    assert ds.weight_format_for("embed").dtype == "bf16"
    oss = load_model("openai/gpt-oss-20b")
    assert (oss.quantization.dtype, oss.quantized_families) == ("fp4", ("experts",))
    assert oss.weight_format_for("attn").dtype == "bf16"  # model.layers.*.self_attn is not converted


def test_gptq_and_awq_quantization_config():
    base = _llama_config()
    gptq = load_model({**base, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}})
    assert (gptq.quantization.dtype, gptq.quantization.group_size) == ("int4", 128)
    awq = load_model({**base, "quantization_config": {"quant_method": "awq", "w_bit": 4, "q_group_size": 64}})
    assert (awq.quantization.dtype, awq.quantization.group_size) == ("int4", 64)
    with pytest.raises(ModelConfigError, match="bits"):
        load_model({**base, "quantization_config": {"quant_method": "gptq", "bits": 3, "group_size": 128}})


def test_dtype_decisions():
    assert load_model("meta-llama/Llama-2-7b-hf").weight_dtype == "fp16"  # torch_dtype float16, kept
    g = load_model("google/gemma-2-9b")  # torch_dtype float32 -> served in bf16, noted
    assert g.weight_dtype == "bf16" and any("float32" in a for a in g.assumptions)
    gpt2 = load_model("openai-community/gpt2")  # no torch_dtype at all
    assert gpt2.weight_dtype == "bf16" and any("torch_dtype" in a for a in gpt2.assumptions)


def test_multimodal_reads_text_config_and_says_so():
    m = load_model("google/gemma-3-27b-it")
    assert (m.d_model, m.n_layers, m.vocab_size) == (5376, 62, 262208)  # vocab: Gemma3TextConfig default
    assert any("text_config" in a for a in m.assumptions)


# ------------------------------------------------------------------------------ architectures not shipped
# Configs as published on the hub (the keys the parser reads), counts from the model cards / hub pages.
QWEN15_MOE_A27B = {  # Qwen/Qwen1.5-MoE-A2.7B config.json
    "model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936, "num_experts": 60,
    "num_experts_per_tok": 4, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
    "decoder_sparse_step": 1, "max_position_embeddings": 8192, "sliding_window": 32768, "use_sliding_window": False,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}
DEEPSEEK_V2_LITE = {  # deepseek-ai/DeepSeek-V2-Lite config.json
    "model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944, "num_hidden_layers": 27,
    "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 102400, "q_lora_rank": None,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 64,
    "num_experts_per_tok": 6, "n_shared_experts": 2, "moe_intermediate_size": 1408, "first_k_dense_replace": 1,
    "moe_layer_freq": 1, "max_position_embeddings": 163840, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}
GPTJ_6B = {"model_type": "gptj", "n_embd": 4096, "n_layer": 28, "n_head": 16, "rotary_dim": 64, "vocab_size": 50400,
           "n_positions": 2048, "activation_function": "gelu_new", "tie_word_embeddings": False}
FALCON_40B = {"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128, "num_kv_heads": 8,
              "num_hidden_layers": 60, "new_decoder_architecture": True, "parallel_attn": True, "bias": False,
              "alibi": False, "multi_query": True, "vocab_size": 65024, "torch_dtype": "bfloat16"}
PHI_2 = {"model_type": "phi", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 32,
         "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 51200, "partial_rotary_factor": 0.4,
         "max_position_embeddings": 2048, "hidden_act": "gelu_new", "tie_word_embeddings": False,
         "torch_dtype": "float16"}


def test_qwen2_moe_shared_expert_with_gate():
    m = load_model(QWEN15_MOE_A27B)
    f = m.layer_groups[0].ffn
    assert (f.n_experts, f.top_k, f.d_expert, f.d_shared, f.shared_gate) == (60, 4, 1408, 5632, True)
    assert m.layer_groups[0].attention.qkv_bias  # Qwen2-MoE qkv_bias defaults to true
    # Model card: '14.3B parameters in total and 2.7B activated parameters' (embeddings included)
    assert m.params_total == pytest.approx(14.3e9, rel=0.01)
    assert m.params_active == pytest.approx(2.7e9, rel=0.01)


def test_qwen2_moe_sparse_step_and_mlp_only_layers():
    cfg = {**QWEN15_MOE_A27B, "num_hidden_layers": 4, "decoder_sparse_step": 2, "mlp_only_layers": [3]}
    # layer i is MoE when (i+1) % 2 == 0 and i not in [3]: only layer 1
    assert [(g.name, g.count) for g in load_model(cfg).layer_groups] == [("dense", 3), ("moe", 1)]


def test_deepseek_v2_lite_mla_without_q_lora():
    m = load_model(DEEPSEEK_V2_LITE)
    a = m.layer_groups[0].attention
    assert (a.kind, a.q_lora_rank, a.kv_lora_rank) == ("mla", None, 512)
    assert [(g.name, g.count) for g in m.layer_groups] == [("dense", 1), ("moe", 26)]
    assert m.layer_groups[1].ffn.d_shared == 2 * 1408  # n_shared_experts · moe_intermediate_size
    assert kv_bytes_per_token(m, "bf16") == 27 * (512 + 64) * 2  # 31,104
    # DeepSeek-V2 paper (arXiv 2405.04434): V2-Lite has 15.7B parameters, 2.4B activated per token
    # (input embedding excluded, as for V3: 2.45B, which the paper gives to two figures).
    assert m.params_total == pytest.approx(15.7e9, rel=0.01)
    assert 2.4e9 <= m.params_active - 102400 * 2048 < 2.5e9


def test_gptj_parallel_block_and_lm_head_bias():
    m = load_model(GPTJ_6B)
    g = m.layer_groups[0]
    assert (g.parallel_block, g.norms, g.ffn.d_ff, g.ffn.bias, g.attention.qkv_bias, m.lm_head_bias) == \
        (True, 1, 4 * 4096, True, False, True)
    # per layer: q,k,v,o 4·4096² = 67,108,864; fc_in 4096·16384 + 16384; fc_out 16384·4096 + 4096; ln_1 2·4096
    #   -> 201,355,264 · 28 = 5,637,947,392; wte 50400·4096 = 206,438,400; lm_head 206,438,400 + 50,400;
    #   ln_f 8,192 -> 6,050,882,784 (model card n_parameters 6,053,381,344: within 0.05%)
    assert m.params_total == 6_050_882_784


def test_falcon_new_decoder_architecture():
    m = load_model(FALCON_40B)
    g = m.layer_groups[0]
    assert (g.attention.kind, g.attention.n_kv_heads, g.norms) == ("gqa", 8, 2)  # num_kv_heads, ln_attn + ln_mlp
    # Hub page: 41.8B, which stores the tied lm_head (65024·8192) a second time
    assert m.params_total + 65024 * 8192 == pytest.approx(41.8e9, rel=0.01)


def test_phi2_parallel_block():
    m = load_model(PHI_2)
    g = m.layer_groups[0]
    assert (g.parallel_block, g.norms, g.ffn.gated, m.norm, m.lm_head_bias) == (True, 1, False, "layernorm", True)
    assert m.params_total == pytest.approx(2.78e9, rel=0.01)  # Hub page: 2.78B params (model card: '2.7 billion')


def test_qwen2_use_sliding_window_from_max_window_layers():
    cfg = {**_llama_config(model_type="qwen2", num_hidden_layers=3), "use_sliding_window": True,
           "sliding_window": 4096, "max_window_layers": 1}
    # layers i >= max_window_layers use the window
    assert [(g.name, g.count, g.attention.sliding_window) for g in load_model(cfg).layer_groups] == \
        [("full", 1, None), ("sliding", 2, 4096)]


# ------------------------------------------------------------------------------ loading paths
def test_ids_are_case_insensitive_and_paths_work(tmp_path):
    a = load_model("META-LLAMA/llama-3.1-8b")
    assert a.name == "meta-llama/Llama-3.1-8B"
    d = REPO / "model_configs" / "meta-llama" / "Llama-3.1-8B"
    for x in (d, str(d / "config.json")):
        assert load_model(x).params_total == a.params_total
    assert load_model(a) is a
    raw = json.loads((d / "config.json").read_text())
    assert load_model(raw).params_total == a.params_total


def test_unknown_id_suggests_shipped_ids():
    with pytest.raises(ModelConfigError, match="Llama-3.1-8B"):
        load_model("meta-llama/Llama-3.1-8B-Instruct-nope")


def test_malformed_files(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelConfigError, match="JSON"):
        load_model(tmp_path)
    with pytest.raises(ModelConfigError, match="no config.json"):
        load_model(tmp_path / "..")
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(ModelConfigError, match="object"):
        load_model(tmp_path / "config.json")


# ------------------------------------------------------------------------------ fallbacks and errors
def _llama_config(**over):
    cfg = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8,
           "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 2048,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_act": "silu"}
    cfg.update(over)
    return {k: v for k, v in cfg.items() if v is not None}


def test_absent_kv_heads_and_head_dim_are_assumed_and_recorded():
    m = load_model(_llama_config(num_key_value_heads=None))
    a = m.layer_groups[0].attention
    assert (a.kind, a.n_kv_heads, a.head_dim) == ("mha", 8, 256 // 8)
    assert any("num_key_value_heads" in s for s in m.assumptions)
    assert any("head_dim" in s for s in m.assumptions)


def test_explicit_head_dim_is_used():
    a = load_model(_llama_config(head_dim=64)).layer_groups[0].attention  # not 256/8 = 32
    assert a.head_dim == 64


@pytest.mark.parametrize("over, field", [
    ({"hidden_size": 0}, "hidden_size"),
    ({"hidden_size": -256}, "hidden_size"),
    ({"hidden_size": 256.5}, "hidden_size"),
    ({"num_attention_heads": "8"}, "num_attention_heads"),
    ({"num_hidden_layers": True}, "num_hidden_layers"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),  # 8 heads over 3 KV heads
    ({"hidden_size": 100, "num_attention_heads": 3, "num_key_value_heads": 1}, "hidden_size"),  # no head_dim
    ({"vocab_size": 0}, "vocab_size"),
    ({"layer_types": ["full_attention", "chunked_attention"]}, "attention_chunk_size"),
    ({"layer_types": ["full_attention", "dilated_attention"]}, "dilated_attention"),
    ({"layer_types": ["full_attention"]}, "layer_types"),  # 2 layers
    ({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 8}, "num_experts_per_tok"),
])
def test_bad_configs_raise_model_config_error_naming_the_field(over, field):
    with pytest.raises(ModelConfigError, match=field):
        load_model(_llama_config(**over))


def test_missing_required_dimension_names_it():
    cfg = _llama_config(model_type="my_decoder")
    del cfg["hidden_size"]
    with pytest.raises(ModelConfigError, match="hidden_size"):
        load_model(cfg)


@pytest.mark.parametrize("cfg, field", [
    ({"model_type": "t5", "d_model": 512, "num_layers": 6, "num_heads": 8}, "model_type"),
    ({"model_type": "bart", "is_encoder_decoder": True}, "is_encoder_decoder"),
    ({**_llama_config(model_type="jamba_like"), "layers_block_type": ["mamba", "attention"]}, "layers_block_type"),
    ({**_llama_config(model_type="something"), "ssm_cfg": {"d_state": 16}}, "ssm_cfg"),
    (_llama_config(layer_types=["linear_attention", "full_attention"]), "linear_attention"),
])
def test_unsupported_architectures(cfg, field):
    with pytest.raises(UnsupportedArchitectureError, match=field):
        load_model(cfg)


@pytest.mark.parametrize("model_type, words", [
    # transformers 5.24's bidirectional encoders and towers, whose keys are a decoder's (hidden_size, layers, heads,
    # intermediate_size): each read as a causal decoder before
    ("embedding_gemma2", "encoder-only"), ("neomme", "encoder-only"), ("eurobert", "encoder-only"),
    ("clip_text_model", "encoder-only"), ("siglip_text_model", "encoder-only"), ("voxtral_encoder", "encoder-only"),
    # decoders cross-attending to an encoder in every layer, and a diffusion LM
    ("t5gemma2_decoder", "encoder-decoder"), ("musicgen_decoder", "encoder-decoder"),
    ("diffusion_gemma_text", "diffusion language model"),
])
def test_non_causal_and_cross_attention_types_refused(model_type, words):
    with pytest.raises(UnsupportedArchitectureError, match=words):
        load_model(_llama_config(model_type=model_type))


def test_unknown_type_with_kv_groups_under_its_own_names_is_refused():
    # THUDM/chatglm3-6b's keys under a model_type the table does not know (a fork, a renamed copy): its KV heads
    # (multi_query_group_num 2) and head width (kv_channels) read by no generic key name; read Llama-style before as
    # 32 KV heads (7,124,492,288 parameters, a KV cache 16x too big)
    cfg = json.loads((Path(__file__).parent / "fixtures" / "configs" / "chatglm3_6b.json").read_text())
    cfg = {**{k: v for k, v in cfg.items() if k != "architectures"}, "model_type": "chatglm_fork"}
    with pytest.raises(UnsupportedArchitectureError, match="kv_channels, multi_query_attention, multi_query_group_num"):
        load_model(cfg)


def test_unknown_model_type_is_read_by_key_names_and_noted():
    m = load_model(_llama_config(model_type="brand_new_decoder"))
    assert m.params_total == load_model(_llama_config()).params_total
    assert any("brand_new_decoder" in s for s in m.assumptions)
    assert any("gated" in s for s in m.assumptions)  # gated MLP decided from hidden_act silu


# ------------------------------------------------------------------------------ property: closed form
@st.composite
def llama_configs(draw):
    kv = draw(st.integers(1, 8))
    heads = kv * draw(st.integers(1, 8))
    hidden = heads * 2 * draw(st.integers(1, 32))  # RoPE needs an even head_dim
    cfg = {
        "model_type": draw(st.sampled_from(["llama", "mistral", "novel_llama_like"])),
        "hidden_size": hidden, "num_attention_heads": heads, "num_key_value_heads": kv,
        "num_hidden_layers": draw(st.integers(1, 12)), "intermediate_size": draw(st.integers(1, 4096)),
        "vocab_size": draw(st.integers(1, 50000)), "tie_word_embeddings": draw(st.booleans()),
        "hidden_act": "silu", "rms_norm_eps": 1e-5, "max_position_embeddings": 4096, "sliding_window": None,
    }
    if draw(st.booleans()):
        cfg["head_dim"] = 2 * draw(st.integers(1, 128))
    return cfg


@settings(max_examples=60, deadline=None)
@given(llama_configs())
def test_random_llama_configs_match_the_closed_form(cfg):
    m = load_model(cfg)
    V, d, L, F = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // H)
    expected = (V * d * (1 if cfg["tie_word_embeddings"] else 2)
                + L * (d * (H * hd) + 2 * d * (KV * hd) + (H * hd) * d + 3 * d * F + 2 * d) + d)
    assert m.params_total == expected


# ------------------------------------------------------------------------------ no torch, no network
def _run(code: str, **env) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [env.pop("PYTHONPATH", ""), str(REPO)])),
                **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, cwd=REPO, timeout=120)


def test_loading_never_imports_torch(tmp_path):
    # A fake torch that transformers' availability check sees (a dist-info with a version) and that fails
    # loudly if anything imports it: transformers >= 5 imports torch from its configuration module when torch
    # is installed, so the parser must then read the configs without transformers.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('torch was imported')\n")
    (tmp_path / "torch-2.9.0.dist-info").mkdir()
    (tmp_path / "torch-2.9.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n")
    code = """
        import sys
        import llm_roofline as lr
        for ident in lr.list_models():
            lr.load_model(ident)
        assert 'torch' not in sys.modules
        print('ok', len(lr.list_models()))
    """
    for extra in ({}, {"PYTHONPATH": str(tmp_path)}):  # without torch, and with a (fake) installed torch
        out = _run(code, **extra)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("ok")


def test_unshipped_id_without_download_raises_offline(tmp_path):
    code = """
        import llm_roofline as lr
        for kw in ({}, {'allow_download': True}):
            try:
                lr.load_model('meta-llama/Llama-3.1-8B-Instruct', **kw)
            except lr.ModelConfigError as e:
                print('error:', e)
    """
    out = _run(code, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2
    assert "allow_download=True" in lines[0] and "Did you mean" in lines[0] and "Llama-3.1-8B" in lines[0]
    assert "cannot download" in lines[1]  # offline: hf_hub_download fails, reported as ModelConfigError


# ------------------------------------------------------------------------------ CLI
def test_cli_models_json_lists_every_shipped_id(capsys):
    assert cli.main(["models", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == list_models()
    llama = next(r for r in rows if r["id"] == "meta-llama/Llama-3.1-8B")
    assert (llama["layers"], llama["kv_heads"], llama["kv_bytes_per_token_bf16"]) == (32, 8, 131072)


def test_cli_models_table(capsys):
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    assert "DeepSeek-V3" in out and "mla" in out


def test_loaded_specs_are_shared_immutable_and_follow_their_file(tmp_path):
    # load_model remembers a parsed config per file (issue 17): the ModelSpec is frozen all the way down, so a caller
    # cannot change what the next caller gets; a config edited on disk is read again
    import dataclasses

    import llm_roofline as lr

    a, b = lr.load_model("meta-llama/Llama-3.2-1B"), lr.load_model("META-LLAMA/llama-3.2-1b")
    assert a is b
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.d_model = 1
    with pytest.raises(TypeError):
        a.layer_groups[0] = None  # a tuple
    changed = dataclasses.replace(a, d_model=1)  # a copy; the shared spec is untouched
    assert changed.d_model == 1 and lr.load_model("meta-llama/Llama-3.2-1B").d_model == 2048
    cfg = json.loads((REPO / "model_configs" / "meta-llama" / "Llama-3.2-1B" / "config.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert lr.load_model(str(path)).n_layers == 16
    path.write_text(json.dumps({**cfg, "num_hidden_layers": 8}))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))  # a later modification time
    assert lr.load_model(str(path)).n_layers == 8


def test_mlp_layer_types_entries_other_than_dense_or_sparse_are_named():
    # Mellum2's mlp_layer_types with an unknown entry: read as 28 dense layers before (2,434,931,968 parameters
    # against its 12,149,923,072), now one line naming the entry
    cfg = json.loads((Path(__file__).parent / "fixtures" / "configs" / "mellum2_1_12b_a2_5b.json").read_text())
    cfg["mlp_layer_types"] = ["moe"] * len(cfg["mlp_layer_types"])
    with pytest.raises(ModelConfigError, match="mlp_layer_types entry 'moe' is not one of 'dense', 'sparse'"):
        load_model(cfg)
