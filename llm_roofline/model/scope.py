"""What of a config is modelled: the text tower of a multimodal wrapper, refusals, and keys the reader did not use.

The operator graph represents decoder-only models whose layers mix tokens by softmax attention (full, sliding-window,
MLA, DSA top-k, MiniMax-M3's top-k blocks, DeepSeek-V4's compressed KV) or a recurrent mixer (hybrid.py), followed by a
dense MLP, a MoE or nothing, and shared blocks run at several layers (Zamba). Everything else is refused
with a one-line reason naming the key and the architecture (UnsupportedArchitectureError), or, where the text model is
still read right, named in the assumptions.
"""

from __future__ import annotations

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .architectures import PER_LAYER_INPUT_TYPES
from .key_names import HIDDEN_KEYS, LAYERS_KEYS, SHAPE_NEUTRAL_KEYS, STRUCTURAL_KEY_WORDS
from .refusals import (CROSS_ATTENTION_KEYS, ENCODER_DECODER_TYPES, ENCODER_ONLY_TYPES, NON_ATTENTION_LAYER_TYPES,
                       REFUSED_ARCHITECTURES, REFUSED_KEYS, REFUSED_TYPES)
from .reader import ConfigReader, as_int

# model_type -> the state-space / sparse-attention keys its reader (hybrid.py, layers.py) understands
_SSM_KEYS = tuple(k for k, why in REFUSED_KEYS.items() if why.startswith("state-space"))
READ_HYBRID_KEYS = {
    **{t: _SSM_KEYS for t in ("mamba", "falcon_mamba", "mamba2", "nemotron_h", "bamba", "jamba", "qwen3_next",
                              "qwen3_5_text", "qwen3_5_moe_text", "minimax", "lfm2", "lfm2_moe", "falcon_h1",
                              "granitemoehybrid", "zamba", "zamba2", "kimi_linear", "olmo_hybrid", "lara_mini",
                              "lfm3")},
    **{t: ("index_topk", "index_n_heads", "index_head_dim") for t in ("deepseek_v32", "glm_moe_dsa", "dots3_note",
                                                                      "dots3_note_text", "axk2",
                                                                      "mistral_large4_text")},
    "bailing_hybrid": (),  # Ling-3.0 (bailing.py): its layer_types are read; none of the refused keys
    "xlstm": (),  # xLSTM-7B (xlstm.py): mLSTM blocks only; none of the refused keys
    "recurrent_gemma": ("block_types", "_block_types"),  # recurrent_gemma.py: the cycle of its temporal blocks
    **{t: ("index_topk", "index_n_heads", "index_head_dim", "hc_mult") for t in ("hy_v4", "hy_v4_vl", "hy_v4_vl_text")},
    **{t: ("index_topk", "index_n_heads", "index_head_dim", "hc_mult", "hc_sinkhorn_iters", "linear_attn_config")
       for t in ("glm5_next", "glm5_next_text")},  # glm5_next.py
    "deepseek_v4": ("index_topk", "index_n_heads", "index_head_dim", "compress_ratios", "compress_rates", "hc_mult",
                    "hc_sinkhorn_iters"),
    "minimax_m3_vl_text": ("index_n_heads", "index_head_dim", "index_topk_blocks", "index_block_size",
                           "sparse_attention_config"),
}
# the keys of REFUSED_KEYS a model type's reader reads: the hybrid readers', Gemma-4's and -3n's KV sharing
READ_REFUSED_KEYS = {**READ_HYBRID_KEYS, **{t: ("num_kv_shared_layers",) for t in PER_LAYER_INPUT_TYPES}}
_TEXT_KEYS = ("text_config", "llm_config", "language_config")  # where a multimodal wrapper keeps its text model
_TOWER_KEYS = ("vision_config", "audio_config", "speech_config", "vision_tower_config")


def model_type_of(cfg: dict) -> str:
    value = cfg.get("model_type")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ModelConfigError(f"model_type must be a string, got {type(value).__name__}")
    return value


def text_part(config: dict, notes: list[str]) -> dict:
    """The text decoder's keys: config['text_config'] for a multimodal config (with the wrapper's
    tie_word_embeddings and dtype when the text part does not state them), else the config itself. Remote-code
    wrappers name it llm_config (InternVL-Chat, Ovis) or language_config (DeepSeek-VL2, DeepSeek-OCR, Janus)."""
    key = next((k for k in _TEXT_KEYS if config.get(k) is not None), "text_config")
    text = config.get(key)
    if text is None and config.get("thinker_config") is not None:
        return text_part(_thinker(config, notes), notes)
    if text is None:
        towers = [_tower_note(k, config[k]) for k in _TOWER_KEYS if isinstance(config.get(k), dict)]
        if towers:  # Qwen2-VL: the text model's keys at the top level, beside vision_config
            notes.append(f"Multimodal config ({model_type_of(config) or '?'}): only the text model is modelled; "
                         f"{'; '.join(towers)}; the projector is not counted.")
        return config
    if not isinstance(text, dict):
        raise ModelConfigError(f"{key} must be a JSON object, got {type(text).__name__}")
    inherited = {k: config[k] for k in ("torch_dtype", "dtype", "quantization_config") if k in config and k not in text}
    if "tie_word_embeddings" in config:  # the LM head belongs to the wrapper model: its tie setting is the one used
        inherited["tie_word_embeddings"] = config["tie_word_embeddings"]
        if text.get("tie_word_embeddings", config["tie_word_embeddings"]) != config["tie_word_embeddings"]:
            notes.append(f"tie_word_embeddings differs between the wrapper and {key}: the wrapper's "
                         f"({shown(config['tie_word_embeddings'])}) is used, as it owns the LM head.")
    others = [_tower_note(k, config[k]) for k in config if isinstance(k, str) and k.endswith("_config")
              and k not in (key, "quantization_config", "projector_config")]  # the projector: named below
    notes.append(f"Multimodal config ({model_type_of(config) or '?'}): only the text model ({key}) is "
                 f"modelled; {'; '.join(others) or 'the other towers'}; the projector is not counted.")
    return {**text, **inherited}


def _thinker(config: dict, notes: list[str]) -> dict:
    """An omni model's thinker (Qwen2.5-Omni, Qwen3-Omni: the text model with its vision and audio encoders), with
    the wrapper's dtype and quantization_config where it states none; the talker and the codec that make speech
    from the thinker's states are other models, noted as not counted."""
    thinker = config["thinker_config"]
    if not isinstance(thinker, dict):
        raise ModelConfigError(f"thinker_config must be a JSON object, got {type(thinker).__name__}")
    speech = [k for k in config if isinstance(k, str) and k.endswith("_config")
              and k not in ("thinker_config", "quantization_config")]
    notes.append(f"Omni config ({model_type_of(config) or '?'}): the thinker (the text model) is modelled, as for "
                 f"text output; {', '.join(speech) or 'no talker'} (speech output) not counted.")
    inherited = {k: config[k] for k in ("torch_dtype", "dtype", "quantization_config")
                 if k in config and k not in thinker}
    return {**{k: v for k, v in thinker.items() if k != "thinker_config"}, **inherited}  # one level, no recursion


def _tower_note(key: str, tower) -> str:
    """'vision_config (not counted)', with the size of a plain ViT's matrices when the config gives its dims."""
    if key not in _TOWER_KEYS or not isinstance(tower, dict):
        return f"{key} not counted"
    if tower.get("use_moe") is not False and any(  # InternViT states expert sizes beside use_moe: false
            tower.get(k) for k in ("moe_intermediate_size", "num_local_experts", "num_experts", "pyramid_num_routed")):
        return f"{key} not counted (a tower with MoE layers: its size is not estimated)"  # dots3-note's vision tower
    # Qwen2-VL: embed_dim is the ViT's width (its hidden_size is the LLM's), the MLP mlp_ratio x embed_dim; Kimi-K2.5's
    # MoonViT: vt_num_hidden_layers, vt_hidden_size, vt_intermediate_size
    try:
        layers = as_int(_first(tower, "num_hidden_layers", "depth", "vt_num_hidden_layers", "encoder_layers"),
                        f"{key}.num_hidden_layers")  # encoder_layers, d_model, encoder_ffn_dim: Whisper-style audio
        width = as_int(_first(tower, "embed_dim", "hidden_size", "vt_hidden_size", "d_model"), f"{key}.hidden_size")
        ratio = tower.get("mlp_ratio", 4)
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 64:
            raise ModelConfigError(f"{key}.mlp_ratio must be a number in (0, 64]")
        mlp = _first(tower, "intermediate_size", "vt_intermediate_size", "encoder_ffn_dim")
        mlp = as_int(int(ratio * width) if mlp is None else mlp, f"{key}.intermediate_size")
    except ModelConfigError:
        return f"{key} not counted (its size is not in the config)"
    params = layers * (4 * width * width + 2 * width * mlp)  # q, k, v, o + MLP in and out, per layer
    return (f"{key} not counted ({layers} layers of width {width}: about {params / 1e9:.2f}B parameters in its "
            "attention and MLP matrices)")


def _first(d: dict, *keys: str):
    """The value of the first of `keys` that d states (not null), else None."""
    return next((d[k] for k in keys if d.get(k) is not None), None)


def reject_unsupported(cfg: dict, model_type: str | None = None) -> None:
    """UnsupportedArchitectureError when the config describes layers the operator graph cannot represent;
    model_type: the one it is read as, when not its own (a text_config under a wrapper's model_type)."""
    model_type = model_type_of(cfg) if model_type is None else model_type
    enc_dec = cfg.get("is_encoder_decoder")
    if enc_dec is True or model_type in ENCODER_DECODER_TYPES:
        field_ = "is_encoder_decoder=true" if enc_dec is True else f"model_type={model_type!r}"
        raise UnsupportedArchitectureError(f"encoder-decoder models are not modelled ({field_}); "
                                           "only decoder-only transformers are")
    if model_type in ENCODER_ONLY_TYPES:
        raise UnsupportedArchitectureError(f"encoder-only models are not modelled (model_type={model_type!r})")
    if model_type in REFUSED_TYPES:
        raise UnsupportedArchitectureError(f"model_type={model_type!r}: {REFUSED_TYPES[model_type]} cannot be "
                                           "represented by the operator graph yet")
    names = cfg.get("architectures")
    refused = next((n for n in names if isinstance(n, str) and n in REFUSED_ARCHITECTURES), None) \
        if isinstance(names, list) else None
    if refused is not None:
        raise UnsupportedArchitectureError(f"architectures {refused!r} (model_type={model_type or '?'!r}): "
                                           f"{REFUSED_ARCHITECTURES[refused]}")
    for key, why in REFUSED_KEYS.items():
        if cfg.get(key) not in (None, False, [], {}) and key not in READ_REFUSED_KEYS.get(model_type, ()):
            raise UnsupportedArchitectureError(f"config key {key!r} (model_type={model_type or '?'!r}): {why} "
                                               "cannot be represented by the operator graph yet")
    for key in CROSS_ATTENTION_KEYS:
        if cfg.get(key):
            raise UnsupportedArchitectureError(f"cross-attention / encoder layers are not modelled "
                                               f"(config key {key!r}, model_type={model_type or '?'!r})")
    if model_type not in READ_HYBRID_KEYS:  # the hybrid readers check their own layer_types
        _reject_layer_types(cfg, model_type)
    reject_no_attention_blocks(cfg)


def _reject_layer_types(cfg: dict, model_type: str) -> None:
    types = cfg.get("layer_types")
    if not isinstance(types, list):
        return
    bad = next((t for t in types if isinstance(t, str) and t in NON_ATTENTION_LAYER_TYPES), None)
    if bad is not None:
        raise UnsupportedArchitectureError(f"layer_types contains {bad!r} layers (model_type={model_type or '?'!r}): "
                                           "state-space / linear-attention hybrids cannot be represented yet")


def reject_no_attention_blocks(cfg: dict) -> None:
    """Nemotron-NAS (deci) block_configs: a part replaced by one linear layer (replace_with_linear) is refused; a
    part left out (no_op) is read (layers.layer_noops)."""
    blocks = cfg.get("block_configs")
    if blocks is None:
        return
    if not isinstance(blocks, list):
        raise ModelConfigError(f"block_configs must be a list of objects, got {type(blocks).__name__}")
    for i, block in enumerate(blocks):
        for part in ("attention", "ffn"):
            sub = block.get(part) if isinstance(block, dict) else None
            if isinstance(sub, dict) and sub.get("replace_with_linear") and not sub.get("no_op"):
                raise UnsupportedArchitectureError(
                    f"block_configs[{i}].{part}.replace_with_linear is true: a {part} replaced by one linear layer "
                    "cannot be represented by the operator graph (Nemotron-NAS / deci)")
            for extra in ("sparsify", "num_sink_tokens", "window_length"):
                if isinstance(sub, dict) and sub.get(extra):
                    raise UnsupportedArchitectureError(f"block_configs[{i}].{part}.{extra} is set: not modelled "
                                                       "(Nemotron-NAS / deci)")


def unread_structural_keys(r: ConfigReader) -> list[str]:
    """Keys that usually shape a model (experts, MLA, windows, per-layer lists) that are set and were not read."""
    out = []
    for key, value in r.raw.items():
        if not isinstance(key, str) or key in r.used or key in SHAPE_NEUTRAL_KEYS or value in (None, False, 0, [], {}):
            continue
        if key in HIDDEN_KEYS + LAYERS_KEYS or any(w in key for w in STRUCTURAL_KEY_WORDS):
            out.append(key if len(key) <= 60 else key[:57] + "...")
    return sorted(out)


def check_unread_keys(r: ConfigReader, model_type: str, known: bool) -> None:
    """Name the structural keys the reader did not use: refused for an unknown model_type, noted otherwise."""
    keys = unread_structural_keys(r)
    if not keys:
        return
    listed = ", ".join(keys[:8]) + (f" and {len(keys) - 8} more" if len(keys) > 8 else "")
    if not known:
        raise UnsupportedArchitectureError(
            f"model_type {model_type or '(none)'!r} is not in the architecture table and its config sets "
            f"{listed}, which the reader does not understand: refusing rather than guessing the model")
    r.assume(f"Config keys not used by the reader (the model may differ from the one counted): {listed}.")
