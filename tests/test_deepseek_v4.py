"""DeepSeek-V4: shared-KV MQA over a sliding window plus compressed KV (CSA with a lightning indexer, HCA),
hyper-connections, MoE. Expected numbers are hand arithmetic (in the comments); the parameter counts are checked
against transformers 5.24's DeepseekV4ForCausalLM built on the meta device (torch 2.13, a separate virtualenv, not a
dependency of this project), parameters summed.

Fixture (tests/fixtures/configs/deepseek_v4_flash_reap160.json): the config.json of a published REAP-pruned
DeepSeek-V4-Flash-0731 (160 of 256 routed experts kept per layer), as copied in the public repository
patrickbdevaney/deepseek-v4-flash-0731-cuda, docs/config.json (commit 61092a1), verbatim. Its reap_pruning block
names the source, deepseek-ai/DeepSeek-V4-Flash-0731, with original_experts_per_layer 256: the same config with
n_routed_experts 256 is DeepSeek-V4-Flash itself ("284B total, 13B active" on DeepSeek's model card).
"""

import json
from pathlib import Path

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.estimate import estimate
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import kv_bytes_per_token, kv_cache_bytes, weight_bytes_by_family
from llm_roofline.model.hf import spec_from_config
from llm_roofline.roofline import score_ops

FIX = Path(__file__).resolve().parent / "fixtures" / "configs" / "deepseek_v4_flash_reap160.json"

# d 4096, 64 heads of 512, q_lora_rank 1024, o_groups 8 x o_lora_rank 1024, hc_mult 4. Every layer:
#   attention: q_a 4096 x 1024 = 4,194,304 + q_a_norm 1024 + q_b 1024 x 32,768 = 33,554,432 + kv 4096 x 512
#   = 2,097,152 + kv_norm 512 + o_a 8 x (4096 x 1024) = 33,554,432 + o_b 8192 x 4096 = 33,554,432 + sinks 64
#   = 106,956,352
#   hyper-connections: 2 x (fn 24 x 16,384 + base 24 + scale 3) = 786,486; two norms 8,192
#   MoE (160 experts): router 160 x 4096 = 655,360 + experts 160 x 3 x 4096 x 2048 = 4,026,531,840 + shared expert
#   3 x 4096 x 2048 = 25,165,824 = 4,052,353,024
#   -> 4,160,104,054 per layer
# CSA compressor (rate 4, two series): kv+gate 4096 x 2048 = 8,388,608 + position bias 4 x 1024 + kv_norm 512;
#   indexer: kv+gate 4096 x 512 = 2,097,152 + weights_proj 4096 x 64 = 262,144 + position bias 4 x 256 + kv_norm 128
#   + q_b 1024 x 8192 = 8,388,608 -> 19,142,272
# HCA compressor (rate 128): kv+gate 4096 x 1024 = 4,194,304 + position bias 128 x 512 = 65,536 + kv_norm 512
#   = 4,260,352
# model: embedding + LM head 2 x 129,280 x 4096 = 1,059,061,760, final norm 4096, hyper-connection head
#   4 x 16,384 + 4 + 1 = 65,541
# layers: compress_ratios [0, 0, (4, 128) x 20, 4] for the 43 layers (the 3 trailing entries are MTP's): 2 SWA,
# 21 CSA, 20 HCA
REAP160 = 43 * 4_160_104_054 + 21 * 19_142_272 + 20 * 4_260_352 + 1_059_061_760 + 4096 + 65_541
# 256 experts: MoE 256 x 4096 + 256 x 25,165,824 + 25,165,824 = 6,468,665,344 per layer
FLASH = 43 * (106_956_352 + 786_486 + 8192 + 6_468_665_344) + 21 * 19_142_272 + 20 * 4_260_352 + 1_059_061_760 \
    + 4096 + 65_541


def test_flash_reap160_counts_by_hand():
    m = lr.load_model(FIX)
    assert m.params_total == REAP160 == 180_430_800_471  # = transformers meta count
    assert [(g.name, g.count) for g in m.layer_groups] == [("swa.moe", 2), ("csa.moe", 21), ("hca.moe", 20)]
    # active: 6 of 160 experts: 655,360 + 6 x 25,165,824 + 25,165,824 per layer instead of 4,052,353,024
    active_moe = 655_360 + 7 * 25_165_824
    assert m.params_active == REAP160 - 43 * (4_052_353_024 - active_moe) == 13_782_713_943


def test_flash_256_experts_is_284b():
    cfg = json.loads(FIX.read_text())
    cfg["n_routed_experts"] = cfg.pop("reap_pruning")["original_experts_per_layer"]
    m = spec_from_config(cfg)
    assert m.params_total == FLASH == 284_332_230_231  # = transformers meta count; DeepSeek: "284B total"
    assert m.params_active == pytest.approx(13.8e9, rel=1e-3)  # "13B active" (card, rounded down)


def test_routed_experts_are_stored_in_their_own_expert_dtype():
    # expert_dtype "fp4": MXFP4-style blocks of 32 weights sharing an 8-bit scale -> 4 + 8/32 = 4.25 bits per weight
    # routed experts: 43 layers x 4,026,531,840 = 173,140,869,120 weights x 4.25 / 8 B = 91,981,086,720 B
    # (the shared expert stays in quantization_config's fp8: 43 x 25,165,824 weights, 1 B + one 32-bit scale per
    # 128 x 128 block = 43 x (25,165,824 + 1,536 x 4) = 1,082,394,624 B)
    by_family = weight_bytes_by_family(lr.load_model(FIX))
    assert by_family["experts"] == 43 * 4_026_531_840 * 4.25 / 8 == 91_981_086_720
    assert by_family["shared"] == 43 * (25_165_824 + 25_165_824 // 16_384 * 4) == 1_082_394_624
    with pytest.raises(lr.ModelConfigError, match="expert_dtype"):
        spec_from_config({**json.loads(FIX.read_text()), "expert_dtype": "fp5"})


def test_kv_cache_per_token_reflects_compression():
    m = lr.load_model(FIX)
    # per token and layer, bf16: the window's key (= value) 512 x 2 B = 1024 B (at most 128 tokens);
    # CSA: (512 + index key 128) / 4 x 2 B = 320 B; HCA: 512 / 128 x 2 B = 8 B (every token of the context)
    assert kv_bytes_per_token(m) == 43 * 1024 + 21 * 320 + 20 * 8 == 50_912
    # 100,000 tokens: 43 x 128 x 1024 = 5,636,096 (windows) + 100,000 x (21 x 320 + 20 x 8) = 688,000,000
    assert kv_cache_bytes(m, 100_000) == 693_636_096
    # the window is capped: 64 tokens give 43 x 64 x 1024 + 64 x 6880
    assert kv_cache_bytes(m, 64) == 43 * 64 * 1024 + 64 * 6880


def test_one_csa_layer_decode_ops_by_hand():
    m = lr.load_model(FIX)
    ops = {o.name: o for o in build_ops(m, Phase.decode(1, 4096)) if o.group == "csa.moe"}
    # window core: 64 heads x min(4096, 128) keys x 2 x (512 + 512) FLOPs; reads 128 x 512 x 2 B
    assert float(ops["attn.core"].flops) == 64 * 128 * 2 * 1024
    assert float(ops["attn.core"].kv_bytes) == 128 * 512 * 2
    # compressed core: min(4096, 512 x 4) / 4 = 512 selected entries
    assert float(ops["attn.core.compressed"].flops) == 64 * 512 * 2 * 1024
    assert float(ops["attn.core.compressed"].kv_bytes) == 512 * 512 * 2
    # indexer: 64 heads x 128 dims over all 4096 / 4 = 1024 index keys of 128
    assert float(ops["attn.indexer.score"].flops) == 1024 * 2 * 64 * 128
    assert float(ops["attn.indexer.score"].kv_bytes) == 1024 * 128 * 2
    # one new token writes 1/4 compressed entry of 512 + 128 elements
    assert float(ops["attn.compressor.kv_write"].kv_bytes) == 640 / 4 * 2
    # grouped output projection: 8 blocks of (4096 x 1024) read, fp8 weights (~1 B each, + block scales)
    assert float(ops["attn.o_a_proj"].flops) == 2 * 4096 * 1024 * 8
    # hyper-connection mixing: (1, 16,384) @ (16,384, 24)
    assert float(ops["hc.attn.mix_proj"].flops) == 2 * 16_384 * 24


def _decode_step_by_step(spec, chip, batch, prompt, gen) -> float:
    steps = 0.0
    for j in range(1, gen):
        for s in score_ops(build_ops(spec, Phase.decode(batch, prompt + j)), chip):
            steps += float(np.maximum(s.t_compute_s, s.t_memory_s) + s.t_comm_s) * s.op.count
    return steps


@pytest.mark.parametrize("prompt", [100, 2030])  # crossing the window (128) and CSA's top-k (512 x 4 = 2048 tokens)
def test_decode_sum_is_exact_across_window_and_compressed_top_k(prompt):
    spec = lr.load_model(FIX)
    assert spec.context_breakpoints() == [128, 2048]
    chip = lr.load_chip("h200")
    gen, batch = 40, 2
    est = estimate(spec, chip, batch=batch, prompt_len=prompt, gen_len=gen, efficiency="ideal")
    assert est.e2e_s - est.ttft_s == pytest.approx(_decode_step_by_step(spec, chip, batch, prompt, gen), rel=1e-12)


@pytest.mark.parametrize("change, words", [
    ({"compress_ratios": [0, 0, 7] + [4] * 43}, ["compress_ratios", "7"]),
    ({"compress_ratios": [0, 4]}, ["compress_ratios", "43"]),
    ({"num_key_value_heads": 2}, ["num_key_value_heads"]),
    ({"o_groups": 7}, ["o_groups"]),
    ({"compress_rates": {"full_attention": 4}}, ["compress_rates"]),
    ({"layer_types": ["sliding_attention"] * 42 + ["linear_attention"]}, ["layer_types", "linear_attention"]),
])
def test_malformed_v4_configs_name_the_key(change, words):
    with pytest.raises(lr.ModelConfigError) as e:
        spec_from_config({**json.loads(FIX.read_text()), **change})
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words)


def test_v4_keys_are_still_refused_under_another_model_type():
    cfg = {k: v for k, v in json.loads(FIX.read_text()).items() if not k.startswith("index_")}
    with pytest.raises(lr.UnsupportedArchitectureError, match="compress_ratios"):
        spec_from_config({**cfg, "model_type": "deepseek_v3"})
    with pytest.raises(lr.UnsupportedArchitectureError, match="hc_mult"):
        spec_from_config({**cfg, "model_type": "deepseek_v3", "compress_ratios": None})
