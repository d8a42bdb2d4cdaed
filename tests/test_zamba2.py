"""Zamba2: Mamba-2 blocks, and num_mem_blocks shared transformer blocks reused at the hybrid layers with per-layer
LoRA adapters and a linear projection. Expected numbers are hand arithmetic (in the comments); the parameter count is
checked against transformers 5.24's Zamba2ForCausalLM built on the meta device (torch 2.13, a separate virtualenv, not
a dependency of this project), parameters summed (tied weights once).

Fixture (tests/fixtures/configs/zamba2_2_7b.json): Zamba2-2.7B as Zyphra's own standalone implementation states it,
Zyphra/Zamba2 config.json (commit 89a404b: num_layers 54, hidden_size 2560, state_size 64, conv_dimension 4,
expansion_factor 2, use_shared_block_lora with lora_rank 128, 32 heads, kv_channels 80, padded_vocab_size 32000,
num_mem_blocks 2, layer_mapping with 'g' at layers 6, 12, 18, 24, 30, 36, 42, 47, 51), written in transformers'
Zamba2Config key names; its mamba_config.py defaults: mamba_headdim 64 (so n_mamba_heads = 5120 / 64 = 80),
mamba_ngroups 1, ffn_hidden_size 4 x hidden, gelu, no rotary (use_mem_rope false), no attention adapters.
transformers meta count 2,662,214,560; Zyphra: "2.7B".
"""

import json
from pathlib import Path

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.estimate import estimate
from llm_roofline.graph import Phase, build_ops
from llm_roofline.memory import (kv_bytes_per_token, state_bytes_per_sequence, weight_bytes, weight_bytes_per_chip)
from llm_roofline.model.hf import spec_from_config
from llm_roofline.roofline import score_ops

FIX = Path(__file__).resolve().parent / "fixtures" / "configs" / "zamba2_2_7b.json"

# d 2560. Mamba-2 block (80 heads x 64 = inner 5120, 1 group x state 64, conv 4): conv_dim 5120 + 128 = 5248;
#   in_proj 2560 x (5120 + 5248 + 80) = 26,746,880; conv 5248 x 4 + bias 5248 = 26,240; A_log, dt_bias, D 3 x 80;
#   gated norm 5120; out_proj 5120 x 2560 = 13,107,200; block norm 2560 -> 39,888,240, in all 54 layers
# shared block (stored twice): q, k, v 3 x 5120 x 5120 = 78,643,200 (input 2 x 2560, 32 heads of 160);
#   o 5120 x 2560 = 13,107,200; gate_up 2560 x 20,480 = 52,428,800; down 10,240 x 2560 = 26,214,400;
#   norms 5120 + 2560 -> 170,401,280
# each of the 9 hybrid layers: adapter 2560 x 128 + 128 x 20,480 = 2,949,120; linear 2560 x 2560 = 6,553,600
#   -> 9,502,720
# tied embedding 32,000 x 2560 = 81,920,000; final norm 2560
ZAMBA2_2_7B = 54 * 39_888_240 + 2 * 170_401_280 + 9 * 9_502_720 + 81_920_000 + 2560


def test_zamba2_2_7b_counts_shared_blocks_once():
    m = lr.load_model(FIX)
    assert m.params_total == ZAMBA2_2_7B == 2_662_214_560  # = transformers meta count
    assert [(g.name, g.count, g.copies) for g in m.layer_groups] == [("mamba2", 54, 54),
                                                                     ("shared.attention.dense", 9, 2)]
    assert m.n_layers == 54  # the shared block runs inside 9 of them
    # bf16: the weights held are 2 bytes per parameter (shared blocks once) ...
    assert weight_bytes(m) == 2 * ZAMBA2_2_7B
    ops = build_ops(m, Phase.decode(1, 1000))
    assert weight_bytes_per_chip(ops) == 2 * ZAMBA2_2_7B
    # ... while every decode step reads the shared block at all 9 hybrid layers: 7 more reads of its 170,401,280 x 2 B;
    # (the tied LM head reads the table the embedding holds; the embedding gather reads one row, 2560 x 2 B)
    read = sum(float(o.weight_bytes) * o.count for o in ops)
    assert read == pytest.approx(2 * ZAMBA2_2_7B + 7 * 2 * 170_401_280 + 2560 * 2, rel=1e-12)


def test_zamba2_cache_per_token_and_state_by_hand():
    m = lr.load_model(FIX)
    # each hybrid layer caches K and V of 32 heads x 160: 2 x 5120 x 2 B = 20,480 B; 9 layers
    assert kv_bytes_per_token(m) == 9 * 20_480 == 184_320
    # per sequence and Mamba layer: state 80 x 64 x 64 x 2 B = 655,360 + conv window 3 x 5248 x 2 B = 31,488
    assert state_bytes_per_sequence(m) == 54 * (655_360 + 31_488)


def test_one_shared_invocation_decode_ops_by_hand():
    m = lr.load_model(FIX)
    ops = {o.name: o for o in build_ops(m, Phase.decode(1, 1000)) if o.group == "shared.attention.dense"}
    assert ops["attn.qkv_proj"].count == 9
    assert float(ops["attn.qkv_proj"].flops) == 2 * 5120 * 15_360  # q, k, v from the 2 x 2560 input
    assert ops["attn.qkv_proj"].stored_bytes * 9 == 2 * 5120 * 15_360 * 2  # two copies held, spread over 9 runs
    assert float(ops["shared.linear"].flops) == 2 * 2560 * 2560
    assert ops["shared.linear"].stored_bytes == 2560 * 2560 * 2  # one per layer
    assert float(ops["shared.adapter.gate_up.up"].flops) == 2 * 128 * 20_480
    assert float(ops["attn.core"].kv_bytes) == 1000 * 2 * 5120 * 2


def test_attention_adapters_and_hybrid_layer_ids():
    cfg = {**json.loads(FIX.read_text()), "use_shared_attention_adapter": True}
    cfg.pop("layers_block_type")
    cfg["hybrid_layer_ids"] = [6, 12, 18, 24, 30, 36, 42, 47, 51]
    m = spec_from_config(cfg)
    # + 9 x 3 x (5120 x 128 + 128 x 5120) for the q, k, v adapters
    assert m.params_total == ZAMBA2_2_7B + 9 * 3 * 2 * 5120 * 128 == 2_697_604_000  # = transformers meta count


@pytest.mark.parametrize("change, words", [
    ({"layers_block_type": ["mamba"] * 53 + ["attention"]}, ["layers_block_type", "attention"]),
    ({"n_mamba_heads": 7}, ["n_mamba_heads"]),
    ({"num_attention_heads": 3}, ["num_attention_heads"]),
])
def test_malformed_zamba2_configs_name_the_key(change, words):
    with pytest.raises(lr.ModelConfigError) as e:
        spec_from_config({**json.loads(FIX.read_text()), **change})
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words)


def test_decode_sum_is_exact_for_the_shared_blocks():
    spec = lr.load_model(FIX)
    chip = lr.load_chip("h100")
    prompt, gen, batch = 500, 30, 4
    est = estimate(spec, chip, batch=batch, prompt_len=prompt, gen_len=gen, efficiency="ideal")
    steps = 0.0
    for j in range(1, gen):
        for s in score_ops(build_ops(spec, Phase.decode(batch, prompt + j)), chip):
            steps += float(np.maximum(s.t_compute_s, s.t_memory_s) + s.t_comm_s) * s.op.count
    assert est.e2e_s - est.ttft_s == pytest.approx(steps, rel=1e-12)


# ------------------------------------------------------------------------------ Zamba (v1)
def test_zamba_v1_default_config_by_hand():
    # transformers' ZambaConfig() defaults (Zamba-7B-v1's shape; no real config file was found): d 3712, 76 layers.
    # Mamba block (inner 7424, state 16, dt rank ceil(3712 / 16) = 232, conv 4): in_proj 3712 x 14,848 = 55,115,776;
    #   conv 7424 x 4 + 7424; x_proj 7424 x (232 + 32) = 1,959,936; dt_proj 232 x 7424 + 7424 = 1,729,792;
    #   A 7424 x 16 = 118,784; D 7424; out_proj 7424 x 3712 = 27,557,888; norm 3712 -> 86,530,432
    # one shared block: q, k, v 3 x 7424 x 7424 (16 heads of 464 from 2 x 3712); o 7424 x 3712; gated MLP
    #   3 x 3712 x 14,848; norms 7424 + 3712 -> 358,263,680
    # 13 hybrid layers (layer 2, then i % 6 == 4 over the other 73): linear 3712 x 3712 each;
    # tied embedding 32,000 x 3712; final norm 3712
    m = spec_from_config({"model_type": "zamba"})
    expected = 76 * 86_530_432 + 358_263_680 + 13 * 3712 * 3712 + 32_000 * 3712 + 3712
    assert m.params_total == expected == 7_232_490_496  # = transformers meta count of ZambaConfig()
    assert [(g.name, g.count, g.copies) for g in m.layer_groups] == [("mamba1", 76, 76), ("shared.attention.dense", 13, 1)]
    assert m.n_layers == 76
    # KV: 13 layers x 2 x 16 heads x 464 x 2 B; state per sequence: 76 x (7424 x 16 x 2 B + 3 x 7424 x 2 B)
    assert kv_bytes_per_token(m) == 13 * 2 * 16 * 464 * 2
    assert state_bytes_per_sequence(m) == 76 * (7424 * 16 * 2 + 3 * 7424 * 2)
