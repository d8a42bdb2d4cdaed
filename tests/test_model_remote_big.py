"""Remote-code families vLLM serves, read from their real config.json: Step-3 (MFA: one KV head, a low-rank query),
Grok-1 / Grok-2 (4 norms a layer, gated-GELU experts, Grok-2's residual MoE MLP), Snowflake Arctic (a residual MLP
beside a MoE of 128 experts).

Every expected count is hand arithmetic in the comment beside it, from the family's modeling code (vLLM's model file
and the hub's remote code it ports), checked against the published figure.

Fixtures (tests/fixtures/configs), and how each was read before its reader:
- step3.json: stepfun-ai/step3 config.json as the hub shows it (huggingface.co/stepfun-ai/step3/blob/refs%2Fpr%2F2/
  config.json): the step3_vl wrapper and its text_config verbatim (hidden 7168, 61 layers, 64 heads, 1 attention
  group, head_dim 256, share_q_dim 2048, 48 experts of 5120, top-3, share_expert_dim 5120, moe_layers_enum 4..59,
  vocabulary 128,815). The excerpt ends inside vision_config after its hidden_size (1792): the fixture keeps that key
  only (the vision tower is not counted either way). rms_norm_eps and tie_word_embeddings are not in the text_config:
  Step3TextConfig's 1e-5 and vLLM's separate lm_head (ParallelLMHead, never tied) apply. StepFun's model card (GitHub
  stepfun-ai/Step3 README): 61 layers, 5 dense, "Total Parameters (LLM) 316B", "Activated Params per Token 38B",
  "Total Parameters (VLM) 321B". Before: refused as an unknown model_type setting keys it did not read
  (moe_layers_enum, share_expert_dim).
- grok1.json: hpcai-tech/grok-1 config.json verbatim (huggingface.co/hpcai-tech/grok-1/blob/main/config.json, commit
  015a18b): no model_type (auto_map to configuration_grok1.Grok1Config, model_type grok-1), architectures
  Grok1ModelForCausalLM, hidden 6144, 64 layers, 48 / 8 heads, 8 experts of 32,768, top-2, tied embeddings. xAI's
  README (xai-org/grok-1): "314B parameter Mixture of Experts model", "86B active parameters" (neither follows from
  the architecture: the exact count below is 315.68B, 83.76B active). Before: read Llama-style with 2 norms a layer,
  315,684,034,560 (786,432 short).
- grok1_keyfan.json: keyfan/grok-1-hf config.json verbatim (huggingface.co/keyfan/grok-1-hf/blob/main/config.json):
  the same model under model_type grok (its modeling_grok.py, Mixtral-derived: four RMSNorms a layer, a router without
  bias, gated experts), hidden_act gelu_new, num_local_experts 8, tie_word_embeddings absent (GrokConfig's true).
  Before: its experts read ungated from gelu_new, 213,410,125,824 parameters instead of 315,684,820,992.
- grok2.json: xai-org/grok-2 config.json as a mirror copies it whole (huggingface.co/jhpristine/grok-2/blob/main/
  config.json; the same keys and values in sgl-jax's Grok-2 test configs, "model_type": "git" included):
  architectures Grok1ForCausalLM, hidden 8192, 64 layers, 64 / 8 heads of 128, residual_moe true, intermediate_size
  32,768 (the residual MLP), moe_intermediate_size 16,384, 8 experts top-2, sliding_window_size -1,
  global_attn_every_n 1. tie_word_embeddings absent: GitConfig's false (the class model_type 'git' names; vLLM then
  loads a separate lm_head). TevunahAi's grok-2-FP8 card (base model xai-org/grok-2): "Total Parameters 269.5B",
  "Active Parameters ~115B (2 of 8 experts)". Before: refused as transformers' GIT (model_type git).
- arctic_instruct.json: Snowflake/snowflake-arctic-instruct config.json verbatim (huggingface.co/Snowflake/
  snowflake-arctic-instruct/blob/main/config.json): hidden 7168, 35 layers, 56 / 8 heads, 128 experts of 4864, top-2,
  moe_layer_frequency 1, parallel_attn_mlp_res and use_residual true, vocabulary 32,000, untied. Snowflake (model
  card, as OpenRouter quotes it): "a 10B dense transformer model with a residual 128x3.66B MoE MLP resulting in 480B
  total and 17B active parameters chosen using a top-2 gating". Before: refused as an unknown model_type setting keys
  it did not read (moe_layer_frequency, moe_token_dropping, moe_train_capacity_factor).
"""

import json
import math
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.errors import ModelConfigError, UnsupportedArchitectureError
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import kv_bytes_per_token, weight_bytes, weight_bytes_per_chip
from llm_roofline.sharding import Sharding

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"


def fixture(name: str):
    return lr.load_model(FIX / f"{name}.json")


def raw(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def step3_text(**change) -> dict:
    cfg = raw("step3")
    return {**cfg, "text_config": {**cfg["text_config"], **change}}


# ------------------------------------------------------------------------------ Step-3 (MFA)
def test_step3_mfa_one_kv_head_low_rank_query_and_shared_expert():
    m = fixture("step3")
    # d 7168, 64 heads x 256, one KV head, share_q_dim 2048: qkv_proj 7168 x (2048 + 256 + 256) = 18,350,080;
    #   wq 2048 x 16,384 = 33,554,432; o_proj 16,384 x 7168 = 117,440,512; inter_norm 2048 -> 169,347,072;
    #   2 norms 14,336 -> 169,361,408 per layer
    # layers 0-3 and 60 dense: 3 x 7168 x 18,432 = 396,361,728
    # layers 4-59 (56): 48 experts + 1 shared of 3 x 7168 x 5120 = 110,100,480 each -> 5,394,923,520 + router
    #   48 x 7168 = 344,064 (no bias) -> 5,395,267,584
    # untied embedding + LM head 2 x 128,815 x 7168 = 1,846,691,840; final norm 7168
    expected = 61 * 169_361_408 + 5 * 396_361_728 + 56 * 5_395_267_584 + 1_846_691_840 + 7168
    assert m.params_total == expected == 316_294_538_240  # StepFun: "Total Parameters (LLM) 316B"
    # active: 3 of 48 experts + the shared one: 4 x 110,100,480 + 344,064 = 440,745,984 per MoE layer
    assert m.params_active == expected - 56 * (5_395_267_584 - 440_745_984) == 38_841_328_640  # StepFun: "38B"
    assert [(g.name, g.count) for g in m.layer_groups] == [("dense", 5), ("moe", 56)]
    a = m.layer_groups[1].attention
    assert (a.kind, a.n_heads, a.n_kv_heads, a.head_dim, a.q_lora_rank) == ("mqa", 64, 1, 256, 2048)
    assert (m.layer_groups[1].ffn.d_shared, m.layer_groups[1].ffn.router_bias, m.tie_embeddings) == (5120, False, False)
    # KV per token: 61 layers x one head x (256 + 256) x 2 B = 62,464 (64 KV heads would be 64 times that)
    assert kv_bytes_per_token(m) == 61 * 512 * 2 == 62_464
    assert not [a for a in m.assumptions if "not used by the reader" in a]


def test_step3_graph_replicates_the_low_rank_projection_and_splits_wq():
    m = fixture("step3")
    ops = {o.name: o for o in build_ops(m, Phase.decode(1, 1000), Sharding(tp=8)) if o.group == "moe"}
    # qkv_proj replicated (vLLM's ReplicatedLinear): 7168 x 2560 x 2 B on every chip; wq column-parallel: 2048 x
    # (16,384 / 8) x 2 B; inter_norm over the 2048 query columns, its weights 2048 x 2 B
    assert float(ops["attn.qkv_proj"].weight_bytes) == 7168 * 2560 * 2 and ops["attn.qkv_proj"].style == "replicated"
    assert float(ops["attn.q_b_proj"].weight_bytes) == 2048 * 2048 * 2
    assert float(ops["attn.q_norm"].weight_bytes) == 2048 * 2
    # the graph holds every weight the spec counts (bf16: 2 B a parameter)
    one = build_ops(m, Phase.decode(1, 1000))
    assert weight_bytes_per_chip(one) == weight_bytes(m) == 2 * 316_294_538_240


def test_step3_keys_the_reader_reads_and_what_it_refuses():
    text = {k: v for k, v in raw("step3")["text_config"].items() if k != "model_type"}
    # a text_config without its own model_type under the step3_vl wrapper is step3_text
    assert lr.load_model({"model_type": "step3_vl", "text_config": text}).params_total == 316_294_538_240
    # without moe_layers_enum, Step3TextConfig's default tuple (4..59): the same 56 MoE layers, said so
    no_enum = lr.load_model(step3_text(moe_layers_enum=None))
    assert no_enum.params_total == 316_294_538_240
    assert any("Step3TextConfig's default, layers 4 to 59" in a for a in no_enum.assumptions)
    # one MoE layer more (layer 60): + 5,395,267,584 - 396,361,728
    assert lr.load_model(step3_text(moe_layers_enum="4," + ",".join(map(str, range(5, 61))))).params_total == \
        316_294_538_240 + 5_395_267_584 - 396_361_728
    # Step3TextAttention builds one KV head whatever the config says: another count is refused by name
    for key in ("num_attention_groups", "num_key_value_heads"):
        with pytest.raises(UnsupportedArchitectureError, match=f"{key}=4 .*one key / value head"):
            lr.load_model(step3_text(**{key: 4}))
    for change, why in (({"share_q_dim": "x"}, "share_q_dim must be an integer"),
                        ({"share_q_dim": -1}, "share_q_dim must be positive"),
                        ({"share_q_dim": float("nan")}, "share_q_dim must be an integer"),
                        ({"share_q_dim": 10**30}, "share_q_dim = .* exceeds the physical bound"),
                        ({"head_dim": None}, "the config has no head_dim"),
                        ({"share_expert_dim": True}, "share_expert_dim must be an integer"),
                        ({"moe_layers_enum": "4,x"}, "moe_layers_enum must be comma-separated")):
        with pytest.raises(lr.ModelConfigError, match=why):
            lr.load_model(step3_text(**change))


# ------------------------------------------------------------------------------ Grok-1
def test_grok1_four_norms_and_gated_gelu_experts():
    m = fixture("grok1")
    # d 6144, 48 heads x 128, 8 KV heads: q, o 2 x 6144^2 = 75,497,472 + k, v 2 x 6144 x 1024 = 12,582,912
    #   -> 88,080,384; 4 RMSNorms (pre/post attention, pre/post MoE) 24,576
    # 8 gated experts of 3 x 6144 x 32,768 = 603,979,776 -> 4,831,838,208 + router 6144 x 8 = 49,152 (no bias)
    # -> 4,919,992,320 per layer, x 64; tied embedding 131,072 x 6144 = 805,306,368; final norm 6144
    expected = 64 * (88_080_384 + 24_576 + 4_831_838_208 + 49_152) + 805_306_368 + 6144
    assert m.params_total == expected == 315_684_820_992
    # xAI: "314B" (the exact count is 0.5% above)
    # active: 2 of 8 experts
    assert m.params_active == expected - 64 * 6 * 603_979_776 == 83_756_587_008
    g = m.layer_groups[0]
    assert (m.model_type, g.name, g.count, g.norms, g.ffn.gated, g.ffn.activation) == ("grok-1", "moe", 64, 4, True,
                                                                                        "gelu")
    assert m.tie_embeddings and kv_bytes_per_token(m) == 64 * 8 * 256 * 2 == 262_144
    # the same model under the saved model_type (amd/grok-1-FP8-KV's copy states grok-1) and keyfan's port (grok,
    # gelu_new: the experts are gated all the same)
    assert lr.load_model({**raw("grok1"), "model_type": "grok-1"}).params_total == expected
    assert fixture("grok1_keyfan").params_total == expected
    ops = build_ops(m, Phase.decode(1, 1000))
    assert weight_bytes_per_chip(ops) == weight_bytes(m) == 2 * expected


# ------------------------------------------------------------------------------ Grok-2
def test_grok2_git_config_residual_moe_mlp_beside_the_experts():
    m = fixture("grok2")
    # d 8192, 64 heads x 128, 8 KV heads: q, o 2 x 8192^2 = 134,217,728 + k, v 2 x 8192 x 1024 = 16,777,216
    #   -> 150,994,944; 4 norms 32,768
    # residual MLP (gated GELU) 3 x 8192 x 32,768 = 805,306,368; 8 experts of 3 x 8192 x 16,384 = 402,653,184
    #   -> 3,221,225,472; router 8192 x 8 = 65,536
    # -> 4,177,625,088 per layer, x 64; untied embedding + LM head 2 x 131,072 x 8192 = 2,147,483,648; final norm 8192
    expected = 64 * (150_994_944 + 32_768 + 805_306_368 + 3_221_225_472 + 65_536) + 2_147_483_648 + 8192
    assert m.params_total == expected == 269_515_497_472  # TevunahAi: "Total Parameters 269.5B"
    assert m.params_active == expected - 64 * 6 * 402_653_184 == 114_896_674_816  # TevunahAi: "~115B"
    g = m.layer_groups[0]
    assert (m.model_type, g.norms, g.ffn.d_expert, g.ffn.d_shared, m.tie_embeddings) == ("grok-2", 4, 16384, 32768,
                                                                                         False)
    assert any("model_type 'git'" in a for a in m.assumptions)
    assert kv_bytes_per_token(m) == 64 * 8 * 256 * 2
    ops = build_ops(m, Phase.decode(1, 1000))
    assert weight_bytes_per_chip(ops) == weight_bytes(m) == 2 * expected
    # without residual_moe: no dense MLP (64 x 805,306,368 fewer)
    assert lr.load_model({**raw("grok2"), "residual_moe": False}).params_total == expected - 64 * 805_306_368
    # transformers' GIT (an image-to-text model, no Grok architecture) is still refused
    with pytest.raises(UnsupportedArchitectureError, match="model_type='git'"):
        lr.load_model({**raw("grok2"), "architectures": ["GitForCausalLM"]})


@pytest.mark.parametrize("change, error, why", [
    ({"sliding_window_size": 4096}, UnsupportedArchitectureError, "sliding_window_size=4096.*windowed layers"),
    ({"global_attn_every_n": 2}, UnsupportedArchitectureError, "global_attn_every_n=2"),
    ({"sliding_window_size": float("nan")}, UnsupportedArchitectureError, "sliding_window_size=nan"),
    ({"head_dim": 64}, UnsupportedArchitectureError, "head_dim 64 .* hidden_size / num_attention_heads"),
    ({"residual_moe": "yes"}, ModelConfigError, "residual_moe must be true or false"),
    ({"num_local_experts": None}, ModelConfigError, "every Grok layer is a MoE"),
    ({"num_experts": 16}, ModelConfigError, r"num_experts \(16\) and num_local_experts \(8\) differ"),
    ({"moe_intermediate_size": -1}, ModelConfigError, "moe_intermediate_size must be positive"),
    ({"num_local_experts": 10**30}, ModelConfigError, "num_local_experts = .* exceeds the physical bound"),
    ({"num_experts_per_tok": float("nan")}, ModelConfigError, "num_experts_per_tok must be an integer"),
])
def test_grok_hostile_values_name_the_key(change, error, why):
    with pytest.raises(error, match=why):
        lr.load_model({**raw("grok2"), **change})


# ------------------------------------------------------------------------------ Snowflake Arctic
def test_arctic_residual_mlp_beside_128_experts():
    m = fixture("arctic_instruct")
    # d 7168, 56 heads x 128, 8 KV heads: q, o 2 x 7168^2 = 102,760,448 + k, v 2 x 7168 x 1024 = 14,680,064
    #   -> 117,440,512; 3 norms (input, post-attention, residual_layernorm) 21,504
    # 128 experts of 3 x 7168 x 4864 = 104,595,456 -> 13,388,218,368; router 7168 x 128 = 917,504 (no bias);
    #   residual MLP 3 x 7168^2 = 154,140,672
    # -> 13,660,738,560 per layer, x 35; untied embedding + LM head 2 x 32,000 x 7168 = 458,752,000; final norm 7168
    expected = 35 * (117_440_512 + 21_504 + 13_388_218_368 + 917_504 + 154_140_672) + 458_752_000 + 7168
    assert m.params_total == expected == 478_584_608_768  # Snowflake: "480B total"
    assert m.params_active == expected - 35 * 126 * 104_595_456 == 17_318_647_808  # "17B active"
    # Snowflake's split: each expert 35 x 104,595,456 = 3.66B ("128x3.66B"); the rest ~10B ("a 10B dense transformer")
    #   35 x 104,595,456 = 3,660,840,960; 478,584,608,768 - 128 x 3,660,840,960 = 9,996,965,888
    g = m.layer_groups[0]
    assert (g.name, g.count, g.norms, g.ffn.d_expert, g.ffn.d_shared, g.ffn.top_k) == ("moe", 35, 3, 4864, 7168, 2)
    assert kv_bytes_per_token(m) == 35 * 8 * 256 * 2 == 143_360
    assert not [a for a in m.assumptions if "not used by the reader" in a]
    ops = build_ops(m, Phase.decode(1, 1000))
    assert weight_bytes_per_chip(ops) == weight_bytes(m) == 2 * expected  # the residual norm priced too
    assert sum(o.name == "norm.shared" for o in ops) == 1


def test_arctic_layer_frequency_and_the_residual_switches():
    cfg = raw("arctic_instruct")
    # moe_layer_frequency 2: layers 1, 3, ..., 33 (0-based) MoE with the residual MLP; the other 18 a dense MLP of
    # 4864 (3 x 7168 x 4864 = 104,595,456) behind 2 norms
    m = lr.load_model({**cfg, "moe_layer_frequency": 2})
    assert [(g.name, g.count, g.norms, g.ffn.d_shared) for g in m.layer_groups] == [("dense", 18, 2, 0),
                                                                                   ("moe", 17, 3, 7168)]
    dense_layer = 117_440_512 + 2 * 7168 + 104_595_456
    assert m.params_total == 478_584_608_768 - 18 * (13_660_738_560 - dense_layer)
    # without the residual MLP (both switches off): 35 x (154,140,672 + 7168) fewer
    off = lr.load_model({**cfg, "parallel_attn_mlp_res": False, "use_residual": False})
    assert off.params_total == 478_584_608_768 - 35 * (154_140_672 + 7168)
    # the hub's modeling code and vLLM read different switches: a config where they differ is refused by name
    with pytest.raises(UnsupportedArchitectureError, match="use_residual=false with parallel_attn_mlp_res=true"):
        lr.load_model({**cfg, "use_residual": False})
    with pytest.raises(UnsupportedArchitectureError, match="DeepSpeed FP quantization"):
        lr.load_model({**cfg, "quantization": {"q_bits": 8}})
    for change, why in (({"moe_layer_frequency": 0}, "moe_layer_frequency must be positive"),
                        ({"moe_layer_frequency": "x"}, "moe_layer_frequency must be an integer"),
                        ({"moe_layer_frequency": float("nan")}, "moe_layer_frequency must be an integer"),
                        ({"moe_layer_frequency": None}, "the config has no moe_layer_frequency"),
                        ({"parallel_attn_mlp_res": "yes"}, "parallel_attn_mlp_res must be true or false"),
                        ({"use_residual": 1.5}, "use_residual must be true or false")):
        with pytest.raises(lr.ModelConfigError, match=why):
            lr.load_model({**cfg, **change})


# ------------------------------------------------------------------------------ estimate / serve run
@pytest.mark.parametrize("name, kw", [("step3", dict(tp=8)), ("grok1", dict(tp=8, ep=8)), ("grok2", dict(tp=8)),
                                      ("arctic_instruct", dict(tp=8, ep=8))])
def test_estimate_memory_and_serve_run(name, kw):
    path = FIX / f"{name}.json"
    est = lr.estimate(path, chip="h200", batch=8, prompt_len=1024, gen_len=128, **kw)
    assert est.memory.fits and all(math.isfinite(x) and x > 0 for x in (est.ttft_s, est.tpot_s))
    assert lr.estimate(path, chip="h100-sxm", batch=8, prompt_len=1024, gen_len=128).memory.fits is False
    served = lr.serve(path, "h200", prompt_len=1024, gen_len=128, concurrency=8, **kw)
    assert math.isfinite(served.tpot_s) and served.tpot_s > 0
