"""Study (not shipped): do the fused-MoE rows show an expert's weights re-streamed from HBM once per token tile when
they overflow the L2? Maintainer script; reads the shared calibration tables.

    python3 benchmarks/study_moe_restream.py [--chips b200,gb200] [--tiles 64,128] [--families moe,moe_fp8]
                                             [--data DIR]

The mechanism tested: a fused expert kernel walks an expert's rows in tiles of M_t tokens, each tile streaming the
expert's weights W_e = 3 x h x (i / tp) x bits / 8 (gate, up, down). Where W_e fits the L2 the later tiles read it
there; beyond, each later tile re-reads what the L2 cannot hold: extra HBM bytes = touched experts x (ceil(T / M_t)
- 1) x max(W_e - L2, 0), T the rows per touched expert. FlashInfer's TRT-LLM MoE kernels (vLLM's default on
Blackwell) cap their token tile at 64 (vLLM's calculate_tile_tokens_dim: "Cap to 8-64 tokens per CTA tile as it's the
range supported by the kernel"). The script adds those bytes to each row's `bytes` before the held-out fit
(calibrate.crossval.held_out_predictions, the same folds as validate.py) and prints median / p90 absolute error per
size bucket against the shipped terms. Nothing here changes the package.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import validate as V  # noqa: E402
from llm_roofline.calibrate.crossval import held_out_predictions  # noqa: E402
from llm_roofline.hardware import load_chip  # noqa: E402

BITS = {"moe": 16.0, "moe_fp8": 8.0 + 32.0 / (128 * 128), "moe_fp4": 4.5, "moe_quant": 4.25}  # weight bits + scales


def _line(rows, pred, label: str) -> str:
    err = np.abs(pred / rows["measured_s"].to_numpy() - 1.0) * 100.0
    bucket = V.bucket(rows)
    parts = [f"{label:18s} all {np.median(err):5.1f} / {np.percentile(err, 90):5.1f}"]
    for b in ("M<=64", "M<=1k", "M>1k"):
        sel = bucket == b
        if sel.any():
            parts.append(f"{b} {np.median(err[sel]):5.1f} / {np.percentile(err[sel], 90):5.1f} (n {sel.sum()})")
    return "  ".join(parts)


def restream_bytes(rows, bits: float, l2_bytes: float, tile: float) -> np.ndarray:
    """Extra HBM bytes per row: touched experts x (ceil(T / tile) - 1) x max(W_e - L2, 0)."""
    m, k, n = (rows[c].to_numpy(np.float64) for c in ("m", "k", "n"))
    touched = rows["flops"].to_numpy(np.float64) / (6.0 * k * n) / m  # 6 x pairs x h x i / (6 h i) / rows per expert
    w_e = 3.0 * k * n * bits / 8.0
    return touched * (np.ceil(m / tile) - 1.0) * np.maximum(w_e - l2_bytes, 0.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chips", default="b200,gb200")
    ap.add_argument("--tiles", default="64,128")
    ap.add_argument("--families", default="moe,moe_fp8")
    ap.add_argument("--data", default=str(V.DEFAULT_DATA))
    a = ap.parse_args(argv)
    tiles = [float(t) for t in a.tiles.split(",")]
    for name in a.chips.split(","):
        chip = load_chip(str(V.CHIPS_DIR / f"{name}.toml"))
        rows_all = V.rows_of(Path(a.data), name, None)
        for fam in a.families.split(","):
            rows = rows_all[rows_all["fam"] == fam].reset_index(drop=True)
            if rows.empty:
                continue
            print(f"{name} {fam}: {len(rows)} rows, L2 {chip.onchip_bytes / 1e6:g} MB (held-out median / p90 %)")
            print("  " + _line(rows, held_out_predictions(rows, chip), "shipped terms"))
            for tile in tiles:
                r = rows.copy()
                r["bytes"] = rows["bytes"] + restream_bytes(rows, BITS[fam], chip.onchip_bytes, tile)
                print("  " + _line(r, held_out_predictions(r, chip), f"re-stream, tile {tile:g}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
