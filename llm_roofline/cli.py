"""Command line: `llm-roofline <command> ...`. The only module that prints.

Every user mistake (a ValueError subclass from the library) becomes one line on stderr and exit code 2.
Each subcommand is one `cmd_<name>(args) -> str` function plus its parser in `_build_parser`.
"""

from __future__ import annotations

import argparse
import sys

from .errors import RooflineError
from .report.table import FORMATS, render
from .units import eng, fmt_seconds, sig3

EPILOG = """examples:
  llm-roofline chips
  llm-roofline models
  llm-roofline estimate meta-llama/Llama-3.1-8B --chip h100-sxm --batch 8 --prompt 2048 --gen 256

Units: SI throughout (1 GB = 1e9 bytes); FLOP = 2 x multiply-add; chip peaks are dense (no sparsity)."""


# ------------------------------------------------------------------------------------------ chips
def cmd_chips(args) -> str:
    from .hardware import list_chips

    rows = []
    for c in list_chips():
        rows.append({
            "name": c.name,
            "aliases": ",".join(c.aliases),
            "bf16_flops_per_s": c.peak_flops_per_s("bf16") if "bf16" in c.dense_flops_per_s else c.peak_flops_per_s("fp16"),
            "hbm_bytes": c.hbm_bytes,
            "hbm_bytes_per_s": c.hbm_bytes_per_s,
            "critical_intensity_bf16": c.critical_intensity("bf16" if "bf16" in c.dense_flops_per_s else "fp16"),
            "scaleup_kind": c.scaleup.kind,
            "scaleup_bytes_per_s": c.scaleup.bytes_per_s,
            "price_usd_per_hour": c.price_usd_per_hour,
        })
    display = [
        ("chip", "name", None),
        ("aliases", "aliases", None),
        ("bf16 TFLOP/s", "bf16_flops_per_s", lambda v: sig3(v / 1e12)),
        ("HBM GB", "hbm_bytes", lambda v: sig3(v / 1e9)),
        ("HBM TB/s", "hbm_bytes_per_s", lambda v: sig3(v / 1e12)),
        ("critical FLOP/B", "critical_intensity_bf16", sig3),
        ("scale-up", "scaleup_kind", None),
        ("scale-up GB/s", "scaleup_bytes_per_s", lambda v: sig3(v / 1e9)),
        ("$/chip-h", "price_usd_per_hour", lambda v: "—" if v is None else f"{v:.2f}"),
    ]
    out = render(rows, args.format, display)
    if args.format in ("table", "markdown"):
        out += ("\n\nPeaks are dense (no 2:4 sparsity). critical FLOP/B = bf16 peak / HBM bandwidth: an op with a "
                "lower arithmetic intensity is memory-bound. scale-up GB/s is one chip's egress, one direction.")
    return out


# ------------------------------------------------------------------------------------------ models
def cmd_models(args) -> str:
    from .model.hf import list_models, load_model

    rows = []
    for ident in list_models():
        m = load_model(ident)
        heads = sorted({g.attention.n_heads for g in m.layer_groups})
        kv_heads = sorted({g.attention.n_kv_heads for g in m.layer_groups})
        rows.append({
            "id": ident,
            "params_total": m.params_total,
            "params_active": m.params_active,
            "layers": m.n_layers,
            "d_model": m.d_model,
            "heads": heads[0] if len(heads) == 1 else "/".join(map(str, heads)),
            "kv_heads": kv_heads[0] if len(kv_heads) == 1 else "/".join(map(str, kv_heads)),
            "attention": m.attention_kind,
            "max_context": m.max_context,
            "kv_bytes_per_token_bf16": m.kv_bytes_per_token("bf16"),
        })
    display = [
        ("model", "id", None),
        ("params", "params_total", eng),
        ("active", "params_active", eng),
        ("layers", "layers", None),
        ("d_model", "d_model", None),
        ("heads", "heads", None),
        ("kv heads", "kv_heads", None),
        ("attention", "attention", None),
        ("max context", "max_context", lambda v: "—" if v is None else str(v)),
        ("KV/token bf16", "kv_bytes_per_token_bf16", lambda v: eng(v, "B")),
    ]
    out = render(rows, args.format, display)
    if args.format in ("table", "markdown"):
        out += ("\n\nparams counts every expert; active counts the top-k routed experts a token uses (embeddings "
                "included). KV/token is summed over layers, before any sliding-window cap.")
    return out


# ------------------------------------------------------------------------------------------ estimate
def _int_list(text: str) -> list[int]:
    try:
        vals = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise RooflineError(f"expected comma-separated integers, got {text!r}") from None
    if not vals:
        raise RooflineError(f"expected at least one integer, got {text!r}")
    return vals


def _scenario_kwargs(args) -> dict:
    return dict(tp=args.tp, pp=args.pp, ep=args.ep, dp=args.dp, weight_dtype=args.weight_dtype,
                act_dtype=args.act_dtype, kv_dtype=args.kv_dtype, efficiency=args.efficiency,
                attention=args.attention, sequence_parallel=args.sequence_parallel)


def _load_model_arg(args):
    from .model.hf import load_model

    return load_model(args.model, allow_download=getattr(args, "allow_download", False))


def cmd_estimate(args) -> str:
    from .estimate import estimate
    from .report.text import estimate_text

    est = estimate(_load_model_arg(args), args.chip, batch=args.batch, prompt_len=args.prompt, gen_len=args.gen,
                   **_scenario_kwargs(args))
    if args.format == "json":
        import json

        return json.dumps(est.to_dict(), indent=2)
    if args.format == "csv":
        return est.ops.to_csv(index=False).rstrip("\n")
    return estimate_text(est, markdown=args.format == "markdown", explain=args.explain)


def cmd_sweep(args) -> str:
    from .estimate import sweep

    df = sweep(_load_model_arg(args), args.chip.split(","), batch=_int_list(args.batch),
               prompt_len=_int_list(args.prompt), gen_len=_int_list(args.gen), tp=_int_list(args.tp),
               pp=_int_list(args.pp), ep=_int_list(args.ep), dp=_int_list(args.dp), weight_dtype=args.weight_dtype,
               act_dtype=args.act_dtype, kv_dtype=args.kv_dtype, efficiency=args.efficiency, attention=args.attention,
               sequence_parallel=args.sequence_parallel)
    if args.out:
        df.to_csv(args.out, index=False)
    rows = df.to_dict(orient="records")
    display = [("chip", "chip", None), ("tp", "tp", None), ("batch", "batch", None), ("prompt", "prompt_len", None),
               ("gen", "gen_len", None), ("TTFT", "ttft_s", fmt_seconds), ("TPOT", "tpot_s", fmt_seconds),
               ("e2e", "e2e_s", fmt_seconds), ("tok/s", "throughput_tokens_per_s", sig3),
               ("tok/s/chip", "throughput_tokens_per_s_per_chip", sig3),
               ("GB/chip", "per_chip_bytes", lambda v: sig3(v / 1e9)), ("fits", "fits", lambda v: "yes" if v else "NO")]
    out = render(rows, args.format, display)
    if args.out:
        out += f"\n\nwrote {len(df)} rows to {args.out}"
    return out


# ------------------------------------------------------------------------------------------ plan
def _prices_arg(items) -> dict:
    out = {}
    for item in items or []:
        for part in str(item).split(","):
            name, sep, usd = part.partition("=")
            try:
                out[name.strip()] = float(usd)
            except ValueError:
                raise RooflineError(f"--price expects CHIP=USD per chip-hour, got {part!r}") from None
            if not sep or not name.strip():
                raise RooflineError(f"--price expects CHIP=USD per chip-hour, got {part!r}")
    return out


def _opt_list(text):
    return None if text is None else _int_list(text)


def _usd(v):
    import math

    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3g}"


PLAN_DISPLAY = [
    ("chip", "chip", None), ("tp", "tp", None), ("pp", "pp", None), ("ep", "ep", None), ("batch", "batch", None),
    ("replicas", "replicas", None), ("chips", "chips_total", None), ("TTFT", "ttft_s", fmt_seconds),
    ("TPOT", "tpot_s", fmt_seconds), ("out tok/s", "output_tokens_per_s", sig3),
    ("GB/chip", "per_chip_bytes", lambda v: sig3(v / 1e9)), ("$/M out", "usd_per_million_output_tokens", _usd),
    ("$/M in", "usd_per_million_input_tokens", _usd), ("binding", "binding_constraint", None),
]


def cmd_plan(args) -> str:
    """Exit code 0 also when nothing is feasible: that is an answer (printed with its reasons), not an error."""
    from .plan import JSON_KEYS, plan

    if args.dp is not None:
        raise RooflineError("plan sizes data-parallel replicas itself from --qps / --output-tokens-per-s; drop --dp")
    p = plan(_load_model_arg(args), [c for c in args.chips.split(",") if c.strip()], prompt_len=args.prompt,
             gen_len=args.gen, ttft_s=args.ttft_s, tpot_s=args.tpot_s, qps=args.qps,
             output_tokens_per_s=args.output_tokens_per_s, max_chips=args.max_chips, prices=_prices_arg(args.price),
             weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype, act_dtype=args.act_dtype, reserve=args.reserve,
             efficiency=args.efficiency, attention=args.attention, sequence_parallel=args.sequence_parallel,
             tp=_opt_list(args.tp), pp=_opt_list(args.pp), ep=_opt_list(args.ep), max_batch=args.max_batch,
             rank_by=args.rank_by, disaggregate=args.disaggregate, decode_batch=args.decode_batch,
             prefill_batch=args.prefill_batch)
    top = p.configs if not args.top else p.configs.head(args.top)
    rows = [{k: r[k] for k in JSON_KEYS} for r in _plan_records(top)]
    if args.format in ("json", "csv"):
        if not rows:
            print(p.explanation, file=sys.stderr)
        return render(rows, args.format, None) if rows else ("[]" if args.format == "json" else "")
    md = args.format == "markdown"
    out = [p.explanation]
    if len(p.best_per_chip):
        out += ["", "Best configuration per chip:", render(_plan_records(p.best_per_chip), args.format, PLAN_DISPLAY)]
        out += ["", f"Top {len(rows)} of {len(p.configs)} feasible configurations (best first):",
                render(rows, args.format, PLAN_DISPLAY)]
        what = "USD per 1M output tokens" if p.frontier_by.startswith("usd") else "total chips"
        out += ["", f"Pareto frontier ({what} vs TPOT):", render(_plan_records(p.frontier), args.format, PLAN_DISPLAY)]
    if p.disaggregation:
        out += ["", "Prefill/decode disaggregation (prefill chips per decode chip at which neither side idles):",
                render([d.to_dict() for d in p.disaggregation.values()], args.format, DISAGG_DISPLAY)]
    out += ["", "Notes:"] + [f"{'-' if md else ' -'} {n}" for n in p.notes]
    out += [f"{'-' if md else ' -'} price {k}: " + (f"${v.usd_per_hour:.4g}/chip-hour ({v.source})" if v.usd_per_hour
                                                     else f"— ({v.source})") for k, v in p.prices.items()]
    return "\n".join(out)


DISAGG_DISPLAY = [
    ("chip", "chip", None), ("prefill tp", "prefill_tp", None), ("pp", "prefill_pp", None),
    ("prefill batch", "prefill_batch", None), ("prefill", "prefill_s", fmt_seconds),
    ("prefill req/s/chip", "prefill_requests_per_s_per_chip", sig3), ("decode tp", "decode_tp", None),
    ("pp", "decode_pp", None), ("decode batch", "decode_batch", None), ("TPOT", "decode_tpot_s", fmt_seconds),
    ("decode req/s/chip", "decode_requests_per_s_per_chip", sig3), ("prefill:decode chips", "chip_ratio", sig3),
    ("disagg tok/s/chip", "disaggregated_output_tokens_per_s_per_chip", sig3),
    ("co-located tok/s/chip", "colocated_output_tokens_per_s_per_chip", sig3),
    ("co-located TPOT", "colocated_tpot_s", fmt_seconds), ("speedup", "speedup", sig3),
]


def _plan_records(df) -> list[dict]:
    from .units import records

    return records(df)


# ------------------------------------------------------------------------------------------ memory
def cmd_memory(args) -> str:
    from .memory import max_batch

    spec = _load_model_arg(args)
    split = lambda v: None if v is None else [x.strip() for x in str(v).split(",") if x.strip()]  # noqa: E731
    df = max_batch(spec, args.chip, _int_list(args.context), tp=_int_list(args.tp), pp=_int_list(args.pp),
                   ep=_int_list(args.ep), weight_dtype=split(args.weight_dtype) or [None],
                   kv_dtype=split(args.kv_dtype) or [None], act_dtype=args.act_dtype, reserve=args.reserve,
                   gen_len=args.gen, attention=args.attention, sequence_parallel=args.sequence_parallel)
    rows = df.to_dict(orient="records")
    if args.format in ("json", "csv"):
        return render(rows, args.format, None)
    gb = lambda v: "—" if v is None or v != v else sig3(v / 1e9)  # noqa: E731
    display = [("tp", "tp", None), ("pp", "pp", None), ("weights", "weight_dtype", None), ("KV", "kv_dtype", None),
               ("context", "context_len", None), ("weights GB/chip", "weight_bytes_per_chip", gb),
               ("KV GB/seq/chip", "kv_bytes_per_sequence_per_chip", gb),
               ("act workspace GB", "activation_workspace_bytes_per_chip", gb), ("free GB", "free_bytes", gb),
               ("max batch", "max_batch", None), ("note", "error", lambda v: v or "")]
    r0 = rows[0]
    head = (f"{spec.name} on {r0['chip']}: {sig3(r0['capacity_bytes'] / 1e9)} GB HBM per chip, "
            f"{r0['reserve']:.0%} reserved -> {sig3(r0['usable_bytes'] / 1e9)} GB usable.")
    from .memory import PREFILL_CHUNK_TOKENS

    foot = ("max batch = floor((usable - weights - activation workspace) / KV per sequence / pp) x pp, with the "
            f"estimate's memory model: KV at `context` tokens, activations of one {PREFILL_CHUNK_TOKENS}-token "
            "prefill chunk (`llm-roofline estimate` reports the same max batch with --reserve 0).")
    return "\n".join([head, render(rows, args.format, display), "", foot])


# ------------------------------------------------------------------------------------------ parser
# ------------------------------------------------------------------------------------------ report / plot
def _chip_list(text: str) -> list[str]:
    chips = [c.strip() for c in str(text).split(",") if c.strip()]
    if not chips:
        raise RooflineError(f"expected at least one chip, got {text!r}")
    return chips


def _command_line(args, name: str, extra: str = "") -> str:
    """The command as a user would type it (recorded in the report for provenance)."""
    parts = ["llm-roofline", name] + ([extra] if extra else []) + [args.model, "--chip", args.chip,
                                                                   "--batch", str(args.batch), "--prompt", str(args.prompt),
                                                                   "--gen", str(args.gen)]
    for flag in ("tp", "pp", "ep", "dp"):
        if getattr(args, flag) != 1:
            parts += [f"--{flag}", str(getattr(args, flag))]
    for flag in ("weight_dtype", "kv_dtype"):
        if getattr(args, flag):
            parts += [f"--{flag.replace('_', '-')}", getattr(args, flag)]
    for flag, default in (("act_dtype", "bf16"), ("efficiency", "calibrated"), ("attention", "fused")):
        if getattr(args, flag) != default:
            parts += [f"--{flag.replace('_', '-')}", getattr(args, flag)]
    if args.sequence_parallel:
        parts.append("--sequence-parallel")
    return " ".join(parts + ["--out", str(args.out)])


def cmd_report(args) -> str:
    from .report.export import write_report

    chips = _chip_list(args.chip)
    try:
        files = write_report(_load_model_arg(args), chips, args.out, batch=args.batch, prompt_len=args.prompt,
                             gen_len=args.gen, title=args.title, command=_command_line(args, "report"),
                             frontier_prompts=_int_list(args.frontier_prompts) if args.frontier_prompts else None,
                             **_scenario_kwargs(args))
    except OSError as e:
        raise RooflineError(f"cannot write the report into {args.out}: {e}") from None
    out = [f"wrote {len(files)} files to {args.out}:"] + [f"  {p}" for p in files.values()]
    return "\n".join(out)


def cmd_plot(args) -> str:
    from .estimate import estimate
    from .report import plot

    chips = _chip_list(args.chip)
    kw = _scenario_kwargs(args)
    model = _load_model_arg(args)
    if args.kind in ("roofline", "breakdown"):
        ests = [estimate(model, c, batch=args.batch, prompt_len=args.prompt, gen_len=args.gen, **kw) for c in chips]
        res = (plot.plot_roofline if args.kind == "roofline" else plot.plot_breakdown)(ests)
    elif args.kind == "frontier":
        res = plot.plot_frontier(model, chips, prompt_len=args.prompt, gen_len=args.gen,
                                 prompt_lens=_int_list(args.frontier_prompts) if args.frontier_prompts else None, **kw)
    else:
        res = plot.plot_memory(model, chips, prompt_len=args.prompt, gen_len=args.gen, **kw)
    try:
        path = res.save(args.out, dpi=args.dpi)
    except (OSError, ValueError) as e:
        raise RooflineError(f"cannot write {args.out}: {e}") from None
    finally:
        res.close()
    return f"wrote {path}"


def _add_report_scenario(p):
    p.add_argument("--batch", type=int, default=1, help="sequences in flight per replica (default: %(default)s)")
    p.add_argument("--prompt", type=int, default=2048, help="prompt tokens per sequence (default: %(default)s)")
    p.add_argument("--gen", type=int, default=256,
                   help="generated tokens per sequence; the first comes from prefill (default: %(default)s)")
    p.add_argument("--frontier-prompts", default=None,
                   help="comma-separated prompt lengths for the frontier curves (default: 512,2048,8192,32768 "
                        "and --prompt, within the model's context)")
    _add_scenario(p)


def cmd_calibrate(args) -> str:
    from .calibrate import calibrate, convert_vidur
    from .report.calibration import calibration_report, conversion_summary

    if args.convert_vidur:
        src, out = args.convert_vidur
        return conversion_summary(convert_vidur(src, out), out)
    if not args.measured or not args.chip:
        raise RooflineError("calibrate needs a measured CSV and --chip (or --convert-vidur VIDUR_DIR OUT.csv)")
    c = calibrate(args.measured, args.chip, write=args.write, gpu=args.gpu, source=args.source)
    return calibration_report(c, args.format)


def _add_format(p, default="table"):
    p.add_argument("--format", choices=FORMATS, default=default, help="output format (default: %(default)s)")


def _add_model_chip(p):
    p.add_argument("model", help="shipped model id (see `llm-roofline models`), a directory or a config.json path")
    p.add_argument("--chip", required=True, help="chip name or alias (see `llm-roofline chips`) or a chip .toml file")
    p.add_argument("--allow-download", action="store_true",
                   help="fetch config.json from the Hugging Face Hub for an id that is not shipped")


def _add_scenario(p, lists=False):
    kind = str if lists else int
    g = p.add_argument_group("sharding and precision")
    for flag, what in (("tp", "tensor-parallel degree"), ("pp", "pipeline stages"),
                       ("ep", "expert-parallel degree (divides tp)"), ("dp", "data-parallel replicas")):
        g.add_argument(f"--{flag}", type=kind, default="1" if lists else 1, help=f"{what} (default: 1)")
    g.add_argument("--sequence-parallel", action="store_true",
                   help="reduce-scatter + all-gather instead of all-reduce; norms on T/tp tokens")
    g.add_argument("--weight-dtype", default=None,
                   help="weight storage: bf16, fp16, fp8, int8, int4, fp4 (default: the checkpoint's own)")
    g.add_argument("--act-dtype", default="bf16", help="activation and compute dtype (default: %(default)s)")
    g.add_argument("--kv-dtype", default=None, help="KV-cache dtype (default: the activation dtype)")
    g.add_argument("--efficiency", default="calibrated", choices=["ideal", "calibrated"],
                   help="calibrated: kernel efficiency fitted to measured A100/H100 timings (family defaults "
                        "elsewhere), with the ideal bound printed beside it; ideal: the pure roofline "
                        "(default: %(default)s)")
    g.add_argument("--attention", default="fused", choices=["fused", "unfused"],
                   help="fused (FlashAttention) or unfused (score matrix through HBM) (default: %(default)s)")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llm-roofline",
        description="Estimate LLM inference cost (prefill/decode time, memory, chips) with the roofline model.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
    _add_scenario(p)
    _add_format(p)
    p.add_argument("--explain", action="store_true", help="print every op's formula with its numbers")
    p.set_defaults(func=cmd_estimate)

    p = sub.add_parser("sweep", help="evaluate a grid of scenarios (vectorized) and print or save it",
                       description="Any of --batch/--prompt/--gen/--tp/--pp/--ep/--dp takes a comma-separated list; "
                                   "--chip takes a comma-separated list of chips. One row per grid point.",
                       epilog="example:\n  llm-roofline sweep meta-llama/Llama-3.1-8B --chip h100,mi300x "
                              "--batch 1,8,64,256 --prompt 512,8192 --out sweep.csv",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_model_chip(p)
    p.add_argument("--batch", default="1,8,64", help="comma-separated batch sizes (default: %(default)s)")
    p.add_argument("--prompt", default="2048", help="comma-separated prompt lengths (default: %(default)s)")
    p.add_argument("--gen", default="256", help="comma-separated generation lengths (default: %(default)s)")
    _add_scenario(p, lists=True)
    _add_format(p)
    p.add_argument("--out", help="also write the full grid as CSV to this file")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("plan", help="cheapest chip x tp x pp x ep x batch x replicas meeting TTFT/TPOT/load targets",
                       description="Search chip types, shardings and batch sizes (vectorized) for configurations that "
                                   "fit memory (with --reserve kept free) and meet --ttft-s / --tpot-s; size data-parallel "
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
    p.add_argument("--ttft-s", type=float, help="TTFT target in seconds")
    p.add_argument("--tpot-s", type=float, help="mean TPOT target in seconds")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--qps", type=float, help="load: requests per second (sizes data-parallel replicas)")
    load.add_argument("--output-tokens-per-s", type=float, help="load: output tokens per second (= qps x gen)")
    p.add_argument("--max-chips", type=int, default=64, help="most chips in total (default: %(default)s)")
    p.add_argument("--price", action="append", metavar="CHIP=USD",
                   help="USD per chip-hour, overriding the chip file (repeat or comma-separate)")
    p.add_argument("--reserve", type=float, default=0.1,
                   help="fraction of HBM kept free (default: %(default)s)")
    p.add_argument("--max-batch", type=int, default=4096, help="largest batch searched (default: %(default)s)")
    p.add_argument("--rank-by", choices=["cost", "chips"], help="default: cost when every chip has a price")
    p.add_argument("--top", type=int, default=20, help="configurations listed, 0 = all (default: %(default)s)")
    p.add_argument("--disaggregate", action="store_true",
                   help="add the prefill/decode disaggregation section (ratio, throughput vs co-located)")
    p.add_argument("--decode-batch", type=int, help="decode batch for --disaggregate (default: the best plan's)")
    p.add_argument("--prefill-batch", type=int, help="prefill batch for --disaggregate (default: pp)")
    _add_scenario(p, lists=True)
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
    p.add_argument("--reserve", type=float, default=0.0, help="fraction of HBM kept free (default: %(default)s)")
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
    p.add_argument("kind", choices=["roofline", "frontier", "breakdown", "memory"], help="which chart")
    _add_model_chip(p)
    _add_report_scenario(p)
    p.add_argument("--out", required=True, help="PNG file to write")
    p.add_argument("--dpi", type=int, default=110, help="image resolution (default: %(default)s)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("calibrate", help="fit kernel efficiency to measured timings; print the error table",
                       description="Fit the calibrated efficiency model (per op family: fraction of peak FLOP/s "
                                   "and HBM bandwidth saturating in tokens, per-kernel overhead; collectives: "
                                   "latency + link efficiency) to a measured-timings CSV, and print the median and "
                                   "p90 absolute % error of the ideal roofline, the current model and the new fit. "
                                   "CSV columns: family, op, model, gpu, dtype, tp, m, k, n, elems, flops, bytes, "
                                   "kernels, nodes, measured_s (see llm_roofline/calibrate/measurements.py). "
                                   "--convert-vidur turns Vidur kernel profiles (microsoft/vidur, "
                                   "data/profiling: compute/ and network/) into such a CSV instead of fitting. "
                                   "--write stores a copy of the chip file with the fitted tables in the user chip "
                                   "directory: $LLM_ROOFLINE_CHIPS if set, else ~/.config/llm-roofline/chips "
                                   "($XDG_CONFIG_HOME; %APPDATA%/llm-roofline/chips on Windows); the installed "
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
    p.add_argument("--write", action="store_true",
                   help="write the chip file with the fitted [efficiency.*] tables (the rest byte-identical) to "
                        "the user chip directory as <chip>.toml")
    p.add_argument("--convert-vidur", nargs=2, metavar=("VIDUR_DIR", "OUT_CSV"), default=None,
                   help="convert Vidur profiles (a directory with compute/ and network/) to a measured CSV; no fit")
    _add_format(p)
    p.set_defaults(func=cmd_calibrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        out = args.func(args)
    except RooflineError as e:
        print(f"llm-roofline: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `| head`
        return 0
    if out:
        print(out)
    return 0
