"""Remote-code families vLLM serves, read exactly or refused by name: Ouro (a looped stack).

Every expected count is hand arithmetic from the family's own modeling code, in the comment beside it, checked against
the published total named there. Before this reader, the generic path ("Llama-style by the usual key names") read Ouro
as one pass of its stack (1,434,552,320 parameters, 196,608 KV bytes a token: a quarter of the compute and KV).

Fixtures (tests/fixtures/configs) and where their values come from:
- ouro_1_4b.json: ByteDance/Ouro-1.4B, the values of a public port's "Native configuration for the first supported
  checkpoint, ByteDance/Ouro-1.4B" (adapted from the hub's configuration_ouro.py at revision 574fa66c; its dataclass
  defaults are the checkpoint's: vocab 49,152, hidden 2048, intermediate 5632, 24 layers, 16 / 16 heads of 128, silu,
  context 65,536, rms_norm_eps 1e-6, rope_theta 1e6, total_ut_steps 4, early_exit_threshold 1.0, untied, no sliding
  window); a second public project checks the same hidden / intermediate / layers / total_ut_steps / vocab against the
  loaded config. Not a verbatim copy of the file. The modeling code: vLLM's models/ouro.py (one Attention per layer and
  ut step, sandwich RMSNorms input_layernorm(_2) / post_attention_layernorm(_2), early_exit_gate Linear(d, 1, bias)).
  The model card: "1.4B"; Ouro-2.6B: the same layers, 48 of them (a public report: "48 shared physical decoder layers
  applied over four recurrent steps").
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import llm_roofline as lr
from llm_roofline.errors import ModelConfigError, RooflineError
from llm_roofline.memory import kv_bytes_per_token, weight_bytes

FIX = Path(__file__).resolve().parent / "fixtures" / "configs"
NAMES = ("ouro_1_4b",)


def raw(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def load(name: str, **change) -> lr.ModelSpec:
    return lr.load_model({**raw(name), **change})


def one_matrix(spec: lr.ModelSpec, name: str):
    g = spec.layer_groups[0]
    return next(m for m in g.mixing_matrices(spec.d_model) + g.ffn.weight_matrices(spec.d_model) if m.name == name)


# ------------------------------------------------------------------------------ Ouro: the stack run 4 times
# d 2048, 16 heads of 128 (MHA), no bias: q, k, v, o 4 x 2048² = 16,777,216; MLP 3 x 2048 x 5632 = 34,603,008;
# 4 RMSNorms 8,192 -> 51,388,416 a layer, x 24 = 1,233,321,984; untied embed + head 2 x 49,152 x 2048 = 201,326,592;
# final norm 2048; early_exit_gate 2048 + 1 -> 1,434,652,673 (Ouro: "1.4B")
OURO_14 = 1_434_652_673


def test_ouro_1_4b_counts_its_layers_once_and_runs_them_four_times():
    m = lr.load_model(FIX / "ouro_1_4b.json")
    assert m.params_total == OURO_14
    assert weight_bytes(m, "bf16") == 2 * OURO_14
    g, = m.layer_groups
    assert (g.count, g.copies, g.loops, g.norms) == (96, 24, 4, 4) and m.n_layers == 96
    # KV: one cache per layer and ut step (vLLM: an Attention per step): 96 x 2 (K, V) x 16 heads x 128 x 2 B
    assert kv_bytes_per_token(m, "bf16") == 96 * 2 * 16 * 128 * 2 == 786_432  # read as a plain decoder: 196,608
    # Ouro-2.6B: 48 of the same layers: 48 x 51,388,416 + 201,326,592 + 2048 + 2049
    big = load("ouro_1_4b", num_hidden_layers=48)
    assert big.params_total == 48 * 51_388_416 + 201_326_592 + 2048 + 2049 == 2_667_974_657  # card: "2.6B"
    assert kv_bytes_per_token(big, "bf16") == 192 * 2 * 16 * 128 * 2


def test_ouro_prices_every_run_and_stores_the_weights_once():
    """The looped model's steps cost what 96 plain layers of the same shape cost (every run reads the weights; the
    stack is far larger than any cache); its resident weights are the 24 layers'."""
    kw = dict(chip="h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    looped = lr.estimate(lr.load_model(FIX / "ouro_1_4b.json"), **kw)
    flat = lr.estimate(load("ouro_1_4b", num_hidden_layers=96, total_ut_steps=1), **kw)
    assert (looped.ttft_s, looped.tpot_s) == (flat.ttft_s, flat.tpot_s)
    # per chip: the blocks' and embeddings' bytes (the exit gate's 2049 sit outside the graph), bf16
    assert looped.memory.per_chip_weight_bytes == 2 * (OURO_14 - 2049) == 2_869_301_248
    assert flat.memory.per_chip_weight_bytes > 3.5 * looped.memory.per_chip_weight_bytes
    assert looped.memory.kv_cache_bytes == flat.memory.kv_cache_bytes


@pytest.mark.parametrize("change, error", [
    ({"total_ut_steps": 0}, "total_ut_steps must be positive"),
    ({"total_ut_steps": None}, "total_ut_steps must be positive"),
    ({"total_ut_steps": "4"}, "total_ut_steps must be an integer"),
    ({"total_ut_steps": 2.5}, "total_ut_steps must be an integer"),
    ({"total_ut_steps": math.nan}, "total_ut_steps must be an integer"),
    ({"total_ut_steps": 10 ** 30}, "total_ut_steps"),
    ({"total_ut_steps": 5000}, "exceeds the physical bound of 100,000 layer runs"),
    ({"early_exit_threshold": "1"}, "early_exit_threshold must be a number in"),
    ({"early_exit_threshold": 1.5}, "early_exit_threshold must be a number in"),
    ({"early_exit_threshold": math.nan}, "early_exit_threshold must be a number in"),
])
def test_ouro_hostile_values_name_the_key(change, error):
    with pytest.raises(ModelConfigError, match=error):
        load("ouro_1_4b", **change)


def test_ouro_defaults_and_early_exit_note():
    cfg = raw("ouro_1_4b")
    del cfg["total_ut_steps"]  # vLLM's getattr(config, "total_ut_steps", 4)
    assert lr.load_model(cfg).params_total == OURO_14 and lr.load_model(cfg).n_layers == 96
    m = load("ouro_1_4b", early_exit_threshold=0.5)
    assert any("may leave the loop early" in a for a in m.assumptions)


# ------------------------------------------------------------------------------ every fixture runs end to end
@pytest.mark.parametrize("name", NAMES)
def test_estimate_memory_and_serve_run_on_each_fixture(name):
    path = FIX / f"{name}.json"
    est = lr.estimate(path, chip="h100-sxm", batch=8, prompt_len=1024, gen_len=128)
    assert est.ttft_s > 0 and est.tpot_s > 0 and est.memory.weight_bytes > 0
    assert lr.estimate(path, chip="h100-sxm", batch=8, prompt_len=1024, gen_len=16, tp=4).tpot_s > 0
    s = lr.serve(path, "h100-sxm", prompt_len=512, gen_len=64, concurrency=8)
    assert s.output_tokens_per_s > 0 and s.ttft_s > 0


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", ["x", -3, math.nan, 10 ** 30, None, [4], {"a": 1}, True])
def test_hostile_values_of_read_keys_raise_the_project_error(name, value):
    cfg = raw(name)
    for key in [k for k in cfg if k not in ("architectures", "auto_map", "model_type")]:
        try:
            lr.load_model({**cfg, key: value})
        except RooflineError:
            pass
