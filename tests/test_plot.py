"""Charts: each plot function renders with Agg to a file AND returns the data it drew; the tests check the
data (roofs, ridges, one point per op, monotone frontier, memory stacks), not pixels. Tiny models keep it fast."""

import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.estimate import estimate
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec
from llm_roofline.report import plot

H100 = lr.load_chip("h100")  # bf16 989.4e12 FLOP/s, 3.35e12 B/s -> ridge 295.3 FLOP/B
V5E = lr.load_chip("tpu-v5e")  # bf16 1.97e14, 8.19e11 B/s -> ridge 240.5


def tiny(layers=2, d=256, h=8, kv=2, hd=32, f=768, vocab=512, moe=False):
    attn = AttentionSpec("gqa", h, kv, hd, hd)
    ffn = FfnSpec("moe", None, True, "silu", n_experts=4, top_k=2, d_expert=f) if moe else FfnSpec("dense", f, True, "silu")
    return ModelSpec("tiny-moe" if moe else "tiny", d, vocab, (LayerGroup("moe" if moe else "dense", layers, attn, ffn),),
                     max_context=4096)


PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def ests():
    return [estimate(tiny(), c, batch=4, prompt_len=128, gen_len=16) for c in (H100, V5E)]


def _png(path):
    return path.read_bytes()[:8] == PNG


def test_op_category_covers_graph_names():
    cat = plot.op_category
    assert cat("attn.core") == cat("attn.rope") == cat("attn.kv_write") == "attention"
    assert cat("attn.qkv_proj") == cat("attn.o_proj") == cat("attn.kv_b_proj") == "projections"
    assert cat("ffn.up_gate") == cat("ffn.experts.down") == cat("ffn.router") == cat("ffn.shared.up_gate") == "MLP/experts"
    assert cat("lm_head") == "LM head"
    assert cat("comm.all_reduce.attn", "collective") == "communication"
    assert cat("embed") == cat("norm.attn") == cat("residual") == "other"
    assert plot.short_name("ffn.experts.up_gate") == "exp.up_gate" and plot.short_name("attn.core") == "attn"


def test_roofline_points_under_the_roof_and_ridge(ests, tmp_path):
    out = tmp_path / "roof.png"
    res = plot.plot_roofline(ests, out)
    res.close()
    assert _png(out)
    d = res.data
    # ridge = peak / bandwidth: H100 989.4e12 / 3.35e12 = 295.34; v5e 1.97e14 / 8.19e11 = 240.54
    assert d["roofs"]["h100-sxm"]["ridge_flops_per_byte"] == pytest.approx(989.4e12 / 3.35e12, rel=1e-12)
    assert d["roofs"]["tpu-v5e"]["ridge_flops_per_byte"] == pytest.approx(1.97e14 / 8.19e11, rel=1e-12)
    for p in d["points"]:
        roof = d["roofs"][p["chip"]]
        bound = min(roof["peak_flops_per_s"], p["intensity"] * roof["hbm_bytes_per_s"])
        assert p["achieved_flops_per_s"] <= bound * (1 + 1e-9), p
        assert p["achieved_flops_per_s"] > 0 and math.isfinite(p["intensity"])
    # ideal roofline: every op sits ON the roof (compute-bound at the peak, memory-bound on the slope)
    for p in d["points"]:
        roof = d["roofs"][p["chip"]]
        bound = min(roof["peak_flops_per_s"], p["intensity"] * roof["hbm_bytes_per_s"])
        assert p["achieved_flops_per_s"] == pytest.approx(bound, rel=1e-9)


def test_roofline_one_point_per_op_and_phase(ests):
    res = plot.plot_roofline(ests[0])
    res.close()
    df = ests[0].ops
    expected = {(r.phase, r.name) for r in df.itertuples() if r.flops > 0}
    got = [(p["phase"], p["name"]) for p in res.data["points"]]
    assert len(got) == len(set(got)) == len(expected)  # the two residual adds of a layer are one point
    assert set(got) == expected
    assert {p["phase"] for p in res.data["points"]} == {"prefill", "decode"}
    # one point by hand: prefill ffn.up_gate, achieved = its FLOPs / its time
    row = df[(df.phase == "prefill") & (df.name == "ffn.up_gate")].iloc[0]
    pt = next(p for p in res.data["points"] if p["phase"] == "prefill" and p["name"] == "ffn.up_gate")
    assert pt["achieved_flops_per_s"] == pytest.approx(row.flops / row.t_s, rel=1e-12)
    assert pt["intensity"] == pytest.approx(row.flops / row.bytes, rel=1e-12)
    # zero-FLOP ops are listed, not dropped
    zero = res.data["zero_flop_ops"]["h100-sxm"]
    assert "embed (prefill)" in zero and "attn.kv_write (decode)" in zero


def test_roofline_lists_collectives_under_tensor_parallelism(tmp_path):
    est = estimate(tiny(), H100, batch=4, prompt_len=128, gen_len=8, tp=2)
    res = plot.plot_roofline(est, tmp_path / "r.png")
    res.close()
    zero = res.data["zero_flop_ops"]["h100-sxm"]
    assert any(z.startswith("comm.all_reduce") for z in zero)
    assert not any(p["name"].startswith("comm.") for p in res.data["points"])


def test_breakdown_stacks_sum_to_phase_times(ests, tmp_path):
    res = plot.plot_breakdown(ests, tmp_path / "b.png")
    res.close()
    assert _png(tmp_path / "b.png")
    for est in ests:
        bd = res.data["breakdown"][est.chip]
        assert set(bd["prefill"]) == set(plot.CATEGORIES)
        assert sum(bd["prefill"].values()) == pytest.approx(est.prefill.t_s, rel=1e-12)
        assert sum(bd["decode"].values()) == pytest.approx(est.decode.t_s, rel=1e-12)
        assert sum(bd["request"].values()) == pytest.approx(est.e2e_s, rel=1e-9)  # TTFT + 15 steps
        assert bd["prefill"]["communication"] == 0.0  # tp = 1
        assert bd["prefill"]["MLP/experts"] > bd["prefill"]["LM head"] > 0


def _chip_with_max_batch(spec, prompt_len, gen_len, lo, hi):
    """An H100 with just enough HBM that the largest batch that fits lies in [lo, hi] (found by search, so the
    test does not hard-code the memory model's activation or KV accounting)."""
    a, b = 1e6, 1e10  # max_batch grows with HBM: bisect in log space
    for _ in range(40):
        chip = replace(H100, hbm_bytes=math.sqrt(a * b))
        mb = estimate(spec, chip, batch=1, prompt_len=prompt_len, gen_len=gen_len).memory.max_batch
        if lo <= mb <= hi:
            return chip
        a, b = (chip.hbm_bytes, b) if mb < lo else (a, chip.hbm_bytes)
    raise AssertionError("no HBM size gives a max batch in range")


def test_frontier_monotone_and_memory_limit(tmp_path):
    spec = tiny()
    small = _chip_with_max_batch(spec, prompt_len=64, gen_len=8, lo=10, hi=40)  # the limit lands inside the sweep
    res = plot.plot_frontier(spec, [small], prompt_lens=[64, 256], gen_len=8, batches=[1, 2, 4, 8, 16, 32, 64],
                             path=tmp_path / "f.png")
    res.close()
    assert _png(tmp_path / "f.png")
    curves = res.data["curves"]["h100-sxm"]
    assert set(curves) == {64, 256}
    for p, c in curves.items():
        b = c["batch"]
        assert np.all(np.diff(b) > 0)
        assert np.all(np.diff(c["throughput_tokens_per_s_per_chip"]) >= 0)  # more batch never lowers throughput
        assert np.all(np.diff(c["tpot_s"]) >= 0)
        mb = c["max_batch"]
        assert 0 < mb < 64
        assert mb in b  # the curve carries the largest batch that fits
        np.testing.assert_array_equal(c["fits"], b <= mb)
        assert (~c["fits"]).sum() <= 2  # cut two points past the limit
    # the longer prompt holds more KV per sequence, so fewer sequences fit
    assert curves[256]["max_batch"] < curves[64]["max_batch"]
    # one point checked against estimate(): throughput per chip = batch * gen / e2e
    e = estimate(spec, small, batch=4, prompt_len=64, gen_len=8)
    i = int(np.flatnonzero(curves[64]["batch"] == 4)[0])
    assert curves[64]["throughput_tokens_per_s_per_chip"][i] == pytest.approx(4 * 8 / e.e2e_s, rel=1e-9)
    assert curves[64]["tpot_s"][i] == pytest.approx(e.tpot_s, rel=1e-9)


def test_memory_stack_sums_to_per_chip_bytes(tmp_path):
    spec = tiny()
    small = replace(V5E, hbm_bytes=40e6)
    res = plot.plot_memory(spec, [H100, small], prompt_len=128, gen_len=16, batches=[1, 4, 16, 64],
                           path=tmp_path / "m.png")
    res.close()
    assert _png(tmp_path / "m.png")
    for name, chip in (("h100-sxm", H100), ("tpu-v5e", small)):
        d = res.data[name]
        np.testing.assert_allclose(d["weights"] + d["kv_cache"] + d["activations"], d["per_chip_bytes"], rtol=1e-12)
        assert d["capacity_bytes"] == chip.hbm_bytes
        assert np.all(np.diff(d["kv_cache"]) > 0)  # KV grows with the batch
        assert np.ptp(d["weights"]) == 0  # weights do not
        # the same numbers as estimate() at one batch
        e = estimate(spec, chip, batch=16, prompt_len=128, gen_len=16)
        i = list(d["batch"]).index(16)
        assert d["per_chip_bytes"][i] == pytest.approx(e.memory.per_chip_bytes, rel=1e-12)
        assert d["kv_cache"][i] == pytest.approx(e.memory.per_chip_kv_cache_bytes, rel=1e-12)
        assert d["max_batch"] == e.memory.max_batch


def test_phase_split_shares(tmp_path):
    ests = [estimate(tiny(), H100, batch=1, prompt_len=p, gen_len=8) for p in (64, 1024)]
    res = plot.plot_phase_split(ests, tmp_path / "p.png")
    res.close()
    for phase in ("prefill", "decode"):
        tot = sum(res.data["shares"][phase].values())
        np.testing.assert_allclose(tot, 1.0, rtol=1e-12)
    # attention's share of prefill grows with the prompt (quadratic vs linear work)
    att = res.data["shares"]["prefill"]["attention"]
    assert att[1] > att[0]


def test_import_does_not_load_matplotlib():
    code = ("import sys, llm_roofline, llm_roofline.report.plot, llm_roofline.report.export, "
            "llm_roofline.report.markdown; assert 'matplotlib' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
