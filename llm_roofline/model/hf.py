"""Hugging Face config.json -> ModelSpec. The package's entry points for models.

    load_model("meta-llama/Llama-3.1-8B")        # shipped id, case-insensitive (list_models())
    load_model("path/to/dir")                    # a directory holding config.json
    load_model("path/to/config.json" | dict | ModelSpec)
    load_model("org/unshipped", allow_download=True)   # fetches config.json only

Reading a config, in order (one reader: the result depends on the config and this package's tables only):

1. Locate the text decoder's keys (`text_config` of a multimodal config, `llm_config` / `language_config` of a
   remote-code wrapper, an omni model's thinker, or the top level beside a vision_config; scope.py names the towers
   left out) and refuse what the operator graph cannot represent: encoder-decoder and encoder stacks, families whose
   layers it lacks (UnsupportedArchitectureError, naming the key and the architecture; refusals.py says why).
2. Fill keys the file leaves out with the defaults of its architecture: the `ARCHITECTURES` table
   (architectures.py; remote_code.py for the types vLLM serves from a checkpoint's own code), which copies the
   config-class defaults. transformers is never imported.
3. Read dimensions, per-layer attention (window, RoPE, KV heads, DSA indexer, MiMo / Step per-layer shapes) and
   FFN (dense / MoE / absent) kinds (layers.py), the recurrent and hybrid layers (hybrid.py: Mamba-1/2, Gated
   DeltaNet, KDA, lightning, short conv), or a family's own layers in a module of its own, one family each:
   gemma.py (Gemma-4 / -3n: per-layer inputs, KV reuse, AltUp), bailing.py (Ling 1.x / 2.0 / 3.0), xlstm.py,
   recurrent_gemma.py, glm5_next.py (KDA beside MLA with a pooled DSA indexer, mHC), deepseek_v4.py (compressed
   attention, hyper-connections), dots3.py, hy4.py (iHC, gated MLA), minimax_m3.py (block-sparse indexer),
   mistral_large4.py (MLA + DSA, latents reused across layers), muse.py (Muse Glimmer / Spark: gated attention,
   residual gates, experts at a narrower width), molmo2.py, zamba.py (shared blocks), longcat.py, cohere.py,
   laguna.py, inkling.py, axk2.py; and the remote-code families under their own key names: step3.py (MFA), grok.py,
   arctic.py, pangu.py, chatglm.py, qwen1.py, baichuan.py, dense_remote.py (Solar Pro, Tele-FLM, PLaMo-3), ouro.py
   (a looped stack), jais.py (ALiBi or learned positions). Identical layers share one LayerGroup. Every fallback
   appends a sentence to `assumptions`; keys that shape a model and were not read are named (or the config is
   refused when its model_type is unknown).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .architectures import ARCHITECTURES, GEMMA4_TYPES, PER_LAYER_INPUT_TYPES, TEXT_MODEL_TYPES, UNKNOWN_ARCHITECTURE
from .arctic import arctic_layers, arctic_moe_layers, arctic_norms
from .axk2 import axk2_layers, axk2_norm_gates
from .baichuan import baichuan_groups
from .bailing import bailing_moe_architecture, note_bailing_moe
from .chatglm import chatglm_groups
from .cohere import cohere2_moe_layers
from .config_files import locate, read_json, shipped_index
from .deepseek_v4 import deepseek_v4_groups
from .dense_remote import note_solar, note_teleflm, plamo3_raw
from .dots3 import DOTS3_TYPES, dots3_groups
from .gemma import (activation_sparsities, gemma3n_altup_laurel, gemma4_d_ffs, gemma4_ffn, gemma4_global_attention,
                    gemma4_moe_layers, per_layer_input, reused_kv_layers, with_layer_extras)
from .grok import GROK_TYPES, grok_config, grok_layers
from .hy4 import HY4_TYPES, hy4_groups
from .hybrid import HYBRID_TYPES, hybrid_groups
from .inkling import INKLING_TYPES, inkling_groups, inkling_tied
from .jais import jais_positions
from .key_names import BOUNDS, CONTEXT_KEYS, HIDDEN_KEYS, LAYERS_KEYS
from .laguna import laguna_layers, laguna_moe_layers, note_laguna, note_mellum
from .layers import (attention_spec, ffn_spec, group_layers, layer_d_ffs, layer_indexers, layer_kv_heads, layer_noops,
                     layer_ropes, layer_windows, mimo_attention, mimo_full_attention, moe_layers, norms_per_block,
                     parallel_block, step3p5_attention, step3p5_moe_layers)
from .longcat import longcat_groups
from .minimax_m3 import MINIMAX_M3_TYPES, minimax_m3_groups
from .mistral_large4 import ML4_TYPES, mistral_large4_groups
from .molmo2 import molmo2_extra_rows, molmo2_layers, molmo2_raw
from .muse import MUSE_TYPES, muse_layers, muse_spark_groups, note_muse
from .ouro import ouro_loops
from .pangu import note_pangu_embedded
from .qwen1 import qwen1_groups
from .reader import ConfigReader, check_head_counts
from .remote_code import REMOTE_CODE_ALIASES, REMOTE_CODE_CLASSES
from .scope import check_unread_keys, model_type_of, reject_unsupported, text_part
from .spec import AttentionSpec, FfnSpec, ModelSpec
from .step3 import step3_layers, step3_moe_layers
from .traits import Architecture
from .weights import activation_quant, expert_formats, native_dtype, quantization
from .xlstm import xlstm_raw
from .zamba import zamba_groups


# ============================================================================ public API
def load_model(x: Any, allow_download: bool = False) -> ModelSpec:
    """A ModelSpec from a shipped id, a directory holding config.json, a config.json path, a dict, or a ModelSpec.

    A Hugging Face hub id that is not shipped is fetched (config.json only) when allow_download=True.
    Raises ModelConfigError (a ValueError) for unknown ids and malformed configs, with the closest shipped ids.
    """
    if isinstance(x, ModelSpec):
        return x
    if isinstance(x, dict):
        name = next((v for v in (x.get("_name_or_path"), x.get("model_type")) if isinstance(v, str) and v), "model")
        return spec_from_config(x, name=name, source="dict")
    if not isinstance(x, (str, Path)):
        raise ModelConfigError(f"cannot load a model from a {type(x).__name__}; pass an id, a path or a dict")
    path, name = locate(str(x), allow_download)
    local = os.path.exists(os.path.expanduser(str(x)))
    key = _cache_key(path, name, local)
    with _SPECS_LOCK:
        if key in _SPECS:
            _SPECS.move_to_end(key)
            return _SPECS[key]
    config = read_json(path)
    if local:  # a local directory or file: named as its config names itself
        name = config_name(config) or name
    try:
        spec = spec_from_config(config, name=name, source=str(path))
    except ModelConfigError as e:  # the same error, naming the file it came from
        raise type(e)(f"{path}: {e}") from e
    if key is not None:
        with _SPECS_LOCK:
            _SPECS[key] = spec
            while len(_SPECS) > 64:
                _SPECS.popitem(last=False)
    return spec


# ModelSpecs read from files, by file: (path, name, local?, size, modification time) -> spec. A ModelSpec is immutable
# all the way down (frozen dataclasses and tuples), so every caller shares one; an edited file is read again.
_SPECS: OrderedDict = OrderedDict()
_SPECS_LOCK = threading.Lock()


def _cache_key(path, name: str, local: bool) -> tuple | None:
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return str(path), name, local, st.st_size, st.st_mtime_ns


def config_name(config: dict) -> str | None:
    """The hub id a config.json names itself by (`_name_or_path`, written by transformers' save_pretrained), or
    None when it has none or holds a local path ('/home/me/ckpt', './out', 'C:\\models\\x')."""
    v = config.get("_name_or_path") if isinstance(config, dict) else None
    if not isinstance(v, str) or not v.strip() or len(v) > 200 or not v.isprintable():
        return None
    v = v.strip()
    if v.startswith(("/", ".", "~")) or "\\" in v or ":" in v or v.count("/") > 1:
        return None
    return v


def list_models() -> list[str]:
    """Ids of the shipped configs ('org/name'), sorted case-insensitively."""
    return sorted(shipped_index().values(), key=str.lower)


def spec_from_config(config: dict, name: str = "model", source: str = "") -> ModelSpec:
    """Build a ModelSpec from a parsed config.json dict (the whole file; multimodal text_config is found here)."""
    if not isinstance(config, dict):
        raise ModelConfigError(f"a model config must be a JSON object, got {type(config).__name__}")
    notes: list[str] = []
    config = grok_config(config, notes)  # xai-org/grok-2's config.json states model_type 'git'
    reject_unsupported(config)
    text = text_part(config, notes)
    model_type = _text_model_type(text, config) or _remote_code_type(text, notes)
    if model_type in REMOTE_CODE_ALIASES:
        notes.append(f"model_type {model_type!r} (remote code) is transformers' {REMOTE_CODE_ALIASES[model_type]!r}: "
                     "read as that.")
        model_type = REMOTE_CODE_ALIASES[model_type]
    reject_unsupported(text, model_type)  # a text_config without its own model_type: the wrapper's text model's
    arch = ARCHITECTURES.get(model_type)
    if model_type == "bailing_moe":  # Ling 1.x or 2.0, by config.json's architectures
        arch = bailing_moe_architecture(text, arch)
    raw = _flatten_nested(text, arch or UNKNOWN_ARCHITECTURE)
    if model_type in _RAW_PASSES:  # a family's own names for keys the reader reads by the usual ones
        raw = _RAW_PASSES[model_type](raw)
    check_head_counts(raw, (arch or UNKNOWN_ARCHITECTURE).defaults.get("head_dim"))
    if arch is None:
        notes.append(f"model_type {model_type or '(none)'!r} is not one the parser knows: the config is read by "
                     "the usual key names as a pre-norm decoder (Llama-style unless its keys say otherwise).")
    defaults = dict((arch or UNKNOWN_ARCHITECTURE).defaults)
    reader = ConfigReader(raw, defaults, f"the {model_type or 'generic'} default", notes, model_type)
    reader.used.update((arch or UNKNOWN_ARCHITECTURE).nested)  # read through their flattened keys
    spec = _build_spec(reader, arch or UNKNOWN_ARCHITECTURE, model_type, config, name, source)
    check_unread_keys(reader, model_type, known=arch is not None)
    return _with_assumptions(spec, reader.assumptions)


# ============================================================================ reading
def _text_model_type(text: dict, config: dict) -> str:
    """The text tower's model_type: its own, else the wrapper's mapped to its text model (gemma3 -> gemma3_text)."""
    own = model_type_of(text)
    if own and own not in TEXT_MODEL_TYPES or text is config:
        return own
    outer = own or model_type_of(config)
    return TEXT_MODEL_TYPES.get(outer, outer)


def _remote_code_type(text: dict, notes: list[str]) -> str:
    """A config without model_type whose class is a remote-code family's (a copy of THUDM/chatglm3-6b's config.json
    that lost the key): that family's model_type, noted; else ''."""
    classes = text.get("architectures")
    found = next((c for c in classes if isinstance(c, str) and c in REMOTE_CODE_CLASSES), None) \
        if isinstance(classes, list) else None
    if found is None:
        return ""
    notes.append(f"model_type absent from the config: read as {REMOTE_CODE_CLASSES[found]!r}, the model_type of its "
                 f"class {found}.")
    return REMOTE_CODE_CLASSES[found]


def _flatten_nested(raw: dict, arch: Architecture) -> dict:
    """DBRX / MPT keep attention and FFN keys in sub-dicts (attn_config, ffn_config): read them as top-level keys."""
    out = dict(raw)
    for key in arch.nested:
        sub = raw.get(key)
        if sub is None:
            continue
        if not isinstance(sub, dict):
            raise ModelConfigError(f"{key} must be a JSON object, got {type(sub).__name__}")
        out.update({k: v for k, v in sub.items() if isinstance(k, str) and k not in raw})
    return out


def _build_spec(r: ConfigReader, arch: Architecture, model_type: str, config: dict, name: str,
                source: str) -> ModelSpec:
    d_model = r.dim(*HIDDEN_KEYS)
    # LongCat-Flash: num_layers layers of two attention blocks each (longcat.py reads its depth)
    n_layers = r.dim(*LAYERS_KEYS, fallback=_layers_from_list(r)) if model_type != "longcat_flash" else 0
    vocab = r.dim(*arch.vocab_keys)
    learned, head_params = jais_positions(r) if model_type == "jais" else (True, 0)  # JAIS: ALiBi or a table
    positions = _learned_positions(r, arch, d_model) if learned else 0
    if model_type == "longcat_flash":  # two attention blocks and a shortcut-connected MoE per layer
        groups = longcat_groups(r, arch, d_model)
    elif model_type in HYBRID_TYPES:  # recurrent mixers (Mamba-2, Gated DeltaNet) with or without attention
        groups = hybrid_groups(r, arch, model_type, d_model, n_layers)
    elif model_type == "deepseek_v4":  # compressed sparse attention, hyper-connections
        groups, head_params = deepseek_v4_groups(r, d_model, n_layers)
    elif model_type in ("zamba", "zamba2"):  # Mamba blocks and shared transformer blocks
        groups = zamba_groups(r, d_model, n_layers, v2=model_type == "zamba2")
    elif model_type in HY4_TYPES:  # iHC hyper-connections, gated MLA with sinks, DSA with shared indexers
        groups, head_params = hy4_groups(r, arch, d_model, n_layers)
    elif model_type in ML4_TYPES:  # MLA without a query latent, DSA, NoPE layers, latents reused across layers
        groups, head_params = mistral_large4_groups(r, arch, d_model, n_layers)
    elif model_type in DOTS3_TYPES:  # DSA and sliding-window MLA layers of two shapes, a gate per head
        groups = dots3_groups(r, arch, d_model, n_layers)
    elif model_type in MINIMAX_M3_TYPES:  # full and block-sparse (indexer) GQA layers, dense and MoE
        groups = minimax_m3_groups(r, arch, d_model, n_layers)
    elif model_type in INKLING_TYPES:  # relative position bias, short convs, per-type heads, a router sink
        groups = inkling_groups(r, d_model, n_layers)
    elif model_type in _REMOTE_CODE:  # ChatGLM2-4, Qwen v1, Baichuan: remote code with key names of their own
        groups = _REMOTE_CODE[model_type](r, d_model, n_layers)
    else:
        layers = _layers(r, arch, model_type, d_model, n_layers)
        if model_type in _LAYER_PASSES:  # Laguna's heads and gates per layer, Cohere2-MoE's RoPE
            layers = _LAYER_PASSES[model_type](r, layers)
        groups = group_layers(layers, parallel_block(r, arch), norms_per_block(r, arch, model_type))
        if model_type in _GROUP_PASSES:  # A.X-K2's low-rank gated RMSNorms, Arctic's residual MLP norm
            groups = _GROUP_PASSES[model_type](r, groups, d_model)
        if model_type == "ouro":  # the stack run total_ut_steps times, its weights stored once
            groups, head_params = ouro_loops(r, groups, d_model)
    ple, ple_vocab = per_layer_input(r, vocab) if model_type in PER_LAYER_INPUT_TYPES else (0, 0)
    altup, laurel = gemma3n_altup_laurel(r) if model_type == "gemma3n_text" else (0, 0)
    groups = with_layer_extras(groups, d_model, ple, altup, laurel)
    _note_unmodelled(r, arch, model_type)
    weight_dtype = native_dtype(r, config)
    quant, families = quantization(r, config)
    inkling = model_type in INKLING_TYPES  # its context as the checkpoint states it, an LM head never tied
    return ModelSpec(
        name=name,
        d_model=d_model,
        vocab_size=vocab,
        layer_groups=groups,
        tie_embeddings=inkling_tied(r) if inkling else _tied(r),
        lm_head_bias=r.flag(arch.lm_head_bias),
        max_context=_max_context(r, CONTEXT_KEYS + (("model_max_length",) if inkling else arch.context_keys)),
        norm=_norm_kind(r, arch, model_type),
        learned_positions=positions,
        weight_dtype=weight_dtype,
        quantization=quant,
        quantized_families=families,
        family_formats=expert_formats(r),
        model_type=model_type,
        source=source,
        head_params=head_params,
        activation_quant=activation_quant(r, config, quant),
        per_layer_input=ple,
        per_layer_vocab=ple_vocab,
        altup_streams=altup,
        laurel_rank=laurel,
        embed_norm=inkling,
        embed_extra_rows=molmo2_extra_rows(r) if model_type == "molmo2_text" else 0,
    )


# NX-AI's embedding_dim / num_blocks for hidden_size / num_hidden_layers, an older PLaMo-3 config's sliding_window list
# for window_size, the Molmo2 remote code's qkv_bias under transformers' name
_RAW_PASSES = {"xlstm": xlstm_raw, "plamo3": plamo3_raw, "molmo2_text": molmo2_raw}
_LAYER_PASSES = {"laguna": laguna_layers, "cohere2_moe": cohere2_moe_layers, "axk2": axk2_layers,
                 "step3_text": step3_layers, "arctic": arctic_layers, **dict.fromkeys(GROK_TYPES, grok_layers),
                 "molmo2_text": molmo2_layers, **dict.fromkeys(MUSE_TYPES, muse_layers)}
_GROUP_PASSES = {"axk2": axk2_norm_gates, "arctic": arctic_norms, "muse_spark_text": muse_spark_groups}
_MOE_LAYERS = {"step3p5": step3p5_moe_layers, "step3_text": step3_moe_layers, "arctic": arctic_moe_layers,
               "laguna": laguna_moe_layers}
_REMOTE_CODE = {"chatglm": chatglm_groups, "qwen": qwen1_groups, "baichuan": baichuan_groups}


def _layers(r: ConfigReader, arch: Architecture, model_type: str, d_model: int, n_layers: int) -> list:
    """(AttentionSpec, FfnSpec) per layer; one spec object per distinct per-layer key (window, rope, kv heads,
    indexer, K and V reused, moe, (d_ff, activation sparsity))."""
    gemma4 = model_type in GEMMA4_TYPES
    if gemma4:
        moe_flags = gemma4_moe_layers(r, n_layers)
    else:
        moe_flags = _MOE_LAYERS.get(model_type, moe_layers)(r, n_layers)
    noops = layer_noops(r, n_layers)
    windows, d_ffs = layer_windows(r, arch, n_layers), layer_d_ffs(r, arch, d_model, n_layers)
    reused = reused_kv_layers(r, windows) if model_type in PER_LAYER_INPUT_TYPES else [False] * n_layers
    if gemma4:
        d_ffs = gemma4_d_ffs(r, d_ffs, reused)
    keys = list(zip(windows, layer_ropes(r, arch, n_layers, windows), layer_kv_heads(r, n_layers),
                    layer_indexers(r, n_layers), reused, moe_flags, zip(d_ffs, activation_sparsities(r, n_layers)),
                    strict=True))
    attn, ffn = {}, {}
    for (window, rope, n_kv, idx, reuse, moe, mlp), (no_attn, no_ffn) in dict.fromkeys(zip(keys, noops)):
        if no_attn or no_ffn:  # Nemotron-NAS: a block without attention or without FFN
            attn.setdefault("none", AttentionSpec.none())
            ffn.setdefault("none", FfnSpec.none())
        if (window, rope, n_kv, idx, reuse) not in attn and not no_attn:
            a = attention_spec(r, arch, d_model, window, rope, n_kv, idx)
            if gemma4 and window is None:
                a = gemma4_global_attention(r, a)
            elif model_type in ("mimo_v2_flash", "mimo_v2"):
                a = mimo_attention(r, a) if window else mimo_full_attention(r, a)
            elif model_type == "step3p5" and window:
                a = step3p5_attention(r, a)
            attn[window, rope, n_kv, idx, reuse] = replace(a, kv_reused=reuse)
        if not moe and not mlp[0] and not no_ffn:
            raise ModelConfigError(f"the config has no {(arch.ffn_keys or ('intermediate_size',))[0]} "
                                   "(the width of the dense MLP layers)")
        if (moe, mlp) not in ffn and not no_ffn:
            f = ffn_spec(r, arch, d_model, moe, 0 if moe else mlp[0])
            ffn[moe, mlp] = replace(gemma4_ffn(r, f) if gemma4 else f, activation_sparsity=mlp[1])
    return [(attn["none" if no_attn else (w, rope, n_kv, idx, reuse)], ffn["none" if no_ffn else (moe, mlp)])
            for (w, rope, n_kv, idx, reuse, moe, mlp), (no_attn, no_ffn) in zip(keys, noops)
            if not (no_attn and no_ffn)]  # Nemotron-NAS: a block with neither is the identity


def _layers_from_list(r: ConfigReader) -> tuple[int, str] | None:
    """Nemotron-H (transformers >= 5) states its depth only as the length of layers_block_type."""
    blocks = r.raw.get("layers_block_type")
    if r.get("model_type") != "nemotron_h" or not isinstance(blocks, list) or not blocks:
        return None
    return min(len(blocks), BOUNDS["layers"] + 1), "the length of layers_block_type"


def _with_assumptions(spec: ModelSpec, assumptions: list[str]) -> ModelSpec:
    return replace(spec, assumptions=tuple(assumptions))


# ---------------------------------------------------------------------------- model-level fields
def _learned_positions(r: ConfigReader, arch: Architecture, d_model: int) -> int:
    if arch.positions_key is None:
        return 0
    proj = r.get("word_embed_proj_dim")
    if proj is not None and proj != d_model:  # OPT-350m: project_in/project_out around the blocks
        raise UnsupportedArchitectureError(f"word_embed_proj_dim ({shown(proj)}) != hidden_size (model_type=opt): "
                                           "OPT's embedding projections are not modelled")
    return r.dim(arch.positions_key) + arch.positions_offset


def _tied(r: ConfigReader) -> bool:
    if "tie_word_embeddings" in r.raw:
        return r.boolean("tie_word_embeddings")
    tied = r.defaults.get("tie_word_embeddings")
    if tied is None:
        r.assume("tie_word_embeddings absent from the config: the LM head is taken as a separate matrix.")
        return False
    r.assume(f"tie_word_embeddings absent from the config: {r.default_label} {bool(tied)}.")
    return bool(tied)


def _max_context(r: ConfigReader, keys: tuple[str, ...]) -> int | None:
    """The longest context the config allows: the smallest of the context keys it states, as vLLM's max_model_len
    takes it (_get_and_verify_max_len: Qwen v1's max_position_embeddings 32,768 beside seq_length 8,192 -> 8,192);
    else the architecture's default; None, noted, without either."""
    values = {k: r.dim(k) for k in keys if r.stated(k)}
    if len(set(values.values())) > 1:
        r.assume(f"Context: {', '.join(f'{k} {v:,}' for k, v in values.items())}: the smallest, as vLLM's "
                 "max_model_len takes it.")
    if values:
        return min(values.values())
    context = r.dim(*keys, required=False)
    if context is None:
        r.assume("No max_position_embeddings in the config: the maximum context is unknown.")
    return context


def _norm_kind(r: ConfigReader, arch: Architecture, model_type: str) -> str:
    if arch.bias_free_layernorm and not (model_type == "cohere2_moe" and r.get("rms_norm_eps") is not None):
        r.assume(f"{model_type}: LayerNorm without bias, counted as weight-only (hidden_size parameters per norm).")
        return "rmsnorm"
    if arch.rmsnorm_key:  # ChatGLM: rmsnorm false builds LayerNorms with bias
        return "rmsnorm" if r.boolean(arch.rmsnorm_key, default=True) else "layernorm"
    if model_type in ARCHITECTURES:
        return arch.norm
    if r.stated("layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon"):
        return "layernorm"
    if not r.stated("rms_norm_eps"):
        r.assume("Norm kind not stated (no rms_norm_eps / layer_norm_eps): RMSNorm assumed.")
    return "rmsnorm"


def _note_minimax_m2(r: ConfigReader) -> None:
    """MiniMax-M2's own keys: every layer softmax attention (attn_type_list 1; a 0, MiniMax-Text-01's lightning
    attention, is refused: modeling_minimax_m2 builds none), partial RoPE, and its MTP modules."""
    kinds = r.int_list("attn_type_list", length=r.count("num_hidden_layers") or None)
    if kinds and any(k != 1 for k in kinds):
        raise UnsupportedArchitectureError("attn_type_list has entries other than 1 (softmax attention) in a "
                                           "minimax_m2 config: its lightning-attention layers are not modelled")
    rotary = r.count("rotary_dim")
    if rotary:
        r.assume(f"rotary_dim={rotary}: RoPE's elementwise pass is counted over whole heads (a small upper bound).")
    mtp = r.count("num_mtp_modules") if r.boolean("use_mtp") else 0
    r.used.update(("mtp_transformer_layers", "qk_norm_type", "scoring_func"))
    if mtp:
        r.assume(f"num_mtp_modules={mtp}: the multi-token-prediction modules are not part of plain inference and are "
                 "not counted.")


def _note_step3p5(r: ConfigReader) -> None:
    """Step-3.5's per-layer RoPE (rope_theta, partial_rotary_factors: half the head on its full layers) and SwiGLU
    clamps (swiglu_limits) change no shape; RoPE's elementwise pass is counted over whole heads."""
    factors = r.get("partial_rotary_factors")
    if isinstance(factors, list) and any(f != 1 for f in factors):
        r.assume("partial_rotary_factors: RoPE's elementwise pass is counted over whole heads (a small upper bound).")


def _note_phi4_multimodal(r: ConfigReader) -> None:
    """Phi-4-multimodal's vision and speech LoRA adapters: outside the model class, not run by a text request."""
    r.assume("phi4_multimodal: the vision and speech LoRA adapters on every decoder linear (the checkpoint's "
             "vision-lora / speech-lora PEFT adapters; ranks 256 and 320 in microsoft/Phi-4-multimodal-instruct) "
             "are not counted: transformers' Phi4MultimodalForCausalLM builds none (they load with load_adapter), "
             "vLLM skips the checkpoint's lora weights and applies them as LoRA requests with image or audio "
             "input. A text-only request runs the base decoder only.")


def _note_deepseek_moe(r: ConfigReader) -> None:
    """DeepSeek-MoE (model_type deepseek): vLLM's deepseek.py builds attention without bias of hidden/heads wide heads
    and no MLA, whatever the config says; the checkpoint's code reads attention_bias."""
    r.switch("attention_bias", False, "vLLM's deepseek.py builds q/k/v/o without bias, the checkpoint's code with")
    head_dim = r.dim("head_dim", required=False)
    if head_dim is not None and head_dim * r.dim("num_attention_heads") != r.dim("hidden_size"):
        raise UnsupportedArchitectureError(f"head_dim ({head_dim}) is not hidden_size/num_attention_heads "
                                           "(model_type=deepseek): vLLM's deepseek.py uses the latter")
    if r.stated("kv_lora_rank"):
        raise UnsupportedArchitectureError("kv_lora_rank is set (model_type=deepseek): DeepseekForCausalLM builds "
                                           "plain attention; MLA is DeepSeek-V2's (model_type deepseek_v2)")


_NOTES = {"laguna": note_laguna, "mellum": note_mellum, "phi4_multimodal": _note_phi4_multimodal,
          "bailing_moe": note_bailing_moe, "deepseek": _note_deepseek_moe, "PanguEmbedded": note_pangu_embedded,
          "solar": note_solar, "TeleFLM": note_teleflm, **dict.fromkeys(MUSE_TYPES, note_muse)}


def _note_unmodelled(r: ConfigReader, arch: Architecture, model_type: str) -> None:
    mtp = r.count("num_nextn_predict_layers")
    if mtp:
        r.assume(f"num_nextn_predict_layers={mtp}: the multi-token-prediction module (DeepSeek-V3: 14B parameters "
                 "of the 685B on the hub) is not part of plain inference and is not counted.")
    if model_type == "minimax_m2":
        _note_minimax_m2(r)
    if model_type == "step3p5":
        _note_step3p5(r)
    if model_type in _NOTES:
        _NOTES[model_type](r)
    if model_type == "phi" and r.flag("qk_layernorm"):
        r.assume("Phi qk_layernorm: q/k LayerNorm weights counted, their biases (2·head_dim per layer) are not.")
    if model_type == "llama4_text" and r.get("use_qk_norm"):
        r.assume("Llama-4 use_qk_norm is an L2 norm without weights: no parameters.")
    if model_type == "bloom":
        r.assume("BLOOM's word_embeddings_layernorm (2·hidden_size parameters) is not counted.")
    if model_type == "bitnet":
        r.assume("BitNet's ffn_sub_norm has intermediate_size weights; counted as hidden_size like the other norms.")
