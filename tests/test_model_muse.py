"""Meta's Muse Glimmer (muse_glimmer_text), transformers 5.24's modular_muse_glimmer.py (read by
llm_roofline/model/muse.py).

Muse Glimmer was read before as an unknown model_type, a plain Llama block: its attention output gate (gate_proj,
H x hd from x), two of its four norms and its NoPE full-attention layers were missed (26,436,413,952 parameters for
its default config, 1,418,366,976 short). It is read now.

Every expected count is hand arithmetic in the comment beside it; "transformers meta count" = the model class of
transformers 5.24 (MuseGlimmerForConditionalGeneration) built from the config on the meta device (torch 2.14, a
separate virtualenv; not a dependency of this project), its parameters summed without the vision tower and the
projector (the text model and the LM head).

Fixtures (tests/fixtures/configs): no verbatim config.json of meta-models/Muse-Glimmer-30B was found in the public
sources searched (vLLM's Muse Glimmer config test copies a trimmed "representative" config; public ports copy the keys
they read). So this is transformers' own default:
- muse_glimmer_default.json: MuseGlimmerConfig().to_dict() of transformers 5.24 (its docstring checkpoint
  meta-models/Muse-Glimmer-30B), transformers' bookkeeping keys (id2label, return_dict, ...) left out. Its text shape
  is the one vLLM's test and a public hipfire port give of the release (hidden 6656, 52 layers, 32 heads, 2 KV heads of
  128, MLP 19,968, vocabulary 202,048, window 2048, qk_scale_factor 3.87); those give RoPE theta 500,000 where the
  config class defaults to 10,000 (no shape). Published: "a dense causal transformer of roughly 29.6 billion parameters
  across 52 layers, including a perception encoder" (Vercel's and Tenstorrent's model pages), "a ~1.8B ViT-G/14
  perception encoder" (Fireworks): 27.85B here for the text model and LM head, + about 1.85B for the vision tower.
"""

import json
import math
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.errors import ModelConfigError, RooflineError, UnsupportedArchitectureError
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import kv_bytes_per_token, kv_cache_bytes, weight_bytes, weight_bytes_per_chip

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
    """estimate, its memory and serve run on the model."""
    chip = kw.pop("chip", "h100-sxm")
    est = lr.estimate(model, chip, batch=8, prompt_len=1024, gen_len=128, **kw)
    assert est.ttft_s > 0 and est.tpot_s > 0 and est.memory.weight_bytes > 0
    assert lr.serve(model, chip, prompt_len=1024, gen_len=128, concurrency=4, **kw).tpot_s > 0


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
    assert (a.output_gate, a.bare_qk_norm, a.qk_norm, m.layer_groups[0].norms) == (True, True, False, 4)
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


# ------------------------------------------------------------------------------ refusals and hostile values
@pytest.mark.parametrize("name, change, error, match", [
    ("muse_glimmer_default", {"attention_bias": True}, UnsupportedArchitectureError,
     "attention_bias=true \\(model_type=muse_glimmer_text\\): q/k/v/o with bias beside a bias-free gate_proj"),
    ("muse_glimmer_default", {"num_local_experts": 8, "num_experts_per_tok": 2}, UnsupportedArchitectureError,
     "num_local_experts is set \\(model_type=muse_glimmer_text\\) on a layer transformers builds a dense MLP on"),
    ("muse_glimmer_default", {"layer_types": ["chunked_attention"] * 52, "attention_chunk_size": 512},
     ModelConfigError, "layer_types entry 'chunked_attention' is not one of 'full_attention', 'sliding_attention'"),
    ("muse_glimmer_default", {"sliding_window": None}, ModelConfigError, "sliding_window is not set"),
])
def test_muse_refuses_what_transformers_would_not_build_as_read(name, change, error, match):
    with pytest.raises(error, match=match):
        lr.load_model(text(name, **change))


@pytest.mark.parametrize("name, count", [("muse_glimmer_default", 27_854_780_928)])
def test_muse_text_config_without_its_model_type_is_the_wrappers_text_model(name, count):
    assert lr.load_model(text(name, drop=("model_type",))).params_total == count


_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
         "intermediate_size", "num_local_experts", "num_experts_per_tok",
         "sliding_window", "layer_types", "layer_rope_theta", "attention_bias", "vocab_size",
         "num_shared_experts", "hidden_act")
_VALUES = ("x", -1, math.nan, 1e30, 10**30, None, [], [1, 2], {}, True, 0, ["sparse"] * 62, [math.nan] * 62,
           [-1] * 62, [10**400] * 62, ["full_attention"] * 62)


@pytest.mark.parametrize("name", ["muse_glimmer_default"])
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
