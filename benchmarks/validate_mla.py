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
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_roofline.calibrate.aic_vllm import SYSTEMS  # noqa: E402
from llm_roofline.chip_fits import calibrated_model  # noqa: E402
from llm_roofline.graph import Dtypes, Phase, build_ops  # noqa: E402
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
SCENARIO = ["phase", "kernel_source", "mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads"]


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


def module_ops(spec, phase: str, heads: int, batch, q_len, kv_len, kv_dtype: str, gemm_type: str) -> list:
    """The attn.* ops (no collectives) of the first layer group of DeepSeek-V3 on arrays of scenarios."""
    ph = Phase.decode(batch, kv_len) if phase == "decode" else Phase.prefill(batch, q_len)
    dt = Dtypes(weight=GEMM_WEIGHT[gemm_type], kv="fp8" if kv_dtype == "fp8" else None)
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
        ops = module_ops(spec, phase, int(heads), *(g[c].to_numpy() for c in ("batch", "q_len", "kv_len")), kv, gemm)
        cal = [np.broadcast_to(s.score.t_s, len(g)) for s in score_ops(ops, chip, model)]
        ideal = [np.broadcast_to(s.score.t_s, len(g)) for s in score_ops(ops, chip, None)]
        rows.loc[g.index, "calibrated"] = np.sum(cal, axis=0)
        rows.loc[g.index, "ideal"] = np.sum(ideal, axis=0)
        per_op[key] = (g.index, [o.name for o in ops], cal)
    rows["gpu"] = chip_name
    return rows, per_op


def abs_pct(pred, meas) -> np.ndarray:
    return np.abs(np.asarray(pred) / np.asarray(meas) - 1.0) * 100.0


def summary(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """n, median / p90 absolute % error of ideal and calibrated, and the median measured / calibrated ratio."""
    out = []
    for key, g in rows.groupby(by, sort=False):
        m = g["measured_s"].to_numpy()
        r = dict(zip(by, key if isinstance(key, tuple) else (key,)), n=len(g))
        for k in ("ideal", "calibrated"):
            e = abs_pct(g[k], m)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--chips", default=",".join(GPUS))
    ap.add_argument("--by-source", action="store_true", help="also split by kernel_source and dtypes")
    ap.add_argument("--ops", action="store_true", help="per-op calibrated times at batch 1 (128 heads)")
    args = ap.parse_args(argv)
    frames = []
    for name in args.chips.split(","):
        rows, per_op = estimate_chip(args.data, name)
        if rows.empty:
            continue
        frames.append(rows)
        if args.ops:
            print(f"# {name}\n{op_breakdown(rows, per_op)}")
    allrows = pd.concat(frames, ignore_index=True)
    pd.set_option("display.width", 200)
    print(summary(allrows, ["gpu", "phase"]).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    if args.by_source:
        by = ["gpu", "phase", "kernel_source", "kv_cache_dtype", "gemm_type"]
        print(summary(allrows, by).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
