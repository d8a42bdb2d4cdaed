"""Weight and KV-cache bytes: tiny specs by hand, shipped models against published sizes."""

from pathlib import Path

import numpy as np
import pytest

from llm_roofline.errors import RooflineError, ScenarioError
from llm_roofline.memory import kv_bytes_per_token_by_group, kv_cache_bytes, weight_bytes, weight_bytes_by_family
from llm_roofline.model.hf import load_model
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec
from llm_roofline.units import weight_format


def tiny(**kw) -> ModelSpec:
    """d=8, V=10, 2 layers of GQA (4 heads, 2 KV heads, head_dim 2) + gated MLP (d_ff 16): 1352 parameters.

    Per layer: qkv 8·16 = 128, o 8·8 = 64, up_gate 8·32 = 256, down 16·8 = 128 (576 matrix weights), norms 2·8.
    Embedding 80 + LM head 80 + final norm 8.
    """
    group = LayerGroup("dense", 2, AttentionSpec("gqa", 4, 2, 2, 2), FfnSpec("dense", 16, True, "silu"))
    return ModelSpec("tiny", d_model=8, vocab_size=10, layer_groups=(group,), **kw)


def test_bf16_weight_bytes_are_two_per_parameter():
    assert weight_bytes(tiny()) == 2 * 1352
    m = load_model("meta-llama/Llama-3.1-8B")
    assert weight_bytes(m) == 2 * 8_030_261_248  # bf16 checkpoint: 16.06 GB


def test_the_graph_holds_every_qk_norm_weight_of_a_chip():
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.memory import weight_bytes_per_chip
    from llm_roofline.sharding import Sharding

    # Qwen3-8B: 8,190,735,360 parameters (transformers' count) x 2 B = 16,381,470,720 B on one chip; its q_norm and
    # k_norm (128 weights each, 36 layers: 36 x 256 x 2 B = 18,432 B) were read by attn.qk_norm but not held
    m = load_model("Qwen/Qwen3-8B")
    assert weight_bytes_per_chip(build_ops(m, Phase.prefill(1, 16), Sharding())) == 16_381_470_720
    # tp 2: the per-head norms are replicated, every chip holds both (18,432 B of its share)
    ops = build_ops(m, Phase.prefill(1, 16), Sharding(tp=2))
    assert sum(op.stored_bytes * op.count for op in ops if op.name == "attn.qk_norm") == 18_432
    # CodeGen-350M-mono's LM head bias (vocab 51,200: 102,400 B) and Qwen3-Next-80B-A3B's shared_expert_gate
    # (Linear(2048, 1) on 48 layers: 196,608 B) were neither read nor held: now 2 B a parameter on one chip
    fix = Path(__file__).parent / "fixtures" / "configs"
    for name, params in (("codegen_350m_mono", 356_712_448), ("qwen3_next_80b_a3b", 79_674_391_296)):
        m = load_model(fix / f"{name}.json")
        assert m.params_total == params
        assert weight_bytes_per_chip(build_ops(m, Phase.prefill(1, 16), Sharding())) == 2 * params


@pytest.mark.parametrize("name, short", [
    ("kimi_linear_48b", 7 * 512 * 2),  # MLA's kv_a latent norm (kv_lora_rank 512, no q latent) on its 7 MLA layers
    ("longcat_flash_chat", 229_376),  # 56 MLA layers x (q_lora_rank 1536 + kv_lora_rank 512) x 2 B
    ("mimo_v2_flash", 39 * 64 * 2),  # attention sinks: 64 heads on its 39 sliding-window layers
    ("glm5", 78 * 2 * 128 * 2),  # the DSA indexer's key LayerNorm (weight + bias of index_head_dim 128), 78 layers
    ("minimax_m3", 57 * 2 * 128 * 2),  # the indexer's q and k RMSNorms (index_head_dim 128) on its 57 DSA layers
])
def test_the_graph_holds_latent_norms_sinks_and_indexer_norms(name, short):
    from llm_roofline.graph import Phase, build_ops
    from llm_roofline.memory import weight_bytes_per_chip
    from llm_roofline.sharding import Sharding

    # one chip holds 2 B a parameter (bf16); `short` is what the graph's ops did not hold before (by hand)
    m = load_model(Path(__file__).parent / "fixtures" / "configs" / f"{name}.json")
    ops = build_ops(m, Phase.prefill(1, 16), Sharding())
    assert weight_bytes_per_chip(ops) == 2 * m.params_total
    missing = {"kimi_linear_48b": "attn.mla_glue", "longcat_flash_chat": "attn.mla_glue", "mimo_v2_flash": "attn.core",
               "glm5": "attn.indexer.k_norm", "minimax_m3": "attn.indexer.k_norm"}[name]
    assert sum(op.stored_bytes * op.count for op in ops if op.name == missing) == short


def test_every_model_holds_each_parameter_once():
    # every shipped config and test fixture that loads, bf16 weights, one chip: the graph's resident weights are 2 B a
    # parameter (ModelSpec.params_total, checked against transformers' counts and published sizes elsewhere). Inkling
    # was 124 B over: its router's bias spanned the 2 shared-expert sink columns (the config gives them none: +2 a MoE
    # layer) and its global scale (1 a layer) was not held: 64 MoE layers x 2 B - 2 dense layers x 2 B
    import glob

    import llm_roofline as lr

    root = Path(__file__).resolve().parents[1]
    paths = sorted(glob.glob(str(root / "model_configs" / "*" / "*" / "config.json")))
    paths += sorted(glob.glob(str(root / "tests" / "fixtures" / "configs" / "*.json")))
    off, checked = {}, 0
    for path in paths:
        try:
            m = load_model(path)
        except RooflineError:
            continue  # refused configs (their own tests say why)
        est = lr.estimate(m, "b200", batch=1, prompt_len=16, gen_len=2, weight_dtype="bf16")
        checked += 1
        if est.memory.per_chip_weight_bytes != 2 * m.params_total:
            off[Path(path).stem if "fixtures" in path else Path(path).parent.name] = \
                est.memory.per_chip_weight_bytes - 2 * m.params_total
    assert checked >= 120 and off == {}


def test_int4_override_counts_scales_and_keeps_embeddings_native():
    # int4 g128 with fp16 scale + 4-bit zero: 4 + 20/128 = 4.15625 bits per weight.
    # matrices 2·576 = 1152 weights · 4.15625/8 = 598.5 B; embed + LM head 160 params · 2 B = 320 B;
    # norms 2·2·8 + 8 = 40 params · 2 B = 80 B -> 998.5 B
    assert weight_bytes(tiny(), "int4") == pytest.approx(998.5)
    by_family = weight_bytes_by_family(tiny(), "int4")
    assert by_family["embed"] == 160 and by_family["lm_head"] == 160 and by_family["norm"] == 80


def test_quantization_config_format_is_the_default():
    # fp8 with one fp32 scale per 128·128 block: 8 + 32/16384 bits per matrix weight
    m = tiny(quantization=weight_format("fp8", 128 * 128))
    assert weight_bytes(m) == pytest.approx(1152 * (8 + 32 / 16384) / 8 + 320 + 80)
    assert weight_bytes(m, "bf16") == 2 * 1352  # an explicit override wins over quantization_config


def test_biases_and_extras_are_native_dtype():
    group = LayerGroup("dense", 1, AttentionSpec("gqa", 4, 2, 2, 2, qkv_bias=True, qk_norm=True, sinks=True),
                       FfnSpec("dense", 16, True, "silu"))
    m = ModelSpec("b", 8, 10, (group,), quantization=weight_format("int4", 128))
    fam = weight_bytes_by_family(m)
    # attn: qkv 128 + o 64 = 192 weights · 4.15625/8 = 99.75 B; qkv bias 16 · 2 B = 32 B;
    # q/k norms 2·2 + sinks 4 = 8 params · 2 B = 16 B -> 147.75 B
    assert fam["attn"] == pytest.approx(147.75)


def test_family_bytes_by_hand_llama_3_1_8b():
    # Llama-3.1-8B (d 4096, 32 layers, 32 heads / 8 KV heads of 128, d_ff 14336, vocab 128256, untied), bf16:
    # attn  32 x (4096 x (4096 + 2 x 1024) + 4096 x 4096) x 2 B = 32 x 41,943,040 x 2 = 2,684,354,560
    # ffn   32 x 3 x 4096 x 14336 x 2 B                        = 11,274,289,152
    # norm  (32 x 2 + 1 final) x 4096 x 2 B                    = 532,480
    # embed = lm_head = 128256 x 4096 x 2 B                    = 1,050,673,152 each
    fam = weight_bytes_by_family(load_model("meta-llama/Llama-3.1-8B"))
    assert fam == {"attn": 2_684_354_560, "ffn": 11_274_289_152, "norm": 532_480, "embed": 1_050_673_152,
                   "lm_head": 1_050_673_152}
    assert sum(fam.values()) == 2 * 8_030_261_248  # the published 8.03e9 parameters, 2 bytes each


def test_gpt_oss_checkpoint_size():
    # gpt-oss model card (arXiv 2508.10925): the gpt-oss-20b checkpoint is 12.8 GiB
    # (experts in MXFP4 = 4.25 bits per weight, everything else bf16).
    assert weight_bytes(load_model("openai/gpt-oss-20b")) / 2**30 == pytest.approx(12.8, rel=0.01)


def test_every_expert_counts_in_weight_bytes():
    # Mixtral-8x7B: all 46.7B parameters stored, not the 12.9B active ones (bf16: 2 bytes each)
    m = load_model("mistralai/Mixtral-8x7B-v0.1")
    assert weight_bytes(m) == 2 * m.params_total


# ------------------------------------------------------------------------------ KV cache
def test_kv_bytes_per_token_by_group():
    g = load_model("google/gemma-2-9b")
    # 21 layers per group · 2 (K,V) · 8 KV heads · 256 head_dim · 2 bytes = 172,032 each
    assert kv_bytes_per_token_by_group(g) == {"sliding": 172_032, "full": 172_032}


def test_mistral_sliding_window_caps_cache():
    m = load_model("mistralai/Mistral-7B-v0.1")
    # 32 layers · 2 · 8 KV heads · 128 · 2 bytes = 131,072 B/token; at context 8192 only 4096 tokens are kept
    assert kv_cache_bytes(m, 8192) == 131_072 * 4096
    assert kv_cache_bytes(m, 1000) == 131_072 * 1000


def test_gemma2_half_the_layers_capped():
    g = load_model("google/gemma-2-9b")
    # sliding half: 172,032 · min(8192, 4096); full half: 172,032 · 8192
    assert kv_cache_bytes(g, 8192) == 172_032 * 4096 + 172_032 * 8192
    assert kv_cache_bytes(g, 8192, kv_dtype="fp8") == (172_032 * 4096 + 172_032 * 8192) / 2


def test_mla_cache_and_batch():
    d = load_model("deepseek-ai/DeepSeek-V3")
    # 70,272 B/token (61 · (512 + 64) · 2) · 4096 tokens · 8 sequences
    assert kv_cache_bytes(d, 4096, batch=8) == 70_272 * 4096 * 8


def test_arrays_broadcast_as_float64():
    m = load_model("mistralai/Mistral-7B-v0.1")
    out = kv_cache_bytes(m, np.array([1024, 8192]), np.array([[1], [2]]))
    assert out.dtype == np.float64 and out.shape == (2, 2)
    np.testing.assert_array_equal(out, 131_072 * np.array([[1024, 4096], [2048, 8192]]))
    assert isinstance(kv_cache_bytes(m, 10), float)


def test_negative_sizes_raise():
    with pytest.raises(ScenarioError):
        kv_cache_bytes(tiny(), -1)
    with pytest.raises(ScenarioError):
        kv_cache_bytes(tiny(), 10, batch=np.array([1, -2]))


def test_max_batch_row_matches_the_estimate():
    # the planner's one-row max batch (no DataFrame) is the estimate's own memory.max_batch at the same scenario
    from llm_roofline.estimate import estimate
    from llm_roofline.hardware import load_chip
    from llm_roofline.memory import max_batch_row

    spec, chip = load_model("meta-llama/Llama-3.1-8B"), load_chip("h100-sxm")
    row = max_batch_row(spec, chip, 4096, tp=2, pp=2, gen_len=256, gpu_memory_utilization=0.8)
    est = estimate(spec, chip, batch=2, prompt_len=4096 - 256, gen_len=256, tp=2, pp=2, gpu_memory_utilization=0.8)
    assert row["max_batch"] == est.memory.max_batch > 0 and row["error"] is None
    bad = max_batch_row(spec, chip, 4096, tp=3)  # 32 heads over 3 chips
    assert bad["max_batch"] == 0 and bad["error"]


@pytest.mark.parametrize("bad, said", [(dict(context_len=float("nan")), "context_len must be an integer"),
                                       (dict(context_len=1e30), "context_len must be an integer"),
                                       (dict(context_len=8192, tp="x"), "tp must be an integer"),
                                       (dict(context_len=8192, gen_len=0), "gen_len must be an integer")])
def test_max_batch_checks_its_sizes(bad, said):
    # NaN and tp="x" were bare ValueErrors; 1e30 tokens gave a row of 1.3e35 bytes with max_batch 0
    from llm_roofline.memory import max_batch

    with pytest.raises(RooflineError, match=said):
        max_batch("meta-llama/Llama-3.1-8B", "h100-sxm", **bad)


def test_the_memory_table_names_a_checkpoints_own_weight_format():
    # DeepSeek-V3 ships fp8 weights in 128 x 128 blocks (quantization_config weight_block_size: 16,384 weights per
    # fp32 scale) and torch_dtype bf16: its rows said 'bf16' beside fp8 bytes (85 GB per chip at tp 8 ~ 671 G x 1 B /
    # 8); gpt-oss-120b keeps attention in bf16 and stores its experts in MXFP4 (32 weights per 8-bit scale)
    from llm_roofline.memory import max_batch

    ds = max_batch("deepseek-ai/DeepSeek-V3", "h200", 8192, tp=8)
    assert list(ds["weight_dtype"]) == ["fp8 (g16384, 32-bit scales)"]
    assert 80e9 < float(ds["weight_bytes_per_chip"].iloc[0]) < 90e9
    oss = max_batch("openai/gpt-oss-120b", "h200", 8192)
    assert list(oss["weight_dtype"]) == ["bf16; experts fp4 (g32, 8-bit scales)"]
    assert list(max_batch("meta-llama/Llama-3.1-8B", "h200", 8192, weight_dtype="int4")["weight_dtype"]) == [
        "int4 (g128, 16-bit scales, 4-bit zeros)"]
