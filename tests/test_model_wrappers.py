"""Where a multimodal wrapper keeps its text model: an omni model's thinker_config (Qwen2.5-Omni, Qwen3-Omni), a
remote-code wrapper's llm_config (InternVL-Chat) or language_config (DeepSeek-OCR, DeepSeek-VL2), and DeepSeek-V2's
use_mla false (plain multi-head attention under MLA's key names).

Every expected count is hand arithmetic in the comment beside it; where a reference is named it was checked too.

Molmo2 (molmo2_text): transformers' Molmo2TextConfig defaults (allenai/Molmo2-8B), no released config.json found.

Fixtures (tests/fixtures/configs):
- qwen3_omni_30b_a3b.json: Qwen/Qwen3-Omni-30B-A3B-Instruct's config as a public model report prints it (the
  Qwen3OmniMoeConfig loaded by transformers 5.7.0 from the checkpoint); the thinker's text_config verbatim, the towers,
  talker and code2wav configs kept with their dimensions, to_dict's generation defaults (id2label, output_*, ...) left
  out. transformers 5.24's Qwen3OmniMoeThinkerForConditionalGeneration built from it on the meta device: language
  model 30,221,219,840 + lm_head 311,427,072 = 30,532,646,912 (audio tower 647,927,168 and vision 538,631,408 apart).
- internvl3_1b.json: OpenGVLab/InternVL3-1B's InternVLChatConfig as a public notebook prints it (remote code:
  llm_config a Qwen2 of hidden 896, 24 layers, 14 heads over 2 KV heads, vocab 151,674; InternViT-300M).
  transformers 5.24's Qwen2ForCausalLM from its llm_config (tie_word_embeddings false, the wrapper's) on the meta
  device: 629,697,920. OpenGVLab: "InternVL3-1B: 0.9B" (the 0.3B ViT + this 0.63B language model).
- minimax_m1.json: MiniMax-AI/MiniMax-M1's config.json as a public dump of its repository prints it (model_type
  minimax_m1, remote code; transformers' MiniMax under another type).
- deepseek_ocr.json: deepseek-ai/DeepSeek-OCR's config.json verbatim as a public model report prints it (remote code,
  language_config a DeepSeek-V2 MoE with use_mla false), with the checkpoint's tensor list: 2,710 tensors,
  3,336,106,240 parameters in all (SAM ViT-B, CLIP-L, projector and the decoder).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.memory import kv_bytes_per_token

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"


def _fixture(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def test_qwen3_omni_reads_the_thinker():
    m = lr.load_model(FIX / "qwen3_omni_30b_a3b.json")
    # Thinker text model (Qwen3-MoE: q/k norms, 128 experts top-8 of 768, no shared expert), d 2048, 48 layers:
    # attention q 2048 x 4096 + k, v 2 x 2048 x 512 + o 4096 x 2048 + q/k norms 2 x 128 = 18,874,624; router
    # 2048 x 128 = 262,144; experts 128 x 3 x 2048 x 768 = 603,979,776; 2 norms 4,096: 623,120,640 a layer, x 48 =
    # 29,909,790,720; embeddings 152,064 x 2048 = 311,427,072, untied head the same, final norm 2,048:
    # 30,532,646,912 (= transformers' meta count).
    assert m.params_total == 30_532_646_912
    # Active: 18,874,624 + 262,144 + 8 x 4,718,592 + 4,096 = 56,889,600 a layer, x 48 = 2,730,700,800, + 2 x
    # 311,427,072 + 2,048 = 3,353,556,992.
    assert m.params_active == 3_353_556_992
    assert kv_bytes_per_token(m) == 48 * 2 * 4 * 128 * 2 == 98_304
    notes = " ".join(m.assumptions)
    assert "talker_config" in notes and "code2wav_config" in notes and "speech output" in notes
    # The Whisper-style audio encoder's size is read from encoder_layers / d_model / encoder_ffn_dim:
    # 32 x (4 x 1280^2 + 2 x 1280 x 5120) = 629,145,600 -> "0.63B".
    assert "32 layers of width 1280: about 0.63B" in notes


def test_qwen2_5_omni_thinker_is_qwen2():
    # Qwen/Qwen2.5-Omni-7B's thinker text_config as a public serving project's test copies "the full HuggingFace
    # Qwen2.5-Omni config.json" (no model_type in text_config: the thinker's type names it).
    text = {"hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28, "num_key_value_heads": 4,
            "num_hidden_layers": 28, "vocab_size": 152064, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    cfg = {"architectures": ["Qwen2_5OmniModel"], "model_type": "qwen2_5_omni",
           "thinker_config": {"model_type": "qwen2_5_omni_thinker", "text_config": text,
                              "audio_config": {"d_model": 1280, "encoder_layers": 32, "encoder_ffn_dim": 5120}},
           "talker_config": {"model_type": "qwen2_5_omni_talker", "hidden_size": 896, "num_hidden_layers": 24}}
    m = lr.load_model(cfg)
    # Qwen2-7B: q 3584^2 + bias 3,584 = 12,848,640; k, v 2 x (3584 x 512 + 512) = 3,671,040; o 12,845,056; MLP
    # 3 x 3584 x 18944 = 203,685,888; 2 norms 7,168: 233,057,792 a layer, x 28 = 6,525,618,176; + final norm 3,584
    # + untied embeddings and head 2 x 152,064 x 3584 = 1,089,994,752: 7,615,616,512 (Qwen2.5-7B's count).
    assert m.params_total == 7_615_616_512
    assert "talker_config" in " ".join(m.assumptions)


def test_internvl_chat_reads_llm_config():
    m = lr.load_model(FIX / "internvl3_1b.json")
    # Qwen2 d 896, 24 layers, 14 heads of 64 over 2 KV heads: q 896^2 + 896 = 803,712; k, v 2 x (896 x 128 + 128)
    # = 229,632; o 802,816; MLP 3 x 896 x 4864 = 13,074,432; norms 1,792: 14,912,384 a layer, x 24 = 357,897,216;
    # + final norm 896 + untied 2 x 151,674 x 896 = 271,799,808: 629,697,920 (= transformers' Qwen2 meta count).
    assert m.params_total == 629_697_920
    assert kv_bytes_per_token(m) == 24 * 2 * 2 * 64 * 2 == 12_288
    notes = " ".join(m.assumptions)
    assert "(llm_config)" in notes
    # InternViT states expert sizes beside use_moe false: a plain ViT, 24 x (4 x 1024^2 + 2 x 1024 x 4096) = 0.30B
    assert "24 layers of width 1024: about 0.30B" in notes


def test_deepseek_ocr_reads_language_config_without_mla():
    m = lr.load_model(FIX / "deepseek_ocr.json")
    # The checkpoint's tensors: embeddings and lm_head 2 x 129,280 x 1280 = 330,956,800; final norm 1,280; 12 layers
    # of q, k, v, o 4 x 1280^2 = 6,553,600 and 2 norms 2,560; layer 0's MLP 3 x 6848 x 1280 = 26,296,320; 11 MoE
    # layers of router 64 x 1280 = 81,920, experts 64 x 3 x 896 x 1280 = 220,200,960, shared 3 x 1792 x 1280 =
    # 6,881,280: 330,956,800 + 1,280 + 12 x 6,556,160 + 26,296,320 + 11 x 227,164,160 = 2,934,734,080 (the tensor
    # list's 3,336,106,240 less 401,372,160 of SAM, CLIP and projector).
    assert m.params_total == 2_934_734_080
    # Active: 6 of 64 experts: 81,920 + 6 x 3,440,640 + 6,881,280 = 27,607,040 a MoE layer:
    # 330,956,800 + 1,280 + 78,673,920 + 26,296,320 + 11 x 27,607,040 = 739,605,760.
    assert m.params_active == 739_605_760
    attn = m.layer_groups[0].attention
    assert (attn.kind, attn.n_heads, attn.n_kv_heads, attn.head_dim) == ("mha", 10, 10, 128)
    assert kv_bytes_per_token(m) == 12 * 2 * 10 * 128 * 2 == 61_440
    assert "use_mla is false" in " ".join(m.assumptions)


@pytest.mark.parametrize("change, error", [
    ({"language_config": [1, 2]}, "language_config must be a JSON object"),
    ({"language_config": {**_fixture("deepseek_ocr")["language_config"], "use_mla": "no"}}, "use_mla must be true"),
])
def test_wrapper_keys_reject_bad_values(change, error):
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model({**_fixture("deepseek_ocr"), **change})


def test_thinker_config_must_be_an_object():
    with pytest.raises(lr.RooflineError, match="thinker_config must be a JSON object"):
        lr.load_model({"model_type": "qwen3_omni_moe", "thinker_config": "x"})


@pytest.mark.parametrize("name", ["qwen3_omni_30b_a3b", "internvl3_1b", "deepseek_ocr"])
def test_wrapped_models_estimate_and_serve(name):
    est = lr.estimate(FIX / f"{name}.json", "h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    assert 0 < est.ttft_s < 10 and 0 < est.tpot_s < 1
    s = lr.serve(FIX / f"{name}.json", "h100-sxm", prompt_len=1024, gen_len=128, concurrency=16)
    assert s.tpot_s > 0


def test_ernie_vl_two_expert_sets_refused_by_name():
    # transformers' Ernie4_5_VLMoeTextConfig defaults (baidu/ERNIE-4.5-VL-28B-A3B-PT): text experts of 1536, vision
    # experts of 512; read before as "moe_intermediate_size ... a list of 2 differing entries"
    text = {"model_type": "ernie4_5_vl_moe_text", "hidden_size": 2560, "intermediate_size": 12288,
            "num_hidden_layers": 28, "num_attention_heads": 20, "num_key_value_heads": 4, "vocab_size": 103424,
            "moe_intermediate_size": [1536, 512], "moe_k": 6, "moe_num_experts": 64, "moe_num_shared_experts": 2}
    with pytest.raises(lr.UnsupportedArchitectureError, match="ERNIE-4.5-VL's two expert sets"):
        lr.load_model({"model_type": "ernie4_5_vl_moe", "text_config": text})


def test_nested_thinkers_are_read_one_level():
    # a hostile config nesting thinker_config 5,000 deep: one level is read (no recursion, no RecursionError)
    cfg: dict = {"hidden_size": 1}
    for _ in range(5000):
        cfg = {"thinker_config": cfg}
    with pytest.raises(lr.RooflineError, match="no hidden_size"):
        lr.load_model(cfg)


# transformers' Molmo2TextConfig defaults (its docstring checkpoint allenai/Molmo2-8B: Qwen3-8B's decoder, 128
# additional vocabulary rows): the text_config as Molmo2Config().to_dict() writes it, its towers left out
_MOLMO2_TEXT = {"model_type": "molmo2_text", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                "head_dim": 128, "vocab_size": 151936, "additional_vocab_size": 128, "attention_bias": False,
                "qk_norm_type": "qwen3", "num_hidden_layers": 36, "intermediate_size": 12288, "hidden_act": "silu",
                "max_position_embeddings": 36864, "rope_scaling_layers": list(range(36)), "norm_after": False,
                "tie_word_embeddings": False}


def _molmo2(**change) -> dict:
    return {"model_type": "molmo2", "architectures": ["Molmo2ForConditionalGeneration"],
            "text_config": {**_MOLMO2_TEXT, **change}}


def test_molmo2_text_model():
    m = lr.load_model(_molmo2())
    # Qwen3-8B's layer: q 4096 x 4096, k, v 2 x 4096 x 1024, o 4096 x 4096 = 41,943,040, q/k norms 2 x 128, MLP
    # 3 x 4096 x 12288 = 150,994,944, 2 norms 8,192: 192,946,432 a layer, x 36 = 6,946,071,552; embedding
    # (151,936 + 128) x 4096 = 622,854,144, the LM head 151,936 x 4096 = 622,329,856, final norm 4,096:
    # 8,191,259,648 (= transformers' meta count: language model 7,568,929,792 + lm_head).
    assert m.params_total == 8_191_259_648
    assert m.layer_groups[0].attention.qk_norm and not m.layer_groups[0].attention.qk_norm_across_heads
    head = next(mat for mat in m.embedding_matrices() if mat.name == "lm_head")
    assert head.params == 151_936 * 4096  # the LM head keeps vocab_size rows


def test_molmo2_olmo_norms_and_remote_code_keys():
    # Molmo2-O: q/k norms over all heads' elements, (32 + 8) x 128 = 5,120 a layer instead of 256: + 36 x 4,864 =
    # 175,104; the remote code's qkv_bias true: + 36 x (4096 + 2 x 1024) = 221,184 -> 8,191,655,936 (= transformers'
    # meta count with qk_norm_type olmo and attention_bias true)
    cfg = _molmo2(qk_norm_type="olmo", qkv_bias=True, norm_after=True)
    del cfg["text_config"]["attention_bias"]  # the remote code's config states qkv_bias alone
    m = lr.load_model(cfg)
    assert m.params_total == 8_191_259_648 + 175_104 + 221_184 == 8_191_655_936
    assert m.layer_groups[0].attention.qk_norm_across_heads
    assert "norm_after" in " ".join(m.assumptions)


@pytest.mark.parametrize("change, error", [
    ({"qk_norm_type": "rms"}, "qk_norm_type must be one of qwen3, olmo"),
    ({"qk_norm_type": 3}, "qk_norm_type must be one of"),
    ({"additional_vocab_size": -1}, "additional_vocab_size"),
    ({"additional_vocab_size": "128"}, "additional_vocab_size"),
    ({"rope_scaling_layers": [0, 99]}, "rope_scaling_layers must list layer indices"),
    ({"norm_after": "yes"}, "norm_after must be true or false"),
    ({"qkv_bias": True}, "qkv_bias .* and attention_bias .* disagree"),
])
def test_molmo2_bad_values(change, error):
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model(_molmo2(**change))


def test_molmo2_estimates():
    est = lr.estimate(lr.load_model(_molmo2()), "h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    assert 0 < est.ttft_s < 10 and 0 < est.tpot_s < 1


def test_minimax_m1_hub_config_is_transformers_minimax():
    # MiniMax-AI/MiniMax-M1's config.json as its repository ships it (model_type minimax_m1, remote code
    # MiniMaxM1ForCausalLM; attn_type_list: 7 lightning layers then a softmax one, x 10). Read Llama-style before:
    # 80 GQA layers, 446,400,239,616 parameters and a softmax KV cache on every layer.
    m = lr.load_model(FIX / "minimax_m1.json")
    # d 6144, 64 heads of 128, 8 KV heads, 32 experts top-2 of 9216, vocab 200,064, untied:
    # softmax layer: q, o 2 x 6144 x 8192 + k, v 2 x 6144 x 1024 = 113,246,208; lightning layer: qkv 6144 x 3 x 8192 +
    # output_gate 6144 x 8192 + out_proj 8192 x 6144 + its RMSNorm 8192 = 251,666,432; MoE: router 6144 x 32 = 196,608
    # + 32 x 3 x 6144 x 9216 = 5,435,817,984; 2 norms 12,288.
    # 10 x (113,246,208 + 5,436,026,880) + 70 x (251,666,432 + 5,436,026,880) = 55,492,730,880 + 398,138,531,840;
    # + embeddings and head 2 x 200,064 x 6144 = 2,458,386,432 + final norm 6,144 = 456,089,655,296 (MiniMax: 456B)
    assert m.params_total == 456_089_655_296
    # active without the embedding table and head: 2 of 32 experts -> 45,944,920,064 (MiniMax: 45.9B activated)
    assert m.params_active - 2 * 200_064 * 6144 == 45_944_920_064
    assert m.attention_kind == "gqa/lightning"
    assert kv_bytes_per_token(m) == 10 * 2 * 8 * 128 * 2 == 40_960  # softmax layers only
    assert "minimax_m1" in " ".join(m.assumptions)
    with pytest.raises(lr.UnsupportedArchitectureError, match="shared_intermediate_size"):
        lr.load_model({**_fixture("minimax_m1"), "shared_intermediate_size": 1024})
