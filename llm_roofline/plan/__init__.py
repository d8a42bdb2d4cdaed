"""Capacity planning: the cheapest configuration (chip type x tp x pp x ep x batch x replicas) that meets
latency and load targets, and prefill/decode disaggregation.

Search. For every chip and every sharding (tp, pp, ep) the model allows within max_chips, one vectorized
`evaluate()` call scores a whole array of batch sizes (no Python loop over batches); a cheaper one before it
(`memory.max_batch`, batch = pp) gives the exact largest batch that fits, which joins the array. A
configuration is kept when

  memory   per-chip bytes (weights + KV cache of the batch at prompt + gen tokens + peak prefill activations,
           the estimate's own memory model) <= hbm_bytes x gpu_memory_utilization (0.9, memory.GPU_MEMORY_UTILIZATION);
  ttft     TTFT <= ttft_s;            tpot   mean TPOT <= tpot_s;
  chips    tp x pp x replicas <= max_chips.

Load. Without a load target one replica is planned. With qps (requests/s) or output_tokens_per_s
(= qps x gen_len), a replica serves `batch` sequences per e2e latency (static batch, the estimate's
semantics), so by Little's law concurrent sequences = qps x e2e and replicas = ceil(concurrent / batch).

Cost. A chip-hour costs the chip file's [price] usd_per_hour (or an override); a chip without a price gets
no cost (None / '—') and a note, never 0. usd_per_million_output_tokens is all-in: every chip-second of the
deployment (idle replicas' share included) divided by the output tokens delivered. The split between input
and output tokens follows the phases (ATTRIBUTION): the chip-time of prefill (TTFT x chips, the share
TTFT / e2e of the deployment's time) is charged to input tokens, the chip-time of the decode steps to output
tokens, so usd_per_million_input_tokens x prompt + usd_per_million_output_tokens_decode x gen = all-in x gen.

Ranking: by usd_per_million_output_tokens (then chips, then TPOT) when every chip has a price, else by
chips_total (then cost, then TPOT); `rank_by` overrides. binding_constraint of a row: what stops the same
chip and sharding from taking the next larger batch of the grid (batch is the knob that lowers cost per
token): the first constraint that larger batch fails (memory, ttft, tpot, chips), 'max_batch' at the grid's
end, 'none' when it is feasible (the cost optimum is interior, e.g. limited by the load).

Topologies. A TPU replica must be a slice: a power of two chips (book Part 8, `min_topology =
2 ** ceil(log2(bytes / 16e9))`: LLaMA-3 70B int8 needs 4.38 v5e chips -> a 4x2 = 8-chip slice). GPUs take any
tp x pp. tp beyond the scale-up domain is allowed; its collectives are priced on the scale-out link.

Modules: candidates.py (prices, shardings a model allows, TPU slice shapes), search.py (the static-batch
planner: plan, Plan), explain.py (the explanation text), disaggregate.py (prefill/decode disaggregation).
"""

from ..hardware import Price, chip_prices
from .candidates import ShardingChoice, replica_shape_ok, sharding_candidates
from .disaggregate import Disaggregation, balance, disaggregation
from .search import ATTRIBUTION, BATCH_STEPS, CONSTRAINTS, JSON_KEYS, Plan, plan

__all__ = ["ATTRIBUTION", "BATCH_STEPS", "CONSTRAINTS", "Disaggregation", "JSON_KEYS", "Plan", "Price",
           "ShardingChoice", "balance", "chip_prices", "disaggregation", "plan", "replica_shape_ok",
           "sharding_candidates"]
