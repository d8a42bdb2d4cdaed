"""The Nelder-Mead simplex minimizer the fits use (fit.py): numpy only, a fixed start, deterministic."""

from __future__ import annotations

import numpy as np


def nelder_mead(f, x0, step=0.5, max_evals=3000, xtol=1e-7, ftol=1e-12):
    """Minimize f from x0 with the Nelder-Mead simplex (standard coefficients 1, 2, 0.5, 0.5). Deterministic."""
    n = len(x0)
    pts = [np.array(x0, dtype=np.float64)] + [np.array(x0, dtype=np.float64) + step * np.eye(n)[i] for i in range(n)]
    vals = [f(p) for p in pts]
    evals = n + 1
    while evals < max_evals:
        order = np.argsort(vals, kind="stable")
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        if vals[-1] - vals[0] <= ftol and max(np.max(np.abs(p - pts[0])) for p in pts[1:]) <= xtol:
            break
        c = np.mean(pts[:-1], axis=0)
        xr = c + (c - pts[-1])
        fr = f(xr)
        evals += 1
        if fr < vals[0]:
            xe = c + 2.0 * (c - pts[-1])
            fe = f(xe)
            evals += 1
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (pts[-1] - c) if fr >= vals[-1] else c + 0.5 * (xr - c)
            fc = f(xc)
            evals += 1
            if fc < min(fr, vals[-1]):
                pts[-1], vals[-1] = xc, fc
            else:  # shrink towards the best point
                pts = [pts[0]] + [pts[0] + 0.5 * (p - pts[0]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
                evals += n
    i = int(np.argmin(vals))
    return pts[i], vals[i]
