"""Collective costs: the alpha-beta terms of all-reduce, all-gather, reduce-scatter, all-to-all and p2p
on a chip's scale-up link (NVLink switch, xGMI full mesh, TPU ICI torus) and across scale-up domains
(InfiniBand / DCN). roofline.score turns the terms into a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import ShardingError
from .units import short_number

if TYPE_CHECKING:  # only for annotations
    from .hardware import Chip, Link

# collective costs
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

        t_comm_s = hops * (latency_s + eff.comm_hop_s) + link_bytes / (link_bytes_per_s * eff.comm)
        (eff.comm_switch instead of eff.comm where switch_reduced)

    link_bytes: bytes through the bottleneck link of one chip (array, broadcast like the buffer).
    hops: latency steps (float, or an array like the buffer where the algorithm depends on it: all-reduce
        on an NVLink switch). When a collective crosses two link levels it is the equivalent count
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
    switch_reduced: "np.ndarray | float" = 0.0  # 1 where the switch reduces the bytes (NVLS), else 0


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
    head = f"{kind} of V={short_number(v)} B over {n} chips: "
    if n == 1:
        return CollectiveTerms(v * 0.0, 0.0, up.bytes_per_s, up.latency_s, "scaleup", head + "one chip, no traffic")
    if n <= up.domain_size:
        if kind == "all_reduce" and up.nvlink_switch:
            return _all_reduce_direct(v, n, up, head)
        lv = _level(kind, n, up, direct=up.nvlink_switch)
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
        inner, inner_scale = _level(kind, d, up, direct=up.nvlink_switch), 1.0 / m
        outer, outer_scale = _level(kind, m, chip.scaleout), 1.0
    else:
        # all_gather / reduce_scatter / all_reduce: the domain-level ring works on V; across domains each
        # chip carries its 1/d share: V/d over m domains (book: bytes (M-1)/(M W_node), W_node = d*W_nic)
        inner, inner_scale = _level(kind, d, up, direct=up.nvlink_switch), 1.0
        outer, outer_scale = _level(kind, m, chip.scaleout), 1.0 / d
    t_out = outer.coef * outer_scale / outer.bytes_per_s
    t_in = inner.coef * inner_scale / inner.bytes_per_s if inner else 0.0
    latency = outer.hops * outer.latency_s + (inner.hops * inner.latency_s if inner else 0.0)
    if inner is not None and t_in >= t_out:
        level, scale, link = inner, inner_scale, "scaleup"
    else:
        level, scale, link = outer, outer_scale, "scaleout"
    text = (f"hierarchical {m} domains x {d} chips, max(bandwidth terms), latencies add; "
            f"scale-out: {outer.text} on {short_number(outer_scale)} V"
            + (f"; scale-up: {inner.text} on {short_number(inner_scale)} V" if inner else "")
            + f"; bottleneck {link}")
    return CollectiveTerms(level.coef * scale * v, float(latency / level.latency_s), level.bytes_per_s,
                           level.latency_s, link, head + text)


# all-reduce algorithms on an NVLink switch: (name, latency steps, bytes per GPU one way / V as a function of n,
# reduced in the switch). one-shot: every GPU reads the n-1 peers' whole buffers and sums (vLLM custom all-reduce
# 1-stage, TensorRT-LLM ONESHOT); two-shot: reduce-scatter then all-gather, each (n-1)/n V (vLLM 2-stage, PyTorch
# symmetric-memory two_shot; NCCL's ring moves the same bytes in 2(n-1) steps, so on a switch it never wins);
# switch: NVLink SHARP, multimem load-reduce of a 1/n slice then a multicast store: V out and V in per GPU (NCCL
# NVLS, vLLM/PyTorch multimem all-reduce), only where the switch reduces (Link.switch_reduction).
ALL_REDUCE_ALGOS = (("one-shot", 1, lambda n: n - 1.0, False),
                    ("two-shot", 2, lambda n: 2.0 * (n - 1) / n, False),
                    ("switch-reduce", 2, lambda n: 1.0, True))


def _all_reduce_direct(v: np.ndarray, n: int, link: "Link", head: str) -> CollectiveTerms:
    """All-reduce of V over n GPUs of an NVLink switch: per buffer, the algorithm (ALL_REDUCE_ALGOS) with the lowest
    ideal time steps * latency_s + bytes / bytes_per_s (ties: the earlier one), so the ideal is the best
    algorithm's lower bound: one-shot for small messages (8 KB on 8 H100: 2 us + 7 * 8192 / 450e9 = 2.13 us),
    two-shot or the switch reduction for large ones. The calibrated time (efficiency) prices the same choice, so
    it is never below the ideal."""
    algos = [a for a in ALL_REDUCE_ALGOS if link.switch_reduction or not a[3]]
    times = np.stack([a[1] * link.latency_s + a[2](n) * v / link.bytes_per_s for a in algos])
    pick = np.argmin(times, axis=0)  # the first minimum: fewest steps on ties
    coef = np.array([a[2](n) for a in algos])[pick]
    hops = np.array([float(a[1]) for a in algos])[pick]
    switch = np.array([1.0 if a[3] else 0.0 for a in algos])[pick]
    names = [a[0] for i, a in enumerate(algos) if np.any(pick == i)]  # those picked anywhere, in ALL_REDUCE_ALGOS order
    text = (f"{link.kind} switch, per buffer the fastest ideal of "
            + ", ".join(f"{a[0]} ({a[1]} step(s), {a[2](n):.4g} V)" for a in algos)
            + f" -> {'/'.join(names)} at {link.bytes_per_s:.4g} B/s per GPU one way, {link.latency_s:.3g} s per step")
    return CollectiveTerms(coef * v, hops, link.bytes_per_s, link.latency_s, "scaleup", head + text, switch)


def _level(kind: str, n: int, link: "Link", direct: bool = False) -> _Level:
    """The collective over n chips that all sit on one link level (n <= link.domain_size). direct: the level is
    a scale-up switch every chip reaches at once (NVSwitch), so gathers and reductions go direct (see
    _gather_reduce); a scale-out fabric runs rings."""
    if kind == "p2p":
        return _p2p(link)
    if kind == "all_to_all":
        return _all_to_all(n, link)
    return _gather_reduce(kind, n, link, direct)


def _gather_reduce(kind: str, n: int, link: "Link", direct: bool = False) -> _Level:
    """AllGather / ReduceScatter of V over n chips, and AllReduce = ReduceScatter + AllGather (2x).

    switch: (n-1)/n * V through the full per-GPU egress (book Part 12, "Intra-node collectives": T_AG =
        bytes (N-1) / (N W_GPU egress); AllReduce twice that). Latency: a ring takes n-1 steps (2(n-1) for
        all-reduce); within a scale-up switch (direct) every GPU writes its shard to all peers at once, one
        step (two for all-reduce: reduce-scatter then all-gather, the two-shot all-reduce). An all-reduce within
        one NVLink switch domain takes the fastest of one-shot, two-shot and the switch's reduction instead
        (_all_reduce_direct; vLLM's one-shot measures 4-5 us on 8 H100s up to 16 KB where a ring of 14 steps x
        2 us could not go below 28 us); the two-shot form here prices the domain level of a multi-node
        all-reduce. PCIe switches use the same formula at PCIe bandwidth.
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
        steps = rounds if direct else rounds * (n - 1)
        how = f"direct, {rounds} step(s)" if direct else f"ring, {rounds}*(n-1)={steps} steps"
        return _Level(rounds * (n - 1) / n, steps, link.bytes_per_s, link.latency_s,
                      f"{link.kind} switch {how}: {rounds}*(n-1)/n V at {link.bytes_per_s:.4g} B/s per chip, "
                      f"{steps} hops x {link.latency_s:.3g} s")
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
