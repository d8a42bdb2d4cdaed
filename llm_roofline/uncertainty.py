"""The uncertainty band of a calibrated estimate: each op's family band (efficiency.band_of: the held-out error of
its fit, wider where borrowed) weighted by the op's share of its phase, carried to the headline numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .hardware import Chip


def phase_band(model, op_times, chip: Chip) -> tuple[float, float]:
    """(p10, p90) multiplier of a phase: each op's family band weighted by its share of the phase time
    (errors of one family move together: the bands add, they are not averaged in quadrature)."""
    total = sum(t for _, t in op_times)
    if total <= 0:
        return 1.0, 1.0
    lo = hi = 0.0
    for op, t in op_times:
        b = model.op_band(op, chip)
        lo, hi = lo + t / total * b[0], hi + t / total * b[1]
    return lo, hi


def uncertainty_of(model, phases, head, chip: Chip) -> dict:
    """est.uncertainty: p10 / p90 of the headline numbers under the calibrated model.

    phases: {"prefill": [(op, seconds of that op in the phase, all instances)], "decode": [...]} and head the
    calibrated headline (ttft_s, tpot_s, e2e_s, throughput_tokens_per_s). Each phase's multiplier is
    phase_band; TTFT takes prefill's, TPOT decode's, e2e the time-weighted mix, throughput the inverse of
    e2e's (its p10 comes from e2e's p90). Returns {name: {"p10": value, "p90": value}} for the four
    headline numbers (None where the headline is None) and "multipliers": {phase: [p10, p90]}."""
    mult = {name: phase_band(model, ops, chip) for name, ops in phases.items() if ops}
    pre, dec = mult.get("prefill", (1.0, 1.0)), mult.get("decode", (1.0, 1.0))
    ttft, tpot, e2e = head.get("ttft_s"), head.get("tpot_s"), head.get("e2e_s")
    dec_s = max(e2e - ttft, 0.0) if e2e is not None and ttft is not None else 0.0
    e2e_m = tuple((ttft * pre[i] + dec_s * dec[i]) / e2e if e2e else 1.0 for i in (0, 1))
    out = {"ttft_s": _pq(ttft, pre), "tpot_s": _pq(tpot, dec), "e2e_s": _pq(e2e, e2e_m)}
    thr = head.get("throughput_tokens_per_s")
    out["throughput_tokens_per_s"] = None if thr is None else {"p10": thr / e2e_m[1], "p90": thr / e2e_m[0]}
    out["multipliers"] = {k: [float(v[0]), float(v[1])] for k, v in mult.items()}
    return out


def _pq(value, m):
    return None if value is None else {"p10": float(value * m[0]), "p90": float(value * m[1])}
