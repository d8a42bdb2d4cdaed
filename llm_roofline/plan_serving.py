"""Capacity planning on the serving model: the cheapest deployment (chip x tp x pp x ep x replicas x engine knobs)
that serves `qps` requests/s (Poisson) within TTFT and TPOT targets.

Every chip and sharding is scored in one `serve_deployments` call (one queueing solve over every replica count,
the per-replica load qps / replicas, and every engine knob: max_num_seqs, max_num_batched_tokens). A point is feasible when it fits
(KV for at least one sequence), is below saturation, and meets TTFT (mean or p90) and TPOT. Ranking: by USD
per hour (the chip files' [price]) when every chip has a price, else by chips (and the plan says so). Each
answer says why it binds (what fails with one replica fewer, or with the next smaller tp), and the winner is
re-checked with a scalar `serve()` call at dp = replicas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bounds import BOUNDS, check_count, check_grid_points, check_range
from .errors import RooflineError, ScenarioError, shown
from .hardware import chip_prices, load_chips
from .model.hf import load_model
from .chip_fits import DEFAULT_EFFICIENCY
from .memory import GPU_MEMORY_UTILIZATION
from .engine import NO_HOST, NO_HOST_NOTE
from .serve import ServingEstimate, checked_host_overheads, serve, serve_deployments
from .sharding import MOE_DISPATCH
from .units import fmt_seconds, joined_columns, json_ready, p90_misses

DEFAULT_TTFT_S = 2.0
DEFAULT_TPOT_S = 0.05
_TTFT = {"mean": ("TTFT", "ttft_s"), "p90": ("TTFT p90", "ttft_p90_s")}  # a TTFT target's words and column
_P90_TRIES = 4  # rows after a winner that misses a target at its p90 re-checked for one that holds (a serve() each)
_SHOWN = ["chip", "tp", "pp", "ep", "replicas", "chips", "usd_per_hour", "max_num_seqs", "max_num_batched_tokens",
          "qps_per_replica", "ttft_s", "ttft_p90_s", "tpot_s", "saturation_requests_per_s", "max_running", "binds"]


@dataclass
class ServingPlan:
    """best: the winning row (dict); table: the cheapest feasible row per chip and sharding (DataFrame);
    check: the winner re-evaluated by serve(), with its p10-p90 band (check.uncertainty; the table's rows have none:
    two more queueing solves per deployment would cost a third of a plan); notes: ranking basis, skipped shardings,
    missing prices."""

    best: dict[str, Any] | None
    table: Any
    check: ServingEstimate | None
    targets: dict[str, Any]
    rank_by: str
    notes: list[str] = field(default_factory=list)
    configurations: int = 0  # points of the search grid scored (chip x sharding x replicas x engine knobs)
    # the targets the winner misses at its band's p90 (words; empty: it holds them), and the cheapest of the next
    # _P90_TRIES rows that holds them there (its row with the band's p90 figures; None: none of them does)
    p90_misses: list[str] = field(default_factory=list)
    p90_holds: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return json_ready(dict(best=self.best, table=self.table.to_dict(orient="records"), targets=self.targets,
                               rank_by=self.rank_by, notes=self.notes, p90_misses=self.p90_misses,
                               p90_holds=self.p90_holds, check=self.check.to_dict() if self.check else None))

    def p90_line(self) -> str:
        """'' where the winner holds its targets at its band's p90, else what it misses there and the cheapest row
        that holds them (or that none of the next few does)."""
        if not self.p90_misses:
            return ""
        h, (ttft, col) = self.p90_holds, _TTFT[self.targets["ttft_percentile"]]
        alt = (f"the first row below that holds them there: {h['chip']} tp {h['tp']} pp {h['pp']} ep {h['ep']} x "
               f"{h['replicas']} = {h['chips']} chips, max_num_seqs {h['max_num_seqs']:.0f} (at its p90 error "
               f"{ttft} {fmt_seconds(h[col + '_p90'])}, TPOT {fmt_seconds(h['tpot_s_p90'])})" if h
               else f"none of the next {_P90_TRIES} rows below holds them there")
        return f"at its p90 error the winner misses {' and '.join(self.p90_misses)}; {alt}"


def _shardings(spec, chip, max_chips: int, attention_dp: int = 1) -> list[tuple[int, int, int]]:
    """(tp, pp, ep): tp a power of two within the scale-up domain, pp 1 or 2, ep = every chip of a stage
    (tp x attention_dp) for MoE models."""
    moe = any(g.ffn.kind == "moe" for g in spec.layer_groups)
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= min(chip.scaleup.domain_size, max_chips)]
    return [(t, p, t * attention_dp if moe else 1) for t in tps for p in (1, 2) if t * p * attention_dp <= max_chips]


def _layout(row) -> str:
    """A table row's deployment in words: 'tp=8 x 4', 'tp=4 pp=2 ep=8 x 2' (pp, ep where above 1)."""
    parts = [f"{k}={int(row[k])}" for k in ("tp", "pp", "ep") if k == "tp" or int(row[k]) > 1]
    return f"{' '.join(parts)} x {int(row['replicas'])}"


def _failure(row, ttft_col: str, targets: dict) -> str:
    """The first target a row misses, in words."""
    if not row["fits"]:
        return "KV cache: no room for one sequence"
    if row["saturated"]:
        return f"load {row['qps']:.3g} req/s per replica above saturation {row['saturation_requests_per_s']:.3g}"
    if row[ttft_col] > targets["ttft_s"]:
        return f"TTFT {row[ttft_col]:.3g} s > {targets['ttft_s']:g} s"
    if row["tpot_s"] > targets["tpot_s"]:
        return f"TPOT {row['tpot_s'] * 1e3:.3g} ms > {targets['tpot_s'] * 1e3:g} ms"
    return "meets every target"


def plan_serving(model, chips, prompt_len: int, gen_len: int, qps: float, ttft_s: float = DEFAULT_TTFT_S,
                 tpot_s: float = DEFAULT_TPOT_S, ttft_percentile: str = "mean", max_chips: int = 64,
                 max_num_seqs=(64, 256, 1024), max_num_batched_tokens=(2048, 8192), weight_dtype=None, act_dtype="bf16",
                 kv_dtype=None, efficiency=DEFAULT_EFFICIENCY, prefix_hit_rate=0.0, speculative=None,
                 prices: dict | None = None, attention_dp: int = 1, moe_dispatch: str = MOE_DISPATCH,
                 gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
                 host_overheads: dict | None = None) -> ServingPlan:
    """Cheapest serving deployment meeting TTFT (ttft_percentile 'mean' or 'p90') and TPOT at `qps`. attention_dp,
    moe_dispatch: the layout every deployment uses (serve's). host_overheads: serve()'s host-time arguments (keys of
    engine.HOST_OVERHEADS; None or {}: the fitted vLLM ones; engine.NO_HOST: kernels only, noted in the plan)."""
    if ttft_percentile not in ("mean", "p90"):
        raise ScenarioError(f"ttft_percentile must be 'mean' or 'p90', got {ttft_percentile!r}")
    qps = check_range("qps", qps, 0.0, 1e9, "requests/s", lo_open=True)
    attention_dp = check_count("attention_dp", attention_dp)
    ttft_s = check_range("ttft_s", ttft_s, 0.0, 1e6, "s", lo_open=True)
    tpot_s = check_range("tpot_s", tpot_s, 0.0, 1e6, "s", lo_open=True)
    gpu_memory_utilization = check_range("gpu_memory_utilization", gpu_memory_utilization, 0.0, 1.0, lo_open=True)
    prompt_len, gen_len, max_chips = (check_count(n, v) for n, v in (("prompt_len", prompt_len), ("gen_len", gen_len),
                                                                      ("max_chips", max_chips)))
    knobs = [_knob(n, v) for n, v in (("max_num_seqs", max_num_seqs), ("max_num_batched_tokens", max_num_batched_tokens))]
    spec = load_model(model)
    chip_list = load_chips(chips)
    ttft_col = _TTFT[ttft_percentile][1]
    targets = dict(qps=qps, ttft_s=ttft_s, ttft_percentile=ttft_percentile, tpot_s=tpot_s,
                   prompt_len=prompt_len, gen_len=gen_len)
    price = {name: p.usd_per_hour for name, p in chip_prices(chip_list, prices).items()}
    rank_by = "usd_per_hour" if all(v is not None for v in price.values()) else "chips"
    rank = _Rank(qps, price, rank_by, ttft_col, targets, attention_dp)
    notes = [] if rank_by == "usd_per_hour" else [
        f"ranked by chips: no price per chip-hour for {', '.join(k for k, v in price.items() if v is None)}"]
    serve_kw = dict(attention_dp=attention_dp, moe_dispatch=moe_dispatch, weight_dtype=weight_dtype,
                    act_dtype=act_dtype, kv_dtype=kv_dtype, efficiency=efficiency,
                    gpu_memory_utilization=gpu_memory_utilization,
                    prefix_hit_rate=prefix_hit_rate, speculative=speculative)
    serve_kw.update(_host_overheads(host_overheads, notes))
    _check_hit_rate(prefix_hit_rate)  # once here, not as a note of every deployment skipped
    shardings = [(chip, s) for chip in chip_list for s in _shardings(spec, chip, max_chips, attention_dp)]
    if not shardings:
        raise ScenarioError(f"attention_dp = {attention_dp} does not fit in max_chips = {max_chips}: a replica needs "
                            "tp x pp x attention_dp chips")
    check_grid_points({"configurations": sum(max_chips // (tp * pp * attention_dp) for _, (tp, pp, _) in shardings)
                       * len(knobs[0]) * len(knobs[1])}, "serving plan")  # before the replica lists are made
    deployments = [dict(chip=chip, tp=tp, pp=pp, ep=ep,
                        qps=list(qps / np.arange(1, max_chips // (tp * pp * attention_dp) + 1)))
                   for chip, (tp, pp, ep) in shardings]
    grid = dict(prompt_len=prompt_len, gen_len=gen_len, max_num_seqs=knobs[0], max_num_batched_tokens=knobs[1],
                **serve_kw)
    # only the shardings with room for a sequence somewhere are scored (the memory model rules out the others)
    rows, run_notes, configurations, no_room = _search(spec, deployments, grid, rank)
    if not rows:
        raise ScenarioError(f"{spec.name}: no sharding of {', '.join(c.name for c in chip_list)} within {max_chips} "
                            f"chips runs it" + (f"; {no_room} have no room for one sequence's KV cache beside the "
                                                "weights" if no_room else "") + "".join("; " + n for n in run_notes))
    out = _choose(spec, rows, rank, notes + run_notes, serve_kw, [c.name for c in chip_list])
    out.configurations = configurations
    return out


def _host_overheads(given, notes: list) -> dict:
    """serve()'s host-time arguments from `given` (None: the fitted vLLM ones), checked once here (not once per
    deployment skipped), noting kernels only."""
    if given is None:
        return {}
    if given == NO_HOST:
        notes.append(f"{NO_HOST_NOTE}: as for an engine without Python dispatch; not measured")
    return checked_host_overheads(given)


def _check_hit_rate(prefix_hit_rate) -> None:
    try:
        ok = np.all((np.asarray(prefix_hit_rate, dtype=np.float64) >= 0) & (np.asarray(prefix_hit_rate) < 1))
    except (TypeError, ValueError):
        ok = False
    if not ok:  # NaN too
        raise ScenarioError(f"prefix_hit_rate must be in [0, 1), got {shown(prefix_hit_rate)}")


def _knob(name: str, values) -> list[int]:
    """An engine knob's candidates: one count or a list of them, each checked (1 .. 2^24)."""
    return [int(v) for v in np.ravel(check_count(name, values, BOUNDS["max_batch"].max_value))]


def _search(spec, deployments, grid, rank: "_Rank"):
    """Every deployment scored in one serve_deployments call, the saturation rate (and the TTFT p90 when the plan
    ranks by the mean) only where the plan reads it (_picks): (each one's columns with the planner's (_Rank.columns), notes of the shardings skipped, configurations
    searched: grid points scored or ruled out by memory, the deployments ruled out by memory)."""
    rows, notes, configurations, no_room = [], [], 0, 0
    p90_late = rank.ttft_col == "ttft_s"  # ranked by the mean TTFT: the p90 is read in the rows shown alone

    def read(cols):  # the points of a deployment whose saturation rate (and p90: p90_late) the plan reads
        c = rank.columns(cols)
        best, fewer = _picks(c, rank)
        if best is None:  # nothing of it feasible: its rows of most chips (_choose names one when no deployment is)
            return c["chips"] == np.max(c["chips"])
        # its best row's (the table shows it), and one replica fewer's where that row fails by saturating (_binds)
        named = fewer is not None and c["fits"][fewer] and c["saturated"][fewer]
        return np.isin(np.arange(len(cols["qps"])), [best, fewer] if named else [best])
    for dep, cols in zip(deployments, serve_deployments(spec, deployments, only_fitting=True, as_columns=True,
                                                        saturation_where=read, p90_where_saturation=p90_late,
                                                        **grid)):
        if cols is None:  # no room for a sequence anywhere: ruled out by the memory model
            configurations += len(dep["qps"]) * len(grid["max_num_seqs"]) * len(grid["max_num_batched_tokens"])
            no_room += 1
            continue
        if isinstance(cols, RooflineError):
            notes.append(f"{dep['chip'].name} tp={dep['tp']} pp={dep['pp']}: skipped ({cols})")
            continue
        rows.append(rank.columns(cols))
        configurations += len(cols["qps"])
    return rows, notes, configurations, no_room


@dataclass(frozen=True)
class _Rank:
    """How the plan ranks a deployment's points: the load (qps), prices per chip, targets and the TTFT column."""

    qps: float
    price: dict
    rank_by: str
    ttft_col: str
    targets: dict
    attention_dp: int

    def columns(self, cols: dict) -> dict:
        """cols (a deployment's columns: its chip a name or a list of it) with the planner's: replicas,
        qps_per_replica, chips, usd_per_hour (None without a price), feasible."""
        replicas = np.rint(self.qps / cols["qps"]).astype(int)
        chips = cols["tp"] * cols["pp"] * replicas * self.attention_dp
        price = self.price[cols["chip"] if isinstance(cols["chip"], str) else cols["chip"][0]]
        usd = [None] * len(chips) if price is None else price * chips
        feasible = (cols["fits"] & ~cols["saturated"] & (cols[self.ttft_col] <= self.targets["ttft_s"])
                    & ~(cols["tpot_s"] > self.targets["tpot_s"]))  # NaN: one generated token, no decode step
        return {**cols, "replicas": replicas, "qps_per_replica": cols["qps"], "chips": chips, "usd_per_hour": usd,
                "feasible": feasible}

    def key(self, cols: dict) -> tuple:
        """The sort keys of the rows, most significant first: cost (or chips), chips, TPOT."""
        if self.rank_by == "usd_per_hour":  # every chip has a price
            return np.asarray(cols["usd_per_hour"], dtype=np.float64), cols["chips"], cols["tpot_s"]
        return cols["chips"], cols["tpot_s"]


def _picks(cols: dict, rank: _Rank) -> tuple:
    """(the cheapest feasible row of one deployment, first of equal ones; the row _binds reads: one replica fewer, its
    engine knobs of lowest TTFT, first of equal ones, a NaN TTFT counting as none), None where there is none."""
    ok = np.flatnonzero(cols["feasible"])
    if not ok.size:
        return None, None
    best = ok[np.lexsort(tuple(k[ok] for k in reversed(rank.key(cols))))[0]]
    fewer = np.flatnonzero(cols["replicas"] == cols["replicas"][best] - 1)
    if not fewer.size:
        return best, None
    ttft = cols[rank.ttft_col][fewer]
    return best, fewer[np.argmin(np.where(np.isnan(ttft), np.inf, ttft))]


def _unmet(chips: list[str], tried, met: set, ttft_col: str, targets: dict) -> list[str]:
    """A note for each chip of the plan with no deployment in its table: none of its shardings runs the model, or
    its largest deployment tried (rows `tried`, by chips) and the first target that one misses."""
    largest = {c: r for c, r in tried.groupby("chip", sort=False).tail(1).set_index("chip").iterrows()}
    return [f"{c}: no deployment within max_chips meets the targets; its largest one tried ({_layout(largest[c])}): "
            f"{_failure(largest[c], ttft_col, targets)}" if c in largest else
            f"{c}: no sharding within max_chips runs it (no room for one sequence's KV cache beside the weights)"
            for c in chips if c not in met]


def _choose(spec, frames, rank: _Rank, notes, serve_kw, chips: list[str]) -> ServingPlan:
    import pandas as pd

    targets, ttft_col = rank.targets, rank.ttft_col
    picked = [(f, *_picks(f, rank)) for f in frames]
    picked = [(f, b, fewer) for f, b, fewer in picked if b is not None]
    tried = pd.DataFrame(joined_columns(frames, [len(p["qps"]) for p in frames])).sort_values(["chips"], kind="stable")
    if not picked:
        near = tried.iloc[-1]
        raise ScenarioError(f"{spec.name} at {targets['qps']:g} req/s: no deployment within max_chips meets the "
                            f"targets; the largest one tried ({near['chip']} {_layout(near)}): "
                            f"{_failure(near, ttft_col, targets)}")
    notes = notes + _unmet(chips, tried, {str(_at(f, b)["chip"]) for f, b, _ in picked}, ttft_col, targets)
    keys = [[k[b] for k in rank.key(f)] for f, b, _ in picked]  # each pick's sort keys, most significant first
    order = np.lexsort(np.array(keys, dtype=np.float64).T[::-1])  # stable: ties keep the deployments' order
    rows = [_row(picked[i][0], picked[i][1], _binds(picked[i], ttft_col, targets)) for i in order]
    cheapest = pd.DataFrame(joined_columns(rows, [1] * len(rows)))
    best = cheapest.iloc[0].to_dict()
    check = _recheck(spec, best, targets, serve_kw)
    misses, holds = _p90_misses(check, targets), None
    for _, row in cheapest.iloc[1:1 + _P90_TRIES].iterrows() if misses else ():
        other = _recheck(spec, row, targets, serve_kw)
        if not _p90_misses(other, targets):
            holds = {**{k: row[k] for k in _SHOWN}, f"{ttft_col}_p90": other.uncertainty[ttft_col]["p90"],
                     "tpot_s_p90": other.uncertainty["tpot_s"]["p90"]}
            break
    return ServingPlan(best={k: best[k] for k in _SHOWN}, table=cheapest[_SHOWN].reset_index(drop=True),
                       check=check, targets=targets, rank_by=rank.rank_by, notes=notes, p90_misses=misses,
                       p90_holds=holds)


def _recheck(spec, row, targets: dict, serve_kw: dict) -> ServingEstimate:
    """A table row re-evaluated by serve() over its whole deployment (dp = replicas), with its p10-p90 band."""
    return serve(spec, row["chip"], prompt_len=targets["prompt_len"], gen_len=targets["gen_len"], qps=targets["qps"],
                 tp=int(row["tp"]), pp=int(row["pp"]), ep=int(row["ep"]), dp=int(row["replicas"]),
                 max_num_seqs=int(row["max_num_seqs"]), max_num_batched_tokens=int(row["max_num_batched_tokens"]),
                 **serve_kw)


def _p90_misses(check: ServingEstimate, targets: dict) -> list[str]:
    """The targets a re-check misses at its band's p90, in words (none without a band: ideal efficiency): the TTFT
    target on the band of the TTFT it names (the mean's or the p90's)."""
    name, col = _TTFT[targets["ttft_percentile"]]
    return p90_misses(check.uncertainty, [(name, col, targets["ttft_s"]), ("TPOT", "tpot_s", targets["tpot_s"])]
                      ) if check.uncertainty else []


def _at(cols: dict, at) -> dict:
    """A deployment's columns at `at` (a row number: its values; a slice: its rows), a shared value as it is."""
    return {k: v if np.ndim(v) == 0 else np.asarray(v)[at] for k, v in cols.items()}


def _row(cols: dict, i: int, binds: str) -> dict:
    """Row i of a deployment's columns as one-row columns, with its binds."""
    return {**_at(cols, slice(i, i + 1)), "binds": binds}


def _binds(pick: tuple, ttft_col, targets) -> str:
    """Why the cheapest row of its chip and sharding is: what one replica fewer fails (_picks' row)."""
    cols, best, fewer = pick
    if fewer is None:
        return "one replica: the load fits on a single replica"
    n = int(cols["replicas"][best]) - 1
    return f"{n} {'replica fails' if n == 1 else 'replicas fail'}: {_failure(_at(cols, fewer), ttft_col, targets)}"