"""Current families read since the hybrid / sparse-attention readers: plain Mamba, Nemotron-3 (Nemotron-H with MoE
blocks), Granite-4.0 hybrid, LFM2-MoE, OLMo Hybrid and Lara-Mini (Gated DeltaNet hybrids; Qwen4-Exp refused), LFM3
(short conv + gated full / windowed attention; ZAYA1, Dory and HRM-Text refused), GLM-5 (DSA with shared-indexer
layers), Gemma-4 (global head dim, K = V; E2B's per-layer inputs and KV reuse), Gemma-3n, Qwen2-VL (top-level text
keys, vision tower named), Nemotron-NAS blocks without attention or FFN; LongCat-Flash, K-EXAONE (EXAONE-MoE),
Step-3.5-Flash / Step-3.7 (step3p5); Cohere2-MoE (North Mini Code), Mellum 2, Laguna (Doge refused); dots3-note (DSA
beside sliding-window MLA); A.X-K2 (MLA whose q_gate_proj also makes an output gate, gated RMSNorms); Hy4 (iHC
hyper-connections, gated MLA with sinks, DSA); MiniMax-M3 (block-sparse GQA: an indexer picks blocks of keys); Inkling
(a relative position bias, short convs, sliding layers of their own heads, a router sink; Inkling-2 and Inkling-2-Loop
refused); Phi-4-multimodal (Phi-4-mini's decoder; its LoRA adapters outside the model class).

Every expected count is hand arithmetic in the comment beside it; the reference it is checked against is named.
"transformers meta count" = the model class of transformers 5.24 built from the fixture on the meta device
(torch 2.13, a separate virtualenv; not a dependency of this project), parameters summed (for a multimodal wrapper:
the language model and LM head, the vision tower left out).

Fixtures (tests/fixtures/configs):
- mamba_130m.json: state-spaces/mamba-130m-hf config.json ("the arch block of the real config", as quoted in a
  public test of another project). transformers meta count 129,135,360.
- nemotron3_nano_30b_a3b.json: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B config.json as copied whole in a public JAX
  port's test (transformers_version 4.55.4). transformers meta count 31,577,937,344; the model card: "31.6B total,
  ~3.2B active" (rounded).
- granite_4_0_h_tiny.json: ibm-granite/granite-4.0-h-tiny config.json, the keys quoted in a public simulator's
  ingestion test (layer_types with attention at 5, 15, 25, 35). transformers meta count 6,939,037,248; card "7B total,
  1B active" (rounded).
- lfm2_8b_a1b.json: LiquidAI/LFM2-8B-A1B config.json, "a trimmed config with the fields the loader reads" in a
  public MLX port's test. transformers meta count 8,339,929,856; card "8.3B total, 1.5B active".
- glm5.json: zai-org/GLM-5, the geometry of transformers' GlmMoeDsaConfig defaults (78 layers, hidden 6144, 256
  experts; the config-class docstring's checkpoint) with the published keys of a GLM-5.x config.json (index_topk
  2048, kv_lora_rank 512, q_lora_rank 2048, 64 heads, top-8, sigmoid noaux_tc routing, 1 MTP layer).
  transformers meta count 743,911,199,232; Z.ai: "744B total, 40B active".
- gemma4_31b.json: google/gemma-4-31B-it config.json text_config, as recorded in two public projects' tests (hidden
  5376, 60 layers, 32 heads, 16 KV heads of 256, 4 global KV heads of 512, attention_k_eq_v, window 1024, (5
  sliding + 1 full) x 10). transformers meta count 30,697,345,280 (text model and tied LM head).
- gemma4_e2b.json: google/gemma-4-E2B-it config.json (text, vision and audio configs) as a public Rust inference
  project's test copies it ("test_parse_gemma4_e2b_config"): hidden 1536, 35 layers, 1 KV head, per-layer inputs of
  256 over a 262,144-token table, the last 20 layers reusing KV with a double-wide MLP. transformers meta count
  4,628,569,344 (Gemma4ForCausalLM); Google: "2.3B effective" parameters (without the per-layer table: 2.28B).
- gemma3n_e4b.json: google/gemma-3n-E4B's text model: transformers' Gemma3nTextConfig defaults (its documented
  checkpoint), the same geometry as Google AI Edge's E4B converter config (hidden 2048, 35 layers, MLP 16,384, 8 heads
  of 256 over 2 KV heads, laurel_rank 64, 4 AltUp streams, per-layer inputs of 256, activation sparsity 0.95 on the
  first 10 layers). transformers meta count 6,835,235,568; Google: "8B raw parameters" with the vision and audio
  encoders, "4B effective" (without the per-layer table: 4.49B).
- mimo_v2_flash.json: XiaomiMiMo/MiMo-V2-Flash hub config.json (model_type mimo_v2_flash with its own keys:
  hybrid_layer_pattern, moe_layer_freq lists, swa_* heads, sinks) as written in a public Rust port's test
  ("mimo_v2_flash_hub_config"). Reference: transformers meta count of MiMoV2FlashConfig() (the same model in
  transformers' keys) 308,778,768,832; Xiaomi: "309B total, 15B active".
- dots_llm1.json: rednote-hilab/dots.llm1 config.json, "a trimmed dots.llm1.inst-mixed-4-6bit config carrying the
  fields the loader reads" in a public MLX port's test (its MLX "quantization" entry left out: the bf16 checkpoint).
  transformers meta count 142,774,373,888; the dots.llm1 report (arXiv 2506.05767): "activates 14B parameters out of
  142B total".
- kimi_linear_48b.json: moonshotai/Kimi-Linear-48B-A3B-Instruct config.json, the published fields a public port
  copies verbatim from it ("DEPENDED_FIELDS", revision e1df551a), with tie_word_embeddings false as another port's
  copy of the released config states. transformers meta count 49,122,675,072; Moonshot: "48B total, 3B activated".
- olmo_hybrid_7b.json: allenai/Olmo-Hybrid-7B, the geometry Ai2's own open-instruct gives as "the config for
  allenai/Olmo-Hybrid-7B" (olmo_core_hybrid.py olmo3_hybrid_7B: 32 layers, 3 GDN then 1 attention, hidden 3840, 30 / 30
  heads of 128, MLP 11,008, GDN 30 key / 30 value heads of 96 / 192, conv 4, eps 1e-6, untied), its module docstring's
  'config.json carries rope_parameters = {"rope_theta": null}' (NoPE; a public Go port's test verified against the
  checkpoint says the same; an mlx-lm pull request says the base kept RoPE at theta 10,000: the reader follows the
  config either way), and vocab_size 100,352 from the same repository's hybrid test kwargs (= the config class's
  default). max_position_embeddings left out (not found published): the config class's 65,536 applies.
  transformers meta count 7,430,870,688 (OlmoHybridConfig() too, with RoPE); Ai2: "7B".
- lara_mini_default.json: no published config.json of translated/Lara-4-Mini-Base was found: this is transformers'
  LaraMiniConfig() (its docstring names that checkpoint; "the released pattern, with period 5" of layer types), the
  keys that shape the model. transformers meta count 7,281,684,672 (+ 128 rotary buffers, not parameters).
- lfm3_1_7b.json: LiquidAI/LFM3-1.7B config.json as Ollama's library page of lfm3:1.7b shows the file (its json
  blob; auto_map to the checkpoint's configuration_lfm3 / modeling_lfm3), verbatim up to tie_word_embeddings true,
  where the published excerpt ends: 24 layers (13 conv, 6 full, 5 sliding), hidden 2048, 16 / 4 heads of 128, MLP
  7680, conv_L_cache 7, window 256, full layers rotating half of each head (its "default" rope label, which
  transformers 5.24 names "proportional"), context 262,144. vocab_size 128,000 is Lfm3Config's default (that class's
  documented checkpoint is this one; the published token ids 124,893-124,900 lie below it); use_attention_gate and
  use_sandwich_norm, past the excerpt, are left out: Lfm3Config's true applies. llama.cpp's lfm3.cpp names the
  7,680-wide MLP LLM_TYPE_1_7B. transformers meta count 1,728,801,536 (= Lfm3Config()'s, the same geometry).
- hy3.json: tencent/Hy3 config.json, the fields a public serving project's profile requires verbatim of it ("必需
  config predicates": 80 layers, hidden 4096, 64 / 8 heads of 128, 192 experts of 1536, top-8, 1 shared, 1 MTP
  layer). transformers meta count 295,033,528,320 (its default config is the same model).
- longcat_flash_chat.json: meituan-longcat/LongCat-Flash-Chat config.json, its published values as a public knowledge
  base tabulates them "据 released config.json" (num_layers 28, hidden 6144, MLA of 64 heads with q_lora 1536 / kv_lora
  512 / nope 128 + rope 64 / v 128, ffn 12288, 512 experts of 2048 + 256 zero-computation experts, top-12, routed
  scaling 6.0, vocabulary 131,072, RMSNorm 1e-5, SiLU, RoPE theta 1e7, 128K context), num_layers without
  num_hidden_layers as transformers PR #48899 states of the hub file, and the key names of transformers' config class
  (whose defaults are this checkpoint) and of a public MLX port (attention_method, zero_expert_type, mla_scale_*). Not
  a verbatim copy: keys none of them states (torch_dtype, token ids) are left out. transformers meta count
  741,053,585,408: its experts' gate_up_proj has a row for the 256 zero experts too (never used, not in the
  checkpoint); the tech report: "560 billion total parameters", 18.6B-31.3B active, ~27B on average.
- k_exaone_236b.json: LGAI-EXAONE/K-EXAONE-236B-A23B config.json, assembled from published values (no verbatim copy
  of the file was found): the shape from transformers' model doc (docs/source/en/model_doc/exaone_moe.md, "Model
  Configuration of K-EXAONE": 48 main layers + 1 MTP layer, hidden 6,144, 12 x (3 sliding + 1 global), 64 Q / 8 KV
  heads of 128, window 128, NoPE on the global layers, 128 experts, top-8, 1 shared, MoE intermediate 2,048, vocabulary
  153,600, context 262,144); the key names and the other values (intermediate_size 18432, "LLLG", rope_theta 1e6,
  sigmoid noaux_tc routing, routed_scaling_factor 2.5, untied) as TensorRT-LLM's EXAONE-MoE test copies the release
  config (with 4 layers and a window of 4); layer 0 dense (first_k_dense_replace 1, the transformers-5.1 hub config's
  key per a public survey of it; a public GGUF card: "Layer 0 is dense (18 432); layers 1-47 are MoE").
  transformers meta count 236,571,150,336; LG: "236B in total and 23B activated", "234B without embeddings".
- step3p5_flash.json: stepfun-ai/Step-3.5-Flash config.json (model_type step3p5, the hub's remote-code keys), assembled
  from published values (no verbatim copy found): StepFun's README (45 layers, hidden 4,096, 256K context, vocabulary
  128,896, 288 routed experts + 1 shared, top-8, "196.81B (196B Backbone + 0.81B Head)", "~11B" active, an MTP head of
  sliding-window attention); the keys and the other values as public ports copy them: sgl-jax's Step3p5Config
  ("mirrors the HF configuration_step3p5": 64 heads, 8 KV groups of 128, intermediate 11264, experts of 1280,
  share_expert_dim 1280, window 512, 3 MTP layers, context 262,144, router bias, head-wise gate, q/k norms), a Rust
  port's tests of the real Step-3.7 text_config (96 heads on the sliding layers, full attention on layer 0 and every
  4th after it, rope_theta 5e6 / 1e4 and partial_rotary_factors 0.5 / 1 per layer, 48-entry per-layer lists, MoE from
  layer 3, swiglu_limits 7 / 16 on layers 43-44 only), a public copy of the hub's configuration_step3p5.py
  (moe_layers_enum 3..44). transformers meta count (Step3p7TextModel + LM head) 196,956,118,272.
- north_mini_code.json: CohereLabs/North-Mini-Code-1.0 config.json, assembled from published values: the fields a
  public MLX serving project's artifact gate requires verbatim of the released file (model_type cohere2_moe, hidden
  2048, head_dim 128, 49 layers, intermediate_size 768 (the experts'), prefix_dense_intermediate_size 3072, 32 / 4
  heads, vocabulary 262,144, 128 experts, top-8, no shared expert, first_k_dense_replace 1,
  prefix_dense_sliding_window_pattern 1, sigmoid routing without norm_topk_prob, window 4096, rope_theta 50,000,
  context 500,000, use_parallel_block true, use_qk_norm false, no tie_word_embeddings key, rms_norm_eps 1e-6,
  layer_norm_eps 1e-5, layer_types full on layer 0 and every 4th after it), hidden_act silu and attention_bias false as
  a public Rust loader requires of Cohere2-MoE configs. transformers meta count 30,484,303,872; Cohere: "3B active /
  30B total parameters (128 experts, 8 active)".
- mellum2_1_12b_a2_5b.json: JetBrains/Mellum2.1-12B-A2.5B-Thinking config.json (revision 92ddae9f) as a public MLX
  serving project's test copies it; its artifact gate requires the same values of the released file (28 layers, 3
  sliding + 1 full x 7, window 1024, mlp_layer_types all sparse, YaRN on the full layers). The geometry is that of
  transformers' MellumConfig() (its docstring's checkpoint JetBrains/Mellum2-12B-A2.5B-Base) and of a Rust port's copy
  of Mellum2's config.json. transformers meta count 12,149,923,072; JetBrains: "12B total, 2.5B active, 64 experts /
  top-8".
- laguna_xs2.json: poolside/Laguna-XS.2 config.json, assembled from published values (no verbatim copy found): the
  geometry of transformers' LagunaConfig() (its docstring's checkpoint: vocabulary 100,352, hidden 2048, 40 layers, 8 KV
  heads of 128, window 512, 256 experts of 512 + a shared one of 512, top-8, intermediate 8192, context 131,072, gating
  true); 10 full + 30 sliding layers, the first layer dense and the RoPE values as a public llama.cpp porting plan lists
  XS.2's "Architectural Facts"; 48 heads on the full layers and 64 on the sliding ones, full attention on layer 0 and
  every 4th after it, moe_routed_scaling_factor 2.5, as a public MLX port's trimmed copy of Laguna-XS-2.1's config.json
  states them and a Swift port's test says of Laguna-XS.2 ("48 full / 64 SWA"; the porting plan writes the opposite,
  and a gate on the sliding layers only: transformers builds g_proj on every layer). transformers meta count
  33,442,617,088; poolside: "33B-A3B".
- dots3_note_prev.json: dots-studio/dots3-note-prev config.json (model_type dots3_note: the text keys at the top level
  beside vision_config and audio_config, the hub's swa_* keys), assembled from published values (no verbatim copy of
  the file was found): the model's README (studio-dots-ai/dots3-note-prev: 280B total, 16B activated, 1 dense + 45 MoE
  layers, hidden 5,120, FFN 13,824 dense / 1,536 per expert, 256 routed experts + 1 shared, top-8, 13 DSA + 33 SWA
  layers, DSA top-2,048, 512K context, 1 MTP layer); the attention shape an SGLang dots3 attention backend requires of
  the released config (128 heads, kv_lora_rank 512, qk_nope 128, rope 64, v 128; sliding layers 64 heads,
  swa_kv_lora_rank 1,024, nope 192, rope 64, v 128; indexer 64 heads of 128, index_topk 2,048; sliding_window_size
  513); the other values and key names as a public MLX port reads them "out of the real bundle's config.json"
  (vocabulary 152,064, rms_norm_eps 1e-5, first_k_dense_replace 1, q_lora_rank and swa_q_lora_rank 1,024, rope_theta
  8e7 / swa_rope_theta 5e4, sigmoid noaux_tc routing scaled by 1.0, untied, 524,288 positions, full_attention written
  for layers 0, 1 and every 4th from 5) and vLLM's Dots3NoteConfig (attention_gate_type "headwise",
  k_rope_only_layernorm, apply_mla_qkv_lora_rescale); a few keys of its towers (a 42-layer ViT of 1,536 whose last 17
  blocks are MoE, a 32-layer Whisper-style audio encoder of 1,280). transformers' Dots3NoteTextConfig defaults (its
  docstring's checkpoint) are the same text model. transformers meta count 279,551,718,016 (the fixture through
  Dots3NoteConfig, and Dots3NoteTextConfig()); dots: "280B total, 16B activated".
- axk2_light_default.json: transformers' own default config of model_type axk2, AXK2Config().to_dict() of
  transformers 5.24 (its docstring checkpoint skt/A.X-K2; its comments call the defaults A.X-K2-Light's), transformers'
  bookkeeping keys (id2label, return_dict, ...) left out. No verbatim config.json of an SKT A.X-K2 release was found in
  the public sources searched (a range-download script for skt/A.X-K2 shows only hidden 7,168, vocabulary 163,840, 61
  blocks). transformers meta count 20,314,494,976 + 6,016 router-bias buffers; no SKT figure for this config found.
- minimax_m3.json: MiniMaxAI/MiniMax-M3 config.json (model_type minimax_m3_vl, the text keys in a text_config without
  a model_type, the index settings in sparse_attention_config under their older names), assembled from published
  values (no verbatim copy of the bf16 checkpoint's file was found): every text_config field as a public Swift port's
  test reproduces them "verbatim" from mlx-community/MiniMax-M3-4bit's config.json (hidden 6,144, 60 layers, 64 / 4
  heads of 128, experts of 3,072, dense MLP 12,288, shared expert 3,072, 128 experts, top-4, vocabulary 200,064,
  1,048,576 positions, rotary_dim 64, qk_norm_type per_head, swigluoai, 7 MTP modules + num_nextn_predict_layers 1;
  sparse_attention_config: 4 index heads of 128, 16 blocks of 128, 1 local block, no init block, max scores), its
  60-entry moe_layer_freq (3 dense layers) and its trimmed schedules ([0, 0, 0, 1, 1]) written out in full as
  TensorRT-LLM's MiniMax-M3 config test builds the "structurally-real" text_config (sparse_attention_freq and
  sparse_disable_index_value = moe_layer_freq: layers 0-2 full attention, 3-59 sparse); the wrapper keys and the
  vision_config fields from the same Swift copy (its MLX "quantization" entry left out: the bf16 checkpoint,
  torch_dtype bfloat16 as the model card states). transformers meta count 426,174,565,632 (MiniMaxM3VLForCausalLM
  from the fixture's text_config through MiniMaxM3VLConfig); MiniMax: "~428B" total (vision tower and MTP modules
  included), "~23B activated", 128 experts (4 active), 60 layers, 1M context.
- inkling.json: thinkingmachines/Inkling config.json (model_type inkling_mm_model, the text keys in text_config),
  assembled from published values (no verbatim copy of the whole file was found): its text_config as public ports copy
  the checkpoint's keys (a Rust compiler's test "parses_production_shaped_json" and a Rust engine's MTP-metadata test,
  each with a shortened local_layer_ids; a Python exporter's "thinkingmachines/Inkling config.json semantics": hidden
  6,144, 66 layers, 64 heads over 8 KV heads of 128 on the full layers, 64 over 16 on the sliding ones, window 512,
  d_rel 16, rel_extent 1,024, sconv_kernel_size 4, local_layer_ids every layer but each 6th, dense_mlp_idx 2,
  dense_intermediate_size 24,576, intermediate_size 3,072 (the experts'), 256 experts, top-6, 2 shared, route_scale
  8, logits_mup_width_multiplier 24, log_scaling_n_floor 128,000, vocabulary 201,024 of which 200,058 unpadded,
  model_max_length 1,048,576, the use_* / gate flags all true, silu); audio_config and vision_config as the Rust
  compiler's test gives them; mtp_config (8 MTP layers) as TensorRT-LLM's Inkling test says it is "shipped in both
  Inkling-NVFP4-full and Inkling-small-NVFP4". No torch_dtype (bf16 read). transformers meta count
  (InklingForCausalLM of its text_config) 947,025,547,842 + 16,384 e_score_correction_bias buffers. TML's figures as
  that Rust compiler relays them: "~975B total / ~41B active"; the total is that of InklingTextConfig()'s defaults,
  every layer MoE (975,340,270,146), where the published config makes layers 0 and 1 dense.
- trinity_nano.json: arcee-ai/Trinity-Nano-Preview config.json (model_type afmoe) as a public Neuron port's test copies
  it whole ("matches arcee-ai/Trinity-Nano-Preview/config.json"). transformers meta count 6,120,003,328 (its
  expert_bias is a parameter); Arcee: "6B total, 1B active".
- qwen2_vl_7b.json: Qwen/Qwen2-VL-7B-Instruct config.json (text keys at the top level; vision_config depth 32,
  embed_dim 1280, mlp_ratio 4; the same values as the Qwen2-VL fixture of a public model-graph project).
  transformers meta count of the language model + LM head 7,615,616,512; the hub's "8.29B" adds the 675M ViT.
- phi4_multimodal.json: microsoft/Phi-4-multimodal-instruct config.json as NVIDIA TensorRT-LLM's test copies it
  (tests/unittest/_torch/modeling/test_modeling_phi4mm.py PHI4MM_CONFIG, model_type phi4mm; its num_hidden_layers 2
  and num_blocks 2 restored to the "original: 32" / "original: 24" its comments give), put in transformers' form as
  its convert_phi4_multimodal_weights_to_hf.py does: model_type phi4_multimodal, vision_lora / speech_lora /
  embd_layer / audio_processor dropped, audio_config from audio_processor.config (attention_dim -> hidden_size,
  attention_heads -> num_attention_heads, linear_units -> intermediate_size), vision_config =
  Phi4MultimodalVisionConfig's defaults (crop_size 448 as embd_layer states). transformers meta count of
  Phi4MultimodalForCausalLM 4,744,004,032, of which the vision and audio towers and projectors
  (model.embed_tokens_extend) 907,982,272 and the language model + tied LM head 3,836,021,760; no LoRA parameters.
  Microsoft: 5.6B with the vision (~370M) and speech (~460M) LoRA adapters.
- hy4_preview.json: tencent/Hy4-preview config.json (model_type hy_v4), assembled from a public transcription of it
  ("official checkpoint config.json (tencent/Hy4-preview @ 2026-09-09)": hidden 6144, 78 layers, 64 MLA heads, q / kv
  ranks 2048 / 512, nope 192 + rope 64, v 256, 21 full / 57 shared indexers of 32 heads x 128, top-2048, [dense, 77 x
  sparse], 256 experts of 2048 + 1 shared, top-8, hc_mult 4; the key names as transformers' HYV4Config and a public
  MLX port's ModelArgs spell them; no verbatim copy of the file was found; details in llm_roofline/model/hy4.py).
  transformers meta count 769,907,389,085 (HYV4ForCausalLM; HYV4VLTextConfig()'s defaults, the same shape, alike)
  + 19,712 e_score_correction_bias buffers; Tencent: ~770B total, ~49B active (A49B).
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.errors import UnsupportedArchitectureError
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import kv_bytes_per_token, kv_cache_bytes, state_bytes_per_sequence, weight_bytes
from llm_roofline.model.spec import LayerGroup, ModelSpec
from llm_roofline.sharding import Sharding

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"


def fixture(name: str) -> ModelSpec:
    return lr.load_model(FIX / f"{name}.json")


def raw(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def one_layer(spec: ModelSpec, group: str) -> ModelSpec:
    g = next(g for g in spec.layer_groups if g.name == group)
    return ModelSpec(spec.name, spec.d_model, spec.vocab_size,
                     (LayerGroup(g.name, 1, g.attention, g.ffn, g.parallel_block, g.norms, g.mixer),))


# ------------------------------------------------------------------------------ Mamba (plain)
def test_mamba_130m():
    m = fixture("mamba_130m")
    # Mamba-1 block, d 768, inner 1536, state 16, dt rank 48, conv 4: in_proj 768 x 3072 = 2,359,296; conv1d
    # 1536 x 4 + bias 1536 = 7,680; x_proj 1536 x (48 + 32) = 122,880; dt_proj 48 x 1536 + 1536 = 75,264;
    # A 1536 x 16 = 24,576; D 1536; out_proj 1536 x 768 = 1,179,648; norm 768 -> 3,771,648
    # 24 blocks 90,519,552 + tied embedding 50,280 x 768 = 38,615,040 + final norm 768
    assert m.params_total == 129_135_360  # = transformers meta count
    assert [(g.name, g.count) for g in m.layer_groups] == [("mamba1", 24)]
    # state per sequence and layer: 1536 x 16 x 2 B = 49,152 + conv 3 x 1536 x 2 B = 9,216; x 24 layers
    assert state_bytes_per_sequence(m, "bf16") == 24 * (49_152 + 9_216)
    assert kv_bytes_per_token(m) == 0


# ------------------------------------------------------------------------------ dots.llm1
def test_dots_llm1_is_qwen3_attention_over_deepseek_moe():
    m = fixture("dots_llm1")
    # d 4096, 32 heads x 128 (MHA, no bias): q, k, v, o 4 x 4096 x 4096 = 67,108,864 + q/k norms 2 x 128 + 2 block
    #   norms 2 x 4096 -> 67,117,312 per layer, x 62 = 4,161,273,344
    # layer 0 dense gated MLP 3 x 4096 x 10944 = 134,479,872
    # 61 MoE layers: 128 experts 3 x 4096 x 1408 = 17,301,504 each -> 2,214,592,512; 2 shared = one gated MLP of
    #   2816: 34,603,008; router 128 x 4096 = 524,288 + e_score_correction_bias 128 -> 2,249,719,936
    # untied embedding + LM head 2 x 152,064 x 4096 = 1,245,708,288; final norm 4096
    expected = 62 * 67_117_312 + 134_479_872 + 61 * 2_249_719_936 + 1_245_708_288 + 4096
    assert m.params_total == expected == 142_774_381_696  # the report: "142B total"
    # transformers meta count 142,774,373,888: its e_score_correction_bias is a buffer (61 x 128 = 7,808 fewer)
    assert m.params_total - 142_774_373_888 == 61 * 128
    # active: 6 of 128 -> 6 x 17,301,504 + 34,603,008 + 524,416 = 138,936,448 per MoE layer
    assert m.params_active == 62 * 67_117_312 + 134_479_872 + 61 * 138_936_448 + 1_245_708_288 + 4096
    assert m.params_active == 14_016_588_928  # the report: "activates 14B"
    assert [(g.name, g.count) for g in m.layer_groups] == [("dense", 1), ("moe", 61)]
    attn = m.layer_groups[1].attention
    assert (attn.qk_norm, attn.qkv_bias, attn.sliding_window) == (True, False, None)
    # its config class: layer i slides when sliding_window is set and i >= max_window_layers (default 62: none)
    windows = lambda cfg: [g.attention.sliding_window for g in lr.load_model(cfg).layer_groups  # noqa: E731
                           for _ in range(g.count)]
    assert set(windows({**raw("dots_llm1"), "sliding_window": 4096})) == {None}
    assert windows({**raw("dots_llm1"), "sliding_window": 4096, "max_window_layers": 60})[59:] == [None, 4096, 4096]


# ------------------------------------------------------------------------------ Kimi-Linear (KDA + MLA)
def test_kimi_linear_48b_kda_and_nope_mla_layers():
    m = fixture("kimi_linear_48b")
    # d 2304. KDA (32 heads x 128 = 4096): q, k, v 3 x 2304 x 4096 = 28,311,552; conv 12,288 x 4 = 49,152; dt_bias
    #   4096; A_log 32; f_a, g_a 2 x 2304 x 128 = 589,824; f_b, g_b 2 x 128 x 4096 = 1,048,576; beta 2304 x 32 =
    #   73,728; o_norm 128; o_proj 4096 x 2304 = 9,437,184 -> 39,514,272
    # MLA (no q LoRA): q 2304 x 32 x 192 = 14,155,776; kv_a 2304 x 576 = 1,327,104; kv_a norm 512; kv_b 512 x 32 x 256
    #   = 4,194,304; o 4096 x 2304 = 9,437,184 -> 29,114,880
    # layer 0 dense gated MLP 3 x 2304 x 9216 = 63,700,992; 26 MoE layers: 256 experts and 1 shared of 3 x 2304 x
    #   1024 = 7,077,888 each + router 256 x 2304 = 589,824 + bias 256 -> 257 x 7,077,888 + 590,080 = 1,819,607,296
    # 2 norms x 27 layers x 2304; untied embedding + head 2 x 163,840 x 2304 = 754,974,720; final norm 2304
    expected = 20 * 39_514_272 + 7 * 29_114_880 + 27 * 4608 + 63_700_992 + 26 * 1_819_607_296 + 754_974_720 + 2304
    assert m.params_total == expected == 49_122_681_728  # Moonshot: "48B total"
    # transformers meta count 49,122,675,072: its e_score_correction_bias is a buffer (26 x 256 = 6,656 fewer)
    assert m.params_total - 49_122_675_072 == 26 * 256
    # active: 8 of 256 -> 9 x 7,077,888 + 590,080 = 64,291,072 per MoE layer ("3B activated", embeddings excluded)
    assert m.params_active == expected - 26 * (1_819_607_296 - 64_291_072) == 3_484_459_904
    # layers 4, 8, ..., 24, 27 (1-based) are MLA, the rest KDA; layer 1 dense
    assert [(g.name, g.count) for g in m.layer_groups] == [("kda.dense", 1), ("kda.moe", 19), ("attention.moe", 7)]
    assert not m.layer_groups[2].attention.rope  # mla_use_nope
    # KV per token: 7 MLA layers x (512 + 64) x 2 B = 8,064; state per sequence: 20 KDA layers x (32 x 128 x 128 x 4 B
    #   (vLLM's MambaStateDtypeCalculator.kda_state_dtype: the recurrent state in float32 whatever the cache dtype) +
    #   3 taps x 12,288 conv channels x 2 B) = 20 x (2,097,152 + 73,728)
    assert kv_bytes_per_token(m) == 8_064
    assert state_bytes_per_sequence(m, "bf16") == 20 * 2_170_880


@pytest.mark.parametrize("change, error", [
    ({"mla_use_output_gate": True}, "mla_use_output_gate is set"),
    ({"routed_expert_hidden_size": 1152}, "routed_expert_hidden_size is set"),
    ({"linear_attn_config": {"use_full_rank_gate": True}}, "use_full_rank_gate is set"),
    ({"linear_attn_config": {"full_attn_layers": [4, 28]}}, "distinct layer numbers from 1 to 27"),
    ({"linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 2, 3]}}, "split the layers"),
])
def test_kimi_linear_refuses_what_it_cannot_read(change, error):
    """Kimi-K3's text tower is model_type kimi_linear too; its extra shapes are refused, not dropped."""
    cfg = {**raw("kimi_linear_48b"), **change}
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model(cfg)


# ------------------------------------------------------------------------------ OLMo Hybrid (GDN + Olmo-3 attention)
# d 3840. Gated DeltaNet, 30 key heads x 96, 30 value heads x 192: q, k 2 x 3840 x 2880 = 22,118,400; v, g (the
#   output gate) 2 x 3840 x 5760 = 44,236,800; a, b 2 x 3840 x 30 = 230,400; o 5760 x 3840 = 22,118,400; conv
#   (2880 + 2880 + 5760 = 11,520 channels) x 4 taps = 46,080; A_log, dt_bias 2 x 30; o_norm 192 -> 88,750,332
# attention, 30 heads of 3840 / 30 = 128, 30 KV heads: q, k, v, o 4 x 3840 x 3840 = 58,982,400; q/k norms over all
#   heads 2 x 30 x 128 = 7,680 -> 58,990,080
# every layer: MLP 3 x 3840 x 11,008 = 126,812,160 and 2 norms 7,680
OLMO_GDN_LAYER = 88_750_332 + 126_812_160 + 7_680  # 215,570,172
OLMO_ATTN_LAYER = 58_990_080 + 126_812_160 + 7_680  # 185,809,920
# 24 GDN + 8 attention layers; untied embedding + head 2 x 100,352 x 3840 = 770,703,360; final norm 3840
OLMO_HYBRID_7B = 24 * OLMO_GDN_LAYER + 8 * OLMO_ATTN_LAYER + 770_703_360 + 3840


def test_olmo_hybrid_7b_gated_deltanet_and_nope_olmo3_attention():
    m = fixture("olmo_hybrid_7b")
    # = transformers' meta count (OlmoHybridForCausalLM); Ai2: "7B"; dense, so all of it is active
    assert m.params_total == m.params_active == OLMO_HYBRID_7B == 7_430_870_688
    assert [(g.name, g.count) for g in m.layer_groups] == [("gated_deltanet.dense", 24), ("attention.dense", 8)]
    mixer, attn = m.layer_groups[0].mixer, m.layer_groups[1].attention
    assert (mixer.kind, mixer.n_heads, mixer.head_dim, mixer.state_dim, mixer.n_groups) == ("gated_deltanet", 30, 192,
                                                                                            96, 30)
    assert not attn.rope and attn.qk_norm_across_heads  # rope_theta null: NoPE
    # KV per token: 8 layers x K and V of 30 heads x 128 x 2 B = 8 x 15,360 = 122,880; state per sequence (GDN's in
    #   the cache dtype, as vLLM keeps it): 24 layers x (30 x 192 x 96 = 552,960 + 3 taps x 11,520 = 34,560) x 2 B
    assert kv_bytes_per_token(m) == 122_880
    assert state_bytes_per_sequence(m, "bf16") == 24 * 1_175_040


def test_olmo_hybrid_derives_what_its_config_class_derives():
    cfg = {k: v for k, v in raw("olmo_hybrid_7b").items()
           if not k.startswith("linear_") and k not in ("layer_types", "rope_parameters")}
    m = lr.load_model(cfg)
    # OlmoHybridConfig: key and value heads = 30 attention heads, key head dim int(0.75 x 3840 / 30) = 96, value head
    #   dim 2 x 96 = 192, conv 4 taps, every fourth layer full attention, RoPE (theta 10000): the same count
    assert m.params_total == OLMO_HYBRID_7B
    assert [(g.name, g.count) for g in m.layer_groups] == [("gated_deltanet.dense", 24), ("attention.dense", 8)]
    assert m.layer_groups[1].attention.rope
    # 3 layers: none is a fourth, so the last is full: 2 GDN + 1 attention + embeddings and norm as above
    three = lr.load_model({**cfg, "num_hidden_layers": 3})
    assert three.params_total == 2 * OLMO_GDN_LAYER + OLMO_ATTN_LAYER + 770_703_360 + 3840


@pytest.mark.parametrize("change, error", [
    ({"layer_types": ["full_attention"] * 32}, "linear_attention and full_attention layers both"),
    ({"layer_types": ["linear_attention"] * 32}, "linear_attention and full_attention layers both"),
    ({"layer_types": ["linear_attention", "sliding_attention"] * 16},
     "is not one of 'linear_attention', 'full_attention'"),
    ({"rope_parameters": "none"}, "rope_parameters must be an object"),
    ({"linear_num_value_heads": 7}, "must be a multiple of linear_num_key_heads"),
    ({"linear_key_head_dim": None, "linear_num_key_heads": 4000}, "linear_key_head_dim: 0.75 x hidden_size"),
])
def test_olmo_hybrid_malformed_configs_name_the_key(change, error):
    with pytest.raises(lr.ModelConfigError, match=error):
        lr.load_model({**raw("olmo_hybrid_7b"), **change})


# ------------------------------------------------------------------------------ Lara-Mini (GDN + window / NoPE, MoE)
def test_lara_mini_default_gdn_window_and_nope_layers_over_moe():
    m = fixture("lara_mini_default")
    # d 1024. Gated DeltaNet, 8 key heads x 128, 16 value heads x 128: in_proj (q, k 2 x 1024, v, z 2 x 2048, b, a
    #   2 x 16) 1024 x 6176 = 6,324,224; conv 4096 channels x 4 = 16,384; A_log, dt_bias 32; norm 128; out 2048 x 1024
    #   = 2,097,152 -> 8,437,920
    # attention 16 heads, 4 KV heads of 128: q, o 2 x 1024 x 2048 = 4,194,304; k, v 2 x 1024 x 512 = 1,048,576; q/k
    #   norms 2 x 128 -> 5,243,136
    # every layer MoE: 128 experts x 3 x 1024 x 512 = 201,326,592; router 128 x 1024 = 131,072; shared expert
    #   3 x 1024 x 512 = 1,572,864 without a gate -> 203,030,528; 2 norms 2048
    # layers (linear, sliding, linear, full, sliding; 34 = 6 x 5 + 4): 14 GDN, 13 sliding, 7 full
    # tied embedding 151,936 x 1024 = 155,582,464; final norm 1024
    expected = 14 * 8_437_920 + 20 * 5_243_136 + 34 * (203_030_528 + 2048) + 155_582_464 + 1024
    assert m.params_total == expected == 7_281_684_672  # = transformers' meta count of LaraMiniConfig()
    # active: 4 of 128 experts: 124 x 3 x 1024 x 512 = 195,035,136 fewer per layer
    assert m.params_active == expected - 34 * 195_035_136 == 650_490_048
    assert [(g.name, g.count) for g in m.layer_groups] == [("gated_deltanet.moe", 14), ("attention.moe", 13),
                                                           ("attention.moe-2", 7)]
    sliding, full = m.layer_groups[1].attention, m.layer_groups[2].attention
    assert (sliding.sliding_window, sliding.rope, full.sliding_window, full.rope) == (512, True, None, False)
    assert not m.layer_groups[0].ffn.shared_gate and m.layer_groups[0].ffn.d_shared == 512
    # KV per token: 20 layers x K and V of 4 heads x 128 x 2 B = 20 x 2048 = 40,960; at 8192 tokens the 13 window
    #   layers hold 512: 13 x 2048 x 512 + 7 x 2048 x 8192 = 13,631,488 + 117,440,512
    assert kv_bytes_per_token(m) == 40_960
    assert kv_cache_bytes(m, 8192) == 131_072_000
    # state per sequence: 14 layers x (16 x 128 x 128 = 262,144 + 3 taps x 4096 = 12,288) x 2 B = 14 x 548,864
    assert state_bytes_per_sequence(m, "bf16") == 14 * 548_864


def test_lara_mini_layer_types():
    cfg = {k: v for k, v in raw("lara_mini_default").items() if k != "layer_types"}
    m = lr.load_model(cfg)  # absent: LaraMiniConfig's period-5 pattern, the fixture's own
    assert [(g.name, g.count) for g in m.layer_groups] == [("gated_deltanet.moe", 14), ("attention.moe", 13),
                                                           ("attention.moe-2", 7)]
    with pytest.raises(lr.ModelConfigError, match="'mamba' is not one of 'linear_attention', 'sliding_attention'"):
        lr.load_model({**cfg, "layer_types": ["mamba"] * 34})


# ------------------------------------------------------------------------------ LFM3 (short conv + gated attention)
# d 2048. short conv: in_proj 2048 x 6144 = 12,582,912; conv 2048 channels x 7 taps = 14,336; out_proj 2048 x 2048
#   = 4,194,304 -> 16,791,552
# attention 16 heads of 128, 4 KV heads: q, o 2 x 2048 x 2048 = 8,388,608; k, v 2 x 2048 x 512 = 2,097,152; q/k
#   norms 2 x 128; g_proj (a gate per head) 2048 x 16 = 32,768 -> 10,518,784
# every layer: gated MLP 3 x 2048 x 7680 = 47,185,920; 4 norms (operator, after it, FFN, after it) 8192
LFM3_CONV_LAYER = 16_791_552 + 47_185_920 + 8192  # 63,985,664
LFM3_ATTN_LAYER = 10_518_784 + 47_185_920 + 8192  # 57,712,896
# 13 conv + 6 full + 5 sliding layers; tied embedding 128,000 x 2048 = 262,144,000; final norm 2048
LFM3_1_7B = 13 * LFM3_CONV_LAYER + 11 * LFM3_ATTN_LAYER + 262_144_000 + 2048


def test_lfm3_1_7b_short_conv_and_gated_full_and_window_attention():
    m = fixture("lfm3_1_7b")
    # = transformers' meta count (Lfm3ForCausalLM); LiquidAI: "LFM3-1.7B"; dense, all of it active
    assert m.params_total == m.params_active == LFM3_1_7B == 1_728_801_536
    assert [(g.name, g.count, g.norms) for g in m.layer_groups] == [
        ("short_conv.dense", 13, 4), ("attention.dense", 6, 4), ("attention.dense-2", 5, 4)]
    conv, full, window = (g.mixer or g.attention for g in m.layer_groups)
    assert (conv.kind, conv.inner_dim, conv.conv_kernel) == ("short_conv", 2048, 7)
    assert (full.sliding_window, window.sliding_window) == (None, 256)
    assert full.head_gate and full.qk_norm and not full.output_gate
    # KV per token: 11 layers x K and V of 4 heads x 128 x 2 B = 11 x 2048 = 22,528; at 8192 tokens the 5 window
    #   layers hold 256: 6 x 2048 x 8192 + 5 x 2048 x 256 = 100,663,296 + 2,621,440
    assert kv_bytes_per_token(m) == 22_528
    assert kv_cache_bytes(m, 8192) == 103_284_736
    # state per sequence: 13 conv layers x (7 - 1) taps x 2048 channels x 2 B = 13 x 24,576
    assert state_bytes_per_sequence(m, "bf16") == 13 * 24_576 == 319_488


def test_lfm3_sandwich_norms_normalise_both_outputs_of_every_layer():
    m = fixture("lfm3_1_7b")
    for group in ("short_conv.dense", "attention.dense"):
        names = [o.name for o in build_ops(one_layer(m, group), Phase.decode(1, 100)) if o.name.startswith("norm")]
        assert names == ["norm.attn", "norm.attn_out", "norm.ffn", "norm.ffn_out", "norm.final"]


@pytest.mark.parametrize("change, expected", [
    ({}, LFM3_1_7B),
    # absent layer_types: Lfm3Config's pattern, the fixture's own
    ({"layer_types": None}, LFM3_1_7B),
    # no sandwich: 2 norms fewer in each of 24 layers, 24 x 2 x 2048 = 98,304 (transformers: 1,728,703,232)
    ({"use_sandwich_norm": False}, LFM3_1_7B - 98_304),
    # no gate: 11 g_proj of 2048 x 16 = 360,448 fewer (transformers: 1,728,441,088)
    ({"use_attention_gate": False}, LFM3_1_7B - 360_448),
    # conv_bias: in_proj 6144 + conv 2048 + out_proj 2048 biases in 13 layers = 133,120 (transformers: 1,728,934,656)
    ({"conv_bias": True}, LFM3_1_7B + 133_120),
])
def test_lfm3_config_switches_match_transformers(change, expected):
    cfg = {k: v for k, v in {**raw("lfm3_1_7b"), **change}.items() if v is not None}
    assert lr.load_model(cfg).params_total == expected


@pytest.mark.parametrize("change, error", [
    ({"layer_types": ["conv", "mamba"] * 12}, "'mamba' is not one of 'conv', 'sliding_attention', 'full_attention'"),
    ({"layer_types": ["conv"] * 23}, "layer_types must list one entry per layer"),
    ({"use_sandwich_norm": "yes"}, "use_sandwich_norm must be true or false"),
    ({"use_attention_gate": 2}, "use_attention_gate must be true or false"),
    ({"sliding_window": None}, "sliding_window"),
    ({"conv_L_cache": 0}, "conv_L_cache"),
])
def test_lfm3_malformed_configs_name_the_key(change, error):
    with pytest.raises(lr.ModelConfigError, match=error):
        lr.load_model({**raw("lfm3_1_7b"), **change})


# ------------------------------------------------------------------------------ ZAYA1, Dory, HRM-Text: refused
@pytest.mark.parametrize("cfg, words", [
    # Zyphra/ZAYA1-8B (ZayaConfig's defaults): CCA attention, residual scaling, an MLP router with state across layers
    ({"model_type": "zaya", "hidden_size": 2048, "num_hidden_layers": 40, "layer_types": ["hybrid"] * 40,
      "cca_time0": 2, "cca_time1": 2, "router_hidden_size": 256, "num_experts": 16},
     ["Compressed Convolutional Attention", "residual scaling", "router_hidden_size"]),
    # nvidia/NVIDIA-Nemotron-Labs-Dory1.0-4B (released layout: attention and mlp as separate entries)
    ({"model_type": "dory", "hidden_size": 2560, "num_hidden_layers": 72,
      "layer_types": ["sliding_attention", "mlp"] * 36, "n_recurrent_loops": 2},
     ["n_recurrent_loops", "nGPT", "logit_scale"]),
    # sapientinc/HRM-Text-1B (a saved config: num_hidden_layers inflated to 16 x 2 x (3 + 1))
    ({"model_type": "hrm_text", "hidden_size": 1536, "num_hidden_layers": 128, "num_layers_per_stack": 16,
      "H_cycles": 2, "L_cycles": 3},
     ["num_layers_per_stack", "H_cycles", "L_cycles", "weightless RMSNorms"]),
])
def test_looped_and_convolutional_attention_models_are_refused_naming_what_the_graph_lacks(cfg, words):
    with pytest.raises(UnsupportedArchitectureError) as e:
        lr.load_model(cfg)
    text = str(e.value)
    assert "\n" not in text and all(w in text for w in words)


# ------------------------------------------------------------------------------ Qwen4-Exp: refused
_QWEN4_TEXT = {"model_type": "qwen4_exp_text", "hidden_size": 2048, "num_hidden_layers": 40, "hc_count": 4,
               "hc_lowrank": 320, "linear_num_value_heads": 32, "linear_num_key_heads": 16, "num_experts": 512}


@pytest.mark.parametrize("cfg", [_QWEN4_TEXT, {"model_type": "qwen4_exp", "text_config": _QWEN4_TEXT}])
def test_qwen4_exp_is_refused_naming_what_the_graph_lacks(cfg):
    """Its Gated DeltaNet is Qwen3.5's, but hyper-connections, the QSA indexer and PLE have no place in the graph."""
    with pytest.raises(UnsupportedArchitectureError) as e:
        lr.load_model(cfg)
    text = str(e.value)
    assert "\n" not in text and all(w in text for w in ("hyper-connections", "hc_lowrank", "QSA indexer", "PLE"))


# ------------------------------------------------------------------------------ Hy3 (Hunyuan V3)
def test_hy3_apertus_attention_over_deepseek_moe():
    m = fixture("hy3")
    # d 4096, 64 heads x 128, 8 KV heads: q, o 2 x 4096 x 8192 + k, v 2 x 4096 x 1024 + q/k norms 2 x 128 =
    #   75,497,728; 2 norms 8192 -> 75,505,920 per layer, x 80 = 6,040,473,600
    # layer 0 dense gated MLP 3 x 4096 x 13312 = 163,577,856; 79 MoE layers: 192 experts and 1 shared of
    #   3 x 4096 x 1536 = 18,874,368 each + router 192 x 4096 = 786,432 + bias 192 -> 3,643,539,648
    # untied embedding + head 2 x 120,832 x 4096 = 989,855,744; final norm 4096; the MTP layer is not counted
    expected = 80 * 75_505_920 + 163_577_856 + 79 * 3_643_539_648 + 989_855_744 + 4096
    assert m.params_total == expected == 295_033_543_488
    # transformers meta count 295,033,528,320: its e_score_correction_bias is a buffer (79 x 192 = 15,168 fewer)
    assert m.params_total - 295_033_528_320 == 79 * 192
    # active: 8 of 192 -> 9 x 18,874,368 + 786,624 = 170,655,936 per MoE layer
    assert m.params_active == expected - 79 * (3_643_539_648 - 170_655_936) == 20_675_730_240
    assert [(g.name, g.count) for g in m.layer_groups] == [("dense", 1), ("moe", 79)]
    assert m.layer_groups[1].attention.qk_norm and m.layer_groups[1].ffn.d_expert == 1536
    assert not any("expert_hidden_dim" in a for a in m.assumptions)  # its twin, not an unread key


# ------------------------------------------------------------------------------ LongCat-Flash (ScMoE)
# one LongCat layer, d 6144: an MLA block: q_a 6144 x 1536 = 9,437,184; q_b 1536 x 64 x 192 = 18,874,368; kv_a
#   6144 x 576 = 3,538,944; kv_b 512 x 64 x 256 = 8,388,608; o 8192 x 6144 = 50,331,648; q_a / kv_a norms 1536 + 512
#   -> 90,572,800, two of them 181,145,600; two dense gated MLPs 2 x 3 x 6144 x 12288 = 452,984,832; 512 experts of
#   3 x 6144 x 2048 = 37,748,736 -> 19,327,352,832; router 6144 x (512 + 256) = 4,718,592 + its correction bias 768;
#   4 norms 24,576 -> 19,966,227,200
LONGCAT_LAYER = 181_145_600 + 452_984_832 + 19_327_352_832 + 4_719_360 + 24_576
# untied embedding + LM head 2 x 131,072 x 6144 = 1,610,612,736; final norm 6144
LONGCAT_EMBED = 1_610_612_736 + 6144


def test_longcat_flash_chat_two_attention_blocks_and_zero_experts():
    m = fixture("longcat_flash_chat")
    assert LONGCAT_LAYER == 19_966_227_200
    assert m.params_total == 28 * LONGCAT_LAYER + LONGCAT_EMBED == 560_664_980_480  # the report: "560 billion"
    # transformers meta count 741,053,585,408: + 28 x 256 zero-expert rows of its gate_up_proj (4096 x 6144 each,
    #   never used, not in the checkpoint) = 180,388,626,432, - the 28 x 768 correction biases it keeps as buffers
    assert m.params_total + 28 * 256 * 4096 * 6144 - 28 * 768 == 741_053_585_408
    # active: 12 of 512 + 256 picked, 12 x 512 / 768 = 8 real experts on average: 8 x 37,748,736 = 301,989,888
    #   per layer in place of 19,327,352,832 -> 940,864,256 per layer
    assert m.params_active == 28 * 940_864_256 + LONGCAT_EMBED == 27_954_818_048
    # the report counts without the input embedding (805,306,368): 27,149,511,680 ("~27B on average"); 0 real experts
    #   28 x 638,874,368 + 805,312,512 = 18,693,794,816 ("18.6B"), 12: + 28 x 4 x 37,748,736 -> 31,377,370,112
    assert m.params_active - 805_306_368 == 27_149_511_680
    # 56 layers: attention + MoE (the first MLP as its shared expert), attention + the second MLP
    assert [(g.name, g.count) for g in m.layer_groups] == [("moe", 28), ("dense", 28)] and m.n_layers == 56
    moe, dense = m.layer_groups[0].ffn, m.layer_groups[1].ffn
    assert (moe.n_experts, moe.zero_experts, moe.top_k, moe.expert_top_k, moe.d_expert, moe.d_shared) == \
        (512, 256, 12, 8, 2048, 12288)
    assert (dense.kind, dense.d_ff) == ("dense", 12288) and m.layer_groups[0].attention.kind == "mla"
    # KV per token: 56 MLA caches of 512 + 64 elements, 2 B
    assert kv_bytes_per_token(m, "bf16") == 56 * 576 * 2 == 64_512
    assert any("12 x 512 / 768 = 8" in a for a in m.assumptions) and any("ScMoE" in a for a in m.assumptions)
    # one decode token: the router scores 768 experts, 2 x 6144 x 768 = 9,437,184 FLOPs; the experts' up + gate
    #   run for 8 of them: 2 x 8 x 6144 x 4096 = 402,653,184 FLOPs over 8 x 6144 x 4096 x 2 B = 402,653,184 B
    ops = {o.name: o for o in build_ops(one_layer(m, "moe"), Phase.decode(1, 100)) if o.group == "moe"}
    assert float(ops["ffn.router"].flops) == 9_437_184
    assert float(ops["ffn.experts.up_gate"].flops) == 402_653_184
    assert float(ops["ffn.experts.up_gate"].weight_bytes) == 402_653_184
    assert "ffn.shared.up_gate" in ops  # the first dense MLP


def test_longcat_flash_layer_keys_and_zero_experts_off():
    base = raw("longcat_flash_chat")
    # transformers' num_hidden_layers (2 x num_layers) read alone or beside num_layers: the same model
    no_layers = {k: v for k, v in base.items() if k != "num_layers"}
    assert lr.load_model({**no_layers, "num_hidden_layers": 56}).params_total == 560_664_980_480
    assert lr.load_model({**base, "num_hidden_layers": 56}).params_total == 560_664_980_480
    # without zero experts (null, as transformers reads it: none): the router is 512 wide, 28 x 256 x (6144 + 1) =
    #   44,047,360 fewer; all 12 picks are real: 12 x 37,748,736 per layer active
    m = lr.load_model({**base, "zero_expert_num": None})
    assert m.params_total == 560_664_980_480 - 44_047_360
    assert m.layer_groups[0].ffn.expert_top_k == 12
    assert m.params_active == 27_954_818_048 - 44_047_360 + 28 * 4 * 37_748_736
    # absent: the config class's 256, said; the MTP layer of LongCat's newer configs is named and not counted
    m = lr.load_model({**{k: v for k, v in base.items() if k != "zero_expert_num"}, "mtp_num_layers": 1})
    assert m.params_total == 560_664_980_480
    assert "zero_expert_num absent from the config: the longcat_flash default 256." in m.assumptions
    assert any(a.startswith("mtp_num_layers=1") for a in m.assumptions)


@pytest.mark.parametrize("change, error", [
    ({"attention_method": "LSA"}, "only MLA"),
    ({"zero_expert_type": "constant"}, "only 'identity'"),
    ({"router_bias": True}, "router_bias=true"),
    ({"num_hidden_layers": 55}, r"must be 2 x num_layers \(56\)"),
    ({"num_layers": None, "num_hidden_layers": 55}, "must be even"),
    ({"moe_topk": 769}, r"exceeds the experts the router picks from: n_routed_experts \(512\) \+ zero_expert_num"),
    ({"qk_head_dim": 128}, r"qk_head_dim \(128\) must be qk_nope_head_dim \+ qk_rope_head_dim \(192\)"),
    ({"zero_expert_num": -1}, "zero_expert_num must be non-negative"),
    ({"zero_expert_num": 1 << 20}, "zero_expert_num = 1048576 exceeds the physical bound for a experts: at most 65"),
    ({"q_lora_rank": None}, "the config has no q_lora_rank"),
])
def test_longcat_flash_refuses_what_it_cannot_read(change, error):
    cfg = {**raw("longcat_flash_chat"), **change}
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model(cfg)


# ------------------------------------------------------------------------------ K-EXAONE (EXAONE-MoE)
def test_k_exaone_exaone4_attention_over_deepseek_moe():
    m = fixture("k_exaone_236b")
    # d 6144, 64 heads x 128 (8192), 8 KV heads (1024): q, o 2 x 6144 x 8192 = 100,663,296 + k, v 2 x 6144 x 1024 =
    #   12,582,912 + q/k norms 2 x 128 -> 113,246,464; 2 norms 12,288 -> 113,258,752 per layer, x 48 = 5,436,420,096
    # layer 0 dense gated MLP 3 x 6144 x 18432 = 339,738,624
    # 47 MoE layers: 128 experts and 1 shared of 3 x 6144 x 2048 = 37,748,736 each -> 129 x 37,748,736 =
    #   4,869,586,944 + router 128 x 6144 = 786,432 + e_score_correction_bias 128 -> 4,870,373,504
    # untied embedding + head 2 x 153,600 x 6144 = 1,887,436,800; final norm 6144; the MTP layer is not counted
    expected = 48 * 113_258_752 + 339_738_624 + 47 * 4_870_373_504 + 1_887_436_800 + 6144
    assert m.params_total == expected == 236_571_156_352  # LG: "236B in total", "234B without embeddings"
    # transformers meta count 236,571,150,336: its e_score_correction_bias is a buffer (47 x 128 = 6,016 fewer)
    assert m.params_total - 236_571_150_336 == 47 * 128
    # active: 8 of 128 + the shared one -> 9 x 37,748,736 + 786,560 = 340,525,184 per MoE layer
    assert m.params_active == expected - 47 * (4_870_373_504 - 340_525_184) == 23_668_285_312  # LG: "23B activated"
    # LLLG x 12 with a 128-token window; layer 0 dense; the full layers without RoPE (NoPE)
    assert [(g.name, g.count) for g in m.layer_groups] == [("sliding.dense", 1), ("sliding.moe", 35), ("full.moe", 12)]
    assert [(g.attention.sliding_window, g.attention.rope) for g in m.layer_groups] == [(128, True)] * 2 + [
        (None, False)]
    assert all(g.attention.qk_norm and not g.attention.head_gate for g in m.layer_groups)
    assert not any("sliding_window_pattern" in a for a in m.assumptions)  # layer_types states it
    # KV per token before the window's cap: 48 layers x K, V of 8 x 128 x 2 B = 196,608
    assert kv_bytes_per_token(m) == 48 * 2 * 8 * 128 * 2
    full = [o.name for o in build_ops(m, Phase.decode(1, 1000)) if o.group == "full.moe"]
    assert "attn.qk_norm" in full and "attn.rope" not in full
    # without layer_types: the letters (the last layer global whatever its letter), or a count (EXAONE-4's default 4)
    layout = lambda cfg: [(g.attention.sliding_window, g.count) for g in lr.load_model(cfg).layer_groups]  # noqa: E731
    no_types = {k: v for k, v in raw("k_exaone_236b").items() if k != "layer_types"}
    assert layout(no_types) == layout({**no_types, "sliding_window_pattern": 4}) == [(128, 1), (128, 35), (None, 12)]
    assert layout({**no_types, "sliding_window_pattern": "LG"}) == [(128, 1), (None, 24), (128, 23)]
    assert layout({**no_types, "sliding_window_pattern": "L"}) == [(128, 1), (128, 46), (None, 1)]
    for bad, why in ((0, "positive"), (True, "integer"), (-4, "positive"), ("LLXG", "letters L"), ("", "letters L"),
                     (float("nan"), "integer"), ([4], "integer")):
        with pytest.raises(lr.RooflineError, match=f"sliding_window_pattern must be .*{why}"):
            lr.load_model({**no_types, "sliding_window_pattern": bad})
    # EXAONE-4's full layers are NoPE too when a window is set (the same Exaone4Attention); none without a window
    ropes = lambda cfg: [g.attention.rope for g in lr.load_model(cfg).layer_groups]  # noqa: E731
    assert ropes({**TINY, "model_type": "exaone4", "num_hidden_layers": 4}) == [True, False]  # pattern 4: 3 + 1
    assert ropes({**TINY, "model_type": "exaone4", "sliding_window": None}) == [True]


# ------------------------------------------------------------------------------ Step-3.5-Flash / Step-3.7
def test_step3p5_flash_gated_heads_wider_sliding_layers_and_shared_expert():
    m = fixture("step3p5_flash")
    # d 4096, 8 KV heads of 128 (k, v 2 x 4096 x 1024 = 8,388,608), q/k norms 2 x 128, a gate per head g_proj 4096 x H:
    #   full layers 64 heads: q, o 2 x 4096 x 8192 = 67,108,864 + g 262,144 -> 75,759,872; 2 norms 8192 -> 75,768,064
    #   sliding layers 96 heads: q, o 2 x 4096 x 12,288 = 100,663,296 + g 393,216 -> 109,445,376 -> 109,453,568
    # layers 0-2 dense gated MLP 3 x 4096 x 11264 = 138,412,032
    # 42 MoE layers: 288 experts and 1 shared of 3 x 4096 x 1280 = 15,728,640 each -> 289 x 15,728,640 =
    #   4,545,576,960 + router 288 x 4096 = 1,179,648 + e_score_correction_bias 288 -> 4,546,756,896
    # untied embedding + head 2 x 128,896 x 4096 = 1,055,916,032; final norm 4096; the 3 MTP layers are not counted
    expected = 12 * 75_768_064 + 33 * 109_453_568 + 3 * 138_412_032 + 42 * 4_546_756_896 + 1_055_916_032 + 4096
    assert m.params_total == expected == 196_956_130_368  # StepFun: "196.81B (196B Backbone + 0.81B Head)"
    # transformers meta count 196,956,118,272 (Step3p7TextModel 196,428,160,256 + LM head 527,958,016): its
    # e_score_correction_bias is a buffer (42 x 288 = 12,096 fewer)
    assert m.params_total - 196_956_118_272 == 42 * 288
    # active: 8 of 288 + the shared one -> 9 x 15,728,640 + 1,179,936 = 142,737,696 per MoE layer
    assert m.params_active == expected - 42 * (4_546_756_896 - 142_737_696) == 11_987_323_968  # StepFun: "~11B"
    # full attention every 4th layer from layer 0 (layer_types: 45 entries + 3 of the MTP layers), window 512
    assert [(g.name, g.count, g.attention.n_heads) for g in m.layer_groups] == [
        ("full.dense", 1, 64), ("sliding.dense", 2, 96), ("sliding.moe", 31, 96), ("full.moe", 11, 64)]
    assert all(g.attention.head_gate and g.attention.qk_norm and g.attention.n_kv_heads == 8 for g in m.layer_groups)
    assert {g.attention.sliding_window for g in m.layer_groups} == {None, 512}
    assert (m.layer_groups[2].ffn.d_shared, m.layer_groups[2].ffn.shared_gate) == (1280, False)
    assert kv_bytes_per_token(m) == 45 * 2 * 8 * 128 * 2  # 184,320 B before the window's cap
    # the gate: (T, d) @ (d, 96 / 8 heads) on each chip at tp 8, then a multiply over the heads' outputs
    ops = {o.name: o for o in build_ops(m, Phase.decode(1, 1000), Sharding(tp=8)) if o.group == "sliding.moe"}
    assert ops["attn.g_proj"].weight_bytes == 4096 * 12 * 2 and "attn.head_gate" in ops
    assert not [a for a in m.assumptions if "not used by the reader" in a]


def test_step3p7_wrapper_and_the_step_keys():
    text = raw("step3p5_flash")
    # Step-3.7's config: the same text tower in text_config (model_type step3p5) beside a vision tower
    wrapped = lr.load_model({"model_type": "step3p7", "text_config": text,
                             "vision_config": {"width": 1536, "layers": 47, "heads": 16}})
    assert wrapped.params_total == fixture("step3p5_flash").params_total == 196_956_130_368
    assert any("vision_config not counted" in a for a in wrapped.assumptions)
    untyped = {k: v for k, v in text.items() if k != "model_type"}
    assert lr.load_model({"model_type": "step3p7", "text_config": untyped}).params_total == 196_956_130_368
    # mlp_layer_types before moe_layers_enum; without either, layers 4 on (1-based) MoE (Step3p7TextConfig)
    moe = lambda cfg: sum(g.count for g in lr.load_model(cfg).layer_groups if g.ffn.kind == "moe")  # noqa: E731
    assert moe({**text, "moe_layers_enum": [1, 2, 46]}) == 2  # 46: an MTP layer's index
    assert moe({k: v for k, v in text.items() if k != "moe_layers_enum"}) == moe(text) == 42
    assert moe({**text, "mlp_layer_types": ["sparse"] * 48}) == 45
    # without layer_types every layer is full attention of num_attention_heads (Step3p7TextConfig), window or not
    no_types = lr.load_model({k: v for k, v in text.items() if k != "layer_types"})
    assert [(g.attention.sliding_window, g.attention.n_heads, g.count) for g in no_types.layer_groups] == [
        (None, 64, 3), (None, 64, 42)]
    for change, why in (({"moe_layers_enum": "3,x"}, "moe_layers_enum must be comma-separated"),
                        ({"moe_layers_enum": "-3"}, "moe_layers_enum must be comma-separated"),
                        ({"moe_layers_enum": True}, "moe_layers_enum must be comma-separated"),
                        ({"moe_layers_enum": float("nan")}, "moe_layers_enum must be comma-separated"),
                        ({"moe_layers_enum": [3, 1.5]}, r"moe_layers_enum\[1\] must be an integer"),
                        ({"moe_layers_enum": [3, -1]}, r"moe_layers_enum\[1\] must be non-negative"),
                        ({"layer_types": text["layer_types"][:47]}, r"one entry per layer \(45, or 48 with the MTP"),
                        ({"attention_other_setting": "x"}, "attention_other_setting must be an object"),
                        ({"attention_other_setting": {"num_attention_heads": 0}}, "num_attention_heads must be pos"),
                        ({"attention_other_setting": {"num_attention_heads": 100}}, "sliding layers' attention heads"),
                        ({"share_expert_dim": 0}, "share_expert_dim must be positive"),
                        ({"share_expert_dim": [1280, 640]}, "share_expert_dim must be an integer"),
                        ({"share_expert_dims": 640}, r"share_expert_dim and share_expert_dims differ \(1280, 640\)"),
                        ({"use_head_wise_attn_gate": "yes"}, "use_head_wise_attn_gate must be true or false")):
        with pytest.raises(lr.RooflineError, match=why):
            lr.load_model({**text, **change})
    # what Step3p7TextConfig does not read is refused by name: other sliding-layer shapes, block-sparse attention
    for change, key in (({"attention_other_setting": {"num_attention_groups": 4}}, "num_attention_groups"),
                        ({"attention_other_setting": {"head_dim": 64}}, "head_dim"),
                        ({"sparse_attention_config": {"sparse_topk_blocks": 16}}, "sparse_attention_config")):
        with pytest.raises(UnsupportedArchitectureError, match=key):
            lr.load_model({**text, **change})


# ------------------------------------------------------------------------------ AFMoE (Arcee Trinity)
def test_trinity_nano_gated_attention_four_norms_and_global_every_fourth_layer():
    m = fixture("trinity_nano")
    # d 1024, 8 heads x 128, 2 KV heads: q, o, gate 3 x 1024 x 1024 + k, v 2 x 1024 x 256 + q/k norms 2 x 128
    #   = 3,670,272; 4 norms 4096 -> 3,674,368 per layer, x 56 = 205,764,608
    # layers 0, 1 dense gated MLP 3 x 1024 x 3072 = 9,437,184; 54 MoE layers: 128 experts + 1 shared of
    #   3 x 1024 x 256 = 786,432 each + router 128 x 1024 = 131,072 + expert_bias 128 -> 101,580,928
    # untied embedding + head 2 x 200,192 x 1024 = 409,993,216; final norm 1024
    expected = 56 * 3_674_368 + 2 * 9_437_184 + 54 * 101_580_928 + 409_993_216 + 1024
    assert m.params_total == expected == 6_120_003_328  # = transformers meta count; Arcee: "6B total"
    # active: 8 of 128 -> 9 x 786,432 + 131,200 = 7,209,088 per MoE layer ("1B active")
    assert m.params_active == expected - 54 * (101_580_928 - 7_209_088) == 1_023_923_968
    # global_attn_every_n_layers 4: layers 4, 8, ..., 56 (1-based) full, the rest a 2048-token window
    assert [(g.count, g.attention.sliding_window) for g in m.layer_groups] == [(2, 2048), (40, 2048), (14, None)]
    assert all(g.norms == 4 and g.attention.output_gate and g.attention.qk_norm for g in m.layer_groups)
    assert kv_bytes_per_token(m) == 56 * 2 * 256 * 2  # before the window's cap (56 layers x K, V of 256 x 2 B)
    # its layout key named in its errors; 0 is no layout (AfmoeConfig would divide by it), true not a count
    for bad, why in ((0, "positive"), (True, "integer"), ("x", "integer"), (float("nan"), "integer")):
        with pytest.raises(lr.RooflineError, match=f"global_attn_every_n_layers must be .*{why}"):
            lr.load_model({**raw("trinity_nano"), "global_attn_every_n_layers": bad})


# ------------------------------------------------------------------------------ Cohere2-MoE (North Mini Code)
def test_north_mini_code_parallel_block_nope_full_layers_over_moe():
    m = fixture("north_mini_code")
    # d 2048, 32 heads x 128 (4096), 4 KV heads (512): q, o 2 x 2048 x 4096 = 16,777,216 + k, v 2 x 2048 x 512 =
    #   2,097,152 -> 18,874,368; one norm 2048 (a parallel block) -> 18,876,416 per layer, x 49 = 924,944,384
    # layer 0 dense gated MLP 3 x 2048 x 3072 = 18,874,368
    # 48 MoE layers: 128 experts of 3 x 2048 x 768 = 4,718,592 -> 603,979,776 + router 128 x 2048 = 262,144 (no
    #   bias) -> 604,241,920
    # tied embedding 262,144 x 2048 = 536,870,912 (tie_word_embeddings absent: Cohere2MoeConfig's true); final norm 2048
    expected = 49 * 18_876_416 + 18_874_368 + 48 * 604_241_920 + 536_870_912 + 2048
    assert m.params_total == expected == 30_484_303_872  # = transformers meta count; Cohere: "30B total"
    # active: 8 of 128 -> 8 x 4,718,592 + 262,144 = 38,010,880 per MoE layer
    assert m.params_active == expected - 48 * (604_241_920 - 38_010_880) == 3_305_213_952  # Cohere: "3B active"
    # layer 0 full attention with RoPE (the dense prefix, prefix_dense_sliding_window_pattern 1), then 3 sliding
    #   layers (RoPE, window 4096) and 1 full layer without RoPE, x 12
    assert [(g.name, g.count, g.attention.sliding_window, g.attention.rope) for g in m.layer_groups] == [
        ("full.dense", 1, None, True), ("sliding.moe", 36, 4096, True), ("full.moe", 12, None, False)]
    assert all(g.parallel_block and g.norms == 1 and not g.attention.qk_norm for g in m.layer_groups)
    assert m.norm == "rmsnorm" and not [a for a in m.assumptions if "LayerNorm" in a or "not used" in a]
    # KV: 49 layers x K, V of 4 x 128 x 2 B = 100,352 B a token before the window's cap; at 131,072 tokens the 13 full
    #   layers hold 131,072 x 2,048 B each (3,489,660,928), the 36 sliding ones 4,096 x 2,048 B (301,989,888)
    assert kv_bytes_per_token(m) == 49 * 2 * 4 * 128 * 2 == 100_352
    assert kv_cache_bytes(m, 131_072) == 13 * 131_072 * 2048 + 36 * 4096 * 2048 == 3_791_650_816
    ops = lambda group, sh=Sharding(): [o.name for o in build_ops(m, Phase.decode(8, 1000), sh)  # noqa: E731
                                        if o.group == group]
    assert "attn.rope" in ops("full.dense") and "attn.rope" in ops("sliding.moe") and "attn.rope" not in ops("full.moe")
    assert ops("full.moe").count("norm.attn") == 1 and "norm.ffn" not in ops("full.moe")  # one norm feeds both
    # under attention_dp the routed experts (allgather dispatch) need every group's tokens, as in a sequential block
    assert "comm.all_gather.ffn_in" in ops("sliding.moe", Sharding(tp=2, attention_dp=2, ep=4))


def test_cohere2_moe_layout_shared_experts_and_keys():
    north = raw("north_mini_code")
    layout = lambda cfg: [(g.name, g.count, g.attention.rope) for g in lr.load_model(cfg).layer_groups]  # noqa: E731
    # without layer_types, Cohere2MoeConfig's two runs: the first_k_dense_replace prefix full every
    #   prefix_dense_sliding_window_pattern-th layer, the others every sliding_window_pattern-th (4)
    no_types = {k: v for k, v in north.items() if k != "layer_types"}
    assert layout(no_types) == layout(north)
    # 2 prefix layers at pattern 2: layer 0 sliding, layer 1 full and, the pattern not 1, without RoPE; then 47 layers
    #   with every 4th full (11)
    assert layout({**no_types, "first_k_dense_replace": 2, "prefix_dense_sliding_window_pattern": 2}) == [
        ("sliding.dense", 1, True), ("full.dense", 1, False), ("sliding.moe", 36, True), ("full.moe", 11, False)]
    # one shared expert of intermediate_size (768) beside the routed ones, no gate: 48 x 3 x 2048 x 768 more
    shared = lr.load_model({**north, "num_shared_experts": 1})
    assert shared.params_total == 30_484_303_872 + 48 * 4_718_592
    assert (shared.layer_groups[1].ffn.d_shared, shared.layer_groups[1].ffn.shared_gate) == (768, False)
    assert any("'average'" in a for a in shared.assumptions)
    assert not any("'average'" in a for a in lr.load_model({**north, "num_shared_experts": 1,
                                                            "shared_expert_combination_strategy": "sum"}).assumptions)
    # rms_norm_eps null: Cohere2's bias-free LayerNorm (the same hidden_size weights); without a prefix width the dense
    #   layer takes intermediate_size (768): 3 x 2048 x (3072 - 768) fewer
    ln = lr.load_model({**north, "rms_norm_eps": None, "prefix_dense_intermediate_size": None})
    assert ln.params_total == 30_484_303_872 - 3 * 2048 * (3072 - 768)
    assert any("LayerNorm without bias" in a for a in ln.assumptions)
    assert any("prefix_dense_intermediate_size absent" in a for a in ln.assumptions)
    for change, why in (({"expert_selection_fn": "topk"}, "expert_selection_fn must be one of"),
                        ({"expert_selection_fn": 1}, "expert_selection_fn must be one of"),
                        ({"shared_expert_combination_strategy": "max"}, "shared_expert_combination_strategy must be"),
                        ({"prefix_dense_sliding_window_pattern": 0}, "prefix_dense_sliding_window_pattern must be pos"),
                        ({"prefix_dense_sliding_window_pattern": True}, "prefix_dense_sliding_window_pattern must be"),
                        ({"num_shared_experts": -1}, "num_shared_experts must be non-negative")):
        with pytest.raises(lr.RooflineError, match=why):
            lr.load_model({**north, **change})
    for change, why in (({"sliding_window_pattern": 0}, "sliding_window_pattern must be positive"),
                        ({"sliding_window_pattern": float("nan")}, "sliding_window_pattern must be an integer"),
                        ({"first_k_dense_replace": 50}, r"first_k_dense_replace \(50\) exceeds num_hidden_layers")):
        with pytest.raises(lr.RooflineError, match=why):
            lr.load_model({**no_types, **change})


# ------------------------------------------------------------------------------ Mellum 2 (JetBrains)
def test_mellum2_1_qwen3_moe_attention_over_window_layers():
    m = fixture("mellum2_1_12b_a2_5b")
    # d 2304, 32 heads x 128 (4096), 4 KV heads (512): q, o 2 x 2304 x 4096 = 18,874,368 + k, v 2 x 2304 x 512 =
    #   2,359,296 + q/k norms 2 x 128 -> 21,233,920; 2 norms 4608 -> 21,238,528
    # every layer MoE: 64 experts of 3 x 2304 x 896 = 6,193,152 -> 396,361,728 + router 64 x 2304 = 147,456 ->
    #   396,509,184
    # untied embedding + head 2 x 98,304 x 2304 = 452,984,832; final norm 2304
    expected = 28 * (21_238_528 + 396_509_184) + 452_984_832 + 2304
    assert m.params_total == expected == 12_149_923_072  # = transformers meta count; JetBrains: "12B"
    # active: 8 of 64 -> 8 x 6,193,152 + 147,456 = 49,692,672 per layer
    assert m.params_active == expected - 28 * (396_509_184 - 49_692_672) == 2_439_060_736  # "A2.5B"
    # 3 sliding layers (window 1024) then a full one, x 7; RoPE everywhere
    assert [(g.name, g.count, g.attention.sliding_window) for g in m.layer_groups] == [
        ("sliding.moe", 21, 1024), ("full.moe", 7, None)]
    assert all(g.attention.qk_norm and g.attention.rope and not g.ffn.d_shared for g in m.layer_groups)
    # KV: 28 layers x K, V of 4 x 128 x 2 B = 57,344 B a token before the cap; at 131,072 tokens 7 full layers of
    #   131,072 x 2,048 B (1,879,048,192) and 21 of 1,024 x 2,048 B (44,040,192)
    assert kv_bytes_per_token(m) == 28 * 2 * 4 * 128 * 2 == 57_344
    assert kv_cache_bytes(m, 131_072) == 7 * 131_072 * 2048 + 21 * 1024 * 2048 == 1_923_088_384
    assert m.assumptions == ()
    text = raw("mellum2_1_12b_a2_5b")
    # without layer_types MellumConfig makes every layer full attention, window or not
    no_types = lr.load_model({k: v for k, v in text.items() if k != "layer_types"})
    assert [(g.attention.sliding_window, g.count) for g in no_types.layer_groups] == [(None, 28)]
    # a dense layer: the gated MLP of intermediate_size 3 x 2304 x 7168 = 49,545,216 instead of the experts
    dense0 = lr.load_model({**text, "mlp_layer_types": ["dense"] + ["sparse"] * 27})
    assert dense0.params_total == expected - 396_509_184 + 49_545_216
    mtp = lr.load_model({**text, "num_mtp_layers": 1, "mtp_layer_types": ["sliding_attention"]})
    assert mtp.params_total == expected and any("num_mtp_layers=1" in a for a in mtp.assumptions)
    for change, why in (({"mlp_layer_types": ["sparse"] * 27}, r"mlp_layer_types must list one entry per layer \(28"),
                        ({"num_mtp_layers": -1}, "num_mtp_layers must be non-negative"),
                        ({"layer_types": ["sliding_attention"] * 28, "sliding_window": None},
                         "sliding_window is not set")):
        with pytest.raises(lr.RooflineError, match=why):
            lr.load_model({**text, **change})


# ------------------------------------------------------------------------------ Laguna (poolside)
def test_laguna_xs2_per_layer_heads_gated_attention_and_shared_expert():
    m = fixture("laguna_xs2")
    # d 2048, 8 KV heads of 128 (k, v 2 x 2048 x 1024 = 4,194,304), q/k norms 2 x 128, a gate per head g_proj 2048 x H:
    #   full layers 48 heads: q, o 2 x 2048 x 6144 = 25,165,824 + g 98,304 -> 29,458,688; 2 norms 4096 -> 29,462,784
    #   sliding layers 64 heads: q, o 2 x 2048 x 8192 = 33,554,432 + g 131,072 -> 37,880,064 -> 37,884,160
    # layer 0 dense gated MLP 3 x 2048 x 8192 = 50,331,648
    # 39 MoE layers: 256 experts and 1 shared of 3 x 2048 x 512 = 3,145,728 each -> 257 x 3,145,728 = 808,452,096 +
    #   router 256 x 2048 = 524,288 + e_score_correction_bias 256 -> 808,976,640
    # untied embedding + head 2 x 100,352 x 2048 = 411,041,792; final norm 2048
    expected = 10 * 29_462_784 + 30 * 37_884_160 + 50_331_648 + 39 * 808_976_640 + 411_041_792 + 2048
    assert m.params_total == expected == 33_442_617_088  # = transformers meta count (its router bias is a parameter)
    # active: 8 of 256 + the shared one -> 9 x 3,145,728 + 524,544 = 28,836,096 per MoE layer
    assert m.params_active == expected - 39 * (808_976_640 - 28_836_096) == 3_017_135_872  # poolside: "33B-A3B"
    # full attention (48 heads) on layer 0 and every 4th after it, 64-head sliding layers (window 512) between
    assert [(g.name, g.count, g.attention.n_heads, g.attention.sliding_window) for g in m.layer_groups] == [
        ("full.dense", 1, 48, None), ("sliding.moe", 30, 64, 512), ("full.moe", 9, 48, None)]
    assert all(g.attention.head_gate and not g.attention.output_gate and g.attention.qk_norm for g in m.layer_groups)
    assert (m.layer_groups[1].ffn.d_shared, m.layer_groups[1].ffn.shared_gate, m.layer_groups[1].ffn.router_bias) == (
        512, False, True)
    # KV: 40 layers x K, V of 8 x 128 x 2 B = 163,840 B a token before the cap; at 131,072 tokens 10 full layers of
    #   131,072 x 4,096 B (5,368,709,120) and 30 of 512 x 4,096 B (62,914,560)
    assert kv_bytes_per_token(m) == 40 * 2 * 8 * 128 * 2 == 163_840
    assert kv_cache_bytes(m, 131_072) == 10 * 131_072 * 4096 + 30 * 512 * 4096 == 5_431_623_680
    # the gate at tp 8: (T, d) @ (d, 64 / 8 heads) on each chip, then a multiply over the heads' outputs
    ops = {o.name: o for o in build_ops(m, Phase.decode(1, 1000), Sharding(tp=8)) if o.group == "sliding.moe"}
    assert ops["attn.g_proj"].weight_bytes == 2048 * 8 * 2 and "attn.head_gate" in ops
    assert any("softplus" in a for a in m.assumptions) and any("partial_rotary_factor" in a for a in m.assumptions)


def test_laguna_gating_heads_and_defaults():
    text = raw("laguna_xs2")
    total = lambda cfg: lr.load_model(cfg).params_total  # noqa: E731
    # "per-element": a gate per channel, g_proj d -> H x 128 instead of d -> H: 2048 x 127 more per head, over
    #   10 x 48 + 30 x 64 = 2,400 heads -> 624,230,400
    per_element = lr.load_model({**text, "gating": "per-element"})
    assert per_element.params_total == 33_442_617_088 + 2048 * 127 * 2400
    assert all(g.attention.output_gate and not g.attention.head_gate for g in per_element.layer_groups)
    assert total({**text, "gating": "per-head"}) == 33_442_617_088
    # without num_attention_heads_per_layer every layer has num_attention_heads (48): the 30 sliding layers lose 16
    #   heads each, q, o 2 x 2048 x 2048 = 8,388,608 + g 2048 x 16 = 32,768 -> 8,421,376
    no_list = {k: v for k, v in text.items() if k != "num_attention_heads_per_layer"}
    assert total(no_list) == 33_442_617_088 - 30 * 8_421_376
    # without mlp_layer_types LagunaConfig makes layer 0 dense and the rest sparse; without layer_types all full
    assert total({k: v for k, v in text.items() if k != "mlp_layer_types"}) == 33_442_617_088
    no_types = lr.load_model({k: v for k, v in text.items() if k != "layer_types"})
    assert {g.attention.sliding_window for g in no_types.layer_groups} == {None}
    for change, why in (({"gating": "per_head"}, "gating must be true, 'per-head' or 'per-element'"),
                        ({"gating": 1}, "gating must be true"),
                        ({"num_attention_heads_per_layer": [48] * 39}, "one entry per layer \\(40\\), got 39"),
                        ({"num_attention_heads_per_layer": [0] * 40}, r"per_layer\[0\] must be positive"),
                        ({"num_attention_heads_per_layer": [True] * 40}, r"num_attention_heads_per_layer\[0\] must be"),
                        ({"num_attention_heads_per_layer": [12] * 40}, r"\[0\] \(12\) is not divisible by num_key_v"),
                        ({"num_attention_heads_per_layer": "48"}, "num_attention_heads_per_layer must be a list")):
        with pytest.raises(lr.RooflineError, match=why):
            lr.load_model({**text, **change})
    # what LagunaAttention builds that the spec cannot: refused by name
    for change, key in (({"gating": False}, "gating=false"),
                        ({"gating": "per-element", "attention_bias": True}, "attention_bias=true")):
        with pytest.raises(UnsupportedArchitectureError, match=key):
            lr.load_model({**text, **change})


# ------------------------------------------------------------------------------ Doge (SmallDoge): refused
def test_doge_dynamic_mask_attention_is_refused_by_name():
    cfg = {**TINY, "model_type": "doge", "keep_window_size": 2048, "is_moe": False}
    with pytest.raises(UnsupportedArchitectureError) as e:
        lr.load_model(cfg)
    text = str(e.value)
    assert "\n" not in text and all(w in text for w in ("'doge'", "dynamic mask attention", "keep_window_size",
                                                        "residual scales", "CDMoE"))


# ------------------------------------------------------------------------------ Nemotron-3 (Nemotron-H + MoE)
# d 2688. Mamba-2 block (64 heads x 64 = inner 4096, 8 groups x state 128, conv 4): conv_dim 4096 + 2048 = 6144;
#   in_proj 2688 x (4096 + 6144 + 64) = 27,697,152; conv 6144 x 4 + 6144; A_log, dt_bias, D 3 x 64; norm 4096;
#   out_proj 4096 x 2688 = 11,010,048; block norm 2688 -> 38,744,896
# MoE block: router 2688 x 128 + correction bias 128 = 344,192; 128 relu² experts 2 x 2688 x 1856 = 1,277,165,568;
#   shared relu² MLP 2 x 2688 x 3712 = 19,955,712; norm 2688 -> 1,297,468,160
# attention block: q, o 2 x 2688 x 4096 + k, v 2 x 2688 x 256 + norm 2688 = 23,399,040
# pattern: 23 M, 23 E, 6 *; embed + untied head 2 x 131,072 x 2688 = 704,643,072; final norm 2688
NEMOTRON3 = 23 * 38_744_896 + 23 * 1_297_468_160 + 6 * 23_399_040 + 704_643_072 + 2688


def test_nemotron3_nano_moe_blocks():
    m = fixture("nemotron3_nano_30b_a3b")
    assert m.params_total == NEMOTRON3 == 31_577_940_288
    # transformers meta count 31,577,937,344: its e_score_correction_bias is a buffer (23 x 128 = 2,944 fewer)
    assert m.params_total - 31_577_937_344 == 23 * 128
    # active: 6 of 128 experts: 344,192 + 6 x 9,977,856 + 19,955,712 + 2688 = 80,169,728 per MoE block
    assert m.params_active == 23 * 38_744_896 + 23 * 80_169_728 + 6 * 23_399_040 + 704_643_072 + 2688
    assert m.params_active == pytest.approx(3.58e9, rel=1e-3)  # card "~3.2B active" excludes the embeddings
    assert [(g.name, g.count) for g in m.layer_groups] == [("mamba2", 23), ("moe", 23), ("attention", 6)]
    moe = m.layer_groups[1].ffn
    assert (moe.n_experts, moe.top_k, moe.d_expert, moe.d_shared, moe.gated) == (128, 6, 1856, 3712, False)
    # KV: 6 attention layers x 2 KV heads x 128 x 2 (K, V) x 2 B = 6,144 B per token
    assert kv_bytes_per_token(m) == 6_144


# ------------------------------------------------------------------------------ Granite-4.0 hybrid
def test_granite_4_0_h_tiny():
    m = fixture("granite_4_0_h_tiny")
    # d 1536. Mamba-2: 48 heads x 64 = 3072, 1 group x 128: conv_dim 3328; in_proj 1536 x (3072 + 3328 + 48)
    #   = 9,904,128; conv 3328 x 4 + 3328 = 16,640; 3 x 48; norm 3072; out_proj 3072 x 1536 = 4,718,592 -> 14,642,576
    # attention (no bias): q, o 2 x 1536 x 1536 + k, v 2 x 1536 x 512 = 6,291,456
    # every layer: router 1536 x 64 = 98,304; 64 gated experts 3 x 1536 x 512 = 150,994,944; shared gated MLP
    #   3 x 1536 x 1024 = 4,718,592 -> 155,811,840; 2 norms 3072
    # 36 Mamba + 4 attention layers; tied embedding 100,352 x 1536 = 154,140,672; final norm 1536
    expected = 36 * 14_642_576 + 4 * 6_291_456 + 40 * (155_811_840 + 3072) + 154_140_672 + 1536
    assert m.params_total == expected == 6_939_037_248  # = transformers meta count
    # active: 6 of 64 experts: 98,304 + 6 x 2,359,296 + 4,718,592 = 18,972,672 per layer (card: "1B active")
    assert m.params_active == 36 * 14_642_576 + 4 * 6_291_456 + 40 * (18_972_672 + 3072) + 154_140_672 + 1536
    assert [(g.name, g.count) for g in m.layer_groups] == [("mamba2.moe", 36), ("attention.moe", 4)]
    assert not m.layer_groups[1].attention.rope  # position_embedding_type not 'rope': NoPE attention
    # state: 48 heads x 64 x 128 x 2 B = 786,432 + conv 3 x 3328 x 2 B = 19,968 per Mamba layer
    assert state_bytes_per_sequence(m, "bf16") == 36 * (786_432 + 19_968)


def test_granite_without_experts_is_the_shared_mlp_alone():
    cfg = {**raw("granite_4_0_h_tiny"), "num_local_experts": 0, "num_experts_per_tok": 0,
           "shared_intermediate_size": 4096}
    ffn = lr.load_model(cfg).layer_groups[0].ffn
    assert (ffn.kind, ffn.d_ff, ffn.gated) == ("dense", 4096, True)  # Granite-4.0-H-1B's dense twin


# ------------------------------------------------------------------------------ LFM2-MoE
def test_lfm2_8b_a1b():
    m = fixture("lfm2_8b_a1b")
    # d 2048. short conv: in_proj 2048 x 6144 = 12,582,912; conv 2048 x 3 taps = 6144; out_proj 2048 x 2048
    #   = 4,194,304 -> 16,783,360; attention: q, o 2 x 2048 x 2048 + k, v 2 x 2048 x 512 + q/k norms 2 x 64
    #   = 10,485,888; dense gated MLP (layers 0, 1) 3 x 2048 x 7168 = 44,040,192; MoE (22 layers): router
    #   2048 x 32 + expert bias 32 + 32 experts 3 x 2048 x 1792 = 352,387,104; 2 norms per layer 4096
    # 18 conv + 6 attention layers; tied embedding 65,536 x 2048 = 134,217,728; final norm 2048
    expected = 18 * 16_783_360 + 6 * 10_485_888 + 2 * 44_040_192 + 22 * 352_387_104 + 24 * 4096 + 134_217_728 + 2048
    assert m.params_total == expected == 8_339_930_560
    # transformers meta count 8,339,929,856: its expert_bias is a buffer (22 x 32 = 704 fewer)
    assert m.params_total - 8_339_929_856 == 22 * 32
    assert m.params_active == pytest.approx(1.5e9, rel=0.05)  # card: "1.5B active"
    assert [(g.name, g.count) for g in m.layer_groups] == [("short_conv.dense", 2), ("attention.moe", 6),
                                                           ("short_conv.moe", 16)]


# ------------------------------------------------------------------------------ GLM-5 (DSA)
# d 6144, 64 heads. MLA: q_a 6144 x 2048 + q_b 2048 x 64 x 256 = 46,137,344; kv_a 6144 x 576 + kv_b 512 x 64 x 448
#   = 18,219,008; o 64 x 256 x 6144 = 100,663,296; latent norms 2048 + 512; indexer: q 2048 x 32 x 128 + k 6144 x 128
#   + weights 6144 x 32 + k LayerNorm 2 x 128 = 9,371,904 -> attention 174,394,112
# dense MLP (3 layers) 3 x 6144 x 12,288 = 226,492,416; MoE (75): router 6144 x 256 + bias 256 + 256 experts and 1
#   shared 3 x 6144 x 2048 each = 9,702,998,272; norms 2 x 6144; embed + head 2 x 154,880 x 6144; final norm 6144
GLM5 = 78 * 174_394_112 + 3 * 226_492_416 + 75 * 9_702_998_272 + 78 * 12_288 + 2 * 154_880 * 6144 + 6144


def test_glm5_reads_as_mla_with_dsa_and_moe():
    m = fixture("glm5")
    assert m.params_total == GLM5 == 743_911_218_432
    # transformers meta count 743,911,199,232: e_score_correction_bias is a buffer there (75 x 256)
    assert m.params_total - 743_911_199_232 == 75 * 256
    assert m.params_active == pytest.approx(41.78e9, rel=1e-3)  # Z.ai "40B active" excludes the 1.9B embeddings
    assert m.attention_kind == "mla+dsa"
    # KV per token and layer: latent 512 + rope key 64 + index key 128 = 704 elements
    assert kv_bytes_per_token(m, "bf16") == 78 * 704 * 2


def test_glm5_shared_indexer_layers_have_no_indexer():
    # index_topk_freq 4 from index_skip_topk_offset 2: layers 0, 1 full, then every 4th (5, 9); the others reuse the
    # previous top-k (configuration_glm_moe_dsa.py: full where max(i - 2 + 1, 0) % 4 == 0)
    cfg = {**raw("glm5"), "num_hidden_layers": 10, "first_k_dense_replace": 0, "index_topk_freq": 4}
    m = lr.load_model(cfg)
    full, shared = [g for g in m.layer_groups if g.attention.index_n_heads], \
        [g for g in m.layer_groups if not g.attention.index_n_heads]
    assert sum(g.count for g in full) == 4 and sum(g.count for g in shared) == 6
    assert all(g.attention.index_topk == 2048 for g in shared)  # still top-k sparse
    # a shared layer lacks the 9,371,904 - 256 indexer matrices and the 256 LayerNorm weights
    assert m.params_total == GLM5_10_LAYERS - 6 * 9_371_904
    # KV per token: 4 x 704 + 6 x 576 elements
    assert kv_bytes_per_token(m, "bf16") == (4 * 704 + 6 * 576) * 2
    ops = build_ops(one_layer(m, shared[0].name), Phase.decode(1, 4096))
    assert not [o for o in ops if o.name.startswith("attn.indexer")]
    core = next(o for o in ops if o.name == "attn.core")
    assert "top-k" in core.formula  # --explain shows the top-k cap on the shared layer too
    assert any("reuse the previous indexer layer's top-k" in a for a in m.assumptions)


# 10 MoE layers of GLM-5 with every indexer: 10 x (174,394,112 + 9,702,998,272 + 12,288) + embeddings + final norm
GLM5_10_LAYERS = 10 * (174_394_112 + 9_702_998_272 + 12_288) + 2 * 154_880 * 6144 + 6144


def test_glm5_indexer_pattern_errors_name_the_key():
    with pytest.raises(lr.ModelConfigError, match="index_topk_pattern"):
        lr.load_model({**raw("glm5"), "index_topk_pattern": "FS"})
    with pytest.raises(lr.ModelConfigError, match="indexer_types"):
        lr.load_model({**raw("glm5"), "indexer_types": ["shared"] * 78})


# ------------------------------------------------------------------------------ dots3-note (DSA + sliding MLA)
# d 5120. DSA layer (13): 128 heads; q_a 5120 x 1024 = 5,242,880 + q_b 1024 x 128 x (128 + 64) = 25,165,824; kv_a
#   5120 x (512 + 64) = 2,949,120 + kv_b 512 x 128 x (128 + 128) = 16,777,216; o 128 x 128 x 5120 = 83,886,080;
#   g_proj 5120 x 128 = 655,360; norms q latent 1024 + kv latent 512 + rope key 64 = 1,600; indexer (GLM-5's):
#   q 1024 x 64 x 128 = 8,388,608 + k 5120 x 128 = 655,360 + weights 5120 x 64 = 327,680 + k LayerNorm 2 x 128
#   = 9,371,904 -> 144,049,984
# sliding layer (33): 64 heads, kv_lora 1024, nope 192; q_a 5,242,880 + q_b 1024 x 64 x 256 = 16,777,216; kv_a
#   5120 x 1088 = 5,570,560 + kv_b 1024 x 64 x 320 = 20,971,520; o 64 x 128 x 5120 = 41,943,040; g_proj 5120 x 64
#   = 327,680; norms 1024 + 1024 + 64 = 2,112 -> 90,835,008
# layer 0 dense 3 x 5120 x 13,824 = 212,336,640; 45 MoE layers: 256 experts + 1 shared of 3 x 5120 x 1536
#   = 23,592,960 each + router 256 x 5120 = 1,310,720 + bias 256 -> 6,064,701,696; 2 norms 10,240 a layer;
#   untied embed + head 2 x 152,064 x 5120 = 1,557,135,360; final norm 5120
DOTS3 = (13 * 144_049_984 + 33 * 90_835_008 + 212_336_640 + 45 * 6_064_701_696 + 46 * 10_240 + 1_557_135_360
         + 5120)


def test_dots3_note_prev_dsa_and_sliding_mla_layers():
    m = fixture("dots3_note_prev")
    assert m.params_total == DOTS3 == 279_551_729_536
    # transformers meta count 279,551,718,016 (the fixture and Dots3NoteTextConfig() alike): its
    # e_score_correction_bias is a buffer (45 x 256 = 11,520 fewer)
    assert m.params_total - 279_551_718_016 == 45 * 256
    # active: 8 of 256 experts, 248 x 23,592,960 = 5,851,054,080 fewer a MoE layer (dots: "16B activated")
    assert m.params_active == DOTS3 - 45 * 5_851_054_080 == 16_254_295_936
    assert [(g.name, g.count, g.attention.sliding_window, g.attention.index_topk) for g in m.layer_groups] == [
        ("full.dense", 1, None, 2048), ("full.moe", 12, None, 2048), ("sliding.moe", 33, 513, None)]
    # KV per token: DSA latent 512 + rope key 64 + index key 128 = 704; sliding 1024 + 64 = 1,088, at most 513 tokens
    assert kv_bytes_per_token(m, "bf16") == (13 * 704 + 33 * 1088) * 2 == 90_112
    assert kv_cache_bytes(m, 1024) == 13 * 704 * 2 * 1024 + 33 * 1088 * 2 * 513
    ops = {o.name: o for o in build_ops(one_layer(m, "sliding.moe"), Phase.decode(1, 4096))}
    assert "attn.g_proj" in ops and not [n for n in ops if n.startswith("attn.indexer")]
    assert float(ops["attn.g_proj"].flops) == 2 * 5120 * 64
    assert any("33 of 46 layers (sliding_attention) attend over the last 513 tokens" in a for a in m.assumptions)
    assert any("vision_config not counted (a tower with MoE layers" in a for a in m.assumptions)


def _dots3_transformers_form() -> dict:
    """The fixture as transformers 5.24 saves it: a text_config with indexed_attention layer types, mlp_layer_types
    and the sliding layers' shape in per_layer_config (only what differs from the DSA layers')."""
    text = {k: v for k, v in raw("dots3_note_prev").items() if not k.startswith("swa_") and k not in (
        "vision_config", "audio_config", "sliding_window_size", "first_k_dense_replace", "moe_layer_freq")}
    sliding = [i for i, t in enumerate(text["layer_types"]) if t == "sliding_attention"]
    text.update(model_type="dots3_note_text", sliding_window=513, shared_experts_intermediate_size=1536,
                layer_types=["sliding_attention" if i in sliding else "indexed_attention" for i in range(46)],
                mlp_layer_types=["dense"] + ["sparse"] * 45,
                per_layer_config={f"{i:02d}": {"num_attention_heads": 64, "num_key_value_heads": 64,
                                               "kv_lora_rank": 1024, "qk_nope_head_dim": 192} for i in sliding})
    return {"model_type": "dots3_note", "text_config": text}


def test_dots3_note_transformers_form_reads_the_same():
    m = lr.load_model(_dots3_transformers_form())
    assert m.params_total == DOTS3 and kv_bytes_per_token(m, "bf16") == 90_112
    # use_dsa false (hub form): the DSA layers become full MLA without an indexer: 13 x 9,371,904 fewer parameters,
    #   13 x 128 index-key elements fewer per token
    m = lr.load_model({**raw("dots3_note_prev"), "use_dsa": False})
    assert m.params_total == DOTS3 - 13 * 9_371_904
    assert kv_bytes_per_token(m, "bf16") == 90_112 - 13 * 128 * 2
    assert not any(g.attention.index_topk for g in m.layer_groups)


@pytest.mark.parametrize("change, error", [
    ({"layer_types": ["dense_attention"] * 46}, "is not one of 'indexed_attention'"),
    ({"swa_head_dim": 192, "swa_qk_rope_head_dim": None}, "swa_head_dim .192. must exceed"),
    ({"swa_kv_lora_rank": "1024"}, "swa_kv_lora_rank must be an integer"),
    ({"swa_num_key_value_heads": 8}, r"num_key_value_heads \(8\) must equal num_attention_heads \(64\)"),
    ({"attention_gate_type": "elementwise"}, "only the 'headwise' gate"),
    ({"per_layer_config": {"3": {"intermediate_size": 4096}}}, r"per_layer_config\[3\].intermediate_size"),
    ({"per_layer_config": {"x": {}}}, "per_layer_config key .a layer index. must be an integer"),
    ({"per_layer_config": {"46": {}}}, "exceeds the physical bound"),
    ({"per_layer_config": {"2": {"kv_lora_rank": True}}}, r"per_layer_config\[2\].kv_lora_rank must be an integer"),
    ({"mlp_layer_types": ["moe"] * 46}, "is not one of 'dense', 'sparse'"),
    ({"n_shared_experts": 0}, "n_shared_experts must be positive"),
    ({"use_dsa": "yes"}, "use_dsa must be true or false"),
])
def test_dots3_note_refuses_what_it_cannot_read(change, error):
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model({**raw("dots3_note_prev"), **change})


# ------------------------------------------------------------------------------ A.X-K2 (MLA + DSA, gated RMSNorms)
# d 2048, 48 layers (1 dense + 47 MoE), 32 heads, q_lora 384, kv_lora 128, nope 64 + rope 32 = 96, v 64. Attention,
#   every layer: q_a 2048 x 384 = 786,432 + q_gate_proj 2 x 384 = 768 x 32 x (96 + 64) = 3,932,160 + kv_a 2048 x
#   (128 + 32) = 327,680 + kv_b 128 x 32 x (64 + 64) = 524,288 + o 32 x 64 x 2048 = 4,194,304 = 9,764,864; indexer
#   wq_b 384 x 16 x 128 = 786,432 + wk 2048 x 128 = 262,144 + weights_proj 2048 x 16 = 32,768 + k_norm LayerNorm 256
#   = 1,081,600; q_a / kv_a norms 384 + 128 = 512 -> 10,846,976
# gated norm: fc1 2048 x 16 + fc2 16 x 2048 = 65,536 (one on the dense layer, two on a MoE layer); 2 RMSNorms 4,096
# dense MLP 3 x 2048 x 5120 = 31,457,280; MoE 128 experts x 3 x 2048 x 512 (3,145,728) = 402,653,184 + shared
#   3,145,728 + router 128 x 2048 = 262,144 + its bias 128 = 406,061,184
# untied embed + head 2 x 163,840 x 2048 = 671,088,640; final norm 2048
AXK2_DENSE = 10_846_976 + 65_536 + 4_096 + 31_457_280  # 42,373,888
AXK2_MOE = 10_846_976 + 2 * 65_536 + 4_096 + 406_061_184  # 417,043,328
AXK2 = AXK2_DENSE + 47 * AXK2_MOE + 671_088_640 + 2048


def test_axk2_light_default_q_gate_proj_and_gated_norms():
    m = fixture("axk2_light_default")
    assert m.params_total == AXK2 == 20_314_500_992
    # transformers meta count 20,314,494,976 (AXK2Config()): its e_score_correction_bias is a buffer (47 x 128 fewer)
    assert m.params_total - 20_314_494_976 == 47 * 128
    # active: 8 of 128 experts, 120 x 3,145,728 = 377,487,360 fewer a MoE layer
    assert m.params_active == AXK2 - 47 * 377_487_360 == 2_572_595_072
    assert [(g.name, g.count, g.gated_norms) for g in m.layer_groups] == [("dense", 1, 1), ("moe", 47, 2)]
    # KV per token: latent 128 + rope key 32 + index key 128 = 288 elements a layer, 2 B each
    assert kv_bytes_per_token(m, "bf16") == 48 * 288 * 2 == 27_648
    g = next(g for g in m.layer_groups if g.name == "moe")  # one MoE layer, its gated norms kept
    ops = {o.name: o for o in build_ops(ModelSpec(m.name, 2048, m.vocab_size, (replace(g, count=1),)),
                                        Phase.decode(1, 4096))}
    # q_gate_proj: 2 x 384 inputs -> 32 x (96 + 64) outputs, one token
    assert float(ops["attn.q_b_proj"].flops) == 2 * 768 * 5120
    # the output gate over 32 x 64 elements (sigmoid ~4 + 1 multiply)
    assert float(ops["attn.output_gate"].flops) == 5 * 32 * 64
    # two gated norms: fc1 (2048 -> 16) and fc2 (16 -> 2048), x 2; the gate over 2 x 2048 elements
    assert float(ops["norm_gate.fc1"].flops) == float(ops["norm_gate.fc2"].flops) == 2 * 2 * 2048 * 16
    assert float(ops["norm_gate.apply"].flops) == 5 * 2 * 2048
    assert any("gated through a rank-16 bottleneck" in a for a in m.assumptions)


@pytest.mark.parametrize("change, error", [
    ({"q_lora_rank": None}, "q_lora_rank must be a positive integer for model_type axk2"),
    ({"layer_types": ["full_attention"] * 48}, "entry 'full_attention' is not one of 'indexed_attention'"),
    ({"gated_norm_rank": "16"}, "gated_norm_rank must be an integer"),
    ({"gated_norm_rank": 0}, "gated_norm_rank must be"),
    ({"attention_bias": True}, "attention_bias=true with MLA"),
])
def test_axk2_refuses_what_it_cannot_read(change, error):
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model({**raw("axk2_light_default"), **change})


# ------------------------------------------------------------------------------ Hy4 (iHC, gated MLA, DSA)
# d 6144, 64 heads. Attention, every layer: q_a 6144 x 2048 = 12,582,912 + q_b 2048 x 64 x (192 + 64) = 33,554,432;
#   kv_a 6144 x (512 + 64) = 3,538,944 + kv_b 512 x 64 x (192 + 256) = 14,680,064; o 64 x 256 x 6144 = 100,663,296;
#   gate_proj 6144 x 64 x 256 = 100,663,296; latent norms 2048 + 512; sinks 64 -> 265,685,568
# iHC, two a layer: fn 2 x 4 rows of 4 x 6144 = 196,608 + base 8 + scale 2 -> 2 x 196,618 = 393,236; 2 norms 12,288
#   -> 266,091,092 a layer
# indexer (21 full layers): q 2048 x 32 x 128 = 8,388,608 + k 6144 x 128 = 786,432 + weights 6144 x 32 = 196,608
#   + k LayerNorm 2 x 128 -> 9,371,904
# layer 0 dense 3 x 6144 x 18,432 = 339,738,624; 77 MoE layers: 256 experts + 1 shared of 3 x 6144 x 2048
#   = 37,748,736 each + router 256 x 6144 = 1,572,864 + bias 256 -> 9,702,998,272
# untied embed + head 2 x 120,832 x 6144 = 1,484,783,616; final norm 6144; hc head 4 x 4 x 6144 + 4 + 1 = 98,309
HY4 = (78 * 266_091_092 + 21 * 9_371_904 + 339_738_624 + 77 * 9_702_998_272 + 1_484_783_616 + 6144 + 98_309)


def test_hy4_preview_ihc_gated_mla_and_shared_indexers():
    m = fixture("hy4_preview")
    assert m.params_total == HY4 == 769_907_408_797
    # transformers meta count 769,907,389,085: its e_score_correction_bias is a buffer (77 x 256 = 19,712 fewer)
    assert m.params_total - 769_907_389_085 == 77 * 256
    # active: 8 of 256 experts, 248 x 37,748,736 = 9,361,686,528 fewer a MoE layer (Tencent: A49B)
    assert m.params_active == HY4 - 77 * 9_361_686_528 == 49_057_546_141
    assert [(g.name, g.count, g.hc_mult, g.hc_independent, g.attention.index_n_heads) for g in m.layer_groups] == [
        ("dsa.dense", 1, 4, True, 32), ("dsa.moe", 20, 4, True, 32), ("dsa-shared.moe", 57, 4, True, 0)]
    # KV per token: latent 512 + rope key 64 on 78 layers, index key 128 on the 21 full ones
    assert kv_bytes_per_token(m, "bf16") == (78 * 576 + 21 * 128) * 2 == 95_232
    g = next(g for g in m.layer_groups if g.name == "dsa-shared.moe")
    ops = {o.name: o for o in build_ops(replace(m, layer_groups=(replace(g, count=1),)), Phase.decode(1, 4096))}
    assert not [n for n in ops if n.startswith("attn.indexer")]
    # gate_proj: (1, 6144) @ (6144, 64 x 256); its sigmoid and multiply over 16,384 outputs, 5 FLOP each
    assert float(ops["attn.gate_proj"].flops) == 2 * 6144 * 16_384
    assert float(ops["attn.output_gate"].flops) == 5 * 16_384
    # iHC mixing: (1, 4 x 6144) @ (24,576, 8): pre and post only; post * y + streams: 2 FLOP on 24,576 elements
    assert float(ops["hc.attn.mix_proj"].flops) == 2 * 24_576 * 8
    assert float(ops["hc.ffn.expand_mix"].flops) == 2 * 24_576
    assert any("57 of 78 DSA layers reuse" in a for a in m.assumptions)


def test_hy4_default_configs():
    # HYV4Config(): d 2816, 34 layers, 32 heads, q_lora 1536, 16 index heads, experts of 768, dense 6912.
    # attention: q_a 2816 x 1536 = 4,325,376 + q_b 1536 x 32 x 256 = 12,582,912 + kv_a 2816 x 576 = 1,622,016 + kv_b
    #   512 x 32 x 448 = 7,340,032 + o 8192 x 2816 = 23,068,672 + gate 23,068,672 + norms 2048 + sinks 32
    #   = 72,009,760; iHC 2 x (8 x 11,264 + 10) = 180,244; norms 5632 -> 72,195,636 a layer
    # indexer (10 full layers: 0, 1, 5, ..., 33): 1536 x 2048 + 2816 x 128 + 2816 x 16 + 256 = 3,551,488
    # 33 MoE layers: 257 x 3 x 2816 x 768 + router 2816 x 256 + bias 256 = 1,668,153,600; dense 3 x 2816 x 6912
    #   = 58,392,576; embed + head 2 x 120,832 x 2816 = 680,525,824; final norm 2816; hc head 4 x 11,264 + 5
    m = lr.load_model({"model_type": "hy_v4"})
    assert m.params_total == (34 * 72_195_636 + 10 * 3_551_488 + 33 * 1_668_153_600 + 58_392_576 + 680_525_824
                              + 2816 + 45_061) == 58_278_201_581
    assert m.params_total - 58_278_193_133 == 33 * 256  # transformers meta count + the router-bias buffers
    # HYV4VLTextConfig(): the released shape (the fixture's): transformers meta count 769,907,389,085
    for cfg in ({"model_type": "hy_v4_vl_text"}, {"model_type": "hy_v4_vl", "text_config": {}}):
        assert lr.load_model(cfg).params_total == HY4


@pytest.mark.parametrize("change, error", [
    ({"enable_ihc": False}, "enable_ihc=false"),
    ({"use_dsa": False}, "use_dsa=false"),
    ({"gating_type": "headwise"}, "gating_type='headwise'"),
    ({"indexer_types": ["shared"] * 78}, r"indexer_types\[0\] must be 'full'"),
    ({"indexer_types": ["full"] * 77}, "indexer_types must list one entry per layer"),
    ({"mlp_layer_types": ["moe"] * 78}, "mlp_layer_types entry 'moe' is not one of"),
    ({"layer_types": ["sliding_attention"] * 78}, "layer_types entry 'sliding_attention' is not one of"),
    ({"hc_mult": 0}, "hc_mult must be positive"),
    ({"attention_bias": True}, "attention_bias=true with MLA"),
])
def test_hy4_refuses_what_it_cannot_read(change, error):
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model({**raw("hy4_preview"), **change})


# ------------------------------------------------------------------------------ MiniMax-M3 (block-sparse GQA)
# d 6144, 64 heads / 4 KV heads of 128. Attention, every layer: q 6144 x 8192 = 50,331,648 + k, v 2 x 6144 x 512
#   = 6,291,456 + o 8192 x 6144 = 50,331,648; q/k norms per head 2 x 128 -> 106,955,008
# indexer (57 sparse layers): q 6144 x 4 x 128 = 3,145,728 + k 6144 x 128 = 786,432 + q/k norms 2 x 128 (no head
#   weights) -> 3,932,416
# layers 0-2 dense 3 x 6144 x 12,288 = 226,492,416; 57 MoE layers: 128 experts of 3 x 6144 x 3072 = 56,623,104 each
#   = 7,247,757,312 + one shared expert of 3072 56,623,104 + router 128 x 6144 = 786,432 + bias 128 -> 7,305,166,976;
#   2 norms 12,288 a layer; untied embed + head 2 x 200,064 x 6144 = 2,458,386,432; final norm 6144
MINIMAX_M3 = (60 * 106_955_008 + 57 * 3_932_416 + 3 * 226_492_416 + 57 * 7_305_166_976 + 60 * 12_288
              + 2_458_386_432 + 6144)


def test_minimax_m3_full_and_block_sparse_layers():
    m = fixture("minimax_m3")
    assert m.params_total == MINIMAX_M3 == 426_174_572_928
    # transformers meta count 426,174,565,632: its e_score_correction_bias is a buffer (57 x 128 = 7,296 fewer)
    assert m.params_total - 426_174_565_632 == 57 * 128
    # active: 4 of 128 experts, 124 x 56,623,104 = 7,021,264,896 fewer a MoE layer (MiniMax: "~23B activated",
    #   23.5B without the 2.46B of embeddings)
    assert m.params_active == MINIMAX_M3 - 57 * 7_021_264_896 == 25_962_473_856
    assert [(g.name, g.count, g.attention.index_topk, g.attention.index_block_size) for g in m.layer_groups] == [
        ("full.dense", 3, None, 0), ("sparse.moe", 57, 16, 128)]
    assert m.attention_kind == "gqa/gqa+msa" and m.context_breakpoints() == [2048]  # 16 blocks x 128 keys
    # KV per token: K and V 4 x 2 x 128 = 1024 elements a layer, + the index key 128 on the sparse layers
    assert kv_bytes_per_token(m, "bf16") == (60 * 1024 + 57 * 128) * 2 == 137_472
    assert kv_cache_bytes(m, 100_000) == 137_472 * 100_000  # nothing capped: every key stays selectable
    assert any("57 of 60 layers (minimax_m3_sparse) attend per KV group to the 16 blocks of 128 keys (2,048 keys)"
               in a for a in m.assumptions)


def test_minimax_m3_sparse_core_attends_to_the_selected_blocks():
    m = fixture("minimax_m3")
    ops = {o.name: o for o in build_ops(one_layer(m, "sparse.moe"), Phase.decode(1, 65_536))}
    # the core: 64 heads x 2,048 keys x (128 + 128) x 2 FLOP; it reads 2,048 tokens of K and V (4 x 256 elements)
    assert float(ops["attn.core"].flops) == 2 * 64 * 2048 * 256
    assert float(ops["attn.core"].kv_bytes) == 2048 * 1024 * 2
    # the indexer scores every cached index key (4 heads of 128) and reads all 65,536 of them (128 elements each);
    #   its top-k walks 4 heads x 65,536 / 128 = 2,048 block scores; k_proj is 6144 x 128 (no head weights)
    assert float(ops["attn.indexer.score"].flops) == 2 * 4 * 65_536 * 128
    assert float(ops["attn.indexer.score"].kv_bytes) == 65_536 * 128 * 2
    assert float(ops["attn.indexer.topk"].flops) == 4 * 65_536 / 128
    assert float(ops["attn.indexer.k_proj"].flops) == 2 * 6144 * 128
    assert float(ops["attn.kv_write"].kv_bytes) == (1024 + 128) * 2  # K, V and the index key of the new token
    full = {o.name: o for o in build_ops(one_layer(m, "full.dense"), Phase.decode(1, 65_536))}
    assert float(full["attn.core"].kv_bytes) == 65_536 * 1024 * 2 and "attn.indexer.score" not in full


def _minimax_m3_transformers_form() -> dict:
    """The fixture as transformers 5.24's MiniMaxM3VLTextConfig writes it: flat index_* keys, layer_types and
    mlp_layer_types, model_type minimax_m3_vl_text in text_config."""
    text = {k: v for k, v in raw("minimax_m3")["text_config"].items() if k not in (
        "sparse_attention_config", "moe_layer_freq")}
    text.update(model_type="minimax_m3_vl_text", layer_types=["full_attention"] * 3 + ["minimax_m3_sparse"] * 57,
                mlp_layer_types=["dense"] * 3 + ["sparse"] * 57, index_n_heads=4, index_head_dim=128,
                index_block_size=128, index_topk_blocks=16, index_local_blocks=1)
    return {"model_type": "minimax_m3_vl", "text_config": text}


def test_minimax_m3_transformers_form_and_default_config():
    m = lr.load_model(_minimax_m3_transformers_form())
    assert m.params_total == MINIMAX_M3 and kv_bytes_per_token(m, "bf16") == 137_472
    # sparse_attention_config's names win over the flat keys (MiniMaxM3VLTextConfig.__post_init__): 32 blocks of 128
    #   = 4,096 keys, not the flat 8 x 256 = 2,048
    cfg = raw("minimax_m3")
    cfg["text_config"].update(index_topk_blocks=8, index_block_size=256)
    cfg["text_config"]["sparse_attention_config"].update(sparse_topk_blocks=32)
    assert lr.load_model(cfg).context_breakpoints() == [4096]
    # MiniMaxM3VLTextConfig(): no layer_types, no sparse_attention_config -> 60 full-attention MoE layers
    #   60 x (106,955,008 + 7,305,166,976 + 12,288) + 2,458,386,432 + 6144 = 447,186,448,896
    #   = transformers meta count 447,186,441,216 + its 60 x 128 router-bias buffers
    m = lr.load_model({"model_type": "minimax_m3_vl_text"})
    assert m.params_total == 447_186_441_216 + 60 * 128
    assert [(g.name, g.count) for g in m.layer_groups] == [("full.moe", 60)]


@pytest.mark.parametrize("change, error", [
    ({"sparse_init_block": 1}, "sparse_init_block=1 .*start kept for every query"),
    ({"sparse_score_type": "mean"}, "sparse_score_type='mean'"),
    ({"sparse_disable_index_value": [0] * 60}, r"sparse_disable_index_value\[3\]=0 .*value and output branch"),
    ({"sparse_attention_freq": [1] * 59}, "sparse_attention_freq must list a 0 or 1 per layer"),
    ({"sparse_attention_freq": [2] * 60}, r"sparse_attention_freq\[0\] = 2 exceeds"),
    ({"sparse_topk_blocks": "16"}, "sparse_topk_blocks must be an integer"),
    ({"sparse_block_size": 0}, "sparse_block_size must be positive"),
    ({"sparse_num_index_heads": 3}, r"num_attention_heads \(64\) is not divisible by index_n_heads \(3\)"),
    ({"sparse_local_block": float("nan")}, "sparse_local_block must be an integer"),
    ({"use_sparse_attention": "yes"}, "use_sparse_attention must be true or false"),
])
def test_minimax_m3_refuses_sparse_options_it_cannot_read(change, error):
    cfg = raw("minimax_m3")
    cfg["text_config"]["sparse_attention_config"].update(change)
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model(cfg)


@pytest.mark.parametrize("change, error", [
    ({"attention_output_gate": True}, "attention_output_gate=true"),
    ({"qk_norm_type": "per_layer"}, "only per-head q/k norms"),
    ({"layer_types": ["sliding_attention"] * 60}, "is not one of 'full_attention', 'minimax_m3_sparse'"),
    ({"mlp_layer_types": ["moe"] * 60}, "is not one of 'dense', 'sparse'"),
    ({"moe_layer_freq": 1}, "moe_layer_freq must be a list of integers"),
    ({"sparse_attention_config": [16, 128]}, "sparse_attention_config must be an object"),
    ({"index_topk_blocks": True, "sparse_attention_config": None, "layer_types": ["minimax_m3_sparse"] * 60},
     "index_topk_blocks must be an integer"),
])
def test_minimax_m3_refuses_what_it_cannot_read(change, error):
    cfg = raw("minimax_m3")
    cfg["text_config"].update(change)
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model(cfg)


@pytest.mark.parametrize("change, error", [
    # read and then ignored before: the sparse layers were priced with their indexer whatever it said
    ({"use_sparse_attention": False}, "use_sparse_attention=false"),
    # the local block is one of the 16 a query keeps: 17 cannot be
    ({"sparse_local_block": 17}, r"index_local_blocks \(17\) exceeds index_topk_blocks \(16\)"),
])
def test_minimax_m3_sparse_settings_that_cannot_hold_are_named(change, error):
    cfg = raw("minimax_m3")
    cfg["text_config"]["sparse_attention_config"].update(change)
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model(cfg)


# ------------------------------------------------------------------------------ Inkling
# d 6144, no RoPE, q/k norms 2 x 128, d_rel 16, 4-tap convs. Sliding layers (64 heads over 16 KV heads of 128, the
#   bias over the 512-token window): q, o 2 x 6144 x 8192 = 100,663,296; k, v 2 x 6144 x 2048 = 25,165,824; r_proj
#   6144 x 64 x 16 = 6,291,456; norms 256; bank 16 x 512 = 8,192; k / v convs 4 x 2 x 2048 = 16,384 -> 132,145,408
# full layers (64 heads over 8 KV heads, rel_extent 1024): q, o 100,663,296; k, v 2 x 6144 x 1024 = 12,582,912;
#   r_proj 6,291,456; norms 256; bank 16 x 1024 = 16,384; convs 4 x 2 x 1024 = 8,192 -> 119,562,496
# every layer: 2 norms 12,288 + the attention's and the MLP's output convs 2 x 4 x 6144 = 49,152 -> 61,440
# layers 0-1 dense: 3 x 6144 x 24576 = 452,984,832 + global scale 1 -> 452,984,833
# MoE: 256 experts + 2 shared of 3 x 6144 x 3072 = 56,623,104 each -> 258 x 56,623,104 = 14,608,760,832; router over
#   256 + 2 experts 6144 x 258 = 1,585,152 + e_score_correction_bias 256 + global scale 1 -> 14,610,346,241
INKLING_SLIDING_DENSE = 132_145_408 + 61_440 + 452_984_833  # 585,191,681
INKLING_SLIDING_MOE = 132_145_408 + 61_440 + 14_610_346_241  # 14,742,553,089
INKLING_FULL_MOE = 119_562_496 + 61_440 + 14_610_346_241  # 14,729,970,177
# untied embedding + LM head 2 x 201,024 x 6144 = 2,470,182,912; embedding norm + final norm 2 x 6144 = 12,288
INKLING_OUTSIDE = 2_470_182_912 + 12_288


def _inkling(**change) -> dict:
    cfg = raw("inkling")
    return {**cfg, "text_config": {**cfg["text_config"], **change}}


def test_inkling_relative_bias_short_convs_and_router_sink():
    m = fixture("inkling")
    expected = 2 * INKLING_SLIDING_DENSE + 53 * INKLING_SLIDING_MOE + 11 * INKLING_FULL_MOE + INKLING_OUTSIDE
    assert m.params_total == expected == 947_025_564_226
    # transformers meta count 947,025,547,842: its e_score_correction_bias is a buffer (64 x 256 = 16,384 fewer)
    assert m.params_total - 947_025_547_842 == 64 * 256
    assert weight_bytes(m) == 2 * m.params_total
    # active: 6 of 256 experts, 250 x 56,623,104 = 14,155,776,000 fewer a MoE layer (TML: "~41B active")
    assert m.params_active == expected - 64 * 14_155_776_000 == 41_055_900_226
    # layer 5 and every 6th after it full, the others sliding (local_layer_ids); layers 0-1 dense (dense_mlp_idx 2)
    assert [(g.name, g.count, g.attention.n_heads, g.attention.n_kv_heads, g.attention.sliding_window,
             g.attention.rel_extent) for g in m.layer_groups] == [
        ("sliding.dense", 2, 64, 16, 512, 512), ("sliding.moe", 53, 64, 16, 512, 512),
        ("full.moe", 11, 64, 8, None, 1024)]
    assert all(not g.attention.rope and g.attention.qk_norm and g.out_conv == 4 == g.attention.kv_conv
               for g in m.layer_groups)
    assert (m.embed_norm, m.tie_embeddings, m.max_context) == (True, False, 1_048_576)
    # KV per token in bf16: 55 sliding layers x K, V of 16 x 128 (8,192 B) + 11 full x 8 x 128 (4,096 B)
    assert kv_bytes_per_token(m) == 55 * 8192 + 11 * 4096 == 495_616
    assert kv_cache_bytes(m, 131_072) == 11 * 4096 * 131_072 + 55 * 8192 * 512 == 6_136_266_752
    # the four convs' windows, 3 inputs each per sequence: sliding 3 x (2 x 2048 + 2 x 6144) = 49,152 elements,
    #   full 3 x (2 x 1024 + 2 x 6144) = 43,008; x 2 B
    assert state_bytes_per_sequence(m, "bf16") == (55 * 49_152 + 11 * 43_008) * 2 == 6_352_896
    # tp 8: 2 of the 16 KV heads (1 of the 8) per chip, the output convs whole: 3 x (512 + 12,288) = 38,400 and
    #   3 x (256 + 12,288) = 37,632 elements a layer on each chip
    assert state_bytes_per_sequence(m, "bf16", tp=8) == 8 * (55 * 38_400 + 11 * 37_632) * 2
    assert any("four short convs" in a for a in m.assumptions) and any("unpadded_vocab_size" in a
                                                                        for a in m.assumptions)


def test_inkling_graph_at_tp8():
    m = fixture("inkling")
    ops = {o.name: o for o in build_ops(m, Phase.decode(1, 4096), Sharding(tp=8)) if o.group == "sliding.moe"}
    # fused q, r, k, v on a chip: 8 heads x (128 + 16) + 2 KV heads x 2 x 128 = 1,664 columns of 6144, in bf16
    assert ops["attn.qkv_proj"].weight_bytes == 6144 * 1664 * 2 and "attn.rope" not in ops
    # the chip's 8 heads' states (16) times the bank (16 x 512): 2 x 8 x 16 x 512 FLOPs for one token
    assert float(ops["attn.rel_logits"].flops) == 2 * 8 * 16 * 512
    assert ops["attn.rel_logits"].stored_bytes == 16 * 512 * 2 and "attn.rel_bias" in ops
    # k / v convs over the chip's 2 KV heads (512 channels), their 3-input window read and written
    assert float(ops["attn.kv_conv"].kv_bytes) == 2 * 3 * 512 * 2
    assert ops["attn.out_conv"].stored_bytes == ops["ffn.out_conv"].stored_bytes == 6144 * 4 * 2
    assert ops["ffn.router"].gemm_n == 258
    head = [o.name for o in build_ops(m, Phase.decode(1, 4096), Sharding(tp=8)) if o.group == "model"]
    assert "norm.embed" in head


def test_inkling_transformers_keys_and_defaults():
    text = raw("inkling")["text_config"]
    # as transformers 5.24 saves InklingTextConfig: its own key names, the lists __post_init__ derives
    local = set(text["local_layer_ids"])
    saved = {k: v for k, v in text.items() if k not in ("local_layer_ids", "dense_mlp_idx", "dense_intermediate_size",
                                                        "sconv_kernel_size", "model_max_length")}
    saved.update(model_type="inkling_text", intermediate_size=24576, moe_intermediate_size=3072, conv_kernel_size=4,
                 max_position_embeddings=1_048_576, tie_word_embeddings=True,
                 layer_types=["hybrid_sliding" if i in local else "hybrid" for i in range(66)],
                 mlp_layer_types=["dense"] * 2 + ["sparse"] * 64)
    m = lr.load_model(saved)
    assert m.params_total == 947_025_564_226 and not m.tie_embeddings
    assert any("never ties its LM head" in a for a in m.assumptions)
    # InklingTextConfig()'s defaults: every layer MoE, 55 sliding + 11 full -> 975,340,287,042 = transformers meta
    #   count 975,340,270,146 + 66 x 256 buffers; context 131,072
    d = lr.load_model({"model_type": "inkling_text"})
    assert d.params_total == 55 * INKLING_SLIDING_MOE + 11 * INKLING_FULL_MOE + INKLING_OUTSIDE == 975_340_287_042
    assert d.params_total - 975_340_270_146 == 66 * 256 and d.max_context == 131_072


@pytest.mark.parametrize("change, error", [
    ({"use_sconv": "yes"}, "use_sconv must be true or false"),
    ({"layer_types": ["full_attention"] * 66},
     "layer_types entry 'full_attention' is not one of 'hybrid', 'hybrid_sliding'"),
    ({"layer_types": ["hybrid"] * 65}, r"layer_types must list one entry per layer \(66\)"),
    ({"local_layer_ids": [0, 66]}, "local_layer_ids lists 66, which is not a layer index"),
    ({"local_layer_ids": [True]}, r"local_layer_ids\[0\] must be an integer"),
    ({"local_layer_ids": "0,1"}, "local_layer_ids must be a list of integers"),
    ({"mlp_layer_types": ["moe"] * 66}, "mlp_layer_types entry 'moe' is not one of 'dense', 'sparse'"),
    ({"dense_mlp_idx": 67}, r"dense_mlp_idx \(67\) exceeds num_hidden_layers \(66\)"),
    ({"dense_mlp_idx": -1}, "dense_mlp_idx must be non-negative"),
    ({"d_rel": 0}, "d_rel must be positive"),
    ({"rel_extent": "1024"}, "rel_extent must be an integer"),
    ({"swa_num_key_value_heads": 12}, r"swa_num_attention_heads \(64\) is not divisible by swa_num_key_value_hea"),
    ({"swa_head_dim": [128, 64]}, "swa_head_dim must be an integer"),
    ({"sconv_kernel_size": float("nan")}, "sconv_kernel_size must be an integer"),
    ({"sliding_window_size": True}, "sliding_window_size must be an integer"),
    ({"n_shared_experts": 0}, "n_shared_experts must be positive"),
    ({"num_experts_per_tok": 300}, r"num_experts_per_tok \(300\) exceeds n_routed_experts \(256\)"),
    ({"unpadded_vocab_size": -5}, "unpadded_vocab_size must be positive"),
    ({"num_mtp_layers": "8"}, "num_mtp_layers must be an integer"),
])
def test_inkling_hostile_values_name_the_key(change, error):
    with pytest.raises(lr.ModelConfigError, match=error) as e:
        lr.load_model(_inkling(**change))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("key", ["use_sconv", "use_embed_norm", "shared_expert_sink", "use_gate_bias",
                                 "use_global_scale"])
def test_inkling_parts_transformers_builds_regardless_are_refused_when_off(key):
    with pytest.raises(UnsupportedArchitectureError, match=f"{key}=false .model_type=inkling_text.: InklingTextModel"):
        lr.load_model(_inkling(**{key: False}))


@pytest.mark.parametrize("cfg, words", [
    # modular_inkling2.py: block attention residuals, dynamic short convs on the full layers, sinks from a projection
    ({"model_type": "inkling2", "text_config": {"model_type": "inkling2_text"}},
     ("'inkling2'", "block attention residuals", "dynamic short convs", "sink_proj")),
    ({"model_type": "inkling2_text", "n_layers_per_attn_res_block": 6}, ("'inkling2_text'", "n_layers_per_attn_res")),
    # modular_inkling2_loop.py: layers run loop_num_passes times, each pass with caches of its own
    ({"model_type": "inkling2_loop", "text_config": {"model_type": "inkling2_loop_text"}},
     ("'inkling2_loop'", "loop_num_passes", "caches of its own", "message gates", "block attention residuals")),
    ({"model_type": "inkling2_loop_text"}, ("'inkling2_loop_text'", "looped section")),
])
def test_inkling2_and_its_loop_are_refused_naming_what_the_graph_lacks(cfg, words):
    with pytest.raises(UnsupportedArchitectureError) as e:
        lr.load_model(cfg)
    text = str(e.value)
    assert "\n" not in text and all(w in text for w in words), text


# ------------------------------------------------------------------------------ Gemma-4
def test_gemma4_31b_global_layers_and_k_eq_v():
    m = fixture("gemma4_31b")
    # sliding layer: q 5376 x 8192 + k, v 2 x 5376 x 4096 + o 8192 x 5376 = 132,120,576; q/k norms 2 x 256;
    #   gated GELU MLP 3 x 5376 x 21,504 = 346,816,512; 4 norms 21,504 -> 478,959,104
    # full layer: 512-wide heads, 4 KV heads, no v_proj: q 5376 x 16,384 = 88,080,384 + k 5376 x 2048 = 11,010,048
    #   + o 16,384 x 5376 = 88,080,384; q/k norms 2 x 512; MLP and norms as above -> 534,009,856
    # 50 sliding + 10 full; tied embedding 262,144 x 5376 = 1,409,286,144; final norm 5376
    assert m.params_total == 50 * 478_959_104 + 10 * 534_009_856 + 1_409_286_144 + 5376  # = transformers meta count
    assert m.params_total == 30_697_345_280
    sliding, full = m.layer_groups
    assert (sliding.count, sliding.attention.sliding_window, sliding.attention.n_kv_heads) == (50, 1024, 16)
    assert (full.count, full.attention.head_dim, full.attention.n_kv_heads, full.attention.value_is_key) == \
        (10, 512, 4, True)
    assert sliding.ffn.gated  # gate_proj + up_proj with gelu_pytorch_tanh
    # KV per token at 1024+ tokens of context: sliding 16 x 256 x 2, full 4 x 512 x 2 (K and V cached) elements
    assert kv_bytes_per_token(one_layer(m, "full"), "bf16") == 4 * 512 * 2 * 2
    qkv = next(o for o in build_ops(one_layer(m, "full"), Phase.decode(1, 100)) if o.name == "attn.qkv_proj")
    assert float(qkv.flops) == 2 * 5376 * (16_384 + 2048)  # no v columns


def test_gemma4_moe_block_and_per_layer_embeddings():
    cfg = raw("gemma4_31b")
    text = {**cfg["text_config"], "num_hidden_layers": 6, "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
            "enable_moe_block": True, "num_experts": 8, "top_k_experts": 2, "moe_intermediate_size": 704}
    m = lr.load_model({**cfg, "text_config": text})
    f = m.layer_groups[0].ffn
    # the MLP runs beside the experts: a MoE whose always-on shared expert is the 21,504-wide MLP; 7 norms
    assert (f.kind, f.n_experts, f.top_k, f.d_expert, f.d_shared, m.layer_groups[0].norms) == \
        ("moe", 8, 2, 704, 21_504, 7)


def test_gemma4_e2b_per_layer_inputs_and_layers_that_reuse_kv():
    m = fixture("gemma4_e2b")
    # d 1536, 35 layers ((4 sliding + 1 full) x 7), 8 heads, 1 KV head of 256 (full layers 512), the last 20 layers
    #   reuse K and V (no k/v projections, no k_norm) and have a double-wide MLP (12,288):
    # sliding:        q 1536 x 2048 + k, v 2 x 1536 x 256 + o 2048 x 1536 + q/k norms 2 x 256   =  7,078,400
    # full:           q 1536 x 4096 + k, v 2 x 1536 x 512 + o 4096 x 1536 + 2 x 512             = 14,156,800
    # sliding reused: q + o 2 x 3,145,728 + q norm 256 = 6,291,712; full reused 2 x 6,291,456 + 512 = 12,583,424
    # MLP 3 x 1536 x 6144 = 28,311,552 (layers 0-14), 3 x 1536 x 12,288 = 56,623,104 (15-34)
    # every layer: per-layer gate 1536 x 256 + projection 256 x 1536 = 786,432, 5 norms 7,680 -> 794,112
    layers = (12 * (7_078_400 + 28_311_552) + 3 * (14_156_800 + 28_311_552) + 16 * (6_291_712 + 56_623_104)
              + 4 * (12_583_424 + 56_623_104) + 35 * 794_112)
    assert layers == 1_863_341_568
    # tied embedding 262,144 x 1536 = 402,653,184; per-layer table 262,144 x (35 x 256) = 2,348,810,240; model
    #   projection 1536 x 8960 = 13,762,560; its norm 256; final norm 1536
    expected = layers + 402_653_184 + 2_348_810_240 + 13_762_560 + 256 + 1536
    assert m.params_total == expected == 4_628_569_344  # = transformers' meta count (Gemma4ForCausalLM)
    assert [(g.name, g.count, g.ffn.d_ff) for g in m.layer_groups] == [
        ("sliding", 12, 6144), ("full", 3, 6144), ("sliding.kv-reused", 16, 12_288), ("full.kv-reused", 4, 12_288)]
    # only layers 0-14 cache: 12 x (K + V) x 256 x 2 B + 3 x 2 x 512 x 2 B = 12,288 + 6,144
    assert kv_bytes_per_token(m, "bf16") == 18_432
    ops = build_ops(m, Phase.decode(1, 4096))
    reused = [o for o in ops if o.group == "sliding.kv-reused"]
    assert not any(o.name == "attn.kv_write" for o in reused)
    qkv = next(o for o in reused if o.name == "attn.qkv_proj")
    assert float(qkv.flops) == 2 * 1536 * 2048  # q only
    # the reusing layer's core reads the window of the cache it reuses: 512 tokens x (K + V) 512 elements x 2 B
    core = next(o for o in reused if o.name == "attn.core")
    own = next(o for o in ops if o.group == "sliding" and o.name == "attn.core")
    assert float(core.hbm_bytes) == float(own.hbm_bytes) >= 512 * 512 * 2
    # one token gathers its row of the per-layer table (8960 x 2 B), not the 4.7 GB table
    gather = next(o for o in ops if o.name == "embed.per_layer")
    assert float(gather.hbm_bytes) < 4 * 8960 * 2


def test_gemma4_e4b_reuses_kv_without_a_double_wide_mlp():
    # google/gemma-4-E4B-it's text_config as public ports' tests copy it: hidden 2560, 42 layers ((5 sliding + 1 full)
    # x 7), 8 heads, 2 KV heads of 256 (full 512), MLP 10,240, the last 18 layers reuse K and V, use_double_wide_mlp
    # false; the per-layer inputs and vocabulary as E2B's
    cfg = raw("gemma4_e2b")
    text = {**cfg["text_config"], "hidden_size": 2560, "num_hidden_layers": 42, "intermediate_size": 10240,
            "num_key_value_heads": 2, "num_kv_shared_layers": 18, "use_double_wide_mlp": False,
            "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 7}
    m = lr.load_model({**cfg, "text_config": text})
    # layers 0-23 (20 sliding, 4 full) own K and V, 24-41 (15 sliding, 3 full) reuse them:
    # sliding own: q, o 2 x 2560 x 2048 + k, v 2 x 2560 x 512 + q/k norms 512 = 13,107,712; full own: q, o 2 x 2560 x
    #   4096 + k, v 2 x 2560 x 1024 + 1024 = 26,215,424; sliding reused 10,486,016; full reused 20,972,032
    # every layer: MLP 3 x 2560 x 10,240 = 78,643,200; per-layer gate + projection 2 x 2560 x 256 = 1,310,720; 5 norms
    #   12,800
    layers = (20 * 13_107_712 + 4 * 26_215_424 + 15 * 10_486_016 + 3 * 20_972_032
              + 42 * (78_643_200 + 1_310_720 + 12_800))
    # tied embedding 262,144 x 2560; per-layer table 262,144 x 10,752; its projection 2560 x 10,752 and norm 256;
    #   final norm 2560
    expected = layers + 671_088_640 + 2_818_572_288 + 27_525_120 + 256 + 2560
    assert m.params_total == expected == 7_463_013_376  # = transformers' meta count (Gemma4ForCausalLM)
    assert [(g.name, g.count, g.ffn.d_ff) for g in m.layer_groups] == [
        ("sliding", 20, 10_240), ("full", 4, 10_240), ("sliding.kv-reused", 15, 10_240), ("full.kv-reused", 3, 10_240)]
    # 20 x 2 heads x 256 x (K + V) x 2 B + 4 x 2 x 512 x 2 x 2 B = 40,960 + 16,384
    assert kv_bytes_per_token(m, "bf16") == 57_344


def test_gemma3n_altup_laurel_sparse_activations_and_kv_reuse():
    m = fixture("gemma3n_e4b")
    # d 2048, 35 layers ((4 sliding + 1 full) x 7), 8 heads x 256, 2 KV heads; the last 15 reuse K and V:
    # own K/V: q, o 2 x 2048 x 2048 + k, v 2 x 2048 x 512 + q/k norms 2 x 256 = 10,486,272 (20 layers)
    # reused:  q, o 2 x 2048 x 2048 + q norm 256 = 8,388,864 (15 layers); MLP 3 x 2048 x 16,384 = 100,663,296
    # every layer: per-layer gate + projection 2 x 2048 x 256 = 1,048,576; LAuReL 2 x 2048 x 64 = 262,144; AltUp
    #   router 2048 x 4 + prediction 4 x 16 + correction 4 x 4 = 8,272; 8 norm-sized vectors (4 + LAuReL's, the
    #   per-layer input's, the router's, the output scale) 16,384 -> 1,335,376
    layers = 20 * 10_486_272 + 15 * 8_388_864 + 35 * (100_663_296 + 1_335_376)
    assert layers == 3_905_511_920
    # tied embedding 262,400 x 2048 = 537,395,200; per-layer table 262,144 x 8960 = 2,348,810,240; its projection
    #   2048 x 8960 = 18,350,080 and norm 256; AltUp in and out 2 x 3 x 2048 x 2048 = 25,165,824; final norm 2048
    expected = layers + 537_395_200 + 2_348_810_240 + 18_350_080 + 256 + 25_165_824 + 2048
    assert m.params_total == expected == 6_835_235_568  # = transformers' meta count (Gemma3nForCausalLM)
    assert [(g.name, g.count) for g in m.layer_groups] == [
        ("sliding.sparse-act", 8), ("full.sparse-act", 2), ("sliding", 8), ("full", 2), ("sliding.kv-reused", 12),
        ("full.kv-reused", 3)]
    assert kv_bytes_per_token(m, "bf16") == 20 * 2 * 256 * 2 * 2  # 40,960: 20 layers cache K and V
    ops = build_ops(m, Phase.prefill(1, 1000))
    sparse = [o for o in ops if o.name == "ffn.act_sparsity"]
    assert sum(o.count for o in sparse) == 10  # activation_sparsity_pattern: 0.95 on the first 10 layers
    predict = next(o for o in ops if o.name == "altup.predict")
    assert float(predict.flops) == 1000 * 4 * 2048 * (2 * 4 + 1)  # every stream a mix of the 4, plus itself
    into = next(o for o in ops if o.name == "altup.projections")
    assert float(into.flops) == 2 * 1000 * 2048 * 2048 * 3


@pytest.mark.parametrize("change, error", [
    ({"altup_num_inputs": 1}, "altup_num_inputs must be 2..64"),
    ({"altup_active_idx": 4}, "altup_active_idx"),
    ({"laurel_rank": "64"}, "laurel_rank must be an integer"),
    ({"activation_sparsity_pattern": [0.95] * 34}, "one entry per layer"),
    ({"activation_sparsity_pattern": [1.0] * 35}, r"numbers in \[0, 1\)"),
    ({"activation_sparsity_pattern": [True] * 35}, r"numbers in \[0, 1\)"),
    ({"activation_sparsity_pattern": [None] * 35}, r"numbers in \[0, 1\), got None"),  # a TypeError before
])
def test_gemma3n_refuses_what_it_cannot_read(change, error):
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model({**raw("gemma3n_e4b"), **change})


def test_a_gemma4_assistant_is_refused_not_read_as_its_text_config():
    # Gemma4AssistantConfig (google/gemma-4-e2b-it-assistant): a drafter whose every layer reads its target's KV
    # (num_kv_shared_layers = num_hidden_layers, filled in by the config class when absent), with projections from the
    # target's backbone_hidden_size: its text_config alone would read as an ordinary 35-layer decoder
    cfg = {**raw("gemma4_e2b"), "model_type": "gemma4_assistant", "backbone_hidden_size": 1536}
    with pytest.raises(UnsupportedArchitectureError, match="speculative-decoding drafter"):
        lr.load_model(cfg)


@pytest.mark.parametrize("change, error", [
    ({"num_kv_shared_layers": 35}, "must be below num_hidden_layers"),
    ({"num_kv_shared_layers": 34}, "no earlier layer of its kind"),  # layer 0 alone caches: no full layer before
    ({"num_kv_shared_layers": "20"}, "num_kv_shared_layers must be an integer"),
    ({"hidden_size_per_layer_input": -256}, "hidden_size_per_layer_input must be non-negative"),
    ({"vocab_size_per_layer_input": True}, "vocab_size_per_layer_input must be an integer"),
])
def test_gemma4_e2b_refuses_what_it_cannot_read(change, error):
    cfg = raw("gemma4_e2b")
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model({**cfg, "text_config": {**cfg["text_config"], **change}})


# ------------------------------------------------------------------------------ Qwen2-VL
def test_qwen2_vl_top_level_text_keys_and_vision_note():
    m = fixture("qwen2_vl_7b")
    # Qwen2 block: q 3584 x 3584 + bias, k, v 2 x (3584 x 512 + 512), o 3584 x 3584 = 29,364,736; MLP 3 x 3584 x
    # 18,944 = 203,685,888; 2 norms 7168; 28 layers; untied embed + head 2 x 152,064 x 3584; final norm 3584
    assert m.params_total == 28 * (29_364_736 + 203_685_888 + 7168) + 2 * 152_064 * 3584 + 3584
    assert m.params_total == 7_615_616_512  # = transformers meta count of the language model + LM head
    # the ViT is named with its size: 32 x (4 x 1280² + 2 x 1280 x 5120) = 629,145,600 in its matrices
    assert any("vision_config not counted (32 layers of width 1280: about 0.63B" in a for a in m.assumptions)
    assert m.layer_groups[0].attention.qkv_bias


# ------------------------------------------------------------------------------ Phi-4-multimodal
def test_phi4_multimodal_reads_phi4_mini_decoder_without_lora():
    m = fixture("phi4_multimodal")
    # Phi-4-mini: d 3072, 24 heads of 128, 8 KV heads. qkv_proj 3072 x (24 x 128 + 2 x 8 x 128 = 5120) = 15,728,640;
    # o_proj 3072² = 9,437,184; gate_up_proj 3072 x 16,384 = 50,331,648; down_proj 8192 x 3072 = 25,165,824;
    # 2 norms 6144 -> 100,669,440 a layer; 32 layers; tied embedding 200,064 x 3072 = 614,596,608; final norm 3072
    assert m.params_total == 32 * 100_669_440 + 614_596_608 + 3072 == 3_836_021_760
    # = transformers meta count of Phi4MultimodalForCausalLM (4,744,004,032) less model.embed_tokens_extend (the
    #   vision and audio towers and projectors, 907,982,272): transformers builds no LoRA parameters
    assert m.tie_embeddings and [(g.count, g.attention.n_kv_heads, g.attention.head_dim) for g in m.layer_groups] \
        == [(32, 8, 128)]
    # K and V: 32 layers x 8 KV heads x 128 x 2 x 2 B (bf16) = 131,072 B per token
    assert kv_bytes_per_token(m, "bf16") == 131_072
    notes = " ".join(m.assumptions)
    assert "vision and speech LoRA adapters" in notes and "not counted" in notes
    assert "vision_config not counted (27 layers of width 1152" in notes and "audio_config not counted" in notes


def test_phi4_multimodal_is_no_longer_refused():
    # the type alone, on the smallest decoder: q, k, v, o 4 x 8² = 256, MLP gate_up 8 x 32 + down 16 x 8 = 384,
    # 2 norms 16 -> 656; tied embedding 10 x 8 = 80; final norm 8
    m = lr.load_model({"model_type": "phi4_multimodal", "hidden_size": 8, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 16, "vocab_size": 10,
                       "tie_word_embeddings": True, "rms_norm_eps": 1e-5, "max_position_embeddings": 64})
    assert m.params_total == 656 + 80 + 8


# ------------------------------------------------------------------------------ MiMo-V2-Flash
def test_mimo_v2_flash_hub_keys():
    m = fixture("mimo_v2_flash")
    # d 4096, 64 heads, q/k head 192, v head 128. Full layer (4 KV heads): q 4096 x 12,288 = 50,331,648; k 4096 x 768
    #   = 3,145,728; v 4096 x 512 = 2,097,152; o 8192 x 4096 = 33,554,432 -> 89,128,960. Window layer (8 KV heads,
    #   64 sinks): k 6,291,456, v 4,194,304 -> 94,371,904. Dense MLP (layer 0) 3 x 4096 x 16,384 = 201,326,592;
    #   MoE: router 4096 x 256 + bias 256 + 256 experts 3 x 4096 x 2048 = 6,443,499,776; 2 norms 8192
    # layer 0 full dense, 39 window MoE, 8 full MoE; untied embed + head 2 x 152,576 x 4096; final norm 4096
    expected = (89_128_960 + 201_326_592 + 39 * (94_371_904 + 6_443_499_776) + 8 * (89_128_960 + 6_443_499_776)
                + 48 * 8192 + 2 * 152_576 * 4096 + 4096)
    assert m.params_total == expected == 308_778_780_864
    # transformers meta count of the same model in its own keys (MiMoV2FlashConfig defaults): 308,778,768,832;
    # e_score_correction_bias is a buffer there (47 x 256 = 12,032)
    assert m.params_total - 308_778_768_832 == 47 * 256
    assert [(g.name, g.count, g.attention.n_kv_heads, g.attention.sinks) for g in m.layer_groups] == \
        [("full.dense", 1, 4, False), ("sliding.moe", 39, 8, True), ("full.moe", 8, 4, False)]
    # KV per token past the window: 9 full layers x 4 heads x (192 + 128) x 2 B
    assert kv_bytes_per_token(one_layer(m, "full.moe"), "bf16") == 4 * 320 * 2


# ------------------------------------------------------------------------------ Nemotron-NAS (DeciLM) no_op blocks
def test_nemotron_nas_blocks_without_attention_or_ffn():
    # the block pattern of TensorRT-LLM's NEMOTRON_NAS_MINI_CONFIG (n_heads_in_group, no_op), on d 768 with 4 heads
    blocks = [{"attention": {"n_heads_in_group": 2, "no_op": False}, "ffn": {"ffn_mult": 1.0, "no_op": False}},
              {"attention": {"n_heads_in_group": None, "no_op": True}, "ffn": {"ffn_mult": 2.625, "no_op": False}},
              {"attention": {"n_heads_in_group": 4, "no_op": False}, "ffn": {"ffn_mult": None, "no_op": True}}]
    m = lr.load_model({"model_type": "nemotron-nas", "hidden_size": 768, "num_attention_heads": 4,
                       "num_hidden_layers": 3, "num_key_value_heads": None, "intermediate_size": None,
                       "vocab_size": 100, "block_configs": blocks, "tie_word_embeddings": False, "rms_norm_eps": 1e-5})
    # layer 0: q, o 2 x 768² + k, v 2 x 768 x 384 = 1,769,472; MLP int(2 x 768 / 3) = 512: 3 x 768 x 512 = 1,179,648;
    #   2 norms 1536 -> 2,950,656
    # layer 1 (no attention, no input norm): MLP int(2 x 2.625 x 768 / 3) = 1344 -> 1536: 3 x 768 x 1536
    #   = 3,538,944 + 1 norm 768 -> 3,539,712
    # layer 2 (no FFN, one norm): 1 KV head: q, o 2 x 768² + k, v 2 x 768 x 192 = 1,474,560 + 768 -> 1,475,328
    # untied embed + head 2 x 100 x 768 = 153,600; final norm 768
    assert m.params_total == 2_950_656 + 3_539_712 + 1_475_328 + 153_600 + 768
    assert [(g.name, g.count, g.norms) for g in m.layer_groups] == [("dense", 1, 2), ("mlp", 1, 1), ("attention", 1, 1)]
    # KV per token: layer 0: 2 KV heads x 192 x 2; layer 2: 1 x 192 x 2 (layer 1 caches nothing)
    assert kv_bytes_per_token(m, "bf16") == (2 * 192 * 2 + 192 * 2) * 2
    ops = build_ops(m, Phase.decode(1, 100))
    assert not [o for o in ops if o.group == "mlp" and o.name.startswith("attn")]


# ------------------------------------------------------------------------------ smaller families, by hand
# d 64, 4 heads of 16, 2 KV heads: attention q, o 2 x 64 x 64 + k, v 2 x 64 x 32 = 12,288; gated MLP 3 x 64 x 128 =
# 24,576; vocabulary 100 (embedding 6,400); 2 layers
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 256}


@pytest.mark.parametrize("over, expected", [
    # VaultGemma: Gemma-2's layers with 2 norms (input, pre-feedforward), gated GELU, tied:
    #   2 x (12,288 + 24,576 + 128) + 6,400 + final norm 64
    ({"model_type": "vaultgemma", "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 32,
      "layer_types": ["sliding_attention", "full_attention"]}, 2 * 36_992 + 6_400 + 64),
    # EXAONE-4: 2 post-norms, q/k norms 2 x 16, untied: 2 x (12,288 + 32 + 24,576 + 128) + 2 x 6,400 + 64
    ({"model_type": "exaone4", "sliding_window": 32, "sliding_window_pattern": 2}, 2 * 37_024 + 12_800 + 64),
    # SmolLM3: Llama, tied by default: 2 x 36,992 + 6,400 + 64
    ({"model_type": "smollm3", "no_rope_layers": [1, 0]}, 2 * 36_992 + 6_400 + 64),
])
def test_small_families_by_hand(over, expected):
    assert lr.load_model({**TINY, **over}).params_total == expected


def test_smollm3_nope_layers_and_gemma4_unified():
    m = lr.load_model({**TINY, "model_type": "smollm3", "no_rope_layers": [1, 0]})
    assert [g.attention.rope for g in m.layer_groups] == [True, False]  # layer 1 is a NoPE layer
    # Cohere2 (Command R7B, Command A: modeling_cohere2.py Cohere2Attention) rotates q and k on its sliding layers only
    c2 = lr.load_model({**TINY, "model_type": "cohere2", "sliding_window": 32,
                        "layer_types": ["sliding_attention", "full_attention"]})
    assert [(g.attention.sliding_window, g.attention.rope) for g in c2.layer_groups] == [(32, True), (None, False)]
    # Gemma-4 "unified" (transformers' Gemma4UnifiedTextConfig) reads as Gemma-4's text decoder: 1 full layer of
    # global_head_dim 32 with its own KV heads (attention_k_eq_v false): q, o 2 x 64 x 128 = 16,384 + k, v 2 x 64 x 64
    # = 8,192 + q/k norms 2 x 32 + MLP 24,576 + 4 norms 256 = 49,472; tied 6,400; final norm 64
    g4 = lr.load_model({**TINY, "model_type": "gemma4_unified_text", "num_hidden_layers": 1, "global_head_dim": 32,
                        "layer_types": ["full_attention"], "hidden_activation": "gelu_pytorch_tanh"})
    assert g4.params_total == 49_472 + 6_400 + 64


def test_bert_style_decoders_are_refused_naming_the_key():
    # camembert, ernie, roc_bert, xmod, ... (transformers' *ForCausalLM of encoder stacks): token-type embeddings
    with pytest.raises(UnsupportedArchitectureError, match="type_vocab_size"):
        lr.load_model({**TINY, "model_type": "camembert", "type_vocab_size": 1})


# ------------------------------------------------------------------------------ Nemotron-NAS, the real checkpoints
# nemotron_super_49b.json / nemotron_ultra_253b.json: nvidia/Llama-3_3-Nemotron-Super-49B-v1 and
# Llama-3_1-Nemotron-Ultra-253B-v1 config.json, as NVIDIA copies them into NeMo
# (nemo/collections/llm/gpt/model/llama_nemotron_config.py, "Config copy from https://huggingface.co/nvidia/...").
# transformers has no class for them (trust_remote_code): the reference is the published size.
def test_nemotron_super_49b():
    m = fixture("nemotron_super_49b")
    # d 8192, 64 heads of 128. Attention block (n_heads_in_group 8: 8 KV heads): q, o 2 x 8192² + k, v 2 x 8192 x 1024
    #   + norm 8192 = 151,003,136. FFN of ffn_mult f: 3 x 8192 x w + norm 8192, w = int(2 f 8192 / 3) rounded up to 256:
    #   5.25 -> 28,672; 3.28125 -> 17,920; 2.625 -> 14,336; 1.3125 -> 7,168; 1.0 -> 5,632; 0.5 -> 2,816.
    # blocks (from the file): 48 attention + 5.25, 1 attention + 2.625; no attention: 1 x 5.25, 1 x 3.28125, 5 x 2.625,
    #   10 x 1.3125, 8 x 1.0, 6 x 0.5; untied embed + head 2 x 128,256 x 8192; final norm 8192
    def ffn(w):
        return 3 * 8192 * w + 8192
    expected = (49 * 151_003_136 + 48 * ffn(28_672) + ffn(14_336) + ffn(28_672) + ffn(17_920)
                + 5 * ffn(14_336) + 10 * ffn(7_168) + 8 * ffn(5_632) + 6 * ffn(2_816) + 2 * 128_256 * 8192 + 8192)
    assert m.params_total == expected == 49_867_145_216  # the hub: "49.9B params"; NVIDIA: "49B"
    # KV per token: 49 attention blocks x 8 heads x 128 x 2 x 2 B = 200,704 (80 would give 327,680)
    assert kv_bytes_per_token(m, "bf16") == 49 * 8 * 128 * 2 * 2


def test_nemotron_ultra_253b_empty_blocks():
    m = fixture("nemotron_ultra_253b")
    # 81 of its 162 blocks are no_op in both parts (the identity): left out, and said so
    assert m.n_layers == 81 and any("81 of 162 blocks have neither attention nor FFN" in a for a in m.assumptions)
    assert m.params_total == pytest.approx(253e9, rel=0.005)  # NVIDIA: "253B"; 253,401,268,224 here


@pytest.mark.parametrize("name, key", [("hy4_preview", "indexer_types"), ("axk2_light_default", "layer_types"),
                                       ("dots3_note_prev", "mlp_layer_types")])
def test_a_null_entry_in_a_per_layer_list_is_named_not_read_as_a_default(name, key):
    # str_list's test used next(..., None), so a null entry passed as "none found": Hy4's read as shared indexers
    cfg = raw(name)
    text = cfg.get("text_config", cfg)
    n = text.get("num_hidden_layers") or len(text[key])
    with pytest.raises(lr.ModelConfigError, match=f"{key} must be a list of strings, got an entry None"):
        lr.load_model({**cfg, key: [None] * n} if cfg is text else {**cfg, "text_config": {**text, key: [None] * n}})
