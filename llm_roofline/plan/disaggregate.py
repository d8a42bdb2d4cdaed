"""Prefill/decode disaggregation: prefill workers feeding decode workers (each side its own chip and sharding),
the KV cache of every request moved between them, the worker ratio (xPyD) at which neither side idles, and
throughput per chip against co-located serving (book Part 8, "What about prefill?")."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..bounds import check_range
from ..collectives import collective_terms
from ..errors import RooflineError, ScenarioError
from ..graph import Dtypes
from ..chip_fits import DEFAULT_EFFICIENCY
from ..memory import GPU_MEMORY_UTILIZATION, kv_cache_bytes, usable_bytes
from ..roofline import score_collective
from ..sharding import Sharding
from .candidates import ShardingChoice, sharding_candidates
from .explain import fmt_gb


def balance(prefill_s: float, prefill_batch: int, prefill_chips: int, decode_step_s: float, decode_batch: int,
            decode_steps: float, decode_chips: int) -> dict[str, float]:
    """Prefill/decode pools that keep each other busy (book Part 8, "What about prefill?": sequences enter
    at P / prefill_latency and leave at B x G / (generate_latency x decode_length); P = 3G there).

    prefill_s: wall time of one prefill batch on one prefill instance (steady state), decode_step_s: one
    decode step of a full batch. Returns requests/s per chip of each side and the chip and instance ratios
    (prefill per decode) at which neither side idles."""
    prefill_rps_per_chip = prefill_batch / prefill_s / prefill_chips
    decode_rps_per_chip = decode_batch / (decode_step_s * decode_steps) / decode_chips
    chip_ratio = decode_rps_per_chip / prefill_rps_per_chip
    return dict(prefill_requests_per_s_per_chip=prefill_rps_per_chip,
                decode_requests_per_s_per_chip=decode_rps_per_chip, chip_ratio=chip_ratio,
                instance_ratio=chip_ratio * decode_chips / prefill_chips,
                requests_per_s_per_chip=1.0 / (1.0 / prefill_rps_per_chip + 1.0 / decode_rps_per_chip))


@dataclass(frozen=True)
class Disaggregation:
    """Prefill on its own chips (batch prefill_batch, sharding prefill_tp x prefill_pp) feeding decode chips
    (batch decode_batch, decode_tp x decode_pp), against co-located serving on the decode sharding.

    chip_ratio: prefill chips per decode chip at which neither side idles; instance_ratio: the same in
    instances (replicas) of each side. Throughputs are per chip, requests/s and output tokens/s.
    colocated_*: the same chips time-slice prefill and decode (each request's prefill interrupts decoding):
    per request, chips x (prefill time / prefill batch + decode time / decode batch);
    colocated_tpot_s is the TPOT a decoding sequence sees with those interruptions."""

    chip: str
    prompt_len: int
    gen_len: int
    decode_chip: str
    kv_transfer_bytes: float  # one request's KV cache (the prompt's), prefill -> decode workers
    kv_transfer_s: float  # its time over kv_link, every prefill chip sending its shard in parallel
    kv_link: str  # scaleout (InfiniBand / DCN between nodes) | scaleup (NVLink / ICI within a domain)
    ttft_s: float  # prefill of the batch + the KV transfer
    prefill_workers: int  # x of xPyD: prefill instances per decode_workers decode instances
    decode_workers: int
    prefill_tp: int
    prefill_pp: int
    prefill_batch: int
    prefill_s: float
    prefill_requests_per_s_per_chip: float
    decode_tp: int
    decode_pp: int
    decode_batch: int
    decode_tpot_s: float
    decode_requests_per_s_per_chip: float
    chip_ratio: float
    instance_ratio: float
    disaggregated_output_tokens_per_s_per_chip: float
    colocated_output_tokens_per_s_per_chip: float
    colocated_tpot_s: float
    speedup: float
    notes: tuple[str, ...] = ()

    @property
    def xpyd(self) -> str:
        """'2P9D': prefill and decode worker counts, as serving stacks name a disaggregated deployment."""
        return f"{self.prefill_workers}P{self.decode_workers}D"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "xpyd": self.xpyd}


@dataclass(frozen=True)
class PrefillSide:
    """The prefill pool's choice: its sharding, batch, one batch's steady-state time and its request rate."""

    sharding: ShardingChoice
    batch: int
    prefill_s: float
    requests_per_s_per_chip: float
    ttft_s: float  # the batch's prefill (pipeline fill included) + the KV transfer
    kv_transfer_s: float


@dataclass(frozen=True)
class DecodeSide:
    """The decode pool's choice: its sharding, mean step (TPOT), all decode steps of a batch, request rate."""

    sharding: ShardingChoice
    tpot_s: float
    decode_s: float
    requests_per_s_per_chip: float


@dataclass(frozen=True)
class _Setting:
    """What both sides are scored with: model, chip, scenario, memory per chip, targets, scenario keywords."""

    spec: Any
    chip: Any
    prompt_len: int
    gen_len: int
    usable_bytes: float
    ttft_s: float | None
    tpot_s: float | None
    scenario: dict[str, Any]
    kv_link: str = "scaleout"


def _as_choice(spec, sharding) -> ShardingChoice:
    """(tp, pp) or (tp, pp, ep); MoE defaults to ep = tp."""
    tp, pp, *rest = sharding
    return ShardingChoice(int(tp), int(pp), int(rest[0]) if rest else (int(tp) if spec.is_moe else 1))


def _steady_prefill_s(ttft_s, pp, n_layers):
    """One prefill batch in steady state: micro-batches stream through the stages, one finishing per fullest-stage
    slot, so a batch of pp micro-batches takes a step's pp / d passes, not TTFT's (d + pp - 1) / d (its pipeline
    fill): TTFT x estimate.step_time_factor / estimate.prefill_time_factor (pp / (2pp - 1) where the layers divide)."""
    from ..estimate import prefill_time_factor, step_time_factor

    sh = Sharding(pp=pp)
    return ttft_s * step_time_factor(sh, n_layers) / prefill_time_factor(sh, n_layers)


def _prefill_ttft_s(st: _Setting, choice: ShardingChoice, batch: int, efficiency):
    """TTFT of a prefill batch and its per-chip bytes (evaluate, gen_len = 1)."""
    from ..estimate import evaluate

    r = evaluate(st.spec, st.chip, batch=batch, prompt_len=st.prompt_len, gen_len=1, tp=choice.tp, pp=choice.pp,
                 ep=choice.ep, efficiency=efficiency, **st.scenario)
    return float(r.ttft_s), float(r.memory.bytes_per_chip)


def best_prefill(st: _Setting, options, prefill_batch: int | None, efficiency) -> PrefillSide | None:
    """The sharding with the most prefill requests/s per chip that fits (weights + the prefill batch's KV and
    activations) and meets TTFT; prefill_batch defaults to pp sequences (one per micro-batch)."""
    best = None
    for choice in options:
        batch = prefill_batch or choice.pp
        if batch % choice.pp:
            continue
        try:
            ttft_s, per_chip_bytes = _prefill_ttft_s(st, choice, batch, efficiency)
        except RooflineError:
            continue
        if per_chip_bytes > st.usable_bytes or (st.ttft_s is not None and ttft_s > st.ttft_s):
            continue
        transfer_s = kv_transfer_s(st.spec, st.chip, st.prompt_len, st.scenario["kv_dtype"] or
                                   st.scenario["act_dtype"], choice.chips, st.kv_link)
        if st.ttft_s is not None and ttft_s + transfer_s > st.ttft_s:
            continue
        prefill_s = _steady_prefill_s(ttft_s, choice.pp, st.spec.n_layers)
        rate = batch / prefill_s / choice.chips
        if best is None or rate > best.requests_per_s_per_chip:
            best = PrefillSide(choice, batch, prefill_s, rate, ttft_s + transfer_s, transfer_s)
    return best


def kv_transfer_bytes(spec, prompt_len: int, kv_dtype: str) -> float:
    """One request's KV cache after its prefill: the prompt's tokens in every layer (memory.kv_cache_bytes)."""
    return float(kv_cache_bytes(spec, prompt_len, 1, Dtypes(kv=kv_dtype).kv))


def kv_transfer_s(spec, chip, prompt_len: int, kv_dtype: str, sender_chips: int, link: str = "scaleout") -> float:
    """Time to move one request's KV cache to its decode worker: each of the prefill instance's sender_chips
    sends its 1/sender_chips shard to its peer at the same time, a point-to-point message over `link`
    (scaleout: between nodes, latency + bytes / the chip's NIC bandwidth; scaleup: within one NVLink / ICI
    domain). roofline.score_collective prices it like every other message."""
    if link not in ("scaleout", "scaleup"):
        raise ScenarioError(f"kv_link must be 'scaleout' or 'scaleup', got {link!r}")
    if link == "scaleout" and chip.scaleout is None:
        raise ScenarioError(f"{chip.name} has no scale-out link to move the KV cache between workers; "
                            "use kv_link='scaleup'")
    span = 2 * chip.scaleup.domain_size if link == "scaleout" else 2  # two domains: the message leaves the node
    per_chip_bytes = kv_transfer_bytes(spec, prompt_len, kv_dtype) / sender_chips
    return float(score_collective(collective_terms("p2p", per_chip_bytes, span, chip)).t_s)


def worker_counts(prefill_rps_per_instance: float, decode_rps_per_instance: float, qps: float | None = None,
                  most_decode: int = 8) -> tuple[int, int]:
    """xPyD: prefill and decode instances. At a load (qps): enough of each to carry it. Without one: the
    smallest counts (decode instances <= most_decode) whose ratio is within 5 % of the balanced one (or the
    closest)."""
    if qps is not None:
        return (max(1, math.ceil(qps / prefill_rps_per_instance)), max(1, math.ceil(qps / decode_rps_per_instance)))
    ratio = decode_rps_per_instance / prefill_rps_per_instance  # prefill instances per decode instance
    best = None
    for y in range(1, most_decode + 1):
        x = max(1, round(ratio * y))
        err = abs(x / y - ratio) / ratio
        if best is None or err < best[0] - 1e-12:
            best = (err, x, y)
        if err <= 0.05:
            break
    return best[1], best[2]


def best_decode(st: _Setting, options, decode_batch: int, efficiency) -> DecodeSide | None:
    """The sharding with the most decode requests/s per chip whose weights + KV cache fit (a decode server never
    prefills: its activations are B tokens, ~0) and that meets TPOT."""
    from ..estimate import evaluate

    best = None
    for choice in options:
        if decode_batch % choice.pp:
            continue
        try:
            r = evaluate(st.spec, st.chip, batch=decode_batch, prompt_len=st.prompt_len, gen_len=st.gen_len,
                         tp=choice.tp, pp=choice.pp, ep=choice.ep, efficiency=efficiency, **st.scenario)
        except RooflineError:
            continue
        tpot_s = float(r.tpot_s)
        resident_bytes = float(r.memory.weight_bytes_per_chip + r.memory.kv_cache_bytes_per_chip)
        if resident_bytes > st.usable_bytes or (st.tpot_s is not None and tpot_s > st.tpot_s):
            continue
        decode_s = float(r.decode_s)
        rate = decode_batch / decode_s / choice.chips
        if best is None or rate > best.requests_per_s_per_chip:
            best = DecodeSide(choice, tpot_s, decode_s, rate)
    return best


def _colocated(st: _Setting, pre: PrefillSide, dec: DecodeSide, decode_batch: int, efficiency) -> dict:
    """Prefills run on the decode chips with the decode sharding, time-sliced with decoding: requests/s per
    chip and the TPOT a decoding sequence sees."""
    pp = dec.sharding.pp
    batch = pre.batch if pre.batch % pp == 0 else pp
    ttft_s, _ = _prefill_ttft_s(st, dec.sharding, batch, efficiency)
    prefill_per_request_s = _steady_prefill_s(ttft_s, pp, st.spec.n_layers) / batch
    rps_per_chip = 1.0 / ((prefill_per_request_s + dec.decode_s / decode_batch) * dec.sharding.chips)
    tpot_s = (dec.decode_s + decode_batch * prefill_per_request_s) / (st.gen_len - 1)
    return dict(batch=batch, requests_per_s_per_chip=rps_per_chip, tpot_s=tpot_s)


def _no_side_error(st: _Setting, side: str, max_chips: int, decode_batch: int) -> ScenarioError:
    if side == "prefill":
        return ScenarioError(f"no prefill sharding of {st.spec.name} on {st.chip.name} within {max_chips} chips "
                             f"fits {fmt_gb(st.usable_bytes)} per chip"
                             + (f" and meets TTFT {st.ttft_s} s" if st.ttft_s else ""))
    return ScenarioError(f"no decode sharding of {st.spec.name} on {st.chip.name} within {max_chips} chips fits "
                         f"batch {decode_batch} at {st.prompt_len + st.gen_len} tokens in {fmt_gb(st.usable_bytes)} "
                         f"per chip" + (f" and meets TPOT {st.tpot_s} s" if st.tpot_s else ""))


def disaggregation(model, chip, prompt_len: int, gen_len: int, decode_batch: int, prefill_batch: int | None = None,
                   prefill_sharding: tuple[int, int] | None = None, decode_sharding: tuple[int, int] | None = None,
                   max_chips: int = 64, weight_dtype=None, kv_dtype=None, act_dtype: str = "bf16",
                   gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION, efficiency=DEFAULT_EFFICIENCY,
                   prefill_efficiency=None, decode_efficiency=None,
                   attention: str = "fused", sequence_parallel: bool = False, ttft_s: float | None = None,
                   tpot_s: float | None = None, decode_chip=None, kv_link: str = "scaleout",
                   qps: float | None = None) -> Disaggregation:
    """Prefill-to-decode chip ratio at which neither side idles, and throughput per chip against co-located serving.

    Each side takes the sharding (tp, pp) with the most requests/s per chip among those that fit (prefill:
    weights + the prefill batch's KV and activations; decode: the estimate's memory at decode_batch) and meet
    ttft_s / tpot_s, unless given. prefill_batch defaults to pp sequences (one per micro-batch). Decode: each
    request occupies a slot for gen_len - 1 steps (the first token comes from prefill), at the mean step time.
    prefill_efficiency / decode_efficiency override `efficiency` per phase (e.g. Efficiency(compute=0.4) for
    the book's 40% prefill MFU). decode_chip: the decode workers' chip (default: `chip`). Every request's KV
    cache moves from its prefill to its decode worker over kv_link (kv_transfer_s), which TTFT includes; the
    transfer overlaps other requests' decoding. qps: size xPyD for this load (else the smallest balanced one)."""
    from dataclasses import replace

    from ..hardware import load_chip
    from ..model.hf import load_model

    spec = load_model(model)
    chip = load_chip(chip)
    dchip = load_chip(decode_chip) if decode_chip is not None else chip
    if gen_len < 2:
        raise ScenarioError("disaggregation needs gen_len >= 2 (decode steps after the prefill's first token)")
    if qps is not None:
        qps = check_range("qps", qps, 0.0, 1e9, "requests/s", lo_open=True)
    st = _Setting(spec, chip, prompt_len, gen_len, usable_bytes(chip.engine_capacity_bytes, gpu_memory_utilization),
                  ttft_s, tpot_s, dict(weight_dtype=weight_dtype, act_dtype=act_dtype, kv_dtype=kv_dtype,
                                       attention=attention, sequence_parallel=sequence_parallel), kv_link)
    dst = replace(st, chip=dchip, usable_bytes=usable_bytes(dchip.engine_capacity_bytes, gpu_memory_utilization))
    prefill_eff = prefill_efficiency or efficiency
    decode_eff = decode_efficiency or efficiency
    # MoE: experts spread over the whole tensor-parallel group (ep = tp), the usual serving layout
    choices = [c for c in sharding_candidates(spec, chip, max_chips)[0] if c.ep == (c.tp if spec.is_moe else 1)]
    pre = best_prefill(st, [_as_choice(spec, prefill_sharding)] if prefill_sharding else choices, prefill_batch,
                       prefill_eff)
    if pre is None:
        raise _no_side_error(st, "prefill", max_chips, decode_batch)
    dchoices = [c for c in sharding_candidates(spec, dchip, max_chips)[0] if c.ep == (c.tp if spec.is_moe else 1)]
    dec = best_decode(dst, [_as_choice(spec, decode_sharding)] if decode_sharding else dchoices, decode_batch,
                      decode_eff)
    if dec is None:
        raise _no_side_error(st, "decode", max_chips, decode_batch)
    decode_steps = gen_len - 1
    bal = balance(pre.prefill_s, pre.batch, pre.sharding.chips, dec.decode_s / decode_steps, decode_batch,
                  decode_steps, dec.sharding.chips)
    co = _colocated(dst, pre, dec, decode_batch, prefill_eff)
    x, y = worker_counts(pre.requests_per_s_per_chip * pre.sharding.chips, dec.requests_per_s_per_chip *
                         dec.sharding.chips, qps)
    disaggregated_tokens = bal["requests_per_s_per_chip"] * gen_len
    colocated_tokens = co["requests_per_s_per_chip"] * gen_len
    notes = (f"decode: {decode_steps} steps per request at the mean step {dec.tpot_s:.4g} s (first token from "
             "prefill)",
             "decode side memory: weights + KV cache at prompt + gen tokens (it never prefills, so the estimate's "
             "prefill activations are left out); prefill side: the estimate's memory of the prefill batch",
             f"co-located: prefills (batch {co['batch']}) run on the decode sharding tp={dec.sharding.tp} "
             f"pp={dec.sharding.pp}, time-sliced with decoding",
             f"KV transfer: {kv_transfer_bytes(spec, prompt_len, kv_dtype or act_dtype) / 1e6:.4g} MB per request "
             f"over {kv_link}, {pre.sharding.chips} prefill chips sending in parallel: {pre.kv_transfer_s:.4g} s "
             "(in TTFT; overlapped with other requests' decoding)")
    return Disaggregation(
        chip=chip.name, prompt_len=int(prompt_len), gen_len=int(gen_len), decode_chip=dchip.name,
        kv_transfer_bytes=kv_transfer_bytes(spec, prompt_len, kv_dtype or act_dtype),
        kv_transfer_s=pre.kv_transfer_s, kv_link=kv_link, ttft_s=pre.ttft_s, prefill_workers=x, decode_workers=y,
        prefill_tp=pre.sharding.tp,
        prefill_pp=pre.sharding.pp, prefill_batch=pre.batch, prefill_s=pre.prefill_s,
        prefill_requests_per_s_per_chip=bal["prefill_requests_per_s_per_chip"], decode_tp=dec.sharding.tp,
        decode_pp=dec.sharding.pp, decode_batch=int(decode_batch), decode_tpot_s=dec.tpot_s,
        decode_requests_per_s_per_chip=bal["decode_requests_per_s_per_chip"], chip_ratio=bal["chip_ratio"],
        instance_ratio=bal["instance_ratio"], disaggregated_output_tokens_per_s_per_chip=disaggregated_tokens,
        colocated_output_tokens_per_s_per_chip=colocated_tokens, colocated_tpot_s=co["tpot_s"],
        speedup=disaggregated_tokens / colocated_tokens, notes=notes)
