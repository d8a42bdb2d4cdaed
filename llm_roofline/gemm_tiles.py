"""GEMM kernels' output tiles the efficiency model prices (efficiency.py, compute_tile_rule): which tile a kernel runs
for an M x N output, and the waves of tiles the chip's SMs (Chip.onchip_units) run. A wave takes one tile's time
however few SMs it keeps busy, so a GEMM of few tiles, or one wave and a sliver, runs below the chip's peak:

    tiles = ceil(M / TM) * ceil(N / TN),   waves = ceil(tiles / SMs)
    compute factor = M * N / (waves * SMs * TM * TN)   (<= 1: the useful share of the tile slots the waves run)
    overhead       = overhead_per_wave_s * waves + overhead_per_tall_output_s * M * N where TM >= TALL_TILE_ROWS

Rule 1: vLLM's per-tensor fp8 GEMM on Ada (SM 8.9; vllm-project/vllm csrc/quantization/cutlass_w8a8/
scaled_mm_c2x_sm89_fp8_dispatch.cuh, cutlass_gemm_sm89_fp8_dispatch): CUTLASS 2.x configs picked by
mp2 = max(32, next power of two of M) and, within each, by np2 = the next power of two of N (TM x TN):

    M <= 32        (sm89_fp8_config_M32)      32 x 128 where 8192 < np2 <= 16384, else 32 x 64
    32 < M <= 64   (sm89_fp8_config_M64)      64 x 128 where 8192 < np2 <= 16384, else 64 x 64
    64 < M <= 128  (sm89_fp8_config_M128)     64 x 128 to np2 8192, 128 x 128 to 16384, 128 x 64 beyond
    128 < M <= 256 (sm89_fp8_config_M256)     64 x 128 to np2 4096, 128 x 128 beyond
    M > 256        (sm89_fp8_config_default)  256 x 128 where 4096 < np2 <= 8192 (3 stages), else 128 x 128

(The M64 config's source tests np2 <= 8196, the same as 8192 for powers of two.) The 256-row tile writes its outputs
at ~2x the others' time per element on an L40S (M 4097, K 128: 13.2 ps an output at N 5120-8192, 5.6-7.2 at N 4096
and 10240-65536): overhead_per_tall_output_s, fitted; cause not derived.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .roofline import Efficiency
from .units import f64 as _float

SM89_FP8 = 1.0
TILE_RULES = (0.0, SM89_FP8)  # 0: no tile grid (the fit's smooth factors)
TALL_TILE_ROWS = 256.0


def _pow2_ceil(x: np.ndarray) -> np.ndarray:
    return 2.0 ** np.ceil(np.log2(np.maximum(x, 1.0)))


def sm89_fp8_tile(m, n) -> tuple[np.ndarray, np.ndarray]:
    """(TM, TN) of vLLM's SM89 CUTLASS fp8 GEMM for M x N outputs (the module docstring's table)."""
    mp2, np2 = np.maximum(32.0, _pow2_ceil(_float(m))), _pow2_ceil(_float(n))
    mid = (np2 > 8192) & (np2 <= 16384)
    wide_mid = np.where(mid, 128.0, 64.0)
    conds = [mp2 <= 32, mp2 <= 64, mp2 <= 128, mp2 <= 256]
    tm = np.select(conds, [32.0, 64.0, np.where(np2 <= 8192, 64.0, 128.0), np.where(np2 <= 4096, 64.0, 128.0)],
                   np.where((np2 > 4096) & (np2 <= 8192), 256.0, 128.0))
    tn = np.select(conds, [wide_mid, wide_mid, np.where(np2 <= 16384, 128.0, 64.0), 128.0], 128.0)
    return tm, tn


def tile_grid(m, n, units: float, rule: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(waves, compute factor, tall) of M x N outputs under a kernel's tile rule on `units` SMs (module docstring);
    tall is 1 where the tile has TALL_TILE_ROWS rows or more; M, N below 1 count as 1. (0, 1, 0) where M or N is
    unknown (<= 0), the rule is none or the chip's SMs are unknown."""
    m, n = np.asarray(_float(m)), np.asarray(_float(n))
    if rule != SM89_FP8 or not units or units <= 0:
        return np.float64(0.0), np.float64(1.0), np.float64(0.0)
    known = (m > 0) & (n > 0)
    mm, nn = (np.where(known, np.maximum(x, 1.0), 1.0) for x in (m, n))  # a kernel runs >= 1 row and column
    tm, tn = sm89_fp8_tile(mm, nn)
    waves = np.ceil(np.ceil(mm / tm) * np.ceil(nn / tn) / units)
    factor = np.minimum(1.0, mm * nn / (waves * units * tm * tn))
    return (np.where(known, waves, 0.0)[()], np.where(known, factor, 1.0)[()],
            np.where(known & (tm >= TALL_TILE_ROWS), 1.0, 0.0)[()])


def tiled(e: Efficiency, p, m, n, units: float | None) -> Efficiency:
    """e of a GEMM of M x N outputs under fit p's tile rule (p.compute_tile_rule) on `units` SMs: its compute fraction
    times the tile grid's factor, its overhead plus a time per wave and per output of a tall tile (tile_grid); e as it
    is without a rule."""
    if not p.compute_tile_rule:
        return e
    waves, factor, tall = tile_grid(m, n, units or 0.0, p.compute_tile_rule)
    outs = np.maximum(_float(m), 0.0) * np.maximum(_float(n), 0.0)
    return replace(e, compute=e.compute * factor,
                   overhead_s=e.overhead_s + p.overhead_per_wave_s * waves + p.overhead_per_tall_output_s * outs * tall)
