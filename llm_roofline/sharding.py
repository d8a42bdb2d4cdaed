"""Sharding(tp, pp, ep, dp): how one model replica is split across chips, and what collectives cost.

Shard styles (gpt-fast's colwise / rowwise, Megatron-LM's tensor parallelism):
- column-parallel: W[k, n] split on n (qkv, up_gate): no communication before, outputs stay sharded;
- row-parallel: W[k, n] split on k (o_proj, down): partial sums, then an all-reduce of y[T, d]
  (or reduce-scatter + all-gather with sequence parallelism);
- vocab-parallel: embedding rows and LM-head columns split on the vocabulary;
- expert-parallel: whole experts split over `ep` chips (all-to-all dispatch and combine);
- replicated: norms, router, rope — every chip does the same work.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ShardingError


@dataclass(frozen=True)
class Sharding:
    tp: int = 1  # tensor parallel: heads, d_ff, vocab split over tp chips
    pp: int = 1  # pipeline parallel: layers split over pp stages, the batch over pp micro-batches
    ep: int = 1  # expert parallel: experts split over ep chips of the tp group (ep divides tp)
    dp: int = 1  # data parallel: independent replicas (multiply throughput, not latency)
    sequence_parallel: bool = False

    def __post_init__(self):
        for name in ("tp", "pp", "ep", "dp"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ShardingError(f"{name} must be a positive integer, got {v!r}")
        if self.tp % self.ep:
            raise ShardingError(f"ep={self.ep} must divide tp={self.tp}: experts are split over chips of the "
                                f"tensor-parallel group (each expert is then tp/ep-way tensor-sliced)")

    @property
    def chips_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def chips(self) -> int:
        return self.tp * self.pp * self.dp


def split(total: int, parts: int, what: str) -> int:
    """total / parts when it divides; a ShardingError naming both numbers otherwise (never rounded)."""
    if parts == 1:
        return total
    if total % parts:
        raise ShardingError(f"{what} = {total} is not divisible by {parts}")
    return total // parts
