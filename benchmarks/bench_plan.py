"""Speed of the planners in configurations per second (one core, warm: after a first call in the process).

    python benchmarks/bench_plan.py            # target: >= 20,000 configurations/s on every query

A configuration is one point of a planner's search grid, scored with every metric the planner ranks by:
  serving planner (plan_serving, `llm-roofline plan ... --qps Q`): chip x (tp, pp, ep) x replicas x engine knobs
      (max_num_seqs x max_num_batched_tokens): every point gets its steady state under the load (TTFT, TPOT,
      whether it saturates, KV capacity; the saturation rate and the TTFT p90 at the rows the plan shows, or the
      p90 everywhere when it ranks by it);
  static planner (plan, `--static`): chip x (tp, pp, ep) x batch, each with TTFT, TPOT, memory, replicas and cost
      (the rows of Plan.candidates).
Time is CPU time of the planner call (time.process_time, min of 7 repeats: on a shared machine a neighbour's load
slows every run now and then, and 3 repeats were sometimes all slowed), so other processes on the machine inflate it
as little as they can; the whole CLI process (imports, loading, printing) is timed once as wall clock for reference.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import llm_roofline as lr  # noqa: E402
from llm_roofline import plan_serving as ps  # noqa: E402
from llm_roofline.plan import plan  # noqa: E402
from timing import best_seconds  # noqa: E402 (benchmarks/timing.py)

CHIPS = ["h100-sxm", "h200", "mi300x"]
TARGETS = dict(prompt_len=2048, gen_len=256, tpot_s=0.05, qps=10.0)
README = ("plan meta-llama/Llama-3.1-70B --chips h100-sxm,h200,mi300x --prompt 2048 --gen 256 --tpot-s 0.05 "
          "--qps 10")
TARGET_PER_S = 20_000


def cpu_time(fn, repeats: int = 7) -> float:
    return best_seconds(fn, repeats, warm_up=True)  # warm-up: model and chip files, calibration fits, imports


def report(name: str, configs: int, seconds: float) -> None:
    rate = configs / seconds
    print(f"{name}: {configs:,} configurations in {seconds * 1e3:,.0f} ms CPU -> {rate:,.0f} configurations/s "
          f"(target >= {TARGET_PER_S:,}: {'met' if rate >= TARGET_PER_S else 'missed'})")


def main() -> None:
    for model in ("meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-V3"):
        spec = lr.load_model(model)
        result = {}

        def serving():
            result["p"] = ps.plan_serving(spec, CHIPS, **TARGETS)

        s = cpu_time(serving)
        report(f"{model} serving planner (--qps)", result["p"].configurations, s)

        def static():
            result["s"] = plan(spec, CHIPS, **TARGETS)

        s = cpu_time(static)
        report(f"{model} static planner (--static)", len(result["s"].candidates), s)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "llm_roofline", *README.split()], check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    print(f"whole process `llm-roofline {README}`: {time.perf_counter() - t:.2f} s wall")


if __name__ == "__main__":
    main()
