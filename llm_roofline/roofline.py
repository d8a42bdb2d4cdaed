"""The roofline core: the ONLY place a time is computed.

For every operator (all arguments broadcast as numpy arrays, float64):

    t_compute_s = flops / (peak_flops_per_s * eff.compute)
    t_memory_s  = hbm_bytes / (hbm_bytes_per_s * eff.memory)
    t_comm_s    = comm_hops * link_latency_s + comm_bytes / (link_bytes_per_s * eff.comm)
    t_lower_s   = max(t_compute_s, t_memory_s, t_comm_s) + eff.overhead_s   # perfect overlap
    t_upper_s   = t_compute_s + t_memory_s + t_comm_s + eff.overhead_s      # no overlap
    t_s         = max(t_compute_s, t_memory_s) + t_comm_s + eff.overhead_s  # headline: collectives serial
    bound       = the largest of the three terms
    intensity   = flops / hbm_bytes                                          # FLOP per HBM byte

The seeds ("How to Scale Your Model", Part 1): T_lower = max(T_math, T_comms), T_upper = T_math + T_comms,
so the upper bound is at most 2x the lower one for two terms (3x for three).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

BOUNDS = np.array(["compute", "memory", "comm"])


@dataclass(frozen=True)
class Efficiency:
    """Achieved fraction of peak compute, HBM and link bandwidth, and a fixed per-kernel overhead.

    Fields may be floats or arrays broadcastable against the ops. `IDEAL` is the pure roofline.
    """

    compute: "float | np.ndarray" = 1.0
    memory: "float | np.ndarray" = 1.0
    comm: "float | np.ndarray" = 1.0
    overhead_s: "float | np.ndarray" = 0.0
    label: str = "ideal"


IDEAL = Efficiency()


class Score:
    """Times per operator, arrays of one broadcast shape. The derived terms are computed on first use
    (the sweep path only needs the three terms)."""

    def __init__(self, t_compute_s, t_memory_s, t_comm_s, overhead_s, flops, hbm_bytes):
        self.t_compute_s, self.t_memory_s, self.t_comm_s = t_compute_s, t_memory_s, t_comm_s
        self.overhead_s = overhead_s
        self._flops, self._hbm_bytes = flops, hbm_bytes

    @cached_property
    def t_lower_s(self) -> np.ndarray:
        return np.maximum(np.maximum(self.t_compute_s, self.t_memory_s), self.t_comm_s) + self.overhead_s

    @cached_property
    def t_upper_s(self) -> np.ndarray:
        return self.t_compute_s + self.t_memory_s + self.t_comm_s + self.overhead_s

    @cached_property
    def t_s(self) -> np.ndarray:
        return np.maximum(self.t_compute_s, self.t_memory_s) + self.t_comm_s + self.overhead_s

    @cached_property
    def bound(self) -> np.ndarray:
        """'compute' | 'memory' | 'comm': the largest term (ties go to the first)."""
        c, m, k = np.broadcast_arrays(self.t_compute_s, self.t_memory_s, self.t_comm_s)
        idx = np.where(k > np.maximum(c, m), 2, np.where(m > c, 1, 0))
        return BOUNDS[idx]

    @cached_property
    def intensity(self) -> np.ndarray:
        """FLOP per HBM byte (inf for an op that moves no HBM bytes)."""
        f, b = np.broadcast_arrays(self._flops, self._hbm_bytes)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(b > 0, f / np.where(b > 0, b, 1.0), np.inf)
        return np.broadcast_to(out, np.shape(self.t_s))


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def score(
    flops,
    hbm_bytes,
    *,
    peak_flops_per_s,
    hbm_bytes_per_s,
    comm_bytes=0.0,
    comm_hops=0.0,
    link_bytes_per_s=np.inf,
    link_latency_s=0.0,
    efficiency: Efficiency = IDEAL,
) -> Score:
    """Score operators against a chip. Every argument broadcasts; nothing loops in Python."""
    flops, hbm_bytes = _arr(flops), _arr(hbm_bytes)
    eff = efficiency
    t_compute = flops / (_arr(peak_flops_per_s) * eff.compute)
    t_memory = hbm_bytes / (_arr(hbm_bytes_per_s) * eff.memory)
    if np.any(comm_bytes) or np.any(comm_hops):
        t_comm = _arr(comm_hops) * _arr(link_latency_s) + _arr(comm_bytes) / (_arr(link_bytes_per_s) * eff.comm)
    else:
        t_comm = np.zeros(())
    shape = np.broadcast_shapes(np.shape(t_compute), np.shape(t_memory), np.shape(t_comm), np.shape(eff.overhead_s))
    return Score(t_compute, t_memory, t_comm, _arr(eff.overhead_s), flops, hbm_bytes) if shape == () else \
        Score(*(np.broadcast_to(x, shape) for x in (t_compute, t_memory, t_comm, _arr(eff.overhead_s))),
              flops, hbm_bytes)


def attainable_flops_per_s(intensity, peak_flops_per_s, hbm_bytes_per_s):
    """The roof: min(peak, intensity * bandwidth) — the FLOP/s an op of this intensity can reach."""
    return np.minimum(_arr(peak_flops_per_s), _arr(intensity) * _arr(hbm_bytes_per_s))


def matmul_intensity(b, d, f, bytes_x=2.0, bytes_w=2.0, bytes_out=2.0):
    """Arithmetic intensity of X[B,D] @ W[D,F] -> Z[B,F]: 2BDF / (bx*BD + bw*DF + bo*BF).

    bf16 everywhere reduces to BDF / (BD + DF + BF), which tends to B when B << D, F (seeds, Part 1).
    """
    b, d, f = _arr(b), _arr(d), _arr(f)
    return 2 * b * d * f / (bytes_x * b * d + bytes_w * d * f + bytes_out * b * f)
