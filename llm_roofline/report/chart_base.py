"""What every chart shares: the PlotResult (a figure and the data behind it), the Agg backend, panel
layout, titles, colours and plain-number log axes. matplotlib is imported inside the functions."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..units import sig3

DPI = 110

CATEGORY_COLORS = {
    "attention": "#d62728",
    "projections": "#1f77b4",
    "MLP/experts": "#2ca02c",
    "LM head": "#9467bd",
    "communication": "#ff7f0e",
    "other": "#8c8c8c",
}
PHASE_MARKERS = {"prefill": "o", "decode": "^"}


@dataclass
class PlotResult:
    """A chart and the data behind it (SI units)."""

    figure: Any  # matplotlib.figure.Figure
    data: dict[str, Any] = field(default_factory=dict)

    def save(self, path, dpi: int = DPI) -> str:
        """Write the chart (atomically; dpi and size bounded); returns the path written (suffix added)."""
        from ..files import save_figure

        return save_figure(self.figure, path, dpi)

    def close(self) -> None:
        import matplotlib.pyplot as plt

        plt.close(self.figure)


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display; safe to call repeatedly)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def finish(res: PlotResult, path, dpi) -> PlotResult:
    """Save the chart when a path is given; return it either way."""
    if path is not None:
        res.save(path, dpi)
    return res


def subplots(plt, n, width_each=6.0, height=4.6, sharey=False, sharex=False):
    """One row of n panels (constrained layout); returns (figure, list of axes)."""
    fig, axes = plt.subplots(1, n, figsize=(width_each * n, height), squeeze=False, sharey=sharey, sharex=sharex,
                             layout="constrained")
    return fig, list(axes[0])


def panel_title(est, width: int = 60) -> str:
    """'h100-sxm ×4 (tp4 pp2)' and, under it, the fit this chip's numbers come from (each panel its own)."""
    from .text import efficiency_phrase

    s = est.scenario
    return f"{est.chip} ×{s['chips']} ({parallel_text(s)})\n" + wrap(efficiency_phrase(est), width)


def parallel_text(s) -> str:
    """'tp4 pp2': the degrees of a scenario mapping (tp always; pp, ep, dp and attention_dp as 'adp' where above 1;
    absent: 1)."""
    return f"tp{s.get('tp', 1)}" + "".join(f" {label}{s[k]}" for k, label in (("pp", "pp"), ("ep", "ep"), ("dp", "dp"),
                                                                             ("attention_dp", "adp"))
                                           if (s.get(k) or 1) > 1)


def scenario_line(est) -> str:
    """Model, sizes, dtypes and efficiency mode of one Estimate, for a figure title (each panel names its fit)."""
    s = est.scenario
    return (f"{est.model} — batch {s['batch']}, prompt {s['prompt_len']}, gen {s['gen_len']}; "
            f"weights {s['weight_dtype']}, KV {s['kv_dtype']}, compute {s['compute_dtype']}; "
            f"efficiency {est.efficiency_mode}")


DEFAULT_ACT_DTYPE = "bf16"  # estimate()'s act_dtype default


def replica_text(scenario_kw) -> str:
    """'×8 (tp4 pp2)': the chips of one replica (tp x attention_dp x pp) and their degrees, for a panel title of a
    chart over a batch grid."""
    chips = 1
    for k in ("tp", "attention_dp", "pp"):
        chips *= int(scenario_kw.get(k) or 1)
    return f"×{chips} ({parallel_text(scenario_kw)})"


def dtype_phrase(kw) -> str:
    """', weights int4, KV fp8': the dtype overrides among a chart's scenario arguments ('' when none), for its title
    (a chart of int4 weights must say so). Activations in bf16 are the default, not an override: the CLI passes them
    always, and 'act bf16' over a W8A8 checkpoint's fp8 GEMMs read as if they computed in bf16."""
    return "".join(f", {label} {kw[k]}" for k, label in (("weight_dtype", "weights"), ("act_dtype", "act"),
                                                          ("kv_dtype", "KV"))
                   if kw.get(k) and not (k == "act_dtype" and str(kw[k]).lower() == DEFAULT_ACT_DTYPE))


def suptitle(fig, text: str, fontsize: float = 10) -> None:
    """A figure title wrapped to the figure's width (a narrow single-panel figure would clip it)."""
    width_chars = int(fig.get_figwidth() * 72 / (0.62 * fontsize))
    fig.suptitle(wrap(text, width_chars), fontsize=fontsize)


def wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def tokens_label(n: int) -> str:
    """Token counts as people say them: 2048 -> '2k', 131072 -> '128k', 128000 -> '128k', 3000 -> '3k'."""
    n = int(n)
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}k"
    return str(n)


def _g(v: float) -> str:
    """Three significant digits without trailing zeros: 50.0 -> '50', 0.250 -> '0.25'."""
    return f"{float(sig3(v)):g}"


def log_axis(ax, which: str) -> None:
    """Plain numbers on a log axis (0.5, 2, 10, 1k, 20k) instead of 10^x; minor ticks labelled at 2 and 5
    when the axis spans less than two decades (2, 3 and 5 when it spans about one)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    lo, hi = ax.get_xlim() if which == "x" else ax.get_ylim()

    def fmt(v, _pos=None):
        if v <= 0:
            return ""
        if v >= 1000:
            return f"{_g(v / 1000)}k" if v < 1e6 else f"{_g(v / 1e6)}M"
        return _g(v)

    axis.set_major_formatter(FuncFormatter(fmt))
    if hi / lo < 100:
        keep = (2.0, 3.0, 5.0) if hi / lo < 12 else (2.0, 5.0)

        def minor(v, _pos=None):
            m = v / 10 ** math.floor(math.log10(v) + 1e-9)
            return fmt(v) if round(m, 6) in keep else ""

        axis.set_minor_formatter(FuncFormatter(minor))
    else:
        axis.set_minor_formatter(NullFormatter())


def log_axes(ax) -> None:
    """Both axes logarithmic (call after the limits are set) with plain-number ticks."""
    log_axis(ax, "x")
    log_axis(ax, "y")
