"""Reader of LongCat-Flash (model_type longcat_flash; transformers' modeling_longcat_flash.py).

Each of num_layers decoder layers holds two MLA attention blocks and two dense gated MLPs of ffn_hidden_size, and one
shortcut-connected MoE (ScMoE): norm -> attention 0 -> residual -> norm -> [MLP 0 and the MoE, on the same normed
input] -> residual + MLP 0 -> norm -> attention 1 -> residual -> norm -> MLP 1 -> residual + MLP 1 + the MoE. The MoE
routes over n_routed_experts gated experts of expert_ffn_hidden_size and zero_expert_num zero-computation (identity)
experts, moe_topk of them per token, through a softmax router (classifier over both kinds, e_score_correction_bias).

The layer is read as two of the project's layers, the same ops and weights: attention 0 + a MoE whose always-on
shared expert is MLP 0 (they read the same input and their outputs are summed into the residual stream, one block
apart: the same GEMMs, the same bytes), then attention 1 + MLP 1. Each attention block keeps its own MLA cache
(transformers' cache has 2 x num_layers layers), so the KV cache is that of 2 x num_layers MLA layers.
"""

from __future__ import annotations

from ..errors import ModelConfigError, UnsupportedArchitectureError
from .key_names import HEADS_KEYS
from .traits import Architecture
from .layers import activation, mla_attention
from .reader import ConfigReader
from .spec import AttentionSpec, FfnSpec, LayerGroup


def longcat_groups(r: ConfigReader, arch: Architecture, d_model: int) -> tuple[LayerGroup, ...]:
    """The two layer groups of LongCat-Flash: attention + ScMoE (MLP 0 as the shared expert), attention + MLP 1."""
    n = _decoder_layers(r)
    _refuse_unmodelled(r)
    attn = _attention(r)
    act = activation(r)
    d_ff = r.dim(*arch.ffn_keys, "intermediate_size")
    moe = FfnSpec("moe", 0, True, act, n_experts=r.dim("n_routed_experts", "num_local_experts"),
                  top_k=r.dim("moe_topk", "num_experts_per_tok"),
                  d_expert=r.dim(*arch.expert_keys, "moe_intermediate_size"), d_shared=d_ff, router_bias=True,
                  zero_experts=_zero_experts(r))
    if moe.top_k > moe.router_width:
        raise ModelConfigError(f"moe_topk ({moe.top_k}) exceeds the experts the router picks from: n_routed_experts "
                               f"({moe.n_experts}) + zero_expert_num ({moe.zero_experts})")
    _note(r, n, moe)
    return LayerGroup("moe", n, attn, moe), LayerGroup("dense", n, attn, FfnSpec("dense", d_ff, True, act))


def _decoder_layers(r: ConfigReader) -> int:
    """num_layers (the checkpoint's key); transformers' num_hidden_layers is 2 x num_layers (its attention blocks)."""
    blocks = r.dim("num_hidden_layers", required=False)
    if r.stated("num_layers") is None and blocks is not None:
        if blocks % 2:
            raise ModelConfigError(f"num_hidden_layers ({blocks}) must be even in a longcat_flash config: it counts "
                                   "the attention blocks, two per layer (num_layers = num_hidden_layers / 2)")
        return blocks // 2
    n = r.dim("num_layers")
    if blocks is not None and blocks != 2 * n:
        raise ModelConfigError(f"num_hidden_layers ({blocks}) must be 2 x num_layers ({2 * n}) in a longcat_flash "
                               "config: each layer holds two attention blocks")
    return n


def _refuse_unmodelled(r: ConfigReader) -> None:
    """What transformers' LongCat-Flash does not build: attention other than MLA (LongCat's LSA), experts other than
    identity ones beside the routed ones, a bias on the router's classifier."""
    method = r.typed("attention_method", (str,), "a string", "MLA")
    if method.upper() != "MLA":
        raise UnsupportedArchitectureError(f"attention_method {method[:40]!r} (model_type='longcat_flash'): only MLA "
                                           "is modelled (LongCat's LSA sparse attention is not)")
    r.switch("zero_expert_type", "identity", "only 'identity' zero-computation experts are modelled")
    r.switch("router_bias", False, "a bias on the router's classifier beside e_score_correction_bias is not "
             "modelled")


def _attention(r: ConfigReader) -> AttentionSpec:
    """LongcatFlashMLA: DeepSeek-V3's MLA, always with a query LoRA (q_lora_rank required); its LoRA scalings are
    scalars (mla_scale_q_lora, mla_scale_kv_lora)."""
    r.dim("q_lora_rank")  # transformers always builds q_a_proj / q_b_proj
    attn = mla_attention(r, r.dim(*HEADS_KEYS), dict(rope=True))
    qk = r.dim("qk_head_dim", required=False)
    if qk is not None and qk != attn.head_dim:
        raise ModelConfigError(f"qk_head_dim ({qk}) must be qk_nope_head_dim + qk_rope_head_dim ({attn.head_dim})")
    r.used.update(("mla_scale_q_lora", "mla_scale_kv_lora", "head_dim", "num_key_value_heads"))
    return attn


def _zero_experts(r: ConfigReader) -> int:
    """zero_expert_num: stated (null: none, as transformers reads it), else the config class's default (noted)."""
    value = r.count("zero_expert_num")
    if "zero_expert_num" not in r.raw:
        r.assume(f"zero_expert_num absent from the config: {r.default_label} {value}.")
    return value


def _note(r: ConfigReader, n: int, f: FfnSpec) -> None:
    r.assume(f"LongCat-Flash ScMoE: each of the {n} layers (two attention blocks, two dense MLPs, one MoE) is read as "
             f"two: attention + the MoE with its first MLP as the always-on shared expert (both read the same "
             f"input), then attention + the second MLP ({2 * n} layers, {2 * n} MLA caches). The MoE's output joins "
             "the residual stream one block later, the same work; the shortcut lets its dispatch and combine overlap "
             "the next attention and MLP, which this estimate prices in sequence (an upper bound).")
    if f.zero_experts:
        r.assume(f"LongCat-Flash zero-computation experts: the router picks {f.top_k} of {f.n_experts} experts + "
                 f"{f.zero_experts} identity experts, which cost nothing. Priced at the expected real experts per "
                 f"token under uniform routing, {f.top_k} x {f.n_experts} / {f.router_width} = "
                 f"{f.expert_top_k:.4g} (LongCat's router holds the average near a target by expert biases; the "
                 "LongCat-Flash report: ~27B active on average); one token runs 0 to "
                 f"{min(f.top_k, f.n_experts)} real experts (the report: 18.6B-31.3B).")
    mtp = r.count("mtp_num_layers")
    if mtp:
        r.assume(f"mtp_num_layers={mtp}: the multi-token-prediction layer is not part of plain inference and is not "
                 "counted.")
    r.used.update(("routed_scaling_factor", "norm_topk_prob"))
