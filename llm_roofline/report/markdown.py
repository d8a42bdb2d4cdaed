"""The Markdown report: scenario, headline per chip, phase summaries, top ops, memory, critical thresholds,
assumptions, charts. Tables come from report.text's row builders and display specs (rendered with
markdown=True), so the terminal `estimate` output and the report show the same numbers the same way."""

from __future__ import annotations

import math
from typing import Sequence

from ..units import eng, fmt_seconds, sig3
from .table import _align
from .table import render as _render
from .text import OP_DISPLAY, PHASE_DISPLAY, efficiency_phrase, headline, memory_phrase, op_rows, phase_rows


def render(rows, fmt, display) -> str:
    """report.table.render for Markdown, plus the alignment row GitHub needs to right-align numeric columns
    (`|------:|`); table.render's 'github' style pads the text but leaves the separator without colons."""
    text = _render(rows, fmt, display)
    if fmt != "markdown" or not rows:
        return text
    display = list(display)
    body = [[(f(r[k]) if f else r[k]) for _, k, f in display] for r in rows]
    aligns = _align(body, len(display))
    lines = text.split("\n")
    cells = lines[1].strip().strip("|").split("|")
    if len(cells) == len(aligns):
        lines[1] = "|" + "|".join(c[:-1] + ":" if a == "right" and len(c) > 1 else c
                                  for c, a in zip(cells, aligns)) + "|"
    return "\n".join(lines)


def _gb(v: float) -> str:
    return f"{sig3(v / 1e9)} GB"


def _pct(v: float) -> str:
    return f"{v:.1%}"


HEADLINE_DISPLAY = [
    ("chip", "chip", None), ("chips", "chips", None), ("fits", "fits", lambda v: "yes" if v else "**NO**"),
    ("TTFT", "ttft_s", fmt_seconds), ("TPOT", "tpot_s", fmt_seconds), ("e2e", "e2e_s", fmt_seconds),
    ("tok/s", "throughput", sig3), ("tok/s/chip", "throughput_per_chip", sig3),
    ("tok/s/user", "per_user", lambda v: "—" if v is None else sig3(v)),
    ("prefill bound", "prefill_bound", None), ("decode bound", "decode_bound", None),
    ("memory/chip", "per_chip_bytes", _gb), ("usable/chip", "usable_bytes", _gb), ("max batch", "max_batch", str),
    ("efficiency (fit)", "efficiency", None),
]

CRITICAL_TEXT = {
    "intensity_flops_per_byte": ("critical intensity", "FLOP/B",
                                 "peak FLOP/s ÷ HBM bytes/s: an op below it is memory-bound"),
    "batch_tokens": ("critical batch", "tokens/step",
                     "tokens per step at which weight-bound matmuls turn compute-bound"),
    "marlin_batch_tokens": ("critical batch, calibrated", "tokens/step",
                            "the same at the weight-only kernel's tensor ceiling (Marlin: the chip's moe_int4 fit)"),
    "tp_limit_throughput": ("TP limit (throughput)", "chips",
                            "Y < F·W/C: past this tensor-parallel degree the MLP's collectives outlast its FLOPs"),
    "tp_limit_latency": ("TP limit (decode, this batch)", "chips",
                         "Y < F/(B·W_hbm/W): past it a decode step's collectives outlast its weight loads"),
    "dp_critical_batch_tokens": ("data-parallel critical batch", "tokens/chip",
                                 "data parallelism over the scale-up link stays compute-bound above it"),
    "dcn_critical_batch_tokens": ("cross-node critical batch", "tokens/node",
                                  "data parallelism over the scale-out link (IB / DCN) stays compute-bound above it"),
    "moe_batch_tokens": ("MoE critical batch", "tokens/step",
                         "critical batch x E/k: each routed expert sees k/E of the tokens (the seeds' MoE rule)"),
}


def headline_rows(estimates) -> list[dict]:
    rows = []
    for e in estimates:
        m = e.memory
        rows.append(dict(chip=e.chip, chips=e.scenario["chips"], fits=m.fits, ttft_s=e.ttft_s, tpot_s=e.tpot_s,
                         e2e_s=e.e2e_s, throughput=e.throughput_tokens_per_s,
                         throughput_per_chip=e.throughput_tokens_per_s_per_chip, prefill_bound=e.prefill.bound,
                         decode_bound=e.decode.bound if e.decode else "—", per_chip_bytes=m.per_chip_bytes,
                         usable_bytes=m.usable_bytes, max_batch=m.max_batch, per_user=e.tokens_per_s_per_user,
                         efficiency=efficiency_phrase(e)))
    return rows


def fit_warnings(estimates) -> list[str]:
    out = []
    for e in estimates:
        m = e.memory
        if not m.fits:
            heavy = m.per_chip_weight_bytes > m.usable_bytes
            why = (f"weights alone exceed the usable {m.capacity_label}" if heavy else
                   f"the largest batch that fits at this context is {m.max_batch}")
            out.append(f"**Does not fit on {e.chip} ×{e.scenario['chips']}**: {_gb(m.per_chip_bytes)} per chip "
                       f"needed, {memory_phrase(m)} ({why}). Its times are what the chip would "
                       f"take if it did fit.")
        out += [f"**Warning ({e.chip})**: {w}" for w in e.warnings if not w.startswith("does not fit")]
    return out


def scenario_table(est, prompt: str | None = None, chips: str | None = None) -> str:
    s = est.scenario
    rows = [
        ("model", est.model),
        ("chip", chips or est.chip),
        ("batch (sequences per replica)", s["batch"]),
        ("prompt / generated tokens", f"{prompt or s['prompt_len']} / {s['gen_len']}"),
        ("sharding", f"tp {s['tp']}, pp {s['pp']}, ep {s['ep']}, dp {s['dp']} → {s['chips']} chips"
                     + (" (sequence parallel)" if s.get("sequence_parallel") else "")),
        ("dtypes", f"weights {s['weight_dtype']}, activations {s['act_dtype']}, KV cache {s['kv_dtype']}, "
                   f"compute {s['compute_dtype']}"),
        ("attention", s.get("attention", "fused")),
        ("efficiency", est.efficiency_mode + (" (pure roofline: 100 % of peak FLOP/s and bandwidth)"
                                              if est.efficiency_mode == "ideal" else
                                              " (fitted kernel efficiency; each chip's fit is named in the headline)")),
        ("memory", f"gpu_memory_utilization {est.memory.gpu_memory_utilization:g} of each chip's memory (the "
                   "driver's total where sourced, else the datasheet HBM)"),
    ]
    return render([{"item": k, "value": str(v)} for k, v in rows], "markdown",
                  [("scenario", "item", None), ("", "value", None)])


def memory_table(est) -> str:
    m = est.memory
    cap = m.usable_bytes
    rows = [dict(part="weights", b=m.per_chip_weight_bytes), dict(part="KV cache (prompt + gen tokens)", b=m.per_chip_kv_cache_bytes),
            dict(part="activations (peak, prefill)", b=m.per_chip_activation_bytes),
            dict(part="**total**", b=m.per_chip_bytes),
            dict(part=f"usable ({m.gpu_memory_utilization:g} × {_gb(m.capacity_bytes)} {m.capacity_label})", b=cap),
            dict(part="headroom" if m.fits else "**shortfall**", b=cap - m.per_chip_bytes)]
    for r in rows:
        r["share"] = r["b"] / cap if cap else math.nan
    return render(rows, "markdown", [("per chip", "part", None), ("bytes", "b", _gb), ("of usable", "share", _pct)])


def critical_table(est) -> str:
    rows = []
    for k, v in est.critical.items():
        label, unit, what = CRITICAL_TEXT.get(k, (k.replace("_", " "), "", ""))
        val = float(v) if not hasattr(v, "__len__") else float(v[0])
        rows.append(dict(name=label, value=f"{sig3(val)} {unit}".strip(), meaning=what))
    return render(rows, "markdown", [("threshold", "name", None), ("value", "value", None), ("meaning", "meaning", None)])


def top_ops_table(est, phase: str, n: int = 8) -> str:
    summary = est.prefill if phase == "prefill" else est.decode
    rows = sorted(op_rows(est, phase, summary.t_s), key=lambda r: -r["share"])[:n]
    return render(rows, "markdown", OP_DISPLAY)


def _phase_prose(est) -> str:
    """One paragraph that reads the phase table for the reader."""
    p, d = est.prefill, est.decode
    crit = est.critical.get("intensity_flops_per_byte")
    parts = [f"Prefill runs at {sig3(p.intensity)} FLOP/B against the chip's critical {sig3(crit)} FLOP/B and is "
             f"{p.bound}-bound ({', '.join(f'{k} {v:.0%}' for k, v in p.bound_shares.items() if v > 0.005)} of its time)."]
    if d is not None:
        parts.append(f"A decode step runs at {sig3(d.intensity)} FLOP/B and is {d.bound}-bound; it reads "
                     f"{eng(d.weight_bytes, 'B')} of weights and {eng(d.kv_read_bytes, 'B')} of KV cache "
                     f"(attention core: {sig3(d.gqa_intensity)} FLOP per KV byte).")
    return " ".join(parts)


def chip_section(est, level: str = "##", top_n: int = 8) -> str:
    out = [f"{level} {est.chip} ×{est.scenario['chips']}", ""]
    out += [f"- {line}" for line in headline(est)[1:]]
    out += ["", f"{level}# Phases", "", "Totals over the model replica; decode is the mean step.", "",
            render(phase_rows(est), "markdown", PHASE_DISPLAY), "", _phase_prose(est)]
    for phase, summary in (("prefill", est.prefill), ("decode", est.decode)):
        if summary is None:
            continue
        what = "per chip, per layer instance" + (", mean step" if phase == "decode" else "")
        out += ["", f"{level}# Top {top_n} {phase} ops by time ({what})", "", top_ops_table(est, phase, top_n)]
    out += ["", f"{level}# Memory per chip", "", memory_table(est)]
    out += ["", f"{level}# Critical thresholds", "", critical_table(est)]
    return "\n".join(out)


def assumptions_block(estimates) -> list[str]:
    seen: dict[str, list[str]] = {}
    for e in estimates:
        for a in e.assumptions:
            seen.setdefault(a, []).append(e.chip)
    n = len(estimates)
    return [f"- {a}" if len(chips) == n else f"- ({', '.join(chips)}) {a}" for a, chips in seen.items()]


CHART_CAPTIONS = {
    "roofline": ("Roofline", "every op of both phases at its arithmetic intensity and achieved FLOP/s per chip; "
                             "the roof is the dense peak of the compute dtype, the slope the HBM bandwidth, the "
                             "dashed line the ridge."),
    "frontier": ("Latency–throughput frontier", "TPOT against output tokens/s per chip over a batch sweep, "
                                                "one curve per prompt length; ★ marks the largest batch that fits."),
    "breakdown": ("Time breakdown", "wall time of prefill, of a decode step and of the whole request, split by "
                                    "op category."),
    "memory": ("Memory per chip vs batch", "weights, KV cache and peak activations against the usable memory "
                                            "(gpu_memory_utilization × the driver's total or the HBM)."),
}


def report_markdown(estimates, *, images: dict[str, str] | None = None, title: str | None = None,
                    notes: Sequence[str] = (), command: str | None = None, files: Sequence[str] = ()) -> str:
    """The whole report.md for one scenario on one or more chips. images: {chart: relative path}."""
    from ..version import __version__

    ests = list(estimates)
    e0 = ests[0]
    chips = ", ".join(e.chip for e in ests)
    out = [f"# {title or f'{e0.model} on {chips}'}", ""]
    out += [f"Generated by llm_roofline {__version__}" + (f": `{command}`" if command else "") + ". "
            "Units: SI prefixes, decimal (1 GB = 1e9 B); FLOP = 2 × multiply-add; chip peaks are dense.", ""]
    out += ["## Scenario", "", scenario_table(e0, chips=chips), ""]
    for note in notes:  # one paragraph each
        out += [note, ""]
    out += ["## Headline", ""]
    warn = fit_warnings(ests)
    if warn:
        out += [*warn, ""]
    out += [render(headline_rows(ests), "markdown", HEADLINE_DISPLAY), ""]
    out += ["TTFT = prefill time; TPOT = mean decode step; e2e = TTFT + all decode steps; tok/s = batch × gen × "
            "dp / e2e (output tokens, prefill time included).", ""]
    if images:
        out += ["## Charts", ""]
        for name, path in images.items():
            cap, what = CHART_CAPTIONS.get(name, (name, ""))
            out += [f"**{cap}** — {what}", "", f"![{cap}]({path})", ""]
    for e in ests:
        out += [chip_section(e), ""]
    out += ["## Assumptions", ""] + (assumptions_block(ests) or ["- none recorded"]) + [""]
    if files:
        out += ["## Files", ""] + [f"- [`{f}`]({f}) — {_FILE_TEXT.get(f, '')}" for f in files] + [""]
    return "\n".join(out)


_FILE_TEXT = {
    "ops.csv": "one row per chip, phase and op; raw SI values (seconds, bytes, FLOP) plus the scenario metadata",
    "summary.json": "headline, phase summaries, memory, critical thresholds and metadata per chip, raw SI values",
}


# ------------------------------------------------------------------------------------ context study
def context_study_markdown(estimates, *, image: str | None = None, title: str | None = None,
                           notes: Sequence[str] = (), command: str | None = None) -> str:
    """A prefill-vs-decode study: one model and chip across prompt lengths (one Estimate per length)."""
    from ..version import __version__
    from .categories import CATEGORIES, time_breakdown

    ests = sorted(estimates, key=lambda e: e.scenario["prompt_len"])
    e0 = ests[0]
    out = [f"# {title or f'Prefill vs decode across context: {e0.model} on {e0.chip}'}", ""]
    out += [f"Generated by llm_roofline {__version__}" + (f": `{command}`" if command else "") + ".", ""]
    prompts = ", ".join(str(e.scenario["prompt_len"]) for e in ests)
    out += ["## Scenario", "", scenario_table(e0, prompt=prompts), ""]
    for note in notes:  # one paragraph each
        out += [note, ""]
    rows = []
    for e in ests:
        bd = time_breakdown(e)
        pre, dec = bd["prefill"], bd.get("decode")
        rows.append(dict(prompt=e.scenario["prompt_len"], ttft=e.ttft_s, tpot=e.tpot_s, e2e=e.e2e_s,
                         pre_bound=", ".join(f"{k} {v:.0%}" for k, v in e.prefill.bound_shares.items() if v > 0.005),
                         pre_attn=pre["attention"] / e.prefill.t_s,
                         dec_bound=", ".join(f"{k} {v:.0%}" for k, v in e.decode.bound_shares.items() if v > 0.005)
                         if e.decode else "—",
                         dec_attn=dec["attention"] / e.decode.t_s if dec else math.nan,
                         ratio_pre=e.prefill.attention_mlp_flop_ratio,
                         kv=e.decode.kv_read_bytes if e.decode else math.nan,
                         w=e.decode.weight_bytes if e.decode else math.nan,
                         dec_int=e.decode.intensity if e.decode else math.nan,
                         mem=e.memory.per_chip_bytes, fits=e.memory.fits))
    display = [("prompt", "prompt", str), ("TTFT", "ttft", fmt_seconds), ("TPOT", "tpot", fmt_seconds),
               ("e2e", "e2e", fmt_seconds), ("prefill: time by bound", "pre_bound", None),
               ("prefill: attention share", "pre_attn", _pct), ("prefill attn/MLP FLOPs", "ratio_pre", sig3),
               ("decode: time by bound", "dec_bound", None), ("decode: attention share", "dec_attn", _pct),
               ("decode KV read/step", "kv", lambda v: eng(v, "B")), ("decode weights read/step", "w", lambda v: eng(v, "B")),
               ("decode FLOP/B", "dec_int", sig3), ("memory/chip", "mem", _gb),
               ("fits", "fits", lambda v: "yes" if v else "**NO**")]
    out += ["## How the split moves with context", "", render(rows, "markdown", display), ""]
    out += ["attention share = time in the attention core and the per-head work around it (rope, KV-cache write) "
            f"over the phase time; the other categories are {', '.join(c for c in CATEGORIES if c != 'attention')}.",
            ""]
    if image:
        out += [f"![prefill vs decode across context]({image})", ""]
    out += ["## Per context length", ""]
    for e in ests:
        out += [f"### prompt {e.scenario['prompt_len']}", "", render(phase_rows(e), "markdown", PHASE_DISPLAY), ""]
    out += ["## Assumptions", ""] + (assumptions_block(ests) or ["- none recorded"]) + [""]
    return "\n".join(out)
