"""ModelSpec arithmetic on tiny hand-made specs: every expected value is worked out in the comment beside it."""

import pytest

from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, Matrix, ModelSpec
from llm_roofline.units import weight_format
from llm_roofline.memory import kv_bytes_per_token

D = 8  # d_model of the tiny specs


def gqa(**kw) -> AttentionSpec:
    return AttentionSpec("gqa", n_heads=4, n_kv_heads=2, head_dim=2, v_head_dim=2, **kw)


def dense(**kw) -> FfnSpec:
    return FfnSpec("dense", d_ff=16, gated=True, activation="silu", **kw)


def moe(**kw) -> FfnSpec:
    return FfnSpec("moe", d_ff=0, gated=True, activation="silu", n_experts=4, top_k=2, d_expert=4, **kw)


def tiny(ffn: FfnSpec | None = None, **kw) -> ModelSpec:
    group = LayerGroup("dense", 2, gqa(), ffn or dense())
    return ModelSpec("tiny", d_model=D, vocab_size=10, layer_groups=(group,), **kw)


def test_matrix_params():
    assert Matrix("m", 3, 5).params == 15
    assert Matrix("m", 3, 5, bias=True, count=4).params == 4 * (15 + 5)  # 80


def test_attention_matrices_and_kv():
    a = gqa()
    qkv, o = a.weight_matrices(D)
    assert (qkv.k, qkv.n) == (8, 4 * 2 + 2 * 2 + 2 * 2)  # q 8 + k 4 + v 4 = 16
    assert (o.k, o.n) == (4 * 2, 8)
    assert a.group_size == 2  # 4 query heads / 2 KV heads
    assert a.kv_elements_per_token() == 2 * (2 + 2)  # KV heads · (K dim + V dim) = 8


def test_mla_matrices_and_latent_cache():
    a = AttentionSpec("mla", n_heads=2, n_kv_heads=2, head_dim=3, v_head_dim=2, q_lora_rank=4, kv_lora_rank=3,
                      qk_nope_head_dim=2, qk_rope_head_dim=1)
    # q_a 8·4 = 32, q_b 4·(2·3) = 24, kv_a 8·(3+1) = 32, kv_b 3·(2·(2+2)) = 24, o (2·2)·8 = 32 -> 144
    assert sum(m.params for m in a.weight_matrices(D)) == 144
    assert a.extra_params() == 4 + 3  # q_a and kv_a latent norms
    assert a.kv_elements_per_token() == 3 + 1  # latent + shared rope key
    no_q_lora = AttentionSpec("mla", 2, 2, 3, 2, q_lora_rank=None, kv_lora_rank=3, qk_nope_head_dim=2,
                              qk_rope_head_dim=1)
    # q_proj 8·(2·3) = 48 replaces q_a + q_b: 48 + 32 + 24 + 32 = 136
    assert sum(m.params for m in no_q_lora.weight_matrices(D)) == 136


def test_dense_and_moe_ffn_params():
    assert sum(m.params for m in dense().weight_matrices(D)) == 8 * 32 + 16 * 8  # up_gate 256 + down 128 = 384
    plain = FfnSpec("dense", 16, gated=False, activation="gelu", bias=True)
    assert sum(m.params for m in plain.weight_matrices(D)) == (8 * 16 + 16) + (16 * 8 + 8)  # 144 + 136 = 280
    f = moe()
    # router 8·4 = 32; experts up_gate 4·(8·8) = 256; down 4·(4·8) = 128 -> 416
    assert sum(m.params for m in f.weight_matrices(D)) == 416
    # active: router 32 + top-2 experts 2·64 + 2·32 = 224
    assert sum(m.params for m in f.active_matrices(D)) == 224
    shared = moe(d_shared=4, shared_gate=True)
    # + shared up_gate 8·8 = 64, down 4·8 = 32, gate 8·1 = 8 -> 416 + 104 = 520
    assert sum(m.params for m in shared.weight_matrices(D)) == 520


def test_model_params_by_hand():
    m = tiny()
    # layer: qkv 8·16 = 128, o 64, up_gate 256, down 128, 2 RMSNorms 16 -> 592; 2 layers 1184
    # embed 10·8 = 80, lm_head 80, final norm 8 -> 1184 + 168 = 1352
    assert m.params_total == 1352
    assert m.params_active == 1352
    assert tiny(tie_embeddings=True).params_total == 1352 - 80
    assert tiny(lm_head_bias=True).params_total == 1352 + 10  # a bias of vocab_size on the LM head
    assert tiny(norm="layernorm").params_total == 1352 + (2 * 2 + 1) * 8  # every norm gains a bias of d
    assert tiny(learned_positions=16).params_total == 1352 + 16 * 8


def test_moe_model_active_vs_total():
    m = tiny(moe())
    # layer total: attn 192 + moe 416 + norms 16 = 624 (·2 = 1248); active: 192 + 224 + 16 = 432 (·2 = 864)
    assert m.params_total == 1248 + 168
    assert m.params_active == 864 + 168
    assert m.is_moe


def test_kv_bytes_per_token():
    assert kv_bytes_per_token(tiny(), "bf16") == 2 * 8 * 2  # 2 layers · 8 elements · 2 bytes = 32
    assert kv_bytes_per_token(tiny(), "fp8") == 16


def test_weight_format_for():
    q = weight_format("int4", 128)
    m = tiny(quantization=q, weight_dtype="fp16")
    assert m.weight_format_for("attn") == q
    assert m.weight_format_for("embed").dtype == "fp16"  # embeddings, LM head, router stay native
    assert m.weight_format_for("router").dtype == "fp16"
    assert m.weight_format_for("ffn", override="fp8").dtype == "fp8"
    assert m.weight_format_for("lm_head", override="fp8").dtype == "fp16"
    only_experts = tiny(quantization=q, quantized_families=("experts",))
    assert only_experts.weight_format_for("attn").dtype == "bf16"
    assert only_experts.weight_format_for("experts") == q


@pytest.mark.parametrize("kind, kv, expected", [("mha", 4, 1), ("gqa", 2, 2), ("mqa", 1, 4)])
def test_group_size(kind, kv, expected):
    assert AttentionSpec(kind, 4, kv, 2, 2).group_size == expected


@pytest.mark.parametrize("make", [lambda: AttentionSpec("mla2", 4, 2, 2, 2), lambda: FfnSpec("sparse", 16, True, "silu")])
def test_unknown_kinds_are_refused(make):
    with pytest.raises(ValueError, match="kind must be one of"):
        make()
