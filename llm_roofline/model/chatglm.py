"""ChatGLM2-6B, ChatGLM3-6B, GLM-4-9B(-chat, -1m), CodeGeeX4 (model_type chatglm: THUDM / zai-org remote code,
modeling_chatglm.py; vLLM's chatglm.py): the GLM block under its own key names.

GLMBlock: input_layernorm, SelfAttention, post_attention_layernorm, MLP. query_key_value maps hidden_size to
num_attention_heads x kv_channels queries and, with multi_query_attention, multi_query_group_num keys and values of
kv_channels (without it one per head), with a bias when add_qkv_bias or add_bias_linear; dense maps the heads back to
hidden_size (bias: add_bias_linear). dense_h_to_4h is 2 x ffn_hidden_size wide (SwiGLU), dense_4h_to_h maps
ffn_hidden_size back (bias: add_bias_linear). RMSNorm when rmsnorm, else LayerNorm with bias (traits.py's
rmsnorm_key); a final norm when post_layer_norm; embedding and output_layer of padded_vocab_size rows. RoPE rotates half
of each head (kv_channels / 2; rope_ratio scales its base, original_rope picks the pairing): no shape of its own.
"""

from __future__ import annotations

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .key_names import BOUNDS, HEADS_KEYS
from .layers import group_layers, heads_kind
from .reader import ConfigReader, as_int, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup

# The first ChatGLM-6B (also model_type chatglm) states its MLP as inner_hidden_size and its positions as 2D
_CHATGLM_V1_KEYS = ("position_encoding_2d", "inner_hidden_size")


def chatglm_groups(r: ConfigReader, d_model: int, n_layers: int) -> tuple[LayerGroup, ...]:
    """The GLM blocks: one attention and one SwiGLU MLP per layer, all alike."""
    _refuse_unread(r)
    _check_depth(r, n_layers)
    heads = r.dim(*HEADS_KEYS)
    head_dim = r.dim("kv_channels")
    n_kv = _kv_groups(r, heads)
    bias = r.boolean("add_bias_linear")
    attn = AttentionSpec(heads_kind(heads, n_kv), heads, n_kv, head_dim, head_dim,
                         qkv_bias=bias or r.boolean("add_qkv_bias"), o_bias=bias)
    ffn = FfnSpec("dense", r.dim("ffn_hidden_size"), True, "swiglu", bias)
    _note(r, head_dim)
    return group_layers([(attn, ffn)] * n_layers, False, 2)


def _refuse_unread(r: ConfigReader) -> None:
    """What the GLM block does not read or the graph cannot represent, refused by name."""
    stated = next((k for k in _CHATGLM_V1_KEYS if r.raw.get(k) not in (None, False)), None)
    if stated is not None:
        raise UnsupportedArchitectureError(
            f"{stated} is set (model_type=chatglm): the first ChatGLM-6B's block (2D rotary positions, residuals "
            "scaled by (2 x num_layers)^0.5, a GELU MLP of inner_hidden_size) is not ChatGLM2's and is not read")
    r.switch("post_layer_norm", True, "a decoder without its final norm is not represented (the spec counts one)")
    bits = r.count("quantization_bit")
    if bits:
        raise UnsupportedArchitectureError(
            f"quantization_bit={bits} (model_type=chatglm): ChatGLM's own int{bits} weight quantization (cpm_kernels) "
            "is not read; estimate the unquantized config with a weight dtype override")
    prefix = r.get("pre_seq_len")
    if prefix is not None:
        raise UnsupportedArchitectureError(
            f"pre_seq_len={shown(prefix)} (model_type=chatglm): P-tuning v2's prefix encoder (pre_seq_len "
            "trained key/value entries in front of every layer's cache) is not modelled")


def _check_depth(r: ConfigReader, n_layers: int) -> None:
    """num_layers (what the GLM code builds) and num_hidden_layers (GLM-4's configs carry both) must agree."""
    for key in ("num_layers", "num_hidden_layers"):
        if r.raw.get(key) is not None and as_int(r.raw[key], key, bound=BOUNDS["layers"]) != n_layers:
            raise ModelConfigError(f"num_layers ({shown(r.raw.get('num_layers'))}) and num_hidden_layers "
                                   f"({shown(r.raw.get('num_hidden_layers'))}) differ: GLMTransformer builds "
                                   "num_layers blocks")


def _kv_groups(r: ConfigReader, heads: int) -> int:
    """Key/value heads: multi_query_group_num with multi_query_attention (ChatGLM2 onward: 2, GLM-4-9B-chat-1m: 4),
    else one per query head (the group count is then ignored, as SelfAttention ignores it)."""
    r.used.add("multi_query_group_num")
    if "multi_query_attention" not in r.raw:
        r.assume("multi_query_attention absent from the config: ChatGLMConfig's default false (a key and a value "
                 "head per query head).")
    if not r.boolean("multi_query_attention"):
        return heads
    groups = as_int(r.get("multi_query_group_num", default=1), "multi_query_group_num", bound=BOUNDS["heads"])
    if r.raw.get("multi_query_group_num") is None:
        r.assume("multi_query_group_num absent from the config: ChatGLMConfig's default 1 (one key/value head).")
    require_divides(heads, "num_attention_heads", groups, "multi_query_group_num")
    return groups


def _note(r: ConfigReader, head_dim: int) -> None:
    r.assume(f"ChatGLM: RoPE rotates half of each head ({head_dim // 2} of kv_channels {head_dim}); its elementwise "
             "pass is counted over whole heads (a small upper bound).")
    if r.boolean("apply_residual_connection_post_layernorm"):
        r.assume("apply_residual_connection_post_layernorm: each residual is taken after its norm instead of before "
                 "it; the same weights and the same work.")
