"""Capacity planning: the cheapest configuration (chip type x tp x pp x ep x batch x replicas) that meets
latency and load targets, and prefill/decode disaggregation.

Search. For every chip and every sharding (tp, pp, ep) the model allows within max_chips, one vectorized
`evaluate()` call scores a whole array of batch sizes (no Python loop over batches); a cheaper one before it
(`memory.max_batch`, batch = pp) gives the exact largest batch that fits, which joins the array. A
configuration is kept when

  memory   per-chip bytes (weights + KV cache of the batch at prompt + gen tokens + peak prefill activations,
           the estimate's own memory model) <= hbm_bytes x (1 - reserve);
  ttft     TTFT <= ttft_s;            tpot   mean TPOT <= tpot_s;
  chips    tp x pp x replicas <= max_chips.

Load. Without a load target one replica is planned. With qps (requests/s) or output_tokens_per_s
(= qps x gen_len), a replica serves `batch` sequences per e2e latency (static batch, the estimate's
semantics), so by Little's law concurrent sequences = qps x e2e and replicas = ceil(concurrent / batch).

Cost. A chip-hour costs the chip file's [price] usd_per_hour (or an override); a chip without a price gets
no cost (None / '—') and a note, never 0. usd_per_million_output_tokens is all-in: every chip-second of the
deployment (idle replicas' share included) divided by the output tokens delivered. The split between input
and output tokens follows the phases (ATTRIBUTION): the chip-time of prefill (TTFT x chips, the share
TTFT / e2e of the deployment's time) is charged to input tokens, the chip-time of the decode steps to output
tokens, so usd_per_million_input_tokens x prompt + usd_per_million_output_tokens_decode x gen = all-in x gen.

Ranking: by usd_per_million_output_tokens (then chips, then TPOT) when every chip has a price, else by
chips_total (then cost, then TPOT); `rank_by` overrides. binding_constraint of a row: what stops the same
chip and sharding from taking the next larger batch of the grid (batch is the knob that lowers cost per
token): the first constraint that larger batch fails (memory, ttft, tpot, chips), 'max_batch' at the grid's
end, 'none' when it is feasible (the cost optimum is interior, e.g. limited by the load).

Topologies. A TPU replica must be a slice: a power of two chips (book Part 8, `min_topology =
2 ** ceil(log2(bytes / 16e9))`: LLaMA-3 70B int8 needs 4.38 v5e chips -> a 4x2 = 8-chip slice). GPUs take any
tp x pp. tp beyond the scale-up domain is allowed; its collectives are priced on the scale-out link.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import RooflineError, ScenarioError
from .units import json_ready, records

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


# ------------------------------------------------------------------------------------------- prices
@dataclass(frozen=True)
class Price:
    usd_per_hour: float | None
    source: str


def chip_prices(chips, overrides: dict | None = None) -> dict[str, Price]:
    """Price per chip-hour of each chip: the chip file's [price] (source and date), or an override."""
    from .hardware import load_chip

    over = {}
    for key, usd in (overrides or {}).items():
        usd = float(usd)
        if not math.isfinite(usd) or usd <= 0:
            raise ScenarioError(f"price for {key} must be a positive number of USD per chip-hour, got {usd!r}")
        over[load_chip(key).name] = usd
    out = {}
    for c in chips:
        c = load_chip(c)
        if c.name in over:
            out[c.name] = Price(over[c.name], "user override")
        elif c.price_usd_per_hour is not None:
            out[c.name] = Price(float(c.price_usd_per_hour), c.price_source or "chip file (no source given)")
        else:
            out[c.name] = Price(None, "no price in the chip file; pass prices={'%s': USD} (--price)" % c.name)
    return out


# ------------------------------------------------------------------------------------------- shardings
def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def replica_shape_ok(chip, chips: int) -> bool:
    """Whether `chips` chips can form one replica on this chip's topology. TPU (torus): a slice of a power of
    two chips (book Part 8 min_topology; GCP v5e slices are 1, 4, 8, 16, ... 256), whole slices beyond one pod
    (a multiple of the domain). Switch / mesh GPUs: any count."""
    if chip.scaleup.topology != "torus":
        return True
    d = chip.scaleup.domain_size
    return _is_power_of_two(chips) if chips <= d else chips % d == 0


def sharding_candidates(spec, chip, max_chips: int, tp=None, pp=None,
                        ep=None) -> tuple[list[tuple[int, int, int]], list[str]]:
    """(tp, pp, ep) triples the model allows on `chip` within max_chips, and why others were skipped.

    Candidates: tp up to max_chips (heads, KV heads, d_ff, vocabulary-free checks via the graph builder),
    pp a divisor of the layer count, ep a divisor of tp that divides the experts (MoE only). The graph builder
    decides divisibility (ShardingError: skipped, never rounded)."""
    from .graph import Phase, build_ops
    from .sharding import Sharding

    tps = sorted(set(tp)) if tp else list(range(1, max_chips + 1))
    pps = sorted(set(pp)) if pp else _divisors(spec.n_layers, max_chips)
    skipped: list[str] = []
    out = []
    for t in tps:
        eps = sorted(set(ep)) if ep else ([e for e in _divisors(t, t)] if spec.is_moe else [1])
        for p in pps:
            if t * p > max_chips:
                continue
            if not replica_shape_ok(chip, t * p):
                continue
            for e in eps:
                try:
                    build_ops(spec, Phase.prefill(p, 1), Sharding(t, p, e))
                except RooflineError as err:
                    if tp or pp or ep:  # only explicit requests deserve a note
                        skipped.append(f"tp={t} pp={p} ep={e}: {err}")
                    continue
                out.append((t, p, e))
    return out, skipped


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


# ------------------------------------------------------------------------------------------- planner
def _replicas(concurrent, batch):
    """ceil(concurrent / batch), robust to float noise at exact multiples, at least 1."""
    x = np.asarray(concurrent, dtype=np.float64) / batch
    return np.maximum(np.ceil(x * (1 - 1e-12)), 1.0)


def plan(model, chips, prompt_len: int, gen_len: int, ttft_s: float | None = None, tpot_s: float | None = None,
         qps: float | None = None, output_tokens_per_s: float | None = None, max_chips: int = 64,
         prices: dict | None = None, weight_dtype=None, kv_dtype=None, act_dtype: str = "bf16",
         reserve: float = 0.1, efficiency="ideal", attention: str = "fused", sequence_parallel: bool = False,
         tp=None, pp=None, ep=None, max_batch: int = 4096, rank_by: str | None = None, disaggregate: bool = False,
         decode_batch: int | None = None, prefill_batch: int | None = None) -> Plan:
    """Search chip type x tp x pp x ep x batch (x data-parallel replicas for the load) for configurations that
    fit memory and meet the targets; rank them. See the module docstring for every rule. Never raises for an
    infeasible target: the Plan then has no configs and its explanation says why, with numbers.

    chips: names, aliases, paths or Chip objects. ttft_s / tpot_s: latency targets (None: any). qps or
    output_tokens_per_s: the load (None: one replica). max_chips: limit on tp x pp x replicas. prices:
    {chip: USD per chip-hour} overriding the chip files. reserve: fraction of HBM kept free. tp / pp / ep:
    lists restricting the candidates (None: every divisor the model allows). max_batch: largest batch searched.
    rank_by: 'cost' | 'chips' (default: cost when every chip has a price). disaggregate: also run
    `disaggregation` per chip at the best plan's batch (or decode_batch)."""
    import pandas as pd

    from .estimate import evaluate
    from .model.hf import load_model
    from .hardware import load_chip
    from .memory import max_batch as memory_max_batch, weight_bytes

    spec = load_model(model)
    chip_list = [load_chip(c) for c in ([chips] if isinstance(chips, str) else chips)]
    if not chip_list:
        raise ScenarioError("plan needs at least one chip")
    for name, v in (("prompt_len", prompt_len), ("gen_len", gen_len), ("max_chips", max_chips),
                    ("max_batch", max_batch)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ScenarioError(f"{name} must be a positive integer, got {v!r}")
    for name, v in (("ttft_s", ttft_s), ("tpot_s", tpot_s), ("qps", qps), ("output_tokens_per_s", output_tokens_per_s)):
        if v is not None and not (math.isfinite(float(v)) and float(v) > 0):
            raise ScenarioError(f"{name} must be a positive number, got {v!r}")
    if qps is not None and output_tokens_per_s is not None:
        raise ScenarioError("give qps or output_tokens_per_s, not both")
    if tpot_s is not None and gen_len < 2:
        raise ScenarioError("a TPOT target needs gen_len >= 2 (the first token comes from prefill)")
    if not 0.0 <= float(reserve) < 1.0:
        raise ScenarioError(f"reserve must be a fraction in [0, 1), got {reserve!r}")
    if rank_by not in (None, "cost", "chips"):
        raise ScenarioError(f"rank_by must be 'cost' or 'chips', got {rank_by!r}")
    prompt_len, gen_len, max_chips, max_batch = int(prompt_len), int(gen_len), int(max_chips), int(max_batch)
    demand_qps = float(qps) if qps is not None else (float(output_tokens_per_s) / gen_len
                                                      if output_tokens_per_s is not None else None)
    price_of = chip_prices(chip_list, prices)
    rank_by = rank_by or ("cost" if all(p.usd_per_hour is not None for p in price_of.values()) else "chips")
    notes = [f"memory: a configuration fits when its per-chip bytes (weights + KV at prompt+gen = "
             f"{prompt_len + gen_len} tokens + peak prefill activations) <= HBM x (1 - reserve), reserve = "
             f"{reserve:.0%} of HBM kept free."]
    for name, p in price_of.items():
        if p.usd_per_hour is None:
            notes.append(f"{name}: no price per chip-hour — its cost columns are '—' ({p.source}).")
    notes.append(f"cost attribution: {ATTRIBUTION}; usd_per_million_output_tokens is all-in (every chip-second / "
                 "output tokens) and is what configurations are ranked by.")

    frames = []
    per_chip_info: dict[str, dict[str, Any]] = {}
    for chip in chip_list:
        info = per_chip_info.setdefault(chip.name, dict(shardings=0, errors=[], mem_rows=[]))
        usable = chip.hbm_bytes * (1.0 - float(reserve))
        cands, skipped = sharding_candidates(spec, chip, max_chips, tp, pp, ep)
        info["shardings"] = len(cands)
        info["errors"].extend(skipped)
        for t, p, e in cands:
            kw = dict(tp=t, pp=p, ep=e, weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype,
                      attention=attention, sequence_parallel=sequence_parallel)
            try:
                mem = memory_max_batch(spec, chip, prompt_len + gen_len, gen_len=gen_len, reserve=reserve, **kw).iloc[0]
            except RooflineError as err:
                info["errors"].append(f"tp={t} pp={p} ep={e}: {err}")
                continue
            if mem["error"]:
                info["errors"].append(f"tp={t} pp={p} ep={e}: {mem['error']}")
                continue
            info["mem_rows"].append(mem)
            b_mem = int(mem["max_batch"])
            if b_mem < p:  # not even one sequence per micro-batch fits: the explanation uses `mem`
                continue
            # the batch grid: multiples of pp up to the memory limit (which joins it), and the two next
            # sizes beyond it so that the binding constraint of the largest fitting batch is seen
            steps = [p * m for m in BATCH_STEPS]
            fit_part = {b for b in steps if b <= min(b_mem, max_batch)} | ({b_mem} if b_mem <= max_batch else set())
            beyond = [b for b in sorted(set(steps) | {b_mem + p}) if b_mem < b <= max_batch][:2]
            batches = np.array(sorted(fit_part | set(beyond)), dtype=np.float64)
            try:
                r = evaluate(spec, chip, batch=batches, prompt_len=prompt_len, gen_len=gen_len,
                             efficiency=efficiency, **kw)
            except RooflineError as err:
                info["errors"].append(f"tp={t} pp={p} ep={e}: {err}")
                continue
            frames.append(_rows(r, chip, t, p, e, batches, usable, reserve, ttft_s, tpot_s, demand_qps, max_chips,
                                max_batch, price_of[chip.name], prompt_len, gen_len))
    cand = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(JSON_KEYS) + ["feasible"])
    if len(cand):
        cand = _rank(cand, rank_by)
        cand["binding_constraint"] = _binding(cand)
    feasible = cand[cand["feasible"]].reset_index(drop=True) if len(cand) else cand
    best = _clean(feasible.iloc[0].to_dict()) if len(feasible) else None
    best_per_chip = feasible.groupby("chip", sort=False).head(1).reset_index(drop=True) if len(feasible) else feasible
    frontier_by = "usd_per_million_output_tokens" if rank_by == "cost" else "chips_total"
    frontier = _pareto(feasible, frontier_by)
    targets = dict(prompt_len=prompt_len, gen_len=gen_len, ttft_s=ttft_s, tpot_s=tpot_s, qps=demand_qps,
                   output_tokens_per_s=demand_qps * gen_len if demand_qps is not None else None,
                   max_chips=max_chips, reserve=float(reserve), weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                   act_dtype=act_dtype, efficiency=efficiency if isinstance(efficiency, str) else
                   getattr(efficiency, "label", "custom"), chips=[c.name for c in chip_list])
    explanation = _explain(spec, chip_list, targets, cand, feasible, best_per_chip, per_chip_info, price_of,
                           weight_bytes(spec, weight_dtype), rank_by)
    disagg = {}
    if disaggregate:
        for chip in chip_list:
            row = best_per_chip[best_per_chip["chip"] == chip.name] if len(best_per_chip) else best_per_chip
            b = decode_batch or (int(row.iloc[0]["batch"]) if len(row) else None)
            if b is None:
                continue
            try:
                disagg[chip.name] = disaggregation(spec, chip, prompt_len, gen_len, decode_batch=b,
                                                   prefill_batch=prefill_batch, max_chips=max_chips,
                                                   weight_dtype=weight_dtype, kv_dtype=kv_dtype, act_dtype=act_dtype,
                                                   reserve=reserve, efficiency=efficiency, attention=attention,
                                                   sequence_parallel=sequence_parallel, ttft_s=ttft_s, tpot_s=tpot_s)
            except RooflineError as err:
                notes.append(f"disaggregation on {chip.name}: {err}")
    return Plan(model=spec.name, targets=targets, configs=feasible, best=best, best_per_chip=best_per_chip,
                frontier=frontier, frontier_by=frontier_by, candidates=cand, explanation=explanation,
                prices=price_of, notes=notes, rank_by=rank_by, disaggregation=disagg)


def _rows(r, chip, t, p, e, batches, usable, reserve, ttft_s, tpot_s, qps, max_chips, max_batch, price: Price,
          prompt_len, gen_len):
    """One DataFrame row per batch of one (chip, tp, pp, ep): metrics, constraint flags, replicas, cost."""
    import pandas as pd

    n = batches.shape[0]
    bc = lambda v: np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()  # noqa: E731
    ttft, tpot, e2e = bc(r.ttft_s), bc(r.tpot_s), bc(r.e2e_s)
    per_chip = bc(r.memory.bytes_per_chip)
    fits = per_chip <= usable
    meets_ttft = ttft <= ttft_s if ttft_s is not None else np.ones(n, bool)
    meets_tpot = tpot <= tpot_s if tpot_s is not None else np.ones(n, bool)
    cap_rps = batches / e2e  # requests/s of one replica (static batch: batch sequences per e2e)
    if qps is not None:
        concurrent = qps * e2e  # Little's law
        replicas = _replicas(concurrent, batches)
        delivered_rps = np.full(n, qps)
    else:
        concurrent = batches.copy()
        replicas = np.ones(n)
        delivered_rps = cap_rps
    chips_total = t * p * replicas
    meets_chips = chips_total <= max_chips
    out_tps = replicas * cap_rps * gen_len
    delivered_out = delivered_rps * gen_len
    if price.usd_per_hour is not None:
        usd_per_s = price.usd_per_hour * chips_total / 3600.0
        all_in = usd_per_s / delivered_out * 1e6
        prefill_share = ttft / e2e
        usd_in = usd_per_s * prefill_share / (delivered_rps * prompt_len) * 1e6
        usd_out_decode = usd_per_s * (1 - prefill_share) / delivered_out * 1e6
        usd_h = price.usd_per_hour * chips_total
    else:
        all_in = usd_in = usd_out_decode = usd_h = np.full(n, np.nan)
    note = ""
    if t > chip.scaleup.domain_size:
        d = chip.scaleup.domain_size
        note = (f"tp={t} spans {t // d} scale-up domains of {d}: collectives over "
                f"{chip.scaleout.kind if chip.scaleout else 'scale-out'}")
    feasible = fits & meets_ttft & meets_tpot & meets_chips & (batches <= max_batch)
    return pd.DataFrame(dict(
        chip=chip.name, tp=t, pp=p, ep=e, batch=batches.astype(int), replicas=replicas.astype(int),
        chips_total=chips_total.astype(int), ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, output_tokens_per_s=out_tps,
        delivered_output_tokens_per_s=delivered_out, concurrent_sequences=concurrent, per_chip_bytes=per_chip,
        usable_bytes=usable, usd_per_hour=usd_h, usd_per_million_output_tokens=all_in,
        usd_per_million_input_tokens=usd_in, usd_per_million_output_tokens_decode=usd_out_decode,
        binding_constraint="", note=note, fits=fits, meets_ttft=meets_ttft, meets_tpot=meets_tpot,
        meets_chips=meets_chips, feasible=feasible, reserve=float(reserve)))


def _rank(df, rank_by: str):
    cost = df["usd_per_million_output_tokens"].fillna(np.inf)
    tie = df["tpot_s"].fillna(0.0)
    chips = df["chips_total"]
    keys = (cost, chips, tie, df["ttft_s"]) if rank_by == "cost" else (chips, cost, tie, df["ttft_s"])
    order = np.lexsort(tuple(np.asarray(k, dtype=np.float64) for k in reversed(keys)))
    return df.iloc[order].reset_index(drop=True)


def _first_failure(row) -> str:
    for c, flag in zip(CONSTRAINTS, ("fits", "meets_ttft", "meets_tpot", "meets_chips")):
        if not row[flag]:
            return c
    return "none"


def _binding(df) -> list[str]:
    """Per row: the first constraint the next larger batch (same chip and sharding) fails; 'max_batch' when
    the grid ends; 'none' when that batch is feasible too."""
    out = []
    key = df[["chip", "tp", "pp", "ep"]].astype(str).agg("/".join, axis=1)
    nxt = {}
    for k, sub in df.groupby(key):
        s = sub.sort_values("batch")
        idx = list(s.index)
        for i, j in zip(idx, idx[1:] + [None]):
            nxt[i] = j
    for i in range(len(df)):
        j = nxt.get(df.index[i])
        out.append("max_batch" if j is None else _first_failure(df.loc[j]))
    return out


def _pareto(df, by: str):
    """Configurations not dominated in (tpot_s, by): sorted by TPOT, each cheaper than every faster one."""
    if len(df) == 0:
        return df
    d = df.copy()
    d["_c"] = d[by].astype(float).fillna(np.inf)
    d["_t"] = d["tpot_s"].astype(float).fillna(d["ttft_s"].astype(float))
    d = d.sort_values(["_t", "_c"], kind="stable")
    keep, best = [], np.inf
    for i, c in zip(d.index, d["_c"]):
        if c < best:
            keep.append(i)
            best = c
    return d.loc[keep].drop(columns=["_c", "_t"]).reset_index(drop=True)


def _clean(rec: dict) -> dict:
    return json_ready(rec)


# ------------------------------------------------------------------------------------------- explanation
def _gb(x) -> str:
    from .units import sig3

    return f"{sig3(float(x) / 1e9)} GB"


def _describe(row) -> str:
    from .units import fmt_seconds, sig3

    cost = row["usd_per_million_output_tokens"]
    cost_s = "$— (no price)" if cost is None or (isinstance(cost, float) and math.isnan(cost)) else f"${sig3(cost)}"
    tpot = row["tpot_s"]
    return (f"tp={row['tp']} pp={row['pp']} ep={row['ep']} batch {row['batch']} x {row['replicas']} replica(s) = "
            f"{row['chips_total']} chips; TTFT {fmt_seconds(row['ttft_s'])}, TPOT "
            f"{fmt_seconds(None if tpot is None or (isinstance(tpot, float) and math.isnan(tpot)) else tpot)}, "
            f"{cost_s} per 1M output tokens; binding: {row['binding_constraint']}")


def _explain(spec, chips, targets, cand, feasible, best_per_chip, info, price_of, total_weight_bytes, rank_by) -> str:
    from .units import fmt_seconds, sig3

    t = targets
    target = lambda v: fmt_seconds(v) if v else "any"  # noqa: E731
    load = (f"load {sig3(t['qps'])} req/s ({sig3(t['output_tokens_per_s'])} output tok/s); " if t["qps"]
            else "one replica (no load target); ")
    head = (f"Plan for {spec.name}: prompt {t['prompt_len']}, gen {t['gen_len']}; TTFT <= {target(t['ttft_s'])}, "
            f"TPOT <= {target(t['tpot_s'])}; " + load
            + f"<= {t['max_chips']} chips; {t['reserve']:.0%} of HBM reserved; ranked by "
            + ("USD per 1M output tokens." if rank_by == "cost" else "total chips."))
    lines = [head]
    if len(feasible):
        lines.append(f"Best: {feasible.iloc[0]['chip']} " + _describe(feasible.iloc[0]))
    else:
        lines.append("No configuration meets every constraint.")
    for chip in chips:
        sub = best_per_chip[best_per_chip["chip"] == chip.name] if len(best_per_chip) else best_per_chip
        if len(sub):
            lines.append(f"  {chip.name}: " + _describe(sub.iloc[0]))
        else:
            lines.append(f"  {chip.name}: no configuration — " + _why_not(spec, chip, targets, cand, info[chip.name],
                                                                          total_weight_bytes))
    return "\n".join(lines)


def _why_not(spec, chip, t, cand, info, total_weight_bytes) -> str:
    """Why nothing is feasible on this chip, with numbers: the first constraint (memory, ttft, tpot, chips)
    that every remaining candidate fails, and the best value reached."""
    from .units import fmt_seconds

    usable = chip.hbm_bytes * (1 - t["reserve"])
    total = t["max_chips"] * chip.hbm_bytes
    if info["shardings"] == 0:
        return (f"no tp x pp x ep within {t['max_chips']} chips divides the model ({spec.n_layers} layers, heads "
                f"{sorted({g.attention.n_heads for g in spec.layer_groups})}, KV heads "
                f"{sorted({g.attention.n_kv_heads for g in spec.layer_groups})})"
                + (" and forms a TPU slice (a power of two chips)" if chip.scaleup.topology == "torus" else "")
                + (f"; {info['errors'][0]}" if info["errors"] else ""))
    sub = cand[cand["chip"] == chip.name] if len(cand) else cand
    if len(sub) == 0 or not sub["fits"].any():
        if total_weight_bytes > t["max_chips"] * usable:
            return (f"needs >= {_gb(total_weight_bytes)} of weights, {t['max_chips']} x {_gb(chip.hbm_bytes)} = "
                    f"{_gb(total)} available ({_gb(t['max_chips'] * usable)} after the {t['reserve']:.0%} reserve)")
        rows = info["mem_rows"]
        if rows:
            m = min(rows, key=lambda r: r["weight_bytes_per_chip"] + r["bytes_per_sequence_per_chip"] * r["pp"])
            need = m["weight_bytes_per_chip"] + m["bytes_per_sequence_per_chip"] * m["pp"]
            return (f"the smallest per-chip footprint is {_gb(need)} (tp={m['tp']} pp={m['pp']}: weights "
                    f"{_gb(m['weight_bytes_per_chip'])} + {m['pp']} sequence(s) of KV and activations at "
                    f"{t['prompt_len'] + t['gen_len']} tokens {_gb(m['bytes_per_sequence_per_chip'] * m['pp'])}) > "
                    f"{_gb(usable)} usable per chip ({_gb(chip.hbm_bytes)} - {t['reserve']:.0%})")
        return "every sharding failed: " + "; ".join(info["errors"][:3])
    fit = sub[sub["fits"]]
    if t["ttft_s"] is not None and not fit["meets_ttft"].any():
        r = fit.loc[fit["ttft_s"].idxmin()]
        return (f"the fastest TTFT among configurations that fit is {fmt_seconds(r['ttft_s'])} (tp={r['tp']} "
                f"pp={r['pp']} batch {r['batch']}) > target {fmt_seconds(t['ttft_s'])}")
    ok = fit[fit["meets_ttft"]]
    if t["tpot_s"] is not None and not ok["meets_tpot"].any():
        r = ok.loc[ok["tpot_s"].idxmin()]
        return (f"the fastest TPOT among configurations that fit and meet TTFT is {fmt_seconds(r['tpot_s'])} "
                f"(tp={r['tp']} pp={r['pp']} batch {r['batch']}) > target {fmt_seconds(t['tpot_s'])}")
    ok = ok[ok["meets_tpot"]]
    r = ok.loc[ok["chips_total"].idxmin()]
    return (f"the load needs >= {r['chips_total']} chips (tp={r['tp']} pp={r['pp']} batch {r['batch']} x "
            f"{r['replicas']} replicas) > max_chips {t['max_chips']}")


# ------------------------------------------------------------------------------------------- disaggregation
def balance(prefill_s: float, prefill_batch: int, prefill_chips: int, decode_step_s: float, decode_batch: int,
            decode_steps: float, decode_chips: int) -> dict[str, float]:
    """Prefill/decode pools that keep each other busy (book Part 8, "What about prefill?": sequences enter
    at P / prefill_latency and leave at B x G / (generate_latency x decode_length); P = 3G there).

    prefill_s: wall time of one prefill batch on one prefill instance (steady state), decode_step_s: one
    decode step of a full batch. Returns requests/s per chip of each side and the chip and instance ratios
    (prefill per decode) at which neither side idles."""
    pre_rps_chip = prefill_batch / prefill_s / prefill_chips
    dec_rps_chip = decode_batch / (decode_step_s * decode_steps) / decode_chips
    chip_ratio = dec_rps_chip / pre_rps_chip
    return dict(prefill_requests_per_s_per_chip=pre_rps_chip, decode_requests_per_s_per_chip=dec_rps_chip,
                chip_ratio=chip_ratio, instance_ratio=chip_ratio * decode_chips / prefill_chips,
                requests_per_s_per_chip=1.0 / (1.0 / pre_rps_chip + 1.0 / dec_rps_chip))


@dataclass(frozen=True)
class Disaggregation:
    """Prefill on its own chips (batch prefill_batch, sharding prefill_tp x prefill_pp) feeding decode chips
    (batch decode_batch, decode_tp x decode_pp), against co-located serving on the decode sharding.

    chip_ratio: prefill chips per decode chip at which neither side idles; instance_ratio: the same in
    instances (replicas) of each side. Throughputs are per chip, requests/s and output tokens/s.
    colocated_*: the same chips time-slice prefill and decode (each request's prefill interrupts decoding):
    per request, chips x (prefill time / prefill batch + decode time / decode batch);
    colocated_tpot_s is the TPOT a decoding sequence sees with those interruptions."""

    chip: str
    prompt_len: int
    gen_len: int
    prefill_tp: int
    prefill_pp: int
    prefill_batch: int
    prefill_s: float
    prefill_requests_per_s_per_chip: float
    decode_tp: int
    decode_pp: int
    decode_batch: int
    decode_tpot_s: float
    decode_requests_per_s_per_chip: float
    chip_ratio: float
    instance_ratio: float
    disaggregated_output_tokens_per_s_per_chip: float
    colocated_output_tokens_per_s_per_chip: float
    colocated_tpot_s: float
    speedup: float
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def _triple(spec, sharding) -> tuple[int, int, int]:
    """(tp, pp) or (tp, pp, ep); MoE defaults to ep = tp."""
    t, p, *rest = sharding
    return int(t), int(p), int(rest[0]) if rest else (int(t) if spec.is_moe else 1)


def _steady_prefill_s(ttft, pp):
    """One prefill batch in steady state: micro-batches stream through the stages, one finishing per stage
    slot, so a batch of pp micro-batches takes TTFT x pp / (2pp - 1) (TTFT includes the pipeline fill)."""
    return ttft * pp / (2 * pp - 1)


def disaggregation(model, chip, prompt_len: int, gen_len: int, decode_batch: int, prefill_batch: int | None = None,
                   prefill_sharding: tuple[int, int] | None = None, decode_sharding: tuple[int, int] | None = None,
                   max_chips: int = 64, weight_dtype=None, kv_dtype=None, act_dtype: str = "bf16",
                   reserve: float = 0.1, efficiency="ideal", prefill_efficiency=None, decode_efficiency=None,
                   attention: str = "fused", sequence_parallel: bool = False, ttft_s: float | None = None,
                   tpot_s: float | None = None) -> Disaggregation:
    """Prefill-to-decode chip ratio at which neither side idles, and throughput per chip against co-located serving.

    Each side takes the sharding (tp, pp) with the most requests/s per chip among those that fit (prefill:
    weights + the prefill batch's KV and activations; decode: the estimate's memory at decode_batch) and meet
    ttft_s / tpot_s, unless given. prefill_batch defaults to pp sequences (one per micro-batch). Decode: each
    request occupies a slot for gen_len - 1 steps (the first token comes from prefill), at the mean step time.
    prefill_efficiency / decode_efficiency override `efficiency` per phase (e.g. Efficiency(compute=0.4) for
    the book's 40% prefill MFU)."""
    from .estimate import evaluate
    from .model.hf import load_model
    from .hardware import load_chip

    spec = load_model(model)
    chip = load_chip(chip)
    if gen_len < 2:
        raise ScenarioError("disaggregation needs gen_len >= 2 (decode steps after the prefill's first token)")
    usable = chip.hbm_bytes * (1 - float(reserve))
    kw = dict(weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype, attention=attention,
              sequence_parallel=sequence_parallel)
    pre_eff = prefill_efficiency or efficiency
    dec_eff = decode_efficiency or efficiency
    # MoE: experts spread over the whole tensor-parallel group (ep = tp), the usual serving layout
    cands = [(t, p, e) for t, p, e in sharding_candidates(spec, chip, max_chips)[0] if e == (t if spec.is_moe else 1)]
    notes = []

    def best_prefill():
        options = [_triple(spec, prefill_sharding)] if prefill_sharding else cands
        best = None
        for t, p, e in options:
            b = prefill_batch or p
            if b % p:
                continue
            try:
                r = evaluate(spec, chip, batch=b, prompt_len=prompt_len, gen_len=1, tp=t, pp=p, ep=e,
                             efficiency=pre_eff, **kw)
            except RooflineError:
                continue
            if float(r.memory.bytes_per_chip) > usable or (ttft_s is not None and float(r.ttft_s) > ttft_s):
                continue
            t_s = _steady_prefill_s(float(r.ttft_s), p)
            rate = b / t_s / (t * p)
            if best is None or rate > best[0]:
                best = (rate, t, p, e, b, t_s)
        return best

    def best_decode():
        options = [_triple(spec, decode_sharding)] if decode_sharding else cands
        best = None
        for t, p, e in options:
            if decode_batch % p:
                continue
            try:
                r = evaluate(spec, chip, batch=decode_batch, prompt_len=prompt_len, gen_len=gen_len, tp=t, pp=p,
                             ep=e, efficiency=dec_eff, **kw)
            except RooflineError:
                continue
            tpot = float(r.tpot_s)
            m = r.memory  # a decode server never prefills: weights + KV cache (decode activations: B tokens, ~0)
            resident = float(m.weight_bytes_per_chip + m.kv_cache_bytes_per_chip)
            if resident > usable or (tpot_s is not None and tpot > tpot_s):
                continue
            decode_sum = float(r.decode_s)
            rate = decode_batch / decode_sum / (t * p)
            if best is None or rate > best[0]:
                best = (rate, t, p, e, tpot, decode_sum)
        return best

    pre, dec = best_prefill(), best_decode()
    if pre is None:
        raise ScenarioError(f"no prefill sharding of {spec.name} on {chip.name} within {max_chips} chips fits "
                            f"{_gb(usable)} per chip" + (f" and meets TTFT {ttft_s} s" if ttft_s else ""))
    if dec is None:
        raise ScenarioError(f"no decode sharding of {spec.name} on {chip.name} within {max_chips} chips fits batch "
                            f"{decode_batch} at {prompt_len + gen_len} tokens in {_gb(usable)} per chip"
                            + (f" and meets TPOT {tpot_s} s" if tpot_s else ""))
    _, pt, pp_, pe, pb, pre_s = pre
    _, dt, dp_, de, tpot, decode_sum = dec
    bal = balance(pre_s, pb, pt * pp_, decode_sum / (gen_len - 1), decode_batch, gen_len - 1, dt * dp_)
    # co-located: prefills run on the decode chips with the decode sharding, time-sliced with decoding
    co_b = pb if pb % dp_ == 0 else dp_
    r_co = evaluate(spec, chip, batch=co_b, prompt_len=prompt_len, gen_len=1, tp=dt, pp=dp_, ep=de,
                    efficiency=pre_eff, **kw)
    co_pre_per_req = _steady_prefill_s(float(r_co.ttft_s), dp_) / co_b
    co_req_s_chip = 1.0 / ((co_pre_per_req + decode_sum / decode_batch) * dt * dp_)
    co_tpot = (decode_sum + decode_batch * co_pre_per_req) / (gen_len - 1)
    dis_tok = bal["requests_per_s_per_chip"] * gen_len
    co_tok = co_req_s_chip * gen_len
    notes.append(f"decode: {gen_len - 1} steps per request at the mean step {tpot:.4g} s (first token from prefill)")
    notes.append("decode side memory: weights + KV cache at prompt + gen tokens (it never prefills, so the "
                 "estimate's prefill activations are left out); prefill side: the estimate's memory of the "
                 "prefill batch")
    notes.append(f"co-located: prefills (batch {co_b}) run on the decode sharding tp={dt} pp={dp_}, time-sliced "
                 "with decoding")
    return Disaggregation(chip=chip.name, prompt_len=int(prompt_len), gen_len=int(gen_len), prefill_tp=pt,
                          prefill_pp=pp_, prefill_batch=pb, prefill_s=pre_s,
                          prefill_requests_per_s_per_chip=bal["prefill_requests_per_s_per_chip"], decode_tp=dt,
                          decode_pp=dp_, decode_batch=int(decode_batch), decode_tpot_s=tpot,
                          decode_requests_per_s_per_chip=bal["decode_requests_per_s_per_chip"],
                          chip_ratio=bal["chip_ratio"], instance_ratio=bal["instance_ratio"],
                          disaggregated_output_tokens_per_s_per_chip=dis_tok,
                          colocated_output_tokens_per_s_per_chip=co_tok, colocated_tpot_s=co_tpot,
                          speedup=dis_tok / co_tok, notes=tuple(notes))
