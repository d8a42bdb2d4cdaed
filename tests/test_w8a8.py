"""Checkpoints that quantize their activations (W8A8): the reader, the per-GEMM compute dtype, the FLOP time."""

import pytest

import llm_roofline as lr
from llm_roofline.dequant import weight_only_quantized
from llm_roofline.efficiency import family_of
from llm_roofline.errors import ModelConfigError
from llm_roofline.graph import Dtypes, Phase, build_ops, resolve_dtypes
from llm_roofline.model.hf import load_model
from llm_roofline.roofline import score_op
from llm_roofline.sharding import Sharding


def _llama(**q):
    return {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8,
            "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 2048,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_act": "silu", "quantization_config": q}


def _ct(weights, acts):
    """A compressed-tensors quantization_config with one config group (llm-compressor's W8A8 layout)."""
    return {"quant_method": "compressed-tensors", "ignore": ["lm_head"],
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": acts}}}


INT8 = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel"}
FP8 = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel"}


# ------------------------------------------------------------------------------ the reader
def test_deepseek_v3_quantizes_its_activations_to_fp8():
    # config.json: quant_method fp8, activation_scheme dynamic, weight_block_size [128, 128]
    spec = load_model("deepseek-ai/DeepSeek-V3")
    assert spec.activation_quant == "fp8"
    assert any("activations to fp8" in a and "activation_scheme dynamic" in a for a in spec.assumptions)


def test_compressed_tensors_w8a8_and_weight_only_configs():
    assert load_model(_llama(**_ct(INT8, {"num_bits": 8, "type": "int", "dynamic": True}))).activation_quant == "int8"
    assert load_model(_llama(**_ct(FP8, {"num_bits": 8, "type": "float", "dynamic": True}))).activation_quant == "fp8"
    w8a16 = load_model(_llama(**_ct(INT8, None)))  # input_activations null: weight-only
    assert w8a16.activation_quant is None and w8a16.quantization.dtype == "int8"
    # int4 weights with 8-bit activations (W4A8) are not modelled as such: weight-only, said so
    w4a8 = load_model(_llama(**_ct({"num_bits": 4, "type": "int", "group_size": 128}, {"num_bits": 8, "type": "int"})))
    assert w4a8.activation_quant is None and any("int4 weights" in a and "weight-only" in a for a in w4a8.assumptions)
    # NVFP4 (llm-compressor): fp4 weights in groups of 16 with fp4 activations: W4A4 (vLLM's FP4 GEMMs on Blackwell)
    nvfp4 = load_model(_llama(**_ct({"num_bits": 4, "type": "float", "group_size": 16},
                                    {"num_bits": 4, "type": "float", "dynamic": "local"})))
    assert nvfp4.activation_quant == "fp4" and any("W4A4" in a for a in nvfp4.assumptions)


def test_fp8_without_an_activation_scheme_is_weight_only_and_modelopt_fp8_is_w8a8():
    fp8_wo = load_model(_llama(quant_method="fp8", weight_block_size=[128, 128]))
    assert fp8_wo.activation_quant is None and fp8_wo.quantization.dtype == "fp8"
    assert any("no activation_scheme" in a and "weight-only" in a for a in fp8_wo.assumptions)
    mo = load_model(_llama(quant_method="modelopt", quant_algo="FP8"))
    assert (mo.quantization.dtype, mo.activation_quant) == ("fp8", "fp8")
    nested = load_model(_llama(quant_method="modelopt", quantization={"quant_algo": "W8A8_SQ_PER_CHANNEL"}))
    assert (nested.quantization.dtype, nested.activation_quant) == ("int8", "int8")
    assert load_model(_llama(quant_method="gptq", bits=8, group_size=128)).activation_quant is None


def _nvfp4_deepseek():
    """DeepSeek-V3 as NVIDIA's ModelOpt NVFP4 checkpoints quantize it (nvidia/DeepSeek-V3-0324-NVFP4
    hf_quant_config: quant_algo NVFP4, group_size 16, every layer's self_attn* and mlp.gate, lm_head and the
    embedding excluded)."""
    import json
    from llm_roofline.model.hf import spec_from_config

    from pathlib import Path
    cfg = json.loads((Path(__file__).resolve().parents[1] / "model_configs" / "deepseek-ai" / "DeepSeek-V3" /
                      "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                                  "exclude_modules": ["lm_head", "model.embed_tokens", "model.layers.0.self_attn*",
                                                      "model.layers.3.mlp.gate", "model.layers.61*"]}
    return spec_from_config(cfg, "DeepSeek-V3-NVFP4")


def test_modelopt_nvfp4_is_w4a4_on_its_mlp_matrices():
    spec = _nvfp4_deepseek()
    # 4 bits + one fp8 scale per 16 weights = 4.5 bits; attention and router excluded (self_attn*, mlp.gate)
    assert spec.activation_quant == "fp4" and spec.quantization.bits_per_weight(7168) == 4.5
    assert set(spec.quantized_families) == {"ffn", "experts", "shared"}
    b200 = {o.name: o for o in build_ops(spec, Phase.decode(8, 1000), Sharding(tp=8),
                                          resolve_dtypes(lr.load_chip("b200"), Dtypes(), []))}
    assert (b200["ffn.experts.up_gate"].compute_dtype, family_of(b200["ffn.experts.up_gate"])) == ("fp4", "moe_fp4")
    assert b200["attn.o_proj"].compute_dtype == "bf16" and b200["ffn.router"].compute_dtype == "bf16"
    h100 = {o.name: o for o in build_ops(spec, Phase.decode(8, 1000), Sharding(tp=8),
                                          resolve_dtypes(lr.load_chip("h100-sxm"), Dtypes(), []))}
    up = h100["ffn.experts.up_gate"]  # Hopper: no fp4 units, the experts dequantize (Marlin)
    assert up.compute_dtype == "bf16" and weight_only_quantized(up)
    e = lr.estimate(spec, "b200", tp=8, batch=1, prompt_len=128, gen_len=2)
    assert e.scenario["weight_dtype"] == "bf16; ffn, experts, shared fp4 (g16, 8-bit scales), W4A4: fp4 GEMMs"
    # NVFP4's group is 16 by definition: a group_size of 0 (per-channel elsewhere) does not become MXFP4's 32
    assert load_model(_llama(quant_method="modelopt", quant_algo="NVFP4", group_size=0)).quantization.group_size == 16


@pytest.mark.parametrize("q, match", [
    ({"quant_method": "fp8", "activation_scheme": 5}, "activation_scheme"),
    ({"quant_method": "fp8", "activation_scheme": "sometimes"}, "activation_scheme"),
    (_ct(INT8, "dynamic"), "input_activations"),
    (_ct(INT8, {"num_bits": 6, "type": "float"}), "input_activations"),  # fp6: not modelled (fp4 is, NVFP4)
    (_ct(INT8, {"num_bits": True, "type": "int"}), "input_activations.num_bits must be an integer"),
    (_ct(INT8, {"num_bits": "8", "type": "float"}), "input_activations.num_bits must be an integer"),  # was "float8
    #   are not modelled; int and float of 4 or 8 bits are"
    ({**_ct(INT8, None), "ignore": None, "exclude_modules": "lm_head"}, "exclude_modules must be a list"),  # named
    #   modules_to_not_convert, a key the config does not have
    ({"quant_method": "modelopt", "quant_algo": 3}, "quant_algo"),
    ({"quant_method": "modelopt", "quantization": [1]}, "quantization"),
])
def test_hostile_activation_settings_are_config_errors(q, match):
    with pytest.raises(ModelConfigError, match=match):
        load_model(_llama(**q))


# ------------------------------------------------------------------------------ the compute dtype per GEMM
def _prefill_ops(chip, weight=None, prompt=2048):
    spec = load_model("deepseek-ai/DeepSeek-V3")
    dt = resolve_dtypes(lr.load_chip(chip), Dtypes(weight), [])
    return {op.name: op for op in build_ops(spec, Phase.prefill(1, prompt), Sharding(), dt)}


def test_deepseek_v3_gemms_compute_in_fp8_on_hopper_and_dequantize_on_a100():
    h100 = _prefill_ops("h100-sxm")
    o = h100["attn.o_proj"]
    assert (o.compute_dtype, family_of(o)) == ("fp8", "gemm_fp8_block")  # 128 x 128 blocks: the block-scaled fit
    assert (h100["ffn.experts.up_gate"].compute_dtype, family_of(h100["ffn.experts.up_gate"])) == ("fp8", "moe_fp8")
    for name in ("lm_head", "ffn.router"):  # not quantized by the checkpoint: bf16
        assert (h100[name].compute_dtype, family_of(h100[name])) == ("bf16", "gemm")
    assert h100["attn.core"].compute_dtype == "bf16"  # activations and the attention stay bf16
    a100 = _prefill_ops("a100-80gb")["attn.o_proj"]  # Ampere: no fp8 units -> weight-only, dequantized
    assert (a100.compute_dtype, family_of(a100), weight_only_quantized(a100)) == ("bf16", "gemm", True)
    # the user's weight dtype overrides the checkpoint's format: weight-only again (bf16 compute)
    assert _prefill_ops("h100-sxm", weight="fp8")["attn.o_proj"].compute_dtype == "bf16"


def test_w8a8_flop_time_is_at_the_fp8_peak_by_hand():
    o = _prefill_ops("h100-sxm")["attn.o_proj"]
    # DeepSeek-V3 o_proj: k = 128 heads x v_head_dim 128 = 16384, n = 7168, T = 2048 tokens (tp 1)
    # FLOPs = 2 * 2048 * 16384 * 7168 = 481,036,337,152; at h100-sxm's fp8 dense 1978.9e12 -> 243.08 us
    # (bytes: weights 16384 * 7168 * 8.002/8 = 117.5 MB + activations 2048 * 23552 * 2 = 96.5 MB -> 63.9 us at 3.35 TB/s)
    assert o.flops == pytest.approx(481_036_337_152)
    assert float(score_op(o, lr.load_chip("h100-sxm")).t_s) == pytest.approx(481_036_337_152 / 1978.9e12, rel=1e-9)


def test_a100_estimate_says_the_w8a8_checkpoint_runs_weight_only():
    e = lr.estimate("deepseek-ai/DeepSeek-V3", "a100-80gb", batch=1, prompt_len=128, gen_len=2, tp=8,
                    efficiency="ideal")
    assert any("no fp8 matrix units" in a and "weight-only" in a for a in e.assumptions)
    h = lr.estimate("deepseek-ai/DeepSeek-V3", "h100-sxm", batch=1, prompt_len=128, gen_len=2, tp=8,
                    efficiency="ideal")
    assert not any("no fp8 matrix units" in a for a in h.assumptions)


def test_the_weight_label_says_when_the_gemms_compute_in_fp8():
    # DeepSeek-V3's checkpoint is W8A8: on h100-sxm (fp8 units) its quantized GEMMs compute in fp8 and every output
    # names it beside the weights; on a100-80gb (no fp8 units) they dequantize into bf16 and the label says nothing
    h100 = lr.estimate("deepseek-ai/DeepSeek-V3", "h100-sxm", tp=8, batch=1, prompt_len=128, gen_len=2)
    a100 = lr.estimate("deepseek-ai/DeepSeek-V3", "a100-80gb", tp=8, batch=1, prompt_len=128, gen_len=2)
    assert h100.scenario["weight_dtype"] == "fp8 (g16384, 32-bit scales), W8A8: fp8 GEMMs"
    assert a100.scenario["weight_dtype"] == "fp8 (g16384, 32-bit scales)"
    assert h100.scenario["compute_dtype"] == a100.scenario["compute_dtype"] == "bf16"  # everything else
    assert (h100.scenario["gemm_compute_dtype"], a100.scenario["gemm_compute_dtype"]) == ("fp8", "bf16")
    # the roofline chart's roof is the GEMMs' one: h100-sxm fp8 1978.9e12 FLOP/s (datasheet, dense), bf16 989.4e12
    # dotted beside it; on a100-80gb the bf16 roof alone (312e12)
    from llm_roofline.report.plot_roofline import roof_of

    assert roof_of(h100)["peak_flops_per_s"] == pytest.approx(1978.9e12, rel=1e-3)
    assert roof_of(h100)["other_peak"][0] == "bf16" and roof_of(a100)["other_peak"] is None
