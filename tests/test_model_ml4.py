"""Mistral Large 4 (model_type mistral_large4, its text model mistral_large4_text; read by
llm_roofline/model/mistral_large4.py).

Its text model: MLA without a query latent, queries scaled per head by scale x log(position + 1) + bias, GLM-5's DSA
(indexer queries from x through a LayerNorm), NoPE layers (no_rope_layers), latents reused across layers
(kv_source_layers), Mistral-4's MoE; a learned scale per RoPE frequency.

Fixture tests/fixtures/configs/mistral_large4_default.json: no published config.json of
mistralai/Mistral-Large-4-1T-A52B was found (its hub page was an upcoming-release placeholder in the public copies
searched): this is transformers 5.24's MistralLarge4Config().to_dict() (the text config's and the Pixtral vision
config's defaults, the class docstring's checkpoint mistralai/Mistral-Large-4-1T-A52B), less the keys that shape
nothing (id2label, return_dict, ...). Mistral's published figures, as public copies of its model page and Hugging Face
page quote them: "1.05T total parameters, 52B active, a 1.6B vision encoder", "49B active per token, 52B including
embeddings and output layers", a 1M context.

"transformers meta count" = the model class of transformers 5.24 built on the meta device (torch, a separate
virtualenv; not a dependency of this project), parameters summed: MistralLarge4ForConditionalGeneration's language
model and LM head (its vision tower, 1,637,107,712, and projector, 67,110,912, left out), or MistralLarge4TextModel
plus vocab_size x hidden_size for the LM head. "transformers' cache" = the elements a DynamicCache holds (keys,
values, indexer keys) after a 6-token forward of MistralLarge4TextModel on CPU, per token.
"""

import copy
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import llm_roofline as lr
from llm_roofline.errors import ModelConfigError, RooflineError
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import kv_bytes_per_token, weight_bytes
from llm_roofline.model.spec import ModelSpec

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"


def raw() -> dict:
    return json.loads((FIX / "mistral_large4_default.json").read_text())


def with_text(**change) -> dict:
    cfg = raw()
    cfg["text_config"] = {**cfg["text_config"], **change}
    return cfg


def one_layer(spec: ModelSpec, group: str) -> ModelSpec:
    g = next(g for g in spec.layer_groups if g.name == group)
    return replace(spec, layer_groups=(replace(g, count=1),), head_params=0)


def decode_ops(spec: ModelSpec, group: str) -> dict:
    return {o.name: o for o in build_ops(one_layer(spec, group), Phase.decode(1, 4096)) if o.group != "model"}


# ------------------------------------------------------------------------------ MistralLarge4Config()
# d 6144, 64 heads, qk_nope 64 + qk_rope 64, v 128, kv_lora_rank 512.
# RoPE layer (54 of 72: no_rope_layers 0 on every 4th): q_proj 6144 x 64 x 128 = 50,331,648; kv_a 6144 x (512 + 64)
#   = 3,538,944; kv_a_layernorm 512; kv_b 512 x 64 x (64 + 128) = 6,291,456; o 64 x 128 x 6144 = 50,331,648;
#   softmax scaling 2 x 64 = 128 -> 110,494,336
# NoPE layer (18): kv_a 6144 x 512 = 3,145,728; kv_b 512 x 64 x (128 + 128) = 8,388,608 -> 112,198,272
# indexer (every layer): wq_b 6144 x 32 x 128 = 25,165,824 + wk 6144 x 128 = 786,432 + k_norm 2 x 128 + weights_proj
#   6144 x 32 = 196,608 + q_input_norm 2 x 6144 = 12,288 + softmax scaling 2 x 32 = 64 -> 26,161,472
# layer 0 dense 3 x 6144 x 24,576 = 452,984,832; 71 MoE layers: 128 experts + 1 shared of 3 x 6144 x 6144
#   = 113,246,208 each + router 128 x 6144 = 786,432 -> 14,609,547,264; 2 norms 12,288 a layer
# untied embed + head 2 x 204,800 x 6144 = 2,516,582,400; final norm 6144; rotary alpha 64 / 2 = 32
ML4 = (54 * 110_494_336 + 18 * 112_198_272 + 72 * 26_161_472 + 72 * 12_288 + 452_984_832 + 71 * 14_609_547_264
       + 2_516_582_400 + 6144 + 32)


def test_mistral_large4_default_config():
    m = lr.load_model(FIX / "mistral_large4_default.json")
    assert m.params_total == ML4 == 1_050_118_202_912  # = transformers meta count
    # Mistral: "1.05T total parameters" (+ the 1.6B vision encoder: 1,051,755,310,624, still 1.05T)
    assert round((m.params_total + 1_637_107_712) / 1e12, 2) == 1.05
    # active: 4 of 128 experts, 124 x 113,246,208 = 14,042,529,792 fewer a MoE layer
    assert m.params_active == ML4 - 71 * 14_042_529_792 == 53_098_587_680
    # without the embedding table 51,840,296,480 (Mistral: "52B including embeddings and output layers"); without it
    # and the LM head 50,582,005,280 (Mistral: "49B active per token"): not the defaults' figure, left as found
    assert [(g.name, g.count) for g in m.layer_groups] == [
        ("rope.dsa.dense", 1), ("rope.dsa.moe", 53), ("nope.dsa.moe", 18)]
    rope, nope = m.layer_groups[1].attention, m.layer_groups[2].attention
    assert (rope.q_lora_rank, rope.qk_nope_head_dim, rope.qk_rope_head_dim, rope.head_dim) == (None, 64, 64, 128)
    assert (nope.qk_nope_head_dim, nope.qk_rope_head_dim, nope.head_dim, nope.rope) == (128, 0, 128, False)
    # KV per token: latent 512 + rope key 64 + index key 128 on 54 layers, 512 + 128 on the 18 NoPE ones
    assert kv_bytes_per_token(m, "bf16") == (54 * 704 + 18 * 640) * 2 == 99_072  # = transformers' cache
    assert m.max_context == 1_048_576 and m.head_params == 32 and not m.tie_embeddings
    assert m.attention_kind == "mla+dsa"
    assert weight_bytes(m) == 2 * ML4  # bf16
    assert any("vision_config not counted" in a for a in m.assumptions)
    assert not any("not used by the reader" in a for a in m.assumptions)


def test_mistral_large4_text_config_alone_and_wrappers():
    text = raw()["text_config"]
    assert lr.load_model({**text, "model_type": "mistral_large4_text"}).params_total == ML4
    # a wrapper whose text_config states no model_type: the wrapper's text model
    assert lr.load_model({"model_type": "mistral_large4", "text_config": {}}).params_total == ML4
    assert lr.load_model({"model_type": "mistral_large4_text"}).params_total == ML4  # the config-class defaults


# ------------------------------------------------------------------------------ NoPE, shared indexers, reused latents
# A small shape: d 256, 8 layers, 4 heads of qk_nope 16 + qk_rope 16, v 32, kv_lora_rank 32, 2 index heads of 32,
# 8 experts of 64 (top-2) + 1 shared, dense 512, vocab 1000; NoPE layers 3 and 7 (every 4th).
SMALL = dict(model_type="mistral_large4_text", vocab_size=1000, hidden_size=256, intermediate_size=512,
             moe_intermediate_size=64, num_hidden_layers=8, num_attention_heads=4, num_key_value_heads=4,
             kv_lora_rank=32, qk_rope_head_dim=16, qk_nope_head_dim=16, v_head_dim=32, index_n_heads=2,
             index_head_dim=32, index_topk=4, n_routed_experts=8, num_experts_per_tok=2,
             max_position_embeddings=4096)
# layers 2, 5 and 7 attend over the latents of layers 1, 4 and 3; index_topk_freq 2: indexers on 0, 1, 3, 5, 7
SHARED = dict(kv_source_layers=[0, 1, 1, 3, 4, 4, 6, 3], index_topk_freq=2)


def test_mistral_large4_small_shapes():
    # RoPE attention: q 256 x 128 = 32,768 + kv_a 256 x 48 = 12,288 + kv_a norm 32 + kv_b 32 x 4 x 48 = 6,144 + o
    #   128 x 256 = 32,768 + scaling 8 = 84,008; NoPE: kv_a 256 x 32 = 8,192, kv_b 32 x 4 x 64 = 8,192 -> 81,960
    # indexer: 256 x 64 = 16,384 + 256 x 32 = 8,192 + 64 + 256 x 2 = 512 + q norm 512 + scaling 4 -> 25,668
    # dense 3 x 256 x 512 = 393,216; MoE 9 x 3 x 256 x 64 = 442,368 + router 8 x 256 = 2,048 -> 444,416; norms 512
    # embed + head 2 x 256,000 = 512,000; final norm 256; alpha 8
    base = (6 * 84_008 + 2 * 81_960 + 8 * 25_668 + 393_216 + 7 * 444_416 + 8 * 512 + 512_000 + 256 + 8)
    m = lr.load_model(SMALL)
    assert m.params_total == base == 4_893_800  # = transformers meta count
    assert kv_bytes_per_token(m, "fp8") == 6 * 80 + 2 * 64 == 608  # = transformers' cache
    # reused latents: no kv_a (12,288 on RoPE layers 2 and 5, 8,192 on NoPE layer 7) nor kv_a norm (3 x 32);
    # 3 layers without an indexer (2, 4, 6): 3 x 25,668
    s = lr.load_model({**SMALL, **SHARED})
    assert s.params_total == base - 2 * 12_288 - 8_192 - 3 * 32 - 3 * 25_668 == 4_783_932  # transformers meta count
    # cached a token: layers 0, 1 80 each, 2 nothing, 3 64 (NoPE), 4 and 6 48 (no index key), 5 and 7 the index key
    # alone 32 each (transformers' kv_sharing_modes 'reuse' on 2, 'reuse_but_indexer' on 5 and 7)
    assert kv_bytes_per_token(s, "fp8") == 80 + 80 + 0 + 64 + 48 + 32 + 48 + 32 == 384  # = transformers' cache
    assert [(g.name, g.count) for g in s.layer_groups] == [
        ("rope.dsa.dense", 1), ("rope.dsa.moe", 1), ("rope.dsa-shared.kv-reused.moe", 1), ("nope.dsa.moe", 1),
        ("rope.dsa-shared.moe", 2), ("rope.dsa.kv-reused.moe", 1), ("nope.dsa.kv-reused.moe", 1)]
    assert any("3 of 8 layers attend over an earlier layer's cached latent" in a for a in s.assumptions)
    # per-layer lists stated: layers 1 and 4 NoPE, 0 1 3 dense, 4 indexers, 2 shared experts of 64
    # -> RoPE 6 x 84,008 + NoPE 2 x 81,960 + 4 x 25,668 + 3 x 393,216 + 5 MoE x ((8 + 2) x 49,152 + 2,048 = 493,568)
    t = lr.load_model({**SMALL,
                       "indexer_types": ["full", "shared", "full", "full", "shared", "shared", "full", "shared"],
                       "mlp_layer_types": ["dense", "dense", "sparse", "dense", "sparse", "sparse", "sparse", "sparse"],
                       "no_rope_layers": [1, 0, 1, 1, 0, 1, 1, 1], "n_shared_experts": 2})
    assert t.params_total == (6 * 84_008 + 2 * 81_960 + 4 * 25_668 + 3 * 393_216 + 5 * 493_568 + 8 * 512 + 512_000
                              + 256 + 8) == 4_934_488  # = transformers meta count
    # full layers 0, 2, 3, 6: 80 each; shared: NoPE 1 and 4 32 each, RoPE 5 and 7 48 each
    assert kv_bytes_per_token(t, "fp8") == 4 * 80 + 2 * 32 + 2 * 48 == 480  # = transformers' cache


def test_mistral_large4_graph_of_reused_and_nope_layers():
    s = lr.load_model({**SMALL, **SHARED})
    ops = decode_ops(s, "rope.dsa.kv-reused.moe")  # layer 5: reuses layer 4's latent, runs its own indexer
    assert "attn.qkv_proj" not in ops  # no kv_a_proj
    assert float(ops["attn.q_proj"].flops) == 2 * 256 * 128
    assert float(ops["attn.rope"].flops) == 3 * 4 * 16  # the 4 query heads' rope parts only, 3 FLOP each
    assert float(ops["attn.q_scale"].flops) == 4 * 32  # one multiply an element of the 4 query heads
    assert float(ops["attn.kv_write"].kv_bytes) == 32 * 2  # the index key alone, bf16
    assert float(ops["attn.indexer.q_norm"].flops) == 4 * 256
    assert ops["attn.indexer.q_proj"].gemm_k == 256  # the indexer's queries from x
    assert float(ops["attn.indexer.q_scale"].flops) == 2 * 32
    # absorbed core over top-4 keys: 4 heads x (32 + 16 scores + 32 values) x 4 x 2 FLOP
    assert float(ops["attn.core"].flops) == 4 * (48 + 32) * 4 * 2
    ops = decode_ops(s, "rope.dsa-shared.kv-reused.moe")  # layer 2: reuses layer 1's latent and top-k
    assert not [n for n in ops if n.startswith("attn.indexer") or n in ("attn.kv_write", "attn.qkv_proj")]
    ops = decode_ops(s, "nope.dsa.moe")  # layer 3: no rope, a latent of 32 alone
    assert "attn.rope" not in ops and ops["attn.qkv_proj"].gemm_n == 32
    assert float(ops["attn.kv_write"].kv_bytes) == (32 + 32) * 2
    assert float(ops["attn.core"].flops) == 4 * (32 + 32) * 4 * 2


def test_mistral_large4_estimate_and_serve_run():
    path = FIX / "mistral_large4_default.json"
    est = lr.estimate(path, chip="h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    # 8 sequences of 1024 + 128 tokens: 9,216 tokens x 99,072 bytes
    assert est.memory.kv_cache_bytes == 9216 * 99_072
    assert est.memory.per_chip_bytes > 0 and est.ttft_s > 0 and est.tpot_s > 0
    served = lr.serve(path, "h100-sxm", prompt_len=1024, gen_len=128, concurrency=8, tp=8, pp=4, weight_dtype="fp8")
    assert served is not None and math.isfinite(served.tpot_s) and served.tpot_s > 0
    shared = lr.estimate({**SMALL, **SHARED}, chip="h100-sxm", batch=2, prompt_len=512, gen_len=64, tp=2)
    assert shared.ttft_s > 0 and shared.tpot_s > 0


# ------------------------------------------------------------------------------ Mistral Small 4 (mistral4) unchanged
def test_mistral4_still_read_exactly():
    # Mistral4Config() (configuration_mistral4.py defaults): d 4096, 36 MoE layers (first_k_dense_replace 0), 32 heads,
    # q_lora 1024, kv_lora 256, nope 64 + rope 64, v 128; 128 experts of 2048 + 1 shared, top-4; vocab 131,072.
    # attention: q_a 4096 x 1024 = 4,194,304 + 1024 + q_b 1024 x 32 x 128 = 4,194,304 + kv_a 4096 x 320 = 1,310,720
    #   + 256 + kv_b 256 x 32 x 192 = 1,572,864 + o 4096 x 4096 = 16,777,216 -> 28,050,688
    # MoE: 129 x 3 x 4096 x 2048 = 3,246,391,296 + router 128 x 4096 = 524,288; norms 8192
    # untied embed + head 2 x 131,072 x 4096 = 1,073,741,824; final norm 4096
    cfg = dict(model_type="mistral4", vocab_size=131072, hidden_size=4096, intermediate_size=12288,
               moe_intermediate_size=2048, num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=32,
               n_shared_experts=1, n_routed_experts=128, kv_lora_rank=256, q_lora_rank=1024, qk_rope_head_dim=64,
               v_head_dim=128, qk_nope_head_dim=64, n_group=1, topk_group=1, num_experts_per_tok=4,
               first_k_dense_replace=0, norm_topk_prob=True, hidden_act="silu", max_position_embeddings=1048576,
               tie_word_embeddings=False, attention_bias=False, rope_interleave=True)
    m = lr.load_model(cfg)
    assert m.params_total == 36 * (28_050_688 + 3_246_391_296 + 524_288 + 8192) + 1_073_741_824 + 4096 \
        == 118_972_826_624  # = transformers meta count
    assert not m.layer_groups[0].attention.q_log_scale and not m.layer_groups[0].attention.index_topk


# ------------------------------------------------------------------------------ refusals and hostile values
@pytest.mark.parametrize("change, error", [
    ({"kv_source_layers": [0, 2] + list(range(2, 72))}, r"kv_source_layers\[1\] = 2: a layer reuses the latent of an"),
    ({"kv_source_layers": [0, 0, 1] + list(range(3, 72))}, r"kv_source_layers\[2\] = 1"),  # 1 is not its own source
    ({"kv_source_layers": [0, 1, 2, 2] + list(range(4, 72))}, "a NoPE layer cannot reuse a RoPE layer's latent"),
    ({"kv_source_layers": list(range(71))}, "kv_source_layers must list one entry per layer"),
    ({"kv_source_layers": ["0"] + list(range(1, 72))}, "must be an integer"),
    ({"kv_source_layers": [-1] + list(range(1, 72))}, "must be non-negative"),
    ({"kv_source_layers": [math.nan] + list(range(1, 72))}, "must be an integer"),
    ({"kv_source_layers": [10**30] + list(range(1, 72))}, "exceeds the physical bound"),
    ({"kv_source_layers": [None] + list(range(1, 72))}, "must be an integer"),
    ({"kv_source_layers": [[0]] + list(range(1, 72))}, "must be an integer"),
    ({"kv_source_layers": "0,1"}, "must be a list of integers"),
    ({"no_rope_layers": [1] * 71}, "no_rope_layers must list at least one entry per layer"),
    ({"no_rope_layers": ["1"] * 72}, "must be an integer"),
    ({"indexer_types": ["shared"] * 72}, "the first 'full'"),
    ({"indexer_types": ["full", "sliding"] + ["full"] * 70}, "indexer_types must be 'full' or 'shared'"),
    ({"mlp_layer_types": ["moe"] * 72}, "mlp_layer_types entry 'moe' is not one of"),
    ({"layer_types": ["sliding_attention"] * 72}, "layer_types entry 'sliding_attention' is not one of"),
    ({"attention_bias": True}, "attention_bias=true with MLA"),
    ({"index_topk": -1}, "must be positive"),
    ({"index_n_heads": "32"}, "must be an integer"),
    ({"qk_rope_head_dim": math.inf}, "must be an integer"),
    ({"kv_lora_rank": 10**30}, "exceeds the physical bound"),
    ({"first_k_dense_replace": -3, "mlp_layer_types": None}, "must be non-negative"),
    ({"num_hidden_layers": None}, "the config has no num_hidden_layers"),
    ({"kv_source_layers": None}, None),  # transformers' default: every layer its own latent
])
def test_mistral_large4_refuses_what_it_cannot_read(change, error):
    if error is None:
        assert lr.load_model(with_text(**change)).params_total == ML4
        return
    with pytest.raises(ModelConfigError, match=error):
        lr.load_model(with_text(**change))


_VALUES = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 1, 3, 4, 72, 2**63, 10**30, math.nan, math.inf, -1.5, "64", "full",
                     "shared", "sparse", "dense", "indexed_attention", [], {}, {"a": 1}]),
    st.lists(st.sampled_from([0, 1, 2, 3, 4, 71, -1, None, "full", "shared", "sparse", 1.5, 10**30]), max_size=80))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mistral_large4_mutated_configs_load_or_raise_a_roofline_error(data):
    cfg = copy.deepcopy(raw())
    text = cfg["text_config"]
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(sorted(text)))
        text[key] = data.draw(_VALUES)
    try:
        m = lr.load_model(cfg)
    except RooflineError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert isinstance(m.params_total, int) and m.params_total > 0
    assert math.isfinite(kv_bytes_per_token(m)) and kv_bytes_per_token(m) >= 0


def test_resident_weights_hold_the_query_scales():
    # per chip at tp 1, the graph stores every bf16 weight: the per-head log scales (2 x (64 + 32) a layer; they were
    # not: 138,304 B missing before), and since 2026-11-28 per layer the indexer's k_norm (LayerNorm weight + bias,
    # 2 x 128 = 256) and kv_a_layernorm (512), x 72, and the rotary alpha (32) beside the final norm
    # ((72 x 768 + 32) x 2 = 110,656 B missing before)
    m = lr.load_model(FIX / "mistral_large4_default.json")
    est = lr.estimate(m, "h100-sxm", batch=1, prompt_len=64, gen_len=4)
    assert weight_bytes(m) == est.memory.per_chip_weight_bytes
