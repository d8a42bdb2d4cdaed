"""Held-out errors of the efficiency model: grouped k-fold cross-validation over shape groups (the `model`
column: a model for Vidur rows, a GEMM (n, k), an attention (heads, kv heads, head_dim), an all-reduce GPU
count), and the held-out (p10, p90) bands of measured / predicted time that est.uncertainty uses.

Every shape group is held out exactly once: groups are sorted and dealt round-robin into `folds` folds per
family, each fold is predicted by a fit on the other folds (deterministic: same rows, same predictions).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Mapping

import numpy as np

from ..efficiency import FamilyFit
from .fit import fit, predict, ratio_band

if TYPE_CHECKING:
    import pandas as pd

FOLDS = 5


def fold_of(df: "pd.DataFrame", folds: int = FOLDS) -> np.ndarray:
    """Fold index of every row: within each family, its sorted shape groups dealt round-robin."""
    out = np.zeros(len(df), dtype=np.int64)
    fam, group = df["fam"].to_numpy(), df["model"].astype(str).to_numpy()
    for f in sorted(set(fam)):
        sel = fam == f
        order = {g: i % folds for i, g in enumerate(sorted(set(group[sel])))}
        out[sel] = [order[g] for g in group[sel]]
    return out


def held_out_predictions(df: "pd.DataFrame", chip, folds: int = FOLDS) -> np.ndarray:
    """Predicted seconds of every row by a fit that did not see its shape group's fold."""
    df = df.reset_index(drop=True)
    fold = fold_of(df, folds)
    pred = np.full(len(df), np.nan)
    for k in range(folds):
        test = fold == k
        if not test.any():
            continue
        res = fit(df[~test], chip, date="cv")
        pred[test] = predict(df[test], chip, res.fits)
    return pred


def held_out_bands(df: "pd.DataFrame", pred: np.ndarray) -> dict[str, dict[str, float]]:
    """{family: {err_p10, err_p90}} of measured / held-out predicted time."""
    ratio = df["measured_s"].to_numpy(np.float64) / pred
    fam = df["fam"].to_numpy()
    return {f: ratio_band(ratio[(fam == f) & np.isfinite(ratio)]) for f in sorted(set(fam))}


def with_bands(fits: Mapping[str, FamilyFit], bands: Mapping[str, Mapping[str, float]], note: str) -> dict:
    """The fits with their err_p10 / err_p90 replaced by held-out bands (and `note` appended to fitted_on)."""
    return {f: replace(p, **bands[f], fitted_on=p.fitted_on + note) if f in bands else p for f, p in fits.items()}
