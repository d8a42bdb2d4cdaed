"""Scenario -> Estimate: TTFT, TPOT, end-to-end latency, throughput, phase summaries, memory.

Phases: the first output token comes from prefill (TTFT = prefill time); then gen_len - 1 decode steps,
step j (1-based) attending to prompt_len + j tokens; TPOT = their mean; e2e = TTFT + sum of steps;
throughput = batch * gen_len / e2e per replica (times dp replicas).

The sum over decode steps is exact and costs O(1) per op: inside a stretch of context lengths where no
sliding window is crossed, every op's FLOPs and bytes are affine in the context length, so its compute
and memory times are affine, and roofline.sum_affine_steps sums max(affine, affine) in closed form.
Everything is numpy-vectorized over the scenario grid, so `sweep` (sweep.py) evaluates a whole grid in one pass
(no Python loop over grid points or decode steps).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from .attention_shapes import KV_BLOCKS
from .bounds import BOUNDS, check_amounts, check_count
from .chip_fits import DEFAULT_EFFICIENCY, efficiency_label, efficiency_mode, resolve_efficiency
from .dequant import narrower_weights
from .efficiency import DECODE_FAMILIES, CalibratedModel, dequantizing, family_of
from .errors import ScenarioError
from .graph import Dtypes, Phase, build_ops, handoff_ops, resolve_dtypes
from .hardware import Chip, load_chip
from .memory import GPU_MEMORY_UTILIZATION, Footprint, footprint, usable_bytes, weight_bytes
from .model.hf import load_model
from .model.spec import ModelSpec
from .optable import OpTable
from .phases import (DecodeSums, PhaseResult, PhaseTotals, PrefillSums, decode_segments, graph_memo, phase_t_s,
                     run_phase, total_of)
from .roofline import TERMS, intensity_of, score_op
from .sharding import (MOE_DISPATCH, Sharding, critical_thresholds, micro_batch_note, micro_batches, stage_divisor,
                       stage_note, whole_micro_batches)
from .uncertainty import phase_band, uncertainty_of
from .units import array_key, json_ready


# ------------------------------------------------------------------------------------------- types
@dataclass(frozen=True)
class PhaseSummary:
    """Totals of one phase over the whole model replica (all its chips); times are wall clock.

    flops count useful work once (an op replicated on every tensor-parallel chip counts once); bytes,
    weight_bytes and kv_read_bytes are the HBM traffic of all chips (replicated KV heads, MLA latents and
    replicated weights are read by every chip that holds them).
    For decode, totals are the mean decode step. attention_flops: the attention core (scores, AV);
    mlp_flops: every other matmul of the transformer blocks (projections and MLP / experts), so that
    attention_mlp_flop_ratio is the book's T/(8D) in its setup. gqa_intensity: FLOP per KV-cache byte
    of the attention core (tends to G = heads / KV heads in decode).
    """

    flops: float
    bytes: float
    weight_bytes: float
    kv_read_bytes: float
    comm_bytes: float
    intensity: float
    t_compute_s: float
    t_memory_s: float
    t_comm_s: float
    t_lower_s: float
    t_upper_s: float
    t_s: float
    bound: str
    bound_shares: dict[str, float]
    attention_flops: float
    mlp_flops: float
    attention_mlp_flop_ratio: float
    gqa_intensity: float
    steps: int = 1

    @property
    def comm_share(self) -> float:
        return self.t_comm_s / self.t_s if self.t_s > 0 else 0.0


@dataclass(frozen=True)
class MemorySummary:
    """Bytes per chip (weights, KV cache at prompt_len + gen_len, peak activations) against the usable memory
    (usable_bytes = gpu_memory_utilization x capacity_bytes, the chip's engine capacity: the total its driver reports
    where the chip file sources it, else its datasheet HBM; capacity_label names which; GPU_MEMORY_UTILIZATION).

    weight_bytes and kv_cache_bytes are replica totals; per_chip_bytes is what the fullest chip holds."""

    weight_bytes: float
    kv_cache_bytes: float
    activation_bytes: float
    per_chip_weight_bytes: float
    per_chip_kv_cache_bytes: float
    per_chip_activation_bytes: float
    per_chip_bytes: float
    capacity_bytes: float
    fits: bool
    max_batch: int
    usable_bytes: float
    gpu_memory_utilization: float
    capacity_label: str = "HBM"


@dataclass
class Estimate:
    model: str
    chip: str
    scenario: dict[str, Any]
    ttft_s: float
    tpot_s: float | None
    e2e_s: float
    throughput_tokens_per_s: float
    throughput_tokens_per_s_per_chip: float
    prefill: PhaseSummary
    decode: PhaseSummary | None
    memory: MemorySummary
    critical: dict[str, float]
    assumptions: list[str]
    efficiency: str
    _ops: Any = field(default=None, repr=False, compare=False)  # the op table, or an OpTable that builds it
    ideal: dict[str, float | None] | None = None  # the pure-roofline headline, when efficiency is not ideal
    warnings: list[str] = field(default_factory=list)  # what makes these numbers doubtful (the CLI shows it first)
    uncertainty: dict[str, Any] | None = None  # calibrated: p10/p90 of the headline (uncertainty.uncertainty_of)
    efficiency_mode: str = "calibrated"  # 'ideal' | 'calibrated' | 'custom'; `efficiency` names the chip's fit

    @property
    def ops(self):
        """pandas.DataFrame, one row per op per phase (OPS_COLUMNS): built on first use (pandas is imported then)."""
        table = self._ops
        if isinstance(table, OpTable):
            table = self._ops = table.frame()
        return table

    @ops.setter
    def ops(self, df) -> None:
        self._ops = df

    @property
    def tokens_per_s_per_user(self) -> float | None:
        """Output tokens/s one user sees while decoding: 1 / TPOT (None with gen_len 1)."""
        return 1.0 / self.tpot_s if self.tpot_s else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, same names as the attributes (ops as a list of row dicts)."""
        d = {k: getattr(self, k) for k in ("model", "chip", "scenario", "efficiency_mode", "efficiency", "ttft_s",
                                           "tpot_s", "e2e_s", "throughput_tokens_per_s",
                                           "throughput_tokens_per_s_per_chip", "tokens_per_s_per_user")}
        d["prefill"] = asdict(self.prefill)
        d["decode"] = asdict(self.decode) if self.decode else None
        d["memory"] = asdict(self.memory)
        d["critical"] = dict(self.critical)
        d["assumptions"] = list(self.assumptions)
        d["ideal"] = dict(self.ideal) if self.ideal else None
        d["warnings"] = list(self.warnings)
        d["uncertainty"] = self.uncertainty
        d["ops"] = self.ops.to_dict(orient="records")
        return json_ready(d)


# ------------------------------------------------------------------------------------------- phases
def _repriced(r: Evaluation, eff) -> Evaluation:
    """r's scenario priced at another efficiency model: its ops and their work are reused (they do not depend on it)."""
    def again(ph: PhaseResult | None) -> PhaseResult | None:
        return ph and run_phase(ph.ops, r.chip, eff, r.sharding, ph.time_factor, ph.sums, ph.steps, ph.shape, like=ph)

    return replace(r, efficiency_model=eff, prefill=again(r.prefill), decode=again(r.decode))


def _prefill(spec, chip, sh, dt, eff, batch, prompt, attention) -> PhaseResult:
    ops = build_ops(spec, Phase.prefill(batch, prompt), sh, dt, attention)
    return run_phase(ops, chip, eff, sh, prefill_time_factor(sh, spec.n_layers, batch), PrefillSums, np.float64(1.0),
                     scenario_grid(batch, prompt), micro=micro_batches(sh.pp, batch))


def prefill_time_factor(sh: Sharding, n_layers: int, batch=None):
    """Pipeline: the first micro-batch crosses every stage and each of the other m - 1 follows one fullest stage
    later: (d + m - 1) / d of one micro-batch's pass through all layers, d = sharding.stage_divisor and m the
    micro-batches of `batch` (sharding.micro_batches; None: pp). (2pp - 1) / pp where the layers divide evenly; 61
    layers over 2 stages, 31 + 30: 92 / 61; one prompt: 1, a pass with its hand-offs."""
    d = stage_divisor(n_layers, sh.pp)
    m = sh.pp if batch is None else micro_batches(sh.pp, batch)
    return (d + m - 1) / d


def step_time_factor(sh: Sharding, n_layers: int, batch=None):
    """Pipeline: a decode (or serving) step passes its m micro-batches (of `batch`, sharding.micro_batches; None: pp)
    through the fullest stage, and each micro-batch crosses every stage before its next token: max(d, m) / d of
    one micro-batch's pass through all layers (d = sharding.stage_divisor). pp / d at m = pp: 1 where the layers
    divide evenly, 62 / 61 for 61 layers over 2 stages; a batch below pp: one pass."""
    d = stage_divisor(n_layers, sh.pp)
    return np.maximum(d, sh.pp if batch is None else micro_batches(sh.pp, batch)) / d


def scenario_grid(batch, prompt) -> tuple:
    """The shape a phase of the scenario runs on: batch and prompt broadcast."""
    return np.broadcast_shapes(np.shape(batch), np.shape(prompt))


def _decode(spec, chip, sh, dt, eff, batch, prompt, gen, attention) -> PhaseResult:
    # pipeline: a decode step for all micro-batches takes one micro-batch's trip through all stages
    ops, sums, grid = decode_ops(spec, sh, dt, batch, prompt, gen, attention, kernel_steps=kernel_breakpoints(eff))
    return run_phase(ops, chip, eff, sh, step_time_factor(sh, spec.n_layers, batch), sums, gen - 1.0, grid,
                     micro=micro_batches(sh.pp, batch))


def kernel_breakpoints(eff) -> tuple:
    """The context lengths where a decode priced under `eff` steps besides the model's own: the KV blocks
    (attention_shapes.KV_BLOCKS) where a decode fit prices FlashAttention-2's combine past one block
    (overhead_split_s); none for the ideal roofline, a uniform Efficiency or fits without that term."""
    fit_for = getattr(eff, "fit_for", None)
    return KV_BLOCKS if fit_for and any(fit_for(f).overhead_split_s > 0 for f in DECODE_FAMILIES) else ()


def decode_ops(spec, sh, dt, batch, prompt, gen, attention, build=build_ops,
               kernel_steps=KV_BLOCKS) -> tuple[list, DecodeSums, tuple]:
    """The decode ops (built at both ends of every segment; build: graph.build_ops, or graph.handoff_ops), their
    DecodeSums and their step grid. Segments end at the model's context breakpoints (spec.context_breakpoints) and
    at kernel_steps (kernel_breakpoints; by default the KV blocks, exact under any efficiency model)."""
    segs = decode_segments(prompt, gen, spec.context_breakpoints() + list(kernel_steps))
    kv = np.stack([x for lo, hi, _ in segs for x in (lo, hi)])  # (2S, *grid): both ends of every segment
    ops = build(spec, Phase.decode(batch, kv), sh, dt, attention)
    return ops, DecodeSums(segs), np.broadcast_shapes(kv.shape, np.shape(batch))


def _summary(tot: PhaseTotals, steps: float) -> PhaseSummary:
    """PhaseSummary of a scalar scenario (decode: per mean step)."""
    def v(x):
        return float(x) / steps

    t = tot.times
    t_s = v(t.t_s)
    flops, nbytes = v(tot.flops), v(tot.bytes)
    attn, mlp, kvb = v(tot.attention_flops), v(tot.mlp_flops), v(tot.kv_read_bytes)
    return PhaseSummary(
        flops=flops, bytes=nbytes, weight_bytes=v(tot.weight_bytes), kv_read_bytes=kvb,
        comm_bytes=v(tot.comm_bytes), intensity=float(intensity_of(flops, nbytes)),
        t_compute_s=v(t.t_compute_s), t_memory_s=v(t.t_memory_s), t_comm_s=v(t.t_comm_s),
        t_lower_s=v(t.t_lower_s), t_upper_s=v(t.t_upper_s), t_s=t_s, bound=str(t.bound),
        bound_shares={b: (v(tot.bound_shares[b]) / t_s if t_s > 0 else 0.0) for b in TERMS},
        attention_flops=attn, mlp_flops=mlp, attention_mlp_flop_ratio=float(intensity_of(attn, mlp)),
        gqa_intensity=float(intensity_of(attn, kvb)), steps=int(round(steps)))


# ------------------------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class Evaluation:
    """One vectorized evaluation: a model on a chip at a sharding and dtypes, over a grid of batch, prompt and
    generation lengths (broadcast arrays). Estimate, sweep, plan and reports read it."""

    spec: ModelSpec
    chip: Chip
    sharding: Sharding
    dtypes: Dtypes
    efficiency_model: Any  # None (ideal), an Efficiency, or a CalibratedModel
    assumptions: list[str]
    batch: np.ndarray
    prompt_len: np.ndarray
    gen_len: np.ndarray
    prefill: PhaseResult
    decode: PhaseResult | None  # None when no point of the grid decodes (gen_len = 1 everywhere)
    memory: Footprint
    warnings: list[str] = field(default_factory=list)  # what makes the numbers doubtful; shown first

    @cached_property
    def ttft_s(self) -> np.ndarray:
        return self.prefill.totals.times.t_s

    @cached_property
    def efficiency_text(self) -> str:  # efficiency_label, its borrowed fits those of the op families priced here
        return efficiency_label(self.efficiency_model, {family_of(op) for p in (self.prefill, self.decode) if p
                                                        for op in p.ops})

    @cached_property
    def decode_s(self) -> np.ndarray:
        """All decode steps of a sequence (0 where gen_len = 1)."""
        return decode_total_of(self.gen_len, self.ttft_s, self.decode and self.decode.totals.times.t_s)

    @cached_property
    def tpot_s(self) -> np.ndarray:
        """Mean decode step (nan where gen_len = 1)."""
        return tpot_of(self.gen_len, self.ttft_s, self.decode and self.decode.totals.times.t_s)

    @cached_property
    def e2e_s(self) -> np.ndarray:
        return self.ttft_s + self.decode_s

    @cached_property
    def throughput_tokens_per_s(self) -> np.ndarray:
        return self.sharding.dp * self.batch * self.gen_len / self.e2e_s

    @cached_property
    def throughput_tokens_per_s_per_chip(self) -> np.ndarray:
        return self.batch * self.gen_len / self.e2e_s / self.sharding.chips_per_replica


def decode_total_of(gen, ttft, decode_t):
    """All decode steps of a sequence from the decode phase's summed time (None: no point decodes)."""
    if decode_t is None:
        return np.zeros(np.shape(ttft))
    return np.where(gen > 1, decode_t, 0.0)


def tpot_of(gen, ttft, decode_t):
    """Mean decode step (nan where gen_len = 1) from the decode phase's summed time (None: no point decodes)."""
    if decode_t is None:
        return np.full(np.shape(ttft), np.nan)
    return np.where(gen > 1, decode_t / np.maximum(gen - 1, 1), np.nan)


def evaluate(model, chip, *, batch=1, prompt_len=2048, gen_len=256, tp=1, pp=1, ep=1, dp=1,
             weight_dtype=None, act_dtype="bf16", kv_dtype=None, efficiency=DEFAULT_EFFICIENCY, attention="fused",
             sequence_parallel=False, attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0,
             moe_dispatch=MOE_DISPATCH,
             gpu_memory_utilization=GPU_MEMORY_UTILIZATION) -> Evaluation:
    """The vectorized core: batch, prompt_len and gen_len may be arrays (broadcast). Memory is checked against
    gpu_memory_utilization x the chip's engine_capacity_bytes (memory.GPU_MEMORY_UTILIZATION)."""
    spec, chip, sh, dt, eff, assumptions, batch, prompt, gen = _inputs(
        model, chip, batch, prompt_len, gen_len, tp, pp, ep, dp, weight_dtype, act_dtype, kv_dtype, efficiency,
        sequence_parallel, attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch)
    pre = _prefill(spec, chip, sh, dt, eff, batch, prompt, attention)
    dec = _decode(spec, chip, sh, dt, eff, batch, prompt, np.maximum(gen, 2), attention) if np.any(gen > 1) else None
    mem = footprint(spec, usable_bytes(chip.engine_capacity_bytes, gpu_memory_utilization), sh, dt, pre.ops,
                    batch, prompt + gen)
    r = Evaluation(spec, chip, sh, dt, eff, assumptions, batch, prompt, gen, pre, dec, mem,
                   _warnings(spec, chip, sh, dt, prompt + gen))
    if eff is not None:
        assumptions.append(f"efficiency: {r.efficiency_text}.")
    if isinstance(eff, CalibratedModel):
        assumptions += filter(None, [_marlin_note(eff, chip, [op for ph in (pre, dec) if ph for op in ph.ops])])
    return r


def _marlin_note(model: CalibratedModel, chip: Chip, ops) -> str:
    """The assumption behind weight-only GEMMs priced at Marlin's tensor-core ceiling (dequant.marlin_compute_max),
    or ''."""
    cap = min((model.dequant_cap(chip, op.weight_dtype) for op in ops if op.kind == "gemm" and dequantizing(op)),
              default=1.0)
    if cap >= 1.0:
        return ""
    return (f"weight-only GEMMs: vLLM runs Marlin (mma.sync) for them on {chip.name}; its tensor cores are priced at "
            f"{cap:.3g} of the bf16 peak, the moe_int4 fit (vLLM's Marlin MoE): no dense Marlin GEMM was timed.")


def _inputs(model, chip, batch, prompt_len, gen_len, tp, pp, ep, dp, weight_dtype, act_dtype, kv_dtype, efficiency,
            sequence_parallel, attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch) -> tuple:
    """evaluate()'s arguments checked and resolved: (spec, chip, sharding, dtypes, efficiency model, assumptions,
    batch, prompt, gen as float64 arrays)."""
    spec, chip = load_model(model), load_chip(chip)
    sh, batch, prompt, gen = scenario_arrays(batch, prompt_len, gen_len, tp, pp, ep, dp, sequence_parallel,
                                             attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch)
    dt = resolve_dtypes(chip, Dtypes(weight_dtype, act_dtype, kv_dtype), assumptions := list(spec.assumptions))
    assumptions += filter(None, [spec.w8a8_fallback_note(dt, chip.name),  # a W8A8 checkpoint run weight-only
                                 stage_note(spec.n_layers, sh.pp), micro_batch_note(sh.pp, batch)])
    return spec, chip, sh, dt, resolve_efficiency(efficiency, chip), assumptions, batch, prompt, gen


def scenario_arrays(batch, prompt_len, gen_len, tp, pp, ep, dp, sequence_parallel, attention_dp, moe_tp, moe_ep,
                    routing_skew, moe_dispatch=MOE_DISPATCH) -> tuple:
    """The chip-free part of _inputs: (sharding, batch, prompt, gen as float64 arrays), checked."""
    batch, prompt_len, gen_len, tp, pp, ep, dp, attention_dp = (check_count(n, v) for n, v in zip(
        ("batch", "prompt_len", "gen_len", "tp", "pp", "ep", "dp", "attention_dp"),
        (batch, prompt_len, gen_len, tp, pp, ep, dp, attention_dp)))
    if any(np.ndim(x) for x in (batch, prompt_len, gen_len)):
        batch, prompt_len, gen_len = np.broadcast_arrays(batch, prompt_len, gen_len)
    batch, prompt, gen = (np.asarray(x, dtype=np.float64) for x in (batch, prompt_len, gen_len))
    sh = Sharding(tp, pp, ep, dp, sequence_parallel, attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch)
    if not np.all(whole_micro_batches(batch, sh.pp, sh.attention_dp)):
        raise ScenarioError(f"batch must be a multiple of pp x attention_dp = {sh.sequence_groups} (the batch is split "
                            "into pp micro-batches and attention_dp attention groups)"
                            + (f", or below pp = {sh.pp} (a micro-batch per sequence)" if sh.attention_dp == 1 else ""))
    return sh, batch, prompt, gen


def _warnings(spec: ModelSpec, chip: Chip, sh: Sharding, dt: Dtypes, context) -> list[str]:
    """What a user must see before the numbers: a context beyond the model's, a tensor-parallel group beyond the
    chip's scale-up domain, 4-bit float weights on a chip that cannot compute in them."""
    out = []
    if spec.max_context and np.any(context > spec.max_context):
        out.append(f"context prompt_len + gen_len = {int(np.max(context))} exceeds the model's "
                   f"maximum context {spec.max_context}; the estimate extrapolates.")
    if sh.ffn_chips > chip.scaleup.domain_size:
        out.append(f"tp x attention_dp = {sh.ffn_chips} chips exceed {chip.name}'s scale-up domain of "
                   f"{chip.scaleup.domain_size} ({chip.scaleup.kind}): every tensor-parallel collective crosses the "
                   f"scale-out link ({chip.scaleout.kind if chip.scaleout else 'none'}).")
    if dt.weight == "fp4" and "fp4" not in chip.dense_flops_per_s:
        out.append(f"fp4 weights on {chip.name}, which has no fp4 compute: they are dequantized to {dt.compute} "
                   "(the weight bytes shrink, the FLOP rate does not).")
    return out


def evaluate_step(model, chip, *, decode_batch, decode_kv_len, chunk_tokens=0, chunk_kv_len=0, tp=1, pp=1, ep=1,
                  weight_dtype=None, act_dtype="bf16", kv_dtype=None, efficiency=DEFAULT_EFFICIENCY,
                  attention="fused", attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0,
                  moe_dispatch=MOE_DISPATCH) -> PhaseTotals:
    """One continuous-batching step, vectorized: `decode_batch` sequences decode a token each (attending to
    `decode_kv_len`) while a prompt chunk of `chunk_tokens` tokens (attending to `chunk_kv_len`: its cached
    prefix + the chunk) is prefilled alongside (graph.Phase.mixed). Every argument may be an array; the
    result's times are the step's wall clock (one pass of the micro-batches through the pipeline): with
    attention_dp > 1 the busiest attention group's, the one holding the chunk; its work totals the step's."""
    args = (model, chip, decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len, tp, pp, ep, weight_dtype, act_dtype,
            kv_dtype, efficiency, attention, attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch)
    ops, chip, eff, sh, factor = _step_ops(*args)
    work = run_phase(ops, chip, eff, sh, factor, PrefillSums, np.float64(1.0)).totals
    if sh.attention_dp == 1:
        return work
    busiest = run_phase(_step_ops(*args, in_group=True)[0], chip, eff, sh, factor, PrefillSums, np.float64(1.0)).totals
    return replace(work, times=busiest.times, per_op_times=busiest.per_op_times)


def step_time_s(model, chip, *, decode_batch, decode_kv_len, chunk_tokens=0, chunk_kv_len=0, tp=1, pp=1, ep=1,
                weight_dtype=None, act_dtype="bf16", kv_dtype=None, efficiency=DEFAULT_EFFICIENCY,
                attention="fused", attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0,
                moe_dispatch=MOE_DISPATCH,
                graphs: dict | None = None) -> np.ndarray:
    """evaluate_step(...).times.t_s (the busiest attention group's), without the step's work totals and other time
    fields (serving step tables).
    graphs: a dict the caller keeps while it scores the same steps on several chips (see graph_memo)."""
    if graphs is None:
        ops, chip, eff, _, factor = _step_ops(model, chip, decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len,
                                              tp, pp, ep, weight_dtype, act_dtype, kv_dtype, efficiency, attention,
                                              attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch, in_group=True)
        return phase_t_s(ops, chip, eff, factor)
    spec, chip = load_model(model), load_chip(chip)
    amounts = _step_amounts(decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len)  # checked before keying on them
    dt = resolve_dtypes(chip, Dtypes(weight_dtype, act_dtype, kv_dtype), [])
    key = ("step", id(spec), dt, tp, pp, ep, attention, attention_dp, moe_tp, moe_ep, routing_skew,
           moe_dispatch) + tuple(array_key(x) for x in amounts)
    (ops, _, _, _, factor), memo = graph_memo(graphs, key, lambda: _step_ops(
        spec, chip, *amounts, tp, pp, ep, weight_dtype, act_dtype, kv_dtype, None, attention, attention_dp, moe_tp,
        moe_ep, routing_skew, moe_dispatch, in_group=True))
    return phase_t_s(ops, chip, resolve_efficiency(efficiency, chip), factor, memo=memo)


def step_band(model, chip, *, decode_batch, decode_kv_len, chunk_tokens=0, chunk_kv_len=0, tp=1, pp=1, ep=1,
              weight_dtype=None, act_dtype="bf16", kv_dtype=None, efficiency=DEFAULT_EFFICIENCY, attention="fused",
              attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0,
              moe_dispatch=MOE_DISPATCH) -> tuple[float, float] | None:
    """(p10, p90) multipliers of one step's calibrated kernel time, scalar sizes: its ops' family bands weighted by
    their share of the step (uncertainty.phase_band, as est.uncertainty weighs a phase); None where the efficiency is
    not a calibrated model (ideal, a custom Efficiency: no measured error to carry)."""
    ops, chip, eff, _, _ = _step_ops(model, chip, decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len, tp, pp, ep,
                                     weight_dtype, act_dtype, kv_dtype, efficiency, attention, attention_dp, moe_tp,
                                     moe_ep, routing_skew, moe_dispatch, in_group=True)
    if not isinstance(eff, CalibratedModel):
        return None
    return phase_band(eff, [(op, total_of(score_op(op, chip, eff.for_op(op, chip)).t_s) * op.count) for op in ops],
                      chip)


def pass_time_s(model, chip, *, decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len, tp=1, pp=1, ep=1,
                weight_dtype=None, act_dtype="bf16", kv_dtype=None, efficiency=DEFAULT_EFFICIENCY,
                attention="fused", attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0,
                moe_dispatch=MOE_DISPATCH,
                graphs: dict | None = None) -> np.ndarray:
    """What a prompt waits for one of its chunk steps under a pipeline: the chunk rides whole in one micro-batch,
    beside decode_batch / pp decode rows, and crosses every stage (all layers: the pp = 1 step at those sizes) with
    its pp - 1 hand-offs, before the prompt's next chunk is scheduled (vLLM does not pipeline one request's chunks:
    vllm-project/vllm#41682). step_time_s where pp = 1."""
    kw = dict(decode_kv_len=decode_kv_len, chunk_tokens=chunk_tokens, chunk_kv_len=chunk_kv_len, tp=tp, ep=ep,
              weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype, efficiency=efficiency,
              attention=attention, attention_dp=attention_dp, moe_tp=moe_tp, moe_ep=moe_ep, routing_skew=routing_skew,
              moe_dispatch=moe_dispatch,
              graphs=graphs)
    layers = step_time_s(model, chip, decode_batch=np.asarray(decode_batch) / check_count("pp", pp), pp=1, **kw)
    if pp == 1:
        return layers
    spec, chip = load_model(model), load_chip(chip)
    sh = Sharding(tp, pp, ep, 1, False, attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch)
    dt = resolve_dtypes(chip, Dtypes(weight_dtype, act_dtype, kv_dtype), [])
    # the hand-offs carry the micro-batch's tokens: a step of pp chunks (chunk_tokens x pp) puts one in each
    hand = handoff_ops(spec, Phase.mixed(decode_batch, decode_kv_len, np.asarray(chunk_tokens) * pp, chunk_kv_len,
                                         in_group=True), sh, dt, attention)
    return layers + phase_t_s(hand, chip, resolve_efficiency(efficiency, chip), 1.0)


def _step_ops(model, chip, decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len, tp, pp, ep, weight_dtype,
              act_dtype, kv_dtype, efficiency, attention, attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch,
              in_group: bool = False):
    """The ops of one mixed step (arguments checked), its chip, efficiency model, sharding and time factor (a
    pipeline's fullest stage: step_time_factor). in_group: the chunk in one attention group (Phase.mixed: the
    step's time), else spread over them (its work)."""
    spec, chip = load_model(model), load_chip(chip)
    decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len = _step_amounts(decode_batch, decode_kv_len, chunk_tokens,
                                                                           chunk_kv_len)
    sh = Sharding(tp, pp, ep, 1, False, attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch)
    dt = resolve_dtypes(chip, Dtypes(weight_dtype, act_dtype, kv_dtype), [])
    phase = Phase.mixed(decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len, in_group)
    return (build_ops(spec, phase, sh, dt, attention), chip, resolve_efficiency(efficiency, chip), sh,
            step_time_factor(sh, spec.n_layers))


def _step_amounts(decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len) -> tuple:
    """A step's sizes checked (mean batch sizes and token counts of a serving model's steps need not be whole)."""
    decode_batch = check_amounts("decode_batch", decode_batch, BOUNDS["batch"].max_value)  # 0: prefill only
    decode_kv_len, chunk_tokens, chunk_kv_len = (check_amounts(n, v, BOUNDS["context_len"].max_value) for n, v in (
        ("decode_kv_len", decode_kv_len), ("chunk_tokens", chunk_tokens), ("chunk_kv_len", chunk_kv_len)))
    if np.any(np.asarray(chunk_kv_len) < np.asarray(chunk_tokens)):
        raise ScenarioError("chunk_kv_len (cached prefix + chunk) must be at least chunk_tokens")
    return decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len


def estimate(model, chip, batch=1, prompt_len=2048, gen_len=256, tp=1, pp=1, ep=1, dp=1, weight_dtype=None,
             act_dtype="bf16", kv_dtype=None, efficiency=DEFAULT_EFFICIENCY, attention="fused", sequence_parallel=False,
             attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0, moe_dispatch=MOE_DISPATCH,
             gpu_memory_utilization=GPU_MEMORY_UTILIZATION) -> Estimate:
    """Estimate one scenario: an Estimate with the headline numbers, phase summaries, memory and op table.

    efficiency: 'calibrated' (the default: kernel efficiencies fitted per chip; `ideal` then holds the pure-roofline
    bound beside it) or 'ideal'. gpu_memory_utilization: the share of memory the engine may fill (0.9, vLLM's:
    of the driver's total where the chip file gives it)."""
    for name, v in (("batch", batch), ("prompt_len", prompt_len), ("gen_len", gen_len)):
        if isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim):
            raise ScenarioError(f"{name} must be a single number in estimate(); use sweep() for lists")
    kw = dict(batch=batch, prompt_len=prompt_len, gen_len=gen_len, tp=tp, pp=pp, ep=ep, dp=dp,
              weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype, attention=attention,
              sequence_parallel=sequence_parallel, attention_dp=attention_dp, moe_tp=moe_tp, moe_ep=moe_ep,
              routing_skew=routing_skew, moe_dispatch=moe_dispatch, gpu_memory_utilization=gpu_memory_utilization)
    r = evaluate(model, chip, efficiency=efficiency, **kw)
    spec, chip, sh, dt = r.spec, r.chip, r.sharding, r.dtypes
    memory = _memory_summary(r)
    if not memory.fits:
        r.warnings.append(f"does not fit: {memory.per_chip_bytes / 1e9:.1f} GB per chip needed, "
                          f"{memory.usable_bytes / 1e9:.1f} GB usable on {chip.name} ({gpu_memory_utilization:g} x "
                          f"{chip.engine_capacity_bytes / 1e9:.1f} GB {chip.engine_capacity_label}; max batch at this "
                          f"context: {memory.max_batch}); the times assume it did.")
    scenario = dict(batch=batch, prompt_len=prompt_len, gen_len=gen_len, tp=tp, pp=pp, ep=ep, dp=dp,
                    sequence_parallel=sequence_parallel, weight_dtype=spec.weight_label(dt), act_dtype=dt.act,
                    kv_dtype=dt.kv, compute_dtype=dt.compute, gemm_compute_dtype=spec.gemm_compute_dtype(dt),
                    attention=attention,
                    attention_dp=sh.attention_dp, moe_tp=sh.moe_tp, moe_ep=sh.moe_ep, routing_skew=sh.routing_skew,
                    moe_dispatch=sh.moe_dispatch,
                    chips=sh.chips, gpu_memory_utilization=float(gpu_memory_utilization))
    ideal = None
    if r.efficiency_model is not None:  # the bound is always reported beside a calibrated number
        ideal = _headline(_repriced(r, None), gen_len)
    head = _headline(r, gen_len)
    uncertainty = None  # calibrated: each phase's op times (all instances) weight their families' bands
    if isinstance(r.efficiency_model, CalibratedModel):
        phases = {name: ph.op_times() for name, ph in (("prefill", r.prefill), ("decode", r.decode if gen_len > 1 else None)) if ph}
        uncertainty = uncertainty_of(r.efficiency_model, phases, head, chip)
    bits = spec.weight_format_for("ffn", dt.weight).bits_per_weight(spec.d_model)
    return Estimate(
        model=spec.name, chip=chip.name, scenario=scenario, **head,
        throughput_tokens_per_s_per_chip=float(r.throughput_tokens_per_s_per_chip),
        prefill=_summary(r.prefill.totals, 1.0),
        decode=_summary(r.decode.totals, gen_len - 1.0) if gen_len > 1 else None, memory=memory,
        critical=_critical(r, spec, chip, dt, bits, batch), assumptions=r.assumptions,
        efficiency=r.efficiency_text,
        _ops=OpTable(r, gen_len), ideal=ideal, warnings=r.warnings, uncertainty=uncertainty,
        efficiency_mode=efficiency_mode(efficiency))


def _critical(r: Evaluation, spec, chip: Chip, dt, bits: float, batch) -> dict[str, float]:
    """The seeds' thresholds (sharding.critical_thresholds), plus marlin_batch_tokens where the FFN's weight-only
    GEMMs run at a dequantizing kernel's lower tensor ceiling (efficiency.CalibratedModel.dequant_cap): the tokens
    per step at which they turn compute-bound at that ceiling and the GEMM fit's memory efficiency."""
    out = critical_thresholds(spec, chip, dt.compute, bits, batch)
    model = r.efficiency_model
    if isinstance(model, CalibratedModel) and narrower_weights(bits, spec.compute_dtype_for("ffn", dt)):
        cap = model.dequant_cap(chip, spec.weight_format_for("ffn", dt.weight).dtype)
        if cap < 1.0:  # listed right after the ideal critical batch
            items = list(out.items())
            items.insert(list(out).index("batch_tokens") + 1,
                         ("marlin_batch_tokens", out["batch_tokens"] * cap / model.fit_for("gemm").memory_max))
            out = dict(items)
    return out


def _headline(r: Evaluation, gen_len) -> dict[str, float | None]:
    return dict(ttft_s=float(r.ttft_s), tpot_s=float(r.tpot_s) if gen_len > 1 else None, e2e_s=float(r.e2e_s),
                throughput_tokens_per_s=float(r.throughput_tokens_per_s))


def _memory_summary(r: Evaluation) -> MemorySummary:
    m = r.memory
    per_chip = float(m.bytes_per_chip)
    usable = float(m.capacity_bytes)  # the footprint's capacity is the usable share (usable_bytes)
    return MemorySummary(
        weight_bytes=float(weight_bytes(r.spec, r.dtypes.weight)), kv_cache_bytes=float(m.kv_cache_bytes),
        activation_bytes=float(m.activation_workspace_bytes_per_chip) * r.sharding.chips_per_replica,
        per_chip_weight_bytes=float(m.weight_bytes_per_chip), per_chip_kv_cache_bytes=float(m.kv_cache_bytes_per_chip),
        per_chip_activation_bytes=float(m.activation_workspace_bytes_per_chip), per_chip_bytes=per_chip,
        capacity_bytes=r.chip.engine_capacity_bytes, fits=per_chip <= usable, max_batch=int(m.max_batch),
        usable_bytes=usable, gpu_memory_utilization=usable / r.chip.engine_capacity_bytes,
        capacity_label=r.chip.engine_capacity_label)
