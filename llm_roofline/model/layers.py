"""Per-layer readers: attention (GQA / MQA / MLA, windows) and feed-forward (dense / MoE), and grouping."""

from __future__ import annotations

from ..errors import ModelConfigError
from .architectures import (ACTIVATION_KEYS, GATED_ACTIVATIONS, HEADS_KEYS, KV_HEADS_KEYS, LAYER_TYPE_WINDOWED,
                            N_EXPERTS_KEYS, TOP_K_KEYS, Architecture)
from .reader import ConfigReader, as_int, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup


def attention_spec(r: ConfigReader, arch: Architecture, d_model: int, window: int | None) -> AttentionSpec:
    n_heads = r.dim(*HEADS_KEYS)
    common = dict(sliding_window=window, qkv_bias=r.flag(arch.qkv_bias), o_bias=r.flag(arch.o_bias),
                  rope=arch.rope and not r.get("alibi", default=False), qk_norm=r.flag(arch.qk_norm), sinks=arch.sinks)
    if r.stated("kv_lora_rank"):
        return _mla(r, n_heads, common)
    n_kv = _kv_heads(r, n_heads)
    require_divides(n_heads, "num_attention_heads", n_kv, "the number of key/value heads")
    head_dim = _head_dim(r, d_model, n_heads)
    kind = "mqa" if n_kv == 1 and n_heads > 1 else "mha" if n_kv == n_heads else "gqa"
    return AttentionSpec(kind, n_heads, n_kv, head_dim, head_dim, **common)


def _mla(r: ConfigReader, n_heads: int, common: dict) -> AttentionSpec:
    """DeepSeek-V2/V3 multi-head latent attention: one compressed KV latent + one shared rope key per token."""
    nope, rope = r.dim("qk_nope_head_dim"), r.dim("qk_rope_head_dim")
    q_rank = r.dim("q_lora_rank", required=False)  # null (V2-Lite): a plain q_proj
    if q_rank is None:
        r.assume("q_lora_rank is null: queries use a plain q_proj (no low-rank compression).")
    # DeepSeek's attention_bias puts a bias on q_a_proj / kv_a_proj / o_proj; the spec models o_proj's only.
    if r.flag("attention_bias"):
        raise ModelConfigError("attention_bias=true with MLA (kv_lora_rank) is not modelled")
    return AttentionSpec("mla", n_heads, n_heads, nope + rope, r.dim("v_head_dim"), q_lora_rank=q_rank,
                         kv_lora_rank=r.dim("kv_lora_rank"), qk_nope_head_dim=nope, qk_rope_head_dim=rope,
                         **{**common, "qkv_bias": False, "o_bias": False})


def _kv_heads(r: ConfigReader, n_heads: int) -> int:
    """Key/value heads: GQA key, or Falcon / GPT-BigCode multi_query (one KV head), else = heads (MHA)."""
    if r.get("new_decoder_architecture", default=False):  # Falcon-40B/180B: grouped KV heads in num_kv_heads
        return r.dim("num_kv_heads")
    multi_query = r.get("multi_query")
    if multi_query is not None:  # Falcon-7B: a single KV head when true, else one per query head
        if "multi_query" not in r.raw:
            r.assume(f"multi_query absent from the config: {r.default_label} {bool(multi_query)}.")
        return 1 if multi_query else n_heads
    return r.dim(*KV_HEADS_KEYS, fallback=(n_heads, f"= num_attention_heads ({n_heads}), i.e. multi-head attention"))


def _head_dim(r: ConfigReader, d_model: int, n_heads: int) -> int:
    """head_dim from the file (Qwen3, Gemma: not hidden/heads); else the class default; else hidden/heads."""
    if r.stated("head_dim"):
        return r.dim("head_dim")
    require_divides(d_model, "hidden_size", n_heads, "num_attention_heads", " and the config gives no head_dim")
    derived = d_model // n_heads
    default = r.defaults.get("head_dim") if "head_dim" not in r.raw else None
    if default is not None and default != derived:
        r.assume(f"head_dim absent from the config: {r.default_label} {default} (not hidden_size/heads = {derived}).")
        return as_int(default, "head_dim")
    r.assume(f"head_dim absent from the config: hidden_size/num_attention_heads = {derived}.")
    return derived


def layer_windows(r: ConfigReader, n_layers: int) -> list[int | None]:
    """Sliding window of each layer (None: full attention), from layer_types or the model's window pattern."""
    window = r.get("sliding_window") or None
    types = r.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ModelConfigError(f"layer_types must list one entry per layer ({n_layers}), got "
                                   f"{len(types) if isinstance(types, list) else types!r}")
        unknown = sorted({t for t in types if t not in LAYER_TYPE_WINDOWED})
        if unknown:
            raise ModelConfigError(f"unknown attention kind(s) in layer_types: {', '.join(map(repr, unknown))}; "
                                   f"known: {', '.join(LAYER_TYPE_WINDOWED)}")
        windowed = [LAYER_TYPE_WINDOWED[t] for t in types]
    elif r.get("use_sliding_window") is False:  # Qwen2/Qwen3: a sliding_window value that is switched off
        windowed = [False] * n_layers
    elif r.get("sliding_window_pattern", "_sliding_window_pattern"):  # Gemma-3: every p-th layer is global
        p = as_int(r.get("sliding_window_pattern", "_sliding_window_pattern"), "sliding_window_pattern")
        windowed = [(i + 1) % p != 0 for i in range(n_layers)]
    elif r.get("model_type") == "gemma2":  # Gemma-2 without layer_types: even layers local, odd global
        windowed = [i % 2 == 0 for i in range(n_layers)]
    elif r.get("use_sliding_window"):  # Qwen2: layers from max_window_layers on use the window
        first = r.get("max_window_layers", default=0)
        windowed = [i >= first for i in range(n_layers)]
    else:  # Mistral-7B-v0.1, Phi-3: one window on every layer when set
        windowed = [window is not None] * n_layers
    if any(windowed) and window is None:
        raise ModelConfigError("layers use sliding-window attention but sliding_window is not set")
    return [window if w else None for w in windowed]


# ---------------------------------------------------------------------------- feed-forward
def moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """Which layers route to experts: DeepSeek first_k_dense_replace / moe_layer_freq, Qwen decoder_sparse_step /
    mlp_only_layers, or an explicit mlp_layer_types list; every layer when the model has experts otherwise."""
    if r.dim(*N_EXPERTS_KEYS, required=False) is None:
        return [False] * n_layers
    types = r.get("mlp_layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ModelConfigError(f"mlp_layer_types must list one entry per layer ({n_layers})")
        return [t == "sparse" for t in types]
    first_dense = r.get("first_k_dense_replace", default=0)
    freq = r.get("moe_layer_freq", default=1)
    step = r.get("decoder_sparse_step", default=1)
    dense_only = set(r.get("mlp_only_layers", default=[]) or [])
    return [i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in dense_only
            for i in range(n_layers)]


def ffn_spec(r: ConfigReader, arch: Architecture, d_model: int, moe: bool) -> FfnSpec:
    activation = str(r.get(*ACTIVATION_KEYS, default="silu"))
    gated = _gated(r, arch, activation)
    bias = r.flag(arch.mlp_bias)
    if not moe:
        return FfnSpec("dense", _d_ff(r, arch, d_model), gated, activation, bias)
    n_experts = r.dim(*N_EXPERTS_KEYS)
    top_k = r.dim(*TOP_K_KEYS)
    if top_k > n_experts:
        raise ModelConfigError(f"num_experts_per_tok ({top_k}) exceeds the number of experts ({n_experts})")
    d_expert = r.dim("moe_intermediate_size", "intermediate_size")
    d_shared, shared_gate = _shared_experts(r, arch, d_expert)
    return FfnSpec("moe", 0, gated, activation, bias, n_experts=n_experts, top_k=top_k, d_expert=d_expert,
                   d_shared=d_shared, shared_gate=shared_gate,
                   router_bias=arch.router_bias)


def _d_ff(r: ConfigReader, arch: Architecture, d_model: int) -> int:
    """Dense intermediate size; GPT-2 / GPT-J n_inner and Falcon ffn_hidden_size default to 4·hidden_size."""
    fallback = None
    if arch.ffn_mult:
        fallback = (arch.ffn_mult * d_model, f"{arch.ffn_mult}·hidden_size = {arch.ffn_mult * d_model}, "
                                            "the architecture's definition")
    return r.dim(*arch.ffn_keys, fallback=fallback)


def _shared_experts(r: ConfigReader, arch: Architecture, d_expert: int) -> tuple[int, bool]:
    """(total intermediate size, sigmoid-gated?) of the always-on shared expert(s)."""
    d_qwen = r.get("shared_expert_intermediate_size", default=0)
    if d_qwen:  # Qwen2-MoE: one shared expert of this size, behind a sigmoid gate
        return d_qwen, arch.shared_gate
    n = r.get("n_shared_experts", default=0) or 0
    return n * d_expert, False  # DeepSeek: n experts of moe_intermediate_size, fused into one MLP


def _gated(r: ConfigReader, arch: Architecture, activation: str) -> bool:
    if arch.gated is not None:
        return arch.gated
    gated = activation.lower() in GATED_ACTIVATIONS
    r.assume(f"MLP taken as {'gated (3 matrices)' if gated else 'plain (2 matrices)'} from activation "
             f"{activation!r}.")
    return gated


# ---------------------------------------------------------------------------- blocks and grouping
def parallel_block(r: ConfigReader, arch: Architecture) -> bool:
    return r.flag(arch.parallel)


def norms_per_block(r: ConfigReader, arch: Architecture, model_type: str) -> int:
    if model_type == "falcon" and r.flag(arch.parallel):
        # Falcon-7B: one input_layernorm; new_decoder_architecture: ln_attn + ln_mlp (num_ln_in_parallel_attn)
        if r.get("new_decoder_architecture", default=False):
            return r.get("num_ln_in_parallel_attn", default=2) or 2
        return 1
    return arch.norms


def group_layers(layers: list[tuple[AttentionSpec, FfnSpec]], parallel: bool, norms: int) -> tuple[LayerGroup, ...]:
    """One LayerGroup per distinct (attention, ffn), in order of first occurrence, with its layer count."""
    counts: dict[tuple[AttentionSpec, FfnSpec], int] = {}
    for key in layers:
        counts[key] = counts.get(key, 0) + 1
    any_window = any(a.sliding_window for a, _ in counts)
    any_moe = any(f.kind == "moe" for _, f in counts)
    seen: dict[str, int] = {}
    groups = []
    for (attn, ffn), n in counts.items():
        parts = (["sliding" if attn.sliding_window else "full"] if any_window else []) + \
                ([ffn.kind] if any_moe or not any_window else [])
        base = ".".join(parts)  # dense | moe | sliding | full | sliding.moe | full.dense ...
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}-{seen[base]}"  # e.g. two different windows
        groups.append(LayerGroup(name, n, attn, ffn, parallel, norms))
    return tuple(groups)
