"""Fitting the efficiency model (efficiency.py) to measured kernel timings.

Measured data: a simple CSV (MEASURED_COLUMNS); `convert_vidur` turns the Vidur profiles into it:
`python -m llm_roofline.calibrate convert /work/shared/calibration/vidur OUT.csv`. Fitting: Nelder-Mead
(numpy only, fixed start, deterministic) on a robust loss of log(predicted / measured); parameters are
rounded to four significant digits, as stored.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from .errors import ChipError, RooflineError
from .hardware import Chip, load_chip
from .efficiency import (FAMILIES, IDEAL_FIT, PARAMS, CalibratedModel, FamilyFit, calibrated_model,  # noqa: F401
                         attention_from_gemm, family_of, fits_from_table)
from .collectives import CollectiveTerms, collective_terms
from .roofline import score, score_collective

if TYPE_CHECKING:
    import pandas as pd

    from .ops import Op

MEMORY_FAMILIES = ("elementwise", "activation", "rope", "norm", "embedding")

# CSV `family` values -> model family
CSV_FAMILIES = {
    "gemm": "gemm", "attention": "attention", "elementwise": "elementwise", "add": "elementwise",
    "residual": "elementwise", "activation": "activation", "act": "activation", "rope": "rope", "norm": "norm",
    "embedding": "embedding", "emb": "embedding", "all_reduce": "collective", "all_gather": "collective",
    "reduce_scatter": "collective", "all_to_all": "collective", "p2p": "collective", "send_recv": "collective",
}

MEASURED_COLUMNS = {
    "family": "gemm | elementwise | activation | rope | norm | embedding | attention | all_reduce | all_gather | "
              "reduce_scatter | all_to_all | p2p",
    "op": "op name (e.g. attn_pre_proj, mlp_act, all_reduce)",
    "model": "model the op came from (leave-one-model-out cross-validation); empty for collectives",
    "gpu": "optional: the GPU the row was measured on (e.g. a100, h100); `calibrate --chip` keeps the rows "
           "whose gpu names that chip",
    "dtype": "compute / element dtype (fp16, bf16, ...)",
    "tp": "tensor-parallel degree of the shapes; for collectives the number of GPUs taking part",
    "m": "GEMM rows per GPU (tokens in the batch); tokens for every other compute op",
    "k": "GEMM inner dimension per GPU",
    "n": "GEMM output columns per GPU",
    "elems": "elements an elementwise op touches (documentation; bytes is what counts)",
    "flops": "optional: FLOPs of the op (GEMM default 2*m*k*n)",
    "bytes": "HBM bytes moved (GEMM default (k*n + m*k + m*n) * dtype bytes); collectives: the buffer size",
    "kernels": "optional, default 1: kernel launches the measured time spans (overhead_s counts once each)",
    "nodes": "optional, default 1: nodes a collective spans; rows with nodes > 1 are not fitted (multi-node)",
    "measured_s": "measured kernel time in seconds (median)",
}
REQUIRED_COLUMNS = ("family", "op", "dtype", "measured_s")


# =============================================================================== measurements
def read_measurements(path) -> "pd.DataFrame":
    """Read a measured-timings CSV (MEASURED_COLUMNS) and check it."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise RooflineError(f"measured CSV {path} does not exist")
    try:
        df = pd.read_csv(p, keep_default_na=True, dtype={"model": str, "gpu": str, "op": str, "family": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise RooflineError(f"measured CSV {path}: cannot be read ({e})") from None
    return normalize(df, str(path))


def normalize(df: "pd.DataFrame", where: str = "<frame>") -> "pd.DataFrame":
    """Fill optional columns, derive flops/bytes of GEMM rows, map families; raise on bad rows."""
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise RooflineError(f"{where}: missing column(s) {', '.join(missing)}; columns: {', '.join(MEASURED_COLUMNS)}")
    df = df.copy()
    for c in ("model", "gpu", "op"):
        df[c] = df[c].fillna("").astype(str) if c in df.columns else ""
    df["family"] = df["family"].astype(str).str.strip().str.lower()
    bad = sorted(set(df["family"]) - set(CSV_FAMILIES))
    if bad:
        raise RooflineError(f"{where}: unknown family {bad}; known: {', '.join(CSV_FAMILIES)}")
    df["fam"] = df["family"].map(CSV_FAMILIES)
    for c in ("tp", "m", "k", "n", "elems", "flops", "bytes", "kernels", "nodes", "measured_s"):
        df[c] = pd_numeric(df[c]) if c in df.columns else np.nan
    df["kernels"] = df["kernels"].fillna(1.0)
    df["nodes"] = df["nodes"].fillna(1.0)
    df["tp"] = df["tp"].fillna(1.0)
    from .units import dtype_bytes

    try:
        eb = df["dtype"].map(dtype_bytes)
    except RooflineError as e:
        raise RooflineError(f"{where}: {e}") from None
    g = df["fam"] == "gemm"
    if (g & df[["m", "k", "n"]].isna().any(axis=1)).any():
        raise RooflineError(f"{where}: gemm rows need m, k and n")
    df.loc[g & df["flops"].isna(), "flops"] = 2.0 * df["m"] * df["k"] * df["n"]
    df.loc[g & df["bytes"].isna(), "bytes"] = (df["k"] * df["n"] + df["m"] * df["k"] + df["m"] * df["n"]) * eb
    df.loc[df["fam"] != "collective", "flops"] = df["flops"].fillna(0.0)
    if df["bytes"].isna().any():
        raise RooflineError(f"{where}: {int(df['bytes'].isna().sum())} row(s) without bytes")
    if (df["fam"] == "attention").any() and (df.loc[df["fam"] == "attention", "flops"] <= 0).any():
        raise RooflineError(f"{where}: attention rows need flops")
    df["m"] = df["m"].fillna(0.0)  # tokens unknown: the asymptotic efficiencies
    ok = np.isfinite(df["measured_s"]) & (df["measured_s"] > 0)
    if not ok.all():
        raise RooflineError(f"{where}: {int((~ok).sum())} row(s) with a missing or non-positive measured_s")
    return df.reset_index(drop=True)


def pd_numeric(s):
    import pandas as pd

    return pd.to_numeric(s, errors="coerce").astype(np.float64)


def rows_for_chip(df: "pd.DataFrame", chip: Chip, gpu: str | None = None) -> "pd.DataFrame":
    """Rows measured on `chip`: those whose `gpu` is `gpu`, or else names the chip (an alias resolves to it).
    All rows when the CSV has no gpu column."""
    if gpu is not None:
        keep = df["gpu"].str.lower() == gpu.lower()
    elif (df["gpu"] == "").all():
        return df
    else:
        def names_chip(g: str) -> bool:
            try:
                return load_chip(g).name == chip.name
            except ChipError:
                return False

        hits = {g: names_chip(g) for g in df["gpu"].unique()}
        keep = df["gpu"].map(hits)
    out = df[keep].reset_index(drop=True)
    if out.empty:
        raise RooflineError(f"no rows for chip {chip.name} (gpu values: {', '.join(sorted(set(df['gpu'])))}); "
                            "pass --gpu to choose")
    return out


# =============================================================================== prediction
@dataclass(frozen=True)
class _Terms:
    """Ideal-roofline inputs of a family's rows, computed once (the fit re-scores them many times)."""

    fam: str
    flops: np.ndarray
    bytes: np.ndarray
    peak: np.ndarray
    hbm: float
    tokens: np.ndarray
    kernels: np.ndarray
    link_bytes: np.ndarray | None = None
    hops: np.ndarray | None = None
    link_bytes_per_s: np.ndarray | None = None
    latency_s: np.ndarray | None = None

    def time_s(self, p: FamilyFit) -> np.ndarray:
        """roofline.score with this family's efficiency: the calibrated (or, with IDEAL_FIT, ideal) time."""
        tokens = 0.0 if self.fam == "attention" else self.tokens
        eff = p.efficiency(tokens, self.kernels)
        if self.fam == "collective":
            return score_collective(CollectiveTerms(self.link_bytes, self.hops, self.link_bytes_per_s,
                                                    self.latency_s, "scaleup", ""), eff).t_s
        return score(self.flops, self.bytes, peak_flops_per_s=self.peak, hbm_bytes_per_s=self.hbm,
                     efficiency=eff).t_s


def _terms(df: "pd.DataFrame", chip: Chip, fam: str) -> _Terms:
    n = len(df)
    tokens = df["m"].to_numpy(np.float64)
    kernels = df["kernels"].to_numpy(np.float64)
    if fam == "collective":
        lb, hops, bw, lat = (np.zeros(n) for _ in range(4))
        kinds = df["family"].replace({"send_recv": "p2p"}).to_numpy()
        chips = df["tp"].to_numpy(np.float64)
        v = df["bytes"].to_numpy(np.float64)
        for kind, c in sorted(set(zip(kinds, chips))):
            sel = (kinds == kind) & (chips == c)
            ct = collective_terms(kind, v[sel], int(c), chip)
            lb[sel], hops[sel], bw[sel], lat[sel] = ct.link_bytes, ct.hops, ct.link_bytes_per_s, ct.latency_s
        return _Terms(fam, np.zeros(n), np.zeros(n), np.ones(n), 1.0, tokens, kernels, lb, hops, bw, lat)
    if fam in ("gemm", "attention"):
        peak = np.array([chip.peak_flops_per_s(d) for d in df["dtype"]], dtype=np.float64)
    else:
        peak = np.full(n, chip.peak_flops_per_s("vector"))
    return _Terms(fam, df["flops"].to_numpy(np.float64), df["bytes"].to_numpy(np.float64), peak,
                  chip.hbm_bytes_per_s, tokens, kernels)


def predict(df: "pd.DataFrame", chip, fits: "Mapping[str, FamilyFit] | CalibratedModel | None" = None) -> np.ndarray:
    """Predicted seconds of every row of a normalized measurement frame (None: the ideal roofline)."""
    chip = load_chip(chip)
    if isinstance(fits, CalibratedModel):
        fits = fits.families
    out = np.full(len(df), np.nan)
    for fam in FAMILIES:
        sel = (df["fam"] == fam).to_numpy()
        if sel.any():
            p = IDEAL_FIT if fits is None else fits.get(fam, IDEAL_FIT)
            out[sel] = _terms(df[sel], chip, fam).time_s(p)
    return out


# =============================================================================== fitting
def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-min(max(x, -50.0), 50.0)))


def _logit(p):
    return math.log(p / (1.0 - p))


# free parameters per family, their starting values and their transforms (unbounded -> valid range)
_FREE = {
    "gemm": (("compute_max", 0.7), ("compute_tokens_half", 64.0), ("memory_max", 0.8), ("overhead_s", 5e-6)),
    "attention": (("compute_max", 0.5), ("memory_max", 0.8), ("overhead_s", 5e-6)),
    "memory": (("memory_max", 0.5), ("memory_tokens_half", 64.0), ("overhead_s", 2e-6)),
    "collective": (("comm_max", 0.7), ("overhead_s", 1e-5)),
}
_FRACTIONS = ("compute_max", "memory_max", "comm_max")
LOSS_SCALE = 0.1  # pseudo-Huber scale of the log residual: quadratic below ~10 %, linear above


def _to_x(name, v):
    return _logit(min(max(v, 1e-6), 1 - 1e-9)) if name in _FRACTIONS else math.log(v)


def _from_x(name, x):
    return _sigmoid(x) if name in _FRACTIONS else math.exp(min(max(x, -700.0), 50.0))


def _loss(pred, measured):
    r = np.log(pred / measured) / LOSS_SCALE
    return float(np.mean(np.sqrt(1.0 + r * r) - 1.0))


def nelder_mead(f, x0, step=0.5, max_evals=3000, xtol=1e-7, ftol=1e-12):
    """Minimize f from x0 with the Nelder-Mead simplex (standard coefficients 1, 2, 0.5, 0.5). Deterministic."""
    n = len(x0)
    pts = [np.array(x0, dtype=np.float64)] + [np.array(x0, dtype=np.float64) + step * np.eye(n)[i] for i in range(n)]
    vals = [f(p) for p in pts]
    evals = n + 1
    while evals < max_evals:
        order = np.argsort(vals, kind="stable")
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        if vals[-1] - vals[0] <= ftol and max(np.max(np.abs(p - pts[0])) for p in pts[1:]) <= xtol:
            break
        c = np.mean(pts[:-1], axis=0)
        xr = c + (c - pts[-1])
        fr = f(xr)
        evals += 1
        if fr < vals[0]:
            xe = c + 2.0 * (c - pts[-1])
            fe = f(xe)
            evals += 1
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (pts[-1] - c) if fr >= vals[-1] else c + 0.5 * (xr - c)
            fc = f(xc)
            evals += 1
            if fc < min(fr, vals[-1]):
                pts[-1], vals[-1] = xc, fc
            else:  # shrink towards the best point
                pts = [pts[0]] + [pts[0] + 0.5 * (p - pts[0]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
                evals += n
    i = int(np.argmin(vals))
    return pts[i], vals[i]


def fit_family(terms: _Terms, measured: np.ndarray, fam: str) -> FamilyFit:
    """Fit one family's free parameters (the others stay at their ideal values)."""
    free = _FREE["memory" if fam in MEMORY_FAMILIES else fam]
    names = [n for n, _ in free]

    def unpack(x) -> FamilyFit:
        return FamilyFit(**{n: _from_x(n, v) for n, v in zip(names, x)})

    def objective(x):
        return _loss(terms.time_s(unpack(x)), measured)

    x = np.array([_to_x(n, v) for n, v in free])
    best = math.inf
    for _ in range(4):  # restart from the best point until the loss stops improving
        x, val = nelder_mead(objective, x)
        if best - val < 1e-9:
            break
        best = val
    return unpack(x)


def shown_params(fam: str, p: FamilyFit) -> dict[str, float]:
    """The parameters worth showing for a family: its free ones and any that differ from ideal."""
    free = {n for n, _ in _FREE["memory" if fam in MEMORY_FAMILIES else fam]}
    return {k: v for k, v in p.params().items() if k in free or v != getattr(IDEAL_FIT, k)}


def _rounded(p: FamilyFit) -> FamilyFit:
    """Four significant digits (what the chip TOML stores); overheads below 1 ns and token scales below
    0.01 are zero."""
    def r(k, v):
        if (k == "overhead_s" and v < 1e-9) or (k.endswith("tokens_half") and v < 1e-2):
            return 0.0
        return min(float(f"{v:.4g}"), 1.0) if k in _FRACTIONS else float(f"{v:.4g}")

    return FamilyFit(**{k: r(k, v) for k, v in p.params().items()})


@dataclass(frozen=True)
class FitResult:
    chip: str
    fits: Mapping[str, FamilyFit]
    points: Mapping[str, int]
    median_abs_err: Mapping[str, float]
    seconds: float


def fit(df: "pd.DataFrame", chip, *, source: str = "", date: str | None = None) -> FitResult:
    """Fit every family present in the (normalized) rows of one chip. Multi-node collectives are skipped.

    Attention without measurements gets gemm's parameters (constant in tokens) and says so."""
    chip = load_chip(chip)
    t0 = time.perf_counter()
    date = date or _dt.date.today().isoformat()
    df = df[(df["fam"] != "collective") | (df["nodes"] <= 1)]
    fits, points, med = {}, {}, {}
    for fam in FAMILIES:
        rows = df[df["fam"] == fam]
        if rows.empty:
            continue
        terms = _terms(rows, chip, fam)
        measured = rows["measured_s"].to_numpy(np.float64)
        p = _rounded(fit_family(terms, measured, fam))
        err = np.abs(terms.time_s(p) / measured - 1.0)
        points[fam], med[fam] = len(rows), float(np.median(err))
        ops = ", ".join(sorted(set(rows["op"])))
        at_one = [k for k in _FRACTIONS if getattr(p, k) == 1.0 and k in dict(_FREE.get(fam, _FREE["memory"]))]
        note = (f"{source + '; ' if source else ''}{len(rows)} points ({ops}); median |err| {med[fam]:.1%}; "
                f"fitted {date}" + (f"; {', '.join(at_one)} at its bound 1 (some kernels measured faster than "
                                    "the roofline: L2-cache hits)" if at_one else ""))
        fits[fam] = replace(p, fitted_on=note)
    if "gemm" in fits and "attention" not in fits:
        fits["attention"] = attention_from_gemm(fits["gemm"])
    return FitResult(chip.name, MappingProxyType(fits), MappingProxyType(points), MappingProxyType(med),
                     time.perf_counter() - t0)


# =============================================================================== error tables
def abs_pct_errors(pred, measured) -> np.ndarray:
    return np.abs(np.asarray(pred) / np.asarray(measured) - 1.0) * 100.0


def error_rows(df: "pd.DataFrame", preds: Mapping[str, np.ndarray], by=("fam",)) -> list[dict]:
    """Median and 90th-percentile absolute % error of each prediction, grouped by `by` columns."""
    meas = df["measured_s"].to_numpy(np.float64)
    errs = {name: abs_pct_errors(p, meas) for name, p in preds.items()}
    rows = []
    keys = df[list(by)].astype(str).agg("|".join, axis=1).to_numpy() if by else np.full(len(df), "")
    for key in sorted(set(keys), key=lambda k: [_sort_key(x) for x in k.split("|")]):
        sel = keys == key
        row = dict(zip(by, key.split("|"))) if by else {}
        row["n"] = int(sel.sum())
        for name, e in errs.items():
            row[f"{name}_median_pct"] = float(np.median(e[sel]))
            row[f"{name}_p90_pct"] = float(np.percentile(e[sel], 90))
        rows.append(row)
    return rows


def _sort_key(x: str):
    order = {f: i for i, f in enumerate(FAMILIES)}
    return (0, order[x], "") if x in order else (1, 0, x)


# =============================================================================== chip TOML
_HEADER = re.compile(r"^\s*\[\s*efficiency\s*(\.[^\]]*)?\]")
_ANY_HEADER = re.compile(r"^\s*\[")
MARKER = "# ---- calibrated kernel efficiency (written by `llm-roofline calibrate --write`)"


def toml_block(result: FitResult, chip_note: str) -> str:
    """The `[efficiency]` tables of a fit, as TOML text."""
    lines = [MARKER,
             "# t = max(flops / (peak * compute), bytes / (hbm * memory)) + overhead_s, T = the op's tokens:",
             "#   compute = compute_max * T / (T + compute_tokens_half), memory = memory_max * T / hypot(T, memory_tokens_half);",
             "#   collectives: hops * latency_s + link_bytes / (link_bytes_per_s * comm_max) + overhead_s.",
             "# All fractions <= 1, overheads >= 0: never faster than the ideal roofline. See llm_roofline/calibrate.py.",
             "[efficiency]",
             f"fitted_on = {_toml_str(chip_note)}"]
    for fam in FAMILIES:
        if fam not in result.fits:
            continue
        p = result.fits[fam]
        lines += ["", f"[efficiency.{fam}]"]
        lines += [f"{k} = {_toml_float(v)}" for k, v in shown_params(fam, p).items()]
        lines.append(f"fitted_on = {_toml_str(p.fitted_on)}")
    return "\n".join(lines) + "\n"


def _toml_float(v: float) -> str:
    s = f"{v:.4g}"
    return s if any(c in s for c in ".en") else s + ".0"


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def replace_efficiency_block(text: str, block: str) -> str:
    """`text` with its [efficiency] / [efficiency.*] tables (and the MARKER comment lines heading them)
    replaced by `block`, or `block` appended when there are none. Every other byte stays as it was."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), None)
    if start is None:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return text + sep + block
    head = start
    j = start - 1
    while j >= 0 and lines[j].startswith("#"):  # our marker comment right above the first header
        if lines[j].startswith(MARKER):
            head = j
            break
        j -= 1
    end = start + 1
    while end < len(lines) and not (_ANY_HEADER.match(lines[end]) and not _HEADER.match(lines[end])):
        end += 1
    if end < len(lines):  # blank and comment lines just above the next table belong to it
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1
    tail = lines[end:]
    return "".join(lines[:head]) + block + ("\n" if tail else "") + "".join(tail)


def write_chip_toml(path, result: FitResult, chip_note: str) -> str:
    """Rewrite the chip file's efficiency tables in place; returns the new text (checked to parse)."""
    import tomllib

    p = Path(path)
    text = p.read_text()
    new = replace_efficiency_block(text, toml_block(result, chip_note))
    data = tomllib.loads(new)
    fits_from_table(data.get("efficiency", {}), f"{p}: ")  # validates
    p.write_text(new)
    return new


# =============================================================================== the `calibrate` command
SKU_NOTES = {
    "a100": "SKU uncertain: the Vidur a100 profile is an A100 80GB, SXM (DGX A100) or PCIe, not stated",
    "h100": "SKU uncertain: the Vidur h100 profile is an H100 80GB, SXM (DGX H100) or NVL, not stated",
}
VIDUR_OPS = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "input_layernorm", "post_attention_layernorm", "mlp_act", "attn_rope", "add", "emb",
                                "all_reduce", "send_recv"}
VIDUR_SOURCE = "Vidur (microsoft/vidur 7d47513, 2024-11-19) {gpus} fp16 kernel medians"


def calibrate_report(path, chip, *, write: bool = False, gpu: str | None = None, fmt: str = "table",
                     source: str | None = None, date: str | None = None) -> str:
    """Fit `chip` to the measured CSV at `path`; the error table (ideal, current model, new fit) and the
    parameters as text (or json/csv). write=True rewrites the chip file's [efficiency.*] tables."""
    import json

    from .report.table import render

    chip = load_chip(chip)
    rows = rows_for_chip(read_measurements(path), chip, gpu)
    multi = (rows["fam"] == "collective") & (rows["nodes"] > 1)
    used = rows[~multi].reset_index(drop=True)
    gpus = sorted(set(used["gpu"]) - {""})
    if source is None:
        source = (VIDUR_SOURCE.format(gpus="/".join(gpus) or "?") if set(used["op"]) <= VIDUR_OPS
                  else f"{Path(path).name}" + (f" ({'/'.join(gpus)})" if gpus else ""))
    date = date or _dt.date.today().isoformat()
    res = fit(used, chip, source=source, date=date)
    before = calibrated_model(chip)
    preds = {"ideal": predict(used, chip)}
    if before.families:
        preds["before"] = predict(used, chip, before)
    preds["after"] = predict(used, chip, res.fits)
    table = error_rows(used, preds, by=("fam",))
    sku = "; ".join(SKU_NOTES[g] for g in gpus if g in SKU_NOTES)
    chip_note = (f"{source}; {sum(res.points.values())} points; fitted {date} against this file's {chip.name} peaks "
                 f"(fp16 {chip.peak_flops_per_s('fp16' if 'fp16' in chip.dense_flops_per_s else 'bf16'):.4g} FLOP/s, "
                 f"HBM {chip.hbm_bytes_per_s:.4g} B/s, {chip.scaleup.kind} {chip.scaleup.bytes_per_s:.4g} B/s)"
                 + (f"; {sku}" if sku else "") + "; attention, fp8/int8 kernels and multi-node collectives not measured")
    written = ""
    if write:
        if not chip.path:
            raise RooflineError(f"chip {chip.name} has no file to write to")
        write_chip_toml(chip.path, res, chip_note)
        written = chip.path
    params = {f: p.params() for f, p in res.fits.items()}
    if fmt in ("json", "csv"):
        if fmt == "csv":
            return render(table, "csv")
        return json.dumps(dict(chip=chip.name, source=source, before=before.label, errors=table, params=params,
                               points=dict(res.points), fit_seconds=res.seconds, left_out_multi_node=int(multi.sum()),
                               written=written or None), indent=2)
    pct = lambda v: f"{v:.1f}"  # noqa: E731
    display = [("family", "fam", None), ("n", "n", str), ("ideal med %", "ideal_median_pct", pct),
               ("ideal p90 %", "ideal_p90_pct", pct)]
    if "before" in preds:
        display += [("before med %", "before_median_pct", pct), ("before p90 %", "before_p90_pct", pct)]
    display += [("after med %", "after_median_pct", pct), ("after p90 %", "after_p90_pct", pct)]
    out = [f"calibrating {chip.name} on {path}: {len(used)} rows" + (f" of gpu {'/'.join(gpus)}" if gpus else "")
           + (f"; {int(multi.sum())} multi-node collective rows left out (not calibrated)" if multi.any() else ""),
           f"before: {before.label}" if before.families else "before: no calibration (ideal only)",
           f"fit: {res.seconds:.2f} s, in-sample absolute % error of each prediction against the measurements:", "",
           render(table, fmt, display), "", "fitted parameters:"]
    for fam, p in res.fits.items():
        vals = ", ".join(f"{k} = {v:.4g}" for k, v in shown_params(fam, p).items())
        out.append(f"  [efficiency.{fam}] {vals}")
    out.append("")
    out.append(f"wrote the [efficiency.*] tables of {written}" if written
               else f"not written (pass --write to store them in {chip.path or 'the chip file'})")
    if sku:
        out.append(sku + f"; fitted against {chip.name}.")
    return "\n".join(out)


# =============================================================================== Vidur converter
# Vidur (microsoft/vidur): data/profiling/compute/<gpu>/<org>/<model>/mlp.csv and
# data/profiling/network/<gpu>_<system>/all_reduce.csv; see /work/shared/calibration/README.md.
def _vidur_frame(df: "pd.DataFrame", gpu: str, model: str) -> "pd.DataFrame":
    """The rows of one Vidur mlp.csv -> measured-CSV rows (fp16 throughout). Byte accounting (element bytes e = 2):

    GEMMs (cuBLAS, x[M,k] @ W[k,n]): flops 2Mkn, bytes (k*n + M*k + M*n) * e (bias, n*e, ignored: < 0.05 %)
      attn_pre_proj  k = d,      n = (h + 2 kv) hd / tp      fused QKV, column parallel
      attn_post_proj k = d / tp, n = d                       row parallel (all-reduce not included)
      mlp_up_proj    k = d,      n = 2F / tp (gated) or F/tp  fused gate+up
      mlp_down_proj  k = F / tp, n = d
    norm  (input_layernorm, post_attention_layernorm): read x[M,d], write y, weight d (LayerNorm 2d):
          (2 M d + d) * e; norms are replicated (not split by tp). The parallel-block model (phi-2: no
          post-attention norm) uses LayerNorm.
    activation (mlp_act): SiLU-and-mul reads [M, 2F/tp], writes [M, F/tp]: 3 M F/tp * e; GELU 2 M F/tp * e.
    rope (attn_rope): in place on q and k: read + write M (h + kv)/tp * hd elements, plus the cos/sin cache
          row (hd elements) and the int64 position of each token: (2 M (h+kv)/tp hd + M hd) * e + 8 M.
          Vidur rotates the whole head (rotary_dim = head_dim), phi-2 included.
    elementwise (add, residual): x + y -> z over [M, d]: 3 M d * e. The parallel-block model adds three
          tensors with two kernels: 6 M d * e over kernels = 2.
    embedding (emb): gather M rows of d (Vidur draws every token id from this GPU's vocabulary shard, so
          all M rows are read here), write [M, d], read M int64 ids: 2 M d * e + 8 M.
    Shapes: M = num_tokens, tp = num_tensor_parallel_workers, d = n_embd, F = n_expanded_embd, h = n_head,
    kv = n_kv_head, hd = d / h (Vidur's head size).
    """
    import pandas as pd

    e = 2.0
    m = df["num_tokens"].to_numpy(np.float64)
    tp = df["num_tensor_parallel_workers"].to_numpy(np.float64)
    d, f, h, kv = (df[c].to_numpy(np.float64) for c in ("n_embd", "n_expanded_embd", "n_head", "n_kv_head"))
    hd = d / h
    gated = df["use_gated_mlp"].astype(str).str.strip().str.lower().isin(["true", "1", "1.0"]).to_numpy()
    parallel_block = "time_stats.post_attention_layernorm.median" not in df.columns
    up = np.where(gated, 2.0, 1.0) * f / tp
    nan = np.full(len(df), np.nan)
    frames = []

    def add(op, fam, k, n, elems, flops, nbytes, kernels=1.0):
        col = f"time_stats.{op}.median"
        if col not in df.columns:
            return
        frames.append(pd.DataFrame(dict(gpu=gpu, model=model, family=fam, op=op, dtype="fp16", tp=tp, m=m, k=k, n=n,
                                        elems=elems, flops=flops, bytes=nbytes, kernels=kernels, nodes=1,
                                        measured_s=pd.to_numeric(df[col], errors="coerce").to_numpy() * 1e-3)))

    for op, k, n in (("attn_pre_proj", d, (h + 2 * kv) * hd / tp), ("attn_post_proj", d / tp, d),
                     ("mlp_up_proj", d, up), ("mlp_down_proj", f / tp, d)):
        add(op, "gemm", k, n, nan, 2 * m * k * n, (k * n + m * k + m * n) * e)
    norm_w = (2.0 if parallel_block else 1.0) * d
    for op in ("input_layernorm", "post_attention_layernorm"):
        add(op, "norm", nan, nan, m * d, 4 * m * d, (2 * m * d + norm_w) * e)
    add("mlp_act", "activation", nan, nan, m * f / tp, np.where(gated, 5.0, 4.0) * m * f / tp,
        np.where(gated, 3.0, 2.0) * m * f / tp * e)
    qk = m * (h + kv) / tp * hd
    add("attn_rope", "rope", nan, nan, qk, 3 * qk, (2 * qk + m * hd) * e + 8 * m)
    add("add", "elementwise", nan, nan, m * d, (2.0 if parallel_block else 1.0) * m * d,
        (6.0 if parallel_block else 3.0) * m * d * e, 2.0 if parallel_block else 1.0)
    add("emb", "embedding", nan, nan, m * d, 0.0 * m, 2 * m * d * e + 8 * m)
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[np.isfinite(out["measured_s"])]


CSV_ORDER = ("gpu", "model", "family", "op", "dtype", "tp", "m", "k", "n", "elems", "flops", "bytes", "kernels",
             "nodes", "measured_s")


def convert_vidur(src) -> "pd.DataFrame":
    """Vidur profiling data (compute/<gpu>/.../<model>/mlp.csv, network/<gpu>_<system>/<collective>.csv)
    -> the measured-timings CSV frame (CSV_ORDER columns). Duplicate grid points: the first row wins."""
    import pandas as pd

    src = Path(src)
    frames = []
    compute = src / "compute"
    for f in sorted(compute.rglob("mlp.csv")) if compute.is_dir() else []:
        rel = f.relative_to(compute).parts
        gpu, model = rel[0], f.parent.name
        df = pd.read_csv(f).drop_duplicates(["num_tokens", "num_tensor_parallel_workers"], keep="first")
        frames.append(_vidur_frame(df, gpu, model))
    network = src / "network"
    for f in sorted(network.rglob("*.csv")) if network.is_dir() else []:
        kind = f.stem
        col = f"time_stats.{kind}.median"
        df = pd.read_csv(f)
        if col not in df.columns or kind not in CSV_FAMILIES:
            continue
        gpu = f.parent.name.split("_")[0]
        df = df.drop_duplicates(["num_workers", "devices_per_node", "size"], keep="first")
        n = df["num_workers"].to_numpy(np.int64)
        size = df["size"].to_numpy(np.float64)  # bytes of the fp16 buffer (Vidur records 2 * elements)
        nan = np.full(len(df), np.nan)
        frames.append(pd.DataFrame(dict(
            gpu=gpu, model="", family=kind, op=kind, dtype="fp16", tp=n, m=nan, k=nan, n=nan, elems=size / 2,
            flops=nan, bytes=size, kernels=1, nodes=np.maximum(1, -(-n // df["devices_per_node"].to_numpy(np.int64))),
            measured_s=pd.to_numeric(df[col], errors="coerce").to_numpy() * 1e-3)))
    frames = [f for f in frames if len(f)]
    if not frames:
        raise RooflineError(f"no Vidur profiles under {src} (expected compute/<gpu>/.../mlp.csv or network/*/*.csv)")
    out = pd.concat(frames, ignore_index=True)
    for c in ("nodes", "kernels", "tp"):
        out[c] = out[c].fillna(1).astype(int)
    return out[list(CSV_ORDER)]


def write_measurements(df: "pd.DataFrame", path) -> None:
    df.to_csv(path, index=False, float_format="%.10g")


def _main(argv=None) -> int:
    """python -m llm_roofline.calibrate convert VIDUR_DIR OUT.csv"""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m llm_roofline.calibrate",
                                 description="Convert Vidur profiling data to the measured-timings CSV.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="Vidur data directory -> measured CSV")
    c.add_argument("src", help="Vidur profiling directory (with compute/ and network/)")
    c.add_argument("out", help="output CSV")
    args = ap.parse_args(argv)
    try:
        df = convert_vidur(args.src)
    except RooflineError as e:
        sys.stderr.write(f"llm-roofline: error: {e}\n")
        return 2
    write_measurements(df, args.out)
    counts = df.groupby(["gpu", "family"]).size()
    sys.stdout.write(f"wrote {len(df)} rows to {args.out}: "
                     + ", ".join(f"{g}/{fam} {n}" for (g, fam), n in counts.items()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
