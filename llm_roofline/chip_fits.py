"""Which efficiency fit each op family of a chip uses: its own `[efficiency.*]` tables, read once per chip file,
or a fit borrowed from its family default chip (and said so, per family), and the `efficiency=` argument of every
API ('calibrated' | 'ideal' | a custom model) resolved to a model. The fits' formulas live in efficiency.py."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from .efficiency import (BORROWED, BORROWS, FAMILIES, NOT_MEASURED, OWN_BF16_FALLBACK, PARAMS, TPU_DEFAULT,
                         UNCALIBRATED, CalibratedModel, FamilyFit, borrowed_base)
from .errors import ChipError, RooflineError, ScenarioError, shown
from .hardware import Chip, load_chip
from .roofline import Efficiency

# chip family -> (calibrated chip whose fit it borrows, why)
FAMILY_DEFAULTS = {
    "hopper": ("h100-sxm", ""),
    "ampere": ("a100-80gb", ""),
    "blackwell": ("b200", "nearest measured Blackwell GPU"),
    "cdna3": ("h100-sxm", "nearest GPU fit (HBM3 generation); ROCm kernels not measured"),
    "ada": ("l40s", "nearest measured Ada GPU"),
    "volta": ("a100-80gb", "nearest GPU fit; Volta kernels not measured"),
}


def attention_from_gemm(g: FamilyFit) -> FamilyFit:
    return FamilyFit(compute_max=g.compute_max, memory_max=g.memory_max, overhead_s=g.overhead_s,
                     fitted_on=f"{NOT_MEASURED}: gemm's compute_max, memory_max and overhead_s, constant in tokens")


def measured_fits(chip) -> dict[str, FamilyFit]:
    """The fits of `chip`'s own file fitted on measurements (a derived one, NOT_MEASURED, left out): what a
    calibration of other families keeps."""
    return {f: p for f, p in _chip_fits(load_chip(chip)).items() if not p.fitted_on.startswith(NOT_MEASURED)}


def fits_from_table(table: Mapping[str, Any], where: str = "") -> dict[str, FamilyFit]:
    """The FamilyFit of every `[efficiency.<family>]` sub-table of a chip's raw `[efficiency]` table."""
    out = {}
    for fam, sub in table.items():
        if not isinstance(sub, Mapping):
            continue
        if fam not in FAMILIES:
            raise ChipError(f"{where}[efficiency.{fam}]: unknown family; known: {', '.join(FAMILIES)}")
        unknown = set(sub) - set(PARAMS) - {"fitted_on"}
        if unknown:
            raise ChipError(f"{where}[efficiency.{fam}]: unknown keys {sorted(unknown)}; known: {', '.join(PARAMS)}")
        vals = {k: _number(sub[k], f"{where}[efficiency.{fam}].{k}") for k in PARAMS if k in sub}
        try:
            out[fam] = FamilyFit(**vals, fitted_on=str(sub.get("fitted_on", "")))
        except ChipError as e:
            raise ChipError(f"{where}[efficiency.{fam}]: {e}") from None
    return out


def _number(value, where: str) -> float:
    """A finite real number from a chip file, else a ChipError naming the key."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ChipError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def calibrated_model(chip, _asking: tuple = ()) -> CalibratedModel:
    """The calibrated efficiency model of `chip` (name, path or Chip). Its `.label` says where it comes from:
    'calibrated (h100-sxm fit)', 'calibrated (h200 fit); norm, ... borrowed from h100-sxm fit',
    'family default: hopper from h100-sxm fit', 'tpu default (uncalibrated)', ...; `.sources` says it per family.
    _asking: the chips whose models are being built and borrow from this one (a cycle stops there)."""
    chip = load_chip(chip)
    own = _chip_fits(chip)
    if own:
        return _own_model(chip, own, _asking)
    if chip.family == "tpu":
        fams = {f: TPU_DEFAULT for f in FAMILIES}
        return CalibratedModel(chip.name, "tpu default (uncalibrated)", MappingProxyType(fams),
                               MappingProxyType({f: UNCALIBRATED for f in FAMILIES}))
    src_name, why = _default_source(chip) if chip.family in FAMILY_DEFAULTS else (None, None)
    if src_name is not None and src_name not in _asking + (chip.name,):
        src = calibrated_model(src_name, _asking + (chip.name,))
        if src.families:
            label = f"family default: {chip.family} from {src_name} fit" + (f" ({why})" if why else "")
            return CalibratedModel(chip.name, label, src.families,
                                   MappingProxyType({f: BORROWED + src_name for f in src.families}))
    label = f"uncalibrated: no measurements or default for {chip.name} (family {chip.family or '?'}); ideal"
    return CalibratedModel(chip.name, label, MappingProxyType({}), MappingProxyType({}))


def _chip_fits(chip: Chip) -> Mapping[str, FamilyFit]:
    """fits_from_table of a chip's own [efficiency] tables read once per table when the
    table is read-only all the way down (a loaded chip's: hardware._efficiency_table), so every estimate on the
    same chip object reuses the parse."""
    table = chip.calibration
    frozen = isinstance(table, MappingProxyType) and all(isinstance(v, (MappingProxyType, str)) for v in table.values())
    if not frozen:
        return fits_from_table(table, f"{chip.name}: ")
    with _FITS_LOCK:
        hit = _FITS.get(id(table))
        if hit is not None and hit[0] is table:
            _FITS.move_to_end(id(table))
            return hit[1]
    fits = MappingProxyType(fits_from_table(table, f"{chip.name}: "))
    with _FITS_LOCK:
        _FITS[id(table)] = (table, fits)  # the table is kept: its id is not reused while it is cached
        while len(_FITS) > 64:
            _FITS.popitem(last=False)
    return fits


_FITS: OrderedDict = OrderedDict()  # id(chip.calibration) -> (that table, its fits), least recently used first
_FITS_LOCK = threading.Lock()


def _default_source(chip: Chip) -> tuple[str, str]:
    """(chip whose fits `chip` borrows, why): its family default, or, for the default chip itself (b200 and
    l40s have no memory-bound family measured, or no fit at all in a user's copy), SELF_DEFAULT_FALLBACK."""
    src, why = FAMILY_DEFAULTS.get(chip.family, ("h100-sxm", "nearest GPU fit"))
    if src == chip.name:
        return SELF_DEFAULT_FALLBACK.get(chip.family, ("h100-sxm", "nearest GPU fit"))
    return src, why


# a family default chip without a fit of its own (or lacking families) borrows from
SELF_DEFAULT_FALLBACK = {
    "hopper": ("a100-80gb", "nearest GPU fit"),
    "blackwell": ("h100-sxm", "nearest GPU fit; Blackwell kernels not measured"),
    "ada": ("a100-80gb", "nearest GPU fit (mma.sync tensor cores as on Ampere); Ada kernels not measured"),
    "ampere": ("h100-sxm", "nearest GPU fit"),
}


def _falls_back_to_own(family: str, own: Mapping[str, FamilyFit]) -> bool:
    """Whether a family's BORROWS chain (gemm_fp8_block -> gemm_fp8 -> gemm) reaches one of the chip's own fits."""
    return family in BORROWS and borrowed_base(BORROWS[family], own) in own


def _own_model(chip: Chip, own: dict[str, FamilyFit], asking: tuple = ()) -> CalibratedModel:
    """A chip with its own fits: families it lacks borrow from its family default chip (or h100-sxm, the
    nearest chip with every family measured, when that default is the chip itself)."""
    fams, sources = dict(own), {f: f"{chip.name} fit" for f in own}
    src_name = _default_source(chip)[0]
    # fp8 GEMMs (fp8 KV decode) of a chip that measured bf16 ones only (A100: no fp8 units) use its own bf16 fit
    # (BORROWS); every other missing family comes from the source chip's fit of that same family
    missing = [f for f in FAMILIES if f not in fams and not (f in OWN_BF16_FALLBACK and _falls_back_to_own(f, own))]
    if missing and src_name != chip.name:  # the source's own fits only (no chains of borrowing)
        src = load_chip(src_name)
        src_fits = _chip_fits(src)
        for f in missing:
            if f in src_fits:
                fams[f], sources[f] = src_fits[f], BORROWED + src_name
        still = [f for f in missing if f not in fams]
        if still and src_name not in asking:  # the source borrows them itself (gb200 <- b200 <- h100-sxm:
            # memory-bound families); a family neither h100-sxm nor a100-80gb has stops the cycle between them
            src_model = calibrated_model(src_name, asking + (chip.name,))
            for f in still:
                if src_model.sources.get(f, "").startswith(BORROWED) and \
                        src_model.sources[f][len(BORROWED):] not in FAMILIES and f in src_model.families:
                    fams[f], sources[f] = src_model.families[f], src_model.sources[f]
    if "attention" not in fams and "gemm" in fams:
        fams["attention"], sources["attention"] = attention_from_gemm(fams["gemm"]), BORROWED + "gemm"
    for f, base in BORROWS.items():
        base = borrowed_base(base, fams)  # gemm_fp8_block -> gemm_fp8 -> gemm, as CalibratedModel.fit_for walks it
        if f not in fams and base in fams:
            sources[f] = BORROWED + base
    return CalibratedModel(chip.name, _own_label(chip.name, sources, fams), MappingProxyType(fams),
                           MappingProxyType(sources))


def _own_label(chip_name: str, sources: Mapping[str, str], fams, used=FAMILIES) -> str:
    """'calibrated (<chip> fit)', with the families of `used` whose fit is borrowed, grouped by where from:
    '...; norm, embedding borrowed from h100-sxm; mla_glue from b200'."""
    by_source: dict[str, list[str]] = {}
    for f in FAMILIES:
        if f in used and f in fams and sources.get(f, "").startswith(BORROWED):
            by_source.setdefault(sources[f][len(BORROWED):], []).append(f)
    groups = [f"{', '.join(fs)} {'borrowed ' if i == 0 else ''}from {src}"
              for i, (src, fs) in enumerate(by_source.items())]
    return "; ".join([f"calibrated ({chip_name} fit)", *groups])


def resolve_efficiency(efficiency, chip: Chip):
    """'ideal' (None) | 'calibrated' (the chip's CalibratedModel) | an Efficiency applied to every op |
    an object with .for_op(op, chip) -> Efficiency."""
    if efficiency is None or _is(efficiency, "ideal"):
        return None
    if isinstance(efficiency, Efficiency):
        return _checked(efficiency)
    if _is(efficiency, "calibrated"):
        return calibrated_model(chip)
    if hasattr(efficiency, "for_op"):
        return efficiency
    raise ScenarioError(f"efficiency must be 'ideal' or 'calibrated', got {efficiency!r}")


def _is(efficiency, mode: str) -> bool:
    """efficiency is the mode's name (== on an array would compare elementwise)."""
    return isinstance(efficiency, str) and efficiency == mode


def _checked(e: Efficiency) -> Efficiency:
    """A caller's Efficiency of numbers (one for every op: an array would not line up with the ops), fractions in
    (0, 1] and overheads finite and >= 0 (so no time falls below the ideal one, turns negative or NaN), else a
    ScenarioError naming the field."""
    fields = {k: getattr(e, k) for k in ("compute", "memory", "comm", "comm_switch", "overhead_s", "comm_hop_s")}
    for name, v in fields.items():
        if v is None and name == "comm_switch":
            continue
        try:
            x = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise ScenarioError(f"Efficiency.{name} must be a number, got {shown(v)}") from None
        ok = (x > 0) & (x <= 1) if name in ("compute", "memory", "comm", "comm_switch") else np.isfinite(x) & (x >= 0)
        if x.ndim:
            raise ScenarioError(f"Efficiency.{name} must be one number (it applies to every op), got {shown(v)}")
        if isinstance(v, (bool, str)) or not np.all(ok):
            what = "a fraction in (0, 1]" if name in ("compute", "memory", "comm", "comm_switch") else "finite and >= 0"
            raise ScenarioError(f"Efficiency.{name} must be {what}, got {shown(v)}")
    return e


def resolved_once(efficiency, chip: Chip):
    """resolve_efficiency for a caller that evaluates many times on one chip (a sweep's chunks, a planner's
    shardings); a bad name is returned as given, for the evaluation to report where it always did."""
    try:
        return resolve_efficiency(efficiency, chip)
    except RooflineError:
        return efficiency


def efficiency_label(efficiency, families=None) -> str:
    """'ideal', 'calibrated (h100-sxm fit)', ...: the name reports print for an efficiency mode or model. families:
    the op families an estimate prices (efficiency.family_of), its borrowed fits alone named (a chip's own fits'
    label names every family it borrows, e.g. mla_glue for a model without MLA); None: the chip's label."""
    if efficiency is None:
        return "ideal"
    if isinstance(efficiency, str):
        return efficiency
    if families is not None and isinstance(efficiency, CalibratedModel) and efficiency.label == _own_label(
            efficiency.chip, efficiency.sources, efficiency.families):  # a chip's own fits, as calibrated_model made them
        return _own_label(efficiency.chip, efficiency.sources, efficiency.families, set(families))
    return getattr(efficiency, "label", type(efficiency).__name__)


DEFAULT_EFFICIENCY = "calibrated"  # THE default mode of every API and command (the ideal bound is reported beside it)


def efficiency_mode(efficiency) -> str:
    """'ideal', 'calibrated' or 'custom' (an Efficiency or per-op model the caller built): which mode a number is
    in, whatever fit a chip's calibrated model comes from (efficiency_label says that)."""
    if efficiency is None or _is(efficiency, "ideal"):
        return "ideal"
    if _is(efficiency, "calibrated") or isinstance(efficiency, CalibratedModel):
        return "calibrated"
    return "custom"


def efficiency_text(mode: str, fit: str) -> str:
    """The mode and the fit in one phrase: 'calibrated (h100-sxm fit)', 'calibrated: tpu default (uncalibrated)'."""
    return fit if fit.startswith(mode) else f"{mode}: {fit}"
