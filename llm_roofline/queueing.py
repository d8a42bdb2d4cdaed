"""Queueing model of a continuous-batching engine (vLLM, SGLang, TensorRT-LLM) in steady state; serve.py feeds it.

Every step the engine runs the decode token of each running sequence plus prompt tokens that fill the
per-step token budget (`max_num_batched_tokens`); a request joins when a slot (`max_num_seqs`) and KV memory
are free. The cost of a step with d decode rows and c prompt tokens comes from a step function (serve.py:
`estimate.evaluate_step` + a host overhead), tabulated at a few decode batches and interpolated.

Per replica, per request class j (weights w_j, E[.] the weighted mean), at request rate X, with L others
decoding (Little: L = X * (G - 1) / E_spec * tau) and a decoding request seeing d = 1 + L rows:

    own prefill      n_j = ceil(P'_j / room) chunk steps of P'_j / n_j tokens (P' = prompt not in the prefix
                     cache, room = budget - d rows); S_j = n_j * own step, its last step shared with the prompts
                     that joined it (gated batch service: prompts arriving during a step run together next step);
                     under a pipeline an own step is one micro-batch's pass through every stage, not a step's
                     time (step_tables' own_step_s)
    prompts per step beta = mu / (1 - exp(-mu)), mu = X tau (Poisson arrivals in one step, given >= 1)
    decode step      tau = 1 / (m + (1 - u) / D(d)),  m = X E[n] / beta steps/s with prompt tokens,
                     u = m * F(d, beta c): their time share; TPOT = tau / E_spec
    TTFT_j           request overhead + residual of the landing step (open loop; E[t^2] / (2 E[t]))
                     + backlog wait + S_j with J joining prompts (J ~ Poisson(X * landing step))
    backlog          Pollaczek-Khinchine M/D/1 on the budget's tokens, weighted by the share of the budget one
                     prompt takes; p90 via the exponential tail P(W > t) = rho exp(-t rho / E[W]) (open loop)
    slots (open)     M/D/c with c = running capacity: Erlang C times 1/2 (Allen-Cunneen, deterministic hold)
    closed loop      C clients: Schweitzer's approximate MVA (the others are (C - 1) / C of the population),
                     X = C / E[e2e] (Little) at most the prompt rate the prompt steps can serve (a prompt-bound
                     engine: the others wait), no residual (a client's next prompt arrives as a step ends),
                     clients beyond the running capacity wait (C - B) / X for a slot

Checked against a scheduler simulation (15 %: tests/test_serve_queueing.py). Pure numpy over (n points, k request
classes, m decode-batch nodes); no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import wraps
from typing import Callable

import numpy as np

from .engine import StepTables, Workload, bracket_nodes
from .errors import ScenarioError, shown

_ITERATIONS = 40  # damped fixed-point iterations (40 vs 80: < 0.3 % apart); a fixed count: same input, same answer
_SETTLE = np.geomspace(0.25, 0.02, 24)  # then the points still moving (a 2-cycle), with shrinking steps (_steady)


# ------------------------------------------------------------------------------------------- steady state
@dataclass(frozen=True)
class Steady:
    """Per-replica steady state over the grid (n,): request rate, latencies, batch and utilization."""

    requests_per_s: np.ndarray
    ttft_s: np.ndarray  # mean over requests
    ttft_p90_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    running_batch: np.ndarray  # mean sequences holding KV (prefilling or decoding)
    decode_batch: np.ndarray  # mean decode rows of a step seen by a decoding request
    prefill_utilization: np.ndarray  # time share of steps carrying prompt tokens
    queue_s: np.ndarray  # mean wait before the own prompt's step (slot, backlog, running step)
    saturated: np.ndarray  # bool: the prompt budget, the slots or the KV cache cannot keep up
    converged: np.ndarray  # bool: the fixed point holds (closed loop: C = X * e2e within 0.1 %)
    # a solve that left the p90 out (with_p90=False; ttft_p90_s NaN): mask -> ttft_p90_s at the points it marks, the
    # same numbers as a solve with it, NaN elsewhere (a caller that reads the p90 at a few points: the planner)
    ttft_p90_at: "Callable[[np.ndarray], np.ndarray] | None" = field(default=None, repr=False, compare=False)


_J = np.arange(8.0)  # prompts joining the own step (Poisson), for the p90
_R = (np.arange(8.0) + 0.5) / 8.0  # positions inside the landing step (uniform), for the p90
_U = (np.arange(16.0) + 0.5) / 16.0  # positions in a benchmark's first wave (uniform), for the p90


def _at(x, at):
    """x at the points `at`, or x itself where it is one number for every point."""
    return x[at] if np.ndim(x) else x


def _wait_tail_p90_s(mean_wait_s, busy):
    """p90 of a wait that is 0 with probability 1 - busy and exponential (mean mean_wait / busy) otherwise."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(busy > 0.1, mean_wait_s / busy * np.log(busy / 0.1), 0.0)
    return np.where(np.isfinite(mean_wait_s), np.nan_to_num(t), np.inf)


def _poisson_pmf(mean, k):
    """P(J = k) for J ~ Poisson(mean); the last k collects the tail. mean (...), k (K,) -> (..., K)."""
    from math import lgamma

    m = np.asarray(mean, dtype=np.float64)[..., None]
    log_fact = np.array([lgamma(v + 1.0) for v in k])
    pmf = np.exp(k * np.log(np.maximum(m, 1e-300)) - m - log_fact)
    pmf[..., -1] = np.maximum(1.0 - pmf[..., :-1].sum(axis=-1), 0.0)
    return pmf


def _weighted_p90(values, weights):
    """values, weights (n, ...) -> (n,): the smallest value at or above 90 % of the weight."""
    v, w = values.reshape(values.shape[0], -1), weights.reshape(values.shape[0], -1)
    order = np.argsort(v, axis=-1)
    cum = np.cumsum(np.take_along_axis(w, order, -1), axis=-1)
    idx = np.argmax(cum >= 0.9 * cum[:, -1:] - 1e-12, axis=-1)
    return np.take_along_axis(np.take_along_axis(v, order, -1), idx[:, None], -1)[:, 0]


@dataclass(frozen=True)
class _Pass:
    tau_s: np.ndarray  # mean step seen by a decoding request
    ttft_s: np.ndarray  # (n, k) per class, mean
    ttft_dist: tuple | None  # (values, weights) (n, M): the TTFT's distribution, tails at their p90 (with_p90)
    others: np.ndarray  # others decoding
    u: np.ndarray
    backlog: np.ndarray  # utilization of the prompt budget
    queue_s: np.ndarray
    # the others' prompts' demand on the engine: the larger of the prompt steps' time share (u before its cap) and the
    # backlog; the closed loop's rate is held to the share * rate / prompt_load they allow
    prompt_load: np.ndarray | None = None


def _pass(tab: StepTables, wl: Workload, rate, tau, share, dec_steps, closed: bool, request_overhead_s,
          with_ttft: bool = True, with_p90: bool = False) -> _Pass:
    """The steady-state equations once, at request rate `rate` (n,) and decode step `tau` (n,).

    Prompts that arrive during a step are prefilled together in the next one (gated batch service): a step
    with prompt tokens carries beta = mu / (1 - exp(-mu)) prompts, mu = rate * tau; a request's own step is
    joined by the prompts that arrive during its landing step (open loop, length-biased) or that end in the
    same step (closed loop). A backlog beyond the budget waits as M/D/1 on tokens (Pollaczek-Khinchine),
    weighted by the share of the budget one prompt takes."""
    share_rate = share * rate  # (n,) the others' request rate (once: every term below starts with it)
    others = share_rate * dec_steps * tau  # (n,) others decoding (Little on the decode station)
    d = 1.0 + others
    at_d, at_o = bracket_nodes(tab.nodes, d), bracket_nodes(tab.nodes, others)  # bracketed once for every table
    decode_s = tab.at(tab.decode_s, d, at_d)
    n_own = tab.at(tab.chunks, others[:, None], at_o)  # (n, k)
    new = wl.new_prompt_tokens
    chunk = new / n_own
    chunk_mean = wl.mean(chunk)
    room = tab.room_tokens(d)
    mu = share_rate * tau
    beta = np.minimum(np.where(mu > 1e-12, mu / -np.expm1(-np.maximum(mu, 1e-12)), 1.0),
                      np.maximum(room / chunk_mean, 1.0))
    mixed_per_s = share_rate * wl.mean(n_own) / beta  # steps carrying others' prompt tokens
    mixed_s = tab.batched(d, beta * chunk_mean, at_d)
    busy = mixed_per_s * mixed_s
    u = np.minimum(busy, 0.999)
    tau_new = 1.0 / (mixed_per_s + (1.0 - u) / decode_s)
    if not with_ttft:  # open loop: the fixed point needs tau only
        return _Pass(tau_new, None, None, others, u, None, None)
    prefill_s = tab.at(tab.prefill_s, others[:, None], at_o)  # (n, k) the own prompt's chunk steps
    room_o = tab.room_tokens(others)
    landing_s = mixed_per_s * mixed_s ** 2 + (1.0 - u) * decode_s  # length-biased step: E[t^2] / E[t]
    joining = share_rate * (tau_new if closed else landing_s)  # (n,) prompts sharing the own step
    residual = (0.0 if closed else 1.0) * (1.0 - np.exp(-others) * (1.0 - u)) * landing_s  # full landing step
    full_s = tab.batched(others, room_o, at_o)
    backlog = share_rate * full_s * wl.mean(new) / room_o
    # a closed loop cannot overrun its budget: at most its C - 1 other prompts are ahead of a request
    load = np.minimum(backlog, 0.999) if closed else backlog
    ok = load < 1.0
    backlog_s = np.where(ok, share_rate * full_s ** 2 * wl.mean(new ** 2) / room_o ** 2
                         / (2.0 * np.where(ok, 1.0 - load, 1.0)) * np.minimum(1.0, wl.mean(new) / room_o), np.inf)
    if closed:
        backlog_s = np.minimum(backlog_s, share / np.maximum(1.0 - share, 1e-12) * full_s * wl.mean(new) / room_o)

    def service(j):  # j (n, k, *extra) -> (n, k, *extra): own prompt with j joining prompts in its last chunk step
        shape = (Ellipsis,) + (None,) * (np.ndim(j) - 2)
        x_own = chunk[shape]
        x_all = np.minimum(x_own + j * chunk_mean[:, None][shape], room_o[:, None][shape])
        o = others[:, None][shape]
        return prefill_s[shape] + tab.batched(o, x_all, at_o) - tab.batched(o, x_own, at_o)

    wait = request_overhead_s + backlog_s + residual / 2.0  # (n,)
    ttft = wait[:, None] + service(joining[:, None])
    prompt_load = np.maximum(busy, backlog)
    if not with_p90:
        return _Pass(tau_new, ttft, None, others, u, backlog, wait - request_overhead_s, prompt_load)
    jw = _poisson_pmf(joining, _J)  # (n, J)
    values = service(_J[None, None, :])[..., None] + request_overhead_s  # (n, k, J, 1)
    values = values + residual[..., None, None, None] * _R  # (n, k, J, R)
    weights = wl.weight[..., None, None] * jw[:, None, :, None] * np.full_like(_R, 1.0 / _R.size)  # sum 1
    values, weights = np.broadcast_arrays(values, weights)
    # closed loop: the others' prompts come as their requests end, spaced by their decode phases, so the
    # backlog has no exponential tail (bounded by C - 1 prompts): its mean is added instead
    tail = backlog_s if closed else _wait_tail_p90_s(backlog_s, np.minimum(backlog, 1.0))
    dist = (values.reshape(tail.size, -1) + tail[:, None], weights.reshape(tail.size, -1))
    return _Pass(tau_new, ttft, dist, others, u, backlog, wait - request_overhead_s, prompt_load)


def _first_wave_spread_s(tab, wl, clients, others):
    """(n,) the wait of the last of a closed-loop benchmark's first wave: its clients start together, so their C
    prompts arrive at once and run through the token budget in order, the i-th after the i ahead of it (C - 1 for
    the last; (C - 1) / 2 on average) at the full-budget step's cost per prompt token."""
    room = tab.room_tokens(others)
    full_s = tab.batched(others, room)  # a step carrying a full budget of prompt tokens
    return np.maximum(clients - 1.0, 0.0) * wl.mean(wl.new_prompt_tokens) * full_s / room


def _saturating(f):
    """f with numpy's overflow, invalid and divide warnings off: a saturated point runs to inf or NaN by design
    (Steady.saturated flags it, and serve's error names it in one line), not a fault to print."""
    @wraps(f)
    def quiet(*args, **kwargs):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return f(*args, **kwargs)
    return quiet


def _settle(targets, rate, tau, moves, closed: bool):
    """(rate, tau) settled where the damped iteration swings: where prompts fill the steps the map can swing (more
    prompts a step, a longer step, fewer prompts the next) in a 2-cycle that 0.5 damping keeps (the answer then hung
    on the iteration count's parity). The points whose last two moves (of more than 1e-4 of their value) went opposite
    ways go on alone with shrinking steps (_SETTLE) to the fixed point between, until they move less than that.
    targets(rate, tau, damping, at) -> where one pass sends them; moves: the last two ((d tau, d rate)). Called in
    _steady (numpy's warnings off: _saturating)."""
    (t1, r1), (t2, r2) = moves
    swinging = ((t1 * t2 < 0) & (np.abs(t2) > 1e-4 * tau)) | ((r1 * r2 < 0) & (np.abs(r2) > 1e-4 * rate))
    at = np.flatnonzero(swinging)
    for alpha in _SETTLE[:int(at.size > 0) * _SETTLE.size]:
        to_rate, to_tau = targets(rate[at], tau[at], 1.0, at)
        moving = (np.abs(to_tau - tau[at]) > 1e-4 * tau[at]) | (np.abs(to_rate - rate[at]) > 1e-4 * rate[at])
        at, to_rate, to_tau = at[moving], to_rate[moving], to_tau[moving]
        if not at.size:
            break
        tau[at] = (1.0 - alpha) * tau[at] + alpha * to_tau
        if closed:  # (an open loop's rate is its load)
            rate[at] = (1.0 - alpha) * rate[at] + alpha * to_rate
    return rate, tau


@_saturating
def _steady(tab, wl, load, capacity, closed, tokens_per_step, request_overhead_s, rounds=np.inf,
            saturated_only: bool = False, with_p90: bool = True):
    """Damped fixed point of _pass: open loop at `load` requests/s, closed loop with `load` clients (each sending
    `rounds` requests, all starting together: the first wave's queue is averaged over the rounds). saturated_only
    (open loop): only Steady.saturated, an array (n,) (no p90 and no Erlang C: saturation_qps asks for no more).
    with_p90 False: the p90 is left out, Steady.ttft_p90_at gives it at the points a caller reads (the last pass again
    at those points: every equation is per point)."""
    load = np.asarray(load, dtype=np.float64)
    dec_steps = wl.mean(np.maximum(wl.gen_tokens - 1.0, 0.0)) / tokens_per_step  # (n,) decode steps per request
    c = np.minimum(load, capacity) if closed else None  # running clients; the rest wait for a slot
    share = (c - 1.0) / c if closed else 1.0  # Schweitzer: the others are (C - 1) / C of the clients
    tau = tab.at(tab.decode_s, np.ones_like(load))
    rate = c / (wl.mean(tab.at(tab.prefill_s, 0.0)) + dec_steps * tau) if closed else load

    def targets(rate, tau, damping, at=slice(None)):  # where one pass sends (rate, tau) at the points `at`; the
        # rate's target at the tau damped so far
        sub = (tab, wl) if isinstance(at, slice) else (tab.with_index(tab.index[at]), wl.take(at))
        p = _pass(*sub, rate, tau, _at(share, at), dec_steps[at], closed, request_overhead_s, with_ttft=closed)
        if not closed:
            return rate, p.tau_s
        demand = p.prompt_load  # Little, within the prompts per second the engine's prompt steps can serve
        cap = np.where(demand > 0, _at(share, at) * rate / np.where(demand > 0, demand, 1.0), np.inf)
        damped = (1.0 - damping) * tau + damping * p.tau_s
        return np.minimum(c[at] / (sub[1].mean(p.ttft_s) + dec_steps[at] * damped), cap), p.tau_s

    moves = []  # the last two iterations' moves of (tau, rate)
    for _ in range(_ITERATIONS):
        to_rate, to_tau = targets(rate, tau, 0.5)
        new_rate, new_tau = (0.5 * rate + 0.5 * to_rate if closed else rate), 0.5 * tau + 0.5 * to_tau
        moves = [*moves[-1:], (new_tau - tau, new_rate - rate)]
        rate, tau = new_rate, new_tau
    rate, tau = _settle(targets, rate, tau, moves, closed)
    p = _pass(tab, wl, rate, tau, share, dec_steps, closed, request_overhead_s,
              with_p90=with_p90 and not saturated_only)
    ttft = wl.mean(p.ttft_s)
    with np.errstate(invalid="ignore"):  # inf - inf where the backlog is saturated
        hold_s = ttft - request_overhead_s - p.queue_s + dec_steps * tau  # a request holds a slot (and its KV)
    if closed:  # clients beyond the slots wait for one, and with the engine's prompt steps full (u -> 1) the
        # running clients wait for them: Little on the waiting room, C = X * e2e
        slot_wait = slot_p90 = (load - c) / rate + np.maximum(c / rate - ttft - dec_steps * tau, 0.0)
        saturated = np.zeros(load.shape, bool)  # a closed loop only waits longer
    else:  # slots as M/D/c: Erlang C, halved for a deterministic holding time (Allen-Cunneen, c_s^2 = 0)
        slots = np.floor(capacity)
        offered = rate * hold_s
        saturated = (p.backlog >= 1.0) | (p.u >= 0.999) | (offered >= slots)
        if saturated_only:
            return saturated
        p_wait = _erlang_c(slots, np.minimum(offered, slots - 1e-9))
        slot_wait = np.where(saturated, np.inf, p_wait * hold_s / np.maximum(slots - offered, 1e-9) / 2.0)
        slot_p90 = _wait_tail_p90_s(slot_wait, p_wait)
    e2e = ttft + dec_steps * tau + slot_wait
    running = rate * hold_s
    converged = np.abs(rate * e2e - load) <= 1e-3 * load if closed else np.ones(load.shape, bool)
    # closed loop: a benchmark's first round, 1 / rounds of its requests (a transient: the rate stays the steady one),
    # its i-th prompt of C waiting for the i ahead of it: uniform over 0 .. spread_s beside the steady TTFT
    first = np.broadcast_to(1.0 / np.asarray(rounds, dtype=np.float64), load.shape) if closed else 0.0 * load
    spread_s = _first_wave_spread_s(tab, wl, c, p.others) if closed else 0.0 * load
    wave_s = spread_s / 2.0 * first

    def p90_of(dist, at=slice(None)):  # the last pass's TTFT distribution at the points `at` -> the Steady's p90
        (v, w), f, wave = dist, first[at][:, None], ttft[at][:, None] + spread_s[at][:, None] * _U  # wave (n, U)
        p90 = _weighted_p90(np.hstack([v, wave]), np.hstack([w * (1.0 - f), np.broadcast_to(f / _U.size, wave.shape)]))
        return (np.where(first[at] > 0, p90, np.maximum(p90, ttft[at])) if closed else p90) + slot_p90[at]

    @_saturating
    def p90_at(mask):
        at, out = np.flatnonzero(mask), np.full(load.shape, np.nan)
        again = _pass(tab.with_index(tab.index[at]), wl.take(at), rate[at], tau[at], share[at] if closed else share,
                      dec_steps[at], closed, request_overhead_s, with_p90=True)
        out[at] = p90_of(again.ttft_dist, at)
        return out
    p90 = p90_of(p.ttft_dist) if with_p90 else np.full(load.shape, np.nan)
    return Steady(rate, ttft + wave_s + slot_wait, p90, tau / tokens_per_step, e2e + wave_s, running, 1.0 + p.others,
                  p.u, p.queue_s + wave_s + slot_wait, saturated, converged, None if with_p90 else p90_at)


def _erlang_c(servers, offered):
    """Probability of waiting in M/M/c (Erlang C) with c = servers, offered load a < c (arrays); Erlang B by
    its recursion B(k) = a B(k-1) / (k + a B(k-1)), then C = c B / (c - a (1 - B))."""
    b = np.ones_like(offered)
    for k in range(1, int(np.max(servers)) + 1):
        b = np.where(k <= servers, offered * b / (k + offered * b), b)
    return servers * b / (servers - offered * (1.0 - b))


def solve_open(tab: StepTables, wl: Workload, qps, capacity, tokens_per_step=1.0, request_overhead_s=0.0,
               with_p90: bool = True) -> Steady:
    """Poisson arrivals at `qps` requests/s per replica (n,). with_p90: see _steady."""
    return _steady(tab, wl, qps, capacity, False, tokens_per_step, request_overhead_s, with_p90=with_p90)


def saturation_qps(tab: StepTables, wl: Workload, capacity, tokens_per_step=1.0, rounds: int = 3) -> np.ndarray:
    """The largest Poisson rate (n,) the open-loop model serves without saturating: each round scores 32 rates
    spread over the current bracket at once, starting from [0, a rate that certainly saturates] (every slot
    decoding at the fastest step, or the budget full of prompts); 3 rounds: within 32^-3 of that bound."""
    n, k = tab.index.size, 32
    dec_steps = wl.mean(np.maximum(wl.gen_tokens - 1.0, 0.0)) / tokens_per_step
    fastest_s = tab.at(tab.decode_s, np.ones(n))
    budget = tab.point_budget_tokens
    prompt_s = tab.batched(np.zeros(n), budget) / budget
    lo = np.zeros(n)
    slots = np.where(dec_steps > 0, (capacity + 1.0) / (np.maximum(dec_steps, 1e-9) * fastest_s), 0.0)  # no decode:
    hi = np.maximum(slots, 1.0 / (wl.mean(wl.new_prompt_tokens) * prompt_s))  # the prompts alone bound it
    rep = np.repeat(np.arange(n), k)
    wl_k = wl.take(rep)
    for _ in range(rounds):
        rates = lo[:, None] + (hi - lo)[:, None] * np.arange(1, k + 1) / k  # (n, k)
        sat = _steady(tab.with_index(tab.index[rep]), wl_k, rates.ravel(), np.repeat(capacity, k), False,
                      tokens_per_step, 0.0, saturated_only=True).reshape(n, k)
        first_bad = np.argmax(np.concatenate([sat, np.ones((n, 1), bool)], axis=1), axis=1)  # (n,) in 0..k
        below = rates[np.arange(n), np.maximum(first_bad - 1, 0)]  # the last rate that held
        above = rates[np.arange(n), np.minimum(first_bad, k - 1)]  # the first that saturated
        lo, hi = np.where(first_bad > 0, below, lo), np.where(first_bad < k, above, hi)
    return lo


def solve_closed(tab: StepTables, wl: Workload, concurrency, capacity, tokens_per_step=1.0,
                 request_overhead_s=0.0, requests_per_client=np.inf, with_p90: bool = True) -> Steady:
    """C clients per replica (n,), each sending its next request when the previous one ends (no think time),
    `requests_per_client` requests each, all clients starting together (np.inf: the steady state alone). with_p90:
    see _steady."""
    if not requests_per_client >= 1.0:
        raise ScenarioError(f"requests_per_client must be >= 1, got {shown(requests_per_client)}")
    return _steady(tab, wl, concurrency, capacity, True, tokens_per_step, request_overhead_s, requests_per_client,
                   with_p90=with_p90)
