"""Remote-code MoE families vLLM serves: Bailing-MoE (Ling 1.x, model_type bailing_moe, BailingMoeForCausalLM) and
Ling / Ring 2.0 (the same model_type, BailingMoeV2ForCausalLM), DeepSeek-MoE v1 (model_type deepseek), openPangu
(PanguEmbedded read; its MoE classes refused by name).

Before this module: Ling 2.0 configs were refused (model_type 'bailing_moe' unknown, moe_router_enable_expert_bias and
moe_shared_expert_intermediate_size unread); Ling 1.x and DeepSeek-MoE were read right by the generic path (by luck of
the key names: same counts, now from table rows with their config classes' defaults); openPangu-Embedded-7B was
MISREAD: its `bias` key (q/k/v/o biases) was ignored, 8,030,539,776 parameters instead of 8,030,887,936.

Every expected count is hand arithmetic from the family's modeling code, in the comment beside it, checked against the
published figure or the checkpoint's own tensor count.

Fixtures (tests/fixtures/configs) and where their values come from:
- ling_lite_1_5.json: inclusionAI/Ling-lite-1.5 config.json as a public Rust port's test reproduces it "verbatim,
  including the keys this loader ignores" (Lablup's mlxcel, LING_LITE_CONFIG: "`inclusionAI/Ling-lite-1.5`'s
  `config.json`, field for field"). Modeling: inclusionAI/Ling models/modeling_bailing_moe.py (fused query_key_value
  with bias use_qkv_bias, dense with bias use_bias, bias-free MLPs, a softmax gate without bias, shared experts one MLP
  of moe_intermediate_size x num_shared_experts); vLLM bailing_moe.py the same for use_bias false. inclusionAI: Ling-lite
  "16.8 billion parameters with 2.75 billion activated" (inclusionAI/Ling README).
- ling_mini_2_0.json: inclusionAI/Ling-mini-2.0 config.json, the architecture keys as a public Swift project's fixture
  transcribes them from the published config ("Values are transcribed from the published config, not invented";
  model_type bailing_moe, architectures BailingMoeV2ForCausalLM). Modeling: the checkpoints' modeling_bailing_moe_v2.py
  (as NVIDIA Megatron-Bridge and Ascend msmodeling vendor it: per-head RMSNorm q/k norms when use_qk_norm, a sigmoid
  gate whose expert_bias buffer the checkpoint stores, shared experts of moe_intermediate_size x num_shared_experts, MTP
  layers after num_hidden_layers); defaults of its configuration_bailing_moe_v2.py (model_type "bailing_moe", Ling-mini's
  shape, use_qk_norm true, moe_router_enable_expert_bias true, num_nextn_predict_layers 0; msmodeling's copy and NVIDIA
  NeMo Automodel's mirror of it agree). inclusionAI: "16B total parameters, but only 1.4B are activated per input token
  (non-embedding 789M)"; the Ling-V2 docs: 16.26B total, 1.43B activated.
- ling_flash_2_0.json: inclusionAI/Ling-flash-2.0 config.json's keys as published: architectures, auto_map and
  model_type bailing_moe from the hub API record of the repository (a public copy of its model.json); the shape (hidden
  4096, 32 layers, 32 heads over 4 KV heads of 128, 256 experts of 1024 + 1 shared, top-8, 1 dense layer of 9216,
  vocabulary 157,184, untied, an MTP depth of 1) from a public MoE design database citing "inclusionAI/Ling-flash-2.0/
  config.json". use_qk_norm, moe_router_enable_expert_bias, use_bias, partial_rotary_factor and max_position_embeddings
  were not found published: left out, BailingMoeV2Config's defaults apply (noted). Reference: the same hub record's
  safetensors count, BF16 102,889,697,280 + F32 7,936 = 102,889,705,216 (the F32 tensors: 31 MoE layers x 256 expert
  biases; no MTP weights in the checkpoint); inclusionAI: "100B total parameters and 6.1B activated parameters (4.8B
  non-embedding)".
- ling_1t.json: a Ling-1T config.json (80 layers, hidden 8192, 64 / 8 heads, 256 experts of 2048, 4 dense layers of
  18,432, rotary_dim 64 in place of partial_rotary_factor) as Ascend msmodeling vendors it beside the checkpoints'
  configuration_bailing_moe_v2.py (tensor_cast/transformers/builtin_model/bailing_moe_hf/config.json); the same shape
  as the public MoE database's "inclusionAI/Ling-1T/config.json" entry and NeMo Automodel's note that Ling-1T "uses 4
  dense layers" and "rotary_dim (not partial_rotary_factor)". inclusionAI: 1T total, ~50B active.
- deepseek_moe_16b.json: deepseek-ai/deepseek-moe-16b-base config.json as a public parameter-counter's test copies it
  whole (architectures DeepseekForCausalLM, model_type deepseek; the same shape as the MoE database's
  "deepseek-ai/deepseek-moe-16b-base/config.json" entry). Modeling: vLLM deepseek.py (q/k/v/o without bias, heads of
  hidden/heads, n_shared_experts one MLP of moe_intermediate_size x n_shared_experts, a gate without bias, MoE where
  layer >= first_k_dense_replace and layer % moe_layer_freq == 0); defaults: configuration_deepseek.py's DeepseekConfig
  (a public walkthrough quotes its __init__). DeepSeek: "16.4B total, 2.8B activated" (arXiv 2401.06066).
- openpangu_embedded_7b.json: FreedomIntelligence/openPangu-Embedded-7B-V1.1 config.json as a public GPU port of the
  checkpoint copies it (wujing215/OpenPangu7B-on-NVIDIA config.json; two other public projects quote the same values).
  Modeling: its modular_openpangu_dense.py (Llama with q/k/v/o bias=config.bias, bias-free MLP). Reference: the same
  port's model.safetensors.index.json total_size 16,061,784,576 bytes = bf16 weights + 34 float32 rotary inv_freq
  buffers of 64 (8,704 bytes). Published: "7B (Non-Embedding)", 34 layers, 32 / 8 heads, vocabulary 153k.

Not sourced, hence refused by class name (refusals.REFUSED_ARCHITECTURES), not read: openPangu-Ultra-MoE-718B (no
released config.json found: its configuration_openpangu_moe.py names the keys attention_*_dim / num_routed_experts,
vLLM's openpangu.py DeepSeek's), Pangu Pro MoE (MoGE) and Pro MoE V2 (sink attention), openPangu-2.0 (mHC). Also not
found: Ling-plus's and openPangu-Embedded-1B's config.json (no fixture).
"""

import json
import math
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.errors import RooflineError
from llm_roofline.memory import kv_bytes_per_token

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"
FIXTURES = ("ling_lite_1_5", "ling_mini_2_0", "ling_flash_2_0", "ling_1t", "deepseek_moe_16b", "openpangu_embedded_7b")


def raw(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def fixture(name: str):
    return lr.load_model(FIX / f"{name}.json")


def groups(m) -> list:
    return [(g.name, g.count) for g in m.layer_groups]


# ------------------------------------------------------------------------------ Ling 1.x
def test_ling_lite_1_5():
    m = fixture("ling_lite_1_5")
    # d 2048, 16 heads over 4 KV heads of 128: query_key_value 2048 x (16 + 8) x 128 = 6,291,456 (use_qkv_bias false);
    #   dense 2048 x 2048 = 4,194,304 (use_bias false); 2 norms 4,096 -> 10,489,856
    # every layer MoE (first_k_dense_replace 0): 64 experts 3 x 2048 x 1408 = 8,650,752 each -> 553,648,128; 2 shared =
    #   one MLP of 2816: 17,301,504; gate 64 x 2048 = 131,072 -> 571,080,704
    # untied embedding + head 2 x 126,464 x 2048 = 517,996,544; final norm 2,048
    assert m.params_total == 28 * (10_489_856 + 571_080_704) + 517_996_544 + 2048 == 16_801_974_272  # "16.8 billion"
    # active: 6 of 64 -> 6 x 8,650,752 + 17,301,504 + 131,072 = 69,337,088 per layer
    assert m.params_active == 28 * (10_489_856 + 69_337_088) + 517_996_544 + 2048 == 2_753_153_024  # "2.75 billion"
    assert groups(m) == [("moe", 28)]
    attn, ffn = m.layer_groups[0].attention, m.layer_groups[0].ffn
    assert (attn.qk_norm, attn.qkv_bias, attn.o_bias, ffn.router_bias, ffn.d_shared) == (False, False, False, False, 2816)
    # KV per token: 28 layers x K and V of 4 heads x 128 x 2 B = 57,344
    assert kv_bytes_per_token(m) == 57_344


# ------------------------------------------------------------------------------ Ling 2.0
# d 2048, 16 heads over 4 KV heads of 128: query_key_value 2048 x 3072 = 6,291,456; dense 2048 x 2048 = 4,194,304;
#   q/k RMSNorms 2 x 128; 2 block norms 4,096 -> 10,490,112 per layer
# layer 0 dense MLP 3 x 2048 x 5120 = 31,457,280; 19 MoE layers: 256 experts 3 x 2048 x 512 = 3,145,728 each ->
#   805,306,368; 1 shared 3,145,728; gate 256 x 2048 = 524,288; expert_bias 256 -> 808,976,640
# untied embedding + head 2 x 157,184 x 2048 = 643,825,664; final norm 2,048
LING_MINI = 20 * 10_490_112 + 31_457_280 + 19 * 808_976_640 + 643_825_664 + 2048
# active: 8 of 256 -> 8 x 3,145,728 + 3,145,728 + 524,288 + 256 = 28,836,096 per MoE layer
LING_MINI_ACTIVE = 20 * 10_490_112 + 31_457_280 + 19 * 28_836_096 + 643_825_664 + 2048


def test_ling_mini_2_0():
    m = fixture("ling_mini_2_0")
    assert m.params_total == LING_MINI == 16_255_643_392  # "16.26B total"
    assert m.params_active == LING_MINI_ACTIVE == 1_432_973_056  # "1.43B activated"
    assert m.params_active - 643_825_664 == 789_147_392  # "non-embedding 789M"
    assert groups(m) == [("dense", 1), ("moe", 19)]
    attn, ffn = m.layer_groups[1].attention, m.layer_groups[1].ffn
    assert (attn.qk_norm, attn.qkv_bias, attn.o_bias, attn.sliding_window) == (True, False, False, None)
    assert (ffn.router_bias, ffn.d_shared, ffn.n_experts, ffn.top_k) == (True, 512, 256, 8)
    # KV per token: 20 layers x K and V of 4 x 128 x 2 B = 40,960
    assert kv_bytes_per_token(m) == 40_960
    assert any("partial_rotary_factor" in a for a in m.assumptions)


def test_ling_flash_2_0_matches_the_checkpoints_tensor_count():
    m = fixture("ling_flash_2_0")
    # d 4096, 32 heads over 4 KV heads of 128: query_key_value 4096 x 5120 = 20,971,520; dense 4096 x 4096 =
    #   16,777,216; q/k norms 256; 2 norms 8,192 -> 37,757,184 per layer
    # layer 0 dense 3 x 4096 x 9216 = 113,246,208; 31 MoE layers: 256 experts 3 x 4096 x 1024 = 12,582,912 each ->
    #   3,221,225,472; 1 shared 12,582,912; gate 256 x 4096 = 1,048,576; expert_bias 256 -> 3,234,857,216
    # untied embedding + head 2 x 157,184 x 4096 = 1,287,651,328; final norm 4,096; the MTP layer not counted
    expected = 32 * 37_757_184 + 113_246_208 + 31 * 3_234_857_216 + 1_287_651_328 + 4096
    assert m.params_total == expected == 102_889_697_280 + 7_936  # = the checkpoint's BF16 + F32 tensors
    # active: 8 x 12,582,912 + 12,582,912 + 1,048,576 + 256 = 114,295,040 per MoE layer
    active = 32 * 37_757_184 + 113_246_208 + 31 * 114_295_040 + 1_287_651_328 + 4096
    assert m.params_active == active == 6_152_277_760  # "6.1B activated"
    # without the embedding and head (1,287,651,328): 4,864,626,432 ("4.8B non-embedding")
    assert kv_bytes_per_token(m) == 32 * 2 * 4 * 128 * 2 == 65_536
    notes = " ".join(m.assumptions)
    assert "num_nextn_predict_layers=1" in notes and "use_qk_norm absent from the config: BailingMoeV2Config" in notes


def test_ling_1t():
    m = fixture("ling_1t")
    # d 8192, 64 heads over 8 KV heads of 128: query_key_value 8192 x 10,240 = 83,886,080; dense 8192 x 8192 =
    #   67,108,864; q/k norms 256; 2 norms 16,384 -> 151,011,584 per layer
    # 4 dense layers 3 x 8192 x 18,432 = 452,984,832; 76 MoE layers: 256 experts 3 x 8192 x 2048 = 50,331,648 each ->
    #   12,884,901,888; 1 shared 50,331,648; gate 256 x 8192 = 2,097,152; expert_bias 256 -> 12,937,330,944
    # untied embedding + head 2 x 157,184 x 8192 = 2,575,302,656; final norm 8,192
    expected = 80 * 151_011_584 + 4 * 452_984_832 + 76 * 12_937_330_944 + 2_575_302_656 + 8192
    assert m.params_total == expected == 999_705_328_640  # "1T total"
    # active: 8 x 50,331,648 + 50,331,648 + 2,097,152 + 256 = 455,082,240 per MoE layer
    active = 80 * 151_011_584 + 4 * 452_984_832 + 76 * 455_082_240 + 2_575_302_656 + 8192
    assert m.params_active == active == 51_054_427_136  # "~50B active"
    assert groups(m) == [("dense", 4), ("moe", 76)]
    assert kv_bytes_per_token(m) == 80 * 2 * 8 * 128 * 2 == 327_680
    assert any("rotary_dim" in a for a in m.assumptions)  # rotary_dim 64 of 128: half RoPE


def test_bailing_moe_v1_and_v2_defaults_by_architectures():
    """The two config classes share model_type bailing_moe with different defaults: architectures decides."""
    cfg = {k: v for k, v in raw("ling_mini_2_0").items() if k not in ("use_qk_norm", "moe_router_enable_expert_bias")}
    assert lr.load_model(cfg).params_total == LING_MINI  # BailingMoeV2Config: q/k norms and expert bias on
    v1 = {k: v for k, v in cfg.items() if k != "architectures"}
    # BailingMoeConfig (Ling 1.x): use_bias true (a dense bias of 2048 on 20 layers), no q/k norms (20 x 256), no
    #   expert bias (19 x 256)
    assert lr.load_model(v1).params_total == LING_MINI + 20 * 2048 - 20 * 256 - 19 * 256 == 16_255_674_368
    ling_lite_v2 = {**raw("ling_lite_1_5"), "architectures": ["BailingMoeV2ForCausalLM"]}
    # Ling-lite's keys read as Ling 2.0: + q/k norms 28 x 256 + expert biases 28 x 64
    assert lr.load_model(ling_lite_v2).params_total == 16_801_974_272 + 28 * 256 + 28 * 64


@pytest.mark.parametrize("change, error", [
    ({"architectures": ["BailingMoeLinearV2ForCausalLM"]}, "only BailingMoeForCausalLM"),
    ({"architectures": "BailingMoeV2ForCausalLM"}, "architectures must be a list"),
    ({"architectures": [3]}, "architectures must be a list"),
    ({"moe_shared_expert_intermediate_size": 1024}, "differs from moe_intermediate_size"),
    ({"moe_shared_expert_intermediate_size": "x"}, "moe_shared_expert_intermediate_size must be an integer"),
    ({"moe_shared_expert_intermediate_size": -1}, "moe_shared_expert_intermediate_size must be positive"),
    ({"partial_rotary_factor": "half"}, "partial_rotary_factor must be a number"),
    ({"partial_rotary_factor": math.nan}, "partial_rotary_factor must be a number in"),
    ({"partial_rotary_factor": 2}, "partial_rotary_factor must be a number in"),
    ({"partial_rotary_factor": True}, "partial_rotary_factor must be a number"),
    ({"rotary_dim": -64}, "rotary_dim must be positive"),
    ({"rotary_dim": 10**30}, "rotary_dim = .* exceeds the physical bound"),
    ({"use_qk_norm": "yes"}, "use_qk_norm must be true or false"),
    ({"moe_router_enable_expert_bias": 2}, "moe_router_enable_expert_bias must be true or false"),
    ({"num_experts": math.nan}, "num_experts must be an integer"),
    ({"first_k_dense_replace": -1}, "first_k_dense_replace must be non-negative"),
])
def test_bailing_moe_refusals_and_hostile_values_name_the_key(change, error):
    with pytest.raises(RooflineError, match=error):
        lr.load_model({**raw("ling_mini_2_0"), **change})


def test_bailing_hybrid_and_linear_are_untouched():
    assert lr.load_model(FIX / "ling_3_0_tiny.json").model_type == "bailing_hybrid"
    with pytest.raises(lr.UnsupportedArchitectureError, match="bailing_moe_linear"):
        lr.load_model({**raw("ling_mini_2_0"), "model_type": "bailing_moe_linear"})


# ------------------------------------------------------------------------------ DeepSeek-MoE (v1)
def test_deepseek_moe_16b():
    m = fixture("deepseek_moe_16b")
    # d 2048, 16 heads (MHA) of 128: q, k, v, o 4 x 2048 x 2048 = 16,777,216; 2 norms 4,096 -> 16,781,312 per layer
    # layer 0 dense 3 x 2048 x 10,944 = 67,239,936; 27 MoE layers: 64 experts 3 x 2048 x 1408 = 8,650,752 each ->
    #   553,648,128; 2 shared = one MLP of 2816: 17,301,504; gate 64 x 2048 = 131,072 -> 571,080,704
    # untied embedding + head 2 x 102,400 x 2048 = 419,430,400; final norm 2,048
    expected = 28 * 16_781_312 + 67_239_936 + 27 * 571_080_704 + 419_430_400 + 2048
    assert m.params_total == expected == 16_375_728_128  # "16.4B total"
    # active: 6 x 8,650,752 + 17,301,504 + 131,072 = 69,337,088 per MoE layer
    assert m.params_active == 28 * 16_781_312 + 67_239_936 + 27 * 69_337_088 + 419_430_400 + 2048 == 2_828_650_496
    assert groups(m) == [("dense", 1), ("moe", 27)]
    assert kv_bytes_per_token(m) == 28 * 2 * 16 * 128 * 2 == 229_376
    # moe_layer_freq 2: MoE where layer >= 1 and layer % 2 == 0 (2, 4, ..., 26): 13 MoE, 15 dense layers
    freq2 = lr.load_model({**raw("deepseek_moe_16b"), "moe_layer_freq": 2})
    assert freq2.params_total == 28 * 16_781_312 + 15 * 67_239_936 + 13 * 571_080_704 + 419_430_400 + 2048
    assert freq2.params_total == 9_321_957_376


@pytest.mark.parametrize("change, error", [
    ({"attention_bias": True}, "attention_bias=true"),
    ({"head_dim": 64}, "head_dim \\(64\\) is not hidden_size/num_attention_heads"),
    ({"kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}, "kv_lora_rank is set"),
    ({"moe_layer_freq": 0}, "moe_layer_freq must be positive"),
    ({"n_shared_experts": "2"}, "n_shared_experts must be an integer"),
    ({"moe_intermediate_size": None}, "no moe_intermediate_size"),
])
def test_deepseek_moe_refusals_name_the_key(change, error):
    with pytest.raises(RooflineError, match=error):
        lr.load_model({**raw("deepseek_moe_16b"), **change})


# ------------------------------------------------------------------------------ openPangu
def test_openpangu_embedded_7b_counts_its_attention_biases():
    m = fixture("openpangu_embedded_7b")
    # d 4096, 32 heads over 8 KV heads of 128: q 4096 x 4096 + 4096 bias, k and v 4096 x 1024 + 1024 each, o 4096 x
    #   4096 + 4096 -> 41,943,040 + 10,240 = 41,953,280; MLP 3 x 4096 x 12,800 = 157,286,400; 2 norms 8,192
    #   -> 199,247,872 per layer
    # untied embedding + head 2 x 153,376 x 4096 = 1,256,456,192; final norm 4,096
    expected = 34 * 199_247_872 + 1_256_456_192 + 4096
    assert m.params_total == m.params_active == expected == 8_030_887_936
    # the checkpoint index: 16,061,784,576 bytes = these in bf16 + 34 float32 inv_freq buffers of 64 (8,704 bytes)
    #   2 x 8,030,887,936 + 34 x 64 x 4 = 16,061,784,576
    # without the embedding and head: 8,030,887,936 - 1,256,456,192 = 6,774,431,744 ("7B (Non-Embedding)")
    # before: `bias` was not read (model_type unknown), the 34 x 10,240 biases left out: 8,030,539,776
    assert lr.load_model({**raw("openpangu_embedded_7b"), "bias": False}).params_total == 8_030_539_776
    assert kv_bytes_per_token(m) == 34 * 2 * 8 * 128 * 2 == 139_264


@pytest.mark.parametrize("change, error", [
    ({"interleaved_sliding_window": 4096}, "interleaved_sliding_window is set"),
    ({"sandwich_norm": True}, "sandwich_norm is set"),
    ({"param_sink_number": 128}, "param_sink_number is set"),
    ({"n_routed_experts": 64, "num_experts_per_tok": 8, "moe_intermediate_size": 1024}, "n_routed_experts is set"),
    ({"bias": False, "attention_bias": True}, "attention_bias differs from bias"),
    ({"qkv_bias": False}, "qkv_bias differs from bias"),
    ({"is_causal": False}, "is_causal=false"),
    ({"bias": "yes"}, "bias must be true or false"),
])
def test_openpangu_embedded_refuses_what_vllm_reads_and_the_checkpoint_does_not(change, error):
    with pytest.raises(RooflineError, match=error):
        lr.load_model({**raw("openpangu_embedded_7b"), **change})


@pytest.mark.parametrize("cfg, words", [
    ({"architectures": ["PanguUltraMoEForCausalLM"], "model_type": "deepseek_v3"}, "PanguUltraMoEForCausalLM"),
    ({"model_type": "pangu_ultra_moe", "hidden_size": 7680, "num_hidden_layers": 61}, "pangu_ultra_moe"),
    ({"architectures": ["PanguProMoEV2ForCausalLM"]}, "sink attention"),
    ({"architectures": ["PanguProMoEForCausalLM"]}, "grouped experts"),
    ({"architectures": ["OpenPanguV2ForCausalLM"], "model_type": "openpangu_v2"}, "mHC"),
])
def test_openpangu_moe_classes_are_refused_by_name(cfg, words):
    with pytest.raises(lr.UnsupportedArchitectureError, match=words):
        lr.load_model({**raw("deepseek_moe_16b"), **cfg})


# ------------------------------------------------------------------------------ all fixtures
@pytest.mark.parametrize("name, tp, pp", [("ling_lite_1_5", 1, 1), ("ling_mini_2_0", 1, 1), ("ling_flash_2_0", 4, 1),
                                          ("ling_1t", 8, 4), ("deepseek_moe_16b", 1, 1),
                                          ("openpangu_embedded_7b", 1, 1)])
def test_estimate_and_serve_run(name, tp, pp):
    m = fixture(name)
    est = lr.estimate(m, "h100-sxm", batch=8, prompt_len=1024, gen_len=128, tp=tp, pp=pp)
    assert est.ttft_s > 0 and est.tpot_s > 0
    # the KV cache of 8 sequences of 1024 + 128 tokens
    assert est.memory.kv_cache_bytes == kv_bytes_per_token(m) * 8 * 1152
    served = lr.serve(m, "h100-sxm", prompt_len=1024, gen_len=128, concurrency=8, tp=tp, pp=pp)
    assert served.tpot_s > 0 and served.ttft_s > 0


_HOSTILE = ("x", -1, 0, math.nan, math.inf, 10**30, True, None, [], {}, [4096], 1.5)
_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
         "intermediate_size", "moe_intermediate_size", "num_experts", "n_routed_experts", "num_experts_per_tok",
         "num_shared_experts", "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "vocab_size",
         "use_qk_norm", "use_bias", "use_qkv_bias", "bias", "moe_router_enable_expert_bias", "partial_rotary_factor",
         "rotary_dim", "moe_shared_expert_intermediate_size", "num_nextn_predict_layers", "tie_word_embeddings",
         "architectures", "attention_bias", "is_causal")


@pytest.mark.parametrize("name", FIXTURES)
def test_hostile_values_raise_a_roofline_error_never_a_traceback(name):
    base = raw(name)
    for key in _KEYS:
        for value in _HOSTILE:
            try:
                m = lr.load_model({**base, key: value})
            except RooflineError as e:
                assert str(e) and "\n" not in str(e), (key, value, str(e))
                continue
            assert m.params_total > 0 and math.isfinite(kv_bytes_per_token(m)), (key, value)
