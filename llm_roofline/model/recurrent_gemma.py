"""Reader of RecurrentGemma (model_type recurrent_gemma, Google's Griffin: transformers'
configuration_recurrent_gemma.py and modeling_recurrent_gemma.py; Google's reference, google-deepmind/recurrentgemma).

Every layer: RMSNorm -> a temporal block -> residual -> RMSNorm -> a gated GELU MLP (gate, up and down of
intermediate_size / 2, each with a bias) -> residual. The temporal blocks cycle through block_types (the hub's
checkpoints, saved by transformers 4.40, name the list _block_types; default recurrent, recurrent, attention):

- 'recurrent' (RecurrentGemmaRecurrentBlock), read as MixerSpec 'rglru': linear_y (d -> lru_width, GELU: the output
  gate) and linear_x (d -> lru_width), both with biases; x through a depthwise causal conv of conv1d_width taps (with
  bias); the RG-LRU: an input gate i and a recurrence gate r, each sigmoid(x W + b) with W block-diagonal over
  num_attention_heads blocks of lru_width / heads channels; a = exp(-8 r softplus(L)) with L (recurrent_param) one per
  channel; h = a h + sqrt(1 - a^2) (i x); then h * y through linear_out (lru_width -> d, with bias). Per sequence it
  keeps h (lru_width values, in float32) and the conv's last conv1d_width - 1 inputs.
- 'attention' (RecurrentGemmaAttention): local attention over attention_window_size tokens with num_key_value_heads
  KV heads (1 in the checkpoints: MQA), head_dim = hidden_size / num_attention_heads, RoPE on partial_rotary_factor of
  each head; q, k, v with attention_bias, o_proj always with a bias.

The embeddings are scaled by sqrt(hidden_size); the LM head is tied and its logits soft-capped (tanh at
logits_soft_cap). vLLM does not serve the model: the state dtypes are the reference's.
"""

from __future__ import annotations

from ..errors import ModelConfigError, shown
from .key_names import HEADS_KEYS
from .traits import Architecture
from .layers import attention_spec, ffn_spec
from .reader import ConfigReader, as_int, require_divides
from .spec import AttentionSpec, FfnSpec, MixerSpec

_BLOCK_KEYS = ("block_types", "_block_types")
_BLOCKS = ("recurrent", "attention")
_NEUTRAL = ("logits_soft_cap", "embeddings_scale_by_sqrt_dim", "partial_rotary_factor", "rope_parameters",
            "rope_theta", "w_init_variance_scale", "final_w_init_variance_scale", "attention_dropout")


def recurrent_gemma_layers(r: ConfigReader, arch: Architecture, d_model: int, n_layers: int,
                           state_dtype: str) -> list[tuple[AttentionSpec, MixerSpec | None, FfnSpec]]:
    """(attention, mixer, MLP) of each layer: the RG-LRU block (its state in `state_dtype`) or local attention."""
    kinds = _block_kinds(r, n_layers)
    heads = r.dim(*HEADS_KEYS)
    require_divides(d_model, "hidden_size", heads, "num_attention_heads")
    stated = r.stated("head_dim")
    if stated is not None and as_int(r.raw[stated], stated) != d_model // heads:
        raise ModelConfigError(f"head_dim ({r.raw[stated]}) must equal hidden_size / num_attention_heads "
                               f"({d_model // heads}): RecurrentGemmaConfig derives it so")
    d_ff = r.dim("intermediate_size")
    if d_ff % 2:
        raise ModelConfigError(f"intermediate_size ({d_ff}) must be even: RecurrentGemma's gate, up and down "
                               "matrices are intermediate_size / 2 wide")
    mlp = ffn_spec(r, arch, d_model, False, d_ff // 2)
    attn = attention_spec(r, arch, d_model, r.dim("attention_window_size", "sliding_window"), rope=True) \
        if "attention" in kinds else None
    mixer = _rglru(r, d_model, heads, state_dtype) if "recurrent" in kinds else None
    _note(r)
    return [(AttentionSpec.none(), mixer, mlp) if k == "recurrent" else (attn, None, mlp) for k in kinds]


def _block_kinds(r: ConfigReader, n_layers: int) -> list[str]:
    """block_types (or the hub's _block_types) cycled over the layers, as RecurrentGemmaConfig.layers_block_type."""
    if r.get("layer_types") is not None:
        raise ModelConfigError("layer_types is not a RecurrentGemma key (its layers cycle through block_types; "
                               "RecurrentGemmaConfig derives layer_types and cannot be given them)")
    stated = [k for k in _BLOCK_KEYS if r.raw.get(k) is not None]
    if len(stated) == 2 and r.raw["block_types"] != r.raw["_block_types"]:
        raise ModelConfigError("block_types and _block_types disagree: say the layer pattern once")
    key = stated[0] if stated else "block_types"
    r.used.update(_BLOCK_KEYS)
    cycle = r.typed(key, (list, tuple), "a list of 'recurrent' / 'attention' entries")
    if not cycle:
        raise ModelConfigError(f"{key} must list at least one of 'recurrent' / 'attention'")
    bad = [b for b in cycle if b not in _BLOCKS]
    if bad:
        raise ModelConfigError(f"{key} entry {shown(bad[0])} is not 'recurrent' or 'attention'")
    return [cycle[i % len(cycle)] for i in range(n_layers)]


def _rglru(r: ConfigReader, d_model: int, heads: int, state_dtype: str) -> MixerSpec:
    """The recurrent block over lru_width channels (hidden_size when absent) in num_attention_heads gate blocks."""
    lru = r.dim("lru_width", fallback=(d_model, f"= hidden_size ({d_model}), as RecurrentGemmaConfig sets it"))
    require_divides(lru, "lru_width", heads, "num_attention_heads")
    return MixerSpec("rglru", heads, lru // heads, 1, 0, r.dim("conv1d_width"), conv_bias=True, proj_bias=True,
                     chunk_size=1, state_dtype=state_dtype, rms_norm=False)


def _note(r: ConfigReader) -> None:
    r.used.update(_NEUTRAL)
    r.assume("RecurrentGemma: the RG-LRU is a diagonal recurrence (one state value per channel), priced as a scan "
             "over the tokens without chunks; its gates' sigmoids are in the scan's FLOPs, the conv1d and the GELU "
             "output gate are elementwise. The attention layers rotate part of each head (partial_rotary_factor): "
             "RoPE's elementwise pass is counted over whole heads (a small upper bound). The embedding scale "
             "(sqrt(hidden_size)) and the logits' soft-cap (tanh at logits_soft_cap) are elementwise, not priced.")
