"""Physical bounds of scenario inputs: the one table of how large a count may be, and the checks that use it.

Every bound is generous (far beyond any machine built or announced) and exists so that a typo such as
`--batch 1e300` or `prompt_len=inf` is a one-line ScenarioError instead of an OverflowError, NaN times or a
multi-gigabyte allocation. Every size in the estimate is then a float64 far below 1e300: the largest product
the graph forms, attention FLOPs ~ batch x prompt^2 x d_model x layers, is (2^24)(2^31)^2(2^17)(2^10) ~ 2^113
~ 1e34.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

import numpy as np

from .errors import ScenarioError, shown


class Bound(NamedTuple):
    max_value: float
    unit: str
    why: str


# name -> largest accepted value (inclusive). Smallest is 1 for every count.
BOUNDS: dict[str, Bound] = {
    "batch": Bound(2**24, "sequences", "16.8 M sequences in flight per replica"),
    "prompt_len": Bound(2**31, "tokens", "2.1 G tokens: 1,000x the longest context of any shipped model"),
    "gen_len": Bound(2**31, "tokens", "as prompt_len"),
    "context_len": Bound(2**31, "tokens", "as prompt_len"),
    "tp": Bound(65_536, "chips", "64 Ki chips per tensor-parallel group"),
    "pp": Bound(65_536, "stages", "64 Ki pipeline stages"),
    "ep": Bound(65_536, "chips", "64 Ki expert-parallel chips"),
    "dp": Bound(65_536, "replicas", "64 Ki data-parallel replicas"),
    "attention_dp": Bound(65_536, "groups", "64 Ki data-parallel attention groups"),
    "moe_tp": Bound(65_536, "chips", "64 Ki chips per expert slice group"),
    "moe_ep": Bound(65_536, "chips", "64 Ki expert-parallel chips"),
    "max_chips": Bound(2**24, "chips", "16.8 M chips in one deployment"),
    "max_batch": Bound(2**24, "sequences", "as batch"),
    "decode_batch": Bound(2**24, "sequences", "as batch"),
    "prefill_batch": Bound(2**24, "sequences", "as batch"),
    "top": Bound(2**24, "rows", "rows printed"),
    "host_overhead_s": Bound(60.0, "s", "a minute of engine host time per step, layer or request (serve's overheads)"),
    "sweep_points": Bound(2_000_000, "grid points",
                          "sweep() evaluates 50,000 points at a time and keeps ~200 B per point in its result "
                          "table: peak RSS stays under ~1 GB at 2,000,000 points"),
    "dpi": Bound(600, "dots per inch", "print quality; the smallest accepted is DPI_MIN"),
    "figure_pixels": Bound(100e6, "pixels", "100 megapixels per chart"),
}
DPI_MIN = 30


def bound(name: str) -> Bound:
    return BOUNDS[name]


def _fail(name: str, value: Any, what: str) -> ScenarioError:
    text = value if isinstance(value, str) else shown(value)
    return ScenarioError(f"{name} must be {what}, got {text}")




def _is_number_like(value: Any) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def check_count(name: str, value: Any, max_value: float | None = None, min_value: int = 1):
    """A count in [min_value, max_value] (max_value defaults to BOUNDS[name]): returns an int for a scalar and a
    float64 array for a list or array of counts.

    Accepts ints, integral floats and numpy numbers, and (possibly nested) lists / arrays of them. Rejects bool,
    strings, None, NaN, inf, non-integral values, values below min_value and above the bound, with a
    ScenarioError naming the argument, the value and the bound.
    """
    hi = BOUNDS[name].max_value if max_value is None else max_value
    if isinstance(value, np.ndarray) and value.ndim == 0:  # np.array(8) is a scalar
        value = value[()]
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = _numeric_array(name, value, _count_range(min_value, hi))
        if min_value <= arr.min() and arr.max() <= hi and np.array_equal(arr, np.floor(arr)):  # in range (not NaN)
            return arr
        bad = ~np.isfinite(arr) | (arr != np.floor(arr)) | (arr < min_value) | (arr > hi)
        if np.any(bad):
            raise _fail(name, float(arr[bad].ravel()[0]), _count_range(min_value, hi))
        return arr
    if not _is_number_like(value):
        raise _fail(name, value, _count_range(min_value, hi))
    f = float(value) if not isinstance(value, numbers.Integral) else None
    if f is not None and (not math.isfinite(f) or f != math.floor(f)):
        raise _fail(name, value, _count_range(min_value, hi))
    n = int(value)
    if n < min_value or n > hi:
        raise _fail(name, value, _count_range(min_value, hi))
    return n


def _count_range(min_value: int, hi: float) -> str:
    """What check_count accepts, in words (written only for an error message)."""
    return f"an integer in [{min_value}, {_fmt_bound(hi)}]"


def _numeric_array(name: str, value, what: str) -> np.ndarray:
    """value as a float64 array, or a ScenarioError for empty, ragged, boolean or non-numeric input."""
    try:
        raw = np.asarray(value)
    except (ValueError, TypeError):  # ragged nesting
        raise _fail(name, value, what + " or a flat list of them") from None
    if raw.size == 0:
        raise _fail(name, value, what + " (the list is empty)")
    if raw.dtype.kind not in "iuf":  # bool, str, object (None, mixed), complex
        raise _fail(name, value, what)
    with np.errstate(over="ignore", invalid="ignore"):
        return raw.astype(np.float64)


def check_amounts(name: str, value: Any, max_value: float) -> np.ndarray:
    """Non-negative real amounts (a scalar or an array: mean batch sizes, token counts of a model step need not be
    whole) in [0, max_value] as a float64 array, else a ScenarioError naming the argument and the bound."""
    what = f"a number in [0, {_fmt_bound(max_value)}]"
    arr = _numeric_array(name, value, what)
    bad = ~np.isfinite(arr) | (arr < 0) | (arr > max_value)
    if np.any(bad):
        raise _fail(name, float(arr[bad].ravel()[0]), what)
    return arr


def check_range(name: str, value: Any, lo: float, hi: float, unit: str = "", lo_open: bool = False) -> float:
    """A finite real number in [lo, hi] ((lo, hi] when lo_open) as a float, else a ScenarioError naming
    the argument, the value, the range and the unit."""
    unit_text = f" {unit}" if unit else ""
    what = f"a number in {'(' if lo_open else '['}{_fmt_bound(lo)}, {_fmt_bound(hi)}]{unit_text}"
    if not _is_number_like(value):
        raise _fail(name, value, what)
    try:
        f = float(value)
    except OverflowError:  # an int beyond float range
        raise _fail(name, value, what) from None
    if not math.isfinite(f) or f < lo or f > hi or (lo_open and f == lo):
        raise _fail(name, value, what)
    return f


def check_grid_points(axis_lengths: dict[str, int], what: str = "sweep") -> int:
    """The number of grid points of a sweep over axes of these lengths; a ScenarioError for an empty axis or a
    grid larger than BOUNDS['sweep_points'] (refused before any array is allocated)."""
    for name, n in axis_lengths.items():
        if n < 1:
            raise ScenarioError(f"{what} axis {name} is an empty list")
    n_points = math.prod(axis_lengths.values())
    hi = BOUNDS["sweep_points"].max_value
    if n_points > hi:
        raise ScenarioError(f"{what} of {n_points:,} grid points is above the bound of {int(hi):,} points "
                            f"({BOUNDS['sweep_points'].why}); split it into several calls")
    return n_points


def check_dpi(dpi: Any) -> int:
    """Chart resolution in dots per inch, an integer in [DPI_MIN, BOUNDS['dpi']]."""
    return check_count("dpi", dpi, min_value=DPI_MIN)


def check_figure_pixels(width_in: float, height_in: float, dpi: int) -> None:
    """A chart of width x height inches at dpi must stay within BOUNDS['figure_pixels']."""
    pixels = width_in * dpi * height_in * dpi
    hi = BOUNDS["figure_pixels"].max_value
    if not pixels <= hi:
        raise ScenarioError(f"a {width_in:g} x {height_in:g} inch chart at {dpi} dpi is {pixels:,.0f} pixels, above "
                            f"the bound of {hi:,.0f}; lower --dpi")


def _fmt_bound(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e16:
        return f"{int(x):,}"
    return f"{x:g}"
