"""Command line: `llm-roofline <command> ...`. The only module that prints.

Every user mistake (a RooflineError, a ValueError subclass, from the library) becomes one line on stderr and exit
code 2; an internal error (a bug) one line and exit code 1 (LLM_ROOFLINE_TRACEBACK=1 shows the traceback).
Each subcommand is one `cmd_<name>(args) -> str` function in commands.py plus its parser in `_build_parser`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from .bounds import BOUNDS, DPI_MIN
from .commands import (cmd_calibrate, cmd_chips, cmd_estimate, cmd_memory, cmd_models, cmd_plan, cmd_plot, cmd_report,
                       cmd_serve, cmd_sweep)
from .chip_fits import DEFAULT_EFFICIENCY
from .errors import RooflineError
from .memory import GPU_MEMORY_UTILIZATION
from .report.table import FORMATS
from .sharding import MOE_DISPATCH, MOE_DISPATCHES

EPILOG = """examples:
  llm-roofline chips
  llm-roofline models
  llm-roofline estimate meta-llama/Llama-3.1-8B --chip h100-sxm --batch 8 --prompt 2048 --gen 256

Units: SI throughout (1 GB = 1e9 bytes); FLOP = 2 x multiply-add; chip peaks are dense (no sparsity).

Exit codes: 0 success (`plan` also when nothing is feasible: that is an answer). 2 a user mistake (bad or
out-of-bounds argument, unknown model or chip, non-dividing sharding, malformed config or chip file, an
output that cannot be written): one line "llm-roofline: error: ..." on stderr, never a traceback; argparse
adds its usage lines for a malformed option. 1 an internal error (a bug): one line "llm-roofline: internal
error: ... (please report it)"; set LLM_ROOFLINE_TRACEBACK=1 to print its traceback.
Bounds: batch <= 2^24 sequences, prompt/gen/context <= 2^31 tokens, tp/pp/ep/dp <= 65,536, sweep grids
<= 2,000,000 points, --dpi 30..600 (llm_roofline/bounds.py). Output files are written to a temporary file
and renamed into place; a destination that is a symbolic link, a folder or a device is refused."""


def _add_report_scenario(p):
    p.add_argument("--batch", type=int, default=1, help="sequences in flight per replica (default: %(default)s)")
    p.add_argument("--prompt", type=int, default=2048, help="prompt tokens per sequence (default: %(default)s)")
    p.add_argument("--gen", type=int, default=256,
                   help="generated tokens per sequence; the first comes from prefill (default: %(default)s)")
    p.add_argument("--frontier-prompts", default=None,
                   help="comma-separated prompt lengths for the frontier curves (default: 512,2048,8192,32768 "
                        "and --prompt, within the model's context)")
    _add_scenario(p)


def _add_format(p, default="table"):
    p.add_argument("--format", choices=FORMATS, default=default, help="output format (default: %(default)s)")


def _add_model_chip(p):
    p.add_argument("model", help="shipped model id (see `llm-roofline models`), a directory or a config.json path")
    p.add_argument("--chip", required=True, help="chip name or alias (see `llm-roofline chips`) or a chip .toml file")
    p.add_argument("--allow-download", action="store_true",
                   help="fetch config.json from the Hugging Face Hub for an id that is not shipped")


def _add_scenario(p, lists=False, layouts=()):
    kind = str if lists else int
    g = p.add_argument_group("sharding and precision")
    for flag, what in (("tp", "tensor-parallel degree"),
                       ("pp", "pipeline stages; a static batch runs as pp micro-batches (a multiple of pp) or, below "
                              "pp, one per sequence"),
                       ("ep", "expert-parallel degree (divides tp x attention_dp)"), ("dp", "data-parallel replicas")):
        g.add_argument(f"--{flag}", type=kind, default="1" if lists else 1, help=f"{what} (default: 1)")
    g.add_argument("--sequence-parallel", action="store_true",
                   help="reduce-scatter + all-gather instead of all-reduce; norms on T/tp tokens")
    g.add_argument("--weight-dtype", default=None,
                   help="weight storage: bf16, fp16, fp8, int8, int4, fp4 (default: the checkpoint's own)")
    g.add_argument("--act-dtype", default="bf16", help="activation and compute dtype (default: %(default)s)")
    g.add_argument("--kv-dtype", default=None, help="KV-cache dtype (default: the activation dtype)")
    g.add_argument("--efficiency", default=DEFAULT_EFFICIENCY, choices=["ideal", "calibrated"],
                   help="calibrated: kernel efficiency fitted per chip to measured kernel timings (a nearest fit or "
                        "family default elsewhere, named in the output), with the ideal bound printed beside it; "
                        "ideal: the pure roofline (default: %(default)s, as in the Python API)")
    g.add_argument("--gpu-memory-utilization", type=float, default=GPU_MEMORY_UTILIZATION,
                   help="share of each chip's memory (the driver's total where the chip file gives it, else the "
                        "datasheet HBM) the engine may fill with weights, activations and KV cache, as "
                        "vLLM's gpu_memory_utilization (default: %(default)s)")
    g.add_argument("--attention", default="fused", choices=["fused", "unfused"],
                   help="fused (FlashAttention) or unfused (score matrix through HBM) (default: %(default)s)")
    if layouts:
        _add_layouts(p, layouts)


LAYOUT_FLAGS = ("attention_dp", "moe_ep", "moe_tp", "routing_skew", "moe_dispatch")


def _add_host(p, where="") -> None:
    """--host: the serving model's host time (serve, and plan's serving model)."""
    from .engine import CUDA_GRAPH_MAX_TOKENS, HOST_PROMPT_LAYER_OVERHEAD_S

    p.add_argument("--host", default="vllm", choices=["vllm", "none"],
                   help=f"the engine's host time{where}: vllm (fitted on vLLM serving runs: "
                        f"{HOST_PROMPT_LAYER_OVERHEAD_S * 1e3:.3g} ms per layer of a step carrying prompt tokens past "
                        f"its {CUDA_GRAPH_MAX_TOKENS}-token CUDA graphs) or none (kernels only, as for an engine "
                        "without Python dispatch; not measured) (default: %(default)s)")


def _add_layouts(p, which) -> None:
    """The serving-layout flags a command uses (estimate, sweep and serve all five; plan --attention-dp and
    --moe-dispatch)."""
    g = p.add_argument_group("serving layouts")
    if "attention_dp" in which:
        g.add_argument("--attention-dp", type=int, default=1,
                       help="data-parallel attention: attention_dp groups of tp chips, each with its own sequences "
                            "and KV cache (no KV replication); dense MLP / experts span tp x attention_dp chips "
                            "(default: 1)")
    if "moe_ep" in which:
        g.add_argument("--moe-ep", type=int, default=None,
                       help="chips the routed experts are split over (default: --ep); with --attention-dp, "
                            "--moe-dispatch says how the tokens reach them")
    if "moe_tp" in which:
        g.add_argument("--moe-tp", type=int, default=None,
                       help="chips each expert is sliced over (default: tp x attention_dp / moe_ep)")
    if "routing_skew" in which:
        g.add_argument("--routing-skew", type=float, default=1.0,
                       help="busiest expert group's load over the mean, 1..moe_ep (default: 1, balanced routing)")
    if "moe_dispatch" in which:
        g.add_argument("--moe-dispatch", choices=MOE_DISPATCHES, default=MOE_DISPATCH,
                       help="with --attention-dp: how routed tokens reach their experts. allgather (default; vLLM's, "
                            "SGLang's and TensorRT-LLM's): every group's tokens all-gathered, each chip's experts run "
                            "over all of them, the outputs reduce-scattered; all_to_all: each token's top-k copies "
                            "dispatched to its experts' chips and combined back (DeepEP, e.g. vLLM --all2all-backend "
                            "deepep_low_latency)")


class _Parser(argparse.ArgumentParser):
    """argparse, with a rejected argument cut to 60 characters as errors.shown cuts a value (a 5,000-digit --prompt or
    an unrecognized argument was echoed whole). Subcommand parsers are of the same class."""

    def error(self, message):
        super().error(re.sub(r"\S{61,}", lambda m: m.group(0)[:57] + "...", message))


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="llm-roofline",
        description="Estimate LLM inference cost (prefill/decode time, memory, chips) with the roofline model.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from .version import __version__

    parser.add_argument("--version", action="version", version=f"llm-roofline {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("chips", help="list the chip catalog",
                       description="The shipped chip catalog: dense peaks, HBM, critical intensity, scale-up link.")
    _add_format(p)
    p.set_defaults(func=cmd_chips)
    p = sub.add_parser("models", help="list the shipped model configs",
                       description="The shipped model configs: parameters, layers, heads, attention kind, "
                                   "max context, KV-cache bytes per token.")
    _add_format(p)
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("estimate", help="estimate one scenario: TTFT, TPOT, throughput, memory, per-op roofline",
                       description="Estimate prefill and decode time, memory and the bound of every operator for "
                                   "one model on one chip.", epilog="example:\n  llm-roofline estimate "
                       "meta-llama/Llama-3.1-8B --chip h100-sxm --batch 8 --prompt 2048 --gen 256",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_model_chip(p)
    p.add_argument("--batch", type=int, default=1, help="sequences in flight per replica (default: %(default)s)")
    p.add_argument("--prompt", type=int, default=2048, help="prompt tokens per sequence (default: %(default)s)")
    p.add_argument("--gen", type=int, default=256,
                   help="generated tokens per sequence; the first comes from prefill (default: %(default)s)")
    _add_scenario(p, layouts=LAYOUT_FLAGS)
    _add_format(p)
    p.add_argument("--ops", action="store_true",
                   help="the full output: every phase term and every operator per phase (the default is a "
                        "summary of <= ~20 lines)")
    p.add_argument("--explain", action="store_true", help="like --ops, plus every op's formula with its numbers")
    p.set_defaults(func=cmd_estimate)

    p = sub.add_parser("sweep", help="evaluate a grid of scenarios (vectorized) and print or save it",
                       description="Any of --batch/--prompt/--gen/--tp/--pp/--ep/--dp takes a comma-separated list; "
                                   "--chip takes a comma-separated list of chips. One row per grid point; a point "
                                   "the estimate refuses (tp 3 of 32 heads, batch 3 at pp 2) is left out and named "
                                   "under the table.",
                       epilog="example:\n  llm-roofline sweep meta-llama/Llama-3.1-8B --chip h100,mi300x "
                              "--batch 1,8,64,256 --prompt 512,8192 --out sweep.csv",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_model_chip(p)
    p.add_argument("--batch", default="1,8,64", help="comma-separated batch sizes (default: %(default)s)")
    p.add_argument("--prompt", default="2048", help="comma-separated prompt lengths (default: %(default)s)")
    p.add_argument("--gen", default="256", help="comma-separated generation lengths (default: %(default)s)")
    _add_scenario(p, lists=True, layouts=LAYOUT_FLAGS)
    _add_format(p)
    p.add_argument("--out", help="also write the full grid as CSV to this file")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("serve", help="continuous batching under load: TTFT, TPOT, throughput at a concurrency or QPS",
                       description="Steady state of a continuous-batching engine (vLLM knobs) under a closed loop of "
                                   "--concurrency clients or Poisson arrivals at --qps; comma lists make a sweep.",
                       epilog="example:\n  llm-roofline serve meta-llama/Llama-3.1-70B --chip h100 --tp 4 --prompt 2048 "
                              "--gen 256 --qps 3",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_model_chip(p)
    p.add_argument("--prompt", default="2048", help="prompt tokens per request (default: %(default)s)")
    p.add_argument("--gen", default="256", help="generated tokens per request (default: %(default)s)")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--concurrency", help="clients in a closed loop (each sends when its previous request ends), as "
                      "a benchmark runs them: all start together and send 10 requests each, so the first round's "
                      "burst, a tenth of the requests, lifts the mean TTFT and can leave the p90 below it")
    load.add_argument("--qps", help="Poisson arrivals, requests per second")
    g = p.add_argument_group("engine")
    g.add_argument("--max-num-seqs", default=None,
                   help="running sequences at most, per attention group under --attention-dp (default: vLLM's for "
                        "the chip: 1024 on a device of >= 70 GiB but the A100, else 256)")
    g.add_argument("--max-num-batched-tokens", default=None,
                   help="tokens per step (default: vLLM's for the chip: 8192 on a device of >= 70 GiB but the "
                        "A100, else 2048)")
    g.add_argument("--scheduling", default="chunked", choices=["chunked", "prefill_first"],
                   help="chunked prefill beside decodes, or prompts alone first (default: %(default)s)")
    g.add_argument("--prefix-hit-rate", type=float, default=0.0, help="share of prompt tokens in the prefix cache")
    g.add_argument("--spec-k", type=int, default=0, help="speculative decoding: draft tokens per step (0: off)")
    g.add_argument("--spec-acceptance", type=float, default=0.0, help="speculative decoding: acceptance per token")
    g.add_argument("--spec-draft", default=None, help="speculative decoding: draft model (default: MTP heads)")
    _add_host(g)
    _add_scenario(p, layouts=LAYOUT_FLAGS)
    _add_format(p)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("plan", help="cheapest chip x tp x pp x ep x batch x replicas meeting TTFT/TPOT/load targets",
                       description="Search chip types, shardings and batch sizes (vectorized) for configurations that "
                                   "fit memory (--gpu-memory-utilization) and meet --ttft-s / --tpot-s; size data-parallel "
                                   "replicas for --qps or --output-tokens-per-s; rank by USD per 1M output tokens (or "
                                   "chips when a price is missing). Exit code 0 also when nothing is feasible: the "
                                   "output says why, with numbers (JSON/CSV: an empty list, the reason on stderr).",
                       epilog="examples:\n  llm-roofline plan meta-llama/Llama-3.1-70B --chips h100-sxm,h200,mi300x,tpu-v5e "
                              "--prompt 2048 --gen 256 --ttft-s 2 --tpot-s 0.05 --qps 5\n"
                              "  llm-roofline plan meta-llama/Llama-3.1-405B --chips h100 --prompt 2048 --gen 256 "
                              "--max-chips 4\n"
                              "  llm-roofline plan meta-llama/Llama-3.1-8B --chips h100 --prompt 8192 --gen 512 "
                              "--disaggregate --price h100-sxm=2.5",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="shipped model id (see `llm-roofline models`), a directory or a config.json path")
    p.add_argument("--chips", required=True, help="comma-separated chip names or aliases")
    p.add_argument("--allow-download", action="store_true",
                   help="fetch config.json from the Hugging Face Hub for an id that is not shipped")
    p.add_argument("--prompt", type=int, required=True, help="prompt tokens per request")
    p.add_argument("--gen", type=int, required=True, help="generated tokens per request (the first from prefill)")
    p.add_argument("--ttft-s", type=float, help="TTFT target in seconds (serving model default: 2)")
    p.add_argument("--tpot-s", type=float, help="mean TPOT target in seconds (serving model default: 0.05)")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--qps", type=float, help="load: requests per second (sizes data-parallel replicas)")
    load.add_argument("--output-tokens-per-s", type=float, help="load: output tokens per second (= qps x gen)")
    p.add_argument("--max-chips", type=int, default=64, help="most chips in total (default: %(default)s)")
    p.add_argument("--price", action="append", metavar="CHIP=USD",
                   help="USD per chip-hour, overriding the chip file (repeat or comma-separate)")
    p.add_argument("--max-batch", type=int, default=4096, help="largest batch searched (default: %(default)s)")
    p.add_argument("--rank-by", choices=["cost", "chips"], help="default: cost when every chip has a price")
    p.add_argument("--top", type=int, default=20, help="configurations listed, 0 = all (default: %(default)s)")
    p.add_argument("--static", action="store_true",
                   help="plan static batches (every request of a batch prefilled together, then decoded) instead of "
                        "the serving model; the default with --qps / --output-tokens-per-s is continuous batching "
                        "(chunked prefill, queueing), with default targets TTFT <= 2 s and TPOT <= 50 ms")
    p.add_argument("--ttft-percentile", choices=["mean", "p90"], default="mean",
                   help="which TTFT --ttft-s bounds, serving model only (default: %(default)s)")
    p.add_argument("--disaggregate", action="store_true",
                   help="add the prefill/decode disaggregation section (ratio, throughput vs co-located); plans "
                        "static batches, as --static (no default TTFT / TPOT targets)")
    p.add_argument("--decode-batch", type=int, help="decode batch for --disaggregate (default: the best plan's)")
    p.add_argument("--prefill-batch", type=int, help="prefill batch for --disaggregate (default: pp)")
    _add_host(p, where=", serving model only (static batches have none)")
    _add_scenario(p, lists=True, layouts=("attention_dp", "moe_dispatch"))
    p.set_defaults(tp=None, pp=None, ep=None, dp=None)  # search every sharding unless restricted
    _add_format(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("memory", help="weights, KV per sequence and max batch per context length",
                       description="Per-chip memory with the estimate's model: weights, KV cache and activations per "
                                   "sequence, and the largest batch that fits, over context lengths, tp and dtypes "
                                   "(--tp, --weight-dtype, --kv-dtype take comma-separated lists).",
                       epilog="example:\n  llm-roofline memory meta-llama/Llama-3.1-70B --chip h100 --context "
                              "8192,32768,131072 --tp 2,4,8 --kv-dtype bf16,fp8",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_model_chip(p)
    p.add_argument("--context", default="8192,32768,131072",
                   help="comma-separated context lengths (prompt + gen) (default: %(default)s)")
    p.add_argument("--gen", type=int, default=1, help="tokens of the context that are generated (default: %(default)s)")
    _add_scenario(p, lists=True)
    _add_format(p)
    p.set_defaults(func=cmd_memory)

    p = sub.add_parser("report", help="write a report folder: report.md, ops.csv, summary.json and PNG charts",
                       description="Estimate one scenario on one or more chips (--chip takes a comma-separated list) "
                                   "and write report.md (headline, phases, top ops, memory, thresholds, assumptions, "
                                   "charts), ops.csv and summary.json (raw SI values + metadata) and the roofline, "
                                   "frontier, breakdown and memory charts into --out.",
                       epilog="example:\n  llm-roofline report meta-llama/Llama-3.1-8B --chip h100,mi300x --batch 8 "
                              "--out reports/llama8b",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_model_chip(p)
    _add_report_scenario(p)
    p.add_argument("--out", required=True, help="folder to write into (created if missing)")
    p.add_argument("--title", default=None, help="report title (default: MODEL on CHIPS)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("plot", help="draw one chart (roofline, frontier, breakdown, memory) to a PNG",
                       description="One chart for a scenario on one or more chips (--chip takes a comma-separated "
                                   "list; several chips are drawn side by side).",
                       epilog="example:\n  llm-roofline plot roofline meta-llama/Llama-3.1-8B --chip h100 --batch 8 "
                              "--out roofline.png",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["roofline", "frontier", "breakdown", "memory", "serving"],
                   help="which chart (serving: TTFT, TPOT and throughput of continuous batching at 1-512 clients, "
                        "the knee marked; first chip)")
    _add_model_chip(p)
    _add_report_scenario(p)
    p.add_argument("--out", required=True, help="image file to write ('.png' is appended to a name without a "
                                                "suffix; .svg and .pdf work too)")
    p.add_argument("--dpi", type=int, default=110,
                   help=f"image resolution, {DPI_MIN}..{BOUNDS['dpi'].max_value} (default: %(default)s)")
    _add_host(p, where=", serving chart only")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("calibrate", help="fit kernel efficiency to measured timings; print the error table",
                       description="Fit the calibrated efficiency model (per op family: fraction of peak FLOP/s "
                                   "and HBM bandwidth saturating in tokens, per-kernel overhead; collectives: "
                                   "latency + link efficiency) to a measured-timings CSV, and print the median and "
                                   "p90 absolute % error of the ideal roofline, the current model and the new fit. "
                                   "CSV columns: family, op, model, gpu, dtype, tp, m, k, n, elems, flops, bytes, "
                                   "kernels, nodes, measured_s; optional shape columns sharpen the fit: attention "
                                   "keys, head_dim, q_per_kv, kv_bits, window, kv_len; fused MoE walked, "
                                   "token_elems, routed, experts, ep; working_set (the bytes a timed loop "
                                   "touches: within the chip's L2 its replays read L2) (each explained in "
                                   "llm_roofline/calibrate/measurements.py). "
                                   "--convert-vidur turns Vidur kernel profiles (microsoft/vidur, "
                                   "data/profiling: compute/ and network/) into such a CSV instead of fitting. "
                                   "--write stores a copy of the chip file with the fitted tables in the user chip "
                                   "directory: $LLM_ROOFLINE_CHIPS if set, else ~/.config/llm-roofline/chips "
                                   "($XDG_CONFIG_HOME; %APPDATA%/llm-roofline/chips on Windows); the families "
                                   "the rows do not measure keep the fits the chip file has; the installed "
                                   "chip files are never changed.",
                       epilog="examples (from a clone of the repository):\n"
                              "  llm-roofline calibrate benchmarks/data/measured_h100_sample.csv --chip h100-sxm\n"
                              "  llm-roofline calibrate --convert-vidur vidur/data/profiling vidur.csv\n"
                              "  llm-roofline calibrate vidur.csv --chip a100-80gb --write\n"
                              "  llm-roofline calibrate aic-vllm/h200_sxm --chip h200    # AIConfigurator vLLM tables "
                              "(csv.gz: gemm_perf, context_/generation_attention_perf, custom_allreduce_perf)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("measured", nargs="?", help="measured-timings CSV, or AIConfigurator vLLM tables: one "
                                               "<table>.csv.gz, a <system>/ folder of them, or their parent")
    p.add_argument("--chip", help="chip to fit (name, alias or .toml); rows whose gpu names it are used")
    p.add_argument("--gpu", default=None, help="use the rows with this gpu value instead (e.g. a100)")
    p.add_argument("--source", default=None, help="text for the fitted_on notes (default: from the CSV)")
    p.add_argument("--families", default=None,
                   help="comma-separated op families to fit (e.g. norm,activation; default: every family the rows "
                        "hold); the chip file's other fits are kept")
    p.add_argument("--write", action="store_true",
                   help="write the chip file with the fitted [efficiency.*] tables (its other fits and every "
                        "other byte kept) to the user chip directory as <chip>.toml; checked before the fit")
    p.add_argument("--convert-vidur", nargs=2, metavar=("VIDUR_DIR", "OUT_CSV"), default=None,
                   help="convert Vidur profiles (a directory with compute/ and network/) to a measured CSV; no fit")
    _add_format(p)
    p.set_defaults(func=cmd_calibrate)
    return parser


def _one_line(text) -> str:
    return " ".join(str(text).split())


PROGRESS_TEXT = {"plan": "searching chips, shardings and batch sizes", "report": "estimating and drawing the report",
                 "calibrate": "fitting the efficiency model", "sweep": "evaluating the grid", "plot": "drawing",
                 "serve": "solving the serving model"}


class Progress:
    """'llm-roofline: plan: searching ... 3 s' on stderr once a command has run delay_s (2 s), redrawn every
    second and erased when it ends; only when the stream is a terminal (never into a pipe, a file or a test)."""

    def __init__(self, what: str, stream=None, delay_s: float = 2.0, every_s: float = 1.0):
        self.what, self.stream, self.delay_s, self.every_s = what, stream or sys.stderr, delay_s, every_s
        self._stop, self._thread, self._drawn = None, None, False

    def __enter__(self):
        import threading

        if getattr(self.stream, "isatty", lambda: False)():
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        import time

        t0 = time.monotonic()
        if self._stop.wait(self.delay_s):
            return
        while True:
            self.stream.write(f"\r\033[Kllm-roofline: {self.what} ... {time.monotonic() - t0:.0f} s")
            self.stream.flush()
            self._drawn = True
            if self._stop.wait(self.every_s):
                return

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self._drawn:  # erase the line: what the command prints comes next
                self.stream.write("\r\033[K")
                self.stream.flush()


def main(argv: list[str] | None = None) -> int:
    """Run one command. Exit codes (see EPILOG): 0 success, 2 a user mistake (one line), 1 an internal error
    (one line; LLM_ROOFLINE_TRACEBACK=1 prints the traceback), 130 interrupted."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        with Progress(f"{args.command}: {PROGRESS_TEXT.get(args.command, 'working')}"):
            out = args.func(args)
        out, note = out if isinstance(out, tuple) else (out, "")
        if note:
            print(note, file=sys.stderr)
        if out:
            print(out)
    except RooflineError as e:
        print(f"llm-roofline: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `| head`
        return 0
    except (OSError, RecursionError, MemoryError, UnicodeError) as e:  # the system said no: not a bug of ours
        print(f"llm-roofline: error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("llm-roofline: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug: one line, and the traceback on request
        if os.environ.get("LLM_ROOFLINE_TRACEBACK"):
            raise
        print(f"llm-roofline: internal error: {type(e).__name__}: {_one_line(e)} (please report it; "
              "LLM_ROOFLINE_TRACEBACK=1 shows the traceback)", file=sys.stderr)
        return 1
    return 0
