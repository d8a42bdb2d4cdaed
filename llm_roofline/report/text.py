"""An Estimate as text: headline, phase summaries, per-op tables, memory, assumptions (tables or markdown)."""

from __future__ import annotations

import math

from ..units import band_span, band_spans, eng, fmt_seconds, sig3
from .table import render


def _gb(v):
    return f"{sig3(v / 1e9)} GB"


WIDTH = 100  # columns of the default (compact) output


def _wrap(text: str, width: int | None) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False) if width else [text]


def _band(est):
    """' (62.0–81.3 ms)': the p10–p90 range of a headline time from est.uncertainty ('' when there is none)."""
    u = getattr(est, "uncertainty", None) or {}

    def text(key: str) -> str:
        b = u.get(key)
        if not b or b.get("p10") is None or b.get("p90") is None:
            return ""
        return f" ({fmt_seconds(b['p10'])}–{fmt_seconds(b['p90'])})"

    return text


def serving_band_text(u: dict) -> str:
    """The line under a served point: p10-p90 of TTFT, its p90, TPOT (where there is one) and, where it moves (a
    closed loop), throughput."""
    tok = u["output_tokens_per_s"]
    parts = [band_spans(u, (("TTFT", "ttft_s"), ("p90 TTFT", "ttft_p90_s"), ("TPOT", "tpot_s")))] + (
        [f"{band_span(u, 'output_tokens_per_s', sig3)} tok/s"] if tok["p10"] != tok["p90"] else [])
    return (f"p10–p90 (every kernel at its fits' held-out p10 / p90 error through the same queue, and the serving "
            f"model's own measured error at this load): {', '.join(parts)}.")


def plan_band_text(u: dict, ttft_percentile: str) -> str:
    """A plan's re-check band: p10-p90 of TTFT, of its p90 where the target is on it, and of TPOT."""
    p90 = (("p90 TTFT", "ttft_p90_s"),) if ttft_percentile == "p90" else ()
    return "p10–p90 " + band_spans(u, (("TTFT", "ttft_s"),) + p90 + (("TPOT", "tpot_s"),))


def efficiency_phrase(est) -> str:
    """The mode and the chip's fit: 'calibrated (h100-sxm fit)', 'calibrated: tpu default (uncalibrated)', 'ideal'."""
    from ..chip_fits import efficiency_text

    return efficiency_text(est.efficiency_mode, est.efficiency)


def memory_phrase(m) -> str:
    """'76.5 GB usable (0.9 x 85.0 GB driver total)': what a MemorySummary's fit is checked against."""
    return f"{_gb(m.usable_bytes)} usable ({m.gpu_memory_utilization:g} x {_gb(m.capacity_bytes)} {m.capacity_label})"


def per_user(est) -> str:
    """', 142 tok/s per user' (1 / TPOT: what one user sees while decoding), '' without a decode step."""
    return f", {sig3(est.tokens_per_s_per_user)} tok/s per user" if est.tokens_per_s_per_user else ""


def headline(est, width: int | None = None, warn: bool = True) -> list[str]:
    """Scenario, TTFT/TPOT/e2e/throughput (and the ideal bound beside a calibrated number), memory, critical
    intensity; lines wrapped at `width` columns when given. warn: a line when it does not fit (the CLI puts
    est.warnings on stderr instead)."""
    s = est.scenario
    layout = f"tp {s['tp']} pp {s['pp']} ep {s['ep']} dp {s['dp']}"
    if s.get("attention_dp", 1) > 1:
        layout += f" attention_dp {s['attention_dp']} moe_tp {s['moe_tp']} moe_ep {s['moe_ep']}"
    what = f"{est.model} on {est.chip} x{s['chips']} — batch {s['batch']}, prompt {s['prompt_len']}, gen {s['gen_len']}"
    dtypes = f"weights {s['weight_dtype']}, act {s['act_dtype']}, KV {s['kv_dtype']}; efficiency: {efficiency_phrase(est)}"
    lines = (_wrap(f"{what}; {layout}", width) + _wrap(dtypes, width)) if width else [f"{what}, {layout}; {dtypes}"]
    m = est.memory
    if warn and not m.fits:
        lines.append(f"DOES NOT FIT: {_gb(m.per_chip_bytes)} per chip needed, {memory_phrase(m)} "
                     f"(max batch at this context: {m.max_batch}). Times below assume it did.")
    band = _band(est)
    tpot = fmt_seconds(est.tpot_s) + band("tpot_s") if est.tpot_s is not None else "— (gen_len 1)"
    lines += _wrap(f"TTFT {fmt_seconds(est.ttft_s)}{band('ttft_s')} | TPOT {tpot} | e2e {fmt_seconds(est.e2e_s)}"
                   f"{band('e2e_s')} | throughput {sig3(est.throughput_tokens_per_s)} tok/s "
                   f"({sig3(est.throughput_tokens_per_s_per_chip)} tok/s/chip{per_user(est)})", width)
    if est.uncertainty:
        lines += _wrap("(p10–p90 in brackets: the held-out error of the calibrated kernel fits, wider where a fit "
                       "is borrowed)", width)
    if est.ideal:
        i = est.ideal
        lines += _wrap(f"ideal roofline bound: TTFT {fmt_seconds(i['ttft_s'])} | TPOT {fmt_seconds(i['tpot_s'])} | "
                       f"e2e {fmt_seconds(i['e2e_s'])} | throughput {sig3(i['throughput_tokens_per_s'])} tok/s", width)
    lines += _wrap(f"memory per chip: weights {_gb(m.per_chip_weight_bytes)} + KV {_gb(m.per_chip_kv_cache_bytes)} "
                   f"+ activations {_gb(m.per_chip_activation_bytes)} = {_gb(m.per_chip_bytes)} of "
                   f"{memory_phrase(m)}: {'fits' if m.fits else 'does NOT fit'}; max batch {m.max_batch}", width)
    c = est.critical
    marlin = (f" (~{sig3(c['marlin_batch_tokens'])} at the weight-only kernel's tensor ceiling, calibrated)"
              if "marlin_batch_tokens" in c else "")
    lines += _wrap(f"critical intensity {sig3(c['intensity_flops_per_byte'])} FLOP/B: matmuls turn compute-bound "
                   f"above ~{sig3(c['batch_tokens'])} tokens per step{marlin}", width)
    return lines


def phase_rows(est) -> list[dict]:
    rows = []
    for name, p in (("prefill", est.prefill), ("decode (mean step)", est.decode)):
        if p is None:
            continue
        rows.append(dict(phase=name, t_s=p.t_s, t_lower_s=p.t_lower_s, t_upper_s=p.t_upper_s,
                         t_compute_s=p.t_compute_s, t_memory_s=p.t_memory_s, t_comm_s=p.t_comm_s,
                         comm_share=p.comm_share, bound=p.bound, flops=p.flops, bytes=p.bytes,
                         intensity=p.intensity, kv_read_bytes=p.kv_read_bytes,
                         attention_mlp_flop_ratio=p.attention_mlp_flop_ratio, gqa_intensity=p.gqa_intensity,
                         bound_shares=", ".join(f"{k} {v:.0%}" for k, v in p.bound_shares.items() if v > 0.005)))
    return rows


PHASE_DISPLAY = [
    ("phase", "phase", None), ("time", "t_s", fmt_seconds), ("compute", "t_compute_s", fmt_seconds),
    ("memory", "t_memory_s", fmt_seconds), ("comm", "t_comm_s", fmt_seconds),
    ("comm %", "comm_share", lambda v: f"{v:.1%}"), ("bound", "bound", None),
    ("time by bound", "bound_shares", None), ("FLOPs", "flops", lambda v: eng(v, "FLOP")),
    ("bytes", "bytes", lambda v: eng(v, "B")), ("FLOP/B", "intensity", sig3),
    ("KV read", "kv_read_bytes", lambda v: eng(v, "B")), ("attn/MLP FLOPs", "attention_mlp_flop_ratio", sig3),
    ("GQA FLOP/KV-B", "gqa_intensity", sig3),
]


def op_rows(est, phase: str, phase_t_s: float) -> list[dict]:
    df = est.ops[est.ops.phase == phase]
    rows = []
    for r in df.itertuples():
        rows.append(dict(name=r.name, group=r.group, count=r.count, t_s=r.t_s, share=r.t_s * r.count / phase_t_s if phase_t_s else 0.0,
                         bound=r.bound, intensity=r.intensity, flops=r.flops, bytes=r.bytes, comm_bytes=r.comm_bytes,
                         formula=r.formula))
    return rows


OP_DISPLAY = [
    ("op", "name", None), ("group", "group", None), ("count", "count", lambda v: f"{v:g}"),
    ("time/inst", "t_s", fmt_seconds), ("% phase", "share", lambda v: f"{v:.1%}"), ("bound", "bound", None),
    ("FLOP/B", "intensity", lambda v: "—" if math.isinf(v) else sig3(v)), ("FLOPs", "flops", lambda v: eng(v, "FLOP")),
    ("HBM bytes", "bytes", lambda v: eng(v, "B")), ("comm bytes", "comm_bytes", lambda v: eng(v, "B") if v else ""),
]


COMPACT_PHASE_DISPLAY = [
    ("phase (all chips)", "phase", None), ("time", "t_s", fmt_seconds), ("compute", "t_compute_s", fmt_seconds),
    ("memory", "t_memory_s", fmt_seconds), ("comm", "t_comm_s", fmt_seconds), ("bound", "bound", None),
    ("FLOPs", "flops", lambda v: eng(v, "FLOP")), ("HBM", "bytes", lambda v: eng(v, "B")),
    ("FLOP/B", "intensity", sig3),
]


def estimate_text(est, markdown: bool = False, explain: bool = False, ops: bool = False) -> str:
    """The default is compact (headline, memory, one row per phase, assumptions; <= ~20 lines of <= 100
    columns); ops (or explain, or markdown) adds the full phase table and every op per phase."""
    fmt = "markdown" if markdown else "table"
    out = headline(est, width=None if markdown else WIDTH, warn=markdown)
    if not (ops or explain or markdown):
        out += ["", render(phase_rows(est), fmt, COMPACT_PHASE_DISPLAY)]
        notes = [a for a in est.assumptions if not a.startswith("efficiency:")]
        if notes:
            out += [""] + _wrap(f"{len(notes)} assumption(s) behind these numbers: --ops lists them with every "
                                "operator, --format json has everything.", WIDTH)
        return "\n".join(out)
    out += ["", "phases (totals over all chips of the replica; times are wall clock)",
            render(phase_rows(est), fmt, PHASE_DISPLAY)]
    for phase, summary in (("prefill", est.prefill), ("decode", est.decode)):
        if summary is None:
            continue
        title = "prefill ops (per chip, per instance)" if phase == "prefill" else \
            "decode ops (per chip, per instance, mean step)"
        out += ["", f"{'### ' if markdown else ''}{title}", render(op_rows(est, phase, summary.t_s), fmt, OP_DISPLAY)]
        if explain:
            out += [""] + [f"  {r['name']:<22} {r['formula']}" for r in op_rows(est, phase, summary.t_s)]
    if est.assumptions:
        out += ["", "assumptions:"] + [f"- {a}" for a in est.assumptions]
    return "\n".join(out)
