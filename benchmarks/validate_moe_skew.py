"""4-bit fused-MoE blocks under skewed routing: the fits (made on the collector's balanced rows) against its
power-law rows, which no fit sees.

    python3 benchmarks/validate_moe_skew.py [--data DIR] [--chips b200,gb200,h100-sxm,h200]

Rows: aic-vllm/<system>/moe_perf.csv.gz, the 4-bit families whose kernels size their M blocks to the mean rows per
expert (moe_int4: vLLM's fused_marlin_moe; moe_quant / moe_fp4 where the chip's fit has an M-block rule), with the
collector's power_law_1.01 routing (calibrate/aic_vllm._moe_rows: the busiest EP rank's expected share). Each is
priced with the chip's shipped fit two ways: every expert exactly the mean rows (spread 0: how the balanced rows are
fitted) and the rows varying about the mean (spread 1: m_block_padding's expected blocks, what a model's expert GEMMs
use). Prints per GPU and family the median calibrated / measured ratio and the median / p90 absolute % error.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_roofline.calibrate import aic_vllm  # noqa: E402
from llm_roofline.calibrate.fit import _terms, abs_pct_errors  # noqa: E402
from llm_roofline.calibrate.measurements import normalize  # noqa: E402
from llm_roofline.chip_fits import calibrated_model  # noqa: E402
from llm_roofline.hardware import load_chip  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "calibration"
SKEW = "power_law_1.01"


def skewed_rows(data: Path, chip_name: str) -> pd.DataFrame:
    """The 4-bit MoE rows of `chip_name` under the collector's mildest power-law routing, normalized."""
    system = {c: s for s, c in aic_vllm.SYSTEMS.items()}[chip_name]
    df = pd.read_csv(data / "aic-vllm" / system / "moe_perf.csv.gz")
    default = ~df["kernel_source"].astype(str).str.contains("|".join(aic_vllm._MOE_QUANT_LEFT_OUT))
    parts = [pd.DataFrame(aic_vllm._moe_rows(df[(df["moe_dtype"] == dt) & default], fam, compute, bits, dt, SKEW))
             for dt, (fam, compute, bits) in aic_vllm._MOE_QUANT.items()
             if ((df["moe_dtype"] == dt) & default & (df["distribution"] == SKEW)).any()]
    return normalize(pd.concat(parts, ignore_index=True)) if parts else pd.DataFrame()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--chips", default="b200,gb200,h100-sxm,h200")
    args = ap.parse_args(argv)
    chips = args.chips.split(",")
    if set(chips) - set(aic_vllm.SYSTEMS.values()):
        ap.error(f"unknown chips {sorted(set(chips) - set(aic_vllm.SYSTEMS.values()))}; measured: "
                 f"{', '.join(aic_vllm.SYSTEMS.values())}")
    if not (args.data / "aic-vllm").is_dir():
        ap.error(f"no aic-vllm folder under {args.data} (give the shared calibration directory with --data)")
    print("| GPU | family | rows | spread 0: ratio, med / p90 % | spread 1: ratio, med / p90 % |")
    print("|---|---|---:|---|---|")
    for name in chips:
        chip, rows = load_chip(name), skewed_rows(args.data, name)
        model = calibrated_model(chip)
        for fam in sorted(set(rows["fam"])) if len(rows) else []:
            fit = model.fit_for(fam)
            if not fit.compute_m_block_rule:  # no M blocks: nothing to compare
                continue
            sel = rows[rows["fam"] == fam].reset_index(drop=True)
            terms, measured = _terms(sel, chip, fam), sel["measured_s"].to_numpy(np.float64)
            cells = []
            for spread in (0.0, 1.0):
                pred = replace(terms, spread=spread).time_s(fit)
                err = abs_pct_errors(pred, measured)
                cells.append(f"{np.median(pred / measured):.2f}, {np.median(err):.1f} / {np.percentile(err, 90):.1f}")
            print(f"| {name} | {fam} | {len(sel)} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
