"""Throughput of one kernel under sustained load, against its first seconds: does a GPU hold the speed the kernel
tables measured in short bursts (the fits' data) through the minutes a serving run lasts? Maintainers run it where
they have a GPU (PyTorch with CUDA; nvidia-ml-py for clocks, power and temperature where installed).

    python3 benchmarks/gpu_sustained.py OUT.csv [--gemm-s 60] [--copy-s 20]

Phases: bf16 8192 x 8192 x 8192 matrix products (cuBLAS, random inputs) back to back for --gemm-s seconds; one
Llama-3.1-8B layer's kernels (PyTorch eager: GEMMs, SDPA, SiLU, adds) on a 4096-token prefill, then on a decode step
of 64 sequences over 4096-token caches, --layer-s seconds each; device-to-device copies of 2 GiB for --copy-s
seconds. Each half second of work is one row: TFLOP/s or
TB/s (bytes read + written), SM clock (MHz), power (W) and temperature (C) read right after it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def _sensors():
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return lambda: dict(sm_mhz=pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                            power_w=pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,
                            temp_c=pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU))
    except Exception as e:  # no NVML: rates only
        print(f"no NVML sensors ({e})", file=sys.stderr)
        return dict


def _llama_layer(torch, tokens: int, seqs: int):
    """One Llama-3.1-8B decoder layer's main kernels (bf16; hidden 4096, 32 query / 8 KV heads of 128, MLP 14336):
    qkv, attention over `tokens` keys per sequence (causal prefill of `tokens` tokens when seqs = 1, else one new
    token per sequence of `seqs` over a 4096-token cache), o, residual add,
    gate_up, SiLU * up, down, residual add. Returns (run, work): work is FLOPs for prefill, HBM bytes (weights +
    KV cache read) for decode."""
    F = torch.nn.functional
    h, hq, hkv, d, f = 4096, 32, 8, 128, 14336
    w = {k: torch.randn(n, kk, device="cuda", dtype=torch.bfloat16) * 0.02
         for k, (n, kk) in {"qkv": ((hq + 2 * hkv) * d, h), "o": (h, hq * d), "gu": (2 * f, h),
                            "down": (h, f)}.items()}
    prefill = seqs == 1
    rows, keys = (tokens, tokens) if prefill else (seqs, 4096)
    x = torch.randn(rows, h, device="cuda", dtype=torch.bfloat16)
    if not prefill:
        cache = [torch.randn(seqs, hkv, keys, d, device="cuda", dtype=torch.bfloat16) for _ in range(2)]

    def run():
        qkv = F.linear(x, w["qkv"])
        q, k, v = qkv.split((hq * d, hkv * d, hkv * d), dim=-1)
        if prefill:
            q, k, v = (t.view(1, tokens, -1, d).transpose(1, 2) for t in (q, k, v))
            att = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            att = F.scaled_dot_product_attention(q.view(seqs, hq, 1, d), cache[0], cache[1], enable_gqa=True)
        y = x + F.linear(att.transpose(1, 2).reshape(rows, hq * d) if prefill else att.reshape(rows, hq * d), w["o"])
        g, u = F.linear(y, w["gu"]).chunk(2, dim=-1)
        return y + F.linear(F.silu(g) * u, w["down"])

    weights = sum(t.numel() for t in w.values())
    if prefill:
        return run, 2.0 * tokens * weights + 2.0 * 2 * hq * d * tokens * (tokens + 1) / 2
    return run, 2.0 * weights + 2.0 * 2 * seqs * hkv * keys * d


def run(out: Path, gemm_s: float, copy_s: float, layer_s: float) -> int:
    import pandas as pd
    import torch

    if not torch.cuda.is_available():
        print("gpu_sustained needs PyTorch with a CUDA GPU", file=sys.stderr)
        return 2
    out.write_text("")  # an unwritable path fails before any timing
    sensors = _sensors()
    n = 8192
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    src = torch.randn(2**30, device="cuda", dtype=torch.bfloat16)  # 2 GiB
    dst = torch.empty_like(src)
    prefill, prefill_flops = _llama_layer(torch, tokens=4096, seqs=1)
    decode, decode_bytes = _llama_layer(torch, tokens=1, seqs=64)
    phases = (("gemm_bf16_8192", gemm_s, lambda: torch.mm(a, b), 2.0 * n**3, "TFLOP/s", 1e12),
              ("llama8b_layer_prefill_4096", layer_s, prefill, prefill_flops, "TFLOP/s", 1e12),
              ("llama8b_layer_decode_b64_kv4096", layer_s, decode, decode_bytes, "TB/s (weights + KV)", 1e12),
              ("copy_2GiB", copy_s, lambda: dst.copy_(src), 2.0 * src.numel() * 2, "TB/s", 1e12))
    rows, t0 = [], time.time()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for name, seconds, op, work, unit, scale in phases:
        try:
            op()
        except RuntimeError as e:  # a kernel this PyTorch lacks for the shape: the other phases still run
            print(f"{name}: skipped ({str(e).splitlines()[0][:120]})", flush=True)
            continue
        torch.cuda.synchronize()
        time.sleep(2.0)  # idle first: the first window is a short burst after rest, as a kernel table's
        per_window, began = 8, time.time()
        while time.time() - began < seconds:
            start.record()
            for _ in range(per_window):
                op()
            end.record()
            end.synchronize()
            s = start.elapsed_time(end) / 1e3
            rows.append(dict(phase=name, t_s=round(time.time() - began, 2), calls=per_window,
                             rate=work * per_window / s / scale, unit=unit, **sensors()))
            per_window = max(1, round(per_window * 0.5 / s))  # windows of ~0.5 s
        mine = [r for r in rows if r["phase"] == name]
        if not mine:  # no window finished within the phase's seconds
            continue
        first, last = mine[0], mine[-1]
        print(f"[{time.time() - t0:5.1f} s] {name}: first window {first['rate']:.3g} {unit}, last {last['rate']:.3g} "
              f"{unit} ({last['rate'] / first['rate']:.3f}x) {last.get('sm_mhz', '')} MHz "
              f"{last.get('power_w', 0):.0f} W {last.get('temp_c', '')} C", flush=True)
        out.write_text(pd.DataFrame(rows).to_csv(index=False, float_format="%.6g"))  # each phase kept: a timeout
        #   loses only the phase it stopped
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--gemm-s", type=float, default=60.0, help="seconds of back-to-back matrix products (60)")
    ap.add_argument("--copy-s", type=float, default=20.0, help="seconds of back-to-back copies (20)")
    ap.add_argument("--layer-s", type=float, default=30.0,
                    help="seconds of each Llama-3.1-8B layer loop, prefill and decode (30)")
    a = ap.parse_args(argv)
    if not all(0 < v <= 3600 for v in (a.gemm_s, a.copy_s, a.layer_s)):
        ap.error("--gemm-s, --copy-s and --layer-s must be in (0, 3600]")
    try:
        return run(a.out, a.gemm_s, a.copy_s, a.layer_s)
    except ImportError:
        print("gpu_sustained needs PyTorch with a CUDA GPU (not installed here)", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"gpu_sustained: cannot write {a.out}: {e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
