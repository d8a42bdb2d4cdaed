"""The subcommands of the command line: one `cmd_<name>(args)` per subcommand, returning the text that cli.main
prints (or a (stdout, stderr) pair); nothing here prints. Plus the argument parsing helpers they share."""

from __future__ import annotations

import os

from .bounds import BOUNDS, check_count, check_dpi
from .chip_fits import DEFAULT_EFFICIENCY
from .errors import ModelConfigError, RooflineError
from .memory import GPU_MEMORY_UTILIZATION
from .files import check_destination, figure_path, write_text
from .report.table import render
from .report.text import plan_band_text, serving_band_text
from .sharding import MOE_DISPATCH
from .units import eng, fmt_percent, fmt_seconds, records, sig3


# ------------------------------------------------------------------------------------------ chips
def cmd_chips(args) -> str:
    from .hardware import list_chips, user_chips_dir

    user_folder = str(user_chips_dir())
    rows = []
    for c in list_chips():
        rows.append({
            "name": c.name + (" (user)" if c.path.startswith(user_folder) else ""),
            "aliases": ",".join(c.aliases),
            "bf16_flops_per_s": c.peak_flops_per_s("bf16") if "bf16" in c.dense_flops_per_s else c.peak_flops_per_s("fp16"),
            "hbm_bytes": c.hbm_bytes, "driver_total_bytes": c.driver_total_bytes, "hbm_bytes_per_s": c.hbm_bytes_per_s,
            "critical_intensity_bf16": c.critical_intensity("bf16" if "bf16" in c.dense_flops_per_s else "fp16"),
            "scaleup_kind": c.scaleup.kind, "scaleup_bytes_per_s": c.scaleup.bytes_per_s,
            "price_usd_per_hour": c.price_usd_per_hour,
        })
    display = [
        ("chip", "name", None),
        ("aliases", "aliases", _first_alias if args.format == "table" else None),
        ("TFLOP/s", "bf16_flops_per_s", lambda v: sig3(v / 1e12)),
        ("HBM GB", "hbm_bytes", lambda v: sig3(v / 1e9)),
        ("driver GB", "driver_total_bytes", lambda v: "—" if v is None else sig3(v / 1e9)),
        ("TB/s", "hbm_bytes_per_s", lambda v: sig3(v / 1e12)),
        ("FLOP/B", "critical_intensity_bf16", sig3), ("scale-up", "scaleup_kind", None),
        ("GB/s", "scaleup_bytes_per_s", lambda v: sig3(v / 1e9)),
        ("$/h", "price_usd_per_hour", lambda v: "—" if v is None else f"{v:.2f}"),
    ]
    out = render(rows, args.format, display)
    if args.format in ("table", "markdown"):
        out += "\n\n" + "\n".join(_prose([
            "Per chip: TFLOP/s is the dense bf16 peak (no 2:4 sparsity), HBM GB the datasheet's memory, driver GB the "
            "total its driver reports to a process, of which an engine's --gpu-memory-utilization is taken (—: none "
            "sourced, the datasheet's is used), TB/s the HBM bandwidth, FLOP/B the critical "
            "intensity (bf16 peak / HBM bandwidth: an op with a lower arithmetic intensity is memory-bound), GB/s the "
            "scale-up link's egress in one direction, $/h the price per chip-hour. +N: more aliases (--format json "
            f"lists them). (user): a chip file in {user_folder} ($LLM_ROOFLINE_CHIPS), usable by name."],
            md=args.format == "markdown"))
    return out


def _first_alias(aliases: str) -> str:
    """The first of comma-joined aliases, '+N' for the others (the table's width)."""
    names = aliases.split(",")
    return names[0] + (f" +{len(names) - 1}" if len(names) > 1 else "")


# ------------------------------------------------------------------------------------------ models
def cmd_models(args) -> str:
    from .memory import kv_bytes_per_token
    from .model.hf import list_models, load_model

    rows = []
    for ident in list_models():
        m = load_model(ident)
        heads, kv_heads = (sorted({getattr(g.attention, k) for g in m.layer_groups}) for k in ("n_heads", "n_kv_heads"))
        one = lambda vals, sep: vals[0] if len(vals) == 1 else sep.join(map(str, vals))  # noqa: E731
        rows.append({
            "id": ident, "params_total": m.params_total, "params_active": m.params_active,
            "layers": m.n_layers, "d_model": m.d_model, "heads": one(heads, "/"), "kv_heads": one(kv_heads, "/"),
            "heads_q_kv": f"{one(heads, '-')}/{one(kv_heads, '-')}",
            "attention": m.attention_kind, "max_context": m.max_context,
            "kv_bytes_per_token_bf16": kv_bytes_per_token(m, "bf16"),
        })
    display = [
        ("model", "id", None),
        ("params", "params_total", eng),
        ("active", "params_active", eng),
        ("layers", "layers", None),
        ("d_model", "d_model", None),
        ("heads/kv", "heads_q_kv", None),
        ("attn", "attention", None),
        ("context", "max_context", lambda v: "—" if v is None else str(v)),
        ("KV/token", "kv_bytes_per_token_bf16", lambda v: eng(v, "B")),
    ]
    out = render([{k: v for k, v in r.items() if k != "heads_q_kv" or args.format in ("table", "markdown")} for r in rows],
                 args.format, display)
    if args.format in ("table", "markdown"):
        out += "\n\n" + "\n".join(_prose([
            "params counts every expert; active counts the top-k routed experts a token uses (embeddings included). "
            "heads/kv: query / KV heads; context: the longest the config allows; KV/token: bf16 KV-cache bytes per token summed "
            "over layers, before any sliding-window cap."], md=args.format == "markdown"))
    return out


# ------------------------------------------------------------------------------------------ estimate
def _int_list(text: str, flag: str = "value", bound_name: str = "batch") -> list[int]:
    """'1,8,64' -> [1, 8, 64]; every item an integer in [1, BOUNDS[bound_name]]; an empty item is an error."""
    items = [v.strip() for v in str(text).split(",")]
    if not all(items):
        raise RooflineError(f"{flag} expects comma-separated integers with no empty item, got {text!r}")
    try:
        vals = [int(v) for v in items]
    except ValueError:
        raise RooflineError(f"{flag} expects comma-separated integers, got {text!r}") from None
    return [check_count(flag, v, BOUNDS[bound_name].max_value) for v in vals]


def _count_arg(flag: str, value, bound_name: str, min_value: int = 1):
    """A scalar integer option checked against BOUNDS (None passes through: the option was not given)."""
    return None if value is None else check_count(flag, value, BOUNDS[bound_name].max_value, min_value)


def _scenario_kwargs(args) -> dict:
    return dict(tp=args.tp, pp=args.pp, ep=args.ep, dp=args.dp, weight_dtype=args.weight_dtype,
                act_dtype=args.act_dtype, kv_dtype=args.kv_dtype, efficiency=args.efficiency,
                attention=args.attention, sequence_parallel=args.sequence_parallel,
                gpu_memory_utilization=args.gpu_memory_utilization)


def _layout_kwargs(args) -> dict:
    """--attention-dp, --moe-ep, --moe-tp, --routing-skew, --moe-dispatch, as given (estimate and sweep accept them)."""
    return dict(attention_dp=args.attention_dp, moe_ep=args.moe_ep, moe_tp=args.moe_tp,
                routing_skew=args.routing_skew, moe_dispatch=args.moe_dispatch)


def _load_model_arg(args):
    """The model argument: a shipped id or a local path; with --allow-download, a hub id is fetched only after a
    quick check (a few seconds at most) that the hub answers, so an offline machine fails fast with one line."""
    from .model.hf import load_model

    if not getattr(args, "allow_download", False):
        return load_model(args.model)
    try:
        return load_model(args.model)
    except ModelConfigError:
        if os.path.exists(os.path.expanduser(str(args.model))):
            raise
    reason = _hub_unreachable()
    if reason:
        raise ModelConfigError(f"cannot download {args.model!r}: the Hugging Face Hub is unreachable ({reason}); "
                               "download its config.json yourself and pass the file or its folder instead")
    for var, seconds in (("HF_HUB_ETAG_TIMEOUT", "5"), ("HF_HUB_DOWNLOAD_TIMEOUT", "10")):
        os.environ.setdefault(var, seconds)
    return load_model(args.model, allow_download=True)


HUB_CONNECT_TIMEOUT_S = 3.0


def _hub_unreachable(timeout_s: float = HUB_CONNECT_TIMEOUT_S) -> str | None:
    """Why the Hugging Face Hub cannot be reached (HF_HUB_OFFLINE set, or no TCP connection to HF_ENDPOINT
    within timeout_s), or None. Behind a proxy the proxy is the one that connects: no check."""
    import socket
    from urllib.parse import urlsplit

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as e:
        return f"{host}:{port}: {e.strerror or type(e).__name__}"
    return None


def cmd_estimate(args) -> str:
    from .estimate import estimate
    from .report.text import estimate_text

    est = estimate(_load_model_arg(args), args.chip, batch=args.batch, prompt_len=args.prompt, gen_len=args.gen,
                   **_scenario_kwargs(args), **_layout_kwargs(args))
    warnings = "\n".join(f"llm-roofline: warning: {w}" for w in est.warnings)  # first, once, on stderr
    if args.format == "json":
        import json

        return json.dumps(est.to_dict(), indent=2), warnings
    if args.format == "csv":  # one row per op; the headline, the efficiency mode and fit repeat on every row
        from .report.export import ops_frame

        df = ops_frame([est])
        for k in ("ttft_s", "tpot_s", "e2e_s", "throughput_tokens_per_s", "tokens_per_s_per_user"):
            df["headline_" + k] = getattr(est, k)
        return df.to_csv(index=False).rstrip("\n"), warnings
    return estimate_text(est, markdown=args.format == "markdown", explain=args.explain, ops=args.ops), warnings


def cmd_sweep(args) -> str:
    from .sweep import sweep

    if args.out:
        check_destination(args.out)  # before the work: a bad --out fails fast
    df = sweep(_load_model_arg(args), _chip_list(args.chip), **_list_axes(args, "batch", "prompt", "gen"),
               **_list_axes(args, "tp", "pp", "ep", "dp"), weight_dtype=args.weight_dtype,
               act_dtype=args.act_dtype, kv_dtype=args.kv_dtype, efficiency=args.efficiency, attention=args.attention,
               sequence_parallel=args.sequence_parallel, gpu_memory_utilization=args.gpu_memory_utilization,
               **_layout_kwargs(args))
    written = write_text(args.out, df.to_csv(index=False)) if args.out else None
    rows = df.to_dict(orient="records")
    degrees = [(k, k, None) for k in ("pp", "ep", "dp") if k in df and (df[k] != 1).any()]  # shown where not all 1
    display = [("chip", "chip", None), ("tp", "tp", None), *degrees, ("batch", "batch", None),
               ("prompt", "prompt_len", None), ("gen", "gen_len", None), ("TTFT", "ttft_s", fmt_seconds),
               ("TPOT", "tpot_s", fmt_seconds),
               ("e2e", "e2e_s", fmt_seconds), ("tok/s", "throughput_tokens_per_s", sig3),
               ("per chip", "throughput_tokens_per_s_per_chip", sig3),
               ("per user", "tokens_per_s_per_user", sig3),
               ("GB/chip", "per_chip_bytes", lambda v: sig3(v / 1e9)), ("fits", "fits", lambda v: "yes" if v else "NO")]
    out = render(rows, args.format, display)
    if args.format in ("table", "markdown"):
        out += "\n\n" + _efficiency_note(df) + "\ntok/s of the deployment, per chip, and per user (1 / TPOT)." + (
            "\n" + _BAND_COLUMNS_NOTE if "ttft_s_p10" in df else "")
        if df.attrs.get("skipped"):
            out += "\nleft out: " + "; ".join(df.attrs["skipped"]) + "."
    if written:
        out += f"\n\nwrote {len(df)} rows to {written}"
    return out


# flag -> (argument name of the API, BOUNDS key)
LIST_FLAGS = {"batch": ("batch", "batch"), "prompt": ("prompt_len", "prompt_len"), "gen": ("gen_len", "gen_len"),
              "context": ("context_len", "context_len"), "tp": ("tp", "tp"), "pp": ("pp", "pp"), "ep": ("ep", "ep"),
              "dp": ("dp", "dp")}


def _list_axes(args, *flags) -> dict[str, list[int]]:
    """{API argument: checked integer list} for comma-separated list options."""
    return {LIST_FLAGS[f][0]: _int_list(getattr(args, f), f"--{f}", LIST_FLAGS[f][1]) for f in flags}


# ------------------------------------------------------------------------------------------ serve
def cmd_serve(args) -> str:
    """Continuous-batching steady state at a client concurrency or a Poisson QPS; comma lists make a sweep."""
    from .serve import serve

    def nums(text, kind):
        vals = None if text is None else [kind(v) for v in str(text).split(",") if v.strip()]
        if vals == []:  # '' or ',': no number at all
            raise ValueError(text)
        return vals if vals is None or len(vals) > 1 else vals[0]

    try:
        load = dict(concurrency=nums(args.concurrency, float), qps=nums(args.qps, float))
        grid = dict(prompt_len=nums(args.prompt, int), gen_len=nums(args.gen, int),
                    max_num_seqs=nums(args.max_num_seqs, int), max_num_batched_tokens=nums(args.max_num_batched_tokens, int))
    except ValueError:
        raise RooflineError("--prompt, --gen, --concurrency, --qps and the engine knobs take numbers "
                            "(comma-separated for a sweep)") from None
    spec = dict(k=args.spec_k, acceptance=args.spec_acceptance, draft=args.spec_draft) if args.spec_k else None
    res = serve(_load_model_arg(args), args.chip, **grid, **load, **_host_arg(args), tp=args.tp, pp=args.pp, ep=args.ep,
                dp=args.dp, weight_dtype=args.weight_dtype, act_dtype=args.act_dtype, kv_dtype=args.kv_dtype,
                efficiency=args.efficiency, attention=args.attention, prefix_hit_rate=args.prefix_hit_rate,
                scheduling=args.scheduling, gpu_memory_utilization=args.gpu_memory_utilization, speculative=spec,
                **_layout_kwargs(args))
    if args.format == "json" and not hasattr(res, "to_csv"):
        import json

        return json.dumps(res.to_dict(), indent=2)
    rows = res.to_dict(orient="records") if hasattr(res, "to_csv") else [res.to_dict()]
    display = [("prompt", "prompt_len", lambda v: f"{v:.0f}"), ("gen", "gen_len", lambda v: f"{v:.0f}"),
               ("load", "concurrency" if args.concurrency else "qps", sig3),
               ("TTFT", "ttft_s", fmt_seconds), ("p90", "ttft_p90_s", fmt_seconds), ("TPOT", "tpot_s", fmt_seconds),
               ("req/s", "requests_per_s", sig3), ("tok/s", "output_tokens_per_s", sig3),
               ("per user", "tokens_per_s_per_user", lambda v: "—" if v is None else sig3(v)),
               ("batch", "running_batch", sig3), ("KV", "kv_cache_utilization", fmt_percent),
               ("max req/s", "saturation_requests_per_s", sig3), ("cap", "limit", None)]
    if not hasattr(res, "to_csv"):
        for r in rows:
            r.update({k: r["scenario"][k] for k in ("prompt_len", "gen_len", "concurrency", "qps") if k in r["scenario"]})
        rows = [{k: v for k, v in r.items() if not isinstance(v, (dict, list))} for r in rows]
    out = render(rows, args.format, display)
    if args.format in ("table", "markdown") and not hasattr(res, "to_csv"):
        from .chip_fits import efficiency_text

        out += "\n\n" + "\n".join(_prose([
            f"{res.model} on {res.chip}, efficiency {efficiency_text(res.efficiency_mode, res.efficiency)}; "
            f"{_engine_text([res.chip], [res.scenario['max_num_seqs']], [res.scenario['max_num_batched_tokens']], args)}"
            f"; running batch capped at {res.max_running:.0f} by {res.limit}; p90: of TTFT; batch: running sequences; "
            "KV: of the KV capacity; max req/s: saturation; per user: tok/s per user = 1 / TPOT."]
            + ([serving_band_text(res.uncertainty)] if res.uncertainty else [])))
    elif args.format in ("table", "markdown"):
        out += "\n\n" + "\n".join([_efficiency_note(res)] + _prose([
            _engine_text(res["chip"], res["max_num_seqs"], res["max_num_batched_tokens"], args) + "; p90: of TTFT; "
            "batch: running sequences; KV: of the KV capacity; max req/s: saturation; per user: tok/s per user = "
            "1 / TPOT." + (" " + _BAND_COLUMNS_NOTE if "ttft_s_p10" in res else "")
            + (_SATURATED_NOTE if (res["saturated"] & res["fits"]).any() else "")
            + (_NO_ROOM_NOTE if not res["fits"].all() else "")]))
    return out


_NO_ROOM_NOTE = " cap 'no room': no sequence's KV cache fits beside the weights (more tp or pp, a smaller dtype)."
_SATURATED_NOTE = (" TTFT ∞: past the saturation rate the queue grows without bound; the other columns read the engine"
                   " at capacity (the steady state at that rate).")


def _host_arg(args) -> dict:
    """serve()'s host-overhead arguments for --host: {} (the fitted vLLM ones) or engine.NO_HOST."""
    from .engine import NO_HOST

    return {} if args.host == "vllm" else NO_HOST


_BAND_COLUMNS_NOTE = "each point's p10–p90 (ttft_s_p10, ...): --format csv or json."  # a sweep's band columns


def _engine_text(chips, seqs, tokens, args) -> str:
    """'engine max_num_seqs 1024, max_num_batched_tokens 8192 (vLLM's defaults on this chip)': the engine knobs a
    serve table ran with (each chip's pairs where there are several) and where they came from."""
    from .engine import NO_HOST_NOTE

    given = [args.max_num_seqs is not None, args.max_num_batched_tokens is not None]
    source = "" if all(given) else " (vLLM's defaults on the chip)" if not any(given) else " (the one not given: vLLM's)"
    pairs = list(dict.fromkeys((c, float(s), float(t)) for c, s, t in zip(chips, seqs, tokens)))
    knobs = (f"max_num_seqs {pairs[0][1]:.0f}, max_num_batched_tokens {pairs[0][2]:.0f}{source}" if len(pairs) == 1
             else f"max_num_seqs / max_num_batched_tokens{source}: " + ", ".join(f"{c} {s:.0f} / {t:.0f}"
                                                                                for c, s, t in pairs))
    return f"engine {knobs}" + ("" if args.host == "vllm" else f"; {NO_HOST_NOTE}")


def _efficiency_note(df) -> str:
    """'efficiency: calibrated; fit: h100-sxm: calibrated (h100-sxm fit), ...': a sweep table's mode and fits."""
    fits = dict(zip(df["chip"], df["fit"]))
    return "\n".join(_prose([f"efficiency: {', '.join(sorted(set(df['efficiency'])))}; fit: "
                             + "; ".join(f"{c}: {f}" for c, f in fits.items()) + "."]))


def _fits(mode: str, chips) -> dict[str, str]:
    """{chip name: the fit its numbers come from in this efficiency mode}."""
    from .chip_fits import efficiency_label, resolve_efficiency
    from .hardware import load_chip

    return {c.name: efficiency_label(resolve_efficiency(mode, c)) for c in map(load_chip, chips)}


def _fits_note(mode: str, chips) -> str:
    """'efficiency calibrated; fit: h100-sxm: calibrated (h100-sxm fit); ...' for the chips a plan searched."""
    import pandas as pd

    fits = _fits(mode, chips)
    return _efficiency_note(pd.DataFrame(dict(chip=list(fits), efficiency=mode, fit=list(fits.values()))))


# ------------------------------------------------------------------------------------------ plan
def _prices_arg(items) -> dict:
    out = {}
    for item in items or []:
        for part in str(item).split(","):
            name, sep, usd = part.partition("=")
            try:
                out[name.strip()] = float(usd)
            except ValueError:
                raise RooflineError(f"--price expects CHIP=USD per chip-hour, got {part!r}") from None
            if not sep or not name.strip():
                raise RooflineError(f"--price expects CHIP=USD per chip-hour, got {part!r}")
    return out


def _opt_list(text, flag):
    return None if text is None else _int_list(text, f"--{flag}", flag)


def _usd(v):
    import math

    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3g}"


PLAN_DISPLAY = [  # <= 100 columns; --format json / csv have every column (usd_per_million_input_tokens, ...)
    ("chip", "chip", None), ("tp", "tp", None), ("pp", "pp", None), ("ep", "ep", None), ("batch", "batch", None),
    ("repl", "replicas", None), ("chips", "chips_total", None), ("TTFT", "ttft_s", fmt_seconds),
    ("TPOT", "tpot_s", fmt_seconds), ("out tok/s", "output_tokens_per_s", sig3),
    ("GB/chip", "per_chip_bytes", lambda v: sig3(v / 1e9)), ("$/M out", "usd_per_million_output_tokens", _usd),
    ("binding", "binding_constraint", None),
]
WIDTH = 100  # columns of every command's table output


def _prose(lines, md: bool = False) -> list[str]:
    """Sentences wrapped at WIDTH columns, continuation lines indented (markdown: left as they are)."""
    import textwrap

    if md:
        return list(lines)
    out = []
    for line in lines:
        lead = len(line) - len(line.lstrip())
        out += textwrap.wrap(line, WIDTH, subsequent_indent=" " * (lead + 2), break_on_hyphens=False) or [""]
    return out


SERVING_PLAN_DISPLAY = [
    ("chip", "chip", None), ("tp", "tp", None), ("pp", "pp", None), ("ep", "ep", None),
    ("repl", "replicas", None), ("chips", "chips", None), ("seqs", "max_num_seqs", lambda v: f"{v:.0f}"),
    ("tok/step", "max_num_batched_tokens", lambda v: f"{v:.0f}"), ("TTFT", "ttft_s", fmt_seconds),
    ("p90", "ttft_p90_s", fmt_seconds), ("TPOT", "tpot_s", fmt_seconds),
    ("$/h", "usd_per_hour", lambda v: "—" if v is None else f"{v:.4g}"),
]


def _plan_serving(args, qps: float):
    """plan on the serving model: the cheapest deployment, why it binds, its re-check and the best per sharding."""
    from .plan_serving import DEFAULT_TTFT_S, DEFAULT_TPOT_S, plan_serving

    _count_arg("--top", args.top, "top", min_value=0)
    p = plan_serving(_load_model_arg(args), [c for c in args.chips.split(",") if c.strip()], args.prompt, args.gen,
                     qps, ttft_s=DEFAULT_TTFT_S if args.ttft_s is None else args.ttft_s,
                     tpot_s=DEFAULT_TPOT_S if args.tpot_s is None else args.tpot_s,
                     ttft_percentile=args.ttft_percentile, max_chips=args.max_chips, prices=_prices_arg(args.price),
                     weight_dtype=args.weight_dtype, act_dtype=args.act_dtype, kv_dtype=args.kv_dtype,
                     efficiency=args.efficiency, attention_dp=args.attention_dp, moe_dispatch=args.moe_dispatch,
                     gpu_memory_utilization=args.gpu_memory_utilization, host_overheads=_host_arg(args))
    if args.format == "json":
        import json

        return json.dumps(p.to_dict(), indent=2)
    rows = records(p.table if not args.top else p.table.head(args.top))
    if args.format == "csv":
        return render(rows, "csv", None)
    b, t, c = p.best, p.targets, p.check
    adp = f" x attention_dp {args.attention_dp}" if args.attention_dp > 1 else ""
    head = [f"{args.model} at {qps:g} req/s (Poisson), prompt {args.prompt}, gen {args.gen}; continuous batching "
            "(serving model)",
            f"targets: TTFT ({t['ttft_percentile']}) <= {fmt_seconds(t['ttft_s'])}, TPOT <= {fmt_seconds(t['tpot_s'])}",
            f"best: {b['chip']} tp {b['tp']}{adp} pp {b['pp']} ep {b['ep']} x {b['replicas']} replicas = "
            f"{b['chips']} chips"
            + (f", ${b['usd_per_hour']:.4g}/h" if _usd(b["usd_per_hour"]) != "—" else "")
            + f"; engine max_num_seqs {b['max_num_seqs']:.0f}, max_num_batched_tokens {b['max_num_batched_tokens']:.0f}",
            f"  TTFT {fmt_seconds(b['ttft_s'])} (p90 {fmt_seconds(b['ttft_p90_s'])}), TPOT {fmt_seconds(b['tpot_s'])}; "
            f"binds: {b['binds']}",
            f"  re-checked with serve(dp={b['replicas']}): TTFT {fmt_seconds(c.ttft_s)}, TPOT {fmt_seconds(c.tpot_s)}"
            + (f"; {plan_band_text(c.uncertainty, t['ttft_percentile'])}" if c.uncertainty else "")]
    head += [f"  {p.p90_line()}"] * bool(p.p90_misses)
    md = args.format == "markdown"
    return "\n".join(_prose(head, md) + ["", "Cheapest per chip and sharding:",
                                         render(rows, args.format, SERVING_PLAN_DISPLAY)]
                     + ([""] + _prose([f"{'-' if md else ' -'} {n}" for n in p.notes], md) if p.notes else [])
                     + ["", _fits_note(args.efficiency, [c for c in args.chips.split(",") if c.strip()])])


def cmd_plan(args) -> str:
    """Exit code 0 also when nothing is feasible: that is an answer (printed with its reasons), not an error.
    With a load and neither --static nor --disaggregate: the serving model (continuous batching)."""
    from .plan import JSON_KEYS, plan

    qps = args.qps if args.qps is not None else (args.output_tokens_per_s / args.gen
                                                 if args.output_tokens_per_s is not None else None)
    if qps is not None and not (args.static or args.disaggregate):
        return _plan_serving(args, qps)
    if args.attention_dp != 1 or args.moe_dispatch != MOE_DISPATCH or args.host != "vllm":
        raise RooflineError("--attention-dp, --moe-dispatch and --host none need the serving model: give --qps (or "
                            "--output-tokens-per-s) without --static / --disaggregate")
    if args.dp is not None:
        raise RooflineError("plan sizes data-parallel replicas itself from --qps / --output-tokens-per-s; drop --dp")
    for flag, bound_name in (("prompt", "prompt_len"), ("gen", "gen_len"), ("max_chips", "max_chips"),
                             ("max_batch", "max_batch"), ("decode_batch", "decode_batch"),
                             ("prefill_batch", "prefill_batch")):
        _count_arg("--" + flag.replace("_", "-"), getattr(args, flag), bound_name)
    _count_arg("--top", args.top, "top", min_value=0)
    p = plan(_load_model_arg(args), [c for c in args.chips.split(",") if c.strip()], prompt_len=args.prompt,
             gen_len=args.gen, ttft_s=args.ttft_s, tpot_s=args.tpot_s, qps=args.qps,
             output_tokens_per_s=args.output_tokens_per_s, max_chips=args.max_chips, prices=_prices_arg(args.price),
             weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype, act_dtype=args.act_dtype,
             gpu_memory_utilization=args.gpu_memory_utilization, efficiency=args.efficiency, attention=args.attention,
             sequence_parallel=args.sequence_parallel,
             tp=_opt_list(args.tp, "tp"), pp=_opt_list(args.pp, "pp"), ep=_opt_list(args.ep, "ep"),
             max_batch=args.max_batch,
             rank_by=args.rank_by, disaggregate=args.disaggregate, decode_batch=args.decode_batch,
             prefill_batch=args.prefill_batch)
    top = p.configs if not args.top else p.configs.head(args.top)
    fits = _fits(args.efficiency, [c for c in args.chips.split(",") if c.strip()])
    rows = [{**{k: r[k] for k in JSON_KEYS}, "efficiency": args.efficiency, "fit": fits[r["chip"]]}
            for r in records(top)]
    if args.format in ("json", "csv"):
        if not rows:  # machine-readable stdout stays empty; why goes to stderr
            return ("[]" if args.format == "json" else ""), p.explanation
        return render(rows, args.format, None)
    md = args.format == "markdown"
    out = _prose(p.explanation.split("\n"), md)
    if len(p.best_per_chip):
        out += ["", "Best configuration per chip:", render(records(p.best_per_chip), args.format, PLAN_DISPLAY)]
        out += ["", f"Top {len(rows)} of {len(p.configs)} feasible configurations (best first):",
                render(rows, args.format, PLAN_DISPLAY)]
        what = "USD per 1M output tokens" if p.frontier_by.startswith("usd") else "total chips"
        out += ["", f"Pareto frontier ({what} vs TPOT):", render(records(p.frontier), args.format, PLAN_DISPLAY)]
    if p.disaggregation:  # one column per chip: its 19 fields side by side would be 275 columns wide
        dis = [d.to_dict() for d in p.disaggregation.values()]
        rows_t = [{"field": h, **{d["chip"]: (f(d[k]) if f else d[k]) for d in dis}} for h, k, f in DISAGG_DISPLAY[1:]]
        out += ["", "Prefill/decode disaggregation (prefill chips per decode chip at which neither side idles):",
                render(rows_t, args.format, [("", "field", None)] + [(d["chip"], d["chip"], None) for d in dis])]
    out += ["", "Notes:"] + _prose([f"{'-' if md else ' -'} {n}" for n in p.notes], md)
    out += _prose([f"{'-' if md else ' -'} price {k}: " + (f"${v.usd_per_hour:.4g}/chip-hour ({v.source})"
                                                            if v.usd_per_hour else f"— ({v.source})")
                   for k, v in p.prices.items()], md)
    return "\n".join(out + ["", _fits_note(args.efficiency, [c for c in args.chips.split(",") if c.strip()])])


DISAGG_DISPLAY = [
    ("chip", "chip", None), ("xPyD", "xpyd", None),
    ("TTFT", "ttft_s", fmt_seconds), ("KV transfer", "kv_transfer_s", fmt_seconds),
    ("prefill tp", "prefill_tp", None), ("pp", "prefill_pp", None),
    ("prefill batch", "prefill_batch", None), ("prefill", "prefill_s", fmt_seconds),
    ("prefill req/s/chip", "prefill_requests_per_s_per_chip", sig3), ("decode tp", "decode_tp", None),
    ("pp", "decode_pp", None), ("decode batch", "decode_batch", None), ("TPOT", "decode_tpot_s", fmt_seconds),
    ("decode req/s/chip", "decode_requests_per_s_per_chip", sig3), ("prefill:decode chips", "chip_ratio", sig3),
    ("disagg tok/s/chip", "disaggregated_output_tokens_per_s_per_chip", sig3),
    ("co-located tok/s/chip", "colocated_output_tokens_per_s_per_chip", sig3),
    ("co-located TPOT", "colocated_tpot_s", fmt_seconds), ("speedup", "speedup", sig3),
]


# ------------------------------------------------------------------------------------------ memory
def cmd_memory(args) -> str:
    from .memory import max_batch

    spec = _load_model_arg(args)
    split = lambda v: None if v is None else [x.strip() for x in str(v).split(",") if x.strip()]  # noqa: E731
    _count_arg("--gen", args.gen, "gen_len")
    axes = _list_axes(args, "context", "tp", "pp", "ep")
    df = max_batch(spec, args.chip, axes.pop("context_len"), **axes, weight_dtype=split(args.weight_dtype) or [None],
                   kv_dtype=split(args.kv_dtype) or [None], act_dtype=args.act_dtype,
                   gpu_memory_utilization=args.gpu_memory_utilization, gen_len=args.gen, attention=args.attention,
                   sequence_parallel=args.sequence_parallel)
    rows = df.to_dict(orient="records")
    if all(isinstance(r.get("error"), str) for r in rows):  # nothing to tabulate: every combination is invalid
        raise RooflineError(rows[0]["error"])
    if args.format in ("json", "csv"):
        return render(rows, args.format, None)
    gb = lambda v: "—" if v is None or v != v else sig3(v / 1e9)  # noqa: E731
    text = lambda v: v if isinstance(v, str) else "—"  # noqa: E731  (an invalid row has no dtype: NaN)
    display = [("tp", "tp", None), ("pp", "pp", None), ("weights", "weight_dtype", text), ("KV", "kv_dtype", text),
               ("context", "context_len", None), ("weights GB", "weight_bytes_per_chip", gb),
               ("KV GB/seq", "kv_bytes_per_sequence_per_chip", gb),
               ("act GB", "activation_workspace_bytes_per_chip", gb), ("free GB", "free_bytes", gb),
               ("max batch", "max_batch", None), ("note", "error", lambda v: v if isinstance(v, str) else "")]
    r0 = rows[0]
    head = (f"{spec.name} on {r0['chip']}: {sig3(r0['capacity_bytes'] / 1e9)} GB {r0['capacity_label']} per chip, "
            f"gpu_memory_utilization {r0['gpu_memory_utilization']:g} -> {sig3(r0['usable_bytes'] / 1e9)} GB usable.")
    from .memory import PREFILL_CHUNK_TOKENS

    foot = ("Every GB is per chip. max batch = floor((usable - weights - activation workspace) / KV per sequence / "
            f"pp) x pp, with the estimate's memory model: KV at `context` tokens, activations (act) of one "
            f"{PREFILL_CHUNK_TOKENS}-token prefill chunk (`llm-roofline estimate` reports the same max batch). Driver "
            "total: the memory the GPU's driver reports to a process, which vLLM's gpu_memory_utilization multiplies "
            "(`llm-roofline chips`: driver GB; HBM: the datasheet's, where no driver total is sourced).")
    md = args.format == "markdown"
    return "\n".join(_prose([head], md) + [render(rows, args.format, display), ""] + _prose([foot], md))


# ------------------------------------------------------------------------------------------ report / plot
def _chip_list(text: str) -> list[str]:
    chips = [c.strip() for c in str(text).split(",") if c.strip()]
    if not chips:
        raise RooflineError(f"expected at least one chip, got {text!r}")
    return chips


def _command_line(args, name: str, extra: str = "") -> str:
    """The command as a user would type it (recorded in the report for provenance)."""
    parts = ["llm-roofline", name] + ([extra] if extra else []) + [args.model, "--chip", args.chip,
                                                                   "--batch", str(args.batch), "--prompt", str(args.prompt),
                                                                   "--gen", str(args.gen)]
    for flag in ("tp", "pp", "ep", "dp"):
        if getattr(args, flag) != 1:
            parts += [f"--{flag}", str(getattr(args, flag))]
    for flag in ("weight_dtype", "kv_dtype"):
        if getattr(args, flag):
            parts += [f"--{flag.replace('_', '-')}", getattr(args, flag)]
    for flag, default in (("act_dtype", "bf16"), ("efficiency", DEFAULT_EFFICIENCY), ("attention", "fused")):
        if getattr(args, flag) != default:
            parts += [f"--{flag.replace('_', '-')}", getattr(args, flag)]
    if args.sequence_parallel:
        parts.append("--sequence-parallel")
    if args.gpu_memory_utilization != GPU_MEMORY_UTILIZATION:
        parts += ["--gpu-memory-utilization", f"{args.gpu_memory_utilization:g}"]
    return " ".join(parts + ["--out", str(args.out)])


def cmd_report(args) -> str:
    from .report.build import write_report

    chips = _chip_list(args.chip)
    try:
        files = write_report(_load_model_arg(args), chips, args.out, batch=args.batch, prompt_len=args.prompt,
                             gen_len=args.gen, title=args.title, command=_command_line(args, "report"),
                             frontier_prompts=_frontier_prompts(args),
                             **_scenario_kwargs(args))
    except OSError as e:
        raise RooflineError(f"cannot write the report into {args.out}: {e}") from None
    out = [f"wrote {len(files)} files to {args.out}:"] + [f"  {p}" for p in files.values()]
    return "\n".join(out)


def _frontier_prompts(args):
    return _int_list(args.frontier_prompts, "--frontier-prompts", "prompt_len") if args.frontier_prompts else None


def cmd_plot(args) -> str:
    from .estimate import estimate
    from .report import plot

    if args.kind != "serving" and args.host != "vllm":
        raise RooflineError("--host none is for the serving chart (plot serving): the others have no host time")
    dpi = check_dpi(args.dpi)
    check_destination(figure_path(args.out))
    chips = _chip_list(args.chip)
    kw = _scenario_kwargs(args)
    model = _load_model_arg(args)
    if args.kind in ("roofline", "breakdown"):
        ests = [estimate(model, c, batch=args.batch, prompt_len=args.prompt, gen_len=args.gen, **kw) for c in chips]
        res = (plot.plot_roofline if args.kind == "roofline" else plot.plot_breakdown)(ests)
    elif args.kind == "frontier":
        res = plot.plot_frontier(model, chips, prompt_len=args.prompt, gen_len=args.gen,
                                 prompt_lens=_frontier_prompts(args), **kw)
    elif args.kind == "serving":  # latency-throughput curve of continuous batching, 1..512 clients, first chip
        from .report.serving_plot import plot_serving

        serve_kw = {k: kw[k] for k in ("tp", "pp", "ep", "weight_dtype", "act_dtype", "kv_dtype", "efficiency",
                                       "gpu_memory_utilization")}
        res = plot_serving(model, chips[0], concurrency=[2 ** i for i in range(10)], prompt_len=args.prompt,
                           gen_len=args.gen, **serve_kw, **_host_arg(args))
    else:
        res = plot.plot_memory(model, chips, prompt_len=args.prompt, gen_len=args.gen, **kw)
    try:
        path = res.save(args.out, dpi=dpi)  # the real path: '.png' is appended to a name without a suffix
    finally:
        res.close()
    return f"wrote {path}"


def cmd_calibrate(args) -> str:
    from .calibrate import calibrate, convert_vidur
    from .report.calibration import calibration_report, conversion_summary

    if args.convert_vidur:
        src, out = args.convert_vidur
        return conversion_summary(convert_vidur(src, out), out)
    if not args.measured or not args.chip:
        raise RooflineError("calibrate needs a measured CSV and --chip (or --convert-vidur VIDUR_DIR OUT.csv)")
    families = None if args.families is None else [f for f in args.families.split(",") if f.strip()]
    c = calibrate(args.measured, args.chip, write=args.write, gpu=args.gpu, source=args.source, families=families)
    return calibration_report(c, args.format)
