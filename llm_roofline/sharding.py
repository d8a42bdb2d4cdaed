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
from typing import TYPE_CHECKING

import numpy as np

from .bounds import BOUNDS
from .errors import ShardingError

if TYPE_CHECKING:  # only for annotations: hardware does not import sharding
    from .hardware import Chip, Link


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
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= BOUNDS[name].max_value:
                raise ShardingError(f"{name} must be a positive integer <= {BOUNDS[name].max_value:,}, got {v!r}")
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


# =============================================================================== collective costs
# Formulas from "How to Scale Your Model" (jax-ml/scaling-book; cited as "book"):
#   Part 3  sharding.md  "A Deeper Dive into TPU Communication Primitives" and Case 2/3 (ICI rings),
#   Part 12 gpus.md      "How Do Collectives Work on GPUs?" (intra-node and cross-node collectives),
#   Part 5  training.md  (data / tensor parallelism rooflines), Part 7 inference.md (generation ICI bound).
# V is the buffer of the graph builder (ops.collective): all_reduce the full array each chip holds,
# all_gather the gathered result, reduce_scatter the full input, all_to_all one chip's send buffer,
# p2p the message.

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p")


@dataclass(frozen=True)
class CollectiveTerms:
    """Alpha-beta terms of one collective, in the form roofline.score takes them:

        t_comm_s = hops * latency_s + link_bytes / (link_bytes_per_s * eff.comm)

    link_bytes: bytes through the bottleneck link of one chip (array, broadcast like the buffer).
    hops: latency steps (float). When a collective crosses two link levels it is the equivalent count
        at latency_s: (inner hops * inner latency + outer hops * outer latency) / latency_s.
    link_bytes_per_s: the bandwidth link_bytes flow at; latency_s: per-hop latency of that link.
    link: 'scaleup' | 'scaleout', the level whose bandwidth bounds the collective.
    formula: the arithmetic, with its numbers.
    """

    link_bytes: np.ndarray
    hops: float
    link_bytes_per_s: float
    latency_s: float
    link: str
    formula: str


@dataclass(frozen=True)
class _Level:
    """One link level: link bytes = coef * V, at bytes_per_s, after hops * latency_s."""

    coef: float
    hops: float
    bytes_per_s: float
    latency_s: float
    text: str


def collective_terms(kind: str, buffer_bytes, chips: int, chip: "Chip") -> CollectiveTerms:
    """Bottleneck-link bytes, latency hops and bandwidth of a `kind` collective of V = buffer_bytes over
    `chips` chips of `chip`.

    Within the scale-up domain (chips <= chip.scaleup.domain_size) the link's topology decides:
    switch (NVSwitch, PCIe switch) and full_mesh (MI300X xGMI) follow book Part 12 "Intra-node
    collectives"; torus (TPU ICI) follows book Part 3 (see _torus_rings for the axes a group uses).
    Beyond the domain the collective is hierarchical (book Part 12 "Cross-node collectives"): the
    scale-up level works on the full buffer, the scale-out level (InfiniBand / DCN at
    chip.scaleout.bytes_per_s per chip) on each chip's 1/domain share of it, and the two overlap, so the
    bandwidth term is the larger of the two, T = max(T_scaleup, T_scaleout) (book), while their latencies add.
    `chips` must then be a whole number of domains. p2p crosses the scale-out link when `chips`
    (the span of the sender and receiver) exceeds the domain.
    """
    if kind not in COLLECTIVES:
        raise ShardingError(f"unknown collective {kind!r}; known: {', '.join(COLLECTIVES)}")
    if isinstance(chips, bool) or int(chips) != chips or chips < 1:
        raise ShardingError(f"a collective needs a positive whole number of chips, got {chips!r}")
    n = int(chips)
    v = np.asarray(buffer_bytes, dtype=np.float64)
    up = chip.scaleup
    head = f"{kind} of V={_num(v)} B over {n} chips: "
    if n == 1:
        return CollectiveTerms(v * 0.0, 0.0, up.bytes_per_s, up.latency_s, "scaleup", head + "one chip, no traffic")
    if n <= up.domain_size:
        lv = _level(kind, n, up)
        return CollectiveTerms(lv.coef * v, float(lv.hops), lv.bytes_per_s, lv.latency_s, "scaleup", head + lv.text)

    # ---- beyond one scale-up domain: hierarchical (book Part 12, "Cross-node collectives")
    d = up.domain_size
    if chip.scaleout is None:
        raise ShardingError(f"{chip.name}: a collective over {n} chips exceeds its scale-up domain of {d} "
                            "and the chip has no scale-out link")
    if n % d:
        raise ShardingError(f"{chip.name}: a collective over {n} chips spans scale-up domains of {d}; "
                            f"{n} is not a whole number of domains")
    m = n // d
    if kind == "p2p":  # one message between two domains
        inner, inner_scale = None, 0.0
        outer, outer_scale = _level("p2p", 2, chip.scaleout), 1.0
    elif kind == "all_to_all":
        # each chip sends (m-1)/m of its buffer off-domain, 1/m stays inside (book: B(M-1)/(M^2 W_node))
        inner, inner_scale = _level(kind, d, up), 1.0 / m
        outer, outer_scale = _level(kind, m, chip.scaleout), 1.0
    else:
        # all_gather / reduce_scatter / all_reduce: the domain-level ring works on V; across domains each
        # chip carries its 1/d share: V/d over m domains (book: bytes (M-1)/(M W_node), W_node = d*W_nic)
        inner, inner_scale = _level(kind, d, up), 1.0
        outer, outer_scale = _level(kind, m, chip.scaleout), 1.0 / d
    t_out = outer.coef * outer_scale / outer.bytes_per_s
    t_in = inner.coef * inner_scale / inner.bytes_per_s if inner else 0.0
    latency = outer.hops * outer.latency_s + (inner.hops * inner.latency_s if inner else 0.0)
    if inner is not None and t_in >= t_out:
        level, scale, link = inner, inner_scale, "scaleup"
    else:
        level, scale, link = outer, outer_scale, "scaleout"
    text = (f"hierarchical {m} domains x {d} chips, max(bandwidth terms), latencies add; "
            f"scale-out: {outer.text} on {_num(outer_scale)} V"
            + (f"; scale-up: {inner.text} on {_num(inner_scale)} V" if inner else "")
            + f"; bottleneck {link}")
    return CollectiveTerms(level.coef * scale * v, float(latency / level.latency_s), level.bytes_per_s,
                           level.latency_s, link, head + text)


def _level(kind: str, n: int, link: "Link") -> _Level:
    """The collective over n chips that all sit on one link level (n <= link.domain_size)."""
    if kind == "p2p":
        return _p2p(link)
    if kind == "all_to_all":
        return _all_to_all(n, link)
    return _gather_reduce(kind, n, link)


def _gather_reduce(kind: str, n: int, link: "Link") -> _Level:
    """AllGather / ReduceScatter of V over n chips, and AllReduce = ReduceScatter + AllGather (2x).

    switch: a ring at the full per-GPU egress: (n-1)/n * V, n-1 steps (book Part 12, "Intra-node
        collectives": T_AG = bytes (N-1) / (N W_GPU egress); AllReduce twice that, 2(n-1) steps). PCIe
        switch topologies use the same formula at the PCIe bandwidth.
    full_mesh: each chip reaches its n-1 peers over n-1 dedicated links of bytes_per_s/(domain-1) each,
        so only (n-1)/(domain-1) of its egress is usable; per link V/n (2V/n for all-reduce); latency
        counted as ring steps, as RCCL runs rings over the mesh.
    torus: book Part 3, T = V/W_ici * (n-1)/n per wrapped axis ("What Have We Learned?"), W_ici = 2 x one
        link one way; an axis without wraparound is a line whose end link carries all n-1 shards one way:
        T = (n-1)/n * V / W_one-way (book Pop Quiz 2: 3 x 8.4e6 / 4.5e10 on a 4-chip v5e axis). Several
        axes add their bandwidth (book: V / (W_ici * n_axes)); latency T_min * sum |X_i|/2 hops.
    """
    rounds = 2 if kind == "all_reduce" else 1
    if link.topology == "switch":
        return _Level(rounds * (n - 1) / n, rounds * (n - 1), link.bytes_per_s, link.latency_s,
                      f"{link.kind} switch ring: {rounds}*(n-1)/n V at {link.bytes_per_s:.4g} B/s per chip, "
                      f"{rounds}*(n-1)={rounds * (n - 1)} hops x {link.latency_s:.3g} s")
    if link.topology == "full_mesh":
        peer = _peer_bytes_per_s(link)
        return _Level(rounds / n, rounds * (n - 1), peer, link.latency_s,
                      f"{link.kind} full mesh: {rounds}*V/n per peer link at {peer:.4g} B/s "
                      f"((n-1)/(domain-1) = {n - 1}/{link.domain_size - 1} of the egress), "
                      f"{rounds * (n - 1)} hops x {link.latency_s:.3g} s")
    rings = _torus_rings(n, link)
    directions = sum(2 if wraps else 1 for _, wraps in rings)
    hops = rounds * sum(k // 2 if wraps else k - 1 for k, wraps in rings)
    return _Level(rounds * (n - 1) / n / directions, hops, link.link_bytes_per_s, link.latency_s,
                  f"{link.kind} torus rings {_rings_text(rings)}: {rounds}*(n-1)/n V / {directions} link "
                  f"directions at {link.link_bytes_per_s:.4g} B/s per link one way (W_ici = "
                  f"{2 * link.link_bytes_per_s:.4g}), {hops} hops x {link.latency_s:.3g} s")


def _all_to_all(n: int, link: "Link") -> _Level:
    """AllToAll of one chip's send buffer S over n chips.

    switch: every GPU sends S/n to each of its n-1 peers directly: (n-1)/n * S at the egress (book Part 12:
        T = B (N-1) / (W N^2) with B = N*S the whole array).
    full_mesh: S/n over each dedicated peer link.
    torus: dimension-ordered, one axis after the other; a ring of k chips carries at most
        floor(k/2)*ceil(k/2)/k * S per link one way without wraparound and half that with it
        (k*S/8 per link one way, = the book's "AllGather / 4 for a bidirectional ring", Part 3 footnote).
    Latency: the sends are direct and concurrent, so one hop on a switch or mesh; on a torus the
    farthest destination's distance (k//2 per wrapped axis, k-1 per line). This is a choice: NCCL posts
    n-1 concurrent sends, and the book gives no latency count for AllToAll.
    """
    if link.topology == "switch":
        return _Level((n - 1) / n, 1.0, link.bytes_per_s, link.latency_s,
                      f"{link.kind} switch direct: (n-1)/n S at {link.bytes_per_s:.4g} B/s, "
                      f"1 hop x {link.latency_s:.3g} s")
    if link.topology == "full_mesh":
        peer = _peer_bytes_per_s(link)
        return _Level(1.0 / n, 1.0, peer, link.latency_s,
                      f"{link.kind} full mesh direct: S/n per peer link at {peer:.4g} B/s, "
                      f"1 hop x {link.latency_s:.3g} s")
    rings = _torus_rings(n, link)
    coef = sum((k // 2) * ((k + 1) // 2) / k / (2 if wraps else 1) for k, wraps in rings)
    hops = sum(k // 2 if wraps else k - 1 for k, wraps in rings)
    return _Level(coef, hops, link.link_bytes_per_s, link.latency_s,
                  f"{link.kind} torus rings {_rings_text(rings)}: sum floor(k/2)ceil(k/2)/k/dirs = {coef:.4g} S "
                  f"at {link.link_bytes_per_s:.4g} B/s per link one way, {hops} hops x {link.latency_s:.3g} s")


def _p2p(link: "Link") -> _Level:
    """A point-to-point message V: one hop over the link to a neighbour (a torus link, a mesh peer
    link, or the full switch egress), as in book Part 12 "Pipeline Parallelism" (2BD/W per hop)."""
    if link.topology == "torus":
        bw = link.link_bytes_per_s
    elif link.topology == "full_mesh":
        bw = _peer_bytes_per_s(link)
    else:
        bw = link.bytes_per_s
    return _Level(1.0, 1.0, bw, link.latency_s,
                  f"{link.kind} p2p: V at {bw:.4g} B/s, 1 hop x {link.latency_s:.3g} s")


def _peer_bytes_per_s(link: "Link") -> float:
    """Full mesh: one peer link, one direction = egress / (domain - 1) (MI300X: 448e9 / 7 = 64e9)."""
    return link.bytes_per_s / max(link.domain_size - 1, 1)


def _torus_rings(n: int, link: "Link") -> list[tuple[int, bool]]:
    """The rings (sub-axes) a group of n chips uses on a torus, as (length, has wraparound) pairs.

    One axis when n fits in one: an axis of exactly n if there is one, else the shortest longer axis.
    Otherwise several axes, filled shortest first with the largest divisor of what is left
    (v5e 64 chips: 16 x 4). Wraparound follows link.wraparound: 'always', 'never', or 'full_axis' (only
    a ring spanning its whole axis closes, book Part 2/3: "TPU v5e only has a wraparound connection when
    one axis has size 16"). Two chips share a single link, so a ring of 2 counts as a line.
    """
    axes = sorted(link.axes)
    if n in axes:
        placed = [(n, n)]
    elif n <= axes[-1]:
        placed = [(n, min(a for a in axes if a >= n))]
    else:
        placed, rest = [], n
        for a in axes:
            k = max(f for f in range(1, min(a, rest) + 1) if rest % f == 0)
            if k > 1:
                placed.append((k, a))
                rest //= k
        if rest != 1:
            raise ShardingError(f"{n} chips do not factor onto torus axes {tuple(link.axes)}")
    return [(k, k > 2 and (link.wraparound == "always" or (link.wraparound == "full_axis" and k == a)))
            for k, a in placed]


def _rings_text(rings) -> str:
    return "[" + ", ".join(f"{k} {'wrap' if w else 'line'}" for k, w in rings) + "]"


def _num(x) -> str:
    a = np.asarray(x)
    return f"{float(a.reshape(())):.6g}" if a.size == 1 else "[grid]"


# ============================================================================ critical thresholds
def scaleup_collective_bytes_per_s(chip: "Chip") -> float:
    """W in the book's compute-vs-communication rooflines, for the chip's scale-up link.

    torus (TPU): W_ici = 2 x link_bytes_per_s, one link both directions per axis (book Part 3, "we use the
        bidirectional bandwidth"; Part 5: v5p C / W_ici = 4.59e14 / 1.8e11 = 2550).
    switch / full_mesh (GPU): the per-GPU NVLink (or xGMI / PCIe) egress, ONE direction, bytes_per_s
        (book Part 12 "Rooflines for LLM Scaling on GPUs": W_collective = GPU egress bandwidth,
        H100 450e9, C / W = 990e12 / 450e9 = 2200).
    """
    link = chip.scaleup
    return 2 * link.link_bytes_per_s if link.topology == "torus" else link.bytes_per_s


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
    return axes_used * np.asarray(d_ff, dtype=np.float64) * scaleup_collective_bytes_per_s(chip) \
        / chip.peak_flops_per_s(dtype)


def tp_limit_latency(chip: "Chip", d_ff, batch_tokens):
    """Largest model-parallel degree Y in generation before ICI time exceeds the weight-loading time:

        T_HBM = 2DF / (Y W_hbm),  T_ICI = 2BD / W_ici  ->  Y < F / (B * beta),  beta = W_hbm / W_ici

    (book Part 7, inference.md "Distributing Inference Over Multiple Accelerators" > "Generation",
    "Note on ICI bounds for generation"; beta "around 8 for TPU v5e and v6e", F = 16,384, B = 32 -> 64-way).
    W as in scaleup_collective_bytes_per_s (NVLink egress one way on GPUs).
    """
    beta = chip.hbm_bytes_per_s / scaleup_collective_bytes_per_s(chip)
    return np.asarray(d_ff, dtype=np.float64) / (np.asarray(batch_tokens, dtype=np.float64) * beta)


def dp_critical_batch(chip: "Chip", axes: int = 1, dtype: str = "bf16") -> float:
    """Tokens per chip above which pure data parallelism (or FSDP) over the scale-up link is compute-bound:

        B / X > C / W / n_axes        (book Part 5, training.md "Data Parallelism": v5p 2550, 850 over 3 axes)

    GPUs: W = per-GPU NVLink egress, one way (book Part 12 "Data Parallelism": H100 990e12/450e9 = 2200).
    """
    n_axes = len(chip.scaleup.axes) if chip.scaleup.topology == "torus" else 1
    if isinstance(axes, bool) or int(axes) != axes or not 1 <= axes <= n_axes:
        raise ShardingError(f"axes must be 1..{n_axes} for {chip.name}, got {axes!r}")
    return chip.peak_flops_per_s(dtype) / scaleup_collective_bytes_per_s(chip) / axes


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
