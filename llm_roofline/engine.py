"""The engine a serving model runs: its knobs (vLLM's names and defaults per chip, its CUDA-graph sizes), the
workload's request classes, and the step tables: every step the engine can run (decode-only, a prompt's own chunk
step, a step batching prompt tokens) priced once at a few decode batches, read by interpolation. queueing.py solves
the steady state on these tables; serve.py builds them from estimate.evaluate_step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Callable

import numpy as np

from .errors import ScenarioError, shown

SCHEDULING = ("chunked", "prefill_first")

# Host overhead, fitted by `python benchmarks/validate_serving.py` (efficiency="calibrated", the calibration v2 chip
# fits) on measured vLLM serving of Llama-3.1-70B in fp8 on B200, tp 1-8, concurrency <= 16 (36 rows; its 24 rows at
# concurrency 32-64, its 60 fp4 rows and 84 rows of gpt-oss-120b held out), benchmark runs of 10 requests per client.
# Only the fp8 rows: their steps match the kernel tables (within +-0.4 ms at 4-8 clients), while the fp4 rows run
# 0.4-2.5 ms per step above the NVFP4 tables, shrinking with tp as the weight bytes per GPU do (a slower fp4 kernel in
# those runs), which a fit on them took as host time on every step (0.351 ms before, 0.858 in a refit on all rows).
# Per step (scheduler, launch) and per request (API server, tokenizer, first-token delivery) the fit finds 0 within
# its resolution (1.7 us, 51 us): vLLM's V1 engine overlaps a decode step's host work with the GPU. Per decoding
# sequence per step: held at 0 (at concurrency <= 16 it cannot be told from the per-step cost). Per layer of a step
# carrying prompt tokens: such steps run beyond the CUDA-graph capture sizes, so every layer's kernels are launched
# from the host (NVIDIA AIConfigurator models the same mechanism as a prefill dispatch overhead of ~0.8 ms per layer).
# Added to the step's GPU time (max(GPU, host) fits worse: TTFT 8.6 -> 14.7 %), charged to prompt steps longer than
# vLLM's CUDA graphs (engine.cuda_graph_max_tokens: 512 tokens, or 2 x max_num_seqs below 256 sequences; the
# measured steps all are longer), to no decode step (charged past that size, held-out TPOT p90 24.5 -> 27.3 %) and to
# no request of at most k + 1 new tokens (a decode to vLLM: step_tables): CALIBRATION.md "Serving: the host time".
# Held-out median TTFT / TPOT error: Llama fp8 (32-64 clients) 9.7 / 7.0 %.
HOST_STEP_OVERHEAD_S = 0.0
HOST_SEQ_OVERHEAD_S = 0.0
HOST_REQUEST_OVERHEAD_S = 0.0
HOST_PROMPT_LAYER_OVERHEAD_S = 0.876e-3
HOST_OVERHEADS = dict(step_overhead_s=HOST_STEP_OVERHEAD_S, seq_overhead_s=HOST_SEQ_OVERHEAD_S,
                      request_overhead_s=HOST_REQUEST_OVERHEAD_S, prompt_layer_overhead_s=HOST_PROMPT_LAYER_OVERHEAD_S)
NO_HOST = dict.fromkeys(HOST_OVERHEADS, 0.0)  # kernels only (`serve --host none`: an engine without Python dispatch)
NO_HOST_NOTE = "host time none (kernels only)"  # what a result served with NO_HOST says of it


# ------------------------------------------------------------------------------------------- inputs
# vLLM's engine defaults for an OpenAI API server (vllm/engine/arg_utils.py EngineArgs.get_batch_defaults, V1):
# (max_num_seqs, max_num_batched_tokens) on a device of >= 70 GiB that is not an A100, and on the others.
LARGE_DEVICE_DEFAULTS, SMALL_DEVICE_DEFAULTS = (1024, 8192), (256, 2048)
TPU_BATCHED_TOKENS = {"tpu-v6e": 1024, "tpu-v5e": 512, "tpu-v5p": 256}  # the same function's TPU branch
CUDA_GRAPH_MAX_TOKENS = 512  # vLLM V1's largest CUDA-graph size by default (cuda_graph_max_tokens)


def cuda_graph_max_tokens(max_num_batched_tokens, max_num_seqs=np.inf, rows_per_seq=1.0):
    """The longest step (tokens) vLLM runs from CUDA graphs (piecewise where it carries prompt tokens) by default:
    min(512, max_num_batched_tokens, 2 x max_num_seqs x rows_per_seq (1 + k draft tokens)) (vllm/config/vllm.py
    _set_cudagraph_sizes, the last term since 0.11; its dispatcher runs a longer step eagerly)."""
    return np.minimum(np.minimum(CUDA_GRAPH_MAX_TOKENS, max_num_batched_tokens), 2.0 * rows_per_seq * max_num_seqs)


def vllm_batch_defaults(chip) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) that vLLM picks when neither is given: 1024 and 8192 on a device of
    >= 70 GiB that is not an A100 (H100, H200, B200, MI300X), else 256 and 2048 (A100, L40S, RTX 4090); its TPU branch
    sets the batched tokens alone; max_num_seqs is then capped by the batched tokens."""
    large = chip.engine_capacity_bytes >= 70 * 2**30 and not chip.name.startswith("a100")
    seqs, tokens = LARGE_DEVICE_DEFAULTS if large else SMALL_DEVICE_DEFAULTS
    tokens = TPU_BATCHED_TOKENS.get(chip.name, tokens)
    return min(seqs, tokens), tokens


@dataclass(frozen=True)
class Engine:
    """The knobs of a continuous-batching engine (vLLM names)."""

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    gpu_memory_utilization: float = 0.9
    scheduling: str = "chunked"  # chunked: prompt chunks ride beside decodes; prefill_first: decodes pause
    step_overhead_s: float = 0.0  # host time per step (scheduler, launching the step)
    seq_overhead_s: float = 0.0  # host time per decoding sequence per step (sampler, detokenizer, output)
    request_overhead_s: float = 0.0  # host time per request before its first token (API server, tokenizer)
    prompt_step_overhead_s: float = 0.0  # host time of a step carrying prompt tokens past the CUDA graphs' sizes
    own_step_stages: float = 1.0  # pipeline stages whose prompt-step host time a prompt's own chunk step meets
    attention_groups: float = 1.0  # attention-DP ranks: each runs its share of the decode rows from its own graphs

    def __post_init__(self):
        if self.scheduling not in SCHEDULING:
            raise ScenarioError(f"scheduling must be one of {', '.join(SCHEDULING)}, got {self.scheduling!r}")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise ScenarioError(f"gpu_memory_utilization must be in (0, 1], got {shown(self.gpu_memory_utilization)}")
        if min(self.step_overhead_s, self.seq_overhead_s, self.request_overhead_s, self.prompt_step_overhead_s) < 0:
            raise ScenarioError("host overheads must be >= 0 seconds")
        if not (self.own_step_stages >= 1 and self.attention_groups >= 1):  # NaN too
            raise ScenarioError(f"own_step_stages and attention_groups must be >= 1, got {shown(self.own_step_stages)} "
                                f"and {shown(self.attention_groups)}")


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding: k draft tokens per step, each accepted with probability `acceptance`."""

    k: int = 0
    acceptance: float = 0.0
    draft: Any = None  # None: MTP heads; a model (id or ModelSpec): a draft model

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens per verify step: 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a)."""
        a = self.acceptance
        return float(self.k + 1) if a >= 1.0 else (1.0 - a ** (self.k + 1)) / (1.0 - a)

    @staticmethod
    def parse(value) -> "Speculative":
        if value is None:
            return Speculative()
        if isinstance(value, Speculative):
            return value
        if not isinstance(value, dict) or set(value) - {"k", "acceptance", "draft"}:
            raise ScenarioError("speculative must be dict(k=..., acceptance=..., draft=None|model), got "
                                f"{shown(value)}")
        k, a = value.get("k", 0), float(value.get("acceptance", 0.0))
        if int(k) != k or k < 0 or not 0.0 <= a <= 1.0:
            raise ScenarioError(f"speculative needs an integer k >= 0 and acceptance in [0, 1], got {shown(value)}")
        return Speculative(int(k), a, value.get("draft"))


@dataclass(frozen=True)
class Workload:
    """Request classes per grid point: prompt and generated tokens and the share of requests. Arrays (n, k)."""

    prompt_tokens: np.ndarray
    gen_tokens: np.ndarray
    weight: np.ndarray  # sums to 1 over the last axis
    cached_tokens: np.ndarray  # prompt tokens served by the prefix cache (still held in KV, still attended to)

    @cached_property
    def new_prompt_tokens(self) -> np.ndarray:
        """Tokens to prefill; at least one (the last prompt token is recomputed on a full cache hit). Made once (the
        passes of a solve read it many times)."""
        return np.maximum(self.prompt_tokens - self.cached_tokens, 1.0)

    def mean(self, x) -> np.ndarray:
        """(n, k) -> (n,): request-weighted mean over the classes (one class: its weighted value, the same number
        as the sum over one element, without the reduction: the passes of a solve take many means)."""
        weighted = self.weight * x
        return weighted[..., 0] if weighted.shape[-1] == 1 else np.sum(weighted, axis=-1)

    def take(self, idx) -> "Workload":
        """The classes of the grid points `idx`."""
        return Workload(*(getattr(self, f)[idx] for f in _WORKLOAD_FIELDS))

    @staticmethod
    def concat(parts: "list[Workload]") -> "Workload":
        """The grid points of several workloads, one after the other (their classes must match in number)."""
        return Workload(*(np.concatenate([getattr(w, f) for w in parts]) for f in _WORKLOAD_FIELDS))

    @property
    def held_tokens(self) -> np.ndarray:
        """(n,) mean KV tokens of a running sequence: its prompt plus half its generation."""
        return self.mean(self.prompt_tokens + self.gen_tokens / 2.0)

    @property
    def decode_kv_tokens(self) -> np.ndarray:
        """(n,) mean context of a decoding sequence, weighted by decode steps (step j at P + j, j < G)."""
        steps = np.maximum(self.gen_tokens - 1.0, 0.0)
        return self.mean(steps * (self.prompt_tokens + self.gen_tokens / 2.0)) / np.maximum(self.mean(steps), 1e-300)


_WORKLOAD_FIELDS = ("prompt_tokens", "gen_tokens", "weight", "cached_tokens")


def workload_of(prompt_len, gen_len, prefix_hit_rate, workload=None) -> Workload:
    """prompt_len, gen_len, prefix_hit_rate: arrays (n,); workload: None or a list of (prompt, gen[, weight])."""
    hit = np.asarray(prefix_hit_rate, dtype=np.float64)
    if not np.all((hit >= 0) & (hit < 1)):  # NaN too
        raise ScenarioError(f"prefix_hit_rate must be in [0, 1), got {shown(prefix_hit_rate)}")
    if workload is None:
        p, g, w = (np.asarray(x, dtype=np.float64)[..., None] for x in (prompt_len, gen_len, np.ones_like(hit)))
    else:
        rows = [tuple(r) + (1.0,) * (3 - len(r)) for r in workload]
        if not rows or any(len(r) != 3 for r in rows):
            raise ScenarioError(f"workload must be a list of (prompt_len, gen_len[, weight]), got {shown(workload)}")
        p, g, w = (np.broadcast_to(np.asarray(c, dtype=np.float64), hit.shape + (len(rows),)) for c in zip(*rows))
        p, g, w = p, g, w / np.sum(w, axis=-1, keepdims=True)
    if np.any(p < 1) or np.any(g < 1) or np.any(p != np.floor(p)) or np.any(g != np.floor(g)) or np.any(w < 0):
        raise ScenarioError("prompt and generation lengths must be positive integers (weights >= 0)")
    return Workload(p, g, w, np.floor(p * hit[..., None]))


# ------------------------------------------------------------------------------------------- step tables
FRACTIONS = np.linspace(0.0, 1.0, 17)  # prompt tokens in a step / budget, where batched steps are tabulated


@lru_cache(maxsize=64)
def decode_nodes(max_seqs: float) -> np.ndarray:
    """Decode batches at which step costs are tabulated: every integer to 16, then ~8 % apart up to max_seqs (kept per
    max_seqs, read-only: every deployment of a plan asks for the same)."""
    top = max(float(max_seqs), 17.0)
    geo = np.geomspace(16.0, top, max(int(np.ceil(np.log(top / 16.0) / np.log(1.08))), 1) + 1)
    nodes = np.unique(np.concatenate([np.arange(17.0), np.round(geo, 6)]))
    nodes.flags.writeable = False
    return nodes


def bracket_nodes(nodes: np.ndarray, x) -> tuple[np.ndarray, np.ndarray]:
    """Left node index and weight of x between nodes[i] and nodes[i + 1] (x clipped to the node range)."""
    pos = np.interp(x, nodes, np.arange(nodes.size, dtype=np.float64))  # fractional node index
    i = np.minimum(pos.astype(np.intp), nodes.size - 2)
    return i, pos - i


def _fraction_bracket(x) -> tuple[np.ndarray, np.ndarray]:
    """bracket_nodes(FRACTIONS, x) without the search: on FRACTIONS' even steps of 1/16 the fractional index is
    min(max(x, 0), 1) * 16, the number np.interp gives to the bit (x - j/16 is exact for x in [j/16, (j+1)/16] and
    16 (x - j/16) + j = 16 x is representable)."""
    pos = np.minimum(np.maximum(x, 0.0), 1.0) * (FRACTIONS.size - 1)
    i = np.minimum(pos.astype(np.intp), FRACTIONS.size - 2)
    return i, pos - i


def _spread(pos: tuple, ndim: int) -> tuple:
    """A bracket (index, weight) of a batch (n,) shaped (n, 1, ...) against ndim axes: what bracket_nodes gives for
    that batch broadcast over them (it is elementwise)."""
    return tuple(x.reshape(x.shape + (1,) * (ndim - x.ndim)) for x in pos)


@dataclass(frozen=True)
class StepTables:
    """Step times (host overhead included) of one replica at the decode batches `nodes` (m,), for u distinct
    step configurations: decode_s (u, m) a decode-only step; own_s and chunks (u, k, m) one chunk step of a
    class-k prompt and the number of chunk steps of that prompt; batch_s (u, m, f) a step carrying
    FRACTIONS * budget prompt tokens. Grid point i reads configuration index[i]."""

    nodes: np.ndarray
    decode_s: np.ndarray
    own_s: np.ndarray
    chunks: np.ndarray
    batch_s: np.ndarray
    budget_tokens: np.ndarray  # (u,)
    rows_per_seq: float  # decode rows of one sequence per step (k + 1 with speculation)
    decodes_in_prefill_steps: bool  # False: prefill_first (decodes wait while prompts run)
    index: np.ndarray  # (n,) configuration of every grid point

    @cached_property
    def prefill_s(self) -> np.ndarray:
        """(u, k, m) a class-k prompt's chunk steps in all (chunks x own_s), interpolated as one table: the product of
        two interpolations dips between nodes where the chunk count steps (one full-budget step against two halves)."""
        return self.chunks * self.own_s

    @cached_property
    def point_budget_tokens(self) -> np.ndarray:
        """budget_tokens of every grid point (n,), gathered once (the passes of a solve read it many times)."""
        return self.budget_tokens[self.index]

    def _base(self, table_shape: tuple, ndim: int, middle: int) -> np.ndarray:
        """Flat offset, in a C-ordered table of `table_shape` (u, ...), of each grid point's row and of each of the
        `middle` axes after it (sample axes 1 .. middle, of the same sizes), shaped (n, ...) against ndim axes; made
        once per shape (the passes of a solve ask for the same few)."""
        bases = self.__dict__.setdefault("_bases", {})
        key = (table_shape, ndim, middle)
        if key not in bases:
            inner = table_shape[1:]
            base = self.index.reshape((-1,) + (1,) * (ndim - 1)) * math.prod(inner)
            for a, size in enumerate(inner[:middle], start=1):
                base = base + np.arange(size).reshape((1,) * a + (-1,) + (1,) * (ndim - a - 1)) * math.prod(inner[a:])
            bases[key] = base
        return bases[key]

    def _flat(self, table: np.ndarray) -> np.ndarray:
        """table as a flat C-ordered array (a view when it is contiguous), made once per table."""
        flats = self.__dict__.setdefault("_flats", {})
        hit = flats.get(id(table))
        if hit is None or hit[0] is not table:  # the table is held, so its id is not reused
            hit = flats[id(table)] = (table, np.ravel(table))
        return hit[1]

    def at(self, table: np.ndarray, batch, pos: tuple | None = None) -> np.ndarray:
        """table (u, ..., m) interpolated at decode batch `batch`; result (n, ...). pos: bracket_nodes(nodes, batch) of
        a batch (n,) when known (the same numbers, broadcast over table's middle axes). Table entries are read by flat
        index (the same entries as table[row, ..., i])."""
        shape = (self.index.size,) + table.shape[1:-1]
        i, w = bracket_nodes(self.nodes, np.broadcast_to(batch, shape)) if pos is None else _spread(pos, len(shape))
        flat, at_i = self._flat(table), self._base(table.shape, len(shape), table.ndim - 2) + i
        t0 = flat.take(at_i)
        return t0 + w * (flat.take(at_i + 1) - t0)

    def batched(self, batch, tokens, pos: tuple | None = None) -> np.ndarray:
        """A step with `tokens` prompt tokens beside `batch` decodes; bilinear; batch, tokens (n, ...). pos: see at.
        Table entries are read by flat index (the same entries as batch_s[row, i, j])."""
        if np.shape(batch) != np.shape(tokens):
            batch, tokens = np.broadcast_arrays(batch, tokens)
        i, wd = bracket_nodes(self.nodes, batch) if pos is None else _spread(pos, tokens.ndim)
        j, wf = _fraction_bracket(tokens / self.point_budget_tokens.reshape((-1,) + (1,) * (tokens.ndim - 1)))
        f = FRACTIONS.size
        t, ij = self._flat(self.batch_s), self._base(self.batch_s.shape, tokens.ndim, 0) + i * f + j
        return ((1 - wd) * ((1 - wf) * t.take(ij) + wf * t.take(ij + 1))
                + wd * ((1 - wf) * t.take(ij + f) + wf * t.take(ij + f + 1)))

    def with_index(self, index: np.ndarray) -> "StepTables":
        """The same tables read by other grid points."""
        return StepTables(self.nodes, self.decode_s, self.own_s, self.chunks, self.batch_s, self.budget_tokens,
                          self.rows_per_seq, self.decodes_in_prefill_steps, np.asarray(index, dtype=np.intp))

    @staticmethod
    def concat(parts: "list[StepTables]") -> "StepTables":
        """The tables of several deployments stacked (same nodes, classes and scheduling), each part's grid points
        reading its own configurations: one queueing solve then covers every part's points."""
        first = parts[0]
        if any(p.nodes.shape != first.nodes.shape or np.any(p.nodes != first.nodes) or p.own_s.shape[1:] !=
               first.own_s.shape[1:] or (p.rows_per_seq, p.decodes_in_prefill_steps) !=
               (first.rows_per_seq, first.decodes_in_prefill_steps) for p in parts):
            raise ValueError("StepTables.concat needs tables at the same nodes, classes and scheduling")
        offsets = np.cumsum([0] + [p.budget_tokens.size for p in parts[:-1]])
        return StepTables(first.nodes, *(np.concatenate([getattr(p, f) for p in parts])
                                         for f in ("decode_s", "own_s", "chunks", "batch_s", "budget_tokens")),
                          first.rows_per_seq, first.decodes_in_prefill_steps,
                          np.concatenate([p.index + o for p, o in zip(parts, offsets)]))

    def room_tokens(self, batch) -> np.ndarray:
        """Budget left for prompt tokens beside `batch` decoding sequences (n, ...)."""
        budget = self.point_budget_tokens.reshape((-1,) + (1,) * (np.ndim(batch) - 1))
        used = batch * self.rows_per_seq if self.decodes_in_prefill_steps else 0.0
        return np.maximum(budget - used, 1.0)


StepFn = Callable[..., np.ndarray]  # (decode_rows, decode_kv_len, chunk_tokens, chunk_kv_len) -> seconds


def _joined(parts: tuple, widths: tuple) -> np.ndarray:
    """parts (arrays of up to 3 axes, right-aligned) broadcast to (lead, width, tail) each and joined on axis 1."""
    dims = [(1,) * (3 - np.ndim(p)) + np.shape(p) for p in parts]
    lead, tail = max(d[0] for d in dims), max(d[2] for d in dims)
    return np.concatenate([np.broadcast_to(p, (lead, w, tail)) for p, w in zip(parts, widths)], axis=1)


def step_tables(step_s: StepFn, wl: Workload, engine: Engine, spec: Speculative, nodes: np.ndarray,
                draft_s: StepFn | None = None, own_step_s: StepFn | None = None,
                decode_step_s: StepFn | None = None, kernel_scale: tuple[float, float] = (1.0, 1.0),
                graph_split: tuple[np.ndarray, np.ndarray] | None = None) -> StepTables:
    """Tabulate the engine's steps for every point of `wl` at the decode batches `nodes` (m,).

    Decode rows: d (k + 1) with speculation (the verify step approximated as k + 1 decode rows per sequence, which
    reads each KV cache k + 1 times: conservative). Chunks: the budget left beside the decode rows, equal chunks (a
    prompt of P' tokens in n = ceil(P' / room) steps of P' / n); prefill_first runs prompts without decodes and needs
    each prompt to fit the budget. Batched steps: prompt tokens at the workload's mean chunk context (cached prefix +
    half the prompt + half the chunk). own_step_s, decode_step_s: the time a prompt waits for one of its own chunk
    steps, a decoding sequence for its next token, where that is not a step's time (a pipeline: serve._own_step_fn,
    _decode_step_fn); default step_s. kernel_scale (prompt, decode): multiplies the kernels' time of the steps carrying
    prompt tokens and of the decode-only steps (and the draft's), not the host's (serve's `uncertainty`). graph_split
    (graph_tokens (v,), row (v,)): v tables, each a row of `wl` at its own CUDA-graph size; default: one per row."""
    chunked = engine.scheduling == "chunked"
    rows = nodes * (spec.k + 1) if chunked else 0.0 * nodes  # (m,) decode rows in a step with prompt tokens
    kv_dec = wl.decode_kv_tokens[:, None]  # (n, 1)
    new, cached = wl.new_prompt_tokens[..., None], wl.cached_tokens[..., None]  # (n, k, 1)
    budget = np.broadcast_to(np.float64(engine.max_num_batched_tokens), kv_dec.shape[:1])  # (n,)
    if not chunked and np.any(new > budget[:, None, None]):
        raise ScenarioError(f"prefill_first scheduling needs every prompt within max_num_batched_tokens "
                            f"= {engine.max_num_batched_tokens}; use scheduling='chunked'")
    draft = (np.zeros_like(nodes) if draft_s is None else draft_s(nodes)) * chunked  # (m,)
    room = np.maximum(budget[:, None, None] - rows, 1.0)  # (n, 1, m)
    chunks = np.ceil(new / room)  # (n, k, m)
    chunk = new / chunks
    kv_own = cached + (new + chunk) / 2.0
    x = np.maximum(FRACTIONS * budget[:, None], 1.0)  # (n, f) prompt tokens; at least one (no empty step)
    kv_x = np.maximum(x, wl.mean(wl.cached_tokens)[:, None] + (wl.mean(wl.new_prompt_tokens)[:, None] + x) / 2.0)
    # every step in one call, on (n, 1 + k + f, m): the decode-only step (a decode-only step with no sequence is never
    # taken, a decoder sees d >= 1: node 0 is scored at one row), each class's own chunk, the batched prompt tokens
    k, f = new.shape[1], x.shape[1]
    dec_rows = np.maximum(nodes, 1.0) * (spec.k + 1)
    t = step_s(_joined((dec_rows, rows, rows), (1, k, f)), kv_dec[..., None],
               _joined((0.0, chunk, x[..., None]), (1, k, f)), _joined((0.0, kv_own, kv_x[..., None]), (1, k, f)))
    pre, dec = kernel_scale
    draft = draft * dec
    host = engine.step_overhead_s + engine.seq_overhead_s * nodes  # (m,)
    dec_t = t[:, 0] if decode_step_s is None else decode_step_s(dec_rows, kv_dec, 0.0, 0.0)
    decode = dec_t * dec + draft + host  # (n, m)
    host = engine.step_overhead_s + engine.seq_overhead_s * nodes * chunked  # steps with prompt tokens (and decodes)
    graphs, at = graph_split or (cuda_graph_max_tokens(budget, engine.max_num_seqs, spec.k + 1), np.arange(budget.size))
    graphs = graphs[:, None, None]  # (v, 1, 1) longer steps run eagerly
    eager = engine.prompt_step_overhead_s  # per eager step (a prompt's own pass: every stage's, own_step_stages)
    own_t = t[:, 1:1 + k] if own_step_s is None else own_step_s(rows, kv_dec[..., None], chunk, kv_own)
    full = new.shape[:-1] + nodes.shape  # (n, k, m)
    rank_rows = rows / engine.attention_groups  # (m,) the busiest attention-DP rank's, beside its prompt tokens
    # a request with at most k + 1 new tokens (the rest of its prompt cached: a prefix hit, a KV cache transferred from
    # a prefill worker) runs as a decode (vLLM's decode / prefill split, reorder_batch_threshold): no prompt-step cost
    decode_like = spec.k + 1.0
    own = (np.broadcast_to(own_t * pre + draft + host, full)[at]  # (v, k, m)
           + eager * engine.own_step_stages * ((np.broadcast_to(rank_rows + chunk, full)[at] > graphs)
                                               & (chunk > decode_like)[at]))
    batched = (wl.mean(wl.new_prompt_tokens) > decode_like)[at][:, None, None]  # (v, 1, 1)
    batch = ((np.swapaxes(t[:, 1 + k:], 1, 2) * pre + (draft + host)[:, None])[at]
             + eager * ((rank_rows[:, None] + x[at][:, None, :] > graphs) & batched))  # (v, m, f)
    decode, chunks = np.broadcast_to(decode, full[:1] + nodes.shape)[at], np.broadcast_to(chunks, full)[at]
    return StepTables(nodes, decode, own, chunks, batch, budget[at], float(spec.k + 1), chunked, np.arange(at.size))
