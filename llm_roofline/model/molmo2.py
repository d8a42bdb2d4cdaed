"""Molmo2's text model (model_type molmo2_text: transformers' modular_molmo2.py; allenai/Molmo2's remote code states the
same keys, with qkv_bias and use_qk_norm): Qwen3's decoder, its q/k norm per head (qk_norm_type "qwen3") or one over
all heads' elements (qk_norm_type "olmo": Molmo2-O's Olmo-3 decoder); with norm_after the two RMSNorms follow their
sub-blocks instead of leading them (the same weights and work); RoPE scaled on the layers rope_scaling_layers lists
(no shape); an embedding of vocab_size + additional_vocab_size rows beside an LM head of vocab_size.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, shown
from .reader import ConfigReader
from .spec import AttentionSpec, FfnSpec

_QK_NORM_TYPES = ("qwen3", "olmo")


def molmo2_raw(raw: dict) -> dict:
    """The remote code's qkv_bias under transformers' name (its attribute_map: qkv_bias -> attention_bias)."""
    if "qkv_bias" not in raw:
        return raw
    if "attention_bias" in raw and raw["attention_bias"] != raw["qkv_bias"]:
        raise ModelConfigError(f"qkv_bias ({shown(raw['qkv_bias'])}) and attention_bias "
                               f"({shown(raw['attention_bias'])}) disagree: Molmo2 reads them as one key")
    return {**{k: v for k, v in raw.items() if k != "qkv_bias"}, "attention_bias": raw["qkv_bias"]}


def molmo2_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list:
    """Each layer's q/k norm of qk_norm_type; norm_after and rope_scaling_layers read and noted."""
    kind = r.typed("qk_norm_type", (str,), f"one of {', '.join(_QK_NORM_TYPES)}", "qwen3")
    if kind not in _QK_NORM_TYPES:
        raise ModelConfigError(f"qk_norm_type must be one of {', '.join(_QK_NORM_TYPES)}, got {kind[:40]!r}")
    if r.boolean("norm_after"):
        r.assume("Molmo2 norm_after: the RMSNorms follow attention and the MLP (Olmo-3's order): the same weights and "
                 "work as before them.")
    scaled = r.int_list("rope_scaling_layers")
    if scaled is not None and any(not 0 <= i < len(layers) for i in scaled):
        raise ModelConfigError(f"rope_scaling_layers must list layer indices in [0, {len(layers)})")
    across = kind == "olmo"
    return [(replace(a, qk_norm_across_heads=across and a.qk_norm), f) for a, f in layers]


def molmo2_extra_rows(r: ConfigReader) -> int:
    """Embedding rows beyond the LM head's vocabulary (the image and frame tokens)."""
    return r.count("additional_vocab_size")
