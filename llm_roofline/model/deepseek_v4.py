"""Reader of DeepSeek-V4 (model_type deepseek_v4; transformers' modeling_deepseek_v4.py).

Every layer: hyper-connections over hc_mult residual streams around attention and around a MoE (routed experts of
moe_intermediate_size, one shared expert; the first num_hash_layers route by a token-id table, with the same weights).
Attention is shared-KV MQA (one head_dim vector per token is key and value) over a sliding window, plus, per layer
type, a compressed KV branch: CSA (compress rate 4, overlapping windows, a lightning indexer keeping index_topk
compressed entries per query) or HCA (rate 128, every compressed entry); sliding_attention layers have the window only.
"""

from __future__ import annotations

from ..errors import ModelConfigError, shown
from .reader import ConfigReader, require_divides
from .spec import AttentionSpec, CompressorSpec, FfnSpec, LayerGroup

_TYPES = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
_SHORT = {"sliding_attention": "swa", "compressed_sparse_attention": "csa", "heavily_compressed_attention": "hca"}


def deepseek_v4_groups(r: ConfigReader, d_model: int, n_layers: int) -> tuple[tuple[LayerGroup, ...], int]:
    """The LayerGroups (one per attention type, in order of first occurrence) and the parameters of the final
    hyper-connection head (hc_mult x hc_mult*d projection, hc_mult biases, one scale)."""
    types = _layer_types(r, n_layers)
    hc = r.dim("hc_mult")
    ffn = _moe(r)
    groups = []
    for t in dict.fromkeys(types):
        attn = _attention(r, d_model, t)
        groups.append(LayerGroup(f"{_SHORT[t]}.moe", types.count(t), attn, ffn, hc_mult=hc))
    _read_and_note(r, n_layers)
    return tuple(groups), hc * hc * d_model + hc + 1


def _rates(r: ConfigReader) -> dict[str, int]:
    """compress_rates (a dict by layer type), else the legacy compress_rate_csa / compress_rate_hca, else 4 and 128."""
    rates = r.typed("compress_rates", (dict,), "an object of layer type -> rate", None) or {}
    bad = next((k for k in rates if k not in _TYPES[1:]), None)
    if bad is not None:
        raise ModelConfigError(f"compress_rates key {shown(bad)} is not compressed_sparse_attention or "
                               "heavily_compressed_attention")
    out = {}
    for t, legacy, default in ((_TYPES[1], "compress_rate_csa", 4), (_TYPES[2], "compress_rate_hca", 128)):
        value = rates.get(t, r.get(legacy, default=default))
        out[t] = _positive(value, f"compress_rates[{t}]")
    return out


def _positive(value, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 20:
        raise ModelConfigError(f"{key} must be a positive integer, got {shown(value)}")
    return value


def _layer_types(r: ConfigReader, n_layers: int) -> list[str]:
    """layer_types; else compress_ratios per layer (0: sliding window only, else the CSA or HCA rate; the hub config
    lists the MTP layers after the n_layers of the model: they are not read); else transformers' default (two HCA
    layers, then CSA and HCA alternating)."""
    rates = _rates(r)
    types = r.str_list("layer_types", n_layers, allowed=_TYPES)
    if types is not None:
        return types
    ratios = r.int_list("compress_ratios")
    if ratios is None:
        r.assume("DeepSeek-V4: neither layer_types nor compress_ratios: transformers' default schedule (two HCA layers, "
                 "then CSA and HCA alternating).")
        return [_TYPES[2]] * min(n_layers, 2) + [_TYPES[1] if i % 2 else _TYPES[2] for i in range(max(n_layers - 2, 0))]
    if len(ratios) < n_layers:
        raise ModelConfigError(f"compress_ratios must list at least one entry per layer ({n_layers}), got {len(ratios)}")
    by_rate = {0: _TYPES[0], rates[_TYPES[1]]: _TYPES[1], rates[_TYPES[2]]: _TYPES[2]}
    bad = next((x for x in ratios[:n_layers] if x not in by_rate), None)
    if bad is not None:
        raise ModelConfigError(f"compress_ratios entry {bad} is not 0 or a compress rate ({', '.join(map(str, rates.values()))})")
    return [by_rate[x] for x in ratios[:n_layers]]


def _attention(r: ConfigReader, d_model: int, layer_type: str) -> AttentionSpec:
    """DeepseekV4Attention: q_a (d -> q_lora_rank, RMSNorm), q_b (-> heads x head_dim), kv (d -> head_dim, RMSNorm),
    per-head sinks, o_a (o_groups blocks -> o_lora_rank) and o_b (-> d); CSA / HCA add their compressor."""
    heads, head_dim = r.dim("num_attention_heads"), r.dim("head_dim")
    if r.dim("num_key_value_heads") != 1:
        raise ModelConfigError("DeepSeek-V4 attention has one shared key/value head (num_key_value_heads must be 1)")
    groups = r.dim("o_groups")
    require_divides(heads, "num_attention_heads", groups, "o_groups")
    rope = r.dim("qk_rope_head_dim", required=False) or int(head_dim * _rotary_factor(r))
    compressor = None
    if layer_type != _TYPES[0]:
        csa = layer_type == _TYPES[1]
        rate = _rates(r)[layer_type]
        compressor = CompressorSpec(rate, overlap=csa, index_topk=r.dim("index_topk") if csa else 0,
                                    index_n_heads=r.dim("index_n_heads") if csa else 0,
                                    index_head_dim=r.dim("index_head_dim") if csa else 0)
    return AttentionSpec("mqa", heads, 1, head_dim, head_dim, sliding_window=r.dim("sliding_window"), sinks=True,
                         q_lora_rank=r.dim("q_lora_rank"), qk_rope_head_dim=rope, kv_shared=True, o_groups=groups,
                         o_lora_rank=r.dim("o_lora_rank"), compressor=compressor)


def _rotary_factor(r: ConfigReader) -> float:
    value = r.get("partial_rotary_factor", default=64 / 512)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ModelConfigError(f"partial_rotary_factor must be a number in (0, 1], got {shown(value)}")
    return float(value)


def _moe(r: ConfigReader) -> FfnSpec:
    """DeepseekV4SparseMoeBlock: a router (n_routed_experts x d; its correction bias and the hash table are buffers),
    gated experts of moe_intermediate_size, a shared gated MLP of the same width."""
    n_experts, top_k = r.dim("n_routed_experts"), r.dim("num_experts_per_tok")
    if top_k > n_experts:
        raise ModelConfigError(f"num_experts_per_tok ({top_k}) exceeds n_routed_experts ({n_experts})")
    d_expert = r.dim("moe_intermediate_size")
    shared = r.count("n_shared_experts", default=1)
    return FfnSpec("moe", 0, True, str(r.get("hidden_act", default="silu")), n_experts=n_experts, top_k=top_k,
                   d_expert=d_expert, d_shared=shared * d_expert)


def _read_and_note(r: ConfigReader, n_layers: int) -> None:
    hashed = r.str_list("mlp_layer_types", n_layers)
    n_hash = hashed.count("hash_moe") if hashed else r.count("num_hash_layers", default=3)
    r.assume(f"DeepSeek-V4: {min(n_hash, n_layers)} hash-routed MoE layers (experts chosen from a token-id table) cost "
             "as the learned-router layers: the router's scores still weight the experts.")
    r.assume("DeepSeek-V4 compressed attention: each CSA / HCA layer caches, besides its sliding window of "
             "uncompressed keys (one head_dim vector per token, key = value), one head_dim entry per compress rate of "
             "tokens (CSA: + one index key), in the KV-cache dtype, replicated on every tp chip (one KV head); the "
             "compressor's buffer of at most rate - 1 projected tokens per sequence is not counted; attention over the "
             "window and over the compressed entries are two cores (each reads Q and writes O); the compressed "
             "entries seen by a query are taken as context / rate (not rounded down to whole windows).")
    r.assume("DeepSeek-V4 hyper-connections: the mixing projections (fp32 in DeepSeek's checkpoint) are counted in the "
             "checkpoint's dtype; the final hyper-connection head (hc x hc*d) is counted in the weights, its compute "
             "is not modelled.")
    r.used.update(("hc_sinkhorn_iters", "hc_eps", "swiglu_limit", "compress_rope_theta", "num_hash_layers",
                   "mlp_layer_types", "partial_rotary_factor", "compress_ratios", "compress_rates"))
