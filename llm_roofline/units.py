"""Data types, their storage sizes, and engineering-unit formatters.

Inside the package every quantity is in SI base units (bytes, bytes/s, FLOP, FLOP/s, seconds).
Conversion to GB, TB/s, ms happens only here, for display.
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .errors import ScenarioError

# Storage bits per element. tf32 is a compute mode stored in 32-bit words.
DTYPE_BITS: dict[str, int] = {
    "fp32": 32,
    "tf32": 32,
    "bf16": 16,
    "fp16": 16,
    "fp8": 8,
    "int8": 8,
    "int4": 4,
    "fp4": 4,
}
DTYPES = tuple(DTYPE_BITS)

# Aliases users and Hugging Face configs write for the same thing.
_DTYPE_ALIASES = {
    "float32": "fp32", "float": "fp32", "f32": "fp32",
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "f16": "fp16",
    "float8": "fp8", "fp8_e4m3": "fp8", "e4m3": "fp8", "float8_e4m3fn": "fp8", "fp8_e5m2": "fp8",
    "mxfp4": "fp4", "nvfp4": "fp4", "w4": "int4", "w8": "int8",
}


def canonical_dtype(name: str) -> str:
    """'bfloat16' -> 'bf16'; raises ScenarioError for an unknown dtype."""
    if type(name) is str and name in DTYPE_BITS:  # a canonical name already
        return name
    key = str(name).strip().lower()
    key = _DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BITS:
        raise ScenarioError(f"unknown dtype {name!r}; known: {', '.join(DTYPES)}")
    return key


def everywhere(mask) -> bool:
    """Whether a condition (a bool, or a bool array over a grid) holds at every point: a formula that guards some
    points (np.where on the mask it computed once) takes its plain form when it holds everywhere (the same numbers,
    fewer passes)."""
    return bool(mask.all()) if type(mask) is np.ndarray else bool(mask)


def where_positive(x, fn, default):
    """fn(x) where x > 0 and `default` where not (fn is given 1 there, so it never divides by 0 or takes a log of
    it); fn(x) at once where x > 0 everywhere (everywhere), `default` for a scalar x <= 0."""
    known = x > 0
    if everywhere(known):
        return fn(x)
    if type(known) is not np.ndarray:
        return default
    return np.where(known, fn(np.where(known, x, 1.0)), default)


def f64(x):
    """x as float64: a numpy float64 scalar for a scalar or a 0-d array (its arithmetic is cheaper than a 0-d
    array's, the values the same), else a float64 array."""
    if type(x) is np.float64 or (type(x) is np.ndarray and x.dtype == np.float64 and x.ndim):
        return x
    if type(x) is float or type(x) is int:  # a Python number: the same float64 without an array made first
        return np.float64(x)
    x = np.asarray(x, dtype=np.float64)
    return x[()] if x.ndim == 0 else x


def memo_by_identity(maxsize: int = 64):
    """Remember f(obj, *args) for an immutable obj (a ModelSpec: frozen dataclasses and tuples all the way down),
    keyed by the object's identity and the other (hashable) arguments; the object is kept while its entry is, so its
    id is not reused. Least recently used entries go first. Thread-safe: two threads may compute an entry once each."""
    def decorate(f):
        cache: OrderedDict = OrderedDict()
        lock = threading.Lock()

        @functools.wraps(f)
        def remembered(obj, *args):
            key = (id(obj),) + args
            with lock:
                hit = cache.get(key)
                if hit is not None and hit[0] is obj:
                    cache.move_to_end(key)
                    return hit[1]
            value = f(obj, *args)
            with lock:
                cache[key] = (obj, value)
                while len(cache) > maxsize:
                    cache.popitem(last=False)
            return value

        return remembered
    return decorate


def dtype_bytes(name: str) -> float:
    """Bytes per element of a dtype (0.5 for 4-bit types)."""
    return DTYPE_BITS[canonical_dtype(name)] / 8


@dataclass(frozen=True)
class WeightFormat:
    """How weights are stored: element dtype plus the quantization scales that come with it.

    A group of `group_size` consecutive weights along the input (contracting) dimension shares one
    scale of `scale_bits` bits (plus a zero point of `zero_bits` for asymmetric schemes such as GPTQ/AWQ).
    `group_size=None` means one scale per output channel (per-channel quantization): the group is the
    whole input dimension. Unquantized 16/32-bit weights carry no scales.
    """

    dtype: str
    group_size: int | None = None
    scale_bits: int = 0
    zero_bits: int = 0

    def bits_per_weight(self, k_in: float) -> float:
        """Average storage bits per weight of a matrix with input dimension k_in, scales included."""
        group = self.group_size or k_in
        return DTYPE_BITS[self.dtype] + (self.scale_bits + self.zero_bits) / group

    @property
    def scale_block(self) -> float:
        """Weights sharing one scale in a block-scaled fp8 format (DeepSeek's 128x128 blocks: 16384; compressed-
        tensors fp8 groups), 0 for per-tensor / per-channel scales and other dtypes: ops.Op.weight_block."""
        return float(self.group_size) if self.dtype == "fp8" and self.group_size else 0.0

    def gemm_storage(self, k_in: float) -> dict:
        """The storage fields of ops.gemm for a matrix with input dimension k_in: bits per weight, scale block,
        element dtype."""
        return {"bits_per_weight": self.bits_per_weight(k_in), "weight_block": self.scale_block,
                "weight_dtype": self.dtype}

    @property
    def label(self) -> str:
        if not self.scale_bits:
            return self.dtype
        g = f"g{self.group_size}" if self.group_size else "per-channel"
        zeros = f", {self.zero_bits}-bit zeros" if self.zero_bits else ""
        return f"{self.dtype} ({g}, {self.scale_bits}-bit scales{zeros})"


def weight_format(dtype: str, group_size: int | None = None) -> WeightFormat:
    """The default storage format of weights in a dtype.

    - 16/32-bit: no scales.
    - int8 / fp8: one fp32 scale per output channel (per-channel), unless a group size is given.
    - int4: GPTQ/AWQ style, groups of 128 along the input dim, fp16 scale + 4-bit zero point.
    - fp4: MXFP4 style, blocks of 32 sharing one 8-bit exponent scale (OCP MX spec).
    """
    return _weight_format(canonical_dtype(dtype), group_size)


@lru_cache(maxsize=256)
def _weight_format(d: str, group_size: int | None) -> WeightFormat:  # a WeightFormat is immutable: one per format
    if DTYPE_BITS[d] >= 16:
        return WeightFormat(d)
    if d in ("int8", "fp8"):
        return WeightFormat(d, group_size, scale_bits=32)
    if d == "int4":
        return WeightFormat(d, group_size or 128, scale_bits=16, zero_bits=4)
    return WeightFormat(d, group_size or 32, scale_bits=8)  # fp4


# ---------------------------------------------------------------- formatting (report layer only)
_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""),
             (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]


def sig3(x: float) -> str:
    """Three significant digits, no exponent for ordinary magnitudes: 0.0123 -> '0.0123', 1234 -> '1230'; from 1e9 on
    an exponent (9.86e+28, not 29 digits: a load far past saturation)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf"
    if abs(x) >= 1e9:
        return f"{x:.3g}"
    digits = 3 - int(math.floor(math.log10(abs(x)))) - 1
    r = round(x, digits)
    if digits <= 0:
        return f"{int(r):d}"
    return f"{r:.{digits}f}"


def short_number(x) -> str:
    """A scalar (or one-element array) as 6 significant digits, '[grid]' for a longer array: formulas' text."""
    if isinstance(x, (float, int)):  # numpy float64 too
        return f"{float(x):.6g}"
    a = np.asarray(x)
    return f"{float(a.reshape(-1)[0]):.6g}" if a.size == 1 else "[grid]"


def eng(x: float, unit: str = "") -> str:
    """Engineering notation with an SI prefix and three significant digits: eng(3.35e12, 'B/s') -> '3.35 TB/s'."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x == 0:
        return f"0 {unit}".strip()
    for scale, prefix in _PREFIXES:
        if abs(x) >= scale * 0.9995:
            return f"{sig3(x / scale)} {prefix}{unit}".strip()
    return f"{x:.3g} {unit}".strip()


def band_span(u: dict, key: str, fmt) -> str:
    """'322 ms–433 ms' (or '424 ms–saturated'): the p10-p90 of one ServingEstimate.uncertainty entry; '' where the
    number itself is undefined (NaN: no TPOT with one generated token)."""
    lo, hi = u[key]["p10"], u[key]["p90"]
    if math.isnan(lo) or math.isnan(hi):
        return ""
    return f"{fmt(lo)}–{fmt(hi) if hi < math.inf else 'saturated'}"


def band_spans(u: dict, named) -> str:
    """'TTFT 322 ms–433 ms, TPOT 37.3 ms–64.4 ms': band_span in seconds of each (name, key) of an uncertainty dict,
    leaving out the numbers it has none of (None) or that are undefined (NaN)."""
    spans = [(name, band_span(u, key, fmt_seconds)) for name, key in named if u.get(key)]
    return ", ".join(f"{name} {span}" for name, span in spans if span)


def p90_misses(u: dict, judged) -> list[str]:
    """'TPOT (55.5 ms > 50.0 ms)' for each (name, key, target) of an uncertainty dict whose p90 passes the target
    (no target, no number or a NaN one: not missed)."""
    return [f"{name} ({fmt_seconds(u[key]['p90'])} > {fmt_seconds(target)})" for name, key, target in judged
            if target and u.get(key) and u[key]["p90"] > target]


def fmt_percent(share: float | None) -> str:
    """A share as a whole percentage ('12%'); None or NaN (nothing ran: serve's points with no room) as '—'."""
    if share is None or (isinstance(share, float) and math.isnan(share)):
        return "—"
    return f"{100 * share:.0f}%"


def fmt_seconds(t: float | None) -> str:
    """Seconds shown in s / ms / µs with three significant digits."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "—"
    if t == 0:
        return "0"
    if t == math.inf:  # a queue past saturation
        return "∞"
    if t >= 1:
        return f"{sig3(t)} s"
    if t >= 1e-3:
        return f"{sig3(t * 1e3)} ms"
    if t >= 1e-6:
        return f"{sig3(t * 1e6)} µs"
    return f"{sig3(t * 1e9)} ns"


# ---------------------------------------------------------------- plain data (JSON, tables)
def json_ready(x):
    """Recursively: numpy scalars -> Python numbers, tuples -> lists, nan -> None, +-inf -> "inf" / "-inf"
    (JSON has neither). The one converter every to_dict and JSON writer uses."""
    if isinstance(x, dict):
        return {k: json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v) for v in x]
    if isinstance(x, np.ndarray):
        return json_ready(x.tolist())
    if isinstance(x, np.generic):
        return json_ready(x.item())
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def records(df) -> list[dict]:
    """Rows of a DataFrame as dicts with NaN -> None (an empty list for None or an empty frame)."""
    if df is None or len(df) == 0:
        return []
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()}
            for rec in df.to_dict(orient="records")]


def as_list(v) -> list:
    """An argument that may be one value or several, as a list: a list, tuple or range's items, an array's elements
    (flattened), else [v] (a string, a number, None, a Chip: one value)."""
    if isinstance(v, np.ndarray):
        return list(np.ravel(v))
    return list(v) if isinstance(v, (list, tuple, range)) else [v]


def remembered(memo: dict | None, key, fn, *args):
    """fn(*args), kept in `memo` (a dict the caller keeps) under `key`; memo None: computed afresh."""
    if memo is None:
        return fn(*args)
    if key not in memo:
        memo[key] = fn(*args)
    return memo[key]


def sub_memo(memo: dict | None, key) -> dict | None:
    """A dict kept in `memo` under `key`, for a memo of its own (graph.build_ops' parts); None without a memo."""
    return None if memo is None else memo.setdefault(key, {})


def joined_columns(parts: list[dict], sizes: list[int]) -> dict[str, np.ndarray]:
    """The columns of several parts (dicts of the same keys, part i of sizes[i] rows: each value an array or list of
    its rows, or one value they share) joined: each key's parts concatenated, a shared value repeated."""
    out = {}
    for k in parts[0]:
        values = [p[k] for p in parts]
        kind = object if any(isinstance(v, str) for v in values) else None  # text stays Python str
        if not any(isinstance(v, (np.ndarray, list, tuple)) for v in values):  # one value a part: repeated at once
            out[k] = np.repeat(np.array(values, dtype=kind), sizes)
        else:
            out[k] = np.concatenate([np.full(n, v, dtype=kind) if np.ndim(v) == 0 else np.asarray(v)
                                     for v, n in zip(values, sizes)])
    return out


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(rows, axis=0, return_index=True, return_inverse=True) of a 2-d float array without NaNs, the same
    three arrays (the distinct rows in lexicographic order, each one's first row, every row's distinct row), by one
    stable lexsort (np.unique with an axis sorts a structured view: ~10x slower on the serving planner's small grids)."""
    order = np.lexsort(rows.T[::-1])  # by the first column, then the next, ...; stable: equal rows keep their order
    ranked = rows[order]
    new = np.ones(len(rows), bool)
    new[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    inverse = np.empty(len(rows), np.intp)
    inverse[order] = np.cumsum(new) - 1
    return ranked[new], order[new], inverse


def array_key(x) -> tuple:
    """A float64 array (or number) as a dict key: its shape and bytes."""
    a = np.asarray(x, dtype=np.float64)
    return a.shape, a.tobytes()
