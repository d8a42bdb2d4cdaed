"""Reader of Tencent's Hy4 (model_type hy_v4; its VL model's text part hy_v4_vl_text; transformers' modular_hy_v4.py,
modular_hy_v4_vl.py).

Every layer: iHC hyper-connections (hc_mult residual streams; before attention and before the MLP the streams,
flattened and RMS-normed without weights, are projected to 2 x hc_mult sigmoid weights, pre collapsing the streams
into the sub-block's input and post spreading its output back onto them, added to the streams: DeepSeek-V4's form
without the comb matrix or Sinkhorn), then MLA (q_a / q_b from a q_lora_rank latent, kv_a / kv_b, o) with learned
attention sinks and an output gate from x (gate_proj: d -> heads x v_head_dim, a sigmoid per output element), GLM-5's
DSA (a lightning indexer on the indexer_types 'full' layers, the 'shared' ones reusing the previous full layer's
top-k), then a dense MLP (mlp_layer_types 'dense': the first layer) or a MoE (a sigmoid router with
e_score_correction_bias, n_routed_experts of moe_intermediate_size, n_shared_experts shared ones of the same width). A
final hyper-connection head (hc_mult x hc_mult*d, hc_mult biases, one scale) collapses the streams before the norm.

Fixture tests/fixtures/configs/hy4_preview.json: tencent/Hy4-preview's config.json as a public transcription lists it
(find_string '"hy_v4"', an 'official checkpoint config.json (tencent/Hy4-preview @ 2026-09-09)' table: hidden 6144, 78
layers, vocab 120832, 1,048,576 positions, MLA 64 heads, q_lora_rank 2048, kv_lora_rank 512, qk_nope 192, qk_rope 64,
v_head_dim 256, num_key_value_heads 8, rope_theta 1e7, 78 x deepseek_sparse_attention with 21 full / 57 shared
indexers (full at layers 0, 1, 5, ..., 77), index_topk 2048, 32 index heads of 128, [dense, 77 x sparse], intermediate
18432, 256 experts of 2048 + 1 shared, top 8, enable_ihc, hc_mult 4, hc_magnitude 2.0, hc_eps 1e-6,
num_nextn_predict_layers 1, enable_lm_head_fp32), the same values as mlx-lm's hy_v4.py ModelArgs defaults and
transformers' HYV4VLTextConfig defaults; assembled into JSON here, not a verbatim copy of the file.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, shown
from .traits import Architecture
from .layers import ffn_spec, mla_attention
from .reader import ConfigReader
from .spec import AttentionSpec, LayerGroup

HY4_TYPES = ("hy_v4", "hy_v4_vl", "hy_v4_vl_text")
# layer_types: transformers maps the hub's deepseek_sparse_attention onto indexed_attention (configuration_utils.py)
_ATTENTION_TYPES = ("indexed_attention", "deepseek_sparse_attention")


def hy4_groups(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> tuple[tuple[LayerGroup, ...], int]:
    """The layer groups (one per distinct (indexer or shared top-k, dense or MoE), in order of first occurrence) and
    the parameters of the final hyper-connection head (hc x hc*d projection, hc biases, one scale)."""
    _check_variants(r)
    r.str_list("layer_types", n_layers, allowed=_ATTENTION_TYPES)
    indexers = _indexers(r, n_layers)
    moe = _moe_layers(r, n_layers)
    hc = r.dim("hc_mult")
    attn = {own: _attention(r, own) for own in dict.fromkeys(indexers)}
    d_ff = 0 if all(moe) else r.dim("intermediate_size")
    ffn = {m: _ffn(r, arch, d_model, m, d_ff) for m in dict.fromkeys(moe)}
    counts: dict[tuple[bool, bool], int] = {}
    for key in zip(indexers, moe, strict=True):
        counts[key] = counts.get(key, 0) + 1
    groups = tuple(LayerGroup(f"dsa{'' if own else '-shared'}.{'moe' if m else 'dense'}", n, attn[own], ffn[m],
                              norms=arch.norms, hc_mult=hc, hc_independent=True)
                   for (own, m), n in counts.items())
    _note(r, indexers)
    return groups, hc * hc * d_model + hc + 1


def _check_variants(r: ConfigReader) -> None:
    """The hub's switches (enable_ihc, use_dsa; mlx-lm's gating_type): only the form transformers builds is read."""
    for key in ("enable_ihc", "use_dsa"):
        r.switch(key, True, "only Hy4 with iHC hyper-connections and DSA (what transformers builds) is read")
    r.switch("gating_type", "elementwise", "only the elementwise MLA output gate (gate_proj: d -> heads x v_head_dim) "
             "is read")


def _indexers(r: ConfigReader, n_layers: int) -> list[bool]:
    """Whether each layer runs its own indexer: indexer_types ('full' / 'shared'), else transformers' schedule (full
    on layer 0 and every 4th layer from 1)."""
    types = r.str_list("indexer_types", n_layers, allowed=("full", "shared"))
    if types is None:
        types = ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n_layers)]
    if types[0] != "full":
        raise ModelConfigError("indexer_types[0] must be 'full': a 'shared' layer reuses the previous full layer's "
                               "top-k")
    return [t == "full" for t in types]


def _moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """mlp_layer_types ('dense' / 'sparse'), else transformers' default: the first layer dense, the others MoE."""
    types = r.str_list("mlp_layer_types", n_layers, allowed=("dense", "sparse"))
    if types is None:
        return [i > 0 for i in range(n_layers)]
    return [t == "sparse" for t in types]


def _attention(r: ConfigReader, own_indexer: bool) -> AttentionSpec:
    """HYV4Attention: MLA (q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj),
    sinks (one per head), gate_proj (d -> heads x v_head_dim); the indexer where the layer has one."""
    r.dim("q_lora_rank")  # HYV4Attention always builds q_a_proj / q_b_proj: required, not null
    return mla_attention(r, r.dim("num_attention_heads"), dict(sinks=True, output_gate=True, gate_from_x=True),
                         own_indexer)


def _ffn(r: ConfigReader, arch: Architecture, d_model: int, moe: bool, d_ff: int):
    """The dense MLP, or the MoE with n_shared_experts shared experts of moe_intermediate_size fused into one MLP."""
    f = ffn_spec(r, arch, d_model, moe, d_ff)
    if not moe:
        return f
    return replace(f, d_shared=r.count("n_shared_experts", default=1) * f.d_expert)


def _note(r: ConfigReader, indexers: list[bool]) -> None:
    heads = r.dim("num_attention_heads")
    kv = r.raw.get("num_key_value_heads")
    if kv is not None and kv != heads:
        r.assume(f"Hy4: num_key_value_heads ({shown(kv)}) is not read: MLA expands one latent to every head "
                 "(HYV4Config sets it to num_attention_heads).")
    r.assume(f"Hy4: {indexers.count(False)} of {len(indexers)} DSA layers reuse the previous full layer's top-k "
             "(indexer_types 'shared'): no indexer weights, compute or index-key cache there.")
    r.assume("Hy4 iHC hyper-connections: the mixing projections, the final hyper-connection head, the indexer's "
             "weights_proj and k_norm, the sinks and (enable_lm_head_fp32) the LM head are fp32 in transformers; they "
             "are counted in the checkpoint's dtype; the head's compute is not modelled; the attention sinks (one "
             "logit per head in the softmax) and the routed experts' SwiGLU clamp (swiglu_limit) are not priced.")
    r.used.update(("hc_magnitude", "hc_eps", "swiglu_limit", "learnable_sink_init", "num_key_value_heads",
                   "enable_lm_head_fp32", "qk_head_dim", "head_dim", "mtp_loss_factor", "scoring_func"))
