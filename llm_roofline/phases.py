"""A phase (prefill, or every decode step) of one scenario: its ops scored on a chip and summed over the phase's
steps, then the replica totals. The ops are stacked on a first axis, one row per op (roofline.score_stack), in blocks
of bounded size (roofline.op_blocks): a single scenario scores and sums every op in one pass, a large sweep one op at a
time. Sums over ops run op by op, in the ops' order, so they do not depend on the blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .ops import Op
from .roofline import (TIME_FIELDS, Score, Times, add_times, bound_shares, op_blocks, ops_shape, score_stack,
                       stack_t_s, stack_terms, stacked, sum_affine_steps, sum_affine_steps_t_s,
                       sum_constant_steps_t_s, times_of, trapezoid_sum)
from .sharding import Sharding
from .units import array_key, remembered

if TYPE_CHECKING:
    from .hardware import Chip

WORK_FIELDS = ("flops", "weight_bytes", "act_bytes", "kv_bytes", "comm_bytes")


@dataclass(frozen=True)
class OpSums:
    """One op (one instance) summed over the steps of a phase: its work (WORK_FIELDS) and its Times."""

    work: dict[str, np.ndarray]
    times: Times


@dataclass(frozen=True)
class OpBlock:
    """Consecutive ops of a phase scored and summed together: arrays stacked on a first axis, one row per op
    (roofline.score_stack; roofline.op_blocks bounds their size)."""

    ops: list[Op]
    score: Score  # (ops, *step grid): decode's step grid has both ends of every segment first
    work: dict[str, np.ndarray]  # WORK_FIELDS summed over the phase's steps, (ops, *grid)
    times: Times  # (ops, *grid)
    grid: tuple = ()  # the step grid of the stack: the phase's, or for a lone op its own (1 on the axes it is constant)
    terms: Any = field(default=None, repr=False)  # roofline.StackTerms: what the score takes, whatever the efficiency


@dataclass(frozen=True)
class PhaseTotals:
    """Replica totals of a phase over the scenario grid (see PhaseSummary for what each counts)."""

    flops: np.ndarray
    bytes: np.ndarray
    weight_bytes: np.ndarray
    kv_read_bytes: np.ndarray
    comm_bytes: np.ndarray
    attention_flops: np.ndarray
    mlp_flops: np.ndarray
    times: Times  # wall clock: one micro-batch through all stages, times the pipeline schedule
    per_op_times: list[Times] = field(repr=False)  # each op's share of `times` (count and schedule applied), per block

    @cached_property
    def bound_shares(self) -> dict[str, np.ndarray]:
        """The phase time by the term that bounds each op (computed on first use: sweeps never ask)."""
        return bound_shares(self.per_op_times)


@dataclass(frozen=True)
class PhaseResult:
    """Every op of a phase scored on the chip (in blocks), its per-op sums over the phase's steps, and the totals."""

    blocks: list[OpBlock]
    totals: PhaseTotals
    steps: np.ndarray  # forward steps the phase sums (prefill 1, decode gen_len - 1)
    time_factor: Any = 1.0  # the pipeline schedule's factor on one micro-batch's trip (_phase_totals)
    sums: Any = field(default=None, repr=False, compare=False)  # PrefillSums or DecodeSums: over the steps
    shape: tuple = ()  # the step grid the ops are built on

    @property
    def ops(self) -> list[Op]:
        return [op for b in self.blocks for op in b.ops]

    def op_times(self) -> list[tuple[Op, float]]:
        """(op, its time summed over the phase's steps, all its instances) for a scalar scenario."""
        return [(op, total_of(b.times.t_s[j]) * op.count) for b in self.blocks for j, op in enumerate(b.ops)]

    @cached_property
    def per_op(self) -> list[OpSums]:
        """Each op summed over the phase's steps."""
        return [OpSums({f: b.work[f][j] for f in WORK_FIELDS}, Times(*(getattr(b.times, k)[j] for k in TIME_FIELDS)))
                for b in self.blocks for j in range(len(b.ops))]


def decode_segments(prompt, gen, breakpoints):
    """Stretches [lo, hi] of decode context lengths (prompt+1 .. prompt+gen-1) split at the context lengths where
    an op stops growing linearly (sliding windows, DSA top-k, KV blocks), inside which every op is affine in the context
    length; a breakpoint outside every point's stretch (w < min(first) or w >= max(last)) cuts nothing and is dropped.
    Returns (lo, hi, n) arrays per segment."""
    first = prompt + 1.0
    last = prompt + gen - 1.0
    lowest, highest = float(np.min(first)), float(np.max(last))
    inside = sorted(float(w) for w in set(breakpoints) if lowest <= w < highest)
    cuts = [-np.inf] + inside + [np.inf]
    segs = []
    for c_lo, c_hi in zip(cuts[:-1], cuts[1:]):
        lo = np.maximum(first, c_lo + 1)
        hi = np.minimum(last, c_hi)
        n = np.maximum(hi - lo + 1, 0.0)
        segs.append((lo, np.maximum(hi, lo), n))
    return segs


class PrefillSums:
    """One forward step: the ops' own work and times."""

    key = ("prefill",)  # what the sums depend on (phase_t_s_chips keeps op times under it)

    @staticmethod
    def work(work: dict) -> dict:
        return work

    @staticmethod
    def times(score: Score) -> Times:
        return times_of(score)

    @staticmethod
    def t_s(score: Score) -> np.ndarray:
        return score.t_s


class DecodeSums:
    """Every op summed over every decode step: exact within each segment (the ops were built at both ends of every
    segment, stacked on the grid's first axis: rows 2i and 2i+1 are segment i's first and last step)."""

    def __init__(self, segs):
        self.segs = segs

    @cached_property
    def key(self) -> tuple:
        """The segments' ends and step counts, as a dict key (phase_t_s_chips keeps op times under it)."""
        return tuple(array_key(x) for seg in self.segs for x in seg)

    def work(self, work: dict) -> dict:
        sums = {f: 0.0 for f in WORK_FIELDS}
        for i, (_, _, n) in enumerate(self.segs):
            for f in WORK_FIELDS:
                sums[f] = sums[f] + trapezoid_sum(_end(work[f], 2 * i), _end(work[f], 2 * i + 1), n)
        return sums

    def times(self, score: Score) -> Times:
        parts = []
        for i, (_, _, n) in enumerate(self.segs):
            first, last = (Score(*(_end(getattr(score, k), r) for k in _TERMS), None, None) for r in (2 * i, 2 * i + 1))
            parts.append(sum_affine_steps(first, last, n))
        return add_times(parts)

    def t_s(self, score: Score) -> np.ndarray:
        """times(score).t_s alone. A block whose terms have one row on the segment-ends axis (a lone op that does
        not read the context) sums as the total step count x its step, not segment by segment."""
        if all(getattr(score, k).shape[1] == 1 for k in _TERMS):
            step = Score(*(getattr(score, k)[:, 0] for k in _TERMS), None, None)
            return sum_constant_steps_t_s(step, sum(n for _, _, n in self.segs))
        total = 0.0
        for i, (_, _, n) in enumerate(self.segs):
            first, last = (Score(*(_end(getattr(score, k), r) for k in _TERMS), None, None) for r in (2 * i, 2 * i + 1))
            total = total + sum_affine_steps_t_s(first, last, n)
        return total


_TERMS = ("t_compute_s", "t_memory_s", "t_comm_s", "overhead_s")


def _end(x: np.ndarray, row: int) -> np.ndarray:
    """Row `row` of the segment-ends axis of a stacked array (ops, ends, *grid); an axis of 1: the same at every end."""
    return x[:, row] if x.shape[1] > 1 else x[:, 0]


def _work_totals(blocks: list[OpBlock], sh: Sharding, micro=None) -> dict:
    """Replica totals of the work: per-chip numbers * shards * count * micro-batches (micro; None: pp) (a replicated
    op counts its FLOPs once; every chip of the tensor-parallel group moves its own HBM bytes). Summed op by op."""
    tot = dict.fromkeys(_WORK_TOTALS, 0.0)
    micro = sh.pp if micro is None else micro  # micro-batches: a number, or one per grid point (scaled at the end)
    mb = micro if np.ndim(micro) == 0 else 1.0
    for b in blocks:
        w, ops = b.work, b.ops
        flops = w["flops"] * _per_op([op.count * op.shards * mb for op in ops], w["flops"])
        traffic = _per_op([op.count * sh.ffn_chips * mb for op in ops], w["flops"])  # every chip of a stage
        comm = w["comm_bytes"]
        for k in ("count", "group_chips", "shards"):
            comm = comm * _per_op([getattr(op, k) for op in ops], w["flops"])
        attn = [j for j, op in enumerate(ops) if op.kind == "attention"]
        mlp = [j for j, op in enumerate(ops) if op.kind == "gemm" and op.group != "model"]
        for key, rows, which in (("flops", flops, None), ("weight_bytes", w["weight_bytes"] * traffic, None),
                                 ("bytes", (w["weight_bytes"] + w["act_bytes"] + w["kv_bytes"]) * traffic, None),
                                 ("comm_bytes", comm * mb, None), ("attention_flops", flops, attn),
                                 ("kv_read_bytes", w["kv_bytes"] * traffic, attn), ("mlp_flops", flops, mlp)):
            tot[key] = _add_rows(tot[key], rows, which)
    return tot if np.ndim(micro) == 0 else {k: v * micro for k, v in tot.items()}


def _phase_totals(blocks: list[OpBlock], work: dict, time_factor) -> PhaseTotals:
    """Replica totals: the work's (_work_totals), and the times: the sum over ops of t * count (one micro-batch
    through all stages) scaled by the pipeline schedule."""
    per_op_times = []
    for b in blocks:
        counts = _per_op([op.count for op in b.ops], b.work["flops"])
        per_op_times.append(Times(*(getattr(b.times, k) * counts * time_factor for k in TIME_FIELDS)))
    return PhaseTotals(**work, times=Times(*(_sum_blocks(per_op_times, k) for k in TIME_FIELDS)),
                       per_op_times=per_op_times)


def _per_op(values: list, like: np.ndarray) -> np.ndarray:
    """One number per op, shaped against the (ops, *grid) array `like`."""
    return np.array(values, dtype=np.float64).reshape((len(values),) + (1,) * (getattr(like, "ndim", 0) - 1))


def _add_rows(total, rows, which=None):
    """total + each row of `rows` (those numbered in `which`, default all), one after another."""
    if getattr(rows, "ndim", 0) == 1:  # one number per op: added as Python floats (the same double additions, faster)
        rows = rows.tolist()
        for j in range(len(rows)) if which is None else which:
            total = total + rows[j]
        return np.float64(total)
    for j in range(len(rows)) if which is None else which:
        total = total + rows[j]
    return total


def _sum_blocks(blocks: list[Times], key: str):
    total = 0
    for b in blocks:
        total = _add_rows(total, getattr(b, key))
    return total


def run_phase(ops: list[Op], chip: Chip, eff, sh: Sharding, time_factor, sums, steps, grid: tuple | None = None,
              like: PhaseResult | None = None, micro=None) -> PhaseResult:
    """The ops scored on `chip` at `eff` and summed over the phase's steps (sums: PrefillSums or DecodeSums).
    grid: the shape every op's arrays broadcast to (the phase's), None: read from the ops. like: the same ops already
    run at another efficiency: their work sums are reused (work does not depend on it). micro: the micro-batches the
    ops' work is counted for (sharding.micro_batches; None: pp)."""
    if like is not None:
        blocks = [replace(b, score=score, times=sums.times(score))
                  for b in like.blocks for score in [score_stack(b.ops, chip, eff, b.grid, b.terms)]]
        totals = _phase_totals(blocks, {k: getattr(like.totals, k) for k in _WORK_TOTALS}, time_factor)
        return replace(like, blocks=blocks, totals=totals)
    shape = ops_shape(ops) if grid is None else grid
    blocks = []
    for block, g, terms, score in _scored_blocks(ops, chip, eff, shape):
        work = {f: stacked([getattr(op, f) for op in block], (len(block),) + g) for f in WORK_FIELDS}
        blocks.append(OpBlock(block, score, sums.work(work), sums.times(score), g, terms))
    return PhaseResult(blocks, _phase_totals(blocks, _work_totals(blocks, sh, micro), time_factor), steps, time_factor,
                       sums, shape)


def phase_t_s(ops: list[Op], chip: Chip, eff, time_factor, sums=PrefillSums, grid: tuple | None = None,
              memo: dict | None = None) -> np.ndarray:
    """run_phase(ops, chip, eff, ..., time_factor, sums, ..., grid).totals.times.t_s alone: the same blocks, scores
    and op-by-op sum, without the work totals and the other time fields (a serving step table and the planner need
    only the wall clock). memo: a dict kept with `ops` while they are scored on several chips (what does not
    depend on the chip is stacked once there: roofline.stack_terms, roofline.stacked_efficiency)."""
    return phase_t_s_chips(ops, [chip], [eff], time_factor, sums, grid, memo)[0]


def phase_t_s_chips(ops: list[Op], chips: list, effs: list, time_factor, sums=PrefillSums,
                    grid: tuple | None = None, memo: dict | None = None, kept: dict | None = None) -> list:
    """phase_t_s of `ops` on each chip (effs: its efficiency model), the same numbers: each block of ops is scored
    on each chip in one stacked pass (what does not depend on the chip made once: memo) and summed over the phase's
    steps; then each chip's rows are summed op by op. kept: a dict kept over several calls whose graphs
    are built on one grid (the static planner's shardings): each op's times are kept there under its Op.value_key,
    so an op that scored before (shardings that differ in ep alone share all but their expert ops) is not scored
    again."""
    shape = remembered(memo, "grid", ops_shape, ops) if grid is None else grid  # read once per graph with a memo
    if kept is not None:
        return _kept_t_s_chips(ops, chips, effs, time_factor, sums, shape, kept)
    totals = [0] * len(chips)
    for block, per_chip in _op_t_s(ops, chips, effs, sums, shape, memo):
        counts = [op.count for op in block]
        for c, t_s in enumerate(per_chip):
            totals[c] = _add_rows(totals[c], t_s * _per_op(counts, t_s) * time_factor)
    return totals


def _op_t_s(ops: list[Op], chips: list, effs: list, sums, shape: tuple, memo: dict | None, own_grid: bool = True):
    """(block, each chip's times of its ops summed over the phase's steps (ops, *grid), chip after chip) for the
    blocks of roofline.op_blocks. own_grid: a block of one op is scored on its own grid (1 on the axes it is constant
    on), else on the phase's."""
    for lo, hi in op_blocks(len(ops), shape):
        block = ops[lo:hi]
        shared = None if memo is None else memo.setdefault((lo, hi), {})
        g = shape if hi - lo > 1 or not own_grid else _block_grid(block, shape, shared)
        if sums is PrefillSums and math.prod(g) >= LARGE_STEP_GRID:  # one step on a large grid: each op's own time,
            # no stacked Score (roofline.stack_t_s); a small grid (the static planner's batches) a stacked Score
            yield block, (stack_t_s(block, chip, eff, g, shared) for chip, eff in zip(chips, effs))
            continue
        yield block, (sums.t_s(score_stack(block, chip, eff, g, None, shared)) for chip, eff in zip(chips, effs))


def _kept_t_s_chips(ops: list[Op], chips: list, effs: list, time_factor, sums, shape: tuple, kept: dict) -> list:
    """phase_t_s_chips of `ops` from each op's times kept in `kept` (keep_t_s_chips scores those not there yet),
    summed in the ops' order."""
    table, keys = keep_t_s_chips(ops, chips, effs, sums, shape, kept)
    rows = np.stack([table[k] for k in keys])  # (ops, chips, *grid)
    total = _add_rows(0, rows * _per_op([op.count for op in ops], rows) * time_factor)
    return list(total)


def keep_t_s_chips(ops: list[Op], chips: list, effs: list, sums, shape: tuple, kept: dict) -> tuple:
    """Each op's times summed over the phase's steps, per chip (chips, *grid), kept in `kept` under its
    Op.value_key, per chips, efficiency models, sums and grid: the ops not there yet are scored together. Returns
    (the table of those chips, models, sums and grid, the ops' keys)."""
    key = (sums.key, shape, tuple(map(id, chips)), tuple(map(id, effs)))
    table = kept.setdefault(key, (chips, effs, {}))[2]  # the chips and models held: their ids stay theirs
    keys = [op.value_key() for op in ops]
    fresh = {k: op for k, op in zip(keys, ops) if k not in table}
    if fresh:
        names = iter(fresh)
        for block, per_chip in _op_t_s(list(fresh.values()), chips, effs, sums, shape, {}, own_grid=False):
            per_chip = np.stack(list(per_chip), axis=1)  # (ops, chips, *grid)
            for j in range(len(block)):
                table[next(names)] = per_chip[j]
    return table, keys


LARGE_STEP_GRID = 256  # grid points from which a one-step block is scored op part by op part (stack_t_s)


def _block_grid(block: list[Op], shape: tuple, shared: dict | None = None) -> tuple:
    """The grid of a lone op scored against the phase's `shape` (its own, right-aligned), kept in `shared`."""
    return remembered(shared, ("grid", shape), lambda: _right_aligned(ops_shape(block), len(shape)))


def graph_memo(graphs: dict | None, key: tuple, make) -> tuple:
    """(make(), a memo dict for phases.phase_t_s) kept in `graphs` under `key` (a graph does not depend on the chip:
    the caller scores it on each of its chips); graphs None: made afresh, no memo."""
    if graphs is None:
        return make(), None
    hit = graphs.get(key)
    if hit is None:
        hit = graphs[key] = (make(), {})
    return hit


def _scored_blocks(ops: list[Op], chip: Chip, eff, shape: tuple):
    """(block of ops, its grid, its stack terms, its Score) for the blocks of roofline.op_blocks: several ops stack on
    the phase's grid; a lone op (a large grid) keeps its own, so no work is done on broadcast copies."""
    for lo, hi in op_blocks(len(ops), shape):
        block = ops[lo:hi]
        g = shape if hi - lo > 1 else _block_grid(block, shape)
        terms = stack_terms(block, chip, g)
        yield block, g, terms, score_stack(block, chip, eff, g, terms)


def _right_aligned(shape: tuple, ndim: int) -> tuple:
    """shape with leading axes of 1 up to ndim axes (it broadcasts the same against a grid of ndim axes)."""
    return (1,) * (ndim - len(shape)) + tuple(shape)


_WORK_TOTALS = ("flops", "bytes", "weight_bytes", "kv_read_bytes", "comm_bytes", "attention_flops", "mlp_flops")


def total_of(x) -> float:
    """float(np.sum(x)), at once for a scalar."""
    return float(x) if getattr(x, "ndim", 0) == 0 else float(np.sum(x))
