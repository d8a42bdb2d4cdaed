"""The roofline core: the ONLY place a time is computed.

For every operator (all arguments broadcast as numpy arrays, float64):

    t_compute_s = flops / (peak_flops_per_s * eff.compute)
    t_memory_s  = hbm_bytes / (hbm_bytes_per_s * eff.memory)
    t_comm_s    = comm_hops * (link_latency_s + eff.comm_hop_s) + comm_bytes / (link_bytes_per_s * eff.comm)
                  (eff.comm_switch instead of eff.comm where comm_switch = 1: bytes the switch reduces, NVLS)
    t_lower_s   = max(t_compute_s, t_memory_s, t_comm_s) + eff.overhead_s   # perfect overlap
    t_upper_s   = t_compute_s + t_memory_s + t_comm_s + eff.overhead_s      # no overlap
    t_s         = max(t_compute_s, t_memory_s) + t_comm_s + eff.overhead_s  # headline: collectives serial
    bound       = the largest of the three terms
    (eff.overhead_s is the kernel's launch cost: 0 where the op moves no byte, HBM or link, as no kernel runs there:
    a continuous-batching step's decode attention with no sequence decoding, its prompt-chunk attention without a
    chunk; launched_overhead_s)
    intensity   = flops / hbm_bytes                                          # FLOP per HBM byte

The seeds ("How to Scale Your Model", Part 1): T_lower = max(T_math, T_comms), T_upper = T_math + T_comms,
so the upper bound is at most 2x the lower one for two terms (3x for three).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .collectives import CollectiveTerms, collective_terms
from .units import everywhere, remembered

if TYPE_CHECKING:
    from .hardware import Chip
    from .ops import Op

TERMS = ("compute", "memory", "comm")
BOUNDS = np.array(TERMS)


def bound_of(t_compute_s, t_memory_s, t_comm_s) -> np.ndarray:
    """'compute' | 'memory' | 'comm': the largest of the three terms (ties go to the first)."""
    c, m, k = t_compute_s, t_memory_s, t_comm_s
    if not _scalars(c, m, k):
        c, m, k = np.broadcast_arrays(c, m, k)
    return BOUNDS[where(k > np.maximum(c, m), 2, where(m > c, 1, 0))]


def intensity_of(flops, hbm_bytes) -> np.ndarray:
    """FLOP per HBM byte (inf for work that moves no HBM bytes)."""
    f, b = _arr(flops), _arr(hbm_bytes)
    if _scalars(f, b):  # the division is guarded: b > 0, or 1
        return where(b > 0, f / where(b > 0, b, 1.0), np.inf)
    f, b = np.broadcast_arrays(f, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, f / np.where(b > 0, b, 1.0), np.inf)


def where(cond, a, b):
    """np.where(cond, a, b), picked at once when cond is a scalar (np.where would make 0-d arrays)."""
    if isinstance(cond, (bool, np.bool_)):
        return a if cond else b
    return np.where(cond, a, b)


def _scalars(*xs) -> bool:
    return all(getattr(x, "ndim", 0) == 0 for x in xs)


@dataclass(frozen=True)
class Efficiency:
    """Achieved fraction of peak compute, HBM and link bandwidth, and a fixed per-kernel overhead.

    Fields are numbers (a caller's, applied to every op), or arrays broadcastable against the ops (the stacks the
    efficiency models build). `IDEAL` is the pure roofline.
    """

    compute: "float | np.ndarray" = 1.0
    memory: "float | np.ndarray" = 1.0
    comm: "float | np.ndarray" = 1.0
    overhead_s: "float | np.ndarray" = 0.0
    label: str = "ideal"
    comm_switch: "float | np.ndarray | None" = None  # fraction of link bandwidth when the switch reduces (NVLS),
    #   (0, 1]; None: comm's
    comm_hop_s: "float | np.ndarray" = 0.0  # latency per collective step beyond the link's latency_s, >= 0

    @property
    def switch_fraction(self) -> "float | np.ndarray":
        """The link fraction of bytes the switch reduces: comm_switch, or comm where it is None."""
        return self.comm if self.comm_switch is None else self.comm_switch


IDEAL = Efficiency()


class _once:
    """A property computed on first use and kept (no lock, unlike functools.cached_property in Python 3.11: the
    value is a pure function of the object, so two threads computing it at once store equal values)."""

    def __init__(self, f):
        self.f, self.name, self.__doc__ = f, f.__name__, f.__doc__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.f(obj)
        return value


class Score:
    """Times per operator, arrays of one broadcast shape. The derived terms are computed on first use
    (the sweep path only needs the three terms)."""

    def __init__(self, t_compute_s, t_memory_s, t_comm_s, overhead_s, flops, hbm_bytes):
        self.t_compute_s, self.t_memory_s, self.t_comm_s = t_compute_s, t_memory_s, t_comm_s
        self.overhead_s = overhead_s
        self._flops, self._hbm_bytes = flops, hbm_bytes

    @_once
    def t_lower_s(self) -> np.ndarray:
        return np.maximum(np.maximum(self.t_compute_s, self.t_memory_s), self.t_comm_s) + self.overhead_s

    @_once
    def t_upper_s(self) -> np.ndarray:
        return self.t_compute_s + self.t_memory_s + self.t_comm_s + self.overhead_s

    @_once
    def t_s(self) -> np.ndarray:
        return np.maximum(self.t_compute_s, self.t_memory_s) + self.t_comm_s + self.overhead_s

    @_once
    def bound(self) -> np.ndarray:
        """'compute' | 'memory' | 'comm': the largest term (ties go to the first)."""
        return bound_of(self.t_compute_s, self.t_memory_s, self.t_comm_s)

    @_once
    def intensity(self) -> np.ndarray:
        """FLOP per HBM byte (inf for an op that moves no HBM bytes)."""
        return np.broadcast_to(intensity_of(self._flops, self._hbm_bytes), np.shape(self.t_s))

    def rows(self) -> list["Score"]:
        """One Score per row of a stacked Score (score_stack: one row per op), its t_s, t_lower_s and t_upper_s
        those of the stack (computed once for every row)."""
        cols = [getattr(self, k) for k in _ROW_KEYS]
        out = []
        for j in range(len(cols[0])):
            row = Score.__new__(Score)
            row.__dict__.update(zip(_ROW_KEYS, (c[j] for c in cols)))
            out.append(row)
        return out


_ROW_KEYS = ("t_compute_s", "t_memory_s", "t_comm_s", "overhead_s", "t_s", "t_lower_s", "t_upper_s", "_flops",
             "_hbm_bytes")


def _arr(x) -> np.ndarray:
    """x as float64; float64 arrays and numpy float64 scalars pass as they are (np.asarray would wrap a scalar
    in a 0-d array: the same values, with slower arithmetic)."""
    if type(x) is np.float64 or (type(x) is np.ndarray and x.dtype == np.float64):
        return x
    return np.asarray(x, dtype=np.float64)


def _nonzero(x) -> bool:
    """np.any(x), without its cost on scalars."""
    if isinstance(x, (float, int, np.floating)):
        return bool(x != 0)
    return bool(x.any()) if isinstance(x, np.ndarray) else bool(np.any(x))


def _shape(*xs) -> tuple:
    """The broadcast shape of xs (scalars and arrays), each distinct shape broadcast once."""
    shapes = {x.shape for x in xs if getattr(x, "ndim", 0)}
    if not shapes:
        return ()
    return shapes.pop() if len(shapes) == 1 else np.broadcast_shapes(*shapes)


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
    comm_switch=0.0,
) -> Score:
    """Score operators against a chip. Every argument broadcasts; nothing loops in Python."""
    flops, hbm_bytes = _arr(flops), _arr(hbm_bytes)
    eff = efficiency
    t_compute = compute_time_s(flops, _arr(peak_flops_per_s), eff.compute)
    t_memory = memory_time_s(hbm_bytes, _arr(hbm_bytes_per_s), eff.memory)
    if _nonzero(comm_bytes) or _nonzero(comm_hops):
        t_comm = link_time_s(_arr(comm_hops), _arr(link_latency_s), _arr(comm_bytes), _arr(link_bytes_per_s), eff,
                             comm_switch)
    else:
        t_comm = np.zeros(())
    overhead = launched_overhead_s(_arr(eff.overhead_s), hbm_bytes, comm_bytes)
    shape = _shape(t_compute, t_memory, t_comm, overhead)
    return Score(t_compute, t_memory, t_comm, overhead, flops, hbm_bytes) if shape == () else \
        Score(*(x if np.shape(x) == shape else np.broadcast_to(x, shape) for x in (t_compute, t_memory, t_comm, overhead)),
              flops, hbm_bytes)


def launched_overhead_s(overhead_s, hbm_bytes, comm_bytes=0.0):
    """overhead_s where the op moves bytes (HBM or link), 0 where it moves none: an op with nothing to do at a point
    launches no kernel there (score and stack_t_s: the one rule)."""
    if not _nonzero(overhead_s):
        return overhead_s
    moved = hbm_bytes + comm_bytes if _nonzero(comm_bytes) else hbm_bytes  # bytes: >= 0, so > 0 where either is
    if (moved > 0) if isinstance(moved, (float, int, np.floating)) else moved.min() > 0:  # the common case: work
        return overhead_s  # at every point (one pass, no mask)
    return np.where(moved > 0, overhead_s, 0.0)


def compute_time_s(flops, peak_flops_per_s, compute):
    """FLOPs at a fraction `compute` of the peak FLOP/s (score and stack_t_s: the one formula)."""
    return flops / (peak_flops_per_s * compute)


def memory_time_s(hbm_bytes, hbm_bytes_per_s, memory):
    """HBM bytes at a fraction `memory` of the peak bandwidth."""
    return hbm_bytes / (hbm_bytes_per_s * memory)


def with_serial_share(eff: Efficiency, flops, hbm_bytes, peak_flops_per_s, hbm_bytes_per_s, share: float) -> Efficiency:
    """eff with `share` x min(t_compute_s, t_memory_s) added to its overhead: a kernel whose loads and stores are not
    hidden under its math (share 1: t_compute + t_memory, the roofline's no-overlap bound; 0: eff as it is)."""
    if not share:
        return eff
    hidden = np.minimum(compute_time_s(_arr(flops), _arr(peak_flops_per_s), eff.compute),
                        memory_time_s(_arr(hbm_bytes), _arr(hbm_bytes_per_s), eff.memory))
    return replace(eff, overhead_s=eff.overhead_s + share * hidden)


def link_time_s(hops, latency_s, link_bytes, link_bytes_per_s, eff: Efficiency, switch=0.0):
    """A collective's alpha-beta time: hops x (link latency + eff.comm_hop_s) + link bytes at the link fraction
    (eff.comm; eff.switch_fraction for the share `switch` of bytes the switch reduces)."""
    frac = eff.comm if not _nonzero(switch) else _arr(eff.comm) + _arr(switch) * (_arr(eff.switch_fraction)
                                                                               - _arr(eff.comm))
    return hops * (latency_s + _arr(eff.comm_hop_s)) + link_bytes / (link_bytes_per_s * frac)


def attainable_flops_per_s(intensity, peak_flops_per_s, hbm_bytes_per_s):
    """The roof: min(peak, intensity * bandwidth) — the FLOP/s an op of this intensity can reach."""
    return np.minimum(_arr(peak_flops_per_s), _arr(intensity) * _arr(hbm_bytes_per_s))


def matmul_intensity(b, d, f, bytes_x=2.0, bytes_w=2.0, bytes_out=2.0):
    """Arithmetic intensity of X[B,D] @ W[D,F] -> Z[B,F]: 2BDF / (bx*BD + bw*DF + bo*BF).

    bf16 everywhere reduces to BDF / (BD + DF + BF), which tends to B when B << D, F (seeds, Part 1).
    """
    b, d, f = _arr(b), _arr(d), _arr(f)
    return 2 * b * d * f / (bytes_x * b * d + bytes_w * d * f + bytes_out * b * f)


# ------------------------------------------------------------------------------ ops meet a chip
def score_collective(terms: CollectiveTerms, efficiency: Efficiency = IDEAL) -> Score:
    """A collective's time from its alpha-beta terms (collectives.collective_terms)."""
    return score(0.0, 0.0, peak_flops_per_s=1.0, hbm_bytes_per_s=1.0, comm_bytes=terms.link_bytes,
                 comm_hops=terms.hops, link_bytes_per_s=terms.link_bytes_per_s, link_latency_s=terms.latency_s,
                 efficiency=efficiency, comm_switch=terms.switch_reduced)


def score_op(op: "Op", chip: "Chip", efficiency: Efficiency = IDEAL) -> Score:
    """One op on one chip: collectives priced on the link they cross, other ops on peak FLOP/s and HBM."""
    if op.kind == "collective":
        return score_collective(collective_terms(op.collective, op.comm_bytes, op.group_chips, chip), efficiency)
    return score(op.flops, op.hbm_bytes, peak_flops_per_s=chip.peak_flops_per_s(op.compute_dtype),
                 hbm_bytes_per_s=chip.hbm_bytes_per_s, efficiency=efficiency)


@dataclass(frozen=True)
class Scored:
    """An op and its roofline Score; the Score's arrays (t_compute_s, t_memory_s, t_comm_s, overhead_s,
    t_s, t_lower_s, t_upper_s, bound, intensity) read through."""

    op: "Op"
    score: Score

    def __getattr__(self, name):
        if name == "score":  # not set yet (copy/unpickle): no recursion
            raise AttributeError(name)
        return getattr(self.score, name)


def efficiency_of(op: "Op", chip: "Chip", efficiency_model=None) -> Efficiency:
    """The Efficiency an op runs at: efficiency_model None (ideal), an Efficiency for every op, or an object with
    .for_op(op, chip) -> Efficiency (efficiency.CalibratedModel)."""
    if efficiency_model is None:
        return IDEAL
    return efficiency_model if isinstance(efficiency_model, Efficiency) else efficiency_model.for_op(op, chip)


_OP_ARRAYS = ("flops", "weight_bytes", "act_bytes", "kv_bytes", "comm_bytes", "tokens")
STACKED_ELEMENTS = 1 << 16  # ops x grid points scored at once (score_stack): small scenarios score every op together


def ops_shape(ops: "list[Op]", shape: tuple = ()) -> tuple:
    """The broadcast shape of the ops' arrays (their scenario grid) and `shape`."""
    return _shape(*(getattr(op, f) for op in ops for f in _OP_ARRAYS), _Shaped(shape, len(shape)))


class _Shaped(NamedTuple):
    """Something of a shape (for _shape), without an array."""

    shape: tuple
    ndim: int


def op_blocks(n_ops: int, shape: tuple) -> list[tuple[int, int]]:
    """(lo, hi) ranges of ops to stack together: at most STACKED_ELEMENTS values per stacked array (every op at
    once for a small grid, one op at a time for a grid of STACKED_ELEMENTS points or more)."""
    per = max(1, STACKED_ELEMENTS // max(math.prod(shape), 1))
    return [(lo, min(lo + per, n_ops)) for lo in range(0, n_ops, per)]


def score_stack(ops: "list[Op]", chip: "Chip", efficiency_model=None, grid: tuple | None = None,
                terms: "StackTerms | None" = None, shared: dict | None = None) -> Score:
    """Every op scored on `chip` in one roofline.score: a Score whose arrays have one row per op, shape
    (len(ops), *grid), grid = ops_shape(ops) unless given. Row j holds score_op(ops[j], chip, its efficiency) broadcast
    to the grid: collectives priced on the link they cross (comm terms only), other ops on peak FLOP/s and HBM
    (no comm term: no link bytes and no hops, at an infinite link). terms: stack_terms(ops, chip, grid), when known.
    shared: a dict kept with `ops` while they are scored on several chips (stacked_efficiency)."""
    shape = (len(ops),) + (ops_shape(ops) if grid is None else grid)
    t = stack_terms(ops, chip, shape[1:], shared) if terms is None else terms
    eff = stacked_efficiency(ops, chip, efficiency_model, shape, t.collective, shared)
    return score(t.flops, t.hbm_bytes, peak_flops_per_s=t.peak_flops_per_s, hbm_bytes_per_s=t.hbm_bytes_per_s,
                 comm_bytes=t.comm_bytes, comm_hops=t.comm_hops, link_bytes_per_s=t.link_bytes_per_s,
                 link_latency_s=t.link_latency_s, efficiency=eff, comm_switch=t.comm_switch)


def stacked_efficiency(ops: "list[Op]", chip: "Chip", efficiency_model, shape: tuple, collective: tuple,
                       shared: dict | None = None) -> Efficiency:
    """The ops' efficiencies stacked like their terms (shape (ops, *grid); a collective's comm, other ops' 1).
    shared: a dict kept with `ops` (see efficiency_parts); the stack is kept there too, once per pricing key."""
    if efficiency_model is None:
        return IDEAL  # the same numbers for every op
    key = _pricing_key(ops, chip, efficiency_model, shared)
    if key is None:
        return stacked_parts(efficiency_parts(ops, chip, efficiency_model, shape[1:]), shape, collective)
    return remembered(shared.setdefault("efficiency", {}), key, lambda: stacked_parts(
        efficiency_parts(ops, chip, efficiency_model, shape[1:], shared), shape, collective))


def efficiency_parts(ops: "list[Op]", chip: "Chip", efficiency_model, grid: tuple, shared: dict | None = None) -> list:
    """(rows, Efficiency) parts covering every op once: the model's for_ops (GEMMs of a family priced together), else
    its for_op op by op; None or one Efficiency: that one for every op. shared: a dict kept with `ops`; a model with
    .pricing_keys(ops, chip, shared) (what its for_op reads besides each op: the fit pricing it, the chip where that
    matters) gets one list per distinct key, reused on every chip whose keys are the same (chips borrowing one fit)."""
    if efficiency_model is None or isinstance(efficiency_model, Efficiency):
        return [([j], efficiency_model or IDEAL) for j in range(len(ops))]

    def parts():
        if hasattr(efficiency_model, "for_ops"):
            return efficiency_model.for_ops(ops, chip, tuple(grid))
        return [([j], efficiency_model.for_op(op, chip)) for j, op in enumerate(ops)]
    key = _pricing_key(ops, chip, efficiency_model, shared)
    return parts() if key is None else remembered(shared.setdefault("parts", {}), key, parts)


def _pricing_key(ops, chip, efficiency_model, shared):
    """The model's pricing key of `ops` on `chip` (its pricing_keys), None: no reuse (no memo, or no such method)."""
    if shared is None or not hasattr(efficiency_model, "pricing_keys"):
        return None
    return efficiency_model.pricing_keys(ops, chip, shared)


def stack_t_s(ops: "list[Op]", chip: "Chip", efficiency_model, grid: tuple, shared: dict | None = None) -> np.ndarray:
    """score_stack(ops, chip, efficiency_model, grid, shared=shared).t_s (ops, *grid), bit for bit, without the
    stacked Score: each part's Efficiency (efficiency_parts) is applied to its rows at its own shape, so no field is
    broadcast to the grid and no op pays the terms it has none of (an op its link term, a collective its FLOPs)."""
    t = stack_terms(ops, chip, grid, shared)
    out = np.empty((len(ops),) + tuple(grid))
    for rows, e in efficiency_parts(ops, chip, efficiency_model, grid, shared):
        r = rows[0] if len(rows) == 1 else rows
        if len(rows) == 1 and t.collective[r]:  # score's link term (its FLOP and HBM terms are 0 / peak = 0)
            out[r] = link_time_s(t.comm_hops[r], t.link_latency_s[r], t.comm_bytes[r], t.link_bytes_per_s[r], e,
                                 t.comm_switch[r]) + launched_overhead_s(e.overhead_s, 0.0, t.comm_bytes[r])
        else:  # score's FLOP and HBM terms (the link term of an op that is no collective is 0)
            out[r] = np.maximum(compute_time_s(t.flops[r], t.peak_flops_per_s[r], e.compute),
                                memory_time_s(t.hbm_bytes[r], t.hbm_bytes_per_s[r], e.memory)) + launched_overhead_s(
                e.overhead_s, t.hbm_bytes[r])
    return out


class StackTerms(NamedTuple):
    """What roofline.score takes for a stack of ops, whatever their efficiency: (ops, *grid) arrays and per-op
    numbers shaped (ops, 1, ...). A collective has no FLOPs or HBM bytes (at peaks of 1); other ops no link bytes and
    no hops, at an infinite link."""

    flops: np.ndarray
    hbm_bytes: np.ndarray
    peak_flops_per_s: np.ndarray
    hbm_bytes_per_s: np.ndarray
    comm_bytes: np.ndarray
    comm_hops: np.ndarray
    link_bytes_per_s: np.ndarray
    link_latency_s: np.ndarray
    comm_switch: np.ndarray  # 1 where a collective's bytes are reduced in the switch (NVLS), else 0
    collective: tuple  # per op: whether it is a collective


def stack_terms(ops: "list[Op]", chip: "Chip", grid: tuple, shared: dict | None = None) -> StackTerms:
    """StackTerms of `ops` on `chip`. shared: a dict kept with `ops` while they are scored on several chips: the
    stacks that do not depend on the chip (FLOPs and HBM bytes) are made once there, the link terms once per links."""
    shape = (len(ops),) + tuple(grid)
    flops, hbm, collective = remembered(shared, "local", _local_stacks, ops, shape)
    links = (chip.scaleup, chip.scaleout)  # all a collective's terms read of the chip (collectives.collective_terms)
    comm = remembered(shared, links, _link_stacks, ops, collective, chip, shape)  # chips on the same links share them
    peak = _per_op([1.0 if c else chip.peak_flops_per_s(op.compute_dtype) for op, c in zip(ops, collective)], shape)
    bw = _per_op([1.0 if c else chip.hbm_bytes_per_s for c in collective], shape)
    return StackTerms(flops, hbm, peak, bw, *comm, collective)


def _local_stacks(ops: "list[Op]", shape: tuple) -> tuple:
    """(FLOPs, HBM bytes, whether each op is a collective): a collective has neither (its terms are the links')."""
    collective = tuple(op.kind == "collective" for op in ops)
    return (stacked([0.0 if c else op.flops for op, c in zip(ops, collective)], shape),
            stacked([0.0 if c else op.hbm_bytes for op, c in zip(ops, collective)], shape), collective)


def _link_stacks(ops: "list[Op]", collective: tuple, chip: "Chip", shape: tuple) -> tuple:
    """(link bytes, hops, link bandwidth, latency, switch-reduced) of the collectives; other ops none, at an infinite
    link."""
    if not any(collective):  # no link term anywhere: one column of each (the same numbers, broadcast where used)
        zeros = _per_op([0.0] * len(ops), shape)
        zeros.flags.writeable = False  # shared by three fields
        return zeros, zeros, _per_op([np.inf] * len(ops), shape), zeros, zeros
    terms = iter([collective_terms(op.collective, op.comm_bytes, op.group_chips, chip)
                  for op, c in zip(ops, collective) if c])
    rows = [(t.link_bytes, t.hops, t.link_bytes_per_s, t.latency_s, t.switch_reduced) if c
            else (0.0, 0.0, np.inf, 0.0, 0.0) for c in collective for t in [next(terms) if c else None]]
    link_bytes, hops, link_bw, latency, switch = zip(*rows)
    return (stacked(link_bytes, shape), stacked(hops, shape), _per_op(link_bw, shape), _per_op(latency, shape),
            stacked(switch, shape))


def _per_op(values, shape: tuple) -> np.ndarray:
    """One number per op, shaped (ops, 1, ...) against the (ops, *grid) stacks."""
    return np.array(values, dtype=np.float64).reshape((len(values),) + (1,) * (len(shape) - 1))


def score_ops(ops: "list[Op]", chip: "Chip", efficiency_model=None) -> list[Scored]:
    """Every op scored on `chip`. efficiency_model: None (ideal), an Efficiency for every op, or an object
    with .for_op(op, chip) -> Efficiency (efficiency.CalibratedModel)."""
    return [Scored(op, score_op(op, chip, efficiency_of(op, chip, efficiency_model))) for op in ops]


# ------------------------------------------------------------------------------ sums of times
@dataclass(frozen=True)
class Times:
    """Summed times (over ops, over steps), arrays over the scenario grid. Unlike a Score, t_s, t_lower_s
    and t_upper_s are sums of each op's own combination, not recombined from the summed terms."""

    t_compute_s: np.ndarray
    t_memory_s: np.ndarray
    t_comm_s: np.ndarray
    t_s: np.ndarray
    t_lower_s: np.ndarray
    t_upper_s: np.ndarray

    @property
    def bound(self) -> np.ndarray:
        return bound_of(self.t_compute_s, self.t_memory_s, self.t_comm_s)

    def scaled(self, factor) -> "Times":
        return Times(*(getattr(self, k) * factor for k in TIME_FIELDS))


TIME_FIELDS = ("t_compute_s", "t_memory_s", "t_comm_s", "t_s", "t_lower_s", "t_upper_s")


def times_of(s: Score) -> Times:
    return Times(*(getattr(s, k) for k in TIME_FIELDS))


def sum_max_affine(a0, a1, b0, b1, n):
    """Sum over j = 0..n-1 of max(a_j, b_j) where a_j, b_j run linearly from (a0, b0) at j = 0 to
    (a1, b1) at j = n-1. Exact: sum(b) + sum of the positive part of the linear difference."""
    n = np.asarray(n, dtype=np.float64)
    d0 = a0 - b0
    steps = n > 1
    if everywhere(steps):  # every stretch of two steps or more
        slope = ((a1 - b1) - d0) / np.maximum(n - 1, 1)
    else:
        a1, b1 = np.where(steps, a1, a0), np.where(steps, b1, b0)  # one point: the start values
        slope = np.where(steps, ((a1 - b1) - d0) / np.maximum(n - 1, 1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(slope != 0, -d0 / np.where(slope != 0, slope, 1.0), 0.0)
    # slope > 0: positive for j > root; slope < 0: positive for j < root
    j_start = np.clip(np.floor(root) + 1, 0, n)
    j_end = np.clip(np.ceil(root), 0, n)
    cnt_up = n - j_start
    pos_up = cnt_up * d0 + slope * (j_start + n - 1) * cnt_up / 2
    pos_down = j_end * d0 + slope * (j_end - 1) * j_end / 2
    pos_flat = n * np.maximum(d0, 0.0)
    pos = np.where(slope > 0, pos_up, np.where(slope < 0, pos_down, pos_flat))
    return n * (b0 + b1) / 2 + np.maximum(pos, 0.0)


def trapezoid_sum(x_first, x_last, n):
    """Sum of n values running linearly from x_first to x_last (exact for affine sequences)."""
    return n * (x_first + x_last) / 2


def sum_affine_steps(first: Score, last: Score, n) -> Times:
    """Times of one op summed over n steps whose terms run linearly from `first` to `last` (a decode
    stretch in which the context grows and no sliding window is crossed). Exact: the max of two affine
    terms is summed in closed form (sum_max_affine). An op is either a collective (comm only) or local
    work (no comm), so per step max(c, m, comm) = max(c, m) + comm: the lower bound sums like the headline."""
    c = trapezoid_sum(first.t_compute_s, last.t_compute_s, n)
    m = trapezoid_sum(first.t_memory_s, last.t_memory_s, n)
    comm = trapezoid_sum(first.t_comm_s, last.t_comm_s, n)
    ovh = trapezoid_sum(first.overhead_s, last.overhead_s, n)
    smax = sum_max_affine(first.t_compute_s, last.t_compute_s, first.t_memory_s, last.t_memory_s, n)
    return Times(c, m, comm, smax + comm + ovh, smax + comm + ovh, c + m + comm + ovh)


def sum_affine_steps_t_s(first: Score, last: Score, n) -> np.ndarray:
    """sum_affine_steps(first, last, n).t_s alone (the wall clock a sweep or a planner reads): the closed-form
    max-sum plus the summed comm and overhead, without the other time fields."""
    smax = sum_max_affine(first.t_compute_s, last.t_compute_s, first.t_memory_s, last.t_memory_s, n)
    return smax + trapezoid_sum(first.t_comm_s, last.t_comm_s, n) + trapezoid_sum(first.overhead_s, last.overhead_s, n)


def sum_constant_steps_t_s(step: Score, n) -> np.ndarray:
    """The wall clock of n steps that all cost `step` (an op that does not read the context): n x one step."""
    return n * step.t_s


def add_times(parts) -> Times:
    """Sum of Times (an iterable)."""
    parts = list(parts)
    return Times(*(sum(getattr(p, k) for p in parts) for k in TIME_FIELDS))


def bound_shares(stacks) -> dict[str, np.ndarray]:
    """The headline time t_s of the parts, summed by the term that bounds each part (ties go to the first term).
    stacks: Times whose arrays have one row per part (estimate's per-op times, in blocks); summed in part order."""
    shares = {b: 0.0 for b in TERMS}
    for p in stacks:
        c, m, k = p.t_compute_s, p.t_memory_s, p.t_comm_s
        which = np.where(k > np.maximum(c, m), 2, np.where(m > c, 1, 0))  # the index bound_of takes
        if which.ndim == 1 and np.ndim(p.t_s) == 1:  # one number per part: added as Python floats, each to its term
            for i, t in zip(which.tolist(), p.t_s.tolist()):
                shares[TERMS[i]] = shares[TERMS[i]] + t
            continue
        for i, b in enumerate(TERMS):
            for row in np.where(which == i, p.t_s, 0.0):
                shares[b] = shares[b] + row
    return {b: np.float64(v) if isinstance(v, float) else v for b, v in shares.items()}


def stacked_parts(parts: list, shape: tuple, collective: tuple) -> Efficiency:
    """The Efficiency stacks (shape (ops, *grid)) of (rows, Efficiency) parts covering every op once: one op's
    fields broadcast to the grid, a group's to (len(rows), *grid). A collective's comm terms; other ops' 1 (hop 0).
    The one-number values of a field are written in one assignment, then its arrays row by row; a field with no
    array stays a column (ops, 1, ...)."""
    n = shape[0]
    scalars = [[0.0] * n for _ in range(6)]  # compute, memory, comm, overhead_s, comm_switch, comm_hop_s
    arrays = []
    for rows, e in parts:
        single = len(rows) == 1
        at = rows[0] if single else rows
        c = single and collective[at]  # a group holds no collective
        for f, v in enumerate((e.compute, e.memory, e.comm if c else 1.0, e.overhead_s,
                               e.switch_fraction if c else 1.0, e.comm_hop_s if c else 0.0)):
            if type(v) is np.ndarray and v.ndim:
                arrays.append((f, at, v))
            elif single:
                scalars[f][at] = v
            else:
                for r in rows:
                    scalars[f][r] = v
    fields = []
    with_arrays = {f for f, _, _ in arrays}
    for f, values in enumerate(scalars):
        col = np.array(values, dtype=np.float64).reshape((n,) + (1,) * (len(shape) - 1))
        if f in with_arrays:  # the grid's shape, its arrays written next
            out = np.empty(shape)
            out[...] = col
            fields.append(out)
        else:  # one number per op: a column, broadcast where it is used
            fields.append(col)
    for f, at, v in arrays:
        fields[f][at] = v
    return Efficiency(compute=fields[0], memory=fields[1], comm=fields[2], overhead_s=fields[3],
                      comm_switch=fields[4], comm_hop_s=fields[5])


def stacked(values: list, shape: tuple) -> np.ndarray:
    """values (scalars, or arrays that broadcast to shape[1:]) stacked on a new first axis: a float64 array of `shape`."""
    if len(shape) == 1:
        return np.array(values, dtype=np.float64)
    inner = shape[1:]
    if len(values) == 1:  # a large grid, one op at a time: a view, no copy
        return np.broadcast_to(np.asarray(values[0], dtype=np.float64), inner)[np.newaxis]
    if len(inner) == 1 and inner[0] <= 64:  # a short axis (a scenario's decode segment ends): rows as lists
        rows = [[v] * inner[0] if getattr(v, "ndim", 0) == 0 else v for v in values]
        if all(len(r) == inner[0] and getattr(r, "ndim", 1) == 1 for r in rows):
            return np.array(rows, dtype=np.float64)
    out = np.empty(shape)
    out[...] = np.array([0.0 if getattr(v, "ndim", 0) else v for v in values], dtype=np.float64).reshape(
        (-1,) + (1,) * len(inner))  # the scalars (and 0 for the arrays, assigned next)
    for j, v in enumerate(values):
        if getattr(v, "ndim", 0):
            out[j] = v
    return out
