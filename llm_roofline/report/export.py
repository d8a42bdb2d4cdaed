"""Machine-readable exports (raw SI values + metadata) and the `report` writer that bundles them with
the Markdown report and the charts.

    write_report("meta-llama/Llama-3.1-8B", ["h100-sxm", "mi300x"], "reports/llama8b", batch=8)

writes report.md, ops.csv, summary.json and the PNG charts into the folder. CSV and JSON keep SI base
units (seconds, bytes, FLOP, FLOP/s) in columns whose names carry the unit; only report.md and the
charts convert to ms, GB, TFLOP/s.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from ..files import ensure_dir, write_text

SCENARIO_KEYS = ("tp", "pp", "ep", "dp", "weight_dtype", "act_dtype", "kv_dtype", "efficiency", "attention",
                 "sequence_parallel")
CHARTS = {
    "roofline": "roofline.png",
    "frontier": "frontier.png",
    "breakdown": "breakdown.png",
    "memory": "memory.png",
}


def _version() -> str:
    from .. import __version__

    return __version__


def metadata(est) -> dict[str, Any]:
    """What a number in ops.csv / summary.json was computed for: package version, model, chip, sharding,
    dtypes, efficiency, scenario sizes."""
    s = est.scenario
    return dict(llm_roofline_version=_version(), model=est.model, chip=est.chip, chips=s["chips"],
                batch=s["batch"], prompt_len=s["prompt_len"], gen_len=s["gen_len"], tp=s["tp"], pp=s["pp"],
                ep=s["ep"], dp=s["dp"], sequence_parallel=s.get("sequence_parallel", False),
                weight_dtype=s["weight_dtype"], act_dtype=s["act_dtype"], kv_dtype=s["kv_dtype"],
                compute_dtype=s["compute_dtype"], attention=s.get("attention", "fused"), efficiency=est.efficiency)


def ops_frame(estimates):
    """One row per (chip, phase, op) with raw SI values; metadata columns (model, chip, scenario, version)
    repeat on every row so the file stands on its own."""
    import pandas as pd

    frames = []
    for est in estimates:
        meta = metadata(est)
        df = est.ops.copy()
        df.insert(0, "chip", est.chip)
        df.insert(0, "model", est.model)
        for k, v in meta.items():
            if k not in df.columns:
                df[k] = v
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _json_ready(x):
    """inf/nan are not JSON: inf -> "inf", nan -> null (as Estimate.to_dict does)."""
    if isinstance(x, dict):
        return {k: _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    try:
        import numpy as np

        if isinstance(x, np.generic):
            return _json_ready(x.item())
    except ImportError:  # pragma: no cover
        pass
    return x


def summary_dict(estimates, *, command: str | None = None, notes: Sequence[str] = ()) -> dict[str, Any]:
    """summary.json: metadata + one entry per chip with Estimate.to_dict() (minus the ops table, which is in
    ops.csv). Raw SI values throughout; `units` states them."""
    ests = list(estimates)
    results = []
    for est in ests:
        d = est.to_dict()
        d.pop("ops", None)
        s = est.scenario
        d["sharding"] = dict(tp=s["tp"], pp=s["pp"], ep=s["ep"], dp=s["dp"], chips=s["chips"],
                             sequence_parallel=s.get("sequence_parallel", False))
        d["dtypes"] = dict(weight=s["weight_dtype"], act=s["act_dtype"], kv=s["kv_dtype"], compute=s["compute_dtype"])
        results.append(d)
    return _json_ready(dict(
        llm_roofline_version=_version(),
        command=command,
        model=ests[0].model if ests else None,
        chips=[e.chip for e in ests],
        efficiency=sorted({e.efficiency for e in ests}),
        units="SI base units: seconds (*_s), bytes (*bytes*), FLOP (flops), FLOP/s (*_per_s), FLOP/byte (intensity)",
        notes=list(notes),
        assumptions=sorted({a for e in ests for a in e.assumptions}),
        results=results,
    ))


def write_ops_csv(estimates, path) -> str:
    return write_text(path, ops_frame(estimates).to_csv(index=False))


def write_summary_json(estimates, path, **kw) -> str:
    return write_text(path, json.dumps(summary_dict(estimates, **kw), indent=2) + "\n")


def write_report(model, chips, out_dir, *, batch: int = 1, prompt_len: int = 2048, gen_len: int = 256,
                 title: str | None = None, notes: Sequence[str] = (), command: str | None = None,
                 frontier_prompts: Sequence[int] | None = None, charts: Sequence[str] = tuple(CHARTS),
                 dpi: int | None = None, estimates=None, **kw) -> dict[str, str]:
    """Estimate `model` on every chip in `chips` (same scenario) and write report.md, ops.csv, summary.json
    and the charts into `out_dir`. kw: tp, pp, ep, dp, weight_dtype, act_dtype, kv_dtype, efficiency,
    attention, sequence_parallel (as for `estimate`). A model that does not fit still gets a report; its
    headline says so. Returns {artifact: path}."""
    from ..estimate import _load_model, estimate
    from . import plot
    from .markdown import report_markdown

    unknown = set(kw) - set(SCENARIO_KEYS)
    if unknown:
        raise TypeError(f"write_report: unknown scenario keywords {sorted(unknown)}")
    out = ensure_dir(out_dir)
    spec = _load_model(model)
    chips = [c for c in (chips.split(",") if isinstance(chips, str) else chips) if str(c).strip()]
    ests = estimates or [estimate(spec, c, batch=batch, prompt_len=prompt_len, gen_len=gen_len, **kw) for c in chips]
    dpi = dpi or plot.DPI
    files: dict[str, str] = {}
    images: dict[str, str] = {}
    for name in charts:
        fname = CHARTS[name]
        if name == "roofline":
            res = plot.plot_roofline(ests)
        elif name == "breakdown":
            res = plot.plot_breakdown(ests)
        elif name == "frontier":
            res = plot.plot_frontier(spec, chips, prompt_len=prompt_len, gen_len=gen_len, prompt_lens=frontier_prompts,
                                     **kw)
        elif name == "memory":
            res = plot.plot_memory(spec, chips, prompt_len=prompt_len, gen_len=gen_len, **kw)
        else:
            raise ValueError(f"unknown chart {name!r}; charts: {', '.join(CHARTS)}")
        files[name] = res.save(out / fname, dpi)
        res.close()
        images[name] = fname
    files["ops.csv"] = write_ops_csv(ests, out / "ops.csv")
    files["summary.json"] = write_summary_json(ests, out / "summary.json", command=command, notes=notes)
    md = report_markdown(ests, images=images, title=title, notes=notes, command=command,
                         files=["ops.csv", "summary.json"])
    files["report.md"] = write_text(out / "report.md", md)
    return files
