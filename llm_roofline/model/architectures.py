"""Per-model_type architecture table and Hugging Face key names.

`ARCHITECTURES` says, per `model_type`, what the modeling code hard-codes and config.json does not (Qwen2's q/k/v
bias, GPT-2's biases, Gemma-2's four norms per block, gpt-oss attention sinks, ...), plus the defaults of absent
keys. The key-name tables list the names one quantity goes by across architectures.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Architecture:
    """What one model_type's modeling code hard-codes, plus its config-class defaults for absent keys.

    Flags are a bool, or the config key that holds the bool. `defaults` copies the transformers config class
    defaults that matter when a file omits the key (used when transformers itself is not used).
    """

    norm: str = "rmsnorm"  # rmsnorm | layernorm
    norms: int = 2  # norm layers per block
    gated: bool | None = True  # None: decide from the activation
    parallel: bool | str = False  # attention and MLP read the same input
    qkv_bias: bool | str = "attention_bias"
    o_bias: bool | str = "attention_bias"
    mlp_bias: bool | str = "mlp_bias"
    qk_norm: bool | str = False
    sinks: bool = False
    router_bias: bool = False
    shared_gate: bool = False  # sigmoid gate Linear(d_model, 1) on the shared expert
    lm_head_bias: bool = False
    rope: bool = True
    positions_key: str | None = None  # learned absolute position table: rows from this key
    positions_offset: int = 0  # OPT stores 2 extra position rows
    ffn_keys: tuple[str, ...] = ("intermediate_size",)
    ffn_mult: int | None = None  # absent/null FFN size -> ffn_mult * d_model
    defaults: dict = field(default_factory=dict)


_LLAMA = Architecture(defaults={"tie_word_embeddings": False})
_GEMMA_DEFAULTS = {"tie_word_embeddings": True, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh"}

ARCHITECTURES: dict[str, Architecture] = {
    "llama": _LLAMA,
    "mistral": replace(_LLAMA, defaults={"tie_word_embeddings": False, "sliding_window": 4096}),
    "mixtral": _LLAMA,
    "phi3": _LLAMA,  # fused qkv_proj / gate_up_proj: same matrices
    "qwen2": replace(_LLAMA, qkv_bias=True, o_bias=False),  # Qwen2Attention: q/k/v bias=True, o_proj no bias
    "qwen2_moe": replace(_LLAMA, qkv_bias="qkv_bias", o_bias=False, shared_gate=True,
                         defaults={"tie_word_embeddings": False, "qkv_bias": True}),
    "qwen3": replace(_LLAMA, qk_norm=True),
    "qwen3_moe": replace(_LLAMA, qk_norm=True),
    "deepseek_v2": _LLAMA,
    # DeepSeek-V3's router stores e_score_correction_bias (n_routed_experts), a per-expert bias of the routing
    # scores (used for top-k selection): a router bias of the same size.
    "deepseek_v3": replace(_LLAMA, router_bias=True),
    "gpt_oss": replace(_LLAMA, mlp_bias=True, sinks=True, router_bias=True),
    "gemma": replace(_LLAMA, defaults=_GEMMA_DEFAULTS),
    "gemma2": replace(_LLAMA, norms=4, defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096}),
    "gemma3_text": replace(_LLAMA, norms=4, qk_norm=True,
                           defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096, "sliding_window_pattern": 6,
                                     "vocab_size": 262208, "max_position_embeddings": 131072}),
    "gpt2": Architecture(norm="layernorm", gated=False, qkv_bias=True, o_bias=True, mlp_bias=True, rope=False,
                    positions_key="n_positions", ffn_keys=("n_inner",), ffn_mult=4,
                    defaults={"tie_word_embeddings": True}),
    "opt": Architecture(norm="layernorm", gated=False, qkv_bias="enable_bias", o_bias="enable_bias",
                   mlp_bias="enable_bias", rope=False, positions_key="max_position_embeddings",
                   positions_offset=2, ffn_keys=("ffn_dim",),
                   defaults={"tie_word_embeddings": True, "enable_bias": True}),
    "falcon": Architecture(norm="layernorm", gated=False, parallel="parallel_attn", qkv_bias="bias", o_bias="bias",
                      mlp_bias="bias", ffn_keys=("ffn_hidden_size",), ffn_mult=4,
                      defaults={"tie_word_embeddings": True, "bias": False, "parallel_attn": True,
                                "max_position_embeddings": 2048}),
    "gptj": Architecture(norm="layernorm", norms=1, gated=False, parallel=True, qkv_bias=False, o_bias=False,
                    mlp_bias=True, lm_head_bias=True, ffn_keys=("n_inner",), ffn_mult=4,
                    defaults={"tie_word_embeddings": False}),
    "phi": Architecture(norm="layernorm", norms=1, gated=False, parallel=True, qkv_bias=True, o_bias=True,
                   mlp_bias=True, lm_head_bias=True, qk_norm="qk_layernorm", defaults={"tie_word_embeddings": False}),
    "gpt_neox": Architecture(norm="layernorm", gated=False, parallel="use_parallel_residual", mlp_bias=True,
                        defaults={"tie_word_embeddings": False, "attention_bias": True,
                                  "use_parallel_residual": True}),
}
UNKNOWN_ARCHITECTURE = Architecture(gated=None, ffn_keys=("intermediate_size", "ffn_dim", "ffn_hidden_size", "n_inner"))

# Activations whose MLP is gated (two input matrices) in a family that does not say so itself.
GATED_ACTIVATIONS = ("silu", "swish", "swiglu", "geglu")

# ------------------------------------------------------------------------- key names
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model")
LAYERS_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
HEADS_KEYS = ("num_attention_heads", "n_head", "num_heads")
KV_HEADS_KEYS = ("num_key_value_heads", "num_kv_heads", "n_head_kv")
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length")
ACTIVATION_KEYS = ("hidden_activation", "hidden_act", "activation_function")
N_EXPERTS_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_top_k")
MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")

# Keys holding a dimension: validated (positive integer) before anything reads them.
POSITIVE_KEYS = (HIDDEN_KEYS + LAYERS_KEYS + HEADS_KEYS + KV_HEADS_KEYS + CONTEXT_KEYS + N_EXPERTS_KEYS + TOP_K_KEYS + MLA_KEYS
                  + ("head_dim", "vocab_size", "intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size",
                     "moe_intermediate_size", "shared_expert_intermediate_size", "decoder_sparse_step",
                     "moe_layer_freq", "sliding_window", "sliding_window_pattern", "word_embed_proj_dim"))
NONNEGATIVE_KEYS = ("first_k_dense_replace", "n_shared_experts", "num_nextn_predict_layers")
# Keys where 0 is a documented "off" value (Qwen2-MoE: sliding_window 0, shared_expert_intermediate_size 0).
ZERO_MEANS_OFF = ("sliding_window", "shared_expert_intermediate_size")

# ------------------------------------------------------------------------- what is not modelled
ENCODER_DECODER_TYPES = ("t5", "mt5", "umt5", "longt5", "switch_transformers", "bart", "mbart", "pegasus",
                          "pegasus_x", "marian", "blenderbot", "blenderbot-small", "led", "m2m_100", "nllb-moe",
                          "prophetnet", "fsmt", "whisper", "t5gemma", "bigbird_pegasus", "plbart")
ENCODER_ONLY_TYPES = ("bert", "roberta", "xlm-roberta", "deberta", "deberta-v2", "distilbert", "albert",
                       "electra", "modernbert")
SSM_TYPES = ("mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "bamba", "rwkv", "rwkv6",
              "recurrent_gemma", "nemotron_h", "falcon_h1", "granitemoehybrid", "lfm2", "xlstm", "plamo2",
              "minimax", "qwen3_next")
SSM_KEYS = ("layers_block_type", "ssm_cfg", "ssm_state_size", "state_size", "mamba_d_state", "mamba_expand",
             "attn_layer_period", "hybrid_override_pattern", "linear_attn_config", "block_types",
             "full_attn_idxs")
CROSS_ATTENTION_KEYS = ("cross_attention_layers", "encoder_layers", "decoder_layers")
NON_ATTENTION_LAYER_TYPES = ("linear_attention", "mamba", "conv", "ssm", "recurrent", "mamba2")
LAYER_TYPE_WINDOWED = {"full_attention": False, "sliding_attention": True}
