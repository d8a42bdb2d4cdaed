"""The curated example reports in reports/ (one folder each) and reports/README.md:

    regenerate(Path("reports"))                          # library: returns the paths it wrote
    python -m llm_roofline.report.examples [--out reports] [--only NAME ...]   # --out relative to the caller's cwd
    python benchmarks/regenerate_reports.py [--only NAME ...]                  # maintainers: the repo's reports/, prints

Every number in them comes from this package at the version recorded in each summary.json; rerun after
changing the estimator and review the diff. Nothing here prints (only cli.py and maintainer scripts do), and
nothing writes next to the installed package: the output folder is always the caller's.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..files import ensure_dir, write_text
from ..units import eng, fmt_seconds, sig3

SCRIPT = "python -m llm_roofline.report.examples"


@dataclass
class Example:
    name: str
    title: str
    model: str
    chips: list[str]
    scenario: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    why: str = ""


def _v5e_note() -> list[str]:
    """The v5e decision, with the numbers of the alternative computed live (not pasted)."""
    from .build import chip_estimates

    e, = chip_estimates("meta-llama/Llama-3.1-8B", ["tpu-v5e"], batch=8, prompt_len=2048, gen_len=256, tp=2)
    return [
        "**Why TPU v5e is shown at tp = 1 although it does not fit.** The comparison is one chip against one chip at "
        "the same scenario, so the times show what each chip allows (v5e: 197 TFLOP/s, 819 GB/s). "
        "Llama-3.1-8B's bf16 weights alone are 16.1 GB and a v5e has 16 GB of HBM, so the report flags it: "
        "the v5e row is the time of a chip that would need more memory.",
        f"To serve it for real, split it over two v5e chips (tp = 2, {sig3(e.memory.per_chip_bytes / 1e9)} GB per "
        f"chip, {'fits' if e.memory.fits else 'does not fit'}): TTFT {fmt_seconds(e.ttft_s)}, TPOT "
        f"{fmt_seconds(e.tpot_s)}, {sig3(e.throughput_tokens_per_s_per_chip)} tok/s per chip "
        f"(`llm-roofline estimate meta-llama/Llama-3.1-8B --chip tpu-v5e --batch 8 --tp 2`); or store the weights "
        "in int8 (`--weight-dtype int8`).",
    ]


def examples() -> list[Example]:
    return [
        Example("llama3.1-8b_h100-v5e-mi300x", "Llama-3.1-8B: H100 SXM vs TPU v5e vs MI300X (one chip each)",
                "meta-llama/Llama-3.1-8B", ["h100-sxm", "tpu-v5e", "mi300x"],
                dict(batch=8, prompt_len=2048, gen_len=256), notes=[], why="three vendors, one chip each; v5e "
                "does not fit at tp = 1 (explained in the report)"),
        Example("llama3.1-70b_h100-tp4", "Llama-3.1-70B on 4× H100 SXM (tensor parallel)",
                "meta-llama/Llama-3.1-70B", ["h100-sxm"], dict(batch=16, prompt_len=2048, gen_len=256, tp=4),
                notes=["70B in bf16 is 141 GB of weights: four H100s hold 35 GB each, leaving room for the KV "
                       "cache. Every layer pays two all-reduces over NVLink (after o_proj and after the MLP down "
                       "projection); the breakdown chart shows their share."],
                why="tensor parallelism and its all-reduce cost"),
        Example("mixtral-8x7b_h100-tp2", "Mixtral-8x7B on 2× H100 SXM (tp = 2)",
                "mistralai/Mixtral-8x7B-v0.1", ["h100-sxm"], dict(batch=16, prompt_len=2048, gen_len=256, tp=2),
                notes=["Mixtral's 46.7 B parameters are 93 GB in bf16, more than one H100 holds, so the experts "
                       "are split over two chips (tp = 2). All 8 experts stay resident, but a token uses 2: decode "
                       "reads the weights of the experts the batch actually routes to."],
                why="mixture of experts: resident vs active weights"),
        Example("deepseek-v3_h200-tp8-ep8", "DeepSeek-V3 on 8× H200 (tp = 8, ep = 8)",
                "deepseek-ai/DeepSeek-V3", ["h200"], dict(batch=32, prompt_len=2048, gen_len=256, tp=8, ep=8),
                notes=["DeepSeek-V3 (671 B parameters, 37 B active) in its native fp8 checkpoint format: 256 routed "
                       "experts spread over 8 H200s (expert parallel, all-to-all dispatch and combine), attention "
                       "with tensor parallelism and MLA's compressed latent KV cache."],
                why="MLA, 256-expert MoE, expert parallelism, fp8 weights"),
    ]


CONTEXT_STUDY = dict(name="llama3.1-8b_h100_prefill-vs-decode",
                     title="Prefill vs decode across context length: Llama-3.1-8B on H100 SXM",
                     model="meta-llama/Llama-3.1-8B", chip="h100-sxm", batch=1, gen_len=256,
                     prompts=[512, 2048, 8192, 32768, 128000])


def write_example(ex: Example, root: Path) -> dict[str, str]:
    from .build import write_report

    notes = list(ex.notes)
    if ex.name.startswith("llama3.1-8b_h100-v5e"):
        notes = _v5e_note() + notes
    return write_report(ex.model, ex.chips, root / ex.name, title=ex.title, notes=notes,
                        command=f"{SCRIPT} --only {ex.name}", **ex.scenario)


def write_context_study(root: Path) -> dict[str, str]:
    from .build import context_estimates
    from .export import write_ops_csv, write_summary_json
    from .markdown import context_study_markdown
    from .plot_breakdown import plot_phase_split

    c = CONTEXT_STUDY
    out = root / c["name"]
    ensure_dir(out)
    ests = context_estimates(c["model"], c["chip"], batch=c["batch"], gen_len=c["gen_len"], prompt_lens=c["prompts"])
    res = plot_phase_split(ests)
    res.save(out / "phase_split.png")
    res.close()
    first, last = ests[0], ests[-1]
    notes = [
        "One sequence (batch 1) so that the longest prompt still fits on one H100 "
        f"({sig3(last.memory.per_chip_bytes / 1e9)} GB per chip at {c['prompts'][-1]} + {c['gen_len']} tokens). "
        "The longest prompt is 128,000 tokens so that prompt + generated tokens stay inside the model's "
        "131,072-token context.",
        "What to look for: prefill attention FLOPs grow with the square of the prompt while the projections and "
        "the MLP grow linearly, so attention's share of TTFT climbs from a few percent to most of it; prefill "
        "stays compute-bound throughout. A decode step stays memory-bound at every length: at short contexts it "
        f"reads mostly weights ({eng(first.decode.weight_bytes, 'B')} of weights against "
        f"{eng(first.decode.kv_read_bytes, 'B')} of KV cache per step at prompt {c['prompts'][0]}), at long "
        f"contexts the KV cache catches up ({eng(last.decode.kv_read_bytes, 'B')} of KV cache per step at "
        f"{c['prompts'][-1]}), and the attention core's FLOP per KV byte stays at the GQA ratio "
        f"({sig3(last.decode.gqa_intensity)}: 32 query heads share each of the 8 KV heads) whatever the length.",
    ]
    files = {"phase_split": str(out / "phase_split.png")}
    files["ops.csv"] = write_ops_csv(ests, out / "ops.csv")
    files["summary.json"] = write_summary_json(ests, out / "summary.json", command=f"{SCRIPT} --only {c['name']}",
                                               notes=notes)
    md = context_study_markdown(ests, image="phase_split.png", title=c["title"], notes=notes,
                                command=f"{SCRIPT} --only {c['name']}")
    write_text(out / "report.md", md + "\n## Files\n\n- [`ops.csv`](ops.csv) — every op of every context length "
                                   "(the prompt_len column tells them apart); raw SI values\n- [`summary.json`]"
                                   "(summary.json) — one entry per context length; raw SI values\n")
    files["report.md"] = str(out / "report.md")
    return files


def readme(written: list[tuple[str, str, str]]) -> str:
    from ..memory import GPU_MEMORY_UTILIZATION
    from ..version import __version__

    lines = ["# Example reports", "",
             f"Generated by `{SCRIPT}` (llm_roofline {__version__}); do not edit by hand — rerun the script. "
             "Each folder holds `report.md` (start there), `ops.csv` and `summary.json` (raw SI values and the "
             "scenario metadata) and PNG charts.", "",
             "All numbers are in the default efficiency mode, calibrated, as `llm-roofline report` and "
             "`lr.estimate` give them: kernel efficiencies fitted per chip to measured timings (each report names "
             "the fit behind every chip: its own, a borrowed one, or an uncalibrated default), with the ideal "
             "roofline bound (100 % of peak FLOP/s and bandwidth) beside each headline in the report. Memory is "
             f"checked against gpu_memory_utilization {GPU_MEMORY_UTILIZATION:g} of each chip's memory (the "
             "driver's total where sourced, else the datasheet HBM).", "",
             "| report | what it shows | headline |", "|---|---|---|"]
    for name, why, head in written:
        lines.append(f"| [{name}]({name}/report.md) | {why} | {head} |")
    lines += ["", "Regenerate one: `python -m llm_roofline.report.examples --only NAME`; or write your own with "
              "`llm-roofline report MODEL --chip C1,C2 --batch B --prompt P --gen G --tp N --out DIR`.", ""]
    return "\n".join(lines)


def _headline(path: Path) -> str:
    import json

    s = json.loads((path / "summary.json").read_text())
    parts = []
    for r in s["results"]:
        fit = "" if r["memory"]["fits"] else " (does not fit)"
        if r["tpot_s"] is None:
            parts.append(f"{r['chip']} ×{r['scenario']['chips']}{fit}: TTFT {fmt_seconds(r['ttft_s'])}")
            continue
        what = f"prompt {r['scenario']['prompt_len']}: " if len({x['scenario']['prompt_len'] for x in s['results']}) > 1 else \
            f"{r['chip']} ×{r['scenario']['chips']}{fit}: "
        parts.append(f"{what}TTFT {fmt_seconds(r['ttft_s'])}, TPOT {fmt_seconds(r['tpot_s'])}")
    if len(parts) > 3:
        parts = [parts[0], "…", parts[-1]]
    return "; ".join(parts)


def example_names() -> list[str]:
    return [e.name for e in examples()] + [CONTEXT_STUDY["name"]]


def regenerate(root: Path, only: list[str] | None = None) -> list[Path]:
    """Write the examples named in `only` (default: all) into `root`, then root/README.md over every example
    folder present; returns the paths written, in order. Unknown names: ScenarioError, nothing written."""
    root = Path(root)
    names = example_names()
    unknown = [n for n in only or [] if n not in names]
    if unknown:
        raise ScenarioError(f"unknown example {unknown[0]!r}; examples: {', '.join(names)}")
    ensure_dir(root)
    exs = examples()
    written = []
    for ex in exs:
        if not only or ex.name in only:
            write_example(ex, root)
            written.append(root / ex.name)
    if not only or CONTEXT_STUDY["name"] in only:
        write_context_study(root)
        written.append(root / CONTEXT_STUDY["name"])
    rows = [(e.name, e.why, _headline(root / e.name)) for e in exs if (root / e.name / "summary.json").exists()]
    cs = root / CONTEXT_STUDY["name"]
    if (cs / "summary.json").exists():
        rows.append((CONTEXT_STUDY["name"], "one model and chip, prompt 512 … 128k: how the time split and the "
                     "bounds move between prefill and decode", _headline(cs)))
    write_text(root / "README.md", readme(rows))
    return written + [root / "README.md"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="reports",
                    help="folder for the reports, relative to the current directory (default: %(default)s)")
    ap.add_argument("--only", nargs="*", choices=example_names(), metavar="NAME",
                    help="names of the reports to regenerate (default: all)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> list[Path]:
    """`python -m llm_roofline.report.examples`: regenerate and return the paths written (printing them is
    the caller's business: benchmarks/regenerate_reports.py)."""
    args = parse_args(argv)
    return regenerate(Path(args.out), args.only)


if __name__ == "__main__":
    main()
