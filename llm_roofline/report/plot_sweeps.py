"""Batch-sweep charts: the latency–throughput frontier and memory per chip vs batch. Pure renderers of the
data report.build computes (build.frontier_data, build.memory_data); build.plot_frontier and
build.plot_memory compute and render in one call."""

from __future__ import annotations


import numpy as np

from ..chip_fits import efficiency_text
from ..units import sig3
from .chart_base import DPI, PlotResult, finish, log_axes, pyplot, subplots, suptitle, tokens_label, wrap

MEMORY_PARTS = (("weights", "weights", "#4c72b0"), ("kv_cache", "KV cache", "#dd8452"),
                ("activations", "activations (prefill peak)", "#55a868"))


# ------------------------------------------------------------------------------------ frontier
def _frontier_curve(ax, prompt_len, curve, color) -> None:
    """One prompt length: the fitting part of the curve, its continuation past HBM (hollow, grey, dotted)
    and a star at the largest batch that fits."""
    x, y, fits = curve["throughput_tokens_per_s_per_chip"], curve["tpot_s"] * 1e3, curve["fits"]
    ax.plot(x[fits], y[fits], "-o", color=color, ms=4, lw=1.4, label=f"prompt {tokens_label(prompt_len)}")
    if (~fits).any():
        k = np.flatnonzero(~fits)
        k = np.concatenate([[k[0] - 1], k]) if k[0] > 0 else k
        ax.plot(x[k], y[k], ":", color="0.6", lw=1.0)
        ax.plot(x[~fits], y[~fits], "o", ms=4, mfc="none", mec="0.6", mew=0.8)
    mb = curve["max_batch"]
    j = np.flatnonzero(curve["batch"] == mb)
    if mb > 0 and j.size:
        ax.plot(x[j], y[j], "*", color=color, ms=12, mec="k", mew=0.6, zorder=4)
        ax.annotate(f"B={mb}", (x[j[0]], y[j[0]]), xytext=(-4, 6), textcoords="offset points", fontsize=7,
                    ha="right")


def _frontier_panel(ax, cmap, chip_name, curves, pp, replica) -> None:
    for i, (p, c) in enumerate(curves.items()):
        _frontier_curve(ax, p, c, cmap(0.85 * i / max(len(curves) - 1, 1)))
    if all(c["max_batch"] == 0 for c in curves.values()):
        ax.text(0.5, 0.95, "does not fit at any batch: weights alone exceed the usable memory", transform=ax.transAxes,
                ha="center", va="top", fontsize=9, color="#b00000")
    # batch labels along the first curve
    first = next(iter(curves.values()))
    for b, xv, yv in zip(first["batch"], first["throughput_tokens_per_s_per_chip"], first["tpot_s"] * 1e3):
        if b in (1, pp, 8 * pp, 64 * pp, 512 * pp):
            ax.annotate(f"{b}", (xv, yv), xytext=(4, -10), textcoords="offset points", fontsize=7, color="0.3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.autoscale_view()
    log_axes(ax)
    ax.set_xlabel("output tokens/s per chip (batch·gen / e2e)")
    ax.grid(True, which="both", alpha=0.2)
    ax.set_title(f"{chip_name} {replica}\n{wrap(efficiency_text(first['efficiency'], first['fit']), 56)}",
                 fontsize=10)


def _frontier_legend(fig, axes) -> None:
    from matplotlib.lines import Line2D

    by_label: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            by_label.setdefault(lab, h)
    handles = list(by_label.values())
    handles += [Line2D([], [], marker="*", ls="", color="0.5", mec="k", ms=10, label="largest batch\nthat fits"),
                Line2D([], [], marker="o", ls=":", color="0.6", mfc="none", ms=4, label="does not fit\nin memory")]
    fig.legend(handles=handles, fontsize=8, loc="outside right center")


def render_frontier(curves_by_chip: dict[str, dict], *, model_name: str, gen_len: int, pp: int = 1,
                    replica: str = "×1 (tp1)", path=None, dpi: int = DPI) -> PlotResult:
    """Latency–throughput frontier: TPOT (ms) vs output tokens/s per chip, one panel per chip, one curve per
    prompt length. curves_by_chip: {chip name: build.frontier_data(...)}. Filled points fit in HBM; hollow
    grey points do not; a star marks the largest batch that fits."""
    plt = pyplot()
    fig, axes = subplots(plt, len(curves_by_chip), width_each=6.0, height=4.8, sharey=True)
    cmap = plt.get_cmap("viridis")
    for ax, (chip_name, curves) in zip(axes, curves_by_chip.items()):
        _frontier_panel(ax, cmap, chip_name, curves, pp, replica)
    axes[0].set_ylabel("TPOT, mean decode step (ms)")
    _frontier_legend(fig, axes)
    first = next(iter(curves_by_chip.values()))
    mode = next(iter(first.values()))["efficiency"]
    suptitle(fig, f"Latency–throughput frontier — {model_name}, gen {gen_len}, batch sweep, efficiency {mode} "
                  f"(numbers along the {tokens_label(min(first))} curve: batch)", fontsize=9.5)
    return finish(PlotResult(fig, {"curves": curves_by_chip, "gen_len": gen_len}), path, dpi)


# ------------------------------------------------------------------------------------ memory
def _memory_panel(ax, d, replica) -> None:
    """Stacked per-chip bytes of one chip over the batch grid, the capacity line, the max-batch star."""
    x = np.arange(len(d["batch"]))
    fits = (d["per_chip_bytes"] <= d["usable_bytes"]) & (d["batch"] <= d["max_batch"])
    bottom = np.zeros(len(x))
    for key, name, color in MEMORY_PARTS:
        v = d[key] / 1e9
        ax.bar(x, v, 0.75, bottom=bottom, color=color, label=name, edgecolor="white", lw=0.4)
        ax.bar(x[~fits], v[~fits], 0.75, bottom=bottom[~fits], color="none", edgecolor="0.3", hatch="///", lw=0)
        bottom += v
    cap = d["usable_bytes"] / 1e9
    ax.axhline(d["capacity_bytes"] / 1e9, color="0.5", ls=":", lw=1.0,
               label=f"{d['capacity_label']} {sig3(d['capacity_bytes'] / 1e9)} GB")
    ax.axhline(cap, color="k", ls="--", lw=1.1,
               label=f"usable {sig3(cap)} GB (gpu_memory_utilization {d['gpu_memory_utilization']:g})")
    if d["max_batch"] == 0:
        ax.text(0.5, 0.5, "does not fit at any batch:\nweights alone exceed the usable memory", transform=ax.transAxes,
                ha="center", va="center", fontsize=9, color="#b00000", bbox=dict(fc="white", ec="#b00000"))
    ticks = [f"{b}★" if b == d["max_batch"] else str(b) for b in d["batch"]]
    ax.set_xticks(x, ticks, fontsize=7.5, rotation=45 if len(x) > 8 else 0)
    ax.set_xlabel(f"batch (sequences per replica; ★ = max batch {d['max_batch']})" if d["max_batch"] else
                  "batch (sequences per replica; none fits)")
    ax.set_ylim(0, max(float(bottom.max()), d["capacity_bytes"] / 1e9) * 1.08)
    ax.set_title(f"{d['chip']} {replica}, context {tokens_label(d['context'])}", fontsize=10)
    ax.grid(True, axis="y", alpha=0.25)


def render_memory(memory_by_chip: dict[str, dict], *, model_name: str, prompt_len: int, gen_len: int,
                  replica: str = "×1 (tp1)", path=None, dpi: int = DPI) -> PlotResult:
    """Stacked bars of per-chip memory (weights, KV cache, activations) vs batch, against HBM capacity
    (dashed line), one panel per chip; bars past the largest batch that fits (or over capacity) are hatched.
    memory_by_chip: {chip name: build.memory_data(...)}."""
    plt = pyplot()
    fig, axes = subplots(plt, len(memory_by_chip), width_each=6.0, height=4.6)
    for ax, d in zip(axes, memory_by_chip.values()):
        _memory_panel(ax, d, replica)
    axes[0].set_ylabel("memory per chip (GB)")
    for ax in axes:
        ax.legend(loc="upper left", fontsize=8)
    suptitle(fig, f"Memory per chip vs batch — {model_name}, KV cache at prompt {prompt_len} + gen {gen_len} "
                  f"(hatched: does not fit)", fontsize=9.5)
    return finish(PlotResult(fig, dict(memory_by_chip)), path, dpi)
