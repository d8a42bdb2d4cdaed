"""TTFT, TPOT, end-to-end time and memory alone (evaluate()'s headline numbers, without the work totals, the other
time fields and the per-op results): what `sweep` and the static planner score, on several chips and shardings at
once (evaluate_pipelines: one pipeline stage built and scored for every pp, and an op that the stages of several eps
share scored once)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from .chip_fits import DEFAULT_EFFICIENCY, resolve_efficiency
from .errors import RooflineError, ScenarioError, shown
from .estimate import (Evaluation, decode_ops, decode_total_of, prefill_time_factor, scenario_arrays, scenario_grid,
                       step_time_factor, tpot_of)
from .graph import Dtypes, Phase, build_ops, handoff_ops, resolve_dtypes
from .hardware import Chip, load_chip
from .memory import GPU_MEMORY_UTILIZATION, Footprint, footprint, usable_bytes
from .model.hf import load_model
from .phases import PrefillSums, graph_memo, keep_t_s_chips, phase_t_s_chips
from .sharding import MOE_DISPATCH, Sharding, micro_batches
from .units import array_key, remembered, sub_memo


@dataclass(frozen=True)
class Headline:
    """evaluate()'s TTFT, TPOT, end-to-end time and memory footprint alone (evaluate_headline), with what names
    them (chip, sharding, efficiency model) and the grid's batch and gen_len for the throughputs."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    memory: Footprint
    chip: Chip
    sharding: Sharding
    efficiency_model: Any
    batch: np.ndarray
    gen_len: np.ndarray

    # the same formulas as Evaluation's (they read sharding, batch, gen_len and e2e_s)
    throughput_tokens_per_s = Evaluation.throughput_tokens_per_s
    throughput_tokens_per_s_per_chip = Evaluation.throughput_tokens_per_s_per_chip


def evaluate_headline(model, chip, *, batch=1, prompt_len=2048, gen_len=256, tp=1, pp=1, ep=1, dp=1,
                      weight_dtype=None, act_dtype="bf16", kv_dtype=None, efficiency=DEFAULT_EFFICIENCY,
                      attention="fused", sequence_parallel=False, attention_dp=1, moe_tp=None, moe_ep=None,
                      routing_skew=1.0, moe_dispatch=MOE_DISPATCH, gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
                      graphs: dict | None = None) -> Headline:
    """evaluate(...)'s ttft_s, tpot_s, e2e_s and memory, the same numbers without the work totals, the other time
    fields and the per-op results (the static planner's scoring). graphs: see evaluate_headlines."""
    r = evaluate_headlines(model, [chip], efficiencies=[efficiency], batch=batch, prompt_len=prompt_len,
                           gen_len=gen_len, tp=tp, pp=pp, ep=ep, dp=dp, weight_dtype=weight_dtype, act_dtype=act_dtype,
                           kv_dtype=kv_dtype, attention=attention, sequence_parallel=sequence_parallel,
                           attention_dp=attention_dp, moe_tp=moe_tp, moe_ep=moe_ep, routing_skew=routing_skew,
                           moe_dispatch=moe_dispatch, gpu_memory_utilization=gpu_memory_utilization, graphs=graphs)[0]
    if isinstance(r, RooflineError):
        raise r
    return r


def evaluate_headlines(model, chips, *, efficiencies, batch=1, prompt_len=2048, gen_len=256, tp=1, pp=1, ep=1,
                       dp=1, weight_dtype=None, act_dtype="bf16", kv_dtype=None, attention="fused",
                       sequence_parallel=False, attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0,
                       moe_dispatch=MOE_DISPATCH, gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
                       graphs: dict | None = None) -> list:
    """evaluate_headline of one scenario grid on each of `chips` (efficiencies: one per chip), the same numbers: the
    chips on which its graphs are the same (the same dtypes run there) are scored together (phases.phase_t_s_chips).
    Per chip its Headline, or the RooflineError its evaluation raised. graphs: a dict the caller keeps for ONE model
    over several calls (graph_memo): the graphs, their chip-free stacks and the footprint are made once there."""
    return evaluate_pipelines(model, chips, efficiencies=efficiencies, batches=[batch], pps=[pp],
                              prompt_len=prompt_len, gen_len=gen_len, tp=tp, ep=ep, dp=dp, weight_dtype=weight_dtype,
                              act_dtype=act_dtype, kv_dtype=kv_dtype, attention=attention,
                              sequence_parallel=sequence_parallel, attention_dp=attention_dp, moe_tp=moe_tp,
                              moe_ep=moe_ep, routing_skew=routing_skew, moe_dispatch=moe_dispatch,
                              gpu_memory_utilization=gpu_memory_utilization, graphs=graphs)[0]


def evaluate_pipelines(model, chips, *, efficiencies, batches, pps, eps=None, prompt_len=2048, gen_len=256, tp=1,
                       ep=1, dp=1, weight_dtype=None, act_dtype="bf16", kv_dtype=None, attention="fused",
                       sequence_parallel=False, attention_dp=1, moe_tp=None, moe_ep=None, routing_skew=1.0,
                       moe_dispatch=MOE_DISPATCH, gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
                       graphs: dict | None = None) -> list:
    """evaluate_headlines of the shardings tp x pp x ep, for each scenario of `batches`, `pps` and `eps` (default:
    `ep` for every one), whose micro-batches batch / pp are the same: per scenario, its list (per chip: a Headline or
    the error). A pipeline stage runs the same ops at the same micro-batch whatever pp (graph.handoff_ops), so each
    ep's stage is built and scored once; each pp adds its hand-off between stages and its schedule, applied to the
    stage's sum. The stages of several eps share all but their expert ops: every stage is built first and each op
    they hold scored once (phases.keep_t_s_chips). The static planner's shardings of one tp."""
    try:
        spec = load_model(model)
    except RooflineError as err:
        return [[err] * len(chips) for _ in pps]
    if len(chips) != len(efficiencies):
        raise ScenarioError(f"one efficiency per chip needed: {len(chips)} chips, {len(efficiencies)} efficiencies")
    eps = [ep] * len(pps) if eps is None else eps
    if not all(isinstance(x, (list, tuple)) for x in (batches, pps, eps)) or not len(batches) == len(pps) == len(eps):
        raise ScenarioError(f"evaluate_pipelines takes lists of batch grids, pps and eps of the same length, "
                            f"got {shown(batches)}, {shown(pps)} and {shown(eps)}")
    scenarios = []
    for batch, pp, e in zip(batches, pps, eps):
        try:
            scenarios.append(scenario_arrays(batch, prompt_len, gen_len, tp, pp, e, dp, sequence_parallel,
                                             attention_dp, moe_tp, moe_ep, routing_skew, moe_dispatch))
        except RooflineError as err:
            scenarios.append(err)
    valid = [x for x in scenarios if not isinstance(x, RooflineError)]
    if len(valid) > 1 and any(not np.array_equal(_micro(x), _micro(valid[0])) for x in valid):
        raise ScenarioError("the batch grids of evaluate_pipelines must share their micro-batches batch / pp")
    out, runs = [[None] * len(chips) for _ in pps], {}
    for i, (chip, efficiency) in enumerate(zip(chips, efficiencies)):
        try:  # what _inputs checks, in its order; the chip-free part once
            chip = load_chip(chip)
            if not valid:
                raise scenarios[0]
            dt = resolve_dtypes(chip, Dtypes(weight_dtype, act_dtype, kv_dtype), [])
            eff = resolve_efficiency(efficiency, chip)
        except RooflineError as err:
            for row in out:
                row[i] = err
            continue
        runs.setdefault(dt, []).append((i, chip, eff))  # by the dtypes the chip runs
    for dt, members in runs.items():
        heads = iter(_stages_headlines(spec, members, dt, valid, attention, gpu_memory_utilization, graphs))
        for row, scenario in zip(out, scenarios):  # a refused scenario's error, else the next valid one's headlines
            got = [scenario] * len(members) if isinstance(scenario, RooflineError) else next(heads)
            for (i, _, _), h in zip(members, got):
                row[i] = h
    return out


def _stages_headlines(spec, members: list, dt: Dtypes, scenarios: list, attention, gpu_memory_utilization,
                      graphs: dict | None) -> list:
    """_headlines of each pipeline stage's scenarios (those of one ep), in the scenarios' order; a stage whose
    evaluation raised gets its error on every chip. Several stages: their graphs are built and the ops they hold
    scored first, each op once (kept), so a stage's own scoring finds them."""
    stages: dict = {}
    for j, x in enumerate(scenarios):
        stages.setdefault(x[0].stage, []).append(j)
    kept = None
    if len(stages) > 1:
        kept, graphs = {}, {} if graphs is None else graphs
        try:
            _keep_stages(spec, members, dt, [scenarios[at[0]] for at in stages.values()], attention, graphs, kept)
        except RooflineError:
            pass  # the stage whose op raised raises it again in its own evaluation
    out = [None] * len(scenarios)
    for at in stages.values():
        try:
            heads = _headlines(spec, members, dt, [scenarios[j] for j in at], attention, gpu_memory_utilization, graphs,
                               kept)
        except RooflineError as err:
            heads = [[err] * len(members)] * len(at)
        for j, h in zip(at, heads):
            out[j] = h
    return out


def _micro(scenario: tuple):
    """Sequences per micro-batch of a checked scenario (sh, batch, prompt, gen): batch / sharding.micro_batches."""
    sh, batch = scenario[:2]
    return batch / micro_batches(sh.pp, batch)


def _stage_graphs(spec, scenario: tuple, dt: Dtypes, attention, graphs: dict | None) -> tuple:
    """The prefill and decode graphs of a scenario's pipeline stage at its micro-batches, each with its memo
    (phases.graph_memo, kept in `graphs`): ((ops, memo), ((ops, sums, grid), memo) or None without a decode)."""
    sh, batch, prompt, gen = scenario
    stage, micro = sh.stage, _micro(scenario)
    arrays = () if graphs is None else tuple(array_key(x) for x in (micro, prompt, gen))  # keys kept in `graphs`
    key = (stage, dt, attention) + arrays
    at = (id(spec), dt, attention) + arrays  # the graph's parts: each stage's built once for the eps that share it
    pre = graph_memo(graphs, ("headline.prefill", id(spec)) + key, lambda: build_ops(
        spec, Phase.prefill(micro, prompt), stage, dt, attention, sub_memo(graphs, ("headline.prefill.parts",) + at)))
    if not np.any(gen > 1):
        return pre, None
    return pre, graph_memo(graphs, ("headline.decode", id(spec)) + key, lambda: decode_ops(
        spec, stage, dt, micro, prompt, np.maximum(gen, 2), attention,
        partial(build_ops, parts=sub_memo(graphs, ("headline.decode.parts",) + at))))


def _keep_stages(spec, members: list, dt: Dtypes, firsts: list, attention, graphs: dict, kept: dict) -> None:
    """Every stage's ops (firsts: a scenario of each stage) scored on the members' chips, each op once, into `kept`
    (phases.keep_t_s_chips): the prefill ops of all stages together, then their decode ops."""
    chips, effs = [m[1] for m in members], [m[2] for m in members]
    built = [_stage_graphs(spec, x, dt, attention, graphs) for x in firsts]
    keep_t_s_chips([op for (ops, _), _ in built for op in ops], chips, effs, PrefillSums,
                   scenario_grid(_micro(firsts[0]), firsts[0][2]), kept)
    if built[0][1] is not None:
        (_, sums, grid), _ = built[0][1]
        keep_t_s_chips([op for _, ((ops, _, _), _) in built for op in ops], chips, effs, sums, grid, kept)


def _headlines(spec, members: list, dt: Dtypes, scenarios: list, attention, gpu_memory_utilization,
               graphs: dict | None, kept: dict | None = None) -> list[list[Headline]]:
    """The Headlines of the chips (members: (position, chip, efficiency model)) running each of `scenarios` (one
    stage, pp apart) in dtypes dt: per scenario, per chip (or the error of its hand-off, for every chip: a link it
    cannot cross). The hand-offs are scored first: a stage no pp can hand on is not scored. kept: the op times of
    several stages (_keep_stages)."""
    chips, effs = [m[1] for m in members], [m[2] for m in members]
    hands = [_handoff_t_s(spec, chips, effs, dt, scenario, attention) for scenario in scenarios]
    if all(isinstance(h, RooflineError) for h in hands):
        return [[h] * len(chips) for h in hands]
    sh, batch, prompt, gen = scenarios[0]
    (pre_ops, pre_memo), dec = _stage_graphs(spec, scenarios[0], dt, attention, graphs)
    pre_stage = phase_t_s_chips(pre_ops, chips, effs, 1.0, PrefillSums, scenario_grid(_micro(scenarios[0]), prompt),
                                pre_memo, kept)
    dec_stage = [None] * len(chips)
    if dec is not None:
        (ops, sums, grid), memo = dec
        dec_stage = phase_t_s_chips(ops, chips, effs, 1.0, sums, grid, memo, kept)
    out = []
    for (sh, batch, prompt, gen), hand in zip(scenarios, hands):
        if isinstance(hand, RooflineError):
            out.append([hand] * len(chips))
            continue
        ops, pre_hand, dec_hand = hand
        pre, dec = pre_stage, dec_stage
        if ops:  # pp > 1: the stage's sums and the hand-off's, under the pipeline schedule
            pre = [prefill_time_factor(sh, spec.n_layers, batch) * (t + h) for t, h in zip(pre, pre_hand)]
            dec = dec if dec_hand is None else [step_time_factor(sh, spec.n_layers, batch) * (t + h)
                                                for t, h in zip(dec, dec_hand)]
        fp = _footprint(spec, sh, dt, pre_ops + ops, batch, prompt + gen, pre_memo)
        out.append([Headline(ttft, tpot_of(gen, ttft, d), ttft + decode_total_of(gen, ttft, d),
                             replace(fp, capacity_bytes=usable_bytes(chip.engine_capacity_bytes,
                                                                     gpu_memory_utilization)), chip,
                             sh, eff, batch, gen) for chip, eff, ttft, d in zip(chips, effs, pre, dec)])
    return out


def _handoff_t_s(spec, chips, effs, dt: Dtypes, scenario: tuple, attention):
    """(the prefill hand-off ops, their prefill and decode sums per chip; None: no decode) of one scenario's pp, or the
    RooflineError scoring them raised (a link the hand-off cannot cross). pp = 1: no ops, nothing scored."""
    sh, batch, prompt, gen = scenario
    try:
        ops = handoff_ops(spec, Phase.prefill(batch, prompt), sh, dt, attention)
        if not ops:
            return ops, None, None
        pre = phase_t_s_chips(ops, chips, effs, 1.0, PrefillSums, scenario_grid(batch, prompt))
        dec = None
        if np.any(gen > 1):
            d_ops, sums, grid = decode_ops(spec, sh, dt, batch, prompt, np.maximum(gen, 2), attention, handoff_ops)
            dec = phase_t_s_chips(d_ops, chips, effs, 1.0, sums, grid)
    except RooflineError as err:
        return err
    return ops, pre, dec


def _footprint(spec, sh: Sharding, dt: Dtypes, prefill_ops: list, batch, context, memo: dict | None) -> Footprint:
    """memory.footprint without its capacity (each chip's), kept in `memo` (the stage's graph memo) per pp."""
    return remembered(memo, ("footprint", sh.pp), footprint, spec, 0.0, sh, dt, prefill_ops, batch, context)
