"""Hostile configs never crash (issue 12): every outcome is a ModelSpec with finite, positive counts, or a
RooflineError with a one-line message.

Configs are the shipped ones, mutated: fields retyped, deleted, set huge / NaN / negative / to strings, lists or
nested objects, at the top level and inside text_config, quantization_config and attn_config. The same strategy and
check run 20,000 examples in benchmarks/fuzz_configs.py.
"""

import copy
import json
import math
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from llm_roofline.errors import ModelConfigError, RooflineError
from llm_roofline.model.hf import list_models, load_model
from llm_roofline.memory import kv_bytes_per_token

REPO = Path(__file__).resolve().parents[1]
SHIPPED = {i: json.loads((REPO / "model_configs" / i / "config.json").read_text()) for i in list_models()}

_KEYS = sorted({k for cfg in SHIPPED.values() for k in cfg} |
               {k for cfg in SHIPPED.values() for k in (cfg.get("text_config") or {})} |
               {"layer_types", "quantization_config", "mlp_only_layers", "max_window_layers", "rope_scaling",
                "text_config", "torch_dtype", "hidden_act", "moe_layer_freq", "no_rope_layers", "moe_layers",
                "attention_types", "block_configs", "attn_config", "ffn_config", "intermediate_size_mlp",
                "interleave_moe_layer_step", "moe_layer_start_index", "moe_layer_end_index", "expansion_ratio",
                "use_sliding_window", "sliding_window_pattern", "multi_query", "new_decoder_architecture"})
_QUANT_KEYS = ["quant_method", "bits", "group_size", "weight_block_size", "config_groups", "weights",
               "modules_to_not_convert", "ignore", "num_bits", "block_structure", "type"]

_scalars = st.one_of(
    st.none(), st.booleans(),
    st.sampled_from([0, -1, 1, 2, 3, 7, 2**31, 2**63, 10**400, -(2**63), 10**30]),
    st.integers(-10**6, 10**6),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1.5, 0.5, 4096.0, 1e-300]),
    st.sampled_from(["", "8", "silu", "relu2", "bfloat16", "float32", "fp8", "gptq", "mxfp4", "compressed-tensors",
                     "full_attention", "sliding_attention", "chunked_attention", "linear_attention", "x" * 300]),
)
_extremes = st.sampled_from([2**63, 10**400, 1e300, -(2**63), math.nan, math.inf, 0, -1, True, 10**7, 2**24 + 1,
                             1 << 20, 65_537, 2**31 + 1, "4096", [4096], {"value": 4096}])
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.dictionaries(st.sampled_from(_KEYS + _QUANT_KEYS), inner, max_size=4)),
    max_leaves=12)


@st.composite
def mutated_configs(draw) -> dict:
    """A shipped config with 1 to 4 mutations: a key deleted or set to any JSON-like value, possibly nested."""
    cfg = copy.deepcopy(SHIPPED[draw(st.sampled_from(sorted(SHIPPED)))])
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["top", "top", "text_config", "quantization_config", "attn_config"]))
        target = cfg.get(where) if where != "top" and isinstance(cfg.get(where), dict) else cfg
        own = sorted(k for k in target if isinstance(k, str))
        pool = _QUANT_KEYS if target is cfg.get("quantization_config") else _KEYS
        key = draw(st.sampled_from(own) if own and draw(st.booleans()) else st.sampled_from(pool))
        if draw(st.integers(0, 4)) == 0:
            target.pop(key, None)
        else:
            target[key] = draw(st.one_of(_extremes, _values))
    return cfg


def crash_of(cfg: dict) -> str | None:
    """None when load_model(cfg) behaves (a sane spec or a one-line RooflineError); else what went wrong."""
    try:
        m = load_model(cfg)
    except RooflineError as e:
        return None if "\n" not in str(e) and str(e) else f"multi-line or empty message: {str(e)[:200]!r}"
    except Exception as e:  # noqa: BLE001 - this is what the fuzzer looks for
        return f"{type(e).__name__}: {str(e)[:200]}"
    total, kv = m.params_total, kv_bytes_per_token(m)
    if not (isinstance(total, int) and total > 0):
        return f"params_total {total!r}"
    if not (math.isfinite(kv) and kv >= 0):
        return f"kv_bytes_per_token {kv!r}"
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_configs())
def test_mutated_shipped_configs_load_or_raise_a_roofline_error(cfg):
    assert crash_of(cfg) is None


# Recurrent / hybrid / sparse-attention fixtures (tests/test_hybrid.py) and the families read since, mutated the same
# way on their own keys.
_HYBRID = {p.stem: json.loads(p.read_text()) for p in sorted((REPO / "tests" / "fixtures" / "configs").glob("*.json"))
           if p.stem in ("mamba_codestral_7b", "nemotron_h_8b", "qwen3_next_80b_a3b", "qwen3_5_9b", "jamba_v0_1",
                         "falcon_mamba_7b", "bamba_9b", "minimax_text_01", "deepseek_v32_exp", "lfm2_1_2b",
                         "falcon_h1_7b", "mamba_130m", "nemotron3_nano_30b_a3b", "granite_4_0_h_tiny", "lfm2_8b_a1b",
                         "glm5", "gemma4_31b", "mimo_v2_flash", "qwen2_vl_7b", "deepseek_v4_flash_reap160",
                         "zamba2_2_7b", "kimi_linear_48b", "dots_llm1", "trinity_nano", "hy3", "gemma4_e2b",
                         "gemma3n_e4b", "olmo_hybrid_7b", "lara_mini_default", "longcat_flash_chat", "k_exaone_236b",
                         "step3p5_flash", "lfm3_1_7b", "north_mini_code", "mellum2_1_12b_a2_5b", "laguna_xs2",
                         "dots3_note_prev", "minimax_m3", "inkling", "ling_3_0_flash", "ling_3_0_tiny",
                         "xlstm_7b", "recurrentgemma_2b", "axk2_light_default", "phi4_multimodal", "hy4_preview",
                         # remote-code families vLLM serves, and wrappers keeping the text model elsewhere
                         "arctic_instruct", "baichuan2_13b", "chatglm3_6b", "deepseek_moe_16b", "deepseek_ocr",
                         "glm4_9b_chat", "grok1", "grok2", "internlm2_5_7b_chat", "internvl3_1b", "jais_13b_chat",
                         "ling_flash_2_0", "ling_lite_1_5", "mimo_7b_base", "minicpm4_1_8b", "openpangu_embedded_7b",
                         "orion_14b_base", "ouro_1_4b", "phi3_small_8k_instruct", "qwen3_omni_30b_a3b",
                         "qwen_14b_chat_int4", "qwen_7b", "step3", "telechat2_115b", "xverse_moe_a4_2b",
                         "mistral_large4_default", "muse_glimmer_default", "muse_spark_default", "glm5_3_flash",
                         "minimax_m1")}
_HYBRID_VALUES = st.one_of(_extremes, _values, st.sampled_from(["auto", "M*-E", "M-M*", "float8", "float32", "FS", 0, 3,
                                                            "per-head", "per-element", "sigmoid", "sum"]),
                           st.lists(st.sampled_from(["mamba", "attention", "linear_attention", "full_attention", "mlp",
                                                     "moe", "full", "shared", "conv", "hybrid",
                                                     "sliding_attention", "compressed_sparse_attention",
                                                     "heavily_compressed_attention", "recurrent", 0, 1, 4, 9, 128]),
                                    max_size=90))


@st.composite
def mutated_hybrid_configs(draw) -> dict:
    cfg = copy.deepcopy(_HYBRID[draw(st.sampled_from(sorted(_HYBRID)))])
    target = cfg["text_config"] if "text_config" in cfg and draw(st.booleans()) else cfg
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(k for k in target if isinstance(k, str))))
        if draw(st.integers(0, 4)) == 0:
            target.pop(key, None)
        else:
            target[key] = draw(_HYBRID_VALUES)
    return cfg


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_hybrid_configs())
def test_mutated_hybrid_configs_load_or_raise_a_roofline_error(cfg):
    assert crash_of(cfg) is None


# ------------------------------------------------------------------------------ the crashes found by fuzzing
def _base(**over):
    return {**SHIPPED["meta-llama/Llama-3.1-8B"], **over}


@pytest.mark.parametrize("over, key", [
    ({"layer_types": "full_attention"}, "layer_types"),
    ({"layer_types": [1, 2]}, "layer_types"),
    ({"quantization_config": "fp8"}, "quantization_config"),
    ({"quantization_config": {"quant_method": "compressed-tensors", "config_groups": [1]}}, "config_groups"),
    ({"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": 4}}}},
     "weights"),
    ({"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
        "g": {"weights": {"num_bits": 8, "type": "float", "block_structure": "128x128"}}}}}, "block_structure"),
    ({"quantization_config": {"quant_method": "fp8", "weight_block_size": 128.5}}, "weight_block_size"),
    ({"quantization_config": {"quant_method": [1]}}, "quant_method"),
    ({"mlp_only_layers": "3", "num_local_experts": 4, "num_experts_per_tok": 2}, "mlp_only_layers"),
    ({"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": "28"}, "max_window_layers"),
    ({"text_config": "llama"}, "text_config"),
    ({"torch_dtype": ["bfloat16"]}, "torch_dtype"),
    ({"hidden_act": ["silu"]}, "hidden_act"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
    ({"model_type": ["llama"]}, "model_type"),
    ({"num_hidden_layers": True}, "num_hidden_layers"),  # booleans are not integers
    ({"hidden_size": 2**63}, "1,048,576"),  # bounds are named in the message
    ({"hidden_size": 10**400}, "hidden_size"),
    ({"hidden_size": 1e300}, "hidden_size"),
    ({"num_hidden_layers": 10_000_000}, "100,000"),
    ({"vocab_size": 2**25}, "16,777,216"),
    ({"num_attention_heads": 2**17, "num_key_value_heads": 1}, "65,536"),
    ({"max_position_embeddings": 2**40}, "2,147,483,648"),
    ({"num_local_experts": 10**6, "num_experts_per_tok": 1}, "65,536"),
])
def test_wrong_types_and_unphysical_sizes_name_the_key(over, key):
    with pytest.raises(ModelConfigError, match=key) as e:
        load_model(_base(**over))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("fixture, where, key, value", [
    # math.isfinite(10**400) raises OverflowError: found by fuzz_configs.py (20,000 hybrid examples, 1 crash)
    ("qwen_7b", None, "rotary_pct", 10 ** 400),
    ("ling_lite_1_5", None, "partial_rotary_factor", 10 ** 400),
])
def test_huge_integers_in_number_keys_are_one_line_errors(fixture, where, key, value):
    cfg = copy.deepcopy(_HYBRID[fixture])
    (cfg[where] if where else cfg)[key] = value
    assert crash_of(cfg) is None
    with pytest.raises(RooflineError, match=key):
        load_model(cfg)


_HUGE = 10 ** 5000  # Python refuses to print an integer of more than 4,300 digits (ValueError); a dict can hold one


@pytest.mark.parametrize("fixture, path", [
    # each echoed the value in its error message with str() or repr(): a ValueError, found by review
    ("chatglm3_6b", ("pre_seq_len",)), ("qwen_7b", ("rotary_pct",)), ("grok1", ("sliding_window_size",)),
    ("ouro_1_4b", ("early_exit_threshold",)), ("jais_13b_chat", ("activation_function",)),
    ("arctic_instruct", ("quantization",)), ("ling_lite_1_5", ("partial_rotary_factor",)),
    ("mistral_large4_default", ("text_config", "num_key_value_heads")),
    ("glm5_3_flash", ("text_config", "num_key_value_heads")), ("muse_spark_default", ("text_config", "layer_rope_theta")),
    ("gemma3n_e4b", ("activation_sparsity_pattern",)), ("laguna_xs2", ("gating",)),
    ("xlstm_7b", ("qk_dim_factor",)), ("hy4_preview", ("num_key_value_heads",)), ("north_mini_code",
                                                                                 ("expert_selection_fn",)),
    ("qwen3_next_80b_a3b", ("mamba_ssm_cache_dtype",)), ("lfm2_1_2b", ("block_ffn_dim_multiplier",)),
])
def test_an_integer_too_long_to_print_is_a_one_line_error(fixture, path):
    cfg = copy.deepcopy(_HYBRID[fixture])
    target = cfg
    for key in path[:-1]:
        target = target[key]
    old = target.get(path[-1])
    target[path[-1]] = [_HUGE] * len(old) if isinstance(old, list) else _HUGE
    assert crash_of(cfg) is None


def test_a_huge_rope_theta_is_a_number():
    cfg = copy.deepcopy(_HYBRID["muse_glimmer_default"])
    cfg["text_config"]["layer_rope_theta"] = [10 ** 400] * 52  # every layer with RoPE: a valid, if odd, base
    assert crash_of(cfg) is None and load_model(cfg).params_total > 0


def test_ten_million_layers_is_refused_at_once():
    import time

    t0 = time.perf_counter()
    with pytest.raises(ModelConfigError, match="num_hidden_layers"):
        load_model(_base(num_hidden_layers=10_000_000))
    assert time.perf_counter() - t0 < 0.5  # no per-layer list is built from an unchecked number


@pytest.mark.parametrize("content, words", [
    ("{}".encode("utf-16"), "UTF-8"),
    ('{"model_type": "llama", "name": "caf\xe9"}'.encode("latin-1"), "UTF-8"),
    (bytes(range(256)), "UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "deep"),
    (b'{"hidden_size": ' + b"9" * 5000 + b"}", "config"),
    (b"[1, 2]", "object"),
    (b"", "empty"),
    (b"   \n", "empty"),
    (b'{"hidden_size": NaN}', "hidden_size"),
])
def test_malformed_files_are_one_line_errors(tmp_path, content, words):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(ModelConfigError, match=words) as e:
        load_model(path)
    assert "\n" not in str(e.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_symlink_loop_and_empty_directory_do_not_hang(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    d = tmp_path / "empty_dir"
    d.mkdir()
    (d / "config.json").symlink_to(fifo)  # config.json that is a FIFO: never opened
    for target in (fifo, loop, d, tmp_path):
        with pytest.raises(ModelConfigError) as e:
            load_model(target)
        assert "\n" not in str(e.value)


def test_errors_from_a_file_name_the_file_and_the_key(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_base(hidden_size="4096")))
    with pytest.raises(ModelConfigError, match=r"config\.json: hidden_size must be an integer") as e:
        load_model(tmp_path)
    assert str(tmp_path) in str(e.value) and "\n" not in str(e.value)
