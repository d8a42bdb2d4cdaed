"""Hugging Face config.json -> ModelSpec. The only module that knows Hugging Face key names.

    load_model("meta-llama/Llama-3.1-8B")        # shipped id, case-insensitive (list_models())
    load_model("path/to/dir")                    # a directory holding config.json
    load_model("path/to/config.json" | dict | ModelSpec)
    load_model("org/unshipped", allow_download=True)   # fetches config.json only

Reading a config, in order:

1. Locate the text decoder's keys (`text_config` of a multimodal config) and reject what the spec cannot
   represent: encoder-decoder models, state-space / hybrid layers (UnsupportedArchitectureError).
2. Fill keys the file leaves out with the defaults of its architecture: transformers' config class for the
   `model_type` (`AutoConfig.for_model`, local files only, never remote code) — or, when transformers
   does not know the model_type or cannot be imported without importing torch (transformers >= 5 imports
   torch from its configuration module whenever torch is installed), the small `ARCHITECTURES` table below,
   which copies the class defaults the shipped configs rely on.
3. Read dimensions, per-layer attention (window) and FFN (dense / MoE) kinds; identical layers share one
   LayerGroup. Every fallback appends a sentence to `assumptions`.

What the modeling code hard-codes and config.json does not say (Qwen2's q/k/v bias, GPT-2's biases, Gemma-2's
four norms per block, gpt-oss attention sinks, ...) is in `ARCHITECTURES`, one entry per model_type.
"""

from __future__ import annotations


import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..errors import ModelConfigError, UnsupportedArchitectureError
from .architectures import (ARCHITECTURES, CONTEXT_KEYS, CROSS_ATTENTION_KEYS, ENCODER_DECODER_TYPES, ENCODER_ONLY_TYPES,
                            HIDDEN_KEYS, LAYERS_KEYS, NON_ATTENTION_LAYER_TYPES, SSM_KEYS, SSM_TYPES,
                            UNKNOWN_ARCHITECTURE, Architecture)
from .config_files import locate, read_json, shipped_index
from .layers import group_layers, layer_windows, moe_layers, norms_per_block, parallel_block, attention_spec, ffn_spec
from .reader import ConfigReader, check_head_counts, validated_dims
from .spec import ModelSpec
from .weights import native_dtype, quantization


# ============================================================================ public API
def load_model(x: Any, allow_download: bool = False) -> ModelSpec:
    """A ModelSpec from a shipped id, a directory holding config.json, a config.json path, a dict, or a ModelSpec.

    A Hugging Face hub id that is not shipped is fetched (config.json only) when allow_download=True.
    Raises ModelConfigError (a ValueError) for unknown ids and malformed configs, with the closest shipped ids.
    """
    if isinstance(x, ModelSpec):
        return x
    if isinstance(x, dict):
        return spec_from_config(x, name=str(x.get("_name_or_path") or x.get("model_type") or "model"),
                                source="dict")
    if not isinstance(x, (str, Path)):
        raise ModelConfigError(f"cannot load a model from a {type(x).__name__}; pass an id, a path or a dict")
    path, name = locate(str(x), allow_download)
    return spec_from_config(read_json(path), name=name, source=str(path))


def list_models() -> list[str]:
    """Ids of the shipped configs ('org/name'), sorted case-insensitively."""
    return sorted(shipped_index().values(), key=str.lower)


def spec_from_config(config: dict, name: str = "model", source: str = "") -> ModelSpec:
    """Build a ModelSpec from a parsed config.json dict (the whole file; multimodal text_config is found here)."""
    if not isinstance(config, dict):
        raise ModelConfigError(f"a model config must be a JSON object, got {type(config).__name__}")
    notes: list[str] = []
    text = _text_part(config, notes)
    _reject_unsupported(config)
    _reject_unsupported(text)
    raw = validated_dims(text)
    check_head_counts(raw)
    defaults, label, model_type = _architecture_defaults(raw, config, notes)
    reader = ConfigReader(raw, defaults, label, notes)
    return _build_spec(reader, model_type, config, name, source)


# ============================================================================ step 1: what is modelled
def _text_part(config: dict, notes: list[str]) -> dict:
    """The text decoder's keys: config['text_config'] for a multimodal config, else the config itself."""
    text = config.get("text_config")
    if text is None:
        return config
    if not isinstance(text, dict):
        raise ModelConfigError("text_config must be a JSON object")
    others = sorted(k for k in config if k.endswith("_config") and k not in ("text_config", "quantization_config"))
    notes.append(f"Multimodal config ({config.get('model_type', '?')}): only the text model (text_config) is "
                 f"modelled; {', '.join(others) or 'the other towers'} and the projector are not counted.")
    return text


def _reject_unsupported(cfg: dict) -> None:
    model_type = str(cfg.get("model_type") or "")
    if cfg.get("is_encoder_decoder") or model_type in ENCODER_DECODER_TYPES:
        field_ = "is_encoder_decoder=true" if cfg.get("is_encoder_decoder") else f"model_type={model_type!r}"
        raise UnsupportedArchitectureError(f"encoder-decoder models are not modelled ({field_}); "
                                           "only decoder-only transformers are")
    if model_type in ENCODER_ONLY_TYPES:
        raise UnsupportedArchitectureError(f"encoder-only models are not modelled (model_type={model_type!r})")
    if model_type in SSM_TYPES:
        raise UnsupportedArchitectureError(f"state-space / hybrid models are not modelled (model_type={model_type!r})")
    for key in SSM_KEYS:
        if cfg.get(key) is not None:
            raise UnsupportedArchitectureError(f"state-space / hybrid layers are not modelled (config key {key!r})")
    for key in CROSS_ATTENTION_KEYS:
        if cfg.get(key):
            raise UnsupportedArchitectureError(f"cross-attention / encoder layers are not modelled "
                                               f"(config key {key!r})")
    for t in cfg.get("layer_types") or ():
        if t in NON_ATTENTION_LAYER_TYPES:
            raise UnsupportedArchitectureError(f"layer_types contains {t!r} layers, which are not modelled "
                                               "(state-space / linear-attention hybrid)")


# ============================================================================ step 2: defaults
def _architecture_defaults(raw: dict, config: dict, notes: list[str]) -> tuple[dict, str, str]:
    """(defaults for absent keys, where they come from, model_type): transformers' config class, else ARCHITECTURES."""
    model_type = str(raw.get("model_type") or config.get("model_type") or "")
    reason = _transformers_unusable()
    parsed = _transformers_defaults(raw, config, model_type) if reason is None else None
    if parsed is not None and not raw.get("model_type"):  # a text_config without its own model_type
        model_type = str(parsed[0].get("model_type") or model_type)  # gemma3 -> gemma3_text
    family = ARCHITECTURES.get(model_type)
    if family is None:
        notes.append(f"model_type {model_type or '(none)'!r} is not one the parser knows: the config is read by "
                     "the usual key names as a pre-norm decoder (Llama-style unless its keys say otherwise).")
    if parsed is not None:
        return (*parsed, model_type)
    if reason is None and family is None:
        notes.append(f"transformers does not know model_type {model_type!r} either.")
    elif reason is not None and family is not None:
        notes.append(f"Defaults for absent keys come from the parser's table for {model_type!r}, "
                     f"not from transformers ({reason}).")
    return dict((family or UNKNOWN_ARCHITECTURE).defaults), f"the {model_type or 'generic'} default", model_type


def _transformers_unusable() -> str | None:
    """Why transformers cannot be used here, or None. transformers >= 5 imports torch when torch is installed."""
    if importlib.util.find_spec("transformers") is None:
        return "transformers is not installed"
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is not None:
        return "importing transformers would import torch"
    return None


def _import_transformers():
    """transformers' config registry and logging, imported without its advisory 'PyTorch was not found' line."""
    import os

    quiet = "transformers" not in sys.modules and "TRANSFORMERS_NO_ADVISORY_WARNINGS" not in os.environ
    if quiet:
        os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    try:
        from transformers import CONFIG_MAPPING, logging as hf_logging
    finally:
        if quiet:
            del os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"]
    return CONFIG_MAPPING, hf_logging


def _transformers_defaults(raw: dict, config: dict, model_type: str) -> tuple[dict, str] | None:
    """The config class's view of the text config (class defaults filled in), or None if the type is unknown."""
    CONFIG_MAPPING, hf_logging = _import_transformers()

    def without_dtype(d: dict, drop=("model_type",)) -> dict:
        # dtype keys are read from the file directly; passed on, transformers would turn them into torch dtypes
        return {k: v for k, v in d.items() if k not in ("torch_dtype", "dtype", *drop)}

    outer_type = str(config.get("model_type") or "")
    if config.get("text_config") is not None and outer_type in CONFIG_MAPPING:  # multimodal: its text part
        config_class = CONFIG_MAPPING[outer_type]
        kwargs = {**without_dtype(config), "text_config": without_dtype(raw, drop=())}
    elif model_type in CONFIG_MAPPING:
        config_class, kwargs = CONFIG_MAPPING[model_type], without_dtype(raw)
    else:
        return None
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        obj = config_class(**kwargs)
        text = obj.get_text_config() if hasattr(obj, "get_text_config") else obj
        values = text.to_dict()
    except Exception as e:  # transformers' own validation (e.g. hidden_size not a multiple of heads)
        raise ModelConfigError(f"invalid {config_class.model_type} config: {' '.join(str(e).split())}") from e
    finally:
        hf_logging.set_verbosity(verbosity)
    return values, f"transformers' {type(text).__name__} default"


def _build_spec(r: ConfigReader, model_type: str, config: dict, name: str, source: str) -> ModelSpec:
    arch = ARCHITECTURES.get(model_type, UNKNOWN_ARCHITECTURE)
    d_model = r.dim(*HIDDEN_KEYS)
    n_layers = r.dim(*LAYERS_KEYS)
    vocab = r.dim("vocab_size")
    positions = _learned_positions(r, arch)
    layers = [(attention_spec(r, arch, d_model, w), ffn_spec(r, arch, d_model, moe))
              for w, moe in zip(layer_windows(r, n_layers), moe_layers(r, n_layers), strict=True)]
    _note_unmodelled(r, model_type)
    weight_dtype = native_dtype(r, config)
    quant, families = quantization(r, config)
    return ModelSpec(
        name=name,
        d_model=d_model,
        vocab_size=vocab,
        layer_groups=group_layers(layers, parallel_block(r, arch), norms_per_block(r, arch, model_type)),
        tie_embeddings=_tied(r),
        lm_head_bias=arch.lm_head_bias,
        max_context=r.dim(*CONTEXT_KEYS, required=False) or _no_context(r),
        norm=_norm_kind(r, arch, model_type),
        learned_positions=positions,
        weight_dtype=weight_dtype,
        quantization=quant,
        quantized_families=families,
        model_type=model_type,
        source=source,
        assumptions=tuple(r.assumptions),
    )


# ---------------------------------------------------------------------------- model-level fields
def _learned_positions(r: ConfigReader, arch: Architecture) -> int:
    if arch.positions_key is None:
        return 0
    proj = r.get("word_embed_proj_dim")
    if proj is not None and proj != r.dim(*HIDDEN_KEYS):  # OPT-350m: project_in/project_out around the blocks
        raise UnsupportedArchitectureError(f"word_embed_proj_dim ({proj}) != hidden_size: OPT's embedding "
                                           "projections are not modelled")
    return r.dim(arch.positions_key) + arch.positions_offset


def _tied(r: ConfigReader) -> bool:
    if "tie_word_embeddings" in r.raw:
        return bool(r.raw["tie_word_embeddings"])
    tied = r.defaults.get("tie_word_embeddings")
    if tied is None:
        r.assume("tie_word_embeddings absent from the config: the LM head is taken as a separate matrix.")
        return False
    r.assume(f"tie_word_embeddings absent from the config: {r.default_label} {bool(tied)}.")
    return bool(tied)


def _no_context(r: ConfigReader) -> None:
    r.assume("No max_position_embeddings in the config: the maximum context is unknown.")
    return None


def _norm_kind(r: ConfigReader, arch: Architecture, model_type: str) -> str:
    if model_type in ARCHITECTURES:
        return arch.norm
    if r.stated("layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon"):
        return "layernorm"
    if not r.stated("rms_norm_eps"):
        r.assume("Norm kind not stated (no rms_norm_eps / layer_norm_eps): RMSNorm assumed.")
    return "rmsnorm"


def _note_unmodelled(r: ConfigReader, model_type: str) -> None:
    mtp = r.get("num_nextn_predict_layers", default=0)
    if mtp:
        r.assume(f"num_nextn_predict_layers={mtp}: the multi-token-prediction module (DeepSeek-V3: 14B parameters "
                 "of the 685B on the hub) is not part of plain inference and is not counted.")
    if r.flag("qk_layernorm") and model_type == "phi":
        r.assume("Phi qk_layernorm: q/k LayerNorm weights counted, their biases (2·head_dim per layer) are not.")
