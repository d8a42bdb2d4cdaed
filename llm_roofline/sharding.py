"""Sharding(tp, pp, ep, dp): how one model replica is split across chips, and what collectives cost.

Shard styles (gpt-fast's colwise / rowwise, Megatron-LM's tensor parallelism), the `style` of every op:
- column: W[k, n] split on n (qkv, up_gate, q_b, kv_b) and the per-head / per-column work after it
  (rope, q/k norms, attention, activation): no communication before, outputs stay sharded
  (an all-gather of the sequence shards before it under sequence parallelism);
- row: W[k, n] split on k (o_proj, down): partial sums, then an all-reduce of y[T, d]
  (or a reduce-scatter under sequence parallelism);
- vocab_in / vocab_out: embedding rows (partial rows, all-reduced) and LM-head columns (logits all-gathered)
  split on the vocabulary;
- expert: whole experts split over `ep` chips, each tensor-sliced over tp/ep (all-to-all dispatch and
  combine under sequence parallelism, else the ordinary all-reduce);
- sequence: per-token work on the residual stream (norms, residual adds): replicated, or split over tp
  under sequence parallelism;
- replicated: router, MLA down-projections, KV writes of a shared latent: every chip does the same work.

This module is the one place that turns a style into per-chip sizes (shard_count, kv_heads_per_chip) and
into the collectives around an op (collective_before, collective_after).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .bounds import BOUNDS
from .errors import ShardingError, shown

if TYPE_CHECKING:  # only for annotations: hardware does not import sharding
    from .hardware import Chip
    from .model.spec import AttentionSpec, LayerGroup, MixerSpec, ModelSpec


# How the routed experts of a layer get the tokens of every attention group (attention_dp > 1), and return them:
# "allgather": each group's tokens all-gathered across the groups, every chip's experts run over all of them (the
#   other chips' rows walked, not computed), the outputs reduce-scattered back and all-reduced over the group's tp
#   chips: the default of vLLM (ParallelConfig.all2all_backend = "allgather_reducescatter"), SGLang and TensorRT-LLM;
# "all_to_all": each token's top-k copies dispatched to the chips holding its experts and combined back (DeepEP, the
#   kernels of the all_to_all fit: vLLM's --all2all-backend deepep_*, SGLang's --moe-a2a-backend deepep).
MOE_DISPATCHES = ("allgather", "all_to_all")
MOE_DISPATCH = MOE_DISPATCHES[0]


@dataclass(frozen=True)
class Sharding:
    """How one model replica is laid out on chips.

    Attention runs on `attention_dp` groups of `tp` chips, each group holding whole KV heads for its own
    sequences (data-parallel attention, as vLLM/SGLang "DP attention": no KV replication across groups);
    the FFN of a layer spans all tp x attention_dp chips of a pipeline stage: a dense MLP tensor-parallel
    over them, routed experts split over `moe_ep` chips and each expert sliced over `moe_tp` chips
    (moe_tp x moe_ep = tp x attention_dp). `ep` is the simple spelling of moe_ep. Pipeline stages split
    the layers; `dp` independent replicas multiply throughput, not latency.
    """

    tp: int = 1  # tensor parallel within an attention group: heads, d_ff, vocab split over tp chips
    pp: int = 1  # pipeline parallel: layers split over pp stages, the batch over pp micro-batches
    ep: int = 1  # expert parallel (= moe_ep when moe_ep is not given)
    dp: int = 1  # data parallel: independent replicas (multiply throughput, not latency)
    sequence_parallel: bool = False
    attention_dp: int = 1  # attention groups of tp chips, each with its own sequences and KV cache
    moe_tp: int | None = None  # chips one expert is sliced over (default: ffn_chips / moe_ep)
    moe_ep: int | None = None  # chips the routed experts are split over (default: ep)
    routing_skew: float = 1.0  # busiest expert group's load / the mean (1: balanced routing)
    moe_dispatch: str = MOE_DISPATCH  # how routed tokens reach their experts across attention groups (MOE_DISPATCHES)

    def __post_init__(self):
        for name in ("tp", "pp", "ep", "dp", "attention_dp"):
            _check_degree(name, getattr(self, name))
        sp = self.sequence_parallel
        if not isinstance(sp, (bool, np.bool_)) and not (isinstance(sp, (int, np.integer)) and sp in (0, 1)):
            raise ShardingError(f"sequence_parallel must be True or False, got {shown(sp)}")
        object.__setattr__(self, "sequence_parallel", bool(sp))
        ep = _check_degree("moe_ep", self.moe_ep) if self.moe_ep is not None else self.ep
        if self.moe_ep is not None and self.ep not in (1, ep):
            raise ShardingError(f"ep={self.ep} and moe_ep={self.moe_ep} disagree; give one of them")
        if self.ffn_chips % ep:
            raise ShardingError(f"moe_ep={ep} must divide the {self.ffn_chips} chips an FFN layer spans "
                                f"(tp={self.tp} x attention_dp={self.attention_dp})")
        moe_tp = self.ffn_chips // ep if self.moe_tp is None else _check_degree("moe_tp", self.moe_tp)
        if moe_tp * ep != self.ffn_chips:
            raise ShardingError(f"moe_tp x moe_ep = {moe_tp} x {ep} must equal the {self.ffn_chips} chips an FFN "
                                f"layer spans (tp={self.tp} x attention_dp={self.attention_dp})")
        object.__setattr__(self, "moe_ep", ep)
        object.__setattr__(self, "moe_tp", moe_tp)
        if not isinstance(self.moe_dispatch, str) or self.moe_dispatch not in MOE_DISPATCHES:
            raise ShardingError(f"moe_dispatch must be one of {', '.join(MOE_DISPATCHES)}, got "
                                f"{shown(self.moe_dispatch)}")
        skew = self.routing_skew
        if isinstance(skew, bool) or not isinstance(skew, (int, float)) or not 1.0 <= skew <= ep:
            raise ShardingError(f"routing_skew must be a number in [1, moe_ep={ep}] (busiest expert group's load "
                                f"over the mean), got {skew!r}")

    @property
    def ffn_chips(self) -> int:
        """Chips of one pipeline stage: the FFN of a layer spans all of them."""
        return self.tp * self.attention_dp

    @property
    def chips_per_replica(self) -> int:
        return self.tp * self.attention_dp * self.pp

    @property
    def chips(self) -> int:
        return self.chips_per_replica * self.dp

    @property
    def sequence_groups(self) -> int:
        """Groups the batch is split into: pipeline micro-batches x attention groups."""
        return self.pp * self.attention_dp

    @property
    def without_experts(self) -> "Sharding":
        """The same with no expert parallelism (ep = 1: every FFN chip slices every expert, no routing skew): all an op
        outside the routed experts reads of it (graph.build_ops keeps such ops once for the shardings that differ in
        their expert degrees alone)."""
        if self.moe_ep == 1 and self.routing_skew == 1.0 and self.moe_dispatch == MOE_DISPATCH:
            return self
        return replace(self, ep=1, moe_ep=None, moe_tp=None, routing_skew=1.0, moe_dispatch=MOE_DISPATCH)

    @property
    def experts_dispatched(self) -> bool:
        """Routed tokens reach their experts' chips by a dispatch all-to-all (and return by a combine): attention
        groups (attention_dp > 1) under moe_dispatch "all_to_all"; under "allgather" every chip holds every token."""
        return self.attention_dp > 1 and self.moe_dispatch == "all_to_all"

    @property
    def stage(self) -> "Sharding":
        """One pipeline stage of it: the same with pp = 1 (a stage's ops are those of pp = 1 at the micro-batch
        batch / pp: graph.handoff_ops)."""
        return self if self.pp == 1 else replace(self, pp=1)


def _check_degree(name: str, v) -> int:
    most = BOUNDS[name].max_value
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= most:
        raise ShardingError(f"{name} must be a positive integer <= {most:,}, got {shown(v)}")
    return v


def stage_layers(n_layers: int, pp: int) -> int:
    """Layers of the fullest pipeline stage, ceil(n_layers / pp): vLLM splits layers that do not divide evenly
    (distributed.utils.get_pp_indices: the remainder one each to the stages before the last; DeepSeek-V3's 61 over 2
    stages: 31 + 30). A ShardingError where a stage would hold no layer."""
    if pp > n_layers:
        raise ShardingError(f"pp = {pp} exceeds the number of layers ({n_layers}): a pipeline stage would hold none")
    return -(-n_layers // pp)


def check_pipeline(spec, pp: int) -> int:
    """stage_layers of the model's layers, refusing a looped stack over stages: Ouro runs every layer total_ut_steps
    times in turn (its runs are not a stack to cut), and vLLM's OuroForCausalLM does not support pipeline parallelism
    (no SupportsPP)."""
    if pp > 1 and any(g.loops for g in spec.layer_groups):
        raise ShardingError(f"pp = {pp}: a looped stack (every layer run {max(g.loops for g in spec.layer_groups)} "
                            "times in turn, Ouro) cannot be split into pipeline stages; vLLM's OuroForCausalLM has no "
                            "pipeline support. Use tp or dp")
    return stage_layers(spec.n_layers, pp)


def stage_divisor(n_layers: int, pp: int) -> float:
    """n_layers / stage_layers: what the whole model's layer weights or KV cache divide by to be the fullest stage's
    (per chip), and the stages' count in fullest-stage passes; pp itself where the layers divide evenly."""
    return n_layers / stage_layers(n_layers, pp)


def micro_batches(pp: int, batch):
    """Micro-batches a pipeline runs a static batch of whole sequences in: pp (of batch / pp sequences each, batch
    a multiple of pp), or, for a batch below pp, one per sequence (vLLM schedules each request into one virtual
    engine; the stages without one idle). 1 without a pipeline."""
    b = np.asarray(batch, dtype=np.float64)
    return np.where(b >= pp, float(pp), np.maximum(b, 1.0))[()]


def whole_micro_batches(batch, pp: int, attention_dp: int = 1) -> np.ndarray:
    """Whether each batch runs as whole micro-batches and attention groups: a multiple of pp x attention_dp, or, with
    attention_dp 1, below pp (one micro-batch per sequence: micro_batches)."""
    b = np.asarray(batch, dtype=np.float64)
    return (np.mod(b, pp * attention_dp) == 0) | ((b < pp) & (attention_dp == 1))


def micro_batch_note(pp: int, batch) -> str:
    """The assumption behind a batch below pp ('' where none is)."""
    b = np.asarray(batch, dtype=np.float64)
    if pp == 1 or not np.any(b < pp):
        return ""
    few = ", ".join(f"{x:g}" for x in np.unique(b[b < pp]))
    return (f"batch {few} below pp = {pp}: one micro-batch per sequence (vLLM puts each request in one virtual "
            "engine); a prompt or token crosses the stages in turn, so a decode step takes a whole pass through the "
            f"model and each stage idles (pp - batch) / pp of it.")


def stage_note(n_layers: int, pp: int) -> str:
    """The assumption behind an uneven pipeline split ('' where the layers divide evenly)."""
    most = stage_layers(n_layers, pp)
    if most * pp == n_layers:
        return ""
    parts = [n_layers // pp + (1 if i < n_layers % pp else 0) for i in range(pp)]  # the sizes, not their order
    return (f"pp = {pp} splits the {n_layers} layers {' + '.join(map(str, parts))} (as vLLM does): a stage of {most} "
            "layers sets the pace and the memory per chip.")


def split(total: int, parts: int, what: str) -> int:
    """total / parts when it divides; a ShardingError naming both numbers otherwise (never rounded)."""
    if parts == 1:
        return total
    if total % parts:
        raise ShardingError(f"{what} = {total} is not divisible by {parts}")
    return total // parts


# ============================================================================ shard styles
SHARD_STYLES = ("column", "row", "ffn_column", "ffn_row", "vocab_in", "vocab_out", "expert", "sequence", "replicated")


def sequence_parallel_on(sh: Sharding) -> bool:
    return sh.sequence_parallel and sh.tp > 1


def shard_count(style: str, sh: Sharding) -> int:
    """Chips of a pipeline stage that split an op of this style between them (the whole stage's work of the op
    divided by what one chip does). Attention-side styles split over tp within each of the attention_dp groups
    (which hold different sequences); FFN-side styles span all tp x attention_dp chips."""
    if style not in SHARD_STYLES:
        raise ShardingError(f"unknown shard style {style!r}; known: {', '.join(SHARD_STYLES)}")
    if style in ("ffn_column", "ffn_row", "expert"):
        return sh.ffn_chips
    if style == "replicated":
        return sh.attention_dp
    if style == "sequence":
        return sh.attention_dp * (sh.tp if sequence_parallel_on(sh) else 1)
    return sh.tp * sh.attention_dp


def collective_before(style: str, sh: Sharding) -> str | None:
    """Sequence parallelism: a column-parallel matmul needs the whole sequence, all-gathered from the shards."""
    return "all_gather" if style == "column" and sequence_parallel_on(sh) else None


def collective_after(style: str, sh: Sharding) -> str | None:
    """The collective an op's output needs over the tp group (None with tp = 1 or for local outputs)."""
    if sh.tp == 1:
        return None
    if style == "row":
        return "reduce_scatter" if sequence_parallel_on(sh) else "all_reduce"
    return {"vocab_in": "all_reduce", "vocab_out": "all_gather"}.get(style)


def walked_rows(sh: "Sharding", routed, local):
    """Routed rows the fused expert block of one chip passes over outside its grouped GEMMs (alignment sort,
    activation, top-k sum, zero-filled outputs: separate passes, not overlapped with the GEMMs): with expert
    parallelism over tokens that every chip holds (no dispatch all-to-all: attention_dp = 1, or the attention groups'
    tokens all-gathered, moe_dispatch "allgather"; and no sequence parallelism), each chip's kernel receives all
    `routed` (T * k) rows, `local` of them its own (vLLM's Triton fused MoE writes zeros for the others); dispatched
    tokens or no expert parallelism: its `local` rows."""
    if sh.moe_ep <= 1 or sh.experts_dispatched or collective_before("column", sh):
        return local
    return np.maximum(np.asarray(routed, dtype=np.float64), local)


def expert_layout(n_experts: int, d_expert: int, sh: Sharding) -> tuple[int, int]:
    """(experts held by one chip, intermediate columns of each held expert): experts split over moe_ep chips,
    each expert tensor-sliced over moe_tp chips."""
    return (split(n_experts, sh.moe_ep, "routed experts"),
            split(d_expert, sh.moe_tp, "moe expert intermediate size"))


# ============================================================================ per-chip sizes
def mixer_groups_per_chip(mixer: MixerSpec, tp: int) -> int:
    """B/C (Mamba-2) or q/k (Gated DeltaNet) groups on one chip: split over tp when there are at least tp of them,
    else each chip keeps the one group its heads read (replicated, explicit: tp must be a multiple of the groups).
    Mamba-1 has no groups (0)."""
    if mixer.n_groups == 0 or mixer.n_groups >= tp:
        return split(mixer.n_groups, tp, "mixer groups (n_groups / linear_num_key_heads)")
    if tp % mixer.n_groups:
        raise ShardingError(f"tp={tp} is not a multiple of the mixer's {mixer.n_groups} groups, so they can neither "
                            "be split nor evenly replicated")
    return 1


def mixer_dims_per_chip(mixer: MixerSpec, tp: int) -> tuple[int, int, int]:
    """(heads, conv channels, per-head gate scalars) of one chip's column shard of a mixer."""
    heads = split(mixer.n_heads, tp, "mixer heads")
    conv_channels = heads * mixer.head_dim + 2 * mixer_groups_per_chip(mixer, tp) * mixer.state_dim
    return heads, conv_channels, mixer.gate_heads // mixer.n_heads * heads


def mixer_state_elems_per_chip(mixer: MixerSpec, tp: int) -> tuple[int, int]:
    """(SSM state, conv state) elements of one sequence in one layer on one chip: (heads, hd, ds) (mLSTM: with its
    normalizer and max, MixerSpec.state_per_head) and (kernel - 1, conv channels)."""
    heads, conv_channels, _ = mixer_dims_per_chip(mixer, tp)
    return heads * mixer.state_per_head, max(mixer.conv_kernel - 1, 0) * conv_channels


def short_conv_state_elems_per_chip(g: LayerGroup, d_model: int, tp: int) -> int:
    """Inkling's conv windows of one sequence in one layer on one chip: (kernel - 1) x the channels of the k and v
    convs (the chip's key/value heads) and of the two output convs (d_model each, on every chip)."""
    a = g.attention
    kv = 2 * kv_heads_per_chip(a, tp) * a.head_dim if a.kv_conv else 0
    return max(a.kv_conv - 1, 0) * kv + max(g.out_conv - 1, 0) * 2 * d_model


def kv_heads_per_chip(attn: AttentionSpec, tp: int) -> int:
    """KV heads one chip holds. Fewer KV heads than tp: each is replicated on tp/KV chips (explicit, not
    rounded: tp must then be a multiple of KV). MLA's latent is shared by all heads: every chip keeps it."""
    if attn.kind == "mla":
        return 1
    if attn.n_kv_heads >= tp:
        return split(attn.n_kv_heads, tp, "key/value heads")
    if tp % attn.n_kv_heads:
        raise ShardingError(f"tp={tp} is not a multiple of the {attn.n_kv_heads} key/value heads, so they "
                            "can neither be split nor evenly replicated")
    return 1


def kv_elems_per_token_per_chip(attn: AttentionSpec, tp: int) -> int:
    """Cached elements per token per layer on one chip (replicated KV heads and MLA latents included, and the index
    key of a top-k layer's indexer, replicated on every chip as the indexer is, unless IndexPool pools it; a block
    without attention caches nothing, a layer reusing an earlier layer's K and V only the index key of its own
    indexer)."""
    if attn.kind == "none":
        return 0
    if attn.kind == "mla" or attn.kv_reused:
        return attn.kv_elements_per_token()
    return kv_core_elems_per_token_per_chip(attn, tp) + attn.token_index_elems


def kv_core_elems_per_token_per_chip(attn: AttentionSpec, tp: int) -> int:
    """The K and V elements per token the attention core reads on one chip (the KV heads it holds; no index key)."""
    return kv_heads_per_chip(attn, tp) * attn.kv_elements_per_head



# ============================================================================ critical thresholds
def tp_limit_throughput(chip: "Chip", d_ff, axes_used: int = 1, dtype: str = "bf16"):
    """Largest tensor-parallel degree Y before the MLP's collectives outlast its FLOPs (throughput regime):

        Y < n_axes * F / (C / W)      (book Part 5, training.md "Tensor Parallelism": Y < n_axes F / 2550)

    v5p, F = 28,672: 28,672 / 2550 = 11.2 ("~11-way"). GPUs: W = per-GPU NVLink egress one way, so
    H100 F / 2200 (book Part 12 "Tensor Parallelism": Y < F W_collective / C). axes_used: torus axes the
    TP group spans (TPU only). Independent of precision (C and the bytes per element scale together).
    """
    n_axes = len(chip.scaleup.axes) if chip.scaleup.topology == "torus" else 1
    if isinstance(axes_used, bool) or int(axes_used) != axes_used or not 1 <= axes_used <= n_axes:
        raise ShardingError(f"axes_used must be 1..{n_axes} for {chip.name}, got {axes_used!r}")
    return axes_used * np.asarray(d_ff, dtype=np.float64) * chip.scaleup.collective_bytes_per_s \
        / chip.peak_flops_per_s(dtype)


def tp_limit_latency(chip: "Chip", d_ff, batch_tokens):
    """Largest model-parallel degree Y in generation before ICI time exceeds the weight-loading time:

        T_HBM = 2DF / (Y W_hbm),  T_ICI = 2BD / W_ici  ->  Y < F / (B * beta),  beta = W_hbm / W_ici

    (book Part 7, inference.md "Distributing Inference Over Multiple Accelerators" > "Generation",
    "Note on ICI bounds for generation"; beta "around 8 for TPU v5e and v6e", F = 16,384, B = 32 -> 64-way).
    W as in Link.collective_bytes_per_s (NVLink egress one way on GPUs).
    """
    beta = chip.hbm_bytes_per_s / chip.scaleup.collective_bytes_per_s
    return np.asarray(d_ff, dtype=np.float64) / (np.asarray(batch_tokens, dtype=np.float64) * beta)


def dp_critical_batch(chip: "Chip", axes: int = 1, dtype: str = "bf16") -> float:
    """Tokens per chip above which pure data parallelism (or FSDP) over the scale-up link is compute-bound:

        B / X > C / W / n_axes        (book Part 5, training.md "Data Parallelism": v5p 2550, 850 over 3 axes)

    GPUs: W = per-GPU NVLink egress, one way (book Part 12 "Data Parallelism": H100 990e12/450e9 = 2200).
    """
    n_axes = len(chip.scaleup.axes) if chip.scaleup.topology == "torus" else 1
    if isinstance(axes, bool) or int(axes) != axes or not 1 <= axes <= n_axes:
        raise ShardingError(f"axes must be 1..{n_axes} for {chip.name}, got {axes!r}")
    return chip.peak_flops_per_s(dtype) / chip.scaleup.collective_bytes_per_s / axes


def dcn_critical_batch(chip: "Chip", dtype: str = "bf16") -> float:
    """Tokens per scale-up domain (TPU slice, GPU node) above which data parallelism across domains is
    compute-bound: C / W_dcn per chip (book Part 5, training.md "Scaling Between Pods": per-pod batch >
    C_pod / W_DCN; v5p 4.59e14 / 6.25e9 = 73,440). W_dcn = chip.scaleout.bytes_per_s (IB NIC per GPU).
    """
    if chip.scaleout is None:
        raise ShardingError(f"{chip.name} has no scale-out link")
    return chip.peak_flops_per_s(dtype) / chip.scaleout.bytes_per_s


def two_chip_matmul_compute_bound_min_d(chip_flops_per_s, link_bytes_per_s):
    """The seeds' 2-chip network roofline (book Part 1, roofline.md "Network communication rooflines"):
    X bf16[B, D] @ Y bf16[D, F] split on D over 2 chips, partial sums 2BF bytes exchanged:
    T_math = 2BDF / (2C), T_comms = 2BF / W  ->  compute-bound iff D/2 > C/W, i.e. D > 2C/W
    (C = 1.97e14, W = 4.5e10 one way: D > 8,755). Returns 2C/W.
    """
    return 2.0 * np.asarray(chip_flops_per_s, dtype=np.float64) / np.asarray(link_bytes_per_s, dtype=np.float64)


def critical_thresholds(spec: "ModelSpec", chip: "Chip", compute_dtype: str, bits_per_weight: float,
                        batch_tokens) -> dict[str, float]:
    """The seeds' thresholds for a model on a chip.

    intensity_flops_per_byte: peak / HBM bandwidth for the compute dtype. batch_tokens: tokens per step
    at which weight-bound matmuls turn compute-bound: 2*B FLOP per weight element read against bits/8
    bytes gives B* = intensity * (bits/8) / 2 (bf16: B* = intensity; int8 weights: half).
    tp_limit_throughput / tp_limit_latency: largest useful tensor-parallel degree before communication
    dominates (Y < F * W / C, and Y < F / (B * W_hbm / W) at this batch), over the widest FFN.
    dp_critical_batch_tokens / dcn_critical_batch_tokens: tokens per chip (per slice) for data
    parallelism to stay compute-bound over the scale-up (scale-out) link. moe_batch_tokens (MoE models):
    batch_tokens x E / k, since each routed expert's weights see only k/E of the tokens (the seeds' MoE rule:
    int8 weights 120 tokens, E/k = 16 -> 1,920)."""
    intensity = chip.critical_intensity(compute_dtype)
    d_ff = max((g.ffn.d_ff or g.ffn.d_expert) for g in spec.layer_groups)
    out = {"intensity_flops_per_byte": intensity, "batch_tokens": intensity * bits_per_weight / 8 / 2,
           "tp_limit_throughput": tp_limit_throughput(chip, d_ff, dtype=compute_dtype),
           "tp_limit_latency": tp_limit_latency(chip, d_ff, float(batch_tokens)),
           "dp_critical_batch_tokens": dp_critical_batch(chip, dtype=compute_dtype)}
    moe = [g.ffn for g in spec.layer_groups if g.ffn.kind == "moe"]
    if moe:  # each expert sees k/E of the tokens: the batch must be E/k times larger (seeds: 120 -> 1,920)
        out["moe_batch_tokens"] = out["batch_tokens"] * max(f.n_experts / f.expert_top_k for f in moe)
    if chip.scaleout is not None:
        out["dcn_critical_batch_tokens"] = dcn_critical_batch(chip, dtype=compute_dtype)
    return out
