"""Speed of the vectorized estimator: Llama-3.1-8B on H100, one core.

Prints decode-step evaluations per second and full estimates (prefill + 256 decode steps) per second.
Targets: >= 2,000,000 decode-step evaluations/s and >= 50,000 full estimates/s.

Then a 1,000,000-point lr.sweep (100 batches x 100 prompt lengths x 100 generation lengths, ideal efficiency) against
a hand-vectorized numpy floor of the same quantities written below (TTFT, TPOT, e2e, throughput, per-chip memory,
max batch of a dense model: every GEMM, the fused attention core, norms, activation and residual elementwise ops,
the closed-form sum over decode steps), into a DataFrame of the same numeric columns. Targets: lr.sweep within 3x
of the floor's CPU time, and <= 500 bytes per point of peak memory (peak RSS growth of a fresh process, the
returned DataFrame included).

A "full estimate" is one grid point of `evaluate` (TTFT, TPOT, e2e, throughput, memory); its 256 decode
steps are summed exactly in closed form, so it counts as 256 decode-step evaluations. The decode-step
rate is also measured directly: one decode phase (build_ops + score) over an array of contexts.

    OMP_NUM_THREADS=1 python benchmarks/bench_sweep.py
"""

import os
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import llm_roofline as lr  # noqa: E402
from llm_roofline.estimate import evaluate  # noqa: E402
from llm_roofline.roofline import score_ops  # noqa: E402
from llm_roofline.graph import Phase, build_ops  # noqa: E402
from timing import best_seconds  # noqa: E402 (benchmarks/timing.py)


def main() -> None:
    spec = lr.load_model("meta-llama/Llama-3.1-8B")
    chip = lr.load_chip("h100-sxm")
    n = 100_000
    batch = np.tile(np.arange(1, 257, dtype=np.float64), n // 256 + 1)[:n]
    prompt = np.tile(np.array([512.0, 2048.0, 8192.0, 32768.0]), n // 4)

    def decode_steps():
        for s in score_ops(build_ops(spec, Phase.decode(batch, prompt + 1)), chip):
            np.maximum(s.t_compute_s, s.t_memory_s)

    t = best_seconds(decode_steps, 5, clock=time.perf_counter)
    print(f"decode-step evaluations: {n / t:,.0f} /s  ({n:,} steps in {t * 1e3:.1f} ms; target >= 2,000,000/s)")

    t = best_seconds(lambda: evaluate(spec, chip, batch=batch, prompt_len=prompt, gen_len=257), 3,
                     clock=time.perf_counter)
    print(f"full estimates (prefill + 256 decode steps): {n / t:,.0f} /s  ({n:,} grid points in {t * 1e3:.0f} ms; "
          f"target >= 50,000/s) = {n * 256 / t:,.0f} decode steps/s summed")

    t = best_seconds(lambda: lr.estimate(spec, chip, batch=8, prompt_len=2048, gen_len=256), 5,
                     clock=time.perf_counter)
    print(f"one scalar estimate() with its op table: {t * 1e3:.1f} ms")


# ------------------------------------------------------------------------------------------- 1e6 points
AXES = dict(batch=np.arange(1, 101), prompt_len=np.linspace(128, 8192, 100).round(),
            gen_len=np.linspace(2, 1024, 100).round())


def _sum_max_affine(a0, da, b0, db, n):
    """sum_{j=0}^{n-1} max(a0 + da j, b0 + db j), closed form (the two lines cross at most once)."""
    d0, dd = a0 - b0, da - db
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(dd != 0, -d0 / np.where(dd != 0, dd, 1.0), np.where(d0 > 0, np.inf, -np.inf))
    # j where a > b: j > root (dd > 0) or j < root (dd < 0)
    k = np.clip(np.where(dd > 0, np.floor(root) + 1, np.ceil(root)), 0, n)  # first j of the upper part / count
    lo, hi = np.where(dd > 0, k, 0), np.where(dd > 0, n, k)  # a wins on [lo, hi)
    cnt = hi - lo
    sum_b = n * b0 + db * n * (n - 1) / 2
    excess = cnt * d0 + dd * (lo + hi - 1) * cnt / 2
    return sum_b + np.maximum(excess, 0.0)


def floor(batch, prompt, gen, m, peak, bw, capacity):
    """Hand-vectorized roofline of a dense GQA model (ideal efficiency): the same quantities lr.sweep returns."""
    d, h, kv, hd, ff, L, V = m["d"], m["h"], m["kv"], m["hd"], m["ff"], m["L"], m["V"]
    e = 2.0  # bf16 bytes
    mats = [(d, (h + 2 * kv) * hd), (h * hd, d), (d, 2 * ff), (ff, d)]  # qkv, o, up_gate, down
    w_layer = sum(k * n for k, n in mats) * e
    ew_layer = 13.0 * d * e  # norms (2 x read+write), residuals (2 x 2 reads + write), activation (3 of ff / d)
    act_layer = sum(k + n for k, n in mats) * e + ew_layer + 3.0 * ff * e

    def linear(T):  # one layer's GEMMs and elementwise ops at T tokens: sum of max(compute, memory) per op
        t = 0.0
        for k, n in mats:
            t = t + np.maximum(2.0 * T * k * n / peak, (k * n * e + T * (k + n) * e) / bw)
        return t + T * (ew_layer + 3.0 * ff * e) / bw

    T = batch * prompt
    pairs = prompt * (prompt + 1) / 2
    attn_pre = np.maximum(2.0 * batch * h * pairs * 2 * hd / peak,
                          batch * prompt * (2 * h * hd + 2 * kv * hd) * e / bw)
    head = np.maximum(2.0 * batch * d * V / peak, (d * V * e + batch * (d + V) * e) / bw)  # last position only
    ttft = L * (linear(T) + attn_pre + T * 2 * kv * hd * e / bw) + T * d * e / bw + head
    steps = gen - 1
    per_step = L * linear(batch) + np.maximum(2.0 * batch * d * V / peak, (d * V * e + batch * (d + V) * e) / bw)
    # attention at context c = prompt + 1 + j: compute 4 B h hd c / peak, memory B c 2 kv hd e / bw (+ q, o)
    a0, da = 4.0 * batch * h * hd * (prompt + 1) / peak, 4.0 * batch * h * hd / peak
    b0 = (batch * (prompt + 1) * 2 * kv * hd * e + batch * 2 * h * hd * e) / bw
    db = batch * 2 * kv * hd * e / bw
    decode = steps * per_step + L * _sum_max_affine(a0, da, b0, db, steps)
    e2e = ttft + decode
    weights = L * w_layer + 2 * V * d * e + (2 * L + 1) * d * e
    kv_seq = L * 2 * kv * hd * e * (prompt + gen)
    workspace = 8192 * max(act_layer / 4, (d + 2 * ff) * e) + 8192 * d * e
    per_chip = weights + workspace + batch * kv_seq
    free = capacity - weights - workspace
    import pandas as pd

    tput = batch * gen / e2e
    return pd.DataFrame(dict(batch=batch, prompt_len=prompt, gen_len=gen, ttft_s=ttft, tpot_s=decode / steps,
                             e2e_s=e2e, throughput_tokens_per_s=tput, throughput_tokens_per_s_per_chip=tput,
                             tokens_per_s_per_user=steps / decode, per_chip_bytes=per_chip,
                             fits=per_chip <= capacity, max_batch=np.floor(free / kv_seq)), copy=False)


def million(spec, chip) -> None:
    mesh = [m.ravel() for m in np.meshgrid(*AXES.values(), indexing="ij")]
    g = spec.layer_groups[0]  # a dense model: one group of layers
    m = dict(d=spec.d_model, h=g.attention.n_heads, kv=g.attention.n_kv_heads, hd=g.attention.head_dim,
             ff=g.ffn.d_ff, L=spec.n_layers, V=spec.vocab_size)
    capacity = 0.9 * chip.hbm_bytes

    def run_floor():
        return floor(*mesh, m, chip.peak_flops_per_s("bf16"), chip.hbm_bytes_per_s, capacity)

    def run_sweep():
        return lr.sweep(spec, chip, efficiency="ideal", **{k: list(v) for k, v in AXES.items()})

    t_floor = best_seconds(run_floor, 3)
    t_sweep = best_seconds(run_sweep, 2)
    f, sw = run_floor(), run_sweep()
    agree = np.nanmax(np.abs(f["tpot_s"].to_numpy() / sw["tpot_s"].to_numpy() - 1))
    agree_ttft = np.nanmax(np.abs(f["ttft_s"].to_numpy() / sw["ttft_s"].to_numpy() - 1))
    print(f"1e6-point lr.sweep (ideal): {t_sweep:.2f} s CPU; hand-vectorized numpy floor: {t_floor:.2f} s CPU; "
          f"ratio {t_sweep / t_floor:.1f}x (target <= 3x). The floor agrees within {agree_ttft:.1%} (TTFT), "
          f"{agree:.1%} (TPOT): it leaves out rope, the KV write's compute and the embedding detail")
    t_cal = best_seconds(lambda: lr.sweep(spec, chip, **{k: list(v) for k, v in AXES.items()}), 1)
    print(f"1e6-point lr.sweep (calibrated, the default): {t_cal:.2f} s CPU")


def peak_bytes_per_point() -> None:
    """Peak RSS growth of a fresh process over one 1e6-point sweep (the default, calibrated), per point."""
    import json

    axes = json.dumps({k: [float(x) for x in v] for k, v in AXES.items()})
    code = ("import json, resource, llm_roofline as lr\n"
            "lr.sweep('meta-llama/Llama-3.1-8B', 'h100-sxm', batch=[1, 2], prompt_len=[128], gen_len=[2])\n"
            "r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            f"df = lr.sweep('meta-llama/Llama-3.1-8B', 'h100-sxm', **json.loads({axes!r}))\n"
            "print(len(df), (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0) * 1024)")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.environ.get("BENCH_PYTHONPATH", root)})
    n, grow = (float(x) for x in out.stdout.split())
    print(f"peak memory of a 1e6-point sweep (calibrated): {grow / 1e9:.2f} GB RSS growth = {grow / n:.0f} bytes "
          f"per point (target <= 500; the returned DataFrame alone is ~130 bytes per point)")


if __name__ == "__main__":
    peak_bytes_per_point()  # first: a child started by a large parent inherits its peak RSS (Linux keeps it over exec)
    main()
    million(lr.load_model("meta-llama/Llama-3.1-8B"), lr.load_chip("h100-sxm"))
