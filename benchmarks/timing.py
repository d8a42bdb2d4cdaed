"""The benchmarks' one timing rule: the best (minimum) of several runs of fn, on a chosen clock.

    best_seconds(fn, repeats=3)                          # CPU time (time.process_time)
    best_seconds(fn, repeats=5, clock=time.perf_counter)  # wall time
"""

import time


def best_seconds(fn, repeats: int, clock=time.process_time, warm_up: bool = False) -> float:
    """Minimum over `repeats` runs of fn() on `clock`; warm_up: one untimed run first (files, fits, imports)."""
    if warm_up:
        fn()
    best = float("inf")
    for _ in range(repeats):
        t = clock()
        fn()
        best = min(best, clock() - t)
    return best
