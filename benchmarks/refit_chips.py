"""Refit the shipped chip files' [efficiency.*] tables from the Vidur profiles (maintainer step).

    python3 benchmarks/refit_chips.py [--data ../shared/calibration/vidur] [--write] [--date YYYY-MM-DD]

Converts the Vidur profiles to the measured-timings CSV (as `llm-roofline calibrate --convert-vidur` does),
fits every GPU against its chip file (GPUS) exactly as `llm-roofline calibrate CSV --chip C` does, and
compares the fitted parameters with those the chip file holds. Without --write it only reports (exit 1
when a parameter differs); with --write it rewrites the [efficiency.*] tables of the chip files in this
checkout, llm_roofline/hardware/chips/<chip>.toml, in place (every other byte stays). The fits are
deterministic: rerunning on the same data gives the same parameters (only the dates in the notes change).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_roofline.calibrate import calibrate, convert_vidur  # noqa: E402
from llm_roofline.calibrate.chipfile import write_chip_toml  # noqa: E402
from llm_roofline.efficiency import calibrated_model  # noqa: E402
from llm_roofline.hardware import load_chip  # noqa: E402

GPUS = {"a100": "a100-80gb", "h100": "h100-sxm"}  # Vidur GPU -> chip file it is fitted against
DEFAULT_DATA = ROOT.parent / "shared" / "calibration" / "vidur"
CHIPS_DIR = ROOT / "llm_roofline" / "hardware" / "chips"


def differences(chip_name: str, fits) -> list[str]:
    """'family.param: shipped -> fitted' for every parameter that differs from the chip file's."""
    shipped = calibrated_model(load_chip(str(CHIPS_DIR / f"{chip_name}.toml"))).families
    out = []
    for fam, p in fits.items():
        old = shipped.get(fam)
        for k, v in p.params().items():
            was = getattr(old, k) if old is not None else None
            if was != v:
                out.append(f"{fam}.{k}: {was} -> {v}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="Vidur profiling directory (default: %(default)s)")
    ap.add_argument("--write", action="store_true", help="rewrite the chip files' [efficiency.*] tables in place")
    ap.add_argument("--date", default=None, help="date in the fitted_on notes (default: today)")
    args = ap.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "vidur.csv"
        convert_vidur(args.data, csv)  # through the CSV, as the documented CLI steps go
        for gpu, chip_name in GPUS.items():
            path = CHIPS_DIR / f"{chip_name}.toml"
            c = calibrate(csv, str(path), gpu=gpu, date=args.date)
            diff = differences(chip_name, c.result.fits)
            ok &= not diff
            print(f"{chip_name} ({gpu}): {c.rows} rows, fit {c.result.seconds:.2f} s; "
                  + ("parameters identical to the chip file" if not diff else "differs: " + "; ".join(diff)))
            if args.write:
                write_chip_toml(path, c.result, c.chip_note)
                print(f"  wrote {path}")
    return 0 if ok or args.write else 1


if __name__ == "__main__":
    raise SystemExit(main())
