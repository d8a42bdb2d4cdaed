"""Time-by-category charts: the breakdown of prefill, a decode step and the whole request per chip, and the
prefill-vs-decode study across context lengths. Both render the Estimates they are given (their op rows
rolled up by categories.time_breakdown, their phase summaries' bound shares)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..units import as_list, sig3
from .categories import CATEGORIES, time_breakdown
from .chart_base import (CATEGORY_COLORS, DPI, PlotResult, finish, log_axis, pyplot, scenario_line,
                         subplots, suptitle, tokens_label, wrap)
from .text import efficiency_phrase

BOUND_COLORS = (("compute", "#c44e52"), ("memory", "#4c72b0"), ("comm", "#ff7f0e"))


def time_unit(max_s: float) -> tuple[str, float]:
    """ONE display unit for every panel of a chart whose longest time is max_s seconds: ('s', 1) from 100 s,
    ('ms', 1e3) from 2 ms (a 1.85 s request reads 1850 ms beside a 7.05 ms decode step), else ('µs', 1e6)."""
    return ("s", 1.0) if max_s >= 100 else ("ms", 1e3) if max_s >= 2e-3 else ("µs", 1e6)


def _breakdown_panel(ax, phase, title, ests, bds, used, unit_scale) -> None:
    chips = [e.chip for e in ests if phase in bds[e.chip]]
    unit, scale = unit_scale
    bottom = np.zeros(len(chips))
    x = np.arange(len(chips))
    for cat in used:
        vals = np.array([bds[c][phase][cat] for c in chips]) * scale
        ax.bar(x, vals, 0.6, bottom=bottom, color=CATEGORY_COLORS[cat], label=cat, edgecolor="white", lw=0.5)
        bottom += vals
    for xi, t in zip(x, bottom):
        ax.text(xi, t, f"{sig3(t)} {unit}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, chips, fontsize=8, rotation=20 if len(chips) > 2 else 0)
    ax.set_xlim(-0.7, len(chips) - 0.3)
    ax.set_ylim(0, max(bottom) * 1.12)
    ax.set_ylabel(f"time ({unit})")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.25)


def plot_breakdown(estimates, path=None, *, dpi: int = DPI) -> PlotResult:
    """Stacked bars of wall time by category: one panel per phase (prefill = TTFT, decode mean step = TPOT,
    whole request = e2e), one bar per chip."""
    plt = pyplot()
    ests = as_list(estimates)
    bds = {est.chip: time_breakdown(est) for est in ests}
    panels = [("prefill", "prefill (TTFT)"), ("decode", "decode step (TPOT)"), ("request", "whole request (e2e)")]
    panels = [p for p in panels if any(p[0] in b for b in bds.values())]
    fig, axes = subplots(plt, len(panels), width_each=max(3.2, 1.3 + 1.1 * len(ests)), height=4.6)
    used = [c for c in CATEGORIES if any(b[ph][c] > 0 for b in bds.values() for ph in b)]
    unit_scale = time_unit(max(sum(b[ph].values()) for b in bds.values() for ph in b))
    for ax, (phase, title) in zip(axes, panels):
        _breakdown_panel(ax, phase, title, ests, bds, used, unit_scale)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles[::-1], labels[::-1], loc="outside right center", fontsize=8)
    suptitle(fig, f"Time by op category — {scenario_line(ests[0])}", fontsize=9)
    fits = "; ".join(f"{e.chip}: {efficiency_phrase(e)}" for e in ests)
    fig.supxlabel(wrap(f"fit — {fits}", int(fig.get_figwidth() * 14)), fontsize=7.5, color="0.25")
    return finish(PlotResult(fig, {"breakdown": bds, "categories": list(CATEGORIES), "unit": unit_scale[0]}), path,
                  dpi)


# ------------------------------------------------------------------------------------ context study
def category_shares(ests, phase: str) -> dict[str, np.ndarray]:
    """Per category, its share of the phase's time in each Estimate (0 where the phase is absent)."""
    bds = [time_breakdown(e).get(phase) for e in ests]
    return {c: np.array([(b[c] / sum(b.values()) if b and sum(b.values()) else 0.0) for b in bds])
            for c in CATEGORIES}


def _share_panel(ax, phase, shares, x, labels) -> None:
    """100 % stacked bars of one phase's time by category, one bar per context length."""
    bottom = np.zeros(len(x))
    for c in CATEGORIES:
        if shares[c].any():
            ax.bar(x, shares[c] * 100, 0.7, bottom=bottom, color=CATEGORY_COLORS[c], label=c, edgecolor="white",
                   lw=0.4)
            bottom += shares[c] * 100
    ax.set_xticks(x, labels)
    ax.set_ylim(0, 100)
    ax.set_ylabel("share of phase time (%)")
    ax.set_xlabel("prompt length (tokens)")
    ax.set_title("prefill (TTFT)" if phase == "prefill" else "decode step (TPOT)", fontsize=10)


def _latency_panel(ax, x, labels, ttft_s, tpot_s) -> None:
    """TTFT and TPOT (ms, log axis) against context length, each point annotated."""
    ax.plot(x, np.array(ttft_s) * 1e3, "-o", label="TTFT (prefill)")
    tpot_or_nan_s = np.array([t if t is not None else np.nan for t in tpot_s])
    ax.plot(x, tpot_or_nan_s * 1e3, "-^", label="TPOT (mean decode step)")
    for xi, a, b in zip(x, ttft_s, tpot_or_nan_s):
        ax.annotate(f"{sig3(a * 1e3)}", (xi, a * 1e3), xytext=(0, 6), textcoords="offset points", fontsize=7,
                    ha="center")
        ax.annotate(f"{sig3(b * 1e3)}", (xi, b * 1e3), xytext=(0, 6), textcoords="offset points", fontsize=7,
                    ha="center")
    ax.set_yscale("log")
    ax.set_ylim(np.nanmin(tpot_or_nan_s) * 1e3 / 2, max(ttft_s) * 1e3 * 2.5)
    log_axis(ax, "y")
    ax.set_xticks(x, labels)
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("time (ms)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.2)
    ax.set_title("latency", fontsize=10)


def _bound_panel(ax, x, labels, bound_shares) -> None:
    """Share of each phase's time in compute-, memory- and comm-bound ops (the summaries' bound_shares)."""
    w = 0.38
    for off, phase, hatch in ((-w / 2, "prefill", None), (w / 2, "decode", "//")):
        bs = bound_shares[phase]
        bottom = np.zeros(len(x))
        for what, col in BOUND_COLORS:
            vals = np.array([b[what] if b else 0 for b in bs]) * 100
            if vals.any():
                ax.bar(x + off, vals, w, bottom=bottom, color=col, hatch=hatch, edgecolor="white",
                       label=f"{phase}: {what}-bound")
                bottom += vals
    ax.set_xticks(x, labels)
    ax.set_ylim(0, 100)
    ax.set_xlabel("prompt length (tokens); left bar prefill, right (hatched) decode")
    ax.set_ylabel("share of phase time (%)")
    ax.set_title("time in compute- vs memory-bound ops", fontsize=10)
    ax.legend(fontsize=7.5, loc="center left", bbox_to_anchor=(1.01, 0.5))


def plot_phase_split(estimates, path=None, *, dpi: int = DPI) -> PlotResult:
    """Prefill-vs-decode study over context lengths (one Estimate per prompt length, same model and chip):
    top row: share of prefill and of a decode step by category (100 % stacked bars); bottom row:
    TTFT and TPOT (ms, log) and the share of each phase's time that is memory- vs compute-bound."""
    plt = pyplot()
    ests = sorted(as_list(estimates), key=lambda e: e.scenario["prompt_len"])
    prompts = [e.scenario["prompt_len"] for e in ests]
    fig, axs = plt.subplots(2, 2, figsize=(11, 7.4), layout="constrained")
    data: dict[str, Any] = {"prompt_len": prompts, "shares": {}, "ttft_s": [e.ttft_s for e in ests],
                            "tpot_s": [e.tpot_s for e in ests],
                            "bound_shares": {"prefill": [e.prefill.bound_shares for e in ests],
                                             "decode": [e.decode.bound_shares if e.decode else None for e in ests]}}
    x = np.arange(len(ests))
    labels = [tokens_label(p) for p in prompts]
    for ax, phase in zip(axs[0], ("prefill", "decode")):
        data["shares"][phase] = category_shares(ests, phase)
        _share_panel(ax, phase, data["shares"][phase], x, labels)
    h, lab = axs[0][0].get_legend_handles_labels()
    axs[0][1].legend(h[::-1], lab[::-1], fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    _latency_panel(axs[1][0], x, labels, data["ttft_s"], data["tpot_s"])
    _bound_panel(axs[1][1], x, labels, data["bound_shares"])
    e = ests[0]
    s = e.scenario
    suptitle(fig, f"Prefill vs decode across context — {e.model} on {e.chip} ×{s['chips']}, batch {s['batch']}, "
                  f"gen {s['gen_len']}; efficiency {efficiency_phrase(e)}", fontsize=10)
    return finish(PlotResult(fig, data), path, dpi)
