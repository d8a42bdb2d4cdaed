"""Extract the shipped sample of measured timings (benchmarks/data/measured_h100_sample.csv) from the Vidur
profiles, so that `llm-roofline calibrate benchmarks/data/measured_h100_sample.csv --chip h100-sxm` runs on a
fresh clone. Maintainer step; benchmarks/data/README.md says what the sample holds.

    python3 benchmarks/make_sample.py [--data ../shared/calibration/vidur] [--out benchmarks/data/measured_h100_sample.csv]

Rows (deterministic): gpu h100; Llama-2-7b-hf at tp 1 and 2 and num_tokens 1, 2, 4, ..., 4096 (every op of
its mlp.csv); NCCL all-reduce over 2, 4 and 8 GPUs of one node at every 40th buffer size of the profile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_roofline.calibrate import convert_vidur  # noqa: E402
from llm_roofline.calibrate.measurements import write_measurements  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "calibration" / "vidur"
DEFAULT_OUT = ROOT / "benchmarks" / "data" / "measured_h100_sample.csv"
GPU, MODEL, TPS = "h100", "Llama-2-7b-hf", (1, 2)
TOKENS = tuple(2 ** i for i in range(13))  # 1 .. 4096
EVERY_NTH_SIZE = 40


def sample(df):
    """The sample rows of a converted Vidur frame (convert_vidur), in its order."""
    h = df[df["gpu"] == GPU]
    compute = (h["model"] == MODEL) & h["tp"].isin(TPS) & h["m"].isin(TOKENS)
    sizes = np.sort(h.loc[h["family"] == "all_reduce", "bytes"].unique())[::EVERY_NTH_SIZE]
    coll = (h["family"] == "all_reduce") & (h["nodes"] == 1) & h["bytes"].isin(sizes)
    return h[compute | coll]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="Vidur profiling directory (default: %(default)s)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="sample CSV to write (default: %(default)s)")
    args = ap.parse_args(argv)
    rows = sample(convert_vidur(args.data))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_measurements(rows, args.out)
    counts = ", ".join(f"{f} {n}" for f, n in rows.groupby("family").size().items())
    print(f"wrote {len(rows)} rows ({counts}) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
