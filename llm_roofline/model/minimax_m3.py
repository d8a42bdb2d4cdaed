"""Reader of MiniMax-M3's text tower (model_type minimax_m3_vl_text, the text_config of minimax_m3_vl; transformers'
configuration_minimax_m3_vl.py and modular_minimax_m3_vl.py).

Every layer: MiniMax-M2's GQA (q, k, v, o without bias) with q/k RMSNorms per head and partial RoPE (rotary_dim), then a
dense MLP of dense_intermediate_size or experts of intermediate_size beside one shared expert of
shared_intermediate_size (a sigmoid router with e_score_correction_bias), per mlp_layer_types (the hub's moe_layer_freq
flags; all sparse without either). layer_types' minimax_m3_sparse layers (the hub's sparse_attention_freq flags; none
without either) run MiniMax Sparse Attention: an indexer (q_proj: d -> index_n_heads x index_head_dim, k_proj: d ->
index_head_dim, q and k RMSNorms, RoPE; no value branch, no head weights) scores every cached index key with each head,
max-pools the scores over blocks of index_block_size keys and keeps index_topk_blocks blocks per head, the
index_local_blocks blocks ending at the query among them; index heads map to KV groups, so each query head attends to
index_topk_blocks x index_block_size keys. The index key (index_head_dim) is cached per token beside K and V.
Released: MiniMaxAI/MiniMax-M3 (3 full-attention dense layers, 57 sparse MoE layers; its hub config keeps the index
settings in sparse_attention_config under their older names, which transformers reads and lets override the flat keys).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .key_names import HEADS_KEYS
from .traits import Architecture
from .layers import attention_spec, ffn_spec, group_layers
from .reader import ConfigReader, as_int, bound_of, require_divides
from .spec import LayerGroup

MINIMAX_M3_TYPES = ("minimax_m3_vl_text",)
_TYPES = ("full_attention", "minimax_m3_sparse")
_WHERE = "(model_type=minimax_m3_vl_text)"
# transformers' flat keys and their names in the hub's sparse_attention_config (which wins when it states them)
_LEGACY = {"index_n_heads": "sparse_num_index_heads", "index_head_dim": "sparse_index_dim",
           "index_block_size": "sparse_block_size", "index_topk_blocks": "sparse_topk_blocks",
           "index_local_blocks": "sparse_local_block"}
_NEUTRAL = ("use_gemma_norm", "scoring_func", "swiglu_alpha", "swiglu_limit", "routed_scaling_factor", "rotary_dim",
            "partial_rotary_factor", "n_shared_experts", "first_k_dense_replace", "use_mtp", "num_mtp_modules")


def minimax_m3_groups(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int) -> tuple[LayerGroup, ...]:
    """The layer groups: full or sparse attention, dense or MoE, named so ('full.dense', 'sparse.moe')."""
    _check_attention(r)
    sparse_cfg = r.typed("sparse_attention_config", (dict,), "an object of sparse-attention settings", {})
    sparse = _sparse_layers(r, sparse_cfg, n_layers)
    moe = _moe_layers(r, n_layers)
    full = attention_spec(r, arch, d_model, None, True)
    attn = {False: full}
    if any(sparse):
        _check_sparse_options(sparse_cfg, sparse)
        attn[True] = replace(full, **_indexer(r, sparse_cfg, full.n_heads))
    ffn = {m: ffn_spec(r, arch, d_model, m, 0 if m else r.dim(*arch.ffn_keys)) for m in set(moe)}
    groups = group_layers([(attn[s], ffn[m]) for s, m in zip(sparse, moe, strict=True)], False, arch.norms)
    _note(r, attn.get(True), sparse, sparse_cfg)
    return tuple(replace(g, name=f"{'sparse' if g.attention.index_topk else 'full'}.{g.ffn.kind}") for g in groups)


def _check_attention(r: ConfigReader) -> None:
    """The hub config's attention switches that transformers' MiniMaxM3VLAttention does not build otherwise."""
    r.switch("attention_output_gate", False, "an output gate on the attention is not built by transformers' "
             "MiniMaxM3VLAttention and is not read")
    r.switch("qk_norm_type", "per_head", "only per-head q/k norms ('per_head', what transformers builds) are read")
    r.used.update(_NEUTRAL)


def _sparse_layers(r: ConfigReader, sparse_cfg: dict, n_layers: int) -> list[bool]:
    """Which layers run the indexer: layer_types' minimax_m3_sparse, else sparse_attention_config's
    sparse_attention_freq flags, else none (MiniMaxM3VLTextConfig)."""
    types = r.str_list("layer_types", n_layers, allowed=_TYPES)
    if types is not None:
        return [t == "minimax_m3_sparse" for t in types]
    return [bool(f) for f in _flags(sparse_cfg, "sparse_attention_freq", n_layers, [0] * n_layers)]


def _flags(sparse_cfg: dict, key: str, n_layers: int, default: list[int]) -> list[int]:
    """A per-layer list of 0 / 1 in sparse_attention_config."""
    flags = sparse_cfg.get(key)
    if flags is None:
        return default
    if not isinstance(flags, list) or len(flags) != n_layers:
        raise ModelConfigError(f"sparse_attention_config.{key} must list a 0 or 1 per layer ({n_layers})")
    return [as_int(v, f"sparse_attention_config.{key}[{i}]", allow_zero=True, bound=1) for i, v in enumerate(flags)]


def _check_sparse_options(sparse_cfg: dict, sparse: list[bool]) -> None:
    """sparse_attention_config's options that transformers ignores (it builds max-pooled scores, no start blocks and
    no value branch): the released values are read, others refused."""
    score = sparse_cfg.get("sparse_score_type", "max")
    if score != "max":
        raise UnsupportedArchitectureError(f"sparse_attention_config.sparse_score_type={shown(score)} {_WHERE}: "
                                           "only block scores pooled by their maximum ('max') are read")
    init = as_int(sparse_cfg.get("sparse_init_block", 0), "sparse_attention_config.sparse_init_block",
                  allow_zero=True)
    if init:
        raise UnsupportedArchitectureError(f"sparse_attention_config.sparse_init_block={init} {_WHERE}: blocks at the "
                                           "sequence start kept for every query are not read")
    off = _flags(sparse_cfg, "sparse_disable_index_value", len(sparse), [1] * len(sparse))
    on = next((i for i, (s, f) in enumerate(zip(sparse, off)) if s and not f), None)
    if on is not None:
        raise UnsupportedArchitectureError(f"sparse_attention_config.sparse_disable_index_value[{on}]=0 {_WHERE}: the "
                                           "indexer's value and output branch is not read (transformers builds none)")
    use = sparse_cfg.get("use_sparse_attention", True)
    if not isinstance(use, bool):
        raise ModelConfigError(f"sparse_attention_config.use_sparse_attention must be true or false, got {shown(use)}")
    if not use and any(sparse):  # it was type-checked, then the sparse layers priced with their indexer regardless
        raise UnsupportedArchitectureError(f"sparse_attention_config.use_sparse_attention=false {_WHERE} beside "
                                           "minimax_m3_sparse layers: whether they then attend to every key is not "
                                           "read; refusing rather than guessing")


def _indexer(r: ConfigReader, sparse_cfg: dict, n_heads: int) -> dict:
    """The indexer's dims on a sparse layer: index_topk (blocks kept), index_block_size, index_n_heads,
    index_head_dim; sparse_attention_config's names win over the flat keys, as in MiniMaxM3VLTextConfig."""
    dims = {k: _index_value(r, k, sparse_cfg) for k in _LEGACY}
    require_divides(n_heads, HEADS_KEYS[0], dims["index_n_heads"], "index_n_heads")
    return dict(index_topk=dims["index_topk_blocks"], index_block_size=dims["index_block_size"],
                index_n_heads=dims["index_n_heads"], index_head_dim=dims["index_head_dim"])


def _index_value(r: ConfigReader, flat: str, sparse_cfg: dict) -> int:
    legacy, zero = _LEGACY[flat], flat == "index_local_blocks"
    if sparse_cfg.get(legacy) is not None:
        r.used.add(flat)
        return as_int(sparse_cfg[legacy], f"sparse_attention_config.{legacy}", allow_zero=zero, bound=bound_of(flat))
    return r.count(flat, default=1) if zero else r.dim(flat)


def _moe_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """mlp_layer_types ('sparse' / 'dense'), else the hub's moe_layer_freq flags, else every layer MoE."""
    r.used.add("first_k_dense_replace")  # the hub config's, what moe_layer_freq was written from
    types = r.str_list("mlp_layer_types", n_layers, allowed=("dense", "sparse"))
    if types is not None:
        r.used.add("moe_layer_freq")
        return [t == "sparse" for t in types]
    flags = r.int_list("moe_layer_freq", n_layers)
    return [True] * n_layers if flags is None else [bool(f) for f in flags]


def _note(r: ConfigReader, sparse_attn, sparse: list[bool], sparse_cfg: dict) -> None:
    rotary = r.count("rotary_dim")
    if rotary:
        r.assume(f"rotary_dim={rotary}: RoPE's elementwise pass is counted over whole heads (a small upper bound).")
    mtp = r.count("num_mtp_modules")
    if mtp:
        r.assume(f"num_mtp_modules={mtp}: MiniMax-M3's multi-token-prediction modules are not loaded by transformers "
                 "(mtp.* keys ignored) and are not counted.")
    if sparse_attn is None:
        return
    a, local = sparse_attn, _index_value(r, "index_local_blocks", sparse_cfg)
    if local > a.index_topk:
        raise ModelConfigError(f"index_local_blocks ({local}) exceeds index_topk_blocks ({a.index_topk}): the local "
                               "blocks are among the blocks each query keeps")
    r.assume(f"MiniMax Sparse Attention: {sum(sparse)} of {len(sparse)} layers (minimax_m3_sparse) attend per KV group "
             f"to the {a.index_topk} blocks of {a.index_block_size} keys ({a.index_keys:,} keys) their indexer picks "
             f"({a.index_n_heads} heads of {a.index_head_dim}; the {local} local block(s) up to the query among them: "
             f"an upper bound, the query's own block is partial); its key ({a.index_head_dim} per token) is cached in "
             "the KV-cache dtype beside K and V; the indexer runs whole on every tp chip, its scores max-pooled per "
             f"block in the scoring kernel; prefill reads min(context, {a.index_keys:,}) cached keys per sequence (a "
             "lower bound: each query and KV group picks its own).")
