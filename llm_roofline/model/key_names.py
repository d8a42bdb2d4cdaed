"""The names one quantity goes by across config.json files (hidden_size, n_embd, d_model, ...), the physical bounds of
each kind of key, and the words that mark a key as shaping the model (read, or named as unread).
"""

from __future__ import annotations

# Activations whose MLP is taken as gated in a model_type the table does not know (noted as an assumption).
GATED_ACTIVATIONS = ("silu", "swish", "swiglu", "geglu")

# ------------------------------------------------------------------------- key names
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model")
LAYERS_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
HEADS_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "attention_heads")
KV_HEADS_KEYS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "kv_n_heads", "num_attention_groups")
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length", "max_seq_len")
ACTIVATION_KEYS = ("hidden_activation", "hidden_act", "activation_function")
N_EXPERTS_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_top_k", "moe_k", "top_k_experts", "moe_topk",
              "num_experts_per_token")
SHARED_EXPERTS_KEYS = ("n_shared_experts", "moe_num_shared_experts", "num_shared_experts")
MLA_KEYS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
# Recurrent mixers (hybrid.py): widths (head dims, state, conv taps, chunk, DSA index dims) and head counts.
MIXER_WIDTH_KEYS = ("state_size", "ssm_state_size", "mamba_head_dim", "conv_kernel", "mamba_d_conv", "chunk_size",
                    "mamba_d_state", "mamba_d_head", "mamba_dt_rank", "time_step_rank", "block_size", "block_ff_dim",
                    "block_multiple_of", "mamba_d_ssm",
                    "mamba_chunk_size", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
                    "index_topk", "index_head_dim", "o_lora_rank", "hc_mult", "adapter_rank", "attention_hidden_size")
MIXER_HEAD_KEYS = ("num_heads", "mamba_num_heads", "mamba_n_heads", "n_groups", "mamba_n_groups", "linear_num_key_heads",
                   "linear_num_value_heads", "index_n_heads", "o_groups", "n_mamba_heads", "mamba_ngroups",
                   "num_mem_blocks", "attention_head_dim")
FFN_SIZE_KEYS = ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", "moe_intermediate_size",
                 "shared_expert_intermediate_size", "intermediate_size_mlp", "expert_ffn_hidden_size")

# ------------------------------------------------------------------------- bounds (one place)
# Generous physical bounds: the largest published models are ~2·10^4 wide, ~200 layers deep, 256k vocab, 10M context.
# A config beyond them is a mistake (or an attack), refused with the bound in the message; they also keep every
# per-layer list and every count finite and small.
BOUNDS = {
    "layers": 100_000,
    "width": 1 << 20,  # hidden size, head_dim, FFN and expert widths, LoRA ranks, windows: 1,048,576
    "heads": 65_536,
    "vocab": 1 << 24,  # 16,777,216
    "context": 1 << 31,
    "experts": 65_536,
    "ffn_ratio": 64,  # MLP width over hidden size (MPT expansion_ratio, Nemotron-NAS ffn_mult)
    "quant_group": 1 << 24,  # weights sharing one quantization scale (group or block)
}
BOUND_OF_KEY: dict[str, str] = {
    **{k: "layers" for k in LAYERS_KEYS + ("first_k_dense_replace", "num_nextn_predict_layers", "decoder_sparse_step",
                                           "moe_layer_freq", "sliding_window_pattern", "interleave_moe_layer_step",
                                           "moe_layer_interval", "max_window_layers", "no_rope_layer_interval")},
    **{k: "width" for k in HIDDEN_KEYS + FFN_SIZE_KEYS + MLA_KEYS + MIXER_WIDTH_KEYS + (
        "head_dim", "sliding_window", "attention_chunk_size", "word_embed_proj_dim")},
    **{k: "heads" for k in MIXER_HEAD_KEYS},
    **{k: "heads" for k in HEADS_KEYS + KV_HEADS_KEYS},
    "vocab_size": "vocab",
    **{k: "context" for k in CONTEXT_KEYS},
    **{k: "experts" for k in N_EXPERTS_KEYS + TOP_K_KEYS + SHARED_EXPERTS_KEYS + ("zero_expert_num",)},
}
# Keys where 0 is a valid value (a count of zero, or a documented "off": Qwen2-MoE sliding_window 0).
ZERO_ALLOWED = ("first_k_dense_replace", "num_nextn_predict_layers", "sliding_window", "max_window_layers",
                "shared_expert_intermediate_size", "zero_expert_num") + SHARED_EXPERTS_KEYS

# layer_types entries the reader maps onto an attention window: None = full, "window" = sliding_window,
# "chunk" = attention_chunk_size (Llama-4's chunked attention, read as a window of the chunk size).
LAYER_TYPE_WINDOWS = {"full_attention": None, "sliding_attention": "window", "chunked_attention": "chunk",
                      "indexed_attention": None}  # GLM-5: full attention over its DSA top-k (index_topk)

# Keys that shape the model; when present (truthy) in a config and not read, the reader says so.
STRUCTURAL_KEY_WORDS = ("expert", "moe", "lora_rank", "window", "chunk", "sparse", "layer_types", "_layers",
                        "block_config", "rope_layer", "dense_replace", "intermediate_size", "num_kv", "ffn",
                        "attention_type",
                        # ChatGLM's multi_query_group_num / kv_channels, the KV heads and head width under names of
                        # its own, were read as 32 heads of hidden / heads by the generic path
                        "query", "kv_channels")
# Keys that contain those words but do not change the shapes (routing and training hyper-parameters).
SHAPE_NEUTRAL_KEYS = frozenset((
    "query_pre_attn_scalar", "apply_query_key_layer_scaling",  # a score scale (Gemma-2/3, Step-3.5), ChatGLM's
    "router_aux_loss_coef", "output_router_logits", "norm_topk_prob", "routed_scaling_factor", "topk_method",
    "scoring_func", "n_group", "topk_group", "aux_loss_alpha", "seq_aux", "ep_size", "moe_norm_min",
    "router_jitter_noise", "moe_gate", "moe_aux_loss_coeff", "moe_z_loss_coeff", "use_sliding_window",
    "moe_router_activation_func", "moe_use_aux_free", "ffn_act_fn", "moe_jitter_eps", "moe_loss_weight",
    "moe_normalize_expert_weights", "uniform_expert_assignment", "router_dtype", "moe_capacity_factor",
    "moe_layer_end_index", "expert_capacity", "num_experts_per_tok_eval", "sliding_window_size_factor",
    "pretraining_tp", "moe_eval_capacity_factor", "moe_renormalize", "use_grouped_topk", "num_expert_group",
    "num_expert_groups", "expert_hidden_dim",  # Hy3: moe_intermediate_size's twin (read where it stands alone)
    "moe_router_activation", "moe_router_scaling_factor", "norm_expert_weight",  # Step-3.5's routing
    "sliding_window_size",  # Gemma-2: a legacy alias of sliding_window (same value)
    "moe_routed_scaling_factor", "moe_router_logit_softcapping",  # Laguna's routing
    "moe_apply_router_weight_on_input",  # Laguna: the router weights scale the experts' input (the same work)
))
