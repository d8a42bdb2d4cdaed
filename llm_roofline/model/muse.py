"""Meta's Muse Glimmer text model (transformers 5.24: modular_muse_glimmer.py).

Muse Glimmer (muse_glimmer_text): Gemma-2's block (RMSNorms before and after attention and MLP) around AFMoE's
attention without q/k norm weights: q and k RMS-normed per head without weights, a sigmoid output gate (gate_proj,
d -> H x hd, from the layer input; read as the spec's output gate riding in q_proj: the same matrices and work); sliding
and full-attention layers by layer_types (default: full every 4th layer counted back from the last); RoPE on the layers
whose layer_rope_theta is not 0 (default: none on exactly those full layers); a gated MLP; a weightless RMSNorm on the
token embeddings; the LM head untied.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError
from .key_names import N_EXPERTS_KEYS
from .reader import ConfigReader, require_divides
from .spec import AttentionSpec, FfnSpec

MUSE_TYPES = ("muse_glimmer_text",)
_LAYER_KINDS = ("full_attention", "sliding_attention")


def muse_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list:
    """Each layer's window (layer_types), RoPE (layer_rope_theta) and bare q/k norms; what transformers would not build
    as the spec reads it is refused."""
    n = len(layers)
    r.switch("attention_bias", False, "q/k/v/o with bias beside a bias-free gate_proj is not represented (the spec's "
             "output gate rides in q_proj, with its bias)")
    require_divides(r.dim("hidden_size"), "hidden_size", r.dim("num_attention_heads"), "num_attention_heads",
                    " (MuseGlimmerTextConfig.validate_architecture refuses it)")
    full = _full_layers(r, n)
    window = r.dim("sliding_window", required=False) if not all(full) else None
    if not all(full) and window is None:
        raise ModelConfigError("layers use sliding-window attention (layer_types) but sliding_window is not set")
    out = []
    for (a, f), is_full, rope in zip(layers, full, _rope_layers(r, n), strict=True):
        if f.kind == "moe":
            key = r.stated(*N_EXPERTS_KEYS) or N_EXPERTS_KEYS[0]
            raise UnsupportedArchitectureError(f"{key} is set (model_type={r.model_type}) on a layer transformers "
                                               "builds a dense MLP on; refusing rather than reading experts")
        out.append((replace(a, sliding_window=None if is_full else window, rope=rope, bare_qk_norm=True), f))
    return out


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
        if isinstance(t, bool) or not isinstance(t, (int, float)) or isinstance(t, float) and not math.isfinite(t) \
                or t < 0:
            raise ModelConfigError(f"layer_rope_theta[{i}] must be a non-negative number (0: no RoPE), got "
                                   f"{str(t)[:40]!r}")
    return [t != 0 for t in thetas]


def note_muse(r: ConfigReader) -> None:
    """What is not priced: the weightless embedding norm."""
    r.assume("Muse: the RMSNorm on the token embeddings has no weight and is not priced (one pass over (T, d)); the "
             "q/k norms have no weights: priced, no parameters.")
