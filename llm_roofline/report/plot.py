"""Charts (matplotlib, Agg backend, imported lazily): roofline, latency–throughput frontier, time breakdown,
memory stack, and the prefill-vs-decode context study. One import for all of them; each lives in its own
module:

    categories.py      op categories and the per-category time roll-up (no matplotlib)
    chart_base.py      PlotResult, backend, panels, titles, colours, log axes
    chart_labels.py    label placement for the roofline's points
    plot_roofline.py   plot_roofline (renders Estimates)
    plot_breakdown.py  plot_breakdown, plot_phase_split (render Estimates)
    plot_sweeps.py     render_frontier, render_memory (render the dicts build.py computes)
    build.py           frontier_data, memory_data, and plot_frontier / plot_memory (compute, then render)

Every `plot_*` function returns a `PlotResult`: the matplotlib figure AND the data it plotted (plain
Python / numpy, SI units), so tests check the numbers behind a chart rather than its pixels. Units are
converted for display only (TFLOP/s, ms, GB); the returned data stays in FLOP/s, seconds, bytes.
"""

from __future__ import annotations

from .build import default_contexts, frontier_data, memory_data, plot_frontier, plot_memory
from .categories import CATEGORIES, op_category, short_name, time_breakdown
from .chart_base import CATEGORY_COLORS, DPI, PHASE_MARKERS, PlotResult
from .plot_breakdown import plot_breakdown, plot_phase_split
from .plot_roofline import roofline_points, plot_roofline
from .plot_sweeps import render_frontier, render_memory

__all__ = ["CATEGORIES", "CATEGORY_COLORS", "DPI", "PHASE_MARKERS", "PlotResult", "default_contexts",
           "frontier_data", "memory_data", "op_category", "plot_breakdown", "plot_frontier", "plot_memory",
           "plot_phase_split", "plot_roofline", "render_frontier", "render_memory", "roofline_points", "short_name",
           "time_breakdown"]
