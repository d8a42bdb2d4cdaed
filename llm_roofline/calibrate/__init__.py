"""Calibration: fit the efficiency model (llm_roofline/efficiency.py) to measured kernel timings and say how
close the ideal roofline, the chip's current model and the new fit come to the measurements.

    from llm_roofline.calibrate import calibrate
    c = calibrate("benchmarks/data/measured_h100_sample.csv", "h100-sxm")   # -> Calibration (data, no text)
    c.result.fits["gemm"], c.errors, c.written

Modules, one job each:
    measurements  the measured-timings CSV schema (MEASURED_COLUMNS), read_measurements, normalize, rows_for_chip
    fit           predict (through roofline.score / score_collective) and fit (Nelder-Mead) -> FitResult
    chipfile      the fitted [efficiency.*] tables into a chip TOML; the user chip directory
    vidur         converter for the Vidur kernel profiles (microsoft/vidur), one module per measurement source
    aic_vllm      converter for NVIDIA AIConfigurator's vLLM kernel tables (gemm, attention, all-reduce csv.gz)
    crossval      held-out (grouped k-fold) predictions and the err_p10 / err_p90 bands of est.uncertainty

Measured sources: the shipped fits of a100-80gb, h100-sxm, h200, b200 and l40s come from vLLM's kernels
measured by NVIDIA's AIConfigurator collector (GEMM bf16/fp8, attention prefill and decode, custom
all-reduce; `calibrate` reads those csv.gz tables directly) and, for the memory-bound families of A100 and
H100, from Vidur's fp16 kernel profiles (microsoft/vidur). Any source converted to MEASURED_COLUMNS fits the
same way. benchmarks/CALIBRATION.md documents the maintainer refit of the shipped
chip files. The function `fit` is not re-exported here (the submodule `fit` has its name); text reports are in
report/calibration.py, and only cli.py prints.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..chip_fits import calibrated_model, measured_fits
from ..efficiency import FAMILIES
from ..errors import RooflineError
from ..files import check_writable_later
from ..hardware import Chip, load_chip
from . import fit as fitting
from . import aic_vllm, vidur
from ..hardware import CHIPS_ENV, user_chips_dir
from .chipfile import write_chip_toml
from .fit import FitResult, error_rows, predict
from .measurements import MEASURED_COLUMNS, normalize, read_measurements, rows_for_chip, rows_of_families, \
    single_node, write_measurements

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Calibration", "calibrate", "convert_vidur", "user_chips_dir", "CHIPS_ENV", "FitResult",
           "MEASURED_COLUMNS", "read_measurements", "predict"]

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Calibration:
    """One calibration run: the fit, where it came from, and the errors before and after.

    errors: one row per family: n, and {ideal, before, after}_{median, p90}_pct (absolute % error of each
    prediction against the measurements, in sample; `before` only when the chip had a calibration).
    """

    chip: str
    measured: str  # the CSV (or '<frame>')
    source: str  # what the fitted_on notes cite
    date: str
    gpus: tuple[str, ...]  # gpu values of the rows used
    rows: int  # rows fitted
    left_out_multi_node: int  # multi-node collective rows (not calibrated)
    before_label: str  # calibrated_model(chip).label before the fit
    result: FitResult
    errors: list[dict]
    chip_note: str  # the [efficiency] fitted_on text
    sku_note: str  # what is uncertain about the measured GPU ('' when nothing)
    chip_path: str  # the chip file the fit started from
    target: str  # where write=True writes (or wrote) the chip file
    written: str | None = None  # the chip file written (calibrate(write=True))
    kept: tuple[str, ...] = ()  # families not in the rows whose fits the chip file has: written as they were

    @property
    def had_calibration(self) -> bool:
        """Whether the chip had efficiency parameters before (then `errors` has before_* columns)."""
        return bool(self.errors) and "before_median_pct" in self.errors[0]


def calibrate(measured, chip, *, write: bool = False, gpu: str | None = None, source: str | None = None,
              date: str | None = None, chips_dir=None, families=None) -> Calibration:
    """Fit `chip` (name, alias, .toml path or Chip) to the measured timings (a CSV path or a DataFrame in
    MEASURED_COLUMNS) whose gpu names the chip (or is `gpu`), of the model families in `families` alone where given
    (measurements.rows_of_families; the others keep the chip file's fits). Multi-node collectives are left out.

    write=True writes a copy of the chip file with the fitted [efficiency.*] tables to
    `chips_dir/<chip>.toml` (default: user_chips_dir(), never the installed package), checked before the fit; the
    families the rows do not measure keep the chip file's own fits there (Calibration.kept names them)."""
    chip = load_chip(chip)
    target = (Path(chips_dir) if chips_dir is not None else user_chips_dir()) / f"{chip.name}.toml"
    if write:  # before the fit (minutes on the AIC tables): a destination it cannot write fails fast
        _check_target(chip, target)
    frame = hasattr(measured, "columns")
    where = "<frame>" if frame else str(measured)
    if frame:
        df = normalize(measured)
    elif aic_vllm.is_aic_table(measured):  # AIConfigurator vLLM tables (csv.gz), a system folder or their parent
        df = normalize(aic_vllm.convert_aic(measured), where)
    else:
        df = read_measurements(measured)
    rows = rows_of_families(rows_for_chip(df, chip, gpu), families)
    used = single_node(rows).reset_index(drop=True)
    gpus = tuple(sorted(set(used["gpu"]) - {""}))
    if source is None:
        source = vidur.source_text(gpus) if vidur.is_vidur(used["op"]) else \
            aic_vllm.source_text(gpus) if aic_vllm.is_aic(used["op"]) else \
            Path(where).name + (f" ({'/'.join(gpus)})" if gpus else "")
    date = date or _dt.date.today().isoformat()
    res = fitting.fit(used, chip, source=source, date=date)
    # the chip file's fits of the families these rows do not measure are kept as they are (a measured attention fit
    # too, over the one fit() derives from gemm): calibrating some families never drops the others'
    kept = {f: p for f, p in measured_fits(chip).items() if f not in res.points}
    res = replace(res, fits=MappingProxyType({f: p for f, p in res.fits.items() if f not in kept}))
    before = calibrated_model(chip)
    preds = {"ideal": predict(used, chip)}
    if before.families:
        preds["before"] = predict(used, chip, before)
    preds["after"] = predict(used, chip, res.fits)
    sku = vidur.sku_note(gpus)
    note = chip_note(chip, source, res.points, date, sku, tuple(kept))
    written = None
    if write:
        write_chip_toml(chip.path, replace(res, fits=MappingProxyType({**res.fits, **kept})), note, target)
        written = str(target)
    return Calibration(chip.name, where, source, date, gpus, len(used), len(rows) - len(used),
                       before.label, res, error_rows(used, preds, by=("fam",)),
                       note, sku, chip.path, str(target), written, tuple(f for f in FAMILIES if f in kept))


def chip_note(chip: Chip, source: str, points, date: str, sku: str = "", kept: tuple[str, ...] = ()) -> str:
    """The [efficiency] fitted_on text: source, points (per family), date, the chip-file peaks the fractions
    refer to, the families kept from the chip file (their own notes say where from) and those not measured
    (chip_fits.calibrated_model borrows them)."""
    dtype = "fp16" if "fp16" in chip.dense_flops_per_s else "bf16"
    missing = [f for f in FAMILIES if f not in points and f not in kept]
    return (f"{source}; {sum(points.values())} points; fitted {date} against this file's {chip.name} peaks "
            f"({dtype} {chip.peak_flops_per_s(dtype):.4g} FLOP/s, HBM {chip.hbm_bytes_per_s:.4g} B/s, "
            f"{chip.scaleup.kind} {chip.scaleup.bytes_per_s:.4g} B/s)" + (f"; {sku}" if sku else "")
            + (f"; kept from the chip file: {', '.join(kept)}" if kept else "")
            + (f"; not measured (borrowed): {', '.join(missing)}" if missing else "")
            + "; multi-node collectives not calibrated")


def _check_target(chip: Chip, dest: Path) -> None:
    """A RooflineError unless the fit of `chip` can be written to dest: a chip file to start from, dest outside the
    installed package, and a file that may be written there (files.check_writable_later)."""
    if not chip.path:
        raise RooflineError(f"chip {chip.name} has no file to start from")
    if dest.resolve().is_relative_to(_PACKAGE_DIR):
        raise RooflineError(f"refusing to write {dest} inside the installed package; set {CHIPS_ENV} to a "
                            "directory of your own")
    check_writable_later(dest)


def convert_vidur(src, out=None) -> "pd.DataFrame":
    """Vidur profiling directory (compute/ and network/) -> measured-timings rows; written to `out` if given."""
    df = vidur.convert_vidur(src)
    if out is not None:
        write_measurements(df, out)
    return df
