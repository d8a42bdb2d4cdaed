"""The MLA module glue (ops.mla_glue, efficiency family mla_glue): hand arithmetic with fixed parameters."""

import pytest

import llm_roofline as lr
from llm_roofline.chip_fits import calibrated_model
from llm_roofline.efficiency import CalibratedModel, FamilyFit, family_of
from llm_roofline.graph import Phase, build_ops
from llm_roofline.model.hf import load_model
from llm_roofline.ops import mla_glue
from llm_roofline.roofline import score_ops
from llm_roofline.sharding import Sharding


def test_glue_bytes_and_rows():
    # 4 tokens x 16 heads = 64 query-head rows; 64 x 576 = 36,864 elements, read + written at 2 B: 147,456 B
    op = mla_glue("attn.mla_glue", "moe", 58, tokens=4, heads=16, width=576, act_bytes_per_elem=2)
    assert float(op.tokens) == 64.0
    assert float(op.hbm_bytes) == 147456.0
    assert float(op.flops) == 0.0
    assert family_of(op) == "mla_glue"


def test_glue_floor_per_layer_and_per_query_head_row():
    chip = lr.load_chip("h100-sxm")
    op = mla_glue("attn.mla_glue", "moe", 1, tokens=4, heads=16, width=576, act_bytes_per_elem=2)
    fit = FamilyFit(overhead_s=50e-6, overhead_per_token_s=1e-9)
    model = CalibratedModel("h100-sxm", "test", {"mla_glue": fit})
    (cal,), (ideal,) = score_ops([op], chip, model), score_ops([op], chip, None)
    # ideal: 147,456 B / 3.35e12 B/s = 44.016 ns; floor: 50 us + 64 rows x 1 ns = 50.064 us
    assert float(ideal.t_s) == pytest.approx(147456 / 3.35e12, rel=1e-9)
    assert float(cal.t_s) == pytest.approx(147456 / 3.35e12 + 50.064e-6, rel=1e-9)


def test_deepseek_v3_layers_carry_one_glue_op_per_attention_layer():
    spec = load_model("deepseek-ai/DeepSeek-V3")
    # decode, batch 8, tp 8: 128 / 8 = 16 heads per chip, 8 x 16 = 128 rows of kv_lora 512 + rope 64 = 576 read and
    # written, and the latent norms' bf16 weights (q_lora_rank 1536 + kv_lora_rank 512) read: 294,912 + 4,096 B
    ops = [o for o in build_ops(spec, Phase.decode(8, 1000), Sharding(tp=8)) if o.name == "attn.mla_glue"]
    assert sorted(o.count for o in ops) == [3, 58]  # 3 dense + 58 MoE layers: all 61
    assert float(ops[0].tokens) == 128.0 and float(ops[0].hbm_bytes) == 128 * 576 * 2 * 2 + (1536 + 512) * 2
    assert ops[0].stored_bytes == (1536 + 512) * 2  # held on every chip, as the down-projections are
    # prefill of 2 x 100 tokens (materialized): 200 x 16 = 3,200 rows of head_dim 192 (nope 128 + rope 64), and the
    # latent norms' weights
    pre = next(o for o in build_ops(spec, Phase.prefill(2, 100), Sharding(tp=8)) if o.name == "attn.mla_glue")
    assert float(pre.tokens) == 3200.0 and float(pre.hbm_bytes) == 3200 * 192 * 2 * 2 + (1536 + 512) * 2


def test_shipped_glue_fits_are_physical():
    # every GPU measured (MLA module rows) has its own table but GB200, whose rows carry a constant ~40 us a call that
    # B200's (the same kernels) and its own served decode do not (benchmarks/validate_mla.py GLUE_BORROWED): it borrows
    # B200's (8.96 us a layer, not its rows' 65 us); overheads >= 0 make it never faster than ideal
    for name in ("h100-sxm", "h200", "b200"):
        m = calibrated_model(name)
        assert m.sources["mla_glue"] == f"{name} fit"
        p = m.families["mla_glue"]
        assert 0 < p.overhead_s < 1e-3 and p.overhead_per_token_s < 1e-8  # (>= 0: FamilyFit's own check)
    gb200 = calibrated_model("gb200")
    assert gb200.sources["mla_glue"] == "borrowed: b200"
    assert gb200.families["mla_glue"].overhead_s == calibrated_model("b200").families["mla_glue"].overhead_s < 1e-5
