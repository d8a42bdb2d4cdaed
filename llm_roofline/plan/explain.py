"""The planner's explanation: what was chosen and why, or why nothing fits on each chip, with numbers."""

from __future__ import annotations

import math

from ..units import band_spans, fmt_seconds, p90_misses, sig3


def fmt_gb(nbytes) -> str:
    return f"{sig3(float(nbytes) / 1e9)} GB"


def describe(row) -> str:
    """One configuration (a row of Plan.configs) in a line: sharding, batch, replicas, latencies, cost, binding."""
    cost = row["usd_per_million_output_tokens"]
    cost_s = "$— (no price)" if cost is None or (isinstance(cost, float) and math.isnan(cost)) else f"${sig3(cost)}"
    tpot = row["tpot_s"]
    return (f"tp={row['tp']} pp={row['pp']} ep={row['ep']} batch {row['batch']} x {row['replicas']} replica(s) = "
            f"{row['chips_total']} chips; TTFT {fmt_seconds(row['ttft_s'])}, TPOT "
            f"{fmt_seconds(None if tpot is None or (isinstance(tpot, float) and math.isnan(tpot)) else tpot)}, "
            f"{cost_s} per 1M output tokens; binding: {row['binding_constraint']}")


def explain(spec, chips, targets, candidates, feasible, best_per_chip, search_logs, total_weight_bytes,
            rank_by, band=None) -> str:
    """The targets, the best configuration (with its p10-p90 `band`: Plan.best's uncertainty), and per chip its best
    configuration or why it has none. search_logs: {chip name: search.ChipSearchLog}."""
    def target(v):
        return fmt_seconds(v) if v else "any"

    qps, out_tps = targets["qps"], targets["output_tokens_per_s"]
    load = f"load {sig3(qps)} req/s ({sig3(out_tps)} output tok/s); " if qps else "one replica (no load target); "
    head = (f"Plan for {spec.name} (static batches: each batch prefilled together, then decoded; no default targets): "
            f"prompt {targets['prompt_len']}, gen {targets['gen_len']}; "
            f"TTFT <= {target(targets['ttft_s'])}, TPOT <= {target(targets['tpot_s'])}; " + load
            + f"<= {targets['max_chips']} chips; {targets['reserve']:.0%} of memory reserved; ranked by "
            + ("USD per 1M output tokens." if rank_by == "cost" else "total chips."))
    lines = [head]
    if len(feasible):
        named = (("TTFT", "ttft_s"), ("TPOT", "tpot_s"))  # a band without TPOT (None) where one token is generated
        spans = band_spans(band, named) if band else ""
        misses = p90_misses(band, [(k, c, targets[c]) for k, c in named]) if band else []
        lines.append(f"Best: {feasible.iloc[0]['chip']} " + describe(feasible.iloc[0])
                     + (f"; p10–p90 {spans}" if spans else "")
                     + ("; at its p90 error it misses " + " and ".join(misses) if misses else ""))
    else:
        lines.append("No configuration meets every constraint.")
    row_of = {name: i for i, name in enumerate(best_per_chip["chip"])}  # one row per chip
    for chip in chips:
        if chip.name in row_of:  # the chip's best row
            lines.append(f"  {chip.name}: " + describe(best_per_chip.iloc[row_of[chip.name]]))
        else:
            lines.append(f"  {chip.name}: no configuration — " + _why_not(spec, chip, targets, candidates,
                                                                          search_logs[chip.name], total_weight_bytes))
    return "\n".join(lines)


def _why_not(spec, chip, targets, candidates, log, total_weight_bytes) -> str:
    """Why nothing is feasible on this chip, with numbers: the first constraint (memory, ttft, tpot, chips)
    that every remaining candidate fails, and the best value reached."""
    if log.shardings == 0:
        return (f"no tp x pp x ep within {targets['max_chips']} chips divides the model ({spec.n_layers} layers, heads "
                f"{sorted({g.attention.n_heads for g in spec.layer_groups})}, KV heads "
                f"{sorted({g.attention.n_kv_heads for g in spec.layer_groups})})"
                + (" and forms a TPU slice (a power of two chips)" if chip.scaleup.topology == "torus" else "")
                + (f"; {log.errors[0]}" if log.errors else ""))
    sub = candidates[candidates["chip"] == chip.name] if len(candidates) else candidates
    if len(sub) == 0 or not sub["fits"].any():
        return _why_no_memory(chip, targets, log, total_weight_bytes)
    fit = sub[sub["fits"]]
    if targets["ttft_s"] is not None and not fit["meets_ttft"].any():
        r = fit.loc[fit["ttft_s"].idxmin()]
        return (f"the fastest TTFT among configurations that fit is {fmt_seconds(r['ttft_s'])} (tp={r['tp']} "
                f"pp={r['pp']} batch {r['batch']}) > target {fmt_seconds(targets['ttft_s'])}")
    ok = fit[fit["meets_ttft"]]
    if targets["tpot_s"] is not None and not ok["meets_tpot"].any():
        r = ok.loc[ok["tpot_s"].idxmin()]
        return (f"the fastest TPOT among configurations that fit and meet TTFT is {fmt_seconds(r['tpot_s'])} "
                f"(tp={r['tp']} pp={r['pp']} batch {r['batch']}) > target {fmt_seconds(targets['tpot_s'])}")
    ok = ok[ok["meets_tpot"]]
    r = ok.loc[ok["chips_total"].idxmin()]
    return (f"the load needs >= {r['chips_total']} chips (tp={r['tp']} pp={r['pp']} batch {r['batch']} x "
            f"{r['replicas']} replicas) > max_chips {targets['max_chips']}")



def _why_no_memory(chip, targets, log, total_weight_bytes) -> str:
    """Nothing fits in memory: the weights alone exceed every chip allowed, or the smallest footprint (weights + one
    sequence per micro-batch) exceeds one chip's usable bytes."""
    max_chips, reserve = targets["max_chips"], targets["reserve"]
    usable_bytes = chip.engine_capacity_bytes * (1 - reserve)
    if total_weight_bytes > max_chips * usable_bytes:
        cap = chip.engine_capacity_bytes
        return (f"needs >= {fmt_gb(total_weight_bytes)} of weights, {max_chips} x {fmt_gb(cap)} "
                f"{chip.engine_capacity_label} = {fmt_gb(max_chips * cap)} available "
                f"({fmt_gb(max_chips * usable_bytes)} after the {reserve:.0%} reserve)")
    if not log.memory_rows:
        return "every sharding failed: " + "; ".join(log.errors[:3])

    def need_bytes(r):  # weights + one sequence per micro-batch
        return r["weight_bytes_per_chip"] + r["bytes_per_sequence_per_chip"] * r["pp"]

    m = min(log.memory_rows, key=need_bytes)
    sequences_bytes = m["bytes_per_sequence_per_chip"] * m["pp"]
    return (f"the smallest per-chip footprint is {fmt_gb(need_bytes(m))} (tp={m['tp']} pp={m['pp']}: weights "
            f"{fmt_gb(m['weight_bytes_per_chip'])} + {m['pp']} sequence(s) of KV and activations at "
            f"{targets['prompt_len'] + targets['gen_len']} tokens {fmt_gb(sequences_bytes)}) > "
            f"{fmt_gb(usable_bytes)} usable per chip ({fmt_gb(chip.engine_capacity_bytes)} "
            f"{chip.engine_capacity_label} - {reserve:.0%})")
