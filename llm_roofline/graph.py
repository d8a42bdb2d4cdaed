"""build_ops: ONE operator-graph builder for every phase (prefill, decode step, speculative verify).

A phase is data: `batch` sequences, each with `q_len` new tokens attending to `kv_len` tokens (the
new ones included). Every op is per chip and per instance (one layer of its group); sharding decides
the per-chip shapes (see sharding.py for the styles). Shapes in comments: T = tokens this step on the
chip = b*q, d = d_model, H/KV = heads per chip, hd = head dim, F = d_ff per chip, V = vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .errors import ScenarioError
from .model.spec import W8A8_DTYPES, FfnSpec, LayerGroup, ModelSpec
from .ops import (Op, attention, causal_conv1d, causal_pairs, collective, elementwise, embedding,
                  expected_distinct_experts, gemm, kv_write, mla_glue, recurrent_scan, rows_per_expert)
from .sharding import (Sharding, collective_after, sequence_parallel_on, collective_before, expert_layout, walked_rows, kv_elems_per_token_per_chip,
                       kv_heads_per_chip, mixer_dims_per_chip, shard_count, split)
from .units import canonical_dtype, dtype_bytes

if TYPE_CHECKING:
    from .hardware import Chip

ATTENTION_MODES = ("fused", "unfused")


@dataclass(frozen=True)
class Phase:
    """One forward step. Arrays broadcast over the scenario grid."""

    name: str  # a label (prefill | decode | verify): the builder reads the fields below, never the name
    batch: np.ndarray  # sequences per replica
    q_len: np.ndarray  # new tokens per sequence
    kv_len: np.ndarray  # context each new token can attend to at the end of the step (new tokens included)
    causal: bool = True
    lm_head_last_only: bool = True  # logits for the last position of each sequence only (prefill)
    mla_absorbed: bool = False  # MLA: kv_b absorbed into q and o (decode) or K, V materialized (prefill)
    # chunked prefill (continuous batching): prompt tokens of one request riding in the same step
    has_chunk: bool = False
    chunk_tokens: np.ndarray = np.float64(0.0)  # prompt tokens prefilled this step
    chunk_kv_len: np.ndarray = np.float64(0.0)  # context they attend to at the end of the step (prefix + chunk)

    @staticmethod
    def prefill(batch, prompt_len, cached_len=0, causal=True) -> "Phase":
        p = np.asarray(prompt_len, dtype=np.float64)
        return Phase("prefill", np.asarray(batch, dtype=np.float64), p, p + cached_len, causal)

    @staticmethod
    def decode(batch, kv_len) -> "Phase":
        return Phase("decode", np.asarray(batch, dtype=np.float64), np.float64(1.0),
                     np.asarray(kv_len, dtype=np.float64), True, lm_head_last_only=False, mla_absorbed=True)

    @staticmethod
    def mixed(decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len) -> "Phase":
        """A continuous-batching step: `decode_batch` sequences decode one token each while one request's
        prompt chunk of `chunk_tokens` tokens (attending to `chunk_kv_len`: its cached prefix + the chunk) is
        prefilled in the same step; the chunk's last position gets a logit (it may finish the prompt).
        MLA runs both parts absorbed (an approximation for the chunk, which engines may materialize)."""
        f = np.float64
        return Phase("mixed", np.asarray(decode_batch, dtype=f), f(1.0), np.asarray(decode_kv_len, dtype=f), True,
                     lm_head_last_only=False, mla_absorbed=True, has_chunk=True,
                     chunk_tokens=np.asarray(chunk_tokens, dtype=f), chunk_kv_len=np.asarray(chunk_kv_len, dtype=f))


@dataclass(frozen=True)
class Dtypes:
    """Independent precisions: weights (None: the checkpoint's own), activations, KV cache, compute."""

    weight: str | None = None
    act: str = "bf16"
    kv: str | None = None  # None: same as act
    compute: str | None = None  # None: act dtype (int8/fp8 weights are dequantized into it)
    quant_compute: tuple[str, ...] = ()  # the chip's W8A8 dtypes (resolve_dtypes; ModelSpec.compute_dtype_for)

    def __post_init__(self):
        object.__setattr__(self, "act", canonical_dtype(self.act))
        object.__setattr__(self, "weight", None if self.weight is None else canonical_dtype(self.weight))
        object.__setattr__(self, "kv", canonical_dtype(self.kv) if self.kv else self.act)
        object.__setattr__(self, "compute", canonical_dtype(self.compute) if self.compute else self.act)


def resolve_dtypes(chip: "Chip", dt: Dtypes, assumptions: list[str]) -> Dtypes:
    """The dtypes as they run on `chip`, with its 8-bit matrix dtypes (quant_compute): bf16 compute falls back to fp16
    on chips without bf16 matrix units (activations and KV cache follow; noted in `assumptions`); else an error."""
    if dt.compute in chip.dense_flops_per_s:
        return replace(dt, quant_compute=tuple(d for d in W8A8_DTYPES if d in chip.dense_flops_per_s))
    if dt.compute == "bf16" and "fp16" in chip.dense_flops_per_s:
        assumptions.append(f"{chip.name} has no bf16 matrix units; compute and activations run in fp16 at its fp16 "
                           "peak" + (", and so does the KV cache." if dt.kv == dt.act else "."))
        return resolve_dtypes(chip, Dtypes(dt.weight, "fp16", "fp16" if dt.kv == dt.act else dt.kv, "fp16"), [])
    raise ScenarioError(f"chip {chip.name} has no {dt.compute} compute; it has {', '.join(chip.dense_flops_per_s)}")


class _Ctx:
    """What every op builder of one build_ops call needs: sizes, bytes per element, sharding."""

    def __init__(self, spec: ModelSpec, phase: Phase, sh: Sharding, dt: Dtypes, attention_mode: str):
        self.spec, self.phase, self.sh, self.dt = spec, phase, sh, dt
        self.b = phase.batch / sh.pp  # micro-batch: pipeline stages work on batch/pp sequences each
        self.q = phase.q_len
        self.chunk = phase.chunk_tokens / sh.pp if phase.has_chunk else None  # prompt-chunk tokens per micro-batch
        self.T = self.b * self.q + (self.chunk if phase.has_chunk else 0.0)  # (T,) tokens this step, whole stage
        self.adp = sh.attention_dp  # attention groups: each holds 1/adp of the sequences and their KV cache
        self.b_attn = self.b / self.adp if self.adp > 1 else self.b  # sequences of one attention group
        self.T_attn = self.T / self.adp if self.adp > 1 else self.T  # (T_attn,) tokens one attention group holds
        self.act_bytes = dtype_bytes(dt.act)  # per activation element
        self.kv_bytes = dtype_bytes(dt.kv)  # per cached element
        self.native_bytes = dtype_bytes(spec.weight_dtype)  # per unquantized weight (norms, biases)
        self.compute_dtype = dt.compute
        self.tp = sh.tp
        self.fused = attention_mode == "fused"

    def placed(self, style: str) -> dict:
        """The placement fields of an op of this shard style."""
        return dict(style=style, shards=shard_count(style, self.sh))

    def tokens_for(self, style: str):
        """Rows an op of this style processes on one chip: the FFN side sees every token of the stage, the
        attention side (and the residual stream) those of its attention group."""
        return self.T if style in ("ffn_column", "ffn_row", "expert") else self.T_attn

    def gemm(self, name, group, count, family, *, k, n, style, tokens=None, **kw) -> Op:
        return gemm(name, group, count, tokens=self.tokens_for(style) if tokens is None else tokens, k=k, n=n,
                    **self.spec.weight_format_for(family, self.dt.weight).gemm_storage(k),
                    act_bytes_per_elem=self.act_bytes, compute_dtype=self.spec.compute_dtype_for(family, self.dt), **self.placed(style), **kw)

    def pointwise(self, name, group, count, *, rows, width, flops_per_elem, reads, style, **kw) -> Op:
        """Elementwise work over a (rows, width) tensor (rows split over tp for the 'sequence' style under
        sequence parallelism)."""
        rows = rows / self.tp if style == "sequence" and sequence_parallel_on(self.sh) else rows
        return elementwise(name, group, count, tokens=rows, elems=rows * width, flops_per_elem=flops_per_elem,
                           reads=reads, writes=1, act_bytes_per_elem=self.act_bytes, **self.placed(style), **kw)

    def norm(self, name, group, count) -> Op:
        """RMSNorm/LayerNorm over d: ~4 FLOP/elem (square, sum, scale, weight); reads x, writes y."""
        w = self.spec.norm_params() * self.native_bytes
        return self.pointwise(name, group, count, rows=self.T_attn, width=self.spec.d_model, flops_per_elem=4,
                              reads=1, style="sequence", weight_bytes=w, stored_bytes=w, kind="norm")

    def residual(self, group, count, reads=2) -> Op:
        return self.pointwise("residual", group, count, rows=self.T_attn, width=self.spec.d_model,
                              flops_per_elem=reads - 1, reads=reads, style="sequence")

    def collectives(self, kind: str | None, name: str, group, count, tokens=None, width=None, chips=None,
                    instances=None) -> list[Op]:
        """The collective `kind` (None: nothing) on the (tokens, width) activations, over `chips` chips
        (default: the tp group of an attention group), run as `instances` parallel collectives (default:
        one per attention group)."""
        if kind is None:
            return []
        t = self.T_attn if tokens is None else tokens
        buf = t * (self.spec.d_model if width is None else width) * self.act_bytes
        return [collective(f"comm.{kind}.{name}", group, count, kind=kind, buffer_bytes=buf,
                           chips=self.tp if chips is None else chips, tokens=t,
                           shards=self.adp if instances is None else instances)]

    def after_row(self, suffix, group, count) -> list[Op]:
        """After a row-parallel matmul: all-reduce of y[T, d], or reduce-scatter under sequence parallelism."""
        return self.collectives(collective_after("row", self.sh), suffix, group, count)

    def before_column(self, suffix, group, count) -> list[Op]:
        """Sequence parallelism: all-gather the (T/tp, d) shards before a column-parallel matmul."""
        return self.collectives(collective_before("column", self.sh), suffix, group, count)


# --------------------------------------------------------------------------------------- attention
def _attention_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    a, n, d, tp = g.attention, g.count, c.spec.d_model, c.tp
    heads = split(a.n_heads, tp, "attention heads")  # column-parallel: heads split over tp
    if a.kv_shared:
        return _shared_kv_attention_ops(c, g, heads)
    ops = c.before_column("attn", g.name, n)
    if a.kind == "mla":
        ops += _mla_projections(c, g, heads)
        rope_dim, kv_rope_heads = a.qk_rope_head_dim, 1
    else:
        kvh = kv_heads_per_chip(a, tp)
        # (T, d) @ (d, H*hd + KV*hd + KV*vd) -> fused q, k, v
        q_width = heads * a.head_dim * (2 if a.output_gate else 1)  # Qwen3-Next: q_proj also yields the output gate
        v_width = 0 if a.value_is_key else kvh * a.v_head_dim  # Gemma-4 attention_k_eq_v: V = K, no v_proj
        ops.append(c.gemm("attn.qkv_proj", g.name, n, "attn", k=a.input_width or d, n=q_width + kvh * a.head_dim + v_width,
                          style="column", bias=a.qkv_bias))
        rope_dim, kv_rope_heads = a.head_dim, kvh
    if a.qk_norm:
        ops.append(c.pointwise("attn.qk_norm", g.name, n, rows=c.T_attn, width=(heads + kv_rope_heads) * a.head_dim,
                               flops_per_elem=4, reads=1, style="column", weight_bytes=2 * a.head_dim * c.native_bytes,
                               kind="norm"))
    if a.rope:  # rotate q (H heads) and k (KV heads) in place: ~3 FLOP/elem (two multiplies, one add)
        ops.append(c.pointwise("attn.rope", g.name, n, rows=c.T_attn, width=(heads + kv_rope_heads) * rope_dim,
                               flops_per_elem=3, reads=1, style="column"))
    ops.append(kv_write("attn.kv_write", g.name, n, tokens=c.T_attn, kv_elems_per_token=kv_elems_per_token_per_chip(a, tp),
                        act_bytes_per_elem=c.act_bytes, kv_bytes_per_elem=c.kv_bytes,
                        **c.placed("replicated" if a.kind == "mla" else "column")))
    if a.index_topk and a.index_n_heads:  # GLM-5 'shared' layers reuse the previous layer's top-k
        ops += _dsa_indexer_ops(c, g)
    ops += _attention_cores(c, g, heads)
    if a.output_gate:  # o * sigmoid(gate) over (T, H*vd): sigmoid ~4 FLOP + 1 multiply
        ops.append(c.pointwise("attn.output_gate", g.name, n, rows=c.T_attn, width=heads * a.v_head_dim,
                               flops_per_elem=5, reads=2, style="column"))
    # row-parallel: (T, H*vd) @ (H*vd, d) -> partial sums of (T, d)
    ops.append(c.gemm("attn.o_proj", g.name, n, "attn", k=heads * a.v_head_dim, n=d, style="row", bias=a.o_bias))
    return ops


def _mla_projections(c: _Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """DeepSeek MLA. The down-projections from d (q_a, kv_a) are replicated on every chip (as in vLLM);
    q_b and kv_b are column-parallel over heads. kv_b is materialized over the whole context for
    prefill ((b*kv, r) @ (r, H*(nope+v)) -> K_nope, V) and absorbed into the query and output for decode
    (the same weights applied to the T new tokens only); attn.mla_glue: the module's small kernels (ops.mla_glue)."""
    a, n, d, absorbed = g.attention, g.count, c.spec.d_model, c.phase.mla_absorbed
    ops, latent_out = [], a.kv_lora_rank + a.qk_rope_head_dim
    if a.q_lora_rank:
        ops.append(c.gemm("attn.qkv_proj", g.name, n, "attn", k=d, n=a.q_lora_rank + latent_out, style="replicated"))
        ops.append(c.gemm("attn.q_b_proj", g.name, n, "attn", k=a.q_lora_rank, n=heads * a.head_dim, style="column"))
    else:
        ops.append(c.gemm("attn.q_proj", g.name, n, "attn", k=d, n=heads * a.head_dim, style="column"))
        ops.append(c.gemm("attn.qkv_proj", g.name, n, "attn", k=d, n=latent_out, style="replicated"))
    ops.append(c.gemm("attn.kv_b_proj", g.name, n, "attn", k=a.kv_lora_rank, n=heads * (a.qk_nope_head_dim + a.v_head_dim),
                      style="column", tokens=c.T_attn if absorbed else c.b_attn * c.phase.kv_len,
                      formula_note=" (absorbed into q and o)" if absorbed else " (materialized over the context)"))
    ops.append(mla_glue("attn.mla_glue", g.name, n, tokens=c.T_attn, heads=heads, act_bytes_per_elem=c.act_bytes,
                        width=latent_out if absorbed else a.head_dim, **c.placed("column")))
    return ops


def _attention_cores(c: _Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """The phase's attention core, plus the prompt chunk's own core in a mixed (chunked-prefill) step."""
    return [_attention_core(c, g, heads, "attn.core" + suffix, batch, q_len, kv_len, causal)
            for suffix, batch, q_len, kv_len, causal in _core_parts(c)]


def _attention_core(c: _Ctx, g: LayerGroup, heads: int, name, batch, q_len, kv_len, causal) -> Op:
    a = g.attention
    window = a.index_topk or a.sliding_window  # DSA: each query attends to its index_topk selected keys
    common = dict(batch=batch, q_len=q_len, kv_len=kv_len, causal=causal, window=window,
                  window_label="top-k" if a.index_topk else "window",
                  fused=c.fused, act_bytes_per_elem=c.act_bytes, compute_dtype=c.compute_dtype, **c.placed("column"))
    if a.kind != "mla":
        return attention(name, g.name, g.count, n_heads=heads, n_kv_heads=kv_heads_per_chip(a, c.tp),
                         qk_dim=a.head_dim, v_dim=a.v_head_dim, kv_elems_per_token=kv_elems_per_token_per_chip(a, c.tp),
                         kv_bytes_per_elem=c.kv_bytes, **common)
    if c.phase.mla_absorbed:  # scores against the latent (r + rope) and values from the latent (r); KV = latent cache
        return attention(name, g.name, g.count, n_heads=heads, n_kv_heads=1,
                         qk_dim=a.kv_lora_rank + a.qk_rope_head_dim, v_dim=a.kv_lora_rank,
                         kv_elems_per_token=a.kv_lora_rank + a.qk_rope_head_dim, kv_bytes_per_elem=c.kv_bytes,
                         **common)
    # materialized K, V per head, written by kv_b_proj in the activation dtype
    return attention(name, g.name, g.count, n_heads=heads, n_kv_heads=heads, qk_dim=a.head_dim,
                     v_dim=a.v_head_dim, kv_elems_per_token=heads * (a.head_dim + a.v_head_dim),
                     kv_bytes_per_elem=c.act_bytes, **common)


def _dsa_indexer_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    """DeepSeek sparse attention's lightning indexer (replicated on every tp chip): q from the query latent
    ((T, r_q) @ (r_q, Hi*di)), one shared key and per-head weights from x ((T, d) @ (d, di + Hi)); scores of
    every query against every cached index key (Hi heads of di, no values), written out and read back by the
    top-k selection of index_topk keys per query."""
    a, n, d = g.attention, g.count, c.spec.d_model
    ih, idim = a.index_n_heads, a.index_head_dim
    ops = [c.gemm("attn.indexer.q_proj", g.name, n, "attn", k=a.q_lora_rank or d, n=ih * idim, style="replicated"),
           c.gemm("attn.indexer.k_proj", g.name, n, "attn", k=d, n=idim + ih, style="replicated")]
    for suffix, batch, q_len, kv_len, causal in _core_parts(c):
        ops.append(attention(f"attn.indexer.score{suffix}", g.name, n, batch=batch, q_len=q_len, kv_len=kv_len,
                             n_heads=ih, n_kv_heads=1, qk_dim=idim, v_dim=0, kv_elems_per_token=idim,
                             kv_bytes_per_elem=c.kv_bytes, act_bytes_per_elem=c.act_bytes, causal=causal,
                             fused=True, compute_dtype=c.compute_dtype, **c.placed("replicated")))
        keys_per_query = causal_pairs(q_len, kv_len) / q_len if causal else kv_len  # (B*q, keys) scores
        ops.append(c.pointwise(f"attn.indexer.topk{suffix}", g.name, n, rows=batch * q_len, width=keys_per_query,
                               flops_per_elem=1, reads=1, style="replicated"))
    return ops


# ----------------------------------------------------------------------------------- DeepSeek-V4
def _shared_kv_attention_ops(c: _Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """DeepSeek-V4: q_a (d -> r_q) and kv (d -> hd) replicated, q_b column-parallel; one cached hd vector per token is
    key and value (replicated); queries attend to the last sliding_window tokens and the compressed entries (HCA: all,
    CSA: the indexer's top-k); grouped o_a (o_groups blocks -> o_lora_rank) column-parallel, o_b row-parallel."""
    a, n, d, hd = g.attention, g.count, c.spec.d_model, g.attention.head_dim
    groups = split(a.o_groups, c.tp, "output-projection groups (o_groups)")
    ops = c.before_column("attn", g.name, n)
    ops.append(c.gemm("attn.qkv_proj", g.name, n, "attn", k=d, n=a.q_lora_rank + hd, style="replicated"))
    ops.append(c.gemm("attn.q_b_proj", g.name, n, "attn", k=a.q_lora_rank, n=heads * hd, style="column"))
    # RMSNorm of q per head (no weights) and of kv; RoPE on the rope slice of q, kv and (inverse) of the output
    ops.append(c.pointwise("attn.qk_norm", g.name, n, rows=c.T_attn, width=(heads + 1) * hd, flops_per_elem=4, reads=1,
                           style="column", kind="norm"))
    ops.append(c.pointwise("attn.rope", g.name, n, rows=c.T_attn, width=(2 * heads + 1) * a.qk_rope_head_dim,
                           flops_per_elem=3, reads=1, style="column"))
    ops.append(kv_write("attn.kv_write", g.name, n, tokens=c.T_attn, kv_elems_per_token=hd, act_bytes_per_elem=c.act_bytes,
                        kv_bytes_per_elem=c.kv_bytes, **c.placed("replicated")))
    if a.compressor:
        ops += _compressor_ops(c, g)
    ops += _attention_cores(c, g, heads)  # the sliding window over the uncompressed tokens
    if a.compressor:
        ops += _compressed_cores(c, g, heads)
    # block-diagonal: (T, g_chip, H*hd/g) @ (g_chip, H*hd/g, r_o) -> (T, g_chip*r_o); then (T, g_chip*r_o) @ (., d)
    ops.append(c.gemm("attn.o_a_proj", g.name, n, "attn", k=a.n_heads * hd // a.o_groups, n=a.o_lora_rank,
                      n_matrices=groups, n_stored=groups, style="column"))
    ops.append(c.gemm("attn.o_b_proj", g.name, n, "attn", k=groups * a.o_lora_rank, n=d, style="row"))
    return ops


def _compressor_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    """The compressed branch (replicated, like the KV head): kv and gate of every token (CSA: two series, plus the
    indexer's and its head weights), buffered (one write, one read) and pooled per `rate` tokens (~6 FLOP per element),
    one hd entry (+ index key) cached per `rate` tokens; CSA's indexer scores every entry and keeps the top-k."""
    a, n, d, cp = g.attention, g.count, c.spec.d_model, g.attention.compressor
    hd, ih, idim = a.head_dim, cp.index_n_heads, cp.index_head_dim
    proj = 2 * cp.series * hd + (4 * idim + ih if cp.index_topk else 0)
    ops = [c.gemm("attn.compressor.kv_gate", g.name, n, "attn", k=d, n=proj, style="replicated"),
           c.pointwise("attn.compressor.pool", g.name, n, rows=c.T_attn, width=proj // 2, flops_per_elem=6, reads=2,
                       style="replicated"),
           kv_write("attn.compressor.kv_write", g.name, n, tokens=c.T_attn / cp.rate,
                    kv_elems_per_token=hd + (idim if cp.index_topk else 0), act_bytes_per_elem=c.act_bytes,
                    kv_bytes_per_elem=c.kv_bytes, **c.placed("replicated"))]
    if not cp.index_topk:
        return ops
    ops.append(c.gemm("attn.indexer.q_proj", g.name, n, "attn", k=a.q_lora_rank, n=ih * idim, style="replicated"))
    for suffix, batch, q_len, kv_len, causal in _core_parts(c):
        ops.append(attention(f"attn.indexer.score{suffix}", g.name, n, batch=batch, q_len=q_len, kv_len=kv_len,
                             n_heads=ih, n_kv_heads=1, qk_dim=idim, v_dim=0, kv_elems_per_token=idim,
                             kv_bytes_per_elem=c.kv_bytes, act_bytes_per_elem=c.act_bytes, causal=causal, fused=True,
                             compute_dtype=c.compute_dtype, compress_rate=cp.rate, **c.placed("replicated")))
        entries_per_query = (causal_pairs(q_len, kv_len) / q_len if causal else kv_len) / cp.rate
        ops.append(c.pointwise(f"attn.indexer.topk{suffix}", g.name, n, rows=batch * q_len, width=entries_per_query,
                               flops_per_elem=1, reads=1, style="replicated"))
    return ops


def _core_parts(c: _Ctx) -> list[tuple]:
    """(suffix, sequences, new tokens, context, causal) of the phase's attention, and of a mixed step's prompt chunk."""
    parts = [("", c.b_attn, c.q, c.phase.kv_len, c.phase.causal)]
    if c.phase.has_chunk:  # one request's chunk (spread over the sequence groups): causal over its prefix + itself
        parts.append((".chunk", 1.0 / c.sh.sequence_groups, c.phase.chunk_tokens, c.phase.chunk_kv_len, True))
    return parts


def _compressed_cores(c: _Ctx, g: LayerGroup, heads: int) -> list[Op]:
    """The chip's heads over the compressed entries (one hd key = value each): a query at position p sees p / rate of
    them (HCA), at most index_topk (CSA: a window of index_topk x rate tokens)."""
    a, cp = g.attention, g.attention.compressor
    window = cp.index_topk * cp.rate or None
    return [attention(f"attn.core.compressed{suffix}", g.name, g.count, batch=batch, q_len=q_len, kv_len=kv_len,
                      n_heads=heads, n_kv_heads=1, qk_dim=a.head_dim, v_dim=a.head_dim, kv_elems_per_token=a.head_dim,
                      kv_bytes_per_elem=c.kv_bytes, act_bytes_per_elem=c.act_bytes, causal=causal, window=window,
                      window_label="top-k x rate", fused=c.fused, compute_dtype=c.compute_dtype,
                      compress_rate=cp.rate, **c.placed("column"))
            for suffix, batch, q_len, kv_len, causal in _core_parts(c)]


def _hyper_layer_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    """DeepSeek-V4 block over hc_mult residual streams (T, hc, d). Before attention and the MoE: the streams RMS-normed,
    projected to (2+hc) x hc mixing weights ((T, hc*d) @ (hc*d, (2+hc)*hc); Sinkhorn on (hc, hc) negligible), collapsed to
    (T, d); after: post * y + comb^T @ streams (2*hc + 2 FLOP per stream element) in place of the residual add."""
    n, width = g.count, g.hc_mult * c.spec.d_model
    ops = []
    for part in ("attn", "ffn"):
        ops += [c.pointwise(f"hc.{part}.norm", g.name, n, rows=c.T_attn, width=width, flops_per_elem=4, reads=1,
                            style="sequence", kind="norm"),
                c.gemm(f"hc.{part}.mix_proj", g.name, n, "hc", k=width, n=(2 + g.hc_mult) * g.hc_mult,
                       style="replicated"),
                c.pointwise(f"hc.{part}.collapse", g.name, n, rows=c.T_attn, width=width, flops_per_elem=2, reads=1,
                            style="sequence"),
                c.norm(f"norm.{part}", g.name, n)]
        ops += _attention_ops(c, g) + c.after_row("attn", g.name, n) if part == "attn" else _ffn_ops(c, g) + _ffn_out(c, g)
        ops.append(c.pointwise(f"hc.{part}.expand_mix", g.name, n, rows=c.T_attn, width=width,
                               flops_per_elem=2 * g.hc_mult + 2, reads=2, style="sequence"))
    return ops


# --------------------------------------------------------------------------------------------- mixers
SCAN_FLOPS_PER_STATE_ELEM = {
    "mamba1": 7,  # dA = exp(dt*A) (2); h = dA*h (1) + B*(dt*x) (2); y = C h (2)
    "mamba2": 5,  # S = exp(dt*A)*S (1) + dt*x B^T (2: multiply, add); y = S C (2)
    "gated_deltanet": 7,  # S k (2); S = a*S (1) + beta*(v - S k) k^T (2); o = S q (2)
    "lightning": 5,  # S = lambda*S (1) + k^T v (2); o = q S (2)
}


def _mixer_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    """A recurrent mixer (Mamba-1 / Mamba-2 / Gated DeltaNet), heads column-parallel over tp: in_proj (z, conv
    channels, per-head gates), causal conv1d, (Mamba-1: x_proj, dt_proj), the scan over a fixed-size state, the output
    gate (with an RMSNorm except Mamba-1), row-parallel out_proj."""
    m, n, d = g.mixer, g.count, c.spec.d_model
    heads, conv, gates = mixer_dims_per_chip(m, c.tp)
    inner = heads * m.head_dim
    ops = c.before_column("mixer", g.name, n)
    # (T, d) @ (d, z + x,B,C (or q,k,v) + gates): one chip's heads
    ops.append(c.gemm("mixer.in_proj", g.name, n, "attn", k=d, n=inner + conv + gates, style="column", bias=m.proj_bias))
    seqs = c.b_attn + (1.0 / c.sh.sequence_groups if c.phase.has_chunk else 0.0)  # sequences whose state moves
    conv_w = (conv * m.conv_kernel + (conv if m.conv_bias else 0)) * c.native_bytes
    if m.conv_kernel:  # lightning attention has none
        ops.append(causal_conv1d("mixer.conv1d", g.name, n, batch=seqs, q_len=c.T_attn / seqs, channels=conv,
                                 kernel=m.conv_kernel, act_bytes_per_elem=c.act_bytes, state_bytes_per_elem=c.kv_bytes,
                                 weight_bytes=conv_w, **c.placed("column")))
    scan_in = conv + gates
    if m.kind == "mamba1":
        ops += _mamba1_projections(c, g, inner)
        scan_in = conv + inner + 2 * m.state_dim  # x, dt per channel, B and C
    if m.state_dim:  # LFM2's short conv carries no state beyond the conv window
        ops += _mixer_scans(c, g, heads, scan_in, inner)
    # output gate y * silu(z) (lightning: sigmoid; LFM2: C * conv(B * x)), normed except in Mamba-1 and LFM2; the chip's per-head A (dt_bias, D) and the
    # norm weights ride with it (mamba2's and lightning's norm span the chip's channels; gated DeltaNet's and Jamba's
    # are replicated)
    norm_w = inner if m.kind in ("mamba2", "lightning") and m.rms_norm else m.norm_params()
    small_w = (m.per_head_params() * heads // m.n_heads + norm_w) * c.native_bytes
    ops.append(c.pointwise("mixer.gate_norm" if m.gate_normed else "mixer.gate", g.name, n, rows=c.T_attn,
                           width=inner, flops_per_elem=5, reads=2, style="column", weight_bytes=small_w,
                           stored_bytes=small_w, kind="norm" if m.gate_normed else "elementwise"))
    # row-parallel: (T, H*hd) @ (H*hd, d) -> partial sums of (T, d)
    ops.append(c.gemm("mixer.out_proj", g.name, n, "attn", k=inner, n=d, style="row", bias=m.proj_bias))
    return ops


def _mamba1_projections(c: _Ctx, g: LayerGroup, inner: int) -> list[Op]:
    """Mamba-1: x_proj (T, inner) @ (inner, dt_rank + 2*ds) row-parallel over the chip's channels (partial sums
    all-reduced over tp), then dt_proj (T, dt_rank) @ (dt_rank, inner) back onto the chip's channels."""
    m, n = g.mixer, g.count
    out = m.dt_rank + 2 * m.state_dim
    ops = [c.gemm("mixer.x_proj", g.name, n, "attn", k=inner, n=out, style="row")]
    ops += c.collectives(collective_after("row", c.sh) if c.tp > 1 else None, "mixer_x_proj", g.name, n, width=out)
    ops.append(c.gemm("mixer.dt_proj", g.name, n, "attn", k=m.dt_rank, n=inner, style="column", bias=True))
    return ops


def _mixer_scans(c: _Ctx, g: LayerGroup, heads: int, in_elems: int, out_elems: int) -> list[Op]:
    """The step's scan, plus the prompt chunk's own in a mixed (chunked-prefill) step."""
    m = g.mixer
    state_bytes = dtype_bytes(m.state_dtype) if m.state_dtype else c.kv_bytes
    parts = [("mixer.scan", c.b_attn, c.q)]
    if c.phase.has_chunk:
        parts.append(("mixer.scan.chunk", 1.0 / c.sh.sequence_groups, c.phase.chunk_tokens))
    return [recurrent_scan(name, g.name, g.count, batch=batch, q_len=q_len, n_heads=heads, head_dim=m.head_dim,
                           state_dim=m.state_dim, flops_per_state_elem=SCAN_FLOPS_PER_STATE_ELEM[m.kind],
                           chunk_tokens=0 if m.kind == "mamba1" else m.chunk_size, state_bytes_per_elem=state_bytes, act_in_elems_per_token=in_elems,
                           act_out_elems_per_token=out_elems, act_bytes_per_elem=c.act_bytes,
                           compute_dtype=c.compute_dtype, **c.placed("column"))
            for name, batch, q_len in parts]


# --------------------------------------------------------------------------------------------- FFN
def _ffn_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    f, n, d = g.ffn, g.count, c.spec.d_model
    if f.kind == "dense":
        return _ffn_in(c, g, dense=True) + _mlp(c, g.name, n, "ffn", f, f.d_ff, "ffn")
    ops = _ffn_in(c, g, dense=False)
    # router: (T_attn, d) @ (d, E) on each attention group's own tokens
    ops.append(c.gemm("ffn.router", g.name, n, "router", k=d, n=f.n_experts, style="replicated", bias=f.router_bias))
    local_experts, d_slice = expert_layout(f.n_experts, f.d_expert, c.sh)
    ep, skew = c.sh.moe_ep, c.sh.routing_skew
    touched = expected_distinct_experts(f.n_experts, f.top_k, c.T) / ep  # experts read on this chip
    assign = f.top_k / ep * skew  # expert assignments per token on the busiest chip (skew 1: balanced)
    up = 2 if f.gated else 1
    experts = dict(style="expert", n_matrices=assign, matrices_read=touched, n_stored=local_experts, bias=f.bias,
                   rows_per_matrix=rows_per_expert(c.T * f.top_k * skew, touched * ep), walked_rows=walked_rows(c.sh, c.adp, c.T * f.top_k, c.T * assign))
    ops.append(c.gemm("ffn.experts.up_gate" if f.gated else "ffn.experts.up", g.name, n, "experts", k=d,
                      n=up * d_slice, **experts))
    # no expert activation op: the fused-MoE block's fits price that pass (walked_rows); or GEMM1's epilogue runs it
    ops.append(c.gemm("ffn.experts.down", g.name, n, "experts", k=d_slice, n=d, **experts))
    if f.d_shared:
        ops += _mlp(c, g.name, n, "ffn.shared", f, f.d_shared, "shared")
    return ops


def _mlp(c: _Ctx, group, n, prefix, f: FfnSpec, d_ff: int, family: str) -> list[Op]:
    """Dense MLP over every token of the stage, column-parallel up (+gate), row-parallel down, over the
    tp x attention_dp chips of the stage. Gated: three (d, F) matrices."""
    d, f_chip = c.spec.d_model, split(d_ff, c.sh.ffn_chips, f"{prefix} intermediate size")
    up, bias = 2 if f.gated else 1, f.bias and family == "ffn"
    return [
        # (T, d) @ (d, 2F) -> up and gate, fused
        c.gemm(f"{prefix}.up_gate" if f.gated else f"{prefix}.up", group, n, family, k=d, n=up * f_chip,
               style="ffn_column", bias=bias),
        _activation(c, f"{prefix}.act", group, n, c.T, f_chip, f.gated, "ffn_column"),
        # (T, F) @ (F, d) -> partial sums of (T, d)
        c.gemm(f"{prefix}.down", group, n, family, k=f_chip, n=d, style="ffn_row", bias=bias),
    ]


def _activation(c: _Ctx, name, group, n, rows, width, gated, style) -> Op:
    """act(up) * gate for gated MLPs (reads 2, writes 1, ~5 FLOP/elem), act(up) otherwise (~4); (rows, width)."""
    return c.pointwise(name, group, n, rows=rows, width=width, flops_per_elem=5 if gated else 4,
                       reads=2 if gated else 1, style=style)


def _ffn_in(c: _Ctx, g: LayerGroup, dense: bool) -> list[Op]:
    """What brings the tokens to the FFN. One attention group (attention_dp = 1): the sequence-parallel
    all-gather, if any. Several: a dense MLP needs every token of the stage on every chip (all-gather of
    (T, d) across the attention groups, one per tp rank); routed experts get theirs by the dispatch
    all-to-all (_ffn_out)."""
    if g.parallel_block:
        return []
    if c.adp == 1:
        return c.before_column("ffn", g.name, g.count)
    if not dense:
        return []
    return c.collectives("all_gather", "ffn_in", g.name, g.count, tokens=c.T, chips=c.adp, instances=c.tp)


def _ffn_out(c: _Ctx, g: LayerGroup) -> list[Op]:
    """What returns the FFN's output to the residual stream of each attention group."""
    f, n = g.ffn, g.count
    if c.adp == 1:
        if f.kind == "moe" and c.sh.moe_ep > 1 and collective_before("column", c.sh):
            # expert parallelism with sequence-parallel tokens: all-to-all dispatch of each token's k copies to
            # the chips that hold its experts, and the combine back ((T/tp * k, d) per chip)
            return _dispatch_combine(c, g, c.T / c.tp)
        # every chip already holds all T tokens: dispatch is local, the combine is the ordinary all-reduce
        return c.after_row("ffn", g.name, n)
    if f.kind == "moe":  # each chip sends its share of its group's tokens, T/(tp x attention_dp)
        ops = _dispatch_combine(c, g, c.T / c.sh.ffn_chips)
    else:  # partial sums of (T, d) over all chips of the stage, scattered back by rows
        ops = c.collectives("reduce_scatter", "ffn_out", g.name, n, tokens=c.T, chips=c.sh.ffn_chips, instances=1)
    if c.tp > 1:  # the tp chips of a group each hold 1/tp of its rows: gather them back
        ops += c.collectives("all_gather", "ffn_rows", g.name, n)
    return ops


def _dispatch_combine(c: _Ctx, g: LayerGroup, tokens_per_chip) -> list[Op]:
    """All-to-all dispatch of each token's top-k copies to the moe_ep chips holding its experts, and the
    combine back; each chip sends (tokens_per_chip * k, d), the busiest receives routing_skew times the mean.
    Experts sliced over moe_tp > 1 chips also need their rows gathered before and reduced after."""
    f, n = g.ffn, g.count
    rows = tokens_per_chip * f.top_k * c.sh.routing_skew
    ops = [collective(f"comm.all_to_all.{what}", g.name, n, kind="all_to_all",
                      buffer_bytes=rows * c.spec.d_model * c.act_bytes, chips=c.sh.moe_ep, tokens=c.T)
           for what in ("dispatch", "combine")]
    if c.sh.moe_tp > 1 and c.adp > 1:
        slice_rows = c.T * f.top_k * c.sh.routing_skew / c.sh.moe_ep  # rows one expert group computes
        gather = c.collectives("all_gather", "experts_in", g.name, n, tokens=slice_rows, chips=c.sh.moe_tp,
                               instances=c.sh.moe_ep)
        scatter = c.collectives("reduce_scatter", "experts_out", g.name, n, tokens=slice_rows, chips=c.sh.moe_tp,
                                instances=c.sh.moe_ep)
        ops = ops[:1] + gather + scatter + ops[1:]
    return ops


# ------------------------------------------------------------------------------------------- layer
def _block_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    """A block of a recurrent / hybrid model: a token mixer (recurrent mixer, attention, or both in parallel) and / or
    an MLP, each behind its own norm and residual (Mamba-2 and Nemotron-H blocks hold one of them, Qwen3-Next both,
    Falcon-H1 attention + mixer in parallel, then the MLP)."""
    n, ops, has_attention = g.count, [], g.attention.kind != "none"
    if g.mixer is not None or has_attention:
        ops.append(c.norm("norm.attn", g.name, n))
        # Falcon-H1: attention and the mixer read the same normed input; their outputs are summed (one all-reduce)
        ops += (_attention_ops(c, g) if has_attention else []) + (_mixer_ops(c, g) if g.mixer is not None else [])
        ops += c.after_row("attn", g.name, n)
        ops.append(c.residual(g.name, n, reads=3 if has_attention and g.mixer is not None else 2))
    if g.ffn.kind != "none":
        ops.append(c.norm("norm.ffn", g.name, n))
        ops += _ffn_ops(c, g)
        ops += _ffn_out(c, g) + [c.residual(g.name, n)]
    return ops


def _shared_block_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    """A Zamba2 shared transformer block, run at each of its g.count layers: the hidden state concatenated with the
    embeddings (T, 2d), RMSNorm, attention from 2d (o_proj back to d), RMSNorm, gated MLP; then that layer's own
    matrices (LoRA adapters added to q/k/v or gate_up, and the linear projection), its output added to the input of
    the layer's Mamba block. Every run reads the block's weights; the checkpoint stores g.shared_copies of them, so each
    run's ops carry that share of the stored bytes (memory.py sums op.stored_bytes x count)."""
    n, w = g.count, g.attention.input_width
    norm_w = w * c.native_bytes
    ops = [c.pointwise(name, g.name, n, rows=c.T_attn, width=w, flops_per_elem=f, reads=1, style="sequence", **kw)
           for name, f, kw in (("shared.concat", 0, {}), ("norm.attn", 4, dict(weight_bytes=norm_w, stored_bytes=norm_w,
                                                                               kind="norm")))]
    ops += _attention_ops(c, g) + c.after_row("attn", g.name, n) + [c.norm("norm.ffn", g.name, n)]
    ops = [replace(op, stored_bytes=op.stored_bytes * g.shared_copies / n) for op in ops + _ffn_ops(c, g)]
    ops += [c.gemm(m.name, g.name, n, m.family, k=m.k, n=m.n, n_matrices=m.count, n_stored=m.count, style="replicated")
            for m in g.per_layer]
    return ops + _ffn_out(c, g) + [c.residual(g.name, n)]


def _layer_ops(c: _Ctx, g: LayerGroup) -> list[Op]:
    if g.shared_copies:
        return _shared_block_ops(c, g)
    if g.hc_mult:
        return _hyper_layer_ops(c, g)
    if not g.is_plain:
        return _block_ops(c, g)
    n = g.count
    ops, attn = [c.norm("norm.attn", g.name, n)], _attention_ops(c, g)
    if g.parallel_block:  # x + attn(norm(x)) + mlp(norm'(x)): one residual add, one all-reduce of the sum
        ffn = ([c.norm("norm.ffn", g.name, n)] if g.norms >= 2 else []) + _ffn_ops(c, g)
        return ops + attn + ffn + _ffn_out(c, g) + [c.residual(g.name, n, reads=3)]
    ops += attn
    if g.norms >= 4:
        ops.append(c.norm("norm.attn_out", g.name, n))
    ops += c.after_row("attn", g.name, n)
    ops.append(c.residual(g.name, n))
    ops.append(c.norm("norm.ffn", g.name, n))
    ops += _ffn_ops(c, g)
    if g.norms >= 4:
        ops.append(c.norm("norm.ffn_out", g.name, n))
    return ops + _ffn_out(c, g) + [c.residual(g.name, n)]


def _model_ops_head(c: _Ctx) -> list[Op]:
    """Embedding gather (vocab-parallel over each attention group's tp chips: each chip reads its share of the
    rows, then an all-reduce)."""
    spec = c.spec
    op = embedding("embed", "model", tokens=c.T_attn, d_model=spec.d_model,
                   table_rows=spec.vocab_size + spec.learned_positions,
                   weight_bytes_per_elem=dtype_bytes(spec.weight_format_for("embed", c.dt.weight).dtype),
                   act_bytes_per_elem=c.act_bytes, lookups=2 if spec.learned_positions else 1, vocab_split=c.tp,
                   **c.placed("vocab_in"))
    return [op] + c.collectives(collective_after("vocab_in", c.sh), "embed", "model", 1)


def _model_ops_tail(c: _Ctx) -> list[Op]:
    spec, tp, ops = c.spec, c.tp, [c.norm("norm.final", "model", 1)]
    t_lm = c.b_attn if c.phase.lm_head_last_only else c.b_attn * c.q  # logits of the last position only in prefill
    if c.phase.has_chunk:  # the chunk's last position (its logit counts when the chunk ends the prompt)
        t_lm = t_lm + np.where(c.phase.chunk_tokens > 0, 1.0 / c.sh.sequence_groups, 0.0)
    fmt_family = "embed" if spec.tie_embeddings else "lm_head"
    # vocab-parallel columns (the vocabulary is not padded here)
    ops.append(gemm("lm_head", "model", 1, tokens=t_lm, k=spec.d_model, n=spec.vocab_size / tp,
                    bits_per_weight=spec.weight_format_for(fmt_family, c.dt.weight).bits_per_weight(spec.d_model),
                    act_bytes_per_elem=c.act_bytes, compute_dtype=c.compute_dtype,
                    n_stored=0.0 if spec.tie_embeddings else 1.0, **c.placed("vocab_out"),
                    formula_note=" (last position only)" if c.phase.lm_head_last_only else ""))
    return ops + c.collectives(collective_after("vocab_out", c.sh), "lm_head", "model", 1, tokens=t_lm,
                               width=spec.vocab_size)


def handoff_ops(spec: ModelSpec, phase: Phase, sharding: Sharding, dtypes: Dtypes | None = None,
                attention: str = "fused") -> list[Op]:
    """The activations handed from pipeline stage to stage: (T_attn, d) per group, pp - 1 hops (none at pp = 1). A
    stage's ops are those of pp = 1 at the micro-batch batch / pp (no prompt chunk): build_ops = those + these."""
    split(spec.n_layers, sharding.pp, "number of layers")  # layers over pipeline stages
    if sharding.pp == 1:
        return []
    c = _Ctx(spec, phase, sharding, dtypes or Dtypes(), attention)
    return c.collectives("p2p", "stage", "model", c.sh.pp - 1, chips=c.sh.chips_per_replica)


def build_ops(spec: ModelSpec, phase: Phase, sharding: Sharding | None = None, dtypes: Dtypes | None = None,
              attention: str = "fused") -> list[Op]:
    """Every operator of one forward step of `phase`, per chip and per instance (one layer)."""
    sh, dt = sharding or Sharding(), dtypes or Dtypes()
    if attention not in ATTENTION_MODES:
        raise ScenarioError(f"attention must be one of {', '.join(ATTENTION_MODES)}, got {attention!r}")
    hand, c = handoff_ops(spec, phase, sh, dt, attention), _Ctx(spec, phase, sh, dt, attention)  # pp checked first
    ops = _model_ops_head(c)
    for g in spec.layer_groups:
        ops += _layer_ops(c, g)
    return ops + _model_ops_tail(c) + hand
