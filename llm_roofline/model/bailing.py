"""Reader of Ling-3.0 (model_type bailing_hybrid: transformers' modular_bailing_hybrid.py; the hub checkpoints'
BailingMoeV3ForCausalLM, remote code modeling_bailing_moe_v3.py).

Every layer: norm -> (KDA | MLA) -> residual -> norm -> a dense gated MLP of intermediate_size (the first
first_k_dense_replace layers, or mlp_layer_types 'dense') or DeepSeek-V3's MoE (a sigmoid router with
e_score_correction_bias, the hub's expert_bias; routed experts of moe_intermediate_size beside num_shared_experts
shared ones of the same width, fused into one MLP) -> residual. The last layer of every layer_group_size layers is
MLA, the others KDA (layer_types, where given, says it per layer).

KDA is Kimi-Linear's (q, k, v of heads x head_dim through depthwise convolutions of short_conv_kernel_size taps,
beta per head, A_log per head, dt_bias per channel, a gated RMSNorm of head_dim, o_proj; a float32 state of
head_dim x head_dim per head) but for its decay and output gate: one projection each from x (f_proj, g_proj: d ->
heads x head_dim, the hub's no_kda_lora) where Kimi has a low-rank pair. MLA is DeepSeek-V3's (q_proj or q_a / q_b,
kv_a / kv_b, o; RoPE on qk_rope_head_dim) with a sigmoid gate per head from x (g_proj: d -> heads, the hub's
gated_attention_proj_granularity_type 'head_wise'). The hub's config names the KDA width by head_dim and
num_attention_heads; transformers' keeps them in linear_head_dim / linear_num_heads (its head_dim is then MLA's
rope dim).

model_type bailing_hybrid also names Ling-2.5 / Ring-2.5 and Ling-2.6 (BailingMoeV2_5ForCausalLM): lightning
attention beside MLA, another architecture that transformers does not build: refused by name.
"""

from __future__ import annotations

from ..errors import ModelConfigError, UnsupportedArchitectureError
from .architectures import HEADS_KEYS, Architecture
from .layers import ffn_spec, mla_attention
from .reader import ConfigReader, as_int
from .spec import AttentionSpec, FfnSpec, MixerSpec

# the hub config's switches and the one value of each that transformers' BailingHybrid classes build
_BUILT = {"full_attention_type": "mla", "gated_attention_proj_granularity_type": "head_wise",
          "linear_attention": "kda", "no_kda_lora": True, "use_kda_lora": False, "use_nGPT": False,
          "value_norm": False}
_NEUTRAL = ("kda_safe_gate", "kda_lower_bound", "rope_interleave", "partial_rotary_factor", "use_qk_norm",
            "use_qkv_bias", "scale_router_input", "mtp_use_kda", "max_window_layers", "num_nextn_predict_layers",
            "expert_swiglu_limit_list", "share_expert_swiglu_limit_list", "score_function", "scoring_func")


def bailing_hybrid_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int,
                          state_dtype: str) -> list[tuple[AttentionSpec, MixerSpec | None, FfnSpec]]:
    """(attention, mixer, MLP) of each layer: MLA or KDA, dense or MoE; the KDA state in `state_dtype`."""
    _refuse_ling_2_5(r)
    _refuse_unbuilt(r)
    full = _full_layers(r, n_layers)
    moe = _moe_layers(r, n_layers)
    attn = mla_attention(r, r.dim(*HEADS_KEYS), dict(rope=not r.boolean("use_mla_nope"), head_gate=True)) \
        if any(full) else None
    if attn is not None and r.get("qk_head_dim") is not None and \
            as_int(r.get("qk_head_dim"), "qk_head_dim") != attn.head_dim:
        raise ModelConfigError(f"qk_head_dim ({r.get('qk_head_dim')}) must equal qk_nope_head_dim + qk_rope_head_dim "
                               f"({attn.head_dim})")
    mixer = _kda(r, state_dtype) if not all(full) else None
    ffns = {m: _ffn(r, arch, d_model, m) for m in set(moe)}
    _note(r)
    return [(attn, None, ffns[m]) if f else (AttentionSpec.none(), mixer, ffns[m]) for f, m in zip(full, moe)]


def _refuse_ling_2_5(r: ConfigReader) -> None:
    """Ling-2.5 / 2.6 configs (architectures BailingMoeV2_5ForCausalLM, group_norm_size) share the model_type."""
    names = r.typed("architectures", (list,), "a list of class names", [])
    older = next((n for n in names if isinstance(n, str) and n.startswith("BailingMoeV2")), None)
    if older is not None or r.get("group_norm_size") is not None:
        key = f"architectures {older[:40]!r}" if older else "group_norm_size"
        raise UnsupportedArchitectureError(
            f"{key} (model_type='bailing_hybrid'): Ling-2.5 / 2.6's lightning attention (q/k norms and partial RoPE "
            "inside, a grouped RMSNorm) beside MLA is not transformers' bailing_hybrid (Ling-3.0's KDA) and cannot "
            "be represented yet")


def _refuse_unbuilt(r: ConfigReader) -> None:
    """The hub config's switches, each at the value transformers builds; num_kv_heads_for_linear_attn 0 (KDA's k and
    v over every head) and moe_shared_expert_intermediate_size = num_shared_experts x moe_intermediate_size."""
    for key, built in _BUILT.items():
        r.switch(key, built, f"only {_shown(built)}, what transformers' BailingHybrid classes build, is read")
    if r.count("num_kv_heads_for_linear_attn"):
        raise UnsupportedArchitectureError("num_kv_heads_for_linear_attn is set (model_type='bailing_hybrid'): KDA "
                                           "with fewer key/value heads is not read")


def _shown(value: bool | str) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value[:40])


def _full_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """MLA layers: layer_types ('full_attention' / 'linear_attention'), else every layer_group_size-th layer (0-based
    (i + 1) % g == 0). The hub's code makes the layers past the last whole group MLA too, transformers' KDA: such a
    count is refused (SGLang requires whole groups)."""
    types = r.str_list("layer_types", n_layers, allowed=("linear_attention", "full_attention"))
    if types is not None:
        r.used.add("layer_group_size")
        return [t == "full_attention" for t in types]
    group = r.count("layer_group_size", default=6, allow_zero=False)
    if n_layers % group:
        raise ModelConfigError(f"num_hidden_layers ({n_layers}) must be a multiple of layer_group_size ({group}): the "
                               "checkpoint's code makes the layers past the last whole group MLA, transformers' KDA")
    return [(i + 1) % group == 0 for i in range(n_layers)]


def _moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """mlp_layer_types ('dense' / 'sparse'), else MoE from first_k_dense_replace on (BailingHybridConfig)."""
    types = r.str_list("mlp_layer_types", n_layers, allowed=("dense", "sparse"))
    if types is None:
        first = r.count("first_k_dense_replace", default=2)
        return [i >= first for i in range(n_layers)]
    r.used.add("first_k_dense_replace")
    return [t == "sparse" for t in types]


def _kda(r: ConfigReader, state_dtype: str) -> MixerSpec:
    """KDA of linear_num_heads (else num_attention_heads) heads of linear_head_dim (else head_dim), full-rank gates."""
    heads = r.dim("linear_num_heads", *HEADS_KEYS)
    head_dim = r.dim("linear_head_dim", "head_dim")
    kernel = r.dim("linear_conv_kernel_dim", "short_conv_kernel_size")
    r.assume("KDA prefill is taken in chunks of 64 tokens (the chunked kernels' size).")
    return MixerSpec("kda", heads, head_dim, head_dim, heads, kernel, chunk_size=64, state_dtype=state_dtype,
                     full_rank_gates=True)


def _ffn(r: ConfigReader, arch: Architecture, d_model: int, moe: bool) -> FfnSpec:
    """The dense MLP, or the MoE; the hub's moe_shared_expert_intermediate_size must be the shared experts' width."""
    if not moe:
        return ffn_spec(r, arch, d_model, False, r.dim("intermediate_size"))
    f = ffn_spec(r, arch, d_model, True, 0)
    stated = r.dim("moe_shared_expert_intermediate_size", required=False)
    if stated is not None and stated != f.d_shared:
        raise UnsupportedArchitectureError(
            f"moe_shared_expert_intermediate_size ({stated}) differs from num_shared_experts x moe_intermediate_size "
            f"({f.d_shared}) (model_type='bailing_hybrid'): transformers builds the latter, SGLang the former")
    return f


def _note(r: ConfigReader) -> None:
    r.used.update(_NEUTRAL)
    r.assume("Ling-3.0: KDA's bounded decay (kda_safe_gate), the routed scaling and the per-layer SwiGLU clamps "
             "(expert_swiglu_limit_list) are elementwise, not priced; g_proj (d -> heads) is split over tp with the "
             "heads; the q, k, v convolutions count as one conv1d over their channels.")
