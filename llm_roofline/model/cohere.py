"""Cohere2-MoE (model_type cohere2_moe: North-Mini-Code, Command A+): its window layout, RoPE and routing keys.

modular_cohere2_moe.py: Cohere2's parallel block (attention and MLP read one norm's output) with RoPE on the sliding
layers only, and on the dense prefix layers too when prefix_dense_sliding_window_pattern is 1 (force_rope); a dense
MLP of prefix_dense_intermediate_size on the mlp_layer_types 'dense' layers (the first first_k_dense_replace), else
Mixtral's experts of intermediate_size beside num_shared_experts shared experts fused into one MLP, added ('sum') or
averaged ('average') with the routed output. Without layer_types, Cohere2MoeConfig lays the windows out in two runs:
the prefix layers every prefix_dense_sliding_window_pattern-th full, the others every sliding_window_pattern-th.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, shown
from .reader import ConfigReader
from .spec import AttentionSpec, FfnSpec

_CHOICES = {"expert_selection_fn": ("softmax", "sigmoid"), "shared_expert_combination_strategy": ("average", "sum")}


def cohere2_moe_window_kinds(r: ConfigReader, n_layers: int) -> list[str | None]:
    """Cohere2MoeConfig's layer_types when the config has none: the first_k_dense_replace prefix layers full every
    prefix_dense_sliding_window_pattern-th, the others every sliding_window_pattern-th (counted from each run's
    start); 'window' for a sliding layer, None for a full one."""
    prefix = r.count("first_k_dense_replace")
    if prefix > n_layers:
        raise ModelConfigError(f"first_k_dense_replace ({prefix}) exceeds num_hidden_layers ({n_layers})")
    p_prefix = r.count("prefix_dense_sliding_window_pattern", default=1, allow_zero=False)
    p_rest = r.count("sliding_window_pattern", default=4, allow_zero=False)
    return ([None if (i + 1) % p_prefix == 0 else "window" for i in range(prefix)]
            + [None if (i + 1) % p_rest == 0 else "window" for i in range(n_layers - prefix)])


def cohere2_moe_layers(r: ConfigReader, layers: list[tuple[AttentionSpec, FfnSpec]]) -> list:
    """RoPE where Cohere2MoeAttention applies it: on the sliding layers, and on the dense layers when
    prefix_dense_sliding_window_pattern is 1; the full layers otherwise without (NoPE)."""
    _note(r, any(f.kind == "dense" for _, f in layers))
    forced = r.count("prefix_dense_sliding_window_pattern", default=1, allow_zero=False) == 1
    return [(replace(a, rope=a.sliding_window is not None or forced and f.kind == "dense"), f) for a, f in layers]


def _note(r: ConfigReader, layers_dense: bool) -> None:
    """The routing keys (no shape of their own, checked against what the modeling code accepts), and the dense prefix's
    width when prefix_dense_intermediate_size is absent."""
    for key, allowed in _CHOICES.items():
        value = r.get(key, default=r.defaults.get(key))
        if not isinstance(value, str) or value not in allowed:
            raise ModelConfigError(f"{key} must be one of {', '.join(map(repr, allowed))}, got {shown(value)}")
    if r.get("shared_expert_combination_strategy") == "average" and r.count("num_shared_experts"):
        r.assume("Cohere2-MoE shared_expert_combination_strategy 'average': the routed and shared experts' outputs "
                 "are averaged, an elementwise halving not priced.")
    if layers_dense and r.stated("prefix_dense_intermediate_size") is None:
        r.assume("prefix_dense_intermediate_size absent: the dense layers take intermediate_size, as Cohere2MoeMLP "
                 "does.")
