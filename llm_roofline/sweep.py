"""sweep(): a grid of scenarios as one DataFrame, one row per point. batch, prompt_len and gen_len are evaluated
in one vectorized pass (headlines.evaluate_headline, chunk by chunk so memory stays bounded); the discrete choices
(chip, tp, pp, ep, dp, dtypes, efficiency, ...) are looped over."""

from __future__ import annotations

import numpy as np

from .bounds import check_count, check_grid_points
from .chip_fits import DEFAULT_EFFICIENCY, efficiency_label, efficiency_mode, resolved_once
from .efficiency import CalibratedModel
from .errors import ScenarioError, ShardingError
from .estimate import estimate
from .headlines import Headline, evaluate_headline
from .hardware import load_chip
from .model.hf import load_model
from .graph import Dtypes
from .sharding import Sharding, whole_micro_batches
from .uncertainty import headline_band
from .units import as_list

_GRID_AXES = ("batch", "prompt_len", "gen_len")  # broadcast with numpy
_DISCRETE_AXES = ("chip", "tp", "pp", "ep", "dp", "weight_dtype", "act_dtype", "kv_dtype", "efficiency", "attention",
                  "sequence_parallel", "attention_dp", "moe_tp", "moe_ep", "routing_skew", "moe_dispatch",
                  "gpu_memory_utilization")


def sweep(model, chip, **axes):
    """Evaluate a grid of scenarios. Any argument of `estimate` may be a list (chip too).

    batch, prompt_len and gen_len are evaluated in one vectorized pass (numpy broadcasting); the
    discrete choices (chip, tp, pp, ep, dp, dtypes, ...) are looped over. One row per grid point with
    the axes and the headline metrics, the efficiency mode (`efficiency`: calibrated by default, or ideal) and
    the chip's fit behind it (`fit`), and tokens/s per user (1 / TPOT). A batch that is no whole number of a
    sharding's micro-batches (3 at pp 2: sharding.whole_micro_batches), and a sharding the model does not divide
    into (a ShardingError: pp 70 of 61 layers, tp 3 of 32 heads), are left out and named with the reason in the
    frame's attrs["skipped"]; a grid with no point left raises the first refusal. Every other error (a malformed
    value, an unknown efficiency) is raised.
    """
    import itertools

    unknown = set(axes) - set(_GRID_AXES) - set(_DISCRETE_AXES)
    if unknown:
        raise ScenarioError(f"unknown sweep axis {sorted(unknown)}; axes: {', '.join(_GRID_AXES + _DISCRETE_AXES)}")
    defaults = dict(batch=1, prompt_len=2048, gen_len=256)
    grid_vals = [np.atleast_1d(check_count(k, axes.get(k, defaults[k]))).astype(np.float64).ravel() for k in _GRID_AXES]
    check_grid_points({**{k: len(v) for k, v in zip(_GRID_AXES, grid_vals)}, "chip": len(as_list(chip)),
                       **{k: len(as_list(axes[k])) for k in _DISCRETE_AXES if k in axes}})
    mesh = [m.ravel() for m in np.meshgrid(*grid_vals, indexing="ij")]
    spec = load_model(model)
    discrete = {k: as_list(axes[k]) for k in _DISCRETE_AXES if k in axes and k != "chip"}
    chips = as_list(chip)
    parts, batches_left, refused, first_error, refused_batch = [], {}, {}, None, None
    for chip_name, combo in itertools.product(chips, itertools.product(*discrete.values())):
        kw = dict(zip(discrete, combo))
        chip_obj = load_chip(chip_name)
        sh = _checked_sharding(kw)  # a malformed value is the user's mistake: raised, never left out
        run_kw = {**kw, "efficiency": resolved_once(kw.get("efficiency", DEFAULT_EFFICIENCY), chip_obj)}
        whole = whole_micro_batches(mesh[0], sh.pp, sh.attention_dp)
        if not whole.all():
            key = f"pp {sh.pp}" + (f" x attention_dp {sh.attention_dp}" if sh.attention_dp > 1 else "")
            batches_left[key] = sorted(set(batches_left.get(key, ())) | set(mesh[0][~whole].astype(int).tolist()))
            refused_batch = refused_batch or (chip_obj, {**run_kw, "batch": mesh[0][~whole][:1]})
        points = [m[whole] for m in mesh]
        try:
            mult = _multipliers(spec, chip_obj, run_kw, points)
            for lo in range(0, points[0].size, SWEEP_CHUNK_POINTS):  # bounded memory: one chunk of the grid at a time
                part = [m[lo:lo + SWEEP_CHUNK_POINTS] for m in points]
                parts.append(_sweep_columns(evaluate_headline(spec, chip_obj, batch=part[0], prompt_len=part[1],
                                                              gen_len=part[2], **run_kw), kw, part, mult))
        except ShardingError as e:  # a sharding this model does not divide into: left out, named with its reason
            first_error = first_error or e
            varying = {k: v for k, v in kw.items() if len(discrete[k]) > 1}
            refused.setdefault(str(e), []).append(_combo_text(chip_name if len(chips) > 1 else "", varying))
    if not parts:  # nothing left: the first refusal, the sharding's or the estimate's of the batches
        if first_error is not None:
            raise first_error
        evaluate_headline(spec, refused_batch[0], **refused_batch[1])
        raise ScenarioError("no point of the grid to evaluate")  # not reached: the line above raises
    if any(BAND_COLUMNS[0] in cols for _, cols in parts):  # calibrated and ideal combinations: NaN where no band
        for _, cols in parts:
            for k in BAND_COLUMNS:
                cols.setdefault(k, np.nan)
    df = _sweep_frame(parts)
    df.attrs["skipped"] = ([f"{k}: batch {', '.join(map(str, v))}" for k, v in batches_left.items()]
                           + [f"{', '.join(combos)}: {why}" for why, combos in refused.items()])
    return df


_SHARDING_AXES = ("tp", "pp", "ep", "dp", "sequence_parallel", "attention_dp", "moe_tp", "moe_ep", "routing_skew",
                  "moe_dispatch")


def _checked_sharding(kw: dict) -> Sharding:
    """One combination's sharding, its degrees read as estimate() reads them, and its dtypes checked, before any
    model or chip sees them: what fails here is a malformed value, not a combination."""
    counts = {k: check_count(k, kw[k]) for k in ("tp", "pp", "ep", "dp", "attention_dp") if k in kw}
    Dtypes(kw.get("weight_dtype"), kw.get("act_dtype", "bf16"), kw.get("kv_dtype"))
    return Sharding(**{**{k: kw[k] for k in _SHARDING_AXES if k in kw}, **counts})


def _combo_text(chip_name: str, varying: dict) -> str:
    """'h100 pp 70': the chip (where several are swept) and the choices that vary, for the note of what a sweep
    left out."""
    return " ".join([chip_name] * bool(chip_name) + [f"{k} {v}" for k, v in varying.items()])


SWEEP_CHUNK_POINTS = 50_000  # grid points evaluated at once (a few kB each while evaluating)


_BANDED = ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s")  # the columns with a p10 / p90 (headline_band)
BAND_COLUMNS = tuple(f"{k}_{q}" for k in _BANDED for q in ("p10", "p90"))


def _multipliers(spec, chip, run_kw: dict, points) -> dict | None:
    """The prefill and decode band multipliers of one calibrated combination, from est.uncertainty at its grid's
    middle point (each axis's median, a point of the grid): a sweep's rows share them, though the ops' shares move
    them (Llama-3.1-70B on 4 H100s, decode p90: 1.147 at batch 1 x 128 tokens, 1.204 at 256 x 32768); None where
    the efficiency is not a calibrated model."""
    if not isinstance(run_kw["efficiency"], CalibratedModel):
        return None
    mid = [float(np.sort(p)[(p.size - 1) // 2]) for p in points]
    u = estimate(spec, chip, batch=mid[0], prompt_len=mid[1], gen_len=mid[2], **run_kw).uncertainty
    return {k: u["multipliers"].get(k, (1.0, 1.0)) for k in ("prefill", "decode")}


def _sweep_columns(r: Headline, kw: dict, mesh, mult: dict | None = None) -> tuple[int, dict]:
    """The sweep's columns for one evaluated chunk: its axes and the headline metrics (and, calibrated, their p10 /
    p90: uncertainty.headline_band with the combination's multipliers); a value the whole chunk shares (chip,
    discrete axes, efficiency) stays a scalar."""
    m = r.memory
    eff = r.efficiency_model
    n = mesh[0].size
    cols = {"chip": r.chip.name, **kw, "efficiency": efficiency_mode(kw.get("efficiency", DEFAULT_EFFICIENCY)),
            "fit": efficiency_label(eff), "batch": mesh[0], "prompt_len": mesh[1], "gen_len": mesh[2],
            "ttft_s": r.ttft_s, "tpot_s": r.tpot_s, "e2e_s": r.e2e_s,
            "throughput_tokens_per_s": r.throughput_tokens_per_s,
            "throughput_tokens_per_s_per_chip": r.throughput_tokens_per_s_per_chip,
            "tokens_per_s_per_user": 1.0 / r.tpot_s,
            "per_chip_bytes": m.bytes_per_chip, "capacity_bytes": r.chip.engine_capacity_bytes,
            "usable_bytes": m.capacity_bytes,
            "fits": m.bytes_per_chip <= m.capacity_bytes, "max_batch": m.max_batch}
    if mult is not None:
        band = headline_band(mult["prefill"], mult["decode"], cols)
        cols.update({f"{k}_{q}": band[k][i] for k in _BANDED for i, q in enumerate(("p10", "p90"))})
    return n, {k: v if (np.ndim(v) == 0 and not isinstance(v, np.ndarray)) or np.shape(v) == (n,)
               else np.broadcast_to(v, (n,)) for k, v in cols.items()}


def _sweep_frame(parts: list[tuple[int, dict]]):
    """One DataFrame from the chunks' columns, built column by column: a metric's chunks are joined with numpy and
    released at once (the peak is the frame plus one column; one chunk's own arrays are taken as they are); the
    values each chunk shares (chip, discrete axes,
    efficiency) are repeated by pandas from scalars, without converting a million Python strings."""
    import pandas as pd

    index = pd.RangeIndex(sum(n for n, _ in parts))
    columns = {}
    for k in list(parts[0][1]):
        values = [cols.pop(k) for _, cols in parts]
        if all(isinstance(v, np.ndarray) for v in values):
            col = np.concatenate(values) if len(values) > 1 or not values[0].flags.writeable else values[0]
            columns[k] = col.astype(int) if k in ("batch", "prompt_len", "gen_len", "max_batch") else col
        elif all(v is values[0] or (type(v) is type(values[0]) and v == values[0]) for v in values):
            columns[k] = values[0]
        else:  # differs between chunks (a list of chips, dtypes, ...): pandas joins the chunks' scalar columns
            columns[k] = pd.concat([pd.DataFrame({k: v}, index=pd.RangeIndex(n)) for (n, _), v in zip(parts, values)],
                                   ignore_index=True)[k].set_axis(index)
        del values
    return pd.DataFrame(columns, index=index, copy=False)
