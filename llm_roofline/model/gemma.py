"""Readers of Gemma-4's and Gemma-3n's own shapes: Gemma-4's global layers (global_head_dim, K = V) and MoE block
beside the MLP; both families' per-layer input embeddings and layers that reuse an earlier layer's K and V; Gemma-3n's
AltUp streams, LAuReL residual and sparse activations."""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, shown
from .layers import heads_kind
from .reader import ConfigReader, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup, Matrix


def gemma4_global_attention(r: ConfigReader, spec: AttentionSpec) -> AttentionSpec:
    """Gemma-4's full-attention layers (Gemma4TextAttention): global_head_dim, and with attention_k_eq_v
    num_global_key_value_heads and no v_proj (the values are the keys)."""
    head_dim = r.dim("global_head_dim")
    k_eq_v = r.boolean("attention_k_eq_v")
    n_kv = (r.dim("num_global_key_value_heads", required=False) if k_eq_v else None) or spec.n_kv_heads
    require_divides(spec.n_heads, "num_attention_heads", n_kv, "num_global_key_value_heads")
    if k_eq_v:
        r.assume("Gemma-4 attention_k_eq_v: full-attention layers have no v_proj (V = K); the KV cache still holds "
                 "K and V, as transformers' cache does.")
    return replace(spec, kind=heads_kind(spec.n_heads, n_kv), n_kv_heads=n_kv, head_dim=head_dim, v_head_dim=head_dim,
                   value_is_key=k_eq_v)


def gemma4_ffn(r: ConfigReader, ffn: FfnSpec) -> FfnSpec:
    """Gemma-4's feed-forward: the gated GELU MLP; with enable_moe_block also num_experts experts of
    moe_intermediate_size beside it (both on every layer, summed): read as a MoE whose always-on shared expert is the
    MLP."""
    if ffn.kind != "moe":
        return ffn
    r.assume("Gemma-4 MoE block: the router's input scale (hidden_size weights per layer) is not counted.")
    return replace(ffn, d_shared=r.dim("intermediate_size"))


def reused_kv_layers(r: ConfigReader, windows: list[int | None]) -> list[bool]:
    """Gemma-4 / Gemma-3n num_kv_shared_layers (Gemma4TextConfig.kv_sharing_modes): the last that many layers attend
    over the K and V the last earlier layer of their kind (sliding / full) cached; each kind they use must have such
    a layer."""
    n_layers, shared = len(windows), r.count("num_kv_shared_layers")
    if shared >= n_layers:
        raise ModelConfigError(f"num_kv_shared_layers ({shared}) must be below num_hidden_layers ({n_layers}): the "
                               "shared layers reuse the cache of earlier layers")
    first = n_layers - shared
    if not set(windows[first:]) <= set(windows[:first]):
        raise ModelConfigError(f"num_kv_shared_layers ({shared}): a kind of layer among the last {shared} has no "
                               "earlier layer of its kind whose cache it could reuse")
    if shared:
        r.assume(f"num_kv_shared_layers={shared}: layers {first}-{n_layers - 1} reuse the K and V of the last "
                 "earlier layer of their kind (no k/v projections, nothing cached) and run every token, as vLLM does "
                 "by default (its kv_sharing_fast_prefill, which skips them for prompt tokens, is not modelled).")
    return [i >= first for i in range(n_layers)]


def gemma4_d_ffs(r: ConfigReader, d_ffs: list[int], reused: list[bool]) -> list[int]:
    """use_double_wide_mlp: the layers that reuse an earlier layer's K and V have an MLP twice as wide."""
    wide = r.boolean("use_double_wide_mlp")
    return [d * 2 if reuse and wide else d for d, reuse in zip(d_ffs, reused, strict=True)]


def per_layer_input(r: ConfigReader, vocab: int) -> tuple[int, int]:
    """(per_layer_input, per_layer_vocab) of Gemma-4 E2B / E4B's and Gemma-3n's per-layer embeddings
    (hidden_size_per_layer_input, vocab_size_per_layer_input); (0, 0) where the config has none (0 or null: Gemma-4
    31B and 26B-A4B)."""
    width = r.count("hidden_size_per_layer_input")
    if not width:
        r.used.add("vocab_size_per_layer_input")
        return 0, 0
    return width, r.dim("vocab_size_per_layer_input", fallback=(vocab, f"vocab_size ({vocab})"))


def gemma3n_altup_laurel(r: ConfigReader) -> tuple[int, int]:
    """(altup_num_inputs, laurel_rank) of Gemma-3n: the AltUp streams (at least 2: one active) and LAuReL's rank."""
    streams, rank = r.dim("altup_num_inputs"), r.dim("laurel_rank")
    if streams < 2 or streams > 64:
        raise ModelConfigError(f"altup_num_inputs must be 2..64 (copies of the hidden state, one active), got "
                               f"{streams}")
    active = r.count("altup_active_idx")
    if active >= streams:
        raise ModelConfigError(f"altup_active_idx ({active}) must be below altup_num_inputs ({streams})")
    r.used.update(("altup_coef_clip", "altup_correct_scale", "altup_lr_multiplier"))  # training / a scale: no shape
    return streams, rank


def activation_sparsities(r: ConfigReader, n_layers: int) -> list[float]:
    """Gemma-3n activation_sparsity_pattern: per layer, the Gaussian quantile of the gate's activations kept (0: all
    kept, no top-k pass)."""
    pattern = r.typed("activation_sparsity_pattern", (list,), "a list of numbers, one per layer")
    if pattern is None:
        return [0.0] * n_layers
    if len(pattern) != n_layers:
        raise ModelConfigError(f"activation_sparsity_pattern must list one entry per layer ({n_layers}), got "
                               f"{len(pattern)}")
    bad = [v for v in pattern if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1]  # NaN too
    if bad:
        raise ModelConfigError(f"activation_sparsity_pattern entries must be numbers in [0, 1), got {shown(bad[0])}")
    return [float(v) for v in pattern]


def with_layer_extras(groups: tuple[LayerGroup, ...], d: int, per_layer_input: int, altup: int,
                      laurel: int) -> tuple[LayerGroup, ...]:
    """The matrices each layer holds beside its attention and MLP (replicated on every tp chip in vLLM:
    ReplicatedLinear, quantized with the MLP), and their norms: the per-layer-input gate (d -> p) and projection
    (p -> d) and a norm; LAuReL's (d -> r -> d) and a norm; AltUp's router (d -> n), prediction (n -> n^2) and
    correction (n -> n) coefficients, its router norm and its output scale (d weights: counted as a norm)."""
    mats = []
    if per_layer_input:
        mats += [Matrix("per_layer.gate", d, per_layer_input, family="ffn"),
                 Matrix("per_layer.proj", per_layer_input, d, family="ffn")]
    if laurel:
        mats += [Matrix("laurel.left", d, laurel, family="ffn"), Matrix("laurel.right", laurel, d, family="ffn")]
    if altup:
        mats += [Matrix("altup.router", d, altup, family="ffn"), Matrix("altup.prediction_coefs", altup, altup ** 2,
                                                                         family="ffn"),
                 Matrix("altup.correction_coefs", altup, altup, family="ffn")]
    norms = bool(per_layer_input) + bool(laurel) + 2 * bool(altup)
    return tuple(replace(g, norms=g.norms + norms, per_layer=tuple(mats)) for g in groups) if mats else groups


def gemma4_moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """Gemma-4: every layer has the MoE block when enable_moe_block is true (num_experts is ignored otherwise)."""
    return [r.boolean("enable_moe_block")] * n_layers
