"""Serving under load: `serve()` -> ServingEstimate (one point) or a pandas DataFrame (lists = a sweep).

A continuous-batching engine (vLLM's knobs: max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, chunked or
prefill-first scheduling) serving a closed loop of `concurrency` clients or Poisson arrivals at `qps`, in steady
state; a closed loop is a benchmark run (all clients start together, `requests_per_client` each: the first round's
burst is averaged into the mean TTFT). The cost of one engine step (d decode rows beside a prompt chunk of c tokens)
is `estimate.evaluate_step` plus a host overhead per step (more for a step carrying prompt tokens), tabulated by
engine.py; queueing.py turns step costs into TTFT, TPOT and throughput. Per replica: `dp` replicas share the load.

KV capacity (memory.kv_capacity): usable_bytes (gpu_memory_utilization x the chip's memory) - weights - the workspace
of one max_num_batched_tokens step, over a sequence's KV at its mean context (prompt + gen/2), capped by max_num_seqs.

Host overhead (engine.HOST_*_S) is fitted by benchmarks/validate_serving.py on measured vLLM serving results; every
*_overhead_s=0 and `efficiency="ideal"` give the pure roofline, and then serve() at concurrency 1 equals estimate()
at batch 1 (TTFT: the prompt in one step; TPOT: the decode step at the mean context, which is the mean of estimate's
steps while every op stays on one side of the ridge).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from .bounds import BOUNDS, check_count, check_range
from .errors import RooflineError, ScenarioError, shown
from .chip_fits import DEFAULT_EFFICIENCY, efficiency_label, efficiency_mode, resolve_efficiency, resolved_once
from .estimate import pass_time_s, step_band, step_time_factor, step_time_s
from .graph import Dtypes, resolve_dtypes
from .hardware import load_chip
from .memory import GPU_MEMORY_UTILIZATION, kv_capacity
from .model.hf import load_model
from .engine import (HOST_OVERHEADS, Engine, Speculative, StepTables, Workload, cuda_graph_max_tokens, decode_nodes,
                     step_tables, vllm_batch_defaults, workload_of)
from .queueing import saturation_qps, solve_closed, solve_open
from .sharding import MOE_DISPATCH, Sharding, micro_batches, stage_divisor, stage_note
from .units import array_key, as_list, json_ready, remembered, unique_rows
from .uncertainty import serving_band_at, widened_band

# The serving model's own error (host time, queueing, the benchmark's burst) beside the kernels' band (_band, combined
# in quadrature: uncertainty.widened_band), by load: (p10, p90) of measured / modelled in three bands of the prefill
# utilization (below 0.15, 0.15-0.4, above), fitted by validate_serving.py on the rows the host overheads never saw,
# interpolated between the bands' median utilizations (uncertainty.serving_band_at). Where prompts fill the steps
# the modelled TPOT errs slow and the TTFT fast. Leave one model out, TTFT / TPOT inside: 87 / 90, 83 / 73, 75 / 83,
# 77 / 81, 77 / 75, 42 / 89 %. benchmarks/CALIBRATION.md "Serving: the band by load"; README "Serving under load".
SERVING_BAND = {"prefill_utilization": (0.060, 0.242, 0.548),
                "ttft_s": ((0.757, 1.570), (0.852, 1.562), (0.807, 1.502)),
                "tpot_s": ((1.000, 1.097), (0.900, 1.000), (0.802, 1.000))}

# Closed-loop benchmark clients (genai-perf / aiperf `--concurrency C --request-count 10C`, the recipe of NVIDIA
# AIConfigurator's evaluation harness; `vllm bench serve --max-concurrency C` with a fixed number of prompts) start
# all C clients at once: the first round's C prompts arrive as one burst and queue through the token budget.
# The measured mean TTFT averages that burst over the rounds each client sends.
BENCHMARK_REQUESTS_PER_CLIENT = 10

_GRID = ("prompt_len", "gen_len", "concurrency", "qps", "max_num_seqs", "max_num_batched_tokens", "prefix_hit_rate")
_DISCRETE = ("chip", "tp", "pp", "ep", "dp")
_DEGREES = _DISCRETE[1:]


@dataclass
class ServingEstimate:
    """Steady state of one deployment (dp replicas) under load. Latencies per request, rates per deployment."""

    model: str
    chip: str
    scenario: dict[str, Any]
    efficiency: str
    ttft_s: float  # mean time to first token (queueing + prefill + host)
    ttft_p90_s: float
    tpot_s: float  # mean time per output token after the first
    e2e_s: float
    requests_per_s: float
    output_tokens_per_s: float
    running_batch: float  # mean sequences holding KV per replica
    kv_cache_utilization: float  # their KV over the KV capacity
    decode_batch: float  # mean decode rows of a step, seen by a decoding request
    prefill_utilization: float  # time share of steps carrying prompt tokens
    queue_s: float  # mean wait before the own prompt runs
    max_running: float  # running capacity per replica: min(max_num_seqs, KV capacity)
    limit: str  # what caps the running batch: max_num_seqs or kv_cache
    saturation_requests_per_s: float  # the largest Poisson rate served without saturating (open-loop model)
    assumptions: list[str] = field(default_factory=list)
    efficiency_mode: str = "calibrated"  # 'ideal' | 'calibrated' | 'custom'; `efficiency` names the chip's fit
    # calibrated: p10 / p90 of the headline numbers with every kernel at its fits' p10 / p90 (held-out) error, through
    # the same queue (_band); None in ideal mode or with a custom efficiency
    uncertainty: dict[str, Any] | None = None

    @property
    def tokens_per_s_per_user(self) -> float | None:
        """Output tokens/s one user sees while decoding: 1 / TPOT (None with one generated token)."""
        return 1.0 / self.tpot_s if self.tpot_s and np.isfinite(self.tpot_s) else None

    def to_dict(self) -> dict[str, Any]:
        return json_ready({**asdict(self), "tokens_per_s_per_user": self.tokens_per_s_per_user})


# ------------------------------------------------------------------------------------------- one deployment
def _step_fn(spec, chip, kw):
    """(decode_rows, decode_kv_len, chunk_tokens, chunk_kv_len) -> seconds of one step (arrays broadcast)."""
    def step_s(rows, kv_d, chunk, kv_c):
        return step_time_s(spec, chip, decode_batch=rows, decode_kv_len=kv_d, chunk_tokens=chunk, chunk_kv_len=kv_c,
                           **kw)
    return step_s


def _own_step_fn(spec, chip, kw):
    """(decode_rows, decode_kv_len, chunk_tokens, chunk_kv_len) -> seconds a prompt waits for one of its chunk steps
    under a pipeline, before host time (step_tables adds it, every stage's that the pass meets: own_step_stages):
    estimate.pass_time_s."""
    def own_s(rows, kv_d, chunk, kv_c):
        return pass_time_s(spec, chip, decode_batch=rows, decode_kv_len=kv_d, chunk_tokens=chunk, chunk_kv_len=kv_c,
                           **kw)
    return own_s


def _decode_step_fn(spec, chip, kw, pp: int):
    """(decode_rows, decode_kv_len, chunk_tokens, chunk_kv_len) -> seconds a decoding sequence waits for its next token
    under a pipeline: its micro-batch's pass through every stage (estimate.pass_time_s), the m micro-batches that d
    rows fill (sharding.micro_batches: d / m rows each) taking turns at the fullest stage (estimate.step_time_factor):
    a step's time where d >= pp, one pass for a lone sequence (not a step of half a sequence per micro-batch)."""
    sh = Sharding(pp=pp)

    def dec_s(rows, kv_d, chunk, kv_c):
        return pass_time_s(spec, chip, decode_batch=rows / micro_batches(pp, rows) * pp, decode_kv_len=kv_d,
                           chunk_tokens=chunk, chunk_kv_len=kv_c, **kw) * step_time_factor(sh, spec.n_layers, rows)
    return dec_s


def _draft_fn(spec, chip, kw, sp: Speculative, kv_tokens):
    """Draft cost of one step at decode batches `nodes`: k steps of the draft model, or for MTP heads
    (draft=None) k decode steps of one layer of the model (1/n_layers of a step: an approximation)."""
    if sp.k == 0:
        return None
    draft = spec if sp.draft is None else load_model(sp.draft)
    per_layer = 1.0 / spec.n_layers if sp.draft is None else 1.0
    return lambda nodes: sp.k * per_layer * _step_fn(draft, chip, kw)(nodes, kv_tokens, 0.0, 0.0)


@dataclass
class _Prepared:
    """One deployment's grid before the queueing solve: its step tables, workload, running capacity and load."""

    tab: StepTables
    wl: Workload
    cap: np.ndarray
    kv_seq: np.ndarray
    free: np.ndarray
    kv_seqs: np.ndarray
    load: np.ndarray  # per replica: clients (closed loop) or requests/s (open loop)
    dp: int
    max_num_seqs: np.ndarray
    attention_dp: int
    rescaled: Any = None  # (prompt, decode) kernel-time multipliers -> the tables with them (step_tables kernel_scale)
    step_kw: dict = field(default_factory=dict)  # the deployment's step_time_s arguments (model and chip included)


def _prepare(spec, chip, g: dict, *, tp, pp, ep, dp, dtypes: Dtypes, efficiency, attention, engine: dict,
             sp: Speculative, workload, closed: bool, layout: dict, only_fitting: bool = False,
             graphs: dict | None = None) -> _Prepared | None:
    """The step tables and KV capacity of one chip and sharding over the grid `g` (arrays (n,)); None (only_fitting)
    when no point has room for one sequence's KV cache (the memory model, asked first): the steps are then not
    evaluated. efficiency: the chip's model as chip_fits.resolved_once gives it. graphs: a dict kept over the
    deployments of one call (estimate.graph_memo: a step's graph is built once for all chips)."""
    wl = workload_of(g["prompt_len"], g["gen_len"], g["prefix_hit_rate"], workload)
    cap, kv_seq, free, kv_seqs = kv_capacity(spec, chip, wl.held_tokens, g["max_num_batched_tokens"],
                                             g["max_num_seqs"], dict(tp=tp, pp=pp, ep=ep, **layout), dtypes,
                                             engine["gpu_memory_utilization"], attention, graphs)
    if only_fitting and not np.any(cap >= 1):
        return None
    kw = dict(tp=tp, pp=pp, ep=ep, weight_dtype=dtypes.weight, act_dtype=dtypes.act, kv_dtype=dtypes.kv,
              efficiency=efficiency, attention=attention, graphs=graphs, **layout)
    keys = np.stack([g["prompt_len"], g["gen_len"], g["prefix_hit_rate"], g["max_num_batched_tokens"]], axis=-1)
    uniq, _, inv = unique_rows(keys)  # step costs do not depend on the load
    wl_u = workload_of(uniq[:, 0], uniq[:, 1], uniq[:, 2], workload)
    stages = stage_divisor(spec.n_layers, pp)  # the fullest stage's layers: n_layers / stages
    eng = Engine(max_num_batched_tokens=uniq[:, 3], gpu_memory_utilization=engine["gpu_memory_utilization"],
                 scheduling=engine["scheduling"], step_overhead_s=engine["step_overhead_s"],
                 seq_overhead_s=engine["seq_overhead_s"],
                 prompt_step_overhead_s=engine["prompt_layer_overhead_s"] * spec.n_layers / stages,
                 own_step_stages=stages, attention_groups=layout["attention_dp"])
    nodes = decode_nodes(np.max(g["max_num_seqs"]) * layout["attention_dp"])
    draft = _draft_fn(spec, chip, kw, sp, float(np.mean(wl_u.decode_kv_tokens)))
    own, dec = (None, None) if pp == 1 else (_own_step_fn(spec, chip, kw), _decode_step_fn(spec, chip, kw, pp))
    fns = [None if f is None else _remembered(f) for f in (_step_fn(spec, chip, kw), draft, own, dec)]
    graph = cuda_graph_max_tokens(g["max_num_batched_tokens"], g["max_num_seqs"], sp.k + 1)  # (n,) each point's
    split, _, at = unique_rows(np.stack([inv.ravel(), graph], axis=-1))  # (v, 2): step configuration, graph size

    def rescaled(scale=(1.0, 1.0)) -> StepTables:
        return step_tables(fns[0], wl_u, eng, sp, nodes, *fns[1:], kernel_scale=scale,
                           graph_split=(split[:, 1], split[:, 0].astype(int))).with_index(at.ravel())

    load = (g["concurrency"] if closed else g["qps"]) / dp
    return _Prepared(rescaled(), wl, cap, kv_seq, free, kv_seqs, load, dp, g["max_num_seqs"], layout["attention_dp"],
                     rescaled, {**{k: v for k, v in kw.items() if k != "graphs"}, "model": spec, "chip": chip})


def _remembered(fn):
    """fn with its calls remembered by the arguments' values: a band's rescaled tables ask for the same step costs."""
    memo: dict = {}
    return lambda *args: remembered(memo, tuple(map(array_key, args)), fn, *args)


def _solve(parts: "list[_Prepared]", *, engine: dict, sp: Speculative, closed: bool,
           saturation_where=None, p90_where_saturation: bool = False) -> list[dict[str, np.ndarray]]:
    """Every metric of every part's grid, from ONE queueing solve over all their points (the equations are
    per point; the parts' step tables are stacked): a dict of arrays (n,) per part. saturation_where(i, cols): the
    points of part i (a bool mask, from its other metrics) whose saturation rate is computed (the others' is NaN;
    None: every point's); p90_where_saturation: the TTFT p90 too (saturation_where then reads no p90)."""
    sizes = [p.load.size for p in parts]
    tab = StepTables.concat([p.tab for p in parts])
    wl = Workload.concat([p.wl for p in parts])
    cat = {f: np.concatenate([np.broadcast_to(getattr(p, f), (n,)) for p, n in zip(parts, sizes)])
           for f in ("cap", "kv_seq", "free", "kv_seqs", "load", "dp", "max_num_seqs", "attention_dp")}
    cap, dp = cat["cap"], cat["dp"]
    cap_safe = np.maximum(cap, 1.0)
    e_spec, r_over = sp.tokens_per_step, engine["request_overhead_s"]
    late_p90 = p90_where_saturation and saturation_where is not None
    st = (solve_closed(tab, wl, cat["load"], cap_safe, e_spec, r_over, engine["requests_per_client"],
                       with_p90=not late_p90) if closed
          else solve_open(tab, wl, cat["load"], cap_safe, e_spec, r_over, with_p90=not late_p90))
    gen = wl.mean(wl.gen_tokens)
    tpot_s = np.where(gen > 1.0, st.tpot_s, np.nan)  # one generated token: no decode step
    cols = dict(ttft_s=st.ttft_s, ttft_p90_s=st.ttft_p90_s, tpot_s=tpot_s, e2e_s=st.e2e_s,
                requests_per_s=st.requests_per_s * dp, output_tokens_per_s=st.requests_per_s * dp * gen,
                running_batch=st.running_batch,
                kv_cache_utilization=st.running_batch / cat["attention_dp"] * cat["kv_seq"] / np.maximum(cat["free"], 1.0),
                decode_batch=st.decode_batch, prefill_utilization=st.prefill_utilization, queue_s=st.queue_s,
                max_running=cap,
                limit=np.where(cat["max_num_seqs"] * cat["attention_dp"] <= cat["kv_seqs"], "max_num_seqs", "kv_cache"),
                saturation_requests_per_s=None, saturated=st.saturated | (cap < 1), fits=cap >= 1,
                converged=st.converged)  # saturation: below, at the points wanted
    _blank_no_room(cols)
    bounds = np.cumsum([0] + sizes)
    out = [{k: v if v is None else v[lo:hi] for k, v in cols.items()} for lo, hi in zip(bounds[:-1], bounds[1:])]
    want = np.ones(tab.index.size, bool) if saturation_where is None else np.concatenate(
        [_mask(saturation_where(i, c), c["fits"].size) for i, c in enumerate(out)])
    sat = np.where(cols["fits"], _saturation_rps(tab, wl, cap_safe, want, e_spec) * dp, 0.0)
    if not closed:
        _at_capacity(cols, tab, wl, cat, sat, e_spec, r_over)
    p90 = st.ttft_p90_at(want) if late_p90 else None
    for c, lo, hi in zip(out, bounds[:-1], bounds[1:]):
        c["saturation_requests_per_s"] = sat[lo:hi]
        if late_p90:
            c["ttft_p90_s"] = p90[lo:hi]
    return out


def _blank_no_room(cols: dict) -> None:
    """Points with no room for one sequence's KV cache run nothing: their running metrics NaN (not the queue solved
    on a stand-in capacity of one), their limit 'no room' and (at the caller) their saturation rate 0."""
    for k in ("ttft_s", "ttft_p90_s", "tpot_s", "e2e_s", "requests_per_s", "output_tokens_per_s", "running_batch",
              "kv_cache_utilization", "decode_batch", "prefill_utilization", "queue_s"):
        cols[k] = np.where(cols["fits"], cols[k], np.nan)
    cols["limit"] = np.where(cols["fits"], cols["limit"], "no room")


def _no_room(spec, chip, d: dict) -> ScenarioError:
    return ScenarioError(f"{spec.name} does not fit {chip.name} at tp={d['tp']} pp={d['pp']}: no room for the KV cache "
                         f"of one sequence within gpu_memory_utilization x the {chip.engine_capacity_label}")


def _at_capacity(cols: dict, tab: StepTables, wl: Workload, cat: dict, sat, e_spec, r_over) -> None:
    """Open-loop points past their saturation rate (sat known): the queue grows without bound (TTFT, its p90, the
    queue wait, e2e: inf) while the engine runs full, so the other metrics are the steady state's at the saturation
    rate (its limit from below). In place: the parts' columns are views of cols."""
    i = np.flatnonzero(cols["saturated"] & (cat["cap"] >= 1) & np.isfinite(sat) & (sat > 0))
    if i.size == 0:
        return
    full = solve_open(tab.with_index(tab.index[i]), wl.take(i), sat[i] / cat["dp"][i], np.maximum(cat["cap"][i], 1.0),
                      e_spec, r_over, with_p90=False)
    gen = wl.mean(wl.gen_tokens)[i]
    cols["tpot_s"][i] = np.where(gen > 1.0, full.tpot_s, np.nan)
    for k in ("running_batch", "decode_batch", "prefill_utilization"):
        cols[k][i] = getattr(full, k)
    cols["requests_per_s"][i], cols["output_tokens_per_s"][i] = sat[i], sat[i] * gen
    cols["kv_cache_utilization"][i] = (full.running_batch / cat["attention_dp"][i] * cat["kv_seq"][i]
                                       / np.maximum(cat["free"][i], 1.0))


def _mask(x, n: int) -> np.ndarray:
    """A saturation_where answer as a bool mask of a deployment's n points (one bool: all or none)."""
    m = np.asarray(x)
    if m.dtype != bool or m.shape not in ((), (n,)):
        raise ScenarioError(f"saturation_where must give one bool or a bool mask of its {n} points, got {shown(x)}")
    return np.broadcast_to(m, (n,))


def _saturation_rps(tab: StepTables, wl: Workload, capacity, want, tokens_per_step) -> np.ndarray:
    """The largest open-loop rate per replica (queueing.saturation_qps) at the points `want` (NaN elsewhere), once per
    distinct (step configuration, capacity) among them (the same step configuration has the same workload)."""
    sat = np.full(tab.index.size, np.nan)
    if np.any(want):
        keys, first, inv = unique_rows(np.stack([tab.index[want], capacity[want]], -1))
        sat[want] = saturation_qps(tab.with_index(keys[:, 0].astype(np.intp)), wl.take(np.flatnonzero(want)[first]),
                                   keys[:, 1], tokens_per_step)[inv.ravel()]
    return sat


# ------------------------------------------------------------------------------------------- public API
def _check_grid(g: dict):
    """The grid's values; an engine knob left out (None: the chip's default, _engine_knobs) is checked per chip."""
    for name in ("prompt_len", "gen_len"):
        a = g[name]
        if np.any(a < 1) or np.any(a != np.floor(a)):
            raise ScenarioError(f"{name} must be a positive integer, got {a.tolist()!r}")
    for name in ("max_num_seqs", "max_num_batched_tokens"):  # a step's rows: at most a batch's bound
        if name in g:
            check_count(name, g[name], BOUNDS["batch"].max_value)
    if "max_num_seqs" in g and "max_num_batched_tokens" in g:
        _check_knobs(g["max_num_seqs"], g["max_num_batched_tokens"])
    for name in ("concurrency", "qps"):
        if g.get(name) is not None and (np.any(~np.isfinite(g[name])) or np.any(g[name] <= 0)):
            raise ScenarioError(f"{name} must be a positive finite number, got {g[name].tolist()!r}")


def _check_knobs(seqs, tokens, default_of: str = ""):
    if np.any(tokens < seqs):
        raise ScenarioError("max_num_batched_tokens must be >= max_num_seqs (every running sequence decodes a token "
                            f"per step), as vLLM requires; got {np.max(seqs):.0f} sequences and {np.min(tokens):.0f} "
                            f"tokens{default_of}")


def _engine_knobs(g: dict, chip) -> dict:
    """The grid with the engine knobs left out set as vLLM sets them on this chip (engine.vllm_batch_defaults:
    max_num_seqs capped by the batched tokens when it is the one left out)."""
    seqs, tokens = vllm_batch_defaults(chip)
    n = next(iter(g.values())).size
    t = g.get("max_num_batched_tokens", np.full(n, float(tokens)))
    s = g.get("max_num_seqs", np.minimum(float(seqs), t))
    _check_knobs(s, t, "" if "max_num_batched_tokens" in g else f" (vLLM's default on {chip.name}: give "
                 "max_num_batched_tokens too)")
    return {**g, "max_num_seqs": s, "max_num_batched_tokens": t}


def serve(model, chip, prompt_len=2048, gen_len=256, concurrency=None, qps=None, tp=1, pp=1, ep=1, dp=1,
          weight_dtype=None, act_dtype="bf16", kv_dtype=None, efficiency=DEFAULT_EFFICIENCY, max_num_seqs=None,
          max_num_batched_tokens=None, prefix_hit_rate=0.0, speculative=None, workload=None, scheduling="chunked",
          gpu_memory_utilization=GPU_MEMORY_UTILIZATION, step_overhead_s=None, seq_overhead_s=None,
          request_overhead_s=None, prompt_layer_overhead_s=None, requests_per_client=BENCHMARK_REQUESTS_PER_CLIENT,
          attention="fused", attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0, moe_dispatch=MOE_DISPATCH,
          uncertainty=True):
    """Steady state of a continuous-batching engine under a closed loop of `concurrency` clients or Poisson
    arrivals at `qps` requests/s (exactly one of them). Any of the grid arguments (prompt_len, gen_len,
    concurrency or qps, max_num_seqs, max_num_batched_tokens, prefix_hit_rate) and chip, tp, pp, ep, dp may be
    a list: the result is then a DataFrame with one row per point (saturated points flagged, not raised).
    max_num_seqs / max_num_batched_tokens None: vLLM's defaults on the chip (engine.vllm_batch_defaults: 1024 and
    8192 on a device of >= 70 GiB but the A100, else 256 and 2048); max_num_seqs is per attention group (attention_dp:
    each of vLLM's data-parallel ranks schedules its own); moe_dispatch: sharding.MOE_DISPATCHES.

    workload: a list of (prompt_len, gen_len[, weight]) request classes, replacing prompt_len and gen_len.
    speculative: dict(k=draft tokens, acceptance=per-token probability, draft=None (MTP heads) or a model).
    step_overhead_s / seq_overhead_s / request_overhead_s: host time per step, per decoding sequence per step
    and per request (before its first token); prompt_layer_overhead_s: host time per layer (on each pipeline
    stage) of a step carrying prompt tokens; None uses the fitted engine.HOST_*_S.
    requests_per_client (closed loop): requests each benchmark client sends, all clients starting together, so
    the first of these rounds arrives as one burst; float("inf") gives the steady state alone.
    uncertainty (calibrated efficiency): the p10 / p90 of TTFT (its mean and its p90), TPOT, e2e and throughput with
    every kernel at its fits' held-out error, through the same queue, widened by the serving model's own error at
    its load (SERVING_BAND; .uncertainty; a sweep's <name>_p10 / <name>_p90 columns); False leaves them out (a
    sweep then runs ~2.5x faster: two queueing solves fewer)."""
    call = dict(prompt_len=prompt_len, gen_len=gen_len, concurrency=concurrency, qps=qps, weight_dtype=weight_dtype,
                act_dtype=act_dtype, kv_dtype=kv_dtype, efficiency=efficiency, max_num_seqs=max_num_seqs,
                max_num_batched_tokens=max_num_batched_tokens, prefix_hit_rate=prefix_hit_rate, speculative=speculative,
                workload=workload, scheduling=scheduling, gpu_memory_utilization=gpu_memory_utilization,
                step_overhead_s=step_overhead_s, seq_overhead_s=seq_overhead_s, request_overhead_s=request_overhead_s,
                prompt_layer_overhead_s=prompt_layer_overhead_s, requests_per_client=requests_per_client,
                attention=attention, attention_dp=attention_dp, moe_tp=moe_tp, moe_ep=moe_ep, routing_skew=routing_skew,
                moe_dispatch=moe_dispatch)
    discrete = dict(chip=chip, tp=tp, pp=pp, ep=ep, dp=dp)
    is_sweep = any(isinstance(v, (list, tuple, np.ndarray)) for v in (*[call[k] for k in _GRID if call[k] is not None],
                                                                       *discrete.values()))
    spec, ctx, mesh = _setup(model, call)
    import itertools

    jobs = [dict(zip(discrete, combo)) for combo in itertools.product(*(as_list(v) for v in discrete.values()))]
    if not isinstance(uncertainty, (bool, np.bool_)):
        raise ScenarioError(f"uncertainty must be True or False, got {shown(uncertainty)}")
    frames = _run(spec, [(d, mesh) for d in jobs], ctx, raise_errors=True, band=bool(uncertainty))
    if is_sweep:
        if not any(cols["fits"].any() for _, _, _, cols, _ in frames):  # nothing to tabulate: say why, as one point
            chip_obj, d = frames[0][:2]
            raise _no_room(spec, chip_obj, d)
        labels: dict = {}  # each chip's fit label, once
        return _concat([_frame(chip_obj, d, cols, g, efficiency, labels) for chip_obj, d, g, cols, _ in frames])
    chip_obj, d, g, cols, assumptions = frames[0]
    return _single(spec, chip_obj, d, cols, g, ctx["engine"], ctx["sp"], efficiency, assumptions, ctx["closed"],
                   ctx["layout"])


def _setup(model, call: dict):
    """serve()'s arguments checked: (spec, the context every deployment shares, the grid mesh)."""
    if (call["concurrency"] is None) == (call["qps"] is None):
        raise ScenarioError("give exactly one of concurrency (closed loop) or qps (open loop, Poisson arrivals)")
    closed = call["concurrency"] is not None
    host = checked_host_overheads({k: call[k] for k in HOST_OVERHEADS if call[k] is not None})
    engine = dict(gpu_memory_utilization=float(call["gpu_memory_utilization"]), scheduling=call["scheduling"], **host)
    Engine(**{k: v for k, v in engine.items() if k != "prompt_layer_overhead_s"})  # validates the knobs
    rounds = call["requests_per_client"]  # inf: the steady state alone
    engine["requests_per_client"] = np.inf if isinstance(rounds, (float, np.floating)) and rounds == np.inf else (
        check_range("requests_per_client", rounds, 1.0, 1e9, "(or inf)"))
    sp = Speculative.parse(call["speculative"])
    axes = {k: _numbers(k, call[k]) for k in _GRID if call[k] is not None}
    mesh = dict(zip(axes, (m.ravel() for m in np.meshgrid(*axes.values(), indexing="ij"))))
    _check_grid(mesh)
    spec = load_model(model)
    # serving layouts (graph/, sharding.py): data-parallel attention groups, MoE tp x ep, routing skew
    layout = {k: call[k] for k in ("attention_dp", "moe_tp", "moe_ep", "routing_skew", "moe_dispatch")}
    ctx = dict(dtypes=(call["weight_dtype"], call["act_dtype"], call["kv_dtype"]), efficiency=call["efficiency"],
               attention=call["attention"], engine=engine, sp=sp, workload=call["workload"], closed=closed,
               layout=layout)
    return spec, ctx, mesh


def _run(spec, jobs, ctx: dict, raise_errors: bool, only_fitting: bool = False, saturation_where=None,
         p90_where_saturation: bool = False, band: bool = False) -> list:
    """Every job (its discrete choices d: chip, tp, pp, ep, dp; its grid g) prepared, then solved together: one
    (chip, d, g, cols, assumptions) per job, or the RooflineError a job raised (raise_errors=False), or None for a
    job where nothing fits (only_fitting). saturation_where(chip, d, g, cols): the points of a job whose saturation
    rate is wanted (_solve; None: all), and its TTFT p90 where p90_where_saturation. band: cols also carry
    "uncertainty" (_band)."""
    preps, graphs = [], {}  # graphs: each step's graph, built once for every chip (estimate.graph_memo)
    models = {}  # each chip's efficiency model, resolved once for all its jobs
    for d, g in jobs:
        try:
            chip_obj = load_chip(d["chip"])
            if id(chip_obj) not in models:  # the chip held beside its model: its id stays its own
                models[id(chip_obj)] = (chip_obj, resolved_once(ctx["efficiency"], chip_obj))
            model = models[id(chip_obj)][1]
            d = {**d, **{k: check_count(k, d[k]) for k in _DEGREES}}
            g = _engine_knobs(g, chip_obj)
            assumptions: list[str] = []
            dtypes = resolve_dtypes(chip_obj, Dtypes(*ctx["dtypes"]), assumptions)
            assumptions += filter(None, [spec.w8a8_fallback_note(dtypes, chip_obj.name),
                                         stage_note(spec.n_layers, d["pp"])])
            prep = _prepare(spec, chip_obj, g, tp=d["tp"], pp=d["pp"], ep=d["ep"], dp=d["dp"], dtypes=dtypes,
                            efficiency=model, attention=ctx["attention"], engine=ctx["engine"], sp=ctx["sp"],
                            workload=ctx["workload"], closed=ctx["closed"], layout=ctx["layout"],
                            only_fitting=only_fitting, graphs=graphs)
        except RooflineError as e:
            if raise_errors:
                raise
            preps.append(e)
            continue
        preps.append(None if prep is None else (chip_obj, d, g, prep, assumptions))
    ok = [p for p in preps if p is not None and not isinstance(p, RooflineError)]
    # one solve per group of tables at the same decode-batch nodes (all of them, unless max_num_seqs differs)
    groups: dict[tuple, list] = {}
    for p in ok:
        groups.setdefault(tuple(p[3].tab.nodes), []).append(p)
    cols = {}
    for members in groups.values():
        where = None if saturation_where is None else (
            lambda i, c, members=members: saturation_where(members[i][0], members[i][1], members[i][2], c))
        for p, c in zip(members, _solve([m[3] for m in members], engine=ctx["engine"], sp=ctx["sp"],
                                        closed=ctx["closed"], saturation_where=where,
                                        p90_where_saturation=p90_where_saturation)):
            cols[id(p)] = c
            if band:
                c["uncertainty"] = _band(p[3], c, ctx)
    return [p if p is None or isinstance(p, RooflineError) else (p[0], p[1], p[2], cols[id(p)], p[4]) for p in preps]


# the numbers with a p10 / p90 (_band)
BANDED = ("ttft_s", "ttft_p90_s", "tpot_s", "e2e_s", "requests_per_s", "output_tokens_per_s")


def _band(prep: _Prepared, cols: dict, ctx: dict) -> dict | None:
    """p10 / p90 (arrays over the grid) of the headline numbers: every kernel of a step carrying prompt tokens and
    of a decode-only step at its fits' p10 (then p90) multiplier (estimate.step_band: the ops' family bands weighted
    by their share of a full prompt chunk's step and of a decode step, at the grid's medians of the prompt, the
    decode batch and its context; one pair per deployment, as lr.sweep's), solved through the same queue, so a load
    near saturation widens its TTFT band; throughput's p10 comes from the slow kernels. None where the efficiency is
    not a calibrated model."""
    wl = prep.wl
    budget, new, cached, kv, batch = (float(np.nanmedian(np.ravel(x))) for x in (
        prep.tab.point_budget_tokens, wl.mean(wl.new_prompt_tokens), wl.mean(wl.cached_tokens), wl.decode_kv_tokens,
        np.where(np.isfinite(cols["decode_batch"]), cols["decode_batch"], 1.0)))
    chunk = max(min(new, budget), 1.0)
    pre = step_band(decode_batch=0.0, decode_kv_len=0.0, chunk_tokens=chunk, chunk_kv_len=cached + chunk,
                    **prep.step_kw)
    dec = step_band(decode_batch=max(batch, 1.0), decode_kv_len=kv, **prep.step_kw)
    if pre is None or dec is None:
        return None
    lo, hi = (_solve([replace(prep, tab=prep.rescaled((pre[i], dec[i])))], engine=ctx["engine"], sp=ctx["sp"],
                     closed=ctx["closed"], saturation_where=lambda _, c: c["saturated"] & (not ctx["closed"]))[0]
              for i in (0, 1))  # its saturation rate where an open loop saturates (read at capacity: _at_capacity)
    serving = {k: serving_band_at(SERVING_BAND["prefill_utilization"], SERVING_BAND[k], cols["prefill_utilization"])
               for k in ("ttft_s", "tpot_s")}
    ttft, tpot = serving["ttft_s"], serving["tpot_s"]
    out = {k: widened_band(cols[k], lo[k], hi[k], b)
           for k, b in (("ttft_s", ttft), ("ttft_p90_s", ttft), ("tpot_s", tpot), ("e2e_s", tpot))}
    offered = np.inf if ctx["closed"] else prep.load * prep.dp  # an open loop serves at most its arrivals
    for k, per_request in (("requests_per_s", 1.0), ("output_tokens_per_s", wl.mean(wl.gen_tokens))):
        p10, p90 = widened_band(cols[k], hi[k], lo[k], (1.0 / tpot[1], 1.0 / tpot[0]))  # the slow kernels' p10;
        out[k] = (p10, np.minimum(p90, offered * per_request))  # e2e's serving band, inverted
    out["multipliers"] = {"prefill": [float(pre[0]), float(pre[1])], "decode": [float(dec[0]), float(dec[1])]}
    out["serving"] = serving  # per point (_band_at)
    return out


def _band_at(band: dict | None, i: int = 0) -> dict | None:
    """ServingEstimate.uncertainty: the band of grid point i as {name: {"p10", "p90"}} and "multipliers"."""
    if band is None:
        return None
    serving = {k: [float(band["serving"][k][0][i]), float(band["serving"][k][1][i])] for k in band["serving"]}
    return {**{k: {"p10": float(band[k][0][i]), "p90": float(band[k][1][i])} for k in BANDED},
            "multipliers": {**band["multipliers"], "serving": serving}}


def _band_columns(band: dict | None) -> dict:
    """A sweep's band columns, <name>_p10 / <name>_p90 of the BANDED numbers; none without a band (a sweep of several
    deployments has NaN there: pandas.concat)."""
    return {} if band is None else {f"{k}_{q}": band[k][j] for k in BANDED for j, q in enumerate(("p10", "p90"))}


def serve_deployments(model, deployments: list[dict], only_fitting: bool = False, as_columns: bool = False,
                      saturation_where=None, p90_where_saturation: bool = False, **kw) -> list:
    """serve() sweeps of several deployments solved together (one queueing pass over all their points, which is
    what makes the planner fast). deployments: dicts of chip, tp, pp, ep, dp and any grid argument of serve()
    overriding `kw` (e.g. its own list of qps); kw: serve()'s other arguments. Returns per deployment its
    DataFrame (as serve() returns for lists; as_columns: the dict of its columns instead), or the RooflineError
    it raised, or None (only_fitting) when no point of it has room for one sequence (found by the memory model
    alone: its steps are not evaluated). saturation_where(columns): the points of a deployment (a bool mask, read
    from its grid and metric columns, saturation_requests_per_s aside, and its chip name, tp, pp, ep, dp: one value
    each) whose saturation rate is computed, the others' left NaN (a caller reading a few rows: the planner); None:
    every point's. p90_where_saturation: the TTFT p90 (ttft_p90_s) too, for a caller whose saturation_where does not
    read it. No uncertainty band (serve(uncertainty=False)'s columns): a planner ranks nominal numbers."""
    base = dict(chip=None, tp=1, pp=1, ep=1, dp=1)
    if not isinstance(deployments, (list, tuple)) or not all(isinstance(d, dict) for d in deployments):
        raise ScenarioError(f"deployments must be a list of dicts (chip, tp, pp, ep, dp, grid arguments), got "
                            f"{shown(deployments)}")
    defaults = _serve_defaults()
    if set(kw) - set(defaults):
        raise ScenarioError(f"serve_deployments got unknown arguments {sorted(set(kw) - set(defaults))}; it takes "
                            "serve()'s (besides chip, tp, pp, ep, dp, which each deployment gives)")
    jobs, spec, ctx, out = [], None, None, []
    for dep in deployments:
        if set(dep) - set(base) - set(_GRID):
            raise ScenarioError(f"a deployment takes {', '.join(base)} and grid arguments, got {sorted(dep)}")
        listed = [k for k in base if isinstance(dep.get(k), (list, tuple, np.ndarray))]
        if listed:  # serve() sweeps lists of them; a deployment is one of each
            raise ScenarioError(f"a deployment's {', '.join(listed)} must be one value each (one deployment per "
                                f"chip and sharding), got {', '.join(f'{k}={shown(dep[k])}' for k in listed)}")
        call = {**defaults, **kw, **{k: v for k, v in dep.items() if k not in base}}
        try:
            spec, dep_ctx, mesh = _setup(model, call)
        except RooflineError as e:
            out.append(e)
            continue
        if ctx is not None and dep_ctx["closed"] != ctx["closed"]:  # one queueing pass: one kind of loop
            raise ScenarioError("the deployments mix closed-loop (concurrency) and open-loop (qps) sweeps; solve "
                                "them in separate calls")
        ctx = dep_ctx
        jobs.append(({**base, **{k: v for k, v in dep.items() if k in base}}, mesh))
        out.append(None)
    eff = kw.get("efficiency", DEFAULT_EFFICIENCY)
    if not isinstance(p90_where_saturation, (bool, np.bool_)):
        raise ScenarioError(f"p90_where_saturation must be True or False, got {shown(p90_where_saturation)}")
    if saturation_where is not None and not callable(saturation_where):
        raise ScenarioError("saturation_where must be a function of a deployment's columns, got "
                            f"{shown(saturation_where)}")
    where = None if saturation_where is None else (
        lambda chip, d, g, cols: saturation_where({**g, **cols, "chip": chip.name, **{k: d[k] for k in _DEGREES}}))
    solved = iter(_run(spec, jobs, ctx, raise_errors=False, only_fitting=only_fitting, saturation_where=where,
                       p90_where_saturation=p90_where_saturation)
                  if jobs else [])
    labels: dict = {}  # each chip's fit label, once
    for i, r in enumerate(out):
        if r is None:
            r = next(solved)
            out[i] = r if r is None or isinstance(r, RooflineError) else (_columns if as_columns else _frame)(
                r[0], r[1], r[3], r[2], eff, labels)
    return out


def _serve_defaults() -> dict:
    import inspect

    return {k: p.default for k, p in inspect.signature(serve).parameters.items()
            if k not in ("model", "chip", "tp", "pp", "ep", "dp")}


def checked_host_overheads(given: dict) -> dict:
    """Every host-time argument (HOST_OVERHEADS' keys; those not in `given`: the fitted vLLM ones), each a number of
    seconds in [0, BOUNDS['host_overhead_s']]; a ScenarioError for anything else."""
    if not isinstance(given, dict) or set(given) - set(HOST_OVERHEADS):
        raise ScenarioError(f"host_overheads must be a dict with keys among {sorted(HOST_OVERHEADS)}, "
                            f"got {shown(given)}")
    top = BOUNDS["host_overhead_s"].max_value
    return {k: check_range(k, given.get(k, fit), 0.0, top, "s") for k, fit in HOST_OVERHEADS.items()}


def _numbers(name: str, value) -> np.ndarray:
    """A grid argument as a 1-d float64 array; a ScenarioError (not a numpy ValueError) for non-numbers."""
    try:
        return np.atleast_1d(np.asarray(value, dtype=np.float64)).ravel()
    except (TypeError, ValueError, OverflowError):
        raise ScenarioError(f"{name} must be a number or a list of numbers, got {shown(value)}") from None


def _frame(chip_obj, d: dict, cols: dict, mesh: dict, efficiency, labels: dict | None = None):
    """One deployment's sweep rows: its discrete choices, the grid and every metric."""
    import pandas as pd

    return pd.DataFrame(_columns(chip_obj, d, cols, mesh, efficiency, labels))


def _columns(chip_obj, d: dict, cols: dict, mesh: dict, efficiency, labels: dict | None = None) -> dict:
    """The columns of _frame: a list of chip names, the efficiency mode and fit (one string each), arrays. labels: a
    dict kept over one call's deployments (each chip's fit label made once)."""
    n = next(iter(mesh.values())).size
    fit = remembered(labels, id(chip_obj), lambda: efficiency_label(resolve_efficiency(efficiency, chip_obj)))
    return {"chip": [chip_obj.name] * n, "efficiency": efficiency_mode(efficiency), "fit": fit,
            **{k: np.full(n, v) for k, v in d.items() if k != "chip"}, **mesh,
            **{k: v for k, v in cols.items() if k != "uncertainty"}, **_band_columns(cols.get("uncertainty")),
            "tokens_per_s_per_user": 1.0 / cols["tpot_s"]}


def _concat(frames):
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def _single(spec, chip, d, cols, mesh, engine, sp, efficiency, assumptions, closed, layout) -> ServingEstimate:
    v = {k: (a[0] if np.ndim(a) else a) for k, a in cols.items()}
    if not v["fits"]:
        raise _no_room(spec, chip, d)
    if v["saturated"] and not closed:  # a closed loop limits itself: more clients only wait longer
        raise ScenarioError(f"qps {mesh['qps'][0]:g} is above the saturation throughput of this deployment, "
                            f"~{v['saturation_requests_per_s']:.3g} requests/s (running batch capped at "
                            f"{v['max_running']:.0f} by {v['limit']})")
    if not v["converged"]:
        assumptions.append("warning: the closed-loop fixed point did not settle (C != throughput x e2e by more than "
                           "0.1 %): a prompt-bound load (almost no decode steps); treat these numbers as rough.")
    scenario = {k: float(a[0]) for k, a in mesh.items()}
    scenario.update({k: d[k] for k in _DEGREES}, **layout, load="closed loop" if closed else "open loop (Poisson)",
                    speculative=dict(k=sp.k, acceptance=sp.acceptance, tokens_per_step=sp.tokens_per_step,
                                     draft=None if sp.draft is None else str(getattr(sp.draft, "name", sp.draft))),
                    **engine)
    eff = resolve_efficiency(efficiency, chip)
    label = efficiency_label(eff if eff is not None else efficiency)
    fields = {k: float(v[k]) for k in ("ttft_s", "ttft_p90_s", "tpot_s", "e2e_s", "requests_per_s", "output_tokens_per_s",
                                        "running_batch", "kv_cache_utilization", "decode_batch", "prefill_utilization",
                                        "queue_s", "max_running", "saturation_requests_per_s")}
    return ServingEstimate(model=spec.name, chip=chip.name, scenario=scenario, efficiency=label, limit=str(v["limit"]),
                           assumptions=list(spec.assumptions) + assumptions, efficiency_mode=efficiency_mode(efficiency),
                           uncertainty=_band_at(cols.get("uncertainty")), **fields)
