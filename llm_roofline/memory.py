"""Memory: weight bytes and KV-cache bytes of a model replica (unsharded). SI units: bytes.

weight_bytes counts every parameter of the checkpoint (all experts, not the active ones): matrices in their
storage format (quantization scales included via WeightFormat.bits_per_weight), biases, norms, attention
extras and embeddings in the checkpoint's native dtype; the embedding and LM head once each unless tied.
KV-cache bytes per token come from each layer's cached elements (K and V per KV head, or MLA's latent +
rope key); a sliding-window layer caches at most `window` tokens.
"""

from __future__ import annotations

import numpy as np

from .errors import ScenarioError
from .model.spec import Matrix, ModelSpec
from .units import dtype_bytes


# ---------------------------------------------------------------------------------- weights
def _matrix_bytes(spec: ModelSpec, m: Matrix, weight_dtype: str | None) -> float:
    """Bytes of one Matrix entry (all `count` copies): weights in their format, bias in the native dtype."""
    fmt = spec.weight_format_for(m.family, weight_dtype)
    weights_bytes = m.count * m.k * m.n * fmt.bits_per_weight(m.k) / 8
    bias_bytes = m.count * m.n * dtype_bytes(spec.weight_dtype) if m.bias else 0.0
    return weights_bytes + bias_bytes


def weight_bytes_by_family(spec: ModelSpec, weight_dtype: str | None = None) -> dict[str, float]:
    """Weight bytes by family: attn, ffn, experts, shared, router, embed, lm_head, norm.

    weight_dtype overrides the storage dtype of the transformer blocks' matrices (see
    ModelSpec.weight_format_for); None keeps the checkpoint's format (quantization_config or native dtype).
    Attention extras (q/k norms, MLA latent norms, sinks) count as attn; learned positions as embed.
    """
    native_bytes = dtype_bytes(spec.weight_dtype)
    out: dict[str, float] = {}

    def add(family: str, nbytes: float) -> None:
        out[family] = out.get(family, 0.0) + nbytes

    for g in spec.layer_groups:
        for m in g.attention.weight_matrices(spec.d_model) + g.ffn.weight_matrices(spec.d_model):
            add(m.family, g.count * _matrix_bytes(spec, m, weight_dtype))
        add("attn", g.count * g.attention.extra_params() * native_bytes)
        add("norm", g.count * g.norms * spec.norm_params() * native_bytes)
    for m in spec.embedding_matrices():
        add(m.family, _matrix_bytes(spec, m, weight_dtype))
    add("embed", spec.learned_positions * spec.d_model * native_bytes)
    add("norm", spec.norm_params() * native_bytes)  # final norm
    return out


def weight_bytes(spec: ModelSpec, weight_dtype: str | None = None) -> float:
    """Bytes of every parameter of the checkpoint (every expert), scales included. See weight_bytes_by_family."""
    return sum(weight_bytes_by_family(spec, weight_dtype).values())


# ---------------------------------------------------------------------------------- KV cache
def kv_bytes_per_token_by_group(spec: ModelSpec, kv_dtype: str = "bf16") -> dict[str, float]:
    """Cache bytes one token adds in all layers of each group (not capped by sliding windows)."""
    per_elem_bytes = dtype_bytes(kv_dtype)
    return {g.name: g.count * g.attention.kv_elements_per_token() * per_elem_bytes for g in spec.layer_groups}


def kv_cache_bytes(spec: ModelSpec, context_len, batch=1, kv_dtype: str = "bf16"):
    """KV-cache bytes of `batch` sequences holding `context_len` tokens each.

    A sliding-window layer caches min(context_len, window) tokens. context_len and batch broadcast as float64
    arrays; scalars in, float out. KV quantization scales are not counted.
    """
    context_tokens = np.asarray(context_len, dtype=np.float64)
    batch_seqs = np.asarray(batch, dtype=np.float64)
    if np.any(context_tokens < 0) or np.any(batch_seqs < 0):
        raise ScenarioError(f"context_len and batch must be non-negative, got {context_len!r} and {batch!r}")
    per_token_bytes = kv_bytes_per_token_by_group(spec, kv_dtype)
    total_bytes = np.zeros(np.broadcast(context_tokens, batch_seqs).shape)
    for g in spec.layer_groups:
        window = g.attention.sliding_window
        cached_tokens = np.minimum(context_tokens, window) if window else context_tokens
        total_bytes = total_bytes + per_token_bytes[g.name] * cached_tokens * batch_seqs
    return float(total_bytes) if total_bytes.ndim == 0 else total_bytes
