"""Queueing model of a continuous-batching engine (vLLM, SGLang, TensorRT-LLM) in steady state; serve.py feeds it.

Every step the engine runs the decode token of each running sequence plus prompt tokens that fill the
per-step token budget (`max_num_batched_tokens`); a request joins when a slot (`max_num_seqs`) and KV memory
are free. The cost of a step with d decode rows and c prompt tokens comes from a step function (serve.py:
`estimate.evaluate_step` + a host overhead), tabulated at a few decode batches and interpolated.

Per replica, per request class j (weights w_j, E[.] the weighted mean), at request rate X, with L others
decoding (Little: L = X * (G - 1) / E_spec * tau) and a decoding request seeing d = 1 + L rows:

    own prefill      n_j = ceil(P'_j / room) chunk steps of P'_j / n_j tokens (P' = prompt not in the prefix
                     cache, room = budget - d rows); S_j = n_j * own step, its last step shared with the prompts
                     that joined it (gated batch service: prompts arriving during a step run together next step);
                     under a pipeline an own step is one micro-batch's pass through every stage, not a step's
                     time (step_tables' own_step_s)
    prompts per step beta = mu / (1 - exp(-mu)), mu = X tau (Poisson arrivals in one step, given >= 1)
    decode step      tau = 1 / (m + (1 - u) / D(d)),  m = X E[n] / beta steps/s with prompt tokens,
                     u = m * F(d, beta c): their time share; TPOT = tau / E_spec
    TTFT_j           request overhead + residual of the landing step (open loop; E[t^2] / (2 E[t]))
                     + backlog wait + S_j with J joining prompts (J ~ Poisson(X * landing step))
    backlog          Pollaczek-Khinchine M/D/1 on the budget's tokens, weighted by the share of the budget one
                     prompt takes; p90 via the exponential tail P(W > t) = rho exp(-t rho / E[W]) (open loop)
    slots (open)     M/D/c with c = running capacity: Erlang C times 1/2 (Allen-Cunneen, deterministic hold)
    closed loop      C clients: Schweitzer's approximate MVA (the others are (C - 1) / C of the population),
                     X = C / E[e2e] (Little) at most the prompt rate the prompt steps can serve (a prompt-bound
                     engine: the others wait), no residual (a client's next prompt arrives as a step ends),
                     clients beyond the running capacity wait (C - B) / X for a slot

tests/test_serve_queueing.py checks these against a discrete-event simulation of the scheduler (15 %).
Pure numpy over a grid (n points, k request classes, m decode-batch nodes); no randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property, lru_cache, wraps
from typing import Any, Callable

import numpy as np

from .errors import ScenarioError

SCHEDULING = ("chunked", "prefill_first")
_ITERATIONS = 40  # damped fixed-point iterations (40 vs 80: < 0.3 % apart); a fixed count: same input, same answer


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
    large = chip.hbm_bytes >= 70 * 2**30 and not chip.name.startswith("a100")
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

    def __post_init__(self):
        if self.scheduling not in SCHEDULING:
            raise ScenarioError(f"scheduling must be one of {', '.join(SCHEDULING)}, got {self.scheduling!r}")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise ScenarioError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization!r}")
        if min(self.step_overhead_s, self.seq_overhead_s, self.request_overhead_s, self.prompt_step_overhead_s) < 0:
            raise ScenarioError("host overheads must be >= 0 seconds")


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
            raise ScenarioError(f"speculative must be dict(k=..., acceptance=..., draft=None|model), got {value!r}")
        k, a = value.get("k", 0), float(value.get("acceptance", 0.0))
        if int(k) != k or k < 0 or not 0.0 <= a <= 1.0:
            raise ScenarioError(f"speculative needs an integer k >= 0 and acceptance in [0, 1], got {value!r}")
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
        raise ScenarioError(f"prefix_hit_rate must be in [0, 1), got {prefix_hit_rate!r}")
    if workload is None:
        p, g, w = (np.asarray(x, dtype=np.float64)[..., None] for x in (prompt_len, gen_len, np.ones_like(hit)))
    else:
        rows = [tuple(r) + (1.0,) * (3 - len(r)) for r in workload]
        if not rows or any(len(r) != 3 for r in rows):
            raise ScenarioError(f"workload must be a list of (prompt_len, gen_len[, weight]), got {workload!r}")
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


def _bracket(nodes: np.ndarray, x) -> tuple[np.ndarray, np.ndarray]:
    """Left node index and weight of x between nodes[i] and nodes[i + 1] (x clipped to the node range)."""
    pos = np.interp(x, nodes, np.arange(nodes.size, dtype=np.float64))  # fractional node index
    i = np.minimum(pos.astype(np.intp), nodes.size - 2)
    return i, pos - i


def _fraction_bracket(x) -> tuple[np.ndarray, np.ndarray]:
    """_bracket(FRACTIONS, x) without the search: on FRACTIONS' even steps of 1/16 the fractional index is
    min(max(x, 0), 1) * 16, the number np.interp gives to the bit (x - j/16 is exact for x in [j/16, (j+1)/16] and
    16 (x - j/16) + j = 16 x is representable)."""
    pos = np.minimum(np.maximum(x, 0.0), 1.0) * (FRACTIONS.size - 1)
    i = np.minimum(pos.astype(np.intp), FRACTIONS.size - 2)
    return i, pos - i


def _spread(pos: tuple, ndim: int) -> tuple:
    """A bracket (index, weight) of a batch (n,) shaped (n, 1, ...) against ndim axes: what _bracket gives for that
    batch broadcast over them (it is elementwise)."""
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
        """table (u, ..., m) interpolated at decode batch `batch`; result (n, ...). pos: _bracket(nodes, batch) of a
        batch (n,) when known (the same numbers, broadcast over table's middle axes). Table entries are read by flat
        index (the same entries as table[row, ..., i])."""
        shape = (self.index.size,) + table.shape[1:-1]
        i, w = _bracket(self.nodes, np.broadcast_to(batch, shape)) if pos is None else _spread(pos, len(shape))
        flat, at_i = self._flat(table), self._base(table.shape, len(shape), table.ndim - 2) + i
        t0 = flat.take(at_i)
        return t0 + w * (flat.take(at_i + 1) - t0)

    def batched(self, batch, tokens, pos: tuple | None = None) -> np.ndarray:
        """A step with `tokens` prompt tokens beside `batch` decodes; bilinear; batch, tokens (n, ...). pos: see at.
        Table entries are read by flat index (the same entries as batch_s[row, i, j])."""
        if np.shape(batch) != np.shape(tokens):
            batch, tokens = np.broadcast_arrays(batch, tokens)
        i, wd = _bracket(self.nodes, batch) if pos is None else _spread(pos, tokens.ndim)
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

    Decode rows: d (k + 1) with speculation (the verify step approximated as k + 1 decode rows per sequence,
    which reads each KV cache k + 1 times: conservative). Chunks: the budget left beside the decode rows,
    equal chunks (a prompt of P' tokens in n = ceil(P' / room) steps of P' / n); prefill_first runs prompts
    without decodes and needs each prompt to fit the budget. Batched steps: prompt tokens at the workload's
    mean chunk context (cached prefix + half the prompt + half the chunk). own_step_s, decode_step_s: the time a prompt
    waits for one of its own chunk steps, a decoding sequence for its next token, where that is not a step's time (a
    pipeline: serve._own_step_fn, serve._decode_step_fn); default step_s. kernel_scale (prompt, decode): multiplies the
    kernels' time of the steps carrying prompt tokens and of the decode-only steps (and the draft's), not the host's
    (an uncertainty band's tables: serve's `uncertainty`). graph_split (graph_tokens (v,), row (v,)): v tables, each a
    row of `wl` at its own CUDA-graph size; default: one per row, at engine.max_num_seqs (cuda_graph_max_tokens)."""
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
    own = (np.broadcast_to(own_t * pre + draft + host, full)[at]  # (v, k, m)
           + eager * engine.own_step_stages * (np.broadcast_to(rows + chunk, full)[at] > graphs))
    batch = ((np.swapaxes(t[:, 1 + k:], 1, 2) * pre + (draft + host)[:, None])[at]
             + eager * (rows[:, None] + x[at][:, None, :] > graphs))  # (v, m, f)
    decode, chunks = np.broadcast_to(decode, full[:1] + nodes.shape)[at], np.broadcast_to(chunks, full)[at]
    return StepTables(nodes, decode, own, chunks, batch, budget[at], float(spec.k + 1), chunked, np.arange(at.size))


# ------------------------------------------------------------------------------------------- steady state
@dataclass(frozen=True)
class Steady:
    """Per-replica steady state over the grid (n,): request rate, latencies, batch and utilization."""

    requests_per_s: np.ndarray
    ttft_s: np.ndarray  # mean over requests
    ttft_p90_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    running_batch: np.ndarray  # mean sequences holding KV (prefilling or decoding)
    decode_batch: np.ndarray  # mean decode rows of a step seen by a decoding request
    prefill_utilization: np.ndarray  # time share of steps carrying prompt tokens
    queue_s: np.ndarray  # mean wait before the own prompt's step (slot, backlog, running step)
    saturated: np.ndarray  # bool: the prompt budget, the slots or the KV cache cannot keep up
    converged: np.ndarray  # bool: the fixed point holds (closed loop: C = X * e2e within 0.1 %)
    # a solve that left the p90 out (with_p90=False; ttft_p90_s NaN): mask -> ttft_p90_s at the points it marks, the
    # same numbers as a solve with it, NaN elsewhere (a caller that reads the p90 at a few points: the planner)
    ttft_p90_at: "Callable[[np.ndarray], np.ndarray] | None" = field(default=None, repr=False, compare=False)


_J = np.arange(8.0)  # prompts joining the own step (Poisson), for the p90
_R = (np.arange(8.0) + 0.5) / 8.0  # positions inside the landing step (uniform), for the p90


def _wait_tail_p90_s(mean_wait_s, busy):
    """p90 of a wait that is 0 with probability 1 - busy and exponential (mean mean_wait / busy) otherwise."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(busy > 0.1, mean_wait_s / busy * np.log(busy / 0.1), 0.0)
    return np.where(np.isfinite(mean_wait_s), np.nan_to_num(t), np.inf)


def _poisson_pmf(mean, k):
    """P(J = k) for J ~ Poisson(mean); the last k collects the tail. mean (...), k (K,) -> (..., K)."""
    from math import lgamma

    m = np.asarray(mean, dtype=np.float64)[..., None]
    log_fact = np.array([lgamma(v + 1.0) for v in k])
    pmf = np.exp(k * np.log(np.maximum(m, 1e-300)) - m - log_fact)
    pmf[..., -1] = np.maximum(1.0 - pmf[..., :-1].sum(axis=-1), 0.0)
    return pmf


def _weighted_p90(values, weights):
    """values, weights (n, ...) -> (n,): the smallest value at or above 90 % of the weight."""
    v, w = values.reshape(values.shape[0], -1), weights.reshape(values.shape[0], -1)
    order = np.argsort(v, axis=-1)
    cum = np.cumsum(np.take_along_axis(w, order, -1), axis=-1)
    idx = np.argmax(cum >= 0.9 * cum[:, -1:] - 1e-12, axis=-1)
    return np.take_along_axis(np.take_along_axis(v, order, -1), idx[:, None], -1)[:, 0]


@dataclass(frozen=True)
class _Pass:
    tau_s: np.ndarray  # mean step seen by a decoding request
    ttft_s: np.ndarray  # (n, k) per class, mean
    p90_s: np.ndarray
    others: np.ndarray  # others decoding
    u: np.ndarray
    backlog: np.ndarray  # utilization of the prompt budget
    queue_s: np.ndarray
    # the others' prompts' demand on the engine: the larger of the prompt steps' time share (u before its cap) and the
    # backlog; the closed loop's rate is held to the share * rate / prompt_load they allow
    prompt_load: np.ndarray | None = None


def _pass(tab: StepTables, wl: Workload, rate, tau, share, dec_steps, closed: bool, request_overhead_s,
          with_ttft: bool = True, with_p90: bool = False) -> _Pass:
    """The steady-state equations once, at request rate `rate` (n,) and decode step `tau` (n,).

    Prompts that arrive during a step are prefilled together in the next one (gated batch service): a step
    with prompt tokens carries beta = mu / (1 - exp(-mu)) prompts, mu = rate * tau; a request's own step is
    joined by the prompts that arrive during its landing step (open loop, length-biased) or that end in the
    same step (closed loop). A backlog beyond the budget waits as M/D/1 on tokens (Pollaczek-Khinchine),
    weighted by the share of the budget one prompt takes."""
    share_rate = share * rate  # (n,) the others' request rate (once: every term below starts with it)
    others = share_rate * dec_steps * tau  # (n,) others decoding (Little on the decode station)
    d = 1.0 + others
    at_d, at_o = _bracket(tab.nodes, d), _bracket(tab.nodes, others)  # each batch bracketed once for every table
    decode_s = tab.at(tab.decode_s, d, at_d)
    n_own = tab.at(tab.chunks, others[:, None], at_o)  # (n, k)
    new = wl.new_prompt_tokens
    chunk = new / n_own
    chunk_mean = wl.mean(chunk)
    room = tab.room_tokens(d)
    mu = share_rate * tau
    beta = np.minimum(np.where(mu > 1e-12, mu / -np.expm1(-np.maximum(mu, 1e-12)), 1.0),
                      np.maximum(room / chunk_mean, 1.0))
    mixed_per_s = share_rate * wl.mean(n_own) / beta  # steps carrying others' prompt tokens
    mixed_s = tab.batched(d, beta * chunk_mean, at_d)
    busy = mixed_per_s * mixed_s
    u = np.minimum(busy, 0.999)
    tau_new = 1.0 / (mixed_per_s + (1.0 - u) / decode_s)
    if not with_ttft:  # open loop: the fixed point needs tau only
        return _Pass(tau_new, None, None, others, u, None, None)
    prefill_s = tab.at(tab.prefill_s, others[:, None], at_o)  # (n, k) the own prompt's chunk steps
    room_o = tab.room_tokens(others)
    landing_s = mixed_per_s * mixed_s ** 2 + (1.0 - u) * decode_s  # length-biased step: E[t^2] / E[t]
    joining = share_rate * (tau_new if closed else landing_s)  # (n,) prompts sharing the own step
    residual = (0.0 if closed else 1.0) * (1.0 - np.exp(-others) * (1.0 - u)) * landing_s  # full landing step
    full_s = tab.batched(others, room_o, at_o)
    backlog = share_rate * full_s * wl.mean(new) / room_o
    # a closed loop cannot overrun its budget: at most its C - 1 other prompts are ahead of a request
    load = np.minimum(backlog, 0.999) if closed else backlog
    ok = load < 1.0
    backlog_s = np.where(ok, share_rate * full_s ** 2 * wl.mean(new ** 2) / room_o ** 2
                         / (2.0 * np.where(ok, 1.0 - load, 1.0)) * np.minimum(1.0, wl.mean(new) / room_o), np.inf)
    if closed:
        backlog_s = np.minimum(backlog_s, share / np.maximum(1.0 - share, 1e-12) * full_s * wl.mean(new) / room_o)

    def service(j):  # j (n, k, *extra) -> (n, k, *extra): own prompt with j joining prompts in its last chunk step
        shape = (Ellipsis,) + (None,) * (np.ndim(j) - 2)
        x_own = chunk[shape]
        x_all = np.minimum(x_own + j * chunk_mean[:, None][shape], room_o[:, None][shape])
        o = others[:, None][shape]
        return prefill_s[shape] + tab.batched(o, x_all, at_o) - tab.batched(o, x_own, at_o)

    wait = request_overhead_s + backlog_s + residual / 2.0  # (n,)
    ttft = wait[:, None] + service(joining[:, None])
    prompt_load = np.maximum(busy, backlog)
    if not with_p90:
        return _Pass(tau_new, ttft, None, others, u, backlog, wait - request_overhead_s, prompt_load)
    jw = _poisson_pmf(joining, _J)  # (n, J)
    values = service(_J[None, None, :])[..., None] + request_overhead_s  # (n, k, J, 1)
    values = values + residual[..., None, None, None] * _R  # (n, k, J, R)
    weights = wl.weight[..., None, None] * jw[:, None, :, None] * np.ones_like(_R)
    values, weights = np.broadcast_arrays(values, weights)
    # closed loop: the others' prompts come as their requests end, spaced by their decode phases, so the
    # backlog has no exponential tail (bounded by C - 1 prompts): its mean is added instead
    tail = backlog_s if closed else _wait_tail_p90_s(backlog_s, np.minimum(backlog, 1.0))
    p90 = _weighted_p90(values, weights) + tail
    return _Pass(tau_new, ttft, p90, others, u, backlog, wait - request_overhead_s, prompt_load)


def _first_wave_s(tab, wl, clients, others):
    """(n,) mean extra TTFT of the first wave of a closed-loop benchmark: its clients start together, so their
    C prompts arrive at once and run through the token budget in order; the i-th waits for the i prompts ahead
    of it, i.e. (C - 1) / 2 prompts on average at the full-budget step's cost per prompt token."""
    room = tab.room_tokens(others)
    full_s = tab.batched(others, room)  # a step carrying a full budget of prompt tokens
    return np.maximum(clients - 1.0, 0.0) / 2.0 * wl.mean(wl.new_prompt_tokens) * full_s / room


def _saturating(f):
    """f with numpy's overflow, invalid and divide warnings off: a saturated point runs to inf or NaN by design
    (Steady.saturated flags it, and serve's error names it in one line), not a fault to print."""
    @wraps(f)
    def quiet(*args, **kwargs):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return f(*args, **kwargs)
    return quiet


@_saturating
def _steady(tab, wl, load, capacity, closed, tokens_per_step, request_overhead_s, rounds=np.inf,
            saturated_only: bool = False, with_p90: bool = True):
    """Damped fixed point of _pass: open loop at `load` requests/s, closed loop with `load` clients (each sending
    `rounds` requests, all starting together: the first wave's queue is averaged over the rounds). saturated_only
    (open loop): only Steady.saturated, an array (n,) (no p90 and no Erlang C: saturation_qps asks for no more).
    with_p90 False: the p90 is left out, Steady.ttft_p90_at gives it at the points a caller reads (the last pass again
    at those points: every equation is per point)."""
    load = np.asarray(load, dtype=np.float64)
    dec_steps = wl.mean(np.maximum(wl.gen_tokens - 1.0, 0.0)) / tokens_per_step  # (n,) decode steps per request
    c = np.minimum(load, capacity) if closed else None  # running clients; the rest wait for a slot
    share = (c - 1.0) / c if closed else 1.0  # Schweitzer: the others are (C - 1) / C of the clients
    tau = tab.at(tab.decode_s, np.ones_like(load))
    rate = c / (wl.mean(tab.at(tab.prefill_s, 0.0)) + dec_steps * tau) if closed else load
    for _ in range(_ITERATIONS):
        p = _pass(tab, wl, rate, tau, share, dec_steps, closed, request_overhead_s, with_ttft=closed)
        tau = 0.5 * tau + 0.5 * p.tau_s
        if closed:  # Little, within the prompts per second the engine's prompt steps can serve
            demand = p.prompt_load
            cap = np.where(demand > 0, share * rate / np.where(demand > 0, demand, 1.0), np.inf)
            rate = 0.5 * rate + 0.5 * np.minimum(c / (wl.mean(p.ttft_s) + dec_steps * tau), cap)
    p = _pass(tab, wl, rate, tau, share, dec_steps, closed, request_overhead_s,
              with_p90=with_p90 and not saturated_only)
    ttft = wl.mean(p.ttft_s)
    with np.errstate(invalid="ignore"):  # inf - inf where the backlog is saturated
        hold_s = ttft - request_overhead_s - p.queue_s + dec_steps * tau  # a request holds a slot (and its KV)
    if closed:  # clients beyond the slots wait for one, and with the engine's prompt steps full (u -> 1) the
        # running clients wait for them: Little on the waiting room, C = X * e2e
        slot_wait = slot_p90 = (load - c) / rate + np.maximum(c / rate - ttft - dec_steps * tau, 0.0)
        saturated = np.zeros(load.shape, bool)  # a closed loop only waits longer
    else:  # slots as M/D/c: Erlang C, halved for a deterministic holding time (Allen-Cunneen, c_s^2 = 0)
        slots = np.floor(capacity)
        offered = rate * hold_s
        saturated = (p.backlog >= 1.0) | (p.u >= 0.999) | (offered >= slots)
        if saturated_only:
            return saturated
        p_wait = _erlang_c(slots, np.minimum(offered, slots - 1e-9))
        slot_wait = np.where(saturated, np.inf, p_wait * hold_s / np.maximum(slots - offered, 1e-9) / 2.0)
        slot_p90 = _wait_tail_p90_s(slot_wait, p_wait)
    e2e = ttft + dec_steps * tau + slot_wait
    running = rate * hold_s
    converged = np.abs(rate * e2e - load) <= 1e-3 * load if closed else np.ones(load.shape, bool)
    # closed loop: the synchronized first wave, one round in `rounds` (a transient: the rate stays the steady one)
    wave_s = _first_wave_s(tab, wl, c, p.others) / rounds if closed else 0.0

    def p90_of(pass_p90, at=slice(None)):  # the last pass's p90 at the points `at` -> the Steady's there
        return (np.maximum(pass_p90, (ttft + wave_s)[at]) if closed else pass_p90) + slot_p90[at]  # the burst lifts
        # the mean; p90 >= mean

    @_saturating
    def p90_at(mask):
        at, out = np.flatnonzero(mask), np.full(load.shape, np.nan)
        again = _pass(tab.with_index(tab.index[at]), wl.take(at), rate[at], tau[at], share[at] if closed else share,
                      dec_steps[at], closed, request_overhead_s, with_p90=True)
        out[at] = p90_of(again.p90_s, at)
        return out
    p90 = p90_of(p.p90_s) if with_p90 else np.full(load.shape, np.nan)
    return Steady(rate, ttft + wave_s + slot_wait, p90, tau / tokens_per_step, e2e + wave_s, running, 1.0 + p.others,
                  p.u, p.queue_s + wave_s + slot_wait, saturated, converged, None if with_p90 else p90_at)


def _erlang_c(servers, offered):
    """Probability of waiting in M/M/c (Erlang C) with c = servers, offered load a < c (arrays); Erlang B by
    its recursion B(k) = a B(k-1) / (k + a B(k-1)), then C = c B / (c - a (1 - B))."""
    b = np.ones_like(offered)
    for k in range(1, int(np.max(servers)) + 1):
        b = np.where(k <= servers, offered * b / (k + offered * b), b)
    return servers * b / (servers - offered * (1.0 - b))


def solve_open(tab: StepTables, wl: Workload, qps, capacity, tokens_per_step=1.0, request_overhead_s=0.0,
               with_p90: bool = True) -> Steady:
    """Poisson arrivals at `qps` requests/s per replica (n,). with_p90: see _steady."""
    return _steady(tab, wl, qps, capacity, False, tokens_per_step, request_overhead_s, with_p90=with_p90)


def saturation_qps(tab: StepTables, wl: Workload, capacity, tokens_per_step=1.0, rounds: int = 3) -> np.ndarray:
    """The largest Poisson rate (n,) the open-loop model serves without saturating: each round scores 32 rates
    spread over the current bracket at once, starting from [0, a rate that certainly saturates] (every slot
    decoding at the fastest step, or the budget full of prompts); 3 rounds: within 32^-3 of that bound."""
    n, k = tab.index.size, 32
    dec_steps = wl.mean(np.maximum(wl.gen_tokens - 1.0, 0.0)) / tokens_per_step
    fastest_s = tab.at(tab.decode_s, np.ones(n))
    budget = tab.point_budget_tokens
    prompt_s = tab.batched(np.zeros(n), budget) / budget
    lo = np.zeros(n)
    hi = np.maximum((capacity + 1.0) / (np.maximum(dec_steps, 1e-9) * fastest_s), 1.0 / (wl.mean(wl.new_prompt_tokens) * prompt_s))
    rep = np.repeat(np.arange(n), k)
    wl_k = wl.take(rep)
    for _ in range(rounds):
        rates = lo[:, None] + (hi - lo)[:, None] * np.arange(1, k + 1) / k  # (n, k)
        sat = _steady(tab.with_index(tab.index[rep]), wl_k, rates.ravel(), np.repeat(capacity, k), False,
                      tokens_per_step, 0.0, saturated_only=True).reshape(n, k)
        first_bad = np.argmax(np.concatenate([sat, np.ones((n, 1), bool)], axis=1), axis=1)  # (n,) in 0..k
        below = rates[np.arange(n), np.maximum(first_bad - 1, 0)]  # the last rate that held
        above = rates[np.arange(n), np.minimum(first_bad, k - 1)]  # the first that saturated
        lo, hi = np.where(first_bad > 0, below, lo), np.where(first_bad < k, above, hi)
    return lo


def solve_closed(tab: StepTables, wl: Workload, concurrency, capacity, tokens_per_step=1.0,
                 request_overhead_s=0.0, requests_per_client=np.inf, with_p90: bool = True) -> Steady:
    """C clients per replica (n,), each sending its next request when the previous one ends (no think time),
    `requests_per_client` requests each, all clients starting together (np.inf: the steady state alone). with_p90:
    see _steady."""
    if not requests_per_client >= 1.0:
        raise ScenarioError(f"requests_per_client must be >= 1, got {requests_per_client!r}")
    return _steady(tab, wl, concurrency, capacity, True, tokens_per_step, request_overhead_s, requests_per_client,
                   with_p90=with_p90)
