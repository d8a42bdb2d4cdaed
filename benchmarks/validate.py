"""Validate the calibrated efficiency model against real kernel timings (Vidur, A100 and H100).

    python3 benchmarks/validate.py [--data ../shared/calibration/vidur] [--markdown]

For every GPU, op family and size bucket it prints the median and 90th-percentile absolute % error of
the ideal roofline and of the calibrated model. The calibrated numbers are out-of-sample:

- compute ops (GEMMs, norms, activation, rope, residual add, embedding): leave-one-model-out, i.e. fit
  on five of the six models and predict the sixth, for each of the six;
- NCCL all-reduce (no model): leave-one-group-size-out, i.e. fit on two of the GPU counts {2, 4, 8}
  and predict the third (which tests the alpha-beta form across group sizes, not just across sizes).

Size buckets: tokens (GEMM M) < 64, 64-1024, > 1024; for all-reduce the buffer of that many tokens of a
4096-wide fp16 activation (8 KiB per token): < 512 KiB, 512 KiB-8 MiB, > 8 MiB.
Multi-node all-reduce rows (the a100 file also profiles 2-node groups) are not calibrated and are
left out. It also times the full fit (< 10 s) and checks that two fits give identical parameters.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_roofline.calibrate import fit as fitting  # noqa: E402
from llm_roofline.calibrate.measurements import normalize, single_node  # noqa: E402
from llm_roofline.calibrate.vidur import convert_vidur  # noqa: E402
from llm_roofline.efficiency import FAMILIES  # noqa: E402
from llm_roofline.hardware import load_chip  # noqa: E402

GPUS = {"a100": "a100-80gb", "h100": "h100-sxm"}  # Vidur GPU -> chip file it is fitted against
DEFAULT_DATA = ROOT.parent / "shared" / "calibration" / "vidur"
BUCKETS = ("<64", "64-1024", ">1024")
TOKEN_BYTES = 4096 * 2  # one token of a 4096-wide fp16 activation: all-reduce buckets


def bucket(df) -> np.ndarray:
    """Size bucket of every row: tokens for compute ops, tokens-equivalent buffer bytes for collectives."""
    tokens = np.where(df["fam"] == "collective", df["bytes"] / TOKEN_BYTES, df["m"])
    return np.where(tokens < 64, BUCKETS[0], np.where(tokens <= 1024, BUCKETS[1], BUCKETS[2]))


def cross_validated(rows, chip) -> np.ndarray:
    """Out-of-sample calibrated predictions: leave one model out (compute), one group size out (all-reduce)."""
    pred = np.full(len(rows), np.nan)
    compute = (rows["fam"] != "collective").to_numpy()
    for model in sorted(set(rows.loc[compute, "model"])):
        test = compute & (rows["model"] == model).to_numpy()
        fitted = fitting.fit(rows[compute & ~test], chip, date="cv")
        pred[test] = fitting.predict(rows[test], chip, fitted.fits)
    coll = ~compute
    for n in sorted(set(rows.loc[coll, "tp"])):
        test = coll & (rows["tp"] == n).to_numpy()
        fitted = fitting.fit(rows[coll & ~test], chip, date="cv")
        pred[test] = fitting.predict(rows[test], chip, fitted.fits)
    return pred


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="Vidur profiling directory (default: %(default)s)")
    ap.add_argument("--markdown", action="store_true", help="print the error table as Markdown")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    df = normalize(convert_vidur(args.data), args.data)
    t_convert = time.perf_counter() - t0
    table, fits, notes, ok = [], {}, [], True
    for gpu, chip_name in GPUS.items():
        chip = load_chip(chip_name)
        rows = df[df["gpu"] == gpu]
        multi = rows[(rows["fam"] == "collective") & (rows["nodes"] > 1)]
        rows = single_node(rows).reset_index(drop=True)
        if multi.size:
            notes.append(f"{gpu}: {len(multi)} multi-node all-reduce rows not calibrated (left out)")
        first = fitting.fit(rows, chip, date="validate")
        second = fitting.fit(rows, chip, date="validate")
        same = all(first.fits[f].params() == second.fits[f].params() for f in first.fits)
        fits[gpu] = (chip_name, first)
        notes.append(f"{gpu}: full fit of {len(rows)} points took {first.seconds:.2f} s "
                     f"(limit 10 s); a second fit gave {'identical' if same else 'DIFFERENT'} parameters")
        ok &= same and first.seconds < 10
        ideal = fitting.predict(rows, chip)
        calib = cross_validated(rows, chip)
        meas = rows["measured_s"].to_numpy()
        e_ideal, e_cal = fitting.abs_pct_errors(ideal, meas), fitting.abs_pct_errors(calib, meas)
        b = bucket(rows)
        for fam in FAMILIES:
            f_sel = (rows["fam"] == fam).to_numpy()
            if not f_sel.any():
                continue
            for bk in BUCKETS + ("all",):
                sel = f_sel & ((b == bk) if bk != "all" else True)
                if not sel.any():
                    continue
                r = dict(gpu=gpu, family=fam if fam != "collective" else "all_reduce", bucket=bk, n=int(sel.sum()),
                         ideal_med=np.median(e_ideal[sel]), ideal_p90=np.percentile(e_ideal[sel], 90),
                         cal_med=np.median(e_cal[sel]), cal_p90=np.percentile(e_cal[sel], 90))
                table.append(r)
                if fam in ("gemm", "collective"):
                    limit = 15.0 if fam == "gemm" else 20.0
                    if (bk == "all" and r["cal_med"] > limit) or r["cal_med"] >= r["ideal_med"]:
                        ok = False
    print(_render(table, args.markdown))
    print()
    for gpu, (chip_name, res) in fits.items():
        print(f"fitted parameters, {gpu} (against {chip_name}, all data):")
        for fam, p in res.fits.items():
            vals = ", ".join(f"{k}={v:.4g}" for k, v in fitting.shown_params(fam, p).items())
            print(f"  {fam:11s} {vals}")
    print()
    print(f"converted the Vidur files in {t_convert:.2f} s")
    for n in notes:
        print(n)
    print("acceptance (GEMM median <= 15 %, all-reduce <= 20 %, calibrated below ideal in every bucket, "
          f"deterministic, fit < 10 s): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def _render(table, markdown: bool) -> str:
    head = ["GPU", "family", "tokens", "n", "ideal median %", "ideal p90 %", "calibrated median %", "calibrated p90 %"]
    body = [[r["gpu"], r["family"], r["bucket"], str(r["n"]), f"{r['ideal_med']:.1f}", f"{r['ideal_p90']:.1f}",
             f"{r['cal_med']:.1f}", f"{r['cal_p90']:.1f}"] for r in table]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if i >= 3 else "---" for i in range(len(head))) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(head)]
    fmt = lambda row: "  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))  # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(row) for row in body])


if __name__ == "__main__":
    raise SystemExit(main())
