"""Qwen (v1: Qwen-1.8B / 7B / 14B / 72B, Qwen-VL's language model; model_type qwen, QWenLMHeadModel: Alibaba's remote
code modeling_qwen.py, vLLM's qwen.py): its own key names, read as QWenBlock builds them.

QWenAttention: c_attn maps hidden_size to 3 x kv_channels x heads with a bias (always), split at hidden_size, so
kv_channels x heads must be hidden_size and every head has its own key and value (head_dim = hidden_size / heads);
c_proj maps them back. QWenMLP: w1 and w2 each map hidden_size to intermediate_size / 2 (the config states TWICE the MLP
width), a1 * silu(a2), c_proj maps intermediate_size / 2 back. c_proj and the MLP carry a bias only when no_bias is
false. ln_1 / ln_2 / ln_f are RMSNorms; wte and lm_head (untied) have vocab_size rows. The first release's config names
the same dims n_embd / n_head / n_layer / ffn_hidden_size / n_positions (vLLM's first QWenMLP: ffn_hidden_size // 2).
"""

from __future__ import annotations


from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .key_names import HEADS_KEYS
from .layers import group_layers
from .reader import ConfigReader, is_finite_number, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup


def qwen1_groups(r: ConfigReader, d_model: int, n_layers: int) -> tuple[LayerGroup, ...]:
    """Qwen's blocks: multi-head attention with a biased c_attn, a SwiGLU MLP of intermediate_size / 2."""
    heads = r.dim(*HEADS_KEYS)
    require_divides(d_model, "hidden_size", heads, "num_attention_heads")
    channels = r.dim("kv_channels")
    if channels * heads != d_model:
        raise UnsupportedArchitectureError(
            f"kv_channels ({channels}) x num_attention_heads ({heads}) != hidden_size ({d_model}) (model_type=qwen): "
            "QWenAttention splits c_attn's output at hidden_size and gives each head hidden_size / heads channels, so "
            "the two must agree")
    key = r.stated("intermediate_size", "ffn_hidden_size") or "intermediate_size"
    width = r.dim("intermediate_size", "ffn_hidden_size")
    if width % 2:
        raise ModelConfigError(f"{key} ({width}) must be even: Qwen's w1 and w2 are each {key} / 2 wide")
    bias = not r.boolean("no_bias", default=True)
    attn = AttentionSpec("mha", heads, heads, d_model // heads, d_model // heads, qkv_bias=True, o_bias=bias)
    ffn = FfnSpec("dense", width // 2, True, "silu", bias)
    _note(r, key, width)
    return group_layers([(attn, ffn)] * n_layers, False, 2)


def _note(r: ConfigReader, key: str, width: int) -> None:
    r.assume(f"Qwen (v1): {key} {width} is twice the MLP width: w1 and w2 are {width // 2} wide each (QWenMLP).")
    pct = r.get("rotary_pct", default=1.0)
    if not is_finite_number(pct) or not 0 < pct <= 1:
        raise ModelConfigError(f"rotary_pct must be a number in (0, 1], got {shown(pct)}")
    if pct != 1:
        r.assume(f"rotary_pct={pct}: RoPE's elementwise pass is counted over whole heads (a small upper bound).")
    if r.boolean("use_logn_attn"):
        r.assume("use_logn_attn: past seq_length the queries are scaled by log(position) / log(seq_length), an "
                 "elementwise pass not priced.")
    if r.raw.get("visual") is not None:
        r.assume("Qwen-VL: the visual tower (the config's 'visual') is not counted; only the language model is.")
