"""The static-batch planner: search chip type x (tp, pp, ep) x batch (x replicas for the load), score every
configuration with one vectorized `evaluate()` per sharding, keep those that meet the constraints, rank them.
The rules are in the package docstring (llm_roofline.plan)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..bounds import check_range
from ..chip_fits import DEFAULT_EFFICIENCY, resolved_once
from ..errors import RooflineError, ScenarioError, shown
from ..memory import GPU_MEMORY_UTILIZATION
from ..units import joined_columns, json_ready, records
from ..hardware import Price, chip_prices
from .candidates import ShardingChoice, sharding_candidates

CONSTRAINTS = ("memory", "ttft", "tpot", "chips")
# batch multipliers of the grid (x pp): ~x1.5 steps, so a cost-optimal batch is found within ~25%
BATCH_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048,
               3072, 4096, 6144, 8192)
ATTRIBUTION = ("input tokens pay for the chip-time of prefill (TTFT x chips per batch), output tokens for the "
               "chip-time of the decode steps; idle capacity is shared in the same proportion")
JSON_KEYS = ("chip", "tp", "pp", "ep", "batch", "replicas", "chips_total", "ttft_s", "tpot_s", "e2e_s",
             "output_tokens_per_s", "delivered_output_tokens_per_s", "concurrent_sequences", "per_chip_bytes",
             "usable_bytes", "usd_per_hour", "usd_per_million_output_tokens", "usd_per_million_input_tokens",
             "usd_per_million_output_tokens_decode", "binding_constraint", "note")
SCENARIO_KEYS = ("weight_dtype", "act_dtype", "kv_dtype", "attention", "sequence_parallel")


# ------------------------------------------------------------------------------------------- result
@dataclass
class Plan:
    """The planner's answer. configs: feasible configurations, best first (pandas.DataFrame); best: the first
    of them as a dict (None when nothing is feasible); best_per_chip: the best row of each chip type;
    frontier: Pareto-optimal configurations of cost (USD per 1M output tokens, or chips when a price is
    missing) against TPOT; candidates: every configuration scored, feasible or not, with the constraint
    flags; explanation: what was chosen and why, or why nothing fits, with numbers."""

    model: str
    targets: dict[str, Any]
    configs: Any
    best: dict[str, Any] | None
    best_per_chip: Any
    frontier: Any
    frontier_by: str
    candidates: Any
    explanation: str
    prices: dict[str, Price]
    notes: list[str] = field(default_factory=list)
    rank_by: str = "cost"
    disaggregation: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return json_ready(dict(model=self.model, targets=self.targets, rank_by=self.rank_by, best=self.best,
                               configs=records(self.configs), best_per_chip=records(self.best_per_chip),
                               frontier=records(self.frontier), frontier_by=self.frontier_by,
                               explanation=self.explanation, notes=list(self.notes), attribution=ATTRIBUTION,
                               prices={k: dict(usd_per_hour=v.usd_per_hour, source=v.source)
                                       for k, v in self.prices.items()},
                               disaggregation={k: v.to_dict() for k, v in self.disaggregation.items()}))


@dataclass(frozen=True)
class Limits:
    """What every configuration is scored against: scenario sizes, latency targets, the load (requests/s,
    None: one replica), chip and batch limits, the HBM reserve, efficiency and the dtypes/attention keywords."""

    prompt_len: int
    gen_len: int
    ttft_s: float | None
    tpot_s: float | None
    qps: float | None
    max_chips: int
    max_batch: int
    reserve: float
    efficiency: Any
    scenario: dict[str, Any]


@dataclass
class ChipSearchLog:
    """What the search saw on one chip, for the explanation: shardings tried, why some failed, and the
    memory rows (memory.max_batch, one per sharding)."""

    shardings: int = 0
    errors: list[str] = field(default_factory=list)
    memory_rows: list = field(default_factory=list)


# ------------------------------------------------------------------------------------------- inputs
def _check_inputs(prompt_len, gen_len, max_chips, max_batch, ttft_s, tpot_s, qps, output_tokens_per_s, reserve,
                  rank_by) -> None:
    for name, v in (("prompt_len", prompt_len), ("gen_len", gen_len), ("max_chips", max_chips),
                    ("max_batch", max_batch)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ScenarioError(f"{name} must be a positive integer, got {shown(v)}")
    for name, v in (("ttft_s", ttft_s), ("tpot_s", tpot_s), ("qps", qps), ("output_tokens_per_s", output_tokens_per_s)):
        if v is not None and not (math.isfinite(float(v)) and float(v) > 0):
            raise ScenarioError(f"{name} must be a positive number, got {shown(v)}")
    if qps is not None and output_tokens_per_s is not None:
        raise ScenarioError("give qps or output_tokens_per_s, not both")
    if tpot_s is not None and gen_len < 2:
        raise ScenarioError("a TPOT target needs gen_len >= 2 (the first token comes from prefill)")
    if not 0.0 <= float(reserve) < 1.0:
        raise ScenarioError(f"reserve must be a fraction in [0, 1), got {shown(reserve)}")
    if rank_by not in (None, "cost", "chips"):
        raise ScenarioError(f"rank_by must be 'cost' or 'chips', got {rank_by!r}")


def _notes(limits: Limits, price_of: dict[str, Price]) -> list[str]:
    notes = [f"memory: a configuration fits when its per-chip bytes (weights + KV at prompt+gen = "
             f"{limits.prompt_len + limits.gen_len} tokens + peak prefill activations) <= memory x "
             f"gpu_memory_utilization {1 - limits.reserve:g} (reserve = {limits.reserve:.0%} kept free; memory: the "
             f"total the driver reports where the chip file sources it, else the datasheet HBM)."]
    for name, p in price_of.items():
        if p.usd_per_hour is None:
            notes.append(f"{name}: no price per chip-hour — its cost columns are '—' ({p.source}).")
    notes.append(f"cost attribution: {ATTRIBUTION}; usd_per_million_output_tokens is all-in (every chip-second / "
                 "output tokens) and is what configurations are ranked by.")
    return notes


# ------------------------------------------------------------------------------------------- search
def _batch_array(pp: int, max_batch_memory: int, max_batch: int) -> np.ndarray:
    """The batch grid of one sharding: multiples of pp up to the memory limit (which joins it), and the two
    next sizes beyond it so that the binding constraint of the largest fitting batch is seen."""
    steps = [pp * m for m in BATCH_STEPS]
    fit_part = ({b for b in steps if b <= min(max_batch_memory, max_batch)}
                | ({max_batch_memory} if max_batch_memory <= max_batch else set()))
    beyond = [b for b in sorted(set(steps) | {max_batch_memory + pp}) if max_batch_memory < b <= max_batch][:2]
    return np.array(sorted(fit_part | set(beyond)), dtype=np.float64)


def _memory_row(spec, chip, choice: ShardingChoice, limits: Limits, graphs: dict):
    """memory.max_batch_row of one (chip, sharding), or the RooflineError it raised."""
    from ..memory import max_batch_row

    try:
        return max_batch_row(spec, chip, limits.prompt_len + limits.gen_len, gen_len=limits.gen_len,
                             gpu_memory_utilization=1.0 - limits.reserve, graphs=graphs, tp=choice.tp, pp=choice.pp,
                             ep=choice.ep, **limits.scenario)
    except RooflineError as err:
        return err


def _fitting_batches(choice: ShardingChoice, mem, limits: Limits) -> np.ndarray | None:
    """The batch grid of a sharding whose memory row fits one sequence per micro-batch, else None."""
    if isinstance(mem, RooflineError) or mem["error"] or int(mem["max_batch"]) < choice.pp:
        return None
    return _batch_array(choice.pp, int(mem["max_batch"]), limits.max_batch)


def _score_sharding(chip, choice: ShardingChoice, limits: Limits, price: Price, log: ChipSearchLog, mem,
                    scored: dict):
    """The rows of one (chip, sharding) over its batch grid, or None (logged) when it fails or nothing fits. mem: its
    memory row (or error); scored: {sharding: (the union of its chips' batch grids, {chip name: its Headline there or
    the error})} (_score_all); the chip's own batches are picked."""
    if isinstance(mem, RooflineError) or mem["error"]:
        log.errors.append(f"{choice}: {mem if isinstance(mem, RooflineError) else mem['error']}")
        return None
    log.memory_rows.append(mem)
    batches = _fitting_batches(choice, mem, limits)
    if batches is None:  # not even one sequence per micro-batch fits: the explanation uses `mem`
        return None
    batch_grid, heads = scored[choice]
    r = heads[chip.name]
    if isinstance(r, RooflineError):
        log.errors.append(f"{choice}: {r}")
        return None
    at = np.searchsorted(batch_grid, batches)
    return _rows(r.ttft_s[at], r.tpot_s[at], r.e2e_s[at], r.memory.bytes_per_chip[at], chip, choice, batches, limits,
                 price)


def _score_all(spec, searched: list, limits: Limits, graphs: dict) -> dict:
    """Every sharding evaluated on the chips where it fits: those of one tp in one evaluate_pipelines call, at the
    union of their micro-batches (one pipeline stage per ep built once for every pp, the chips scored together, an
    op that several eps' stages share scored once): {sharding: (grid, {chip: Headline or RooflineError})}."""
    from ..headlines import evaluate_pipelines

    stages: dict = {}  # tp -> {(ep, pp): chips}
    micro: dict = {}  # tp -> its shardings' micro-batches
    models = {chip.name: resolved_once(limits.efficiency, chip) for chip, _, _, _ in searched}  # once per chip
    for chip, choices, _, mems in searched:
        for c, mem in zip(choices, mems):
            batches = _fitting_batches(c, mem, limits)
            if batches is not None:
                stages.setdefault(c.tp, {}).setdefault((c.ep, c.pp), []).append(chip)
                micro[c.tp] = np.union1d(micro.get(c.tp, ()), batches / c.pp)
    out = {}
    for tp, shardings in stages.items():
        chips = list({chip.name: chip for members in shardings.values() for chip in members}.values())
        heads = evaluate_pipelines(spec, chips, efficiencies=[models[chip.name] for chip in chips],
                                   batches=[micro[tp] * pp for _, pp in shardings], pps=[pp for _, pp in shardings],
                                   eps=[ep for ep, _ in shardings], prompt_len=limits.prompt_len,
                                   gen_len=limits.gen_len, graphs=graphs, tp=tp, **limits.scenario)
        for (ep, pp), row in zip(shardings, heads):
            out[ShardingChoice(tp, pp, ep)] = (micro[tp] * pp, {chip.name: h for chip, h in zip(chips, row)})
    return out


def _search(spec, chip_list, limits: Limits, price_of: dict, tp, pp, ep) -> tuple[list, dict]:
    """Every sharding the model allows on each chip (restricted to tp / pp / ep when given), scored: (the rows,
    chip by chip, {chip: ChipSearchLog}). The memory rows of every chip come first: each sharding is then evaluated on
    its chips together (_score_all; graphs: also the memory probes' prefill graphs, memory.memory_footprint)."""
    graphs = {}
    searched = []
    for chip in chip_list:
        choices, skipped = sharding_candidates(spec, chip, limits.max_chips, tp, pp, ep)
        mems = [_memory_row(spec, chip, c, limits, graphs) for c in choices]
        searched.append((chip, choices, ChipSearchLog(shardings=len(choices), errors=list(skipped)), mems))
    scored = _score_all(spec, searched, limits, graphs)
    frames, logs = [], {}
    for chip, choices, log, mems in searched:
        frames += [f for c, mem in zip(choices, mems)
                   for f in [_score_sharding(chip, c, limits, price_of[chip.name], log, mem, scored)] if f is not None]
        logs[chip.name] = log
    return frames, logs


def _replicas(concurrent, batch):
    """ceil(concurrent / batch), robust to float noise at exact multiples, at least 1."""
    x = np.asarray(concurrent, dtype=np.float64) / batch
    return np.maximum(np.ceil(x * (1 - 1e-12)), 1.0)


def _cost_columns(price: Price, chips_total, ttft, e2e, delivered_rps, delivered_out, prompt_len, n) -> dict:
    """USD per hour and per 1M tokens (all-in, input, output-decode; see ATTRIBUTION); NaN without a price."""
    if price.usd_per_hour is None:
        nan = np.full(n, np.nan)
        return dict(usd_per_hour=nan, usd_per_million_output_tokens=nan, usd_per_million_input_tokens=nan,
                    usd_per_million_output_tokens_decode=nan)
    usd_per_s = price.usd_per_hour * chips_total / 3600.0
    prefill_share = ttft / e2e
    return dict(usd_per_hour=price.usd_per_hour * chips_total,
                usd_per_million_output_tokens=usd_per_s / delivered_out * 1e6,
                usd_per_million_input_tokens=usd_per_s * prefill_share / (delivered_rps * prompt_len) * 1e6,
                usd_per_million_output_tokens_decode=usd_per_s * (1 - prefill_share) / delivered_out * 1e6)


def _scaleout_note(chip, tp: int) -> str:
    if tp <= chip.scaleup.domain_size:
        return ""
    d = chip.scaleup.domain_size
    return (f"tp={tp} spans {tp // d} scale-up domains of {d}: collectives over "
            f"{chip.scaleout.kind if chip.scaleout else 'scale-out'}")


def _rows(ttft, tpot, e2e, per_chip, chip, choice: ShardingChoice, batches, limits: Limits, price: Price):
    """The rows of one (chip, tp, pp, ep), one per batch (ttft, tpot, e2e and per-chip bytes: arrays over
    `batches`): metrics, constraint flags, replicas, cost (a dict of columns; _candidates joins every sharding's
    into one DataFrame)."""
    n = batches.shape[0]
    usable_bytes = chip.engine_capacity_bytes * (1.0 - float(limits.reserve))
    fits = per_chip <= usable_bytes
    meets_ttft = ttft <= limits.ttft_s if limits.ttft_s is not None else np.ones(n, bool)
    meets_tpot = tpot <= limits.tpot_s if limits.tpot_s is not None else np.ones(n, bool)
    capacity_rps = batches / e2e  # requests/s of one replica (static batch: batch sequences per e2e)
    if limits.qps is not None:
        concurrent = limits.qps * e2e  # Little's law
        replicas = _replicas(concurrent, batches)
        delivered_rps = np.full(n, limits.qps)
    else:
        concurrent = batches.copy()
        replicas = np.ones(n)
        delivered_rps = capacity_rps
    chips_total = choice.chips * replicas
    meets_chips = chips_total <= limits.max_chips
    delivered_out = delivered_rps * limits.gen_len
    feasible = fits & meets_ttft & meets_tpot & meets_chips & (batches <= limits.max_batch)
    return dict(
        chip=chip.name, tp=choice.tp, pp=choice.pp, ep=choice.ep, batch=batches.astype(int),
        replicas=replicas.astype(int), chips_total=chips_total.astype(int), ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
        output_tokens_per_s=replicas * capacity_rps * limits.gen_len, delivered_output_tokens_per_s=delivered_out,
        concurrent_sequences=concurrent, per_chip_bytes=per_chip, usable_bytes=usable_bytes,
        **_cost_columns(price, chips_total, ttft, e2e, delivered_rps, delivered_out, limits.prompt_len, n),
        binding_constraint="", note=_scaleout_note(chip, choice.tp), fits=fits, meets_ttft=meets_ttft,
        meets_tpot=meets_tpot, meets_chips=meets_chips, feasible=feasible, reserve=float(limits.reserve))


def _candidates(parts: list[dict]):
    """One DataFrame of every sharding's rows (each part's shared values repeated over its rows)."""
    import pandas as pd

    if not parts:
        return pd.DataFrame(columns=list(JSON_KEYS) + ["feasible"])
    return pd.DataFrame(joined_columns(parts, [len(p["batch"]) for p in parts]))


# ------------------------------------------------------------------------------------------- ranking
def _rank(df, rank_by: str):
    cost = df["usd_per_million_output_tokens"].fillna(np.inf)
    tie = df["tpot_s"].fillna(0.0)
    chips = df["chips_total"]
    keys = (cost, chips, tie, df["ttft_s"]) if rank_by == "cost" else (chips, cost, tie, df["ttft_s"])
    order = np.lexsort(tuple(np.asarray(k, dtype=np.float64) for k in reversed(keys)))
    return df.iloc[order].reset_index(drop=True)


def _binding(df) -> list[str]:
    """Per row: the first constraint the next larger batch (same chip and sharding) fails; 'max_batch' when
    the grid ends; 'none' when that batch is feasible too."""
    import pandas as pd

    n = len(df)
    keys = [pd.factorize(df["chip"])[0]] + [df[k].to_numpy() for k in ("tp", "pp", "ep")]
    order = np.lexsort([df["batch"].to_numpy()] + keys[::-1])  # by sharding, then batch
    same = np.ones(n - 1, bool) if n else np.ones(0, bool)
    for k in keys:
        same &= k[order[1:]] == k[order[:-1]]
    nxt = np.full(n, -1)
    nxt[order[:-1][same]] = order[1:][same]
    ok = np.stack([df[f].to_numpy(bool) for f in ("fits", "meets_ttft", "meets_tpot", "meets_chips")], axis=1)
    first_failure = np.where(ok.all(axis=1), "none", np.array(CONSTRAINTS)[np.argmax(~ok, axis=1)])
    return [str(x) for x in np.where(nxt >= 0, first_failure[nxt], "max_batch")]


def _pareto(df, by: str):
    """Configurations not dominated in (tpot_s, by): sorted by TPOT (TTFT where there is none), then by `by`, each
    cheaper than every faster one (a missing `by` counts as infinite)."""
    if len(df) == 0:
        return df
    cost = df[by].to_numpy(dtype=np.float64)
    cost = np.where(np.isnan(cost), np.inf, cost)
    tpot = df["tpot_s"].to_numpy(dtype=np.float64)
    tpot = np.where(np.isnan(tpot), df["ttft_s"].to_numpy(dtype=np.float64), tpot)
    order = np.lexsort((cost, tpot))  # stable: ties keep the ranking's order
    ranked = cost[order]
    cheapest_before = np.minimum.accumulate(np.concatenate(([np.inf], ranked[:-1])))
    return df.iloc[order[ranked < cheapest_before]].reset_index(drop=True)


def _targets(limits: Limits, chip_list) -> dict[str, Any]:
    eff = limits.efficiency
    return dict(prompt_len=limits.prompt_len, gen_len=limits.gen_len, ttft_s=limits.ttft_s, tpot_s=limits.tpot_s,
                qps=limits.qps, output_tokens_per_s=limits.qps * limits.gen_len if limits.qps is not None else None,
                max_chips=limits.max_chips, reserve=float(limits.reserve),
                weight_dtype=limits.scenario["weight_dtype"], kv_dtype=limits.scenario["kv_dtype"],
                act_dtype=limits.scenario["act_dtype"],
                efficiency=eff if isinstance(eff, str) else getattr(eff, "label", "custom"),
                chips=[c.name for c in chip_list])


def _disaggregate_each(spec, chip_list, best_per_chip, limits: Limits, decode_batch, prefill_batch, notes) -> dict:
    """disaggregation() per chip at its best plan's batch (or decode_batch); failures become notes."""
    from .disaggregate import disaggregation

    out = {}
    for chip in chip_list:
        row = best_per_chip[best_per_chip["chip"] == chip.name] if len(best_per_chip) else best_per_chip
        b = decode_batch or (int(row.iloc[0]["batch"]) if len(row) else None)
        if b is None:
            continue
        try:
            out[chip.name] = disaggregation(spec, chip, limits.prompt_len, limits.gen_len, decode_batch=b,
                                            prefill_batch=prefill_batch, max_chips=limits.max_chips,
                                            gpu_memory_utilization=1.0 - limits.reserve, efficiency=limits.efficiency,
                                            ttft_s=limits.ttft_s,
                                            tpot_s=limits.tpot_s, qps=limits.qps, **limits.scenario)
        except RooflineError as err:
            notes.append(f"disaggregation on {chip.name}: {err}")
    return out


# ------------------------------------------------------------------------------------------- planner
def plan(model, chips, prompt_len: int, gen_len: int, ttft_s: float | None = None, tpot_s: float | None = None,
         qps: float | None = None, output_tokens_per_s: float | None = None, max_chips: int = 64,
         prices: dict | None = None, weight_dtype=None, kv_dtype=None, act_dtype: str = "bf16",
         gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION, efficiency=DEFAULT_EFFICIENCY,
         attention: str = "fused", sequence_parallel: bool = False,
         tp=None, pp=None, ep=None, max_batch: int = 4096, rank_by: str | None = None, disaggregate: bool = False,
         decode_batch: int | None = None, prefill_batch: int | None = None) -> Plan:
    """Search chip type x tp x pp x ep x batch (x data-parallel replicas for the load) for configurations that
    fit memory and meet the targets; rank them. See the package docstring for every rule. Never raises for an
    infeasible target: the Plan then has no configs and its explanation says why, with numbers.

    chips: names, aliases, paths or Chip objects. ttft_s / tpot_s: latency targets (None: any). qps or
    output_tokens_per_s: the load (None: one replica). max_chips: limit on tp x pp x replicas. prices:
    {chip: USD per chip-hour} overriding the chip files. gpu_memory_utilization: the share of memory the engine may
    fill (memory.GPU_MEMORY_UTILIZATION; the rest is kept free). efficiency: 'calibrated' (default) | 'ideal'. tp / pp / ep:
    lists restricting the candidates (None: every divisor the model allows). max_batch: largest batch searched.
    rank_by: 'cost' | 'chips' (default: cost when every chip has a price). disaggregate: also run
    `disaggregation` per chip at the best plan's batch (or decode_batch)."""
    from ..hardware import load_chips
    from ..memory import weight_bytes
    from ..model.hf import load_model
    from .explain import explain

    spec = load_model(model)
    chip_list = load_chips(chips)
    reserve = 1.0 - check_range("gpu_memory_utilization", gpu_memory_utilization, 0.0, 1.0, lo_open=True)
    _check_inputs(prompt_len, gen_len, max_chips, max_batch, ttft_s, tpot_s, qps, output_tokens_per_s, reserve,
                  rank_by)
    gen_len = int(gen_len)
    demand_qps = float(qps) if qps is not None else (float(output_tokens_per_s) / gen_len
                                                      if output_tokens_per_s is not None else None)
    limits = Limits(int(prompt_len), gen_len, ttft_s, tpot_s, demand_qps, int(max_chips), int(max_batch), reserve,
                    efficiency, dict(weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype,
                                     attention=attention, sequence_parallel=sequence_parallel))
    price_of = chip_prices(chip_list, prices)
    rank_by = rank_by or ("cost" if all(p.usd_per_hour is not None for p in price_of.values()) else "chips")
    notes = _notes(limits, price_of)
    frames, logs = _search(spec, chip_list, limits, price_of, tp, pp, ep)
    cand = _candidates(frames)
    if len(cand):
        cand = _rank(cand, rank_by)
        cand["binding_constraint"] = _binding(cand)
    feasible = cand[cand["feasible"]].reset_index(drop=True) if len(cand) else cand
    best_per_chip = feasible.groupby("chip", sort=False).head(1).reset_index(drop=True) if len(feasible) else feasible
    frontier_by = "usd_per_million_output_tokens" if rank_by == "cost" else "chips_total"
    targets = _targets(limits, chip_list)
    best = json_ready({**feasible.iloc[0].to_dict(), "uncertainty": _band(spec, chip_list, feasible.iloc[0], limits)}
                      ) if len(feasible) else None
    explanation = explain(spec, chip_list, targets, cand, feasible, best_per_chip, logs,
                          weight_bytes(spec, weight_dtype), rank_by, best and best["uncertainty"])
    disagg = (_disaggregate_each(spec, chip_list, best_per_chip, limits, decode_batch, prefill_batch, notes)
              if disaggregate else {})
    return Plan(model=spec.name, targets=targets, configs=feasible,
                best=best, best_per_chip=best_per_chip,
                frontier=_pareto(feasible, frontier_by), frontier_by=frontier_by, candidates=cand,
                explanation=explanation, prices=price_of, notes=notes, rank_by=rank_by, disaggregation=disagg)


def _band(spec, chips, row, limits: Limits) -> dict | None:
    """The winner's p10-p90 TTFT and TPOT (estimate's uncertainty: its kernels' held-out error; None when ideal)."""
    from ..estimate import estimate

    chip = next(c for c in chips if c.name == row["chip"])
    est = estimate(spec, chip, batch=int(row["batch"]), prompt_len=limits.prompt_len, gen_len=limits.gen_len,
                   tp=int(row["tp"]), pp=int(row["pp"]), ep=int(row["ep"]), efficiency=limits.efficiency,
                   gpu_memory_utilization=1.0 - limits.reserve, **limits.scenario)
    return est.uncertainty and {k: est.uncertainty[k] for k in ("ttft_s", "tpot_s")}
