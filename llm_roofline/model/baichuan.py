"""Baichuan-7B, Baichuan-13B, Baichuan2-7B / 13B (model_type baichuan: Baichuan's remote code modeling_baichuan.py,
vLLM's baichuan.py): Llama's block with a fused W_pack and, on the 13B models, ALiBi instead of RoPE.

BaichuanAttention: W_pack maps hidden_size to 3 x hidden_size without bias (every head its own key and value, head_dim =
hidden_size / heads), o_proj back; a gated SiLU MLP of intermediate_size without bias; RMSNorms; embed_tokens and
lm_head of vocab_size rows (Baichuan2's lm_head is a NormHead: the same matrix, its rows normalised once, not per
token). Positions: vLLM builds BaiChuanForCausalLM (Baichuan-7B) with RoPE and BaichuanForCausalLM with RoPE when
hidden_size is 4096 (Baichuan2-7B) and ALiBi otherwise (Baichuan-13B, Baichuan2-13B), as their own modeling files do:
ALiBi adds a per-head bias to the scores, no rotary op and no position table. The 13B configs state their context as
model_max_length (traits.py's context_keys).
"""

from __future__ import annotations

from ..errors import UnsupportedArchitectureError, shown
from .key_names import HEADS_KEYS, KV_HEADS_KEYS
from .layers import activation, group_layers
from .reader import ConfigReader, require_divides
from .spec import AttentionSpec, FfnSpec, LayerGroup

_ROPE_WIDTH = 4096  # vLLM's BaichuanForCausalLM: hidden_size 4096 (Baichuan2-7B) -> RoPE, else ALiBi


def baichuan_groups(r: ConfigReader, d_model: int, n_layers: int) -> tuple[LayerGroup, ...]:
    """Baichuan's blocks: multi-head attention (RoPE or ALiBi), a gated MLP, no biases."""
    heads = r.dim(*HEADS_KEYS)
    require_divides(d_model, "hidden_size", heads, "num_attention_heads")
    head_dim = d_model // heads
    for key, own in [(k, heads) for k in KV_HEADS_KEYS] + [("head_dim", head_dim)]:
        value = r.get(key)
        if value is not None and value != own:
            raise UnsupportedArchitectureError(
                f"{key}={shown(value)} (model_type=baichuan): Baichuan's W_pack is 3 x hidden_size wide (every "
                f"head its own key and value of hidden_size / heads = {head_dim}); another shape is not read")
    attn = AttentionSpec("mha", heads, heads, head_dim, head_dim, rope=_rope(r, d_model))
    ffn = FfnSpec("dense", r.dim("intermediate_size"), True, activation(r), False)
    if r.get("vocab_size") == 125696:  # vLLM's test for Baichuan2 (its NormHead)
        r.assume("Baichuan2's NormHead normalises the LM head's rows once (vLLM: at load): the same matrix, no work "
                 "per token.")
    return group_layers([(attn, ffn)] * n_layers, False, 2)


def _rope(r: ConfigReader, d_model: int) -> bool:
    """RoPE for Baichuan-7B's class and hidden_size 4096; ALiBi otherwise (vLLM's choice, by shape)."""
    classes = r.typed("architectures", (list,), "a list of class names", [])
    if "BaiChuanForCausalLM" in classes or d_model == _ROPE_WIDTH:
        return True
    r.assume(f"Baichuan with hidden_size {d_model} (not {_ROPE_WIDTH}): ALiBi position biases (Baichuan-13B, "
             "Baichuan2-13B), no rotary embedding; the bias add rides in the attention scores (not priced apart).")
    return False
