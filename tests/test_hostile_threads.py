"""Thread safety (issue 12): eight threads calling lr.estimate in a fresh interpreter get the serial answers.

A fresh subprocess is needed: the race is in first-use imports (the package's lazy names, the model reader's
config registry), which a test process that already imported everything would never hit.
"""

import json
import os
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys, threading
import llm_roofline as lr

MODELS = ["meta-llama/Llama-3.2-1B", "mistralai/Mixtral-8x7B-v0.1"]
CASES = [(MODELS[i % 2], 1 + i) for i in range(8)]  # (model, batch): eight different scenarios
results, errors = [None] * 8, [None] * 8
barrier = threading.Barrier(8)

def work(i):
    model, batch = CASES[i]
    barrier.wait()  # start together: first-use imports race
    try:
        results[i] = lr.estimate(model, "h100", batch=batch, prompt_len=256, gen_len=16).ttft_s
    except BaseException as e:
        errors[i] = f"{type(e).__name__}: {e}"

threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
serial = [lr.estimate(m, "h100", batch=b, prompt_len=256, gen_len=16).ttft_s for m, b in CASES]
print(json.dumps({"threaded": results, "serial": serial, "errors": errors}))
"""


def _run() -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_eight_threads_match_serial_in_a_fresh_process():
    d = _run()
    assert d["errors"] == [None] * 8
    assert d["threaded"] == d["serial"]  # same floats, bit for bit: the estimate is deterministic
