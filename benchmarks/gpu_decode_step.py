"""One whole decode step of Llama-3.1-8B timed on a GPU, against the calibrated TPOT: an out-of-framework check of
the estimate's composition (every op of a step, not one family). Maintainers run it where they have a GPU.

    python3 benchmarks/gpu_decode_step.py OUT.csv [--batches 1,8,64] [--kv 2048]
    python3 benchmarks/gpu_decode_step.py OUT.csv --prefill 2048,8192     # one prompt's prefill (TTFT) instead
    python3 benchmarks/gpu_decode_step.py OUT.csv --mixed 64:2048:512:512,64:2048:512:4096   # chunked-prefill steps
    python3 benchmarks/gpu_decode_step.py OUT.csv --mixed 64:2048:512:512 --sustain-s 20   # and under sustained load

The step, in one CUDA graph, median of 20 replays: the embedding gather; per layer (32, each with its own bf16
weights) a fused RMSNorm, the qkv GEMM (cuBLAS), rotary of q and k (gpu_kernels.py, Triton), the new key and value
written into a contiguous cache, SDPA of the 1-token query over kv + 1 keys (PyTorch picks the backend), o_proj, a
residual add, RMSNorm, gate_up, SiLU-and-mul (Triton), down, a residual add; the final RMSNorm and the LM head over
128,256 tokens. A mixed step (`--mixed B:KV:C:CTX`, what a chunked-prefill engine runs) puts a prompt chunk of C
tokens at the end of a CTX-token context beside B decoding sequences: one pass of every GEMM over B + C rows, the
decodes' 1-token SDPA, the chunk's causal attention over its CTX keys (cuDNN where CTX = C, as the prefill; else
FlashAttention-2 with the causal diagonal at the bottom right), logits for the B decodes and the chunk's last row.
What a serving engine adds beyond this (sampling, the scheduler, a paged cache) is not in it, so the
estimate, which prices vLLM's kernels and not its host, is compared to it directly. Random weights (0.02 scale)
and inputs; the rotary and norm kernels checked against PyTorch by `gpu_check.py measure --parts memory`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODEL = "meta-llama/Llama-3.1-8B"
H, HQ, HKV, D, F, LAYERS, VOCAB = 4096, 32, 8, 128, 14336, 32, 128256


def _model(torch, K, ids, pos, attend, head_rows=None):
    """run: Llama-3.1-8B over the tokens `ids` at positions `pos` (random bf16 weights, 32 layers of their own), with
    attend(layer, q, k, v) -> (rows, HQ * D) for each layer's attention; the LM head over `head_rows` (an index
    tensor; None: every row)."""
    Fn = torch.nn.functional

    def w(*shape):
        return torch.randn(*shape, device=ids.device, dtype=torch.bfloat16) * 0.02

    layers = [dict(n1=1 + w(H), qkv=w((HQ + 2 * HKV) * D, H), o=w(H, HQ * D), n2=1 + w(H), gu=w(2 * F, H),
                   down=w(H, F)) for _ in range(LAYERS)]
    emb, norm, head = w(VOCAB, H), 1 + w(H), w(VOCAB, H)
    cos, sin = (torch.rand(int(pos.max()) + 1, D // 2, device=ids.device) for _ in range(2))
    rows = len(ids)

    def run():
        x = Fn.embedding(ids, emb)
        for i, L in enumerate(layers):
            qkv = Fn.linear(K.rms_norm(x, L["n1"]), L["qkv"])
            q, k, v = qkv.split((HQ * D, HKV * D, HKV * D), dim=-1)
            K.rope(q.view(rows, HQ, D), k.view(rows, HKV, D), pos, cos, sin)
            x = x + Fn.linear(attend(i, q, k, v), L["o"])
            x = x + Fn.linear(K.silu_and_mul(Fn.linear(K.rms_norm(x, L["n2"]), L["gu"])), L["down"])
        return Fn.linear(K.rms_norm(x if head_rows is None else x[head_rows], norm), head)

    return run


def _step(torch, K, batch: int, kv: int):
    """run: one decode step of `batch` sequences whose caches (contiguous, one per layer) hold `kv` tokens; the new
    token's key and value are written at position kv and its query attends to all kv + 1."""
    Fn = torch.nn.functional
    dev = "cuda"
    ids = torch.randint(0, VOCAB, (batch,), device=dev)
    pos = torch.full((batch,), kv, device=dev, dtype=torch.int64)
    caches = [[torch.randn(batch, HKV, kv + 1, D, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(2)]
              for _ in range(LAYERS)]

    def attend(i, q, k, v):
        kc, vc = caches[i]
        kc[:, :, kv] = k.view(batch, HKV, D)
        vc[:, :, kv] = v.view(batch, HKV, D)
        return Fn.scaled_dot_product_attention(q.view(batch, HQ, 1, D), kc, vc, enable_gqa=True).reshape(batch, -1)

    return _model(torch, K, ids, pos, attend)


def _fa2(torch, q, k, v):
    """FlashAttention-2 through aten's entry ((batch, tokens, heads, D), GQA native), causal with the diagonal at the
    bottom right: q (C, HQ * D) at the end of k, v (CTX, HKV * D) -> (C, HQ * D)."""
    c, ctx = len(q), len(k)
    return torch.ops.aten._flash_attention_forward(q.view(1, c, HQ, D), k.view(1, ctx, HKV, D), v.view(1, ctx, HKV, D),
                                                   None, None, c, ctx, 0.0, True, False)[0].reshape(c, HQ * D)


def _causal(torch, q, k, v):
    """One prompt's causal attention, q (C, HQ * D) at the end of k, v (CTX, HKV * D) -> (C, HQ * D): cuDNN's kernel
    where PyTorch has it and C = CTX (SDPA's is_causal is top-left), else FlashAttention-2 (_fa2)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    c, ctx = len(q), len(k)
    if c < ctx:
        return _fa2(torch, q, k, v)
    backends = [b for b in (getattr(SDPBackend, "CUDNN_ATTENTION", None), SDPBackend.FLASH_ATTENTION) if b is not None]
    q, k, v = (t.view(1, c, -1, D).transpose(1, 2) for t in (q, k, v))
    with sdpa_kernel(backends):
        att = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return att.transpose(1, 2).reshape(c, HQ * D)


def _prefill(torch, K, tokens: int):
    """run: the prefill of one prompt of `tokens` tokens through the same layers (causal attention: _causal; the LM
    head on the last position)."""
    dev = "cuda"
    return _model(torch, K, torch.randint(0, VOCAB, (tokens,), device=dev), torch.arange(tokens, device=dev),
                  lambda i, q, k, v: _causal(torch, q, k, v), head_rows=torch.tensor([tokens - 1], device=dev))


def _mixed(torch, K, batch: int, kv: int, chunk: int, ctx: int):
    """run: one chunked-prefill step: `batch` sequences decode a token each over `kv` cached tokens (as _step) while
    one prompt's chunk of `chunk` tokens, its positions ctx - chunk ... ctx - 1, attends causally to the ctx keys
    of its prefix and itself (its new keys and values written into the prompt's cache first); logits for the decodes
    and the chunk's last row."""
    Fn = torch.nn.functional
    dev = "cuda"
    rows = batch + chunk
    ids = torch.randint(0, VOCAB, (rows,), device=dev)
    pos = torch.cat([torch.full((batch,), kv, device=dev, dtype=torch.int64),
                     torch.arange(ctx - chunk, ctx, device=dev)])
    caches = [[torch.randn(batch, HKV, kv + 1, D, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(2)]
              for _ in range(LAYERS)]
    prompt = [[torch.randn(ctx, HKV * D, device=dev, dtype=torch.bfloat16) * 0.02 for _ in range(2)]
              for _ in range(LAYERS)]

    def attend(i, q, k, v):
        kc, vc = caches[i]
        kp, vp = prompt[i]
        kp[ctx - chunk:] = k[batch:]
        vp[ctx - chunk:] = v[batch:]
        parts = []
        if batch:
            kc[:, :, kv] = k[:batch].view(batch, HKV, D)
            vc[:, :, kv] = v[:batch].view(batch, HKV, D)
            parts.append(Fn.scaled_dot_product_attention(q[:batch].view(batch, HQ, 1, D), kc, vc,
                                                         enable_gqa=True).reshape(batch, -1))
        parts.append(_causal(torch, q[batch:], kp, vp))
        return torch.cat(parts)

    head = torch.cat([torch.arange(batch, device=dev), torch.tensor([rows - 1], device=dev)])
    return _model(torch, K, ids, pos, attend, head_rows=head)


def _graph(torch, run):
    """`run` captured in a CUDA graph (warmed up first on a side stream)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            run()  # warm-up: Triton compiles, cuBLAS picks its kernels
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    return graph


def _replays_s(torch, graph, replays: int) -> float:
    """Mean seconds of one replay over `replays` back-to-back replays."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / replays


def _graph_median_s(torch, run, replays: int = 20) -> float:
    """Median seconds of one `run` captured in a CUDA graph."""
    graph = _graph(torch, run)
    times = sorted(_replays_s(torch, graph, 1) for _ in range(replays))
    del graph
    return times[len(times) // 2]


def _sustained(torch, run, seconds: float, sensors) -> list[dict]:
    """The step replayed back to back for `seconds` after 2 s idle, in windows of ~0.5 s: per window the mean step
    time and the sensors read right after it (gpu_sustained.py's method: does the step keep its burst speed?)."""
    graph, rows = _graph(torch, run), []
    torch.cuda.synchronize()
    time.sleep(2.0)
    per_window, began = 1, time.time()
    while time.time() - began < seconds:
        s = _replays_s(torch, graph, per_window)
        rows.append(dict(t_s=round(time.time() - began, 2), replays=per_window, step_s=s, **sensors()))
        per_window = max(1, round(0.5 / s))
    del graph
    return rows


def _estimates(chip: str, phase: str, b: int, tokens: int, chunk: int = 0, ctx: int = 0) -> tuple[float, float]:
    """(calibrated, ideal) seconds of the case: a decode step's TPOT (gen_len 2), a prefill's TTFT, or a mixed step's
    time (estimate.evaluate_step, the decodes attending to their kv + 1 keys)."""
    from llm_roofline import estimate
    from llm_roofline.estimate import evaluate_step

    if phase == "mixed":
        kw = dict(decode_batch=b, decode_kv_len=tokens + 1, chunk_tokens=chunk, chunk_kv_len=ctx)
        return tuple(float(evaluate_step(MODEL, chip, efficiency=e, **kw).times.t_s) for e in ("calibrated", "ideal"))
    metric = "ttft_s" if phase == "prefill" else "tpot_s"
    est = estimate(MODEL, chip, batch=b, prompt_len=tokens, gen_len=1 if phase == "prefill" else 2)
    return getattr(est, metric), est.ideal[metric]


def measure(out: Path, batches: list[int], kv: int, prompts: list[int] | None = None,
            mixed: list[tuple] | None = None, sustain_s: float = 0.0) -> int:
    """Decode steps of each batch over `kv` cached tokens (TPOT of one decode step: gen_len 2), or, with `prompts`,
    one prompt's prefill of each length (TTFT, batch 1), or, with `mixed`, chunked-prefill steps (B, KV, C, CTX),
    each against the calibrated and ideal estimates. A case that fails on the GPU prints its error and is skipped.
    sustain_s > 0: each case is then also replayed back to back for that long (_sustained), its windows written to
    OUT_sustained.csv beside OUT."""
    import pandas as pd

    from llm_roofline.files import write_text

    try:
        import torch

        import gpu_kernels as K  # Triton
        from gpu_sustained import _sensors
    except ImportError as e:
        torch, K = None, e
    if torch is None or not torch.cuda.is_available():
        print(f"gpu_decode_step needs PyTorch with a CUDA GPU and Triton ({K if torch is None else 'no GPU here'})",
              file=sys.stderr)
        return 2
    write_text(out, "")  # an unwritable path fails in one line before any timing
    gpu = torch.cuda.get_device_name()
    chip = "h100-sxm" if "H100" in gpu else "h200"
    if mixed:
        cases = [("mixed", b, t, c, x, lambda m=(b, t, c, x): _mixed(torch, K, *m), 20) for b, t, c, x in mixed]
    elif prompts:
        cases = [("prefill", 1, p, 0, 0, lambda p=p: _prefill(torch, K, p), 10) for p in prompts]
    else:
        cases = [("decode", b, kv, 0, 0, lambda b=b: _step(torch, K, b, kv), 20) for b in batches]
    rows, windows = [], []
    sensors = _sensors() if sustain_s > 0 else dict
    for phase, b, tokens, chunk, ctx, make, replays in cases:
        try:
            measured = _graph_median_s(torch, make(), replays)
        except Exception as e:  # noqa: BLE001 - report the case, keep the others
            print(f"{phase} batch {b} tokens {tokens} chunk {chunk}/{ctx}: failed: {e!r}"[:400], flush=True)
            torch.cuda.empty_cache()
            continue
        calibrated, ideal = _estimates(chip, phase, b, tokens, chunk, ctx)
        rows.append(dict(gpu=gpu, phase=phase, batch=b, kv=tokens, measured_s=measured, calibrated_s=calibrated,
                         ideal_s=ideal) | (dict(chunk=chunk, chunk_ctx=ctx) if mixed else {}))
        print(f"{phase} batch {b:3d} tokens {tokens:6d}" + (f" chunk {chunk}/{ctx}" if mixed else "") +
              f": measured {measured * 1e3:.3f} ms, calibrated {calibrated * 1e3:.3f} ms "
              f"({calibrated / measured:.3f}x), ideal {ideal * 1e3:.3f} ms", flush=True)
        write_text(out, pd.DataFrame(rows).to_csv(index=False, float_format="%.6g"))
        if sustain_s > 0:
            mine = [dict(phase=phase, batch=b, kv=tokens, chunk=chunk, chunk_ctx=ctx, burst_s=measured) | w
                    for w in _sustained(torch, make(), sustain_s, sensors)]
            windows += mine
            first, last = mine[0], mine[-1]
            print(f"  sustained {sustain_s:g} s: first window {first['step_s'] * 1e3:.3f} ms, last "
                  f"{last['step_s'] * 1e3:.3f} ms ({last['step_s'] / measured:.3f}x the burst median) "
                  f"{last.get('sm_mhz', '')} MHz {last.get('power_w', 0):.0f} W", flush=True)
            write_text(out.with_name(out.stem + "_sustained.csv"),
                       pd.DataFrame(windows).to_csv(index=False, float_format="%.6g"))
        torch.cuda.empty_cache()
    return 0


def _seconds(value: str) -> float:
    try:
        out = float(value)
    except ValueError:
        out = -1.0
    if not 0.0 <= out <= 600.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected seconds in [0, 600], got {value!r}")
    return out


def _mixed_cases(value: str) -> list[tuple]:
    """B:KV:C:CTX,... -> [(B, KV, C, CTX)]: B >= 0 decodes over KV >= 1 cached tokens, a chunk of 1 <= C <= CTX."""
    out = []
    for part in value.split(","):
        try:
            b, kv, c, ctx = (int(x) for x in part.split(":"))
        except ValueError:
            b = kv = c = ctx = -1
        if not (0 <= b <= 4096 and 1 <= kv <= 1_000_000 and 1 <= c <= ctx <= 1_000_000):
            raise argparse.ArgumentTypeError(f"expected B:KV:C:CTX with 0 <= B <= 4096, KV >= 1 and 1 <= C <= CTX, "
                                             f"got {part!r}")
        out.append((b, kv, c, ctx))
    return out


def _counts(value: str) -> list[int]:
    try:
        out = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1 or max(out) > 1_000_000:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers in [1, 1,000,000], got {value!r}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--batches", default="1,8,64", type=_counts, help="comma-separated batch sizes (default: 1,8,64)")
    ap.add_argument("--kv", type=lambda v: _counts(v)[0], default=2048,
                    help="tokens in each cache before the step (default: %(default)s)")
    ap.add_argument("--prefill", default=None, type=_counts,
                    help="comma-separated prompt lengths: time one prompt's prefill each instead of decode steps")
    ap.add_argument("--mixed", default=None, type=_mixed_cases,
                    help="comma-separated B:KV:C:CTX: time chunked-prefill steps instead (B decodes over KV cached "
                         "tokens beside a C-token chunk ending a CTX-token prompt)")
    ap.add_argument("--sustain-s", type=_seconds, default=0.0,
                    help="also replay each case back to back for this many seconds (windows of ~0.5 s, clocks and "
                         "power: OUT_sustained.csv; default: 0, off)")
    a = ap.parse_args(argv)
    from llm_roofline.errors import RooflineError

    try:
        return measure(a.out, a.batches, a.kv, a.prefill, a.mixed, a.sustain_s)
    except RooflineError as e:  # an unwritable OUT: one line
        print(f"gpu_decode_step: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
