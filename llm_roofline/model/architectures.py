"""Per-model_type architecture table.

`ARCHITECTURES` says, per `model_type`, what the modeling code hard-codes and config.json does not (Qwen2's q/k/v
bias, GPT-2's biases, Gemma-2's four norms per block, gpt-oss attention sinks, ...), plus the defaults of absent
keys, copied from the transformers configuration class of that model_type (configuration_<type>.py: the value is
written here, so the reader's result depends on the config file and this table only, never on what is installed).
The remote-code types vLLM serves have their rows in remote_code.py; the key names are key_names.py's.
"""

from __future__ import annotations

from dataclasses import replace

from .remote_code import REMOTE_CODE_ARCHITECTURES
from .traits import GPT, LLAMA, Architecture

_GEMMA_DEFAULTS = {"tie_word_embeddings": True, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh"}

_HY4_DEFAULTS = {  # HYV4Config's (its docstring checkpoint tencent/Hy4-preview; not the released model's shape)
    "tie_word_embeddings": False, "vocab_size": 120832, "hidden_size": 2816, "intermediate_size": 6912,
    "moe_intermediate_size": 768, "num_hidden_layers": 34, "num_attention_heads": 32, "n_routed_experts": 256,
    "n_shared_experts": 1, "num_experts_per_tok": 8, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 192,
    "qk_rope_head_dim": 64, "v_head_dim": 256, "index_topk": 2048, "index_n_heads": 16, "index_head_dim": 128,
    "hc_mult": 4, "max_position_embeddings": 262144}

ARCHITECTURES: dict[str, Architecture] = {
    "llama": LLAMA,
    "mistral": replace(LLAMA, defaults={"tie_word_embeddings": False, "sliding_window": 4096}),
    "mixtral": LLAMA,
    "phi3": LLAMA,  # fused qkv_proj / gate_up_proj: same matrices
    # Phi-4-multimodal (modeling_phi4_multimodal.py): Phi-4-mini's phi3 decoder beside vision and audio towers (scope.py
    # names them); its vision / speech LoRA adapters are PEFT adapters outside the model class (hf.py notes them)
    "phi4_multimodal": LLAMA,
    "qwen2": replace(LLAMA, qkv_bias=True, o_bias=False),  # Qwen2Attention: q/k/v bias=True, o_proj no bias
    "qwen2_moe": replace(LLAMA, qkv_bias="qkv_bias", o_bias=False, shared_gate=True,
                         defaults={"tie_word_embeddings": False, "qkv_bias": True}),
    "qwen3": replace(LLAMA, qk_norm=True),
    "qwen3_moe": replace(LLAMA, qk_norm=True),
    "deepseek_v2": LLAMA,
    # DeepSeek-V3's router stores e_score_correction_bias (n_routed_experts), a per-expert bias of the routing
    # scores (used for top-k selection): a router bias of the same size.
    "deepseek_v3": replace(LLAMA, router_bias=True),
    # Kimi-K2 / K2.5's text tower (text_config model_type kimi_k2, architectures DeepseekV3ForCausalLM): DeepSeek-V3's.
    "kimi_k2": replace(LLAMA, router_bias=True),
    # GLM-4.5 (modeling_glm4_moe.py): q/k/v bias = attention_bias, o_proj without; optional per-head q/k norms;
    # DeepSeek-style router with e_score_correction_bias, n_shared_experts, first_k_dense_replace.
    "glm4_moe": replace(LLAMA, o_bias=False, qk_norm="use_qk_norm", router_bias=True),
    "gpt_oss": replace(LLAMA, mlp_bias=True, sinks=True, router_bias=True),
    # Gemma's MLP is gate_proj/up_proj/down_proj with gelu_pytorch_tanh: gated (GeGLU), whatever the activation says.
    "gemma": replace(LLAMA, defaults=_GEMMA_DEFAULTS),
    "gemma2": replace(LLAMA, norms=4, defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096}),
    # VaultGemma (modeling_vaultgemma.py): Gemma-2's layers with two norms (input, pre-feedforward).
    "vaultgemma": replace(LLAMA, defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096}),
    # EXAONE-4 (modeling_exaone4.py): post-norms only (after attention, after MLP), q/k norms, window layers; with a
    # window set, the full-attention layers skip RoPE (NoPE); every sliding_window_pattern-th layer is full.
    "exaone4": replace(LLAMA, qk_norm=True, nope_full_layers=True,
                       defaults={"tie_word_embeddings": False, "sliding_window": 4096, "sliding_window_pattern": 4}),
    # EXAONE-MoE / K-EXAONE (configuration_exaone_moe.py, modular_exaone_moe.py): EXAONE-4's attention (q/k norms, NoPE
    # on the full layers) in pre-norm blocks (OLMoE's), DeepSeek-V3's MoE (experts and num_shared_experts shared ones of
    # moe_intermediate_size, sigmoid router with e_score_correction_bias); mlp_layer_types, else the first
    # first_k_dense_replace layers dense.
    "exaone_moe": replace(LLAMA, qk_norm=True, router_bias=True, nope_full_layers=True,
                          expert_keys=("moe_intermediate_size",),
                          defaults={"tie_word_embeddings": False, "sliding_window": 4096, "sliding_window_pattern": 4,
                                    "first_k_dense_replace": 1, "num_experts": 64, "num_experts_per_tok": 8,
                                    "num_shared_experts": 1, "moe_intermediate_size": 1024}),
    # SmolLM3 (modeling_smollm3.py): Llama with NoPE layers (no_rope_layers[i] = 0), tied embeddings.
    "smollm3": replace(LLAMA, nope_layers=True, defaults={"tie_word_embeddings": True, "no_rope_layer_interval": 4}),
    "gemma3_text": replace(LLAMA, norms=4, qk_norm=True,
                           defaults={**_GEMMA_DEFAULTS, "sliding_window": 4096, "sliding_window_pattern": 6,
                                     "vocab_size": 262208, "max_position_embeddings": 131072}),
    # Gemma-4 (configuration_gemma4.py Gemma4TextConfig): Gemma-3's blocks (4 norms, q/k norms, gated GELU MLP);
    # full-attention layers of global_head_dim (layers.gemma4_global_attention), optional MoE block beside the MLP.
    "gemma4_text": replace(LLAMA, norms=4, qk_norm=True, router_bias=True,
                           defaults={**_GEMMA_DEFAULTS, "sliding_window": 512, "sliding_window_pattern": 6,
                                     "global_head_dim": 512, "vocab_size": 262144,
                                     "max_position_embeddings": 131072}),
    # Gemma-3n (configuration_gemma3n.py, modeling_gemma3n.py Gemma3nTextDecoderLayer): Gemma-3's blocks with per-layer
    # intermediate sizes, Gemma-4's per-layer inputs and KV reuse, AltUp (altup_num_inputs copies of the hidden state:
    # one runs through the layer, the others are predicted and corrected from it) and LAuReL (a laurel_rank residual).
    "gemma3n_text": replace(LLAMA, norms=4, qk_norm=True,
                            defaults={**_GEMMA_DEFAULTS, "sliding_window": 512, "vocab_size": 262400,
                                      "max_position_embeddings": 32768, "altup_num_inputs": 4, "laurel_rank": 64}),
    # MiMo-V2-Flash (configuration_mimo_v2_flash.py; the hub's own config: model_type mimo_v2, hybrid_layer_pattern,
    # swa_* keys): full-attention and sliding-window layers of different KV heads, v_head_dim != head_dim, attention
    # sinks on the window layers, DeepSeek-style router; the first layer dense (layers.mimo_attention).
    **{t: replace(LLAMA, router_bias=True, defaults={"tie_word_embeddings": False, "first_k_dense_replace": 1})
       for t in ("mimo_v2_flash", "mimo_v2")},
    # Llama-4 (configuration_llama4.py Llama4TextConfig): every interleave_moe_layer_step-th layer is MoE with one
    # shared expert of intermediate_size, the others dense of intermediate_size_mlp; use_qk_norm is an L2 norm
    # without weights; 3 of 4 layers use chunked attention (no_rope_layers).
    "llama4_text": replace(LLAMA, ffn_keys=("intermediate_size_mlp",), expert_keys=("intermediate_size",),
                           fixed_shared_experts=1, chunked_attention=True,
                           defaults={"tie_word_embeddings": False, "intermediate_size_mlp": 16384,
                                     "intermediate_size": 8192, "interleave_moe_layer_step": 1,
                                     "no_rope_layer_interval": 4, "attention_chunk_size": 8192, "head_dim": 128}),
    # ERNIE-4.5-MoE (configuration_ernie4_5_moe.py): use_bias on every Linear; router e_score_correction_bias;
    # moe_num_shared_experts shared experts of moe_intermediate_size; MoE on layers start..end every interval.
    "ernie4_5_moe": replace(LLAMA, qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias",
                            lm_head_bias="use_bias", router_bias=True,
                            defaults={"tie_word_embeddings": True, "use_bias": False, "moe_layer_start_index": 1,
                                      "moe_layer_interval": 1, "moe_num_shared_experts": 2}),
    "ernie4_5": replace(LLAMA, qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias",
                        lm_head_bias="use_bias", defaults={"tie_word_embeddings": True, "use_bias": False}),
    # dots.llm1 (configuration_dots1.py, modular_dots1.py): Qwen3's attention (q/k norms, q/k/v/o bias =
    # attention_bias) and DeepSeek-V3's MLP, MoE and router (e_score_correction_bias; n_shared_experts of
    # moe_intermediate_size; the first first_k_dense_replace layers dense); layer i uses the window when
    # sliding_window is set and i >= max_window_layers (its config class, whatever use_sliding_window says).
    "dots1": replace(LLAMA, qk_norm=True, router_bias=True, window_from_layer=True,
                     defaults={"tie_word_embeddings": False, "max_window_layers": 62, "first_k_dense_replace": 0}),
    # Qwen2-VL / Qwen2.5-VL: Qwen2's decoder (q/k/v bias) with the text keys at the top level or in text_config.
    **{t: replace(LLAMA, qkv_bias=True, o_bias=False)
       for t in ("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text")},
    "qwen3_vl_text": replace(LLAMA, qk_norm=True),
    "qwen3_vl_moe_text": replace(LLAMA, qk_norm=True),
    "qwen3_omni_moe_text": replace(LLAMA, qk_norm=True),  # Qwen3-Omni's thinker: Qwen3-MoE's decoder
    "qwen2_5_omni_text": replace(LLAMA, qkv_bias=True, o_bias=False),  # Qwen2.5-Omni's thinker: Qwen2's decoder
    # Molmo2 (modular_molmo2.py; read with molmo2.py): Qwen3's decoder, q/k/v bias = attention_bias, its q/k norm per
    # head or over all heads (qk_norm_type). Defaults: Molmo2TextConfig's (allenai/Molmo2-8B's shape).
    "molmo2_text": replace(LLAMA, qkv_bias="attention_bias", o_bias=False, qk_norm="use_qk_norm", defaults={
        "tie_word_embeddings": False, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 151936, "additional_vocab_size": 128, "attention_bias": False,
        "use_qk_norm": True, "qk_norm_type": "qwen3", "num_hidden_layers": 36, "intermediate_size": 12288,
        "max_position_embeddings": 36864, "norm_after": False}),
    # Recurrent / hybrid models (hybrid.py). Mamba2ForCausalLM (configuration_mamba2.py defaults: Mamba-Codestral-7B).
    "mamba2": replace(LLAMA, norms=1, defaults={"tie_word_embeddings": False, "num_heads": 128, "head_dim": 64,
                                                 "state_size": 128, "n_groups": 8, "conv_kernel": 4, "expand": 2,
                                                 "use_conv_bias": True, "use_bias": False, "chunk_size": 256}),
    # Mamba / Falcon-Mamba (configuration_mamba.py, configuration_falcon_mamba.py): Mamba-1 blocks, tied embeddings.
    "mamba": replace(LLAMA, norms=1, defaults={"tie_word_embeddings": True, "state_size": 16, "conv_kernel": 4,
                                                "expand": 2, "use_conv_bias": True, "use_bias": False}),
    "falcon_mamba": replace(LLAMA, norms=1, defaults={"tie_word_embeddings": True, "state_size": 16,
                                                       "conv_kernel": 4, "expand": 2, "use_conv_bias": True,
                                                       "use_bias": False}),
    # Jamba (configuration_jamba.py): attention without RoPE every attn_layer_period-th layer, Mamba-1 (with dt/B/C
    # RMSNorms) elsewhere; MoE every expert_layer_period-th layer.
    "jamba": replace(LLAMA, rope=False, expert_keys=("intermediate_size",),
                     defaults={"tie_word_embeddings": False, "mamba_d_state": 16, "mamba_d_conv": 4,
                               "mamba_expand": 2, "mamba_conv_bias": True, "mamba_proj_bias": False}),
    # Bamba (configuration_bamba.py): Mamba-2 or attention, then a gated MLP, in every layer.
    "bamba": replace(LLAMA, defaults={"tie_word_embeddings": False, "mamba_n_heads": 128, "mamba_n_groups": 1,
                                       "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
                                       "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_proj_bias": False}),
    # MiniMax-Text-01 (configuration_minimax.py): lightning attention (block_size 256) and softmax GQA layers, every
    # layer MoE (num_local_experts of intermediate_size).
    "minimax": replace(LLAMA, expert_keys=("intermediate_size",),
                       defaults={"tie_word_embeddings": False, "block_size": 256}),
    # MiniMax-M2 / M2.5 (configuration_minimax_m2.py, modeling_minimax_m2.py): GQA, every layer MoE (num_local_experts
    # of intermediate_size, sigmoid router with e_score_correction_bias), q_norm / k_norm one RMSNorm over all heads'
    # elements (n_heads·head_dim and n_kv·head_dim weights: qk_norm_type "per_layer"); partial RoPE (rotary_dim).
    "minimax_m2": replace(LLAMA, qk_norm=True, qk_norm_across_heads=True, router_bias="use_routing_bias",
                          expert_keys=("intermediate_size",),
                          defaults={"tie_word_embeddings": False, "head_dim": 128, "use_routing_bias": True}),
    # MiniMax-M3's text tower (configuration_minimax_m3_vl.py MiniMaxM3VLTextConfig, modular_minimax_m3_vl.py; read by
    # minimax_m3.py): M2's GQA without bias, q/k RMSNorms per head, partial RoPE; on layer_types' minimax_m3_sparse
    # layers a block indexer (q from x, one key, q/k norms) picks index_topk_blocks blocks of index_block_size keys per
    # KV group; a dense MLP of dense_intermediate_size or experts of intermediate_size beside one shared expert of
    # shared_intermediate_size, a sigmoid router with e_score_correction_bias (mlp_layer_types). Defaults: the config
    # class's (MiniMaxAI/MiniMax-M3's shape; the hub's sparse_attention_config and moe_layer_freq lists are read too).
    "minimax_m3_vl_text": replace(LLAMA, qkv_bias=False, o_bias=False, mlp_bias=False, qk_norm="use_qk_norm",
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
    "xlstm": replace(LLAMA, defaults={"tie_word_embeddings": False, "vocab_size": 50304, "hidden_size": 4096,
                                       "num_hidden_layers": 32, "num_heads": 8, "qk_dim_factor": 0.5,
                                       "v_dim_factor": 1.0, "chunk_size": 64, "ffn_proj_factor": 2.667,
                                       "ffn_round_up_to_multiple_of": 64, "inference_state_dtype": "float32",
                                       "weight_mode": "single", "use_bias": False}),
    # LFM2 (configuration_lfm2.py): short-conv or attention (q/k norms) then a gated MLP; tied embeddings
    # (tie_embedding in Liquid's own configs); the final norm is embedding_norm.
    "lfm2": replace(LLAMA, qk_norm=True, defaults={"tie_word_embeddings": True, "conv_L_cache": 3}),
    # LFM3 (configuration_lfm3.py, modular_lfm3.py): LFM2's short-conv layers beside Qwen3 attention (q/k norms per
    # head) with a sigmoid gate per head from x (g_proj, use_attention_gate), over a window on 'sliding_attention'
    # layers; a gated MLP of intermediate_size as is; with use_sandwich_norm a norm after the operator and after the
    # MLP too (4 a block). Defaults: Lfm3Config's (its docstring's checkpoint, LiquidAI/LFM3-1.7B).
    "lfm3": replace(LLAMA, qk_norm=True, head_gate="use_attention_gate",
                    defaults={"tie_word_embeddings": True, "vocab_size": 128000, "hidden_size": 2048,
                              "intermediate_size": 7680, "num_hidden_layers": 24, "num_attention_heads": 16,
                              "num_key_value_heads": 4, "head_dim": 128, "max_position_embeddings": 128000,
                              "sliding_window": 256, "conv_L_cache": 7, "use_sandwich_norm": True,
                              "use_attention_gate": True}),
    # Falcon-H1 (configuration_falcon_h1.py): attention and Mamba-2 in parallel in every block, then a gated MLP.
    "falcon_h1": replace(LLAMA, defaults={"tie_word_embeddings": False, "mamba_d_ssm": 1024, "mamba_n_heads": 128,
                                           "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4,
                                           "mamba_expand": 2, "mamba_chunk_size": 256, "mamba_conv_bias": True,
                                           "mamba_proj_bias": False, "mamba_rms_norm": False,
                                           "projectors_bias": False}),
    # Nemotron-H (configuration_nemotron_h.py): one norm + one mixer per block; attention without RoPE; relu² MLP
    # (up, down); Mamba-2 mixers with conv bias (use_conv_bias) and no projection bias (mamba_proj_bias).
    "nemotron_h": replace(LLAMA, norms=1, gated=False, rope=False,
                          defaults={"tie_word_embeddings": False, "head_dim": 128, "mamba_num_heads": 128,
                                    "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
                                    "use_conv_bias": True, "mamba_proj_bias": False, "chunk_size": 128,
                                    "mlp_hidden_act": "relu2"}),
    # Qwen3-Next (configuration_qwen3_next.py): gated attention with q/k norms, Gated DeltaNet, Qwen2-MoE-style
    # experts with a sigmoid-gated shared expert.
    "qwen3_next": replace(LLAMA, qkv_bias=False, o_bias=False, qk_norm=True, shared_gate=True,
                          defaults={"tie_word_embeddings": False, "head_dim": 256, "linear_conv_kernel_dim": 4,
                                    "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                                    "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                                    "full_attention_interval": 4, "decoder_sparse_step": 1}),
    # AFMoE / Arcee Trinity (configuration_afmoe.py, modular_afmoe.py): q/k norms and a sigmoid output gate
    # (gate_proj) on the attention, norms before and after attention and MLP (4), sliding-window layers but every
    # global_attn_every_n_layers-th, the first num_dense_layers dense, then experts beside shared experts of
    # moe_intermediate_size with a routing bias (expert_bias, a parameter).
    "afmoe": replace(LLAMA, norms=4, qk_norm=True, router_bias=True, output_gate=True,
                     defaults={"tie_word_embeddings": False, "head_dim": 128, "global_attn_every_n_layers": 4,
                               "sliding_window": 1024, "num_dense_layers": 1, "num_experts": 64,
                               "num_experts_per_tok": 6, "num_shared_experts": 2}),
    # Muse Glimmer / Muse Spark (modular_muse_glimmer.py, modular_muse_spark.py; read with muse.py): Gemma-2's four
    # norms a block around a gated attention (gate_proj from x) with weightless q/k norms; Spark's latent experts
    # behind a sigmoid router with e_score_correction_bias. Defaults: the text config classes' (Muse-Glimmer-30B's,
    # Muse-Spark-Open-816B-A42B's shapes).
    "muse_glimmer_text": replace(LLAMA, norms=4, output_gate=True, defaults={
        "tie_word_embeddings": False, "vocab_size": 202048, "hidden_size": 6656, "intermediate_size": 19968,
        "num_hidden_layers": 52, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
        "hidden_activation": "silu", "max_position_embeddings": 131072, "sliding_window": 2048}),
    "muse_spark_text": replace(LLAMA, norms=4, output_gate=True, router_bias=True,
                               expert_keys=("moe_intermediate_size",), defaults={
        "tie_word_embeddings": False, "vocab_size": 202048, "hidden_size": 8192, "intermediate_size": 16384,
        "num_hidden_layers": 62, "num_attention_heads": 128, "num_key_value_heads": 16, "head_dim": 64,
        "hidden_act": "silu", "max_position_embeddings": 1048576, "sliding_window": 2048,
        "moe_intermediate_size": 4096, "num_local_experts": 256, "num_experts_per_tok": 8, "moe_hidden_size": 4096}),
    # Hy3 / Hunyuan V3 (configuration_hy_v3.py, modular_hy_v3.py): Apertus's attention (q/k norms per head, no bias),
    # DeepSeek-V3's decoder layer (the first first_k_dense_replace dense) around a MoE of num_experts experts of
    # moe_intermediate_size (its config repeats it as expert_hidden_dim) beside shared experts, a sigmoid router with
    # e_score_correction_bias.
    "hy_v3": replace(LLAMA, qk_norm=True, router_bias=True, expert_keys=("moe_intermediate_size", "expert_hidden_dim"),
                     defaults={"tie_word_embeddings": False, "head_dim": 128, "first_k_dense_replace": 1,
                               "num_experts": 192, "num_experts_per_tok": 8, "num_shared_experts": 1}),
    # LongCat-Flash (configuration_longcat_flash.py, modeling_longcat_flash.py; read by longcat.py): num_layers layers
    # of two MLA blocks and two dense MLPs of ffn_hidden_size, with a MoE beside the first MLP (ScMoE): n_routed_experts
    # experts of expert_ffn_hidden_size and zero_expert_num identity experts, moe_topk of them per token, a softmax
    # router (classifier) with e_score_correction_bias. Defaults: the config class's (LongCat-Flash-Chat's shape).
    "longcat_flash": replace(LLAMA, router_bias=True, ffn_keys=("ffn_hidden_size",),
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
    "step3p5": replace(LLAMA, qk_norm="use_qk_norm", router_bias="use_moe_router_bias",
                       head_gate="use_head_wise_attn_gate", expert_keys=("moe_intermediate_size",),
                       shared_keys=("share_expert_dim", "share_expert_dims"), mtp_lists=True,
                       windows_from_types=True,
                       defaults={"tie_word_embeddings": False, "head_dim": 128, "use_qk_norm": True,
                                 "use_moe_router_bias": True, "use_head_wise_attn_gate": True,
                                 "n_routed_experts": 288, "num_experts_per_tok": 8, "moe_intermediate_size": 1280,
                                 "share_expert_dim": 1280}),
    # Laguna (configuration_laguna.py, modular_laguna.py; poolside Laguna-XS.2; read with laguna.py): AFMoE's attention
    # (q/k norms per head, a window on layer_types' sliding_attention layers, all full without it) of
    # num_attention_heads_per_layer heads, a softplus gate on its output from g_proj (gating true / "per-head": one per
    # head; "per-element": one per channel), the first layer dense unless mlp_layer_types says otherwise, then experts
    # of moe_intermediate_size beside an ungated shared expert of shared_expert_intermediate_size, a sigmoid router
    # with e_score_correction_bias (a parameter).
    "laguna": replace(LLAMA, qk_norm=True, router_bias=True, mlp_bias=False, expert_keys=("moe_intermediate_size",),
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
    "mellum": replace(LLAMA, qk_norm=True, mlp_bias=False, expert_keys=("moe_intermediate_size",),
                      windows_from_types=True,
                      defaults={"tie_word_embeddings": False, "vocab_size": 98304, "hidden_size": 2304,
                                "intermediate_size": 7168, "num_hidden_layers": 28, "num_attention_heads": 32,
                                "num_key_value_heads": 4, "head_dim": 128, "max_position_embeddings": 131072,
                                "sliding_window": 1024, "num_experts": 64, "num_experts_per_tok": 8,
                                "moe_intermediate_size": 896}),
    # Kimi-Linear (configuration_kimi_linear.py, modeling_kimi_linear.py; the checkpoint's own keys: linear_attn_config,
    # num_experts_per_token, num_shared_experts): KDA layers and MLA layers without RoPE, DeepSeek-style router
    # (e_score_correction_bias), shared experts of moe_intermediate_size; the first layer dense.
    "kimi_linear": replace(LLAMA, router_bias=True,
                           defaults={"tie_word_embeddings": False, "first_k_dense_replace": 1, "linear_num_heads": 32,
                                     "linear_head_dim": 128, "linear_conv_kernel_dim": 4}),
    # Ling-3.0 (configuration_bailing_hybrid.py, modular_bailing_hybrid.py; read by bailing.py): KDA with full-rank
    # decay and output gates beside MLA with a sigmoid gate per head (g_proj), DeepSeek-V3's MoE (sigmoid router with
    # e_score_correction_bias: the hub's expert_bias, moe_router_enable_expert_bias). Defaults: BailingHybridConfig's
    # (its docstring's checkpoint inclusionAI/Ling-3.0-Flash).
    "bailing_hybrid": replace(LLAMA, router_bias="moe_router_enable_expert_bias",
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
    "recurrent_gemma": replace(LLAMA, o_bias=True, mlp_bias=True, defaults={
        "tie_word_embeddings": True, "vocab_size": 256000, "hidden_size": 2560, "intermediate_size": 7680,
        "num_hidden_layers": 26, "num_attention_heads": 10, "attention_window_size": 2048, "conv1d_width": 4,
        "hidden_activation": "gelu_pytorch_tanh", "block_types": ["recurrent", "recurrent", "attention"]}),
    # OLMo Hybrid (configuration_olmo_hybrid.py, modular_olmo_hybrid.py): Qwen3-Next's Gated DeltaNet (q, k, v, g, a, b
    # as separate matrices) and Olmo-3's attention (q/k RMSNorms over all heads' elements, post-norms), a dense MLP in
    # every layer. The linear-attention widths default to values derived from the heads (hybrid.py reads them).
    "olmo_hybrid": replace(LLAMA, qk_norm=True, qk_norm_across_heads=True,
                           defaults={"tie_word_embeddings": False, "vocab_size": 100352, "hidden_size": 3840,
                                     "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 30,
                                     "max_position_embeddings": 65536, "linear_conv_kernel_dim": 4}),
    # Lara-Mini (configuration_lara_mini.py, modular_lara_mini.py): Qwen3.5's Gated DeltaNet, Qwen3's attention (q/k
    # norms per head) over a window with RoPE or over everything without, every layer a MoE whose shared expert is
    # added without a gate.
    "lara_mini": replace(LLAMA, qk_norm=True,
                         defaults={"tie_word_embeddings": True, "vocab_size": 151936, "hidden_size": 1024,
                                   "num_hidden_layers": 34, "num_attention_heads": 16, "num_key_value_heads": 4,
                                   "head_dim": 128, "max_position_embeddings": 131072, "sliding_window": 512,
                                   "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
                                   "linear_value_head_dim": 128, "linear_num_key_heads": 8,
                                   "linear_num_value_heads": 16, "num_experts": 128, "num_experts_per_tok": 4,
                                   "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512}),
    # Qwen3.5 text towers (configuration_qwen3_5.py, configuration_qwen3_5_moe.py): Qwen3-Next's layers (the GDN in_proj
    # split into qkv, z, b, a: the same widths), a dense MLP or Qwen-MoE experts with a gated shared expert.
    "qwen3_5_text": replace(LLAMA, qkv_bias=False, o_bias=False, qk_norm=True, shared_gate=True,
                            defaults={"tie_word_embeddings": False, "head_dim": 256, "linear_conv_kernel_dim": 4,
                                      "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                                      "linear_num_key_heads": 16, "linear_num_value_heads": 32,
                                      "full_attention_interval": 4}),
    # DeepSeek-V3.2 (configuration_deepseek_v32.py): DeepSeek-V3 plus a lightning indexer per layer (DSA).
    "deepseek_v32": replace(LLAMA, router_bias=True, defaults={"tie_word_embeddings": False, "index_topk": 2048,
                                                                "index_n_heads": 64, "index_head_dim": 128}),
    # A.X-K2 (configuration_axk2.py, modular_axk2.py; read with axk2.py): DeepSeek-V3.2's MLA + DSA and MoE, with
    # q_gate_proj (queries and an output gate from the q latent taken twice) and low-rank gated RMSNorms. Defaults: the
    # config class's (A.X-K2-Light per its docstring), the first layer dense (its first_k_dense_replace default).
    "axk2": replace(LLAMA, router_bias=True, defaults={
        "tie_word_embeddings": False, "vocab_size": 163840, "hidden_size": 2048, "intermediate_size": 5120,
        "moe_intermediate_size": 512, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 32,
        "n_shared_experts": 1, "n_routed_experts": 128, "num_experts_per_tok": 8, "kv_lora_rank": 128,
        "q_lora_rank": 384, "qk_rope_head_dim": 32, "v_head_dim": 64, "qk_nope_head_dim": 64,
        "max_position_embeddings": 131072, "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 16,
        "gated_norm_rank": 16, "first_k_dense_replace": 1}),
    # DeepSeek-V4 (configuration_deepseek_v4.py; read by deepseek_v4.py): shared-KV MQA over a sliding window plus
    # compressed KV (CSA / HCA), hyper-connections, MoE with a shared expert.
    "deepseek_v4": replace(LLAMA, defaults={
        "tie_word_embeddings": False, "vocab_size": 129280, "hidden_size": 4096, "num_hidden_layers": 43,
        "num_attention_heads": 64, "num_key_value_heads": 1, "head_dim": 512, "q_lora_rank": 1024, "o_groups": 8,
        "o_lora_rank": 1024, "sliding_window": 128, "index_n_heads": 64, "index_head_dim": 128, "index_topk": 512,
        "hc_mult": 4, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 6,
        "moe_intermediate_size": 2048, "max_position_embeddings": 1048576}),
    # Hy4 (configuration_hy_v4.py, configuration_hy_v4_vl.py; read by hy4.py): iHC hyper-connections, MLA with sinks
    # and an output gate from x, GLM-5's DSA with shared-indexer layers, a sigmoid router with e_score_correction_bias
    # over experts of moe_intermediate_size and a shared one; the first layer dense. Defaults: the config classes'.
    "hy_v4": replace(LLAMA, router_bias=True, expert_keys=("moe_intermediate_size",), defaults=_HY4_DEFAULTS),
    "hy_v4_vl_text": replace(LLAMA, router_bias=True, expert_keys=("moe_intermediate_size",), defaults={
        **_HY4_DEFAULTS, "hidden_size": 6144, "intermediate_size": 18432, "moe_intermediate_size": 2048,
        "num_hidden_layers": 78, "num_attention_heads": 64, "q_lora_rank": 2048, "index_n_heads": 32}),
    # Zamba2 (configuration_zamba2.py; read by zamba.py): Mamba-2 blocks, shared transformer blocks at hybrid layers.
    "zamba2": replace(LLAMA, defaults={"tie_word_embeddings": True, "vocab_size": 32000, "hidden_size": 2560,
                                        "num_hidden_layers": 54, "mamba_d_state": 64, "mamba_d_conv": 4,
                                        "mamba_expand": 2, "mamba_ngroups": 1, "n_mamba_heads": 8, "chunk_size": 256,
                                        "num_attention_heads": 32, "num_mem_blocks": 1, "adapter_rank": 128,
                                        "max_position_embeddings": 4096, "hidden_act": "gelu"}),
    # Zamba (configuration_zamba.py; read by zamba.py): multi-head Mamba-1 blocks, one shared transformer block.
    "zamba": replace(LLAMA, defaults={"tie_word_embeddings": True, "vocab_size": 32000, "hidden_size": 3712,
                                       "intermediate_size": 14848, "num_hidden_layers": 76, "num_attention_heads": 16,
                                       "num_key_value_heads": 16, "n_mamba_heads": 2, "mamba_d_state": 16,
                                       "mamba_d_conv": 4, "mamba_expand": 2, "max_position_embeddings": 4096,
                                       "hidden_act": "gelu"}),
    # GLM-5 (configuration_glm_moe_dsa.py): DeepSeek-V3.2's MLA + DSA and MoE; indexer_types 'shared' layers reuse the
    # previous 'full' layer's top-k selection (no indexer of their own, no index-key cache).
    "glm_moe_dsa": replace(LLAMA, router_bias=True,
                           defaults={"tie_word_embeddings": False, "index_topk": 2048, "index_n_heads": 32,
                                     "index_head_dim": 128, "first_k_dense_replace": 3, "n_shared_experts": 1}),
    # Mistral Large 4 (configuration_mistral_large4.py MistralLarge4TextConfig, modular_mistral_large4.py; read by
    # mistral_large4.py): MLA without a query latent, GLM-5's DSA with indexer queries from x, NoPE layers
    # (no_rope_layers), latents reused across layers (kv_source_layers), Mistral-4's MoE; the first layer dense.
    # Defaults: the config class's (its docstring's checkpoint mistralai/Mistral-Large-4-1T-A52B).
    "mistral_large4_text": replace(LLAMA, nope_layers=True, mlp_bias=False, expert_keys=("moe_intermediate_size",),
                                   defaults={
        "tie_word_embeddings": False, "vocab_size": 204800, "hidden_size": 6144, "intermediate_size": 24576,
        "moe_intermediate_size": 6144, "num_hidden_layers": 72, "num_attention_heads": 64, "num_key_value_heads": 64,
        "n_shared_experts": 1, "n_routed_experts": 128, "num_experts_per_tok": 4, "kv_lora_rank": 512,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 64, "max_position_embeddings": 1048576,
        "index_topk": 2048, "index_head_dim": 128, "index_n_heads": 32, "first_k_dense_replace": 1}),
    # GLM-5.3-Flash (configuration_glm5_next.py Glm5NextTextConfig, modular_glm5_next.py; read by glm5_next.py): KDA
    # layers and NoPE MLA layers with GLM-5's DSA indexer over pooled keys (IndexPool), mHC hyper-connections,
    # DeepSeek-V3's MoE (sigmoid router with e_score_correction_bias). Defaults: the config class's (its docstring's
    # checkpoint zai-org/GLM-5.3-Flash; the released config states index_kpool 4).
    **dict.fromkeys(("glm5_next", "glm5_next_text"), replace(LLAMA, router_bias=True, expert_keys=(
        "moe_intermediate_size",), defaults={
            "tie_word_embeddings": False, "vocab_size": 154880, "hidden_size": 4096, "intermediate_size": 12288,
            "moe_intermediate_size": 2048, "num_hidden_layers": 45, "num_attention_heads": 64,
            "num_key_value_heads": 64, "n_shared_experts": 1, "n_routed_experts": 288, "num_experts_per_tok": 8,
            "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 0, "qk_nope_head_dim": 256,
            "v_head_dim": 256, "max_position_embeddings": 1048576, "index_topk": 2048, "index_head_dim": 128,
            "index_n_heads": 32, "index_kpool": 16, "index_kpool_always_select_tail": True, "linear_head_dim": 128,
            "linear_num_heads": 64, "linear_conv_kernel_dim": 4, "hc_mult": 4, "hidden_act": "silu"})),
    # dots3-note (configuration_dots3_note.py Dots3NoteTextConfig, modular_dots3_note.py; read by dots3.py): MLA with
    # a rope-key RMSNorm and a sigmoid gate per head (g_proj), DSA layers (GLM-5's indexer) beside sliding-window MLA
    # layers of their own shape (hub: swa_* keys; transformers: per_layer_config), DeepSeek-V3's MoE (sigmoid router
    # with e_score_correction_bias) with shared experts of shared_experts_intermediate_size; the first layer dense.
    # Defaults: the config class's (dots-studio/dots3-note-prev's text model).
    **dict.fromkeys(("dots3_note", "dots3_note_text"), replace(LLAMA, router_bias=True, expert_keys=(
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
    "inkling_text": replace(LLAMA, qk_norm=True, router_bias=True, rope=False, defaults={
        "tie_word_embeddings": False, "vocab_size": 201024, "hidden_size": 6144, "num_hidden_layers": 66,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "swa_num_attention_heads": 64,
        "swa_num_key_value_heads": 16, "swa_head_dim": 128, "sliding_window_size": 512, "d_rel": 16,
        "rel_extent": 1024, "max_position_embeddings": 131072, "conv_kernel_size": 4, "intermediate_size": 24576,
        "moe_intermediate_size": 3072, "n_routed_experts": 256, "num_experts_per_tok": 6, "n_shared_experts": 2,
        "hidden_act": "silu"}),
    # LFM2-MoE (configuration_lfm2_moe.py): LFM2's short-conv / attention layers; dense gated MLP in the first
    # num_dense_layers, then gated experts with a routing bias (expert_bias, kept in the checkpoint).
    "lfm2_moe": replace(LLAMA, qk_norm=True, router_bias="use_expert_bias", expert_keys=("moe_intermediate_size",),
                        defaults={"tie_word_embeddings": True, "conv_L_cache": 3, "use_expert_bias": True,
                                  "num_dense_layers": 2}),
    # Granite-4.0 hybrid (configuration_granitemoehybrid.py): Bamba-style Mamba-2 / attention, then experts of
    # intermediate_size plus a shared gated MLP of shared_intermediate_size in every layer.
    "granitemoehybrid": replace(LLAMA, expert_keys=("intermediate_size",),
                                defaults={"tie_word_embeddings": False, "mamba_n_heads": 128, "mamba_n_groups": 1,
                                          "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_expand": 2,
                                          "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_proj_bias": False,
                                          "shared_intermediate_size": 1024, "num_local_experts": 8,
                                          "num_experts_per_tok": 2}),
    # Nemotron-NAS (DeciLM): Llama blocks whose KV heads and MLP width vary per layer (block_configs).
    "deci": LLAMA,
    "nemotron-nas": LLAMA,
    "hunyuan_v1_dense": replace(LLAMA, qk_norm=True),  # query_layernorm / key_layernorm always built
    # Hunyuan-MoE (modeling_hunyuan_v1_moe.py): experts and one shared_mlp of intermediate_size, q/k RMSNorms.
    "hunyuan_v1_moe": replace(LLAMA, qk_norm=True, expert_keys=("intermediate_size",), fixed_shared_experts=1),
    # BitNet: gate_proj/up_proj with relu² (gated) plus attn_sub_norm and ffn_sub_norm: 4 norms per block.
    "bitnet": replace(LLAMA, norms=4),
    # Nemotron: up_proj -> relu² -> down_proj, no gate; LayerNorm1P (weight + bias).
    "nemotron": replace(LLAMA, gated=False, norm="layernorm"),
    # Cohere: one input_layernorm (LayerNorm without bias) feeding attention and MLP in parallel; Cohere2: RoPE on its
    # sliding layers only (Cohere2Attention), as EXAONE-4's.
    "cohere": replace(LLAMA, norms=1, parallel=True, bias_free_layernorm=True, qk_norm="use_qk_norm",
                      defaults={"tie_word_embeddings": True}),
    "cohere2": replace(LLAMA, norms=1, parallel=True, bias_free_layernorm=True, nope_full_layers=True,
                       defaults={"tie_word_embeddings": True}),
    # Cohere2-MoE (configuration_cohere2_moe.py, modular_cohere2_moe.py; North-Mini-Code, Command A+; read with
    # cohere.py): Cohere2's parallel block (one input norm: RMSNorm when rms_norm_eps is set, else a bias-free
    # LayerNorm), RoPE on the sliding layers only (and on the dense prefix when prefix_dense_sliding_window_pattern is
    # 1), a dense prefix MLP of prefix_dense_intermediate_size, then Mixtral's experts of intermediate_size beside
    # num_shared_experts shared ones fused into one MLP (no gate), a bias-free router.
    "cohere2_moe": replace(LLAMA, norms=1, parallel=True, bias_free_layernorm=True, mlp_bias=False,
                           ffn_keys=("prefix_dense_intermediate_size", "intermediate_size"),
                           expert_keys=("intermediate_size",),
                           defaults={"tie_word_embeddings": True, "vocab_size": 256000, "hidden_size": 8192,
                                     "intermediate_size": 22528, "num_hidden_layers": 40, "num_attention_heads": 64,
                                     "head_dim": 128, "max_position_embeddings": 8192, "sliding_window": 4096,
                                     "sliding_window_pattern": 4, "prefix_dense_sliding_window_pattern": 1,
                                     "num_experts": 8, "num_experts_per_tok": 2, "num_shared_experts": 0,
                                     "expert_selection_fn": "softmax",
                                     "shared_expert_combination_strategy": "average"}),
    # StarCoder2: LayerNorm (norm_type layer_norm), c_fc/c_proj (plain gelu MLP), use_bias on every Linear.
    "starcoder2": replace(GPT, rope=True, qkv_bias="use_bias", o_bias="use_bias", mlp_bias="use_bias",
                          ffn_keys=("intermediate_size",), ffn_mult=None,
                          defaults={"tie_word_embeddings": True, "use_bias": True}),
    "gpt2": replace(GPT, positions_key="n_positions", defaults={"tie_word_embeddings": True}),
    # GPT-BigCode (StarCoder 1, SantaCoder): GPT-2 with multi_query (one KV head), default true.
    "gpt_bigcode": replace(GPT, positions_key="n_positions",
                           defaults={"tie_word_embeddings": True, "multi_query": True}),
    # GPT-Neo: q/k/v without bias, out_proj with bias; learned positions; intermediate_size null -> 4·hidden.
    "gpt_neo": replace(GPT, qkv_bias=False, positions_key="max_position_embeddings", ffn_keys=("intermediate_size",),
                       defaults={"tie_word_embeddings": True, "max_position_embeddings": 2048}),
    # CodeGen: GPT-J's parallel block (one ln_1), qkv_proj/out_proj without bias, fc_in/fc_out with, LM head bias.
    "codegen": replace(GPT, norms=1, parallel=True, qkv_bias=False, o_bias=False, rope=True, lm_head_bias=True,
                       defaults={"tie_word_embeddings": False}),
    # BLOOM: ALiBi, LayerNorm after the embedding, 4·hidden MLP, every Linear with bias.
    "bloom": replace(GPT, ffn_keys=(), defaults={"tie_word_embeddings": True}),
    # XGLM: sinusoidal positions (no weights), fc1/fc2 of ffn_dim with bias, 2 LayerNorms per block.
    "xglm": replace(GPT, ffn_keys=("ffn_dim",), ffn_mult=None, defaults={"tie_word_embeddings": True}),
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
    **REMOTE_CODE_ARCHITECTURES,
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
                    "molmo2": "molmo2_text", "mistral_large4": "mistral_large4_text",
                    "muse_glimmer": "muse_glimmer_text", "muse_spark": "muse_spark_text",
                    "glm5_next": "glm5_next_text",
                    "minimax_m3_vl": "minimax_m3_vl_text", "inkling_mm_model": "inkling_text"}
