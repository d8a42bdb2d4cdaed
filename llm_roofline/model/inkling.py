"""Reader of Inkling (model_type inkling_text, the text part of the wrapper inkling_mm_model: Thinking Machines'
thinkingmachines/Inkling; transformers' modular_inkling.py / modeling_inkling.py).

Every layer: an RMSNorm, attention without RoPE (q, k, v, o projections; q and k RMS-normed per head; a depthwise
causal conv of conv_kernel_size taps on k and on v after their projections, its input added back; a relative position
bias: r_proj gives each query head a state of d_rel that mixes a bank of d_rel x rel_extent profiles into one bias per
backward distance below rel_extent, added to the scores), such a conv on the attention's output, the residual add; an
RMSNorm, a dense gated MLP (a learned scalar on its output) or a MoE (routed experts of moe_intermediate_size picked by
sigmoid scores + e_score_correction_bias; n_shared_experts shared experts the router scores too, whose weights join the
softmax over the chosen ones: shared_expert_sink; a learned scalar on the weights), a conv on its output, the residual
add. layer_types 'hybrid': full attention of num_attention_heads over num_key_value_heads of head_dim, the bias over
rel_extent; 'hybrid_sliding': a window of sliding_window_size with the swa_* heads and head size, the bias over the
window. The embeddings are RMS-normed; the LM head is never tied.

Read as: attention without RoPE with q/k norms, AttentionSpec.rel_dim / rel_extent / kv_conv, LayerGroup.out_conv,
FfnSpec.router_sink / global_scale, ModelSpec.embed_norm: every parameter transformers builds. Not priced (no
weights): the log scaling of the full layers' queries and biases, the muP division of the last hidden state.

The checkpoint's config.json states sconv_kernel_size, model_max_length, local_layer_ids, dense_mlp_idx and
dense_intermediate_size (then intermediate_size is the experts' width); InklingTextConfig's own keys
(conv_kernel_size, max_position_embeddings, layer_types, mlp_layer_types, intermediate_size beside
moe_intermediate_size) are read alike.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError
from .key_names import N_EXPERTS_KEYS, TOP_K_KEYS
from .layers import activation, group_layers, heads_kind
from .reader import ConfigReader, as_int, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup

INKLING_TYPES = ("inkling_text",)
_TYPES = ("hybrid", "hybrid_sliding")
# what InklingTextModel builds whatever these say (other implementations build none when false)
_BUILT = ("use_sconv", "use_embed_norm", "shared_expert_sink", "use_gate_bias", "use_global_scale")
_NEUTRAL = ("route_scale", "rms_norm_eps_moe_gate", "logits_mup_width_multiplier", "log_scaling_n_floor",
            "log_scaling_alpha", "gate_activation", "norm_after_topk", "chain_hidden_post_norm",
            "mtp_hidden_states_first", "mtp_local_layer_ids", "number_of_conv_states", "moe_intermediate_size")


def inkling_groups(r: ConfigReader, d_model: int, n_layers: int) -> tuple[LayerGroup, ...]:
    """The layer groups: one per distinct (full or sliding attention, dense or MoE), in order of first occurrence,
    each with the output convs."""
    for key in _BUILT:
        r.switch(key, True, "InklingTextModel builds it regardless, where other implementations leave it out; "
                 "refusing rather than guessing")
    sliding, dense = _sliding_layers(r, n_layers), _dense_layers(r, n_layers)
    kernel = r.dim("conv_kernel_size", "sconv_kernel_size")
    d_ff, d_expert = _widths(r, any(dense), not all(dense))
    attn = {s: _attention(r, s, kernel) for s in dict.fromkeys(sliding)}
    ffn = {x: _ffn(r, x, d_ff, d_expert) for x in dict.fromkeys(dense)}
    groups = group_layers([(attn[s], ffn[x]) for s, x in zip(sliding, dense, strict=True)], False, 2)
    _note(r, kernel)
    return tuple(replace(g, out_conv=kernel) for g in groups)


def inkling_tied(r: ConfigReader) -> bool:
    """InklingForCausalLM never ties its LM head to the embedding (_tied_weights_keys is empty)."""
    if r.boolean("tie_word_embeddings"):
        r.assume("tie_word_embeddings true: InklingForCausalLM never ties its LM head (the checkpoint holds embed "
                 "and unembed apart): counted untied.")
    return False


def _sliding_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """layer_types ('hybrid' / 'hybrid_sliding'), else local_layer_ids (the sliding layers' indices), else
    InklingTextConfig's default: every 6th layer full, the others sliding."""
    types = r.str_list("layer_types", n_layers, allowed=_TYPES)
    if types is not None:
        r.used.add("local_layer_ids")  # what layer_types was derived from
        return [t == "hybrid_sliding" for t in types]
    local = r.int_list("local_layer_ids")
    if local is None:
        r.assume("layer_types and local_layer_ids absent from the config: InklingTextConfig's default, every 6th "
                 "layer full attention, the others sliding.")
        return [(i + 1) % 6 != 0 for i in range(n_layers)]
    bad = next((i for i in local if i >= n_layers), None)
    if bad is not None:
        raise ModelConfigError(f"local_layer_ids lists {bad}, which is not a layer index (0 to {n_layers - 1})")
    local_set = set(local)
    return [i in local_set for i in range(n_layers)]


def _dense_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """mlp_layer_types ('dense' / 'sparse'), else the first dense_mlp_idx layers dense (the checkpoint's key; 0 in
    InklingTextConfig: every layer sparse)."""
    types = r.str_list("mlp_layer_types", n_layers, allowed=("dense", "sparse"))
    if types is None:
        first = r.count("dense_mlp_idx")
        if first > n_layers:
            raise ModelConfigError(f"dense_mlp_idx ({first}) exceeds num_hidden_layers ({n_layers})")
        return [i < first for i in range(n_layers)]
    r.used.add("dense_mlp_idx")
    return [t == "dense" for t in types]


def _widths(r: ConfigReader, dense: bool, sparse: bool) -> tuple[int, int]:
    """(dense MLP width, expert width): dense_intermediate_size and intermediate_size in the checkpoint's config
    (InklingTextConfig's __post_init__ moves them), else intermediate_size and moe_intermediate_size."""
    if r.stated("dense_intermediate_size"):
        keys = ("dense_intermediate_size", "intermediate_size")
    else:
        keys = ("intermediate_size", "moe_intermediate_size")
    return (r.dim(keys[0]) if dense else 0), (r.dim(keys[1]) if sparse else 0)


def _attention(r: ConfigReader, sliding: bool, kernel: int) -> AttentionSpec:
    """A full ('hybrid') or sliding ('hybrid_sliding': the swa_* shape, the bias over the window) layer's attention."""
    prefix = "swa_" if sliding else ""
    heads, n_kv = r.dim(prefix + "num_attention_heads"), r.dim(prefix + "num_key_value_heads")
    require_divides(heads, prefix + "num_attention_heads", n_kv, prefix + "num_key_value_heads")
    head_dim = r.dim(prefix + "head_dim")
    window = r.dim("sliding_window_size", "sliding_window") if sliding else None
    return AttentionSpec(heads_kind(heads, n_kv), heads, n_kv, head_dim, head_dim, sliding_window=window, rope=False,
                         qk_norm=True, rel_dim=r.dim("d_rel"), rel_extent=window or r.dim("rel_extent"),
                         kv_conv=kernel)


def _ffn(r: ConfigReader, dense: bool, d_ff: int, d_expert: int) -> FfnSpec:
    """A dense gated MLP, or the MoE: routed experts, n_shared_experts shared ones (one MLP of n x d_expert) the
    router scores too, e_score_correction_bias read as the router's bias."""
    act = activation(r)
    if dense:
        return FfnSpec("dense", d_ff, True, act, global_scale=True)
    n_experts, top_k = r.dim(*N_EXPERTS_KEYS), r.dim(*TOP_K_KEYS)
    if top_k > n_experts:
        raise ModelConfigError(f"num_experts_per_tok ({top_k}) exceeds n_routed_experts ({n_experts})")
    # InklingTopkRouter slices its logits at -n_shared_experts: 0 is refused (r.dim reads a stated 0 as none)
    key = "n_shared_experts"
    shared = r.count(key, allow_zero=False) if r.stated(key) else r.dim(key)
    return FfnSpec("moe", 0, True, act, n_experts=n_experts, top_k=top_k, d_expert=d_expert,
                   d_shared=shared * d_expert, router_bias=True, router_sink=shared, global_scale=True)


def _note(r: ConfigReader, kernel: int) -> None:
    r.used.update(_NEUTRAL)
    r.assume("Inkling: no RoPE; the relative position bias is priced as r_proj's columns in qkv_proj, a GEMM of each "
             "head's state with the bank of profiles writing a (tokens, heads, rel_extent) table, and the attention "
             "core's read of it; the log scaling of the full layers' queries and biases and the muP division of the "
             "last hidden state are elementwise passes, not priced.")
    r.assume(f"Inkling's four short convs a layer (on k, on v, on the attention's and the MLP's outputs; {kernel} "
             f"taps) keep their last {kernel - 1} inputs per sequence, counted with the recurrent state in the "
             "KV-cache dtype (transformers keeps them, and the conv weights, in fp32; the weights are counted in the "
             "checkpoint dtype).")
    r.assume("Inkling's router also scores the shared experts (shared_expert_sink): their weight scales the shared "
             "MLP's output, priced as an ungated shared MLP; e_score_correction_bias, a buffer in transformers, is "
             "counted as the router's bias.")
    unpadded = r.get("unpadded_vocab_size")
    if unpadded is not None:
        r.assume(f"unpadded_vocab_size {as_int(unpadded, 'unpadded_vocab_size', bound=1 << 24)}: the LM head is "
                 "counted and priced at vocab_size rows, as InklingForCausalLM builds it; the logits past "
                 "unpadded_vocab_size are dropped.")
    mtp = r.count("num_mtp_layers")
    if mtp:
        r.assume(f"num_mtp_layers={mtp}: the multi-token-prediction layers are not loaded by InklingForCausalLM "
                 "(model.mtp.* ignored) and are not counted.")
