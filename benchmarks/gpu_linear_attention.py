"""Linear-attention cores timed on a GPU with flash-linear-attention's Triton kernels (fla 0.6, the library vLLM's
Gated DeltaNet and KDA layers are built on): one layer's chunked prefill (chunk_gated_delta_rule, chunk_kda) and
its decode step (fused_recurrent_*), against the estimate's `mixer.scan` op. Maintainers run it where they have a
GPU and fla (carried as a wheel where nothing can be installed).

    python3 benchmarks/gpu_linear_attention.py OUT.csv

Shapes: Qwen3-Next-80B's Gated DeltaNet (16 key heads, 32 value heads, 128 x 128; tp 1) and Kimi-Linear-48B's KDA
(32 heads, 128 x 128), bf16 q / k / v, the gates in log space, beta after its sigmoid, a float32 state; prefill of
one sequence of T tokens, decode of B sequences (one token each, from a random state). Median of
triton.testing.do_bench (its warm-up runs the autotuner first). Never fitted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = [("gdn", "prefill", 1, t) for t in (2048, 8192, 32768)] + [("gdn", "decode", b, 1) for b in (1, 16, 64, 256)] \
    + [("kda", "prefill", 1, t) for t in (2048, 8192, 32768)] + [("kda", "decode", b, 1) for b in (1, 64, 256)]
H_K, H_V, D = {"gdn": 16, "kda": 32}, 32, 128


def _inputs(torch, kind: str, b: int, t: int):
    dev, bf = "cuda", torch.bfloat16
    hk = H_K[kind]
    q, k = (torch.nn.functional.normalize(torch.randn(b, t, hk, D, device=dev, dtype=bf), dim=-1) for _ in range(2))
    v = torch.randn(b, t, H_V, D, device=dev, dtype=bf)
    g_shape = (b, t, H_V) if kind == "gdn" else (b, t, H_V, D)
    g = -torch.rand(g_shape, device=dev, dtype=torch.float32) * 0.1  # log decay
    beta = torch.rand(b, t, H_V, device=dev, dtype=bf)
    state = torch.randn(b, H_V, D, D, device=dev, dtype=torch.float32) * 0.01
    return q, k, v, g, beta, state


def measure(out: Path) -> int:
    import pandas as pd

    from llm_roofline.files import write_text

    try:
        import torch
        import triton

        from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
        from fla.ops.kda import chunk_kda, fused_recurrent_kda
    except ImportError as e:
        print(f"gpu_linear_attention needs PyTorch, Triton and flash-linear-attention ({e})", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_linear_attention needs a CUDA GPU", file=sys.stderr)
        return 2
    write_text(out, "")  # an unwritable path fails in one line before any timing

    fns = {("gdn", "prefill"): chunk_gated_delta_rule, ("gdn", "decode"): fused_recurrent_gated_delta_rule,
           ("kda", "prefill"): chunk_kda, ("kda", "decode"): fused_recurrent_kda}
    rows = []
    for kind, phase, b, t in CASES:
        q, k, v, g, beta, state = _inputs(torch, kind, b, t)
        fn = fns[(kind, phase)]
        try:
            call = (lambda: fn(q, k, v, g=g, beta=beta, initial_state=state, output_final_state=True))
            call()
            torch.cuda.synchronize()
            ms = triton.testing.do_bench(call, warmup=50, rep=200, return_mode="median")
        except Exception as e:  # noqa: BLE001 - report the case, keep the others
            print(f"{kind} {phase} B {b} T {t}: failed {e!r}"[:300], flush=True)
            continue
        rows.append(dict(gpu=torch.cuda.get_device_name(), kind=kind, phase=phase, batch=b, tokens=t,
                         key_heads=H_K[kind], value_heads=H_V, head_dim=D, measured_s=ms / 1e3))
        print(f"{kind} {phase:7s} B {b:3d} T {t:6d}: {ms * 1e3:9.1f} us", flush=True)
        write_text(out, pd.DataFrame(rows).to_csv(index=False, float_format="%.6g"))
        torch.cuda.empty_cache()
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    a = ap.parse_args(argv)
    from llm_roofline.errors import RooflineError

    try:
        return measure(a.out)
    except RooflineError as e:  # an unwritable OUT: one line
        print(f"gpu_linear_attention: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
