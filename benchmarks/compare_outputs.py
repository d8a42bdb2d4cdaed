"""Dump the numbers of a fixed set of scenarios, or compare two dumps to a relative tolerance: a speed change must
not move any number. Uses the public API only, so the same script runs against any checkout:

    PYTHONPATH=/tmp/old python benchmarks/compare_outputs.py dump /tmp/old.json     # the commit before the change
    PYTHONPATH=. python benchmarks/compare_outputs.py dump /tmp/new.json
    python benchmarks/compare_outputs.py compare /tmp/old.json /tmp/new.json           # rtol 1e-12

What it dumps, for each scenario: estimate(...).to_dict() (ops table included), the JSON printed by
`llm-roofline estimate --format json` for two of them, sweep() over small grids, evaluate_step() totals, serve() at
one point, and evaluate() over 100,000-point grids (sha256 of the float64 arrays: bit for bit); and (_grids) sweep
frames, serve() sweeps and the static and serving planners' tables.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "configs"
L8, L70 = "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"

# (label, model, chip, keyword arguments of estimate)
SCENARIOS = [
    ("dense", L8, "h100-sxm", {}),
    ("dense-ideal", L8, "h100-sxm", dict(efficiency="ideal")),
    ("dense-b64-g1", L8, "h100-sxm", dict(batch=64, prompt_len=512, gen_len=1)),
    ("dense-g2", L8, "a100-80gb", dict(batch=3, prompt_len=100, gen_len=2)),
    ("dense-tp4-sp", L70, "h100-sxm", dict(batch=16, tp=4, sequence_parallel=True)),
    ("dense-tp8-pp2", L70, "h200", dict(batch=32, tp=8, pp=2, dp=2)),
    ("dense-tp16-multinode", L70, "h100-sxm", dict(batch=16, tp=16, efficiency="ideal")),
    ("dense-fp8", L70, "h100-sxm", dict(batch=8, tp=2, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")),
    ("dense-fp8-weights", L8, "h100-sxm", dict(batch=4, weight_dtype="fp8")),
    ("dense-int4", L70, "h100-sxm", dict(batch=4, weight_dtype="int4")),
    ("dense-int4-ideal", L70, "a100-80gb", dict(batch=4, weight_dtype="int4", efficiency="ideal")),
    ("dense-unfused", "meta-llama/Llama-3.2-1B", "l40s", dict(batch=2, attention="unfused")),
    ("dense-v100-fp16", "meta-llama/Llama-2-7b-hf", "v100-sxm", dict(batch=4)),
    ("dense-tpu", L70, "tpu-v5e", dict(batch=16, tp=8)),
    ("dense-tpu-pp", L70, "tpu-v5p", dict(batch=16, tp=4, pp=4, efficiency="ideal")),
    ("dense-mi300x", L70, "mi300x", dict(batch=8, tp=4)),
    ("gpt2-learned-pos", "openai-community/gpt2", "rtx-4090", dict(batch=8, prompt_len=512, gen_len=64)),
    ("opt", "facebook/opt-6.7b", "h100-pcie", dict(batch=2)),
    ("falcon-parallel", "tiiuae/falcon-7b", "h100-sxm", dict(batch=2)),
    ("sliding-gemma2", "google/gemma-2-9b", "h100-sxm", dict(batch=4, prompt_len=3000, gen_len=3000)),
    ("sliding-gemma3", "google/gemma-3-27b-it", "h200", dict(batch=2, prompt_len=800, gen_len=2000, tp=2)),
    ("sliding-mistral", "mistralai/Mistral-7B-v0.1", "a100-40gb", dict(prompt_len=4000, gen_len=500)),
    ("moe-mixtral-ep", "mistralai/Mixtral-8x7B-v0.1", "h100-sxm", dict(batch=16, tp=2, ep=2)),
    ("moe-mixtral-skew", "mistralai/Mixtral-8x22B-v0.1", "b200", dict(batch=64, tp=8, ep=8, routing_skew=1.5)),
    ("moe-qwen3-adp", "Qwen/Qwen3-30B-A3B", "h100-sxm", dict(batch=32, tp=2, attention_dp=2, moe_ep=4)),
    ("moe-gptoss", "openai/gpt-oss-120b", "h100-sxm", dict(batch=8, tp=2)),
    ("moe-gptoss-sp-ep", "openai/gpt-oss-20b", "h100-sxm", dict(batch=8, tp=4, ep=4, sequence_parallel=True)),
    ("mla-dsv3", "deepseek-ai/DeepSeek-V3", "h200", dict(batch=32, tp=8, ep=8)),
    ("mla-dsv3-adp", "deepseek-ai/DeepSeek-V3", "h200", dict(batch=64, tp=1, attention_dp=8, moe_ep=8,
                                                            weight_dtype="fp8", kv_dtype="fp8")),
    ("mla-dsv3-b200-fp4", "deepseek-ai/DeepSeek-V3", "b200", dict(batch=16, tp=8, weight_dtype="fp4")),
    ("dsa-v32", FIX / "deepseek_v32_exp.json", "h200", dict(batch=4, tp=8, prompt_len=4096, gen_len=4096)),
    ("dsv4", FIX / "deepseek_v4_flash_reap160.json", "b200", dict(batch=4, tp=4, prompt_len=3000, gen_len=600)),
    ("hybrid-jamba", FIX / "jamba_v0_1.json", "h100-sxm", dict(batch=4, tp=2)),
    ("hybrid-qwen3next", FIX / "qwen3_next_80b_a3b.json", "h100-sxm", dict(batch=8, tp=4, ep=4)),
    ("hybrid-nemotron-h", FIX / "nemotron_h_8b.json", "a100-80gb", dict(batch=8)),
    ("hybrid-falcon-h1", FIX / "falcon_h1_7b.json", "h100-sxm", dict(batch=2, tp=2)),
    ("hybrid-zamba2", FIX / "zamba2_2_7b.json", "l40s", dict(batch=2)),
    ("hybrid-lfm2", FIX / "lfm2_8b_a1b.json", "h100-sxm", dict(batch=4)),
    ("hybrid-minimax", FIX / "minimax_text_01.json", "h200", dict(batch=8, tp=8, ep=8)),
    ("mamba1", FIX / "falcon_mamba_7b.json", "h100-sxm", dict(batch=4, efficiency="ideal")),
    ("gemma4", FIX / "gemma4_31b.json", "h100-sxm", dict(batch=2, tp=2)),
    ("mimo", FIX / "mimo_v2_flash.json", "h200", dict(batch=8, tp=8, prompt_len=1000, gen_len=5000)),
    ("llama4", FIX / "llama4_scout.json", "h100-sxm", dict(batch=8, tp=4, kv_dtype="fp8")),
    ("dbrx", FIX / "dbrx_base.json", "mi300x", dict(batch=8, tp=4)),
    ("bloom-alibi", FIX / "bloom_560m.json", "tpu-v6e", dict(batch=4)),
    ("qwen2-vl", FIX / "qwen2_vl_7b.json", "gb200", dict(batch=2)),
    ("not-fitting", "meta-llama/Llama-3.1-405B", "h100-sxm", dict(batch=64)),
]

CLI = [
    [L8, "--chip", "h100-sxm"],
    ["mistralai/Mixtral-8x7B-v0.1", "--chip", "h200", "--batch", "8", "--tp", "2", "--efficiency", "ideal"],
]

SWEEPS = [
    (L8, "h100-sxm", dict(batch=[1, 8, 64], prompt_len=[128, 4096], gen_len=[1, 2, 300])),
    ("google/gemma-2-9b", ["h100-sxm", "tpu-v5e"], dict(batch=[1, 16], prompt_len=[1000, 5000], gen_len=[3000],
                                                        efficiency=["ideal", "calibrated"])),
    ("deepseek-ai/DeepSeek-V3", "h200", dict(batch=[8, 64], tp=[8], ep=[1, 8], weight_dtype=["fp8"])),
]

STEPS = [
    (L8, "h100-sxm", dict(decode_batch=[0, 4, 32.5], decode_kv_len=[100, 3000, 8000], chunk_tokens=[512, 0, 64],
                          chunk_kv_len=[512, 0, 1000])),
    ("deepseek-ai/DeepSeek-V3", "h200", dict(decode_batch=16, decode_kv_len=4000, chunk_tokens=256, chunk_kv_len=256,
                                             tp=8, efficiency="ideal")),
]

# large grids (one op scored at a time, roofline.op_blocks): sha256 of the float64 results, and their sums
BIG = [(L8, "h100-sxm", {}), ("google/gemma-2-9b", "a100-80gb", dict(tp=2)),
       ("mistralai/Mixtral-8x7B-v0.1", "h200", dict(tp=2, ep=2, efficiency="ideal"))]

SERVES = [
    (L8, "h100-sxm", dict(prompt_len=2048, gen_len=256, concurrency=16)),
    ("mistralai/Mixtral-8x7B-v0.1", "h200", dict(prompt_len=1000, gen_len=200, qps=2.0, tp=2)),
]


def _grids() -> dict:
    """Sweep frames (dense, MoE, DeepSeek-V3 with ep / attention_dp, sliding windows; tp, pp, ep, ideal and
    calibrated), serve() sweeps (closed and open loop, speculative decoding, prefix hits, prefill_first) and the
    static and serving planners' tables, each as columns of lists (a scenario that raises: its error)."""
    import llm_roofline as lr
    from llm_roofline.plan import plan
    from llm_roofline.plan_serving import plan_serving

    out: dict = {}
    grid = dict(batch=[1, 3, 8, 64, 256], prompt_len=[1, 128, 2048, 9000], gen_len=[1, 2, 17, 256, 4097])
    sweeps = [("meta-llama/Llama-3.1-8B", "h100-sxm", {}),
              ("meta-llama/Llama-3.1-8B", ["h100-sxm", "a100-80gb"], dict(efficiency=["ideal", "calibrated"])),
              ("meta-llama/Llama-3.1-70B", "h200", dict(tp=[2, 4, 8], pp=[1, 2], weight_dtype=[None, "fp8"])),
              ("mistralai/Mixtral-8x7B-v0.1", "h100-sxm", dict(tp=[2, 8], ep=[1, 2], efficiency=["ideal", "calibrated"])),
              ("deepseek-ai/DeepSeek-V3", "h200", dict(tp=[8], ep=[8], pp=[1], efficiency=["ideal", "calibrated"])),
              ("deepseek-ai/DeepSeek-V3", "mi300x", dict(tp=[8], attention_dp=[1, 8], moe_ep=[8])),
              ("google/gemma-2-9b", "h100-sxm", dict(efficiency=["ideal", "calibrated"])),
              ("Qwen/Qwen3-30B-A3B", "h100-sxm", dict(tp=[2], ep=[1, 2]))]
    for i, (m, c, kw) in enumerate(sweeps):
        g = dict(grid)
        if kw.get("pp") and max(kw["pp"]) > 1 or kw.get("attention_dp"):
            g["batch"] = [8, 16, 64, 256]
        _try(out, f"sweep{i}:{m}", lambda: _frame(lr.sweep(m, c, **g, **kw)))
    serves = [("meta-llama/Llama-3.1-8B", "h100-sxm", dict(concurrency=[1, 4, 32, 300], prompt_len=[512, 4096],
                                                           gen_len=[2, 300])),
              ("meta-llama/Llama-3.1-8B", "h100-sxm", dict(qps=[0.1, 2.0, 30.0], max_num_seqs=[64, 256],
                                                           max_num_batched_tokens=[2048, 8192], efficiency="ideal")),
              ("meta-llama/Llama-3.1-70B", ["h200", "mi300x"], dict(qps=[1.0, 5.0], tp=[2, 4], pp=[1, 2])),
              ("mistralai/Mixtral-8x7B-v0.1", "h100-sxm", dict(concurrency=[8, 64], tp=2, ep=2,
                                                              prefix_hit_rate=[0.0, 0.5])),
              ("deepseek-ai/DeepSeek-V3", "h200", dict(qps=[1.0, 4.0], tp=8, ep=8,
                                                        speculative=dict(k=2, acceptance=0.7))),
              ("meta-llama/Llama-3.1-8B", "h100-sxm", dict(qps=[1.0, 3.0], workload=[(512, 128, 2), (4096, 512, 1)],
                                                           scheduling="prefill_first"))]
    for i, (m, c, kw) in enumerate(serves):
        _try(out, f"serve{i}:{m}", lambda: _frame(lr.serve(m, c, **kw)))
    _try(out, "serve_one", lambda: lr.serve("meta-llama/Llama-3.1-8B", "h100-sxm", qps=2.0).to_dict())
    chips = ["h100-sxm", "h200", "mi300x"]
    plans = [("meta-llama/Llama-3.1-70B", dict(prompt_len=2048, gen_len=256, tpot_s=0.05, qps=10)),
             ("deepseek-ai/DeepSeek-V3", dict(prompt_len=2048, gen_len=256, tpot_s=0.05, qps=10)),
             ("meta-llama/Llama-3.1-8B", dict(prompt_len=1024, gen_len=128, ttft_s=0.5, tpot_s=0.03, qps=3,
                                              efficiency="ideal", ttft_percentile="p90")),
             ("deepseek-ai/DeepSeek-V3", dict(prompt_len=2048, gen_len=256, qps=1, max_chips=8)),  # fits nowhere
             ("deepseek-ai/DeepSeek-V3", dict(prompt_len=2048, gen_len=256, qps=1, tpot_s=1e-4)),  # misses TPOT
             ("meta-llama/Llama-3.1-70B", dict(prompt_len=8192, gen_len=512, qps=2, max_chips=16,
                                               max_num_seqs=(64,), max_num_batched_tokens=(4096,)))]
    for i, (m, kw) in enumerate(plans):
        def run_serving(m=m, kw=kw):
            p = plan_serving(m, chips, **kw)
            return dict(p.to_dict(), table=_frame(p.table))
        _try(out, f"plan_serving{i}:{m}", run_serving)
    statics = [("meta-llama/Llama-3.1-70B", dict(prompt_len=2048, gen_len=256, tpot_s=0.05, qps=10)),
               ("deepseek-ai/DeepSeek-V3", dict(prompt_len=2048, gen_len=256, tpot_s=0.05, qps=10)),
               ("mistralai/Mixtral-8x7B-v0.1", dict(prompt_len=1024, gen_len=512, ttft_s=1.0, efficiency="ideal")),
               ("meta-llama/Llama-3.1-8B", dict(prompt_len=4096, gen_len=256, tpot_s=0.02, output_tokens_per_s=5000,
                                                max_chips=16))]
    for i, (m, kw) in enumerate(statics):
        def run_static(m=m, kw=kw):
            p = plan(m, chips, **kw)
            return dict(p.to_dict(), candidates=_frame(p.candidates), frontier=_frame(p.frontier),
                        explanation=p.explanation)
        _try(out, f"plan{i}:{m}", run_static)
    return out


def _frame(df) -> dict:
    return {c: df[c].tolist() for c in df.columns}


def _try(out: dict, key: str, fn) -> None:
    try:
        out[key] = fn()
    except Exception as e:  # noqa: BLE001 - a scenario that raises must raise the same way in both checkouts
        out[key] = ["error", type(e).__name__, str(e)]


def _model(m):
    import llm_roofline as lr

    return lr.load_model(str(m)) if isinstance(m, Path) else m


def dump(out: str) -> None:
    import numpy as np

    import llm_roofline as lr
    from llm_roofline.estimate import evaluate_step
    from llm_roofline.roofline import TIME_FIELDS
    from llm_roofline.units import json_ready

    res: dict = {"estimate": {}, "cli": [], "sweep": [], "step": [], "serve": []}
    for label, model, chip, kw in SCENARIOS:
        res["estimate"][label] = lr.estimate(_model(model), chip, **kw).to_dict()
    for args in CLI:
        text = subprocess.run([sys.executable, "-m", "llm_roofline", "estimate", *args, "--format", "json"],
                              capture_output=True, text=True, check=True, cwd=Path(lr.__file__).parents[1]).stdout
        res["cli"].append(json.loads(text))
    for model, chip, kw in SWEEPS:
        df = lr.sweep(_model(model), chip, **kw)
        res["sweep"].append(json_ready(df.to_dict(orient="records")))
    for model, chip, kw in STEPS:
        tot = evaluate_step(_model(model), chip, **kw)
        grid = np.shape(tot.times.t_s)  # a total that does not vary (no collective: 0 comm bytes) may be a scalar
        res["step"].append({k: _list(getattr(tot, k), grid) for k in ("flops", "bytes", "weight_bytes",
                                                                      "kv_read_bytes", "comm_bytes", "attention_flops",
                                                                      "mlp_flops")}
                           | {k: _list(getattr(tot.times, k), grid) for k in TIME_FIELDS})
    res["big"] = [_big(model, chip, kw) for model, chip, kw in BIG]
    for model, chip, kw in SERVES:
        res["serve"].append(lr.serve(_model(model), chip, **kw).to_dict())
    res["grids"] = json_ready(_grids())
    Path(out).write_text(json.dumps(res, default=str))


def _big(model, chip, kw) -> dict:
    import hashlib

    import numpy as np

    from llm_roofline.estimate import evaluate

    n = 100_000
    batch = np.tile(np.arange(2, 258, 2, dtype=np.float64), n // 128 + 1)[:n]
    prompt = np.tile(np.array([512.0, 2048.0, 5000.0, 32768.0]), n // 4)
    gen = np.tile(np.array([1.0, 2.0, 257.0, 4000.0, 33.0]), n // 5)
    r = evaluate(model, chip, batch=batch, prompt_len=prompt, gen_len=gen, **kw)
    out = {}
    for k in ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s"):
        a = np.ascontiguousarray(np.broadcast_to(getattr(r, k), batch.shape), dtype=np.float64)
        out[k] = [hashlib.sha256(a.tobytes()).hexdigest(), float(np.nansum(a))]
    for k in ("flops", "bytes", "comm_bytes"):
        a = np.ascontiguousarray(np.broadcast_to(getattr(r.prefill.totals, k), batch.shape), dtype=np.float64)
        out["prefill_" + k] = [hashlib.sha256(a.tobytes()).hexdigest(), float(np.nansum(a))]
    return out


def _list(x, shape):
    import numpy as np

    return np.broadcast_to(np.asarray(x, dtype=float), shape).ravel().tolist()


def _diff(a, b, path: str, rtol: float, out: list) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            out.append(f"{path}: keys differ: {sorted(set(a) ^ set(b))}")
        for k in sorted(set(a) & set(b), key=str):
            _diff(a[k], b[k], f"{path}.{k}", rtol, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: lengths {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", rtol, out)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if not (a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= rtol * max(abs(a), abs(b))):
            out.append(f"{path}: {a!r} != {b!r} (rel {abs(a - b) / max(abs(a), abs(b)):.3g})")
    elif a != b:
        out.append(f"{path}: {a!r} != {b!r}")


def compare(old: str, new: str, rtol: float = 1e-12) -> int:
    a, b = json.loads(Path(old).read_text()), json.loads(Path(new).read_text())
    out: list[str] = []
    _diff(a, b, "", rtol, out)
    counts = {k: len(v) for k, v in a.items()}
    print(f"compared {counts} (rtol {rtol:g}): {len(out)} differences")
    for line in out[:40]:
        print("  " + line)
    return 1 if out else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        dump(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], *(float(x) for x in sys.argv[4:5])))
    else:
        print(__doc__)
        sys.exit(2)
