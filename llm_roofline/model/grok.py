"""Grok-1 and Grok-2 (xAI; remote code: hpcai-tech/grok-1's modeling_grok1.py, keyfan/grok-1-hf's modeling_grok.py;
vLLM grok1.py, Grok1ForCausalLM / Grok2ForCausalLM).

Every layer: pre_attn_norm, GQA without bias (head_dim = hidden_size / num_attention_heads), post_attn_norm, then
pre_moe_norm, a MoE of num_experts (num_local_experts) gated-GELU experts of moe_intermediate_size (else
intermediate_size), top num_experts_per_tok, its router without bias, post_moe_norm. Grok-2's residual_moe: a dense
gated-GELU MLP of intermediate_size reads the experts' input, the two outputs summed and scaled by 1/sqrt(2).

Their config.json name the model by their loaders: hpcai-tech's states no model_type (auto_map to Grok1Config,
model_type grok-1: remote_code.REMOTE_CODE_CLASSES maps its class); xai-org/grok-2's states 'git' (transformers' GIT
image-to-text model; vLLM's registry goes by architectures, Grok1ForCausalLM): grok_config reads that config as
Grok-2.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .key_names import HEADS_KEYS, HIDDEN_KEYS
from .reader import ConfigReader
from .remote_code import REMOTE_CODE_CLASSES
from .spec import AttentionSpec, FfnSpec

GROK_TYPES = ("grok-1", "grok", "grok-2")
_GIT = ("model_type 'git' (xai-org/grok-2's config.json; transformers would load GitConfig, whose "
        "tie_word_embeddings default false applies)")


def grok_config(config: dict, notes: list[str]) -> dict:
    """Grok-2's config (model_type 'git' beside a Grok class in architectures) with the model_type grok-2."""
    archs = config.get("architectures")
    named = next((a for a in archs[:16] if isinstance(a, str) and REMOTE_CODE_CLASSES.get(a) == "grok-1"), None) \
        if isinstance(archs, list) else None
    if named is None or config.get("model_type") != "git":
        return config
    notes.append(f"architectures {named!r} with {_GIT}: read as grok-2 (vLLM's grok1.py).")
    return {**config, "model_type": "grok-2"}


def grok_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list:
    """Grok-2's residual_moe MLP beside each layer's experts (a shared expert of intermediate_size); the head_dim and
    window keys read only at the values vLLM's Grok1Attention builds."""
    d_model, heads = r.dim(*HIDDEN_KEYS), r.dim(*HEADS_KEYS)
    head_dim = next((a.head_dim for a, _ in layers if a.kind != "none"), d_model // heads)
    if d_model % heads or head_dim != d_model // heads:
        raise UnsupportedArchitectureError(f"head_dim {head_dim} with hidden_size {d_model} and {heads} heads "
                                           f"(model_type={r.model_type}): vLLM's Grok1Attention takes head_dim = "
                                           "hidden_size / num_attention_heads")
    experts = {k: r.raw[k] for k in ("num_experts", "num_local_experts") if r.raw.get(k) is not None}
    if len(experts) == 2 and experts["num_experts"] != experts["num_local_experts"]:
        raise ModelConfigError(f"num_experts ({shown(experts['num_experts'])}) and num_local_experts "
                               f"({shown(experts['num_local_experts'])}) differ: vLLM's grok1.py reads the first, "
                               "the transformers-style ports the second")
    if any(f.kind != "moe" for _, f in layers):
        raise ModelConfigError(f"model_type {r.model_type}: every Grok layer is a MoE; num_experts (or "
                               "num_local_experts) and num_experts_per_tok must be positive integers")
    window, every = r.get("sliding_window_size"), r.get("global_attn_every_n")
    if not (_absent_or(window, -1) and _absent_or(every, 1)):
        raise UnsupportedArchitectureError(f"sliding_window_size={shown(window)}, global_attn_every_n="
                                           f"{shown(every)} (model_type={r.model_type}): Grok's windowed layers "
                                           "are not read (every layer attends to the whole context at -1 and 1)")
    r.assume("Grok: the attention, embedding and output multipliers and the tanh softcaps of the attention, router "
             "and final logits are elementwise passes, not priced.")
    if not r.boolean("residual_moe"):
        return layers
    width = r.dim("intermediate_size")
    r.assume(f"Grok-2 residual_moe: a dense gated MLP of {width} beside the experts, read as an always-on shared "
             "expert; the sum's 1/sqrt(2) scale is not priced.")
    return [(a, replace(f, d_shared=width) if f.kind == "moe" else f) for a, f in layers]


def _absent_or(value, expected: int) -> bool:
    return value is None or type(value) is int and value == expected
