"""Fuzzing the public API with hostile scenarios and hostile chip files (issue 12).

The contract under test: lr.estimate / lr.sweep / lr.load_chip either return results that are finite and
non-negative, or raise an instance of RooflineError. Any other exception (TypeError, OverflowError,
KeyError, ...) or a NaN / inf / negative number is a crash.

Each case is built by a plain function of a random.Random, so that the hypothesis tests here (small, < 30 s)
and benchmarks/fuzz.py (~50,000 cases, counting crashes) share one generator.
"""

from __future__ import annotations

import math
import random
import re
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import llm_roofline as lr

# ----------------------------------------------------------------------------------------- scenarios
MODELS = ("meta-llama/Llama-3.2-1B", "mistralai/Mixtral-8x7B-v0.1", "deepseek-ai/DeepSeek-V3", "google/gemma-2-9b")
CHIPS = ("h100", "tpu-v5e", "v100", "mi300x")
BASE = dict(batch=4, prompt_len=256, gen_len=16, tp=1, pp=1, ep=1, dp=1, weight_dtype=None, act_dtype="bf16",
            kv_dtype=None, efficiency="ideal", attention="fused", sequence_parallel=False, moe_dispatch="allgather")
COUNT_KEYS = ("batch", "prompt_len", "gen_len", "tp", "pp", "ep", "dp")
HOSTILE_NUMBERS = [0, -1, 1, 2, 3, 7, 8, 64, 2**24, 2**24 + 1, 2**31, 2**31 + 1, 2**63, 10**400, math.nan, math.inf,
                   -math.inf, 1e300, 1e-300, 2.5, 8.0, -0.0, np.int64(8), np.float32(4), np.uint8(255), np.int8(-3),
                   np.bool_(True), np.array(8), np.array([8]), np.array([[1, 2]]), np.float64(np.nan)]
HOSTILE_OTHERS = ["8", "", None, True, False, [8], [], [1, "a"], {}, (2,), 1 + 0j, b"8", object(), [[1], [2, 3]],
                  [1, math.nan], "bf16"]
HOSTILE_WORDS = ["bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp32", "tf32", "int3", "", "BF16", " bf16", None, 8,
                 1.0, ["bf16"], "ideal", "calibrated", "fused", "unfused", object(), True]


def _hostile_value(rng: random.Random, key: str):
    if key in COUNT_KEYS:
        pool = HOSTILE_NUMBERS if rng.random() < 0.75 else HOSTILE_OTHERS
    elif key == "sequence_parallel":
        pool = [True, False, 1, 0, "yes", None, np.bool_(True), [True]]
    else:
        pool = HOSTILE_WORDS
    return rng.choice(pool)


def scenario_case(rng: random.Random) -> tuple[str, dict]:
    """('estimate' | 'sweep', kwargs incl. model and chip) with 1-3 arguments mutated."""
    kind = "sweep" if rng.random() < 0.3 else "estimate"
    kw = dict(BASE, model=rng.choice(MODELS), chip=rng.choice(CHIPS))
    for key in rng.sample(list(BASE), rng.randint(1, 3)):
        value = _hostile_value(rng, key)
        if kind == "sweep" and rng.random() < 0.5:
            value = [value, _hostile_value(rng, key)][: rng.randint(1, 2)]
        kw[key] = value
    if rng.random() < 0.05:
        kw["model"] = rng.choice([None, 3, "", "meta-llama", "../../etc/passwd", {"model_type": "llama"}, b"x"])
    if rng.random() < 0.05:
        kw["chip"] = rng.choice([None, 3, "", "h100,mi300x", "/dev/null", "x.toml", ["h100"], "\x00"])
    return kind, kw


@lru_cache(maxsize=None)
def _spec(model_id: str):
    return lr.load_model(model_id)


def _finite_nonneg(name: str, value) -> None:
    v = float(value)
    assert math.isfinite(v) and v >= 0, f"{name} = {v}"


def _check_estimate(est) -> None:
    for name in ("ttft_s", "e2e_s", "throughput_tokens_per_s", "throughput_tokens_per_s_per_chip"):
        _finite_nonneg(name, getattr(est, name))
    if est.tpot_s is not None:
        _finite_nonneg("tpot_s", est.tpot_s)
    m = est.memory
    for name in ("weight_bytes", "kv_cache_bytes", "activation_bytes", "per_chip_bytes", "capacity_bytes", "max_batch"):
        _finite_nonneg(f"memory.{name}", getattr(m, name))


def _check_sweep(df) -> None:
    assert len(df) > 0
    for col in ("ttft_s", "e2e_s", "throughput_tokens_per_s", "per_chip_bytes", "max_batch"):
        vals = df[col].to_numpy(dtype=float)
        assert np.all(np.isfinite(vals) & (vals >= 0)), f"{col}: {vals[~(np.isfinite(vals) & (vals >= 0))][:3]}"
    tpot = df["tpot_s"].to_numpy(dtype=float)
    decode = df["gen_len"].to_numpy() > 1  # one generated token: no decode step, tpot is NaN by contract
    assert np.all(np.isfinite(tpot[decode]) & (tpot[decode] >= 0))


def run_scenario(kind: str, kw: dict) -> str:
    """'result' (checked) or 'rejected' (a RooflineError); raises AssertionError (bad numbers) or any other
    exception (a crash)."""
    kw = dict(kw)
    model = kw.pop("model")
    model = _spec(model) if isinstance(model, str) and model in MODELS else model
    chip = kw.pop("chip")
    try:
        if kind == "estimate":
            _check_estimate(lr.estimate(model, chip, **kw))
        else:
            _check_sweep(lr.sweep(model, chip, **kw))
    except lr.RooflineError:
        return "rejected"
    return "result"


# ----------------------------------------------------------------------------------------- chip files
CHIP_DIR = Path(lr.load_chip("h100").path).parent
CHIP_FILES = sorted(p.name for p in CHIP_DIR.glob("*.toml"))
HOSTILE_TOML_VALUES = ['"str"', "[1, 2]", "[]", "true", "0", "-1", "1e-300", "1e300", "nan", "inf", "-inf", "{a = 1}",
                       "1979-05-27", '"3e12"', "0x10", '[["a"]]', "[true]", "2.5", "1e15", "{}", '["h100"]', "-0.0"]
_ASSIGNMENT = re.compile(r"^(\s*[A-Za-z0-9_.\"-]+\s*=\s*)(.*)$")


def chip_case(rng: random.Random) -> bytes:
    """A shipped chip file with 1-3 mutations: a value retyped or made extreme, a line or table deleted, a table
    renamed, garbage bytes, truncation."""
    lines = (CHIP_DIR / rng.choice(CHIP_FILES)).read_text(encoding="utf-8").splitlines()
    for _ in range(rng.randint(1, 3)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.random()
        m = _ASSIGNMENT.match(lines[i])
        if op < 0.6 and m:
            lines[i] = m.group(1) + rng.choice(HOSTILE_TOML_VALUES)
        elif op < 0.75:
            del lines[i]
        elif op < 0.85 and lines[i].startswith("["):
            lines[i] = rng.choice(["[compute.x]", "[memory]", "[scaleup]", "[efficiency.gemm]", "[[price]]", "[x]"])
        elif op < 0.92:
            lines.insert(i, rng.choice(["aliases = 5", "onchip = 1", "price = [1]", "efficiency = 'x'",
                                        "scaleout = true", "[efficiency.nope]\ncompute_max = 0.5", "name = 1"]))
        else:
            lines = lines[: rng.randrange(len(lines) + 1)]
    data = "\n".join(lines).encode("utf-8")
    if rng.random() < 0.05:
        data = data[: rng.randrange(len(data) + 1)] + bytes(rng.randrange(256) for _ in range(8))
    return data


def run_chip(data: bytes) -> str:
    """Load the mutated chip file; if it loads, estimate on it (ideal and calibrated) and check the numbers."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzz.toml"
        path.write_bytes(data)
        try:
            chip = lr.load_chip(str(path))
        except lr.RooflineError:
            return "rejected"
    for efficiency in ("ideal", "calibrated"):
        try:
            _check_estimate(lr.estimate(_spec(MODELS[0]), chip, batch=4, prompt_len=256, gen_len=16,
                                        efficiency=efficiency))
        except lr.RooflineError:
            return "rejected"
    return "result"


# ----------------------------------------------------------------------------------------- tests
FUZZ = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=250, **FUZZ)
@given(st.randoms(use_true_random=False))
def test_scenarios_never_crash(rng):
    run_scenario(*scenario_case(rng))


@settings(max_examples=120, **FUZZ)  # each loaded chip runs two estimates
@given(st.randoms(use_true_random=False))
def test_chip_files_never_crash(rng):
    run_chip(chip_case(rng))


@pytest.mark.parametrize("kw", [
    dict(prompt_len=math.inf), dict(batch=2**63), dict(batch=10**400), dict(prompt_len=1e300), dict(gen_len=math.nan),
    dict(tp=np.int64(2)), dict(batch=np.float32(4)), dict(batch=[4]), dict(tp=2.0), dict(act_dtype=8),
    dict(efficiency=None), dict(sequence_parallel="yes"), dict(weight_dtype=["bf16"]),
    dict(moe_dispatch=None), dict(moe_dispatch=math.nan), dict(moe_dispatch=["all_to_all"]), dict(moe_dispatch=""),
])
def test_known_hostile_scenarios(kw):
    """The crash classes found by hand (issue 12): each is a RooflineError or a valid result."""
    run_scenario("estimate", dict(BASE, model=MODELS[0], chip="h100", **kw))


def test_numpy_integers_are_accepted_like_ints():
    # np.int64(2) is an integer: the same estimate as tp=2 (it used to be a ShardingError, or an error)
    a = lr.estimate(_spec(MODELS[0]), "h100", tp=np.int64(2), batch=np.int32(4))
    b = lr.estimate(_spec(MODELS[0]), "h100", tp=2, batch=4)
    assert a.ttft_s == b.ttft_s and a.tpot_s == b.tpot_s


# ----------------------------------------------------------------------------------------- command lines
CLI_COMMANDS = {
    "estimate": ["--batch", "--prompt", "--gen", "--tp", "--pp", "--ep", "--dp", "--weight-dtype", "--kv-dtype",
                 "--act-dtype", "--format", "--efficiency", "--attention"],
    "sweep": ["--batch", "--prompt", "--gen", "--tp", "--pp", "--ep", "--dp", "--kv-dtype", "--format", "--out"],
    "memory": ["--context", "--gen", "--tp", "--pp", "--ep", "--weight-dtype", "--kv-dtype", "--gpu-memory-utilization", "--format"],
    "plot": ["--batch", "--prompt", "--gen", "--tp", "--dpi", "--out", "--frontier-prompts"],
    "serve": ["--concurrency", "--qps", "--prompt", "--gen", "--tp", "--max-num-seqs", "--max-num-batched-tokens",
              "--prefix-hit-rate", "--kv-dtype", "--format", "--efficiency"],
}
HOSTILE_ARGS = ["0", "-1", "1", "1", "2", "2", "4", "8", "16", "3", "1,,2", "1,2,", ",", "", "nan", "inf", "1e400", "1e3", "abc", "2.5",
                str(2**63), str(2**31 + 1), "16777217", "65537", "bf16", "int3", "fp8", "xml", "json", "csv", "ideal",
                "{tmp}/out", "{tmp}", "{tmp}/missing/x", "/dev/full", "{tmp}/x.xyz", "0.5", "1.5", "-0.0", "\udcff"]


def cli_case(rng: random.Random) -> list[str]:
    """An argv for cli.main: a command on a small model with 1-3 options set to hostile values."""
    cmd = rng.choice(list(CLI_COMMANDS))
    argv = ([cmd] if cmd != "plot" else [cmd, rng.choice(["roofline", "breakdown", "memory"])])
    argv += [rng.choice([MODELS[0]] * 4 + [MODELS[1], "nope/none", ""]), "--chip",
             rng.choice(["h100"] * 4 + ["v100", "x", "{tmp}"])]
    for flag in rng.sample(CLI_COMMANDS[cmd], rng.randint(1, 2)):
        argv += [flag, rng.choice(HOSTILE_ARGS)]
    if cmd == "plot" and "--out" not in argv:
        argv += ["--out", "{tmp}/chart.png"]
    return argv


def run_cli(argv: list[str]) -> str:
    """'result' (exit 0) or 'rejected' (exit 2, one error line); raises AssertionError for anything else."""
    import contextlib
    import io

    from llm_roofline.cli import main

    with tempfile.TemporaryDirectory() as d:
        argv = [a.replace("{tmp}", d) for a in argv]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse
                code = e.code
    text = err.getvalue()
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith(("usage:", " "))]
    assert "Traceback" not in text + out.getvalue() and code in (0, 2), (code, text[-300:])
    assert code == 0 or (len(lines) == 1 and "error" in lines[0]), text[-300:]
    return "result" if code == 0 else "rejected"


@settings(max_examples=25, **FUZZ)
@given(st.randoms(use_true_random=False))
def test_command_lines_never_crash(rng):
    run_cli(cli_case(rng))
