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

model_type bailing_moe names two remote-code families (vLLM's bailing_moe.py builds both): Ling 1.x
(BailingMoeForCausalLM, its row in remote_code.py) and Ling 2.0 / Ring 2.0 (BailingMoeV2ForCausalLM,
modeling_bailing_moe_v2.py: the same blocks with per-head q/k RMSNorms, half-RoPE, a sigmoid router with a per-expert
bias, optional MTP layers), told apart by config.json's architectures; each with its own config class's defaults.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .architectures import ARCHITECTURES
from .key_names import HEADS_KEYS
from .traits import Architecture
from .layers import ffn_spec, mla_attention
from .reader import ConfigReader, as_int, is_finite_number
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


# ---------------------------------------------------------------------------- bailing_moe (Ling 1.x / 2.0)
# BailingMoeV2Config's defaults (the checkpoints' configuration_bailing_moe_v2.py: Ling-mini-2.0's shape)
BAILING_MOE_V2 = replace(ARCHITECTURES["bailing_moe"], defaults={
    "tie_word_embeddings": False, "vocab_size": 157184, "hidden_size": 2048, "intermediate_size": 5120,
    "num_hidden_layers": 20, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128,
    "use_qkv_bias": False, "use_bias": False, "use_qk_norm": True, "max_position_embeddings": 32768,
    "num_experts": 256, "num_shared_experts": 1, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
    "first_k_dense_replace": 1, "num_nextn_predict_layers": 0, "moe_router_enable_expert_bias": True})
_BAILING_MOE_CLASSES = ("BailingMoeForCausalLM", "BailingMoeV2ForCausalLM")
# read and shape-neutral: routing, RoPE, dropout, norm-type and head-normalisation switches
_BAILING_MOE_NEUTRAL = ("score_function", "use_rmsnorm", "norm_head", "norm_softmax", "max_window_layers",
                        "use_sliding_window", "mtp_loss_scaling_factor", "using_split_qkv_in_self_attention")


def bailing_moe_architecture(config: dict, v1: Architecture) -> Architecture:
    """Ling 2.0's row where config.json names BailingMoeV2ForCausalLM, else Ling 1.x's (`v1`); other classes under
    model_type bailing_moe are refused, not read as either."""
    names = config.get("architectures")
    if names is None:
        return v1
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ModelConfigError("architectures must be a list of class names")
    other = next((n for n in names if n not in _BAILING_MOE_CLASSES), None)
    if other is not None:
        raise UnsupportedArchitectureError(
            f"architectures {other[:40]!r} (model_type='bailing_moe'): only BailingMoeForCausalLM (Ling 1.x) and "
            "BailingMoeV2ForCausalLM (Ling 2.0) are read")
    return BAILING_MOE_V2 if "BailingMoeV2ForCausalLM" in names else v1


def note_bailing_moe(r: ConfigReader) -> None:
    """The keys of a bailing_moe config beside the table's: the shared experts' width, partial RoPE, use_bias."""
    r.used.update(_BAILING_MOE_NEUTRAL)
    v2 = r.defaults == BAILING_MOE_V2.defaults  # Ling 1.x's code builds no q/k norm nor expert bias
    for key in ("use_qkv_bias", "use_bias") + (("use_qk_norm", "moe_router_enable_expert_bias") if v2 else ()):
        if key not in r.raw:
            r.assume(f"{key} absent from the config: BailingMoe{'V2' if v2 else ''}Config's default "
                     f"{str(r.flag(key)).lower()}.")
    stated = r.dim("moe_shared_expert_intermediate_size", required=False)
    if stated is not None and stated != r.dim("moe_intermediate_size"):
        raise UnsupportedArchitectureError(
            f"moe_shared_expert_intermediate_size ({stated}) differs from moe_intermediate_size "
            f"({r.dim('moe_intermediate_size')}) (model_type='bailing_moe'): the checkpoint's code builds the shared "
            "experts of the latter, vLLM of the former")
    factor = r.typed("partial_rotary_factor", (int, float), "a number in (0, 1]", 1)
    if not is_finite_number(factor) or not 0 < factor <= 1:
        raise ModelConfigError(f"partial_rotary_factor must be a number in (0, 1], got {shown(factor)}")
    rotary = r.count("rotary_dim", allow_zero=False, default=1) if r.get("rotary_dim") is not None else None
    if factor < 1 or rotary is not None:
        r.assume("bailing_moe: RoPE on part of each head (partial_rotary_factor / rotary_dim): its elementwise pass "
                 "is counted over whole heads (a small upper bound).")
    if r.flag("use_bias"):
        r.assume("bailing_moe use_bias: the dense (o_proj) bias is counted as the checkpoint's code builds it; vLLM's "
                 "bailing_moe.py also puts zero biases on query_key_value and the dense MLPs (not counted).")
