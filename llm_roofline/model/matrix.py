"""Matrix: one weight matrix of a block (every spec lists its weights as these), and the kind check the specs share."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelConfigError


def check_kind(what: str, kind: str, known: tuple[str, ...]) -> None:
    if kind not in known:
        raise ModelConfigError(f"{what}.kind must be one of {', '.join(known)}, got {kind!r}")


@dataclass(frozen=True)
class Matrix:
    """One weight matrix W[k, n] applied as y[T, n] = x[T, k] @ W (+ bias[n]).

    family: which quantization family it belongs to ('attn', 'ffn', 'experts', 'shared', 'router',
    'lm_head'); count: how many such matrices the block holds (experts: n_experts).
    """

    name: str
    k: int
    n: int
    bias: bool = False
    family: str = "attn"
    count: int = 1

    @property
    def params(self) -> int:
        return self.count * (self.k * self.n + (self.n if self.bias else 0))
