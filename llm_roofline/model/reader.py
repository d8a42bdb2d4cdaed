"""Validated reads of config keys: integers, divisibility, and the reader with presence semantics."""

from __future__ import annotations

import math
from typing import Any

from ..errors import ModelConfigError
from .architectures import HEADS_KEYS, HIDDEN_KEYS, KV_HEADS_KEYS, NONNEGATIVE_KEYS, POSITIVE_KEYS, ZERO_MEANS_OFF


def validated_dims(raw: dict) -> dict:
    """A copy of raw with every dimension key checked: positive (or non-negative) integers; 4096.0 -> 4096."""
    out = dict(raw)
    for key in POSITIVE_KEYS + NONNEGATIVE_KEYS:
        if raw.get(key) is None:
            continue
        allow_zero = key in NONNEGATIVE_KEYS or key in ZERO_MEANS_OFF
        out[key] = as_int(raw[key], key, allow_zero)
    return out


def check_head_counts(raw: dict) -> None:
    """Head counts that must divide, checked on the stated keys before any library sees them."""
    if raw.get("kv_lora_rank"):
        return
    heads_key = next((k for k in HEADS_KEYS if raw.get(k)), None)
    if heads_key is None:
        return
    kv_key = next((k for k in KV_HEADS_KEYS if raw.get(k)), None)
    if kv_key is not None:
        require_divides(raw[heads_key], heads_key, raw[kv_key], kv_key)
    hidden_key = next((k for k in HIDDEN_KEYS if raw.get(k)), None)
    if hidden_key is not None and raw.get("head_dim") is None:
        require_divides(raw[hidden_key], hidden_key, raw[heads_key], heads_key, " and the config gives no head_dim")


def require_divides(n: int, n_key: str, d: int, d_key: str, why: str = "") -> None:
    if n % d:
        raise ModelConfigError(f"{n_key} ({n}) is not divisible by {d_key} ({d}){why}")


def as_int(value: Any, key: str, allow_zero: bool = False) -> int:
    ok = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if isinstance(value, bool) or not ok:
        raise ModelConfigError(f"{key} must be an integer, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ModelConfigError(f"{key} must be {'non-negative' if allow_zero else 'positive'}, got {value!r}")
    return int(value)



class ConfigReader:
    """Key lookup with presence semantics: a key the file states wins; else the architecture default (noted)."""

    def __init__(self, raw: dict, defaults: dict, default_label: str, notes: list[str]):
        self.raw = raw
        self.defaults = defaults
        self.default_label = default_label
        self.assumptions = notes

    def assume(self, sentence: str) -> None:
        if sentence not in self.assumptions:
            self.assumptions.append(sentence)

    def stated(self, *keys: str) -> str | None:
        """The first key the file states with a non-null value."""
        return next((k for k in keys if self.raw.get(k) is not None), None)

    def get(self, *keys: str, default: Any = None) -> Any:
        """Value of the first key the file states; else, when no key is written at all, the default's."""
        for k in keys:
            if k in self.raw:
                return self.raw[k] if self.raw[k] is not None else default
        for k in keys:
            if self.defaults.get(k) is not None:
                return self.defaults[k]
        return default

    def flag(self, trait: bool | str) -> bool:
        """A family trait: a literal bool, or the name of the config key that holds it (absent: False)."""
        return bool(self.get(trait, default=False)) if isinstance(trait, str) else bool(trait)

    def dim(self, *keys: str, fallback: tuple[int, str] | None = None, required: bool = True) -> int | None:
        """A positive integer: stated in the file; else the architecture default; else fallback (value, reason).

        Every value that is not stated in the file appends a sentence to the assumptions.
        """
        key = self.stated(*keys)
        if key is not None:
            return as_int(self.raw[key], key)
        default_key = next((k for k in keys if k not in self.raw and self.defaults.get(k) is not None), None)
        if default_key is not None:
            value = as_int(self.defaults[default_key], default_key)
            self.assume(f"{keys[0]} absent from the config: {self.default_label} {value}.")
            return value
        if fallback is not None:
            value, reason = fallback
            self.assume(f"{keys[0]} absent from the config: {reason}.")
            return value
        if required:
            raise ModelConfigError(f"the config has no {keys[0]}" +
                                   (f" (nor {', '.join(keys[1:])})" if len(keys) > 1 else ""))
        return None
