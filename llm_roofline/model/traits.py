"""What a model_type's modeling code hard-codes and its config.json does not (Architecture), and the two base blocks
most rows start from: Llama's (RMSNorm, gated MLP, RoPE, no biases) and GPT-2's (LayerNorm and biases, plain MLP,
learned positions). The rows themselves: architectures.py (model types transformers ships), remote_code.py (those
vLLM serves from a checkpoint's own code).
"""

from __future__ import annotations

from dataclasses import dataclass, field

@dataclass(frozen=True)
class Architecture:
    """What one model_type's modeling code hard-codes, plus its config-class defaults for absent keys.

    Flags are a bool, or the config key that holds the bool (absent: the default in `defaults`, else False).
    """

    norm: str = "rmsnorm"  # rmsnorm | layernorm (weight + bias); a bias-free LayerNorm counts as rmsnorm
    norms: int = 2  # norm layers per block
    gated: bool | None = True  # up + gate matrices (SwiGLU/GeGLU/relu²-GLU); None: unknown model_type
    parallel: bool | str = False  # attention and MLP read the same input
    qkv_bias: bool | str = "attention_bias"
    o_bias: bool | str = "attention_bias"
    mlp_bias: bool | str = "mlp_bias"
    down_bias: bool = False  # a bias on the MLP's down projection alone (TeleChat2)
    qk_norm: bool | str = False  # per-head q/k norms with weights (an L2 norm without weights is not one)
    qk_norm_across_heads: bool = False  # the q/k norm is one RMSNorm over all heads' elements (MiniMax-M2)
    sinks: bool = False
    router_bias: bool | str = False
    shared_gate: bool = False  # sigmoid gate Linear(d_model, 1) on the shared expert
    fixed_shared_experts: int = 0  # shared experts the modeling code always builds (Llama-4: 1)
    lm_head_bias: bool | str = False
    rope: bool = True
    positions_key: str | None = None  # learned absolute position table: rows from this key
    positions_offset: int = 0  # OPT stores 2 extra position rows
    ffn_keys: tuple[str, ...] = ("intermediate_size",)  # dense MLP width
    expert_keys: tuple[str, ...] = ("moe_intermediate_size", "intermediate_size")  # routed expert width
    ffn_mult: int | None = None  # absent/null FFN size -> ffn_mult * d_model
    chunked_attention: bool = False  # layer_types 'chunked_attention' / no_rope_layers (Llama-4)
    nope_layers: bool = False  # no_rope_layers[i] = 0: layer i without RoPE (SmolLM3)
    window_from_layer: bool = False  # layers from max_window_layers on use sliding_window when it is set (dots1)
    output_gate: bool = False  # a sigmoid gate of H*hd on the attention output, from x (AFMoE's gate_proj)
    head_gate: bool | str = False  # a sigmoid gate per head on the attention output, from x (Step-3.5's g_proj: d -> H)
    nope_full_layers: bool = False  # full-attention layers skip RoPE when the config sets a window (EXAONE-4)
    shared_keys: tuple[str, ...] = ()  # width of the one always-on shared expert (Step-3.5's share_expert_dim)
    mtp_lists: bool = False  # per-layer lists may carry num_nextn_predict_layers trailing MTP entries (Step-3.5)
    windows_from_types: bool = False  # windows only where layer_types says so (Step-3.5: none without it)
    nested: tuple[str, ...] = ()  # sub-dicts whose keys are read as top-level keys (DBRX attn_config, ffn_config)
    bias_free_layernorm: bool = False  # nn.LayerNorm(bias=False): counted as weight-only, noted
    vocab_keys: tuple[str, ...] = ("vocab_size",)  # rows of the embedding and LM head (ChatGLM: padded_vocab_size)
    rmsnorm_key: str | None = None  # the key choosing RMSNorm (true) or LayerNorm with bias (false): ChatGLM's rmsnorm
    context_keys: tuple[str, ...] = ()  # context keys read after CONTEXT_KEYS (Baichuan-13B: model_max_length)
    defaults: dict = field(default_factory=dict)


LLAMA = Architecture(defaults={"tie_word_embeddings": False})
# GPT-2-style blocks: LayerNorm with bias, plain (ungated) MLP with biases, 4·hidden MLP when the width is absent.
GPT = Architecture(norm="layernorm", gated=False, qkv_bias=True, o_bias=True, mlp_bias=True, rope=False,
                   ffn_keys=("n_inner",), ffn_mult=4)
