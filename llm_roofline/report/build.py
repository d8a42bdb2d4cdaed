"""Where the report layer runs the estimator: the ONE orchestration module of report/.

Estimates per chip or per context length, the batch sweeps behind the frontier and memory charts, and the
`report` writer that bundles them. Everything else in report/ renders what it is given (Estimates, their op
frames, the dicts built here) and computes nothing of its own.

    write_report("meta-llama/Llama-3.1-8B", ["h100-sxm", "mi300x"], "reports/llama8b", batch=8)

writes report.md, ops.csv, summary.json and the PNG charts into the folder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from ..files import ensure_dir, write_text
from ..bounds import check_count
from ..units import as_list
from .chart_base import DPI, PlotResult, dtype_phrase, replica_text
from .plot_sweeps import render_frontier, render_memory

SCENARIO_KEYS = ("tp", "pp", "ep", "dp", "weight_dtype", "act_dtype", "kv_dtype", "efficiency", "attention",
                 "sequence_parallel", "gpu_memory_utilization")
MEMORY_KEYS = ("tp", "pp", "ep", "weight_dtype", "act_dtype", "kv_dtype", "attention", "sequence_parallel")
CHARTS = {
    "roofline": "roofline.png",
    "frontier": "frontier.png",
    "breakdown": "breakdown.png",
    "memory": "memory.png",
}


# ------------------------------------------------------------------------------------ estimates
def chip_estimates(model, chips, *, batch: int, prompt_len: int, gen_len: int, **kw) -> list:
    """One Estimate per chip, same scenario (kw: the scenario keywords of `estimate`)."""
    from ..estimate import estimate

    return [estimate(model, c, batch=batch, prompt_len=prompt_len, gen_len=gen_len, **kw) for c in chips]


def context_estimates(model, chip, *, batch: int, gen_len: int, prompt_lens: Sequence[int], **kw) -> list:
    """One Estimate per prompt length, same model, chip and batch (the prefill-vs-decode study)."""
    from ..estimate import estimate

    return [estimate(model, chip, batch=batch, prompt_len=p, gen_len=gen_len, **kw) for p in prompt_lens]


# ------------------------------------------------------------------------------------ batch sweeps
def batch_grid(pp: int, upper: float, lo: int = 64, hi: int = 4096) -> np.ndarray:
    """pp x powers of two, from pp up to at least `lo` and past `upper` (2x), at most `hi`; below pp, the powers of
    two from 1 (a batch below pp runs a micro-batch per sequence: sharding.micro_batches)."""
    top = min(hi, max(lo, 2 ** math.ceil(math.log2(max(upper, 1) * 2))))
    below = [2 ** k for k in range(int(math.log2(pp)) + 1) if 2 ** k < pp]
    return np.array(below + list(pp * 2 ** np.arange(int(math.log2(top)) + 1)))


def default_contexts(prompt_len: int, max_context: int | None = None, gen_len: int = 0) -> list[int]:
    """Prompt lengths for the frontier: 512, 2k, 8k, 32k and the scenario's own prompt, within the model's context."""
    vals = {512, 2048, 8192, 32768, int(prompt_len)}
    if max_context:
        vals = {v for v in vals if v + gen_len <= max_context} or {int(prompt_len)}
    return sorted(vals)


def frontier_data(model, chip, *, prompt_lens: Sequence[int], gen_len: int = 256, batches=None, **kw) -> dict:
    """TPOT and output tokens/s per chip over a batch sweep (one `sweep` call, vectorized), per prompt length.

    Returns {prompt_len: dict(efficiency mode, fit, batch, tpot_s, ttft_s, throughput_tokens_per_s_per_chip, fits
    arrays, max_batch)};
    each curve holds the batch grid up to two points past its own largest batch that fits, and that batch.
    fits = batch <= max_batch (the estimate's memory limit, which reserves a full prefill-chunk workspace);
    fits_bytes = the sweep's per_chip_bytes <= capacity at that batch."""
    from ..sweep import sweep

    pp = int(kw.get("pp", 1))
    prompt_lens = sorted(int(p) for p in prompt_lens)
    probe = sweep(model, chip, batch=[pp], prompt_len=prompt_lens, gen_len=[gen_len], **kw)
    max_b = {int(r.prompt_len): int(r.max_batch) for r in probe.itertuples()}
    base = set(int(b) for b in (batches if batches is not None else batch_grid(pp, max(max_b.values()))))
    grid = sorted(base | {b for b in max_b.values() if b > 0})
    df = sweep(model, chip, batch=grid, prompt_len=prompt_lens, gen_len=[gen_len], **kw)
    out = {}
    for p in prompt_lens:
        d = df[(df.prompt_len == p) & (df.batch.isin(base | {max_b[p]}))].sort_values("batch")
        # the curve stops two grid points past the largest batch that fits (past 8 x pp when none fits)
        over = d.batch[d.batch > max_b[p]]
        keep_to = over.iloc[min(1, len(over) - 1)] if len(over) and max_b[p] > 0 else 8 * pp
        d = d[d.batch <= max(keep_to, max_b[p])]
        out[p] = dict(efficiency=str(df.efficiency.iloc[0]), fit=str(df.fit.iloc[0]),
                      batch=d.batch.to_numpy(), tpot_s=d.tpot_s.to_numpy(), ttft_s=d.ttft_s.to_numpy(),
                      throughput_tokens_per_s_per_chip=d.throughput_tokens_per_s_per_chip.to_numpy(),
                      fits=d.batch.to_numpy() <= max_b[p], fits_bytes=d.fits.to_numpy(dtype=bool),
                      per_chip_bytes=d.per_chip_bytes.to_numpy(), max_batch=max_b[p])
    return out


def memory_data(model, chip, *, prompt_len: int = 2048, gen_len: int = 256, batches=None, **kw) -> dict:
    """Per-chip bytes (weights, KV cache at prompt + gen tokens, the activation workspace) over a batch grid,
    against the usable memory (gpu_memory_utilization x the chip's engine capacity; memory only: nothing is scored)."""
    from ..hardware import load_chip
    from ..memory import GPU_MEMORY_UTILIZATION, memory_footprint, usable_bytes
    from ..model.hf import load_model

    c = load_chip(chip)
    prompt_len, gen_len = check_count("prompt_len", prompt_len), check_count("gen_len", gen_len)
    util = kw.get("gpu_memory_utilization", GPU_MEMORY_UTILIZATION)
    mem_kw = {k: v for k, v in kw.items() if k in MEMORY_KEYS}
    mem_kw["capacity_bytes"] = usable = usable_bytes(c.engine_capacity_bytes, util)
    spec = load_model(model)
    pp = check_count("pp", kw.get("pp", 1))
    if batches is None:
        probe, _ = memory_footprint(spec, c, batch=pp, prompt_len=prompt_len, gen_len=gen_len, **mem_kw)
        mb = int(np.asarray(probe.max_batch))
        batches = batch_grid(pp, mb, lo=16, hi=2048)
        if mb > 0:
            batches = np.union1d(batches, [mb])
    b = np.unique(np.ravel(check_count("batch", batches)))
    m, _ = memory_footprint(spec, c, batch=b, prompt_len=prompt_len, gen_len=gen_len, **mem_kw)

    def arr(v):
        return np.broadcast_to(np.asarray(v, dtype=np.float64), b.shape).copy()

    return dict(chip=c.name, batch=b.astype(int), weights=arr(m.weight_bytes_per_chip),
                kv_cache=arr(m.kv_cache_bytes_per_chip), activations=arr(m.activation_workspace_bytes_per_chip),
                per_chip_bytes=arr(m.bytes_per_chip), capacity_bytes=c.engine_capacity_bytes, usable_bytes=usable,
                capacity_label=c.engine_capacity_label,
                gpu_memory_utilization=float(util),
                max_batch=int(np.max(np.asarray(m.max_batch))), context=int(prompt_len + gen_len))


def plot_frontier(model, chips, *, prompt_lens: Sequence[int] | None = None, prompt_len: int = 2048,
                  gen_len: int = 256, batches=None, path=None, dpi: int = DPI, **kw) -> PlotResult:
    """frontier_data for every chip (one curve per prompt length; default_contexts when prompt_lens is None),
    rendered by plot_sweeps.render_frontier. gen_len < 2 is raised to 2: TPOT needs one decode step."""
    from ..hardware import load_chip
    from ..model.hf import load_model

    spec = load_model(model)
    gen_len = max(gen_len, 2)
    if prompt_lens is None:
        prompt_lens = default_contexts(prompt_len, spec.max_context, gen_len)
    curves = {load_chip(c).name: frontier_data(spec, c, prompt_lens=prompt_lens, gen_len=gen_len, batches=batches,
                                               **kw) for c in as_list(chips)}
    return render_frontier(curves, model_name=spec.name + dtype_phrase(kw), gen_len=gen_len, pp=int(kw.get("pp", 1)),
                           replica=replica_text(kw), path=path, dpi=dpi)


def plot_memory(model, chips, *, prompt_len: int = 2048, gen_len: int = 256, batches=None, path=None,
                dpi: int = DPI, **kw) -> PlotResult:
    """memory_data for every chip, rendered by plot_sweeps.render_memory."""
    from ..model.hf import load_model

    spec = load_model(model)
    data = {}
    for chip in as_list(chips):
        d = memory_data(spec, chip, prompt_len=prompt_len, gen_len=gen_len, batches=batches, **kw)
        data[d["chip"]] = d
    return render_memory(data, model_name=spec.name + dtype_phrase(kw), prompt_len=prompt_len, gen_len=gen_len,
                         replica=replica_text(kw), path=path, dpi=dpi)


# ------------------------------------------------------------------------------------ the report folder
def chart(name: str, ests, model, chips, *, prompt_len: int, gen_len: int, frontier_prompts=None,
          **kw) -> PlotResult:
    """One chart of the report by name (CHARTS): roofline and breakdown render the Estimates; frontier and
    memory sweep the batch for every chip."""
    from .plot_breakdown import plot_breakdown
    from .plot_roofline import plot_roofline

    if name == "roofline":
        return plot_roofline(ests)
    if name == "breakdown":
        return plot_breakdown(ests)
    if name == "frontier":
        return plot_frontier(model, chips, prompt_len=prompt_len, gen_len=gen_len, prompt_lens=frontier_prompts, **kw)
    if name == "memory":
        return plot_memory(model, chips, prompt_len=prompt_len, gen_len=gen_len, **kw)
    raise ValueError(f"unknown chart {name!r}; charts: {', '.join(CHARTS)}")


def write_report(model, chips, out_dir, *, batch: int = 1, prompt_len: int = 2048, gen_len: int = 256,
                 title: str | None = None, notes: Sequence[str] = (), command: str | None = None,
                 frontier_prompts: Sequence[int] | None = None, charts: Sequence[str] = tuple(CHARTS),
                 dpi: int | None = None, estimates=None, **kw) -> dict[str, str]:
    """Estimate `model` on every chip in `chips` (same scenario) and write report.md, ops.csv, summary.json
    and the charts into `out_dir`. kw: tp, pp, ep, dp, weight_dtype, act_dtype, kv_dtype, efficiency,
    attention, sequence_parallel (as for `estimate`). A model that does not fit still gets a report; its
    headline says so. Returns {artifact: path}."""
    from ..model.hf import load_model
    from .export import write_ops_csv, write_summary_json
    from .markdown import report_markdown

    unknown = set(kw) - set(SCENARIO_KEYS)
    if unknown:
        raise TypeError(f"write_report: unknown scenario keywords {sorted(unknown)}")
    out = Path(out_dir)
    ensure_dir(out)
    spec = load_model(model)
    chips = [c for c in (chips.split(",") if isinstance(chips, str) else chips) if str(c).strip()]
    ests = estimates or chip_estimates(spec, chips, batch=batch, prompt_len=prompt_len, gen_len=gen_len, **kw)
    files: dict[str, str] = {}
    images: dict[str, str] = {}
    for name in charts:
        res = chart(name, ests, spec, chips, prompt_len=prompt_len, gen_len=gen_len,
                    frontier_prompts=frontier_prompts, **kw)
        files[name] = res.save(out / CHARTS[name], dpi or DPI)
        res.close()
        images[name] = CHARTS[name]
    files["ops.csv"] = write_ops_csv(ests, out / "ops.csv")
    files["summary.json"] = write_summary_json(ests, out / "summary.json", command=command, notes=notes)
    md = report_markdown(ests, images=images, title=title, notes=notes, command=command,
                         files=["ops.csv", "summary.json"])
    write_text(out / "report.md", md)
    files["report.md"] = str(out / "report.md")
    return files
