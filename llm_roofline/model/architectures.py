"""Per-model_type architecture table and Hugging Face key names.

`ARCHITECTURES` says, per `model_type`, what the modeling code hard-codes and config.json does not (Qwen2's q/k/v
bias, GPT-2's biases, Gemma-2's four norms per block, gpt-oss attention sinks, ...), plus the defaults of absent
keys, copied from the transformers configuration class of that model_type (configuration_<type>.py: the value is
written here, so the reader's result depends on the config file and this table only, never on what is installed).
The key-name tables list the names one quantity goes by across architectures.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


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


_LLAMA = Architecture(defaults={"tie_word_embeddings": False})
_GEMMA_DEFAULTS = {"tie_word_embeddings": True, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh"}
# GPT-2-style blocks: LayerNorm with bias, plain (ungated) MLP with biases, 4·hidden MLP when the width is absent.
_GPT = Architecture(norm="layernorm", gated=False, qkv_bias=True, o_bias=True, mlp_bias=True, rope=False,
                    ffn_keys=("n_inner",), ffn_mult=4)

_HY4_DEFAULTS = {  # HYV4Config's (its docstring checkpoint tencent/Hy4-preview; not the released model's shape)
    "tie_word_embeddings": False, "vocab_size": 120832, "hidden_size": 2816, "intermediate_size": 6912,
    "moe_intermediate_size": 768, "num_hidden_layers": 34, "num_attention_heads": 32, "n_routed_experts": 256,
    "n_shared_experts": 1, "num_experts_per_tok": 8, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 192,
    "qk_rope_head_dim": 64, "v_head_dim": 256, "index_topk": 2048, "index_n_heads": 16, "index_head_dim": 128,
    "hc_mult": 4, "max_position_embeddings": 262144}
ARCHITECTURES: dict[str, Architecture] = {
    "llama": _LLAMA,
    "mistral": replace(_LLAMA, defaults={"tie_word_embeddings": False, "sliding_window": 4096}),
    "mixtral": _LLAMA,
    "phi3": _LLAMA,  # fused qkv_proj / gate_up_proj: same matrices
    # Phi-4-multimodal (modeling_phi4_multimodal.py): Phi-4-mini's phi3 decoder beside vision and audio towers (scope.py
    # names them); its vision / speech LoRA adapters are PEFT adapters outside the model class (hf.py notes them)
    "phi4_multimodal": _LLAMA,
    "qwen2": replace(_LLAMA, qkv_bias=True, o_bias=False),  # Qwen2Attention: q/k/v bias=True, o_proj no bias
    "qwen2_moe": replace(_LLAMA, qkv_bias="qkv_bias", o_bias=False, shared_gate=True,
                         defaults={"tie_word_embeddings": False, "qkv_bias": True}),
    "qwen3": replace(_LLAMA, qk_norm=True),
    "qwen3_moe": replace(_LLAMA, qk_norm=True),
    "deepseek_v2": _LLAMA,
    # DeepSeek-V3's router stores e_score_correction_bias (n_routed_experts), a per-expert bias of the routing
    # scores (used for top-k selection): a router bias of the same size.
    "deepseek_v3": replace(_LLAMA, router_bias=True),
    # Kimi-K2 / K2.5's text tower (text_config model_type kimi_k2, architectures DeepseekV3ForCausalLM): DeepSeek-V3's.
    "kimi_k2": replace(_LLAMA, router_bias=True),
    # GLM-4.5 (modeling_glm4_moe.py): q/k/v bias = attention_bias, o_proj without; optional per-head q/k norms;
    # DeepSeek-style router with e_score_correction_bias, n_shared_experts, first_k_dense_replace.
    "glm4_moe": replace(_LLAMA, o_bias=False, qk_norm="use_qk_norm", router_bias=True),
    "gpt_oss": replace(_LLAMA, mlp_bias=True, sinks=True, router_bias=True),
    # Gemma's MLP is gate_proj/up_proj/down_proj with gelu_pytorch_tanh: gated (GeGLU), whatever the activation says.
    "gemma": replace(_LLAMA, defaults=_GEMMA_DEFAULTS),
    "gemma2": replace(_LLAMA, norms=4, defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096}),
    # VaultGemma (modeling_vaultgemma.py): Gemma-2's layers with two norms (input, pre-feedforward).
    "vaultgemma": replace(_LLAMA, defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096}),
    # EXAONE-4 (modeling_exaone4.py): post-norms only (after attention, after MLP), q/k norms, window layers; with a
    # window set, the full-attention layers skip RoPE (NoPE); every sliding_window_pattern-th layer is full.
    "exaone4": replace(_LLAMA, qk_norm=True, nope_full_layers=True,
                       defaults={"tie_word_embeddings": False, "sliding_window": 4096, "sliding_window_pattern": 4}),
    # EXAONE-MoE / K-EXAONE (configuration_exaone_moe.py, modular_exaone_moe.py): EXAONE-4's attention (q/k norms, NoPE
    # on the full layers) in pre-norm blocks (OLMoE's), DeepSeek-V3's MoE (experts and num_shared_experts shared ones of
    # moe_intermediate_size, sigmoid router with e_score_correction_bias); mlp_layer_types, else the first
    # first_k_dense_replace layers dense.
    "exaone_moe": replace(_LLAMA, qk_norm=True, router_bias=True, nope_full_layers=True,
                          expert_keys=("moe_intermediate_size",),
                          defaults={"tie_word_embeddings": False, "sliding_window": 4096, "sliding_window_pattern": 4,
                                    "first_k_dense_replace": 1, "num_experts": 64, "num_experts_per_tok": 8,
                                    "num_shared_experts": 1, "moe_intermediate_size": 1024}),
    # SmolLM3 (modeling_smollm3.py): Llama with NoPE layers (no_rope_layers[i] = 0), tied embeddings.
    "smollm3": replace(_LLAMA, nope_layers=True, defaults={"tie_word_embeddings": True, "no_rope_layer_interval": 4}),
    "gemma3_text": replace(_LLAMA, norms=4, qk_norm=True,
                           defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096, "sliding_window_pattern": 6,
                                     "vocab_size": 262208, "max_position_embeddings": 131072}),
    # Gemma-4 (configuration_gemma4.py Gemma4TextConfig): Gemma-3's blocks (4 norms, q/k norms, gated GELU MLP);
    # full-attention layers of global_head_dim (layers.gemma4_global_attention), optional MoE block beside the MLP.
    "gemma4_text": replace(_LLAMA, norms=4, qk_norm=True, router_bias=True,
                           defaults={**_GEMMA_DEFAULTS, "sliding_window": 512, "sliding_window_pattern": 6,
                                     "global_head_dim": 512, "vocab_size": 262144,
                                     "max_position_embeddings": 131072}),
    # Gemma-3n (configuration_gemma3n.py, modeling_gemma3n.py Gemma3nTextDecoderLayer): Gemma-3's blocks with per-layer
    # intermediate sizes, Gemma-4's per-layer inputs and KV reuse, AltUp (altup_num_inputs copies of the hidden state:
    # one runs through the layer, the others are predicted and corrected from it) and LAuReL (a laurel_rank residual).
    "gemma3n_text": replace(_LLAMA, norms=4, qk_norm=True,
                            defaults={**_GEMMA_DEFAULTS, "sliding_window": 512, "vocab_size": 262400,
                                      "max_position_embeddings": 32768, "altup_num_inputs": 4, "laurel_rank": 64}),
    # MiMo-V2-Flash (configuration_mimo_v2_flash.py; the hub's own config: model_type mimo_v2, hybrid_layer_pattern,
    # swa_* keys): full-attention and sliding-window layers of different KV heads, v_head_dim != head_dim, attention
    # sinks on the window layers, DeepSeek-style router; the first layer dense (layers.mimo_attention).
    **{t: replace(_LLAMA, router_bias=True, defaults={"tie_word_embeddings": False, "first_k_dense_replace": 1})
       for t in ("mimo_v2_flash", "mimo_v2")},
    # Llama-4 (configuration_llama4.py Llama4TextConfig): every interleave_moe_layer_step-th layer is MoE with one
    # shared expert of intermediate_size, the others dense of intermediate_size_mlp; use_qk_norm is an L2 norm
    # without weights; 3 of 4 layers use chunked attention (no_rope_layers).
    "llama4_text": replace(_LLAMA, ffn_keys=("intermediate_size_mlp",), expert_keys=("intermediate_size",),
                           fixed_shared_experts=1, chunked_attention=True,
                           defaults={"tie_word_embeddings": False, "intermediate_size_mlp": 16384,
                                     "intermediate_size": 8192, "interleave_moe_layer_step": 1,
                                     "no_rope_layer_interval": 4, "attention_chunk_size": 8192, "head_dim": 128}),
    # ERNIE-4.5-MoE (configuration_ernie4_5_moe.py): use_bias on every Linear; router e_score_correction_bias;
    # moe_num_shared_experts shared experts of moe_intermediate_size; MoE on layers start..end every interval.
    "ernie4_5_moe": replace(_LLAMA, qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias",
                            lm_head_bias="use_bias", router_bias=True,
                            defaults={"tie_word_embeddings": True, "use_bias": False, "moe_layer_start_index": 1,
                                      "moe_layer_interval": 1, "moe_num_shared_experts": 2}),
    "ernie4_5": replace(_LLAMA, qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias",
                        lm_head_bias="use_bias", defaults={"tie_word_embeddings": True, "use_bias": False}),
    # dots.llm1 (configuration_dots1.py, modular_dots1.py): Qwen3's attention (q/k norms, q/k/v/o bias =
    # attention_bias) and DeepSeek-V3's MLP, MoE and router (e_score_correction_bias; n_shared_experts of
    # moe_intermediate_size; the first first_k_dense_replace layers dense); layer i uses the window when
    # sliding_window is set and i >= max_window_layers (its config class, whatever use_sliding_window says).
    "dots1": replace(_LLAMA, qk_norm=True, router_bias=True, window_from_layer=True,
                     defaults={"tie_word_embeddings": False, "max_window_layers": 62, "first_k_dense_replace": 0}),
    # Qwen2-VL / Qwen2.5-VL: Qwen2's decoder (q/k/v bias) with the text keys at the top level or in text_config.
    **{t: replace(_LLAMA, qkv_bias=True, o_bias=False)
       for t in ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text")},
    "qwen3_vl_text": replace(_LLAMA, qk_norm=True),
    "qwen3_vl_moe_text": replace(_LLAMA, qk_norm=True),
    "qwen3_omni_moe_text": replace(_LLAMA, qk_norm=True),  # Qwen3-Omni's thinker: Qwen3-MoE's decoder
    "qwen2_5_omni_text": replace(_LLAMA, qkv_bias=True, o_bias=False),  # Qwen2.5-Omni's thinker: Qwen2's decoder
    # Recurrent / hybrid models (hybrid.py). Mamba2ForCausalLM (configuration_mamba2.py defaults: Mamba-Codestral-7B).
    "mamba2": replace(_LLAMA, norms=1, defaults={"tie_word_embeddings": False, "num_heads": 128, "head_dim": 64,
                                                 "state_size": 128, "n_groups": 8, "conv_kernel": 4, "expand": 2,
                                                 "use_conv_bias": True, "use_bias": False, "chunk_size": 256}),
    # Mamba / Falcon-Mamba (configuration_mamba.py, configuration_falcon_mamba.py): Mamba-1 blocks, tied embeddings.
    "mamba": replace(_LLAMA, norms=1, defaults={"tie_word_embeddings": True, "state_size": 16, "conv_kernel": 4,
                                                "expand": 2, "use_conv_bias": True, "use_bias": False}),
    "falcon_mamba": replace(_LLAMA, norms=1, defaults={"tie_word_embeddings": True, "state_size": 16,
                                                       "conv_kernel": 4, "expand": 2, "use_conv_bias": True,
                                                       "use_bias": False}),
    # Jamba (configuration_jamba.py): attention without RoPE every attn_layer_period-th layer, Mamba-1 (with dt/B/C
    # RMSNorms) elsewhere; MoE every expert_layer_period-th layer.
    "jamba": replace(_LLAMA, rope=False, expert_keys=("intermediate_size",),
                     defaults={"tie_word_embeddings": False, "mamba_d_state": 16, "mamba_d_conv": 4,
                               "mamba_expand": 2, "mamba_conv_bias": True, "mamba_proj_bias": False}),
    # Bamba (configuration_bamba.py): Mamba-2 or attention, then a gated MLP, in every layer.
    "bamba": replace(_LLAMA, defaults={"tie_word_embeddings": False, "mamba_n_heads": 128, "mamba_n_groups": 1,
                                       "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
                                       "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_proj_bias": False}),
    # MiniMax-Text-01 (configuration_minimax.py): lightning attention (block_size 256) and softmax GQA layers, every
    # layer MoE (num_local_experts of intermediate_size).
    "minimax": replace(_LLAMA, expert_keys=("intermediate_size",),
                       defaults={"tie_word_embeddings": False, "block_size": 256}),
    # MiniMax-M2 / M2.5 (configuration_minimax_m2.py, modeling_minimax_m2.py): GQA, every layer MoE (num_local_experts
    # of intermediate_size, sigmoid router with e_score_correction_bias), q_norm / k_norm one RMSNorm over all heads'
    # elements (n_heads·head_dim and n_kv·head_dim weights: qk_norm_type "per_layer"); partial RoPE (rotary_dim).
    "minimax_m2": replace(_LLAMA, qk_norm=True, qk_norm_across_heads=True, router_bias="use_routing_bias",
                          expert_keys=("intermediate_size",),
                          defaults={"tie_word_embeddings": False, "head_dim": 128, "use_routing_bias": True}),
    # MiniMax-M3's text tower (configuration_minimax_m3_vl.py MiniMaxM3VLTextConfig, modular_minimax_m3_vl.py; read by
    # minimax_m3.py): M2's GQA without bias, q/k RMSNorms per head, partial RoPE; on layer_types' minimax_m3_sparse
    # layers a block indexer (q from x, one key, q/k norms) picks index_topk_blocks blocks of index_block_size keys per
    # KV group; a dense MLP of dense_intermediate_size or experts of intermediate_size beside one shared expert of
    # shared_intermediate_size, a sigmoid router with e_score_correction_bias (mlp_layer_types). Defaults: the config
    # class's (MiniMaxAI/MiniMax-M3's shape; the hub's sparse_attention_config and moe_layer_freq lists are read too).
    "minimax_m3_vl_text": replace(_LLAMA, qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm="use_qk_norm",
                                  router_bias="use_routing_bias", ffn_keys=("dense_intermediate_size",),
                                  expert_keys=("intermediate_size",), shared_keys=("shared_intermediate_size",),
                                  defaults={"tie_word_embeddings": False, "vocab_size": 200064, "hidden_size": 6144,
                                            "intermediate_size": 3072, "num_hidden_layers": 60,
                                            "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
                                            "max_position_embeddings": 524288, "num_local_experts": 128,
                                            "num_experts_per_tok": 4, "dense_intermediate_size": 12288,
                                            "shared_intermediate_size": 3072, "rotary_dim": 64, "index_n_heads": 4,
                                            "index_head_dim": 128, "index_block_size": 128, "index_topk_blocks": 16,
                                            "index_local_blocks": 1, "use_qk_norm": True, "use_routing_bias": True}),
    # xLSTM-7B (configuration_xlstm.py, modeling_xlstm.py; read by xlstm.py): mLSTM blocks (q, k, v, output gate and
    # per-head input / forget gates from x, a matrix memory per head, a LayerNorm per head) then a gated SiLU MLP of
    # round_up(hidden x ffn_proj_factor, ffn_round_up_to_multiple_of); RMSNorms; an untied LM head. Defaults: the
    # config class's (NX-AI/xLSTM-7b's shape).
    "xlstm": replace(_LLAMA, defaults={"tie_word_embeddings": False, "vocab_size": 50304, "hidden_size": 4096,
                                       "num_hidden_layers": 32, "num_heads": 8, "qk_dim_factor": 0.5,
                                       "v_dim_factor": 1.0, "chunk_size": 64, "ffn_proj_factor": 2.667,
                                       "ffn_round_up_to_multiple_of": 64, "inference_state_dtype": "float32",
                                       "weight_mode": "single", "use_bias": False}),
    # LFM2 (configuration_lfm2.py): short-conv or attention (q/k norms) then a gated MLP; tied embeddings
    # (tie_embedding in Liquid's own configs); the final norm is embedding_norm.
    "lfm2": replace(_LLAMA, qk_norm=True, defaults={"tie_word_embeddings": True, "conv_L_cache": 3}),
    # LFM3 (configuration_lfm3.py, modular_lfm3.py): LFM2's short-conv layers beside Qwen3 attention (q/k norms per
    # head) with a sigmoid gate per head from x (g_proj, use_attention_gate), over a window on 'sliding_attention'
    # layers; a gated MLP of intermediate_size as is; with use_sandwich_norm a norm after the operator and after the
    # MLP too (4 a block). Defaults: Lfm3Config's (its docstring's checkpoint, LiquidAI/LFM3-1.7B).
    "lfm3": replace(_LLAMA, qk_norm=True, head_gate="use_attention_gate",
                    defaults={"tie_word_embeddings": True, "vocab_size": 128000, "hidden_size": 2048,
                              "intermediate_size": 7680, "num_hidden_layers": 24, "num_attention_heads": 16,
                              "num_key_value_heads": 4, "head_dim": 128, "max_position_embeddings": 128000,
                              "sliding_window": 256, "conv_L_cache": 7, "use_sandwich_norm": True,
                              "use_attention_gate": True}),
    # Falcon-H1 (configuration_falcon_h1.py): attention and Mamba-2 in parallel in every block, then a gated MLP.
    "falcon_h1": replace(_LLAMA, defaults={"tie_word_embeddings": False, "mamba_d_ssm": 1024, "mamba_n_heads": 128,
                                           "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4,
                                           "mamba_expand": 2, "mamba_chunk_size": 256, "mamba_conv_bias": True,
                                           "mamba_proj_bias": False, "mamba_rms_norm": False,
                                           "projectors_bias": False}),
    # Nemotron-H (configuration_nemotron_h.py): one norm + one mixer per block; attention without RoPE; relu² MLP
    # (up, down); Mamba-2 mixers with conv bias (use_conv_bias) and no projection bias (mamba_proj_bias).
    "nemotron_h": replace(_LLAMA, norms=1, gated=False, rope=False,
                          defaults={"tie_word_embeddings": False, "head_dim": 128, "mamba_num_heads": 128,
                                    "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
                                    "use_conv_bias": True, "mamba_proj_bias": False, "chunk_size": 128,
                                    "mlp_hidden_act": "relu2"}),
    # Qwen3-Next (configuration_qwen3_next.py): gated attention with q/k norms, Gated DeltaNet, Qwen2-MoE-style
    # experts with a sigmoid-gated shared expert.
    "qwen3_next": replace(_LLAMA, qkv_bias=False, o_bias=False, qk_norm=True, shared_gate=True,
                          defaults={"tie_word_embeddings": False, "head_dim": 256, "linear_conv_kernel_dim": 4,
                                    "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                                    "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                                    "full_attention_interval": 4, "decoder_sparse_step": 1}),
    # AFMoE / Arcee Trinity (configuration_afmoe.py, modular_afmoe.py): q/k norms and a sigmoid output gate
    # (gate_proj) on the attention, norms before and after attention and MLP (4), sliding-window layers but every
    # global_attn_every_n_layers-th, the first num_dense_layers dense, then experts beside shared experts of
    # moe_intermediate_size with a routing bias (expert_bias, a parameter).
    "afmoe": replace(_LLAMA, norms=4, qk_norm=True, router_bias=True, output_gate=True,
                     defaults={"tie_word_embeddings": False, "head_dim": 128, "global_attn_every_n_layers": 4,
                               "sliding_window": 1024, "num_dense_layers": 1, "num_experts": 64,
                               "num_experts_per_tok": 6, "num_shared_experts": 2}),
    # Hy3 / Hunyuan V3 (configuration_hy_v3.py, modular_hy_v3.py): Apertus's attention (q/k norms per head, no bias),
    # DeepSeek-V3's decoder layer (the first first_k_dense_replace dense) around a MoE of num_experts experts of
    # moe_intermediate_size (its config repeats it as expert_hidden_dim) beside shared experts, a sigmoid router with
    # e_score_correction_bias.
    "hy_v3": replace(_LLAMA, qk_norm=True, router_bias=True, expert_keys=("moe_intermediate_size", "expert_hidden_dim"),
                     defaults={"tie_word_embeddings": False, "head_dim": 128, "first_k_dense_replace": 1,
                               "num_experts": 192, "num_experts_per_tok": 8, "num_shared_experts": 1}),
    # LongCat-Flash (configuration_longcat_flash.py, modeling_longcat_flash.py; read by longcat.py): num_layers layers
    # of two MLA blocks and two dense MLPs of ffn_hidden_size, with a MoE beside the first MLP (ScMoE): n_routed_experts
    # experts of expert_ffn_hidden_size and zero_expert_num identity experts, moe_topk of them per token, a softmax
    # router (classifier) with e_score_correction_bias. Defaults: the config class's (LongCat-Flash-Chat's shape).
    "longcat_flash": replace(_LLAMA, router_bias=True, ffn_keys=("ffn_hidden_size",),
                             expert_keys=("expert_ffn_hidden_size",),
                             defaults={"tie_word_embeddings": False, "vocab_size": 131072, "hidden_size": 6144,
                                       "num_layers": 28, "num_attention_heads": 64, "ffn_hidden_size": 12288,
                                       "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                                       "qk_rope_head_dim": 64, "v_head_dim": 128, "moe_topk": 12,
                                       "n_routed_experts": 512, "zero_expert_num": 256,
                                       "expert_ffn_hidden_size": 2048, "max_position_embeddings": 131072}),
    # Step-3.5-Flash / Step-3.7 text tower (configuration_step3p7.py Step3p7TextConfig, model_type step3p5;
    # modeling_step3p7.py): q/k norms, a sigmoid gate per head (g_proj), sliding_attention layers with their own head
    # count (num_sliding_attention_heads, the hub's attention_other_setting), dense layers then experts of
    # moe_intermediate_size beside one shared expert of share_expert_dim (moe_layers_enum), a sigmoid router with
    # e_score_correction_bias; the hub's per-layer lists carry num_nextn_predict_layers trailing MTP entries.
    "step3p5": replace(_LLAMA, qk_norm="use_qk_norm", router_bias="use_moe_router_bias",
                       head_gate="use_head_wise_attn_gate", expert_keys=("moe_intermediate_size",),
                       shared_keys=("share_expert_dim", "share_expert_dims"), mtp_lists=True,
                       windows_from_types=True,
                       defaults={"tie_word_embeddings": False, "head_dim": 128, "use_qk_norm": True,
                                 "use_moe_router_bias": True, "use_head_wise_attn_gate": True,
                                 "n_routed_experts": 288, "num_experts_per_tok": 8, "moe_intermediate_size": 1280,
                                 "share_expert_dim": 1280}),
    # Step-3's text tower (stepfun-ai/step3 configuration_step3.py Step3TextConfig; vLLM step3_text.py; step3.py):
    # MFA (one KV head, a low-rank query of share_q_dim), a dense MLP or experts beside one shared expert of
    # share_expert_dim (moe_layers_enum), a router without bias, an untied LM head. Defaults: the config class's.
    "step3_text": replace(_LLAMA, expert_keys=("moe_intermediate_size",), shared_keys=("share_expert_dim",),
                          defaults={"tie_word_embeddings": False, "vocab_size": 128815, "hidden_size": 7168,
                                    "intermediate_size": 18432, "num_hidden_layers": 61, "num_attention_heads": 64,
                                    "num_attention_groups": 1, "head_dim": 256, "share_q_dim": 2048,
                                    "max_seq_len": 65536, "moe_num_experts": 48, "moe_top_k": 3,
                                    "moe_intermediate_size": 5120, "share_expert_dim": 5120}),
    # Grok-1 / Grok-2 (hpcai-tech's modeling_grok1.py: grok-1 or none; keyfan's: grok; xai-org/grok-2: git; vLLM
    # grok1.py; grok.py): 4 RMSNorms a layer, gated-GELU experts in every layer, Grok-2's residual_moe MLP beside
    # them. Defaults: Grok1Config's / GrokConfig's; Grok-2's GitConfig's (the class its model_type names: untied).
    **dict.fromkeys(("grok-1", "grok"), replace(_LLAMA, norms=4, defaults={
        "tie_word_embeddings": True, "hidden_act": "gelu", "num_experts": 8, "num_experts_per_tok": 2})),
    "grok-2": replace(_LLAMA, norms=4, defaults={"tie_word_embeddings": False, "hidden_act": "gelu",
                                                 "num_local_experts": 8, "num_experts_per_tok": 2}),
    # Snowflake Arctic (remote code configuration_arctic.py; vLLM arctic.py; arctic.py): experts of intermediate_size
    # every moe_layer_frequency-th layer, a dense MLP elsewhere; parallel_attn_mlp_res: a residual MLP of hidden_size
    # (its own RMSNorm) beside a MoE layer's experts. Defaults: ArcticConfig's.
    "arctic": replace(_LLAMA, expert_keys=("intermediate_size",), defaults={
        "tie_word_embeddings": False, "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "num_experts_per_tok": 1, "num_local_experts": 8, "moe_layer_frequency": 2, "parallel_attn_mlp_res": False}),
    # Laguna (configuration_laguna.py, modular_laguna.py; poolside Laguna-XS.2; read with laguna.py): AFMoE's attention
    # (q/k norms per head, a window on layer_types' sliding_attention layers, all full without it) of
    # num_attention_heads_per_layer heads, a softplus gate on its output from g_proj (gating true / "per-head": one per
    # head; "per-element": one per channel), the first layer dense unless mlp_layer_types says otherwise, then experts
    # of moe_intermediate_size beside an ungated shared expert of shared_expert_intermediate_size, a sigmoid router
    # with e_score_correction_bias (a parameter).
    "laguna": replace(_LLAMA, qk_norm=True, router_bias=True, mlp_bias=False, expert_keys=("moe_intermediate_size",),
                      windows_from_types=True,
                      defaults={"tie_word_embeddings": False, "vocab_size": 100352, "hidden_size": 2048,
                                "intermediate_size": 8192, "num_hidden_layers": 40, "num_attention_heads": 48,
                                "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 131072,
                                "sliding_window": 512, "num_experts": 256, "num_experts_per_tok": 8,
                                "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "gating": True}),
    # Mellum 2 (configuration_mellum.py, modular_mellum.py: JetBrains Mellum2 12B-A2.5B): Qwen3-MoE's attention (q/k
    # norms per head) over a window on layer_types' sliding_attention layers (all full without it), Qwen3-MoE's
    # experts (softmax router, no shared expert) or a dense MLP per mlp_layer_types (all sparse without it); its
    # num_mtp_layers MTP layer is not loaded (_keys_to_ignore_on_load_unexpected).
    "mellum": replace(_LLAMA, qk_norm=True, mlp_bias=False, expert_keys=("moe_intermediate_size",),
                      windows_from_types=True,
                      defaults={"tie_word_embeddings": False, "vocab_size": 98304, "hidden_size": 2304,
                                "intermediate_size": 7168, "num_hidden_layers": 28, "num_attention_heads": 32,
                                "num_key_value_heads": 4, "head_dim": 128, "max_position_embeddings": 131072,
                                "sliding_window": 1024, "num_experts": 64, "num_experts_per_tok": 8,
                                "moe_intermediate_size": 896}),
    # Kimi-Linear (configuration_kimi_linear.py, modeling_kimi_linear.py; the checkpoint's own keys: linear_attn_config,
    # num_experts_per_token, num_shared_experts): KDA layers and MLA layers without RoPE, DeepSeek-style router
    # (e_score_correction_bias), shared experts of moe_intermediate_size; the first layer dense.
    "kimi_linear": replace(_LLAMA, router_bias=True,
                           defaults={"tie_word_embeddings": False, "first_k_dense_replace": 1, "linear_num_heads": 32,
                                     "linear_head_dim": 128, "linear_conv_kernel_dim": 4}),
    # Ling-3.0 (configuration_bailing_hybrid.py, modular_bailing_hybrid.py; read by bailing.py): KDA with full-rank
    # decay and output gates beside MLA with a sigmoid gate per head (g_proj), DeepSeek-V3's MoE (sigmoid router with
    # e_score_correction_bias: the hub's expert_bias, moe_router_enable_expert_bias). Defaults: BailingHybridConfig's
    # (its docstring's checkpoint inclusionAI/Ling-3.0-Flash).
    "bailing_hybrid": replace(_LLAMA, router_bias="moe_router_enable_expert_bias",
                              expert_keys=("moe_intermediate_size",), defaults={
                                  "tie_word_embeddings": False, "moe_router_enable_expert_bias": True,
                                  "vocab_size": 157184, "hidden_size": 2560, "intermediate_size": 6144,
                                  "moe_intermediate_size": 768, "num_hidden_layers": 42, "num_attention_heads": 32,
                                  "num_experts": 512, "num_experts_per_tok": 8, "num_shared_experts": 1,
                                  "first_k_dense_replace": 2, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                                  "qk_rope_head_dim": 64, "v_head_dim": 128, "head_dim": 128,
                                  "short_conv_kernel_size": 4, "layer_group_size": 6,
                                  "max_position_embeddings": 262144}),
    # RecurrentGemma (configuration_recurrent_gemma.py, modeling_recurrent_gemma.py; read by recurrent_gemma.py): the
    # RG-LRU recurrent block and local attention (q/k/v with attention_bias, o_proj always with a bias) in the cycle of
    # block_types, each then a gated GELU MLP of intermediate_size / 2 with biases. Defaults: RecurrentGemmaConfig's
    # (its docstring's checkpoint google/recurrentgemma-2b, but for intermediate_size: 3 x 2560 there, 15360 in the
    # checkpoint); lru_width and num_key_value_heads absent mean hidden_size and num_attention_heads.
    "recurrent_gemma": replace(_LLAMA, o_bias=True, mlp_bias=True, defaults={
        "tie_word_embeddings": True, "vocab_size": 256000, "hidden_size": 2560, "intermediate_size": 7680,
        "num_hidden_layers": 26, "num_attention_heads": 10, "attention_window_size": 2048, "conv1d_width": 4,
        "hidden_activation": "gelu_pytorch_tanh", "block_types": ["recurrent", "recurrent", "attention"]}),
    # OLMo Hybrid (configuration_olmo_hybrid.py, modular_olmo_hybrid.py): Qwen3-Next's Gated DeltaNet (q, k, v, g, a, b
    # as separate matrices) and Olmo-3's attention (q/k RMSNorms over all heads' elements, post-norms), a dense MLP in
    # every layer. The linear-attention widths default to values derived from the heads (hybrid.py reads them).
    "olmo_hybrid": replace(_LLAMA, qk_norm=True, qk_norm_across_heads=True,
                           defaults={"tie_word_embeddings": False, "vocab_size": 100352, "hidden_size": 3840,
                                     "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 30,
                                     "max_position_embeddings": 65536, "linear_conv_kernel_dim": 4}),
    # Lara-Mini (configuration_lara_mini.py, modular_lara_mini.py): Qwen3.5's Gated DeltaNet, Qwen3's attention (q/k
    # norms per head) over a window with RoPE or over everything without, every layer a MoE whose shared expert is
    # added without a gate.
    "lara_mini": replace(_LLAMA, qk_norm=True,
                         defaults={"tie_word_embeddings": True, "vocab_size": 151936, "hidden_size": 1024,
                                   "num_hidden_layers": 34, "num_attention_heads": 16, "num_key_value_heads": 4,
                                   "head_dim": 128, "max_position_embeddings": 131072, "sliding_window": 512,
                                   "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
                                   "linear_value_head_dim": 128, "linear_num_key_heads": 8,
                                   "linear_num_value_heads": 16, "num_experts": 128, "num_experts_per_tok": 4,
                                   "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512}),
    # Qwen3.5 text towers (configuration_qwen3_5.py, configuration_qwen3_5_moe.py): Qwen3-Next's layers (the GDN in_proj
    # split into qkv, z, b, a: the same widths), a dense MLP or Qwen-MoE experts with a gated shared expert.
    "qwen3_5_text": replace(_LLAMA, qkv_bias=False, o_bias=False, qk_norm=True, shared_gate=True,
                            defaults={"tie_word_embeddings": False, "head_dim": 256, "linear_conv_kernel_dim": 4,
                                      "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                                      "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                                      "full_attention_interval": 4}),
    # DeepSeek-V3.2 (configuration_deepseek_v32.py): DeepSeek-V3 plus a lightning indexer per layer (DSA).
    "deepseek_v32": replace(_LLAMA, router_bias=True, defaults={"tie_word_embeddings": False, "index_topk": 2048,
                                                                "index_n_heads": 64, "index_head_dim": 128}),
    # A.X-K2 (configuration_axk2.py, modular_axk2.py; read with axk2.py): DeepSeek-V3.2's MLA + DSA and MoE, with
    # q_gate_proj (queries and an output gate from the q latent taken twice) and low-rank gated RMSNorms. Defaults: the
    # config class's (A.X-K2-Light per its docstring), the first layer dense (its first_k_dense_replace default).
    "axk2": replace(_LLAMA, router_bias=True, defaults={
        "tie_word_embeddings": False, "vocab_size": 163840, "hidden_size": 2048, "intermediate_size": 5120,
        "moe_intermediate_size": 512, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 32,
        "n_shared_experts": 1, "n_routed_experts": 128, "num_experts_per_tok": 8, "kv_lora_rank": 128,
        "q_lora_rank": 384, "qk_rope_head_dim": 32, "v_head_dim": 64, "qk_nope_head_dim": 64,
        "max_position_embeddings": 131072, "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 16,
        "gated_norm_rank": 16, "first_k_dense_replace": 1}),
    # DeepSeek-V4 (configuration_deepseek_v4.py; read by deepseek_v4.py): shared-KV MQA over a sliding window plus
    # compressed KV (CSA / HCA), hyper-connections, MoE with a shared expert.
    "deepseek_v4": replace(_LLAMA, defaults={
        "tie_word_embeddings": False, "vocab_size": 129280, "hidden_size": 4096, "num_hidden_layers": 43,
        "num_attention_heads": 64, "num_key_value_heads": 1, "head_dim": 512, "q_lora_rank": 1024, "o_groups": 8,
        "o_lora_rank": 1024, "sliding_window": 128, "index_n_heads": 64, "index_head_dim": 128, "index_topk": 512,
        "hc_mult": 4, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 6,
        "moe_intermediate_size": 2048, "max_position_embeddings": 1048576}),
    # Hy4 (configuration_hy_v4.py, configuration_hy_v4_vl.py; read by hy4.py): iHC hyper-connections, MLA with sinks
    # and an output gate from x, GLM-5's DSA with shared-indexer layers, a sigmoid router with e_score_correction_bias
    # over experts of moe_intermediate_size and a shared one; the first layer dense. Defaults: the config classes'.
    "hy_v4": replace(_LLAMA, router_bias=True, expert_keys=("moe_intermediate_size",), defaults=_HY4_DEFAULTS),
    "hy_v4_vl_text": replace(_LLAMA, router_bias=True, expert_keys=("moe_intermediate_size",), defaults={
        **_HY4_DEFAULTS, "hidden_size": 6144, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_hidden_layers": 78, "num_attention_heads": 64, "q_lora_rank": 2048, "index_n_heads": 32}),
    # Zamba2 (configuration_zamba2.py; read by zamba.py): Mamba-2 blocks, shared transformer blocks at hybrid layers.
    "zamba2": replace(_LLAMA, defaults={"tie_word_embeddings": True, "vocab_size": 32000, "hidden_size": 2560,
                                        "num_hidden_layers": 54, "mamba_d_state": 64, "mamba_d_conv": 4,
                                        "mamba_expand": 2, "mamba_ngroups": 1, "n_mamba_heads": 8, "chunk_size": 256,
                                        "num_attention_heads": 32, "num_mem_blocks": 1, "adapter_rank": 128,
                                        "max_position_embeddings": 4096, "hidden_act": "gelu"}),
    # Zamba (configuration_zamba.py; read by zamba.py): multi-head Mamba-1 blocks, one shared transformer block.
    "zamba": replace(_LLAMA, defaults={"tie_word_embeddings": True, "vocab_size": 32000, "hidden_size": 3712,
                                       "intermediate_size": 14848, "num_hidden_layers": 76, "num_attention_heads": 16,
                                       "num_key_value_heads": 16, "n_mamba_heads": 2, "mamba_d_state": 16,
                                       "mamba_d_conv": 4, "mamba_expand": 2, "max_position_embeddings": 4096,
                                       "hidden_act": "gelu"}),
    # GLM-5 (configuration_glm_moe_dsa.py): DeepSeek-V3.2's MLA + DSA and MoE; indexer_types 'shared' layers reuse the
    # previous 'full' layer's top-k selection (no indexer of their own, no index-key cache).
    "glm_moe_dsa": replace(_LLAMA, router_bias=True,
                           defaults={"tie_word_embeddings": False, "index_topk": 2048, "index_n_heads": 32,
                                     "index_head_dim": 128, "first_k_dense_replace": 3, "n_shared_experts": 1}),
    # dots3-note (configuration_dots3_note.py Dots3NoteTextConfig, modular_dots3_note.py; read by dots3.py): MLA with
    # a rope-key RMSNorm and a sigmoid gate per head (g_proj), DSA layers (GLM-5's indexer) beside sliding-window MLA
    # layers of their own shape (hub: swa_* keys; transformers: per_layer_config), DeepSeek-V3's MoE (sigmoid router
    # with e_score_correction_bias) with shared experts of shared_experts_intermediate_size; the first layer dense.
    # Defaults: the config class's (dots-studio/dots3-note-prev's text model).
    **dict.fromkeys(("dots3_note", "dots3_note_text"), replace(_LLAMA, router_bias=True, expert_keys=(
        "moe_intermediate_size",), defaults={
            "tie_word_embeddings": False, "vocab_size": 152064, "hidden_size": 5120, "intermediate_size": 13824,
            "moe_intermediate_size": 1536, "num_hidden_layers": 46, "num_attention_heads": 128, "n_routed_experts": 256,
            "num_experts_per_tok": 8, "n_shared_experts": 1, "shared_experts_intermediate_size": 1536,
            "q_lora_rank": 1024, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
            "v_head_dim": 128, "index_topk": 2048, "index_n_heads": 64, "index_head_dim": 128,
            "first_k_dense_replace": 1, "sliding_window_size": 512, "max_position_embeddings": 524288})),
    # Inkling (configuration_inkling.py InklingTextConfig, modular_inkling.py; read by inkling.py): attention without
    # RoPE (q/k norms, a relative position bias from r_proj, short convs on k and v) of its own heads on the
    # 'hybrid_sliding' layers, short convs on both sub-blocks' outputs, a dense gated MLP or experts beside
    # n_shared_experts shared ones the router scores too, a sigmoid router with e_score_correction_bias, a normed
    # embedding, an untied LM head. Defaults: the config class's (thinkingmachines/Inkling's text model).
    "inkling_text": replace(_LLAMA, qk_norm=True, router_bias=True, rope=False, defaults={
        "tie_word_embeddings": False, "vocab_size": 201024, "hidden_size": 6144, "num_hidden_layers": 66,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "swa_num_attention_heads": 64,
        "swa_num_key_value_heads": 16, "swa_head_dim": 128, "sliding_window_size": 512, "d_rel": 16,
        "rel_extent": 1024, "max_position_embeddings": 131072, "conv_kernel_size": 4, "intermediate_size": 24576,
        "moe_intermediate_size": 3072, "n_routed_experts": 256, "num_experts_per_tok": 6, "n_shared_experts": 2,
        "hidden_act": "silu"}),
    # LFM2-MoE (configuration_lfm2_moe.py): LFM2's short-conv / attention layers; dense gated MLP in the first
    # num_dense_layers, then gated experts with a routing bias (expert_bias, kept in the checkpoint).
    "lfm2_moe": replace(_LLAMA, qk_norm=True, router_bias="use_expert_bias", expert_keys=("moe_intermediate_size",),
                        defaults={"tie_word_embeddings": True, "conv_L_cache": 3, "use_expert_bias": True,
                                  "num_dense_layers": 2}),
    # Granite-4.0 hybrid (configuration_granitemoehybrid.py): Bamba-style Mamba-2 / attention, then experts of
    # intermediate_size plus a shared gated MLP of shared_intermediate_size in every layer.
    "granitemoehybrid": replace(_LLAMA, expert_keys=("intermediate_size",),
                                defaults={"tie_word_embeddings": False, "mamba_n_heads": 128, "mamba_n_groups": 1,
                                          "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
                                          "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_proj_bias": False,
                                          "shared_intermediate_size": 1024, "num_local_experts": 8,
                                          "num_experts_per_tok": 2}),
    # Nemotron-NAS (DeciLM): Llama blocks whose KV heads and MLP width vary per layer (block_configs).
    "deci": _LLAMA,
    "nemotron-nas": _LLAMA,
    # Ling 1.x (remote modeling_bailing_moe.py, BailingMoeForCausalLM; vLLM bailing_moe.py): a fused query_key_value
    # (bias use_qkv_bias) and dense (bias use_bias), bias-free MLPs, experts and num_shared_experts shared ones of
    # moe_intermediate_size, MoE from first_k_dense_replace on; its config class's sliding_window is never used.
    # Defaults: BailingMoeConfig's. Ling 2.0 (BailingMoeV2ForCausalLM) shares the model_type: bailing.py.
    "bailing_moe": replace(_LLAMA, qkv_bias="use_qkv_bias", o_bias="use_bias", mlp_bias=False, qk_norm="use_qk_norm",
                           router_bias="moe_router_enable_expert_bias", expert_keys=("moe_intermediate_size",),
                           windows_from_types=True,
                           defaults={"tie_word_embeddings": False, "vocab_size": 30592, "hidden_size": 1024,
                                     "num_hidden_layers": 24, "num_attention_heads": 16, "use_bias": True,
                                     "use_qkv_bias": False, "max_position_embeddings": 16384, "num_experts": 16,
                                     "num_shared_experts": 0, "num_experts_per_tok": 2, "first_k_dense_replace": 0}),
    # DeepSeek-MoE (remote modeling_deepseek.py, DeepseekForCausalLM; vLLM deepseek.py): Llama attention, n_routed_experts
    # of moe_intermediate_size and n_shared_experts fused into one MLP, MoE from first_k_dense_replace on every
    # moe_layer_freq-th layer (the generic rule). Defaults: DeepseekConfig's (configuration_deepseek.py).
    "deepseek": replace(_LLAMA, expert_keys=("moe_intermediate_size",),
                        defaults={"tie_word_embeddings": False, "vocab_size": 102400, "hidden_size": 4096,
                                  "intermediate_size": 11008, "moe_intermediate_size": 1407, "num_hidden_layers": 30,
                                  "num_attention_heads": 32, "num_key_value_heads": 32, "moe_layer_freq": 1,
                                  "first_k_dense_replace": 0, "max_position_embeddings": 2048}),
    # openPangu-Embedded (remote modeling_openpangu_dense.py): Llama with q/k/v/o bias = bias (default true).
    "PanguEmbedded": replace(_LLAMA, qkv_bias="bias", o_bias="bias",
                             defaults={"tie_word_embeddings": False, "bias": True, "vocab_size": 153376,
                                       "hidden_size": 4096, "intermediate_size": 12800, "num_hidden_layers": 34,
                                       "num_attention_heads": 32, "num_key_value_heads": 8,
                                       "max_position_embeddings": 32768}),
    "hunyuan_v1_dense": replace(_LLAMA, qk_norm=True),  # query_layernorm / key_layernorm always built
    # Hunyuan-MoE (modeling_hunyuan_v1_moe.py): experts and one shared_mlp of intermediate_size, q/k RMSNorms.
    "hunyuan_v1_moe": replace(_LLAMA, qk_norm=True, expert_keys=("intermediate_size",), fixed_shared_experts=1),
    # BitNet: gate_proj/up_proj with relu² (gated) plus attn_sub_norm and ffn_sub_norm: 4 norms per block.
    "bitnet": replace(_LLAMA, norms=4),
    # Nemotron: up_proj -> relu² -> down_proj, no gate; LayerNorm1P (weight + bias).
    "nemotron": replace(_LLAMA, gated=False, norm="layernorm"),
    # Cohere: one input_layernorm (LayerNorm without bias) feeding attention and MLP in parallel; Cohere2: RoPE on its
    # sliding layers only (Cohere2Attention), as EXAONE-4's.
    "cohere": replace(_LLAMA, norms=1, parallel=True, bias_free_layernorm=True, qk_norm="use_qk_norm",
                      defaults={"tie_word_embeddings": True}),
    "cohere2": replace(_LLAMA, norms=1, parallel=True, bias_free_layernorm=True, nope_full_layers=True,
                       defaults={"tie_word_embeddings": True}),
    # Cohere2-MoE (configuration_cohere2_moe.py, modular_cohere2_moe.py; North-Mini-Code, Command A+; read with
    # cohere.py): Cohere2's parallel block (one input norm: RMSNorm when rms_norm_eps is set, else a bias-free
    # LayerNorm), RoPE on the sliding layers only (and on the dense prefix when prefix_dense_sliding_window_pattern is
    # 1), a dense prefix MLP of prefix_dense_intermediate_size, then Mixtral's experts of intermediate_size beside
    # num_shared_experts shared ones fused into one MLP (no gate), a bias-free router.
    "cohere2_moe": replace(_LLAMA, norms=1, parallel=True, bias_free_layernorm=True, mlp_bias=False,
                           ffn_keys=("prefix_dense_intermediate_size", "intermediate_size"),
                           expert_keys=("intermediate_size",),
                           defaults={"tie_word_embeddings": True, "vocab_size": 256000, "hidden_size": 8192,
                                     "intermediate_size": 22528, "num_hidden_layers": 40, "num_attention_heads": 64,
                                     "head_dim": 128, "max_position_embeddings": 8192, "sliding_window": 4096,
                                     "sliding_window_pattern": 4, "prefix_dense_sliding_window_pattern": 1,
                                     "num_experts": 8, "num_experts_per_tok": 2, "num_shared_experts": 0,
                                     "expert_selection_fn": "softmax",
                                     "shared_expert_combination_strategy": "average"}),
    # Remote-code families vLLM serves. Ouro (vLLM ouro.py; read with ouro.py): Qwen2-style blocks without bias,
    # sandwich RMSNorms (4 a block), the stack run total_ut_steps times, an early-exit gate Linear(hidden, 1).
    "ouro": replace(_LLAMA, norms=4, qkv_bias=False, o_bias=False, mlp_bias=False,
                    defaults={"tie_word_embeddings": False, "total_ut_steps": 4}),
    # MiniCPM / MiniCPM4 (MiniCPMConfig), MiniCPM3 (MLA; v_head_dim = hidden / heads when absent, layers.py): Llama
    # blocks with muP scalars (scale_emb, scale_depth, dim_model_base: no weights), tied unless the config says not.
    **dict.fromkeys(("minicpm", "minicpm4", "minicpm3"), replace(_LLAMA, defaults={"tie_word_embeddings": True})),
    # InternLM2 (configuration_internlm2.py): wqkv and wo with a bias when `bias` (default true), w1 / w2 / w3 without.
    "internlm2": replace(_LLAMA, qkv_bias="bias", o_bias="bias", mlp_bias=False,
                         defaults={"tie_word_embeddings": False, "bias": True}),
    # TeleChat / TeleChat2 (modeling_telechat.py, vLLM telechat2.py; transformers' telechat2 in Llama's keys): a bias on
    # dense (o_proj) and down_proj only, RMSNorms (whatever layer_norm_epsilon's name says), n_layer / n_head / ffn_*.
    "telechat": replace(_LLAMA, qkv_bias=False, o_bias=True, mlp_bias=False, down_bias=True,
                        ffn_keys=("ffn_hidden_size", "intermediate_size"), defaults={"tie_word_embeddings": False}),
    "telechat2": replace(_LLAMA, o_bias=True, mlp_bias=False, down_bias=True, defaults={"tie_word_embeddings": False}),
    # StarCoder2: LayerNorm (norm_type layer_norm), c_fc/c_proj (plain gelu MLP), use_bias on every Linear.
    "starcoder2": replace(_GPT, rope=True, qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias",
                          ffn_keys=("intermediate_size",), ffn_mult=None,
                          defaults={"tie_word_embeddings": True, "use_bias": True}),
    "gpt2": replace(_GPT, positions_key="n_positions", defaults={"tie_word_embeddings": True}),
    # JAIS (modeling_jais.py; read with jais.py): GPT-2's blocks with a SwiGLU MLP (c_fc, c_fc2, c_proj), ALiBi (its
    # slopes a parameter) or a learned position table (position_embedding_type). Defaults: JAISConfig's.
    "jais": replace(_GPT, gated=True, positions_key="n_positions",
                    defaults={"tie_word_embeddings": True, "activation_function": "gelu_new", "n_positions": 1024,
                              "position_embedding_type": "learned"}),
    # GPT-BigCode (StarCoder 1, SantaCoder): GPT-2 with multi_query (one KV head), default true.
    "gpt_bigcode": replace(_GPT, positions_key="n_positions",
                           defaults={"tie_word_embeddings": True, "multi_query": True}),
    # GPT-Neo: q/k/v without bias, out_proj with bias; learned positions; intermediate_size null -> 4·hidden.
    "gpt_neo": replace(_GPT, qkv_bias=False, positions_key="max_position_embeddings", ffn_keys=("intermediate_size",),
                       defaults={"tie_word_embeddings": True, "max_position_embeddings": 2048}),
    # CodeGen: GPT-J's parallel block (one ln_1), qkv_proj/out_proj without bias, fc_in/fc_out with, LM head bias.
    "codegen": replace(_GPT, norms=1, parallel=True, qkv_bias=False, o_bias=False, rope=True, lm_head_bias=True,
                       defaults={"tie_word_embeddings": False}),
    # BLOOM: ALiBi, LayerNorm after the embedding, 4·hidden MLP, every Linear with bias.
    "bloom": replace(_GPT, ffn_keys=(), defaults={"tie_word_embeddings": True}),
    # XGLM: sinusoidal positions (no weights), fc1/fc2 of ffn_dim with bias, 2 LayerNorms per block.
    "xglm": replace(_GPT, ffn_keys=("ffn_dim",), ffn_mult=None, defaults={"tie_word_embeddings": True}),
    # MPT: LayerNorm without bias (no_bias), Wqkv/out_proj/up/down without bias, ALiBi, expansion_ratio·d_model.
    "mpt": Architecture(gated=False, qkv_bias=False, o_bias=False, mlp_bias=False, rope=False, nested=("attn_config",),
                        bias_free_layernorm=True, ffn_keys=(), defaults={"tie_word_embeddings": True}),
    # DBRX: attn_config / ffn_config sub-dicts; LayerNorm without bias; gated experts (w1, v1, w2).
    "dbrx": Architecture(qkv_bias=False, o_bias=False, mlp_bias=False, nested=("attn_config", "ffn_config"),
                         expert_keys=("ffn_hidden_size",), bias_free_layernorm=True,
                         defaults={"tie_word_embeddings": False}),
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
                        mlp_bias=True, lm_head_bias=True, qk_norm="qk_layernorm",
                        defaults={"tie_word_embeddings": False}),
    "gpt_neox": Architecture(norm="layernorm", gated=False, parallel="use_parallel_residual", mlp_bias=True,
                             defaults={"tie_word_embeddings": False, "attention_bias": True,
                                       "use_parallel_residual": True}),
    # Remote-code families (their own key names; the layers are built by chatglm.py, qwen1.py, baichuan.py). ChatGLM2 /
    # 3, GLM-4-9B: ChatGLMConfig's defaults (configuration_chatglm.py); an output_layer of its own.
    "chatglm": Architecture(ffn_keys=("ffn_hidden_size",), vocab_keys=("padded_vocab_size",), rmsnorm_key="rmsnorm",
                            defaults={"tie_word_embeddings": False, "num_layers": 28, "padded_vocab_size": 65024,
                                      "hidden_size": 4096, "ffn_hidden_size": 13696, "kv_channels": 128,
                                      "num_attention_heads": 32, "seq_length": 2048, "rmsnorm": True}),
    # Qwen (v1, QWenLMHeadModel): c_attn with bias, c_proj and the MLP with one only when no_bias is false (qwen1.py);
    # QWenConfig's defaults (configuration_qwen.py: Qwen-7B's shape)
    "qwen": replace(_LLAMA, qkv_bias=True, o_bias=False, mlp_bias=False,
                    ffn_keys=("intermediate_size", "ffn_hidden_size"),
                    defaults={"tie_word_embeddings": False, "vocab_size": 151936, "hidden_size": 4096,
                              "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 22016,
                              "kv_channels": 128, "max_position_embeddings": 8192, "no_bias": True}),
    # Baichuan-7B, Baichuan-13B, Baichuan2-7B / 13B (W_pack, ALiBi on the 13B models)
    "baichuan": replace(_LLAMA, qkv_bias=False, o_bias=False, mlp_bias=False, context_keys=("model_max_length",)),
    # Remote-code families of Llama's block (dense_remote.py notes their own keys). Orion (modeling_orion.py, vLLM
    # orion.py): nn.LayerNorm with bias for both block norms and the final one (eps in rms_norm_eps).
    "orion": replace(_LLAMA, norm="layernorm"),
    # MiMo-7B (vLLM mimo.py: Qwen2ForCausalLM's layers, q/k/v with bias, o_proj without; its mtp_layers skipped).
    "mimo": replace(_LLAMA, qkv_bias=True, o_bias=False),
    # XVERSE (configuration_xverse.py; vLLM runs XverseForCausalLM as Llama): the MoE release states num_experts,
    # moe_top_k, num_shared_experts (experts of intermediate_size); no key means dense. KV heads default to heads.
    "xverse": _LLAMA,
    # Solar Pro (SolarConfig, vLLM solar.py): Llama's block; sliding_window (2047 when absent) on every layer.
    "solar": replace(_LLAMA, defaults={"tie_word_embeddings": False, "sliding_window": 2047}),
    "TeleFLM": _LLAMA,  # Tele-FLM (vLLM teleflm.py): LlamaForCausalLM with muP multipliers
    # PLaMo-3 (Plamo3Config, vLLM plamo3.py): norms before and after mixer and MLP, q/k RMSNorms per head, every
    # sliding_window_pattern-th layer full, the others over window_size. Defaults: the hub config class's.
    "plamo3": replace(_LLAMA, norms=4, qk_norm=True, defaults={
        "tie_word_embeddings": True, "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 13312,
        "max_position_embeddings": 2048, "window_size": 128, "sliding_window_pattern": 8}),
}
ARCHITECTURES["qwen3_5_moe_text"] = ARCHITECTURES["qwen3_5_text"]
ARCHITECTURES["gemma4_unified_text"] = ARCHITECTURES["gemma4_text"]  # Gemma-4 "unified": the same text decoder
GEMMA4_TYPES = ("gemma4_text", "gemma4_unified_text")
PER_LAYER_INPUT_TYPES = GEMMA4_TYPES + ("gemma3n_text",)  # per-layer input embeddings, layers that reuse K and V
UNKNOWN_ARCHITECTURE = Architecture(gated=None, ffn_keys=("intermediate_size", "ffn_dim", "ffn_hidden_size", "n_inner"))

# The text tower's model_type of a multimodal wrapper whose text_config does not state its own.
TEXT_MODEL_TYPES = {"gemma3": "gemma3_text", "llama4": "llama4_text", "qwen3_vl": "qwen3_vl_text",
                    "qwen3_vl_moe": "qwen3_vl_moe_text", "gemma4": "gemma4_text",
                    "gemma4_unified": "gemma4_unified_text", "qwen3_5": "qwen3_5_text", "gemma3n": "gemma3n_text",
                    "qwen3_5_moe": "qwen3_5_moe_text", "step3p7": "step3p5", "dots3_note": "dots3_note_text",
                    "hy_v4_vl": "hy_v4_vl_text", "step3_vl": "step3_text", "qwen3_omni_moe": "qwen3_omni_moe_text",
                    "qwen3_omni_moe_thinker": "qwen3_omni_moe_text", "qwen2_5_omni": "qwen2_5_omni_text",
                    "qwen2_5_omni_thinker": "qwen2_5_omni_text", "deepseek_vl_v2": "deepseek_v2",
                    "minimax_m3_vl": "minimax_m3_vl_text", "inkling_mm_model": "inkling_text"}

# Remote-code classes (config.json "architectures") -> their model_type, for a copy of the config without model_type
REMOTE_CODE_CLASSES = {"ChatGLMModel": "chatglm", "ChatGLMForConditionalGeneration": "chatglm",
                       "QWenLMHeadModel": "qwen", "BaichuanForCausalLM": "baichuan", "BaiChuanForCausalLM": "baichuan"}

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
                        "attention_type")
# Keys that contain those words but do not change the shapes (routing and training hyper-parameters).
SHAPE_NEUTRAL_KEYS = frozenset((
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
