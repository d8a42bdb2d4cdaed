"""Dequantizing GEMM kernels: a GEMM whose weights are stored narrower than its compute dtype (int4 / int8 / fp8
weights, bf16 compute: Marlin, Machete, AWQ / GPTQ, fp8-weight / bf16-compute) and its efficiency under the chip's
gemm fit (efficiency.CalibratedModel prices such a GEMM with dequant_efficiency)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .roofline import Efficiency, where as _where
from .units import DTYPE_BITS, f64 as _float

if TYPE_CHECKING:
    from .hardware import Chip
    from .ops import Op


# Dequantizing GEMM kernels (Marlin, Machete, AWQ/GPTQ, fp8-weight / bf16-compute) stream the packed weights and
# expand them to the compute dtype in registers; at small batch their time is the packed-weight read (Marlin:
# near-ideal 4x over fp16 up to batch 16-32, Frantar et al. 2024, arXiv 2408.11743). They never pay the bf16
# GEMM's padded-rows term (compute_tokens_half: an M-tile of ~64-160 rows at batch 1), which would make an
# int4 matrix-vector product compute-bound. Their compute term is the tensor-core FLOPs at compute_max plus
# the dequantization on the vector units: DEQUANT_FLOP_PER_WEIGHT operations per weight element (unpack
# shift/mask, int->float convert, scale multiply, zero-point subtract: an ASSUMPTION, not measured).
DEQUANT_FLOP_PER_WEIGHT = 4.0
_NARROW_FRACTION = 0.75  # weights narrower than 3/4 of the compute dtype count as weight-only quantized


def weight_bits_of(op: "Op") -> float:
    """Bits per stored weight element of a GEMM op, as ops.gemm records them (block scales included); 0: unknown."""
    return float(getattr(op, "weight_bits", 0.0) or 0.0)


def weight_only_quantized(op: "Op") -> bool:
    """Whether a GEMM's weights are stored narrower than its compute dtype (int4/int8/fp8 weights, bf16 compute)."""
    return op.compute_dtype in DTYPE_BITS and 0 < weight_bits_of(op) < _NARROW_FRACTION * DTYPE_BITS[op.compute_dtype]


def dequant_efficiency(p, op: "Op", chip: Chip, label: str) -> Efficiency:
    """A dequantizing GEMM at p, the chip's gemm fit (efficiency.FamilyFit): memory at the GEMM's memory efficiency
    (tokens as for any GEMM), compute at compute_max * 2T / (2T + DEQUANT_FLOP_PER_WEIGHT * peak_matrix /
    peak_vector): the FLOP time of the tensor cores plus DEQUANT_FLOP_PER_WEIGHT vector operations per weight element
    (k * n = flops / 2T), never the padded rows."""
    t = _float(op.tokens)
    ratio = chip.peak_flops_per_s(op.compute_dtype) / chip.peak_flops_per_s("vector")
    tt = _where(t > 0, t, np.inf)  # tokens unknown: no dequant share (compute_max)
    compute = p.compute_max * 2.0 * tt / (2.0 * tt + DEQUANT_FLOP_PER_WEIGHT * ratio)
    return Efficiency(compute=_where(t > 0, compute, p.compute_max), memory=p.memory(op.tokens),
                      comm=p.comm_max, overhead_s=p.overhead_s,
                      label=label + "; weight-only quantized GEMM: packed-weight read + dequant")
