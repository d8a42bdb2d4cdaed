"""Memory: the ONE place where the bytes a deployment holds are added up. SI units: bytes.

- Weights: every parameter of the checkpoint (all experts, not the active ones): matrices in their storage
  format (quantization scales included via WeightFormat.bits_per_weight), biases, norms, attention extras and
  embeddings in the checkpoint's native dtype; the embedding and LM head once each unless tied. Per chip:
  what the graph's shard styles leave resident on the fullest chip (op.stored_bytes).
- KV cache: cached elements per token and layer on one chip (sharding.kv_elems_per_token_per_chip: K and V
  of its KV heads, replicated heads included, or MLA's latent + rope key); a sliding-window layer caches at
  most `window` tokens.
- Recurrent state: a mixer layer (Mamba-2, Gated DeltaNet) keeps a fixed-size state per sequence instead of KV:
  heads x head_dim x state_dim plus the conv1d window (Inkling's layers: their short convs' windows beside the KV);
  it counts with the KV cache in the footprint (the KV term of a sequence is its KV + state) and does not grow with
  the context.
- Activations: a workspace of one prefill chunk (PREFILL_CHUNK_TOKENS tokens), reserved up front as serving
  engines do (vLLM profiles max_num_batched_tokens), so it does not grow with the batch.
- Max batch: the largest batch (a multiple of pp) whose weights + workspace + KV at `context` fit one chip;
  memory only: the prefill graph is built (for shard sizes and the workspace), nothing is scored.
- The engine memory fraction (GPU_MEMORY_UTILIZATION, vLLM's `gpu_memory_utilization`): the share of each chip's
  memory an engine may fill with weights + workspace + KV cache; the rest is left to the runtime (CUDA context,
  allocator fragmentation, graphs). ONE default, 0.9, for estimate, sweep, memory / max_batch, plan and serve.
  The memory it is a share of is Chip.engine_capacity_bytes: the total the driver reports to a process where the
  chip file sources it (vLLM multiplies torch.cuda.mem_get_info's total: 85.0e9 bytes on an H100 SXM, whose
  datasheet says 80 GB), else the datasheet capacity.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .bounds import check_count, check_range
from .errors import RooflineError, ScenarioError, shown
from .graph import Dtypes, Phase, build_ops, handoff_ops, resolve_dtypes
from .model.spec import Matrix, ModelSpec
from .sharding import (Sharding, kv_elems_per_token_per_chip, micro_batches, mixer_state_elems_per_chip,
                       short_conv_state_elems_per_chip, stage_divisor)
from .units import array_key, as_list, dtype_bytes, memo_by_identity, remembered, sub_memo

if TYPE_CHECKING:
    from .hardware import Chip
    from .ops import Op

PREFILL_CHUNK_TOKENS = 8192  # activation workspace: prefill runs in chunks of this many tokens (vLLM's default)
GPU_MEMORY_UTILIZATION = 0.9  # share of memory the engine may fill (vLLM's gpu_memory_utilization default)


def usable_bytes(capacity_bytes: float, gpu_memory_utilization: float) -> float:
    """Memory an engine may fill: gpu_memory_utilization (a fraction in (0, 1]) x capacity_bytes (a chip's
    engine_capacity_bytes)."""
    return capacity_bytes * check_range("gpu_memory_utilization", gpu_memory_utilization, 0.0, 1.0, lo_open=True)


# ---------------------------------------------------------------------------------- weights
def _matrix_bytes(spec: ModelSpec, m: Matrix, weight_dtype: str | None) -> float:
    """Bytes of one Matrix entry (all `count` copies): weights in their format, bias in the native dtype."""
    fmt = spec.weight_format_for(m.family, weight_dtype)
    weights_bytes = m.count * m.k * m.n * fmt.bits_per_weight(m.k) / 8
    bias_bytes = m.count * m.n * dtype_bytes(spec.weight_dtype) if m.bias else 0.0
    return weights_bytes + bias_bytes


def weight_bytes_by_family(spec: ModelSpec, weight_dtype: str | None = None) -> dict[str, float]:
    """Weight bytes by family: attn, ffn, experts, shared, router, embed, lm_head, norm.

    weight_dtype overrides the storage dtype of the transformer blocks' matrices (see
    ModelSpec.weight_format_for); None keeps the checkpoint's format (quantization_config or native dtype).
    Attention extras (q/k norms, MLA latent norms, sinks) and recurrent mixers (their projections, conv1d, per-head
    parameters and gated norm, in place of attention) count as attn; learned positions as embed.
    """
    native_bytes = dtype_bytes(spec.weight_dtype)
    out: dict[str, float] = {}

    def add(family: str, nbytes: float) -> None:
        out[family] = out.get(family, 0.0) + nbytes

    for g in spec.layer_groups:  # a shared block (Zamba2) is stored g.copies times, its per-layer matrices g.count
        for m in g.mixing_matrices(spec.d_model) + g.ffn.weight_matrices(spec.d_model):
            add(m.family, g.copies * _matrix_bytes(spec, m, weight_dtype))
        for m in g.per_layer:
            add(m.family, g.count * _matrix_bytes(spec, m, weight_dtype))
        add("attn", g.copies * (g.mixing_extra_params() + g.out_conv_params(spec.d_model)) * native_bytes)
        add("ffn", g.copies * g.ffn.extra_params() * native_bytes)
        add("norm", g.copies * g.block_vector_params(spec.norm_params(), spec.d_model) * native_bytes)
    for m in spec.embedding_matrices():
        add(m.family, _matrix_bytes(spec, m, weight_dtype))
    add("embed", spec.learned_positions * spec.d_model * native_bytes)
    # final norm (and per-layer inputs', Inkling's embedding norm)
    add("norm", (spec.norm_params() * (2 if spec.embed_norm else 1) + spec.per_layer_input) * native_bytes)
    if spec.head_params:  # DeepSeek-V4's final hyper-connection head; JAIS's ALiBi slopes, Ouro's exit gate
        add("hc" if any(g.hc_mult for g in spec.layer_groups) else "embed", spec.head_params * native_bytes)
    return out


def weight_bytes(spec: ModelSpec, weight_dtype: str | None = None) -> float:
    """Bytes of every parameter of the checkpoint (every expert), scales included. See weight_bytes_by_family."""
    return _weight_bytes(spec, weight_dtype)


@memo_by_identity()
def _weight_bytes(spec: ModelSpec, weight_dtype: str | None) -> float:
    return sum(weight_bytes_by_family(spec, weight_dtype).values())


def weight_bytes_per_chip(ops: "list[Op]", pp: int = 1, n_layers: int | None = None) -> float:
    """Weights resident on the fullest chip: the layers' shards (op.stored_bytes, per instance) of the fullest of pp
    stages (sharding.stage_divisor); with pp = 1 the one chip also holds embedding and LM head, with pp > 1 they
    sit on the first and last stage, so the fullest chip holds the larger of the two."""
    layer_bytes = sum(op.stored_bytes * op.count for op in ops if op.group != "model")
    model_bytes = [op.stored_bytes for op in ops if op.group == "model" and op.stored_bytes]
    if pp > 1 and n_layers is None:
        raise TypeError("weight_bytes_per_chip needs n_layers (the model's) with pp > 1")
    if pp == 1:
        return layer_bytes + sum(model_bytes)
    return layer_bytes / stage_divisor(n_layers, pp) + max(model_bytes, default=0.0)


# ---------------------------------------------------------------------------------- KV cache
def kv_bytes_per_token_by_group(spec: ModelSpec, kv_dtype: str = "bf16", tp: int = 1) -> dict[str, float]:
    """Cache bytes one token adds on one chip of a tp group, in all layers of each group (not capped by
    sliding windows). tp = 1: the whole model's cache."""
    per_elem_bytes = dtype_bytes(kv_dtype)
    return {g.name: g.count * per_elem_bytes * (
        kv_elems_per_token_per_chip(g.attention, tp) + g.attention.compressed_elements_per_token())
        for g in spec.layer_groups}


def kv_bytes_per_token(spec: ModelSpec, kv_dtype: str = "bf16", tp: int = 1) -> float:
    """Cache bytes one token adds, summed over layers, on one chip of a tp group (tp = 1: the whole cache)."""
    return sum(kv_bytes_per_token_by_group(spec, kv_dtype, tp).values())


def kv_cache_bytes(spec: ModelSpec, context_len, batch=1, kv_dtype: str = "bf16", tp: int = 1):
    """KV-cache bytes of `batch` sequences holding `context_len` tokens each, over the tp chips that hold them
    (replicated KV heads count on every chip that holds one; tp = 1: the model's own cache).

    A sliding-window layer caches min(context_len, window) tokens; DeepSeek-V4's compressed branch one entry per
    `rate` tokens of the whole context, on every chip (one KV head). context_len and batch broadcast as float64
    arrays; scalars in, float out. KV quantization scales are not counted.
    """
    context_tokens = np.asarray(context_len, dtype=np.float64)
    batch_seqs = np.asarray(batch, dtype=np.float64)
    if np.any(context_tokens < 0) or np.any(batch_seqs < 0):
        raise ScenarioError(f"context_len and batch must be non-negative, got {shown(context_len)} and {shown(batch)}")
    per_token_bytes = kv_bytes_per_token_by_group(spec, kv_dtype, tp)
    total_bytes = np.zeros(np.broadcast(context_tokens, batch_seqs).shape)
    for g in spec.layer_groups:
        window = g.attention.sliding_window
        cached_tokens = np.minimum(context_tokens, window) if window else context_tokens
        compressed_bytes = g.count * g.attention.compressed_elements_per_token() * dtype_bytes(kv_dtype)
        window_bytes = per_token_bytes[g.name] - compressed_bytes
        total_bytes = total_bytes + (window_bytes * cached_tokens + compressed_bytes * context_tokens) * tp * batch_seqs
    return float(total_bytes) if total_bytes.ndim == 0 else total_bytes


# ---------------------------------------------------------------------------------- recurrent state
def state_bytes_per_sequence_by_group(spec: ModelSpec, kv_dtype: str = "bf16", tp: int = 1) -> dict[str, float]:
    """Recurrent-mixer state one sequence holds on one chip of a tp group, in all layers of each mixer group:
    the SSM / delta-rule state (heads x head_dim x state_dim, in the mixer's state dtype, else kv_dtype) plus the
    conv1d window ((kernel - 1) x conv channels, in kv_dtype); Inkling's short convs' windows likewise. It does not
    depend on the context length."""
    out = {}
    for g in spec.layer_groups:
        if g.attention.kv_conv or g.out_conv:
            out[g.name] = g.count * short_conv_state_elems_per_chip(g, spec.d_model, tp) * dtype_bytes(kv_dtype)
        if g.mixer is None:
            continue
        ssm_elems, conv_elems = mixer_state_elems_per_chip(g.mixer, tp)
        ssm_bytes = ssm_elems * dtype_bytes(g.mixer.state_dtype or kv_dtype)
        out[g.name] = out.get(g.name, 0.0) + g.count * (ssm_bytes + conv_elems * dtype_bytes(kv_dtype))
    return out


def state_bytes_per_sequence(spec: ModelSpec, kv_dtype: str = "bf16", tp: int = 1) -> float:
    """Recurrent state of one sequence over the tp chips that hold it (tp = 1: the model's own); 0 without mixers."""
    return tp * sum(state_bytes_per_sequence_by_group(spec, kv_dtype, tp).values())


def cache_bytes_per_sequence(spec: ModelSpec, context_len, kv_dtype: str = "bf16", tp: int = 1):
    """What one sequence keeps between steps at `context_len` tokens: its KV cache (growing with the context,
    capped by sliding windows) plus its recurrent state (constant), over the tp chips that hold them."""
    return kv_cache_bytes(spec, context_len, 1, kv_dtype, tp) + state_bytes_per_sequence(spec, kv_dtype, tp)


# ---------------------------------------------------------------------------------- activations
def activation_workspace_bytes(prefill_ops: "list[Op]", d_model: int, act_bytes_per_elem: float) -> np.ndarray:
    """Per-chip workspace of one PREFILL_CHUNK_TOKENS-token prefill chunk: the largest op's inputs + outputs
    plus the residual stream (T, d), measured on the given prefill and scaled to one chunk (activations
    grow with the tokens). prefill_ops[0] is the embedding, whose tokens are those of one micro-batch."""
    tokens_mb = np.asarray(prefill_ops[0].tokens)
    acts = [op.act_bytes for op in prefill_ops]
    if any(np.ndim(a) for a in acts):  # a grid: a running maximum (no stack of every op's array)
        largest = functools.reduce(np.maximum, [np.asarray(a, dtype=np.float64) for a in acts])
    else:  # one scenario: the largest number
        largest = np.float64(max(acts))
    return (largest + tokens_mb * d_model * act_bytes_per_elem) / tokens_mb * PREFILL_CHUNK_TOKENS


# ---------------------------------------------------------------------------------- footprint
@dataclass(frozen=True)
class Footprint:
    """What one chip of a replica holds (arrays over the scenario grid), and the replica's KV cache."""

    weight_bytes_per_chip: float
    kv_bytes_per_sequence_per_chip: np.ndarray  # at `context` tokens, recurrent-mixer state included
    activation_workspace_bytes_per_chip: np.ndarray
    kv_cache_bytes: np.ndarray  # the whole replica (every tp chip), at `context` tokens for `batch` sequences
    batch: np.ndarray
    capacity_bytes: float
    pp: int
    attention_dp: int = 1  # attention groups: each chip caches the sequences of its group only

    @property
    def kv_cache_bytes_per_chip(self) -> np.ndarray:
        return self.kv_bytes_per_sequence_per_chip * self.batch / self.attention_dp

    @property
    def bytes_per_chip(self) -> np.ndarray:
        return self.weight_bytes_per_chip + self.kv_cache_bytes_per_chip + self.activation_workspace_bytes_per_chip

    @property
    def free_bytes(self) -> np.ndarray:
        """Capacity left for the KV cache once weights and the workspace are placed."""
        return self.capacity_bytes - self.weight_bytes_per_chip - self.activation_workspace_bytes_per_chip

    @property
    def max_batch(self) -> np.ndarray:
        """Largest batch (a multiple of pp x attention_dp) with weights + workspace + the KV of the chip's
        batch / attention_dp sequences <= capacity."""
        free, kv = np.broadcast_arrays(self.free_bytes, self.kv_bytes_per_sequence_per_chip)
        with np.errstate(divide="ignore", invalid="ignore"):
            fit = np.floor(free / np.where(kv > 0, kv, np.inf) / self.pp) * self.pp * self.attention_dp
        return np.where(free > 0, np.where(kv > 0, fit, np.inf), 0.0)


def footprint(spec: ModelSpec, capacity_bytes: float, sharding: Sharding, dtypes: Dtypes, prefill_ops: "list[Op]",
              batch, context_len) -> Footprint:
    """Per-chip memory of a replica whose `batch` sequences hold `context_len` tokens of KV cache.
    prefill_ops: the per-chip prefill graph (its shard sizes and activations)."""
    tp, pp = sharding.tp, sharding.pp
    kv_replica_per_seq = cache_bytes_per_sequence(spec, context_len, dtypes.kv, tp)  # KV + recurrent state
    return Footprint(
        weight_bytes_per_chip=weight_bytes_per_chip(prefill_ops, pp, spec.n_layers),
        kv_bytes_per_sequence_per_chip=np.asarray(kv_replica_per_seq) / tp / stage_divisor(spec.n_layers, pp),
        activation_workspace_bytes_per_chip=activation_workspace_bytes(prefill_ops, spec.d_model,
                                                                       dtype_bytes(dtypes.act)),
        kv_cache_bytes=np.asarray(kv_replica_per_seq) * batch, batch=np.asarray(batch, dtype=np.float64),
        capacity_bytes=capacity_bytes, pp=pp, attention_dp=sharding.attention_dp)


# ---------------------------------------------------------------------------------- max batch (grid)
def max_batch(model, chip, context_len, tp=1, pp=1, ep=1, weight_dtype=None, kv_dtype=None, act_dtype="bf16",
              gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION, gen_len: int = 1, attention: str = "fused",
              sequence_parallel: bool = False):
    """Largest batch that fits one chip, over a grid of context lengths, dtypes and shardings, with the breakdown.

    The estimate's own memory model (footprint: weights resident on the fullest chip, KV cache at
    `context_len` = prompt + gen tokens, the workspace of one prefill chunk), without scoring anything, so that
    `max_batch` equals `estimate(..., prompt_len=context_len - gen_len, gen_len=gen_len).memory.max_batch` at the
    same gpu_memory_utilization:

        max_batch = floor((capacity * gpu_memory_utilization - weights - workspace) / kv_per_sequence / pp) * pp

    capacity: the chip's engine_capacity_bytes (the total its driver reports where sourced, else its HBM).

    Any of context_len, tp, pp, ep, weight_dtype and kv_dtype may be a list; one row per grid point (a
    pandas.DataFrame). A (tp, pp, ep) that does not divide the model gets a row with `error` set and
    max_batch 0 instead of an exception.
    """
    import itertools

    import pandas as pd

    from .hardware import load_chip
    from .model.hf import load_model

    spec = load_model(model)
    chip = load_chip(chip)
    gen_len = check_count("gen_len", gen_len)
    contexts = [int(c) for c in np.atleast_1d(check_count("context_len", context_len))]
    if any(c <= gen_len for c in contexts):
        raise ScenarioError(f"context_len must be integers > gen_len = {gen_len} (prompt = context - gen), "
                            f"got {shown(context_len)}")
    tp, pp, ep = ([int(v) for v in np.atleast_1d(check_count(n, v))] for n, v in (("tp", tp), ("pp", pp), ("ep", ep)))
    rows = [max_batch_row(spec, chip, ctx, tp=tp_, pp=pp_, ep=ep_, weight_dtype=wd, kv_dtype=kvd, act_dtype=act_dtype,
                          gpu_memory_utilization=gpu_memory_utilization, gen_len=gen_len, attention=attention,
                          sequence_parallel=sequence_parallel)
            for tp_, pp_, ep_, wd, kvd in itertools.product(as_list(tp), as_list(pp), as_list(ep),
                                                            as_list(weight_dtype), as_list(kv_dtype))
            for ctx in contexts]
    return pd.DataFrame(rows)


def max_batch_row(spec: ModelSpec, chip: "Chip", context_len: int, *, tp=1, pp=1, ep=1, weight_dtype=None,
                  kv_dtype=None, act_dtype="bf16", gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
                  gen_len: int = 1, attention: str = "fused", sequence_parallel: bool = False,
                  graphs: dict | None = None) -> dict:
    """One row of max_batch (one context length and sharding) as a dict, without pandas: what the planner asks
    for every sharding it tries. A sharding that does not divide the model gets `error` set and max_batch 0.
    graphs: a dict the caller keeps for one model (see memory_footprint)."""
    usable = usable_bytes(chip.engine_capacity_bytes, gpu_memory_utilization)
    row = dict(chip=chip.name, tp=int(tp), pp=int(pp), ep=int(ep), weight_dtype=weight_dtype, kv_dtype=kv_dtype,
               act_dtype=act_dtype, context_len=context_len, capacity_bytes=chip.engine_capacity_bytes,
               capacity_label=chip.engine_capacity_label, gpu_memory_utilization=float(gpu_memory_utilization),
               usable_bytes=usable)
    try:
        row.update(_max_batch_row(spec, chip, usable, context_len, gen_len, int(tp), int(pp), int(ep), weight_dtype,
                                  kv_dtype, act_dtype, attention, sequence_parallel, graphs))
    except RooflineError as e:
        row.update(max_batch=0, fits=False, error=str(e))
    return row


def memory_footprint(spec: ModelSpec, chip: "Chip", *, batch, prompt_len, gen_len=1, tp=1, pp=1, ep=1,
                     weight_dtype=None, act_dtype="bf16", kv_dtype=None, attention="fused", sequence_parallel=False,
                     attention_dp=1, moe_tp=None, moe_ep=None, capacity_bytes: float | None = None,
                     graphs: dict | None = None) -> tuple[Footprint, Dtypes]:
    """The Footprint of a scenario without scoring anything (only the prefill graph is built, for its shard
    sizes and activations), and the dtypes as they run on `chip`. batch may be an array. graphs: a dict the
    caller keeps for ONE model (the planners, over their chips): the footprints are made once per scenario,
    sharding and dtypes there (neither the graph nor the footprint depends on the chip but for its capacity)."""
    sh = Sharding(tp, pp, ep, 1, sequence_parallel, attention_dp, moe_tp, moe_ep)
    dt = resolve_dtypes(chip, Dtypes(weight_dtype, act_dtype, kv_dtype), [])
    b = np.asarray(batch, dtype=np.float64)
    key = None if graphs is None else (sh, dt, attention, array_key(b), array_key(prompt_len), array_key(gen_len))
    cap = chip.engine_capacity_bytes if capacity_bytes is None else capacity_bytes
    fp = graphs.get(key) if key is not None else None
    if fp is None:  # a pipeline stage's graph (graph.handoff_ops) is the same for every pp: built once per micro-batch
        stage, prompt = sh.stage, np.float64(prompt_len)
        hand = handoff_ops(spec, Phase.prefill(b, prompt), sh, dt, attention)  # pp checked before the stage is built
        micro = b / micro_batches(sh.pp, b)  # sequences per micro-batch
        at = (dt, attention, array_key(micro), array_key(prompt))  # parts: a stage's, once for the eps sharing it
        ops = remembered(graphs, ("memory.stage", stage) + at, build_ops, spec, Phase.prefill(micro, prompt), stage,
                         dt, attention, sub_memo(graphs, ("memory.parts",) + at))
        fp = footprint(spec, cap, sh, dt, ops + hand, b, np.float64(prompt_len + gen_len))
        if key is not None:
            graphs[key] = fp  # the footprint on any chip but for its capacity
    return (fp if fp.capacity_bytes == cap else replace(fp, capacity_bytes=cap)), dt


def _max_batch_row(spec, chip, usable_bytes, context, gen_len, tp, pp, ep, weight_dtype, kv_dtype, act_dtype,
                   attention, sequence_parallel, graphs=None) -> dict:
    fp, dt = memory_footprint(spec, chip, batch=pp, prompt_len=context - gen_len, gen_len=gen_len, tp=tp, pp=pp,
                              ep=ep, weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype,
                              attention=attention, sequence_parallel=sequence_parallel, capacity_bytes=usable_bytes,
                              graphs=graphs)
    mb = float(fp.max_batch)
    mb_int = int(mb) if math.isfinite(mb) else 0
    return {"weight_dtype": spec.weight_storage_label(dt), "kv_dtype": dt.kv,  # a checkpoint's own quantization too
            "weight_bytes_per_chip": fp.weight_bytes_per_chip,
            "kv_bytes_per_sequence_per_chip": float(fp.kv_bytes_per_sequence_per_chip),
            "activation_workspace_bytes_per_chip": float(fp.activation_workspace_bytes_per_chip),
            "bytes_per_sequence_per_chip": float(fp.kv_bytes_per_sequence_per_chip),
            "free_bytes": float(fp.free_bytes), "max_batch": max(mb_int, 0), "fits": mb_int >= pp,
            "kv_bytes_per_token": remembered(graphs, ("kv_bytes_per_token", dt.kv), kv_bytes_per_token, spec, dt.kv),
            "weight_bytes": remembered(graphs, ("weight_bytes", weight_dtype), weight_bytes, spec, weight_dtype),
            "error": None}


# ---------------------------------------------------------------------------------- serving capacity
def kv_capacity(spec: ModelSpec, chip: "Chip", held_tokens, eng_budget, max_seqs, sh: dict, dtypes: Dtypes, util,
                attention: str, graphs=None) -> tuple:
    """A serving engine's room per replica, arrays (n,): (running capacity: the sequences of held_tokens each whose KV
    fits beside the weights and the workspace of an eng_budget-token step, at most max_seqs per attention group; KV
    bytes per sequence per chip; bytes free for KV per chip; sequences that fit). sh: the sharding degrees (tp, pp,
    ep, attention_dp, moe_tp, moe_ep); graphs: memory_footprint's."""
    adp = sh["attention_dp"]
    usable = usable_bytes(chip.engine_capacity_bytes, util)
    fp, _ = memory_footprint(spec, chip, batch=adp, prompt_len=held_tokens, gen_len=0, tp=sh["tp"], pp=sh["pp"],
                             ep=sh["ep"], attention_dp=adp, moe_tp=sh["moe_tp"], moe_ep=sh["moe_ep"],
                             weight_dtype=dtypes.weight, act_dtype=dtypes.act, kv_dtype=dtypes.kv,
                             attention=attention, capacity_bytes=usable, graphs=graphs)
    workspace = fp.activation_workspace_bytes_per_chip * eng_budget / PREFILL_CHUNK_TOKENS
    free = usable - fp.weight_bytes_per_chip - workspace
    kv_seq = np.asarray(fp.kv_bytes_per_sequence_per_chip, dtype=np.float64)
    # each of the attention_dp groups caches its own sequences and schedules up to max_num_seqs of them (a vLLM
    # data-parallel rank has its own scheduler)
    kv_seqs = np.floor(np.maximum(free, 0.0) / np.where(kv_seq > 0, kv_seq, np.inf)) * adp
    return np.minimum(max_seqs * adp, kv_seqs), kv_seq, free, kv_seqs
