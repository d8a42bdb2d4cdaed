"""Scenario -> Estimate: TTFT, TPOT, end-to-end latency, throughput, phase summaries, memory.

Phases (DESIGN.md §4): the first output token comes from prefill (TTFT = prefill time); then
gen_len - 1 decode steps, step j (1-based) attending to prompt_len + j tokens; TPOT = their mean;
e2e = TTFT + sum of steps; throughput = batch * gen_len / e2e per replica (times dp replicas).

The sum over decode steps is exact and costs O(1) per op: inside a stretch of context lengths where no
sliding window is crossed, every op's FLOPs and bytes are affine in the context length, so its compute
and memory times are affine, and the sum over integer steps of max(affine, affine) has a closed form
(`_sum_max_affine`). Everything is numpy-vectorized over the scenario grid, so `sweep` evaluates a
whole grid in one pass (no Python loop over grid points or decode steps).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .bounds import check_count, check_grid_points
from .errors import ScenarioError
from .graph import Dtypes, Phase, build_ops, kv_elems_per_token_per_chip
from .hardware import Chip, load_chip
from .model.spec import ModelSpec
from .ops import Op
from .roofline import IDEAL, Efficiency, Score, score
from .sharding import Sharding
from .units import dtype_bytes

TERMS = ("compute", "memory", "comm")
PREFILL_CHUNK_TOKENS = 8192  # activation workspace: prefill runs in chunks of this many tokens (vLLM's default)


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
    """Bytes per chip (weights, KV cache at prompt_len + gen_len, peak activations) against HBM capacity.

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
    ops: Any = field(repr=False)  # pandas.DataFrame
    ideal: dict[str, float | None] | None = None  # the pure-roofline headline, when efficiency is not ideal

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, same names as the attributes (ops as a list of row dicts)."""
        d = {k: getattr(self, k) for k in ("model", "chip", "scenario", "efficiency", "ttft_s", "tpot_s", "e2e_s",
                                           "throughput_tokens_per_s", "throughput_tokens_per_s_per_chip")}
        d["prefill"] = asdict(self.prefill)
        d["decode"] = asdict(self.decode) if self.decode else None
        d["memory"] = asdict(self.memory)
        d["critical"] = dict(self.critical)
        d["assumptions"] = list(self.assumptions)
        d["ideal"] = dict(self.ideal) if self.ideal else None
        d["ops"] = self.ops.to_dict(orient="records")
        return _plain(d)


def _plain(x):
    """numpy scalars -> Python numbers, recursively (JSON-ready)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


# ------------------------------------------------------------------------------------------- scoring
@dataclass(frozen=True)
class Scored:
    """An op and its roofline Score; the Score's arrays (t_compute_s, t_memory_s, t_comm_s, overhead_s,
    t_s, t_lower_s, t_upper_s, bound, intensity) read through."""

    op: Op
    score: Score

    def __getattr__(self, name):
        if name == "score":  # not set yet (copy/unpickle): no recursion
            raise AttributeError(name)
        return getattr(self.score, name)


def _resolve_efficiency(efficiency, chip: Chip):
    """'ideal' | 'calibrated' | an Efficiency (applied to every op) | an object with .for_op(op, chip)."""
    if efficiency is None or efficiency == "ideal":
        return None
    if isinstance(efficiency, Efficiency):
        return efficiency
    if efficiency == "calibrated":
        from .calibrate import calibrated_model

        return calibrated_model(chip)
    if hasattr(efficiency, "for_op"):
        return efficiency
    raise ScenarioError(f"efficiency must be 'ideal' or 'calibrated', got {efficiency!r}")


def score_ops(ops: list[Op], chip: Chip, efficiency=None) -> list[Scored]:
    """Roofline terms of every op on `chip` (collectives priced on the link they cross)."""
    out = []
    for op in ops:
        eff = IDEAL if efficiency is None else (efficiency if isinstance(efficiency, Efficiency)
                                                else efficiency.for_op(op, chip))
        if op.kind == "collective":
            from .sharding import collective_terms

            ct = collective_terms(op.collective, op.comm_bytes, op.group_chips, chip)
            s = score(0.0, 0.0, peak_flops_per_s=1.0, hbm_bytes_per_s=1.0, comm_bytes=ct.link_bytes,
                      comm_hops=ct.hops, link_bytes_per_s=ct.link_bytes_per_s, link_latency_s=ct.latency_s,
                      efficiency=eff)
        else:
            s = score(op.flops, op.hbm_bytes, peak_flops_per_s=chip.peak_flops_per_s(op.compute_dtype),
                      hbm_bytes_per_s=chip.hbm_bytes_per_s, efficiency=eff)
        out.append(Scored(op, s))
    return out


def _sum_max_affine(a0, a1, b0, b1, n):
    """Sum over j = 0..n-1 of max(a_j, b_j) where a_j, b_j run linearly from (a0, b0) at j = 0 to
    (a1, b1) at j = n-1. Exact: sum(b) + sum of the positive part of the linear difference."""
    n = np.asarray(n, dtype=np.float64)
    a1, b1 = np.where(n > 1, a1, a0), np.where(n > 1, b1, b0)  # one point: the start values
    d0 = a0 - b0
    slope = np.where(n > 1, ((a1 - b1) - d0) / np.maximum(n - 1, 1), 0.0)
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


def _decode_segments(prompt, gen, windows):
    """Stretches [lo, hi] of decode context lengths (prompt+1 .. prompt+gen-1) split at sliding windows,
    inside which every op is affine in the context length. Returns (lo, hi, n) arrays per segment."""
    first = prompt + 1.0
    last = prompt + gen - 1.0
    cuts = [-np.inf] + sorted(float(w) for w in windows) + [np.inf]
    segs = []
    for c_lo, c_hi in zip(cuts[:-1], cuts[1:]):
        lo = np.maximum(first, c_lo + 1)
        hi = np.minimum(last, c_hi)
        n = np.maximum(hi - lo + 1, 0.0)
        segs.append((lo, np.maximum(hi, lo), n))
    return segs


# ------------------------------------------------------------------------------------------- phases
@dataclass
class _PhaseArrays:
    """Per-op sums over a phase (arrays over the grid) — the raw material of PhaseSummary and op rows."""

    scored: list[Scored]
    per_op: list[dict[str, np.ndarray]]  # sums over steps of flops, bytes..., t_* for one instance


_FIELDS = ("flops", "weight_bytes", "act_bytes", "kv_bytes", "comm_bytes")


def _prefill_arrays(spec, chip, sh, dt, eff, batch, prompt, attention) -> _PhaseArrays:
    ops = build_ops(spec, Phase.prefill(batch, prompt), sh, dt, attention)
    scored = score_ops(ops, chip, eff)
    per_op = []
    for s in scored:
        row = {f: getattr(s.op, f) for f in _FIELDS}
        row.update({k: getattr(s, k) for k in ("t_compute_s", "t_memory_s", "t_comm_s", "t_s", "t_lower_s",
                                               "t_upper_s")})
        per_op.append(row)
    return _PhaseArrays(scored, per_op)


def _decode_arrays(spec, chip, sh, dt, eff, batch, prompt, gen, attention) -> _PhaseArrays:
    windows = sorted({g.attention.sliding_window for g in spec.layer_groups if g.attention.sliding_window})
    segs = _decode_segments(prompt, gen, windows)
    kv = np.stack([x for lo, hi, _ in segs for x in (lo, hi)])  # (2S, *grid): both ends of every segment
    ops = build_ops(spec, Phase.decode(batch, kv), sh, dt, attention)
    scored = score_ops(ops, chip, eff)
    per_op = []
    for s in scored:
        c = np.broadcast_to(s.t_compute_s, kv.shape)
        m = np.broadcast_to(s.t_memory_s, kv.shape)
        comm = np.broadcast_to(s.t_comm_s, kv.shape)
        row = {f: 0.0 for f in _FIELDS}
        row.update(t_compute_s=0.0, t_memory_s=0.0, t_comm_s=0.0, t_s=0.0, t_lower_s=0.0, t_upper_s=0.0)
        for i, (_, _, n) in enumerate(segs):
            lo, hi = 2 * i, 2 * i + 1

            def trap(x):
                x = np.broadcast_to(np.asarray(x, dtype=np.float64), kv.shape)
                return n * (x[lo] + x[hi]) / 2

            for f in _FIELDS:
                row[f] = row[f] + trap(getattr(s.op, f))
            ovh = trap(s.overhead_s)
            sc, sm, scomm = trap(c), trap(m), trap(comm)
            smax = _sum_max_affine(c[lo], c[hi], m[lo], m[hi], n)
            row["t_compute_s"] += sc
            row["t_memory_s"] += sm
            row["t_comm_s"] += scomm
            row["t_s"] += smax + scomm + ovh
            row["t_upper_s"] += sc + sm + scomm + ovh
            # an op is either a collective (comm only) or local work (no comm), so per step
            # max(c, m, comm) = max(c, m) + comm: the lower bound sums like the headline
            row["t_lower_s"] += smax + scomm + ovh
        per_op.append(row)
    return _PhaseArrays(scored, per_op)


def _phase_totals(pa: _PhaseArrays, sh: Sharding, time_factor) -> dict[str, np.ndarray]:
    """Replica totals of a phase (arrays). Time: sum over ops of t * count (one micro-batch through all
    stages), scaled by the pipeline schedule; work: per-chip numbers * shards * count * micro-batches."""
    tot: dict[str, Any] = {k: 0.0 for k in ("flops", "bytes", "weight_bytes", "kv_read_bytes", "comm_bytes",
                                            "t_compute_s", "t_memory_s", "t_comm_s", "t_s", "t_lower_s",
                                            "t_upper_s", "attention_flops", "mlp_flops")}
    shares = {b: 0.0 for b in TERMS}
    mb = sh.pp  # micro-batches
    for s, row in zip(pa.scored, pa.per_op):
        op = s.op
        work = op.count * op.shards * mb  # useful work: a replicated op counts once
        traffic = op.count * sh.tp * mb  # HBM traffic: every chip of the tensor-parallel group runs every op
        tot["flops"] = tot["flops"] + row["flops"] * work
        tot["bytes"] = tot["bytes"] + (row["weight_bytes"] + row["act_bytes"] + row["kv_bytes"]) * traffic
        tot["weight_bytes"] = tot["weight_bytes"] + row["weight_bytes"] * traffic
        tot["comm_bytes"] = tot["comm_bytes"] + row["comm_bytes"] * op.count * op.group_chips * mb
        for k in ("t_compute_s", "t_memory_s", "t_comm_s", "t_s", "t_lower_s", "t_upper_s"):
            tot[k] = tot[k] + row[k] * op.count * time_factor
        if op.kind == "attention":
            tot["attention_flops"] = tot["attention_flops"] + row["flops"] * work
            tot["kv_read_bytes"] = tot["kv_read_bytes"] + row["kv_bytes"] * traffic  # the cache read once
        elif op.kind == "gemm" and op.group != "model":
            tot["mlp_flops"] = tot["mlp_flops"] + row["flops"] * work
        terms = np.stack(np.broadcast_arrays(row["t_compute_s"], row["t_memory_s"], row["t_comm_s"]))
        which = terms.argmax(axis=0)
        for i, b in enumerate(TERMS):
            shares[b] = shares[b] + np.where(which == i, row["t_s"] * op.count * time_factor, 0.0)
    tot["shares"] = shares
    return tot


def _summary(tot: dict, steps: float) -> PhaseSummary:
    """PhaseSummary of a scalar scenario (decode: per mean step)."""
    def v(k):
        return float(tot[k]) / steps

    t_s = v("t_s")
    terms = {"compute": v("t_compute_s"), "memory": v("t_memory_s"), "comm": v("t_comm_s")}
    shares = {b: (float(tot["shares"][b]) / steps / t_s if t_s > 0 else 0.0) for b in TERMS}
    flops, nbytes = v("flops"), v("bytes")
    attn, mlp, kvb = v("attention_flops"), v("mlp_flops"), v("kv_read_bytes")
    return PhaseSummary(
        flops=flops, bytes=nbytes, weight_bytes=v("weight_bytes"), kv_read_bytes=v("kv_read_bytes"),
        comm_bytes=v("comm_bytes"), intensity=flops / nbytes if nbytes else math.inf,
        t_compute_s=terms["compute"], t_memory_s=terms["memory"], t_comm_s=terms["comm"],
        t_lower_s=v("t_lower_s"), t_upper_s=v("t_upper_s"), t_s=t_s, bound=max(terms, key=terms.get),
        bound_shares=shares, attention_flops=attn, mlp_flops=mlp,
        attention_mlp_flop_ratio=attn / mlp if mlp else math.inf,
        gqa_intensity=attn / kvb if kvb else math.inf, steps=int(round(steps)))


# ------------------------------------------------------------------------------------------- memory
def _memory_arrays(spec, chip, sh, dt, prefill: _PhaseArrays, batch, context):
    """Per-chip weights (resident, all experts), KV cache at `context` tokens, peak prefill activations
    (one chunk of PREFILL_CHUNK_TOKENS). max_batch: the largest batch whose weights, KV cache at `context`
    and activations fit on one chip."""
    layer_w = sum(s.op.stored_bytes * s.op.count for s in prefill.scored if s.op.group != "model")
    model_w = [s.op.stored_bytes for s in prefill.scored if s.op.group == "model" and s.op.stored_bytes]
    # pp = 1: one chip holds embedding and LM head; pp > 1: they sit on the first and last stage
    w_chip = layer_w / sh.pp + (sum(model_w) if sh.pp == 1 else max(model_w, default=0.0))
    kvb = dtype_bytes(dt.kv)
    kv_seq_chip = 0.0  # KV bytes per sequence on one chip at `context` tokens
    kv_seq_total = 0.0
    for g in spec.layer_groups:
        a = g.attention
        ctx = context if a.sliding_window is None else np.minimum(context, a.sliding_window)
        kv_seq_chip = kv_seq_chip + g.count / sh.pp * kv_elems_per_token_per_chip(a, sh.tp) * ctx * kvb
        kv_seq_total = kv_seq_total + g.count * kv_elems_per_token_per_chip(a, sh.tp) * sh.tp * ctx * kvb
    # activation workspace: the largest prefill op's inputs + outputs plus the residual stream, for one
    # chunk of PREFILL_CHUNK_TOKENS tokens. Serving engines prefill in chunks and reserve this workspace up
    # front (vLLM profiles max_num_batched_tokens), so it does not grow with the batch.
    tokens_mb = np.asarray(prefill.scored[0].op.tokens)  # the embedding's T: tokens of one micro-batch
    act = np.max(np.stack(np.broadcast_arrays(*[s.op.act_bytes for s in prefill.scored])), axis=0)
    act = act + tokens_mb * spec.d_model * dtype_bytes(dt.act)
    act = act / tokens_mb * PREFILL_CHUNK_TOKENS  # scaled to one chunk: activations grow with the tokens
    per_chip = w_chip + kv_seq_chip * batch + act
    free = chip.hbm_bytes - w_chip - act
    # largest batch (a multiple of pp) with w + B * kv_seq + chunk activations <= capacity
    max_batch = np.where(free > 0, np.floor(free / kv_seq_chip / sh.pp) * sh.pp, 0.0)
    return dict(per_chip_weight_bytes=w_chip, per_chip_kv_cache_bytes=kv_seq_chip * batch, per_chip_activation_bytes=act,
                per_chip_bytes=per_chip, kv_cache_bytes=kv_seq_total * batch, max_batch=max_batch,
                kv_bytes_per_sequence_per_chip=kv_seq_chip, activation_workspace_bytes=act)


# ------------------------------------------------------------------------------------------- public
def _load_model(model) -> ModelSpec:
    if isinstance(model, ModelSpec):
        return model
    from .model.hf import load_model

    return load_model(model)


def _check_positive_int(name, value):
    return check_count(name, value)  # bounds.BOUNDS: integral, >= 1, below the physical bound


def _compute_dtype(chip: Chip, dt: Dtypes, assumptions: list[str]) -> Dtypes:
    if dt.compute in chip.dense_flops_per_s:
        return dt
    if dt.compute == "bf16" and "fp16" in chip.dense_flops_per_s:
        assumptions.append(f"{chip.name} has no bf16 matrix units; compute runs in fp16 at its fp16 peak.")
        return Dtypes(dt.weight, "fp16", dt.kv, "fp16")
    raise ScenarioError(f"chip {chip.name} has no {dt.compute} compute; it has {', '.join(chip.dense_flops_per_s)}")


def evaluate(model, chip, *, batch=1, prompt_len=2048, gen_len=256, tp=1, pp=1, ep=1, dp=1,
             weight_dtype=None, act_dtype="bf16", kv_dtype=None, efficiency="ideal", attention="fused",
             sequence_parallel=False) -> dict[str, Any]:
    """The vectorized core: batch, prompt_len and gen_len may be arrays (broadcast). Returns arrays."""
    spec = _load_model(model)
    chip = load_chip(chip)
    batch, prompt_len, gen_len, tp, pp, ep, dp = (_check_positive_int(n, v) for n, v in zip(
        ("batch", "prompt_len", "gen_len", "tp", "pp", "ep", "dp"), (batch, prompt_len, gen_len, tp, pp, ep, dp)))
    batch, prompt, gen = (np.asarray(x, dtype=np.float64) for x in np.broadcast_arrays(batch, prompt_len, gen_len))
    sh = Sharding(tp, pp, ep, dp, sequence_parallel)
    if np.any(np.mod(batch, pp)):
        raise ScenarioError(f"batch must be a multiple of pp={pp} (the batch is split into pp micro-batches)")
    assumptions = list(spec.assumptions)
    dt = _compute_dtype(chip, Dtypes(weight_dtype, act_dtype, kv_dtype), assumptions)
    eff = _resolve_efficiency(efficiency, chip)
    if eff is not None:
        assumptions.append(f"efficiency: {_efficiency_label(eff)}.")
    if spec.max_context and np.any(prompt + gen > spec.max_context):
        assumptions.append(f"warning: context prompt_len + gen_len = {int(np.max(prompt + gen))} exceeds the model's "
                           f"max_position_embeddings {spec.max_context}; the estimate extrapolates.")
    # pipeline schedule: the batch flows as pp micro-batches; a decode step for all of them takes one
    # micro-batch's trip through all stages; the prefill finishes after (2pp - 1) stage slots
    pre = _prefill_arrays(spec, chip, sh, dt, eff, batch, prompt, attention)
    pre_tot = _phase_totals(pre, sh, (2 * pp - 1) / pp)
    out: dict[str, Any] = dict(spec=spec, chip=chip, sharding=sh, dtypes=dt, assumptions=assumptions, efficiency_model=eff,
                               prefill=pre, prefill_totals=pre_tot, batch=batch, prompt=prompt, gen=gen)
    ttft = pre_tot["t_s"]
    has_decode = np.any(gen > 1)
    if has_decode:
        dec = _decode_arrays(spec, chip, sh, dt, eff, batch, prompt, np.maximum(gen, 2), attention)
        dec_tot = _phase_totals(dec, sh, 1.0)
        decode_sum = np.where(gen > 1, dec_tot["t_s"], 0.0)
        out.update(decode=dec, decode_totals=dec_tot)
        tpot = np.where(gen > 1, dec_tot["t_s"] / np.maximum(gen - 1, 1), np.nan)
    else:
        decode_sum, tpot = 0.0, np.nan
    e2e = ttft + decode_sum
    out.update(ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, throughput_tokens_per_s=dp * batch * gen / e2e,
               throughput_tokens_per_s_per_chip=batch * gen / e2e / sh.chips_per_replica)
    out["memory"] = _memory_arrays(spec, chip, sh, dt, pre, batch, prompt + gen)
    return out


def estimate(model, chip, batch=1, prompt_len=2048, gen_len=256, tp=1, pp=1, ep=1, dp=1, weight_dtype=None,
             act_dtype="bf16", kv_dtype=None, efficiency="ideal", attention="fused",
             sequence_parallel=False) -> Estimate:
    """Estimate one scenario. See DESIGN.md §7 for the contract of the returned Estimate."""
    for name, v in (("batch", batch), ("prompt_len", prompt_len), ("gen_len", gen_len)):
        if isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim):
            raise ScenarioError(f"{name} must be a single number in estimate(); use sweep() for lists")
    r = evaluate(model, chip, batch=batch, prompt_len=prompt_len, gen_len=gen_len, tp=tp, pp=pp, ep=ep, dp=dp,
                 weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype, efficiency=efficiency,
                 attention=attention, sequence_parallel=sequence_parallel)
    spec, chip, sh, dt = r["spec"], r["chip"], r["sharding"], r["dtypes"]
    prefill = _summary(r["prefill_totals"], 1.0)
    decode = _summary(r["decode_totals"], gen_len - 1.0) if gen_len > 1 else None
    m = r["memory"]
    per_chip = float(m["per_chip_bytes"])
    from .memory import weight_bytes as total_weight_bytes

    memory = MemorySummary(
        weight_bytes=float(total_weight_bytes(spec, dt.weight)), kv_cache_bytes=float(m["kv_cache_bytes"]),
        activation_bytes=float(m["per_chip_activation_bytes"]) * sh.chips_per_replica,
        per_chip_weight_bytes=float(m["per_chip_weight_bytes"]),
        per_chip_kv_cache_bytes=float(m["per_chip_kv_cache_bytes"]),
        per_chip_activation_bytes=float(m["per_chip_activation_bytes"]), per_chip_bytes=per_chip,
        capacity_bytes=chip.hbm_bytes, fits=per_chip <= chip.hbm_bytes, max_batch=int(m["max_batch"]))
    if not memory.fits:
        r["assumptions"].append(f"does not fit: {per_chip / 1e9:.1f} GB per chip needed, {chip.hbm_bytes / 1e9:.1f} GB "
                                f"available on {chip.name}.")
    scenario = dict(batch=batch, prompt_len=prompt_len, gen_len=gen_len, tp=tp, pp=pp, ep=ep, dp=dp,
                    sequence_parallel=sequence_parallel, weight_dtype=_weight_label(spec, dt.weight),
                    act_dtype=dt.act, kv_dtype=dt.kv, compute_dtype=dt.compute, attention=attention,
                    chips=sh.chips)
    ideal = None
    eff_model = r["efficiency_model"]
    if eff_model is not None:  # the bound is always reported beside a calibrated number
        b = evaluate(spec, chip, batch=batch, prompt_len=prompt_len, gen_len=gen_len, tp=tp, pp=pp, ep=ep, dp=dp,
                     weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype, efficiency="ideal",
                     attention=attention, sequence_parallel=sequence_parallel)
        ideal = dict(ttft_s=float(b["ttft_s"]), tpot_s=float(b["tpot_s"]) if gen_len > 1 else None,
                     e2e_s=float(b["e2e_s"]), throughput_tokens_per_s=float(b["throughput_tokens_per_s"]))
    return Estimate(
        model=spec.name, chip=chip.name, scenario=scenario, ttft_s=float(r["ttft_s"]),
        tpot_s=float(r["tpot_s"]) if gen_len > 1 else None, e2e_s=float(r["e2e_s"]),
        throughput_tokens_per_s=float(r["throughput_tokens_per_s"]),
        throughput_tokens_per_s_per_chip=float(r["throughput_tokens_per_s_per_chip"]),
        prefill=prefill, decode=decode, memory=memory, critical=_critical(spec, chip, dt, batch),
        assumptions=r["assumptions"], efficiency=_efficiency_label(eff_model if eff_model is not None else efficiency),
        ops=_ops_frame(r, gen_len), ideal=ideal)


def _weight_label(spec: ModelSpec, override: str | None) -> str:
    """'bf16', 'int4 (g128, 16-bit scales)', or 'bf16; experts fp4 (g32, 8-bit scales)' for partial quantization."""
    if override or spec.quantization is None or "ffn" in spec.quantized_families:
        return spec.weight_format_for("ffn", override).label
    return f"{spec.weight_dtype}; {', '.join(spec.quantized_families)} {spec.quantization.label}"


def _efficiency_label(efficiency) -> str:
    if isinstance(efficiency, str):
        return efficiency
    return getattr(efficiency, "label", type(efficiency).__name__)


def _critical(spec: ModelSpec, chip: Chip, dt: Dtypes, batch) -> dict[str, float]:
    """The seeds' thresholds for this model on this chip.

    intensity_flops_per_byte: peak / HBM bandwidth for the compute dtype. batch_tokens: tokens per step
    at which weight-bound matmuls turn compute-bound: 2*B FLOP per weight element read against bits/8
    bytes gives B* = intensity * (bits/8) / 2 (bf16: B* = intensity; int8 weights: half).
    tp_limit_throughput / tp_limit_latency: largest useful tensor-parallel degree before communication
    dominates (Y < F * W / C, and Y < F / (B * W_hbm / W) at this batch), over the widest FFN.
    dp_critical_batch_tokens / dcn_critical_batch_tokens: tokens per chip (per slice) for data
    parallelism to stay compute-bound over the scale-up (scale-out) link (sharding.py cites the book)."""
    intensity = chip.critical_intensity(dt.compute)
    bits = spec.weight_format_for("ffn", dt.weight).bits_per_weight(spec.d_model)
    out = {"intensity_flops_per_byte": intensity, "batch_tokens": intensity * bits / 8 / 2}
    from . import sharding as shd

    d_ff = max((g.ffn.d_ff or g.ffn.d_expert) for g in spec.layer_groups)
    out.update(
        tp_limit_throughput=shd.tp_limit_throughput(chip, d_ff, dtype=dt.compute),
        tp_limit_latency=shd.tp_limit_latency(chip, d_ff, float(batch)),
        dp_critical_batch_tokens=shd.dp_critical_batch(chip, dtype=dt.compute))
    if chip.scaleout is not None:
        out["dcn_critical_batch_tokens"] = shd.dcn_critical_batch(chip, dtype=dt.compute)
    return out


OPS_COLUMNS = ["phase", "group", "name", "kind", "count", "flops", "bytes", "weight_bytes", "act_bytes", "kv_bytes",
               "comm_bytes", "intensity", "t_compute_s", "t_memory_s", "t_comm_s", "t_s", "bound", "formula"]


def _ops_frame(r, gen_len):
    import pandas as pd

    rows = []
    phases = [("prefill", r["prefill"], 1.0)]
    if gen_len > 1:
        phases.append(("decode", r["decode"], gen_len - 1.0))
    for phase, pa, steps in phases:
        for s, row in zip(pa.scored, pa.per_op):
            vals = {k: float(np.asarray(row[k])) / steps for k in row}
            nbytes = vals["weight_bytes"] + vals["act_bytes"] + vals["kv_bytes"]
            terms = {"compute": vals["t_compute_s"], "memory": vals["t_memory_s"], "comm": vals["t_comm_s"]}
            rows.append(dict(phase=phase, group=s.op.group, name=s.op.name, kind=s.op.kind, count=s.op.count,
                             flops=vals["flops"], bytes=nbytes, weight_bytes=vals["weight_bytes"],
                             act_bytes=vals["act_bytes"], kv_bytes=vals["kv_bytes"], comm_bytes=vals["comm_bytes"],
                             intensity=vals["flops"] / nbytes if nbytes else math.inf,
                             t_compute_s=vals["t_compute_s"], t_memory_s=vals["t_memory_s"],
                             t_comm_s=vals["t_comm_s"], t_s=vals["t_s"], bound=max(terms, key=terms.get),
                             formula=s.op.formula))
    return pd.DataFrame(rows, columns=OPS_COLUMNS)


# ------------------------------------------------------------------------------------------- sweep
_GRID_AXES = ("batch", "prompt_len", "gen_len")  # broadcast with numpy
_DISCRETE_AXES = ("chip", "tp", "pp", "ep", "dp", "weight_dtype", "act_dtype", "kv_dtype", "efficiency", "attention",
                  "sequence_parallel")


def sweep(model, chip, **axes):
    """Evaluate a grid of scenarios. Any argument of `estimate` may be a list (chip too).

    batch, prompt_len and gen_len are evaluated in one vectorized pass (numpy broadcasting); the
    discrete choices (chip, tp, pp, ep, dp, dtypes, ...) are looped over. One row per grid point with
    the axes and the headline metrics.
    """
    import itertools

    import pandas as pd

    unknown = set(axes) - set(_GRID_AXES) - set(_DISCRETE_AXES)
    if unknown:
        raise ScenarioError(f"unknown sweep axis {sorted(unknown)}; axes: {', '.join(_GRID_AXES + _DISCRETE_AXES)}")
    defaults = dict(batch=1, prompt_len=2048, gen_len=256)
    grid_vals = [np.atleast_1d(check_count(k, axes.get(k, defaults[k]))).astype(np.float64).ravel() for k in _GRID_AXES]
    check_grid_points({**{k: len(v) for k, v in zip(_GRID_AXES, grid_vals)}, "chip": len(_as_list(chip)),
                       **{k: len(_as_list(axes[k])) for k in _DISCRETE_AXES if k in axes}})
    mesh = [m.ravel() for m in np.meshgrid(*grid_vals, indexing="ij")]
    spec = _load_model(model)
    discrete = {k: _as_list(axes[k]) for k in _DISCRETE_AXES if k in axes and k != "chip"}
    chips = _as_list(chip)
    frames = []
    for chip_name, combo in itertools.product(chips, itertools.product(*discrete.values())):
        kw = dict(zip(discrete, combo))
        r = evaluate(spec, chip_name, batch=mesh[0], prompt_len=mesh[1], gen_len=mesh[2], **kw)
        m = r["memory"]
        cols = {"chip": r["chip"].name, **kw, "batch": mesh[0], "prompt_len": mesh[1], "gen_len": mesh[2],
                "ttft_s": r["ttft_s"], "tpot_s": r["tpot_s"], "e2e_s": r["e2e_s"],
                "throughput_tokens_per_s": r["throughput_tokens_per_s"],
                "throughput_tokens_per_s_per_chip": r["throughput_tokens_per_s_per_chip"],
                "per_chip_bytes": m["per_chip_bytes"], "capacity_bytes": r["chip"].hbm_bytes,
                "fits": m["per_chip_bytes"] <= r["chip"].hbm_bytes, "max_batch": m["max_batch"]}
        frames.append(pd.DataFrame({k: np.broadcast_to(v, mesh[0].shape) for k, v in cols.items()}))
    df = pd.concat(frames, ignore_index=True)
    for k in ("batch", "prompt_len", "gen_len", "max_batch"):
        df[k] = df[k].astype(int)
    return df


def _as_list(v):
    return list(np.ravel(v)) if isinstance(v, np.ndarray) else list(v) if isinstance(v, (list, tuple)) else [v]
