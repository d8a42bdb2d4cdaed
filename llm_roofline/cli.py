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


# ------------------------------------------------------------------------------------------ parser
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
    g.add_argument("--efficiency", default="ideal", choices=["ideal", "calibrated"],
                   help="ideal roofline or calibrated kernel efficiency (default: %(default)s)")
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
