"""Command line: `llm-roofline <command> ...`. The only module that prints.

Every user mistake (a ValueError subclass from the library) becomes one line on stderr and exit code 2.
Each subcommand is one `cmd_<name>(args) -> str` function plus its parser in `_build_parser`.
"""

from __future__ import annotations

import argparse
import sys

from .errors import RooflineError
from .report.table import FORMATS, render
from .units import eng, sig3

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


# ------------------------------------------------------------------------------------------ parser
def _add_format(p, default="table"):
    p.add_argument("--format", choices=FORMATS, default=default, help="output format (default: %(default)s)")


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
