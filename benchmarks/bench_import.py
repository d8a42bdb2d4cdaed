"""Time `import llm_roofline` in a fresh interpreter (target: < 0.15 s; pandas, transformers and matplotlib stay lazy;
benchmarks/bench_estimate.py measures it beside the estimate and CLI targets).

    python benchmarks/bench_import.py
"""

import os
import statistics
import subprocess
import sys

CODE = ("import time, sys; t = time.perf_counter(); import llm_roofline; dt = time.perf_counter() - t; "
        "heavy = [m for m in ('transformers', 'matplotlib', 'pandas', 'torch') if m in sys.modules]; "
        "print(dt, ','.join(heavy))")


def main(repeats: int = 7) -> None:
    times, heavy = [], ""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True, cwd=root).stdout.split()
        times.append(float(out[0]))
        heavy = out[1] if len(out) > 1 else ""
    med = statistics.median(times)
    print(f"import llm_roofline: median {med * 1e3:.0f} ms over {repeats} fresh interpreters "
          f"(min {min(times) * 1e3:.0f} ms); target < 150 ms: {'OK' if med < 0.15 else 'MISSED'}")
    print(f"heavy modules imported: {heavy or 'none'}")


if __name__ == "__main__":
    main()
