"""The serving model against a published serving benchmark it never saw (no fit reads these numbers).

    python3 benchmarks/validate_published.py

Source: NVIDIA NIM LLM benchmarking guide, "Performance", Llama-3.3-70b-instruct, NIM version 1.8.0, 2 x H100 80G,
fp8 TP2 (https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md, read 2026-11-27). The page does not
name the engine; NIM's optimized profiles (FP8 on H100 among them) are TensorRT-LLM engines (NIM support matrix,
https://docs.nvidia.com/nim/large-language-models/latest/support-matrix.html), so --host none is the closer
comparison. Mean TTFT and ITL (ms) per client concurrency, copied below. Llama-3.3-70B has Llama-3.1-70B's
architecture (the shipped config), fp8 weights, activations and KV cache (an assumption for the KV cache).

Prints, per point, the measured TTFT / ITL and serve()'s at its defaults (benchmark clients, vLLM's engine knobs and
host time) and with --host none (every host overhead 0: an engine without Python dispatch), and the median
absolute % error of each.

Second source: TensorRT-LLM's "Performance overview" (NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md,
commit 00f37686aa854010d68bcbd0f4ab000221541ca6): total output throughput (tokens/s) under maximum load
(trtllm-bench throughput, every request queued at once, fixed ISL / OSL), ModelOpt FP8 checkpoints (weights,
activations and, an assumption, KV cache in fp8) on H100 / H200. Compared with serve()'s saturation rate x OSL at
gpu_memory_utilization 0.95 (the page's usual KV fraction) and no host time (a TensorRT-LLM engine); printed as the
median predicted / measured ratio per model and GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import llm_roofline as lr  # noqa: E402
from llm_roofline.engine import NO_HOST  # noqa: E402
from llm_roofline.report.table import render  # noqa: E402

# (prompt tokens, output tokens, clients): (TTFT ms, ITL ms), NIM 1.8.0, Llama-3.3-70B, 2 x H100, fp8 TP2
NIM_LLAMA33_70B_H100_TP2 = {
    (5000, 500, 1): (406.77, 18.58), (5000, 500, 5): (546.7, 21.83), (5000, 500, 25): (688.69, 38.75),
    (5000, 500, 50): (834.51, 59.73), (5000, 500, 100): (7996.25, 92.91),
    (500, 2000, 1): (47.77, 18.91), (500, 2000, 5): (126.53, None),  # the page's excerpt ends at that TTFT
}
ISL_OSL = ((128, 128), (128, 2048), (128, 4096), (500, 2000), (1000, 1000), (1000, 2000), (2048, 128), (2048, 2048),
           (5000, 500), (20000, 2000))
# (model, chip, tp): output tokens/s at ISL_OSL, TensorRT-LLM perf overview (FP8, Llama 3.3 70B as Llama-3.1-70B)
TRTLLM_MAX_THROUGHPUT = {
    ("meta-llama/Llama-3.1-8B", "h100-sxm", 1): (28312, 22714, 14325, 17660, 15220, 13899, 3450, 9305, 3459, 1351),
    ("meta-llama/Llama-3.1-8B", "h200", 1): (27911, 26221, 18027, 20770, 17744, 16828, 3538, 12194, 3902, 1804),
    ("meta-llama/Llama-3.1-70B", "h100-sxm", 2): (6378, 6651, 4199, 5222, 4205, 4146, 762, 3082, 898, 437),
    ("meta-llama/Llama-3.1-70B", "h200", 1): (3803, 4336, 2872, 3666, 2909, 2994, 442, 2003, 566, 283),
    ("meta-llama/Llama-3.1-405B", "h100-sxm", 8): (3627, 4340, 3116, 3994, 2919, 2895, 453, 2296, 610, 345),
    ("meta-llama/Llama-3.1-405B", "h200", 8): (3814, 5348, 4741, 4724, 3330, 3722, 456, 2948, 650, 505),
}


def trtllm_ratios() -> list[dict]:
    """Median, min and max predicted / measured maximum throughput per model and GPU."""
    out = []
    for (model, chip, tp), measured in TRTLLM_MAX_THROUGHPUT.items():
        ratio = []
        for (isl, osl), tok_s in zip(ISL_OSL, measured):
            s = lr.serve(model, chip, prompt_len=isl, gen_len=osl, qps=0.01, tp=tp, weight_dtype="fp8",
                         act_dtype="fp8", kv_dtype="fp8", gpu_memory_utilization=0.95, **NO_HOST)
            ratio.append(s.saturation_requests_per_s * osl / tok_s)
        out.append(dict(model=model, chip=chip, tp=tp, median=np.median(ratio), lo=min(ratio), hi=max(ratio)))
    return out


def main() -> int:
    rows, errs = [], {"ttft vllm": [], "ttft none": [], "itl vllm": [], "itl none": []}
    for (prompt, gen, clients), (ttft_ms, itl_ms) in NIM_LLAMA33_70B_H100_TP2.items():
        kw = dict(prompt_len=prompt, gen_len=gen, concurrency=clients, tp=2, weight_dtype="fp8", act_dtype="fp8",
                  kv_dtype="fp8")
        got = {h: lr.serve("meta-llama/Llama-3.1-70B", "h100-sxm", **kw, **extra)
               for h, extra in (("vllm", {}), ("none", NO_HOST))}
        row = dict(prompt=prompt, gen=gen, clients=clients, ttft_ms=ttft_ms, itl_ms=itl_ms)
        for h, s in got.items():
            row[f"ttft_{h}"], row[f"itl_{h}"] = s.ttft_s * 1e3, s.tpot_s * 1e3
            errs[f"ttft {h}"].append(abs(s.ttft_s * 1e3 / ttft_ms - 1) * 100)
            if itl_ms is not None:
                errs[f"itl {h}"].append(abs(s.tpot_s * 1e3 / itl_ms - 1) * 100)
        rows.append(row)
    fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    print(render(rows, "table", [(c, c, fmt if c not in ("prompt", "gen", "clients") else None) for c in rows[0]]))
    print()
    print("median |error| %: " + ", ".join(f"{k} {np.median(v):.1f}" for k, v in errs.items()))
    print()
    print("TensorRT-LLM maximum throughput, predicted / measured over 10 ISL / OSL pairs (no host time):")
    print(render(trtllm_ratios(), "table", [("model", "model", None), ("chip", "chip", None), ("tp", "tp", None),
                                            ("median", "median", "{:.2f}".format), ("min", "lo", "{:.2f}".format),
                                            ("max", "hi", "{:.2f}".format)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
