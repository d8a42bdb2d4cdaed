"""What the planner may choose from: the shardings (tp, pp, ep) a model allows on a chip, and the chips' prices
(hardware.chip_prices)."""

from __future__ import annotations

from typing import NamedTuple

from ..errors import RooflineError
from ..units import memo_by_identity


class ShardingChoice(NamedTuple):
    """One model replica's sharding: tensor-, pipeline- and expert-parallel degrees."""

    tp: int
    pp: int
    ep: int

    @property
    def chips(self) -> int:
        return self.tp * self.pp

    def __str__(self) -> str:
        return f"tp={self.tp} pp={self.pp} ep={self.ep}"


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _is_power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def replica_shape_ok(chip, chips: int) -> bool:
    """Whether `chips` chips can form one replica on this chip's topology. TPU (torus): a slice of a power of
    two chips (book Part 8 min_topology; GCP v5e slices are 1, 4, 8, 16, ... 256), whole slices beyond one pod
    (a multiple of the domain). Switch / mesh GPUs: any count."""
    if chip.scaleup.topology != "torus":
        return True
    d = chip.scaleup.domain_size
    return _is_power_of_two(chips) if chips <= d else chips % d == 0


@memo_by_identity(maxsize=16)
def _divisibility(spec) -> dict:
    """{(tp, pp, ep): why the graph builder refuses that sharding of `spec` (its error message), or None}, filled by
    sharding_candidates and kept per model (the check builds a whole prefill graph and does not depend on the chip
    or the call)."""
    return {}


def sharding_candidates(spec, chip, max_chips: int, tp=None, pp=None,
                        ep=None) -> tuple[list[ShardingChoice], list[str]]:
    """(tp, pp, ep) choices the model allows on `chip` within max_chips, and why others were skipped.

    Candidates: tp up to max_chips (heads, KV heads, d_ff, vocabulary-free checks via the graph builder),
    pp a divisor of the layer count or a power of two (layers it does not divide split as vLLM splits them:
    sharding.stage_layers), ep a divisor of tp that divides the experts (MoE only). The graph builder
    decides divisibility (ShardingError: skipped, never rounded), remembered per model (_divisibility: it does
    not depend on the chip)."""
    from ..graph import Phase, build_ops
    from ..sharding import Sharding

    checked = _divisibility(spec)
    tps = sorted(set(tp)) if tp else list(range(1, max_chips + 1))
    pps = sorted(set(pp)) if pp else sorted(set(_divisors(spec.n_layers, max_chips)) | {  # and uneven splits by 2^k
        2 ** i for i in range(1, max_chips.bit_length()) if 2 ** i <= min(max_chips, spec.n_layers)})
    skipped: list[str] = []
    out = []
    for t in tps:
        eps = sorted(set(ep)) if ep else (_divisors(t, t) if spec.is_moe else [1])
        for p in pps:
            if t * p > max_chips or not replica_shape_ok(chip, t * p):
                continue
            for e in eps:
                if (t, p, e) not in checked:
                    try:
                        build_ops(spec, Phase.prefill(p, 1), Sharding(t, p, e))
                        checked[t, p, e] = None
                    except RooflineError as err:
                        checked[t, p, e] = str(err)
                err = checked[t, p, e]
                if err is not None:
                    if tp or pp or ep:  # only explicit requests deserve a note
                        skipped.append(f"tp={t} pp={p} ep={e}: {err}")
                    continue
                out.append(ShardingChoice(t, p, e))
    return out, skipped
