"""Validated reads of config keys: bounded integers, typed values, and the reader with presence semantics.

Every value is checked where it is read: an integer is an int (or an integral float), not a bool, positive
(or zero where zero means "none"), and under the physical bound of its kind (key_names.BOUNDS); lists, dicts,
strings and bools are what they claim to be. A failure is a ModelConfigError naming the key and the accepted values.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ModelConfigError, UnsupportedArchitectureError, shown
from .key_names import BOUNDS, BOUND_OF_KEY, HEADS_KEYS, HIDDEN_KEYS, KV_HEADS_KEYS, ZERO_ALLOWED


def is_finite_number(value: Any) -> bool:
    """A real number, not a bool, and finite: any int (math.isfinite would overflow on a huge one), a float but inf
    and NaN."""
    return not isinstance(value, bool) and (isinstance(value, int) or isinstance(value, float) and math.isfinite(value))


def as_int(value: Any, key: str, allow_zero: bool = False, bound: int | None = None) -> int:
    """value as an int: an int or integral float, not a bool, positive (or zero), at most the key's bound."""
    ok = (isinstance(value, int) and not isinstance(value, bool)) or \
        (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if not ok:
        raise ModelConfigError(f"{key} must be an integer, got {shown(value)}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ModelConfigError(f"{key} must be {'non-negative' if allow_zero else 'positive'}, got {shown(value)}")
    limit = bound if bound is not None else bound_of(key)
    if value > limit:
        kind = BOUND_OF_KEY.get(key, "width") if bound is None else "value"
        raise ModelConfigError(f"{key} = {shown(value)} exceeds the physical bound for a {kind}: at most {limit:,}")
    return int(value)


def bound_of(key: str) -> int:
    """The largest value a dimension key may take (key_names.BOUNDS, by the key's kind; widths by default)."""
    return BOUNDS[BOUND_OF_KEY.get(key, "width")]


def require_divides(n: int, n_key: str, d: int, d_key: str, why: str = "") -> None:
    if n % d:
        raise ModelConfigError(f"{n_key} ({n}) is not divisible by {d_key} ({d}){why}")


def check_head_counts(raw: dict, default_head_dim: Any = None) -> None:
    """Head counts that must divide, checked on the stated keys before anything reads them (hidden / heads only when
    neither the file nor the architecture gives a head_dim)."""
    if raw.get("kv_lora_rank"):
        return
    heads_key = next((k for k in HEADS_KEYS if raw.get(k) is not None), None)
    if heads_key is None:
        return
    heads = as_int(raw[heads_key], heads_key)
    kv_key = next((k for k in KV_HEADS_KEYS if raw.get(k) is not None), None)
    if kv_key is not None:
        require_divides(heads, heads_key, as_int(raw[kv_key], kv_key), kv_key)
    hidden_key = next((k for k in HIDDEN_KEYS if raw.get(k) is not None), None)
    if hidden_key is not None and raw.get("head_dim") is None and default_head_dim is None:
        require_divides(as_int(raw[hidden_key], hidden_key), hidden_key, heads, heads_key,
                        " and the config gives no head_dim")


class ConfigReader:
    """Key lookup with presence semantics: a key the file states wins; else the architecture default (noted).

    Every key looked up is remembered (`used`), so that keys which shape a model and were never read can be named.
    """

    def __init__(self, raw: dict, defaults: dict, default_label: str, notes: list[str], model_type: str = ""):
        self.raw = raw
        self.defaults = defaults
        self.default_label = default_label
        self.model_type = model_type  # the text model's, named in refusals
        self.assumptions = notes
        self.used: set[str] = set()

    def assume(self, sentence: str) -> None:
        if sentence not in self.assumptions:
            self.assumptions.append(sentence)

    def stated(self, *keys: str) -> str | None:
        """The first key the file states with a non-null value."""
        self.used.update(keys)
        return next((k for k in keys if self.raw.get(k) is not None), None)

    def get(self, *keys: str, default: Any = None) -> Any:
        """Value of the first key the file states; else, when no key is written at all, the default's."""
        self.used.update(keys)
        for k in keys:
            if k in self.raw:
                return self.raw[k] if self.raw[k] is not None else default
        for k in keys:
            if self.defaults.get(k) is not None:
                return self.defaults[k]
        return default

    def typed(self, key: str, types: tuple[type, ...], what: str, default: Any = None) -> Any:
        """get(key), checked to be one of `types` (bools are not ints); `what` names the accepted values."""
        value = self.get(key, default=default)
        if value is None or (isinstance(value, types) and not (isinstance(value, bool) and bool not in types)):
            return value
        raise ModelConfigError(f"{key} must be {what}, got {shown(value)}")

    def boolean(self, key: str, default: bool = False) -> bool:
        return self.typed(key, (bool,), "true or false", default)

    def switch(self, key: str, built: bool | str, why: str) -> None:
        """A switch of the checkpoint's config read only at the value the reader models, `built` (absent: that value):
        any other is UnsupportedArchitectureError, one line naming the key, its value and the model type, then `why`
        (what is read, or what the other value would need)."""
        what = "true or false" if isinstance(built, bool) else f"a string ({built!r} is read)"
        value = self.typed(key, (type(built),), what, built)
        if value != built:
            text = str(value).lower() if isinstance(value, bool) else shown(value)
            raise UnsupportedArchitectureError(f"{key}={text} (model_type={self.model_type}): {why}")

    def flag(self, trait: bool | str) -> bool:
        """An architecture trait: a literal bool, or the name of the config key that holds it (absent: False)."""
        if isinstance(trait, str):
            value = self.get(trait, default=False)
            if not isinstance(value, (bool, int)) or isinstance(value, int) and value not in (0, 1):
                raise ModelConfigError(f"{trait} must be true or false, got {shown(value)}")
            return bool(value)
        return bool(trait)

    def count(self, key: str, default: int = 0, allow_zero: bool = True) -> int:
        """A bounded non-negative integer (a layer index, a count): stated, else the default."""
        value = self.get(key, default=default)
        return as_int(value, key, allow_zero=allow_zero)

    def int_list(self, key: str, length: int | None = None, default: Any = None) -> list[int] | None:
        """A list of bounded non-negative integers (layer indices, 0/1 flags); exactly `length` long when given."""
        value = self.typed(key, (list,), "a list of integers", default)
        if value is None:
            return None
        if length is not None and len(value) != length:
            raise ModelConfigError(f"{key} must list one entry per layer ({length}), got {len(value)}")
        return [as_int(v, f"{key}[{i}]", allow_zero=True, bound=bound_of(key) if key in BOUND_OF_KEY
                       else BOUNDS["layers"]) for i, v in enumerate(value[: BOUNDS["layers"] + 1])]

    def str_list(self, key: str, length: int, trailing: int = 0, allowed: tuple[str, ...] = ()) -> list[str] | None:
        """A list of strings, one per layer (layer_types, mlp_layer_types), each one of `allowed` where given;
        `trailing` more entries (Step-3.5's MTP layers at the end of its per-layer lists) are allowed and dropped."""
        value = self.typed(key, (list,), "a list of strings", None)
        if value is None:
            return None
        if trailing and len(value) == length + trailing:
            value = value[:length]
        if len(value) != length:
            mtp = f", or {length + trailing} with the MTP layers" if trailing else ""
            raise ModelConfigError(f"{key} must list one entry per layer ({length}{mtp}), got {len(value)}")
        bad = [v for v in value if not isinstance(v, str)]  # a list, not next(..., None): null entries are bad too
        if bad:
            raise ModelConfigError(f"{key} must be a list of strings, got an entry {shown(bad[0])}")
        bad = [v for v in value if allowed and v not in allowed]
        if bad:
            raise ModelConfigError(f"{key} entry {bad[0][:40]!r} is not one of {', '.join(map(repr, allowed))}")
        return value

    def dim(self, *keys: str, fallback: tuple[int, str] | None = None, required: bool = True) -> int | None:
        """A positive bounded integer: stated in the file; else the architecture default; else fallback (value, reason).

        Every value that is not stated in the file appends a sentence to the assumptions.
        """
        key = self.stated(*keys)
        if key is not None:
            value = self._uniform(key, self.raw[key])
            return as_int(value, key, allow_zero=key in ZERO_ALLOWED) or self._absent(keys, fallback, required)
        default_key = next((k for k in keys if k not in self.raw and self.defaults.get(k) is not None), None)
        if default_key is not None:
            value = as_int(self.defaults[default_key], default_key)
            self.assume(f"{keys[0]} absent from the config: {self.default_label} {value}.")
            return value
        return self._absent(keys, fallback, required)

    def _uniform(self, key: str, value: Any) -> Any:
        """A per-layer list whose entries are all equal (Hunyuan moe_topk [8, 8, ...]) read as its one value."""
        if not isinstance(value, list):
            return value
        if value and all(v == value[0] and type(v) is type(value[0]) for v in value):
            self.assume(f"{key} lists one value per layer, all {shown(value[0])}: read as that value.")
            return value[0]
        raise ModelConfigError(f"{key} must be an integer (or a per-layer list of one repeated value), "
                               f"got a list of {len(value)} differing entries")

    def _absent(self, keys: tuple[str, ...], fallback: tuple[int, str] | None, required: bool) -> int | None:
        if fallback is not None:
            value, reason = fallback
            self.assume(f"{keys[0]} absent from the config: {reason}.")
            return value
        if required:
            raise ModelConfigError(f"the config has no {keys[0]}" +
                                   (f" (nor {', '.join(keys[1:])})" if len(keys) > 1 else ""))
        return None
