"""Refit the shipped chip files' [efficiency.*] tables from the shared measurements (maintainer step).

    python3 benchmarks/refit_chips.py [--data ../shared/calibration] [--chips b200,gb200] [--families moe_quant,moe_fp4]
                                      [--write] [--date YYYY-MM-DD]
    python3 benchmarks/refit_chips.py --table      # the shipped parameters as CALIBRATION.md's table

Sources (both under --data):
- aic-vllm/<system>/  NVIDIA AIConfigurator's vLLM kernel tables (calibrate/aic_vllm.py): gemm (bf16),
  gemm_fp8, gemm_fp8_block (block-scaled fp8, kernel-time rows), gemm_fp4 (NVFP4, b200 / gb200), moe (fused-MoE block), attention (causal prefill), attention_decode (bf16 KV),
  attention_decode_fp8 (fp8 KV) and collective (vLLM custom all-reduce, CUDA graph) for every system with a
  chip file (a100-80gb, h100-sxm, h200, b200, gb200, l40s), all_to_all (MoE dispatch / combine, DeepEP) where
  measured (h100-sxm, h200, b200, gb200);
- vidur/  the Vidur profiles (calibrate/vidur.py): the memory-bound families (elementwise, activation, rope,
  norm, embedding) of a100-80gb and h100-sxm. Other chips borrow those (chip_fits.calibrated_model).

Every family's err_p10 / err_p90 (the uncertainty band) are held-out: grouped 5-fold cross-validation over
shape groups (calibrate/crossval.py). Without --write it reports the fitted parameters and whether they differ
from the chip file (exit 1 when one does); with --write it rewrites the [efficiency.*] tables of the chip
files in this checkout in place (every other byte stays). Deterministic: the same data give the same
parameters (only the dates in the notes change). --families refits those families alone and keeps every other
table of the chip file as shipped (after a change to one family's model, the others cannot move).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
import time
from pathlib import Path
from types import MappingProxyType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # validate_mla (GLUE_BORROWED), also when imported

from llm_roofline.calibrate import aic_vllm, vidur  # noqa: E402
from llm_roofline.calibrate.chipfile import write_chip_toml  # noqa: E402
from llm_roofline.calibrate.crossval import held_out_bands, held_out_predictions, with_bands  # noqa: E402
from llm_roofline.calibrate.fit import BASE_FAMILY, MEMORY_FAMILIES, FitResult, fit  # noqa: E402
from llm_roofline.calibrate.measurements import normalize, single_node  # noqa: E402
from llm_roofline.chip_fits import calibrated_model, measured_fits  # noqa: E402
from llm_roofline.hardware import load_chip  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "calibration"
CHIPS_DIR = ROOT / "llm_roofline" / "hardware" / "chips"
VIDUR_GPUS = {"a100-80gb": "a100", "h100-sxm": "h100"}  # chip -> Vidur GPU (memory-bound families)
# families fitted by their own script on module rows, on top of this script's fits: kept from the chip file
KEPT_FAMILIES = ("mla_glue",)  # benchmarks/validate_mla.py --fit --write DATE (rerun it after a refit)
CV_NOTE = "; err_p10/err_p90: held-out measured/predicted (grouped 5-fold over shape groups)"


def chips_with_data(data: Path) -> list[tuple[str, str]]:
    """(system folder, chip name) of every aic-vllm system that has a chip file in this checkout."""
    return [(s, c) for s, c in aic_vllm.SYSTEMS.items()
            if (data / "aic-vllm" / s).is_dir() and (CHIPS_DIR / f"{c}.toml").is_file()]


def fit_source(rows, chip, source: str, date: str):
    """Fit, then replace the bands by held-out ones. Returns (fits, points, in-sample median errors)."""
    res = fit(rows, chip, source=source, date=date)
    bands = held_out_bands(rows.reset_index(drop=True), held_out_predictions(rows, chip))
    return with_bands(res.fits, bands, CV_NOTE), dict(res.points), dict(res.median_abs_err)


def shipped_points(p) -> int:
    """The rows a shipped family fit was fitted on, as its fitted_on note says ('4077 points (moe)'); 0 if none."""
    m = re.search(r"(\d+) points", p.fitted_on)
    return int(m.group(1)) if m else 0


def refit_chip(data: Path, system: str, chip_name: str, date: str | None, vidur_rows=None,
               families: tuple[str, ...] | None = None):
    """The merged FitResult of one chip: aic-vllm families, plus Vidur's memory-bound ones where measured; with
    `families`, those alone, every other own fit of the chip file kept as shipped."""
    chip = load_chip(str(CHIPS_DIR / f"{chip_name}.toml"))
    t0 = time.perf_counter()
    aic = normalize(aic_vllm.convert_aic(data / "aic-vllm" / system))
    aic = single_node(aic).reset_index(drop=True)
    if families is not None:  # with the families theirs take a parameter from (BASE_FAMILY), fitted as in a full refit
        aic = aic[aic["fam"].isin(families + tuple(BASE_FAMILY.get(f, f) for f in families))].reset_index(drop=True)
    fits, points, med = fit_source(aic, chip, aic_vllm.source_text([system]), date) if len(aic) else ({}, {}, {})
    for f in set(fits) - set(families or fits):  # a base family (or one derived) not asked for: kept as shipped
        fits.pop(f), points.pop(f, None), med.pop(f, None)
    sources = [aic_vllm.source_text([system])]
    if vidur_rows is not None and chip_name in VIDUR_GPUS:
        g = VIDUR_GPUS[chip_name]
        memory = [f for f in MEMORY_FAMILIES if families is None or f in families]
        v = vidur_rows[(vidur_rows["gpu"] == g) & vidur_rows["fam"].isin(memory)].reset_index(drop=True)
        if len(v):
            vf, vp, vm = fit_source(v, chip, vidur.source_text([g]), date)
            for f in memory:
                if f in vf:
                    fits[f], points[f], med[f] = vf[f], vp[f], vm[f]
        sources.append(vidur.source_text([g]) + " (memory-bound families; " + vidur.sku_note([g]) + ")")
    shipped = measured_fits(chip)
    kept = [f for f in shipped if f in KEPT_FAMILIES or families is not None and f not in families]
    for f in kept:  # fitted elsewhere (KEPT_FAMILIES: refit them after this) or not asked for: kept as shipped
        fits[f], points[f] = shipped[f], (0 if f in KEPT_FAMILIES else shipped_points(shipped[f]))
    res = FitResult(chip.name, MappingProxyType(fits), MappingProxyType(points), MappingProxyType(med),
                    time.perf_counter() - t0)
    return chip, res, note(chip, sources, sum(points.values()), date, "mla_glue" in fits)


def note(chip, sources: list[str], points: int, date: str | None, glue: bool) -> str:
    """The [efficiency] header: sources, points, date, the peaks fitted against; glue: the chip has its own mla_glue
    fit (validate_mla.py)."""
    dtype = "fp16" if "fp16" in chip.dense_flops_per_s else "bf16"
    low = "".join(f", {d} {chip.peak_flops_per_s(d):.4g}" for d in ("fp8", "fp4") if d in chip.dense_flops_per_s)
    fitted = date or _dt.date.today().isoformat()
    return ("; ".join(sources) + f"; {points} points; fitted {fitted} against this file's {chip.name} peaks "
            f"({dtype} {chip.peak_flops_per_s(dtype):.4g}{low} FLOP/s, HBM {chip.hbm_bytes_per_s:.4g} B/s, "
            f"{chip.scaleup.kind} {chip.scaleup.bytes_per_s:.4g} B/s); families not listed here are borrowed "
            "(chip_fits.calibrated_model says from where); multi-node collectives not calibrated"
            + ("; mla_glue fitted by benchmarks/validate_mla.py" if glue else "") + _borrowed_glue(chip.name))


def _borrowed_glue(chip_name: str) -> str:
    """The note of a chip whose mla_glue is borrowed (validate_mla.GLUE_BORROWED), else ''."""
    from validate_mla import GLUE_BORROWED

    donor = GLUE_BORROWED.get(chip_name)
    return (f"; mla_glue borrowed from {donor} (benchmarks/validate_mla.py GLUE_BORROWED: its module rows carry a "
            f"constant ~40 us a call that B200's and GB200's served decode do not)") if donor else ""


def differences(chip_name: str, fits) -> list[str]:
    """'family.param: shipped -> fitted' for every parameter that differs from the chip file's."""
    shipped = calibrated_model(load_chip(str(CHIPS_DIR / f"{chip_name}.toml")))
    out = []
    for fam, p in fits.items():
        old = shipped.families.get(fam) if shipped.sources.get(fam, "").endswith(" fit") else None
        for k, v in p.params().items():
            was = getattr(old, k) if old is not None else None
            if was != v:
                out.append(f"{fam}.{k}: {was} -> {v}")
    return out


# CALIBRATION.md's short names of the parameters, and the unit each is shown in (scale, suffix)
SHORT = {"compute_max": ("c", 1, ""), "compute_tokens_half": ("T½", 1, ""), "compute_cols_half": ("N½", 1, ""),
         "compute_outs_half": ("X½(TN)", 1, ""), "compute_k_split": ("K_s", 1, ""), "compute_depth_half": ("K½", 1, ""),
         "compute_keys_half": ("L½", 1, ""),
         "compute_elems_half": ("X½", 1, ""), "compute_dim_half": ("D½", 1, ""), "compute_group_half": ("G½", 1, ""),
         "memory_max": ("m", 1, ""), "memory_tokens_half": ("T½m", 1, ""), "memory_streams_half": ("S½", 1, ""),
         "memory_unsplit_half": ("S½mha", 1, ""), "overhead_unsplit_s": ("o_mha", 1e6, " µs"),
         "comm_max": ("comm", 1, ""), "comm_switch_max": ("sw", 1, ""), "overhead_s": ("o", 1e6, " µs"),
         "comm_step_s": ("s₀", 1e6, " µs"), "comm_step_per_doubling_s": ("s₂", 1e6, " µs"),
         "overhead_per_output_elem_s": ("o/out", 1e12, " ps"), "overhead_per_token_s": ("o/T", 1e9, " ns"),
         "overhead_per_walked_elem_s": ("o/walk", 1e12, " ps"), "overhead_per_kv_row_byte_s": ("o/B", 1e12, " ps"),
         "overhead_per_kv_stream_s": ("o/S", 1e9, " ns"), "overhead_per_windowed_head_s": ("o/wh", 1e9, " ns"),
         "overhead_per_head_tile_s": ("o/ht", 1e9, " ns"), "overhead_per_group_tile_s": ("o/gt", 1e9, " ns"),
         "memory_window_half": ("W½", 1, ""),
         "overhead_window_s": ("o/win", 1e6, " µs"), "compute_m_tile": ("M_t", 1, ""),
         "compute_width_half": ("I½", 1, ""), "compute_m_block_rule": ("M_b", 1, ""),
         "overhead_ep_s": ("o_ep", 1e6, " µs"), "overhead_per_token_elem_s": ("o/tok", 1e12, " ps"),
         "overhead_per_depth_s": ("o/K", 1e9, " ns"), "overhead_split_s": ("o_split", 1e6, " µs"),
         "overhead_regroup_s": ("o_regroup", 1e6, " µs"), "compute_q_tile_rule": ("P_q", 1, ""),
         "compute_tile_rule": ("tiles", 1, ""), "overhead_per_wave_s": ("o/wave", 1e6, " µs"),
         "overhead_per_tall_output_s": ("o/tall", 1e12, " ps"),
         "overhead_wide_tile_s": ("o_wide", 1e6, " µs"), "memory_serial": ("m_ser", 1, ""),
         "err_p10": ("p10", 1, ""), "err_p90": ("p90", 1, "")}


def parameter_table(chip_names: list[str]) -> str:
    """One row per family, one column per chip: its fitted parameters (SHORT names), 'borrowed: X' or 'falls back:
    F' (chip_fits.calibrated_model's sources), from the shipped chip files."""
    from llm_roofline.calibrate.fit import shown_params
    from llm_roofline.efficiency import FAMILIES

    models = [calibrated_model(load_chip(str(CHIPS_DIR / f"{c}.toml"))) for c in chip_names]

    def cell(m, fam):
        src = m.sources.get(fam, "")
        if not src.endswith(" fit"):
            return src.replace("borrowed: ", "falls back: ") if src.split(": ")[-1] in FAMILIES else src or "–"
        shown = shown_params(fam, m.families[fam])
        return ", ".join(f"{SHORT[k][0]} {v * SHORT[k][1]:.3g}{SHORT[k][2]}" for k, v in shown.items() if k in SHORT
                         and (v or k in ("compute_max", "memory_max", "comm_max")))

    lines = ["| `[efficiency.*]` | " + " | ".join(chip_names) + " |", "|---|" + "---|" * len(chip_names)]
    return "\n".join(lines + [f"| {fam} | " + " | ".join(cell(m, fam) for m in models) + " |" for fam in FAMILIES])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="shared calibration directory (default: %(default)s)")
    ap.add_argument("--write", action="store_true", help="rewrite the chip files' [efficiency.*] tables in place")
    ap.add_argument("--date", default=None, help="date in the fitted_on notes (default: today)")
    ap.add_argument("--chips", default=None, help="comma-separated chip names to refit (default: every chip with data)")
    ap.add_argument("--families", default=None,
                    help="comma-separated families to refit, every other table of the chip file kept as shipped "
                         "(default: all)")
    ap.add_argument("--table", action="store_true",
                    help="print the shipped chip files' parameters as CALIBRATION.md's Markdown table and exit")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "aic-vllm").is_dir():
        ap.error(f"no aic-vllm folder under {data} (give the shared calibration directory with --data)")
    if args.table:
        print(parameter_table([c for _, c in chips_with_data(data)]))
        return 0
    chosen = chips_with_data(data)
    if args.chips is not None:
        wanted = [c.strip() for c in args.chips.split(",") if c.strip()]
        unknown = sorted(set(wanted) - {c for _, c in chosen})
        if unknown or not wanted:
            ap.error(f"--chips: no data or chip file for {', '.join(unknown) or '(none given)'}; "
                     f"choose from {', '.join(c for _, c in chosen)}")
        chosen = [(s, c) for s, c in chosen if c in wanted]
    families = None
    if args.families is not None:
        from llm_roofline.efficiency import FAMILIES

        families = tuple(f.strip() for f in args.families.split(",") if f.strip())
        unknown = sorted(set(families) - set(FAMILIES))
        if unknown or not families:
            ap.error(f"--families: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(FAMILIES)}")
    vidur_rows = normalize(vidur.convert_vidur(data / "vidur")) if (data / "vidur").is_dir() else None
    ok = True
    for system, chip_name in chosen:
        chip, res, chip_note = refit_chip(data, system, chip_name, args.date, vidur_rows, families)
        diff = differences(chip_name, res.fits)
        ok &= not diff
        print(f"{chip_name} ({system}): {sum(res.points.values())} rows, fit + 5-fold held-out bands "
              f"{res.seconds:.1f} s; " + ("parameters identical to the chip file" if not diff else
                                          f"{len(diff)} parameters differ"))
        for fam, p in res.fits.items():
            print(f"  {fam:17s} " + ", ".join(f"{k}={v:.4g}" for k, v in p.params().items()
                                               if v != getattr(type(p)(), k)))
        if args.write:
            write_chip_toml(chip.path, res, chip_note)
            print(f"  wrote {chip.path}")
    missing = sorted(set(aic_vllm.SYSTEMS.values()) - {c for _, c in chips_with_data(data)})
    if missing:
        print(f"no chip file for {', '.join(missing)}: measured but not calibrated here (add the chip file first)")
    return 0 if ok or args.write else 1


if __name__ == "__main__":
    raise SystemExit(main())
