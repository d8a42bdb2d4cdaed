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


# ---------------------------------------------------------------------------------- max batch (grid)
def _as_list(v) -> list:
    if v is None or isinstance(v, (str, int, float, np.integer, np.floating)):
        return [v]
    return list(v)


def max_batch(model, chip, context_len, tp=1, pp=1, ep=1, weight_dtype=None, kv_dtype=None, act_dtype="bf16",
              reserve: float = 0.0, gen_len: int = 1, attention: str = "fused", sequence_parallel: bool = False):
    """Largest batch that fits one chip, over a grid of context lengths, dtypes and shardings, with the breakdown.

    Uses the estimate's own memory model (estimate.evaluate: weights resident on the fullest chip, KV cache at
    `context_len` = prompt + gen tokens, peak prefill activations of a prompt of context_len - gen_len tokens),
    so that with reserve = 0 `max_batch` equals `estimate(..., prompt_len=context_len - gen_len,
    gen_len=gen_len).memory.max_batch`. Per-chip bytes are weights + a prefill-chunk activation workspace
    + batch x KV per sequence, so one evaluation at batch = pp gives the whole line:

        max_batch = floor((hbm_bytes * (1 - reserve) - weights - workspace) / kv_per_sequence / pp) * pp

    (pp micro-batches: the batch is a multiple of pp). Any of context_len, tp, pp, ep, weight_dtype and
    kv_dtype may be a list; one row per grid point (a pandas.DataFrame). A (tp, pp, ep) that does not divide
    the model gets a row with `error` set and max_batch 0 instead of an exception.
    """
    import itertools
    import math

    import pandas as pd

    from .errors import RooflineError
    from .estimate import _load_model, evaluate
    from .hardware import load_chip

    if not 0.0 <= float(reserve) < 1.0:
        raise ScenarioError(f"reserve must be a fraction in [0, 1), got {reserve!r}")
    spec = _load_model(model)
    chip = load_chip(chip)
    contexts = [int(c) for c in _as_list(context_len)]
    if any(c <= gen_len or c != int(c) for c in contexts) or gen_len < 1:
        raise ScenarioError(f"context_len must be integers > gen_len = {gen_len} (prompt = context - gen), "
                            f"got {context_len!r}")
    usable_bytes = chip.hbm_bytes * (1.0 - float(reserve))
    rows = []
    for tp_, pp_, ep_, wd, kvd in itertools.product(_as_list(tp), _as_list(pp), _as_list(ep), _as_list(weight_dtype),
                                                    _as_list(kv_dtype)):
        for ctx in contexts:  # one evaluation per context: estimate picks the peak-activation op per scenario
            row = dict(chip=chip.name, tp=int(tp_), pp=int(pp_), ep=int(ep_), weight_dtype=wd, kv_dtype=kvd,
                       act_dtype=act_dtype, context_len=ctx, capacity_bytes=chip.hbm_bytes, reserve=float(reserve),
                       usable_bytes=usable_bytes)
            try:
                r = evaluate(spec, chip, batch=int(pp_), prompt_len=ctx - gen_len, gen_len=gen_len, tp=int(tp_),
                             pp=int(pp_), ep=int(ep_), weight_dtype=wd, act_dtype=act_dtype, kv_dtype=kvd,
                             attention=attention, sequence_parallel=sequence_parallel)
            except RooflineError as e:
                rows.append({**row, "max_batch": 0, "fits": False, "error": str(e)})
                continue
            m = r["memory"]
            w_chip = float(m["per_chip_weight_bytes"])
            kv_seq = float(m["kv_bytes_per_sequence_per_chip"])
            workspace = float(m["activation_workspace_bytes"])
            per_seq = kv_seq
            free = usable_bytes - w_chip - workspace
            mb = int(math.floor(free / per_seq / pp_) * pp_) if free > 0 and per_seq > 0 else 0
            rows.append({**row, "weight_dtype": r["dtypes"].weight or spec.weight_dtype, "kv_dtype": r["dtypes"].kv,
                         "weight_bytes_per_chip": w_chip, "kv_bytes_per_sequence_per_chip": kv_seq,
                         "activation_workspace_bytes_per_chip": workspace, "bytes_per_sequence_per_chip": per_seq,
                         "free_bytes": free, "max_batch": max(mb, 0), "fits": mb >= pp_,
                         "kv_bytes_per_token": float(kv_cache_bytes(spec, 1, 1, r["dtypes"].kv)),
                         "weight_bytes": weight_bytes(spec, wd), "error": None})
    return pd.DataFrame(rows)
