"""Sliding-window prefill: the estimator's attention op against vLLM's measured kernel, rows the fits never saw.

    python3 benchmarks/validate_windows.py [--data DIR] [--chips h100-sxm,h200]

Rows: aic-vllm/<system>/context_attention_perf.csv.gz with window_size 128, 1024 or 8192 (bf16 KV, head_dim below
512; the fastest kernel per shape, as the converter keeps it), B prompts of L tokens. The converter leaves them out
of every fit (calibrate/aic_vllm.context_rows), so each figure here is out of sample.

Estimate: ops.attention(batch=B, q_len=kv_len=L, window=w), the op every windowed layer of a model builds, scored
with the chip's shipped calibrated model (score_op): FLOPs over the exact pairs, sum over queries of min(position,
w), and the prefill fit read at keys = pairs / L. The same shapes without a window are printed beside them (those
rows were fitted, so their error is in sample). Prints per GPU and window the median calibrated / measured ratio
and the median / p90 absolute % error, for L <= w (the window cuts nothing) and L > w.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_roofline import ops  # noqa: E402
from llm_roofline.calibrate.aic_vllm import SYSTEMS, _fastest  # noqa: E402
from llm_roofline.calibrate.fit import abs_pct_errors  # noqa: E402
from llm_roofline.chip_fits import calibrated_model  # noqa: E402
from llm_roofline.hardware import load_chip  # noqa: E402
from llm_roofline.roofline import score_op  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "calibration"
SHAPE = ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size"]


def estimate_s(rows: pd.DataFrame, chip) -> np.ndarray:
    """Calibrated seconds of each row's prefill attention op, as a model's layer builds it."""
    model = calibrated_model(chip)
    out = []
    for b, L, h, kvh, d, w in rows[SHAPE].itertuples(index=False):
        op = ops.attention("attn", "attn", 1, batch=b, q_len=L, kv_len=L, n_heads=h, n_kv_heads=kvh, qk_dim=d, v_dim=d,
                           kv_elems_per_token=2 * kvh * d, kv_bytes_per_elem=2.0, act_bytes_per_elem=2.0,
                           window=w if w > 0 else None)
        out.append(score_op(op, chip, model.for_op(op, chip)).t_s)
    return np.array(out)


def evaluate(data: Path, chip_name: str) -> pd.DataFrame:
    system = {c: s for s, c in SYSTEMS.items()}[chip_name]
    df = pd.read_csv(data / "aic-vllm" / system / "context_attention_perf.csv.gz")
    if "window_size" not in df:
        return pd.DataFrame()
    df = df[(df["kv_cache_dtype"] == "bfloat16") & (df["head_dim"] != 512) & (df["isl"] > 1)]
    df = _fastest(df, SHAPE)
    windowed = df[df["window_size"] > 0]
    shapes = windowed[SHAPE[:-1]].drop_duplicates()
    df = pd.concat([windowed, df[df["window_size"] == 0].merge(shapes, on=SHAPE[:-1])], ignore_index=True)
    meas = df["latency"].to_numpy(np.float64) * 1e-3
    est = estimate_s(df, load_chip(chip_name))
    w, L = df["window_size"].to_numpy(), df["isl"].to_numpy()
    cut = np.where(w == 0, "-", np.where(L > w, "L > w", "L <= w"))
    return pd.DataFrame({"gpu": chip_name, "window": w, "cut": cut,
                         "ratio": est / meas, "err": abs_pct_errors(est, meas)})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="the shared calibration directory (default: %(default)s)")
    ap.add_argument("--chips", default="h100-sxm,h200,b200,gb200,l40s", help="chips (default: %(default)s)")
    a = ap.parse_args(argv)
    chips = [c for c in a.chips.split(",") if c]
    if not chips or set(chips) - set(SYSTEMS.values()):
        ap.error(f"unknown chips {sorted(set(chips) - set(SYSTEMS.values()))}; measured: {', '.join(SYSTEMS.values())}")
    if not (Path(a.data) / "aic-vllm").is_dir():
        ap.error(f"no aic-vllm folder under {a.data} (give the shared calibration directory with --data)")
    frames = [f for f in (evaluate(Path(a.data), c) for c in chips) if len(f)]
    if not frames:
        print("no sliding-window prefill rows for these chips")
        return 0
    df = pd.concat(frames, ignore_index=True)
    df["gpu"] = pd.Categorical(df["gpu"], chips)
    df["cut"] = pd.Categorical(df["cut"], ["-", "L <= w", "L > w"])
    out = df.groupby(["gpu", "window", "cut"], sort=True, observed=True).agg(
        n=("err", "size"), calibrated_over_measured=("ratio", "median"), median_pct=("err", "median"),
        p90_pct=("err", lambda e: np.percentile(e, 90))).reset_index()
    from tabulate import tabulate

    print(tabulate(out, headers="keys", showindex=False, floatfmt=".2f"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
