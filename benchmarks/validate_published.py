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
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import llm_roofline as lr  # noqa: E402
from llm_roofline.report.table import render  # noqa: E402

# (prompt tokens, output tokens, clients): (TTFT ms, ITL ms), NIM 1.8.0, Llama-3.3-70B, 2 x H100, fp8 TP2
NIM_LLAMA33_70B_H100_TP2 = {
    (5000, 500, 1): (406.77, 18.58), (5000, 500, 5): (546.7, 21.83), (5000, 500, 25): (688.69, 38.75),
    (5000, 500, 50): (834.51, 59.73), (5000, 500, 100): (7996.25, 92.91),
    (500, 2000, 1): (47.77, 18.91), (500, 2000, 5): (126.53, None),  # the page's excerpt ends at that TTFT
}
NO_HOST = {f"{k}_overhead_s": 0.0 for k in ("step", "seq", "request", "prompt_layer")}


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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
