"""Reader of Zamba2 (model_type zamba2; transformers' modeling_zamba2.py).

Every layer is a Mamba-2 block (norm -> mixer -> residual). At the hybrid layers (layers_block_type 'hybrid') a shared
transformer block runs first: the hidden state concatenated with the embeddings (2 x hidden), RMSNorm, attention from
that width (head_dim = 2 x hidden / heads), RMSNorm, gated MLP; num_mem_blocks such blocks are stored and reused in
turn (ABAB...). Each hybrid layer holds its own LoRA adapters (on the MLP's gate_up, and on q, k, v with
use_shared_attention_adapter) and a linear projection (hidden x hidden), whose output joins the Mamba block's input.
"""

from __future__ import annotations

from ..errors import ModelConfigError
from .reader import ConfigReader, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup, Matrix, MixerSpec

_BLOCK_NAMES = {"mamba": False, "linear_attention": False, "m": False, "hybrid": True, "g": True}


def zamba2_groups(r: ConfigReader, d_model: int, n_layers: int) -> tuple[LayerGroup, ...]:
    """The Mamba-2 blocks of every layer, and the shared block with its per-layer matrices at the hybrid layers."""
    hybrid = _hybrid_layers(r, n_layers)
    mixer = _mixer(r, d_model)
    groups = [LayerGroup("mamba2", n_layers, AttentionSpec.none(), FfnSpec.none(), norms=1, mixer=mixer)]
    n_shared = sum(hybrid)
    if n_shared:
        copies = min(r.dim("num_mem_blocks"), n_shared)
        attn, ffn, per_layer = _shared_block(r, d_model)
        groups.append(LayerGroup("shared.attention.dense", n_shared, attn, ffn, norms=3, shared_copies=copies,
                                 per_layer=per_layer))
    r.assume("Zamba2: the shared blocks' weights are stored once (num_mem_blocks copies) and read at every hybrid layer "
             "that runs them; each hybrid layer keeps its own KV cache; the LoRA adapters and the linear projection of "
             "each layer run replicated on every tp chip.")
    r.used.update(("time_step_min", "time_step_max", "time_step_floor", "use_mem_eff_path", "use_long_context",
                   "num_logits_to_keep", "mamba_headdim", "hybrid_layer_ids"))
    return tuple(groups)


def _hybrid_layers(r: ConfigReader, n_layers: int) -> list[bool]:
    """layers_block_type (or layer_types) of mamba / hybrid; else hybrid_layer_ids; else transformers' default
    pattern (Zamba2-2.7B's 54 layers)."""
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


def _shared_block(r: ConfigReader, d_model: int) -> tuple[AttentionSpec, FfnSpec, tuple[Matrix, ...]]:
    """Zamba2AttentionDecoderLayer and the matrices of one hybrid layer: adapters of rank adapter_rank ((k, r) then
    (r, n)) and the linear projection."""
    heads, width = r.dim("num_attention_heads"), 2 * d_model
    require_divides(width, "2 x hidden_size", heads, "num_attention_heads")
    kv = r.dim("num_key_value_heads", required=False) or heads
    require_divides(heads, "num_attention_heads", kv, "num_key_value_heads")
    head_dim = width // heads
    kind = "mqa" if kv == 1 and heads > 1 else "mha" if kv == heads else "gqa"
    attn = AttentionSpec(kind, heads, kv, head_dim, head_dim, rope=r.boolean("use_mem_rope"), input_width=width)
    d_ff = r.dim("intermediate_size", required=False) or 4 * d_model
    if bias := r.boolean("add_bias_linear"):
        raise ModelConfigError(f"add_bias_linear={bias}: biases on Zamba2's shared MLP are not modelled")
    ffn = FfnSpec("dense", d_ff, True, str(r.get("hidden_act", default="gelu")))
    rank = r.dim("adapter_rank")
    mats = [Matrix("shared.adapter.gate_up.down", d_model, rank), Matrix("shared.adapter.gate_up.up", rank, 2 * d_ff)]
    if r.boolean("use_shared_attention_adapter"):
        if kv != heads:
            raise ModelConfigError("use_shared_attention_adapter needs num_key_value_heads = num_attention_heads "
                                   "(the adapters add 2 x hidden_size to k and v)")
        mats += [Matrix("shared.adapter.qkv.down", width, rank, count=3), Matrix("shared.adapter.qkv.up", rank, width,
                                                                                 count=3)]
    return attn, ffn, tuple(mats) + (Matrix("shared.linear", d_model, d_model),)
