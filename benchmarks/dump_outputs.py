"""Dump sweep frames, serve results and plan tables of several scenarios to a pickle, to check that a speed-up
changed no number: run it on two checkouts and compare (relative tolerance 1e-12).

    PYTHONPATH=<checkout> python benchmarks/dump_outputs.py OUT.pkl        # dump
    python benchmarks/dump_outputs.py --compare A.pkl B.pkl                 # compare two dumps

Scenarios: dense (Llama-3.1-8B, Llama-3.1-70B), MoE (Mixtral-8x7B, Qwen3-30B-A3B where shipped), DeepSeek-V3
(MLA + MoE, expert parallelism), sliding windows (gemma-2), tp / pp / ep / attention_dp, ideal and calibrated.
"""

from __future__ import annotations

import pickle
import sys

import numpy as np


def _frame(df):
    return {c: df[c].tolist() for c in df.columns}


def _try(out, key, fn):
    try:
        out[key] = fn()
    except Exception as e:  # noqa: BLE001 - a scenario that raises must raise the same way in both checkouts
        out[key] = ("error", type(e).__name__, str(e))


def dump(path: str) -> None:
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
    with open(path, "wb") as f:
        pickle.dump(out, f)
    print(f"{len(out)} results -> {path}")


def _diff(a, b, where, rtol, bad):
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            bad.append(f"{where}: keys differ {sorted(set(a) ^ set(b))}")
        for k in set(a) & set(b):
            _diff(a[k], b[k], f"{where}.{k}", rtol, bad)
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            bad.append(f"{where}: lengths {len(a)} != {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{where}[{i}]", rtol, bad)
            if len(bad) > 50:
                return
    elif isinstance(a, (float, int, np.floating, np.integer)) and isinstance(b, (float, int, np.floating, np.integer)) \
            and not isinstance(a, bool):
        x, y = float(a), float(b)
        if np.isnan(x) and np.isnan(y) or x == y:
            return
        if not abs(x - y) <= rtol * max(abs(x), abs(y)):
            bad.append(f"{where}: {x!r} != {y!r}")
    elif a != b and not (a is None and b is None):
        bad.append(f"{where}: {a!r} != {b!r}")


def compare(path_a: str, path_b: str, rtol: float = 1e-12) -> int:
    with open(path_a, "rb") as f:
        a = pickle.load(f)
    with open(path_b, "rb") as f:
        b = pickle.load(f)
    bad: list[str] = []
    _diff(a, b, "", rtol, bad)
    n_values = sum(1 for _ in _leaves(a))
    print(f"{len(a)} results, {n_values:,} values compared at rtol {rtol:g}: "
          + ("identical" if not bad else f"{len(bad)} differences"))
    for line in bad[:40]:
        print("  " + line)
    return 1 if bad else 0


def _leaves(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    dump(sys.argv[1])
