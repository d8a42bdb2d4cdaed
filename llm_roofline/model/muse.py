"""Meta's Muse Glimmer and Muse Spark text models (transformers 5.24: modular_muse_glimmer.py, modular_muse_spark.py).

Muse Glimmer (muse_glimmer_text): Gemma-2's block (RMSNorms before and after attention and MLP) around AFMoE's
attention without q/k norm weights: q and k RMS-normed per head without weights, a sigmoid output gate (gate_proj,
d -> H x hd, from the layer input; read as the spec's output gate riding in q_proj: the same matrices and work); sliding
and full-attention layers by layer_types (default: full every 4th layer counted back from the last); RoPE on the layers
whose layer_rope_theta is not 0 (default: none on exactly those full layers); a gated MLP; a weightless RMSNorm on the
token embeddings; the LM head untied.

Muse Spark (muse_spark_text) builds on it: each head's attention output RMS-normed without weights before the gate;
the post-attention norm without weight; both residual adds gated by a learned d-vector each (MuseSparkResidualGate:
alpha x residual + beta x output); on the "sparse" layers of mlp_layer_types (default every one) a MoE, on the "dense"
ones Glimmer's MLP of intermediate_size. The MoE: a sigmoid router over num_local_experts at d with
e_score_correction_bias, then pre_expert_proj (d -> moe_hidden_size) and an RMSNorm, the experts (gated, of
moe_intermediate_size) at moe_hidden_size, each expert's output RMS-normed, post_expert_proj back to d; no shared
expert (FfnSpec.latent).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .key_names import N_EXPERTS_KEYS
from .reader import ConfigReader, is_finite_number, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup

MUSE_TYPES = ("muse_glimmer_text", "muse_spark_text")
_SPARK = "muse_spark_text"
_LAYER_KINDS = ("full_attention", "sliding_attention")


def muse_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list:
    """Each layer's window (layer_types), RoPE (layer_rope_theta), bare q/k norms (and Spark's output norm), and
    Spark's latent experts; what transformers would not build as the spec reads it is refused."""
    n, spark = len(layers), r.model_type == _SPARK
    r.switch("attention_bias", False, "q/k/v/o with bias beside a bias-free gate_proj is not represented (the spec's "
             "output gate rides in q_proj, with its bias)")
    require_divides(r.dim("hidden_size"), "hidden_size", r.dim("num_attention_heads"), "num_attention_heads",
                    f" ({'MuseSpark' if spark else 'MuseGlimmer'}TextConfig.validate_architecture refuses it)")
    full = _full_layers(r, n)
    window = r.dim("sliding_window", required=False) if not all(full) else None
    if not all(full) and window is None:
        raise ModelConfigError("layers use sliding-window attention (layer_types) but sliding_window is not set")
    ropes, sparse = _rope_layers(r, n), _sparse_layers(r, n) if spark else [False] * n
    latent = r.dim("moe_hidden_size") if spark and any(sparse) else 0
    out = []
    for (a, f), is_full, rope, moe in zip(layers, full, ropes, sparse, strict=True):
        a = replace(a, sliding_window=None if is_full else window, rope=rope, bare_qk_norm=True, o_norm=spark)
        out.append((a, _ffn(r, f, moe, latent)))
    return out


def _sparse_layers(r: ConfigReader, n: int) -> list[bool]:
    """Spark's MoE layers: the "sparse" entries of mlp_layer_types (transformers builds a dense MLP for any other
    entry: only "dense" is read as one), else every layer."""
    types = r.str_list("mlp_layer_types", n, allowed=("dense", "sparse"))
    return [True] * n if types is None else [t == "sparse" for t in types]


def _ffn(r: ConfigReader, f: FfnSpec, moe: bool, latent: int) -> FfnSpec:
    """The layer's FFN as transformers builds it: Glimmer's MLP, or Spark's latent experts (no shared expert)."""
    if f.kind == "moe" and not moe:
        key = r.stated(*N_EXPERTS_KEYS) or N_EXPERTS_KEYS[0]
        raise UnsupportedArchitectureError(f"{key} is set (model_type={r.model_type}) on a layer transformers builds a "
                                           "dense MLP on; refusing rather than reading experts")
    if moe and f.kind != "moe":
        raise ModelConfigError("num_local_experts must be set for the sparse layers of mlp_layer_types "
                               "(model_type=muse_spark_text)")
    if moe and f.d_shared:
        raise UnsupportedArchitectureError("shared experts are set (model_type=muse_spark_text): MuseSparkMoE builds "
                                           "none beside the routed experts; refusing rather than guessing")
    return replace(f, latent=latent) if moe else f


def _full_layers(r: ConfigReader, n: int) -> list[bool]:
    """layer_types (full_attention / sliding_attention), else the config class's: full where (n - 1 - i) % 4 == 0."""
    types = r.str_list("layer_types", n, allowed=_LAYER_KINDS)
    if types is None:
        r.assume("layer_types absent from the config: full attention on every 4th layer counted back from the last, "
                 "sliding-window attention on the others (the config class's rule).")
        return [(n - 1 - i) % 4 == 0 for i in range(n)]
    return [t == "full_attention" for t in types]


def _rope_layers(r: ConfigReader, n: int) -> list[bool]:
    """RoPE where layer_rope_theta is not 0 (a layer of 0 is NoPE), else the config class's: NoPE where
    (n - 1 - i) % 4 == 0."""
    thetas = r.typed("layer_rope_theta", (list,), "a list of RoPE bases, one per layer (0: no RoPE)")
    if thetas is None:
        r.assume("layer_rope_theta absent from the config: no RoPE on every 4th layer counted back from the last, "
                 "RoPE on the others (the config class's rule).")
        return [(n - 1 - i) % 4 != 0 for i in range(n)]
    if len(thetas) != n:
        raise ModelConfigError(f"layer_rope_theta must list one entry per layer ({n}), got {len(thetas)}")
    for i, t in enumerate(thetas):
        if not is_finite_number(t) or t < 0:
            raise ModelConfigError(f"layer_rope_theta[{i}] must be a non-negative number (0: no RoPE), got "
                                   f"{shown(t)}")
    return [t != 0 for t in thetas]


def muse_spark_groups(r: ConfigReader, groups: tuple[LayerGroup, ...], d_model: int) -> tuple[LayerGroup, ...]:
    """Spark's blocks: the residual gates, and a post-attention norm without weight (one of the four)."""
    return tuple(replace(g, residual_gates=True, weightless_norms=1) for g in groups)


def note_muse(r: ConfigReader) -> None:
    """What is not priced or is stored otherwise: the weightless embedding norm, Spark's float32 parts."""
    r.assume("Muse: the RMSNorm on the token embeddings has no weight and is not priced (one pass over (T, d)); the "
             "q/k norms (and Muse Spark's per-head output norm) have no weights: priced, no parameters.")
    if r.model_type == _SPARK:
        r.assume("Muse Spark: the router's weight, its e_score_correction_bias (a buffer in transformers, counted "
                 "as the router's bias) and the residual gates are float32 in transformers and the checkpoint: "
                 "counted in the checkpoint dtype.")
