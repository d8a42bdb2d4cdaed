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
    return [estimate(tiny(), c, batch=4, prompt_len=128, gen_len=16, efficiency="ideal") for c in (H100, V5E)]


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
    est = estimate(tiny(), H100, batch=4, prompt_len=128, gen_len=8, tp=2, efficiency="ideal")
    res = plot.plot_roofline(est, tmp_path / "r.png")
    res.close()
    zero = res.data["zero_flop_ops"]["h100-sxm"]
    assert any(z.startswith("comm.all_reduce") for z in zero)
    assert not any(p["name"].startswith("comm.") for p in res.data["points"])


# The tiny model's op names and their chart category, written out here (not read from plot.op_category):
# attention core and per-head work, attention projections, everything ffn.*, the LM head, collectives, the rest.
CATEGORY_BY_NAME = {
    "attn.core": "attention", "attn.rope": "attention", "attn.kv_write": "attention",
    "attn.qkv_proj": "projections", "attn.o_proj": "projections",
    "ffn.up_gate": "MLP/experts", "ffn.act": "MLP/experts", "ffn.down": "MLP/experts",
    "lm_head": "LM head",
    "comm.all_reduce.attn": "communication", "comm.all_reduce.ffn": "communication",
    "comm.all_reduce.embed": "communication", "comm.all_gather.lm_head": "communication",
    "embed": "other", "norm.attn": "other", "norm.ffn": "other", "norm.final": "other", "residual": "other",
}

# HBM bytes of tiny() (d 256, 8 query heads x 32 = 256, 2 KV heads x 32 = 64, d_ff 768 gated, vocab 512, bf16 =
# 2 B, 2 layers) by category, per forward pass, at batch 4:
#   prefill, T = 4 x 128 = 512 tokens; per layer:
#     attention   rope (q, k in and out) T*(256+64)*2*2 = 655,360; kv_write (K, V in + cache write) T*128*2*2 =
#                 262,144; core (q in, out, K+V read) T*(256+256+128)*2 = 655,360
#     projections qkv W 256*384*2 + in T*256*2 + out T*384*2 = 851,968; o W 256*256*2 + in + out T*256*2 = 655,360
#     MLP         up_gate W 256*1536*2 + in T*256*2 + out T*1536*2 = 2,621,440; act in T*1536*2 + out T*768*2 =
#                 2,359,296; down W 768*256*2 + in T*768*2 + out T*256*2 = 1,441,792
#     other       norm in + out T*256*2*2 + weight 256*2 = 524,800 (x2: attn, ffn); residual 2 in + 1 out
#                 T*256*2*3 = 786,432 (x2)
#   once: embed (rows read + written) T*256*2*2 = 524,288, final norm 524,800 (other); LM head on the last
#   position only: W 512*256*2 + in 4*256*2 + out 4*512*2 = 268,288.
#   decode, mean step: T = 4 tokens, context 128 + mean(1..15) = 136; the same ops with T = 4, and the core reads
#   K+V 4*136*128*2 = 139,264 (+ q in, out 2 x 4*256*2): rope 5,120, kv_write 2,048, core 143,360; qkv 201,728,
#   o 135,168; up_gate 800,768, act 18,432, down 401,408; norms 4,608, residual 6,144, embed 4,096, final norm
#   4,608, LM head 268,288.
PREFILL_BYTES = {"attention": 2 * (655_360 + 262_144 + 655_360), "projections": 2 * (851_968 + 655_360),
                 "MLP/experts": 2 * (2_621_440 + 2_359_296 + 1_441_792), "LM head": 268_288, "communication": 0,
                 "other": 524_288 + 2 * (2 * 524_800 + 2 * 786_432) + 524_800}
DECODE_BYTES = {"attention": 2 * (5_120 + 2_048 + 143_360), "projections": 2 * (201_728 + 135_168),
                "MLP/experts": 2 * (800_768 + 18_432 + 401_408), "LM head": 268_288, "communication": 0,
                "other": 4_096 + 2 * (2 * 4_608 + 2 * 6_144) + 4_608}


def test_breakdown_categories_by_hand(ests, tmp_path):
    """Every op of tiny() is memory-bound on both chips (highest intensity: prefill up_gate 2*512*256*1536 /
    2,621,440 = 154 FLOP/B, below both ridges), so a category's time is its bytes / HBM bandwidth."""
    res = plot.plot_breakdown(ests, tmp_path / "b.png")
    res.close()
    assert _png(tmp_path / "b.png")
    for est, chip in zip(ests, (H100, V5E)):
        bd = res.data["breakdown"][est.chip]
        assert set(bd["prefill"]) == set(plot.CATEGORIES)
        for cat in plot.CATEGORIES:
            pre_s = PREFILL_BYTES[cat] / chip.hbm_bytes_per_s
            dec_s = DECODE_BYTES[cat] / chip.hbm_bytes_per_s
            assert bd["prefill"][cat] == pytest.approx(pre_s, rel=1e-9, abs=1e-18), cat
            assert bd["decode"][cat] == pytest.approx(dec_s, rel=1e-9, abs=1e-18), cat
            assert bd["request"][cat] == pytest.approx(pre_s + 15 * dec_s, rel=1e-9, abs=1e-18), cat  # gen 16
        # the categories cover the phase: 25,567,744 B of prefill, 3,736,064 B per decode step
        assert sum(bd["prefill"].values()) == pytest.approx(25_567_744 / chip.hbm_bytes_per_s, rel=1e-9)
        assert sum(bd["decode"].values()) == pytest.approx(3_736_064 / chip.hbm_bytes_per_s, rel=1e-9)


def _leader_faults(res) -> list[str]:
    """Leader lines of the roofline's op labels that pass through another text (a label, the peak or HBM
    annotation) or cross another leader: both read as a label pointing at the wrong op."""
    from matplotlib.path import Path
    from matplotlib.text import Annotation, Text

    fig = res.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    faults = []
    for ax in fig.axes:
        texts = [t for t in ax.texts if t.get_text()]
        leaders = []
        for t in texts:
            if isinstance(t, Annotation) and t.arrow_patch is not None:
                x0, y0 = ax.transData.transform(t.xy)
                dx, dy = (v * fig.dpi / 72 for v in t.xyann)  # offset points -> pixels
                leaders.append((t, Path([(x0, y0), (x0 + dx, y0 + dy)])))
        for t, line in leaders:
            faults += [f"{t.get_text()!r} through {u.get_text()!r}" for u in texts
                       if u is not t and line.intersects_bbox(Text.get_window_extent(u, renderer), filled=False)]
        faults += [f"{a.get_text()!r} crosses {b.get_text()!r}" for i, (a, la) in enumerate(leaders)
                   for b, lb in leaders[i + 1:] if la.intersects_path(lb, filled=False)]
    return faults


@pytest.mark.parametrize("efficiency", ["ideal", "calibrated"])
def test_moe_roofline_labels_point_at_their_ops(efficiency):
    # the curated MoE reports' scenarios: many expert, projection and attention ops crowd the compute roof
    for model, chip, kw in (("mistralai/Mixtral-8x7B-v0.1", "h100-sxm", dict(batch=16, tp=2)),
                            ("deepseek-ai/DeepSeek-V3", "h200", dict(batch=32, tp=8, ep=8))):
        res = plot.plot_roofline([estimate(model, chip, prompt_len=2048, gen_len=256, efficiency=efficiency, **kw)])
        faults = _leader_faults(res)
        res.close()
        assert faults == [], (model, faults)


def test_breakdown_uses_one_time_unit_for_every_panel(tmp_path):
    """Llama-3.1-8B on one H100, batch 8, prompt 2048, gen 1024, ideal: prefill 2 x 8.03e9 x 16,384 tokens
    / 989e12 FLOP/s ~ 0.27 s, a decode step ~15 GB / 3.35e12 B/s ~ 4.8 ms, the request ~0.27 + 1023 x 4.9 ms
    ~ 5.3 s: the request panel would switch to seconds on its own; the chart keeps milliseconds throughout."""
    est = estimate("meta-llama/Llama-3.1-8B", "h100-sxm", batch=8, prompt_len=2048, gen_len=1024, efficiency="ideal")
    assert 4 < est.e2e_s < 7 and 3e-3 < est.tpot_s < 6e-3
    res = plot.plot_breakdown([est])
    labels = [ax.get_ylabel() for ax in res.figure.axes]
    res.close()
    assert res.data["unit"] == "ms" and labels == ["time (ms)"] * 3


def _chip_with_max_batch(spec, prompt_len, gen_len, lo, hi):
    """An H100 with just enough HBM that the largest batch that fits lies in [lo, hi] (found by search, so the
    test does not hard-code the memory model's activation or KV accounting)."""
    a, b = 1e6, 1e10  # max_batch grows with HBM: bisect in log space
    for _ in range(40):
        chip = replace(H100, hbm_bytes=math.sqrt(a * b), driver_total_bytes=None)
        mb = estimate(spec, chip, batch=1, prompt_len=prompt_len, gen_len=gen_len, efficiency="ideal").memory.max_batch
        if lo <= mb <= hi:
            return chip
        a, b = (chip.hbm_bytes, b) if mb < lo else (a, chip.hbm_bytes)
    raise AssertionError("no HBM size gives a max batch in range")


def test_frontier_monotone_and_memory_limit(tmp_path):
    spec = tiny()
    small = _chip_with_max_batch(spec, prompt_len=64, gen_len=8, lo=10, hi=40)  # the limit lands inside the sweep
    res = plot.plot_frontier(spec, [small], prompt_lens=[64, 256], gen_len=8, batches=[1, 2, 4, 8, 16, 32, 64],
                             path=tmp_path / "f.png", efficiency="ideal")
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
    e = estimate(spec, small, batch=4, prompt_len=64, gen_len=8, efficiency="ideal")
    i = int(np.flatnonzero(curves[64]["batch"] == 4)[0])
    assert curves[64]["throughput_tokens_per_s_per_chip"][i] == pytest.approx(4 * 8 / e.e2e_s, rel=1e-9)
    assert curves[64]["tpot_s"][i] == pytest.approx(e.tpot_s, rel=1e-9)


def test_a_pipelined_frontier_starts_at_one_sequence():
    """The frontier's batch grid under pp = 4 starts at one sequence (a batch below pp runs a micro-batch per
    sequence): 1, 2, then 4 x the powers of two up to max(lo = 16, 2^ceil(log2(2 x 10))) = 32; pp = 1 keeps the
    powers of two from 1 to 32. Along the pp = 4 curve, batches 1
    and 2 each take a whole pass per token (equal TPOT), and batch 2 carries twice the tokens per chip within its
    TTFT's 5/4 of one prompt's."""
    from llm_roofline.report.build import batch_grid, frontier_data

    assert batch_grid(4, 10, lo=16).tolist() == [1, 2, 4, 8, 16, 32, 64, 128]
    assert batch_grid(1, 10, lo=16).tolist() == [1, 2, 4, 8, 16, 32]
    c = frontier_data("meta-llama/Llama-3.1-8B", "h100-sxm", prompt_lens=[512], gen_len=8, pp=4,
                      efficiency="ideal")[512]
    assert c["batch"][:3].tolist() == [1, 2, 4]
    assert c["tpot_s"][1] == pytest.approx(c["tpot_s"][0], rel=1e-12)
    assert c["ttft_s"][1] == pytest.approx(5 / 4 * c["ttft_s"][0], rel=1e-12)
    # the panels name the sharding, not only the chip count (two charts of 8 chips could be tp 8 or tp 4 pp 2)
    res = plot.plot_frontier("meta-llama/Llama-3.1-8B", ["h100-sxm"], prompt_lens=[512], gen_len=8, pp=4, tp=2,
                             efficiency="ideal")
    res.close()
    assert res.figure.axes[0].get_title().startswith("h100-sxm ×8 (tp2 pp4)")
    res = plot.plot_memory("meta-llama/Llama-3.1-8B", ["h100-sxm"], prompt_len=512, gen_len=8, tp=2)
    res.close()
    assert res.figure.axes[0].get_title().startswith("h100-sxm ×2 (tp2), context")
    # attention data-parallel groups are chips of the replica too: tp 1 x 8 groups = 8 chips
    from llm_roofline.report.chart_base import replica_text

    assert replica_text(dict(tp=1, attention_dp=8, ep=8)) == "×8 (tp1 ep8 adp8)"


def test_memory_stack_by_hand(tmp_path):
    spec = tiny()
    small = replace(V5E, hbm_bytes=40e6)
    res = plot.plot_memory(spec, [H100, small], prompt_len=128, gen_len=16, batches=[1, 4, 16, 64],
                           path=tmp_path / "m.png")
    res.close()
    assert _png(tmp_path / "m.png")
    for (name, chip), capacity in zip((("h100-sxm", H100), ("tpu-v5e", small)), (85.017e9, 40e6)):
        d = res.data[name]
        # by hand, tiny() in bf16 (2 B): weights per layer attention 256*(256+64+64+256) + gated MLP 3*256*768 +
        # two norms 2*256 = 754,176 parameters, x2 layers, + embedding and (untied) LM head 2*512*256 + final norm
        # 256 = 1,770,752 parameters = 3,541,504 B, whatever the batch
        np.testing.assert_array_equal(d["weights"], 3_541_504.0)
        # KV: K and V of 2 heads x 32 dims x 2 layers x 2 B = 512 B per token, x (128 + 16) tokens = 73,728 B per
        # sequence
        np.testing.assert_allclose(d["kv_cache"], 73_728.0 * np.array([1, 4, 16, 64]), rtol=1e-12)
        # activation workspace of one 8192-token prefill chunk: the largest op (ffn.act: in 1536 + out 768
        # elements per token) plus the residual stream (256) = 2,560 elements x 2 B x 8192 = 41,943,040 B
        np.testing.assert_allclose(d["activations"], 41_943_040.0, rtol=1e-12)
        np.testing.assert_allclose(d["per_chip_bytes"], 3_541_504 + 41_943_040 + 73_728.0 * np.array([1, 4, 16, 64]),
                                   rtol=1e-12)
        assert d["capacity_bytes"] == capacity  # the H100's driver total (its chip file); the small chip's HBM
        # the same numbers as estimate() at one batch
        e = estimate(spec, chip, batch=16, prompt_len=128, gen_len=16, efficiency="ideal")
        i = list(d["batch"]).index(16)
        assert d["per_chip_bytes"][i] == pytest.approx(e.memory.per_chip_bytes, rel=1e-12)
        assert d["kv_cache"][i] == pytest.approx(e.memory.per_chip_kv_cache_bytes, rel=1e-12)
        assert d["max_batch"] == e.memory.max_batch


def test_phase_split_shares(tmp_path):
    ests = [estimate(tiny(), H100, batch=1, prompt_len=p, gen_len=8, efficiency="ideal") for p in (64, 1024)]
    res = plot.plot_phase_split(ests, tmp_path / "p.png")
    res.close()
    # each category's share = its ops' time per pass (the estimate's op rows, grouped by CATEGORY_BY_NAME) over
    # the phase time of the estimate's summary
    for phase in ("prefill", "decode"):
        for i, e in enumerate(ests):
            rows = e.ops[e.ops.phase == phase]
            phase_s = e.prefill.t_s if phase == "prefill" else e.decode.t_s
            for cat in plot.CATEGORIES:
                mine = rows[rows.name.map(CATEGORY_BY_NAME) == cat]
                expected = float((mine.t_s * mine["count"]).sum()) / phase_s
                assert res.data["shares"][phase][cat][i] == pytest.approx(expected, rel=1e-9, abs=1e-15), (phase, cat)
    # attention's share of prefill grows with the prompt (quadratic vs linear work)
    att = res.data["shares"]["prefill"]["attention"]
    assert att[1] > att[0]


def test_import_does_not_load_matplotlib():
    code = ("import sys, llm_roofline, llm_roofline.report.plot, llm_roofline.report.export, "
            "llm_roofline.report.markdown; assert 'matplotlib' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_leader_clipping_a_label_corner_counts_as_through_it():
    # segment (0,0)-(16,16) runs along y = x; the box x 7.9..8.1, y 8.05..8.2 holds the stretch x = y in
    # 8.05..8.1 (t = 0.503..0.506 of the way): a check sampling 16 points (t = k/16) missed it; the exact clip
    # finds it. A box beside the line (x 9..10, y 7..8: y < x there, below the line) is not hit, and neither is the
    # box at the segment's own end (its outer 1/16 is excluded: a leader starts at its point)
    from llm_roofline.report.chart_labels import _segment_hits_box

    assert _segment_hits_box((0, 0, 16, 16), (7.9, 8.05, 8.1, 8.2))
    assert not _segment_hits_box((0, 0, 16, 16), (9, 7, 10, 8))
    assert not _segment_hits_box((0, 0, 16, 16), (15.5, 15.5, 17, 17))


@pytest.mark.parametrize("kw,said", [
    (dict(batches=[1, float("nan")]), "batch must be an integer"),  # was numpy's "cannot convert float NaN"
    (dict(batches=[10**20]), "batch must be an integer"),  # was silently batch -9223372036854775808
    (dict(pp="x"), "pp must be an integer"),  # was int("x")'s ValueError
])
def test_memory_data_names_a_bad_batch_or_pp(kw, said):
    from llm_roofline.report.build import memory_data

    with pytest.raises(lr.RooflineError, match=said):
        memory_data("meta-llama/Llama-3.2-1B", "h100-sxm", **kw)


def test_sweep_charts_name_the_dtype_overrides_in_their_titles():
    # a frontier or memory chart of int4 weights and an fp8 KV cache says so (they named only the model before)
    spec = tiny()
    kw = dict(gen_len=8, batches=[1, 4], weight_dtype="int4", kv_dtype="fp8")
    for res in (plot.plot_frontier(spec, [H100], prompt_lens=[64], **kw),
                plot.plot_memory(spec, [H100], prompt_len=64, **kw)):
        title = res.figure._suptitle.get_text().replace("\n", " ")
        res.close()
        assert "weights int4" in title and "KV fp8" in title
    res = plot.plot_memory(spec, [H100], prompt_len=64, gen_len=8, batches=[1])
    assert "weights" not in res.figure._suptitle.get_text()  # no override: nothing claimed
    res.close()
    # bf16 activations are the default the CLI always passes, not an override (it read 'act bf16' over a W8A8
    # checkpoint's fp8 GEMMs); fp16 ones are named
    for act, said in (("bf16", False), ("fp16", True)):
        res = plot.plot_memory(spec, [H100], prompt_len=64, gen_len=8, batches=[1], act_dtype=act)
        assert ("act " in res.figure._suptitle.get_text()) == said
        res.close()
