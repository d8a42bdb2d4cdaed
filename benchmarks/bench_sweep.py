"""Speed of the vectorized estimator: Llama-3.1-8B on H100, one core.

Prints decode-step evaluations per second and full estimates (prefill + 256 decode steps) per second.
Targets: >= 2,000,000 decode-step evaluations/s and >= 50,000 full estimates/s.

A "full estimate" is one grid point of `evaluate` (TTFT, TPOT, e2e, throughput, memory); its 256 decode
steps are summed exactly in closed form, so it counts as 256 decode-step evaluations. The decode-step
rate is also measured directly: one decode phase (build_ops + score) over an array of contexts.

    OMP_NUM_THREADS=1 python benchmarks/bench_sweep.py
"""

import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import llm_roofline as lr  # noqa: E402
from llm_roofline.estimate import evaluate  # noqa: E402
from llm_roofline.roofline import score_ops  # noqa: E402
from llm_roofline.graph import Phase, build_ops  # noqa: E402


def best_of(fn, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    spec = lr.load_model("meta-llama/Llama-3.1-8B")
    chip = lr.load_chip("h100-sxm")
    n = 100_000
    batch = np.tile(np.arange(1, 257, dtype=np.float64), n // 256 + 1)[:n]
    prompt = np.tile(np.array([512.0, 2048.0, 8192.0, 32768.0]), n // 4)

    def decode_steps():
        for s in score_ops(build_ops(spec, Phase.decode(batch, prompt + 1)), chip):
            np.maximum(s.t_compute_s, s.t_memory_s)

    t = best_of(decode_steps)
    print(f"decode-step evaluations: {n / t:,.0f} /s  ({n:,} steps in {t * 1e3:.1f} ms; target >= 2,000,000/s)")

    t = best_of(lambda: evaluate(spec, chip, batch=batch, prompt_len=prompt, gen_len=257), repeats=3)
    print(f"full estimates (prefill + 256 decode steps): {n / t:,.0f} /s  ({n:,} grid points in {t * 1e3:.0f} ms; "
          f"target >= 50,000/s) = {n * 256 / t:,.0f} decode steps/s summed")

    t = best_of(lambda: lr.estimate(spec, chip, batch=8, prompt_len=2048, gen_len=256), repeats=5)
    print(f"one scalar estimate() with its op table: {t * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
