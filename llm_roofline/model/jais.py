"""Reader of JAIS's positions (model_type jais; inceptionai/jais-13b-chat, jais-30b-chat-v3, jais-family-*: the hub's
configuration_jais.py and modeling_jais.py, vLLM's models/jais.py).

JAIS is GPT-2's block (LayerNorms and every Linear with bias, GPT-2's key names n_embd / n_layer / n_head / n_inner /
n_positions) with a SwiGLU MLP (c_fc and c_fc2 up, c_proj down) and, by position_embedding_type, ALiBi (no position
table; the per-head slopes a parameter, transformer.relative_pe.slopes, stored in the checkpoint) or GPT-2's learned
position table (wpe, JAISConfig's default 'learned'); no RoPE either way. Its muP keys (mup_embeddings_scale,
mup_width_scale, mup_output_alpha, mup_scale_qk_dot_by_d) scale activations and logits: no weights.
"""

from __future__ import annotations

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .reader import ConfigReader

_MUP_KEYS = ("mup_embeddings_scale", "mup_width_scale", "mup_output_alpha", "mup_scale_qk_dot_by_d", "alibi_scaling",
             "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn")


def jais_positions(r: ConfigReader) -> tuple[bool, int]:
    """(learned position table?, parameters outside the blocks: ALiBi's slopes, one per head)."""
    act = r.get("activation_function", default=r.defaults["activation_function"])  # null: JAISConfig's default
    if act != "swiglu":
        raise UnsupportedArchitectureError(
            f"activation_function={shown(act)} (model_type=jais): JAIS's MLP is read as SwiGLU (c_fc, c_fc2, "
            "c_proj), what every released JAIS checkpoint uses; another activation is GPT-2's plain MLP, not read")
    r.used.update(_MUP_KEYS)
    kind = r.typed("position_embedding_type", (str,), "a string ('alibi' or 'learned')")
    if kind not in ("alibi", "learned"):
        raise ModelConfigError(f"position_embedding_type must be 'alibi' or 'learned', got {shown(kind)}")
    if kind == "learned":
        return True, 0
    r.assume("JAIS: ALiBi position biases (no position table, no RoPE); the per-head slopes (a parameter of the "
             "checkpoint) are counted, the bias they add inside the attention kernel is not priced.")
    return False, r.dim("n_head")
