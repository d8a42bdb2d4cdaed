"""Speed of the serving model: a 10,000-point lr.serve sweep (one core, warm: the second call of a process).

    python benchmarks/bench_serve.py

Grid: Llama-3.1-8B on h100-sxm, calibrated efficiency, 4 prompt lengths x 5 generation lengths x 500
concurrencies (closed loop) = 10,000 points, and the same with 500 QPS values (open loop); each with and without
the uncertainty band (serve(uncertainty=...)).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from llm_roofline.serve import serve  # noqa: E402
from timing import best_seconds  # noqa: E402 (benchmarks/timing.py)

GRID = dict(prompt_len=[512, 1024, 2048, 4096], gen_len=[128, 256, 512, 1024, 2048])


def timed(**load) -> tuple[float, int]:
    """(best wall seconds of 3 sweeps, their points)."""
    points = []
    best = best_seconds(lambda: points.append(len(serve("meta-llama/Llama-3.1-8B", "h100-sxm", **GRID, **load))), 3,
                        clock=time.perf_counter)
    return best, points[-1]


def main() -> None:
    serve("meta-llama/Llama-3.1-8B", "h100-sxm", prompt_len=[512, 1024], concurrency=[1, 2])  # warm-up (imports)
    for name, load in (("closed loop", dict(concurrency=list(range(1, 501)))),
                       ("open loop", dict(qps=list(np.linspace(0.05, 25.0, 500))))):
        for band in (True, False):  # the p10 / p90 columns: two more queueing solves
            s, n = timed(**load, uncertainty=band)
            print(f"{name}, uncertainty={band}: {n} points in {s:.3f} s (best of 3), {n / s:,.0f} points/s")


if __name__ == "__main__":
    main()
