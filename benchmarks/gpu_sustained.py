"""Throughput of one kernel under sustained load, against its first seconds: does a GPU hold the speed the kernel
tables measured in short bursts (the fits' data) through the minutes a serving run lasts? Maintainers run it where
they have a GPU (PyTorch with CUDA; nvidia-ml-py for clocks, power and temperature where installed).

    python3 benchmarks/gpu_sustained.py OUT.csv [--gemm-s 60] [--copy-s 20]

Phase 1: bf16 8192 x 8192 x 8192 matrix products (cuBLAS, random inputs) back to back for --gemm-s seconds;
phase 2: device-to-device copies of 2 GiB for --copy-s seconds. Each half second of work is one row: TFLOP/s or
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


def run(out: Path, gemm_s: float, copy_s: float) -> int:
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
    phases = (("gemm_bf16_8192", gemm_s, lambda: torch.mm(a, b), 2.0 * n**3, "TFLOP/s", 1e12),
              ("copy_2GiB", copy_s, lambda: dst.copy_(src), 2.0 * src.numel() * 2, "TB/s", 1e12))
    rows, t0 = [], time.time()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for name, seconds, op, work, unit, scale in phases:
        op()
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
        first, last = rows[[r["phase"] for r in rows].index(name)], rows[-1]
        print(f"[{time.time() - t0:5.1f} s] {name}: first window {first['rate']:.3g} {unit}, last {last['rate']:.3g} "
              f"{unit} ({last['rate'] / first['rate']:.3f}x) {last.get('sm_mhz', '')} MHz "
              f"{last.get('power_w', 0):.0f} W {last.get('temp_c', '')} C", flush=True)
    import pandas as pd

    out.write_text(pd.DataFrame(rows).to_csv(index=False, float_format="%.6g"))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--gemm-s", type=float, default=60.0, help="seconds of back-to-back matrix products (60)")
    ap.add_argument("--copy-s", type=float, default=20.0, help="seconds of back-to-back copies (20)")
    a = ap.parse_args(argv)
    if not (0 < a.gemm_s <= 3600 and 0 < a.copy_s <= 3600):
        ap.error("--gemm-s and --copy-s must be in (0, 3600]")
    try:
        return run(a.out, a.gemm_s, a.copy_s)
    except ImportError:
        print("gpu_sustained needs PyTorch with a CUDA GPU (not installed here)", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"gpu_sustained: cannot write {a.out}: {e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
