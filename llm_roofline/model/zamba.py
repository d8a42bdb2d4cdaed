"""Readers of Zamba2 and Zamba (model_types zamba2, zamba; transformers' modeling_zamba2.py, modeling_zamba.py).

Every layer is a Mamba block (norm -> mixer -> residual): Mamba-2 (Zamba2), or Zamba's multi-head Mamba-1 (per-head
x_proj and dt_proj: the same weights and FLOPs as one Mamba-1 mixer over the inner channels). At the hybrid layers
(layers_block_type 'hybrid') a shared transformer block runs first: the hidden state concatenated with the embeddings
(2 x hidden), RMSNorm, attention from that width (head_dim = 2 x hidden / heads), RMSNorm, gated MLP; Zamba2 stores
num_mem_blocks such blocks and reuses them in turn (ABAB...), Zamba one. Each hybrid layer holds its own linear
projection (hidden x hidden), whose output joins the Mamba block's input, and in Zamba2 its own LoRA adapters (on the
MLP's gate_up, and on q, k, v with use_shared_attention_adapter).
"""

from __future__ import annotations

from ..errors import ModelConfigError, shown
from .reader import ConfigReader, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup, Matrix, MixerSpec

_BLOCK_NAMES = {"mamba": False, "linear_attention": False, "m": False, "hybrid": True, "g": True}


def zamba_groups(r: ConfigReader, d_model: int, n_layers: int, v2: bool) -> tuple[LayerGroup, ...]:
    """The Mamba blocks of every layer, and the shared block with its per-layer matrices at the hybrid layers."""
    hybrid = _hybrid_layers(r, n_layers, v2)
    if v2:  # Zamba2Config derives both (hidden / heads, heads) and its modeling code reads neither
        r.used.update(("kv_channels", "num_query_groups"))
    mixer = _mixer(r, d_model) if v2 else _mamba1_mixer(r, d_model)
    groups = [LayerGroup(mixer.kind, n_layers, AttentionSpec.none(), FfnSpec.none(), norms=1, mixer=mixer)]
    n_shared = sum(hybrid)
    if n_shared:
        copies = min(r.dim("num_mem_blocks"), n_shared) if v2 else 1
        attn, ffn, per_layer = _shared_block(r, d_model, v2)
        groups.append(LayerGroup("shared.attention.dense", n_shared, attn, ffn, norms=3, shared_copies=copies,
                                 per_layer=per_layer))
    r.assume("Zamba: the shared blocks' weights are stored once (Zamba2: num_mem_blocks copies) and read at every hybrid "
             "layer that runs them; each hybrid layer keeps its own KV cache; each layer's linear projection (and "
             "Zamba2's LoRA adapters) run replicated on every tp chip. The Mamba state per sequence (channels x state, "
             "and the conv window) is held in the KV-cache dtype.")
    r.used.update(("time_step_min", "time_step_max", "time_step_floor", "use_mem_eff_path", "use_long_context",
                   "num_logits_to_keep", "mamba_headdim", "hybrid_layer_ids", "use_associative_scan",
                   "use_mamba_kernels", "hidden_mamba_act", "attention_hidden_size", "attention_head_dim",
                   "attn_layer_period", "attn_layer_offset"))
    return tuple(groups)


def _hybrid_layers(r: ConfigReader, n_layers: int, v2: bool) -> list[bool]:
    """layers_block_type (or layer_types) of mamba / hybrid; else hybrid_layer_ids; else transformers' default
    pattern (Zamba2: Zamba2-2.7B's 54 layers; Zamba: layer 2, then every attn_layer_period-th from attn_layer_offset)."""
    names = r.str_list("layers_block_type", n_layers) or r.str_list("layer_types", n_layers)
    if names is not None:
        bad = next((n for n in names if n not in _BLOCK_NAMES), None)
        if bad is not None:
            raise ModelConfigError(f"layers_block_type entry {bad[:40]!r} is not mamba or hybrid")
        return [_BLOCK_NAMES[n] for n in names]
    ids = r.int_list("hybrid_layer_ids")
    if ids is not None:
        if any(i >= n_layers for i in ids):
            raise ModelConfigError(f"hybrid_layer_ids must be layer indices below num_hidden_layers ({n_layers})")
        return [i in ids for i in range(n_layers)]
    if not v2:
        period, offset = r.count("attn_layer_period", 6, False), r.count("attn_layer_offset", 4)
        return ([False, False, True] + [i % period == offset for i in range(max(n_layers - 3, 0))])[:n_layers]
    r.assume("Zamba2: no layers_block_type: transformers' default pattern (a hybrid layer after every 6th Mamba block).")
    pattern = [False] + ([False] * 5 + [True]) * 7 + [False] * 4 + [True] + [False] * 3 + [True] + [False] * 2
    return (pattern + [False] * n_layers)[:n_layers]


def _mixer(r: ConfigReader, d_model: int) -> MixerSpec:
    """Zamba2MambaMixer: Mamba-2 with n_mamba_heads heads of (mamba_expand x hidden) / heads, mamba_ngroups groups,
    a conv1d with bias (use_conv_bias), no projection bias unless add_bias_linear."""
    heads = r.dim("n_mamba_heads")
    inner = r.count("mamba_expand", default=2, allow_zero=False) * d_model
    require_divides(inner, "mamba_expand x hidden_size", heads, "n_mamba_heads")
    groups = r.dim("mamba_ngroups")
    require_divides(heads, "n_mamba_heads", groups, "mamba_ngroups")
    return MixerSpec("mamba2", heads, inner // heads, r.dim("mamba_d_state"), groups, r.dim("mamba_d_conv"),
                     conv_bias=r.boolean("use_conv_bias", default=True), proj_bias=r.boolean("add_bias_linear"),
                     chunk_size=r.dim("chunk_size"))


def _mamba1_mixer(r: ConfigReader, d_model: int) -> MixerSpec:
    """ZambaMambaMixer: in_proj (d -> x, z of mamba_expand x hidden), conv1d, per-head x_proj (dt_rank + 2 x state)
    and dt_proj, A and D per channel, out_proj; mamba_dt_rank 'auto' = ceil(hidden / 16)."""
    inner = r.count("mamba_expand", default=2, allow_zero=False) * d_model
    require_divides(inner, "mamba_expand x hidden_size", r.dim("n_mamba_heads"), "n_mamba_heads")
    rank = r.get("mamba_dt_rank", default="auto")
    rank = -(-d_model // 16) if rank == "auto" else rank
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 < rank <= 1 << 20:
        raise ModelConfigError(f"mamba_dt_rank must be a positive integer or 'auto', got {shown(rank)}")
    return MixerSpec("mamba1", inner, 1, r.dim("mamba_d_state"), 0, r.dim("mamba_d_conv"),
                     conv_bias=r.boolean("mamba_conv_bias", default=True), proj_bias=r.boolean("mamba_proj_bias"),
                     chunk_size=1, dt_rank=rank)


def _shared_block(r: ConfigReader, d_model: int, v2: bool) -> tuple[AttentionSpec, FfnSpec, tuple[Matrix, ...]]:
    """Zamba(2)AttentionDecoderLayer and the matrices of one hybrid layer: Zamba2's adapters of rank adapter_rank
    ((k, r) then (r, n)) and the linear projection."""
    heads = r.dim("num_attention_heads")
    width = 2 * d_model if v2 else r.dim("attention_hidden_size", required=False) or 2 * d_model
    kv = r.dim("num_key_value_heads", required=False) or heads
    require_divides(heads, "num_attention_heads", kv, "num_key_value_heads")
    head_dim = None if v2 else r.dim("attention_head_dim", required=False)
    if head_dim is None:
        require_divides(width, "the attention input width (2 x hidden_size)", heads, "num_attention_heads")
        head_dim = width // heads
    kind = "mqa" if kv == 1 and heads > 1 else "mha" if kv == heads else "gqa"
    attn = AttentionSpec(kind, heads, kv, head_dim, head_dim, rope=v2 and r.boolean("use_mem_rope"), input_width=width)
    d_ff = r.dim("intermediate_size", required=False) or 4 * d_model
    if v2 and r.boolean("add_bias_linear"):
        raise ModelConfigError("add_bias_linear=true: biases on Zamba2's shared MLP are not modelled")
    ffn = FfnSpec("dense", d_ff, True, str(r.get("hidden_act", default="gelu")))
    if not v2:
        return attn, ffn, (Matrix("shared.linear", d_model, d_model),)
    rank = r.dim("adapter_rank")
    mats = [Matrix("shared.adapter.gate_up.down", d_model, rank), Matrix("shared.adapter.gate_up.up", rank, 2 * d_ff)]
    if r.boolean("use_shared_attention_adapter"):
        if kv != heads:
            raise ModelConfigError("use_shared_attention_adapter needs num_key_value_heads = num_attention_heads "
                                   "(the adapters add 2 x hidden_size to k and v)")
        mats += [Matrix("shared.adapter.qkv.down", width, rank, count=3), Matrix("shared.adapter.qkv.up", rank, width,
                                                                                 count=3)]
    return attn, ffn, tuple(mats) + (Matrix("shared.linear", d_model, d_model),)
