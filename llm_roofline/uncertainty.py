"""The uncertainty band of a calibrated estimate: each op's family band (band_of: the held-out error of its fit,
wider where borrowed) weighted by the op's share of its phase, carried to the headline numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .efficiency import (BORROWED, FAMILIES, IDEAL_FIT, NOT_MEASURED, TPU_DEFAULT, UNCALIBRATED, CalibratedModel,
                         FamilyFit, crosses_domain, dequantizing, family_of)
from .roofline import score_op

if TYPE_CHECKING:
    from .hardware import Chip
    from .ops import Op

# A family's band is (err_p10, err_p90): the 10th / 90th percentile of measured / calibrated time on shapes held
# out of its fit (benchmarks/refit_chips.py: grouped 5-fold; `calibrate` stores in-sample percentiles). Borrowed
# fits are wider: from another chip of the family default, the band is stretched by BORROWED_CHIP_WIDEN (the
# leave-one-GPU-out error of benchmarks/validate.py: held-out p90 ~ 1.3x the own-chip one); from another
# family (attention borrowing gemm) or without any fit the band is an ASSUMPTION that covers the errors
# measured before the families were calibrated (attention 63 % too fast, all-reduce 3x too slow).
BORROWED_CHIP_WIDEN = (0.85, 1.25)  # multiplies (p10, p90) of a fit borrowed from another chip
BORROWED_FAMILY_BAND = (0.7, 2.5)  # a family priced with another family's fit (attention <- gemm)
UNCALIBRATED_BAND = (0.7, 2.0)  # no fit at all (ideal efficiencies, TPU defaults, multi-node collectives)


def band_of(p: FamilyFit, src: str) -> tuple[float, float]:
    """(p10, p90) multipliers of a family's calibrated time, from its fit and where the fit comes from
    (CalibratedModel.sources: '<chip> fit', 'borrowed: <chip>', 'borrowed: <family>', 'uncalibrated')."""
    if src in ("", UNCALIBRATED) or p is IDEAL_FIT or p is TPU_DEFAULT:
        return UNCALIBRATED_BAND
    if src.startswith(BORROWED) and src[len(BORROWED):] in FAMILIES or p.fitted_on.startswith(NOT_MEASURED):
        return BORROWED_FAMILY_BAND
    lo, hi = min(p.err_p10, 1.0), max(p.err_p90, 1.0)
    if src.startswith(BORROWED):
        lo, hi = lo * BORROWED_CHIP_WIDEN[0], hi * BORROWED_CHIP_WIDEN[1]
    return lo, hi


def family_band(model: CalibratedModel, family: str) -> tuple[float, float]:
    """(p10, p90) of measured / calibrated time for one family of a model (band_of; remembered in model.bands)."""
    band = model.bands.get(family)
    if band is None:
        band = model.bands[family] = band_of(model.fit_for(family), model.sources.get(family, UNCALIBRATED))
    return band


def op_band(model: CalibratedModel, op: "Op", chip: Chip) -> tuple[float, float]:
    """The band of the family that prices `op` (multi-node collectives are not calibrated; a weight-only GEMM
    whose tensor-core ceiling comes from the Marlin MoE fit, dequant.marlin_compute_max, is priced by another
    family's measurements where it is compute-bound: no dense Marlin GEMM was timed; so is a recurrent mixer's scan,
    priced with the attention fit, which FlashAttention's kernels alone were timed for)."""
    if op.kind == "collective" and crosses_domain(op, chip):
        return UNCALIBRATED_BAND
    if op.name.startswith("mixer.scan"):  # Mamba-2 SSD, Gated DeltaNet, KDA, lightning, mLSTM, RG-LRU: none measured
        return BORROWED_FAMILY_BAND
    family = family_of(op)
    if dequantizing(op, family) and model.dequant_cap(chip, op.weight_dtype) < 1.0:
        s = score_op(op, chip, model.for_op(op, chip))
        if np.any(s.t_compute_s > s.t_memory_s):  # compute-bound somewhere: at the borrowed ceiling
            return BORROWED_FAMILY_BAND
    return family_band(model, family)


def phase_band(model, op_times, chip: Chip) -> tuple[float, float]:
    """(p10, p90) multiplier of a phase: each op's family band weighted by its share of the phase time
    (errors of one family move together: the bands add, they are not averaged in quadrature)."""
    total = sum(t for _, t in op_times)
    if total <= 0:
        return 1.0, 1.0
    lo = hi = 0.0
    for op, t in op_times:
        b = op_band(model, op, chip)
        lo, hi = lo + t / total * b[0], hi + t / total * b[1]
    return lo, hi


def uncertainty_of(model, phases, head, chip: Chip) -> dict:
    """est.uncertainty: p10 / p90 of the headline numbers under the calibrated model.

    phases: {"prefill": [(op, seconds of that op in the phase, all instances)], "decode": [...]} and head the
    calibrated headline (ttft_s, tpot_s, e2e_s, throughput_tokens_per_s). Each phase's multiplier is
    phase_band; the headline numbers take them as headline_band says. Returns {name: {"p10": value, "p90": value}} for
    the four headline numbers (None where the headline is None) and "multipliers": {phase: [p10, p90]}."""
    mult = {name: phase_band(model, ops, chip) for name, ops in phases.items() if ops}
    band = headline_band(mult.get("prefill", (1.0, 1.0)), mult.get("decode", (1.0, 1.0)), head)
    out = {k: None if v is None else {"p10": float(v[0]), "p90": float(v[1])} for k, v in band.items()}
    out["multipliers"] = {k: [float(v[0]), float(v[1])] for k, v in mult.items()}
    return out


def headline_band(pre, dec, head) -> dict:
    """(p10, p90) of each headline number from the prefill and decode multipliers (pre, dec: (p10, p90) each): TTFT
    takes prefill's, TPOT decode's, e2e the time-weighted mix, throughput the inverse of e2e's (its p10 from e2e's
    p90). Values may be arrays (a sweep's rows); a headline that is None stays None."""
    ttft, tpot, e2e, thr = (head.get(k) for k in ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s"))
    out = {"ttft_s": _scaled(ttft, pre), "tpot_s": _scaled(tpot, dec), "e2e_s": None, "throughput_tokens_per_s": None}
    if e2e is not None and ttft is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            dec_s = np.maximum(np.asarray(e2e) - ttft, 0.0)
            mix = tuple(np.where(np.asarray(e2e) > 0, (ttft * pre[i] + dec_s * dec[i]) / e2e, 1.0) for i in (0, 1))
        out["e2e_s"] = (e2e * mix[0], e2e * mix[1])
        out["throughput_tokens_per_s"] = None if thr is None else (thr / mix[1], thr / mix[0])
    return out


def _scaled(value, m):
    return None if value is None else (value * m[0], value * m[1])


def widened_band(nominal, k_lo, k_hi, band: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """(p10, p90) of a number whose kernels' band is (k_lo, k_hi) and whose serving model errs by `band` (measured /
    modelled p10, p90), the two independent: their log spreads add in quadrature. A rate the load fixes (an open
    loop's throughput: k_lo = k_hi = nominal) keeps it; an infinite kernel bound (saturated) stays infinite."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fixed = (k_lo == nominal) & (k_hi == nominal)
        down = np.sqrt(np.log(nominal / k_lo) ** 2 + np.log(band[0]) ** 2)
        up = np.sqrt(np.log(k_hi / nominal) ** 2 + np.log(band[1]) ** 2)
        return (np.where(fixed, nominal, nominal * np.exp(-down)), np.where(fixed, nominal, nominal * np.exp(up)))


def serving_band_at(anchors, bands, utilization) -> tuple[np.ndarray, np.ndarray]:
    """(p10, p90) arrays of the serving model's own band at each point's prefill utilization (the time share of the
    steps carrying prompt tokens, (n,)): `bands` ((p10, p90) per anchor) at the increasing `anchors`, their logs
    interpolated linearly between them and held beyond the ends. A point without one (NaN) takes the last anchor's:
    a queue whose prompts fill the steps."""
    u = np.nan_to_num(np.asarray(utilization, dtype=np.float64), nan=anchors[-1])
    return tuple(np.exp(np.interp(u, anchors, np.log([b[i] for b in bands]))) for i in (0, 1))


def serving_band_from(measured, nominal, k_lo, k_hi, weight, outside: float = 0.10) -> tuple[float, float]:
    """The serving model's own band (measured / modelled p10, p90) that widened_band needs so that at most `outside`
    of the rows' weight falls below its p10 and at most `outside` above its p90 (each side on its own; arrays (n,)):
    a row measured at r x nominal lies inside once log(band) reaches sqrt(log(r)^2 - (its kernels' log spread)^2)
    on its side. The inverse of widened_band over a set of measured rows (benchmarks/validate_serving.py)."""
    r = np.log(np.asarray(measured, dtype=np.float64) / nominal)
    w = np.asarray(weight, dtype=np.float64) / np.sum(weight)

    def side(spread, on_side):  # the smallest log band leaving at most `outside` of the weight beyond it
        need = np.where(on_side, np.sqrt(np.maximum(r ** 2 - spread ** 2, 0.0)), 0.0)
        order = np.argsort(-need, kind="stable")
        k = np.searchsorted(np.cumsum(w[order]), outside + 1e-12, side="right")  # rows that may stay outside
        return float(need[order[k]]) if k < need.size else 0.0

    with np.errstate(divide="ignore"):
        return (float(np.exp(-side(np.log(nominal / np.asarray(k_lo)), r < 0))),
                float(np.exp(side(np.log(np.asarray(k_hi) / nominal), r > 0))))
