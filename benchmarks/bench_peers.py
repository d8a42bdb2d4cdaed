"""lr.sweep against llm-analysis 0.2.2 `infer()`, in the same run: Llama-2-7B on an H100 SXM, 200 points
(5 batches x 5 prompt lengths x 8 generation lengths), CPU time per point (min of repeats), per-call overhead
included (lr: one sweep() call over the 200 points; llm-analysis: one infer() call per point, its logging at ERROR).
Target: lr.sweep >= 20x faster per point.

llm-analysis is never a dependency of this project: it runs in its own virtualenv, in a child process.

    python -m venv /tmp/venv-peers && /tmp/venv-peers/bin/pip install llm-analysis==0.2.2
    python benchmarks/bench_peers.py [--peer-python /tmp/venv-peers/bin/python]   # or LLM_ANALYSIS_PYTHON=...

Without that virtualenv (or when llm_analysis does not import there) the comparison is skipped with a message.
Model: lr reads meta-llama/Llama-2-7b-hf (model_configs/); llm-analysis ships the same shape as
NousResearch_Llama-2-7b-hf (32 layers, d 4096, 32 heads, d_ff 11008 as ffn_embed_dim 16384 = 4d: its MLP
convention). The printed TTFT/TPOT of one point show both model the same thing at the roofline's order of magnitude.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from timing import best_seconds  # noqa: E402 (benchmarks/timing.py)

GRID = dict(batch=[1, 2, 4, 8, 16], prompt_len=[128, 256, 512, 1024, 2048],
            gen_len=[16, 32, 64, 128, 256, 512, 1024, 2048])
REPEATS = 50  # both sides: the minimum of 50 runs (5 left the 2 ms sweep within ~15 % of its floor; 20 still
#   moved it by up to 10 % from run to run on a shared 2-core machine)
DEFAULT_PEER = "/tmp/venv-peers/bin/python"

PEER = r"""
import json, sys, time, itertools, logging
from llm_analysis.analysis import infer
grid = json.loads(sys.argv[1]); repeats = int(sys.argv[2])
points = list(itertools.product(grid["batch"], grid["prompt_len"], grid["gen_len"]))
def run():
    return [infer(model_name="NousResearch_Llama-2-7b-hf", gpu_name="h100-sxm-80gb", dtype_name="w16a16e16",
                  log_level="ERROR", batch_size_per_gpu=b, seq_len=p, num_tokens_to_generate=g,
                  flops_efficiency=1.0, hbm_memory_efficiency=1.0) for b, p, g in points]
run()
best = float("inf")
for _ in range(repeats):
    t = time.process_time(); out = run(); best = min(best, time.process_time() - t)
i = points.index((8, 2048, 256))
print(json.dumps(dict(points=len(points), cpu_s=best, sample={k: out[i][k] for k in out[i]
                      if k in ("prefill_latency", "decode_latency", "total_latency")})))
"""


def peer_python() -> str:
    if "--peer-python" in sys.argv:
        return sys.argv[sys.argv.index("--peer-python") + 1]
    return os.environ.get("LLM_ANALYSIS_PYTHON", DEFAULT_PEER)


def main() -> None:
    import llm_roofline as lr

    spec = lr.load_model("meta-llama/Llama-2-7b-hf")
    n = len(GRID["batch"]) * len(GRID["prompt_len"]) * len(GRID["gen_len"])
    results = {}
    for eff in ("ideal", "calibrated"):
        best = best_seconds(lambda: lr.sweep(spec, "h100-sxm", efficiency=eff, **GRID), REPEATS, warm_up=True)
        df = lr.sweep(spec, "h100-sxm", efficiency=eff, **GRID)
        results[eff] = best / n
        print(f"lr.sweep ({eff}): {n} points in {best * 1e3:.1f} ms CPU = {best / n * 1e6:.1f} us per point")
        if eff == "ideal":
            row = df[(df.batch == 8) & (df.prompt_len == 2048) & (df.gen_len == 256)].iloc[0]
            print(f"  batch 8, prompt 2048, gen 256: TTFT {row.ttft_s * 1e3:.1f} ms, TPOT {row.tpot_s * 1e3:.2f} ms")
    py = peer_python()
    try:
        out = subprocess.run([py, "-c", PEER, json.dumps(GRID), str(REPEATS)], capture_output=True, text=True,
                             timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"llm-analysis comparison skipped: cannot run {py} ({e}). Create its virtualenv:\n"
              "  python -m venv /tmp/venv-peers && /tmp/venv-peers/bin/pip install llm-analysis==0.2.2")
        return
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"llm-analysis comparison skipped: llm_analysis does not run under {py} ({last}). Create its "
              "virtualenv:\n  python -m venv /tmp/venv-peers && /tmp/venv-peers/bin/pip install llm-analysis==0.2.2")
        return
    peer = json.loads(out.stdout.strip().splitlines()[-1])
    per_point = peer["cpu_s"] / peer["points"]
    s = peer["sample"]
    print(f"llm-analysis 0.2.2 infer(): {peer['points']} points in {peer['cpu_s'] * 1e3:.0f} ms CPU = "
          f"{per_point * 1e6:.0f} us per point")
    print(f"  batch 8, prompt 2048, gen 256: prefill {s.get('prefill_latency', float('nan')) * 1e3:.1f} ms, "
          f"decode step {s.get('decode_latency', float('nan')) * 1e3:.2f} ms")
    for eff, t in results.items():
        ratio = per_point / t
        verdict = "met" if ratio >= 20 else "missed"
        print(f"lr.sweep ({eff}) is {ratio:.1f}x faster per point (target >= 20x: {verdict})")


if __name__ == "__main__":
    main()
