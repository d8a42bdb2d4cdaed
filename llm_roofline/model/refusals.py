"""What the reader refuses rather than misreads: encoder stacks, encoder-decoders, and model types and config keys whose
layers the operator graph cannot represent, each with the one-line reason the error gives (scope.reject_unsupported)."""

ENCODER_DECODER_TYPES = ("t5", "mt5", "umt5", "longt5", "switch_transformers", "bart", "mbart", "pegasus",
                         "pegasus_x", "marian", "blenderbot", "blenderbot-small", "led", "m2m_100", "nllb-moe",
                         "prophetnet", "fsmt", "whisper", "t5gemma", "bigbird_pegasus", "plbart",
                         # decoders that cross-attend to an encoder's states in every layer
                         "t5gemma2", "t5gemma2_decoder", "t5gemma2_text", "t5_gemma_module", "musicgen_decoder",
                         "musicgen_melody_decoder", "dia", "dia_decoder")
ENCODER_ONLY_TYPES = ("bert", "roberta", "xlm-roberta", "deberta", "deberta-v2", "distilbert", "albert",
                      "electra", "modernbert",
                      # bidirectional encoders and embedding models in transformers 5.24 (is_causal False): their keys
                      # are a decoder's, so they read as one
                      "embedding_gemma2", "embedding_gemma2_text", "neomme", "eurobert", "esmc", "mpnet", "tapas",
                      "ultrabert", "ultravbert", "openai_privacy_filter",
                      # the text and image towers of contrastive models, and encoder halves, under their own type
                      "clip", "clip_text_model", "siglip", "siglip_text_model", "siglip2", "siglip2_text_model",
                      "aimv2", "aimv2_text_model", "metaclip_2", "metaclip_2_text_model", "owlv2", "owlv2_text_model",
                      "owlvit", "owlvit_text_model", "xclip", "xclip_text_model", "groupvit", "groupvit_text_model",
                      "videoprism", "videoprism_text_model", "tipsv2", "tipsv2_text_model", "clipseg",
                      "clipseg_text_model", "sam3_lite_text", "sam3_lite_text_text_model", "beit",
                      "flava_image_model", "ovis2_vision", "blip_text_model", "blip_2_qformer",
                      "instructblip_qformer", "instructblipvideo_qformer", "voxtral_encoder",
                      "voxtral_realtime_encoder", "dia_encoder", "t5gemma2_encoder", "blt_local_encoder",
                      "blt_patcher", "clvp_encoder", "nemotron3_5_transcribe_word_timestamp")
_QWEN4_EXP = ("Qwen4-Exp's gated hyper-connections (hc_count residual streams; each sub-block's input mixed from them "
              "through an hc_lowrank projection, its output injected back by learned weights), the QSA indexer on "
              "every attention layer (indexer_*: each query keeps indexer_budget tokens from mean-pooled blocks of "
              "indexer_compress_ratio keys) and hashed n-gram embeddings feeding the ple_layer_ids layers (PLE)")
# Read in transformers 5.24 (modular_zaya.py, modular_dory.py, modular_hrm_text.py); what each has that the graph lacks
_ZAYA = ("ZAYA1's Compressed Convolutional Attention (q and k through a depthwise and a grouped causal conv over the "
         "sequence, half of v projected from the previous token: a conv window and a value state per sequence beside "
         "the KV cache; an L2 q/k norm with a learned key scale), its residual scaling (4 learned vectors a sub-block) "
         "and its router (an MLP of router_hidden_size whose state passes from layer to layer, top-1 over num_experts "
         "+ 1 classes, the last one skipping the experts)")
_DORY = ("Dory's looped section (n_recurrent_loops passes through the same n_recurrent_layers layers, each pass with "
         "a KV cache of its own or reading the last pass's: recurrent_kv_cache_mode) and nGPT's unit-norm residual "
         "interpolation with learned per-channel scales (sqk, s_gate, suv_gate / suv_up, lambda_1 / lambda_2, the LM "
         "head's logit_scale)")
_HRM_TEXT = ("HRM-Text's two stacks of num_layers_per_stack layers run in nested cycles (in each of H_cycles cycles "
             "the L stack L_cycles times, then the H stack), every run with a KV cache of its own, with weightless "
             "RMSNorms and a prefix-LM mask (bidirectional over the prompt)")
# modular_inkling2.py, modular_inkling2_loop.py: Inkling's relative bias, short convs and swa_* layers (and an output
# gate, softcaps the graph has) around what it lacks
_INKLING2_PARTS = ("block attention residuals (each layer's attention and MLP read a softmax, over learned queries, of "
                   "the summed outputs of every earlier block of n_layers_per_attn_res_block layers: three such inputs "
                   "for q, k and v on the full layers), the full layers' dynamic short convs on k and v (taps "
                   "projected per token from the layer input) and attention sinks projected per token and head "
                   "(sink_proj)")
_INKLING2 = f"Inkling-2's {_INKLING2_PARTS} (its relative position bias and short convs are Inkling's)"
_INKLING2_LOOP = ("Inkling-2-Loop's looped section (layers loop_layer_index_start to loop_layer_index_end - 1 run "
                  "loop_num_passes times, each pass with KV and conv caches of its own, the previous pass's blocks "
                  f"mixed in by message gates of loop_gate_rank) beside Inkling-2's {_INKLING2_PARTS}")
_XLSTM_V1 = ("sLSTM blocks (a scalar memory whose heads mix through recurrent weights, one token at a time) and the "
             "first xLSTM's mLSTM blocks (an up-projection, a causal conv, block-diagonal q/k/v projections, a "
             "learnable skip) of the xlstm package's block stack (xLSTMLMModelConfig; transformers' xlstm is "
             "xLSTM-Large)")
# openPangu's MoE checkpoints (vLLM openpangu.py; remote configuration_openpangu_moe.py): the class vLLM serves them with
# builds layers the graph lacks from optional keys, and no released config.json was found to check the rest against
_PANGU_MOE = ("openPangu's MoE decoder as vLLM's openpangu.py builds it (static sink keys and values, per-layer sliding "
              "windows and DSA, MoME convolutions, mHC residual streams, from optional keys)")
_UNSOURCED = "no released config.json was found to check a reading against"
# config.json "architectures" class -> why it is refused (a sentence), whatever its model_type
REFUSED_ARCHITECTURES = {
    **dict.fromkeys(("PanguUltraMoEForCausalLM", "OpenPanguV2ForCausalLM"),
                    f"{_PANGU_MOE} cannot be represented by the operator graph yet, and {_UNSOURCED} (the checkpoint's "
                    "own config class names its MLA and experts attention_*_dim / num_routed_experts)"),
    "PanguProMoEV2ForCausalLM": ("Pangu Pro MoE V2's sink attention (learned sink keys and values per layer, a key "
                                 "RMSNorm, values of v_channels beside keys of qk_nope_dim + qk_rope_dim) cannot be "
                                 "represented by the operator graph yet"),
    "PanguProMoEForCausalLM": f"Pangu Pro MoE (grouped experts, MoGE) is not read: {_UNSOURCED}",
}
# Phi-3-small (modeling_phi3_small.py, vLLM phi3_small.py): every layer but each dense_attention_every_n_layers-th
_PHI3_SMALL = ("Phi-3-small's block-sparse attention (on every layer but each dense_attention_every_n_layers-th, each "
               "head's query block attends to its blocksparse_num_local_blocks local blocks of blocksparse_block_size "
               "keys and to every blocksparse_vert_stride-th earlier block, at a per-head offset: a share of the "
               "context that grows with it, neither a window nor a top-k)")
# model_type -> why the operator graph cannot represent it (recurrent state, linear attention, sparse attention).
REFUSED_TYPES = {
    "phi3small": _PHI3_SMALL,
    "plamo2": "hybrid attention + state-space layers",
    **{t: "recurrent layers" for t in ("rwkv", "rwkv6", "rwkv7")},
    # Ring-mini / Ring-flash-linear-2.0 (BailingMoeLinearV2ForCausalLM, remote code only; vLLM bailing_moe_linear.py):
    # its layer_group_size / group_norm_size name no structural word, so it was read as GQA in every layer
    "bailing_moe_linear": "lightning attention (a decay per head, q/k norms and partial RoPE inside, a grouped "
                          "RMSNorm) beside GQA every layer_group_size-th layer",
    "moshi": "a speech model (depth decoder over audio codebooks)",
    "git": "an image-to-text model (a BERT-style text decoder with learned positions and an embedding LayerNorm)",
    "modernbert-decoder": "ModernBERT's decoder (global and local attention of its own, bias-free LayerNorms)",
    "jetmoe": "mixture-of-attention-heads (attention experts)",
    # modeling_diffusion_gemma.py: an encoder and a decoder denoising blocks of tokens without a causal mask
    **dict.fromkeys(("diffusion_gemma", "diffusion_gemma_text"), "a diffusion language model (blocks of tokens "
                    "denoised over several bidirectional passes, not one token a step)"),
    # modeling_ernie4_5_vl_moe.py: each MoE layer holds a text_moe (moe_intermediate_size[0]) and a vision_moe
    # ([1]) routed by token type, beside the shared experts; the spec has one set of experts per layer
    "ernie4_5_vl_moe_text": "ERNIE-4.5-VL's two expert sets per layer (text experts of moe_intermediate_size[0] and "
                            "vision experts of [1], each token routed in its modality's set: the vision experts' "
                            "weights are stored beside the text experts')",
    # modeling_doge.py (SmallDoge): DogeAttention's dynamic mask keeps, per query, the keep_window_size keys that
    # exp(A * softplus(dt_proj(V))) ranks highest (a learned top-k, not a window); each layer scales its residual
    # by learned vectors; is_moe swaps the MLP for CDMoE's product-key retrieval of single-neuron experts
    "doge": "dynamic mask attention (each query keeps the keep_window_size keys ranked by dt_proj and A over the "
            "values: a learned top-k, not a window), learned residual scales (input_residual, "
            "post_attention_residual) and, with is_moe, product-key single-neuron experts (CDMoE)",
    # modular_qwen4_exp.py: its Gated DeltaNet is Qwen3.5's (it would read as gated_deltanet), the rest is not
    **dict.fromkeys(("qwen4_exp", "qwen4_exp_text"), _QWEN4_EXP),
    # configuration_gemma4_assistant.py: a drafter for speculative decoding whose every layer reads its target's KV
    **dict.fromkeys(("gemma4_assistant", "gemma4_unified_assistant"),
                    "a Gemma-4 assistant (a speculative-decoding drafter: every layer attends over its target model's "
                    "KV cache, with projections from and to the target's hidden size and centroid-ordered embeddings; "
                    "estimate the target)"),
    "zaya": _ZAYA,
    **dict.fromkeys(("pangu_ultra_moe", "openpangu_v2"), _PANGU_MOE),
    "dory": _DORY,
    "hrm_text": _HRM_TEXT,
    **dict.fromkeys(("inkling2", "inkling2_text"), _INKLING2),
    **dict.fromkeys(("inkling2_loop", "inkling2_loop_text"), _INKLING2_LOOP),
}
# Keys that say the same whatever the model_type (a hybrid or sparse-attention model under another name).
REFUSED_KEYS = {
    **{k: "state-space / hybrid layers" for k in (
        "layers_block_type", "ssm_cfg", "ssm_state_size", "state_size", "mamba_d_state", "mamba_expand",
        "mamba_d_conv", "mamba_n_heads", "attn_layer_period", "attn_layer_offset", "hybrid_override_pattern",
        "linear_attn_config", "block_types", "_block_types", "full_attn_idxs", "linear_num_value_heads",
        "linear_key_head_dim", "conv_L_cache")},
    # MiniMax-M3's block indexer (minimax_m3.py reads it) under another model_type; Step-3.7's sparse_attention_config
    # holds the same (sparse_topk_blocks, sparse_block_size)
    **{k: "block-sparse attention (an indexer selects blocks of keys)" for k in ("index_topk_blocks",
                                                                               "index_block_size",
                                                                               "sparse_attention_config")},
    **{k: "DeepSeek sparse attention (indexer)" for k in ("index_topk", "index_n_heads", "index_head_dim")},
    # NX-AI's xlstm package (xLSTMLMModelConfig, and the remote-code configs under model_type xlstm that nest it):
    # not transformers' xLSTM-Large (xlstm.py reads that one)
    **{k: _XLSTM_V1 for k in ("slstm_at", "slstm_block", "mlstm_block", "xlstm_config", "xlstm_cfg")},
    # MiniCPM4's InfLLM-v2 (modeling_minicpm.py; transformers' MiniCPM refuses it too): each query attends to topk
    # blocks chosen by its own scores over mean-pooled kernel_size-key chunks (no indexer weights; the compressed keys
    # cached), plus init_blocks and a window_size window, dense below dense_len: neither DSA's indexer nor MiniMax-M3's
    # block indexer, which have index heads of their own
    "sparse_config": "InfLLM-v2 sparse attention (topk key blocks picked from the attention's own scores over "
                     "mean-pooled key chunks, plus init_blocks and a window_size window; dense below dense_len)",
    "num_kv_shared_layers": "KV-cache sharing across layers",
    "blocksparse_vert_stride": _PHI3_SMALL,  # the same layers under another model_type
    **{k: "compressed sparse attention (DeepSeek-V4: KV compressed at a per-layer rate)"
       for k in ("compress_ratios", "compress_rates")},
    **{k: "hyper-connections (several residual streams mixed per layer)" for k in ("hc_mult", "hc_sinkhorn_iters")},
    # BERT / RoBERTa-style stacks used as decoders (camembert, ernie, roc_bert, xmod, ...): token-type embeddings,
    # post-norm blocks, an embedding LayerNorm
    "type_vocab_size": "a BERT-style encoder stack (token-type embeddings, post-norm blocks)",
}
CROSS_ATTENTION_KEYS = ("cross_attention_layers", "encoder_layers", "decoder_layers")
NON_ATTENTION_LAYER_TYPES = ("linear_attention", "mamba", "conv", "ssm", "recurrent", "mamba2", "short_conv",
                             "deltanet", "lightning_attention", "minimax_attention")
