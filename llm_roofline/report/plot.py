"""Charts (matplotlib, Agg backend, imported lazily): roofline, latency–throughput frontier, time breakdown,
memory stack, and the prefill-vs-decode context study.

Every `plot_*` function returns a `PlotResult`: the matplotlib figure AND the data it plotted (plain
Python / numpy, SI units), so tests check the numbers behind a chart rather than its pixels. Units are
converted for display only (TFLOP/s, ms, GB); the returned data stays in FLOP/s, seconds, bytes.

Inputs: `plot_roofline`, `plot_breakdown` and `plot_phase_split` take Estimates (one per chip, or one per
context length); `plot_frontier` and `plot_memory` sweep the batch, so they take the model, the chips
and the scenario keywords of `estimate` (tp, pp, ep, dp, dtypes, ...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..units import sig3

DPI = 110

# ------------------------------------------------------------------------------------ categories
CATEGORIES = ("attention", "projections", "MLP/experts", "LM head", "communication", "other")
CATEGORY_COLORS = {
    "attention": "#d62728",
    "projections": "#1f77b4",
    "MLP/experts": "#2ca02c",
    "LM head": "#9467bd",
    "communication": "#ff7f0e",
    "other": "#8c8c8c",
}
PHASE_MARKERS = {"prefill": "o", "decode": "^"}


def op_category(name: str, kind: str | None = None) -> str:
    """Map an op name (graph.py's dotted names) to a time-breakdown category.

    attention: the attention core and the per-head work around it (rope, qk-norm, KV-cache write);
    projections: every attention projection (qkv, o, MLA's q/kv down- and up-projections);
    MLP/experts: every ffn.* op (dense MLP, router, routed and shared experts, their activation);
    LM head; communication: collectives (comm.*); other: embedding gather, norms, residual adds.
    """
    if kind == "collective" or name.startswith("comm."):
        return "communication"
    if name == "lm_head":
        return "LM head"
    if name.startswith("ffn."):
        return "MLP/experts"
    if name.startswith("attn."):
        return "projections" if "proj" in name else "attention"
    return "other"


def short_name(name: str) -> str:
    """Chart label for an op: 'ffn.experts.up_gate' -> 'exp.up_gate', 'attn.core' -> 'attn', 'attn.o_proj' -> 'o_proj'."""
    if name == "attn.core":
        return "attn"
    for prefix, repl in (("ffn.experts.", "exp."), ("ffn.shared.", "shared."), ("ffn.", ""), ("attn.", ""),
                         ("comm.", "")):
        if name.startswith(prefix):
            return repl + name[len(prefix):]
    return name


@dataclass
class PlotResult:
    """A chart and the data behind it (SI units)."""

    figure: Any  # matplotlib.figure.Figure
    data: dict[str, Any] = field(default_factory=dict)

    def save(self, path, dpi: int = DPI) -> str:
        from ..files import save_figure

        return save_figure(self.figure, path, dpi)

    def close(self) -> None:
        import matplotlib.pyplot as plt

        plt.close(self.figure)


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # no display; safe to call repeatedly
    import matplotlib.pyplot as plt

    return plt


def _finish(res: PlotResult, path, dpi) -> PlotResult:
    if path is not None:
        res.save(path, dpi)
    return res


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _subplots(plt, n, width_each=6.0, height=4.6, sharey=False, sharex=False):
    fig, axes = plt.subplots(1, n, figsize=(width_each * n, height), squeeze=False, sharey=sharey, sharex=sharex,
                             layout="constrained")
    return fig, list(axes[0])


def _title(est) -> str:
    s = est.scenario
    par = f"tp{s['tp']}" + "".join(f" {k}{s[k]}" for k in ("pp", "ep", "dp") if s[k] > 1)
    return f"{est.chip} ×{s['chips']} ({par})"


def _scenario_line(est) -> str:
    s = est.scenario
    return (f"{est.model} — batch {s['batch']}, prompt {s['prompt_len']}, gen {s['gen_len']}; "
            f"weights {s['weight_dtype']}, KV {s['kv_dtype']}, compute {s['compute_dtype']}; {est.efficiency} roofline")


# ------------------------------------------------------------------------------------ roofline
def roofline_points(est) -> list[dict]:
    """One point per (phase, group, op name) with nonzero FLOPs: intensity = FLOP / HBM byte and achieved
    FLOP/s = FLOPs / time on one chip (duplicates of a name inside a group, e.g. the two residual adds,
    are merged: summed FLOPs, bytes and time). Ops with zero FLOPs come back with `plotted=False`."""
    df = est.ops
    pts = []
    for (phase, group, name), g in df.groupby(["phase", "group", "name"], sort=False):
        flops = float((g.flops * g["count"]).sum())
        nbytes = float((g.bytes * g["count"]).sum())
        t_s = float((g.t_s * g["count"]).sum())
        kind = str(g.kind.iloc[0])
        bound = str(g.bound.iloc[0])
        ok = flops > 0 and nbytes > 0 and t_s > 0
        pts.append(dict(chip=est.chip, phase=phase, group=group, name=name, kind=kind, category=op_category(name, kind),
                        flops=flops, bytes=nbytes, t_s=t_s, bound=bound,
                        intensity=flops / nbytes if nbytes > 0 else math.inf,
                        achieved_flops_per_s=flops / t_s if t_s > 0 else 0.0, plotted=ok))
    return pts


def _label_text(p, multi_group) -> str:
    """Short op name; with the layer group appended when multi_group (a bool, or the set of op names that
    need it) says the name alone is ambiguous."""
    lab = short_name(p["name"])
    need = multi_group if isinstance(multi_group, bool) else p["name"] in multi_group
    if need and p["group"] != "model":
        lab += f" [{p['group']}]"
    return lab


def _place_labels(ax, items, obstacles=(), avoid=(), fontsize=7.5):
    """Greedy label placement in display coordinates. items: (x, y, text) in data coordinates, most
    important first. For each label, candidate anchors on rings of growing radius around its point are
    scored by overlap with labels already placed, other texts (`obstacles`: display boxes), markers
    and the axes frame; the nearest free one wins, with a leader line when it sits away from the point.
    avoid: display points (markers, samples of lines) that labels should not cover."""
    from matplotlib.font_manager import FontProperties

    fig = ax.figure
    ab = ax.get_window_extent()
    scale = fig.dpi / 72.0
    renderer = fig.canvas.get_renderer()
    prop = FontProperties(size=fontsize)
    boxes = [tuple(b) for b in obstacles]
    pts = [tuple(ax.transData.transform((x, y))) for x, y, _ in items]
    avoid = [tuple(q) for q in avoid] + pts
    dirs = [(1, 0.6), (-1, 0.6), (1, -0.6), (-1, -0.6), (0, 1), (0, -1), (1, 0), (-1, 0)]
    rings = [6, 14, 24, 36, 50, 66]
    for (x, y, text), (px, py) in zip(items, pts):
        lines = text.split("\n")
        w = max(renderer.get_text_width_height_descent(line, prop, ismath=False)[0] for line in lines) + 4 * scale
        h = ((fontsize * 1.25) * len(lines) + 2) * scale
        best = None
        for r in rings:
            for ux, uy in dirs:
                n = math.hypot(ux, uy)
                dx, dy = r * ux / n, r * uy / n
                ax_, ay_ = px + dx * scale, py + dy * scale
                ha = "left" if ux > 0.3 else "right" if ux < -0.3 else "center"
                va = "bottom" if uy > 0.3 else "top" if uy < -0.3 else "center"
                x0 = ax_ if ha == "left" else ax_ - w if ha == "right" else ax_ - w / 2
                y0 = ay_ if va == "bottom" else ay_ - h if va == "top" else ay_ - h / 2
                box = (x0, y0, x0 + w, y0 + h)
                # text on text is the worst outcome: any overlap costs a whole label area, plus its size
                cost = sum(w * h + 5 * o for o in (_overlap(box, b) for b in boxes) if o > 0)
                cost += sum(0.3 * w * h for q in avoid if box[0] - 3 <= q[0] <= box[2] + 3
                            and box[1] - 3 <= q[1] <= box[3] + 3)
                if box[0] < ab.x0 or box[2] > ab.x1 or box[1] < ab.y0 or box[3] > ab.y1:
                    cost += 1e9
                cost += r * 0.5  # prefer near
                if best is None or cost < best[0]:
                    best = (cost, dx, dy, ha, va, box, r)
            if best[0] <= r * 0.5 + 1e-9:  # free spot on this ring
                break
        _, dx, dy, ha, va, box, r = best
        pad = 4 * scale  # keep a gap: two labels that touch read as one ("downqkv_proj")
        boxes.append((box[0] - pad, box[1] - pad / 2, box[2] + pad, box[3] + pad / 2))
        t = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize, ha=ha, va=va,
                        arrowprops=dict(arrowstyle="-", lw=0.5, color="0.45", shrinkA=0, shrinkB=3) if r > 8 else None)
        t.set_in_layout(False)


def _overlap(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def plot_roofline(estimates, path=None, *, top_labels: int = 6, dpi: int = DPI) -> PlotResult:
    """Log–log roofline, one panel per chip: arithmetic intensity (FLOP/byte) vs achieved FLOP/s
    (op FLOPs / op time on one chip), the compute roof (dense peak of the compute dtype), the HBM
    bandwidth slope and the ridge (peak / bandwidth). One point per (op, phase): circles prefill,
    triangles decode (mean step), coloured by category; the `top_labels` ops by time in each phase
    are labelled. Ops with zero FLOPs (embedding gather, KV-cache write, collectives) are listed in a
    note under the panel."""
    from matplotlib.lines import Line2D

    from ..hardware import load_chip

    plt = _plt()
    ests = _as_list(estimates)
    fig, axes = _subplots(plt, len(ests), width_each=6.4, height=5.6, sharey=True, sharex=True)
    data: dict[str, Any] = {"points": [], "roofs": {}, "zero_flop_ops": {}}
    all_pts = []
    for est in ests:
        chip = load_chip(est.chip)
        peak = chip.peak_flops_per_s(est.scenario["compute_dtype"])
        bw = chip.hbm_bytes_per_s
        data["roofs"][est.chip] = dict(peak_flops_per_s=peak, hbm_bytes_per_s=bw, ridge_flops_per_byte=peak / bw,
                                       compute_dtype=est.scenario["compute_dtype"])
        pts = roofline_points(est)
        all_pts.append(pts)
        data["points"] += [p for p in pts if p["plotted"]]
        data["zero_flop_ops"][est.chip] = sorted({f"{p['name']} ({p['phase']})" for p in pts if not p["plotted"]})
    plotted = data["points"]
    ridges = [r["ridge_flops_per_byte"] for r in data["roofs"].values()]
    peaks = [r["peak_flops_per_s"] for r in data["roofs"].values()]
    xs = [p["intensity"] for p in plotted] + ridges
    ys = [p["achieved_flops_per_s"] for p in plotted]
    x_lo = 10 ** (math.log10(max(min(xs), 1e-3)) - 0.4) if xs else 0.1
    x_hi = 10 ** (math.log10(max(xs)) + 0.5) if xs else 1e4
    y_lo = 10 ** (math.log10(max(min(ys + peaks), 1.0)) - 0.5) if ys else 1e9
    y_hi = max(peaks) * 4
    pending = []
    for ax, est, pts in zip(axes, ests, all_pts):
        roof = data["roofs"][est.chip]
        peak, bw, ridge = roof["peak_flops_per_s"], roof["hbm_bytes_per_s"], roof["ridge_flops_per_byte"]
        xr = np.geomspace(x_lo, x_hi, 400)
        ax.plot(xr, np.minimum(peak, xr * bw) / 1e12, color="k", lw=1.6, zorder=2)
        ax.axvline(ridge, color="0.45", ls="--", lw=0.9, zorder=1)
        ax.annotate(f"ridge {sig3(ridge)} FLOP/B", (ridge, y_lo / 1e12), xytext=(3, 4), textcoords="offset points",
                    fontsize=7.5, color="0.3", rotation=90, va="bottom")
        ax.text(ridge / 1.3, peak / 1e12 * 1.18, f"{roof['compute_dtype']} peak {sig3(peak / 1e12)} TFLOP/s",
                ha="right", va="bottom", fontsize=8)
        xm = math.sqrt(x_lo * ridge)
        ax.text(xm, xm * bw / 1e12 / 3, f"HBM {sig3(bw / 1e12)} TB/s", fontsize=8, ha="left", va="top")
        shown = [p for p in pts if p["plotted"]]
        for phase in sorted({p["phase"] for p in shown}):
            ph = [p for p in shown if p["phase"] == phase]  # one collection per phase (fast to draw)
            ax.scatter([p["intensity"] for p in ph], [p["achieved_flops_per_s"] / 1e12 for p in ph],
                       marker=PHASE_MARKERS.get(phase, "s"), s=34, c=[CATEGORY_COLORS[p["category"]] for p in ph],
                       edgecolor="k", linewidth=0.4, zorder=3, alpha=0.9)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(x_lo, x_hi)
        ax.set_ylim(y_lo / 1e12, y_hi / 1e12)
        _log_axis(ax, "x")
        _log_axis(ax, "y")
        ax.set_xlabel("arithmetic intensity (FLOP / HBM byte)")
        ax.set_title(_title(est), fontsize=10)
        ax.grid(True, which="major", alpha=0.25)
        label = []
        for phase in ("prefill", "decode"):
            ph = sorted((p for p in shown if p["phase"] == phase), key=lambda p: -p["t_s"])
            label += ph[:top_labels]
        ids = {id(p) for p in label}
        for p in shown:
            p["labelled"] = id(p) in ids
        pending.append((ax, label, shown, (xr, np.minimum(peak, xr * bw) / 1e12)))
        labelled_names = {p["name"] for p in label}
        rest = sorted({short_name(p["name"]) for p in shown if p["name"] not in labelled_names})
        zero = sorted({short_name(p["name"]) for p in pts if not p["plotted"]})
        note = []
        if rest:
            note.append("unlabelled: " + ", ".join(rest))
        if zero:
            note.append("zero FLOPs, not on a log axis: " + ", ".join(zero))
        if note:
            ax.text(0.0, -0.12, "\n".join(_wrap(n, 84) for n in note), transform=ax.transAxes, fontsize=7,
                    va="top", ha="left", color="0.25")
    axes[0].set_ylabel("achieved FLOP/s per chip (TFLOP/s)")
    cats = sorted({p["category"] for p in plotted}, key=CATEGORIES.index)
    phases = [ph for ph in PHASE_MARKERS if any(p["phase"] == ph for p in plotted)]
    handles = [Line2D([], [], marker=PHASE_MARKERS[ph], ls="", color="w", markeredgecolor="k", markerfacecolor="0.8",
                      markersize=7, label=ph + (" (mean step)" if ph == "decode" else "")) for ph in phases]
    handles += [Line2D([], [], marker="s", ls="", color=CATEGORY_COLORS[c], markersize=7, label=c) for c in cats]
    fig.legend(handles=handles, loc="outside right center", fontsize=8)
    _suptitle(fig, f"Roofline — {_scenario_line(ests[0])}", fontsize=10)
    fig.canvas.draw()  # one layout pass, then labels are placed in display coordinates
    fig.set_layout_engine("none")  # freeze the layout so the labels stay where they were placed
    for ax, label, shown, (rx, ry) in pending:
        # name a layer group only where one op name is labelled in two groups of the same phase
        seen: dict = {}
        for p in label:
            seen.setdefault((p["phase"], p["name"]), set()).add(p["group"])
        multi = {name for (_, name), groups in seen.items() if len(groups) > 1}
        items = _cluster_labels(ax, label, multi)
        obstacles = [tuple(t.get_window_extent().extents) for t in ax.texts]
        avoid = [ax.transData.transform((p["intensity"], p["achieved_flops_per_s"] / 1e12)) for p in shown]
        avoid += list(ax.transData.transform(np.column_stack([rx, ry])[::4]))
        ridge = data["roofs"][label[0]["chip"]]["ridge_flops_per_byte"] if label else None
        if ridge:
            lo, hi = ax.get_ylim()
            avoid += list(ax.transData.transform(np.column_stack([np.full(40, ridge), np.geomspace(lo, hi, 40)])))
        _place_labels(ax, items, obstacles, avoid)
    return _finish(PlotResult(fig, data), path, dpi)


def _cluster_labels(ax, label, multi, px=6.0):
    """Merge labels of points that sit on top of each other (within px display pixels) into one label,
    e.g. decode's weight-bound projections, which share one intensity: 'qkv_proj, o_proj, up_gate'."""
    items: list[list] = []  # [x, y, display point, names]
    for p in label:
        x, y = p["intensity"], p["achieved_flops_per_s"] / 1e12
        d = ax.transData.transform((x, y))
        for it in items:
            if math.hypot(*(d - it[2])) < px:
                it[3].append(_label_text(p, multi))
                break
        else:
            items.append([x, y, d, [_label_text(p, multi)]])
    out = []
    for x, y, _, names in items:
        names = list(dict.fromkeys(names))
        text = ", ".join(names) if len(names) <= 3 else ", ".join(names[:3]) + "\n" + ", ".join(names[3:])
        out.append((x, y, text))
    return out


def _suptitle(fig, text: str, fontsize: float = 10) -> None:
    """A figure title wrapped to the figure's width (a narrow single-panel figure would clip it)."""
    width_chars = int(fig.get_figwidth() * 72 / (0.62 * fontsize))
    fig.suptitle(_wrap(text, width_chars), fontsize=fontsize)


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


# ------------------------------------------------------------------------------------ breakdown
def time_breakdown(est) -> dict[str, dict[str, float]]:
    """Wall time of each phase split into CATEGORIES, seconds: {'prefill': {...}, 'decode': {...}, 'request': {...}}.

    Category time = sum over its ops of t_s * count (one chip), scaled so that a phase's categories add
    up to the phase time (the scale is 1 unless pipeline stages stretch the prefill). decode is the mean
    step (TPOT); request = prefill + all decode steps (e2e)."""
    out: dict[str, dict[str, float]] = {}
    df = est.ops
    for phase, summary in (("prefill", est.prefill), ("decode", est.decode)):
        if summary is None:
            continue
        d = df[df.phase == phase]
        cats = {c: 0.0 for c in CATEGORIES}
        for r in d.itertuples():
            cats[op_category(r.name, r.kind)] += float(r.t_s * r.count)
        tot = sum(cats.values())
        scale = summary.t_s / tot if tot > 0 else 0.0
        out[phase] = {c: v * scale for c, v in cats.items()}
    if "decode" in out:
        steps = est.decode.steps
        out["request"] = {c: out["prefill"][c] + out["decode"][c] * steps for c in CATEGORIES}
    return out


def plot_breakdown(estimates, path=None, *, dpi: int = DPI) -> PlotResult:
    """Stacked bars of wall time by category: one panel per phase (prefill = TTFT, decode mean step = TPOT,
    whole request = e2e), one bar per chip."""
    plt = _plt()
    ests = _as_list(estimates)
    bds = {est.chip: time_breakdown(est) for est in ests}
    panels = [("prefill", "prefill (TTFT)"), ("decode", "decode step (TPOT)"), ("request", "whole request (e2e)")]
    panels = [p for p in panels if any(p[0] in b for b in bds.values())]
    fig, axes = _subplots(plt, len(panels), width_each=max(3.2, 1.3 + 1.1 * len(ests)), height=4.6)
    used = [c for c in CATEGORIES if any(b[ph][c] > 0 for b in bds.values() for ph in b)]
    for ax, (phase, title) in zip(axes, panels):
        chips = [e.chip for e in ests if phase in bds[e.chip]]
        totals = [sum(bds[c][phase].values()) for c in chips]
        unit, scale = ("s", 1.0) if max(totals) >= 2 else ("ms", 1e3) if max(totals) >= 2e-3 else ("µs", 1e6)
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
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles[::-1], labels[::-1], loc="outside right center", fontsize=8)
    _suptitle(fig, f"Time by op category — {_scenario_line(ests[0])}", fontsize=9)
    return _finish(PlotResult(fig, {"breakdown": bds, "categories": list(CATEGORIES)}), path, dpi)


# ------------------------------------------------------------------------------------ sweeps
def _batch_grid(pp: int, upper: float, lo: int = 64, hi: int = 4096) -> np.ndarray:
    """pp x powers of two, from pp up to at least `lo` and past `upper` (2x), at most `hi`."""
    top = min(hi, max(lo, 2 ** math.ceil(math.log2(max(upper, 1) * 2))))
    return pp * 2 ** np.arange(int(math.log2(top)) + 1)


def default_contexts(prompt_len: int, max_context: int | None = None, gen_len: int = 0) -> list[int]:
    """Prompt lengths for the frontier: 512, 2k, 8k, 32k and the scenario's own prompt, within the model's context."""
    vals = {512, 2048, 8192, 32768, int(prompt_len)}
    if max_context:
        vals = {v for v in vals if v + gen_len <= max_context} or {int(prompt_len)}
    return sorted(vals)


def frontier_data(model, chip, *, prompt_lens: Sequence[int], gen_len: int = 256, batches=None, **kw) -> dict:
    """TPOT and output tokens/s per chip over a batch sweep (one `sweep` call, vectorized), per prompt length.

    Returns {prompt_len: dict(batch, tpot_s, ttft_s, throughput_tokens_per_s_per_chip, fits arrays, max_batch)};
    each curve holds the batch grid up to two points past its own largest batch that fits, and that batch.
    fits = batch <= max_batch (the estimate's memory limit, which reserves a full prefill-chunk workspace);
    fits_bytes = the sweep's per_chip_bytes <= capacity at that batch."""
    from ..estimate import sweep

    pp = int(kw.get("pp", 1))
    prompt_lens = sorted(int(p) for p in prompt_lens)
    probe = sweep(model, chip, batch=[pp], prompt_len=prompt_lens, gen_len=[gen_len], **kw)
    max_b = {int(r.prompt_len): int(r.max_batch) for r in probe.itertuples()}
    grid = batches if batches is not None else _batch_grid(pp, max(max_b.values()))
    grid = sorted({int(b) for b in grid} | {b for b in max_b.values() if b > 0})
    df = sweep(model, chip, batch=grid, prompt_len=prompt_lens, gen_len=[gen_len], **kw)
    base = set(int(b) for b in (batches if batches is not None else _batch_grid(pp, max(max_b.values()))))
    out = {}
    for p in prompt_lens:
        d = df[(df.prompt_len == p) & (df.batch.isin(base | {max_b[p]}))].sort_values("batch")
        # the curve stops two grid points past the largest batch that fits (past 8 x pp when none fits)
        over = d.batch[d.batch > max_b[p]]
        keep_to = over.iloc[min(1, len(over) - 1)] if len(over) and max_b[p] > 0 else 8 * pp
        d = d[d.batch <= max(keep_to, max_b[p])]
        out[p] = dict(batch=d.batch.to_numpy(), tpot_s=d.tpot_s.to_numpy(), ttft_s=d.ttft_s.to_numpy(),
                      throughput_tokens_per_s_per_chip=d.throughput_tokens_per_s_per_chip.to_numpy(),
                      fits=d.batch.to_numpy() <= max_b[p], fits_bytes=d.fits.to_numpy(dtype=bool),
                      per_chip_bytes=d.per_chip_bytes.to_numpy(), max_batch=max_b[p])
    return out


def plot_frontier(model, chips, *, prompt_lens: Sequence[int] | None = None, prompt_len: int = 2048, gen_len: int = 256,
                  batches=None, path=None, dpi: int = DPI, **kw) -> PlotResult:
    """Latency–throughput frontier: TPOT (ms) vs output tokens/s per chip (batch · gen / e2e / chips, prefill
    included) over a batch sweep, one curve per prompt length, one panel per chip. Filled points fit in
    HBM; hollow grey points do not; a star marks the largest batch that fits."""
    from ..estimate import _load_model

    plt = _plt()
    spec = _load_model(model)
    chips = _as_list(chips)
    if gen_len < 2:
        gen_len = 2  # TPOT needs at least one decode step
    if prompt_lens is None:
        prompt_lens = default_contexts(prompt_len, spec.max_context, gen_len)
    fig, axes = _subplots(plt, len(chips), width_each=6.0, height=4.8, sharey=True)
    cmap = plt.get_cmap("viridis")
    data: dict[str, Any] = {"curves": {}, "gen_len": gen_len}
    for ax, chip in zip(axes, chips):
        fd = frontier_data(spec, chip, prompt_lens=prompt_lens, gen_len=gen_len, batches=batches, **kw)
        from ..hardware import load_chip

        cname = load_chip(chip).name
        data["curves"][cname] = fd
        for i, (p, c) in enumerate(fd.items()):
            col = cmap(0.85 * i / max(len(fd) - 1, 1))
            x, y, fits = c["throughput_tokens_per_s_per_chip"], c["tpot_s"] * 1e3, c["fits"]
            ax.plot(x[fits], y[fits], "-o", color=col, ms=4, lw=1.4, label=f"prompt {_tok(p)}")
            if (~fits).any():
                # continue the curve into the region that does not fit: hollow, grey, dotted
                k = np.flatnonzero(~fits)
                k = np.concatenate([[k[0] - 1], k]) if k[0] > 0 else k
                ax.plot(x[k], y[k], ":", color="0.6", lw=1.0)
                ax.plot(x[~fits], y[~fits], "o", ms=4, mfc="none", mec="0.6", mew=0.8)
            mb = c["max_batch"]
            j = np.flatnonzero(c["batch"] == mb)
            if mb > 0 and j.size:
                ax.plot(x[j], y[j], "*", color=col, ms=12, mec="k", mew=0.6, zorder=4)
                ax.annotate(f"B={mb}", (x[j[0]], y[j[0]]), xytext=(-4, 6), textcoords="offset points", fontsize=7,
                            ha="right")
        if all(c["max_batch"] == 0 for c in fd.values()):
            ax.text(0.5, 0.95, "does not fit at any batch: weights alone exceed HBM", transform=ax.transAxes,
                    ha="center", va="top", fontsize=9, color="#b00000")
        # batch labels along the first curve
        first = next(iter(fd.values()))
        for b, xv, yv in zip(first["batch"], first["throughput_tokens_per_s_per_chip"], first["tpot_s"] * 1e3):
            if b in (kw.get("pp", 1), 8 * kw.get("pp", 1), 64 * kw.get("pp", 1), 512 * kw.get("pp", 1)):
                ax.annotate(f"{b}", (xv, yv), xytext=(4, -10), textcoords="offset points", fontsize=7, color="0.3")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.autoscale_view()
        _log_axis(ax, "x")
        _log_axis(ax, "y")
        ax.set_xlabel("output tokens/s per chip (batch·gen / e2e)")
        ax.grid(True, which="both", alpha=0.2)
        ax.set_title(f"{cname} ×{_chips_per_replica(kw)}", fontsize=10)
    axes[0].set_ylabel("TPOT, mean decode step (ms)")
    from matplotlib.lines import Line2D

    by_label: dict = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            by_label.setdefault(lab, h)
    handles = list(by_label.values())
    handles += [Line2D([], [], marker="*", ls="", color="0.5", mec="k", ms=10, label="largest batch\nthat fits"),
                Line2D([], [], marker="o", ls=":", color="0.6", mfc="none", ms=4, label="does not fit\nin HBM")]
    fig.legend(handles=handles, fontsize=8, loc="outside right center")
    _suptitle(fig, f"Latency–throughput frontier — {spec.name}, gen {gen_len}, batch sweep "
                 f"(numbers along the {_tok(min(prompt_lens))} curve: batch)", fontsize=9.5)
    return _finish(PlotResult(fig, data), path, dpi)


def _chips_per_replica(kw) -> int:
    return int(kw.get("tp", 1)) * int(kw.get("pp", 1))


def _tok(n: int) -> str:
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


def _log_axis(ax, which: str) -> None:
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


def memory_data(model, chip, *, prompt_len: int = 2048, gen_len: int = 256, batches=None, **kw) -> dict:
    """Per-chip bytes (weights, KV cache at prompt + gen tokens, peak activations) over a batch grid, against
    the chip's HBM capacity (one vectorized `evaluate` call)."""
    from ..estimate import evaluate
    from ..hardware import load_chip

    c = load_chip(chip)
    pp = int(kw.get("pp", 1))
    eval_kw = {k: v for k, v in kw.items() if k in ("tp", "pp", "ep", "dp", "weight_dtype", "act_dtype", "kv_dtype",
                                                     "attention", "sequence_parallel")}
    if batches is None:
        probe = evaluate(model, c, batch=pp, prompt_len=prompt_len, gen_len=gen_len, **eval_kw)
        mb = int(np.asarray(probe["memory"]["max_batch"]))
        batches = _batch_grid(pp, mb, lo=16, hi=2048)
        if mb > 0:
            batches = np.union1d(batches, [mb])
    b = np.asarray(sorted({int(x) for x in batches}), dtype=np.float64)
    r = evaluate(model, c, batch=b, prompt_len=prompt_len, gen_len=gen_len, **eval_kw)
    m = r["memory"]

    def arr(k):
        return np.broadcast_to(np.asarray(m[k], dtype=np.float64), b.shape).copy()

    return dict(chip=c.name, batch=b.astype(int), weights=arr("per_chip_weight_bytes"),
                kv_cache=arr("per_chip_kv_cache_bytes"), activations=arr("per_chip_activation_bytes"),
                per_chip_bytes=arr("per_chip_bytes"), capacity_bytes=c.hbm_bytes,
                max_batch=int(np.max(np.asarray(m["max_batch"]))), context=int(prompt_len + gen_len))


def plot_memory(model, chips, *, prompt_len: int = 2048, gen_len: int = 256, batches=None, path=None,
                dpi: int = DPI, **kw) -> PlotResult:
    """Stacked bars of per-chip memory (weights, KV cache, activations) vs batch, against HBM capacity
    (dashed line), one panel per chip; bars past the largest batch that fits (or over capacity) are hatched."""
    from ..estimate import _load_model

    plt = _plt()
    spec = _load_model(model)
    chips = _as_list(chips)
    fig, axes = _subplots(plt, len(chips), width_each=6.0, height=4.6)
    data: dict[str, Any] = {}
    colors = {"weights": "#4c72b0", "kv_cache": "#dd8452", "activations": "#55a868"}
    names = {"weights": "weights", "kv_cache": "KV cache", "activations": "activations (prefill peak)"}
    for ax, chip in zip(axes, chips):
        d = memory_data(spec, chip, prompt_len=prompt_len, gen_len=gen_len, batches=batches, **kw)
        data[d["chip"]] = d
        x = np.arange(len(d["batch"]))
        fits = (d["per_chip_bytes"] <= d["capacity_bytes"]) & (d["batch"] <= d["max_batch"])
        bottom = np.zeros(len(x))
        for k in ("weights", "kv_cache", "activations"):
            v = d[k] / 1e9
            ax.bar(x, v, 0.75, bottom=bottom, color=colors[k], label=names[k], edgecolor="white", lw=0.4)
            ax.bar(x[~fits], v[~fits], 0.75, bottom=bottom[~fits], color="none", edgecolor="0.3", hatch="///", lw=0)
            bottom += v
        cap = d["capacity_bytes"] / 1e9
        ax.axhline(cap, color="k", ls="--", lw=1.1, label=f"HBM capacity {sig3(cap)} GB")
        if d["max_batch"] == 0:
            ax.text(0.5, 0.5, "does not fit at any batch:\nweights alone exceed HBM", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9, color="#b00000", bbox=dict(fc="white", ec="#b00000"))
        ticks = [f"{b}★" if b == d["max_batch"] else str(b) for b in d["batch"]]
        ax.set_xticks(x, ticks, fontsize=7.5, rotation=45 if len(x) > 8 else 0)
        ax.set_xlabel(f"batch (sequences per replica; ★ = max batch {d['max_batch']})" if d["max_batch"] else
                      "batch (sequences per replica; none fits)")
        top = max(float(bottom.max()), cap) * 1.08
        ax.set_ylim(0, top)
        ax.set_title(f"{d['chip']} ×{_chips_per_replica(kw)}, context {_tok(d['context'])}", fontsize=10)
        ax.grid(True, axis="y", alpha=0.25)
    axes[0].set_ylabel("memory per chip (GB)")
    for ax in axes:
        ax.legend(loc="upper left", fontsize=8)
    _suptitle(fig, f"Memory per chip vs batch — {spec.name}, KV cache at prompt {prompt_len} + gen {gen_len} "
                 f"(hatched: does not fit)", fontsize=9.5)
    return _finish(PlotResult(fig, data), path, dpi)


# ------------------------------------------------------------------------------------ context study
def plot_phase_split(estimates, path=None, *, dpi: int = DPI) -> PlotResult:
    """Prefill-vs-decode study over context lengths (one Estimate per prompt length, same model and chip):
    top row: share of prefill and of a decode step by category (100 % stacked bars); bottom row:
    TTFT and TPOT (ms, log) and the share of each phase's time that is memory- vs compute-bound."""
    plt = _plt()
    ests = sorted(_as_list(estimates), key=lambda e: e.scenario["prompt_len"])
    prompts = [e.scenario["prompt_len"] for e in ests]
    fig, axs = plt.subplots(2, 2, figsize=(11, 7.4), layout="constrained")
    data: dict[str, Any] = {"prompt_len": prompts, "shares": {}, "ttft_s": [e.ttft_s for e in ests],
                            "tpot_s": [e.tpot_s for e in ests],
                            "bound_shares": {"prefill": [e.prefill.bound_shares for e in ests],
                                             "decode": [e.decode.bound_shares if e.decode else None for e in ests]}}
    x = np.arange(len(ests))
    labels = [_tok(p) for p in prompts]
    for ax, phase in zip(axs[0], ("prefill", "decode")):
        bds = [time_breakdown(e).get(phase) for e in ests]
        shares = {c: np.array([(b[c] / sum(b.values()) if b and sum(b.values()) else 0.0) for b in bds])
                  for c in CATEGORIES}
        data["shares"][phase] = shares
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
    h, lab = axs[0][0].get_legend_handles_labels()
    axs[0][1].legend(h[::-1], lab[::-1], fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax = axs[1][0]
    ax.plot(x, np.array(data["ttft_s"]) * 1e3, "-o", label="TTFT (prefill)")
    tp = np.array([t if t is not None else np.nan for t in data["tpot_s"]])
    ax.plot(x, tp * 1e3, "-^", label="TPOT (mean decode step)")
    for xi, a, b in zip(x, data["ttft_s"], tp):
        ax.annotate(f"{sig3(a * 1e3)}", (xi, a * 1e3), xytext=(0, 6), textcoords="offset points", fontsize=7,
                    ha="center")
        ax.annotate(f"{sig3(b * 1e3)}", (xi, b * 1e3), xytext=(0, 6), textcoords="offset points", fontsize=7,
                    ha="center")
    ax.set_yscale("log")
    ax.set_ylim(np.nanmin(tp) * 1e3 / 2, max(data["ttft_s"]) * 1e3 * 2.5)
    _log_axis(ax, "y")
    ax.set_xticks(x, labels)
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("time (ms)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.2)
    ax.set_title("latency", fontsize=10)
    ax = axs[1][1]
    w = 0.38
    for off, phase, hatch in ((-w / 2, "prefill", None), (w / 2, "decode", "//")):
        bs = data["bound_shares"][phase]
        comp = np.array([b["compute"] if b else 0 for b in bs]) * 100
        mem = np.array([b["memory"] if b else 0 for b in bs]) * 100
        comm = np.array([b["comm"] if b else 0 for b in bs]) * 100
        bottom = np.zeros(len(x))
        for vals, col, what in ((comp, "#c44e52", "compute"), (mem, "#4c72b0", "memory"), (comm, "#ff7f0e", "comm")):
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
    e = ests[0]
    s = e.scenario
    _suptitle(fig, f"Prefill vs decode across context — {e.model} on {e.chip} ×{s['chips']}, batch {s['batch']}, "
                 f"gen {s['gen_len']}", fontsize=10)
    return _finish(PlotResult(fig, data), path, dpi)


PLOTS = ("roofline", "frontier", "breakdown", "memory")
