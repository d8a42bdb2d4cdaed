"""Reader of Mistral Large 4's text model (model_type mistral_large4_text; its multimodal wrapper mistral_large4;
transformers' modular_mistral_large4.py, configuration_mistral_large4.py).

Every layer: MLA without a query latent (q_proj: d -> heads x (qk_nope + qk_rope); kv_a_proj_with_mqa, kv_a_layernorm,
kv_b_proj, o_proj), the queries scaled per head by scale x log(position + 1) + bias (MistralLarge4TextSoftmaxScaling:
two parameters a head), GLM-5's DSA (a lightning indexer on the indexer_types 'full' layers, its queries from x through
a LayerNorm of hidden_size, wq_b and the same log scaling; the 'shared' layers reuse the previous layer's top-k). A
layer whose no_rope_layers entry is 0 (every no_rope_layer_interval-th, 4 by default) has no rope key: kv_a_proj makes
the latent alone and kv_b_proj the whole qk_nope + qk_rope of each head; its indexer runs without RoPE. A layer whose
kv_source_layers entry names an earlier layer attends over that layer's cached latent and rope key: no
kv_a_proj_with_mqa or kv_a_layernorm of its own (kv_b_proj its own), nothing cached but the index key of its own
indexer (transformers' kv_sharing_modes 'reuse' / 'reuse_but_indexer'). Then a dense MLP (mlp_layer_types 'dense': the
first first_k_dense_replace layers) or Mistral-4's MoE (a softmax router without bias over n_routed_experts of
moe_intermediate_size, n_shared_experts shared ones of that width fused into one MLP). The rotary embedding has a
learned scale per frequency (alpha: qk_rope_head_dim / 2 parameters, ModelSpec.head_params).

No published config.json of mistralai/Mistral-Large-4-1T-A52B was found: the config-class defaults (its docstring's
checkpoint) are the model read by tests/test_model_ml4.py.
"""

from __future__ import annotations

from ..errors import ModelConfigError, shown
from .layers import dsa_indexer, ffn_spec, indexer_schedule, layer_ropes, moe_layers
from .reader import ConfigReader
from .spec import AttentionSpec, FfnSpec, LayerGroup
from .traits import Architecture

ML4_TYPES = ("mistral_large4_text",)
# layer_types: every layer DSA (transformers maps the hub's deepseek_sparse_attention onto indexed_attention)
_ATTENTION_TYPES = ("indexed_attention", "deepseek_sparse_attention")


def mistral_large4_groups(r: ConfigReader, arch: Architecture, d_model: int,
                          n_layers: int) -> tuple[tuple[LayerGroup, ...], int]:
    """The layer groups, one per distinct (RoPE or NoPE, own indexer or shared top-k, own or reused latent, dense or
    MoE) in order of first occurrence, and the rotary embedding's learned alpha (ceil(qk_rope_head_dim / 2))."""
    r.str_list("layer_types", n_layers, allowed=_ATTENTION_TYPES)
    ropes = layer_ropes(r, arch, n_layers)
    indexers = indexer_schedule(r, n_layers)
    reused = _reused_latents(r, ropes)
    moe = moe_layers(r, n_layers)
    keys = list(zip(ropes, indexers, reused, moe, strict=True))
    attn = {k[:3]: _attention(r, d_model, *k[:3]) for k in dict.fromkeys(keys)}
    d_ff = 0 if all(moe) else r.dim("intermediate_size")
    ffn = {m: ffn_spec(r, arch, d_model, m, 0 if m else d_ff) for m in dict.fromkeys(moe)}
    counts: dict[tuple[bool, bool, bool, bool], int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    groups = tuple(LayerGroup(_name(key), n, attn[key[:3]], ffn[key[3]], norms=arch.norms)
                   for key, n in counts.items())
    _note(r, ffn)
    return groups, (r.dim("qk_rope_head_dim") + 1) // 2


def _name(key: tuple[bool, bool, bool, bool]) -> str:
    rope, own, reused, moe = key
    return (f"{'rope' if rope else 'nope'}.{'dsa' if own else 'dsa-shared'}{'.kv-reused' if reused else ''}."
            f"{'moe' if moe else 'dense'}")


def _attention(r: ConfigReader, d_model: int, rope: bool, own_indexer: bool, reused: bool) -> AttentionSpec:
    """MistralLarge4TextAttention: q_proj from x, the latent (and rope key on a RoPE layer) from kv_a_proj_with_mqa
    unless reused, kv_b_proj to qk_nope (+ qk_rope on a NoPE layer) and v per head, o_proj; the log scaling of the
    queries; the indexer (q LayerNorm over x) where the layer has one."""
    if r.flag("attention_bias"):
        raise ModelConfigError("attention_bias=true with MLA (kv_lora_rank) is not modelled")
    heads = r.dim("num_attention_heads")
    nope, rope_dim = r.dim("qk_nope_head_dim"), r.dim("qk_rope_head_dim")
    own_rope = rope_dim if rope else 0
    return AttentionSpec("mla", heads, heads, nope + rope_dim, r.dim("v_head_dim"), rope=rope,
                         kv_lora_rank=r.dim("kv_lora_rank"), qk_nope_head_dim=nope + rope_dim - own_rope,
                         qk_rope_head_dim=own_rope, kv_reused=reused, q_log_scale=True,
                         index_q_norm=d_model if own_indexer else 0, **dsa_indexer(r, own_indexer))


def _reused_latents(r: ConfigReader, ropes: list[bool]) -> list[bool]:
    """Whether each layer attends over an earlier layer's cached latent (kv_source_layers[i] != i). transformers
    requires the source earlier and its own source; it keys the shared latent by RoPE / NoPE, so a source of the
    other kind is refused (transformers would read another layer's latent, or none)."""
    sources = r.int_list("kv_source_layers", len(ropes))
    if sources is None:
        return [False] * len(ropes)
    for i, source in enumerate(sources):
        if source > i or sources[source] != source:
            raise ModelConfigError(f"kv_source_layers[{i}] = {source}: a layer reuses the latent of an earlier layer "
                                   "that keeps its own (whose kv_source_layers entry is its own index)")
        if ropes[source] != ropes[i]:
            kind = ("RoPE", "NoPE")
            raise ModelConfigError(f"kv_source_layers[{i}] = {source}: a {kind[not ropes[i]]} layer cannot reuse a "
                                   f"{kind[not ropes[source]]} layer's latent (transformers shares the latent by RoPE "
                                   "or NoPE, so it would read another layer's, or none)")
    reused = [source != i for i, source in enumerate(sources)]
    if any(reused):
        r.assume(f"Mistral Large 4: {sum(reused)} of {len(ropes)} layers attend over an earlier layer's cached latent "
                 "and rope key (kv_source_layers): no kv_a_proj_with_mqa or kv_a_layernorm of their own, no latent "
                 "cached (the index key of their own indexer is).")
    return reused


def _note(r: ConfigReader, ffn: dict[bool, FfnSpec]) -> None:
    heads = r.dim("num_attention_heads")
    kv = r.raw.get("num_key_value_heads")
    if kv is not None and kv != heads:
        r.assume(f"Mistral Large 4: num_key_value_heads ({shown(kv)}) is not read: MLA expands one latent to every "
                 "head.")
    if r.raw.get("q_lora_rank") is not None:
        r.assume("Mistral Large 4: q_lora_rank is not read: MistralLarge4TextAttention builds a plain q_proj "
                 "(no query latent).")
    router = " the router weights," if True in ffn else ""
    r.assume(f"Mistral Large 4:{router} the indexer's weights_proj and the rotary embedding's alpha are fp32 in "
             "transformers; they are counted in the checkpoint's dtype. The tanh softcap of the logits "
             "(final_logit_softcapping) and the log scaling's factors (one per head and token; applying them is "
             "priced) are not priced.")
    r.used.update(("head_dim", "qk_head_dim", "num_key_value_heads", "q_lora_rank", "mlp_bias", "norm_topk_prob",
                   "final_logit_softcapping", "rope_interleave"))
