"""Model types vLLM serves from a checkpoint's own (remote) code, not transformers: their rows of what the code
hard-codes, with the defaults of their config classes (configuration_<name>.py in the checkpoint, or vLLM's copy),
and the classes their config.json names (for a copy of it without model_type). Families with more than a row read
in modules of their own (chatglm.py, qwen1.py, baichuan.py, step3.py, grok.py, arctic.py, bailing.py, pangu.py,
ouro.py, jais.py, dense_remote.py). architectures.ARCHITECTURES holds these rows beside transformers' types.
"""

from __future__ import annotations

from dataclasses import replace

from .traits import GPT, LLAMA, Architecture

REMOTE_CODE_ARCHITECTURES: dict[str, Architecture] = {
    # Step-3's text tower (stepfun-ai/step3 configuration_step3.py Step3TextConfig; vLLM step3_text.py; step3.py):
    # MFA (one KV head, a low-rank query of share_q_dim), a dense MLP or experts beside one shared expert of
    # share_expert_dim (moe_layers_enum), a router without bias, an untied LM head. Defaults: the config class's.
    "step3_text": replace(LLAMA, expert_keys=("moe_intermediate_size",), shared_keys=("share_expert_dim",),
                          defaults={"tie_word_embeddings": False, "vocab_size": 128815, "hidden_size": 7168,
                                    "intermediate_size": 18432, "num_hidden_layers": 61, "num_attention_heads": 64,
                                    "num_attention_groups": 1, "head_dim": 256, "share_q_dim": 2048,
                                    "max_seq_len": 65536, "moe_num_experts": 48, "moe_top_k": 3,
                                    "moe_intermediate_size": 5120, "share_expert_dim": 5120}),
    # Grok-1 / Grok-2 (hpcai-tech's modeling_grok1.py: grok-1 or none; keyfan's: grok; xai-org/grok-2: git; vLLM
    # grok1.py; grok.py): 4 RMSNorms a layer, gated-GELU experts in every layer, Grok-2's residual_moe MLP beside
    # them. Defaults: Grok1Config's / GrokConfig's; Grok-2's GitConfig's (the class its model_type names: untied).
    **dict.fromkeys(("grok-1", "grok"), replace(LLAMA, norms=4, defaults={
        "tie_word_embeddings": True, "hidden_act": "gelu", "num_experts": 8, "num_experts_per_tok": 2})),
    "grok-2": replace(LLAMA, norms=4, defaults={"tie_word_embeddings": False, "hidden_act": "gelu",
                                                 "num_local_experts": 8, "num_experts_per_tok": 2}),
    # Snowflake Arctic (remote code configuration_arctic.py; vLLM arctic.py; arctic.py): experts of intermediate_size
    # every moe_layer_frequency-th layer, a dense MLP elsewhere; parallel_attn_mlp_res: a residual MLP of hidden_size
    # (its own RMSNorm) beside a MoE layer's experts. Defaults: ArcticConfig's.
    "arctic": replace(LLAMA, expert_keys=("intermediate_size",), defaults={
        "tie_word_embeddings": False, "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 4096,
        "num_experts_per_tok": 1, "num_local_experts": 8, "moe_layer_frequency": 2, "parallel_attn_mlp_res": False}),
    # Ling 1.x (remote modeling_bailing_moe.py, BailingMoeForCausalLM; vLLM bailing_moe.py): a fused query_key_value
    # (bias use_qkv_bias) and dense (bias use_bias), bias-free MLPs, experts and num_shared_experts shared ones of
    # moe_intermediate_size, MoE from first_k_dense_replace on; its config class's sliding_window is never used.
    # Defaults: BailingMoeConfig's. Ling 2.0 (BailingMoeV2ForCausalLM) shares the model_type: bailing.py.
    "bailing_moe": replace(LLAMA, qkv_bias="use_qkv_bias", o_bias="use_bias", mlp_bias=False, qk_norm="use_qk_norm",
                           router_bias="moe_router_enable_expert_bias", expert_keys=("moe_intermediate_size",),
                           windows_from_types=True,
                           defaults={"tie_word_embeddings": False, "vocab_size": 30592, "hidden_size": 1024,
                                     "num_hidden_layers": 24, "num_attention_heads": 16, "use_bias": True,
                                     "use_qkv_bias": False, "max_position_embeddings": 16384, "num_experts": 16,
                                     "num_shared_experts": 0, "num_experts_per_tok": 2, "first_k_dense_replace": 0}),
    # DeepSeek-MoE (remote modeling_deepseek.py, DeepseekForCausalLM; vLLM deepseek.py): Llama attention,
    # n_routed_experts of moe_intermediate_size and n_shared_experts fused into one MLP, MoE from first_k_dense_replace
    # on every moe_layer_freq-th layer (the generic rule). Defaults: DeepseekConfig's (configuration_deepseek.py).
    "deepseek": replace(LLAMA, expert_keys=("moe_intermediate_size",),
                        defaults={"tie_word_embeddings": False, "vocab_size": 102400, "hidden_size": 4096,
                                  "intermediate_size": 11008, "moe_intermediate_size": 1407, "num_hidden_layers": 30,
                                  "num_attention_heads": 32, "num_key_value_heads": 32, "moe_layer_freq": 1,
                                  "first_k_dense_replace": 0, "max_position_embeddings": 2048}),
    # openPangu-Embedded (remote modeling_openpangu_dense.py): Llama with q/k/v/o bias = bias (default true).
    "PanguEmbedded": replace(LLAMA, qkv_bias="bias", o_bias="bias",
                             defaults={"tie_word_embeddings": False, "bias": True, "vocab_size": 153376,
                                       "hidden_size": 4096, "intermediate_size": 12800, "num_hidden_layers": 34,
                                       "num_attention_heads": 32, "num_key_value_heads": 8,
                                       "max_position_embeddings": 32768}),
    # Remote-code families vLLM serves. Ouro (vLLM ouro.py; read with ouro.py): Qwen2-style blocks without bias,
    # sandwich RMSNorms (4 a block), the stack run total_ut_steps times, an early-exit gate Linear(hidden, 1).
    "ouro": replace(LLAMA, norms=4, qkv_bias=False, o_bias=False, mlp_bias=False,
                    defaults={"tie_word_embeddings": False, "total_ut_steps": 4}),
    # MiniCPM / MiniCPM4 (MiniCPMConfig), MiniCPM3 (MLA; v_head_dim = hidden / heads when absent, layers.py): Llama
    # blocks with muP scalars (scale_emb, scale_depth, dim_model_base: no weights), tied unless the config says not.
    **dict.fromkeys(("minicpm", "minicpm4", "minicpm3"), replace(LLAMA, defaults={"tie_word_embeddings": True})),
    # InternLM2 (configuration_internlm2.py): wqkv and wo with a bias when `bias` (default true), w1 / w2 / w3 without.
    "internlm2": replace(LLAMA, qkv_bias="bias", o_bias="bias", mlp_bias=False,
                         defaults={"tie_word_embeddings": False, "bias": True}),
    # TeleChat / TeleChat2 (modeling_telechat.py, vLLM telechat2.py; transformers' telechat2 in Llama's keys): a bias on
    # dense (o_proj) and down_proj only, RMSNorms (whatever layer_norm_epsilon's name says), n_layer / n_head / ffn_*.
    "telechat": replace(LLAMA, qkv_bias=False, o_bias=True, mlp_bias=False, down_bias=True,
                        ffn_keys=("ffn_hidden_size", "intermediate_size"), defaults={"tie_word_embeddings": False}),
    "telechat2": replace(LLAMA, o_bias=True, mlp_bias=False, down_bias=True, defaults={"tie_word_embeddings": False}),
    # JAIS (modeling_jais.py; read with jais.py): GPT-2's blocks with a SwiGLU MLP (c_fc, c_fc2, c_proj), ALiBi (its
    # slopes a parameter) or a learned position table (position_embedding_type). Defaults: JAISConfig's.
    "jais": replace(GPT, gated=True, positions_key="n_positions",
                    defaults={"tie_word_embeddings": True, "activation_function": "gelu_new", "n_positions": 1024,
                              "position_embedding_type": "learned"}),
    # Remote-code families (their own key names; the layers are built by chatglm.py, qwen1.py, baichuan.py). ChatGLM2 /
    # 3, GLM-4-9B: ChatGLMConfig's defaults (configuration_chatglm.py); an output_layer of its own.
    "chatglm": Architecture(ffn_keys=("ffn_hidden_size",), vocab_keys=("padded_vocab_size",), rmsnorm_key="rmsnorm",
                            defaults={"tie_word_embeddings": False, "num_layers": 28, "padded_vocab_size": 65024,
                                      "hidden_size": 4096, "ffn_hidden_size": 13696, "kv_channels": 128,
                                      "num_attention_heads": 32, "seq_length": 2048, "rmsnorm": True}),
    # Qwen (v1, QWenLMHeadModel): c_attn with bias, c_proj and the MLP with one only when no_bias is false (qwen1.py);
    # QWenConfig's defaults (configuration_qwen.py: Qwen-7B's shape)
    "qwen": replace(LLAMA, qkv_bias=True, o_bias=False, mlp_bias=False,
                    ffn_keys=("intermediate_size", "ffn_hidden_size"),
                    defaults={"tie_word_embeddings": False, "vocab_size": 151936, "hidden_size": 4096,
                              "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 22016,
                              "kv_channels": 128, "max_position_embeddings": 8192, "no_bias": True}),
    # Baichuan-7B, Baichuan-13B, Baichuan2-7B / 13B (W_pack, ALiBi on the 13B models)
    "baichuan": replace(LLAMA, qkv_bias=False, o_bias=False, mlp_bias=False, context_keys=("model_max_length",)),
    # Remote-code families of Llama's block (dense_remote.py notes their own keys). Orion (modeling_orion.py, vLLM
    # orion.py): nn.LayerNorm with bias for both block norms and the final one (eps in rms_norm_eps).
    "orion": replace(LLAMA, norm="layernorm"),
    # MiMo-7B (vLLM mimo.py: Qwen2ForCausalLM's layers, q/k/v with bias, o_proj without; its mtp_layers skipped).
    "mimo": replace(LLAMA, qkv_bias=True, o_bias=False),
    # XVERSE (configuration_xverse.py; vLLM runs XverseForCausalLM as Llama): the MoE release states num_experts,
    # moe_top_k, num_shared_experts (experts of intermediate_size); no key means dense. KV heads default to heads.
    "xverse": LLAMA,
    # Solar Pro (SolarConfig, vLLM solar.py): Llama's block; sliding_window (2047 when absent) on every layer.
    "solar": replace(LLAMA, defaults={"tie_word_embeddings": False, "sliding_window": 2047}),
    "TeleFLM": LLAMA,  # Tele-FLM (vLLM teleflm.py): LlamaForCausalLM with muP multipliers
    # PLaMo-3 (Plamo3Config, vLLM plamo3.py): norms before and after mixer and MLP, q/k RMSNorms per head, every
    # sliding_window_pattern-th layer full, the others over window_size. Defaults: the hub config class's.
    "plamo3": replace(LLAMA, norms=4, qk_norm=True, defaults={
        "tie_word_embeddings": True, "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 13312,
        "max_position_embeddings": 2048, "window_size": 128, "sliding_window_pattern": 8}),
}

# Remote-code classes (config.json "architectures") -> their model_type, for a copy of the config without model_type
REMOTE_CODE_CLASSES = {"ChatGLMModel": "chatglm", "ChatGLMForConditionalGeneration": "chatglm",
                       "QWenLMHeadModel": "qwen", "BaichuanForCausalLM": "baichuan", "BaiChuanForCausalLM": "baichuan",
                       **dict.fromkeys(("Grok1ModelForCausalLM", "Grok1ForCausalLM", "GrokForCausalLM"), "grok-1")}

# Remote-code model types whose model is one transformers ships under another type: read as that type (noted).
# MiniMax-Text-01 / MiniMax-M1's hub config.json (MiniMaxText01ForCausalLM / MiniMaxM1ForCausalLM, vLLM
# minimax_text_01.py) are transformers' MiniMax: lightning attention beside softmax GQA (attn_type_list), every layer
# MoE; read Llama-style they were 80 GQA layers.
REMOTE_CODE_ALIASES = {"minimax_text_01": "minimax", "minimax_m1": "minimax"}
