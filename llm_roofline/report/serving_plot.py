"""Latency-throughput curve of a serving deployment: TTFT (mean, p90) and TPOT against the load (concurrency or
QPS), and output tokens/s against TPOT, with the knee marked.

Knee: the load of maximum power, throughput / latency (Kleinrock, "Power and deterministic rules of thumb for
probabilistic problems in computer communications", ICC 1979), here requests/s over mean end-to-end latency:
below it more load buys throughput almost for free, above it mostly latency.
"""

from __future__ import annotations

import numpy as np

from ..errors import ScenarioError
from ..engine import HOST_OVERHEADS, NO_HOST_NOTE
from ..serve import serve
from .chart_base import PlotResult, dtype_phrase, finish as _finish, parallel_text, pyplot as _plt, suptitle


def knee_index(requests_per_s, e2e_s) -> int:
    """Index of the maximum power point, requests/s divided by end-to-end latency (saturated points skipped)."""
    power = np.where(np.isfinite(e2e_s), np.asarray(requests_per_s) / np.asarray(e2e_s), -np.inf)
    return int(np.argmax(power))


def plot_serving(model, chip, path=None, *, concurrency=None, qps=None, dpi: int = 110, **kw) -> PlotResult:
    """Sweep the load (a list of concurrencies or of QPS values; other serve() arguments in kw) and draw it."""
    load_name = "concurrency" if concurrency is not None else "qps"
    df = serve(model, chip, **{load_name: list(concurrency if concurrency is not None else qps)}, **kw)
    where = f"{getattr(model, 'name', model)} on {df['chip'].iloc[0]} ({parallel_text(kw)})"
    if df["saturated"].all():  # nothing to draw: say why, as serve() does for one point
        why = ("no room for the KV cache of one sequence within gpu_memory_utilization x the chip's memory"
               if not df["fits"].any()
               else f"every {load_name} saturates it (at most {df['saturation_requests_per_s'].max():.3g} requests/s)")
        raise ScenarioError(f"{where}: {why}")
    df = df[~df["saturated"]].reset_index(drop=True)
    load = df[load_name].to_numpy()
    k = knee_index(df["requests_per_s"], df["e2e_s"])
    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    ttft_line, = ax1.plot(load, df["ttft_s"] * 1e3, "o-", label="TTFT mean")
    ax1.plot(load, df["ttft_p90_s"] * 1e3, "o--", label="TTFT p90")
    tpot_line, = ax1.plot(load, df["tpot_s"] * 1e3, "s-", label="TPOT")
    banded = [c for c in ("ttft_s_p10", "ttft_s_p90", "tpot_s_p10", "tpot_s_p90") if np.isfinite(df.get(c, [])).any()]
    for name, line in (("ttft_s", ttft_line), ("tpot_s", tpot_line)):  # the calibrated estimate's p10-p90 (serve())
        if f"{name}_p10" in banded:
            hi = np.minimum(df[f"{name}_p90"].to_numpy(), 1e3 * df[name].to_numpy())  # saturated at p90: off the plot
            ax1.fill_between(load, df[f"{name}_p10"] * 1e3, hi * 1e3, color=line.get_color(), alpha=0.15, lw=0,
                             label=f"{name.split('_')[0].upper()} p10–p90 (kernel fits and serving model error)")
    ax1.axvline(load[k], color="grey", ls=":", label=f"knee ({load_name} {load[k]:.3g})")
    ax1.set(xscale="log", yscale="log", xlabel="clients (closed loop)" if load_name == "concurrency" else
            "requests/s (Poisson)", ylabel="ms", title="latency vs load")
    ax1.legend(fontsize=8)
    tok = df["output_tokens_per_s"].to_numpy()
    ax2.plot(df["tpot_s"] * 1e3, tok, "o-")
    ax2.plot(df["tpot_s"].iloc[k] * 1e3, tok[k], "r*", ms=14, label="knee (max throughput / latency)")
    ax2.set(xlabel="TPOT (ms)", ylabel="output tokens/s", title="throughput vs TPOT")
    ax2.legend(fontsize=8)
    from ..chip_fits import efficiency_text

    # the engine knobs the curve ran with (vLLM's defaults on the chip where not given: serve())
    engine = f"max_num_seqs {df['max_num_seqs'].iloc[0]:.0f}, {df['max_num_batched_tokens'].iloc[0]:.0f} tokens/step"
    host = "" if any(kw.get(k, v) for k, v in HOST_OVERHEADS.items()) else f"; {NO_HOST_NOTE}"
    suptitle(fig, f"{where}: continuous batching, prompt {kw.get('prompt_len', 2048)}, "
                  f"gen {kw.get('gen_len', 256)}{dtype_phrase(kw)}; efficiency "
                  f"{efficiency_text(df['efficiency'].iloc[0], df['fit'].iloc[0])}; engine {engine}{host}")
    fig.tight_layout()
    data = dict(load=load, ttft_s=df["ttft_s"].to_numpy(), ttft_p90_s=df["ttft_p90_s"].to_numpy(),
                tpot_s=df["tpot_s"].to_numpy(), output_tokens_per_s=tok, knee=int(k), load_name=load_name,
                **{c: df[c].to_numpy() for c in banded})
    return _finish(PlotResult(fig, data), path, dpi)
