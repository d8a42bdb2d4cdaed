"""Remote-code families vLLM serves under key names of their own: ChatGLM2 / ChatGLM3 / GLM-4-9B (model_type chatglm),
Qwen v1 (model_type qwen, QWenLMHeadModel) and Baichuan / Baichuan2 (model_type baichuan). Read Llama-style by the
usual key names they were misread: ChatGLM3-6B with 32 key/value heads instead of multi_query_group_num's 2 (7.12B and
a 16x KV cache), ChatGLM2-6B refused for want of vocab_size (it states padded_vocab_size), GLM-4-9B-chat at 10.66B,
Qwen-7B at 12.05B (its intermediate_size is twice the MLP width), Baichuan2-13B with RoPE where it has ALiBi and no
context length (it states model_max_length).

Every expected count is hand arithmetic in the comment beside it, from the family's modeling code: THUDM's
modeling_chatglm.py (a public copy: Lwen1243/ChatGLM2-6B chatglm2-6b/modeling_chatglm.py: query_key_value of
heads x kv_channels + 2 x multi_query_group_num x kv_channels with bias add_bias_linear or add_qkv_bias, dense_h_to_4h
of 2 x ffn_hidden_size, RMSNorm or LayerNorm by rmsnorm, final_layernorm when post_layer_norm, embedding and
output_layer of padded_vocab_size; vLLM's chatglm.py builds the same), Qwen's modeling_qwen.py (QWenAttention's
c_attn 3 x hidden with bias, QWenMLP's w1 / w2 of intermediate_size // 2; vLLM's first qwen.py: QWenMLP(n_embd,
ffn_hidden_size // 2)), Baichuan's modeling_baichuan.py and vLLM's baichuan.py (W_pack 3 x hidden without bias, a gated
MLP, RoPE for BaiChuanForCausalLM and for hidden_size 4096, ALiBi otherwise).

Fixtures (tests/fixtures/configs):
- chatglm2_6b.json: THUDM/chatglm2-6b config.json, verbatim as the public copy Lwen1243/ChatGLM2-6B
  chatglm2-6b/config.json holds it (no vocab_size key; seq_length 32768). Its pytorch_model.bin.index.json (same
  folder) states total_size 12,487,168,064 bytes of fp16: 6,243,584,032 elements = 6,243,584,000 parameters + the
  32-element rotary_pos_emb.inv_freq buffer.
- chatglm3_6b.json: THUDM/chatglm3-6b config.json as a public ChatGLM3-6B download script writes it (its fallback when
  the ModelScope and HF-mirror clones fail), with "model_type": "chatglm" added (the script's copy lacks it; the hub
  file's auto_map names ChatGLMConfig, whose model_type that is; the copy without it is tested below). Every shape
  value as NVIDIA/NeMo tests/collections/llm/gpt/model/test_chatglm.py states of ChatGLM3Config6B (28 layers, hidden
  4096, ffn 13696, 32 heads, 2 query groups, qkv bias, rotary_percent 0.5, untied, seq_length 8192, vocab 65024).
  Published: "6.2B" (ChatGLM3 model card); 6,243,584,000 by the arithmetic below.
- glm4_9b_chat.json: THUDM/glm-4-9b-chat config.json as transformers 4.43.4 printed it ("Model config ChatGLMConfig")
  loading snapshot f6e0743b in a LLaMA-Factory run log, peilongchencc/My-LLaMA-Factory cuda_docker_run/README.md
  (its auto_map, rewritten by transformers to "THUDM/glm-4-9b-chat--...", left out). Published: "9B" (GLM-4 card);
  9,399,951,360 by the arithmetic below.
- qwen_7b.json: Qwen/Qwen-7B config.json (transformers 4.32.0 release) as stanford-crfm/levanter
  tests/test_qwen2.py get_config() copies it. Published 7,721,324,544 ("7.7B"); a public write-up quotes the
  checkpoint's model.safetensors.index.json total_size 15,442,649,088 bytes of bf16 = 7,721,324,544 x 2.
- qwen_14b_chat_int4.json: Qwen/Qwen-14B-Chat-Int4 config.json (GPTQ int4, group 128), verbatim as
  smalltong02/keras-llm-robot models/llm/Qwen-14B-Chat-Int4/config.json holds it. Published: "14B"; 14,167,290,880 by
  the arithmetic below (the Int4 checkpoint packs the same matrices).
- baichuan2_7b.json: baichuan-inc/Baichuan2-7B config.json, assembled (no verbatim copy of the file found): its key set
  as mlpod/Baichuan2-CPU-DEBUG model/config.json copies the Baichuan2 file (with the dims shrunk for CPU debugging:
  BaichuanForCausalLM, max_position_embeddings and model_max_length 4096, vocab 125,696, untied, bf16), the dims of
  Baichuan2-7B-Base's configuration_baichuan.py (a copy: InternLM/InternEvo-HFModels
  huggingface_model/baichuan_inc/Baichuan2_7B_Base/configuration_baichuan.py: hidden 4096, intermediate 11008, 32
  layers, 32 heads, max_position_embeddings 4096, rms_norm_eps 1e-6, untied). Published: "7B"; the Baichuan 2 report
  (arXiv 2309.10305): vocabulary 125,696, RoPE on the 7B model, ALiBi on the 13B.
- baichuan2_13b.json: baichuan-inc/Baichuan2-13B config.json, assembled the same way: the dims as Huawei MindIE's
  Baichuan2-13B config class states them (a copy: inclusionAI/Ling mindie_config/atb_models/.../baichuan/v2_13b/
  config_baichuan.py: vocab 125,696, hidden 5120, intermediate 13696, 40 layers, 40 heads, rms_norm_eps 1e-6, untied),
  the context as model_max_length 4096 with no max_position_embeddings (Baichuan-13B's config class, vLLM
  vllm/transformers_utils/configs/baichuan_13b.py; baichuan-inc/Baichuan2 issue #337: the v2.0 config.json's
  "model_max_length": 4096; MindIE's class adds a max_position_embeddings, left out). Published: "13B".
"""

import json
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.errors import ModelConfigError, RooflineError, UnsupportedArchitectureError
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import kv_bytes_per_token
from llm_roofline.sharding import Sharding

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"
FIXTURES = ("chatglm2_6b", "chatglm3_6b", "glm4_9b_chat", "qwen_7b", "qwen_14b_chat_int4", "baichuan2_7b",
            "baichuan2_13b")


def fixture(name: str):
    return lr.load_model(FIX / f"{name}.json")


def raw(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def changed(name: str, **change) -> dict:
    cfg = raw(name)
    for key, value in change.items():
        if value is _DROP:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    return cfg


_DROP = object()


# ------------------------------------------------------------------------------ ChatGLM2 / ChatGLM3
def test_chatglm3_6b_two_kv_groups_and_exact_count():
    m = fixture("chatglm3_6b")
    # per layer: query_key_value 4096 x (32 x 128 + 2 x 2 x 128 = 4608) = 18,874,368 + bias 4608 = 18,878,976;
    #   dense 4096 x 4096 = 16,777,216 (no bias); dense_h_to_4h 4096 x 2 x 13696 = 112,197,632; dense_4h_to_h
    #   13696 x 4096 = 56,098,816; 2 RMSNorms 8,192 -> 203,960,832; x 28 = 5,710,903,296
    # embedding + output_layer 2 x 65024 x 4096 = 532,676,608; final_layernorm 4096 -> 6,243,584,000 ("6.2B")
    assert m.params_total == 6_243_584_000
    a, f = m.layer_groups[0].attention, m.layer_groups[0].ffn
    assert (a.kind, a.n_heads, a.n_kv_heads, a.head_dim, a.qkv_bias, a.o_bias, a.rope) == \
        ("gqa", 32, 2, 128, True, False, True)
    assert (f.d_ff, f.gated, f.bias) == (13696, True, False)
    assert (m.norm, m.tie_embeddings, m.vocab_size, m.max_context, m.n_layers) == ("rmsnorm", False, 65024, 8192, 28)
    # K and V of 2 groups x 128 per layer: 2 x 2 x 128 x 28 layers x 2 B = 28,672 B per token (read as 32 KV heads
    # before: 458,752, 16x)
    assert kv_bytes_per_token(m) == 28_672
    assert any("RoPE rotates half of each head (64 of kv_channels 128)" in s for s in m.assumptions)


def test_chatglm2_6b_reads_padded_vocab_size_and_matches_its_checkpoint():
    m = fixture("chatglm2_6b")  # no vocab_size key: was refused ("the config has no vocab_size")
    assert m.params_total == 6_243_584_000  # ChatGLM3-6B's block and vocabulary, as above
    # pytorch_model.bin.index.json: 12,487,168,064 B / 2 = 6,243,584,032 = the parameters + inv_freq's 32 entries
    #   2 x (6,243,584,000 + 32) = 12,487,168,064 B
    assert (m.vocab_size, m.max_context) == (65024, 32768)


def test_chatglm_without_model_type_is_read_by_its_class():
    m = lr.load_model(changed("chatglm3_6b", model_type=_DROP))  # the download script's own copy
    assert m.params_total == 6_243_584_000 and m.model_type == "chatglm"
    assert any("read as 'chatglm', the model_type of its class ChatGLMModel" in s for s in m.assumptions)


# ------------------------------------------------------------------------------ GLM-4-9B
def test_glm4_9b_chat_exact_count_and_kv_cache():
    m = fixture("glm4_9b_chat")
    # per layer as ChatGLM3-6B's: 203,960,832; x 40 = 8,158,433,280; embedding + output_layer 2 x 151552 x 4096 =
    # 1,241,513,984; final norm 4096 -> 9,399,951,360 ("9B")
    assert m.params_total == 9_399_951_360
    assert (m.n_layers, m.vocab_size, m.max_context) == (40, 151552, 131072)
    assert kv_bytes_per_token(m) == 2 * 2 * 128 * 40 * 2  # 40,960 B
    for tp in (1, 2, 4):  # 2 KV groups over 4 chips: replicated, as vLLM does
        assert build_ops(m, Phase.decode(8, 1000), Sharding(tp=tp))


def test_glm4_9b_chat_1m_four_kv_groups():
    # glm-4-9b-chat-1m's published differences (a public test's copy of its config.json; the search tool did not name
    # the repository): multi_query_group_num 4, rope_ratio 10000, seq_length 1,048,576
    m = lr.load_model(changed("glm4_9b_chat", multi_query_group_num=4, rope_ratio=10000, seq_length=1_048_576))
    # query_key_value 4096 x (4096 + 2 x 4 x 128 = 5120) + 5120 = 20,976,640, 2,097,664 more than with 2 groups;
    # x 40 = 83,906,560 -> 9,483,857,920
    assert m.params_total == 9_483_857_920
    assert kv_bytes_per_token(m) == 2 * 4 * 128 * 40 * 2  # 81,920 B
    assert m.max_context == 1_048_576


def test_chatglm_switches_read_as_the_glm_block_builds_them():
    # multi_query_attention false: a key and value per head, query_key_value 4096 x 12288 + 12288 = 50,343,936
    #   (+31,464,960 a layer) -> 6,243,584,000 + 28 x 31,464,960 = 7,124,602,880; multi_query_group_num then unread
    mha = lr.load_model(changed("chatglm3_6b", multi_query_attention=False))
    assert mha.params_total == 7_124_602_880 and mha.layer_groups[0].attention.kind == "mha"
    # rmsnorm false: LayerNorms with bias, 4096 more per norm: 57 norms -> 6,243,817,472
    ln = lr.load_model(changed("chatglm3_6b", rmsnorm=False))
    assert (ln.norm, ln.params_total) == ("layernorm", 6_243_817_472)
    # add_bias_linear true: dense 4096 + dense_h_to_4h 27392 + dense_4h_to_h 4096 biases a layer (query_key_value's
    #   is already there): 28 x 35,584 = 996,352 -> 6,244,580,352
    bias = lr.load_model(changed("chatglm3_6b", add_bias_linear=True, add_qkv_bias=False))
    assert bias.params_total == 6_244_580_352
    # the residual taken after each norm: the same weights and work, noted
    post = lr.load_model(changed("chatglm3_6b", apply_residual_connection_post_layernorm=True))
    assert post.params_total == 6_243_584_000
    assert any("apply_residual_connection_post_layernorm" in s for s in post.assumptions)
    # ChatGLMConfig's defaults for absent keys, noted: multi_query_attention false -> MHA
    bare = lr.load_model(changed("chatglm3_6b", multi_query_attention=_DROP, multi_query_group_num=_DROP))
    assert bare.layer_groups[0].attention.n_kv_heads == 32
    assert any("multi_query_attention absent" in s for s in bare.assumptions)
    one = lr.load_model(changed("chatglm3_6b", multi_query_group_num=None))
    assert one.layer_groups[0].attention.n_kv_heads == 1
    assert any("multi_query_group_num absent" in s for s in one.assumptions)


@pytest.mark.parametrize("change, words", [
    # the first ChatGLM-6B (model_type chatglm too): its config's own keys (inner_hidden_size 16384, 2D positions)
    (dict(position_encoding_2d=True, inner_hidden_size=16384), "first ChatGLM-6B"),
    (dict(inner_hidden_size=16384), "first ChatGLM-6B"),
    (dict(post_layer_norm=False), "post_layer_norm=false"),
    (dict(quantization_bit=4), "quantization_bit=4"),
    (dict(pre_seq_len=128), "P-tuning"),
])
def test_chatglm_what_the_graph_does_not_read_is_refused_by_name(change, words):
    with pytest.raises(UnsupportedArchitectureError, match=words):
        lr.load_model(changed("chatglm3_6b", **change))


@pytest.mark.parametrize("change", [
    dict(kv_channels="128"), dict(kv_channels=-128), dict(kv_channels=float("nan")), dict(kv_channels=10**40),
    dict(multi_query_group_num=3), dict(multi_query_group_num=0), dict(multi_query_group_num="2"),
    dict(multi_query_group_num=10**30), dict(multi_query_attention="true"), dict(multi_query_attention=1.5),
    dict(padded_vocab_size=-5), dict(padded_vocab_size="65024"), dict(ffn_hidden_size=1.5),
    dict(ffn_hidden_size=float("inf")), dict(rmsnorm="no"), dict(add_qkv_bias=[True]), dict(add_bias_linear=2),
    dict(num_layers="28"), dict(num_layers=-1), dict(num_hidden_layers=27), dict(quantization_bit=-4),
    dict(quantization_bit="int4"), dict(post_layer_norm=None, rmsnorm=None, apply_residual_connection_post_layernorm=3),
    dict(num_attention_heads=0), dict(seq_length=float("nan")),
])
def test_chatglm_hostile_values_raise_the_project_error(change):
    with pytest.raises(RooflineError):
        lr.load_model(changed("chatglm3_6b", **change))


# ------------------------------------------------------------------------------ Qwen v1
def test_qwen_7b_mlp_is_half_of_intermediate_size():
    m = fixture("qwen_7b")
    # per layer: c_attn 4096 x 12288 + bias 12288 = 50,343,936; c_proj 4096 x 4096 = 16,777,216 (no_bias);
    #   w1, w2 4096 x 11008 each = 90,177,536; mlp.c_proj 11008 x 4096 = 45,088,768; ln_1, ln_2 8,192
    #   -> 202,395,648; x 32 = 6,476,660,736; wte + lm_head 2 x 151936 x 4096 = 1,244,659,712; ln_f 4096
    #   -> 7,721,324,544 (published; the safetensors index: 15,442,649,088 B of bf16)
    assert m.params_total == 7_721_324_544
    assert 2 * m.params_total == 15_442_649_088
    a, f = m.layer_groups[0].attention, m.layer_groups[0].ffn
    assert (a.kind, a.n_kv_heads, a.head_dim, a.qkv_bias, a.o_bias) == ("mha", 32, 128, True, False)
    assert (f.d_ff, f.gated, f.bias) == (11008, True, False)
    assert kv_bytes_per_token(m) == 2 * 32 * 128 * 32 * 2  # 524,288 B
    # context: the smallest of max_position_embeddings 32,768 and seq_length 8,192, as vLLM's max_model_len
    assert (m.max_context, m.tie_embeddings, m.norm) == (8192, False, "rmsnorm")
    assert any("intermediate_size 22016 is twice the MLP width" in s for s in m.assumptions)


def test_qwen_14b_chat_int4():
    m = fixture("qwen_14b_chat_int4")
    # per layer: c_attn 5120 x 15360 + 15360 = 78,658,560; c_proj 26,214,400; w1, w2, mlp.c_proj 3 x 5120 x 13696
    #   = 210,370,560; norms 10,240 -> 315,253,760; x 40 = 12,610,150,400; wte + lm_head 2 x 152064 x 5120 =
    #   1,557,135,360; ln_f 5120 -> 14,167,290,880 ("14B")
    assert m.params_total == 14_167_290_880
    assert m.layer_groups[0].ffn.d_ff == 13696
    assert kv_bytes_per_token(m) == 2 * 40 * 128 * 40 * 2  # 819,200 B
    assert (m.quantization.dtype, m.quantization.group_size) == ("int4", 128)  # GPTQ
    assert m.max_context == 2048  # seq_length 2,048 beside max_position_embeddings 8,192: the smaller (vLLM)


def test_qwen_first_release_key_names():
    # the first Qwen-7B config.json (transformers 4.31.0): n_embd, n_head, n_layer, ffn_hidden_size 22016 (vLLM's
    # first qwen.py: QWenMLP(config.n_embd, config.ffn_hidden_size // 2)), n_positions 8192, seq_length 2048
    cfg = {"architectures": ["QWenLMHeadModel"], "model_type": "qwen", "n_embd": 4096, "n_head": 32, "n_layer": 32,
           "ffn_hidden_size": 22016, "kv_channels": 128, "n_positions": 8192, "seq_length": 2048, "no_bias": True,
           "padded_vocab_size": 151936, "vocab_size": 151936, "rotary_pct": 1.0, "tie_word_embeddings": False,
           "layer_norm_epsilon": 1e-06}
    m = lr.load_model(cfg)
    assert m.params_total == 7_721_324_544 and m.max_context == 2048  # n_positions 8192, seq_length 2048: the smaller
    assert any("ffn_hidden_size 22016 is twice the MLP width" in s for s in m.assumptions)


def test_qwen_switches_and_refusals():
    # no_bias false: c_proj 4096 + w1, w2 2 x 11008 + mlp.c_proj 4096 biases a layer: 32 x 30,208 = 966,656
    biased = lr.load_model(changed("qwen_7b", no_bias=False))
    assert biased.params_total == 7_722_291_200
    part = lr.load_model(changed("qwen_7b", rotary_pct=0.5))
    assert part.params_total == 7_721_324_544 and any("rotary_pct=0.5" in s for s in part.assumptions)
    vl = lr.load_model(changed("qwen_7b", visual={"layers": 48, "width": 1664}))  # Qwen-VL: the LM alone
    assert vl.params_total == 7_721_324_544 and any("visual tower" in s for s in vl.assumptions)
    with pytest.raises(UnsupportedArchitectureError, match="kv_channels"):
        lr.load_model(changed("qwen_7b", kv_channels=64))  # 64 x 32 heads != 4096
    with pytest.raises(ModelConfigError, match="must be even"):
        lr.load_model(changed("qwen_7b", intermediate_size=22015))


@pytest.mark.parametrize("change", [
    dict(intermediate_size="22016"), dict(intermediate_size=-2), dict(intermediate_size=float("nan")),
    dict(intermediate_size=10**30), dict(kv_channels=None, num_attention_heads=33), dict(kv_channels="128"),
    dict(no_bias="true"), dict(rotary_pct="1"), dict(rotary_pct=float("nan")), dict(rotary_pct=0),
    dict(rotary_pct=True), dict(rotary_pct=2.0), dict(use_logn_attn="yes"), dict(hidden_size=None, n_embd=-4096),
    dict(vocab_size="151936"), dict(num_hidden_layers=0),
])
def test_qwen_hostile_values_raise_the_project_error(change):
    with pytest.raises(RooflineError):
        lr.load_model(changed("qwen_7b", **change))


# ------------------------------------------------------------------------------ Baichuan / Baichuan2
def test_baichuan2_7b_rope_and_exact_count():
    m = fixture("baichuan2_7b")
    # per layer: W_pack 4096 x 12288 = 50,331,648; o_proj 16,777,216; gate, up, down 3 x 4096 x 11008 =
    #   135,266,304; norms 8,192 -> 202,383,360; x 32 = 6,476,267,520; embed_tokens + lm_head (NormHead: the same
    #   matrix) 2 x 125696 x 4096 = 1,029,701,632; norm 4096 -> 7,505,973,248 ("7B")
    assert m.params_total == 7_505_973_248
    a = m.layer_groups[0].attention
    assert (a.kind, a.n_kv_heads, a.head_dim, a.qkv_bias, a.o_bias, a.rope) == ("mha", 32, 128, False, False, True)
    assert kv_bytes_per_token(m) == 2 * 32 * 128 * 32 * 2  # 524,288 B
    assert m.max_context == 4096
    assert any(o.name == "attn.rope" for o in build_ops(m, Phase.decode(8, 1000), Sharding()))


def test_baichuan2_13b_alibi_no_rope_op_no_position_table():
    m = fixture("baichuan2_13b")
    # per layer: W_pack 5120 x 15360 = 78,643,200; o_proj 26,214,400; 3 x 5120 x 13696 = 210,370,560; norms 10,240
    #   -> 315,238,400; x 40 = 12,609,536,000; 2 x 125696 x 5120 = 1,287,127,040; norm 5120 -> 13,896,668,160 ("13B")
    assert m.params_total == 13_896_668_160
    a = m.layer_groups[0].attention
    assert (a.kind, a.n_kv_heads, a.head_dim, a.rope) == ("mha", 40, 128, False)  # ALiBi: no rotary
    assert m.learned_positions == 0  # ALiBi: no position table either
    assert not any("rope" in o.name for o in build_ops(m, Phase.decode(8, 1000), Sharding(tp=2)))
    assert kv_bytes_per_token(m) == 2 * 40 * 128 * 40 * 2  # 819,200 B
    assert m.max_context == 4096  # model_max_length (no max_position_embeddings; was unknown)
    assert any("ALiBi" in s for s in m.assumptions)


def test_baichuan_first_generation_by_class_and_shape():
    # Baichuan-7B (BaiChuanForCausalLM, vocab 64,000): RoPE whatever its width; 6,476,267,520 + 2 x 64000 x 4096 +
    # 4096 = 7,000,559,616
    seven = lr.load_model(changed("baichuan2_7b", architectures=["BaiChuanForCausalLM"], vocab_size=64000))
    assert seven.params_total == 7_000_559_616 and seven.layer_groups[0].attention.rope
    wide = lr.load_model(changed("baichuan2_13b", architectures=["BaiChuanForCausalLM"]))
    assert wide.layer_groups[0].attention.rope  # vLLM's BaiChuanForCausalLM: RoPE
    # Baichuan-13B (BaichuanForCausalLM, vocab 64,000, ALiBi): 12,609,536,000 + 2 x 64000 x 5120 + 5120 =
    # 13,264,901,120
    thirteen = lr.load_model(changed("baichuan2_13b", vocab_size=64000))
    assert thirteen.params_total == 13_264_901_120 and not thirteen.layer_groups[0].attention.rope
    assert not any("NormHead" in s for s in thirteen.assumptions)


@pytest.mark.parametrize("change, error", [
    (dict(num_key_value_heads=8), UnsupportedArchitectureError), (dict(head_dim=64), UnsupportedArchitectureError),
    (dict(architectures="BaichuanForCausalLM"), ModelConfigError), (dict(intermediate_size="13696"), ModelConfigError),
    (dict(intermediate_size=-1), ModelConfigError), (dict(intermediate_size=float("nan")), ModelConfigError),
    (dict(model_max_length=10**40), ModelConfigError), (dict(model_max_length="4096"), ModelConfigError),
    (dict(hidden_act=7), ModelConfigError), (dict(num_attention_heads=48), ModelConfigError),
    (dict(vocab_size=None), ModelConfigError),
])
def test_baichuan_hostile_values_raise_the_project_error(change, error):
    with pytest.raises(error):
        lr.load_model(changed("baichuan2_13b", **change))


# ------------------------------------------------------------------------------ every fixture runs end to end
@pytest.mark.parametrize("name", FIXTURES)
def test_estimate_memory_and_serve_run_on_every_fixture(name):
    path = FIX / f"{name}.json"
    est = lr.estimate(path, chip="h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    # the KV cache of 8 sequences of 1024 + 128 tokens: 9,216 tokens x the bytes per token tested above
    assert est.memory.kv_cache_bytes == 9216 * kv_bytes_per_token(fixture(name))
    assert est.memory.per_chip_bytes > 0 and est.ttft_s > 0 and est.tpot_s > 0
    served = lr.serve(path, "h100-sxm", prompt_len=1024, gen_len=128, concurrency=8)
    assert served is not None
