"""What every op builder of one build_ops call reads: the phase (Phase), the dtypes (Dtypes, resolve_dtypes) and the
context of sizes, bytes per element and sharding (Ctx), with the parts of a graph kept over several builds."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ScenarioError
from ..model.spec import QUANT_ACT_DTYPES, LayerGroup, ModelSpec
from ..ops import Op, collective, elementwise, gemm
from ..sharding import (Sharding, collective_after, collective_before, micro_batches, sequence_parallel_on,
                        shard_count)
from ..units import canonical_dtype, dtype_bytes, remembered

if TYPE_CHECKING:
    from ..hardware import Chip

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
    chunk_in_group: bool = False  # attention_dp > 1: the chunk rides in one attention group (the step's busiest: its
    #   time), not spread over the groups (the step's work)

    @staticmethod
    def prefill(batch, prompt_len, cached_len=0, causal=True) -> "Phase":
        p = np.asarray(prompt_len, dtype=np.float64)
        return Phase("prefill", np.asarray(batch, dtype=np.float64), p, p + cached_len, causal)

    @staticmethod
    def decode(batch, kv_len) -> "Phase":
        return Phase("decode", np.asarray(batch, dtype=np.float64), np.float64(1.0),
                     np.asarray(kv_len, dtype=np.float64), True, lm_head_last_only=False, mla_absorbed=True)

    @staticmethod
    def mixed(decode_batch, decode_kv_len, chunk_tokens, chunk_kv_len, in_group: bool = False) -> "Phase":
        """A continuous-batching step: `decode_batch` sequences decode one token each while one request's
        prompt chunk of `chunk_tokens` tokens (attending to `chunk_kv_len`: its cached prefix + the chunk) is
        prefilled in the same step; the chunk's last position gets a logit (it may finish the prompt).
        MLA runs the decodes absorbed and materializes the chunk's K, V over its context, as a prefill (graph.attention:
        vLLM's MLA prefill path). With attention data parallelism the request lives in one attention group, whose tp
        chips do all of its chunk's attention-side work while the other groups decode; the groups meet at every FFN,
        so the step lasts as long as that busiest group: in_group builds its ops (the step's time), the default
        spreads the chunk over the groups (each op's chips times its shards: the step's work)."""
        f = np.float64
        return Phase("mixed", np.asarray(decode_batch, dtype=f), f(1.0), np.asarray(decode_kv_len, dtype=f), True,
                     lm_head_last_only=False, mla_absorbed=True, has_chunk=True,
                     chunk_tokens=np.asarray(chunk_tokens, dtype=f), chunk_kv_len=np.asarray(chunk_kv_len, dtype=f),
                     chunk_in_group=bool(in_group))


@dataclass(frozen=True)
class Dtypes:
    """Independent precisions: weights (None: the checkpoint's own), activations, KV cache, compute."""

    weight: str | None = None
    act: str = "bf16"
    kv: str | None = None  # None: same as act
    compute: str | None = None  # None: act dtype (int8/fp8 weights are dequantized into it)
    quant_compute: tuple[str, ...] = ()  # the chip's W8A8 / W4A4 dtypes (resolve_dtypes; ModelSpec.compute_dtype_for)

    def __post_init__(self):
        object.__setattr__(self, "act", canonical_dtype(self.act))
        object.__setattr__(self, "weight", None if self.weight is None else canonical_dtype(self.weight))
        object.__setattr__(self, "kv", canonical_dtype(self.kv) if self.kv else self.act)
        object.__setattr__(self, "compute", canonical_dtype(self.compute) if self.compute else self.act)


def resolve_dtypes(chip: "Chip", dt: Dtypes, assumptions: list[str]) -> Dtypes:
    """The dtypes as they run on `chip`, with its 8- and 4-bit matrix dtypes (quant_compute): bf16 compute falls back
    to fp16 on chips without bf16 matrix units (activations and KV cache follow; noted in `assumptions`); else an
    error."""
    if dt.compute in chip.dense_flops_per_s:
        return replace(dt, quant_compute=tuple(d for d in QUANT_ACT_DTYPES if d in chip.dense_flops_per_s))
    if dt.compute == "bf16" and "fp16" in chip.dense_flops_per_s:
        assumptions.append(f"{chip.name} has no bf16 matrix units; compute and activations run in fp16 at its fp16 "
                           "peak" + (", and so does the KV cache." if dt.kv == dt.act else "."))
        return resolve_dtypes(chip, Dtypes(dt.weight, "fp16", "fp16" if dt.kv == dt.act else dt.kv, "fp16"), [])
    raise ScenarioError(f"chip {chip.name} has no {dt.compute} compute; it has {', '.join(chip.dense_flops_per_s)}")


class Ctx:
    """What every op builder of one build_ops call needs: sizes, bytes per element, sharding."""

    def __init__(self, spec: ModelSpec, phase: Phase, sh: Sharding, dt: Dtypes, attention_mode: str,
                 parts: dict | None = None):
        self.spec, self.phase, self.sh, self.dt = spec, phase, sh, dt
        # micro-batch: pipeline stages work on batch / pp sequences each (a batch below pp: one sequence each); a
        # continuous-batching step spreads its mean rows over the pp micro-batches
        self.b = phase.batch / (sh.pp if phase.has_chunk else micro_batches(sh.pp, phase.batch))
        self.q = phase.q_len
        self.chunk = phase.chunk_tokens / sh.pp if phase.has_chunk else None  # prompt-chunk tokens per micro-batch
        self.T = self.b * self.q + (self.chunk if phase.has_chunk else 0.0)  # (T,) tokens this step, whole stage
        self.adp = sh.attention_dp  # attention groups: each holds 1/adp of the sequences and their KV cache
        self.b_attn = self.b / self.adp if self.adp > 1 else self.b  # sequences of one attention group
        self.T_attn = self.T / self.adp if self.adp > 1 else self.T  # (T_attn,) tokens one attention group holds
        self.chunk_seqs = 1.0 / sh.sequence_groups  # prompt-chunk sequences of one attention group per micro-batch
        if phase.chunk_in_group and self.adp > 1:  # the busiest group: its decode rows and the whole chunk
            self.T_attn = self.b * self.q / self.adp + self.chunk
            self.chunk_seqs = 1.0 / sh.pp
        # sequences whose carried state (a recurrent state, a conv window) moves this step: the decodes and the chunk's
        self.state_seqs = self.b_attn + (self.chunk_seqs if phase.has_chunk else 0.0)
        self.act_bytes = dtype_bytes(dt.act)  # per activation element
        self.kv_bytes = dtype_bytes(dt.kv)  # per cached element
        self.native_bytes = dtype_bytes(spec.weight_dtype)  # per unquantized weight (norms, biases)
        self.compute_dtype = dt.compute
        self.tp = sh.tp
        self.fused = attention_mode == "fused"
        self.parts = parts
        self.dense = sh if parts is None else sh.without_experts  # what a part without routed experts reads

    def kept(self, build, g: LayerGroup | None = None, experts: bool = False) -> list[Op]:
        """build(self) or build(self, g): one part of the graph (the model's head or tail, a layer group or half of
        one), kept in `parts` (build_ops) for the shardings that differ in their expert degrees alone unless the
        part holds routed experts (experts: it reads them). The list is shared: extend a copy, never it."""
        key = (build, id(g), self.sh if experts else self.dense)
        return remembered(self.parts, key, build, *((self,) if g is None else (self, g)))

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
                    act_bytes_per_elem=self.act_bytes, compute_dtype=self.spec.compute_dtype_for(family, self.dt),
                    **self.placed(style), **kw)

    def pointwise(self, name, group, count, *, rows, width, flops_per_elem, reads, style, held_bytes=0.0,
                  **kw) -> Op:
        """Elementwise work over a (rows, width) tensor (rows split over tp for the 'sequence' style under
        sequence parallelism); held_bytes: its own parameters (a norm's weight, a bias), read and held."""
        rows = rows / self.tp if style == "sequence" and sequence_parallel_on(self.sh) else rows
        if held_bytes:
            kw.update(weight_bytes=held_bytes, stored_bytes=held_bytes)
        return elementwise(name, group, count, tokens=rows, elems=rows * width, flops_per_elem=flops_per_elem,
                           reads=reads, writes=1, act_bytes_per_elem=self.act_bytes, **self.placed(style), **kw)

    def norm(self, name, group, count, weighted: bool = True) -> Op:
        """RMSNorm/LayerNorm over d: ~4 FLOP/elem (square, sum, scale, weight); reads x, writes y (and the weight,
        unless the norm has none)."""
        w = self.spec.norm_params() * self.native_bytes if weighted else 0.0
        return self.pointwise(name, group, count, rows=self.T_attn, width=self.spec.d_model, flops_per_elem=4,
                              reads=1, style="sequence", held_bytes=w, kind="norm")

    def residual(self, group, count, reads=2) -> Op:
        return self.pointwise("residual", group, count, rows=self.T_attn, width=self.spec.d_model,
                              flops_per_elem=reads - 1, reads=reads, style="sequence")

    def collectives(self, kind: str | None, name: str, group, count, tokens=None, width=None, chips=None,
                    instances=None, elem_bytes=None) -> list[Op]:
        """The collective `kind` (None: nothing) on the (tokens, width) activations (elements of elem_bytes,
        default the activations'), over `chips` chips (default: the tp group of an attention group), run as
        `instances` parallel collectives (default: one per attention group)."""
        if kind is None:
            return []
        t = self.T_attn if tokens is None else tokens
        elem = self.act_bytes if elem_bytes is None else elem_bytes
        buf = t * (self.spec.d_model if width is None else width) * elem
        return [collective(f"comm.{kind}.{name}", group, count, kind=kind, buffer_bytes=buf,
                           chips=self.tp if chips is None else chips, tokens=t,
                           shards=self.adp if instances is None else instances)]

    def after_row(self, suffix, group, count) -> list[Op]:
        """After a row-parallel matmul: all-reduce of y[T, d], or reduce-scatter under sequence parallelism."""
        return self.collectives(collective_after("row", self.sh), suffix, group, count)

    def before_column(self, suffix, group, count) -> list[Op]:
        """Sequence parallelism: all-gather the (T/tp, d) shards before a column-parallel matmul."""
        return self.collectives(collective_before("column", self.sh), suffix, group, count)
