"""Fuzz the config reader: N mutated configs (default 20,000), count the crashes (anything but a spec with finite
positive counts or a one-line RooflineError). The strategies and the check are tests/test_model_fuzz.py's: the shipped
configs, or (hybrid) the recurrent / hybrid / sparse-attention / shared-block fixtures of tests/fixtures/configs listed
there (DeepSeek-V4, Zamba2, Mamba, Nemotron-H, Qwen3-Next, ...).

    PYTHONPATH=. python benchmarks/fuzz_configs.py [N] [shipped|hybrid]
"""

import collections
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.test_model_fuzz import crash_of, mutated_configs, mutated_hybrid_configs  # noqa: E402


def main(n: int, which: str = "shipped") -> int:
    crashes: collections.Counter[str] = collections.Counter()
    outcomes = collections.Counter()

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(mutated_hybrid_configs() if which == "hybrid" else mutated_configs())
    def run(cfg):
        problem = crash_of(cfg)
        outcomes["crash" if problem else "ok"] += 1
        if problem:
            crashes[problem.split(":")[0] + ": " + problem[:120]] += 1

    t0 = time.perf_counter()
    run()
    print(f"{sum(outcomes.values())} examples in {time.perf_counter() - t0:.1f} s: {outcomes['crash']} crashes")
    for problem, count in crashes.most_common(20):
        print(f"  {count:6d}  {problem}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000, sys.argv[2] if len(sys.argv) > 2 else "shipped"))
