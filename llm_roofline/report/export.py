"""Machine-readable exports of Estimates it is given (raw SI values + metadata): ops.csv and summary.json.

CSV and JSON keep SI base units (seconds, bytes, FLOP, FLOP/s) in columns whose names carry the unit; only
report.md and the charts convert to ms, GB, TFLOP/s. The `report` writer that estimates and bundles these
with the Markdown report and the charts is report.build.write_report.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..files import write_text
from ..units import json_ready


def _version() -> str:
    from ..version import __version__

    return __version__


def metadata(est) -> dict[str, Any]:
    """What a number in ops.csv / summary.json was computed for: package version, model, chip, sharding,
    dtypes, efficiency, scenario sizes."""
    s = est.scenario
    return dict(llm_roofline_version=_version(), model=est.model, chip=est.chip, chips=s["chips"],
                batch=s["batch"], prompt_len=s["prompt_len"], gen_len=s["gen_len"], tp=s["tp"], pp=s["pp"],
                ep=s["ep"], dp=s["dp"], sequence_parallel=s.get("sequence_parallel", False),
                weight_dtype=s["weight_dtype"], act_dtype=s["act_dtype"], kv_dtype=s["kv_dtype"],
                compute_dtype=s["compute_dtype"], attention=s.get("attention", "fused"),
                efficiency_mode=est.efficiency_mode, efficiency=est.efficiency,
                gpu_memory_utilization=est.memory.gpu_memory_utilization)


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
    return json_ready(dict(
        llm_roofline_version=_version(),
        command=command,
        model=ests[0].model if ests else None,
        chips=[e.chip for e in ests],
        efficiency_mode=sorted({e.efficiency_mode for e in ests}),
        efficiency={e.chip: e.efficiency for e in ests},  # each chip's fit
        units="SI base units: seconds (*_s), bytes (*bytes*), FLOP (flops), FLOP/s (*_per_s), FLOP/byte (intensity)",
        notes=list(notes),
        assumptions=sorted({a for e in ests for a in e.assumptions}),
        results=results,
    ))


def write_ops_csv(estimates, path) -> str:
    return write_text(path, ops_frame(estimates).to_csv(index=False))


def write_summary_json(estimates, path, **kw) -> str:
    return write_text(path, json.dumps(summary_dict(estimates, **kw), indent=2) + "\n")
