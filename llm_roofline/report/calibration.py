"""A Calibration (llm_roofline.calibrate) as text: the error table (ideal, current model, new fit), the fitted
parameters and what was written; or as JSON / CSV. Also the one-line summary of a converted measurement file."""

from __future__ import annotations

import json

from ..calibrate import Calibration
from ..calibrate.fit import shown_params
from ..units import json_ready
from .table import render

PREDICTIONS = (("ideal", "ideal"), ("before", "before"), ("after", "after"))


def calibration_report(c: Calibration, fmt: str = "table") -> str:
    """table | markdown: the summary, the error table and the parameters; csv: the error table; json: all."""
    if fmt == "csv":
        return render(c.errors, "csv")
    if fmt == "json":
        return json.dumps(json_ready(calibration_dict(c)), indent=2)
    return "\n".join(_summary(c) + ["", render(c.errors, fmt, _error_columns(c)), "", "fitted parameters:"]
                     + parameter_lines(c) + [""] + _outcome(c))


def calibration_dict(c: Calibration) -> dict:
    """The JSON form: chip, source, the model before, the error rows, parameters, points, what was written."""
    return dict(chip=c.chip, source=c.source, before=c.before_label,
                errors=c.errors, params={f: p.params() for f, p in c.result.fits.items()},
                points=dict(c.result.points), fit_seconds=c.result.seconds,
                left_out_multi_node=c.left_out_multi_node, written=c.written, kept=list(c.kept))


def parameter_lines(c: Calibration) -> list[str]:
    """`  [efficiency.<family>] name = value, ...` for every fitted family."""
    out = []
    for fam, p in c.result.fits.items():
        vals = ", ".join(f"{k} = {v:.4g}" for k, v in shown_params(fam, p).items())
        out.append(f"  [efficiency.{fam}] {vals}")
    return out


def _summary(c: Calibration) -> list[str]:
    gpus = "/".join(c.gpus)
    return [f"calibrating {c.chip} on {c.measured}: {c.rows} rows" + (f" of gpu {gpus}" if gpus else "")
            + (f"; {c.left_out_multi_node} multi-node collective rows left out (not calibrated)"
               if c.left_out_multi_node else ""),
            f"before: {c.before_label}" if c.had_calibration else "before: no calibration (ideal only)",
            f"fit: {c.result.seconds:.2f} s, in-sample absolute % error of each prediction against the measurements:"]


def _error_columns(c: Calibration) -> list[tuple]:
    def pct(v):
        return f"{v:.1f}"

    cols = [("family", "fam", None), ("n", "n", str)]
    for name, key in PREDICTIONS:
        if f"{key}_median_pct" in c.errors[0]:
            cols += [(f"{name} med %", f"{key}_median_pct", pct), (f"{name} p90 %", f"{key}_p90_pct", pct)]
    return cols


def _outcome(c: Calibration) -> list[str]:
    out = [f"wrote {c.written}: {c.chip_path} with the fitted [efficiency.*] tables (load it by path, or by name "
           "from the user chip directory)" if c.written
           else f"not written (pass --write to write the chip file with these tables to {c.target})"]
    if c.kept:
        out.append(f"kept as the chip file has them (not in these rows): {', '.join(c.kept)}")
    if c.sku_note:
        out.append(c.sku_note + f"; fitted against {c.chip}.")
    return out


def conversion_summary(df, out) -> str:
    """`wrote N rows to OUT: gpu/family count, ...` for a converted measurement file."""
    counts = df.groupby(["gpu", "family"]).size()
    return f"wrote {len(df)} rows to {out}: " + ", ".join(f"{g}/{fam} {n}" for (g, fam), n in counts.items())
