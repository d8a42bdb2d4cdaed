"""Fuzz the public API with ~50,000 hostile cases and count the crashes (issue 12).

    PYTHONPATH=. python benchmarks/fuzz.py [--scenarios 40000] [--chips 8000] [--cli 2000] [--seed 0]

A crash is any exception that is not a RooflineError, or a result that is not finite and non-negative. The
cases come from the same generators as tests/test_hostile_fuzz.py (scenario_case, chip_case, cli_case: a CLI
crash is an exit code other than 0 and 2, a traceback, or more than one error line). Prints the
count of crashes, and one line per distinct crash (exception type, message head, first case) so it can be
reproduced with `run_scenario(*case)` / `run_chip(case)`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import random
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_hostile_fuzz import (chip_case, cli_case, run_chip, run_cli, run_scenario,  # noqa: E402
                               scenario_case)


def _signature(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
    return f"{type(e).__name__} at {where}: {str(e).splitlines()[0][:120] if str(e) else ''}"


def fuzz(n: int, make, run, seed: int, label: str) -> Counter:
    crashes: Counter = Counter()
    outcomes: Counter = Counter()
    first: dict[str, object] = {}
    t0 = time.perf_counter()
    for i in range(n):
        case = make(random.Random(f"{label}-{seed}-{i}"))
        try:
            outcomes[run(*case) if isinstance(case, tuple) else run(case)] += 1
        except Exception as e:  # noqa: BLE001 - counting every kind of crash is the point
            outcomes["crash"] += 1
            sig = _signature(e)
            crashes[sig] += 1
            first.setdefault(sig, (i, case))
    print(f"{label}: {n} cases in {time.perf_counter() - t0:.0f} s, {sum(crashes.values())} crashes "
          f"({len(crashes)} distinct); {outcomes['result']} checked results, {outcomes['rejected']} RooflineErrors")
    for sig, count in crashes.most_common():
        i, case = first[sig]
        print(f"  {count:6d} x {sig}\n         first: case {i}: {repr(case)[:300]}")
    return crashes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", type=int, default=40_000)
    ap.add_argument("--chips", type=int, default=8_000)
    ap.add_argument("--cli", type=int, default=2_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    total = fuzz(args.scenarios, scenario_case, run_scenario, args.seed, "scenarios")
    total += fuzz(args.chips, chip_case, run_chip, args.seed, "chip files")
    with tempfile.TemporaryDirectory() as scratch:  # command lines may write (--out, plot): never into the repo
        os.chdir(scratch)
        total += fuzz(args.cli, cli_case, run_cli, args.seed, "command lines")
    print(f"total: {args.scenarios + args.chips + args.cli} cases, {sum(total.values())} crashes")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
