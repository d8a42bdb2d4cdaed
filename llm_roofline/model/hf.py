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
   torch from its configuration module whenever torch is installed), the small `_FAMILIES` table below,
   which copies the class defaults the shipped configs rely on.
3. Read dimensions, per-layer attention (window) and FFN (dense / MoE) kinds; identical layers share one
   LayerGroup. Every fallback appends a sentence to `assumptions`.

What the modeling code hard-codes and config.json does not say (Qwen2's q/k/v bias, GPT-2's biases, Gemma-2's
four norms per block, gpt-oss attention sinks, ...) is in `_FAMILIES`, one entry per model_type.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import ModelConfigError, RooflineError, UnsupportedArchitectureError, closest
from ..units import DTYPE_BITS, WeightFormat, canonical_dtype, weight_format
from .spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec

# ============================================================================ architecture traits
@dataclass(frozen=True)
class _Family:
    """What one model_type's modeling code hard-codes, plus its config-class defaults for absent keys.

    Flags are a bool, or the config key that holds the bool. `defaults` copies the transformers config class
    defaults that matter when a file omits the key (used when transformers itself is not used).
    """

    norm: str = "rmsnorm"  # rmsnorm | layernorm
    norms: int = 2  # norm layers per block
    gated: bool | None = True  # None: decide from the activation
    parallel: bool | str = False  # attention and MLP read the same input
    qkv_bias: bool | str = "attention_bias"
    o_bias: bool | str = "attention_bias"
    mlp_bias: bool | str = "mlp_bias"
    qk_norm: bool | str = False
    sinks: bool = False
    router_bias: bool = False
    shared_gate: bool = False  # sigmoid gate Linear(d_model, 1) on the shared expert
    lm_head_bias: bool = False
    rope: bool = True
    positions_key: str | None = None  # learned absolute position table: rows from this key
    positions_offset: int = 0  # OPT stores 2 extra position rows
    ffn_keys: tuple[str, ...] = ("intermediate_size",)
    ffn_mult: int | None = None  # absent/null FFN size -> ffn_mult * d_model
    defaults: dict = field(default_factory=dict)


_LLAMA = _Family(defaults={"tie_word_embeddings": False})
_GEMMA_DEFAULTS = {"tie_word_embeddings": True, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh"}

_FAMILIES: dict[str, _Family] = {
    "llama": _LLAMA,
    "mistral": replace(_LLAMA, defaults={"tie_word_embeddings": False, "sliding_window": 4096}),
    "mixtral": _LLAMA,
    "phi3": _LLAMA,  # fused qkv_proj / gate_up_proj: same matrices
    "qwen2": replace(_LLAMA, qkv_bias=True, o_bias=False),  # Qwen2Attention: q/k/v bias=True, o_proj no bias
    "qwen2_moe": replace(_LLAMA, qkv_bias="qkv_bias", o_bias=False, shared_gate=True,
                         defaults={"tie_word_embeddings": False, "qkv_bias": True}),
    "qwen3": replace(_LLAMA, qk_norm=True),
    "qwen3_moe": replace(_LLAMA, qk_norm=True),
    "deepseek_v2": _LLAMA,
    # DeepSeek-V3's router stores e_score_correction_bias (n_routed_experts), a per-expert bias of the routing
    # scores (used for top-k selection): a router bias of the same size.
    "deepseek_v3": replace(_LLAMA, router_bias=True),
    "gpt_oss": replace(_LLAMA, mlp_bias=True, sinks=True, router_bias=True),
    "gemma": replace(_LLAMA, defaults=_GEMMA_DEFAULTS),
    "gemma2": replace(_LLAMA, norms=4, defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096}),
    "gemma3_text": replace(_LLAMA, norms=4, qk_norm=True,
                           defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096, "sliding_window_pattern": 6,
                                     "vocab_size": 262208, "max_position_embeddings": 131072}),
    "gpt2": _Family(norm="layernorm", gated=False, qkv_bias=True, o_bias=True, mlp_bias=True, rope=False,
                    positions_key="n_positions", ffn_keys=("n_inner",), ffn_mult=4,
                    defaults={"tie_word_embeddings": True}),
    "opt": _Family(norm="layernorm", gated=False, qkv_bias="enable_bias", o_bias="enable_bias",
                   mlp_bias="enable_bias", rope=False, positions_key="max_position_embeddings",
                   positions_offset=2, ffn_keys=("ffn_dim",),
                   defaults={"tie_word_embeddings": True, "enable_bias": True}),
    "falcon": _Family(norm="layernorm", gated=False, parallel="parallel_attn", qkv_bias="bias", o_bias="bias",
                      mlp_bias="bias", ffn_keys=("ffn_hidden_size",), ffn_mult=4,
                      defaults={"tie_word_embeddings": True, "bias": False, "parallel_attn": True,
                                "max_position_embeddings": 2048}),
    "gptj": _Family(norm="layernorm", norms=1, gated=False, parallel=True, qkv_bias=False, o_bias=False,
                    mlp_bias=True, lm_head_bias=True, ffn_keys=("n_inner",), ffn_mult=4,
                    defaults={"tie_word_embeddings": False}),
    "phi": _Family(norm="layernorm", norms=1, gated=False, parallel=True, qkv_bias=True, o_bias=True,
                   mlp_bias=True, lm_head_bias=True, qk_norm="qk_layernorm", defaults={"tie_word_embeddings": False}),
    "gpt_neox": _Family(norm="layernorm", gated=False, parallel="use_parallel_residual", mlp_bias=True,
                        defaults={"tie_word_embeddings": False, "attention_bias": True,
                                  "use_parallel_residual": True}),
}
_UNKNOWN = _Family(gated=None, ffn_keys=("intermediate_size", "ffn_dim", "ffn_hidden_size", "n_inner"))

# Activations whose MLP is gated (two input matrices) in a family that does not say so itself.
_GATED_ACTIVATIONS = ("silu", "swish", "swiglu", "geglu")

# ------------------------------------------------------------------------- key names
_HIDDEN = ("hidden_size", "n_embd", "d_model")
_LAYERS = ("num_hidden_layers", "n_layer", "num_layers")
_HEADS = ("num_attention_heads", "n_head", "num_heads")
_KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv")
_CONTEXT = ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length")
_ACTIVATION = ("hidden_activation", "hidden_act", "activation_function")
_N_EXPERTS = ("num_local_experts", "num_experts", "n_routed_experts")
_TOP_K = ("num_experts_per_tok", "experts_per_token", "moe_top_k")
_MLA = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")

# Keys holding a dimension: validated (positive integer) before anything reads them.
_POSITIVE_KEYS = (_HIDDEN + _LAYERS + _HEADS + _KV_HEADS + _CONTEXT + _N_EXPERTS + _TOP_K + _MLA
                  + ("head_dim", "vocab_size", "intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size",
                     "moe_intermediate_size", "shared_expert_intermediate_size", "decoder_sparse_step",
                     "moe_layer_freq", "sliding_window", "sliding_window_pattern", "word_embed_proj_dim"))
_NONNEGATIVE_KEYS = ("first_k_dense_replace", "n_shared_experts", "num_nextn_predict_layers")
# Keys where 0 is a documented "off" value (Qwen2-MoE: sliding_window 0, shared_expert_intermediate_size 0).
_ZERO_MEANS_OFF = ("sliding_window", "shared_expert_intermediate_size")

# ------------------------------------------------------------------------- what is not modelled
_ENCODER_DECODER_TYPES = ("t5", "mt5", "umt5", "longt5", "switch_transformers", "bart", "mbart", "pegasus",
                          "pegasus_x", "marian", "blenderbot", "blenderbot-small", "led", "m2m_100", "nllb-moe",
                          "prophetnet", "fsmt", "whisper", "t5gemma", "bigbird_pegasus", "plbart")
_ENCODER_ONLY_TYPES = ("bert", "roberta", "xlm-roberta", "deberta", "deberta-v2", "distilbert", "albert",
                       "electra", "modernbert")
_SSM_TYPES = ("mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "bamba", "rwkv", "rwkv6",
              "recurrent_gemma", "nemotron_h", "falcon_h1", "granitemoehybrid", "lfm2", "xlstm", "plamo2",
              "minimax", "qwen3_next")
_SSM_KEYS = ("layers_block_type", "ssm_cfg", "ssm_state_size", "state_size", "mamba_d_state", "mamba_expand",
             "attn_layer_period", "hybrid_override_pattern", "linear_attn_config", "block_types",
             "full_attn_idxs")
_CROSS_ATTENTION_KEYS = ("cross_attention_layers", "encoder_layers", "decoder_layers")
_NON_ATTENTION_LAYER_TYPES = ("linear_attention", "mamba", "conv", "ssm", "recurrent", "mamba2")
_LAYER_TYPE_WINDOWED = {"full_attention": False, "sliding_attention": True}

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
    path, name = _locate(str(x), allow_download)
    return spec_from_config(_read_json(path), name=name, source=str(path))


def list_models() -> list[str]:
    """Ids of the shipped configs ('org/name'), sorted case-insensitively."""
    return sorted(_shipped_index().values(), key=str.lower)


def spec_from_config(config: dict, name: str = "model", source: str = "") -> ModelSpec:
    """Build a ModelSpec from a parsed config.json dict (the whole file; multimodal text_config is found here)."""
    if not isinstance(config, dict):
        raise ModelConfigError(f"a model config must be a JSON object, got {type(config).__name__}")
    notes: list[str] = []
    text = _text_part(config, notes)
    _reject_unsupported(config)
    _reject_unsupported(text)
    raw = _validated_dims(text)
    _check_head_counts(raw)
    defaults, label, model_type = _architecture_defaults(raw, config, notes)
    reader = _Reader(raw, defaults, label, notes)
    return _build_spec(reader, model_type, config, name, source)


# ============================================================================ locating configs
def _shipped_root():
    """The shipped config folder: the installed package llm_roofline.model_configs, or <repo>/model_configs."""
    try:
        from importlib.resources import files

        root = files("llm_roofline.model_configs")
        if root.is_dir():
            return root
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parents[2] / "model_configs"


def _shipped_index() -> dict[str, str]:
    """lower-case id -> id, for every <org>/<name>/config.json under the shipped folder."""
    root = _shipped_root()
    index = {}
    if not root.is_dir():
        return index
    for org in root.iterdir():
        if not org.is_dir() or org.name.startswith(("_", ".")):
            continue
        for model in org.iterdir():
            if model.is_dir() and (model / "config.json").is_file():
                ident = f"{org.name}/{model.name}"
                index[ident.lower()] = ident
    return index


def _locate(x: str, allow_download: bool) -> tuple[Any, str]:
    """(path of a config.json, model name) for a local path, a shipped id, or a hub id (download)."""
    p = Path(x).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ModelConfigError(f"directory {x!r} holds no config.json")
        return p / "config.json", p.name
    if p.is_file():
        return p, (p.parent.name if p.name == "config.json" else p.stem)
    shipped = _shipped_index()
    ident = shipped.get(x.strip().strip("/").lower())
    if ident is not None:
        org, model = ident.split("/")
        return _shipped_root() / org / model / "config.json", ident
    if allow_download and _looks_like_hub_id(x):
        return Path(_download(x)), x
    hint = closest(x, shipped.values())
    how = "" if allow_download else " (pass allow_download=True to fetch a hub id's config.json)"
    raise ModelConfigError(f"unknown model {x!r}: not a shipped id, a directory or a config.json{how}.{hint}")


def _looks_like_hub_id(x: str) -> bool:
    parts = x.split("/")
    return len(parts) == 2 and all(parts) and not x.endswith(".json")


def _download(repo: str) -> str:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as e:
        raise ModelConfigError(f"cannot download {repo!r}: huggingface_hub is not installed") from e
    try:
        return hf_hub_download(repo, "config.json")
    except Exception as e:  # offline, gated, missing repo: one line for the user
        raise ModelConfigError(f"cannot download config.json of {repo!r}: {type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else ''}") from e


def _read_json(path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ModelConfigError(f"{path} is not valid JSON: {e}") from e
    except OSError as e:
        raise ModelConfigError(f"cannot read {path}: {e}") from e
    if not isinstance(data, dict):
        raise ModelConfigError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


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
    if cfg.get("is_encoder_decoder") or model_type in _ENCODER_DECODER_TYPES:
        field_ = "is_encoder_decoder=true" if cfg.get("is_encoder_decoder") else f"model_type={model_type!r}"
        raise UnsupportedArchitectureError(f"encoder-decoder models are not modelled ({field_}); "
                                           "only decoder-only transformers are")
    if model_type in _ENCODER_ONLY_TYPES:
        raise UnsupportedArchitectureError(f"encoder-only models are not modelled (model_type={model_type!r})")
    if model_type in _SSM_TYPES:
        raise UnsupportedArchitectureError(f"state-space / hybrid models are not modelled (model_type={model_type!r})")
    for key in _SSM_KEYS:
        if cfg.get(key) is not None:
            raise UnsupportedArchitectureError(f"state-space / hybrid layers are not modelled (config key {key!r})")
    for key in _CROSS_ATTENTION_KEYS:
        if cfg.get(key):
            raise UnsupportedArchitectureError(f"cross-attention / encoder layers are not modelled "
                                               f"(config key {key!r})")
    for t in cfg.get("layer_types") or ():
        if t in _NON_ATTENTION_LAYER_TYPES:
            raise UnsupportedArchitectureError(f"layer_types contains {t!r} layers, which are not modelled "
                                               "(state-space / linear-attention hybrid)")


def _validated_dims(raw: dict) -> dict:
    """A copy of raw with every dimension key checked: positive (or non-negative) integers; 4096.0 -> 4096."""
    out = dict(raw)
    for key in _POSITIVE_KEYS + _NONNEGATIVE_KEYS:
        if raw.get(key) is None:
            continue
        allow_zero = key in _NONNEGATIVE_KEYS or key in _ZERO_MEANS_OFF
        out[key] = _as_int(raw[key], key, allow_zero)
    return out


def _check_head_counts(raw: dict) -> None:
    """Head counts that must divide, checked on the stated keys before any library sees them."""
    if raw.get("kv_lora_rank"):
        return
    heads_key = next((k for k in _HEADS if raw.get(k)), None)
    if heads_key is None:
        return
    kv_key = next((k for k in _KV_HEADS if raw.get(k)), None)
    if kv_key is not None:
        _require_divides(raw[heads_key], heads_key, raw[kv_key], kv_key)
    hidden_key = next((k for k in _HIDDEN if raw.get(k)), None)
    if hidden_key is not None and raw.get("head_dim") is None:
        _require_divides(raw[hidden_key], hidden_key, raw[heads_key], heads_key, " and the config gives no head_dim")


def _require_divides(n: int, n_key: str, d: int, d_key: str, why: str = "") -> None:
    if n % d:
        raise ModelConfigError(f"{n_key} ({n}) is not divisible by {d_key} ({d}){why}")


def _as_int(value: Any, key: str, allow_zero: bool = False) -> int:
    ok = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if isinstance(value, bool) or not ok:
        raise ModelConfigError(f"{key} must be an integer, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ModelConfigError(f"{key} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
    return int(value)


# ============================================================================ step 2: defaults
def _architecture_defaults(raw: dict, config: dict, notes: list[str]) -> tuple[dict, str, str]:
    """(defaults for absent keys, where they come from, model_type): transformers' config class, else _FAMILIES."""
    model_type = str(raw.get("model_type") or config.get("model_type") or "")
    reason = _transformers_unusable()
    parsed = _transformers_defaults(raw, config, model_type) if reason is None else None
    if parsed is not None and not raw.get("model_type"):  # a text_config without its own model_type
        model_type = str(parsed[0].get("model_type") or model_type)  # gemma3 -> gemma3_text
    family = _FAMILIES.get(model_type)
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
    return dict((family or _UNKNOWN).defaults), f"the {model_type or 'generic'} default", model_type


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


# ============================================================================ step 3: reading
class _Reader:
    """Key lookup with presence semantics: a key the file states wins; else the architecture default (noted)."""

    def __init__(self, raw: dict, defaults: dict, default_label: str, notes: list[str]):
        self.raw = raw
        self.defaults = defaults
        self.default_label = default_label
        self.assumptions = notes

    def assume(self, sentence: str) -> None:
        if sentence not in self.assumptions:
            self.assumptions.append(sentence)

    def stated(self, *keys: str) -> str | None:
        """The first key the file states with a non-null value."""
        return next((k for k in keys if self.raw.get(k) is not None), None)

    def get(self, *keys: str, default: Any = None) -> Any:
        """Value of the first key the file states; else, when no key is written at all, the default's."""
        for k in keys:
            if k in self.raw:
                return self.raw[k] if self.raw[k] is not None else default
        for k in keys:
            if self.defaults.get(k) is not None:
                return self.defaults[k]
        return default

    def flag(self, trait: bool | str) -> bool:
        """A family trait: a literal bool, or the name of the config key that holds it (absent: False)."""
        return bool(self.get(trait, default=False)) if isinstance(trait, str) else bool(trait)

    def dim(self, *keys: str, fallback: tuple[int, str] | None = None, required: bool = True) -> int | None:
        """A positive integer: stated in the file; else the architecture default; else fallback (value, reason).

        Every value that is not stated in the file appends a sentence to the assumptions.
        """
        key = self.stated(*keys)
        if key is not None:
            return _as_int(self.raw[key], key)
        default_key = next((k for k in keys if k not in self.raw and self.defaults.get(k) is not None), None)
        if default_key is not None:
            value = _as_int(self.defaults[default_key], default_key)
            self.assume(f"{keys[0]} absent from the config: {self.default_label} {value}.")
            return value
        if fallback is not None:
            value, reason = fallback
            self.assume(f"{keys[0]} absent from the config: {reason}.")
            return value
        if required:
            raise ModelConfigError(f"the config has no {keys[0]}" +
                                   (f" (nor {', '.join(keys[1:])})" if len(keys) > 1 else ""))
        return None


def _build_spec(r: _Reader, model_type: str, config: dict, name: str, source: str) -> ModelSpec:
    fam = _FAMILIES.get(model_type, _UNKNOWN)
    d_model = r.dim(*_HIDDEN)
    n_layers = r.dim(*_LAYERS)
    vocab = r.dim("vocab_size")
    positions = _learned_positions(r, fam)
    layers = [(_attention(r, fam, d_model, w), _ffn(r, fam, d_model, moe))
              for w, moe in zip(_layer_windows(r, n_layers), _moe_layers(r, n_layers), strict=True)]
    _note_unmodelled(r, model_type)
    weight_dtype = _native_dtype(r, config)
    quant, families = _quantization(r, config)
    return ModelSpec(
        name=name,
        d_model=d_model,
        vocab_size=vocab,
        layer_groups=_group_layers(layers, _parallel(r, fam), _norms_per_block(r, fam, model_type)),
        tie_embeddings=_tied(r),
        lm_head_bias=fam.lm_head_bias,
        max_context=r.dim(*_CONTEXT, required=False) or _no_context(r),
        norm=_norm_kind(r, fam, model_type),
        learned_positions=positions,
        weight_dtype=weight_dtype,
        quantization=quant,
        quantized_families=families,
        model_type=model_type,
        source=source,
        assumptions=tuple(r.assumptions),
    )


# ---------------------------------------------------------------------------- attention
def _attention(r: _Reader, fam: _Family, d_model: int, window: int | None) -> AttentionSpec:
    n_heads = r.dim(*_HEADS)
    common = dict(sliding_window=window, qkv_bias=r.flag(fam.qkv_bias), o_bias=r.flag(fam.o_bias),
                  rope=fam.rope and not r.get("alibi", default=False), qk_norm=r.flag(fam.qk_norm), sinks=fam.sinks)
    if r.stated("kv_lora_rank"):
        return _mla(r, n_heads, common)
    n_kv = _kv_heads(r, n_heads)
    _require_divides(n_heads, "num_attention_heads", n_kv, "the number of key/value heads")
    head_dim = _head_dim(r, d_model, n_heads)
    kind = "mqa" if n_kv == 1 and n_heads > 1 else "mha" if n_kv == n_heads else "gqa"
    return AttentionSpec(kind, n_heads, n_kv, head_dim, head_dim, **common)


def _mla(r: _Reader, n_heads: int, common: dict) -> AttentionSpec:
    """DeepSeek-V2/V3 multi-head latent attention: one compressed KV latent + one shared rope key per token."""
    nope, rope = r.dim("qk_nope_head_dim"), r.dim("qk_rope_head_dim")
    q_rank = r.dim("q_lora_rank", required=False)  # null (V2-Lite): a plain q_proj
    if q_rank is None:
        r.assume("q_lora_rank is null: queries use a plain q_proj (no low-rank compression).")
    # DeepSeek's attention_bias puts a bias on q_a_proj / kv_a_proj / o_proj; the spec models o_proj's only.
    if r.flag("attention_bias"):
        raise ModelConfigError("attention_bias=true with MLA (kv_lora_rank) is not modelled")
    return AttentionSpec("mla", n_heads, n_heads, nope + rope, r.dim("v_head_dim"), q_lora_rank=q_rank,
                         kv_lora_rank=r.dim("kv_lora_rank"), qk_nope_head_dim=nope, qk_rope_head_dim=rope,
                         **{**common, "qkv_bias": False, "o_bias": False})


def _kv_heads(r: _Reader, n_heads: int) -> int:
    """Key/value heads: GQA key, or Falcon / GPT-BigCode multi_query (one KV head), else = heads (MHA)."""
    if r.get("new_decoder_architecture", default=False):  # Falcon-40B/180B: grouped KV heads in num_kv_heads
        return r.dim("num_kv_heads")
    multi_query = r.get("multi_query")
    if multi_query is not None:  # Falcon-7B: a single KV head when true, else one per query head
        if "multi_query" not in r.raw:
            r.assume(f"multi_query absent from the config: {r.default_label} {bool(multi_query)}.")
        return 1 if multi_query else n_heads
    return r.dim(*_KV_HEADS, fallback=(n_heads, f"= num_attention_heads ({n_heads}), i.e. multi-head attention"))


def _head_dim(r: _Reader, d_model: int, n_heads: int) -> int:
    """head_dim from the file (Qwen3, Gemma: not hidden/heads); else the class default; else hidden/heads."""
    if r.stated("head_dim"):
        return r.dim("head_dim")
    _require_divides(d_model, "hidden_size", n_heads, "num_attention_heads", " and the config gives no head_dim")
    derived = d_model // n_heads
    default = r.defaults.get("head_dim") if "head_dim" not in r.raw else None
    if default is not None and default != derived:
        r.assume(f"head_dim absent from the config: {r.default_label} {default} (not hidden_size/heads = {derived}).")
        return _as_int(default, "head_dim")
    r.assume(f"head_dim absent from the config: hidden_size/num_attention_heads = {derived}.")
    return derived


def _layer_windows(r: _Reader, n_layers: int) -> list[int | None]:
    """Sliding window of each layer (None: full attention), from layer_types or the model's window pattern."""
    window = r.get("sliding_window") or None
    types = r.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ModelConfigError(f"layer_types must list one entry per layer ({n_layers}), got "
                                   f"{len(types) if isinstance(types, list) else types!r}")
        unknown = sorted({t for t in types if t not in _LAYER_TYPE_WINDOWED})
        if unknown:
            raise ModelConfigError(f"unknown attention kind(s) in layer_types: {', '.join(map(repr, unknown))}; "
                                   f"known: {', '.join(_LAYER_TYPE_WINDOWED)}")
        windowed = [_LAYER_TYPE_WINDOWED[t] for t in types]
    elif r.get("use_sliding_window") is False:  # Qwen2/Qwen3: a sliding_window value that is switched off
        windowed = [False] * n_layers
    elif r.get("sliding_window_pattern", "_sliding_window_pattern"):  # Gemma-3: every p-th layer is global
        p = _as_int(r.get("sliding_window_pattern", "_sliding_window_pattern"), "sliding_window_pattern")
        windowed = [(i + 1) % p != 0 for i in range(n_layers)]
    elif r.get("model_type") == "gemma2":  # Gemma-2 without layer_types: even layers local, odd global
        windowed = [i % 2 == 0 for i in range(n_layers)]
    elif r.get("use_sliding_window"):  # Qwen2: layers from max_window_layers on use the window
        first = r.get("max_window_layers", default=0)
        windowed = [i >= first for i in range(n_layers)]
    else:  # Mistral-7B-v0.1, Phi-3: one window on every layer when set
        windowed = [window is not None] * n_layers
    if any(windowed) and window is None:
        raise ModelConfigError("layers use sliding-window attention but sliding_window is not set")
    return [window if w else None for w in windowed]


# ---------------------------------------------------------------------------- feed-forward
def _moe_layers(r: _Reader, n_layers: int) -> list[bool]:
    """Which layers route to experts: DeepSeek first_k_dense_replace / moe_layer_freq, Qwen decoder_sparse_step /
    mlp_only_layers, or an explicit mlp_layer_types list; every layer when the model has experts otherwise."""
    if r.dim(*_N_EXPERTS, required=False) is None:
        return [False] * n_layers
    types = r.get("mlp_layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ModelConfigError(f"mlp_layer_types must list one entry per layer ({n_layers})")
        return [t == "sparse" for t in types]
    first_dense = r.get("first_k_dense_replace", default=0)
    freq = r.get("moe_layer_freq", default=1)
    step = r.get("decoder_sparse_step", default=1)
    dense_only = set(r.get("mlp_only_layers", default=[]) or [])
    return [i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in dense_only
            for i in range(n_layers)]


def _ffn(r: _Reader, fam: _Family, d_model: int, moe: bool) -> FfnSpec:
    activation = str(r.get(*_ACTIVATION, default="silu"))
    gated = _gated(r, fam, activation)
    bias = r.flag(fam.mlp_bias)
    if not moe:
        return FfnSpec("dense", _d_ff(r, fam, d_model), gated, activation, bias)
    n_experts = r.dim(*_N_EXPERTS)
    top_k = r.dim(*_TOP_K)
    if top_k > n_experts:
        raise ModelConfigError(f"num_experts_per_tok ({top_k}) exceeds the number of experts ({n_experts})")
    d_expert = r.dim("moe_intermediate_size", "intermediate_size")
    n_shared, d_shared, shared_gate = _shared_experts(r, fam, d_expert)
    return FfnSpec("moe", 0, gated, activation, bias, n_experts=n_experts, top_k=top_k, d_expert=d_expert,
                   n_shared_experts=n_shared, d_shared=d_shared, shared_gate=shared_gate,
                   router_bias=fam.router_bias)


def _d_ff(r: _Reader, fam: _Family, d_model: int) -> int:
    """Dense intermediate size; GPT-2 / GPT-J n_inner and Falcon ffn_hidden_size default to 4·hidden_size."""
    fallback = None
    if fam.ffn_mult:
        fallback = (fam.ffn_mult * d_model, f"{fam.ffn_mult}·hidden_size = {fam.ffn_mult * d_model}, "
                                            "the architecture's definition")
    return r.dim(*fam.ffn_keys, fallback=fallback)


def _shared_experts(r: _Reader, fam: _Family, d_expert: int) -> tuple[int, int, bool]:
    """(count, total intermediate size, gated?) of the always-on shared expert(s)."""
    d_qwen = r.get("shared_expert_intermediate_size", default=0)
    if d_qwen:  # Qwen2-MoE: one shared expert of this size, behind a sigmoid gate
        return 1, d_qwen, fam.shared_gate
    n = r.get("n_shared_experts", default=0) or 0
    return n, n * d_expert, False  # DeepSeek: n experts of moe_intermediate_size, fused into one MLP


def _gated(r: _Reader, fam: _Family, activation: str) -> bool:
    if fam.gated is not None:
        return fam.gated
    gated = activation.lower() in _GATED_ACTIVATIONS
    r.assume(f"MLP taken as {'gated (3 matrices)' if gated else 'plain (2 matrices)'} from activation "
             f"{activation!r}.")
    return gated


# ---------------------------------------------------------------------------- blocks and grouping
def _parallel(r: _Reader, fam: _Family) -> bool:
    return r.flag(fam.parallel)


def _norms_per_block(r: _Reader, fam: _Family, model_type: str) -> int:
    if model_type == "falcon" and r.flag(fam.parallel):
        # Falcon-7B: one input_layernorm; new_decoder_architecture: ln_attn + ln_mlp (num_ln_in_parallel_attn)
        if r.get("new_decoder_architecture", default=False):
            return r.get("num_ln_in_parallel_attn", default=2) or 2
        return 1
    return fam.norms


def _group_layers(layers: list[tuple[AttentionSpec, FfnSpec]], parallel: bool, norms: int) -> tuple[LayerGroup, ...]:
    """One LayerGroup per distinct (attention, ffn), in order of first occurrence, with its layer count."""
    counts: dict[tuple[AttentionSpec, FfnSpec], int] = {}
    for key in layers:
        counts[key] = counts.get(key, 0) + 1
    any_window = any(a.sliding_window for a, _ in counts)
    any_moe = any(f.kind == "moe" for _, f in counts)
    seen: dict[str, int] = {}
    groups = []
    for (attn, ffn), n in counts.items():
        parts = (["sliding" if attn.sliding_window else "full"] if any_window else []) + \
                ([ffn.kind] if any_moe or not any_window else [])
        base = ".".join(parts)  # dense | moe | sliding | full | sliding.moe | full.dense ...
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}-{seen[base]}"  # e.g. two different windows
        groups.append(LayerGroup(name, n, attn, ffn, parallel, norms))
    return tuple(groups)


# ---------------------------------------------------------------------------- model-level fields
def _learned_positions(r: _Reader, fam: _Family) -> int:
    if fam.positions_key is None:
        return 0
    proj = r.get("word_embed_proj_dim")
    if proj is not None and proj != r.dim(*_HIDDEN):  # OPT-350m: project_in/project_out around the blocks
        raise UnsupportedArchitectureError(f"word_embed_proj_dim ({proj}) != hidden_size: OPT's embedding "
                                           "projections are not modelled")
    return r.dim(fam.positions_key) + fam.positions_offset


def _tied(r: _Reader) -> bool:
    if "tie_word_embeddings" in r.raw:
        return bool(r.raw["tie_word_embeddings"])
    tied = r.defaults.get("tie_word_embeddings")
    if tied is None:
        r.assume("tie_word_embeddings absent from the config: the LM head is taken as a separate matrix.")
        return False
    r.assume(f"tie_word_embeddings absent from the config: {r.default_label} {bool(tied)}.")
    return bool(tied)


def _no_context(r: _Reader) -> None:
    r.assume("No max_position_embeddings in the config: the maximum context is unknown.")
    return None


def _norm_kind(r: _Reader, fam: _Family, model_type: str) -> str:
    if model_type in _FAMILIES:
        return fam.norm
    if r.stated("layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon"):
        return "layernorm"
    if not r.stated("rms_norm_eps"):
        r.assume("Norm kind not stated (no rms_norm_eps / layer_norm_eps): RMSNorm assumed.")
    return "rmsnorm"


def _note_unmodelled(r: _Reader, model_type: str) -> None:
    mtp = r.get("num_nextn_predict_layers", default=0)
    if mtp:
        r.assume(f"num_nextn_predict_layers={mtp}: the multi-token-prediction module (DeepSeek-V3: 14B parameters "
                 "of the 685B on the hub) is not part of plain inference and is not counted.")
    if r.flag("qk_layernorm") and model_type == "phi":
        r.assume("Phi qk_layernorm: q/k LayerNorm weights counted, their biases (2·head_dim per layer) are not.")


def _native_dtype(r: _Reader, config: dict) -> str:
    """Checkpoint dtype of the unquantized parts. float32 checkpoints are taken as served in bf16."""
    name = next((c[k] for c in (r.raw, config) for k in ("dtype", "torch_dtype") if c.get(k)), None)
    if name is None:
        r.assume("No torch_dtype in the config: unquantized weights taken as bf16.")
        return "bf16"
    try:
        dtype = canonical_dtype(name)
    except RooflineError as e:
        raise ModelConfigError(f"torch_dtype {name!r} is not a known dtype") from e
    if DTYPE_BITS[dtype] > 16:
        r.assume(f"Checkpoint stored in {name}; weights are taken as served in bf16, as serving engines cast "
                 "32-bit checkpoints to 16-bit (override with weight_dtype='fp32').")
        return "bf16"
    return dtype


def _quantization(r: _Reader, config: dict) -> tuple[WeightFormat | None, tuple[str, ...]]:
    """(storage format of the quantized matrices, families it applies to) from quantization_config."""
    families = ModelSpec.__dataclass_fields__["quantized_families"].default
    q = config.get("quantization_config") or r.raw.get("quantization_config")
    if not q:
        return None, families
    method = str(q.get("quant_method", "")).lower()
    fmt = _quant_format(r, q, method)
    if fmt is None:
        return None, families
    if method == "mxfp4":  # transformers' Mxfp4 quantizer replaces the MoE experts only
        families = ("experts",)
    skipped = q.get("modules_to_not_convert") or q.get("ignored_layers") or q.get("ignore") or []
    families = tuple(f for f in families if not any(_module_family(m) == f for m in skipped))
    r.assume(f"Weights quantized per quantization_config ({method}): {fmt.label} on the "
             f"{', '.join(families) or 'no'} matrices; embeddings, LM head, router, norms and biases keep the "
             "checkpoint dtype" + (f" (not converted: {', '.join(map(str, skipped))})" if skipped else "") + ".")
    return fmt, families


def _quant_format(r: _Reader, q: dict, method: str) -> WeightFormat | None:
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        group = q.get("group_size", q.get("q_group_size"))
        group = None if group in (None, -1, 0) else _as_int(group, "group_size")
        if bits not in (4, 8):
            raise ModelConfigError(f"quantization_config bits={bits!r} ({method}) is not modelled; 4 or 8 are")
        return weight_format(f"int{bits}", group)
    if method in ("fp8", "fbgemm_fp8"):
        block = q.get("weight_block_size")
        if block:  # DeepSeek-V3: one fp32 scale per 128x128 block
            return weight_format("fp8", math.prod(_as_int(b, "weight_block_size") for b in block))
        return weight_format("fp8")
    if method == "mxfp4":
        return weight_format("fp4")
    if method == "compressed-tensors":
        return _compressed_tensors_format(r, q)
    r.assume(f"quant_method {method!r} is not modelled: weights taken in the checkpoint's dtype "
             "(override with weight_dtype).")
    return None


def _compressed_tensors_format(r: _Reader, q: dict) -> WeightFormat | None:
    groups = list((q.get("config_groups") or {}).values())
    weights = groups[0].get("weights") if groups and isinstance(groups[0], dict) else None
    if not weights:
        r.assume("compressed-tensors config without weight settings: weights taken in the checkpoint's dtype.")
        return None
    bits, kind = weights.get("num_bits"), weights.get("type", "int")
    dtype = {("float", 8): "fp8", ("int", 8): "int8", ("int", 4): "int4", ("float", 4): "fp4"}.get((kind, bits))
    if dtype is None:
        raise ModelConfigError(f"compressed-tensors weights {kind}{bits} are not modelled")
    block = weights.get("block_structure")
    group = math.prod(block) if block else weights.get("group_size")
    return weight_format(dtype, group)


def _module_family(module: str) -> str | None:
    """Which quantization family a module path of modules_to_not_convert / ignore names."""
    m = str(module).lower()
    for needle, fam in (("lm_head", "lm_head"), ("embed", "embed"), ("shared_expert", "shared"),
                        ("router", "router"), ("mlp.gate", "router"), ("experts", "experts"),
                        ("attn", "attn"), ("attention", "attn"), ("mlp", "ffn")):
        if needle in m:
            return fam
    return None
