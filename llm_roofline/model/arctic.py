"""Snowflake Arctic (model_type arctic; remote code configuration_arctic.py / modeling_arctic.py; vLLM arctic.py).

ArcticDecoderLayer: GQA without bias (head_dim = hidden_size / num_attention_heads), then on every
moe_layer_frequency-th layer (1-based, ArcticMoE.is_moe_layer) num_local_experts gated experts of intermediate_size
(top num_experts_per_tok, a router without bias), elsewhere a dense gated MLP of intermediate_size. With
parallel_attn_mlp_res (vLLM reads use_residual) a MoE layer also runs the residual MLP, a dense gated MLP of
hidden_size behind its own RMSNorm (residual_layernorm: 3 norms a layer), while the experts read the layer's input
(post_attention_layernorm of it) in parallel with the attention: the same matrices whatever the order.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import UnsupportedArchitectureError, shown
from .key_names import HIDDEN_KEYS
from .reader import ConfigReader
from .spec import AttentionSpec, FfnSpec, LayerGroup

# training and deployment settings of ArcticConfig: no shape of their own
_NEUTRAL = ("moe_train_capacity_factor", "moe_min_capacity", "moe_token_dropping", "enable_expert_tensor_parallelism")


def arctic_moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """ArcticMoE: layer i routes to experts when (i + 1) % moe_layer_frequency == 0."""
    freq = r.dim("moe_layer_frequency")
    return [(i + 1) % freq == 0 for i in range(n_layers)]


def arctic_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list:
    """The residual MLP (hidden_size wide) beside each MoE layer's experts, read as an always-on shared expert."""
    r.used.update(_NEUTRAL)
    quantization = r.get("quantization")
    if quantization not in (None, False, {}):
        raise UnsupportedArchitectureError(f"quantization={shown(quantization)} (model_type=arctic): Arctic's "
                                           "DeepSpeed FP quantization of the weights is not read")
    residual = r.boolean("parallel_attn_mlp_res")
    use = r.typed("use_residual", (bool,), "true or false")
    if use is not None and use != residual:
        raise UnsupportedArchitectureError(f"use_residual={str(use).lower()} with parallel_attn_mlp_res="
                                           f"{str(residual).lower()} (model_type=arctic): the hub's modeling_arctic.py "
                                           "builds the residual MLP from parallel_attn_mlp_res, vLLM's arctic.py from "
                                           "use_residual; a config where they differ is two models")
    if not residual:
        return layers
    width = r.dim(*HIDDEN_KEYS)
    r.assume(f"Arctic: the residual MLP (a dense gated MLP of {width}, its own RMSNorm) beside each MoE layer's "
             "experts is read as an always-on shared expert; the experts read the layer's input in parallel with the "
             "attention (the same work as after it).")
    return [(a, replace(f, d_shared=width) if f.kind == "moe" else f) for a, f in layers]


def arctic_norms(r: ConfigReader, groups: tuple[LayerGroup, ...], d_model: int) -> tuple[LayerGroup, ...]:
    """A MoE layer with the residual MLP has its residual_layernorm too (3 norms)."""
    return tuple(replace(g, norms=g.norms + 1) if g.ffn.kind == "moe" and g.ffn.d_shared else g for g in groups)
