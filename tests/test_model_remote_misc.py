"""Remote-code families vLLM serves whose modeling code lives on the Hub: Phi-3-small (refused: block-sparse attention),
Orion (LayerNorm with bias), MiMo-7B (Qwen2's attention, MTP layers), XVERSE (dense and MoE), Solar Pro (backbone skip
connections), Tele-FLM (muP multipliers), PLaMo-3 (four norms, q/k norms, a window on all but every
sliding_window_pattern-th layer); PLaMo-2 stays refused (hybrid Mamba).

Every expected count is hand arithmetic in the comment beside it, from the family's modeling code (vLLM's
vllm/model_executor/models/<family>.py, or the Hub's modeling_*.py where a public copy was found), checked against the
published size.

Fixtures (tests/fixtures/configs):
- phi3_small_8k_instruct.json: microsoft/Phi-3-small-8k-instruct config.json as a public collection of hub configs
  copies it verbatim (beside Phi-3-medium's, Yi-34B's, ...), "attention_bias": false included; its block-sparse keys
  (blocksparse_block_size 64, num_local_blocks 16, vert_stride 8, homo_head_pattern false,
  dense_attention_every_n_layers 2) are the values a public Go port's test asserts of its testdata/phi3small.json, and
  its dimensions those of a Swift port's "realConfigJSON". Refused: the reference count below is for the record.
- mimo_7b_base.json: XiaomiMiMo/MiMo-7B-Base config.json as NVIDIA's aiconfigurator bundles it
  (aic-core/src/aiconfigurator_core/model_configs/XiaomiMiMo--MiMo-7B-Base_config.json; its copy leaves out auto_map and
  the token ids). A config.json in a public snapshot of XiaomiMiMo/MiMo states the same values but for
  num_nextn_predict_layers 2, a change its own modeling_mimo.py comments describe ("the core task is changing
  num_nextn_predict_layers"): the bundled 1 is kept. Xiaomi: "MiMo-7B", one MTP layer used for speculative decoding.
- xverse_moe_a4_2b.json: xverse/XVERSE-MoE-A4.2B config.json as a public expert-offloading project copies it
  (configs/xversemoe_config.json), its own runtime keys (device, replaceScoreRatio, window_size, if_usecpu,
  if_replace, if_prefetch) left out. XVERSE's README: "25.8B total, 4.2B activated", 28 layers, d_model 2560,
  32 heads, d_ff 1728, 64 non-shared experts + 2 shared, top-6; a published MoE survey table: 25.78B / 4.23B.
- orion_14b_base.json: OrionStarAI/Orion-14B-Base config.json, assembled from published values (no verbatim copy of
  the file was found): the key names of OrionConfig (vLLM's copy of the Hub's configuration_orion.py) and the values a
  public NeuronX port of Orion reads from config.json with these as its fallbacks (hidden 5120, 40 heads, 40 layers,
  40 KV heads, vocabulary 84,608, 4096 positions, rope_theta 10,000, rms_norm_eps 1e-5, intermediate 15,360, silu,
  untied, token ids 0 / 1 / 2). OrionStar: "Orion-14B", "14 billion parameters".

Not sourced (no published config.json found in the sources searched): XVERSE-13B / -65B (dense), Solar Pro (only its
64 layers and skip lists, from SGLang's test of upstage/solar-pro-preview-instruct), Tele-FLM (only its model_type
"TeleFLM" and muP keys, from a public port), PLaMo-3 (only the 2B's 24 layers, 4 KV heads of 128, width 2560). Their
readings are checked on small configs by hand.
"""

import json
import math
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.errors import UnsupportedArchitectureError
from llm_roofline.memory import kv_bytes_per_token

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"


def raw(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


# d 64, 4 heads of 16, 2 KV heads: q, o 2 x 64 x 64 + k, v 2 x 64 x 32 = 12,288; gated MLP 3 x 64 x 128 = 24,576;
# vocabulary 100 (embedding 6,400)
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 256, "rms_norm_eps": 1e-5}


def runs(model) -> None:
    """estimate, its memory and serve run on the model."""
    est = lr.estimate(model, "h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    assert est.ttft_s > 0 and est.tpot_s > 0 and est.memory.weight_bytes > 0
    assert lr.serve(model, "h100-sxm", prompt_len=1024, gen_len=128, concurrency=4).tpot_s > 0


# ------------------------------------------------------------------------------ Phi-3-small (refused)
def test_phi3_small_block_sparse_attention_is_refused_by_name():
    # Read before as an unknown type: refused for a missing intermediate_size (it is ff_intermediate_size), not for
    # what it is. Reference count, for the record (modeling_phi3_small.py: query_key_value and dense with bias,
    # up_proj 2 x ff_intermediate_size with bias, down_proj with bias, LayerNorms with bias, tied LM head):
    #   qkv 4096 x 6144 + 6144 = 25,171,968; dense 4096² + 4096 = 16,781,312; up 4096 x 28,672 + 28,672 =
    #   117,469,184; down 14,336 x 4096 + 4096 = 58,724,352; 2 LayerNorms 16,384 -> 218,163,200 a layer; 32 layers
    #   6,981,222,400 + embedding 100,352 x 4096 = 411,041,792 + final LayerNorm 8192 = 7,392,272,384 ("7B", 7.39B).
    # Half its layers attend to local blocks plus every 8th block, per head: no window, no top-k the graph has.
    with pytest.raises(UnsupportedArchitectureError, match="model_type='phi3small': Phi-3-small's block-sparse"):
        lr.load_model(FIX / "phi3_small_8k_instruct.json")
    with pytest.raises(UnsupportedArchitectureError, match="'blocksparse_vert_stride'.*block-sparse"):
        lr.load_model({**raw("phi3_small_8k_instruct"), "model_type": "phi3_small_port"})


def test_plamo2_stays_refused_as_a_mamba_hybrid():
    # Plamo2ForCausalLM (vLLM plamo2.py): Mamba-2 mixers with their own dt / B / C norms beside attention layers,
    # laid out by mamba_step; hybrid.py's Mamba-2 readers do not build those norms or that layout
    with pytest.raises(UnsupportedArchitectureError, match="model_type='plamo2': hybrid attention \\+ state-space"):
        lr.load_model({**TINY, "model_type": "plamo2", "mamba_step": 2, "mamba_d_state": 64})


# ------------------------------------------------------------------------------ MiMo-7B
def test_mimo_7b_qwen2_attention_and_its_mtp_layer():
    m = lr.load_model(FIX / "mimo_7b_base.json")
    # Qwen2's layer (vLLM mimo.py: Qwen2Model; q/k/v with bias, o_proj without, whatever attention_bias says): d 4096,
    # 32 heads of 128, 8 KV heads. q 4096² + 4096 = 16,781,312; k, v 2 x (4096 x 1024 + 1024) = 8,390,656; o 4096² =
    # 16,777,216; MLP 3 x 4096 x 11,008 = 135,266,304; 2 RMSNorms 8192 -> 177,223,680 a layer; 36 layers
    # 6,380,052,480; untied embedding and LM head 2 x 151,680 x 4096 = 1,242,562,560; final norm 4096
    assert m.params_total == 36 * 177_223_680 + 1_242_562_560 + 4096 == 7_622_619_136
    # before: read as an unknown type, attention_bias true put a bias on o_proj too (36 x 4096 more)
    # the MTP layer (modeling_mimo.py MiMoMTPLayers: 5 RMSNorms, input_proj 8192 x 4096, a Qwen2 attention and MLP:
    # 20,480 + 33,554,432 + 41,949,184 + 135,266,304 = 210,790,400) is skipped by vLLM's main model
    # (hf_to_vllm_mapper drops model.mtp_layers.) and loaded by its drafter: not counted, as DeepSeek-V3's; with it
    # the checkpoint holds 7,833,409,536 ("7B")
    assert any("num_nextn_predict_layers=1" in a and "not counted" in a for a in m.assumptions)
    assert not any("not one the parser knows" in a for a in m.assumptions)
    g = m.layer_groups[0]
    assert (g.count, g.attention.qkv_bias, g.attention.o_bias, g.attention.sliding_window) == (36, True, False, None)
    # use_sliding_window false: its sliding_window 32,768 is off. K and V: 36 x 8 x 128 x 2 x 2 B = 147,456 B a token
    assert kv_bytes_per_token(m, "bf16") == 147_456
    runs(m)


# ------------------------------------------------------------------------------ XVERSE
def test_xverse_moe_a4_2b_shared_and_routed_experts():
    m = lr.load_model(FIX / "xverse_moe_a4_2b.json")
    # d 2560, 32 heads of 80, no num_key_value_heads (XverseConfig: = heads). Attention 4 x 2560² = 26,214,400;
    # 64 experts + 2 shared of 1728, each 3 x 2560 x 1728 = 13,271,040 -> 66 x = 875,888,640; router 64 x 2560 =
    # 163,840; 2 norms 5120 -> 902,272,000 a layer, every layer MoE; 28 layers 25,263,616,000; untied embedding and
    # LM head 2 x 100,534 x 2560 = 514,734,080; final norm 2560
    assert m.params_total == 28 * 902_272_000 + 514_734_080 + 2560 == 25_778_352_640  # XVERSE: 25.8B (25.78B)
    # active: 6 routed + 2 shared experts 8 x 13,271,040 = 106,168,320 + attention, router, norms -> 132,551,680
    assert m.params_active == 28 * 132_551_680 + 514_734_080 + 2560 == 4_226_183_680  # XVERSE: 4.2B (4.23B)
    # read right before too (the generic key names), but as an unknown type with its MLP's gating guessed
    assert not any("not one the parser knows" in a or "MLP taken as gated" in a for a in m.assumptions)
    g = m.layer_groups[0]
    assert (g.ffn.n_experts, g.ffn.top_k, g.ffn.d_expert, g.ffn.d_shared, g.ffn.router_bias) == (64, 6, 1728, 3456,
                                                                                                False)
    # K and V of 32 heads of 80: 28 x 32 x 80 x 2 x 2 B = 286,720 B a token
    assert kv_bytes_per_token(m, "bf16") == 286_720
    runs(m)


def test_xverse_without_experts_is_dense():
    # XVERSE-13B / -65B (dense XverseForCausalLM, no MoE keys; vLLM runs them as Llama): 2 x (12,288 + 24,576 + 128)
    # + untied 2 x 6,400 + final norm 64
    m = lr.load_model({**TINY, "model_type": "xverse"})
    assert m.params_total == 2 * 36_992 + 12_800 + 64
    assert [g.ffn.kind for g in m.layer_groups] == ["dense"]


# ------------------------------------------------------------------------------ Orion
def test_orion_14b_layernorm_with_bias():
    m = lr.load_model(FIX / "orion_14b_base.json")
    # Llama's block with nn.LayerNorm (weight and bias) for both block norms and the final one (vLLM orion.py), no
    # attention or MLP bias: d 5120, 40 heads of 128 (MHA). Attention 4 x 5120² = 104,857,600; MLP 3 x 5120 x 15,360
    # = 235,929,600; 2 LayerNorms 2 x 2 x 5120 = 20,480 -> 340,807,680 a layer; 40 layers 13,632,307,200; untied
    # embedding and LM head 2 x 84,608 x 5120 = 866,385,920; final LayerNorm 10,240
    assert m.params_total == 40 * 340_807_680 + 866_385_920 + 10_240 == 14_498_703_360  # OrionStar: "14B"
    # before: rms_norm_eps read as RMSNorm, the 81 norms' biases (81 x 5120 = 414,720) missing
    assert m.norm == "layernorm"
    # K and V of 40 heads: 40 x 40 x 128 x 2 x 2 B = 819,200 B a token
    assert kv_bytes_per_token(m, "bf16") == 819_200
    runs(m)


# ------------------------------------------------------------------------------ Solar Pro (not sourced: by hand)
_SOLAR = {**TINY, "model_type": "solar", "num_hidden_layers": 64, "bskcn_1": [12, 20, 32, 44], "bskcn_2": [20, 32],
          "bskcn_3": [16, 24, 36, 48], "bskcn_4": [28, 40], "bskcn_tv": [0.9, 0.8]}


def test_solar_skip_connections_and_window():
    # upstage/solar-pro-preview-instruct's skip lists (SGLang's test of it): 64 layers; Llama's block (vLLM solar.py);
    # SolarConfig's sliding_window 2047 when the file states none, on every layer as vLLM applies a model's window.
    # 64 x 36,992 + untied 12,800 + 64
    m = lr.load_model(_SOLAR)
    assert m.params_total == 64 * 36_992 + 12_800 + 64
    assert [(g.count, g.attention.sliding_window) for g in m.layer_groups] == [(64, 2047)]
    assert any("6 layers (bskcn_3, bskcn_4) blend" in a for a in m.assumptions)
    runs(m)


# ------------------------------------------------------------------------------ Tele-FLM (not sourced: by hand)
def test_teleflm_is_llama_with_mup_multipliers():
    m = lr.load_model({**TINY, "model_type": "TeleFLM", "use_mup": True, "input_mult": 1.0, "output_mult": 1.0,
                       "mup_scale_factor": 4.0})
    assert m.params_total == 2 * 36_992 + 12_800 + 64  # LlamaForCausalLM's, untied
    assert any("Tele-FLM use_mup" in a for a in m.assumptions)
    assert not any("not one the parser knows" in a for a in m.assumptions)


# ------------------------------------------------------------------------------ PLaMo-3 (not sourced: by hand)
def test_plamo3_four_norms_qk_norms_and_window_pattern():
    # Plamo3DecoderLayer (vLLM plamo3.py): pre/post mixer and MLP RMSNorms (4 x 64 = 256), q/k RMSNorms of head_dim
    # (2 x 16): 12,288 + 32 + 24,576 + 256 = 37,152 a layer; 8 layers; tied embedding 6,400 (Plamo3Config default);
    # final norm 64
    m = lr.load_model({**TINY, "model_type": "plamo3", "num_hidden_layers": 8, "window_size": 32,
                       "sliding_window_pattern": 4})
    assert m.params_total == 8 * 37_152 + 6_400 + 64 == 303_680
    # is_full_attn: layer i is full where (i + 1) % 4 == 0 (layers 3 and 7), the others over window_size
    assert [(g.count, g.norms, g.attention.qk_norm, g.attention.sliding_window) for g in m.layer_groups] == \
        [(6, 4, True, 32), (2, 4, True, None)]
    # K and V of 2 heads of 16 in 8 layers: 8 x 2 x 16 x 2 x 2 B = 1,024 B a token (uncapped)
    assert kv_bytes_per_token(m, "bf16") == 1_024
    # an older config's sliding_window (a per-layer list, or an integer) is Plamo3Config's window_size
    legacy = {**TINY, "model_type": "plamo3", "num_hidden_layers": 8, "sliding_window_pattern": 4}
    for window in ([32, 32, 32, None] * 2, 32):
        assert lr.load_model({**legacy, "sliding_window": window}).layer_groups == m.layer_groups
    runs(m)


# ------------------------------------------------------------------------------ hostile values
@pytest.mark.parametrize("cfg, error", [
    ({**raw("mimo_7b_base"), "num_nextn_predict_layers": "1"}, "num_nextn_predict_layers must be an integer"),
    ({**raw("mimo_7b_base"), "num_key_value_heads": -8}, "num_key_value_heads must be positive"),
    ({**raw("mimo_7b_base"), "head_dim": math.nan}, "head_dim must be an integer"),
    ({**raw("xverse_moe_a4_2b"), "num_experts": "64"}, "num_experts must be an integer"),
    ({**raw("xverse_moe_a4_2b"), "moe_top_k": 65}, "exceeds the number of experts"),
    ({**raw("xverse_moe_a4_2b"), "num_shared_experts": -2}, "num_shared_experts must be non-negative"),
    ({**raw("xverse_moe_a4_2b"), "num_experts": 10 ** 30}, "exceeds the physical bound"),
    ({**raw("orion_14b_base"), "num_key_value_heads": 3}, "not divisible"),
    ({**raw("orion_14b_base"), "hidden_size": None}, "no hidden_size"),
    ({**_SOLAR, "bskcn_1": "12"}, "bskcn_1 must be a list of integers"),
    ({**_SOLAR, "bskcn_3": [16, 64]}, "bskcn_3 lists layer 64, past the model's 64 layers"),
    ({**_SOLAR, "bskcn_1": [None]}, "bskcn_1\\[0\\] must be an integer"),
    ({**_SOLAR, "bskcn_1": [30]}, "bskcn_3 blends at layer 16 a state bskcn_1 keeps no earlier"),
    ({**_SOLAR, "bskcn_tv": [0.9, math.nan]}, "bskcn_tv must be two blend weights"),
    ({**_SOLAR, "bskcn_tv": 0.8}, "bskcn_tv must be a list"),
    ({**TINY, "model_type": "TeleFLM", "use_mup": "yes"}, "use_mup must be true or false"),
    ({**TINY, "model_type": "TeleFLM", "use_mup": True, "input_mult": 1, "output_mult": 1, "mup_scale_factor": 0},
     "mup_scale_factor must be a finite nonzero number"),
    ({**TINY, "model_type": "TeleFLM", "use_mup": True, "input_mult": math.inf}, "input_mult must be a finite"),
    ({**TINY, "model_type": "plamo3", "num_hidden_layers": 8, "sliding_window": [32, "x"]},
     "sliding_window\\[1\\] must be an integer"),
    ({**TINY, "model_type": "plamo3", "num_hidden_layers": 8, "sliding_window": -1}, "sliding_window must be positive"),
    ({**TINY, "model_type": "plamo3", "num_hidden_layers": 8, "window_size": True}, "window_size must be an integer"),
    ({**TINY, "model_type": "plamo3", "num_hidden_layers": 8, "sliding_window_pattern": 0},
     "sliding_window_pattern must be positive"),
])
def test_hostile_values_name_the_key(cfg, error):
    with pytest.raises(lr.RooflineError, match=error):
        lr.load_model(cfg)


def test_plamo3_windows_of_several_sizes_are_refused():
    # Plamo3Config keeps one window_size: a list of differing windows would be ignored by it, silently
    with pytest.raises(UnsupportedArchitectureError, match="sliding_window lists windows of 2 sizes"):
        lr.load_model({**TINY, "model_type": "plamo3", "num_hidden_layers": 8, "sliding_window": [32, 64, None]})
