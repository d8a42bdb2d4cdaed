"""Reader of Z.ai's GLM-5.3-Flash (model_type glm5_next, its text model glm5_next_text; transformers'
configuration_glm5_next.py, modular_glm5_next.py; grouped by hybrid.py).

Every layer sits between mHC hyper-connections (DeepSeek-V4's: hc_mult residual streams, a (2 + hc) x hc mixing
projection before the token mixer and before the MLP; the final collapse is an unweighted mean over the streams, no
weights). The token mixer is KDA (layer_types 'linear_attention': Kimi-Linear's, low-rank decay and output gates) or
MLA without RoPE (qk_rope_head_dim 0; q from a q_lora_rank latent) with GLM-5's DSA indexer, whose keys are pooled
(IndexPool): each index_kpool tokens' keys, softmax-weighted by a gate per channel (index_kpool_compress_gate: d ->
index_head_dim) plus a learned bias per pool position (index_kpool_compress_ape), make one entry; the indexer scores
the entries, keeps index_topk / index_kpool pools and the query attends to their index_topk tokens, plus
(index_kpool_always_select_tail) the last, incomplete pool's tokens. indexer_types 'shared' layers reuse the previous
layer's selection. The MLP is dense (mlp_layer_types 'dense', the first three) or DeepSeek-V3's MoE (a sigmoid router
with e_score_correction_bias, n_shared_experts shared experts of moe_intermediate_size); both clamp their SwiGLU.

The checkpoint's own key names are read beside transformers' (configuration_glm5_next.py copies linear_attn_config's
num_heads, head_dim, short_conv_kernel_size over linear_*): its linear_attn_config lists its KDA and MLA layers from 0
(kda_layers, full_attn_layers) and it states first_k_dense_replace. transformers builds its schedule from
layer_types, mlp_layer_types or their defaults alone: a list the checkpoint states that disagrees is refused.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .layers import ffn_spec, indexer_type_list
from .mixer import MixerSpec
from .reader import ConfigReader, as_int
from .spec import AttentionSpec, FfnSpec, LayerGroup
from .traits import Architecture

GLM5_NEXT_TYPES = ("glm5_next", "glm5_next_text")
# configuration_utils.py maps full_attention and the hub's deepseek_sparse_attention onto indexed_attention
_MLA_TYPES = ("indexed_attention", "full_attention", "deepseek_sparse_attention")
_NEUTRAL = ("hc_eps", "hc_sinkhorn_iters", "swiglu_limit", "linear_lower_bound", "indexer_rope_interleave",
            "index_share_for_mtp_iteration", "mla_use_nope", "rope_parameters", "rope_theta", "head_dim", "qk_head_dim",
            "moe_router_dtype", "scoring_func", "topk_method", "num_key_value_heads", "linear_attn_config")
Layer = tuple[AttentionSpec, "MixerSpec | None", FfnSpec]


def glm5_next_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int, state_dtype: str) -> list[Layer]:
    """(attention, mixer, FFN) per layer: KDA or MLA + DSA, then the dense MLP or the MoE."""
    for key, why in (("mhc", "only GLM-5.3-Flash with mHC hyper-connections (what transformers builds) is read"),
                     ("index_kpool_compress", "only IndexPool's gated pooling of the indexer keys (what transformers "
                                              "builds: index_kpool_compress_gate, _ape) is read")):
        r.switch(key, True, why)
    r.switch("attention_bias", False, "the MLA layers' q_a_proj / kv_a_proj / o_proj biases are not modelled")
    mla = _mla_layers(r, n_layers)
    moe = _moe_layers(r, n_layers)
    own = _own_indexers(r, mla)
    attn = {o: _attention(r, o) for o in dict.fromkeys(o for o, m in zip(own, mla) if m)}
    mixer = _kda(r, state_dtype) if not all(mla) else None
    ffns = {m: ffn_spec(r, arch, d_model, m, 0 if m else r.dim("intermediate_size")) for m in dict.fromkeys(moe)}
    _note(r, mla, own)
    return [(attn[o], None, ffns[f]) if m else (AttentionSpec.none(), mixer, ffns[f])
            for m, o, f in zip(mla, own, moe)]


def glm5_next_hc(r: ConfigReader, groups: tuple[LayerGroup, ...]) -> tuple[LayerGroup, ...]:
    """Every group between hc_mult-stream hyper-connections (DeepSeek-V4's mixing: pre, post and comb)."""
    hc = r.dim("hc_mult")
    return tuple(replace(g, hc_mult=hc) for g in groups)


def _mla_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """The MLA (DSA) layers: layer_types, else transformers' default (every fourth layer from the fourth, i % 4 ==
    3); linear_attn_config's 0-based full_attn_layers and kda_layers, where stated, must name the same layers."""
    types = r.str_list("layer_types", n_layers, allowed=("linear_attention",) + _MLA_TYPES)
    mla = [t != "linear_attention" for t in types] if types is not None else [i % 4 == 3 for i in range(n_layers)]
    lin = r.typed("linear_attn_config", (dict,), "an object", {})
    for key, want in (("full_attn_layers", True), ("kda_layers", False)):
        listed = lin.get(key)
        if listed is None:
            continue
        if not isinstance(listed, list) or any(type(v) is not int or not 0 <= v < n_layers for v in listed):
            raise ModelConfigError(f"linear_attn_config.{key} must list layer indices from 0 to {n_layers - 1}")
        if sorted(set(listed)) != [i for i, m in enumerate(mla) if m == want]:
            raise UnsupportedArchitectureError(
                f"linear_attn_config.{key} differs from the layers transformers builds as "
                f"{'MLA' if want else 'KDA'} (layer_types, else every fourth from the fourth) "
                f"(model_type={r.model_type}): the checkpoint's code and transformers would read different models")
    return mla


def _moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """mlp_layer_types ('dense' / 'sparse'), else transformers' default (the first three dense); the checkpoint's
    first_k_dense_replace and moe_layer_freq, where stated, must give the same layers."""
    types = r.str_list("mlp_layer_types", n_layers, allowed=("dense", "sparse"))
    moe = [t == "sparse" for t in types] if types is not None else [i >= 3 for i in range(n_layers)]
    first = r.count("first_k_dense_replace") if r.stated("first_k_dense_replace") else None
    freq = r.count("moe_layer_freq", default=1, allow_zero=False)
    if (first is not None and moe != [i >= first for i in range(n_layers)]) or freq != 1:
        key = "moe_layer_freq" if freq != 1 else "first_k_dense_replace"
        raise UnsupportedArchitectureError(
            f"{key} ({freq if freq != 1 else first}) differs from the MoE layers transformers builds "
            f"(mlp_layer_types, else all but the first three) (model_type={r.model_type})")
    return moe


def _own_indexers(r: ConfigReader, mla: list[bool]) -> list[bool]:
    """Whether each layer runs its own indexer (indexer_types 'full'); a 'shared' MLA layer takes the top-k the
    layer before it hands on, which only an MLA layer with its own indexer does (Glm5NextTextAttention)."""
    types = indexer_type_list(r, len(mla))
    bad = next((t for t in types if t not in ("full", "shared")), None)
    if bad is not None:
        raise ModelConfigError(f"indexer_types must be 'full' or 'shared' per layer, got {shown(bad)}")
    own = [t == "full" for t in types]
    for i, m in enumerate(mla):
        if m and not own[i] and not (i and mla[i - 1] and own[i - 1]):
            raise ModelConfigError(f"indexer_types[{i}] is 'shared' but layer {i - 1} is not an MLA layer with its "
                                   "own indexer: a shared layer reuses the top-k of the layer just before it")
    return own


def _attention(r: ConfigReader, own_indexer: bool) -> AttentionSpec:
    """Glm5NextTextAttention: q_a (d -> q_lora_rank, RMSNorm), q_b (-> heads x qk_nope_head_dim), kv_a (d ->
    kv_lora_rank, RMSNorm), kv_b (-> heads x (nope + v)), o; no RoPE; its indexer (GlmMoeDsaIndexer's wq_b, wk,
    k_norm, weights_proj, and IndexPool's gate and position bias) where the layer has its own."""
    heads = r.dim("num_attention_heads")
    kv_heads = r.get("num_key_value_heads", default=heads)
    if kv_heads != heads:
        raise ModelConfigError(f"num_key_value_heads ({shown(kv_heads)}) must equal num_attention_heads ({heads}) "
                               "(Glm5NextTextConfig: MLA expands one latent to every head)")
    if r.count("qk_rope_head_dim", default=0):
        raise ModelConfigError("qk_rope_head_dim must be 0: GLM-5.3-Flash's MLA layers have no RoPE "
                               "(Glm5NextTextConfig's validation)")
    nope = r.dim("qk_nope_head_dim")
    top_k, pool = r.dim("index_topk"), r.dim("index_kpool")
    if top_k % pool:
        raise ModelConfigError(f"index_topk ({top_k}) must be divisible by index_kpool ({pool})")
    indexer = dict(index_n_heads=r.dim("index_n_heads"), index_head_dim=r.dim("index_head_dim")) if own_indexer else {}
    return AttentionSpec("mla", heads, heads, nope, r.dim("v_head_dim"), rope=False, q_lora_rank=r.dim("q_lora_rank"),
                         kv_lora_rank=r.dim("kv_lora_rank"), qk_nope_head_dim=nope, qk_rope_head_dim=0,
                         index_topk=top_k, index_kpool=pool,
                         index_tail=r.boolean("index_kpool_always_select_tail", default=True), **indexer)


def _kda(r: ConfigReader, state_dtype: str) -> MixerSpec:
    """Glm5NextTextLinearAttention (Kimi-Linear's KDA): linear_attn_config's num_heads, head_dim and
    short_conv_kernel_size over linear_num_heads, linear_head_dim, linear_conv_kernel_dim (as the config class)."""
    lin = r.typed("linear_attn_config", (dict,), "an object", {})
    if lin.get("use_full_rank_gate"):
        raise UnsupportedArchitectureError(f"linear_attn_config.use_full_rank_gate is set (model_type={r.model_type}): "
                                           "transformers builds KDA's low-rank decay gate (f_a, f_b)")
    heads, head_dim, kernel = (as_int(lin[k], f"linear_attn_config.{k}", bound=b) if lin.get(k) is not None else
                               r.dim(flat) for k, flat, b in (("num_heads", "linear_num_heads", 65_536),
                                                              ("head_dim", "linear_head_dim", 1 << 20),
                                                              ("short_conv_kernel_size", "linear_conv_kernel_dim", 64)))
    r.assume("KDA prefill is taken in chunks of 64 tokens (the chunked kernels' size).")
    return MixerSpec("kda", heads, head_dim, head_dim, heads, kernel, chunk_size=64, state_dtype=state_dtype)


def _note(r: ConfigReader, mla: list[bool], own: list[bool]) -> None:
    n_mla = mla.count(True)
    shared = sum(1 for m, o in zip(mla, own) if m and not o)
    pool = r.dim("index_kpool")
    if shared:
        r.assume(f"GLM-5.3-Flash: {shared} of {n_mla} MLA layers reuse the previous layer's top-k (indexer_types "
                 "'shared'): no indexer weights, compute or index-key cache there.")
    r.assume(f"GLM-5.3-Flash IndexPool: the indexer caches one pooled key (index_head_dim) per {pool} tokens, in the "
             "KV-cache dtype, replicated on every tp chip (vLLM's Glm5NextIndexerCache: one state per index_kpool "
             "tokens); the keys and gates of the last, incomplete pool (at most index_kpool - 1 tokens a sequence) are "
             "not counted; the indexer runs whole on every tp chip, in the compute dtype, and writes its pool scores "
             "out for the top-k; a query attends to index_topk tokens plus, with index_kpool_always_select_tail, the "
             f"incomplete pool's: taken as index_topk + {pool - 1} keys once the context is that long.")
    r.assume("GLM-5.3-Flash mHC hyper-connections: the mixing projections (fp32 in transformers) are counted in the "
             "checkpoint's dtype; the final collapse is an unweighted mean over the streams (no weights, not priced); "
             "the SwiGLU clamps (swiglu_limit), KDA's bounded decay (linear_lower_bound) and the routed scaling are "
             "elementwise, not priced.")
    r.used.update(_NEUTRAL)
