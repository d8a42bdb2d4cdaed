"""Compare the estimator's MLA attention module of one DeepSeek-V3 layer with vLLM's measured module.

    python3 benchmarks/validate_mla.py [--data DIR] [--chips h100-sxm,h200] [--by-source] [--ops]

Rows: aic-vllm/<system>/mla_context_module_perf.csv.gz and mla_generation_module_perf.csv.gz, the whole MLA
attention module of one DeepSeek-V3 layer (q_a / kv_a projections, their norms, q_b, rope, the KV cache write,
the attention kernel, o_proj) in vLLM, with `num_heads` query heads per GPU (a TP slice, tp_size 1: no
all-reduce). Context rows: `batch_size` prompts of `isl` tokens; generation rows: one decode step at KV length
isl + step. nvfp4 GEMM rows are left out (no nvfp4 dense path for these projections here).

Estimate: build_ops(deepseek-ai/DeepSeek-V3, Phase, Sharding(tp = 128 / num_heads)) and the sum over one layer's
`attn.*` ops (collectives excluded), scored with the chip's calibrated model (and the ideal roofline). Prints the
median / p90 absolute % error per GPU and phase (no fit: every figure is out of sample unless a family was
fitted on these very rows, see CALIBRATION.md).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_roofline.calibrate.aic_vllm import SYSTEMS  # noqa: E402
from llm_roofline.calibrate.fit import abs_pct_errors, ratio_band  # noqa: E402
from llm_roofline.chip_fits import calibrated_model, fits_from_table  # noqa: E402
from llm_roofline.graph import Dtypes, Phase, build_ops, resolve_dtypes  # noqa: E402
from llm_roofline.hardware import load_chip  # noqa: E402
from llm_roofline.model.hf import load_model  # noqa: E402
from llm_roofline.roofline import score_ops  # noqa: E402
from llm_roofline.sharding import Sharding  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "calibration"
CHIPS_DIR = ROOT / "llm_roofline" / "hardware" / "chips"
MODEL = "deepseek-ai/DeepSeek-V3"
TOTAL_HEADS = 128
TABLES = {"prefill": "mla_context_module_perf.csv.gz", "decode": "mla_generation_module_perf.csv.gz"}
GPUS = ("h100-sxm", "h200", "b200", "gb200")
GEMM_WEIGHT = {"bfloat16": "bf16", "fp8_block": None}  # None: the checkpoint's own fp8 block-scaled weights
GLUE = "attn.mla_glue"
FOLD_BY = "num_heads"  # held-out groups: every heads-per-GPU value predicted by a fit that never saw it
LOGO_DONOR = {"h100-sxm": "h200", "h200": "h100-sxm", "b200": "gb200", "gb200": "b200"}
SCENARIO = ["phase", "kernel_source", "mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads"]
# GPUs whose module rows are not fitted: `--write` leaves them without an [efficiency.mla_glue] table, so they borrow
# their family default's (chip_fits: gb200 <- b200). GB200 runs B200's kernels (FLASHINFER_MLA, the same die), yet its
# decode module rows at batch 1 take a constant 38-41 us per call more at every head count (69 against 31 us at one
# head, 137 against 97 us at 128; prefill 77 against 38 us at one token), which none of its other tables shows (decode
# and prefill attention, MoE and GEMM floors within 1 us of B200's); and its measured serving contradicts it:
# Kimi-K2.5's disaggregated decode workers on GB200 (serving_vllm_blackwell.csv, 11 rows at tp 4) run at 0.57-0.70x
# the TPOT priced with its own glue (65 us a layer), 0.66-0.89x with B200's (CALIBRATION.md "MLA on GB200").
GLUE_BORROWED = {"gb200": "b200"}


def load_rows(data: Path, chip_name: str) -> pd.DataFrame:
    """Measured rows of one GPU: phase, scenario columns, batch, q_len, kv_len, measured_s."""
    system = {c: s for s, c in SYSTEMS.items()}[chip_name]
    parts = []
    for phase, table in TABLES.items():
        path = data / "aic-vllm" / system / table
        if not path.exists():
            continue
        df = pd.read_csv(path)
        df = df[df["gemm_type"].isin(GEMM_WEIGHT)].copy()
        df["phase"] = phase
        decode = phase == "decode"
        df["batch"] = df["batch_size"].astype(float)
        df["q_len"] = 1.0 if decode else df["isl"].astype(float)
        df["kv_len"] = (df["isl"] + df["step"]).astype(float) if decode else df["isl"].astype(float)
        df["measured_s"] = df["latency"] * 1e-3
        parts.append(df[SCENARIO + ["batch", "q_len", "kv_len", "measured_s"]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def module_ops(spec, chip, phase: str, heads: int, batch, q_len, kv_len, kv_dtype: str, gemm_type: str) -> list:
    """The attn.* ops (no collectives) of the first layer group of DeepSeek-V3 on arrays of scenarios, with the
    dtypes as they run on `chip` (its fp8 units: the checkpoint's W8A8 GEMMs, as estimate() prices them)."""
    ph = Phase.decode(batch, kv_len) if phase == "decode" else Phase.prefill(batch, q_len)
    dt = resolve_dtypes(chip, Dtypes(weight=GEMM_WEIGHT[gemm_type], kv="fp8" if kv_dtype == "fp8" else None), [])
    ops = build_ops(spec, ph, Sharding(tp=TOTAL_HEADS // heads), dt)
    group = next(o.group for o in ops if o.name.startswith("attn."))
    return [o for o in ops if o.name.startswith("attn.") and o.group == group and o.kind != "collective"]


def estimate_chip(data: Path, chip_name: str) -> tuple[pd.DataFrame, dict]:
    """Per-row measured, calibrated and ideal module seconds; and per-op calibrated seconds per scenario group."""
    rows = load_rows(data, chip_name)
    if rows.empty:
        return rows, {}
    spec, chip = load_model(MODEL), load_chip(str(CHIPS_DIR / f"{chip_name}.toml"))
    model = calibrated_model(chip)
    rows["calibrated"], rows["ideal"] = np.nan, np.nan
    per_op = {}
    for key, g in rows.groupby(SCENARIO, sort=False):
        phase, _, _, kv, gemm, heads = key
        ops = module_ops(spec, chip, phase, int(heads), *(g[c].to_numpy() for c in ("batch", "q_len", "kv_len")), kv, gemm)
        cal = [np.broadcast_to(s.score.t_s, len(g)) for s in score_ops(ops, chip, model)]
        ideal = [np.broadcast_to(s.score.t_s, len(g)) for s in score_ops(ops, chip, None)]
        rows.loc[g.index, "calibrated"] = np.sum(cal, axis=0)
        rows.loc[g.index, "ideal"] = np.sum(ideal, axis=0)
        glue = [o.name for o in ops].index(GLUE)
        rows.loc[g.index, "other_cal"] = np.sum(cal, axis=0) - cal[glue]  # every attn.* op but the glue
        rows.loc[g.index, "glue_ideal"] = ideal[glue]
        rows.loc[g.index, "glue_rows"] = np.broadcast_to(ops[glue].tokens, len(g))  # T x heads query-head rows
        per_op[key] = (g.index, [o.name for o in ops], cal)
    rows["gpu"] = chip_name
    return rows, per_op


def summary(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """n, median / p90 absolute % error of ideal and calibrated, and the median measured / calibrated ratio."""
    out = []
    for key, g in rows.groupby(by, sort=False):
        m = g["measured_s"].to_numpy()
        r = dict(zip(by, key if isinstance(key, tuple) else (key,)), n=len(g))
        for k in ("ideal", "calibrated"):
            e = abs_pct_errors(g[k], m)
            r[f"{k}_med"], r[f"{k}_p90"] = np.median(e), np.percentile(e, 90)
        r["meas/cal"] = float(np.median(m / g["calibrated"].to_numpy()))
        out.append(r)
    return pd.DataFrame(out)


def op_breakdown(rows: pd.DataFrame, per_op: dict) -> str:
    """Per-op calibrated microseconds at batch 1, decode at the shortest KV and prefill of 1 token, 128 heads."""
    lines = []
    for key, (idx, names, cal) in per_op.items():
        if key[-1] != TOTAL_HEADS:
            continue
        sub = rows.loc[idx]
        pos = np.flatnonzero((sub["batch"] == 1).to_numpy() & (sub["kv_len"] == sub["kv_len"].min()).to_numpy())
        if not pos.size:
            continue
        i = pos[0]
        parts = ", ".join(f"{n[5:]} {c[i] * 1e6:.1f}" for n, c in zip(names, cal))
        lines.append(f"{'/'.join(map(str, key[:5]))}: measured {sub['measured_s'].iloc[i] * 1e6:.1f} us, "
                     f"calibrated {sum(c[i] for c in cal) * 1e6:.1f} us = {parts}")
    return "\n".join(lines)


def fit_glue(rows: pd.DataFrame) -> tuple[float, float]:
    """(overhead_s, overhead_per_token_s) >= 0 of the mla_glue family minimizing the squared relative error of the
    module time other_cal + glue_ideal + overhead_s + overhead_per_token_s * glue_rows: non-negative least squares
    of two parameters, solved exactly by trying every active set (deterministic)."""
    m = rows["measured_s"].to_numpy()
    y = (m - rows["other_cal"].to_numpy() - rows["glue_ideal"].to_numpy()) / m
    x = np.column_stack([1.0 / m, rows["glue_rows"].to_numpy() / m])
    best = (float(np.sum(y ** 2)), np.zeros(2))
    for cols in ([0, 1], [0], [1]):
        coef = np.zeros(2)
        coef[cols] = np.linalg.lstsq(x[:, cols], y, rcond=None)[0]
        sse = float(np.sum((x @ coef - y) ** 2))
        if (coef >= 0).all() and sse < best[0]:
            best = (sse, coef)
    return float(best[1][0]), float(best[1][1])


def predict_glue(rows: pd.DataFrame, fit: tuple[float, float]) -> np.ndarray:
    """Module seconds with the mla_glue fit (overhead_s, overhead_per_token_s)."""
    return (rows["other_cal"] + rows["glue_ideal"] + fit[0] + fit[1] * rows["glue_rows"]).to_numpy()


def held_out_glue(rows: pd.DataFrame) -> np.ndarray:
    """Each FOLD_BY group predicted by the fit on the other groups of its GPU."""
    out = np.full(len(rows), np.nan)
    groups = rows[FOLD_BY].to_numpy()
    for g in np.unique(groups):
        sel = groups == g
        out[sel] = predict_glue(rows[sel], fit_glue(rows[~sel]))
    return out


def fit_report(allrows: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Per GPU and phase: median / p90 % error before (glue at its ideal), in sample, held out over FOLD_BY and
    leave-one-GPU-out (the donor GPU's fit); and per GPU its full fit and held-out band (p10, p90 of measured /
    predicted)."""
    fits = {gpu: fit_glue(g) for gpu, g in allrows.groupby("gpu", sort=False)}
    parts, bands = [], {}
    for gpu, g in allrows.groupby("gpu", sort=False):
        g = g.copy()
        g["fitted"], g["held_out"] = predict_glue(g, fits[gpu]), held_out_glue(g)
        donor = LOGO_DONOR.get(gpu)
        g["logo"] = predict_glue(g, fits[donor]) if donor in fits else np.nan
        ratio = g["measured_s"].to_numpy() / g["held_out"].to_numpy()
        band = ratio_band(ratio)
        bands[gpu] = (fits[gpu], (band["err_p10"], band["err_p90"]), len(g))
        parts.append(g)
    rows = pd.concat(parts)
    out = []
    for (gpu, phase), g in rows.groupby(["gpu", "phase"], sort=False):
        r = dict(gpu=gpu, phase=phase, n=len(g))
        for k in ("calibrated", "fitted", "held_out", "logo"):
            e = abs_pct_errors(g[k], g["measured_s"])
            r[f"{k}_med"], r[f"{k}_p90"] = np.median(e), np.percentile(e, 90)
        out.append(r)
    return pd.DataFrame(out), bands


def glue_block(fit: tuple[float, float], band: tuple[float, float], n: int, date: str) -> str:
    """The [efficiency.mla_glue] table of one chip file."""
    note = (f"aic-vllm mla_context_module + mla_generation_module (DeepSeek-V3, vLLM 0.24.0); {n} points (bf16 and "
            f"fp8_block GEMMs, bf16 and fp8 KV): module minus the other attn.* ops' calibrated estimate; fitted {date}"
            f" by benchmarks/validate_mla.py --fit; err_p10/err_p90: held-out (leave one heads-per-GPU value out)")
    return (f"[efficiency.mla_glue]\noverhead_s = {fit[0]:.4g}\noverhead_per_token_s = {fit[1]:.4g}\n"
            f"err_p10 = {band[0]:.3g}\nerr_p90 = {band[1]:.3g}\nfitted_on = \"{note}\"\n")


def write_glue(chip_name: str, block: str) -> None:
    """Replace (or append after the last table) the chip file's [efficiency.mla_glue] table, checked to parse; an
    empty block removes it."""
    path = CHIPS_DIR / f"{chip_name}.toml"
    text = path.read_text()
    start = text.find("[efficiency.mla_glue]")
    if start >= 0:
        end = text.find("\n[", start + 1)
        text = text[:start] + (text[end + 1:] if end >= 0 else "")
    text = text.rstrip("\n") + "\n" + ("\n" + block if block else "")
    fits_from_table(tomllib.loads(text).get("efficiency", {}), f"{path}: ")
    path.write_text(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--chips", default=",".join(GPUS))
    ap.add_argument("--by-source", action="store_true", help="also split by kernel_source and dtypes")
    ap.add_argument("--ops", action="store_true", help="per-op calibrated times at batch 1 (128 heads)")
    ap.add_argument("--fit", action="store_true", help="fit the mla_glue family per GPU, held-out and LOGO errors")
    ap.add_argument("--write", metavar="DATE", help="with --fit: write [efficiency.mla_glue] into the chip files")
    args = ap.parse_args(argv)
    chips = args.chips.split(",")
    if set(chips) - set(GPUS):
        ap.error(f"unknown chips {sorted(set(chips) - set(GPUS))}; measured: {', '.join(GPUS)}")
    if args.write and not args.fit:
        ap.error("--write needs --fit")
    frames = []
    for name in chips:
        rows, per_op = estimate_chip(args.data, name)
        if rows.empty:
            continue
        frames.append(rows)
        if args.ops:
            print(f"# {name}\n{op_breakdown(rows, per_op)}")
    if not frames:
        ap.error(f"no MLA module rows under {args.data}/aic-vllm for {', '.join(chips)}")
    allrows = pd.concat(frames, ignore_index=True)
    pd.set_option("display.width", 200)
    print(summary(allrows, ["gpu", "phase"]).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    if args.by_source:
        by = ["gpu", "phase", "kernel_source", "kv_cache_dtype", "gemm_type"]
        print(summary(allrows, by).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    if args.fit:
        report, bands = fit_report(allrows)
        print(report.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
        for gpu, (fit, band, n) in bands.items():
            print(f"{gpu}: overhead_s {fit[0] * 1e6:.2f} us, overhead_per_token_s {fit[1] * 1e9:.3f} ns/row, "
                  f"held-out band {band[0]:.3f}..{band[1]:.3f}")
            if gpu in GLUE_BORROWED:
                print(f"  {gpu}: not written, borrows {GLUE_BORROWED[gpu]}'s (GLUE_BORROWED)")
            if args.write:
                write_glue(gpu, "" if gpu in GLUE_BORROWED else glue_block(fit, band, n, args.write))
    return 0


if __name__ == "__main__":
    sys.exit(main())
