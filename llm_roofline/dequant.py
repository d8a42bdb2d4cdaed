"""Dequantizing GEMM kernels: a GEMM whose weights are stored narrower than its compute dtype (int4 / int8 / fp8
weights, bf16 compute: Marlin, Machete, AWQ / GPTQ, fp8-weight / bf16-compute) and its efficiency under the chip's
gemm fit (efficiency.CalibratedModel prices such a GEMM with dequant_efficiency)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
# Which kernel: vLLM's mixed-precision linears try Machete before Marlin (model_executor/kernels/linear
# _POSSIBLE_KERNELS); Machete (CUTLASS, wgmma) builds and runs on compute capability 9.0 only (Hopper) and takes
# integer weights (uint4 / uint8 types), where its tensor-core ceiling is the bf16 GEMM's. Everything else runs
# Marlin (fp8 / fp4 weights with 16-bit activations: MarlinFP8, MarlinNvFp4 / MxFp4 on Hopper too), whose mma.sync
# tensor path reaches what vLLM's Marlin MoE kernels reach in the chip's moe_int4 fit: 0.146 of B200's bf16 peak
# (~330 TFLOP/s), 0.31 of H100's, 0.65 of L40S's (where mma.sync is the peak). marlin_compute_max returns it.
MACHETE_FAMILIES = ("hopper",)
MARLIN_ONLY_WEIGHTS = ("fp8", "fp4")  # float weight dtypes Machete does not take


def weight_bits_of(op: "Op") -> float:
    """Bits per stored weight element of a GEMM op, as ops.gemm records them (block scales included); 0: unknown."""
    return float(getattr(op, "weight_bits", 0.0) or 0.0)


def narrower_weights(bits: float, compute_dtype: str) -> bool:
    """Whether weights of `bits` per element are stored narrower than `compute_dtype` (weight-only quantization)."""
    return compute_dtype in DTYPE_BITS and 0 < bits < _NARROW_FRACTION * DTYPE_BITS[compute_dtype]


def weight_only_quantized(op: "Op") -> bool:
    """Whether a GEMM's weights are stored narrower than its compute dtype (int4/int8/fp8 weights, bf16 compute)."""
    return narrower_weights(weight_bits_of(op), op.compute_dtype)


def marlin_compute_max(chip: Chip, marlin, measured_on: "Chip | None", weight_dtype: str = "") -> float:
    """The tensor-core ceiling (fraction of the chip's bf16 peak) of the dequantizing kernel vLLM runs on `chip` for
    `weight_dtype` weights: 1 (no ceiling beyond the GEMM fit's) off NVIDIA and for Machete (Hopper, integer or
    unknown weights); else the compute_max of `marlin`, the chip's moe_int4 fit (Marlin), when it was measured on a
    chip of the same family (`measured_on`, None: not measured on a chip, e.g. borrowed from another family)."""
    machete = chip.family in MACHETE_FAMILIES and weight_dtype not in MARLIN_ONLY_WEIGHTS
    if chip.vendor != "nvidia" or machete or marlin is None or measured_on is None \
            or measured_on.family != chip.family:
        return 1.0
    return float(marlin.compute_max)


def dequant_efficiency(p, op: "Op", chip: Chip, label: str, compute_cap: float = 1.0) -> Efficiency:
    """A dequantizing GEMM at p, the chip's gemm fit (efficiency.FamilyFit): memory at the GEMM's memory efficiency
    (tokens as for any GEMM), compute at 2T / (2T / min(compute_max, compute_cap) + DEQUANT_FLOP_PER_WEIGHT *
    (peak_matrix / peak_vector) / compute_max): the FLOP time of the tensor cores at the dequantizing kernel's
    ceiling (compute_cap: marlin_compute_max) plus DEQUANT_FLOP_PER_WEIGHT vector operations per weight element
    (k * n = flops / 2T), never the padded rows."""
    t = _float(op.tokens)
    ratio = chip.peak_flops_per_s(op.compute_dtype) / chip.peak_flops_per_s("vector")
    tt = _where(t > 0, t, 1.0)  # tokens unknown (<= 0): the ceiling, below (no 0 / 0)
    top = min(p.compute_max, compute_cap)  # the tensor cores' share; the vector units' at the GEMM fit's
    compute = 2.0 * tt / (2.0 * tt / top + DEQUANT_FLOP_PER_WEIGHT * ratio / p.compute_max)
    return Efficiency(compute=_where(t > 0, compute, top), memory=p.memory(op.tokens),
                      comm=p.comm_max, overhead_s=p.overhead_s,
                      label=label + "; weight-only quantized GEMM: packed-weight read + dequant")
