"""Remote-code families vLLM serves, read exactly or refused by name: Ouro (a looped stack), MiniCPM / MiniCPM4
(InfLLM-v2 refused) and MiniCPM3, InternLM2, JAIS, TeleChat2.

Every expected count is hand arithmetic from the family's own modeling code, in the comment beside it, checked against
the published total named there. Before these readers, the generic path ("Llama-style by the usual key names") read
them: Ouro as one pass of its stack (1,434,552,320 parameters, 196,608 KV bytes a token: a quarter of the compute and
KV), MiniCPM-2B untied (3,007,703,808), JAIS without its biases and slopes and with RoPE (13,018,695,680), TeleChat2
with LayerNorm biases and without its dense / down_proj biases (113,282,924,544), a MiniCPM3 config without v_head_dim
refused (and one without tie_word_embeddings untied); InternLM2's released configs were already exact.

Fixtures (tests/fixtures/configs) and where their values come from:
- ouro_1_4b.json: ByteDance/Ouro-1.4B, the values of a public port's "Native configuration for the first supported
  checkpoint, ByteDance/Ouro-1.4B" (adapted from the hub's configuration_ouro.py at revision 574fa66c; its dataclass
  defaults are the checkpoint's: vocab 49,152, hidden 2048, intermediate 5632, 24 layers, 16 / 16 heads of 128, silu,
  context 65,536, rms_norm_eps 1e-6, rope_theta 1e6, total_ut_steps 4, early_exit_threshold 1.0, untied, no sliding
  window); a second public project checks the same hidden / intermediate / layers / total_ut_steps / vocab against the
  loaded config. Not a verbatim copy of the file. The modeling code: vLLM's models/ouro.py (one Attention per layer and
  ut step, sandwich RMSNorms input_layernorm(_2) / post_attention_layernorm(_2), early_exit_gate Linear(d, 1, bias)).
  The model card: "1.4B"; Ouro-2.6B: the same layers, 48 of them (a public report: "48 shared physical decoder layers
  applied over four recurrent steps").
- minicpm_2b_sft.json: openbmb/MiniCPM-2B-sft, the keys transformers' MiniCPM test writes as the "older MiniCPM config"
  (hidden 2304, intermediate 5760, 40 layers, 36 / 36 heads, scale_emb 12, scale_depth 1.4, dim_model_base 256, no
  tie_word_embeddings key) and vocab_size 122,753 as ipex-llm identifies MiniCPM-2B's LLM by (hidden 2304 and vocab
  122753). No max_position_embeddings (not in the source). The hub's configuration_minicpm.py defaults
  tie_word_embeddings to true; published: "2.4B parameters excluding embeddings", 2.7B in all.
- minicpm4_1_8b.json: openbmb/MiniCPM4.1-8B, the values FastDeploy sets "to match MiniCPM4.1-8B config.json" (vocab
  73,448, hidden 4096, intermediate 16,384, 32 / 2 heads, 32 layers, context 65,536, rms 1e-6, untied, scale_emb 12,
  scale_depth 1.4, mup_denominator 32, dim_model_base 256; transformers' MiniCPM integration test: context 65,536,
  untied, pad 2). The model card: InfLLM-v2 is switched on by adding sparse_config (kernel_size 32, kernel_stride 16,
  init_blocks 1, block_size 64, window_size 2048, topk 64, use_nope false, dense_len 8192): refused here.
- internlm2_chat_1_8b.json: internlm/internlm2-chat-1_8b config.json as a public script copies it ("Base config provided
  by user (internlm2-chat-1_8b)", transformers_version 4.41.0). InternLM: "1.89B".
- internlm2_5_7b_chat.json: internlm/internlm2_5-7b-chat: hidden 4096, 32 layers, 32 / 8 heads, intermediate 14,336,
  vocab 92,544, context 32,768 as a public model catalog lists internlm2.5-7b; bias false, rope_scaling dynamic 2.0,
  rope_theta 1e6, untied as InternVL2-8B's llm_config (internlm2_5-7b-chat) states them. Published: "7.74B".
- jais_13b_chat.json, jais_30b_chat_v3.json: inceptionai/jais-13b-chat and jais-30b-chat-v3: the shapes Cerebras (its
  co-developer) publishes in its Model Zoo (params_jais_13b_chat.yaml: hidden 5120, filter 13,653, 40 heads, 40 layers,
  vocab 84,992, 2048 positions; params_jais_30b_chat.yaml: 7168, 19,114, 56 heads, 48 layers, 8192 positions; both
  swiglu, alibi, layernorm, share_embedding_weights, every bias, embeddings_scale 14.6, scale_qk_dot_by_d) under the HF
  key names Cerebras's own converter maps them to (jais_hf_cs.py over gpt2_hf_cs.py: n_embd, n_inner, n_head, n_layer,
  n_positions, activation_function, tie_word_embeddings, mup_embeddings_scale, mup_scale_qk_dot_by_d). Not verbatim.
  Published: "13B", "30B".
- telechat2_115b.json: Tele-AI/TeleChat2-115B config.json as Tele-AI's own GitHub repository ships it (model/115B),
  verbatim. Reference: that repository's model.safetensors.index.json, total_size 453,131,665,408 bytes of float32 =
  113,282,916,352 parameters; its weight map names dense.bias and down_proj.bias and no other bias. The README's table:
  3B / 7B / 35B without GQA, 115B with it, all untied.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.cli import main
from llm_roofline.errors import ModelConfigError, RooflineError, UnsupportedArchitectureError
from llm_roofline.memory import kv_bytes_per_token, weight_bytes

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"
NAMES = ("ouro_1_4b", "minicpm_2b_sft", "minicpm4_1_8b", "internlm2_chat_1_8b", "internlm2_5_7b_chat", "jais_13b_chat",
         "jais_30b_chat_v3", "telechat2_115b")


def raw(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def load(name: str, **change) -> lr.ModelSpec:
    return lr.load_model({**raw(name), **change})


def one_matrix(spec: lr.ModelSpec, name: str):
    g = spec.layer_groups[0]
    return next(m for m in g.mixing_matrices(spec.d_model) + g.ffn.weight_matrices(spec.d_model) if m.name == name)


# ------------------------------------------------------------------------------ Ouro: the stack run 4 times
# d 2048, 16 heads of 128 (MHA), no bias: q, k, v, o 4 x 2048² = 16,777,216; MLP 3 x 2048 x 5632 = 34,603,008;
# 4 RMSNorms 8,192 -> 51,388,416 a layer, x 24 = 1,233,321,984; untied embed + head 2 x 49,152 x 2048 = 201,326,592;
# final norm 2048; early_exit_gate 2048 + 1 -> 1,434,652,673 (Ouro: "1.4B")
OURO_14 = 1_434_652_673


def test_ouro_1_4b_counts_its_layers_once_and_runs_them_four_times():
    m = lr.load_model(FIX / "ouro_1_4b.json")
    assert m.params_total == OURO_14
    assert weight_bytes(m, "bf16") == 2 * OURO_14
    g, = m.layer_groups
    assert (g.count, g.copies, g.loops, g.norms) == (96, 24, 4, 4) and m.n_layers == 96
    # KV: one cache per layer and ut step (vLLM: an Attention per step): 96 x 2 (K, V) x 16 heads x 128 x 2 B
    assert kv_bytes_per_token(m, "bf16") == 96 * 2 * 16 * 128 * 2 == 786_432  # read as a plain decoder: 196,608
    # Ouro-2.6B: 48 of the same layers: 48 x 51,388,416 + 201,326,592 + 2048 + 2049
    big = load("ouro_1_4b", num_hidden_layers=48)
    assert big.params_total == 48 * 51_388_416 + 201_326_592 + 2048 + 2049 == 2_667_974_657  # card: "2.6B"
    assert kv_bytes_per_token(big, "bf16") == 192 * 2 * 16 * 128 * 2


def test_ouro_prices_every_run_and_stores_the_weights_once():
    """The looped model's steps cost what 96 plain layers of the same shape cost (every run reads the weights; the
    stack is far larger than any cache); its resident weights are the 24 layers'."""
    kw = dict(chip="h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    looped = lr.estimate(lr.load_model(FIX / "ouro_1_4b.json"), **kw)
    flat = lr.estimate(load("ouro_1_4b", num_hidden_layers=96, total_ut_steps=1), **kw)
    assert (looped.ttft_s, looped.tpot_s) == (flat.ttft_s, flat.tpot_s)
    # per chip: every parameter once, bf16, the exit gate's 2049 included (held beside the final norm since
    # 2026-11-28: 2_869_301_248 B before)
    assert looped.memory.per_chip_weight_bytes == 2 * OURO_14 == 2_869_305_346
    assert flat.memory.per_chip_weight_bytes > 3.5 * looped.memory.per_chip_weight_bytes
    assert looped.memory.kv_cache_bytes == flat.memory.kv_cache_bytes


@pytest.mark.parametrize("run", [
    lambda f: lr.estimate(f, "h100-sxm", pp=2),
    lambda f: lr.serve(f, "h100-sxm", prompt_len=512, gen_len=64, concurrency=8, pp=2),
])
def test_ouro_refuses_pipeline_stages(run):
    """vLLM's OuroForCausalLM has no pipeline support (SupportsLoRA only), and a stack run 4 times in turn is no
    stack of 96 layers to cut: pp > 1 is a ShardingError (it was priced as 96 layers over 2 stages)."""
    with pytest.raises(lr.RooflineError, match="looped stack"):
        run(FIX / "ouro_1_4b.json")


def test_ouro_memory_command_refuses_pipeline_stages(capsys):
    assert main(["memory", str(FIX / "ouro_1_4b.json"), "--chip", "h100-sxm", "--pp", "2"]) == 2
    assert "looped stack" in capsys.readouterr().err


@pytest.mark.parametrize("change, error", [
    ({"total_ut_steps": 0}, "total_ut_steps must be positive"),
    ({"total_ut_steps": None}, "total_ut_steps must be positive"),
    ({"total_ut_steps": "4"}, "total_ut_steps must be an integer"),
    ({"total_ut_steps": 2.5}, "total_ut_steps must be an integer"),
    ({"total_ut_steps": math.nan}, "total_ut_steps must be an integer"),
    ({"total_ut_steps": 10 ** 30}, "total_ut_steps"),
    ({"total_ut_steps": 5000}, "exceeds the physical bound of 100,000 layer runs"),
    ({"early_exit_threshold": "1"}, "early_exit_threshold must be a number in"),
    ({"early_exit_threshold": 1.5}, "early_exit_threshold must be a number in"),
    ({"early_exit_threshold": math.nan}, "early_exit_threshold must be a number in"),
])
def test_ouro_hostile_values_name_the_key(change, error):
    with pytest.raises(ModelConfigError, match=error):
        load("ouro_1_4b", **change)


def test_ouro_defaults_and_early_exit_note():
    cfg = raw("ouro_1_4b")
    del cfg["total_ut_steps"]  # vLLM's getattr(config, "total_ut_steps", 4)
    assert lr.load_model(cfg).params_total == OURO_14 and lr.load_model(cfg).n_layers == 96
    m = load("ouro_1_4b", early_exit_threshold=0.5)
    assert any("may leave the loop early" in a for a in m.assumptions)


# ------------------------------------------------------------------------------ MiniCPM
def test_minicpm_2b_is_tied_by_its_config_class():
    m = lr.load_model(FIX / "minicpm_2b_sft.json")
    # d 2304, 36 heads of 64 (MHA): q, k, v, o 4 x 2304² = 21,233,664; MLP 3 x 2304 x 5760 = 39,813,120; norms 4,608 ->
    # 61,051,392 a layer, x 40 = 2,442,055,680 (+ final norm 2,304: "2.4B excluding embeddings"); tied embedding
    # 122,753 x 2304 = 282,822,912 -> 2,724,880,896 ("2.7B"; untied, as read before: 3,007,703,808)
    assert m.tie_embeddings and m.params_total == 2_724_880_896
    assert kv_bytes_per_token(m, "bf16") == 40 * 2 * 36 * 64 * 2


def test_minicpm4_1_8b_and_a_legacy_minicpm4_config():
    m = lr.load_model(FIX / "minicpm4_1_8b.json")
    # d 4096, 32 heads of 128 over 2 KV heads: q, o 2 x 4096² = 33,554,432 + k, v 2 x 4096 x 256 = 2,097,152; MLP
    # 3 x 4096 x 16,384 = 201,326,592; norms 8,192 -> 236,986,368 x 32 = 7,583,563,776; untied 2 x 73,448 x 4096 =
    # 601,686,016; final 4,096 -> 8,185,253,888 ("8B")
    assert m.params_total == 8_185_253_888
    assert kv_bytes_per_token(m, "bf16") == 32 * 2 * 2 * 128 * 2 == 32_768
    # transformers' test of a legacy MiniCPM4 config (MiniCPM4-0.5B's shape, vocab 99 of the test, no
    # tie_word_embeddings: tied, as MiniCPMConfig's default): d 1024, 16 heads of 64 over 2: q, o 2 x 1024² + k, v
    # 2 x 1024 x 128 = 2,359,296; MLP 3 x 1024 x 4096 = 12,582,912; norms 2,048 -> 14,944,256 x 24 = 358,662,144;
    # tied 99 x 1024 = 101,376; final 1,024
    legacy = lr.load_model({"architectures": ["MiniCPMForCausalLM"], "model_type": "minicpm", "vocab_size": 99,
                            "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                            "num_attention_heads": 16, "num_key_value_heads": 2, "scale_emb": 12, "scale_depth": 1.4,
                            "dim_model_base": 256, "rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 32,
                                                                    "long_factor": [1.0] * 32,
                                                                    "original_max_position_embeddings": 32768}})
    assert legacy.tie_embeddings and legacy.params_total == 358_662_144 + 101_376 + 1_024


@pytest.mark.parametrize("model_type", ["minicpm", "minicpm4", "minicpm_sala"])
def test_minicpm4_infllm_v2_sparse_attention_is_refused_by_name(model_type):
    sparse = {"kernel_size": 32, "kernel_stride": 16, "init_blocks": 1, "block_size": 64, "window_size": 2048,
              "topk": 64, "use_nope": False, "dense_len": 8192}  # the MiniCPM4.1-8B card's block
    with pytest.raises(UnsupportedArchitectureError) as e:
        load("minicpm4_1_8b", model_type=model_type, sparse_config=sparse)
    text = str(e.value)
    assert "\n" not in text and all(w in text for w in ("sparse_config", "InfLLM-v2", "dense_len", "window_size"))
    assert load("minicpm4_1_8b", sparse_config=None).params_total == 8_185_253_888  # null: dense attention


def test_minicpm3_4b_mla_with_derived_value_heads():
    # transformers' MiniCPM3Config defaults ("match the openbmb/MiniCPM3-4B checkpoint"), without the two keys it
    # derives: v_head_dim (hidden / heads = 64) and tie_word_embeddings (true)
    cfg = {"model_type": "minicpm3", "vocab_size": 73448, "hidden_size": 2560, "intermediate_size": 6400,
           "num_hidden_layers": 62, "num_attention_heads": 40, "num_key_value_heads": 40,
           "max_position_embeddings": 32768, "rms_norm_eps": 1e-5, "kv_lora_rank": 256, "q_lora_rank": 768,
           "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "scale_emb": 12, "scale_depth": 1.4, "dim_model_base": 256}
    m = lr.load_model(cfg)
    # MLA: q_a 2560 x 768 = 1,966,080 + q_a norm 768 + q_b 768 x 40 x 96 = 2,949,120; kv_a 2560 x (256 + 32) = 737,280
    # + kv_a norm 256 + kv_b 256 x 40 x (64 + 64) = 1,310,720; o 40 x 64 x 2560 = 6,553,600 -> 13,517,824; MLP
    # 3 x 2560 x 6400 = 49,152,000; norms 5,120 -> 62,674,944 x 62 = 3,885,846,528; tied 73,448 x 2560 = 188,026,880;
    # final 2,560 -> 4,073,875,968 ("MiniCPM3-4B")
    assert m.params_total == 4_073_875_968
    assert kv_bytes_per_token(m, "bf16") == 62 * (256 + 32) * 2  # the latent and the rope key
    assert lr.load_model({**cfg, "v_head_dim": 64, "tie_word_embeddings": True}).params_total == 4_073_875_968
    with pytest.raises(ModelConfigError, match="hidden_size .2561. is not divisible"):
        lr.load_model({**cfg, "hidden_size": 2561})


# ------------------------------------------------------------------------------ InternLM2
def test_internlm2_counts_match_the_published_sizes():
    # internlm2-chat-1_8b: d 2048, 16 heads of 128 over 8: wqkv 2048 x (2048 + 2 x 1024) = 8,388,608 + wo 2048² =
    # 4,194,304; MLP 3 x 2048 x 8192 = 50,331,648; norms 4,096 -> 62,918,656 x 24 = 1,510,047,744; untied
    # 2 x 92,544 x 2048 = 379,060,224; final 2,048 -> 1,889,110,016 ("1.89B")
    small = lr.load_model(FIX / "internlm2_chat_1_8b.json")
    assert small.params_total == 1_889_110_016
    assert kv_bytes_per_token(small, "bf16") == 24 * 2 * 8 * 128 * 2
    # internlm2_5-7b-chat: wqkv 4096 x (4096 + 2048) = 25,165,824 + wo 16,777,216; MLP 3 x 4096 x 14,336 = 176,160,768;
    # norms 8,192 -> 218,112,000 x 32 = 6,979,584,000; untied 2 x 92,544 x 4096 = 758,120,448; final 4,096
    seven = lr.load_model(FIX / "internlm2_5_7b_chat.json")
    assert seven.params_total == 7_737_708_544  # "7.74B"
    assert kv_bytes_per_token(seven, "bf16") == 32 * 2 * 8 * 128 * 2
    # internlm2_5-20b (the catalog's shape): d 6144, 48 heads of 128 over 8: wqkv 6144 x 8192 = 50,331,648 + wo
    # 37,748,736; MLP 3 x 6144 x 16,384 = 301,989,888; norms 12,288 -> 390,082,560 x 48 = 18,723,962,880; untied
    # 2 x 92,544 x 6144 = 1,137,180,672; final 6,144
    twenty = load("internlm2_5_7b_chat", hidden_size=6144, num_hidden_layers=48, num_attention_heads=48,
                  intermediate_size=16384)
    assert twenty.params_total == 19_861_149_696  # "19.86B"


def test_internlm2_bias_is_its_config_class_default():
    cfg = raw("internlm2_chat_1_8b")
    del cfg["bias"]  # InternLM2Config(bias=True): wqkv (16 + 2 x 8) x 128 = 4,096 and wo 2,048 biases a layer, x 24
    m = lr.load_model(cfg)
    assert m.params_total == 1_889_110_016 + 24 * (4096 + 2048)
    assert one_matrix(m, "ffn.down").bias is False
    with pytest.raises(ModelConfigError, match="bias must be true or false"):
        load("internlm2_chat_1_8b", bias="no")


# ------------------------------------------------------------------------------ JAIS
def test_jais_13b_and_30b_gpt2_blocks_with_swiglu_and_alibi():
    m = lr.load_model(FIX / "jais_13b_chat.json")
    # d 5120, 40 heads of 128 (MHA), every Linear with bias: c_attn 5120 x 15,360 + 15,360 = 78,658,560; c_proj
    # 5120² + 5120 = 26,219,520; c_fc, c_fc2 2 x (5120 x 13,653 + 13,653) = 139,834,026; mlp.c_proj 13,653 x 5120 + 5120
    # = 69,908,480; ln_1, ln_2 (weight + bias) 20,480 -> 314,641,066 x 40 = 12,585,642,640; tied wte 84,992 x 5120 =
    # 435,159,040; ln_f 10,240; ALiBi slopes 40 -> 13,020,811,960 ("13B")
    assert m.params_total == 13_020_811_960
    assert kv_bytes_per_token(m, "bf16") == 40 * 2 * 40 * 128 * 2
    assert m.norm == "layernorm" and m.tie_embeddings and m.learned_positions == 0
    assert not any(g.attention.rope for g in m.layer_groups)
    assert one_matrix(m, "ffn.up_gate").n == 2 * 13653 and one_matrix(m, "ffn.up_gate").bias
    # 30B: c_attn 7168 x 21,504 + 21,504 = 154,162,176; c_proj 7168² + 7168 = 51,387,392; c_fc, c_fc2
    # 2 x (7168 x 19,114 + 19,114) = 274,056,532; mlp.c_proj 19,114 x 7168 + 7168 = 137,016,320; norms 28,672 ->
    # 616,651,092 x 48 = 29,599,252,416; tied 84,992 x 7168 = 609,222,656; ln_f 14,336; slopes 56
    big = lr.load_model(FIX / "jais_30b_chat_v3.json")
    assert big.params_total == 30_208_489_464  # "30B"
    assert kv_bytes_per_token(big, "bf16") == 48 * 2 * 56 * 128 * 2


def test_jais_learned_positions_and_what_it_refuses():
    # JAISConfig's default position_embedding_type 'learned': wpe 2048 x 5120 = 10,485,760, no slopes
    learned = load("jais_13b_chat", position_embedding_type="learned")
    assert learned.params_total == 13_020_811_960 - 40 + 10_485_760 and learned.learned_positions == 2048
    cfg = raw("jais_13b_chat")
    del cfg["position_embedding_type"]
    assert lr.load_model(cfg).learned_positions == 2048
    with pytest.raises(UnsupportedArchitectureError, match="activation_function='gelu_new'.*SwiGLU"):
        load("jais_13b_chat", activation_function="gelu_new")
    del cfg["activation_function"]  # JAISConfig's default gelu_new: GPT-2's MLP, not SwiGLU
    with pytest.raises(UnsupportedArchitectureError, match="activation_function"):
        lr.load_model(cfg)


@pytest.mark.parametrize("change, error", [
    ({"position_embedding_type": "rope"}, "position_embedding_type must be 'alibi' or 'learned'"),
    ({"position_embedding_type": 1}, "position_embedding_type must be a string"),
    ({"activation_function": None}, "activation_function"),
    ({"n_inner": -1}, "n_inner must be positive"),
    ({"n_head": math.nan}, "n_head must be an integer"),
    ({"n_embd": 10 ** 30}, "n_embd"),
])
def test_jais_hostile_values_name_the_key(change, error):
    with pytest.raises(ModelConfigError, match=error):
        load("jais_13b_chat", **change)


# ------------------------------------------------------------------------------ TeleChat2
def test_telechat2_115b_matches_its_checkpoint_index():
    m = lr.load_model(FIX / "telechat2_115b.json")
    # d 8192, 64 heads of 128 over 8: query 8192² = 67,108,864 + key_value 8192 x 2048 = 16,777,216 + dense 8192² +
    # bias 8,192 = 67,117,056; MLP 3 x 8192 x 40,960 = 1,006,632,960 + down_proj bias 8,192; 2 RMSNorms 16,384 ->
    # 1,157,660,672 x 96 = 111,135,424,512; untied 2 x 131,072 x 8192 = 2,147,483,648; final norm 8,192
    assert m.params_total == 113_282_916_352 == 453_131_665_408 // 4  # the index's float32 total_size
    assert m.norm == "rmsnorm"
    assert kv_bytes_per_token(m, "bf16") == 96 * 2 * 8 * 128 * 2 == 393_216
    assert [one_matrix(m, n).bias for n in ("attn.qkv_proj", "attn.o_proj", "ffn.up_gate", "ffn.down")] == \
        [False, True, False, True]
    # the graph's resident weights carry the same biases (bf16, one chip)
    est = lr.estimate(m, chip="h100-sxm", batch=1, prompt_len=128, gen_len=2)
    assert est.memory.per_chip_weight_bytes == 2 * 113_282_916_352
    # TeleChat2-3B / 7B / 35B: no GQA (the README), no num_key_value_heads: one KV head per query head
    cfg = raw("telechat2_115b")
    del cfg["num_key_value_heads"]
    assert kv_bytes_per_token(lr.load_model(cfg), "bf16") == 96 * 2 * 64 * 128 * 2


def test_telechat2_in_transformers_keys():
    # transformers' TeleChat2 (Llama's keys): q/k/v bias = attention_bias, o_proj and down_proj always with one. d 64,
    # 4 heads of 16 over 2: attention 2 x 64² + 2 x 64 x 32 = 12,288 + o bias 64; MLP 3 x 64 x 128 = 24,576 + down bias
    # 64; norms 128 -> 37,120 x 2; untied 2 x 100 x 64 = 12,800; final 64
    cfg = {"model_type": "telechat2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 256}
    assert lr.load_model(cfg).params_total == 2 * 37_120 + 12_800 + 64
    # with attention_bias: + (4 + 2 x 2) x 16 = 128 a layer
    assert lr.load_model({**cfg, "attention_bias": True}).params_total == 2 * 37_248 + 12_800 + 64


@pytest.mark.parametrize("change, error", [
    ({"n_head": "64"}, "n_head must be an integer"),
    ({"num_key_value_heads": 0}, "num_key_value_heads must be positive"),
    ({"num_key_value_heads": -8}, "num_key_value_heads must be positive"),
    ({"num_key_value_heads": 7}, "not divisible"),
    ({"ffn_hidden_size": None}, "ffn_hidden_size"),
    ({"n_layer": 10 ** 30}, "n_layer"),
    ({"hidden_size": math.inf}, "hidden_size must be an integer"),
])
def test_telechat2_hostile_values_name_the_key(change, error):
    with pytest.raises(ModelConfigError, match=error):
        load("telechat2_115b", **change)


# ------------------------------------------------------------------------------ every fixture runs end to end
@pytest.mark.parametrize("name", NAMES)
def test_estimate_memory_and_serve_run_on_each_fixture(name):
    path = FIX / f"{name}.json"
    est = lr.estimate(path, chip="h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    assert est.ttft_s > 0 and est.tpot_s > 0 and est.memory.weight_bytes > 0
    # JAIS-13B: 40 heads and an MLP of 13,653 = 9 x 37 x 41 share no tp (vLLM splits c_fc by columns): tp 1 only
    tp = {"jais_13b_chat": 1, "jais_30b_chat_v3": 2}.get(name, 4)  # JAIS-30B: 19,114 = 2 x 9,557
    assert lr.estimate(path, chip="h100-sxm", batch=8, prompt_len=1024, gen_len=16, tp=tp).tpot_s > 0
    if name == "jais_13b_chat":
        with pytest.raises(lr.ShardingError, match="13653 is not divisible by 2"):
            lr.estimate(path, chip="h100-sxm", tp=2)
    s = lr.serve(path, "h100-sxm", prompt_len=512, gen_len=64, concurrency=8, tp=8 if name == "telechat2_115b" else 1)
    assert s.output_tokens_per_s > 0 and s.ttft_s > 0


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", ["x", -3, math.nan, math.inf, 10 ** 30, pytest.param(10 ** 5000, id="10**5000"), None,
                                   [4], {"a": 1}, True])
def test_hostile_values_of_read_keys_raise_the_project_error(name, value):
    """Each key set to the value: a spec with positive counts and a finite KV cache, or a one-line RooflineError."""
    cfg = raw(name)
    for key in [k for k in cfg if k not in ("architectures", "auto_map", "model_type")]:
        try:
            m = lr.load_model({**cfg, key: value})
        except RooflineError as e:
            assert str(e) and "\n" not in str(e), key
        else:
            assert m.params_total > 0 and math.isfinite(kv_bytes_per_token(m)), key
