"""Laguna (model_type laguna: poolside Laguna-XS.2) and Mellum 2 (model_type mellum, built on Laguna's decoder layer and
rotary embedding): per-layer head counts, Laguna's output gate, and the keys that change no shape.

modular_laguna.py LagunaAttention: num_attention_heads_per_layer[i] query heads over the config's key/value heads,
q/k RMSNorms per head, and a softplus gate on the attention output from g_proj (bias-free): one per head (d -> H;
gating true or "per-head") or one per channel (d -> H x head_dim; any other value, "per-element"). The per-channel gate
is read as the spec's output gate, whose H x head_dim columns ride in q_proj: the same matrix sizes and work.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .key_names import BOUNDS
from .layers import heads_kind, moe_layers
from .reader import ConfigReader, as_int, require_divides
from .spec import AttentionSpec, FfnSpec


def laguna_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list:
    """Each layer's query heads (num_attention_heads_per_layer, else num_attention_heads) and its output gate."""
    heads = r.typed("num_attention_heads_per_layer", (list,), "a list of head counts, one per layer")
    if heads is not None and len(heads) != len(layers):
        raise ModelConfigError(f"num_attention_heads_per_layer must list one entry per layer ({len(layers)}), got "
                               f"{len(heads)}")
    per_head = _gate_per_head(r)
    out = []
    for i, (a, f) in enumerate(layers):
        h = a.n_heads if heads is None else as_int(heads[i], f"num_attention_heads_per_layer[{i}]",
                                                   bound=BOUNDS["heads"])
        require_divides(h, f"num_attention_heads_per_layer[{i}]", a.n_kv_heads, "num_key_value_heads")
        out.append((replace(a, kind=heads_kind(h, a.n_kv_heads), n_heads=h, head_gate=per_head,
                            output_gate=not per_head), f))
    return out


def _gate_per_head(r: ConfigReader) -> bool:
    """gating: true or 'per-head' -> a gate per head; 'per-element' -> one per channel (LagunaAttention)."""
    value = r.get("gating", default=True)
    if value is False:
        raise UnsupportedArchitectureError("gating=false (model_type=laguna): LagunaAttention still builds a "
                                           "per-channel gate (g_proj of heads x head_dim) where other implementations "
                                           "build none; refusing rather than guessing")
    if value is not True and value not in ("per-head", "per-element"):
        raise ModelConfigError(f"gating must be true, 'per-head' or 'per-element', got {shown(value)}")
    if value == "per-element" and r.flag("attention_bias"):
        raise UnsupportedArchitectureError("gating='per-element' with attention_bias=true (model_type=laguna): a "
                                           "bias-free g_proj beside biased q/k/v projections is not represented (the "
                                           "spec's per-channel gate rides in q_proj, with its bias)")
    return value is True or value == "per-head"


def note_laguna(r: ConfigReader) -> None:
    """The gate's softplus priced as the sigmoid gate; mlp_only_layers and decoder_sparse_step (Qwen2-MoE keys the
    hub's configs carry) are what mlp_layer_types was derived from when it is stated, else LagunaConfig ignores
    them (the first layer dense) and they are named as unread."""
    r.assume("Laguna's softplus output gate is priced as a sigmoid gate (the same elementwise passes).")
    if r.raw.get("mlp_layer_types") is not None:
        r.used.update(("mlp_only_layers", "decoder_sparse_step"))
    note_partial_rope(r)


def note_mellum(r: ConfigReader) -> None:
    """Mellum's MTP layer (num_mtp_layers, transformers' num_nextn_predict_layers) is not loaded: not counted."""
    mtp = r.count("num_mtp_layers")
    r.used.update(("mtp_layer_types", "mtp_mlp_layer_types"))
    if mtp:
        r.assume(f"num_mtp_layers={mtp}: the multi-token-prediction layer is not loaded by MellumForCausalLM (its "
                 "mtp.* weights are ignored) and is not counted.")
    note_partial_rope(r)


def note_partial_rope(r: ConfigReader) -> None:
    """RoPE over part of each head (partial_rotary_factor, at the top level or per layer type in rope_parameters)."""
    params = r.typed("rope_parameters", (dict,), "an object", {})
    factors = [r.get("partial_rotary_factor")] + [p.get("partial_rotary_factor") for p in params.values()
                                                  if isinstance(p, dict)]
    if any(f is not None and f != 1 for f in factors):
        r.assume("partial_rotary_factor: RoPE's elementwise pass is counted over whole heads (a small upper bound).")


def laguna_moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """mlp_layer_types as stated, else LagunaConfig's rule: the first layer dense, the others sparse."""
    return moe_layers(r, n_layers) if r.stated("mlp_layer_types") else [i > 0 for i in range(n_layers)]
