"""The roofline chart: every op of an Estimate at its arithmetic intensity and achieved FLOP/s per chip,
under the chip's compute roof and HBM slope. Renders the Estimates it is given; intensity and bound come
from roofline.intensity_of / roofline.bound_of."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..roofline import bound_of, intensity_of
from ..units import as_list, sig3
from .categories import CATEGORIES, op_category, short_name
from .chart_base import (CATEGORY_COLORS, DPI, PHASE_MARKERS, PlotResult, finish, log_axes, panel_title,
                         pyplot, scenario_line, subplots, suptitle, wrap)
from .chart_labels import cluster_labels, place_labels


def roofline_points(est) -> list[dict]:
    """One point per (phase, group, op name) with nonzero FLOPs: intensity = FLOP / HBM byte and achieved
    FLOP/s = FLOPs / time on one chip (duplicates of a name inside a group, e.g. the two residual adds,
    are merged: summed FLOPs, bytes and time). Ops with zero FLOPs come back with `plotted=False`."""
    pts = []
    for (phase, group, name), g in est.ops.groupby(["phase", "group", "name"], sort=False):
        per_pass = {k: float((g[k] * g["count"]).sum())
                    for k in ("flops", "bytes", "t_s", "t_compute_s", "t_memory_s", "t_comm_s")}
        flops, nbytes, t_s = per_pass["flops"], per_pass["bytes"], per_pass["t_s"]
        kind = str(g.kind.iloc[0])
        bound = str(bound_of(per_pass["t_compute_s"], per_pass["t_memory_s"], per_pass["t_comm_s"]))
        pts.append(dict(chip=est.chip, phase=phase, group=group, name=name, kind=kind, category=op_category(name, kind),
                        flops=flops, bytes=nbytes, t_s=t_s, bound=bound, intensity=float(intensity_of(flops, nbytes)),
                        achieved_flops_per_s=flops / t_s if t_s > 0 else 0.0,
                        plotted=flops > 0 and nbytes > 0 and t_s > 0))
    return pts


def roof_of(est) -> dict[str, Any]:
    """The chip's compute roof (dense peak of the estimate's compute dtype), HBM slope and ridge."""
    from ..hardware import load_chip

    chip = load_chip(est.chip)
    dtype = est.scenario["gemm_compute_dtype"]  # the GEMMs' (W8A8 checkpoints: fp8 on chips with fp8 units)
    peak = chip.peak_flops_per_s(dtype)
    bw = chip.hbm_bytes_per_s
    other = est.scenario["compute_dtype"]  # the rest of the ops' roof, drawn dotted when it differs
    return dict(peak_flops_per_s=peak, hbm_bytes_per_s=bw, ridge_flops_per_byte=peak / bw, compute_dtype=dtype,
                other_peak=(other, chip.peak_flops_per_s(other)) if other != dtype else None)


def _limits(plotted, roofs) -> tuple[float, float, float, float]:
    """Shared axis limits (x_lo, x_hi, y_lo, y_hi) in FLOP/B and FLOP/s: every point, ridge and peak inside."""
    ridges = [r["ridge_flops_per_byte"] for r in roofs.values()]
    peaks = [r["peak_flops_per_s"] for r in roofs.values()]
    xs = [p["intensity"] for p in plotted] + ridges
    ys = [p["achieved_flops_per_s"] for p in plotted]
    x_lo = 10 ** (math.log10(max(min(xs), 1e-3)) - 0.4) if xs else 0.1
    x_hi = 10 ** (math.log10(max(xs)) + 0.9) if xs else 1e4  # room for labels right of the rightmost ops
    y_lo = 10 ** (math.log10(max(min(ys + peaks), 1.0)) - 0.5) if ys else 1e9
    return x_lo, x_hi, y_lo, max(peaks) * 4


def _draw_roof(ax, roof, limits):
    """Roof line, ridge and their annotations; returns the roof line's samples (x FLOP/B, y TFLOP/s)."""
    x_lo, x_hi, y_lo, _ = limits
    peak, bw, ridge = roof["peak_flops_per_s"], roof["hbm_bytes_per_s"], roof["ridge_flops_per_byte"]
    xr = np.geomspace(x_lo, x_hi, 400)
    ax.plot(xr, np.minimum(peak, xr * bw) / 1e12, color="k", lw=1.6, zorder=2)
    ax.axvline(ridge, color="0.45", ls="--", lw=0.9, zorder=1)
    ax.annotate(f"ridge {sig3(ridge)} FLOP/B", (ridge, y_lo / 1e12), xytext=(3, 4), textcoords="offset points",
                fontsize=7.5, color="0.3", rotation=90, va="bottom")
    ax.text(ridge / 1.3, peak / 1e12 * 1.18, f"{roof['compute_dtype']} peak {sig3(peak / 1e12)} TFLOP/s",
            ha="right", va="bottom", fontsize=8)
    if roof.get("other_peak"):  # W8A8: the GEMMs' roof above, the other ops' (attention, LM head) dotted
        name, other = roof["other_peak"]
        ax.plot(xr, np.minimum(other, xr * bw) / 1e12, color="0.35", lw=0.9, ls=":", zorder=2)
        ax.text(x_hi / 1.1, other / 1e12 / 1.25, f"{name} peak {sig3(other / 1e12)}", ha="right", va="top",
                fontsize=7.5, color="0.3")
    xm = math.sqrt(x_lo * ridge)
    ax.text(xm, xm * bw / 1e12 / 3, f"HBM {sig3(bw / 1e12)} TB/s", fontsize=8, ha="left", va="top")
    return xr, np.minimum(peak, xr * bw) / 1e12


def _draw_points(ax, shown) -> None:
    for phase in sorted({p["phase"] for p in shown}):
        ph = [p for p in shown if p["phase"] == phase]  # one collection per phase (fast to draw)
        ax.scatter([p["intensity"] for p in ph], [p["achieved_flops_per_s"] / 1e12 for p in ph],
                   marker=PHASE_MARKERS.get(phase, "s"), s=34, c=[CATEGORY_COLORS[p["category"]] for p in ph],
                   edgecolor="k", linewidth=0.4, zorder=3, alpha=0.9)


def _style_axes(ax, est, limits) -> None:
    x_lo, x_hi, y_lo, y_hi = limits
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo / 1e12, y_hi / 1e12)
    log_axes(ax)
    ax.set_xlabel("arithmetic intensity (FLOP / HBM byte)")
    ax.set_title(panel_title(est), fontsize=10)
    ax.grid(True, which="major", alpha=0.25)


def _top_points(shown, top_labels) -> list[dict]:
    """The `top_labels` ops by time of each phase (those get a label); marks every point `labelled`."""
    label = []
    for phase in ("prefill", "decode"):
        ph = sorted((p for p in shown if p["phase"] == phase), key=lambda p: -p["t_s"])
        label += ph[:top_labels]
    ids = {id(p) for p in label}
    for p in shown:
        p["labelled"] = id(p) in ids
    return label


def _panel_note(ax, pts, shown, label) -> None:
    """Under the panel: the plotted ops left unlabelled and the zero-FLOP ops a log axis cannot show."""
    labelled_names = {p["name"] for p in label}
    rest = sorted({short_name(p["name"]) for p in shown if p["name"] not in labelled_names})
    zero = sorted({short_name(p["name"]) for p in pts if not p["plotted"]})
    note = []
    if rest:
        note.append("unlabelled: " + ", ".join(rest))
    if zero:
        note.append("zero FLOPs, not on a log axis: " + ", ".join(zero))
    if note:
        ax.text(0.0, -0.12, "\n".join(wrap(n, 84) for n in note), transform=ax.transAxes, fontsize=7,
                va="top", ha="left", color="0.25")


def _legend(fig, plotted) -> None:
    from matplotlib.lines import Line2D

    cats = sorted({p["category"] for p in plotted}, key=CATEGORIES.index)
    phases = [ph for ph in PHASE_MARKERS if any(p["phase"] == ph for p in plotted)]
    handles = [Line2D([], [], marker=PHASE_MARKERS[ph], ls="", color="w", markeredgecolor="k", markerfacecolor="0.8",
                      markersize=7, label=ph + (" (mean step)" if ph == "decode" else "")) for ph in phases]
    handles += [Line2D([], [], marker="s", ls="", color=CATEGORY_COLORS[c], markersize=7, label=c) for c in cats]
    fig.legend(handles=handles, loc="outside right center", fontsize=8)


def _label_panel(ax, label, shown, roof_line, ridge) -> None:
    """Place the labels of one panel, clear of texts, markers, the roof and the ridge (display coordinates)."""
    # name a layer group only where one op name is labelled in two groups of the same phase
    seen: dict = {}
    for p in label:
        seen.setdefault((p["phase"], p["name"]), set()).add(p["group"])
    multi = {name for (_, name), groups in seen.items() if len(groups) > 1}
    items = cluster_labels(ax, label, multi)
    obstacles = [tuple(t.get_window_extent().extents) for t in ax.texts]
    avoid = [ax.transData.transform((p["intensity"], p["achieved_flops_per_s"] / 1e12)) for p in shown]
    rx, ry = roof_line
    avoid += list(ax.transData.transform(np.column_stack([rx, ry])[::4]))
    if label and ridge:
        lo, hi = ax.get_ylim()
        avoid += list(ax.transData.transform(np.column_stack([np.full(40, ridge), np.geomspace(lo, hi, 40)])))
    place_labels(ax, items, obstacles, avoid)


def plot_roofline(estimates, path=None, *, top_labels: int = 6, dpi: int = DPI) -> PlotResult:
    """Log–log roofline, one panel per chip: arithmetic intensity (FLOP/byte) vs achieved FLOP/s
    (op FLOPs / op time on one chip), the compute roof (dense peak of the compute dtype), the HBM
    bandwidth slope and the ridge (peak / bandwidth). One point per (op, phase): circles prefill,
    triangles decode (mean step), coloured by category; the `top_labels` ops by time in each phase
    are labelled. Ops with zero FLOPs (embedding gather, KV-cache write, collectives) are listed in a
    note under the panel."""
    plt = pyplot()
    ests = as_list(estimates)
    fig, axes = subplots(plt, len(ests), width_each=6.4, height=5.6, sharey=True, sharex=True)
    data: dict[str, Any] = {"points": [], "roofs": {}, "zero_flop_ops": {}}
    all_pts = []
    for est in ests:
        data["roofs"][est.chip] = roof_of(est)
        pts = roofline_points(est)
        all_pts.append(pts)
        data["points"] += [p for p in pts if p["plotted"]]
        data["zero_flop_ops"][est.chip] = sorted({f"{p['name']} ({p['phase']})" for p in pts if not p["plotted"]})
    limits = _limits(data["points"], data["roofs"])
    pending = []
    for ax, est, pts in zip(axes, ests, all_pts):
        roof = data["roofs"][est.chip]
        roof_line = _draw_roof(ax, roof, limits)
        shown = [p for p in pts if p["plotted"]]
        _draw_points(ax, shown)
        _style_axes(ax, est, limits)
        label = _top_points(shown, top_labels)
        pending.append((ax, label, shown, roof_line, roof["ridge_flops_per_byte"]))
        _panel_note(ax, pts, shown, label)
    axes[0].set_ylabel("achieved FLOP/s per chip (TFLOP/s)")
    _legend(fig, data["points"])
    suptitle(fig, f"Roofline — {scenario_line(ests[0])}", fontsize=10)
    fig.canvas.draw()  # one layout pass, then labels are placed in display coordinates
    fig.set_layout_engine("none")  # freeze the layout so the labels stay where they were placed
    for args in pending:
        _label_panel(*args)
    return finish(PlotResult(fig, data), path, dpi)
